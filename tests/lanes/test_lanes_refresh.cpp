// The lane refresh, exact: after products, on adversarial digits (all at a large bound,
// alternating signs, the value beta^n = -1, all digits beta - 1), in the cleaning and plain modes,
// step by step and whole, and in a chain that the evaluator refreshes by itself, and without the
// reduction (whose digits stay large); each result against GMP, the
// refreshed digits within the bound the reduction mod t guarantees, the noise within the model's
// estimate, and a count of wrong digits (none) over every digit the suite refreshes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "lanes_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using namespace safhire::lanes::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

// Every digit refreshed in this process, and the lanes that came back wrong (a digit rounded to
// the wrong integer makes its lane's integer wrong).
struct DigitCount {
  std::size_t checked = 0, wrong = 0;
  ~DigitCount() {
    std::printf("[ lanes    ] %zu digits refreshed, %zu lanes wrong\n", checked, wrong);
  }
};
DigitCount digit_count;

class LaneRefresh : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (const std::string why = long_test_skip(GetParam()); !why.empty()) GTEST_SKIP() << why;
  }
  LanesFixture& f() { return lanes_fixture(GetParam()); }
  const LaneSpace& space() { return f().context.space(); }

  // x refreshed in `mode`: at the rest level (plain: C^-1's), every lane still want's, the digits
  // within the reduction's bound, the noise measured within the estimate.
  LaneCiphertext expect_refresh(const LaneCiphertext& x, const std::vector<mpz_class>& want,
                                RefreshMode mode = RefreshMode::clean) {
    const LaneCiphertext out = f().refresher.refresh(x, f().keys, mode);
    const LaneDecoding d = f().decryptor.decrypt(out);
    std::size_t wrong = 0;
    for (std::size_t r = 0; r < d.integers.size(); ++r) {
      const mpz_class w = r < want.size() ? mod(want[r], f().p()) : mpz_class(0);
      wrong += d.integers[r] != w ? 1 : 0;
    }
    digit_count.checked += std::size_t{space().lanes()} * space().lane_degree;
    digit_count.wrong += wrong;
    EXPECT_EQ(wrong, 0U);
    if (mode == RefreshMode::clean) {
      EXPECT_EQ(out.level(), space().rest_level());
    }
    EXPECT_DOUBLE_EQ(out.digit_bound, space().rest_digit_bound());
    EXPECT_LE(largest_digit(d), space().rest_digit_bound());
    EXPECT_LE(d.rms_error, out.noise);
    EXPECT_LE(d.max_error, 10 * out.noise);
    return out;
  }
};

TEST_P(LaneRefresh, AProductRefreshesExactly) {
  const std::size_t lanes = space().lanes();
  const auto a = random_integers(f().p(), lanes, 21), b = random_integers(f().p(), lanes, 22);
  const auto ca = f().encryptor.encrypt(a, f().sk), cb = f().encryptor.encrypt(b, f().sk);
  const auto product = f().evaluator.multiply(ca, cb, f().keys.relinearization);
  std::vector<mpz_class> want(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * b[r];
  const auto refreshed = expect_refresh(product, want);
  // The noise is gone: the refreshed product has no more than a fresh product's worth left.
  EXPECT_LT(refreshed.noise, 1e-6);
  // And the refreshed ciphertext multiplies again.
  const auto again = f().evaluator.multiply(refreshed, cb, f().keys.relinearization);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] *= b[r];
  expect_refresh(again, want);
}

TEST_P(LaneRefresh, AdversarialDigitsRefreshExactly) {
  const auto& s = space();
  const std::size_t lanes = s.lanes(), n = s.lane_degree;
  // The largest digits a refresh accepts here: what a product of two refreshed ciphertexts can
  // reach, n D^2.
  const auto big = static_cast<std::int64_t>(static_cast<double>(n) * s.rest_digit_bound() *
                                             s.rest_digit_bound());
  auto run = [&](const char* what, const LaneDigits& digits) {
    SCOPED_TRACE(what);
    std::vector<mpz_class> want(lanes);
    for (std::size_t r = 0; r < lanes; ++r)
      want[r] = from_digits(digits[r], s.base);
    expect_refresh(f().encryptor.encrypt_digits(digits, f().sk), want);
  };
  LaneDigits d(lanes, std::vector<std::int64_t>(n));
  for (auto& lane : d)
    std::fill(lane.begin(), lane.end(), big);
  run("every digit at the bound", d);
  for (auto& lane : d) {
    for (std::size_t t = 0; t < n; ++t)
      lane[t] = t % 2 == 0 ? big : -big;
  }
  run("alternating signs at the bound", d);
  for (auto& lane : d) {
    std::fill(lane.begin(), lane.end(), 0);
    lane[0] = -1;  // beta^n = -1
  }
  run("beta^n", d);
  for (auto& lane : d)
    std::fill(lane.begin(), lane.end(), static_cast<std::int64_t>(s.base) - 1);
  run("every digit beta - 1 (p - 2)", d);
  for (std::size_t r = 0; r < lanes; ++r) {
    std::fill(d[r].begin(), d[r].end(), 0);
    d[r][r % n] = r % 2 == 0 ? big : -big;  // one digit, lane by lane elsewhere
  }
  run("one large digit a lane", d);
}

TEST_P(LaneRefresh, ThePlainRefreshRestoresLevelsAndKeepsTheNoise) {
  const std::size_t lanes = space().lanes();
  const auto a = random_integers(f().p(), lanes, 23), b = random_integers(f().p(), lanes, 24);
  const auto product = f().evaluator.multiply(
      f().encryptor.encrypt(a, f().sk), f().encryptor.encrypt(b, f().sk), f().keys.relinearization);
  std::vector<mpz_class> want(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * b[r];
  const auto plain = expect_refresh(product, want, RefreshMode::plain);
  // C^-1 ends at the top less C's groups: more levels than the cleaning refresh leaves.
  EXPECT_EQ(plain.level(), space().top() - space().c_split.size());
  EXPECT_GE(plain.noise, product.noise);
  // It multiplies at its level, and a cleaning refresh takes the result.
  const auto again = f().evaluator.multiply(plain, plain, f().keys.relinearization);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] *= want[r];
  expect_refresh(again, want);
}

// Without the reduction mod t the refresh restores the levels and removes q_0 I (EvalMod), but
// the digits come back as large as they went in, with an error that grows with them: exact while
// they fit, and a chain of products is refused within two products, where the cleaning refresh
// goes on for ever (AChainRefreshesItselfWhenAsked).
TEST_P(LaneRefresh, WithoutTheReductionTheDigitsStayLarge) {
  const std::size_t lanes = space().lanes();
  const auto a = random_integers(f().p(), lanes, 28), b = random_integers(f().p(), lanes, 29);
  LaneCiphertext x = f().evaluator.multiply(
      f().encryptor.encrypt(a, f().sk), f().encryptor.encrypt(b, f().sk), f().keys.relinearization);
  std::vector<mpz_class> want(lanes);
  for (std::size_t r = 0; r < lanes; ++r)
    want[r] = a[r] * b[r] % f().p();
  int products = 1;
  for (;; ++products) {
    SCOPED_TRACE(products);
    const auto out = f().refresher.refresh(x, f().keys, RefreshMode::unreduced);
    EXPECT_EQ(out.level(), space().rest_level());
    EXPECT_EQ(out.digit_bound, x.digit_bound);
    const LaneDecoding d = f().decryptor.decrypt(out);
    for (std::size_t r = 0; r < lanes; ++r)
      ASSERT_EQ(d.integers[r], want[r]) << "lane " << r;
    EXPECT_LE(d.rms_error, out.noise);
    EXPECT_LE(d.max_error, 10 * out.noise);
    EXPECT_LE(largest_digit(d), out.digit_bound);
    digit_count.checked += std::size_t{lanes} * space().lane_degree;
    // The next product (its digits n D^2) or its refresh is refused.
    const std::optional<ErrorCode> refused = code_of([&] {
      x = f().evaluator.multiply(out, out, f().keys.relinearization);
      f().refresher.check_input(x, RefreshMode::unreduced);
    });
    if (refused) {
      EXPECT_EQ(refused, ErrorCode::needs_refresh);
      break;
    }
    for (auto& w : want)
      w = w * w % f().p();
    ASSERT_LT(products, 3);
  }
  EXPECT_LE(products, 2);
}

TEST_P(LaneRefresh, TheStepsComposeToTheRefresh) {
  const auto a = random_integers(f().p(), space().lanes(), 25);
  const auto x = f().encryptor.encrypt(a, f().sk);
  const auto& r = f().refresher;
  const auto whole = r.refresh(x, f().keys);
  const auto s = r.cross_lanes(x, f().keys);
  EXPECT_EQ(s.level(), 1U);
  const auto top = space().top() - space().cts_split.size();
  const auto raised = r.reduce_and_raise(
      s, f().keys, static_cast<double>(f().context.ckks().prime(static_cast<std::uint32_t>(top))));
  EXPECT_EQ(raised.level(), space().top());
  auto parts = r.to_digits(raised, f().keys);
  ASSERT_EQ(parts.size(), 2U);
  for (auto& part : parts)
    part = r.clean(part, f().keys);
  const auto out = r.to_lanes(parts, f().keys);
  EXPECT_EQ(out.c, whole.ct.c);
  EXPECT_EQ(out.scale, whole.ct.scale);
}

TEST_P(LaneRefresh, AChainRefreshesItselfWhenAsked) {
  const std::size_t lanes = space().lanes();
  const auto a = random_integers(f().p(), lanes, 26);
  const auto ca = f().encryptor.encrypt(a, f().sk);
  LaneEvaluator ev(f().context, *f().ops);
  ev.set_refresher(&f().refresher, &f().keys);
  LaneCiphertext acc = ca;
  std::vector<mpz_class> want = a;
  const int products = 6;
  for (int i = 0; i < products; ++i) {
    acc = ev.multiply(acc, ca, f().keys.relinearization);
    for (std::size_t r = 0; r < lanes; ++r)
      want[r] = mod(want[r] * a[r], f().p());
  }
  // One refresh before every product but the first (products_per_refresh of them fit).
  EXPECT_EQ(ev.refreshes(),
            static_cast<std::size_t>((products - 1) / space().products_per_refresh));
  expect_refresh(acc, want);
  // Without the refresher the same chain is refused at the first product that would not fit.
  EXPECT_EQ(code_of([&] {
              LaneCiphertext x = ca;
              for (int i = 0; i < products; ++i)
                x = f().evaluator.multiply(x, ca, f().keys.relinearization);
            }),
            ErrorCode::needs_refresh);
}

TEST_P(LaneRefresh, BadInputsAreTypedErrors) {
  const auto x = f().encryptor.encrypt(random_integers(f().p(), 2, 27), f().sk);
  LaneCiphertext noisy = x;
  noisy.noise = 1;
  EXPECT_EQ(code_of([&] { f().refresher.refresh(noisy, f().keys); }), ErrorCode::needs_refresh);
  LaneCiphertext low = x;
  low.ct = f().evaluator.ckks_evaluator().drop_to_level(x.ct, space().refresh_level() - 1);
  EXPECT_EQ(code_of([&] { f().refresher.refresh(low, f().keys); }), ErrorCode::invalid_argument);
  LaneKeys no_ephemeral = f().keys;
  no_ephemeral.to_ephemeral.reset();
  EXPECT_EQ(code_of([&] { f().refresher.refresh(x, no_ephemeral); }), ErrorCode::invalid_argument);
  // The plain refresh needs its plan.
  const LaneRefresher unplanned(f().context, *f().ops);
  EXPECT_EQ(code_of([&] { unplanned.refresh(x, f().keys, RefreshMode::plain); }),
            ErrorCode::unsupported);
  // The refresh without the reduction needs no plan of its own.
  EXPECT_NO_THROW(unplanned.check_input(x, RefreshMode::unreduced));
}

INSTANTIATE_TEST_SUITE_P(TestSpaces, LaneRefresh,
                         ::testing::Values("lanes-n12-256-b2", "lanes-n12-8-b2",
                                           "lanes-n12-1024-b2", "lanes-n12-64-b16"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return safhire::testing::set_label(p.param);
                         });
// The issue's own space, 16 integers modulo 2^4096 + 1 at N = 2^16: on demand (long_test_skip).
INSTANTIATE_TEST_SUITE_P(N16, LaneRefresh, ::testing::Values("lanes-n16-4096-b2"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return safhire::testing::set_label(p.param);
                         });

}  // namespace
