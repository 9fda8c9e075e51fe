// CKKS parameter sets: the named sets are valid and secure by the stated estimator, the primes
// have the promised shape, and malformed or insecure sets are typed errors.
#include <gtest/gtest.h>

#include "ckks_fixture.hpp"
#include "safhire/ckks/bootstrap.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "test_util.hpp"

namespace {

using safhire::ErrorCode;
using safhire::testing::code_of;
using namespace safhire::ckks;

TEST(CkksParams, NamedSetsAreSecureAndTheirPrimesHaveTheRequestedShape) {
  for (const auto& params : named_sets()) {
    EXPECT_GE(estimated_security(params), 128.0) << params.name;
    if (params.log_n > 15) continue;  // contexts of the large sets are built where they are used
    const CkksContext context(params);
    const auto primes = context.primes();
    ASSERT_EQ(primes.size(), params.q_bits.size() + params.p_bits.size());
    std::vector<int> bits = params.q_bits;
    bits.insert(bits.end(), params.p_bits.begin(), params.p_bits.end());
    for (std::size_t i = 0; i < primes.size(); ++i) {
      EXPECT_TRUE(safhire::core::is_prime(primes[i]));
      EXPECT_EQ(primes[i] % (2 * context.degree()), 1U);
      EXPECT_EQ(64 - __builtin_clzll(primes[i]), bits[i]) << params.name << " prime " << i;
      for (std::size_t j = 0; j < i; ++j)
        EXPECT_NE(primes[i], primes[j]);
    }
  }
}

TEST(CkksParams, EstimatorFollowsTheStatedTables) {
  CkksParams p = named_set("n16-l24");
  EXPECT_NEAR(estimated_security(p), 128.0 * 1772 / 1740, 1e-9);
  p.q_bits.push_back(50);  // 1790 bits > 1772
  EXPECT_LT(estimated_security(p), 128.0);
  EXPECT_EQ(code_of([&] { p.validate(); }), ErrorCode::insecure_parameters);
  EXPECT_EQ(code_of([&] { p.validate(true); }), std::nullopt);
  CkksParams sparse = named_set("n16-l20-h192");
  EXPECT_NEAR(estimated_security(sparse), 128.0 * 1550 / sparse.log_qp(), 1e-9);
  sparse.hamming_weight = 64;  // no table: counts as 0 bits
  EXPECT_EQ(estimated_security(sparse), 0.0);
  EXPECT_EQ(code_of([&] { CkksContext c(sparse); }), ErrorCode::insecure_parameters);
  // The HE standard's N = 2^12 bound is 109 bits.
  CkksParams small{"x", 12,  {30, 24, 24}, {32}, 3, 24, SecretDistribution::uniform_ternary,
                   0,   3.19};
  EXPECT_LT(estimated_security(small), 128.0);
  EXPECT_EQ(code_of([&] { small.validate(); }), ErrorCode::insecure_parameters);
}

TEST(CkksParams, MalformedSetsAreTypedErrors) {
  const CkksParams good = named_set("n12-l2");
  auto bad = [&](auto edit) {
    CkksParams p = good;
    edit(p);
    return code_of([&] { p.validate(true); });
  };
  EXPECT_EQ(bad([](CkksParams& p) { p.log_n = 9; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.log_n = 18; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.q_bits.clear(); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.q_bits[0] = 62; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.p_bits = {19}; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.p_bits.clear(); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.dnum = 0; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.dnum = 4; }), ErrorCode::invalid_parameters);
  // More digits than a key switch's inner product takes (16), with primes enough for them.
  auto with_digits = [&](std::uint32_t dnum) {
    return bad([dnum](CkksParams& p) {
      p.q_bits.assign(20, 40);
      p.p_bits = {40, 40};
      p.dnum = dnum;
    });
  };
  EXPECT_EQ(with_digits(16), std::nullopt);
  EXPECT_EQ(with_digits(17), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.log_scale = 61; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) { p.sigma = 0; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(bad([](CkksParams& p) {
              p.secret = SecretDistribution::fixed_hamming_weight;
              p.hamming_weight = 0;
            }),
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([] { named_set("nope"); }), ErrorCode::invalid_argument);
}

TEST(CkksParams, DigitsCoverTheLevelInOrder) {
  const CkksContext context(named_set("n14-l7"));  // 8 primes, dnum 4: alpha = 2
  EXPECT_EQ(context.params().alpha(), 2U);
  EXPECT_EQ(context.digits(7), 4U);
  EXPECT_EQ(context.digits(4), 3U);
  EXPECT_EQ(context.digit_moduli(4, 2), (std::vector<ModulusIndex>{4}));
  EXPECT_EQ(context.digit_moduli(7, 1), (std::vector<ModulusIndex>{2, 3}));
  EXPECT_EQ(context.p_moduli(), (std::vector<ModulusIndex>{8, 9}));
  EXPECT_EQ(code_of([&] { context.digit_moduli(4, 3); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { context.q_moduli(8); }), ErrorCode::invalid_argument);
}

TEST(CkksParams, TestSetsAreRefusedUnlessAskedFor) {
  for (const auto& params : test_sets()) {
    EXPECT_LT(estimated_security(params), 128.0) << params.name;
    EXPECT_EQ(code_of([&] { CkksContext context(params); }), ErrorCode::insecure_parameters);
    EXPECT_EQ(&named_set(params.name), &params);
  }
}

TEST(CkksParams, DefaultBootstrapSplitsCoverEveryStage) {
  for (std::uint32_t log_n = 4; log_n <= 17; ++log_n) {
    CkksParams p;
    p.log_n = log_n;
    const auto b = default_bootstrap_params(p);
    std::uint32_t cts = 0, stc = 0;
    for (std::uint32_t g : b.cts_split) {
      EXPECT_GE(g, 1U);
      EXPECT_LE(g, 5U);
      cts += g;
    }
    for (std::uint32_t g : b.stc_split) {
      EXPECT_GE(g, 1U);
      EXPECT_LE(g, 5U);
      stc += g;
    }
    EXPECT_EQ(cts, log_n - 1);
    EXPECT_EQ(stc, log_n - 1);
  }
}

}  // namespace
