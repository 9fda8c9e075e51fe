// The negacyclic NTT of X^N + 1 against independent oracles: direct evaluation at the powers of
// psi the slots promise, the schoolbook product, the coefficient-domain automorphisms, and the
// signed-permutation formula sigma_k(X^i) = +-X^(ik mod N).
#include <gtest/gtest.h>

#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/core/random.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/negacyclic_ntt.hpp"
#include "test_util.hpp"

namespace {

using safhire::ErrorCode;
using safhire::core::mul_mod;
using safhire::core::pow_mod;
using safhire::core::SeededRandom;
using safhire::ring::ModArith;
using safhire::ring::NegacyclicNtt;
using safhire::ring::RingParams;
using safhire::ring::SimdIsa;
using safhire::testing::code_of;
using u64 = std::uint64_t;

std::vector<u64> random_poly(std::size_t n, u64 q, u64 counter) {
  auto rng = SeededRandom::from_counter(counter);
  std::vector<u64> a(n);
  for (u64& x : a)
    x = rng.word() % q;
  return a;
}

u64 prime_for(const RingParams& ring, int bits) {
  return safhire::core::primes_below(bits, ring.M(), 1)[0];
}

TEST(NegacyclicNtt, SlotsHoldTheValuesAtOddPowersOfPsi) {
  // N = 2 .. 1024: the vector kernels' passes of one, two and three levels before their last
  // four (N = 32, 256, 128 and 1024), and the rings too small for them.
  for (std::uint32_t a : {2U, 3U, 5U, 6U, 8U, 9U, 11U}) {
    const RingParams ring(2, a);
    for (int bits : {30, 50, 61, 62}) {
      const u64 q = prime_for(ring, bits);
      for (SimdIsa isa : safhire::ring::available_simd()) {
        const auto plan = NegacyclicNtt::for_prime(ring, q, isa);
        const auto f = random_poly(ring.N(), q, a * 100 + bits);
        auto values = f;
        plan.forward(values);
        for (std::uint32_t k = 0; k < ring.N(); k += std::max(1U, ring.N() / 64)) {
          const u64 x = pow_mod(plan.psi(), plan.slot_exponent(k), q);
          u64 horner = 0;
          for (std::size_t i = ring.N(); i-- > 0;)
            horner = (mul_mod(horner, x, q) + f[i]) % q;
          ASSERT_EQ(values[k], horner)
              << "N = " << ring.N() << ", slot " << k << ", " << safhire::ring::to_string(isa);
        }
      }
    }
  }
}

TEST(NegacyclicNtt, InverseUndoesForwardUpToTwoToTheSeventeen) {
  for (std::uint32_t a = 2; a <= 18; ++a) {
    const RingParams ring(2, a);
    const u64 q = prime_for(ring, 61);
    for (SimdIsa isa : safhire::ring::available_simd()) {
      const auto plan = NegacyclicNtt::for_prime(ring, q, isa);
      const auto f = random_poly(2 * ring.N(), q, a);  // two polynomials in one batch
      auto g = f;
      plan.forward(g);
      for (u64 x : g)
        ASSERT_LT(x, q);
      plan.inverse(g);
      ASSERT_EQ(g, f) << "N = " << ring.N() << ", " << safhire::ring::to_string(isa);
    }
  }
}

TEST(NegacyclicNtt, PointwiseProductIsTheNegacyclicProduct) {
  for (std::uint32_t a : {2U, 4U, 7U, 10U}) {
    const RingParams ring(2, a);
    const u64 q = prime_for(ring, 59);
    const auto f = random_poly(ring.N(), q, 7 * a), g = random_poly(ring.N(), q, 7 * a + 1);
    std::vector<u64> expect(ring.N());
    safhire::ring::schoolbook_mul(ring, f, g, expect, ModArith{q});
    for (SimdIsa isa : safhire::ring::available_simd()) {
      const auto plan = NegacyclicNtt::for_prime(ring, q, isa);
      auto F = f, G = g;
      plan.forward(F);
      plan.forward(G);
      for (std::size_t i = 0; i < F.size(); ++i)
        F[i] = mul_mod(F[i], G[i], q);
      plan.inverse(F);
      ASSERT_EQ(F, expect) << "N = " << ring.N() << ", " << safhire::ring::to_string(isa);
    }
  }
}

TEST(NegacyclicNtt, LazyInputsBelowFourQGiveTheReducedTransform) {
  const RingParams ring(2, 12);
  const u64 q = prime_for(ring, 61);
  const auto plan = NegacyclicNtt::for_prime(ring, q);
  const auto f = random_poly(ring.N(), q, 5);
  auto lifted = f;
  auto rng = SeededRandom::from_counter(6);
  for (u64& x : lifted)
    x += q * (rng.word() % 4);
  auto expect = f;
  plan.forward(expect);
  plan.forward_lazy_input(lifted);
  EXPECT_EQ(lifted, expect);
}

TEST(NegacyclicNtt, CoefficientAutomorphismIsASignedPermutation) {
  const RingParams ring(2, 7);  // N = 64
  const u64 q = prime_for(ring, 40);
  const auto f = random_poly(ring.N(), q, 9);
  for (u64 k : {u64{3}, u64{5}, u64{25}, u64{127}, u64{2 * 64 - 1}}) {
    std::vector<u64> out(ring.N()), expect(ring.N(), 0);
    safhire::ring::automorphism(ring, f, k, out, ModArith{q});
    for (u64 i = 0; i < ring.N(); ++i) {
      const u64 e = i * k % ring.M();  // X^i -> X^(ik), and X^(N + r) = -X^r
      expect[e % ring.N()] = e < ring.N() ? f[i] : (q - f[i]) % q;
    }
    EXPECT_EQ(out, expect) << "k = " << k;
  }
}

TEST(NegacyclicNtt, AutomorphismsArePermutationsOfTheSlots) {
  const RingParams ring(2, 11);
  const u64 q = prime_for(ring, 55);
  const auto plan = NegacyclicNtt::for_prime(ring, q);
  const auto f = random_poly(ring.N(), q, 11);
  for (u64 k : {u64{5}, pow_mod<u64>(5, 17, ring.M()), u64{ring.M() - 1}, u64{3}}) {
    std::vector<u64> rotated(ring.N());
    safhire::ring::automorphism(ring, f, k, rotated, ModArith{q});
    plan.forward(rotated);
    auto values = f;
    plan.forward(values);
    const auto perm = plan.automorphism_permutation(k);
    for (std::uint32_t s = 0; s < ring.N(); ++s)
      ASSERT_EQ(rotated[s], values[perm[s]]) << "k = " << k << ", slot " << s;
  }
}

TEST(NegacyclicNtt, BadParametersAreTypedErrors) {
  const RingParams ring(2, 10);
  const u64 q = prime_for(ring, 50);
  EXPECT_EQ(code_of([&] { NegacyclicNtt::for_prime(RingParams(3, 4), 163); }),
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { NegacyclicNtt(ring, q, 1); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { NegacyclicNtt::for_prime(ring, 1031); }),  // 1030 not a multiple of 1024
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { NegacyclicNtt::for_prime(ring, (u64{1} << 62) + 1); }),
            ErrorCode::invalid_parameters);
  const auto plan = NegacyclicNtt::for_prime(ring, q);
  std::vector<u64> ragged(ring.N() + 1);
  EXPECT_EQ(code_of([&] { plan.forward(ragged); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { plan.inverse(ragged); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { plan.automorphism_permutation(4); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { plan.slot_of_exponent(6); }), ErrorCode::invalid_argument);
}

}  // namespace
