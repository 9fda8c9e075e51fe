// The CKKS CUDA backend's device, emulated on the CPU: host memory poisoned when allocated,
// launches dealt to CPU threads (the project's fork-join pool), blocks with barriers run on fresh
// poisoned shared memory, and a record of the host traffic, so that a replay of a whole device
// algorithm (cuda/portable/device_rns_ops.hpp) fails where a real device would and can show what
// crossed between host and device. Shared by the CKKS replay (test_ckks_device_emulation.cpp) and
// the lanes' (tests/lanes/test_lanes_device_emulation.cpp); tests/cuda runs the real kernels.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <type_traits>
#include <vector>

#include "block_launch.hpp"
#include "portable/device_rns_ops.hpp"
#include "safhire/core/parallel.hpp"
#include "test_util.hpp"

namespace safhire::testing::emulation {

namespace tile = cuda::negacyclic;
namespace kernels = cuda::ckks_kernels;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// The workers that run the emulated launches (the project's fork-join pool), shared by every
// backend of the process: two, the cores CI has.
inline core::WorkerPool& workers() {
  static core::WorkerPool pool(2);
  return pool;
}

// The emulated device's host traffic: the sizes (in elements) of the smallest and largest
// uploads, the downloads, and the uploads of 32-bit words (slot permutations: the backend's
// only ones) whose contents went up before; and its work queue's length: launches, uploads and
// device-to-device copies.
struct Traffic {
  std::size_t smallest_upload = SIZE_MAX, largest_upload = 0, downloads = 0;
  std::size_t repeated_permutations = 0;
  std::set<std::vector<std::uint32_t>> permutations;
  std::size_t launches = 0, uploads = 0, copies = 0;
  template <class T>
  void record_upload(std::span<const T> elements) {
    ++uploads;
    smallest_upload = std::min(smallest_upload, elements.size());
    largest_upload = std::max(largest_upload, elements.size());
    if constexpr (std::is_same_v<T, std::uint32_t>) {
      if (!permutations.emplace(elements.begin(), elements.end()).second) ++repeated_permutations;
    }
  }
};
inline Traffic traffic;

// A device whose memory is host memory, poisoned when allocated, and whose every call finishes
// before it returns (one in-order stream). Launches of the per-limb kernels deal the grid's
// (block, thread) pairs to the team; launches with barriers run the grid's blocks in turn, each
// on the whole team over fresh poisoned shared memory.
struct EmulatedDevice {
  struct Stream {};

  template <class T>
  class Buffer {
   public:
    Buffer() = default;
    Buffer(std::size_t count, Stream) : words_(count) { poison(words_.data(), count * sizeof(T)); }
    Buffer(std::span<const T> host, Stream) : words_(host.begin(), host.end()) {
      if (!host.empty()) traffic.record_upload(host);
    }
    T* data() { return words_.empty() ? nullptr : words_.data(); }
    const T* data() const { return words_.empty() ? nullptr : words_.data(); }
    std::size_t size() const { return words_.size(); }
    void download(std::span<T> host) const {
      require(host.size() <= words_.size(), ErrorCode::size_mismatch, "download: too many");
      std::copy_n(words_.begin(), host.size(), host.begin());
      ++traffic.downloads;
    }

   private:
    std::vector<T> words_;
  };

  // Released blocks are kept for reuse, by size, as the device's memory pool keeps them (and
  // poisoned again when handed out).
  class Memory final : public ckks::DeviceMemory {
   public:
    ~Memory() override {
      for (auto& [words, blocks] : free_) {
        for (u64* p : blocks)
          delete[] p;
      }
    }
    u64* allocate(std::size_t words) override {
      u64* p = nullptr;
      {
        const std::lock_guard lock(mutex_);
        auto& blocks = free_[words];
        if (!blocks.empty()) {
          p = blocks.back();
          blocks.pop_back();
        }
      }
      if (p == nullptr) p = new u64[words];
      std::fill_n(p, words, kPoison);
      return p;
    }
    void release(u64* p, std::size_t words) noexcept override {
      const std::lock_guard lock(mutex_);
      free_[words].push_back(p);
    }
    void copy(u64* dst, const u64* src, std::size_t words) override {
      std::copy_n(src, words, dst);
    }
    Stream stream() const { return {}; }

   private:
    std::mutex mutex_;
    std::map<std::size_t, std::vector<u64*>> free_;
  };

  static void require_device() {}
  static void zero(u64* p, std::size_t words, Stream) { std::fill_n(p, words, u64{0}); }
  static void upload(u64* dst, const u64* src, std::size_t words, Stream) {
    traffic.record_upload(std::span<const u64>(src, words));
    std::copy_n(src, words, dst);
  }
  static void download(u64* dst, const u64* src, std::size_t words, Stream) {
    ++traffic.downloads;
    std::copy_n(src, words, dst);
  }
  static void copy(u64* dst, const u64* src, std::size_t words, Stream) {
    ++traffic.copies;
    std::copy_n(src, words, dst);
  }
  static void synchronize(Stream) {}

  // Ranges must nest: the depth returns to zero after every case.
  static inline int depth = 0;
  struct Range {
    explicit Range(const char*) { ++depth; }
    ~Range() { --depth; }
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;
  };
  static void push_range(const char*) { ++depth; }
  static void pop_range() { --depth; }

  // body(limb, first, stride) for every (block, thread) of the grid, the pairs dealt to the
  // workers.
  template <class Body>
  static void per_limb(kernels::Grid g, Body body) {
    ++traffic.launches;
    core::WorkerPool& pool = workers();
    const u32 stride = g.x * kernels::kThreads;
    const std::size_t items = std::size_t{g.y} * stride;
    pool.run(pool.threads(), [&](std::size_t member, unsigned) {
      for (std::size_t item = member; item < items; item += pool.threads())
        body(static_cast<u32>(item / stride), static_cast<u32>(item % stride), stride);
    });
  }

  // body(block x, block y, shared, tid, threads, sync) for every block of the grid: the blocks
  // dealt to the workers, each block run by one thread (its barriers then hold trivially; the
  // kernels' own tests run every block's threads at once) over fresh poisoned shared memory.
  template <class Shared, class Body>
  static void per_block(kernels::Grid g, Body body) {
    ++traffic.launches;
    core::WorkerPool& pool = workers();
    std::vector<std::unique_ptr<Shared>> shared(pool.threads());
    for (auto& s : shared)
      s = std::make_unique<Shared>();
    pool.run(std::size_t{g.x} * g.y, [&](std::size_t block, unsigned worker) {
      Shared& mine = *shared[worker];
      poison(&mine, sizeof(Shared));
      body(static_cast<u32>(block % g.x), static_cast<u32>(block / g.x), mine, 0, 1, [] {});
    });
  }

  static void ntt(kernels::Grid g, const kernels::NttArgs& args, Stream) {
    using Tile = std::array<u64, tile::kTileWords>;
    per_block<Tile>(g, [&](u32 x, u32 y, Tile& shared, u32 tid, u32 threads, const auto& sync) {
      kernels::ntt_tile(args, x, y, shared.data(), tid, threads, sync);
    });
  }
  static void uniform(kernels::Grid g, const kernels::AesTables& tables,
                      const kernels::UniformArgs& args, Stream) {
    per_block<kernels::UniformShared>(g, [&](u32 x, u32 y, kernels::UniformShared& shared, u32 tid,
                                             u32 threads, const auto& sync) {
      kernels::uniform_chunk(tables, args, y, x, shared, tid, threads, sync);
    });
  }
  static void elementwise(kernels::Grid g, const kernels::ElementwiseArgs& args, Stream) {
    per_limb(g, [&](u32 k, u32 first, u32 stride) {
      kernels::elementwise_limb(args, k, first, stride);
    });
  }
  static void inner_product(kernels::Grid g, const kernels::InnerProductArgs& args, Stream) {
    per_limb(g, [&](u32 k, u32 first, u32 stride) {
      kernels::inner_product_limb(args, k, first, stride);
    });
  }
  static void permute(kernels::Grid g, const kernels::PermuteArgs& args, Stream) {
    per_limb(g,
             [&](u32 k, u32 first, u32 stride) { kernels::permute_limb(args, k, first, stride); });
  }
  static void signed_residues(kernels::Grid g, const kernels::SignedResiduesArgs& args, Stream) {
    per_limb(g, [&](u32 k, u32 first, u32 stride) {
      kernels::signed_residues_limb(args, k, first, stride);
    });
  }
  static void convert_prepare(kernels::Grid g, const kernels::ConvertPrepareArgs& args, Stream) {
    per_limb(g, [&](u32 k, u32 first, u32 stride) {
      kernels::convert_prepare_limb(args, k, first, stride);
    });
  }
  static void convert(kernels::Grid g, const kernels::ConvertArgs& args, Stream) {
    per_limb(g,
             [&](u32 k, u32 first, u32 stride) { kernels::convert_limb(args, k, first, stride); });
  }
};

inline std::unique_ptr<ckks::RnsOps> make_emulated(const ckks::CkksContext& context) {
  return std::make_unique<cuda::DeviceRnsOps<EmulatedDevice>>(context);
}

}  // namespace safhire::testing::emulation
