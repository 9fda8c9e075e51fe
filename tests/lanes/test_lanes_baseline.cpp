// The mod-2^n baseline (baseline.hpp) at N = 2^12, n = 8 and 256 (insecure test chains): its
// layout; products refreshed in a chain, every integer equal to GMP's product modulo 2^n, on
// random and adversarial integers (0, 1, 2^n - 1, 2^(n-1), all bits alternating); on integers
// whose products stay below 2^n, the same integers as the lanes' arithmetic modulo 2^n + 1 on a
// lanes space of the same n (GMP's products both); and the refusals, typed.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lanes_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using namespace safhire::lanes::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
namespace ckks = safhire::ckks;
namespace core = safhire::core;

LaneSpace test_baseline_space(std::uint32_t n) {
  LaneSpaceOptions options;
  options.dnum = 4;  // as the lanes' test spaces
  std::string name = "baseline-n12-";
  name += std::to_string(n);
  return make_baseline_space(name, 12, n, options);
}

struct BaselineFixture {
  LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  core::SeededRandom random;
  ckks::KeyGenerator generator;
  ckks::SecretKey sk;
  Mod2nBaseline baseline;
  LaneKeys keys;
  LaneEncryptor encryptor;
  LaneDecryptor decryptor;

  explicit BaselineFixture(std::uint32_t n)
      : context(test_baseline_space(n), /*allow_insecure=*/true),
        ops(ckks::make_cpu_rns_ops(context.ckks(), 2)),
        random(core::SeededRandom::from_counter(0xba5e)),
        generator(context.ckks(), *ops, random),
        sk(generator.secret_key()),
        baseline(context, *ops),
        keys(baseline.keys(generator, sk)),
        encryptor(context, *ops, random),
        decryptor(context, *ops, sk) {}

  LaneCiphertext encrypt(const std::vector<mpz_class>& values) {
    return encryptor.encrypt_digits(baseline.digits(values), sk);
  }
  std::vector<mpz_class> decrypt(const LaneCiphertext& x) const {
    return baseline.values(decryptor.decrypt(x));
  }
};

BaselineFixture& baseline_fixture(std::uint32_t n) {
  static std::map<std::uint32_t, std::unique_ptr<BaselineFixture>> cache;
  auto& slot = cache[n];
  if (!slot) slot = std::make_unique<BaselineFixture>(n);
  return *slot;
}

// Random integers mod 2^n, then the adversarial ones in the first lanes.
std::vector<mpz_class> test_values(const BaselineFixture& f, unsigned long seed) {
  const mpz_class& m = f.baseline.modulus();
  std::vector<mpz_class> v = random_integers(m, f.baseline.integers(), seed);
  v[0] = 0;
  v[1] = 1;
  v[2] = m - 1;
  v[3] = m / 2;
  mpz_class alternating = 0;
  for (std::uint32_t k = 0; k < f.baseline.bits(); k += 2)
    mpz_setbit(alternating.get_mpz_t(), k);
  v[4] = alternating;
  return v;
}

class Baseline : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(Baseline, TheLayoutHasRoomForTheTruncationAndTheProductByT) {
  const LaneSpace space = test_baseline_space(GetParam());
  EXPECT_TRUE(is_baseline_space(space));
  EXPECT_EQ(space.lane_degree, 2 * GetParam());
  EXPECT_EQ(space.levels_needed(), space.top());
  const auto g = static_cast<std::uint32_t>(space.l_split.size());
  EXPECT_EQ(space.products_per_refresh, 1 + 2 * g);
  EXPECT_EQ(space.conversion_levels, 2 * g + 1);
  BaselineFixture& f = baseline_fixture(GetParam());
  EXPECT_EQ(f.baseline.bits(), GetParam());
  EXPECT_EQ(f.baseline.integers(), 4096U / (2 * GetParam()));
  EXPECT_EQ(f.baseline.truncation_level(), space.rest_level() - 1);
}

TEST_P(Baseline, RefreshedProductChainsAreExactModulo2ToTheN) {
  BaselineFixture& f = baseline_fixture(GetParam());
  const mpz_class& m = f.baseline.modulus();
  const std::vector<mpz_class> a = test_values(f, 11), b = test_values(f, 12);
  std::vector<mpz_class> want = a;
  LaneCiphertext x = f.encrypt(a);
  const LaneCiphertext y = f.encrypt(b);
  EXPECT_EQ(f.decrypt(x), a);
  std::vector<std::string> steps;
  for (int round = 0; round < 3; ++round) {
    const LaneCiphertext product = f.baseline.multiply(x, y, f.keys.relinearization);
    EXPECT_EQ(product.level(), f.baseline.truncation_level());
    x = f.baseline.refresh(product, f.keys, [&](const char* step) { steps.emplace_back(step); });
    EXPECT_EQ(x.level(), f.context.space().rest_level());
    for (std::size_t r = 0; r < want.size(); ++r)
      want[r] = mod(want[r] * b[r], m);
    const LaneDecoding d = f.decryptor.decrypt(x);
    ASSERT_EQ(f.baseline.values(d), want) << "after product " << round + 1;
    EXPECT_LT(d.max_error, 0.25);
    // The truncation left the digits of weight 2^n and above at zero, and the refresh's digits
    // are within the lanes' bound.
    for (const auto& row : d.digits) {
      for (std::uint32_t k = 0; k < row.size(); ++k) {
        if (k >= f.baseline.bits()) {
          ASSERT_EQ(row[k], 0) << "digit " << k;
        }
        ASSERT_LE(std::abs(static_cast<double>(row[k])), f.context.space().rest_digit_bound());
      }
    }
  }
  const std::vector<std::string> one = {"truncation", "C",        "ModRaise", "CoeffToSlot",
                                        "x t",        "cleaning", "L"};
  ASSERT_EQ(steps.size(), 3 * one.size());
  EXPECT_TRUE(std::equal(one.begin(), one.end(), steps.begin()));
}

TEST_P(Baseline, RefusalsAreTypedErrors) {
  BaselineFixture& f = baseline_fixture(GetParam());
  const LaneCiphertext x = f.encrypt({mpz_class(3)});
  const LaneCiphertext product = f.baseline.multiply(x, x, f.keys.relinearization);
  // A second product would land below the truncation level.
  EXPECT_EQ(code_of([&] { f.baseline.multiply(product, product, f.keys.relinearization); }),
            ErrorCode::needs_refresh);
  EXPECT_EQ(code_of([&] { f.baseline.multiply(x, product, f.keys.relinearization); }),
            ErrorCode::invalid_argument);
  LaneCiphertext low = product;
  low.ct = ckks::Evaluator(f.context.ckks(), *f.ops).drop_to_level(product.ct, product.level() - 1);
  EXPECT_EQ(code_of([&] { f.baseline.refresh(low, f.keys); }), ErrorCode::invalid_argument);
  LaneCiphertext foreign = x;
  foreign.space ^= 1;
  EXPECT_EQ(code_of([&] { f.baseline.refresh(foreign, f.keys); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { f.baseline.multiply(foreign, x, f.keys.relinearization); }),
            ErrorCode::size_mismatch);
  const std::vector<mpz_class> too_many(f.baseline.integers() + 1, mpz_class(1));
  EXPECT_EQ(code_of([&] { f.baseline.digits(too_many); }), ErrorCode::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(TestSpaces, Baseline, ::testing::Values(8U, 256U),
                         [](const ::testing::TestParamInfo<std::uint32_t>& p) {
                           std::string name = "n";
                           name += std::to_string(p.param);
                           return name;
                         });

TEST(BaselineSpaces, MalformedOnesAndOtherLayoutsAreRefused) {
  EXPECT_EQ(code_of([] { make_baseline_space("x", 12, 12, {}); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([] { make_baseline_space("x", 12, 2, {}); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([] { make_baseline_space("x", 12, 1024, {}); }),
            ErrorCode::invalid_parameters);  // 2n > N/4
  // The lanes' refresh refuses the baseline's layout, and the baseline the lanes'.
  BaselineFixture& f = baseline_fixture(8);
  EXPECT_EQ(code_of([&] { LaneRefresher(f.context, *f.ops); }), ErrorCode::invalid_argument);
  LanesFixture& lanes = lanes_fixture("lanes-n12-8-b2");
  EXPECT_FALSE(is_baseline_space(lanes.context.space()));
  EXPECT_EQ(code_of([&] { Mod2nBaseline(lanes.context, *lanes.ops); }),
            ErrorCode::invalid_argument);
}

// Where no product reaches 2^n, arithmetic modulo 2^n and modulo 2^n + 1 give the same integer:
// the baseline's and the lanes' results on the same inputs (both against GMP's a b).
TEST(BaselineSpaces, ProductsBelow2ToTheNEqualTheLanesProducts) {
  for (const std::uint32_t n : {8U, 256U}) {
    SCOPED_TRACE(n);
    BaselineFixture& f = baseline_fixture(n);
    std::string lanes_name = "lanes-n12-";
    lanes_name += std::to_string(n);
    lanes_name += "-b2";
    LanesFixture& lanes = lanes_fixture(lanes_name);
    mpz_class half;
    mpz_ui_pow_ui(half.get_mpz_t(), 2, n / 2);
    const std::size_t count = f.baseline.integers();
    const std::vector<mpz_class> a = random_integers(half, count, 21),
                                 b = random_integers(half, count, 22);
    const LaneCiphertext x = f.encrypt(a), y = f.encrypt(b);
    const auto ours =
        f.decrypt(f.baseline.refresh(f.baseline.multiply(x, y, f.keys.relinearization), f.keys));
    const LaneCiphertext lx = lanes.encryptor.encrypt(a, lanes.sk),
                         ly = lanes.encryptor.encrypt(b, lanes.sk);
    const LaneCiphertext lp = lanes.refresher.refresh(
        lanes.evaluator.multiply(lx, ly, lanes.keys.relinearization), lanes.keys);
    const auto theirs = lanes.decryptor.decrypt(lp).integers;
    for (std::size_t r = 0; r < count; ++r) {
      ASSERT_EQ(ours[r], a[r] * b[r]) << "lane " << r;
      ASSERT_EQ(theirs[r], ours[r]) << "lane " << r;
    }
  }
}

}  // namespace
