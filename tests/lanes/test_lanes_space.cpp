// Lane spaces and the lanes' algebra in the clear: the layouts of the named spaces, their
// security and refusals; digits against GMP; and the identity that makes lanes the intermediate
// state of the DFT, sigma_N = C o L, numerically (lanes.md section 1.2).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <numeric>
#include <random>

#include "safhire/ckks/dft.hpp"
#include "safhire/ckks/encoder.hpp"
#include "safhire/core/error.hpp"
#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/integers.hpp"
#include "safhire/lanes/lane_space.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using safhire::ErrorCode;
using safhire::testing::code_of;

mpz_class power(std::uint64_t beta, std::uint32_t n) {
  mpz_class p;
  mpz_ui_pow_ui(p.get_mpz_t(), beta, n);
  return p;
}

TEST(LaneSpaces, NamedSpacesAreSecureAndLaidOutForTheirRefresh) {
  for (const LaneSpace& s : named_lane_spaces()) {
    SCOPED_TRACE(s.name);
    EXPECT_NO_THROW(s.validate());
    EXPECT_GE(s.security_bits(), 128);
    EXPECT_LE(s.ckks.log_qp(), 1550);  // Lattigo's bound for H = 192 at N = 2^16
    EXPECT_EQ(s.degree(), 65536U);
    EXPECT_EQ(s.ckks.hamming_weight, 192U);
    EXPECT_EQ(s.ephemeral_weight, 32U);
    EXPECT_EQ(s.modulus(), power(s.base, s.lane_degree) + 1);
    // The splits cover the stages, and the chain has exactly the levels the cycle takes.
    EXPECT_EQ(std::accumulate(s.c_split.begin(), s.c_split.end(), 0U) +
                  std::accumulate(s.l_split.begin(), s.l_split.end(), 0U),
              15U);
    EXPECT_EQ(s.top(), s.levels_needed());
    EXPECT_EQ(s.lanes() * s.lane_degree, s.degree());
    // The cleaning covers the digits a refresh leaves: (beta + 1) (h' + 1) / 2.
    EXPECT_DOUBLE_EQ(s.rest_digit_bound(), (static_cast<double>(s.base) + 1) * 33 / 2);
    EXPECT_GE(s.cleaning.k, s.rest_digit_bound());
    EXPECT_LE(s.cleaning.k / std::exp2(s.cleaning.double_angles), 1.6);
  }
  // The seed's configurations: 2^4096 + 1 in 16, 32 and 64 lanes; 64^4096 + 1, 24,577 bits.
  EXPECT_EQ(named_lane_space("lanes-n16-4096-b2").modulus_bits(), 4097U);
  EXPECT_EQ(named_lane_space("lanes-n16-4096-b2").lanes(), 16U);
  EXPECT_EQ(named_lane_space("lanes-n16-2048-b4").modulus_bits(), 4097U);
  EXPECT_EQ(named_lane_space("lanes-n16-1024-b16").lanes(), 64U);
  EXPECT_EQ(named_lane_space("lanes-n16-4096-b64").modulus_bits(), 24577U);
}

TEST(LaneSpaces, TestSpacesNeedTheOptIn) {
  for (const LaneSpace& s : test_lane_spaces()) {
    SCOPED_TRACE(s.name);
    EXPECT_LT(s.security_bits(), 128);
    EXPECT_EQ(code_of([&] { s.validate(); }), ErrorCode::insecure_parameters);
    EXPECT_EQ(code_of([&] { LaneContext c(s); }), ErrorCode::insecure_parameters);
    EXPECT_NO_THROW(s.validate(true));
  }
  EXPECT_EQ(code_of([] { named_lane_space("no-such-space"); }), ErrorCode::invalid_argument);
}

TEST(LaneSpaces, MalformedSpacesAreRefused) {
  for (const std::uint32_t n : {4U, 12U, 2048U}) {  // below 8, not a power of two, above N/4
    EXPECT_EQ(code_of([&] { make_lane_space("bad", 12, n, 2); }), ErrorCode::invalid_parameters)
        << n;
  }
  auto base = [] {
    LaneSpaceOptions o;
    o.dnum = 4;
    return make_lane_space("t", 12, 256, 2, o);
  };
  {
    LaneSpace s = base();
    s.base = 1;
    EXPECT_EQ(code_of([&] { s.validate(true); }), ErrorCode::invalid_parameters);
  }
  {
    LaneSpace s = base();
    s.l_split.push_back(1);  // covers a stage too many
    EXPECT_EQ(code_of([&] { s.validate(true); }), ErrorCode::invalid_parameters);
  }
  {
    LaneSpace s = base();
    s.ckks.q_bits.pop_back();  // a chain without the layout's levels
    EXPECT_EQ(code_of([&] { s.validate(true); }), ErrorCode::invalid_parameters);
  }
  {
    LaneSpace s = base();
    s.cleaning.k = 10;  // below the digits a refresh leaves
    EXPECT_EQ(code_of([&] { s.validate(true); }), ErrorCode::invalid_parameters);
  }
  {
    LaneSpace s = base();
    s.ephemeral_weight = 0;
    s.ckks.secret = safhire::ckks::SecretDistribution::uniform_ternary;  // nothing sparse to raise
    EXPECT_EQ(code_of([&] { s.validate(true); }), ErrorCode::invalid_parameters);
  }
  EXPECT_NO_THROW(base().validate(true));
  // Without a dnum, a ring too small for 128 bits takes the most digits a key switch allows (16),
  // not one a digit per prime (20 here), and its context works.
  const LaneSpace small = make_lane_space("small", 12, 256, 2);
  EXPECT_GT(small.ckks.q_bits.size(), 16U);
  EXPECT_EQ(small.ckks.dnum, 16U);
  EXPECT_NO_THROW(small.validate(true));
}

TEST(LaneSpaces, LanesSitInBitReversedBlocks) {
  const LaneSpace& s = named_lane_space("lanes-n12-256-b2");  // 16 lanes: 4 bits
  EXPECT_EQ(block_of_lane(s, 0), 0U);
  EXPECT_EQ(block_of_lane(s, 1), 8U);
  EXPECT_EQ(block_of_lane(s, 2), 4U);
  EXPECT_EQ(block_of_lane(s, 3), 12U);
  EXPECT_EQ(block_of_lane(s, 15), 15U);
  for (std::uint32_t r = 0; r < s.lanes(); ++r)
    EXPECT_EQ(lane_of_block(s, block_of_lane(s, r)), r);
  EXPECT_EQ(code_of([&] { block_of_lane(s, 16); }), ErrorCode::invalid_argument);
}

TEST(LaneDigits, DigitsDecodeToTheirIntegerInEveryForm) {
  gmp_randclass random(gmp_randinit_default);
  random.seed(11);
  for (const auto& [n, beta] : {std::pair{8U, 2ULL},
                                {64U, 3ULL},
                                {256U, 2ULL},
                                {32U, 16ULL},
                                {16U, 1000ULL},
                                {4096U, 2ULL}}) {
    const mpz_class p = power(beta, n) + 1;
    std::vector<mpz_class> values = {0, 1, 2, p - 1, p - 2, power(beta, n - 1), -1, p, 3 * p + 5};
    for (int i = 0; i < 20; ++i)
      values.push_back(random.get_z_range(p));
    for (const mpz_class& a : values) {
      mpz_class want = a % p;
      if (want < 0) want += p;
      for (const DigitForm form : {DigitForm::canonical, DigitForm::balanced}) {
        const auto d = to_digits(a, n, beta, form);
        ASSERT_EQ(d.size(), n);
        // The oracle: sum_t d_t beta^t mod p, by GMP from scratch.
        mpz_class sum = 0;
        for (std::uint32_t t = 0; t < n; ++t)
          sum += mpz_class(static_cast<long>(d[t])) * power(beta, t);
        sum %= p;
        if (sum < 0) sum += p;
        ASSERT_EQ(sum, want) << "n " << n << " beta " << beta;
        ASSERT_EQ(from_digits(d, beta), want);
        const auto lo = form == DigitForm::canonical ? 0LL : -static_cast<long long>(beta / 2);
        const auto hi = form == DigitForm::canonical ? static_cast<long long>(beta) - 1
                                                     : static_cast<long long>((beta + 1) / 2) - 1;
        for (std::uint32_t t = 0; t < n; ++t) {
          // One residue per form lies outside the digits' window: p - 1 canonically (a_0 = -1),
          // one value balanced (kept canonical).
          if (d[t] < lo || d[t] > hi) {
            ASSERT_TRUE(want == p - 1 || form == DigitForm::balanced) << a;
            ASSERT_LE(std::llabs(d[t]), static_cast<long long>(beta));
          }
        }
      }
    }
  }
  EXPECT_EQ(code_of([] { to_digits(1, 8, 1, DigitForm::canonical); }), ErrorCode::invalid_argument);
}

TEST(LaneDigits, NegacyclicProductIsTheProductModP) {
  std::mt19937_64 mt(3);
  for (const auto& [n, beta] : {std::pair{8U, 2ULL}, {64U, 16ULL}, {512U, 3ULL}}) {
    const mpz_class p = power(beta, n) + 1;
    std::uniform_int_distribution<std::int64_t> digit(-50, 50);
    std::vector<std::int64_t> a(n), b(n);
    for (auto& x : a)
      x = digit(mt);
    for (auto& x : b)
      x = digit(mt);
    const auto c = negacyclic_product(a, b);
    EXPECT_EQ(from_digits(c, beta), from_digits(a, beta) * from_digits(b, beta) % p);
  }
  const std::vector<std::int64_t> big(8, std::int64_t{1} << 31);
  EXPECT_EQ(code_of([&] { negacyclic_product(big, big); }), ErrorCode::invalid_argument);
}

// sigma_N = C o L: the lanes' form-B slots (LaneEncoder::slots: sigma_n of each lane in block
// rev(r)) through the cross-lane stages C in the clear are the canonical embedding of
// P = sum_r X^r a_r(X^(N/n)); and L, the first log2(n/2) stages of SlotToCoeff, takes the
// bit-reversed complex-packed coefficients of P to form B.
TEST(LaneAlgebra, TheEmbeddingIsCAfterL) {
  for (const char* name : {"lanes-n12-8-b2", "lanes-n12-256-b2", "lanes-n12-1024-b2"}) {
    SCOPED_TRACE(name);
    const LaneContext context(named_lane_space(name), true);
    const LaneSpace& s = context.space();
    const auto ops = safhire::ckks::make_cpu_rns_ops(context.ckks(), 1);
    const LaneEncoder encoder(context, *ops);
    const std::uint32_t n_degree = s.degree(), half = n_degree / 2, stages = s.ckks.log_n - 1;
    std::mt19937_64 mt(7);
    std::uniform_int_distribution<std::int64_t> digit(-40, 40);
    LaneDigits lanes(s.lanes(), std::vector<std::int64_t>(s.lane_degree));
    std::vector<long double> P(n_degree);
    for (std::uint32_t r = 0; r < s.lanes(); ++r) {
      for (std::uint32_t t = 0; t < s.lane_degree; ++t) {
        lanes[r][t] = digit(mt);
        P[r + std::size_t{s.lanes()} * t] = static_cast<long double>(lanes[r][t]);
      }
    }
    // sigma_N(P) by the plain special FFT.
    std::vector<std::complex<long double>> u(half);
    for (std::uint32_t i = 0; i < half; ++i)
      u[i] = {P[i], P[i + half]};
    std::vector<std::complex<long double>> sigma = u;
    safhire::ckks::Encoder::special_fft(sigma, n_degree);
    const auto form_b = encoder.slots(lanes);
    std::vector<std::complex<double>> b(half);
    for (std::uint32_t j = 0; j < half; ++j)
      b[j] = {static_cast<double>(form_b[j].real()), static_cast<double>(form_b[j].imag())};
    using safhire::ckks::DftDirection;
    const auto c = safhire::ckks::dft_stages(n_degree, half, s.l_stages(), stages,
                                             DftDirection::slot_to_coeff);
    const auto via_c = safhire::ckks::apply_diagonals(c, b);
    double worst = 0, largest = 0;
    for (std::uint32_t j = 0; j < half; ++j) {
      worst = std::max(worst, std::abs(via_c[j] - std::complex<double>(sigma[j])));
      largest = std::max(largest, static_cast<double>(std::abs(sigma[j])));
    }
    EXPECT_LT(worst, 1e-9 * largest);
    // L on BR(u).
    std::vector<std::complex<double>> br(half);
    for (std::uint32_t i = 0; i < half; ++i) {
      std::uint32_t rev = 0;
      for (std::uint32_t bit = 0; bit < stages; ++bit)
        rev |= ((i >> bit) & 1U) << (stages - 1 - bit);
      br[rev] = {static_cast<double>(u[i].real()), static_cast<double>(u[i].imag())};
    }
    const auto l =
        safhire::ckks::dft_stages(n_degree, half, 0, s.l_stages(), DftDirection::slot_to_coeff);
    const auto via_l = safhire::ckks::apply_diagonals(l, br);
    worst = 0;
    for (std::uint32_t j = 0; j < half; ++j)
      worst = std::max(worst, std::abs(via_l[j] - b[j]));
    EXPECT_LT(worst, 1e-9 * largest);
    // And the encoder's inverse: digits_of_slots(form B) are the digits.
    const auto back = encoder.digits_of_slots(form_b);
    for (std::uint32_t r = 0; r < s.lanes(); ++r) {
      for (std::uint32_t t = 0; t < s.lane_degree; ++t)
        ASSERT_NEAR(static_cast<double>(back[r][t]), static_cast<double>(lanes[r][t]), 1e-9);
    }
  }
}

}  // namespace
