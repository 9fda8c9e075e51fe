#include "safhire/ckks/buffer_pool.hpp"

#include <mutex>
#include <new>
#include <unordered_map>

namespace safhire::ckks {

namespace {

constexpr std::size_t kSmall = std::size_t{64} << 10;

struct Pool {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free;
  std::size_t cached = 0;
};

// Never destroyed: polynomials in static storage (a benchmark's cached keys, an evaluator's
// scratch) may release their blocks after every other static is gone. The blocks it holds stay
// reachable through it until the process ends.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void* pool_allocate(std::size_t bytes) {
  if (bytes >= kSmall) {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    auto it = p.free.find(bytes);
    if (it != p.free.end() && !it->second.empty()) {
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
  if (bytes >= kSmall) {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    if (p.cached + bytes <= kPoolLimit) {
      try {
        p.free[bytes].push_back(block);
        p.cached += bytes;
        return;
      } catch (...) {  // no memory for the bookkeeping: release the block instead
      }
    }
  }
  ::operator delete(block);
}

std::size_t pool_cached_bytes() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.cached;
}

}  // namespace safhire::ckks
