// Canonical digits in form A (digits.hpp): the comparisons, the digit and bit extraction and
// from_digits, each decrypted and checked against GMP on random and adversarial integers (0, 1,
// p - 1 = beta^n, p - 2 with every digit at beta - 1, equal operands, operands that differ in
// the lowest or the highest digit only, and 1 against beta^n, whose digit 0 differs by 2), on a
// beta = 2 and a beta = 16 test space; and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <random>
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

struct Digits {
  LanesFixture& f;
  DigitEvaluator evaluator{f.context, *f.ops};
  DigitEncryptor encryptor{f.context, *f.ops, f.random};
  DigitDecryptor decryptor{f.context, *f.ops, f.sk};
  ckks::GaloisKeys keys = f.keys.galois;
  explicit Digits(const std::string& space) : f(lanes_fixture(space)) {
    evaluator.add_keys(f.generator, f.sk, keys);
  }
  const ckks::SwitchingKey& rlk() const { return f.keys.relinearization; }
};

Digits& digits(const std::string& space) {
  static std::map<std::string, std::unique_ptr<Digits>> cache;
  auto& slot = cache[space];
  if (!slot) slot = std::make_unique<Digits>(space);
  return *slot;
}

// Operand pairs, lane by lane: batch 0 the adversarial ones (then random), batch 1 random ones,
// every fourth equal.
std::pair<std::vector<mpz_class>, std::vector<mpz_class>> operand_pairs(const LaneSpace& space,
                                                                        const mpz_class& p,
                                                                        int batch) {
  const mpz_class top = p - 1;  // beta^n
  mpz_class high_digit;
  mpz_ui_pow_ui(high_digit.get_mpz_t(), space.base, space.lane_degree - 1);
  const auto r = random_integers(p, 2 * space.lanes(), 71 + static_cast<unsigned long>(batch));
  const mpz_class low = r[2] % high_digit;
  std::vector<std::pair<mpz_class, mpz_class>> pairs = {{0, 0},
                                                        {0, 1},
                                                        {1, 0},
                                                        {top, top},
                                                        {top, 0},
                                                        {0, top},
                                                        {top, p - 2},
                                                        {p - 2, top},
                                                        {p - 2, p - 2},
                                                        {1, top},
                                                        {top, 1},
                                                        {space.base - 1, top},
                                                        {r[1], r[1] + 1},
                                                        {r[1] + 1, r[1]},
                                                        {low, low + high_digit},
                                                        {low + high_digit, low}};
  if (batch != 0) pairs.clear();
  std::vector<mpz_class> a, b;
  for (std::uint32_t lane = 0; lane < space.lanes(); ++lane) {
    if (lane < pairs.size()) {
      a.push_back(mod(pairs[lane].first, p));
      b.push_back(mod(pairs[lane].second, p));
    } else {
      a.push_back(r[lane]);
      b.push_back(lane % 4 == 0 ? r[lane] : r[space.lanes() + lane]);
    }
  }
  return {a, b};
}

class CanonicalDigits : public ::testing::TestWithParam<const char*> {};

TEST_P(CanonicalDigits, ComparisonsMatchGmp) {
  Digits& d = digits(GetParam());
  const LaneSpace& space = d.f.context.space();
  for (int batch = 0; batch < 2; ++batch) {
    const auto [a, b] = operand_pairs(space, d.f.p(), batch);
    const DigitSlots x = d.encryptor.encrypt(a, d.f.sk), y = d.encryptor.encrypt(b, d.f.sk);
    ASSERT_TRUE(x.canonical);
    // The encryption itself: the canonical digits, decrypted, are the integers.
    const DigitSlotsDecoding plain = d.decryptor.decrypt(x);
    for (std::uint32_t r = 0; r < space.lanes(); ++r)
      ASSERT_EQ(plain.integers[r], a[r]) << "lane " << r;

    const LaneValues lt = d.evaluator.less_than(x, y, d.rlk(), d.keys);
    const LaneValues eq = d.evaluator.equal(x, y, d.rlk(), d.keys);
    EXPECT_EQ(lt.ct.level(), x.low.level() - d.evaluator.less_than_depth());
    EXPECT_EQ(eq.ct.level(), x.low.level() - d.evaluator.equal_depth());
    const LaneValuesDecoding lt_d = d.decryptor.decrypt(lt), eq_d = d.decryptor.decrypt(eq);
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      EXPECT_EQ(lt_d.values[r], a[r] < b[r] ? 1 : 0)
          << "batch " << batch << ", lane " << r << ": " << a[r] << " < " << b[r];
      EXPECT_EQ(eq_d.values[r], a[r] == b[r] ? 1 : 0)
          << "batch " << batch << ", lane " << r << ": " << a[r] << " == " << b[r];
    }
    EXPECT_LT(lt_d.max_error, 0.01);
    EXPECT_LT(eq_d.max_error, 0.01);
    EXPECT_LE(lt_d.max_error, 10 * lt.noise) << "the noise estimate is an upper one";
    EXPECT_LE(eq_d.max_error, 10 * eq.noise);
  }
}

TEST_P(CanonicalDigits, DigitsAndBitsMatchGmp) {
  Digits& d = digits(GetParam());
  const LaneSpace& space = d.f.context.space();
  const mpz_class& p = d.f.p();
  std::vector<mpz_class> a = random_integers(p, space.lanes(), 72);
  a[0] = p - 1;  // beta^n
  a[1] = p - 2;  // every digit beta - 1
  a[2] = 0;
  a[3] = 1;
  const DigitSlots x = d.encryptor.encrypt(a, d.f.sk);
  const std::uint32_t n = space.lane_degree, half = space.lane_slots();
  for (std::uint32_t t : {0U, 1U, half - 1, half, n - 1}) {
    const LaneValuesDecoding got = d.decryptor.decrypt(d.evaluator.digit(x, t, d.rlk(), d.keys));
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      mpz_class power;
      mpz_ui_pow_ui(power.get_mpz_t(), space.base, t);
      const mpz_class want = a[r] == p - 1 ? mpz_class(0) : mpz_class((a[r] / power) % space.base);
      ASSERT_EQ(got.values[r], want.get_si()) << "digit " << t << " of lane " << r;
    }
    EXPECT_LT(got.max_error, 0.01);
  }
  const auto k = static_cast<std::uint64_t>(std::countr_zero(space.base));
  for (std::uint64_t j :
       {std::uint64_t{0}, k - 1, k, std::uint64_t{k * n / 2 + 1}, k * n - 1, k * n}) {
    const LaneValuesDecoding got = d.decryptor.decrypt(d.evaluator.bit(x, j, d.rlk(), d.keys));
    for (std::uint32_t r = 0; r < space.lanes(); ++r)
      ASSERT_EQ(got.values[r], mpz_tstbit(a[r].get_mpz_t(), j)) << "bit " << j << " of lane " << r;
    EXPECT_LT(got.max_error, 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(Spaces, CanonicalDigits,
                         ::testing::Values("lanes-n12-256-b2", "lanes-n12-64-b16"),
                         [](const auto& param) {
                           std::string name = param.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Canonical digits to form B: the same integers, refreshable.
TEST(CanonicalDigitsToLanes, FromDigitsGivesTheIntegers) {
  LanesFixture& f = lanes_fixture("lanes-n12-256-b2-k5");
  const LaneConverter converter(f.context, *f.ops);
  ckks::GaloisKeys keys = f.keys.galois;
  converter.add_keys(f.generator, f.sk, keys);
  const DigitEncryptor encryptor(f.context, *f.ops, f.random);
  std::vector<mpz_class> a = random_integers(f.p(), f.context.space().lanes(), 73);
  a[0] = f.p() - 1;
  a[1] = f.p() - 2;
  a[2] = 0;
  const LaneCiphertext x = converter.from_digits(encryptor.encrypt(a, f.sk), keys);
  EXPECT_EQ(x.level(), converter.output_level());
  const LaneDecoding d = f.decryptor.decrypt(x);
  for (std::size_t r = 0; r < a.size(); ++r)
    ASSERT_EQ(d.integers[r], a[r]) << "lane " << r;
  const LaneDecoding refreshed = f.decryptor.decrypt(f.refresher.refresh(x, f.keys));
  for (std::size_t r = 0; r < a.size(); ++r)
    ASSERT_EQ(refreshed.integers[r], a[r]) << "lane " << r;
  // Redundant digits are refused.
  const DigitSlots redundant = converter.to_slots(f.encryptor.encrypt(a, f.sk), keys);
  EXPECT_EQ(code_of([&] { (void)converter.from_digits(redundant, keys); }),
            ErrorCode::invalid_argument);
}

TEST(CanonicalDigitsRefusals, AreTypedErrors) {
  Digits& d = digits("lanes-n12-256-b2");
  LanesFixture& f = d.f;
  const LaneSpace& space = f.context.space();
  const auto a = random_integers(f.p(), 2, 74);
  const DigitSlots x = d.encryptor.encrypt(a, f.sk);
  // Not canonical, at the wrong scale, too low, of another space.
  DigitSlots redundant = x;
  redundant.canonical = false;
  EXPECT_EQ(code_of([&] { (void)d.evaluator.less_than(redundant, x, d.rlk(), d.keys); }),
            ErrorCode::invalid_argument);
  DigitSlots rescaled = x;
  rescaled.low.scale *= 2;
  EXPECT_EQ(code_of([&] { (void)d.evaluator.equal(x, rescaled, d.rlk(), d.keys); }),
            ErrorCode::invalid_argument);
  const DigitSlots low = d.encryptor.encrypt(a, f.sk, d.evaluator.less_than_depth() - 1);
  EXPECT_EQ(code_of([&] { (void)d.evaluator.less_than(low, low, d.rlk(), d.keys); }),
            ErrorCode::invalid_argument);
  Digits& other = digits("lanes-n12-64-b16");
  const DigitSlots foreign = other.encryptor.encrypt(a, other.f.sk);
  EXPECT_EQ(code_of([&] { (void)d.evaluator.equal(x, foreign, d.rlk(), d.keys); }),
            ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { (void)d.decryptor.decrypt(foreign); }), ErrorCode::size_mismatch);
  // Digits and bits out of range; more integers than lanes; a level above the top.
  EXPECT_EQ(code_of([&] { (void)d.evaluator.digit(x, space.lane_degree, d.rlk(), d.keys); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)d.evaluator.bit(x, space.lane_degree + 1, d.rlk(), d.keys); }),
            ErrorCode::invalid_argument);
  const std::vector<mpz_class> too_many(space.lanes() + 1, mpz_class(1));
  EXPECT_EQ(code_of([&] { (void)d.encryptor.encrypt(too_many, f.sk); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)d.encryptor.encrypt(a, f.sk, space.top() + 1); }),
            ErrorCode::invalid_argument);
  // A base the interpolants cannot take, and a field space.
  const LaneContext wide(make_lane_space("wide", 12, 64, 64), true);
  EXPECT_EQ(code_of([&] { DigitEvaluator(wide, *f.ops); }), ErrorCode::unsupported);
  const LaneContext field(test_field_spaces().front(), true);
  EXPECT_EQ(code_of([&] { DigitEvaluator(field, *f.ops); }), ErrorCode::unsupported);
}

}  // namespace

namespace {

// Redundant digits in [-49, 49] (what a refresh leaves for beta = 2), with adversarial rows: every
// digit 49, every digit -49, alternating, and p - 1 = beta^n.
LaneDigits redundant_digits(const LaneSpace& space, unsigned seed) {
  std::mt19937_64 mt(seed);
  std::uniform_int_distribution<std::int64_t> u(-49, 49);
  LaneDigits rows(space.lanes(), std::vector<std::int64_t>(space.lane_degree));
  for (auto& row : rows)
    for (auto& d : row)
      d = u(mt);
  rows[0].assign(space.lane_degree, 49);
  rows[1].assign(space.lane_degree, -49);
  for (std::uint32_t t = 0; t < space.lane_degree; ++t)
    rows[2][t] = t % 2 == 0 ? 49 : -49;
  rows[3].assign(space.lane_degree, 0);
  rows[3][0] = -1;
  return rows;
}

}  // namespace

// The parity bootstrap: every digit's z mod 2, exact, whatever its size.
TEST(LaneCarries, ParitiesAreEachDigitModTwo) {
  LanesFixture& f = lanes_fixture("lanes-n12-256-b2");
  const LaneSpace& space = f.context.space();
  LaneDigits rows = redundant_digits(space, 91);
  rows[4].assign(space.lane_degree, 1001);  // far beyond the cleaning's range: the drop reduces it
  const LaneDecoding d =
      f.decryptor.decrypt(f.refresher.parities(f.encryptor.encrypt_digits(rows, f.sk), f.keys));
  for (std::uint32_t r = 0; r < space.lanes(); ++r)
    for (std::uint32_t t = 0; t < space.lane_degree; ++t)
      ASSERT_EQ(d.digits[r][t], ((rows[r][t] % 2) + 2) % 2) << "lane " << r << ", digit " << t;
  EXPECT_LT(d.max_error, 0.01);
}

// Carry rounds keep the integer and halve the digits' range: six of them from [-49, 49] leave
// {-1, 0, 1, 2}.
TEST(LaneCarries, SixRoundsLeaveDigitsInMinusOneToTwo) {
  LanesFixture& f = lanes_fixture("lanes-n12-256-b2");
  const LaneSpace& space = f.context.space();
  const LaneDigits rows = redundant_digits(space, 92);
  LaneCiphertext x = f.encryptor.encrypt_digits(rows, f.sk);
  x.ct = f.evaluator.ckks_evaluator().drop_to_level(x.ct, space.rest_level() - 1);
  for (int round = 1; round <= 6; ++round) {
    x = f.refresher.carry_round(x, f.keys);
    EXPECT_EQ(x.level(), space.rest_level() - 1);
    const LaneDecoding d = f.decryptor.decrypt(x);
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      ASSERT_EQ(d.integers[r], from_digits(rows[r], space.base))
          << "round " << round << ", lane " << r;
      for (std::int64_t digit : d.digits[r])
        ASSERT_LE(std::abs(static_cast<double>(digit)), x.digit_bound) << "round " << round;
    }
    EXPECT_LT(d.max_error, 0.05) << "round " << round;
    if (round == 6) {
      for (const auto& row : d.digits)
        for (std::int64_t digit : row)
          ASSERT_TRUE(digit >= -1 && digit <= 2) << digit;
    }
  }
  // beta = 2 only.
  LanesFixture& b16 = lanes_fixture("lanes-n12-64-b16");
  EXPECT_EQ(code_of([&] {
              (void)b16.refresher.parities(
                  b16.encryptor.encrypt(random_integers(b16.p(), 1, 93), b16.sk), b16.keys);
            }),
            ErrorCode::unsupported);
}

// to_digits: the canonical digits of each lane's integer mod p from redundant form B (fresh
// integers, digits far from canonical, a product), exact against GMP's base-2 digits.
TEST(LaneToDigits, CanonicalDigitsOfAnyRedundantForm) {
  LanesFixture& f = lanes_fixture("lanes-n12-256-b2-k5");
  const LaneSpace& space = f.context.space();
  const DigitEvaluator evaluator(f.context, *f.ops);
  const auto converter_ptr = DigitEvaluator::digit_converter(f.context, *f.ops);
  const LaneConverter& converter = *converter_ptr;
  LaneKeys keys = f.keys;
  evaluator.add_keys(f.generator, f.sk, keys.galois);
  converter.add_keys(f.generator, f.sk, keys.galois);
  const DigitDecryptor decryptor(f.context, *f.ops, f.sk);
  const mpz_class& p = f.p();
  // Integers: 0, 1, beta^n, beta^n - 1 (every digit 1), 2^(n-1), then random ones.
  std::vector<mpz_class> a = random_integers(p, space.lanes(), 95);
  a[0] = 0;
  a[1] = 1;
  a[2] = p - 1;
  a[3] = p - 2;
  a[4] = p / 2;
  // Redundant digits: every digit 49, -49, alternating, with their integers mod p.
  LaneDigits rows = LaneEncoder(f.context, *f.ops).digits(a);
  rows[5].assign(space.lane_degree, 49);
  rows[6].assign(space.lane_degree, -49);
  for (std::uint32_t t = 0; t < space.lane_degree; ++t)
    rows[7][t] = t % 2 == 0 ? 49 : -49;
  for (int r : {5, 6, 7})
    a[static_cast<std::size_t>(r)] = from_digits(rows[static_cast<std::size_t>(r)], space.base);
  const LaneCiphertext x = f.encryptor.encrypt_digits(rows, f.sk);
  // And a product of refreshed integers.
  const auto b = random_integers(p, space.lanes(), 96);
  const LaneCiphertext xb = f.evaluator.multiply(
      f.refresher.refresh(x, f.keys), f.encryptor.encrypt(b, f.sk), keys.relinearization);
  for (const auto& [input, want] :
       {std::pair{&x, a}, std::pair{&xb, [&] {
                                      std::vector<mpz_class> w(a.size());
                                      for (std::size_t r = 0; r < a.size(); ++r)
                                        w[r] = mod(a[r] * b[r], p);
                                      return w;
                                    }()}}) {
    const DigitSlots digits = evaluator.to_digits(*input, f.refresher, converter, keys);
    EXPECT_TRUE(digits.canonical);
    const DigitSlotsDecoding d = decryptor.decrypt(digits);
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      ASSERT_EQ(d.digits[r], to_digits(want[r], space.lane_degree, 2, DigitForm::canonical))
          << "lane " << r << " (" << want[r] << ")";
      ASSERT_EQ(d.integers[r], want[r]) << "lane " << r;
    }
    EXPECT_LT(d.max_error, 0.01);
  }
}

// The same on a space with the fewest levels to_digits takes (products_per_refresh = 2 groups of
// L, as the conversion spaces at N = 2^16): one tree level between refreshes, the propagate bits
// refreshed before the last product.
TEST(LaneToDigits, OnASpaceWithTheFewestLevels) {
  LaneSpaceOptions options;
  options.products_per_refresh = 2;  // n = 64: L is one group
  const LaneContext context(make_lane_space("lanes-n12-64-b2-k2", 12, 64, 2, options), true);
  const auto ops = ckks::make_cpu_rns_ops(context.ckks(), 2);
  auto random = safhire::core::SeededRandom::from_counter(0x70d1);
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const LaneRefresher refresher(context, *ops);
  const DigitEvaluator evaluator(context, *ops);
  const auto converter = DigitEvaluator::digit_converter(context, *ops);
  LaneKeys keys = refresher.keys(generator, sk);
  evaluator.add_keys(generator, sk, keys.galois);
  converter->add_keys(generator, sk, keys.galois);
  const mpz_class& p = context.modulus();
  std::vector<mpz_class> a = random_integers(p, context.space().lanes(), 97);
  a[0] = p - 1;
  a[1] = p - 2;
  a[2] = 0;
  const LaneCiphertext x =
      refresher.refresh(LaneEncryptor(context, *ops, random).encrypt(a, sk), keys);
  const DigitSlotsDecoding d = DigitDecryptor(context, *ops, sk)
                                   .decrypt(evaluator.to_digits(x, refresher, *converter, keys));
  for (std::size_t r = 0; r < a.size(); ++r)
    ASSERT_EQ(d.digits[r], to_digits(a[r], 64, 2, DigitForm::canonical)) << "lane " << r;
}
