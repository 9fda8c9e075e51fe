// A minimal fork-join loop: items 0..count-1 handed out to `threads` workers (the calling thread
// is one of them). The first exception a worker throws is rethrown after all have stopped.
#pragma once

#include <cstddef>
#include <functional>

namespace safhire::core {

// fn(item, worker) with worker in [0, threads).
void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t, unsigned)>& fn);

}  // namespace safhire::core
