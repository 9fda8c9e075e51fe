// Chebyshev interpolation against the function, and homomorphic evaluation of Chebyshev series
// against the series in the clear, with exact output scales and the depth it promises.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "ckks_fixture.hpp"
#include "safhire/ckks/polynomial.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

TEST(CkksPolynomial, ChebyshevInterpolationConvergesToTheFunction) {
  struct Case {
    double (*f)(double);
    std::uint32_t degree;
    double a, b, tolerance;
  };
  const Case cases[] = {{[](double x) { return std::exp(x); }, 20, -1, 1, 1e-14},
                        {[](double x) { return std::sin(3 * x); }, 40, -2, 3, 1e-13},
                        {[](double x) { return 1 / (1 + 25 * x * x); }, 200, -1, 1, 1e-7}};
  std::mt19937_64 mt(1);
  for (const Case& c : cases) {
    const auto p = chebyshev_interpolate(c.f, c.degree, c.a, c.b);
    ASSERT_EQ(p.degree(), c.degree);
    std::uniform_real_distribution<double> u(c.a, c.b);
    double worst = 0;
    for (int k = 0; k < 2000; ++k) {
      const double x = u(mt);
      worst = std::max(worst, std::fabs(p(x) - c.f(x)));
    }
    EXPECT_LE(worst, c.tolerance) << "degree " << c.degree;
  }
  // T_3 is reproduced exactly: the coefficients are (0, 0, 0, 1).
  const auto t3 = chebyshev_interpolate([](double x) { return 4 * x * x * x - 3 * x; }, 3, -1, 1);
  for (std::uint32_t i = 0; i < 4; ++i)
    EXPECT_NEAR(t3.coeffs[i], i == 3 ? 1.0 : 0.0, 1e-15);
}

// Level-optimal: ceil(log2(d + 1)) for the powers and the division, plus the affine map, for
// every degree (2^k - 1 among them, whose leading leaf has to be divided further).
TEST(CkksPolynomial, DepthIsOptimalForEveryDegree) {
  for (std::uint32_t d = 1; d <= 300; ++d) {
    const auto optimum = static_cast<std::uint32_t>(std::ceil(std::log2(d + 1.0)));
    EXPECT_EQ(PolynomialEvaluator::depth(d, true), optimum) << d;
    EXPECT_EQ(PolynomialEvaluator::depth(d), optimum + 1) << d;
  }
}

// An odd or even series forms fewer products than a dense one of the same degree (the baby
// steps of the other parity that nothing needs are skipped), and interpolation with a parity
// gives exact zeros where the function's symmetry puts them, about the interval's centre.
TEST(CkksPolynomial, OddAndEvenSeriesSkipTheOtherParity) {
  const auto odd =
      chebyshev_interpolate([](double x) { return std::sin(3 * (x - 1)); }, 31, -1, 3, Parity::odd);
  const auto even =
      chebyshev_interpolate([](double x) { return std::cos(3 * x); }, 30, -2, 2, Parity::even);
  const auto plain =
      chebyshev_interpolate([](double x) { return std::sin(3 * (x - 1)); }, 31, -1, 3);
  EXPECT_EQ(odd.parity(), Parity::odd);
  EXPECT_EQ(even.parity(), Parity::even);
  for (std::uint32_t i = 0; i <= 31; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(odd.coeffs[i], 0.0) << i;
      EXPECT_LE(std::fabs(plain.coeffs[i]), 1e-15) << i;  // the residue the parity removes
    } else {
      EXPECT_EQ(odd.coeffs[i], plain.coeffs[i]) << i;
    }
    if (i <= 30 && i % 2 == 1) {
      EXPECT_EQ(even.coeffs[i], 0.0) << i;
    }
  }
  // Same function and degree: the parity's series is as accurate.
  std::mt19937_64 mt(3);
  std::uniform_real_distribution<double> u(-1, 3);
  for (int k = 0; k < 200; ++k) {
    const double x = u(mt);
    EXPECT_NEAR(odd(x), std::sin(3 * (x - 1)), 1e-12);
  }
  // Without the parity, the rounding residue makes the series dense: every baby step is formed.
  const auto plain_even =
      chebyshev_interpolate([](double x) { return std::cos(3 * x); }, 30, -2, 2);
  EXPECT_EQ(plain.parity(), Parity::none);
  EXPECT_EQ(plain_even.parity(), Parity::none);
  EXPECT_LT(PolynomialEvaluator::products(odd), PolynomialEvaluator::products(plain));
  EXPECT_LT(PolynomialEvaluator::products(even), PolynomialEvaluator::products(plain_even));
}

// A random series with decaying coefficients, evaluated on encrypted points of [a, b] at full
// slots. The error bound: T_i amplifies y's error by at most i^2 (Markov's inequality on
// [-1, 1]) and every operation on the way adds at most one key switch's and one rescale's error
// per level, which the same factor amplifies; so the output error is at most
// (1 + sum_i |c_i| i^2) (e_y + depth (e_ks + e_rescale)), e_y the input's fresh error mapped to
// [-1, 1] plus the map's rescale.
TEST(CkksPolynomial, EncryptedSeriesMatchTheSeriesInTheClear) {
  auto& f = fixture("n15-l14");
  auto rng = safhire::core::SeededRandom::from_counter(41);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  Encryptor enc(f.context, *f.ops, rng);
  const PolynomialEvaluator pe(f.evaluator);
  const std::uint32_t n = f.context.degree() / 2, top = f.context.max_level();
  const double scale = std::exp2(f.context.params().log_scale);
  std::mt19937_64 mt(42);
  struct Case {
    std::uint32_t degree;
    double a, b;
    Parity parity;
  };
  // Degrees 7, 31 and 63 are 2^k - 1 (the leading leaf divided further); 31 odd and 24 even.
  const Case cases[] = {{5, -2, 3, Parity::none},  {7, -1, 1, Parity::none},
                        {31, -1, 1, Parity::none}, {63, -2, 3, Parity::none},
                        {31, -1, 1, Parity::odd},  {24, -2, 2, Parity::even}};
  for (const Case& c : cases) {
    const std::uint32_t degree = c.degree;
    ChebyshevSeries p;
    p.a = c.a;
    p.b = c.b;
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::uint32_t i = 0; i <= degree; ++i) {
      const bool skip =
          (c.parity == Parity::odd && i % 2 == 0) || (c.parity == Parity::even && i % 2 == 1);
      p.coeffs.push_back(skip ? 0.0 : u(mt) / (1 + i));
    }
    ASSERT_EQ(p.parity(), c.parity);
    std::uniform_real_distribution<double> in(p.a, p.b);
    std::vector<double> x(n);
    for (auto& v : x)
      v = in(mt);
    const auto ct = enc.encrypt(f.encoder.encode(x, scale, top), sk);
    const Ciphertext out = pe.evaluate(ct, p, rlk);
    EXPECT_EQ(out.level(), top - PolynomialEvaluator::depth(p));
    EXPECT_NEAR(out.scale / ct.scale, 1.0, 1e-12);

    double amplification = 1;
    for (std::uint32_t i = 1; i <= degree; ++i)
      amplification += std::fabs(p.coeffs[i]) * i * i;
    const double e_y = fresh_bound(f, scale) * 2 / (p.b - p.a) + rescale_bound(f, scale);
    const double e_op = key_switch_bound(f, top, scale) + rescale_bound(f, scale);
    const double bound = amplification * (e_y + PolynomialEvaluator::depth(p) * e_op);
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, sk));
    double worst = 0;
    for (std::uint32_t j = 0; j < n; ++j)
      worst = std::max(worst, std::abs(got[j] - p(x[j])));
    EXPECT_LE(worst, bound) << "degree " << degree << ", parity " << static_cast<int>(c.parity);
  }
}

// The double-angle sine of EvalMod and of the lanes' cleaning: sin(2 pi K v) against the
// sine in the clear, at the scale the products leave and at a scale asked for (the interpolant's
// scale chosen backwards through the double angles), with the depth it states.
TEST(CkksPolynomial, DoubleAngleSineMatchesTheSine) {
  auto& f = fixture("n12-boot-test");
  auto rng = safhire::core::SeededRandom::from_counter(43);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  Encryptor enc(f.context, *f.ops, rng);
  const std::uint32_t n = f.context.degree() / 2, top = f.context.max_level();
  const DoubleAngleSine sine(20, 31, 4);  // |x| <= 20 periods
  EXPECT_EQ(sine.depth(), 5U + 4U);
  EXPECT_LT(sine.interpolation_error(), 1e-9);
  std::mt19937_64 mt(44);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v)
    x = u(mt);
  const double scale = static_cast<double>(f.context.prime(top));
  const auto ct = enc.encrypt(f.encoder.encode(v, scale, top), sk);
  for (const double asked : {0.0, std::exp2(45)}) {
    const Ciphertext out = sine.evaluate(f.evaluator, ct, rlk, asked);
    EXPECT_EQ(out.level(), top - sine.depth());
    if (asked != 0) {
      EXPECT_NEAR(out.scale / asked, 1.0, 1e-12);
    }
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, sk));
    double worst = 0;
    for (std::uint32_t j = 0; j < n; ++j)
      worst = std::max(worst, std::abs(got[j] - std::sin(2 * std::numbers::pi * 20 * v[j])));
    EXPECT_LT(worst, 1e-6) << "asked for 2^" << std::log2(asked);
  }
  EXPECT_EQ(code_of([] { DoubleAngleSine(0.1, 31, 2); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { sine.evaluate(f.evaluator, ct, rlk, -1); }), ErrorCode::invalid_argument);
}

TEST(CkksPolynomial, ConstantsBeyondTwoToTheSixtyThreeAddExactly) {
  // Before its rescale, a product is at the square of the scale (2^90 here): adding 0.5 there
  // encodes 2^89.
  auto& f = fixture("n15-l14");
  auto rng = safhire::core::SeededRandom::from_counter(43);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  Encryptor enc(f.context, *f.ops, rng);
  const double scale = std::exp2(f.context.params().log_scale);
  const auto z = random_values(64, 1.0, 44);
  const auto ct = enc.encrypt(f.encoder.encode(z, scale, f.context.max_level(), 64), sk);
  const auto sum = f.evaluator.add_constant(f.evaluator.multiply_relinearize(ct, ct, rlk), 0.5);
  const auto got = f.encoder.decode(decrypt(f.context, *f.ops, f.evaluator.rescale(sum), sk));
  double worst = 0;
  for (std::size_t j = 0; j < z.size(); ++j)
    worst = std::max(worst, std::abs(got[j] - (z[j] * z[j] + 0.5)));
  // z^2's error: 2 |z| <= 2 sqrt(2) times the input's, plus a key switch and the rescale (the
  // exact constant adds nothing).
  EXPECT_LE(worst, 3 * fresh_bound(f, scale) + key_switch_bound(f, f.context.max_level(), scale) +
                       rescale_bound(f, scale));
}

TEST(CkksPolynomial, BadInputsAreTypedErrors) {
  auto& f = fixture("n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(45);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  Encryptor enc(f.context, *f.ops, rng);
  const auto ct = enc.encrypt(f.encoder.encode(random_values(8, 1.0, 46), 1 << 30, 3, 8), sk);
  const PolynomialEvaluator pe(f.evaluator);
  ChebyshevSeries deep;
  deep.coeffs.assign(16, 0.5);  // depth 4 > 3 levels
  EXPECT_EQ(code_of([&] { pe.evaluate(ct, deep, rlk); }), ErrorCode::invalid_argument);
  ChebyshevSeries constant;
  constant.coeffs = {1.0};
  EXPECT_EQ(code_of([&] { pe.evaluate(ct, constant, rlk); }), ErrorCode::invalid_argument);
  ChebyshevSeries empty_interval;
  empty_interval.coeffs = {1.0, 1.0};
  empty_interval.a = empty_interval.b = 1;
  EXPECT_EQ(code_of([&] { pe.evaluate(ct, empty_interval, rlk); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { chebyshev_interpolate([](double x) { return x; }, 3, 1, 0); }),
            ErrorCode::invalid_argument);
}

}  // namespace
