// Coefficient-domain ring operations: worked examples for M = 9 and 27 (computed independently
// with exact-integer Python),
// then properties on every ring (reduction identities, the automorphism group action, trace
// formulas, ring axioms of the schoolbook product).
#include <gtest/gtest.h>

#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/elements/automorphism.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ring;
using safhire::testing::all_rings;
using safhire::testing::random_words;
using safhire::testing::u64;

using Vec = std::vector<u64>;

Vec torus(std::initializer_list<std::int64_t> values) {
  Vec v;
  for (auto x : values)
    v.push_back(static_cast<u64>(x));
  return v;
}

Vec sigma(const RingParams& r, const Vec& a, u64 k) {
  Vec out(r.N());
  automorphism(r, a, k, out, TorusArith{});
  return out;
}

Vec mono(const RingParams& r, const Vec& a, std::int64_t e) {
  Vec out(r.N());
  mul_monomial(r, a, e, out, TorusArith{});
  return out;
}

Vec mul(const RingParams& r, const Vec& a, const Vec& b) {
  Vec out(r.N());
  schoolbook_mul(r, a, b, out, TorusArith{});
  return out;
}

Vec add(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    out[i] = a[i] + b[i];
  return out;
}

Vec sub(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    out[i] = a[i] - b[i];
  return out;
}

// sum_{k in ks} sigma_k(a)
Vec sum_sigma(const RingParams& r, const Vec& a, const std::vector<u64>& ks) {
  Vec out(r.N(), 0);
  for (u64 k : ks)
    out = add(out, sigma(r, a, k));
  return out;
}

// Tr_{K/Q} as the sum over all units k mod M.
Vec full_trace(const RingParams& r, const Vec& a) {
  std::vector<u64> ks;
  for (u64 k = 1; k < r.M(); ++k) {
    if (k % r.t() != 0) ks.push_back(k);
  }
  return sum_sigma(r, a, ks);
}

TEST(Cyclotomic, ReferenceExampleM9) {
  const RingParams r(3, 2);
  const Vec a = torus({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(sigma(r, a, 2), torus({-3, 6, -3, -4, 3, -5}));
  EXPECT_EQ(sigma(r, a, 4), torus({1, -5, 3, 4, -3, -3}));
  EXPECT_EQ(sigma(r, a, 7), torus({1, 3, -6, 4, -2, -3}));
  EXPECT_EQ(sum_sigma(r, a, {1, 4, 7}), torus({3, 0, 0, 12, 0, 0}));
  EXPECT_EQ(sum_sigma(r, mono(r, a, -1), {1, 4, 7}), torus({6, 0, 0, 15, 0, 0}));
  EXPECT_EQ(sum_sigma(r, mono(r, a, -2), {1, 4, 7}), torus({9, 0, 0, 18, 0, 0}));
  EXPECT_EQ(full_trace(r, a), torus({-6, 0, 0, 0, 0, 0}));
  // Tr((1 - X^3) a) = 9 a_0.
  EXPECT_EQ(full_trace(r, sub(a, mono(r, a, 3))), torus({9, 0, 0, 0, 0, 0}));
  // X^-1 - X^2 = -2X^2 - X^5, and Tr of it times a is 9 a_1.
  const Vec one = torus({1, 0, 0, 0, 0, 0});
  const Vec dual1 = sub(mono(r, one, -1), mono(r, one, 2));
  EXPECT_EQ(dual1, torus({0, 0, -2, 0, 0, -1}));
  EXPECT_EQ(full_trace(r, mul(r, dual1, a)), torus({18, 0, 0, 0, 0, 0}));
  EXPECT_EQ(mono(r, one, 6), torus({-1, 0, 0, -1, 0, 0}));
  EXPECT_EQ(mono(r, one, 8), torus({0, 0, -1, 0, 0, -1}));
  EXPECT_EQ(mul(r, a, torus({1, 1, 0, 0, 0, 1})), torus({-2, 6, 1, -1, 6, 8}));
}

TEST(Cyclotomic, ReferenceExampleM27) {
  const RingParams r(3, 3);
  Vec f(18);
  for (int i = 0; i < 18; ++i)
    f[i] = static_cast<u64>(i + 1);
  Vec one_plus_x(18, 0);
  one_plus_x[0] = one_plus_x[1] = 1;
  EXPECT_EQ(mul(r, f, one_plus_x),
            torus({-17, 3, 5, 7, 9, 11, 13, 15, 17, 1, 21, 23, 25, 27, 29, 31, 33, 35}));
  EXPECT_EQ(sigma(r, f, 2),
            torus({-9, 15, -9, 16, -9, 17, -9, 18, -9, -10, 6, -11, 7, -12, 8, -13, 9, -14}));
  EXPECT_EQ(sum_sigma(r, f, {1, 10, 19}),
            torus({3, 0, 0, 12, 0, 0, 21, 0, 0, 30, 0, 0, 39, 0, 0, 48, 0, 0}));
  Vec expected(18, 0);
  expected[0] = static_cast<u64>(-72);
  EXPECT_EQ(full_trace(r, f), expected);
}

TEST(Cyclotomic, ReductionIdentities) {
  std::mt19937_64 rng(5);
  for (const RingParams& r : all_rings()) {
    SCOPED_TRACE(r.name());
    // Phi_M = sum_k X^(k m) reduces to 0, and so does X^j Phi_M for any shift.
    Vec phi(r.M() + 5, 0);
    for (std::uint32_t k = 0; k < r.t(); ++k)
      phi[k * r.m() + 5] = 1;
    Vec out(r.N());
    reduce_mod_phi(r, phi, out, TorusArith{});
    EXPECT_EQ(out, Vec(r.N(), 0));
    // X^M = 1 and X^(N+j) = -sum_{k<t-1} X^(k m + j).
    const Vec a = random_words(rng, r.N());
    EXPECT_EQ(mono(r, a, r.M()), a);
    EXPECT_EQ(mono(r, mono(r, a, 17), -17), a);
    EXPECT_EQ(mono(r, mono(r, a, 5), 7), mono(r, a, 12));
    Vec top(r.N() + 3, 0);
    top[r.N() + 2] = 1;
    reduce_mod_phi(r, top, out, TorusArith{});
    Vec expected_top(r.N(), 0);
    for (std::uint32_t k = 0; k + 1 < r.t(); ++k)
      expected_top[k * r.m() + 2] = ~u64{0};
    EXPECT_EQ(out, expected_top);
    // Reducing a long polynomial equals summing its monomials one by one.
    const Vec h = random_words(rng, 2 * r.M() + 3);
    reduce_mod_phi(r, h, out, TorusArith{});
    Vec by_monomials(r.N(), 0);
    Vec one(r.N(), 0);
    one[0] = 1;
    for (std::size_t e = 0; e < h.size(); ++e) {
      Vec term = mono(r, one, static_cast<std::int64_t>(e));
      for (auto& x : term)
        x *= h[e];
      by_monomials = add(by_monomials, term);
    }
    EXPECT_EQ(out, by_monomials);
  }
}

TEST(Cyclotomic, AutomorphismsFormAGroupAction) {
  std::mt19937_64 rng(6);
  for (const RingParams& r : all_rings()) {
    SCOPED_TRACE(r.name());
    const Vec a = random_words(rng, r.N());
    const Vec b = random_words(rng, r.N());
    EXPECT_EQ(sigma(r, a, 1), a);
    EXPECT_EQ(sigma(r, a, r.M() + 1), a);
    for (int trial = 0; trial < 6; ++trial) {
      u64 j = 0, k = 0;
      while (j % r.t() == 0)
        j = rng() % r.M();
      while (k % r.t() == 0)
        k = rng() % r.M();
      EXPECT_EQ(sigma(r, sigma(r, a, k), j), sigma(r, a, j * k % r.M()));
      // A ring homomorphism: sigma(a + b) = sigma(a) + sigma(b), sigma(X a) = X^k sigma(a).
      EXPECT_EQ(sigma(r, add(a, b), k), add(sigma(r, a, k), sigma(r, b, k)));
      EXPECT_EQ(sigma(r, mono(r, a, 1), k), mono(r, sigma(r, a, k), static_cast<std::int64_t>(k)));
    }
    if (r.N() <= 100) {
      // Multiplicative, checked where the schoolbook product is cheap.
      EXPECT_EQ(sigma(r, mul(r, a, b), 2), mul(r, sigma(r, a, 2), sigma(r, b, 2)));
    }
    EXPECT_THROW(sigma(r, a, r.t()), safhire::Error);
    EXPECT_THROW(sigma(r, a, 0), safhire::Error);
  }
}

TEST(Cyclotomic, TraceFormulas) {
  // Tr(zeta^j) = N if M | j, -m if m | j only, 0 otherwise; M a_j = Tr((zeta^-j - zeta^(m-r)) a).
  std::mt19937_64 rng(7);
  for (const RingParams& r :
       {RingParams(3, 2), RingParams(3, 3), RingParams(5, 2), RingParams(7, 2)}) {
    SCOPED_TRACE(r.name());
    Vec one(r.N(), 0);
    one[0] = 1;
    for (std::uint32_t j = 0; j < r.M(); ++j) {
      const Vec tr = full_trace(r, mono(r, one, j));
      const std::int64_t expected =
          j == 0 ? r.N() : (j % r.m() == 0 ? -static_cast<std::int64_t>(r.m()) : 0);
      EXPECT_EQ(tr[0], static_cast<u64>(expected)) << "j = " << j;
    }
    const Vec a = safhire::testing::random_signed(rng, r.N(), -1000, 1000);
    for (std::uint32_t j = 0; j < r.N(); ++j) {
      const std::int64_t rr = j % r.m();
      const Vec shifted = sub(mono(r, a, -static_cast<std::int64_t>(j)),
                              mono(r, a, static_cast<std::int64_t>(r.m()) - rr));
      EXPECT_EQ(full_trace(r, shifted)[0], r.M() * a[j]) << "j = " << j;
    }
  }
}

TEST(Cyclotomic, SchoolbookIsACommutativeRing) {
  std::mt19937_64 rng(8);
  for (const RingParams& r :
       {RingParams(3, 2), RingParams(5, 2), RingParams(3, 3), RingParams(7, 2), RingParams(3, 4)}) {
    SCOPED_TRACE(r.name());
    const Vec a = random_words(rng, r.N()), b = random_words(rng, r.N()),
              c = random_words(rng, r.N());
    EXPECT_EQ(mul(r, a, b), mul(r, b, a));
    EXPECT_EQ(mul(r, mul(r, a, b), c), mul(r, a, mul(r, b, c)));
    EXPECT_EQ(mul(r, a, add(b, c)), add(mul(r, a, b), mul(r, a, c)));
    // Multiplying by X^e is the monomial shift.
    Vec x5(r.N(), 0);
    x5[5 % r.N()] = 1;
    EXPECT_EQ(mul(r, a, x5), mono(r, a, 5 % r.N()));
    // Mod q agrees with mod 2^64 reduced mod q for small inputs (no wrap-around).
    const u64 q = 4611686018427230833ULL;
    const Vec sa = safhire::testing::random_signed(rng, r.N(), 0, 1000);
    const Vec sb = safhire::testing::random_signed(rng, r.N(), 0, 1000);
    Vec modq(r.N());
    schoolbook_mul(r, sa, sb, modq, ModArith{q});
    const Vec exact = mul(r, sa, sb);
    for (std::size_t i = 0; i < exact.size(); ++i) {
      const auto v = static_cast<std::int64_t>(exact[i]);
      EXPECT_EQ(modq[i], v < 0 ? q - static_cast<u64>(-v) : static_cast<u64>(v));
    }
  }
}

TEST(Cyclotomic, SizeMismatchIsATypedError) {
  const RingParams r(3, 2);
  Vec a(5), out(6);
  try {
    automorphism(r, a, 2, out, TorusArith{});
    FAIL();
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::size_mismatch);
  }
}

}  // namespace

namespace {

TEST(Cyclotomic, AddMonomialProductEqualsMulMonomial) {
  std::mt19937_64 rng(9);
  for (const RingParams& r : all_rings()) {
    SCOPED_TRACE(r.name());
    const Vec src = random_words(rng, r.N());
    for (std::int64_t e :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, static_cast<std::int64_t>(r.N()),
          static_cast<std::int64_t>(r.m()), static_cast<std::int64_t>(r.M() - 1),
          -static_cast<std::int64_t>(r.N() + 5), static_cast<std::int64_t>(rng() % (3 * r.M()))}) {
      const Vec base = random_words(rng, r.N());
      Vec added = base, subtracted = base;
      add_monomial_product(r, src, e, added);
      add_monomial_product(r, src, e, subtracted, true);
      const Vec shifted = mono(r, src, e);
      EXPECT_EQ(added, add(base, shifted)) << "e = " << e;
      EXPECT_EQ(subtracted, sub(base, shifted)) << "e = " << e;
    }
  }
}

}  // namespace

namespace {

TEST(Cyclotomic, PerCoefficientAutomorphismMatches) {
  // The formula the CUDA kernel uses, coefficient by coefficient.
  std::mt19937_64 rng(10);
  for (const RingParams& r : all_rings()) {
    const Vec a = random_words(rng, r.N());
    for (int trial = 0; trial < 5; ++trial) {
      u64 k = 0;
      while (k % r.t() == 0)
        k = rng() % r.M();
      const auto k_inv =
          static_cast<std::uint32_t>(safhire::core::pow_mod<u64>(k, r.N() - 1, r.M()));
      const Vec expected = sigma(r, a, k);
      for (std::uint32_t j = 0; j < r.N(); ++j) {
        ASSERT_EQ(
            safhire::elements::automorphism_coefficient(a.data(), j, k_inv, r.N(), r.M(), r.m()),
            expected[j])
            << r.name() << ", k = " << k << ", j = " << j;
      }
    }
  }
}

}  // namespace
