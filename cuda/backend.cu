// The CUDA backend: cuda/portable/device_backend.hpp instantiated with kernel launches on one
// stream.
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_ops.cuh"
#include "nvtx_range.cuh"
#include "portable/device_backend.hpp"
#include "safhire/cuda/backend.hpp"
#include "safhire/cuda/device.hpp"

namespace safhire::cuda {

namespace {

constexpr std::uint32_t kColorBackend = 0xff9467bd;

static __global__ void extract_kernel(block::ExtractArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::extract_thread(g, x); });
}
static __global__ void blocks_kernel(block::BlocksArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::blocks_thread(g, x); });
}
static __global__ void clean_kernel(block::CleanArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::clean_thread(g, x); });
}
static __global__ void narrow_kernel(block::NarrowArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::narrow_thread(g, x); });
}
static __global__ void linear_kernel(block::LinearArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::linear_thread(g, x); });
}
static __global__ void gather_lwe_kernel(block::GatherLweArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::gather_lwe_thread(g, x); });
}
static __global__ void gather_blocks_kernel(block::GatherBlocksArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::gather_blocks_thread(g, x); });
}

// A stream and the scratch pool used on it. Lent to one backend (one session) at a time and kept
// between sessions, so that a session reuses the blocks that earlier ones sized: once a served
// model's shapes have been seen, its rounds allocate nothing.
struct Lane {
  Stream stream;
  StreamWords words{stream.get()};
  ScratchPool pool{words};
  std::uint64_t counted = 0;  // of pool.stats().allocations, in Lanes' total
};

// The process's idle lanes; at most kIdle are kept (more are destroyed: their blocks freed, their
// streams destroyed once their work is done). A lane comes back trimmed to
// ScratchPool::kKeepPeaks times its peak in use.
class Lanes {
 public:
  static constexpr std::size_t kIdle = 8;
  Lanes() { idle_.reserve(kIdle); }
  std::unique_ptr<Lane> take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<Lane> lane = std::move(idle_.back());
        idle_.pop_back();
        return lane;
      }
    }
    auto lane = std::make_unique<Lane>();
    std::lock_guard lock(mutex_);
    ++made_;
    return lane;
  }
  void give(std::unique_ptr<Lane> lane) noexcept {
    lane->pool.trim(ScratchPool::kKeepPeaks * lane->pool.stats().peak);
    std::lock_guard lock(mutex_);
    allocations_ += lane->pool.stats().allocations - lane->counted;
    lane->counted = lane->pool.stats().allocations;
    if (idle_.size() < kIdle) idle_.push_back(std::move(lane));  // reserved: does not throw
  }
  void count(ResidentStats& stats) const {
    std::lock_guard lock(mutex_);
    stats.lanes_made = made_;
    stats.idle_lanes = idle_.size();
    stats.scratch_allocations = allocations_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Lane>> idle_;
  std::uint64_t made_ = 0, allocations_ = 0;
};

// A lane on loan, given back when destroyed.
class LaneLease {
 public:
  explicit LaneLease(std::shared_ptr<Lanes> lanes)
      : lanes_(std::move(lanes)), lane_(lanes_->take()) {}
  ~LaneLease() { lanes_->give(std::move(lane_)); }
  LaneLease(const LaneLease&) = delete;
  LaneLease& operator=(const LaneLease&) = delete;
  Lane* operator->() const { return lane_.get(); }

 private:
  std::shared_ptr<Lanes> lanes_;
  std::unique_ptr<Lane> lane_;
};

// What a backend holds on the device: its lane (stream and scratch), the uploaded keys and the key
// switcher (its NTT tables; its scratch from the lane's pool, so a later session's switches
// allocate nothing). Destroyed in reverse: keys and switcher free their memory on the lane's
// stream before the lane goes back.
struct Resources {
  Resources(std::shared_ptr<Lanes> from, const rlwe::ParameterSet& params,
            const rlwe::Gadget& gadget, const rlwe::GaloisKeys& host_keys)
      : lane(std::move(from)),
        keys(host_keys, lane->stream.get()),
        switcher(params, gadget, lane->stream.get(), &lane->pool) {}
  LaneLease lane;
  DeviceGaloisKeys keys;
  DeviceKeySwitcher switcher;
};

struct BackendOps : CudaOps {
  template <class T>
  using Array = Staged<T>;
  template <class T>
  using Resident = DeviceBuffer<T>;
  std::shared_ptr<Resources> resources;

  explicit BackendOps(std::shared_ptr<Resources> r)
      : CudaOps{r->lane->stream.get(), &r->keys, &r->switcher, &r->lane->pool},
        resources(std::move(r)) {}

  // A round's small upload, in the pool; the host memory must stay valid until the stream
  // reaches the copy (the backend synchronises before its vectors die).
  template <class T>
  Staged<T> upload(std::span<const T> host) {
    Staged<T> out(*pool, host.size());
    if (!host.empty())
      check(cudaMemcpyAsync(out.data(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice,
                            stream),
            "cudaMemcpyAsync (upload)");
    return out;
  }
  // Kept for every session: allocated and copied on the legacy default stream, which outlives
  // any backend's, and finished before it returns.
  template <class T>
  DeviceBuffer<T> upload_resident(std::span<const T> host) {
    DeviceBuffer<T> out(host, nullptr);
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize (resident upload)");
    return out;
  }
  void download(const u64* src, std::span<u64> host) {
    check(cudaMemcpyAsync(host.data(), src, host.size_bytes(), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (download)");
  }
  void synchronize() { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
  std::uint64_t key_switches() const { return switcher->key_switches(); }

  void run_extract(const block::ExtractArgs& g, size_t len) {
    NvtxRange range("extract", NvtxCategory::hybrid, kColorBackend);
    extract_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("extract_kernel");
  }
  void run_blocks(const block::BlocksArgs& g, size_t len) {
    NvtxRange range("extract", NvtxCategory::hybrid, kColorBackend);
    blocks_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("blocks_kernel");
  }
  void run_clean(const block::CleanArgs& g, size_t len) {
    NvtxRange range("extract", NvtxCategory::hybrid, kColorBackend);
    clean_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("clean_kernel");
  }
  void run_narrow(const block::NarrowArgs& g, size_t len) {
    NvtxRange range("extract", NvtxCategory::hybrid, kColorBackend);
    narrow_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("narrow_kernel");
  }
  void run_linear(const block::LinearArgs& g, size_t len) {
    NvtxRange range("linear", NvtxCategory::hybrid, kColorBackend);
    linear_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("linear_kernel");
  }
  void run_gather_lwe(const block::GatherLweArgs& g, size_t len) {
    NvtxRange range("pack", NvtxCategory::hybrid, kColorBackend);
    gather_lwe_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("gather_lwe_kernel");
  }
  void run_gather_blocks(const block::GatherBlocksArgs& g, size_t len) {
    NvtxRange range("pack", NvtxCategory::hybrid, kColorBackend);
    gather_blocks_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(g, len);
    check_launch("gather_blocks_kernel");
  }
};

// One set of resident layers and of lanes for the process (the current device's), shared by
// every session.
const std::shared_ptr<ResidentWeights<BackendOps>>& resident_weights() {
  static const auto all = std::make_shared<ResidentWeights<BackendOps>>();
  return all;
}
const std::shared_ptr<Lanes>& lanes() {
  static const auto all = std::make_shared<Lanes>();
  return all;
}

}  // namespace

std::unique_ptr<backend::Backend> make_cuda_backend(const rlwe::ParameterSet& params,
                                                    const backend::Config& config,
                                                    const rlwe::GaloisKeys& keys) {
  config.validate(params, keys);
  require(device_available(), ErrorCode::device_error,
          "the CUDA backend needs a CUDA device: " + describe_devices());
  static std::once_flag pool_once;
  std::call_once(pool_once, keep_pool_memory);
  auto resources = std::make_shared<Resources>(lanes(), params, params.gadget(config.gamma), keys);
  return std::make_unique<DeviceBackend<BackendOps>>(
      params, config, BackendOps(std::move(resources)), "cuda",
      backend::has_power_keys(keys, params.ring, config.gamma), resident_weights());
}

ResidentStats resident_stats() {
  ResidentStats stats;
  stats.layer_uploads = resident_weights()->uploads();
  stats.resident_layers = resident_weights()->resident();
  lanes()->count(stats);
  return stats;
}

}  // namespace safhire::cuda
