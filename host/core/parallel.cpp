#include "safhire/core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace safhire::core {

void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t, unsigned)>& fn) {
  threads =
      static_cast<unsigned>(std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(count, 1)));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](unsigned worker) {
    for (std::size_t i; !failed.load() && (i = next.fetch_add(1)) < count;) {
      try {
        fn(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < threads; ++w)
    pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool)
    t.join();
  if (error) std::rethrow_exception(error);
}

WorkerPool::WorkerPool(unsigned threads) : threads_(std::max(threads, 1U)) {
  for (unsigned w = 1; w < threads_; ++w)
    workers_.emplace_back([this, w] { serve(w); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_)
    t.join();
}

void WorkerPool::run(std::size_t count, const std::function<void(std::size_t, unsigned)>& fn) {
  if (threads_ == 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i)
      fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    count_ = count;
    next_ = 0;
    error_ = nullptr;
    busy_ = threads_ - 1;
    ++generation_;
  }
  start_.notify_all();
  work(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr error = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void WorkerPool::serve(unsigned worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    work(worker);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

// Takes items until none is left or one has failed.
void WorkerPool::work(unsigned worker) {
  for (;;) {
    std::size_t i;
    const std::function<void(std::size_t, unsigned)>* fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= count_ || error_) return;
      i = next_++;
      fn = fn_;
    }
    try {
      (*fn)(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

}  // namespace safhire::core
