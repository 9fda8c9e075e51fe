// The CKKS encoder: the slots are the canonical embedding at zeta^(5^j) (checked by direct
// evaluation in long double), round trips stay within the analytic rounding bound, sparse
// packings and coefficient encodings work, and bad input is a typed error.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ckks_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

// m(zeta^e) for the coefficients m, zeta = exp(i pi / N).
std::complex<long double> evaluate(const std::vector<long double>& m, std::uint64_t e) {
  const std::size_t n = m.size();
  std::complex<long double> sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double angle =
        std::numbers::pi_v<long double> * static_cast<long double>((e * i) % (2 * n)) / n;
    sum += m[i] * std::complex<long double>(std::cos(angle), std::sin(angle));
  }
  return sum;
}

TEST(CkksEncoder, SlotsAreTheCanonicalEmbeddingInFivePowerOrder) {
  auto& f = fixture("n12-l2");
  const std::uint32_t n = f.context.degree();
  for (std::uint32_t slots : {n / 2, 64U, 1U}) {
    const auto z = random_values(slots, 1.0, slots);
    const double scale = 0x1p40;
    const Plaintext plain = f.encoder.encode(z, scale, 2, slots);
    const auto m = f.encoder.decode_coefficients(plain);  // integers / scale
    std::uint64_t power = 1;
    for (std::uint32_t j = 0; j < slots; ++j, power = power * 5 % (2 * n)) {
      if (j % std::max(1U, slots / 16) != 0) continue;
      const auto value = evaluate(m, power);
      // Rounding each of N coefficients moves a slot by at most N / (2 scale).
      EXPECT_LE(std::abs(std::complex<double>(value) - z[j]), n / (2 * scale) + 1e-12)
          << slots << " slots, slot " << j;
    }
  }
}

TEST(CkksEncoder, RoundTripWithinTheRoundingBound) {
  for (const char* name : {"n12-l2", "n14-l7"}) {
    auto& f = fixture(name);
    const std::uint32_t n = f.context.degree();
    for (double log_scale : {20.0, 40.0, 55.0}) {
      const double scale = std::exp2(log_scale);
      const auto z = random_values(n / 2, 1.0, 7);
      const auto back = f.encoder.decode(f.encoder.encode(z, scale, f.context.max_level()));
      // Worst case N / (2 scale) from rounding, plus the double FFT's own error (~2^-45).
      EXPECT_LE(max_error(z, back), n / (2 * scale) + 0x1p-40) << name << " 2^" << log_scale;
    }
  }
}

TEST(CkksEncoder, LargeScalesUseTheExactReductionPath) {
  // scale 2^70 puts coefficients beyond 2^63: the long double FFT and the binary expansion.
  auto& f = fixture("n14-l7");
  const auto z = random_values(f.context.degree() / 2, 1.0, 8);
  const auto back = f.encoder.decode(f.encoder.encode(z, 0x1p70, 7));
  EXPECT_LE(max_error(z, back), 0x1p-50);
}

TEST(CkksEncoder, CoefficientEncodingRoundTrips) {
  auto& f = fixture("n12-l2");
  std::vector<double> c(f.context.degree());
  for (std::size_t i = 0; i < c.size(); ++i)
    c[i] = std::sin(static_cast<double>(i)) * 100;
  const auto back = f.encoder.decode_coefficients(f.encoder.encode_coefficients(c, 0x1p30, 1));
  for (std::size_t i = 0; i < c.size(); ++i)
    ASSERT_NEAR(static_cast<double>(back[i]), c[i], 0x1p-30);
}

TEST(CkksEncoder, BadInputIsATypedError) {
  auto& f = fixture("n12-l2");
  const auto z = random_values(8, 1.0, 9);
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, 0x1p20, 2, 6); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, 0x1p20, 2, 4); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, 0x1p20, 2, 4096); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, -1.0, 2); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, 0x1p20, 3); }), ErrorCode::invalid_argument);
  const std::vector<std::complex<double>> nan{{std::nan(""), 0}};
  EXPECT_EQ(code_of([&] { f.encoder.encode(nan, 0x1p20, 2); }), ErrorCode::invalid_argument);
  // 2^90 does not fit level 0 (one 30-bit prime).
  EXPECT_EQ(code_of([&] { f.encoder.encode(z, 0x1p90, 0); }), ErrorCode::invalid_argument);
}

}  // namespace
