#include "safhire/ckks/buffer_pool.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace safhire::ckks {
namespace {

constexpr std::size_t kSmall = std::size_t{64} << 10;

// Blocks of 4 MiB or more ("large") are mapped on their own, rounded up to 2 MiB and marked for
// transparent huge pages (Linux): a fresh page costs a fault and a clear, and on this project's
// VMs clearing runs near 1 GB/s, so at N = 2^16 the fresh pages of key generation and of a
// bootstrap took as long as their arithmetic (45% of a profile in clear_page). A large block is
// handed out again for any request it holds, the smallest cached one that does: the sizes of a
// computation drift down with its level, exact-size reuse missed most of them, and a block
// already resident costs no memory a fresh one would not (allowing only a quarter to spare left
// 0.9 GB of a bootstrap's top-level blocks cached through EvalMod at N = 2^16).
constexpr std::size_t kLarge = std::size_t{4} << 20, kHugePage = std::size_t{2} << 20;

std::size_t capacity_for(std::size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

void* map_large(std::size_t capacity) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  madvise(p, capacity, MADV_HUGEPAGE);  // advice only: where it fails, small pages serve
  return p;
#else
  return ::operator new(capacity);
#endif
}

void unmap_large(void* p, std::size_t capacity) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  munmap(p, capacity);
#else
  ::operator delete(p, capacity);
#endif
}

struct Pool {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> small;  // exact sizes below kLarge
  struct Cached {
    void* block;
    std::uint64_t stamp;  // when it was released (p.clock)
  };
  std::multimap<std::size_t, Cached> large;         // cached large blocks by capacity
  std::unordered_map<void*, std::size_t> capacity;  // every large block handed out
  std::size_t cached = 0;
  std::size_t live = 0;       // capacity of the large blocks handed out
  std::size_t peak_live = 0;  // the most ever handed out at once
  std::size_t mapped = 0;     // bytes of large blocks ever mapped afresh
  std::uint64_t clock = 0;
};

// Never destroyed: polynomials in static storage (a benchmark's cached keys, an evaluator's
// scratch) may release their blocks after every other static is gone. The blocks it holds stay
// reachable through it until the process ends.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

void* allocate_large(Pool& p, std::size_t bytes) {
  const std::size_t need = capacity_for(bytes);
  std::vector<std::pair<void*, std::size_t>> evicted;
  {
    std::lock_guard lock(p.mutex);
    auto it = p.large.lower_bound(need);
    if (it != p.large.end()) {
      void* block = it->second.block;
      p.cached -= it->first;
      p.live += it->first;
      p.peak_live = std::max(p.peak_live, p.live);
      p.large.erase(it);
      return block;
    }
    // No cached block fits: a fresh one. The pool's footprint (handed out and cached) stays
    // within the most ever handed out at once plus a slack: past that, the blocks cached
    // longest are unmapped first. So the process's peak is about its working set's, not that
    // plus the blocks of an earlier phase, while the slack keeps a steady state from unmapping
    // blocks it maps again a phase later (fresh pages cost a fault and a clear each; evicting
    // down to the peak itself cost 3% of a bootstrap). The slack is an eighth of the peak up to
    // kPoolSlack: the peak includes long-lived blocks (3.5 GB of keys at N = 2^16), and an eighth
    // of those was 0.6 GB that no phase needed; with 128 MiB, repeated bootstraps at N = 2^16
    // map nothing afresh after their second.
    const std::size_t slack = std::min(p.peak_live / 8, kPoolSlack);
    const std::size_t ceiling = std::max(p.peak_live + slack, p.live + need);
    while (!p.large.empty() && p.live + p.cached + need > ceiling) {
      auto oldest = p.large.begin();
      for (auto at = p.large.begin(); at != p.large.end(); ++at) {
        if (at->second.stamp < oldest->second.stamp) oldest = at;
      }
      p.cached -= oldest->first;
      p.capacity.erase(oldest->second.block);
      evicted.emplace_back(oldest->second.block, oldest->first);
      p.large.erase(oldest);
    }
    p.live += need;
    p.mapped += need;
    p.peak_live = std::max(p.peak_live, p.live);
  }
  for (const auto& [block, capacity] : evicted)
    unmap_large(block, capacity);
  void* block = nullptr;
  try {
    block = map_large(need);
    std::lock_guard lock(p.mutex);
    p.capacity.emplace(block, need);
  } catch (...) {
    std::lock_guard lock(p.mutex);
    p.live -= need;
    if (block != nullptr) unmap_large(block, need);
    throw;
  }
  return block;
}

void release_large(Pool& p, void* block) noexcept {
  std::lock_guard lock(p.mutex);
  const auto found = p.capacity.find(block);
  if (found == p.capacity.end()) return;  // not ours: cannot happen through PoolAllocator
  const std::size_t capacity = found->second;
  p.live -= capacity;
  // Room for it, made by unmapping the largest cached blocks first (a computation's sizes drift
  // down with its level, so the largest are the least likely to be asked for again soon).
  while (p.cached + capacity > kPoolLimit && !p.large.empty()) {
    const auto largest = std::prev(p.large.end());
    p.cached -= largest->first;
    unmap_large(largest->second.block, largest->first);
    p.capacity.erase(largest->second.block);
    p.large.erase(largest);
  }
  if (p.cached + capacity <= kPoolLimit) {
    try {
      p.large.emplace(capacity, Pool::Cached{block, p.clock++});
      p.cached += capacity;
      return;
    } catch (...) {  // no memory for the bookkeeping: unmap the block instead
    }
  }
  unmap_large(block, capacity);
  p.capacity.erase(found);
}

}  // namespace

void* pool_allocate(std::size_t bytes) {
  Pool& p = pool();
  if (bytes >= kLarge) return allocate_large(p, bytes);
  if (bytes >= kSmall) {
    std::lock_guard lock(p.mutex);
    auto it = p.small.find(bytes);
    if (it != p.small.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      p.cached -= bytes;
      return block;
    }
  }
  return ::operator new(bytes);
}

void pool_release(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  Pool& p = pool();
  if (bytes >= kLarge) {
    release_large(p, block);
    return;
  }
  if (bytes >= kSmall) {
    std::lock_guard lock(p.mutex);
    if (p.cached + bytes <= kPoolLimit) {
      try {
        p.small[bytes].push_back(block);
        p.cached += bytes;
        return;
      } catch (...) {  // no memory for the bookkeeping: release the block instead
      }
    }
  }
  ::operator delete(block);
}

PoolStats pool_stats() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return {p.live, p.cached, p.peak_live, p.mapped};
}

std::size_t pool_cached_bytes() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.cached;
}

}  // namespace safhire::ckks
