// The CUDA backend: cuda/device_backend.hpp instantiated with kernel launches on one stream.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda_ops.cuh"
#include "device_backend.hpp"
#include "nvtx_range.cuh"
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

// What the backend owns on the device: its stream, the uploaded keys and the key switcher.
struct Resources {
  Resources(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
            const rlwe::GaloisKeys& host_keys)
      : stream(std::make_unique<Stream>()),
        keys(host_keys, stream->get()),
        switcher(params, gadget, stream->get()) {}
  std::unique_ptr<Stream> stream;
  DeviceGaloisKeys keys;
  DeviceKeySwitcher switcher;
};

struct BackendOps : CudaOps {
  template <class T>
  using Array = DeviceBuffer<T>;
  std::shared_ptr<Resources> resources;

  explicit BackendOps(std::shared_ptr<Resources> r)
      : CudaOps{r->stream->get(), &r->keys, &r->switcher}, resources(std::move(r)) {}

  template <class T>
  DeviceBuffer<T> upload(std::span<const T> host) {
    return DeviceBuffer<T>(host, stream);
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

}  // namespace

std::unique_ptr<backend::Backend> make_cuda_backend(const rlwe::ParameterSet& params,
                                                    const backend::Config& config,
                                                    const rlwe::GaloisKeys& keys) {
  config.validate(params, keys);
  require(device_available(), ErrorCode::device_error,
          "the CUDA backend needs a CUDA device: " + describe_devices());
  auto resources = std::make_shared<Resources>(params, params.gadget(config.gamma), keys);
  return std::make_unique<DeviceBackend<BackendOps>>(
      params, config, BackendOps(std::move(resources)), "cuda",
      backend::has_power_keys(keys, params.ring, config.gamma));
}

}  // namespace safhire::cuda
