// Word arithmetic mod q against 128-bit integer oracles, over both word sizes.
#include <gtest/gtest.h>

#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::core;
using safhire::testing::u128;

// Primes of several sizes, all below 2^62 (odd, as the arithmetic requires).
const u64 kPrimes64[] = {
    3, 19, 109, 65537, 1125899906748913ULL, 4611686018427230833ULL, 4611686018427387847ULL};
const u32 kPrimes32[] = {3, 19, 109, 65537, 2013265921U, 1073479681U};

template <class W>
void check_ops(W q, std::mt19937_64& rng) {
  using Big = u128;
  for (int i = 0; i < 2000; ++i) {
    const W a = static_cast<W>(rng() % q), b = static_cast<W>(rng() % q);
    const W x = static_cast<W>(rng());  // any word
    EXPECT_EQ(add_mod(a, b, q), static_cast<W>((Big{a} + b) % q));
    EXPECT_EQ(sub_mod(a, b, q), static_cast<W>((Big{a} + q - b) % q));
    EXPECT_EQ(neg_mod(a, q), static_cast<W>((Big{q} - a) % q));
    EXPECT_EQ(mul_mod(a, b, q), static_cast<W>(Big{a} * b % q));

    const ShoupConst<W> c = make_shoup(b, q);
    const W lazy = mul_shoup_lazy(x, c.value, c.quotient, q);
    EXPECT_TRUE(Big{lazy} < 2 * Big{q});
    EXPECT_EQ(lazy % q, static_cast<W>(Big{x} * b % q));
    EXPECT_EQ(mul_shoup(x, c, q), static_cast<W>(Big{x} * b % q));
    EXPECT_EQ(reduce_word(x, shoup_quotient<W>(1, q), q), static_cast<W>(x % q));

    // mont_mul(x, b) = x b 2^-k mod q for any word x and b < q.
    const W two_k_inv = inv_mod(static_cast<W>((Big{1} << kWordBits<W>) % q), q);
    const W expected = static_cast<W>(Big{x} * b % q * two_k_inv % q);
    EXPECT_EQ(mont_mul(x, b, q, inverse_mod_word(q)), expected);
  }
  EXPECT_EQ(static_cast<W>(q * inverse_mod_word(q)), W{1});
}

TEST(ModArith, OperationsMatchWideIntegerOracle64) {
  std::mt19937_64 rng(1);
  for (u64 q : kPrimes64)
    check_ops<u64>(q, rng);
}

TEST(ModArith, OperationsMatchWideIntegerOracle32) {
  std::mt19937_64 rng(2);
  for (u32 q : kPrimes32)
    check_ops<u32>(q, rng);
}

TEST(ModArith, ShoupAcceptsExtremeInputs) {
  const u64 q = 4611686018427230833ULL;
  for (u64 w : {u64{0}, u64{1}, q - 1, q / 2}) {
    const auto c = make_shoup(w, q);
    for (u64 x : {u64{0}, ~u64{0}, q, 2 * q, 4 * q - 1, u64{1} << 63}) {
      EXPECT_EQ(mul_shoup(x, c, q), static_cast<u64>(u128{x} * w % q)) << x << " * " << w;
    }
  }
}

TEST(ModArith, DoubleWordReductionMatchesWideRemainder) {
  std::mt19937_64 rng(7);
  for (u64 q : kPrimes64) {
    const auto ratio = make_wide_reducer(q);
    EXPECT_EQ(ratio.r, static_cast<u64>((u128{1} << 64) % q));
    for (int i = 0; i < 20000; ++i) {
      u64 hi = rng(), lo = rng();
      if (i % 4 == 1) hi = ~u64{0};  // the largest inputs
      if (i % 4 == 2) hi = rng() % 4;
      if (i == 3) hi = lo = ~u64{0};
      const u128 x = u128{hi} << 64 | lo;
      ASSERT_EQ(reduce_double_word(hi, lo, q, ratio), static_cast<u64>(x % q))
          << "q = " << q << ", x = " << hi << ":" << lo;
    }
  }
}

TEST(ModArith, PowAndInverse) {
  const u64 q = 4611686018427230833ULL;
  EXPECT_EQ(pow_mod<u64>(2, 0, q), 1U);
  EXPECT_EQ(pow_mod<u64>(3, q - 1, q), 1U);  // Fermat
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100; ++i) {
    const u64 a = 1 + rng() % (q - 1);
    EXPECT_EQ(mul_mod(a, inv_mod(a, q), q), 1U);
  }
}

TEST(Error, CarriesCodeAndMessage) {
  try {
    safhire::require(false, safhire::ErrorCode::size_mismatch, "expected 3, got 4");
    FAIL() << "require(false) did not throw";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::size_mismatch);
    EXPECT_NE(std::string(e.what()).find("expected 3, got 4"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("size_mismatch"), std::string::npos);
  }
}

}  // namespace
