// Polynomial batches: the [count][N] layout and alignment the CPU and CUDA paths rely on, value
// semantics, and typed errors when a batch meets a plan of another ring or modulus.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/poly.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ring;
using safhire::testing::u64;

TEST(PolyBatch, ContiguousAlignedRows) {
  const RingParams r(3, 7);
  TorusBatch batch(r, 5);
  EXPECT_EQ(batch.count(), 5U);
  EXPECT_EQ(batch.words().size(), 5U * r.N());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(batch.data()) % 64, 0U);
  for (std::size_t i = 0; i < batch.count(); ++i) {
    EXPECT_EQ(batch[i].data(), batch.data() + i * r.N());
    EXPECT_EQ(batch[i].size(), r.N());
    for (u64 w : batch[i])
      EXPECT_EQ(w, 0U);  // zero-initialised
  }
}

TEST(PolyBatch, CopiesAreDeepAndMovesKeepTheData) {
  const RingParams r(5, 2);
  TorusBatch a(r, 2);
  a[1][3] = 42;
  TorusBatch b = a;
  b[1][3] = 7;
  EXPECT_EQ(a[1][3], 42U);
  const u64* storage = b.data();
  TorusBatch c = std::move(b);
  EXPECT_EQ(c.data(), storage);
  EXPECT_EQ(c[1][3], 7U);
  TorusPoly p(r);
  p[2] = 5;
  EXPECT_EQ(p.coeffs()[2], 5U);
}

TEST(PolyBatch, NttOnABatchEqualsNttOnItsWords) {
  const RingParams r(7, 2);
  const u64 q = safhire::core::primes_below(62, r.M(), 1)[0];
  const NttPlan plan = NttPlan::for_prime(r, q);
  ModBatch batch(r, 3, ModQ{q});
  std::mt19937_64 rng(50);
  for (u64& w : batch.words())
    w = rng() % q;
  std::vector<u64> words(batch.words().begin(), batch.words().end());
  plan.forward(batch);
  plan.forward(words);
  EXPECT_TRUE(std::equal(words.begin(), words.end(), batch.words().begin()));
  plan.inverse(batch);
  plan.inverse(words);
  EXPECT_TRUE(std::equal(words.begin(), words.end(), batch.words().begin()));
}

TEST(PolyBatch, MismatchedBatchIsATypedError) {
  const RingParams r(7, 2);
  const u64 q = safhire::core::primes_below(62, r.M(), 2)[0];
  const u64 other_q = safhire::core::primes_below(62, r.M(), 2)[1];
  const NttPlan plan = NttPlan::for_prime(r, q);
  ModBatch wrong_modulus(r, 1, ModQ{other_q});
  ModBatch wrong_ring(RingParams(3, 3), 1, ModQ{q});
  for (ModBatch* batch : {&wrong_modulus, &wrong_ring}) {
    try {
      plan.forward(*batch);
      FAIL() << "a batch of another ring or modulus was accepted";
    } catch (const safhire::Error& e) {
      EXPECT_EQ(e.code(), safhire::ErrorCode::size_mismatch);
    }
  }
}

}  // namespace
