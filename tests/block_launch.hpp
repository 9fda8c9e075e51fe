// Thread blocks emulated on CPU threads, for the tests that replay CUDA kernel bodies
// (cuda/portable/): every block of a launch at once, each block's threads real std::threads that
// meet at a std::barrier where the device has __syncthreads(), over shared memory that starts
// poisoned, as __shared__ memory starts undefined. A body that reads a word no thread wrote, or
// races with another thread of its launch, gives wrong words or hangs here as it would on a GPU.
#pragma once

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

namespace safhire::testing {

inline void poison(void* p, std::size_t bytes) {
  std::memset(p, 0xa5, bytes);
}

// One launch of `blocks` thread blocks of `threads` threads each: body(block, shared, tid, sync),
// with one Shared (the block's __shared__ state) per block.
template <class Shared, class Body>
void launch_blocks(std::uint32_t blocks, std::uint32_t threads, Body body) {
  std::deque<std::barrier<>> barriers;  // not movable: a deque builds them in place
  std::vector<std::unique_ptr<Shared>> shared;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    barriers.emplace_back(static_cast<std::ptrdiff_t>(threads));
    shared.push_back(std::make_unique<Shared>());
    poison(shared.back().get(), sizeof(Shared));
  }
  std::vector<std::thread> pool;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t tid = 0; tid < threads; ++tid) {
      pool.emplace_back(
          [&, b, tid] { body(b, *shared[b], tid, [&] { barriers[b].arrive_and_wait(); }); });
    }
  }
  for (auto& th : pool)
    th.join();
}

}  // namespace safhire::testing
