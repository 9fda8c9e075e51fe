// The Ops of cuda/portable/tree_levels.hpp and cuda/portable/device_backend.hpp on the CPU: buffers
// are host memory, the per-thread functions of cuda/portable/tree_element.cuh and
// cuda/portable/backend_element.cuh run over every thread index of a launch, and key switches go
// through the CPU KeySwitcher. Emulation tests run the device algorithms with it and compare them
// with the CPU code word for word, which checks the device layouts and index arithmetic where there
// is no GPU.
//
// Scratch comes from a cuda::ScratchPool over host words, as on the device. So that a replay
// fails where a device would, every block handed out is filled with kPoison, as cudaMallocAsync
// and a reused block leave it uninitialised (a read of a word no launch wrote changes the result),
// and Schedule::concurrent runs a launch's threads on several std::threads at once, each taking
// every kWorkers-th index from the top down (a thread that reads what another thread of the same
// launch writes then sees another order than index order, and scripts/test-replays-tsan has
// ThreadSanitizer report any race between them).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "portable/backend_element.cuh"
#include "portable/tree_element.cuh"
#include "safhire/cuda/scratch_pool.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/trees.hpp"
#include "test_util.hpp"

namespace safhire::testing {

enum class Schedule {
  sequential,  // a launch's threads one after another, in index order
  concurrent,  // on kWorkers std::threads at once, each from the top down
};

// Runs body(x) for every x < threads, as `schedule` says.
template <class Body>
void for_each_thread(Schedule schedule, std::size_t threads, Body body) {
  constexpr std::size_t kWorkers = 4;
  if (schedule == Schedule::sequential || threads < kWorkers) {
    for (std::size_t x = 0; x < threads; ++x)
      body(x);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < kWorkers; ++w) {
    pool.emplace_back([&, w] {
      for (std::size_t i = w; i < threads; i += kWorkers)
        body(threads - 1 - i);
    });
  }
  for (auto& worker : pool)
    worker.join();
}

// A pool over host words, kept alive by every copy of the CpuOps that use it.
struct HostScratch {
  cuda::HostWords words;
  cuda::ScratchPool pool{words};
};

struct CpuOps {
  using u64 = std::uint64_t;
  using Buffer = cuda::ScratchPool::Block;
  template <class T>
  using Array = cuda::Staged<T>;
  template <class T>
  struct Resident {
    std::vector<T> words;
    T* data() { return words.data(); }
    const T* data() const { return words.data(); }
  };

  const rlwe::ParameterSet& params;
  const rlwe::GaloisKeys& keys;
  rlwe::KeySwitcher switcher;
  Schedule schedule = Schedule::sequential;
  std::shared_ptr<HostScratch> scratch_pool = std::make_shared<HostScratch>();

  // A block from the pool, poisoned whether fresh or reused.
  Buffer alloc(std::size_t words) {
    Buffer b = scratch_pool->pool.take(words);
    std::fill(b.data(), b.data() + words, kPoison);
    return b;
  }
  template <class T>
  Array<T> upload(std::span<const T> host) {
    Array<T> out(scratch_pool->pool, host.size());
    if (!host.empty()) std::memcpy(static_cast<void*>(out.data()), host.data(), host.size_bytes());
    return out;
  }
  template <class T>
  Resident<T> upload_resident(std::span<const T> host) {
    return {std::vector<T>(host.begin(), host.end())};
  }
  const cuda::ScratchPool::Stats& scratch() const { return scratch_pool->pool.stats(); }
  void download(const u64* src, std::span<u64> host) {
    std::copy(src, src + host.size(), host.begin());
  }
  void synchronize() {}
  std::uint64_t key_switches() const { return switcher.key_switches(); }

  void copy(u64* dst, const u64* src, std::size_t words) { std::copy(src, src + words, dst); }
  void copy_rows(u64* dst, std::size_t dst_stride, const u64* src, std::size_t src_stride,
                 std::size_t rows, std::size_t words) {
    for (std::size_t r = 0; r < rows; ++r)
      std::copy(src + r * src_stride, src + r * src_stride + words, dst + r * dst_stride);
  }
  void scale_copy(u64* dst, const u64* src, u64 factor, std::size_t words) {
    for (std::size_t i = 0; i < words; ++i)
      dst[i] = src[i] * factor;
  }
  void add(u64* dst, const u64* src, std::size_t words) {
    for (std::size_t i = 0; i < words; ++i)
      dst[i] += src[i];
  }
  template <class Args, class Body>
  void loop(const Args& g, std::size_t threads, Body body) const {
    for_each_thread(schedule, threads, [&](std::size_t x) { body(g, x); });
  }
  void run_split(const cuda::block::SplitArgs& g, std::size_t n) {
    loop(g, n, cuda::block::split_thread);
  }
  void run_bottom(const cuda::block::SplitArgs& g, std::size_t n) {
    loop(g, n, cuda::block::bottom_thread);
  }
  void run_merge(const cuda::block::MergeArgs& g, std::size_t n) {
    loop(g, n, cuda::block::merge_thread);
  }
  void run_monomial(const cuda::block::MonomialArgs& g, std::size_t n) {
    loop(g, n, cuda::block::monomial_thread);
  }
  void run_extract(const cuda::block::ExtractArgs& g, std::size_t n) {
    loop(g, n, cuda::block::extract_thread);
  }
  void run_blocks(const cuda::block::BlocksArgs& g, std::size_t n) {
    loop(g, n, cuda::block::blocks_thread);
  }
  void run_clean(const cuda::block::CleanArgs& g, std::size_t n) {
    loop(g, n, cuda::block::clean_thread);
  }
  void run_narrow(const cuda::block::NarrowArgs& g, std::size_t n) {
    loop(g, n, cuda::block::narrow_thread);
  }
  void run_linear(const cuda::block::LinearArgs& g, std::size_t n) {
    loop(g, n, cuda::block::linear_thread);
  }
  void run_gather_lwe(const cuda::block::GatherLweArgs& g, std::size_t n) {
    loop(g, n, cuda::block::gather_lwe_thread);
  }
  void run_gather_blocks(const cuda::block::GatherBlocksArgs& g, std::size_t n) {
    loop(g, n, cuda::block::gather_blocks_thread);
  }
  void run_embed(const u64* masks, u64* embedded, std::uint32_t N, std::uint32_t m,
                 std::size_t threads) {
    for_each_thread(schedule, threads,
                    [&](std::size_t x) { cuda::block::embed_thread(masks, embedded, N, m, x); });
  }
  void run_prepare(const u64* embedded, const u64* bodies, u64* out_a, u64* out_b, u64 m_inv,
                   std::uint32_t N, std::uint32_t m, std::size_t threads) {
    for_each_thread(schedule, threads, [&](std::size_t x) {
      cuda::block::prepare_item_thread(embedded, bodies, out_a, out_b, m_inv, N, m, x);
    });
  }
  // Through the CPU's summed switches, as the CPU backend's ops do.
  void automorphism_sum(std::span<const u64> ks, const u64* in_a, const u64* in_b,
                        std::size_t plane, u64* out_a, u64* out_b, std::size_t count) {
    const std::size_t n = params.ring.N();
    std::vector<const rlwe::KeySwitchKey*> key;
    for (const u64 k : ks)
      key.push_back(&keys.at(k));
    std::vector<const u64*> a(ks.size()), b(ks.size());
    for (std::size_t c = 0; c < count; ++c) {
      for (std::size_t i = 0; i < ks.size(); ++i) {
        a[i] = in_a + i * plane + c * n;
        b[i] = in_b + i * plane + c * n;
      }
      switcher.automorphism_sum(key, a, b, {out_a + c * n, n}, {out_b + c * n, n});
    }
  }
  void automorphism(u64 k, const u64* in_a, const u64* in_b, u64* out_a, u64* out_b,
                    std::size_t count) {
    const std::size_t n = params.ring.N();
    for (std::size_t c = 0; c < count; ++c) {
      rlwe::Ciphertext in(params.ring), out(params.ring);
      std::copy(in_a + c * n, in_a + (c + 1) * n, in.a.coeffs().begin());
      std::copy(in_b + c * n, in_b + (c + 1) * n, in.b.coeffs().begin());
      switcher.automorphism(keys.at(k), in, out);
      std::copy(out.a.coeffs().begin(), out.a.coeffs().end(), out_a + c * n);
      std::copy(out.b.coeffs().begin(), out.b.coeffs().end(), out_b + c * n);
    }
  }
};

}  // namespace safhire::testing
