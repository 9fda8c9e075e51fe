// The scratch pool of the device backend (include/safhire/cuda/scratch_pool.hpp), on host words
// whose source counts what it hands out and takes back: blocks given back are handed out again
// (same size, or a larger one with fewer words to spare than asked for), never one too small or
// one with as much to spare as asked, trim gives the largest idle blocks back first, and the
// pool's destruction gives back every idle block. The oracle is the source's own ledger.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "safhire/cuda/scratch_pool.hpp"

namespace {

using safhire::cuda::ScratchPool;
using safhire::cuda::Staged;
using u64 = std::uint64_t;

// Host words with a ledger of the blocks outstanding (address -> words).
class LedgerWords final : public safhire::cuda::WordSource {
 public:
  u64* allocate(std::size_t words) override {
    u64* p = new u64[words];
    live[p] = words;
    ++allocations;
    return p;
  }
  void release(u64* p, std::size_t words) noexcept override {
    EXPECT_EQ(live.count(p), 1U);
    EXPECT_EQ(live[p], words) << "released with another size than allocated";
    live.erase(p);
    delete[] p;
  }
  std::map<u64*, std::size_t> live;
  int allocations = 0;
};

TEST(ScratchPool, ABlockGivenBackIsHandedOutAgainForTheSameSize) {
  LedgerWords source;
  ScratchPool pool(source);
  u64* first = nullptr;
  {
    ScratchPool::Block b = pool.take(100);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), 100U);
    first = b.data();
    b.data()[99] = 7;  // the whole block is usable
  }
  EXPECT_EQ(pool.stats().in_use, 0U);
  EXPECT_EQ(pool.stats().cached, 100U);
  ScratchPool::Block again = pool.take(100);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(source.allocations, 1);
  EXPECT_EQ(pool.stats().reuses, 1U);
  EXPECT_EQ(pool.stats().peak, 100U);
  EXPECT_TRUE(pool.take(0).data() == nullptr);  // nothing for nothing
}

TEST(ScratchPool, BestFitTakesTheSmallestBlockThatHoldsTheRequestWithLessToSpare) {
  LedgerWords source;
  ScratchPool pool(source);
  { ScratchPool::Block a = pool.take(100), b = pool.take(300); }
  ASSERT_EQ(source.allocations, 2);
  // 90 fits in 100 (10 to spare); 160 in 300 (140 to spare, fewer than 160).
  ScratchPool::Block x = pool.take(90);
  ScratchPool::Block y = pool.take(160);
  EXPECT_EQ(source.allocations, 2);
  EXPECT_EQ(source.live[x.data()], 100U);
  EXPECT_EQ(source.live[y.data()], 300U);
  EXPECT_EQ(x.size(), 90U);
  EXPECT_EQ(pool.stats().in_use, 400U);  // capacities
  y.reset();
  // 140 would leave 160 spare in the 300-word block: a new one instead.
  ScratchPool::Block z = pool.take(140);
  EXPECT_EQ(source.allocations, 3);
  EXPECT_EQ(source.live[z.data()], 140U);
  // 301 fits no idle block.
  ScratchPool::Block w = pool.take(301);
  EXPECT_EQ(source.allocations, 4);
}

TEST(ScratchPool, TrimGivesTheLargestIdleBlocksBackFirstAndTheDestructorTheRest) {
  LedgerWords source;
  {
    ScratchPool pool(source);
    { ScratchPool::Block a = pool.take(10), b = pool.take(20), c = pool.take(40); }
    EXPECT_EQ(pool.stats().cached, 70U);
    pool.trim(35);  // the 40-word block goes: 30 left
    EXPECT_EQ(pool.stats().cached, 30U);
    EXPECT_EQ(source.live.size(), 2U);
    for (const auto& [p, words] : source.live)
      EXPECT_NE(words, 40U);
    ScratchPool::Block kept = pool.take(20);  // still handed out again
    EXPECT_EQ(source.allocations, 3);
    // A block still out when the pool goes would dangle; this one goes back first.
  }
  EXPECT_TRUE(source.live.empty()) << source.live.size() << " blocks never given back";
}

TEST(ScratchPool, MovedBlocksGoBackOnce) {
  LedgerWords source;
  ScratchPool pool(source);
  ScratchPool::Block a = pool.take(8);
  ScratchPool::Block b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  ScratchPool::Block c = pool.take(8);
  c = std::move(b);  // c's own block goes back
  EXPECT_EQ(pool.stats().cached, 8U);
  EXPECT_EQ(pool.stats().in_use, 8U);
}

TEST(ScratchPool, StagedValuesFitTheirWords) {
  LedgerWords source;
  ScratchPool pool(source);
  const std::uint32_t values[5] = {1, 2, 3, 4, 5};
  Staged<std::uint32_t> staged(pool, 5);
  std::memcpy(static_cast<void*>(staged.data()), values, sizeof values);
  EXPECT_EQ(source.live.begin()->second, 3U);  // 20 bytes in 3 words
  EXPECT_EQ(staged.data()[4], 5U);
}

}  // namespace
