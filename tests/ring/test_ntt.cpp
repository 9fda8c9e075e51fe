// The radix-t NTT: vectors for M = 9 and 27 computed independently in Python, the length-t DFT
// kernels against the naive DFT, then properties on every ring and every instruction set the
// machine has (evaluation at omega^e_k by Horner, round trip, convolution theorem against the
// schoolbook oracle, automorphisms as slot permutations, vector kernels bit-identical to scalar
// ones).
#include <gtest/gtest.h>

#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/detail/dft_small.hpp"
#include "safhire/ring/ntt.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ring;
using safhire::core::mul_mod;
using safhire::core::pow_mod;
using safhire::testing::all_rings;
using safhire::testing::random_words;
using safhire::testing::TestLanes;
using safhire::testing::u64;
using Vec = std::vector<u64>;

// The largest prime q = 1 mod M below 2^62 (what the products use).
u64 big_prime(const RingParams& r) {
  return safhire::core::primes_below(62, r.M(), 1)[0];
}

// The reference lists NTT values in its natural order, with the exponent e of each evaluation
// point omega^e; read ours through slot_of_exponent (our slot order differs, ntt_view.hpp).
Vec values_at(const NttPlan& plan, const Vec& ntt, const std::vector<std::uint32_t>& exponents) {
  Vec out;
  for (std::uint32_t e : exponents)
    out.push_back(ntt[plan.slot_of_exponent(e)]);
  return out;
}

TEST(Ntt, ReferenceVectorsM9) {
  const RingParams r(3, 2);
  const NttPlan plan(r, 19, 4);
  const std::vector<std::uint32_t> exps = {1, 4, 7, 2, 5, 8};
  Vec f = {1, 2, 0, 0, 0, 0};
  plan.forward(f);
  EXPECT_EQ(values_at(plan, f, exps), (Vec{9, 0, 13, 14, 16, 11}));
  Vec g = {1, 2, 3, 4, 5, 6};
  plan.forward(g);
  EXPECT_EQ(values_at(plan, g, exps), (Vec{4, 17, 9, 1, 17, 3}));
  // sigma_2 permutes NTT(1..6) into [1, 3, 17, 17, 4, 9]: the slot of omega^e takes the value at
  // omega^(2e).
  Vec permuted(6);
  apply_permutation(g, plan.automorphism_permutation(2), permuted);
  EXPECT_EQ(values_at(plan, permuted, exps), (Vec{1, 3, 17, 17, 4, 9}));
}

TEST(Ntt, ReferenceVectorsM27) {
  const RingParams r(3, 3);
  const NttPlan plan(r, 109, 81);
  Vec f(18);
  for (int i = 0; i < 18; ++i)
    f[i] = static_cast<u64>(i + 1);
  plan.forward(f);
  EXPECT_EQ(values_at(plan, f, {1, 10, 19, 4, 13, 22, 7, 16, 25, 2, 11, 20, 5, 14, 23, 8, 17, 26}),
            (Vec{70, 99, 7, 9, 89, 49, 67, 96, 70, 56, 64, 67, 52, 42, 107, 18, 64, 101}));
}

// y_l = s sum_r w^(lr) x_r, the definition.
template <int T>
void check_dft_kernel(u64 q, std::mt19937_64& rng) {
  const u64 w = safhire::core::root_of_unity(q, T);
  for (u64 s : {u64{1}, 1 + rng() % (q - 1)}) {
    const DftConstants c = make_dft_constants(T, w, s, q);
    const detail::DftRegs<TestLanes> regs(c, q);
    for (int trial = 0; trial < 300; ++trial) {
      // Inputs at the edges of the lazy ranges: x_0 in [0, 2q), x_r in [0, 4q).
      u64 x[T];
      x[0] = s != 1 ? 0 : rng() % (2 * q);  // the scaled variant is defined for x_0 = 0
      for (int r = 1; r < T; ++r)
        x[r] = rng() % (4 * q);
      u64 y[T];
      for (int l = 0; l < T; ++l) {
        y[l] = 0;
        for (int r = 0; r < T; ++r) {
          y[l] = (y[l] + mul_mod(pow_mod(w, static_cast<u64>(l * r), q), x[r] % q, q)) % q;
        }
        y[l] = mul_mod(y[l], s, q);
      }
      if (s == 1) {
        detail::dft_small<T, detail::DftMode::plain, TestLanes>(x, regs);
      } else {
        detail::dft_small<T, detail::DftMode::scaled_zero_x0, TestLanes>(x, regs);
      }
      for (int l = 0; l < T; ++l) {
        ASSERT_LT(x[l], 2 * q) << "output outside [0, 2q)";
        ASSERT_EQ(x[l] % q, y[l]) << "t = " << T << ", q = " << q;
      }
    }
  }
}

TEST(Ntt, SmallDftKernelsMatchTheDefinition) {
  std::mt19937_64 rng(9);
  for (u64 q : {u64{19}, u64{37}, u64{109}, u64{4611686018427230833ULL}})
    check_dft_kernel<3>(q, rng);
  for (u64 q : {u64{11}, u64{101}, u64{4611686018427175001ULL}})
    check_dft_kernel<5>(q, rng);
  for (u64 q : {u64{29}, u64{197}, u64{4611686018427337067ULL}})
    check_dft_kernel<7>(q, rng);
}

// a(x) mod q by Horner.
u64 evaluate(const Vec& a, u64 x, u64 q) {
  u64 acc = 0;
  for (std::size_t i = a.size(); i-- > 0;)
    acc = (mul_mod(acc, x, q) + a[i]) % q;
  return acc;
}

class NttOnRing : public ::testing::TestWithParam<RingParams> {};

TEST_P(NttOnRing, EvaluatesAtTheSlotExponents) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(10);
  for (u64 q : {big_prime(r), safhire::core::primes_below(40, r.M(), 1)[0]}) {
    const NttPlan plan = NttPlan::for_prime(r, q);
    const Vec a = random_words(rng, r.N(), q);
    Vec fa = a;
    plan.forward(fa);
    // Every slot holds a(omega^e_k), and the exponents are exactly the units mod M.
    std::vector<bool> seen(r.M(), false);
    const std::size_t step = r.N() > 200 ? 37 : 1;
    for (std::size_t k = 0; k < r.N(); ++k) {
      const std::uint32_t e = plan.slot_exponents()[k];
      ASSERT_NE(e % r.t(), 0U);
      ASSERT_FALSE(seen[e]);
      seen[e] = true;
      EXPECT_EQ(plan.slot_of_exponent(e), k);
      if (k % step == 0) {
        EXPECT_EQ(fa[k], evaluate(a, pow_mod(plan.omega(), e, q), q)) << "slot " << k;
      }
    }
  }
}

TEST_P(NttOnRing, RoundTripOnEveryInstructionSet) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(11);
  const u64 q = big_prime(r);
  for (SimdIsa isa : available_simd()) {
    SCOPED_TRACE(std::string(to_string(isa)));
    const NttPlan plan = NttPlan::for_prime(r, q, isa);
    for (const Vec& a : {random_words(rng, r.N(), q), Vec(r.N(), q - 1), Vec(r.N(), 0)}) {
      Vec f = a;
      plan.forward(f);
      for (u64 x : f)
        ASSERT_LT(x, q);
      plan.inverse(f);
      EXPECT_EQ(f, a);
    }
  }
}

TEST_P(NttOnRing, VectorKernelsAreBitIdenticalToScalar) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(12);
  const u64 q = big_prime(r);
  const NttPlan scalar = NttPlan::for_prime(r, q, SimdIsa::scalar);
  const std::size_t count = 5;
  const Vec batch = random_words(rng, count * r.N(), q);
  Vec expected_fwd = batch, expected_inv = batch, expected_mont = batch;
  scalar.forward(expected_fwd);
  scalar.inverse(expected_inv);
  scalar.inverse(expected_mont, InverseScale::montgomery);
  for (SimdIsa isa : available_simd()) {
    SCOPED_TRACE(std::string(to_string(isa)));
    const NttPlan plan = NttPlan::for_prime(r, q, isa);
    Vec f = batch, g = batch, h = batch;
    plan.forward(f);
    plan.inverse(g);
    plan.inverse(h, InverseScale::montgomery);
    EXPECT_EQ(f, expected_fwd);
    EXPECT_EQ(g, expected_inv);
    EXPECT_EQ(h, expected_mont);
    // Each polynomial transformed alone gives the words of its place in the batch.
    for (std::size_t c = 0; c < count; ++c) {
      Vec one(batch.begin() + c * r.N(), batch.begin() + (c + 1) * r.N());
      plan.forward(one);
      EXPECT_TRUE(std::equal(one.begin(), one.end(), expected_fwd.begin() + c * r.N()))
          << "polynomial " << c;
    }
  }
  // The batch against the oracle: slot k of polynomial c is that polynomial's value at
  // omega^(e_k) (Horner), for every polynomial of the batch.
  for (std::size_t c = 0; c < count; ++c) {
    const Vec poly(batch.begin() + c * r.N(), batch.begin() + (c + 1) * r.N());
    for (std::size_t k = 0; k < r.N(); ++k) {
      const u64 x = pow_mod(scalar.omega(), scalar.slot_exponents()[k], q);
      ASSERT_EQ(expected_fwd[c * r.N() + k], evaluate(poly, x, q))
          << "polynomial " << c << ", slot " << k;
    }
  }
}

TEST_P(NttOnRing, ConvolutionTheoremAgainstSchoolbook) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(13);
  const u64 q = big_prime(r);
  const NttPlan plan = NttPlan::for_prime(r, q);
  const Vec a = random_words(rng, r.N(), q), b = random_words(rng, r.N(), q);
  Vec fa = a, fb = b;
  plan.forward(fa);
  plan.forward(fb);
  Vec prod(r.N());
  for (std::size_t k = 0; k < r.N(); ++k)
    prod[k] = mul_mod(fa[k], fb[k], q);
  plan.inverse(prod);
  Vec oracle(r.N());
  schoolbook_mul(r, a, b, oracle, ModArith{q});
  EXPECT_EQ(prod, oracle);
  // The Montgomery scale cancels 2^-64: INTT_mont(x 2^-64) = INTT(x).
  const u64 r_inv = safhire::core::inv_mod(
      static_cast<u64>((static_cast<safhire::testing::u128>(1) << 64) % q), q);
  Vec mont(r.N());
  for (std::size_t k = 0; k < r.N(); ++k)
    mont[k] = mul_mod(mul_mod(fa[k], fb[k], q), r_inv, q);
  plan.inverse(mont, InverseScale::montgomery);
  EXPECT_EQ(mont, oracle);
}

TEST_P(NttOnRing, AutomorphismsArePermutationsOfSlots) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(14);
  const u64 q = big_prime(r);
  const NttPlan plan = NttPlan::for_prime(r, q);
  const Vec a = random_words(rng, r.N(), q);
  Vec fa = a;
  plan.forward(fa);
  std::vector<u64> ks = {1, 2, r.M() - 1u, 1u + r.m(), 1u + r.t(), r.t() == 3 ? 4u : 3u};
  for (int i = 0; i < 4; ++i) {
    u64 k = 0;
    while (k % r.t() == 0)
      k = rng() % r.M();
    ks.push_back(k);
  }
  if (r.M() <= 49) {
    ks.clear();
    for (u64 k = 1; k < r.M(); ++k) {
      if (k % r.t() != 0) ks.push_back(k);
    }
  }
  for (u64 k : ks) {
    if (k % r.t() == 0) continue;
    SCOPED_TRACE("k = " + std::to_string(k));
    Vec sa(r.N());
    automorphism(r, a, k, sa, ModArith{q});
    plan.forward(sa);
    const auto perm = plan.automorphism_permutation(k);
    Vec permuted(r.N());
    apply_permutation(fa, perm, permuted);
    EXPECT_EQ(sa, permuted);
    // Group action on slots: perm_(jk) = perm_k o perm_j, i.e. sigma_j then sigma_k.
    const auto perm2 = plan.automorphism_permutation(2);
    const auto perm2k = plan.automorphism_permutation(2 * k % r.M());
    for (std::size_t s = 0; s < r.N(); ++s)
      EXPECT_EQ(perm2k[s], perm[perm2[s]]);
  }
}

INSTANTIATE_TEST_SUITE_P(AllRings, NttOnRing, ::testing::ValuesIn(all_rings()),
                         [](const auto& param_info) {
                           return safhire::testing::ring_label(param_info.param);
                         });

TEST(Ntt, LargerRingsThanThePapers) {
  // Sizes are run-time data: rings beyond the paper's work the same way.
  std::mt19937_64 rng(15);
  for (const RingParams& r :
       {RingParams(3, 9), RingParams(5, 6), RingParams(7, 5), RingParams(3, 1), RingParams(7, 1)}) {
    SCOPED_TRACE(r.name());
    const u64 q = big_prime(r);
    for (SimdIsa isa : available_simd()) {
      const NttPlan plan = NttPlan::for_prime(r, q, isa);
      const Vec a = random_words(rng, r.N(), q);
      Vec f = a;
      plan.forward(f);
      for (std::size_t k = 0; k < r.N(); k += 1 + r.N() / 5) {
        EXPECT_EQ(f[k], evaluate(a, pow_mod(plan.omega(), plan.slot_exponents()[k], q), q));
      }
      plan.inverse(f);
      EXPECT_EQ(f, a);
    }
  }
}

TEST(Ntt, UnreducedInputIsCaughtInCheckedBuilds) {
#if SAFHIRE_DEBUG_CHECKS
  const NttPlan plan(RingParams(3, 2), 19, 4);
  Vec f = {1, 2, 3, 19, 5, 6};  // 19 = q is outside [0, q)
  try {
    plan.forward(f);
    FAIL() << "an input word >= q was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::internal);
  }
#else
  GTEST_SKIP() << "built without invariant checks (Debug or SAFHIRE_CHECKS=ON enables them)";
#endif
}

TEST(Ntt, InvalidPlansAreTypedErrors) {
  using safhire::ErrorCode;
  using safhire::testing::code_of;
  const RingParams r(3, 2);
  EXPECT_EQ(code_of([&] { NttPlan(r, 23, 4); }), ErrorCode::invalid_parameters);   // 23 != 1 mod 9
  EXPECT_EQ(code_of([&] { NttPlan(r, 55, 4); }), ErrorCode::invalid_parameters);   // not prime
  EXPECT_EQ(code_of([&] { NttPlan(r, 19, 7); }), ErrorCode::invalid_parameters);   // order 3
  EXPECT_EQ(code_of([&] { NttPlan(r, 19, 1); }), ErrorCode::invalid_parameters);   // order 1
  EXPECT_EQ(code_of([&] { NttPlan(r, 19, 23); }), ErrorCode::invalid_parameters);  // >= q
  EXPECT_EQ(code_of([&] { NttPlan::for_prime(r, 18446744073709551557ULL); }),
            ErrorCode::invalid_parameters);  // above 2^62
  EXPECT_EQ(code_of([&] { NttPlan::for_prime(RingParams(11, 2), 727); }),
            ErrorCode::unsupported);  // t = 11
  const NttPlan plan(r, 19, 4);
  Vec wrong(7);
  EXPECT_EQ(code_of([&] { plan.forward(wrong); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { plan.automorphism_permutation(3); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { plan.slot_of_exponent(3); }), ErrorCode::invalid_argument);
}

}  // namespace
