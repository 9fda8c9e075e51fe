// A minimal fork-join loop: items 0..count-1 handed out to `threads` workers (the calling thread
// is one of them). The first exception a worker throws is rethrown after all have stopped.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace safhire::core {

// fn(item, worker) with worker in [0, threads). Starts threads - 1 threads for the call.
void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t, unsigned)>& fn);

// The same loop on threads kept between calls: for owners that run many short loops (a thread
// start costs about 60 us on a 2-core VM, as much as some whole loops of a packing level). Not
// reentrant: one run at a time, from the thread that owns the pool (fn must not call run). A
// pool of one thread runs fn on the caller and keeps no state: any threads may use it at once.
class WorkerPool {
 public:
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned threads() const { return threads_; }
  void run(std::size_t count, const std::function<void(std::size_t, unsigned)>& fn);

 private:
  void serve(unsigned worker);
  void work(unsigned worker);

  unsigned threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::uint64_t generation_ = 0;  // runs started
  unsigned busy_ = 0;             // workers still in the current run
  bool stop_ = false;
  // The current run (written under mutex_ before generation_ moves).
  const std::function<void(std::size_t, unsigned)>* fn_ = nullptr;
  std::size_t count_ = 0;
  std::size_t next_ = 0;  // next item, under mutex_ (items are coarse)
  std::exception_ptr error_;
};

}  // namespace safhire::core
