// Lane arithmetic in form B, every operation exact against GMP's arithmetic modulo p on random
// integers, on two test spaces (beta = 2 and beta = 16); the digit bounds and noise estimates
// each operation carries against what the decryption measures; and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "lanes_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using namespace safhire::lanes::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

class LaneArithmetic : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (const std::string why = long_test_skip(GetParam()); !why.empty()) GTEST_SKIP() << why;
  }
  LanesFixture& f() { return lanes_fixture(GetParam()); }
  // Decrypts x and checks every lane against want, the digits against x's bound and the measured
  // noise against x's estimate (the RMS within the estimated deviation, the largest within ten).
  void expect_lanes(const LaneCiphertext& x, const std::vector<mpz_class>& want) {
    const LaneDecoding d = f().decryptor.decrypt(x);
    ASSERT_EQ(d.integers.size(), f().context.space().lanes());
    for (std::size_t r = 0; r < d.integers.size(); ++r) {
      const mpz_class w = r < want.size() ? mod(want[r], f().p()) : mpz_class(0);
      ASSERT_EQ(d.integers[r], w) << "lane " << r;
    }
    EXPECT_LE(largest_digit(d), x.digit_bound);
    EXPECT_LE(d.rms_error, x.noise);
    EXPECT_LE(d.max_error, 10 * x.noise);
  }
};

TEST_P(LaneArithmetic, PlaintextEncodingRoundTrips) {
  const LaneEncoder encoder(f().context, *f().ops);
  const auto& s = f().context.space();
  auto values = random_integers(f().p(), s.lanes(), 1);
  values[0] = 0;
  values[1] = f().p() - 1;  // beta^n = -1
  values[2] = 1;
  const auto plain = encoder.encode(values, f().context.rest_scale(), s.rest_level());
  const LaneDecoding d = encoder.decode(plain);
  ASSERT_EQ(d.integers, values);
  EXPECT_LT(d.max_error, 1e-6);
  // Fewer integers than lanes: the rest are 0; more: refused.
  const auto two = encoder.decode(encoder.encode(std::vector<mpz_class>{5, 7}, 1 << 30, 1));
  EXPECT_EQ(two.integers[0], 5);
  EXPECT_EQ(two.integers[1], 7);
  EXPECT_EQ(two.integers.back(), 0);
  std::vector<mpz_class> too_many(s.lanes() + 1, 1);
  EXPECT_EQ(code_of([&] { encoder.digits(too_many); }), ErrorCode::invalid_argument);
}

TEST_P(LaneArithmetic, EncryptionRoundTripsWithEitherKey) {
  const auto values = random_integers(f().p(), f().context.space().lanes(), 2);
  const auto pk = f().generator.public_key(f().sk);
  for (const auto& x : {f().encryptor.encrypt(values, f().sk), f().encryptor.encrypt(values, pk)}) {
    EXPECT_EQ(x.level(), f().context.space().rest_level());
    EXPECT_EQ(x.ct.scale, f().context.rest_scale());
    expect_lanes(x, values);
  }
}

TEST_P(LaneArithmetic, AdditionsAreExact) {
  const std::size_t lanes = f().context.space().lanes();
  const auto a = random_integers(f().p(), lanes, 3), b = random_integers(f().p(), lanes, 4);
  const auto ca = f().encryptor.encrypt(a, f().sk), cb = f().encryptor.encrypt(b, f().sk);
  std::vector<mpz_class> sum(lanes), diff(lanes), neg(lanes);
  for (std::size_t r = 0; r < lanes; ++r) {
    sum[r] = a[r] + b[r];
    diff[r] = a[r] - b[r];
    neg[r] = -a[r];
  }
  expect_lanes(f().evaluator.add(ca, cb), sum);
  expect_lanes(f().evaluator.sub(ca, cb), diff);
  expect_lanes(f().evaluator.negate(ca), neg);
}

TEST_P(LaneArithmetic, ProductsAreNegacyclicLaneProducts) {
  const std::size_t lanes = f().context.space().lanes();
  const auto a = random_integers(f().p(), lanes, 5), b = random_integers(f().p(), lanes, 6);
  const auto ca = f().encryptor.encrypt(a, f().sk), cb = f().encryptor.encrypt(b, f().sk);
  const auto product = f().evaluator.multiply(ca, cb, f().keys.relinearization);
  std::vector<mpz_class> want(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * b[r];
  EXPECT_EQ(product.level(), ca.level() - 1);
  EXPECT_EQ(product.digit_bound,
            static_cast<double>(f().context.space().lane_degree) * ca.digit_bound * cb.digit_bound);
  expect_lanes(product, want);
  // A product plus a fresh ciphertext (one level apart) meet at the lower level.
  std::vector<mpz_class> plus(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    plus[r] = want[r] + a[r];
  expect_lanes(f().evaluator.add(product, ca), plus);
}

TEST_P(LaneArithmetic, PlaintextProductsAreExact) {
  const auto& s = f().context.space();
  const std::size_t lanes = s.lanes();
  const auto a = random_integers(f().p(), lanes, 7);
  const auto ca = f().encryptor.encrypt(a, f().sk);
  // One integer for all lanes: an exact integer polynomial, no level.
  const mpz_class c = random_integers(f().p(), 1, 8)[0];
  const auto by_c = f().evaluator.multiply_integer(ca, c);
  EXPECT_EQ(by_c.level(), ca.level());
  std::vector<mpz_class> want(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * c;
  expect_lanes(by_c, want);
  // One integer per lane: form-B slots, one level.
  const auto cs = random_integers(f().p(), lanes, 9);
  const auto by_cs = f().evaluator.multiply_integers(ca, cs);
  EXPECT_EQ(by_cs.level(), ca.level() - 1);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * cs[r];
  expect_lanes(by_cs, want);
  // Y^k: times beta^k, with the wrap-around beta^n = -1, for k of either sign and beyond n.
  const auto n = static_cast<std::int64_t>(s.lane_degree);
  for (const std::int64_t k : std::vector<std::int64_t>{1, n - 1, n, n + 3, 2 * n, -1, -n - 2}) {
    SCOPED_TRACE(k);
    const auto shifted = f().evaluator.multiply_monomial(ca, k);
    EXPECT_EQ(shifted.level(), ca.level());
    mpz_class factor;
    const std::int64_t e = ((k % (2 * n)) + 2 * n) % (2 * n);
    mpz_ui_pow_ui(factor.get_mpz_t(), s.base, static_cast<unsigned long>(e));
    for (std::size_t r = 0; r < lanes; ++r)
      want[r] = a[r] * factor;
    expect_lanes(shifted, want);
  }
}

TEST_P(LaneArithmetic, WholeLaneRotationsMoveBlocks) {
  const auto& s = f().context.space();
  const auto a = random_integers(f().p(), s.lanes(), 10);
  const auto ca = f().encryptor.encrypt(a, f().sk);
  for (const int m : {1, 3}) {
    // The lane in block b takes block b + m's integer.
    std::vector<mpz_class> want(s.lanes());
    for (std::uint32_t r = 0; r < s.lanes(); ++r) {
      const std::uint32_t from = (block_of_lane(s, r) + m) % s.lanes();
      want[r] = a[lane_of_block(s, from)];
    }
    expect_lanes(f().evaluator.rotate_lanes(ca, m, f().keys.galois), want);
  }
}

TEST_P(LaneArithmetic, ResultsThatCouldNotBeRefreshedAreRefused) {
  const auto& s = f().context.space();
  const auto a = random_integers(f().p(), s.lanes(), 11);
  const auto ca = f().encryptor.encrypt(a, f().sk);
  const auto& rlk = f().keys.relinearization;
  // After products_per_refresh products, a further one would fall below the refresh level.
  LaneCiphertext x = ca;
  for (std::uint32_t i = 0; i < s.products_per_refresh; ++i)
    x = f().evaluator.multiply(x, ca, rlk);
  EXPECT_EQ(x.level(), s.refresh_level());
  EXPECT_EQ(code_of([&] { f().evaluator.multiply(x, ca, rlk); }), ErrorCode::needs_refresh);
  EXPECT_EQ(code_of([&] { f().evaluator.multiply_integers(x, a); }), ErrorCode::needs_refresh);
  EXPECT_FALSE(f().evaluator.refusal(s.refresh_level() - 1, 1, 0).empty());
  // Noise beyond what the cleaning takes, digits beyond the modulus.
  LaneCiphertext noisy = ca;
  noisy.noise = 0.1;
  EXPECT_EQ(code_of([&] { f().evaluator.add(noisy, ca); }), ErrorCode::needs_refresh);
  LaneCiphertext huge = ca;
  huge.digit_bound = std::exp2(60);
  EXPECT_EQ(code_of([&] { f().evaluator.add(huge, ca); }), ErrorCode::needs_refresh);
  EXPECT_TRUE(f().evaluator.refusal(s.rest_level(), s.rest_digit_bound(), 1e-9).empty());
  // A ciphertext of another space.
  LaneCiphertext foreign = ca;
  foreign.space ^= 1;
  EXPECT_EQ(code_of([&] { f().evaluator.add(foreign, ca); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { f().decryptor.decrypt(foreign); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { f().refresher.refresh(foreign, f().keys); }), ErrorCode::size_mismatch);
}

INSTANTIATE_TEST_SUITE_P(TestSpaces, LaneArithmetic,
                         ::testing::Values("lanes-n12-256-b2", "lanes-n12-64-b16"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return safhire::testing::set_label(p.param);
                         });
// The issue's own space, 16 integers modulo 2^4096 + 1 at N = 2^16: on demand (long_test_skip).
INSTANTIATE_TEST_SUITE_P(N16, LaneArithmetic, ::testing::Values("lanes-n16-4096-b2"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return safhire::testing::set_label(p.param);
                         });

}  // namespace
