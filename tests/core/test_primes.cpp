// Primality, prime search and roots of unity against tables computed by an independent
// exact-integer Python implementation.
#include <gtest/gtest.h>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::core;

bool trial_division_prime(u64 n) {
  if (n < 2) return false;
  for (u64 d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(Primes, MillerRabinAgreesWithTrialDivision) {
  for (u64 n = 0; n < 100000; ++n)
    ASSERT_EQ(is_prime(n), trial_division_prime(n)) << n;
}

TEST(Primes, StrongPseudoprimesAndLargePrimes) {
  EXPECT_FALSE(is_prime(3215031751ULL));           // strong pseudoprime to bases 2, 3, 5, 7
  EXPECT_FALSE(is_prime(3825123056546413051ULL));  // strong pseudoprime to bases 2..23
  EXPECT_FALSE(is_prime(561));                     // Carmichael
  EXPECT_TRUE(is_prime((u64{1} << 61) - 1));       // Mersenne
  EXPECT_TRUE(is_prime(4611686018427387847ULL));   // largest prime below 2^62
  for (u64 n = 4611686018427387849ULL; n < (u64{1} << 62); n += 2)
    EXPECT_FALSE(is_prime(n)) << n;
  EXPECT_TRUE(is_prime(18446744073709551557ULL));  // largest prime below 2^64
  EXPECT_FALSE(is_prime(~u64{0}));
}

struct PrimeRow {
  u64 M;
  int bits;
  u64 q;
  u64 omega;
};

// The largest primes below 2^B with q = 1 mod M, omega = g^((q-1)/M) for the smallest g giving
// order M.
const PrimeRow kReferencePrimes[] = {
    {2187, 62, 4611686018427230833ULL, 1452167827725682184ULL},
    {2187, 60, 1152921504606833953ULL, 831809159562290363ULL},
    {2187, 59, 576460752303408229ULL, 437004428571287831ULL},
    {2187, 55, 36028797018838903ULL, 32418376963965971ULL},
    {2187, 50, 1125899906748913ULL, 205955884800255ULL},
    {3125, 62, 4611686018427175001ULL, 2606720908759655410ULL},
    {3125, 60, 1152921504606768751ULL, 847572201570612237ULL},
    {3125, 59, 576460752303418751ULL, 182080712513610110ULL},
    {3125, 55, 36028797018925001ULL, 12156250561804897ULL},
    {3125, 50, 1125899906775001ULL, 88620834669172ULL},
    {2401, 62, 4611686018427337067ULL, 1841924979289378290ULL},
    {2401, 60, 1152921504606496927ULL, 102067197871757234ULL},
    {2401, 59, 576460752302996359ULL, 81954208667658569ULL},
    {2401, 55, 36028797018888353ULL, 4753156761023537ULL},
    {2401, 50, 1125899906640979ULL, 432248880314571ULL},
};

TEST(Primes, SearchMatchesReferenceTable) {
  for (const auto& row : kReferencePrimes) {
    const auto qs = primes_below(row.bits, row.M, 1);
    ASSERT_EQ(qs.size(), 1U);
    EXPECT_EQ(qs[0], row.q) << "M = " << row.M << ", bits = " << row.bits;
    EXPECT_EQ(root_of_unity(row.q, row.M), row.omega) << "q = " << row.q;
    EXPECT_TRUE(has_order(row.omega, row.M, row.q));
    const u64 t = prime_factors(row.M)[0];  // omega^t has order M/t
    EXPECT_FALSE(has_order(pow_mod(row.omega, t, row.q), row.M, row.q));
    EXPECT_TRUE(has_order(pow_mod(row.omega, t + 1, row.q), row.M, row.q));
  }
  // The second 62-bit primes of the reference.
  EXPECT_EQ(primes_below(62, 2187, 2)[1], 4611686018427191467ULL);
  EXPECT_EQ(root_of_unity(4611686018427191467ULL, 2187), 2958711458012901162ULL);
  EXPECT_EQ(primes_below(62, 3125, 2)[1], 4611686018427100001ULL);
  EXPECT_EQ(primes_below(62, 2401, 2)[1], 4611686018427135383ULL);
}

TEST(Primes, SmallTestPrimesAndRoots) {
  // Small test primes: (M, q, omega).
  EXPECT_EQ(root_of_unity(19, 9), 4U);
  EXPECT_EQ(root_of_unity(37, 9), 16U);
  EXPECT_EQ(root_of_unity(109, 27), 81U);
  EXPECT_EQ(root_of_unity(101, 25), 16U);
  EXPECT_EQ(root_of_unity(197, 49), 16U);
}

TEST(Primes, PrimeFactors) {
  EXPECT_EQ(prime_factors(2187), (std::vector<u64>{3}));
  EXPECT_EQ(prime_factors(8192), (std::vector<u64>{2}));
  EXPECT_EQ(prime_factors(2 * 3 * 3 * 5 * 7 * 7 * 11), (std::vector<u64>{2, 3, 5, 7, 11}));
  EXPECT_EQ(prime_factors(4611686018427387847ULL), (std::vector<u64>{4611686018427387847ULL}));
  EXPECT_EQ(prime_factors(1), (std::vector<u64>{}));
}

TEST(Primes, InvalidArgumentsAreTypedErrors) {
  using safhire::ErrorCode;
  using safhire::testing::code_of;
  EXPECT_EQ(code_of([] { primes_below(63, 2187, 1); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] { primes_below(1, 2187, 1); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] { primes_below(62, 0, 1); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] { primes_below(12, 2187, 2); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] { root_of_unity(21, 5); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([] { root_of_unity(19, 7); }), ErrorCode::invalid_parameters);
}

}  // namespace
