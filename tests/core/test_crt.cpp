// The exact two-prime CRT to Z_{2^64} (Garner's formula) against 128-bit integer arithmetic.
#include <gtest/gtest.h>

#include <random>

#include "safhire/core/crt.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using safhire::core::Crt2;
using safhire::testing::i128;
using safhire::testing::u128;
using safhire::testing::u64;

// Residue of a signed 128-bit value mod q, in [0, q).
u64 residue(i128 v, u64 q) {
  const i128 r = v % static_cast<i128>(q);
  return static_cast<u64>(r < 0 ? r + static_cast<i128>(q) : r);
}

void check_pair(u64 q1, u64 q2, int trials, std::mt19937_64& rng) {
  const Crt2 crt = Crt2::make(q1, q2);
  const u128 Q = static_cast<u128>(q1) * q2;
  const i128 half = static_cast<i128>((Q - 1) / 2);  // values in [-half, half]
  auto check = [&](i128 v) {
    ASSERT_EQ(crt.lift(residue(v, q1), residue(v, q2)), static_cast<u64>(v))
        << "value " << static_cast<long double>(v);
  };
  for (int i = 0; i < trials; ++i) {
    const u128 r = (static_cast<u128>(rng()) << 64) | rng();
    check(static_cast<i128>(r % (2 * static_cast<u128>(half) + 1)) - half);
  }
  for (i128 v : {i128{0}, i128{1}, i128{-1}, half, -half, half - 1, -half + 1})
    check(v);
}

TEST(Crt2, ExactOnHundredThousandRandomValues) {
  std::mt19937_64 rng(4);
  check_pair(4611686018427230833ULL, 4611686018427191467ULL, 100000, rng);  // 3^7 primes
  check_pair(4611686018427337067ULL, 4611686018427135383ULL, 20000, rng);   // 7^4 primes
  check_pair(4611686018427135383ULL, 4611686018427337067ULL, 20000, rng);   // q1 > q2
  check_pair(1125899906748913ULL, 4611686018427175001ULL, 20000, rng);      // unequal sizes
  check_pair(19, 37, 20000, rng);                                           // tiny
}

TEST(Crt2, RejectsInvalidModuli) {
  EXPECT_THROW(Crt2::make(19, 19), safhire::Error);
  EXPECT_THROW(Crt2::make(21, 19), safhire::Error);
  EXPECT_THROW(Crt2::make(2, 19), safhire::Error);
  EXPECT_THROW(Crt2::make(18446744073709551557ULL, 19), safhire::Error);  // above 2^62
}

}  // namespace
