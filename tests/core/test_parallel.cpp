// core::WorkerPool against a ledger of the items each run handed out.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "safhire/core/parallel.hpp"

namespace {

using safhire::core::WorkerPool;

TEST(WorkerPool, EveryItemOnceOnAWorkerOfThePoolRunAfterRun) {
  for (const unsigned threads : {1U, 2U, 5U}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int round = 0; round < 200; ++round) {
      const std::size_t count = std::vector<std::size_t>{0, 1, 2, 7, 1000}[round % 5];
      std::vector<std::atomic<int>> seen(count);
      std::atomic<bool> bad_worker{false};
      pool.run(count, [&](std::size_t i, unsigned worker) {
        if (worker >= threads) bad_worker = true;
        ++seen[i];
      });
      EXPECT_FALSE(bad_worker);
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(seen[i].load(), 1) << "item " << i << " of " << count << ", round " << round;
    }
  }
}

TEST(WorkerPool, OneThreadRunsOnTheCaller) {
  WorkerPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  bool elsewhere = false;
  pool.run(10, [&](std::size_t, unsigned worker) {
    elsewhere = elsewhere || worker != 0 || std::this_thread::get_id() != caller;
  });
  EXPECT_FALSE(elsewhere);
}

TEST(WorkerPool, AFailedItemIsRethrownAndThePoolServesTheNextRun) {
  WorkerPool pool(3);
  EXPECT_THROW(pool.run(100,
                        [](std::size_t i, unsigned) {
                          if (i == 37) throw std::runtime_error("item 37");
                        }),
               std::runtime_error);
  std::atomic<std::size_t> sum{0};
  pool.run(100, [&](std::size_t i, unsigned) { sum += i; });
  EXPECT_EQ(sum.load(), 4950U);
}

}  // namespace
