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

}  // namespace safhire::core
