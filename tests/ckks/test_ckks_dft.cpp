// The special FFT as stages: every range of stages in both directions against butterflies
// written out here, the full ranges against the encoder's FFT, the lanes of lanes.md section
// 1.2 as the state between L and C, and stage ranges applied homomorphically.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>

#include "ckks_fixture.hpp"
#include "safhire/ckks/dft.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
using Values = std::vector<std::complex<double>>;

Values bit_reversed(const Values& v) {
  const std::size_t n = v.size();
  const int bits = std::countr_zero(n);
  Values out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = 0;
    for (int b = 0; b < bits; ++b)
      r |= ((i >> b) & 1) << (bits - 1 - b);
    out[r] = v[i];
  }
  return out;
}

// Stage i by its butterflies (the header's formula), forward or inverse, in place.
void butterflies(Values& v, std::uint32_t i, bool inverse) {
  const std::size_t h = std::size_t{1} << i, n = v.size();
  for (std::size_t a = 0; a < n; a += 2 * h) {
    std::size_t power = 1;
    for (std::size_t j = 0; j < h; ++j) {
      const std::complex<double> w = std::polar(
          1.0, 2 * std::numbers::pi * static_cast<double>(power) / (8.0 * static_cast<double>(h)));
      power = power * 5 % (8 * h);
      const auto x = v[a + j], y = v[a + j + h];
      if (inverse) {
        v[a + j] = (x + y) / 2.0;
        v[a + j + h] = std::conj(w) * (x - y) / 2.0;
      } else {
        v[a + j] = x + w * y;
        v[a + j + h] = x - w * y;
      }
    }
  }
}

Values to_double(const std::vector<std::complex<long double>>& v) {
  Values out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = {static_cast<double>(v[i].real()), static_cast<double>(v[i].imag())};
  return out;
}

std::vector<std::complex<long double>> to_long(const Values& v) {
  return {v.begin(), v.end()};
}

TEST(CkksDft, EveryStageRangeMatchesItsButterflies) {
  const std::uint32_t n_degree = 4096, slots = 32, stages = 5;
  const Values x = random_values(slots, 1.0, 3);
  for (std::uint32_t first = 0; first < stages; ++first) {
    for (std::uint32_t last = first + 1; last <= stages; ++last) {
      for (const auto direction : {DftDirection::slot_to_coeff, DftDirection::coeff_to_slot}) {
        const bool inverse = direction == DftDirection::coeff_to_slot;
        Values expect = x;
        for (std::uint32_t s = 0; s < last - first; ++s)
          butterflies(expect, inverse ? last - 1 - s : first + s, inverse);
        const auto d = dft_stages(n_degree, slots, first, last, direction);
        EXPECT_LE(max_error(apply_diagonals(d, x), expect), 1e-12)
            << (inverse ? "CoeffToSlot" : "SlotToCoeff") << " [" << first << ", " << last << ")";
        // A group of s stages has at most 2^(s+1) - 1 diagonals.
        EXPECT_LE(d.size(), (std::size_t{2} << (last - first)) - 1);
      }
    }
  }
}

// The lift to both halves of 2n slots against the n-slot matrix applied to each half by the
// butterflies: (a, b) -> (M a, c M b); its diagonals grow only where M's wrap around (ranges with
// the last stage), to the 2^(s+1) - 1 of a range that does not wrap.
TEST(CkksDft, LiftedRangesActOnBothHalves) {
  const std::uint32_t n_degree = 4096, slots = 32, stages = 5;
  const Values ab = random_values(2 * slots, 1.0, 6);
  const std::complex<double> c{0.3, -0.8};
  for (std::uint32_t first = 0; first < stages; ++first) {
    for (std::uint32_t last = first + 1; last <= stages; ++last) {
      for (const auto direction : {DftDirection::slot_to_coeff, DftDirection::coeff_to_slot}) {
        const bool inverse = direction == DftDirection::coeff_to_slot;
        Values lo(ab.begin(), ab.begin() + slots), hi(ab.begin() + slots, ab.end());
        for (std::uint32_t s = 0; s < last - first; ++s) {
          for (Values* half : {&lo, &hi})
            butterflies(*half, inverse ? last - 1 - s : first + s, inverse);
        }
        Values expect = lo;
        for (const auto& v : hi)
          expect.push_back(c * v);
        const auto d = dft_stages(n_degree, slots, first, last, direction);
        const auto lifted = lift_to_halves(d, slots, c);
        EXPECT_LE(max_error(apply_diagonals(lifted, ab), expect), 1e-12)
            << (inverse ? "CoeffToSlot" : "SlotToCoeff") << " [" << first << ", " << last << ")";
        const std::size_t most = (std::size_t{2} << (last - first)) - 1;
        EXPECT_EQ(lifted.size(), last < stages ? d.size() : most)
            << "[" << first << ", " << last << ")";
      }
    }
  }
}

TEST(CkksDft, FullRangesAreTheEncodersFftWithoutTheBitReversal) {
  for (const auto& [n_degree, slots] : {std::pair{512U, 256U}, std::pair{8192U, 128U}}) {
    const auto stages = static_cast<std::uint32_t>(std::countr_zero(slots));
    const Values u = random_values(slots, 1.0, 4), z = random_values(slots, 1.0, 5);
    // SlotToCoeff: BR(u) -> F(u).
    auto fu = to_long(u);
    Encoder::special_fft(fu, n_degree);
    const auto stc = dft_stages(n_degree, slots, 0, stages, DftDirection::slot_to_coeff);
    EXPECT_LE(max_error(apply_diagonals(stc, bit_reversed(u)), to_double(fu)), 1e-10);
    // CoeffToSlot: z -> BR(F^-1(z)), the 1/n included.
    auto fz = to_long(z);
    Encoder::special_fft_inverse(fz, n_degree);
    const auto cts = dft_stages(n_degree, slots, 0, stages, DftDirection::coeff_to_slot);
    EXPECT_LE(max_error(apply_diagonals(cts, z), bit_reversed(to_double(fz))), 1e-12);
  }
}

// lanes.md 1.2: for m = sum_r X^r a_r(X^(N/n)), the first log2(n/2) SlotToCoeff stages (L) take
// BR(u) to the blocks sigma_n(a_r), lane r in block rev(r) of n/2 slots, natural order; the
// remaining stages (C) finish sigma_N.
TEST(CkksDft, LanesAreTheStateBetweenLAndC) {
  const std::uint32_t n_degree = 256, slots = n_degree / 2, lane_n = 16;
  const std::uint32_t lanes = n_degree / lane_n, block = lane_n / 2;
  const auto lane_stages = static_cast<std::uint32_t>(std::countr_zero(block));
  const auto stages = static_cast<std::uint32_t>(std::countr_zero(slots));
  // A random real polynomial and its complex packing u_i = m_i + i m_(i + N/2).
  const Values noise = random_values(n_degree, 1.0, 6);
  std::vector<double> m(n_degree);
  for (std::uint32_t i = 0; i < n_degree; ++i)
    m[i] = noise[i].real();
  Values u(slots);
  for (std::uint32_t i = 0; i < slots; ++i)
    u[i] = {m[i], m[i + slots]};
  const auto L = dft_stages(n_degree, slots, 0, lane_stages, DftDirection::slot_to_coeff);
  const Values state = apply_diagonals(L, bit_reversed(u));
  const int lane_bits = std::countr_zero(lanes);
  for (std::uint32_t r = 0; r < lanes; ++r) {
    // sigma_n(a_r): the special FFT of a_r's packing, a_(r,t) + i a_(r,t+n/2).
    std::vector<std::complex<long double>> a(block);
    for (std::uint32_t t = 0; t < block; ++t)
      a[t] = {m[r + lanes * t], m[r + lanes * (t + block)]};
    Encoder::special_fft(a, lane_n);
    std::uint32_t b = 0;
    for (int bit = 0; bit < lane_bits; ++bit)
      b |= ((r >> bit) & 1U) << (lane_bits - 1 - bit);
    const Values got(state.begin() + b * block, state.begin() + (b + 1) * block);
    EXPECT_LE(max_error(got, to_double(a)), 1e-10) << "lane " << r;
  }
  // C after L is the whole of sigma_N.
  const auto C = dft_stages(n_degree, slots, lane_stages, stages, DftDirection::slot_to_coeff);
  auto z = to_long(u);
  Encoder::special_fft(z, n_degree);
  EXPECT_LE(max_error(apply_diagonals(C, state), to_double(z)), 1e-10);
}

double largest_row_sum(const LinearTransform::Diagonals& d, std::uint32_t slots) {
  double worst = 0;
  for (std::uint32_t j = 0; j < slots; ++j) {
    double row = 0;
    for (const auto& [k, v] : d)
      row += std::abs(v[j]);
    worst = std::max(worst, row);
  }
  return worst;
}

// Ranges of stages run homomorphically, group by group with a rescale each, against the stages
// in the clear. The error bound is worst-case through the groups: a group's output slot sums
// its row's entries times rotated copies of the input, each carrying the input's error plus its
// rotation's key-switch digit error, so the group multiplies (error + key switch) by its largest
// row sum of |entries|, then adds a rescale's rounding (six standard deviations each; decoding
// n slots sums 2n coefficients, so a slot's variance is 2n times a coefficient's).
TEST(CkksDft, HomomorphicRangesMatchTheStagesInTheClear) {
  auto& f = fixture("n14-l7");
  const std::uint32_t slots = 64, top = f.context.max_level();
  auto rng = safhire::core::SeededRandom::from_counter(8);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  Encryptor enc(f.context, *f.ops, rng);
  const double scale = std::exp2(f.context.params().log_scale);
  const Values z = random_values(slots, 1.0, 9);
  const auto ct = enc.encrypt(f.encoder.encode(z, scale, top, slots), sk);
  struct Case {
    DftDirection direction;
    std::uint32_t first, last;
    std::vector<std::uint32_t> split;
  };
  for (const Case& c : {Case{DftDirection::coeff_to_slot, 0, 6, {2, 2, 2}},
                        Case{DftDirection::slot_to_coeff, 0, 6, {3, 3}},
                        Case{DftDirection::slot_to_coeff, 2, 5, {}},
                        Case{DftDirection::coeff_to_slot, 3, 6, {3}}}) {
    const HomomorphicDft dft(f.encoder, c.direction, c.first, c.last, c.split, top, slots);
    const auto keys = gen.galois_keys(sk, dft.rotations(), false);
    const Ciphertext out = dft.apply(f.evaluator, ct, keys);
    EXPECT_EQ(out.level(), top - dft.depth());
    EXPECT_EQ(out.scale, ct.scale);
    const auto expect =
        apply_diagonals(dft_stages(f.context.degree(), slots, c.first, c.last, c.direction), z);
    // The bound, group by group (the same ranges as the constructor's).
    double e = 6 * std::sqrt(2.0 * slots) * f.context.params().sigma / scale;
    const bool inverse = c.direction == DftDirection::coeff_to_slot;
    std::uint32_t done = 0;
    for (std::size_t g = 0; g < dft.groups().size(); ++g) {
      const std::uint32_t size = c.split.empty() ? 1 : c.split[g];
      const std::uint32_t lo = inverse ? c.last - done - size : c.first + done;
      const auto d = dft_stages(f.context.degree(), slots, lo, lo + size, c.direction);
      const auto level = top - static_cast<std::uint32_t>(g);
      const double read = 2.0 * slots, big_n = f.context.degree();
      const double rescale = 6 * std::sqrt(read * (1 + 2 * big_n / 3) / 12) / scale;
      const double switched = 6 * std::sqrt(read * key_switch_mean_square(f, level, -1)) / scale;
      e = largest_row_sum(d, slots) * (e + switched) + rescale;
      done += size;
    }
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, sk));
    EXPECT_LE(max_error(got, expect), e)
        << (inverse ? "CoeffToSlot" : "SlotToCoeff") << " [" << c.first << ", " << c.last << ")";
  }
}

// Groups on both halves, homomorphically: an n-slot ciphertext through a range whose second
// group is lifted comes out with 2n slots, (M z, c M z); a group on n slots refuses 2n slots.
TEST(CkksDft, HomomorphicLiftedGroupsFillBothHalves) {
  auto& f = fixture("n14-l7");
  const std::uint32_t slots = 32, top = f.context.max_level();
  auto rng = safhire::core::SeededRandom::from_counter(10);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  Encryptor enc(f.context, *f.ops, rng);
  const double scale = std::exp2(f.context.params().log_scale);
  const Values z = random_values(slots, 1.0, 11);
  const auto ct = enc.encrypt(f.encoder.encode(z, scale, top, slots), sk);
  const std::complex<double> c{0, -1};
  const HomomorphicDft dft(f.encoder, DftDirection::coeff_to_slot, 0, 5, {3, 2}, top, slots, 1, 0,
                           {0.0, c});
  const auto keys = gen.galois_keys(sk, dft.rotations(), false);
  const Ciphertext out = dft.apply(f.evaluator, ct, keys);
  EXPECT_EQ(out.slots, 2 * slots);
  EXPECT_EQ(out.level(), top - 2);
  const auto m = apply_diagonals(dft_stages(f.context.degree(), slots, 0, 5, dft.direction()), z);
  Values expect = m;
  for (const auto& v : m)
    expect.push_back(c * v);
  const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, sk));
  ASSERT_EQ(got.size(), 2 * slots);
  EXPECT_LE(max_error(got, expect), std::exp2(-20));
  // Group 0 is on n slots: the 2n-slot output cannot go back through it.
  const auto high = enc.encrypt(f.encoder.encode(expect, scale, top, 2 * slots), sk);
  EXPECT_EQ(code_of([&] { dft.apply(f.evaluator, high, keys, 0, 1); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { dft.apply(f.evaluator, ct, keys, 1, 3); }), ErrorCode::invalid_argument);
  EXPECT_EQ(
      code_of([&] {
        HomomorphicDft(f.encoder, DftDirection::coeff_to_slot, 0, 5, {3, 2}, top, slots, 1, 0, {c});
      }),
      ErrorCode::invalid_argument);  // one entry per group
}

TEST(CkksDft, BadRangesAndSplitsAreTypedErrors) {
  auto& f = fixture("n13-l3");
  EXPECT_EQ(code_of([&] { dft_stages(8192, 64, 3, 3, DftDirection::slot_to_coeff); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { dft_stages(8192, 64, 0, 7, DftDirection::slot_to_coeff); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { dft_stage(8192, 48, 0, false); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] {
              HomomorphicDft(f.encoder, DftDirection::coeff_to_slot, 0, 6, {2, 2}, 3, 64);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(
      code_of([&] { HomomorphicDft(f.encoder, DftDirection::coeff_to_slot, 0, 6, {}, 3, 64); }),
      ErrorCode::invalid_argument);  // six groups, three levels
}

}  // namespace
