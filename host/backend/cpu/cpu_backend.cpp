// The CPU backend: rows in host memory (storage reused across rounds), every step run by the CUDA
// backend's algorithm (cuda/portable/device_backend.hpp) over backend::HostOps (host_ops.hpp),
// shared by `threads` workers: extraction a batch of chunks per worker count at a time, 32-bit
// rows rounded as they are written; the linear layer cache-blocked per group of outputs in the
// forms of prepared_layer.hpp, each prepared once per LayerWeights; packing a pack at a time on
// each worker.
#include <algorithm>
#include <mutex>
#include <optional>
#include <string>

#include "host_ops.hpp"
#include "portable/device_backend.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/ring/simd.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::backend {

namespace {

using rlwe::u64;
using u32 = std::uint32_t;

// Released row storage kept for the next round: a round's rows are hundreds of MB, and fresh
// pages cost a fault and a clear each (about a second per ResNet-20 inference). Keeps at most
// kKept buffers, as many as a round holds at once (its input, a residual kept for a later add,
// its output): with two, every residual block took a fresh output buffer. Hands out the
// smallest that is large enough.
class StoragePool {
 public:
  static constexpr std::size_t kKept = 3;
  struct Buffer {
    std::unique_ptr<u64[]> words;
    std::size_t capacity = 0;
  };
  Buffer take(std::size_t words) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t best = kept_.size();
    for (std::size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i].capacity >= words &&
          (best == kept_.size() || kept_[i].capacity < kept_[best].capacity))
        best = i;
    if (best == kept_.size()) return {std::unique_ptr<u64[]>(new u64[words]), words};
    Buffer b = std::move(kept_[best]);
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
    return b;
  }
  void give(Buffer b) {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.push_back(std::move(b));
    if (kept_.size() > kKept) {  // drop the smallest
      auto smallest = std::min_element(
          kept_.begin(), kept_.end(),
          [](const Buffer& x, const Buffer& y) { return x.capacity < y.capacity; });
      kept_.erase(smallest);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<Buffer> kept_;
};

// Rows in host memory, of 64-bit words, or of 32-bit ones (narrow) in the same kind of buffer.
// Not zeroed: every step writes each of its rows in full.
struct HostRows final : Rows {
  HostRows(std::size_t count, std::size_t width, std::uint32_t bits, std::shared_ptr<StoragePool> p)
      : rows(count),
        pool(std::move(p)),
        storage(pool->take(bits == 32 ? (count * width + 1) / 2 : count * width)),
        words(storage.words.get()),
        narrow(reinterpret_cast<u32*>(words)) {}
  ~HostRows() override { pool->give(std::move(storage)); }
  HostRows(const HostRows&) = delete;
  HostRows& operator=(const HostRows&) = delete;
  std::size_t count() const override { return rows; }
  std::size_t rows;
  std::shared_ptr<StoragePool> pool;
  StoragePool::Buffer storage;
  u64* words;
  u32* narrow;
};

const HostRows& host_rows(const Rows& rows) {
  const auto* h = dynamic_cast<const HostRows*>(&rows);
  require(h != nullptr, ErrorCode::invalid_argument, "rows of another backend");
  return *h;
}

// Packing cuts each pack's merge tree into parts of at most kPartBytes of items (cuda::pack_rows),
// so that a part's levels run in a core's L2 cache.
constexpr std::size_t kPartBytes = std::size_t{1} << 19;

class CpuBackend final : public Backend {
 public:
  CpuBackend(const rlwe::ParameterSet& params, const Config& config, const rlwe::GaloisKeys& keys,
             unsigned threads)
      : params_(params),
        config_(config),
        threads_(std::max(threads, 1U)),
        width_(row_words(params, config.gamma)),
        stride_(config.row_bits == 32 ? (width_ + 31) / 32 * 32 : width_),
        simd_(ring::default_simd()) {
    if (config.gamma >= 1) partial_.emplace(params_.ring, config.gamma);
    const rlwe::PartialExtraction* partial = partial_ ? &*partial_ : nullptr;
    ops_.emplace(params_, params_.gadget(config.gamma), keys, workers_, partial);
    for (unsigned w = 0; threads_ > 1 && w < threads_; ++w)
      solo_.push_back(
          std::make_unique<HostOps>(params_, params_.gadget(config.gamma), keys, alone_, partial));
    extraction_.emplace(*ops_, params_, config_, has_power_keys(keys, params_.ring, config.gamma));
    // The least depth whose parts' items (a and b, N words each) fit in kPartBytes.
    const ring::RingParams& r = params_.ring;
    std::size_t items = config.gamma == 0 ? r.N() : partial_->blocks();
    while (part_depth_ < r.a() - 1 - config.gamma && items * r.N() * 16 > kPartBytes) {
      ++part_depth_;
      items /= r.t();
    }
  }

  bool derives_powers() const override { return extraction_->derives_powers(); }

  std::string name() const override {
    return "cpu (" + std::string(ring::to_string(simd_)) + ", " + std::to_string(threads_) +
           " thread" + (threads_ == 1 ? "" : "s") + (narrow() ? ", 32-bit rows" : "") + ")";
  }

  Config config() const override { return config_; }

  // Through the CUDA backend's algorithm (cuda::Extraction), as many chunks at a time as there
  // are workers: sample extraction at gamma = 0; at gamma >= 1 clean module-LWE samples, all lanes
  // of a block at once (they share the block's conjugates).
  std::unique_ptr<Rows> extract(std::span<const rlwe::SeededCiphertext> cts,
                                std::span<const std::uint32_t> destination) override {
    auto out = std::make_unique<HostRows>(destination.size(), stride_, config_.row_bits, pool_);
    extraction_->run(
        *ops_, cts, destination,
        {narrow() ? nullptr : out->words, narrow() ? out->narrow : nullptr, nullptr, stride_},
        threads_);
    return out;
  }

  // Through the CUDA backend's algorithm (cuda::linear_rows), each layer's groups prepared once
  // for the CPU's kernels and kept for every session (HostOps::prepare_layer).
  std::unique_ptr<Rows> linear(const LinearLayer& layer,
                               std::span<const Rows* const> sources) override {
    std::vector<const void*> addresses(sources.size(), nullptr);
    std::vector<std::size_t> counts(sources.size(), 0);
    for (std::size_t s = 0; s < sources.size(); ++s) {
      if (!sources[s]) continue;
      const HostRows& rows = host_rows(*sources[s]);
      addresses[s] = rows.words;
      counts[s] = rows.count();
    }
    auto out = std::make_unique<HostRows>(layer.outputs(), stride_, config_.row_bits, pool_);
    linear_rows(*ops_, resident(), layer, addresses, counts, narrow() ? nullptr : out->words,
                narrow() ? out->narrow : nullptr, params_.ring.N(), stride_);
    return out;
  }

  // Through the CUDA backend's algorithm (cuda::pack_rows): whole packs on each worker's own ops
  // while there are packs for every worker (each pack's levels stay in its core's cache), the
  // rest one pack per worker at a time, each step's work shared by the workers.
  std::vector<rlwe::SwitchedCiphertext> pack(const Rows& rows, std::uint32_t bits,
                                             std::uint32_t body_bits) override {
    const HostRows& in = host_rows(rows);
    const std::size_t n = in.count(), N = params_.ring.N();
    const std::size_t packs = (n + N - 1) / N;
    std::vector<rlwe::SwitchedCiphertext> out(packs);
    // Packs first .. first + count - 1 through `ops`.
    const auto pack_range = [&](HostOps& ops, std::size_t first, std::size_t count) {
      const std::size_t values = std::min(n - first * N, count * N);
      const std::size_t offset = first * N * stride_;
      const auto packed =
          cuda::pack_rows(ops, params_.ring, config_, narrow() ? nullptr : in.words + offset,
                          narrow() ? in.narrow + offset : nullptr, values, stride_, part_depth_);
      for (std::size_t p = 0; p * N < values; ++p) {
        rlwe::Ciphertext ct(params_.ring);
        std::copy_n(packed.a.data() + p * N, N, ct.a.coeffs().begin());
        std::copy_n(packed.b.data() + p * N, N, ct.b.coeffs().begin());
        out[first + p] = rlwe::modulus_switch(ct, bits, body_bits);
      }
    };
    const std::size_t alone = threads_ > 1 ? packs / threads_ * threads_ : 0;
    workers_.run(alone, [&](std::size_t g, unsigned w) { pack_range(*solo_[w], g, 1); });
    for (std::size_t first = alone; first < packs; first += threads_)
      pack_range(*ops_, first, std::min<std::size_t>(threads_, packs - first));
    // The scratch goes back to the heap between rounds (reused within one: parts and levels
    // repeat their shapes; keeping it made no difference to the round after).
    ops_->trim(0);
    for (auto& ops : solo_)
      ops->trim(0);
    return out;
  }

  std::uint64_t key_switches() const override {
    std::uint64_t total = ops_->key_switches();
    for (const auto& ops : solo_)
      total += ops->key_switches();
    return total;
  }

 private:
  bool narrow() const { return config_.row_bits == 32; }

  // The prepared layers of every CPU backend of the process: those of a served model are shared
  // by all its sessions.
  static cuda::ResidentWeights<HostOps>& resident() {
    static cuda::ResidentWeights<HostOps> layers;
    return layers;
  }

  rlwe::ParameterSet params_;
  Config config_;
  unsigned threads_;
  std::size_t width_;   // words of a row (row_words)
  std::size_t stride_;  // between rows: width_, or for 32-bit rows width_ rounded up to 32
  ring::SimdIsa simd_;
  std::optional<rlwe::PartialExtraction> partial_;
  // Every step's loops run on workers_, kept for the backend's life. alone_ runs a loop on its
  // caller: several workers may use it at once (a one-thread pool keeps no state).
  core::WorkerPool workers_{threads_}, alone_{1};
  std::optional<HostOps> ops_;                  // on workers_
  std::vector<std::unique_ptr<HostOps>> solo_;  // on alone_, one for each worker (threads_ > 1)
  std::optional<cuda::Extraction<HostOps>> extraction_;  // on ops_
  std::uint32_t part_depth_ = 0;                         // cuda::pack_rows's depth
  std::shared_ptr<StoragePool> pool_ = std::make_shared<StoragePool>();
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const rlwe::ParameterSet& params, const Config& config,
                                          const rlwe::GaloisKeys& keys, unsigned threads) {
  config.validate(params, keys);
  return std::make_unique<CpuBackend>(params, config, keys, threads);
}

}  // namespace safhire::backend
