// Recycled storage for RNS polynomials. A CKKS operation at N = 2^16 makes and drops buffers of
// tens of megabytes; the C library returns such blocks to the kernel on release, and the fresh
// pages of the next one cost as much as the arithmetic. Released blocks of 64 KiB or more are
// kept (up to kPoolLimit bytes in all, process-wide, behind a mutex) and handed out again for
// the same size (a large one for any size it holds); smaller ones go straight to operator new
// and delete. A large block that has to be mapped afresh first unmaps the cached ones beyond
// the most ever handed out at once plus kPoolSlack, so that the pool's footprint follows its
// working set's peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace safhire::ckks {

inline constexpr std::size_t kPoolLimit = std::size_t{2} << 30;
// Cached bytes kept beyond the peak working set (at most an eighth of that peak).
inline constexpr std::size_t kPoolSlack = std::size_t{128} << 20;

void* pool_allocate(std::size_t bytes);
void pool_release(void* p, std::size_t bytes) noexcept;
// Bytes held for reuse now (for tests and diagnostics).
std::size_t pool_cached_bytes();
struct PoolStats {
  std::size_t live;       // large blocks handed out now (capacity)
  std::size_t cached;     // blocks held for reuse, large and small
  std::size_t peak_live;  // the most ever handed out at once in large blocks
  std::size_t mapped;  // bytes of large blocks ever mapped afresh (each page a fault and a clear)
};
PoolStats pool_stats();

template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool_release(p, n * sizeof(T)); }
  // Default-initialised elements: a vector grown by resize() (RnsOps::reshape, whose words are
  // unspecified) is not cleared first; the clearing was 9% of a bootstrap at N = 2^16. Words
  // that must be zero are asked for as such (Words(n, 0), RnsPoly's constructor).
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
};

using Words = std::vector<std::uint64_t, PoolAllocator<std::uint64_t>>;

}  // namespace safhire::ckks
