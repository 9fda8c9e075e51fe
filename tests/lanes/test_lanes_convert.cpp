// Form B <-> form A (convert.hpp) on the test space with room for it (lanes-n12-256-b2-k5): every
// digit of every lane in its documented slot, as a real number, after B -> A (random integers
// and adversarial digits: all at beta - 1, alternating signs, p - 1 = beta^n); A -> B back to
// the same integers (GMP), refreshable; a slot-wise function (each digit squared) between the
// two gives the integer of the squared digits, sum a_t^2 beta^t mod p, computed here; and the
// refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
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

constexpr const char* kSpace = "lanes-n12-256-b2-k5";

struct Conversion {
  LanesFixture& f = lanes_fixture(kSpace);
  LaneConverter converter{f.context, *f.ops};
  LaneConverter squaring{f.context, *f.ops, 0, 1};  // one level for a slot-wise product
  ckks::GaloisKeys keys = f.keys.galois;
  Conversion() {
    converter.add_keys(f.generator, f.sk, keys);
    squaring.add_keys(f.generator, f.sk, keys);
  }
  // The real slot values of a form-A part.
  std::vector<std::complex<double>> slots(const ckks::Ciphertext& c) const {
    const ckks::Encoder encoder(f.context.ckks(), *f.ops);
    return encoder.decode(ckks::decrypt(f.context.ckks(), *f.ops, c, f.sk));
  }
};

Conversion& conversion() {
  static Conversion c;
  return c;
}

// The digits of each lane as encrypted: random integers, then adversarial rows.
LaneDigits test_digits(const LanesFixture& f) {
  const LaneSpace& space = f.context.space();
  const LaneEncoder encoder(f.context, *f.ops);
  LaneDigits digits = encoder.digits(random_integers(f.p(), space.lanes(), 61));
  const auto n = space.lane_degree;
  const auto beta = static_cast<std::int64_t>(space.base);
  digits[0].assign(n, beta - 1);
  for (std::uint32_t t = 0; t < n; ++t)
    digits[1][t] = t % 2 == 0 ? -beta : beta;
  digits[2].assign(n, 0);
  digits[2][0] = -1;  // p - 1 = beta^n = -1
  return digits;
}

TEST(LaneConversion, EveryDigitLandsInItsSlotAndComesBack) {
  Conversion& c = conversion();
  LanesFixture& f = c.f;
  const LaneSpace& space = f.context.space();
  const LaneDigits digits = test_digits(f);
  const LaneCiphertext x = f.encryptor.encrypt_digits(digits, f.sk);
  const DigitSlots a = c.converter.to_slots(x, c.keys);
  EXPECT_EQ(a.low.level(), c.converter.slots_level());
  EXPECT_EQ(a.digit_bound, x.digit_bound);
  const auto low = c.slots(a.low), high = c.slots(a.high);
  double worst = 0;
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    for (std::uint32_t t = 0; t < space.lane_slots(); ++t) {
      const std::uint32_t s = c.converter.slot_of_digit(r, t);
      const double lo = low[s].real() - static_cast<double>(digits[r][t]);
      const double hi = high[s].real() - static_cast<double>(digits[r][t + space.lane_slots()]);
      worst = std::max({worst, std::fabs(lo), std::fabs(hi), std::fabs(low[s].imag()),
                        std::fabs(high[s].imag())});
    }
  }
  EXPECT_LE(worst, 10 * a.noise) << "form A's slots against the digits encrypted";
  // Back to form B: the same integers, at the level documented, and refreshable.
  const LaneCiphertext back = c.converter.to_lanes(a, c.keys);
  EXPECT_EQ(back.level(), c.converter.output_level());
  EXPECT_GE(back.level(), space.refresh_level());
  const LaneDecoding d = f.decryptor.decrypt(back);
  for (std::uint32_t r = 0; r < space.lanes(); ++r)
    ASSERT_EQ(d.integers[r], from_digits(digits[r], space.base)) << "lane " << r;
  EXPECT_LE(d.max_error, 10 * back.noise);
  const LaneDecoding refreshed = f.decryptor.decrypt(f.refresher.refresh(back, f.keys));
  for (std::uint32_t r = 0; r < space.lanes(); ++r)
    ASSERT_EQ(refreshed.integers[r], from_digits(digits[r], space.base)) << "lane " << r;
}

// A slot-wise function between the two: each digit squared (one CKKS product a part).
TEST(LaneConversion, SlotWiseFunctionsActOnEachDigit) {
  Conversion& c = conversion();
  LanesFixture& f = c.f;
  const LaneSpace& space = f.context.space();
  const LaneDigits digits = test_digits(f);
  const DigitSlots a = c.squaring.to_slots(f.encryptor.encrypt_digits(digits, f.sk), c.keys);
  const auto& ev = f.evaluator.ckks_evaluator();
  DigitSlots squared = a;
  for (auto* part : {&squared.low, &squared.high}) {
    *part = ev.relinearize_rescale(ev.multiply(*part, *part), f.keys.relinearization);
  }
  squared.digit_bound = a.digit_bound * a.digit_bound;
  squared.noise = 4 * a.digit_bound * a.noise;  // 2 D e, with room for the product's own
  const LaneCiphertext back = c.squaring.to_lanes(squared, c.keys);
  EXPECT_EQ(back.level(), c.squaring.output_level());
  const LaneDecoding d = f.decryptor.decrypt(back);
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    std::vector<std::int64_t> want(digits[r].size());
    for (std::size_t t = 0; t < want.size(); ++t)
      want[t] = digits[r][t] * digits[r][t];
    ASSERT_EQ(d.digits[r], want) << "lane " << r;
    ASSERT_EQ(d.integers[r], from_digits(want, space.base)) << "lane " << r;
  }
}

TEST(LaneConversion, RefusalsAreTypedErrors) {
  Conversion& c = conversion();
  LanesFixture& f = c.f;
  const LaneSpace& space = f.context.space();
  // No room: the space without levels at rest, or a level too low here.
  LanesFixture& plain = lanes_fixture("lanes-n12-256-b2");
  EXPECT_EQ(code_of([&] { LaneConverter(plain.context, *plain.ops); }),
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { LaneConverter(f.context, *f.ops, space.refresh_level() + 3); }),
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { LaneConverter(f.context, *f.ops, 0, 1 + space.products_per_refresh); }),
            ErrorCode::invalid_parameters);
  // A ciphertext of another space, one below the converter's level, parts below L's.
  const LaneCiphertext other = plain.encryptor.encrypt(random_integers(plain.p(), 1, 62), plain.sk);
  EXPECT_EQ(code_of([&] { (void)c.converter.to_slots(other, c.keys); }), ErrorCode::size_mismatch);
  const LaneCiphertext x = f.encryptor.encrypt(random_integers(f.p(), 1, 63), f.sk);
  LaneCiphertext low = x;
  low.ct = f.evaluator.ckks_evaluator().drop_to_level(x.ct, x.level() - 1);
  EXPECT_EQ(code_of([&] { (void)c.converter.to_slots(low, c.keys); }), ErrorCode::invalid_argument);
  DigitSlots a = c.converter.to_slots(x, c.keys);
  a.low = f.evaluator.ckks_evaluator().drop_to_level(a.low, a.low.level() - 1);
  EXPECT_EQ(code_of([&] { (void)c.converter.to_lanes(a, c.keys); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)c.converter.slot_of_digit(0, space.lane_slots()); }),
            ErrorCode::invalid_argument);
}

}  // namespace
