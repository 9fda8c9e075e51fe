// Canonical digits in form A and the operations on them (lanes.md section 3): comparison of two
// integers (less than, equal) and extraction of one digit or one bit, each an encrypted small
// integer per lane that decodes exactly.
//
// Canonical digits: lane r's integer A in [0, p), p = beta^n + 1, as its base-beta digits
// 0 <= a_t < beta in form A (convert.hpp: digit t < n/2 in `low`, t + n/2 in `high`, both in slot
// slot_of_digit(r, t)); the one value with no n-digit form, A = p - 1 = beta^n, as a_0 = -1 and
// every other digit 0 (beta^n = -1 mod p, the encoder's DigitForm::canonical). They come from
// any redundant form B through DigitEvaluator::to_digits (beta = 2: the carries resolved
// homomorphically, below) or from DigitEncryptor (a client that encrypts digits), and go to form
// B through LaneConverter::from_digits.
//
// The operations, for canonical a and b, every lane at once, slot-wise CKKS arithmetic and
// rotations by powers of two within a lane's block:
//  - per digit, from d_t = a_t - b_t: lt_t = [d_t < 0] and eq_t = [d_t = 0] (beta = 2:
//    2 lt = d^2 - d and eq = 1 - d^2, one product each; beta <= 16: their interpolants on the
//    integers of [-beta, beta], Chebyshev basis, ckks/polynomial.hpp);
//  - a tree over the digits: the ranges [t, t + 2^j) and [t + 2^j, t + 2^(j+1)) of each part
//    meet as (lt, eq) = (lt_H + eq_H lt_L, eq_H eq_L); in bit-reversed slots the upper range's
//    first digit sits 2^(log2(n/2) - 1 - j) slots after the lower's, one rotation away; then the
//    high part (digits >= n/2) over the low;
//  - beta^n, closed with the flags w = [a_0 = -1] (2 w = a_0^2 - a_0 for beta = 2):
//    lt = (1 - w_a)(1 - w_b) lt + (1 - w_a) w_b, and for beta = 2, whose quadratics are exact on
//    d in {-1, 0, 1} only, eq = (1 - (w_a - w_b)^2) eq (for beta > 2 the interpolants cover the
//    differences a_0 = -1 makes, and beta^n's digits differ from every other value's);
//  - digit t: the part holding it, times a mask of its slot, rotated to the lane's first slot
//    (digit 0 mapped -1 -> 0); bit j of A (beta = 2^k): bit j mod k of digit floor(j / k) by its
//    interpolant on [-1, beta - 1] (-1 -> 0), and bit n k (set for A = beta^n only) is w.
// A result sits in slot block_of_lane(r) n/2 of lane r (the slot of its digit 0); other slots
// hold whatever the computation left there. Every value stays in {0, 1} (or [0, beta)) up to
// noise, so the error grows additively through the log2(n) levels of the tree; the estimate in
// LaneValues::noise is an upper one.
//
// Scales: a digit ciphertext at level l has the scale digit_scale(l), N_0 = q_0 / 2^8 and
// N_l = sqrt(N_(l-1) q_l), so that a product of two at level l, rescaled, is at N_(l-1) exactly
// (to rounding) whatever the sizes of the chain's primes; operands at different levels meet by
// one exact constant product. Integer coefficients (2 lt, 2 w) ride as a known factor, taken out
// of the result's scale label at the end.
#pragma once

#include <gmpxx.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/polynomial.hpp"
#include "safhire/core/random.hpp"
#include "safhire/lanes/convert.hpp"
#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/refresh.hpp"

namespace safhire::lanes {

// The scale of a digit ciphertext at `level` (see the top).
double digit_scale(const LaneContext& context, std::uint32_t level);

// One small integer per lane: lane r's in slot block_of_lane(r) n/2 of a real ciphertext.
struct LaneValues {
  ckks::Ciphertext ct;
  double noise = 0;  // the deviation of the value's error (an upper estimate)
  std::uint64_t space = 0;
};

// The canonical digits of integers (A mod p, lane_space.hpp) encrypted in form A.
class DigitEncryptor {
 public:
  DigitEncryptor(const LaneContext& context, const ckks::RnsOps& ops, core::RandomSource& random);
  // Up to lanes() integers (any sign and size: reduced mod p), missing lanes 0, at `level` (0:
  // the chain's top) and its digit scale. Error(invalid_argument) for more integers than lanes
  // or a level above the top.
  DigitSlots encrypt(std::span<const mpz_class> integers, const ckks::PublicKey& pk,
                     std::uint32_t level = 0) const;
  DigitSlots encrypt(std::span<const mpz_class> integers, const ckks::SecretKey& sk,
                     std::uint32_t level = 0) const;

 private:
  std::pair<ckks::Plaintext, ckks::Plaintext> encode(std::span<const mpz_class> integers,
                                                     std::uint32_t level) const;
  DigitSlots wrap(ckks::Ciphertext low, ckks::Ciphertext high) const;
  const LaneContext* context_;
  ckks::Encoder encoder_;
  mutable ckks::Encryptor encryptor_;  // draws noise: not const
};

struct LaneValuesDecoding {
  std::vector<std::int64_t> values;  // lane by lane, rounded
  double max_error = 0;              // the largest |value - round(value)|
};

struct DigitSlotsDecoding {
  LaneDigits digits;                // lanes() rows of n digits, rounded
  std::vector<mpz_class> integers;  // a(beta) mod p, lane by lane
  double max_error = 0;             // the largest |digit - round(digit)| (imaginary parts too)
};

class DigitDecryptor {
 public:
  DigitDecryptor(const LaneContext& context, const ckks::RnsOps& ops, const ckks::SecretKey& sk);
  // Error(size_mismatch) for another space's.
  LaneValuesDecoding decrypt(const LaneValues& x) const;
  DigitSlotsDecoding decrypt(const DigitSlots& x) const;

 private:
  std::vector<std::complex<double>> slots(const ckks::Ciphertext& ct) const;
  const LaneContext* context_;
  const ckks::RnsOps* ops_;
  const ckks::SecretKey* sk_;
  ckks::Encoder encoder_;
};

class DigitEvaluator {
 public:
  // Error(unsupported) for beta > 16 (the per-digit interpolants would lose the digits to
  // rounding).
  DigitEvaluator(const LaneContext& context, const ckks::RnsOps& ops);

  // The rotation steps (powers of two below n/2) every operation uses, and their keys at the top
  // level, added to `keys` (a step `keys` already holds is kept as it is: one made at a lower
  // level, as a converter's, would not serve digits at the top; give the digits keys of their
  // own then).
  std::vector<int> rotations() const;
  void add_keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                ckks::GaloisKeys& keys) const;

  // The levels each operation consumes: its input must be at least this high (the result comes
  // out that much lower).
  std::uint32_t less_than_depth() const;
  std::uint32_t equal_depth() const;
  std::uint32_t digit_depth(std::uint32_t t) const;
  std::uint32_t bit_depth(std::uint64_t j) const;

  // [A < B] and [A = B] lane by lane. Error(invalid_argument) for digits not canonical (the
  // converter's to_slots gives redundant ones) or parts below the depth, Error(size_mismatch) for
  // another space's.
  LaneValues less_than(const DigitSlots& a, const DigitSlots& b, const ckks::SwitchingKey& rlk,
                       const ckks::GaloisKeys& keys) const;
  LaneValues equal(const DigitSlots& a, const DigitSlots& b, const ckks::SwitchingKey& rlk,
                   const ckks::GaloisKeys& keys) const;
  // Digit t < n of A (0 for A = beta^n); bit j <= n log2(beta) of A for beta a power of two
  // (bit n log2(beta) is set only for A = beta^n). Error(invalid_argument) for t or j out of
  // range, Error(unsupported) for a bit of a base that is not a power of two.
  LaneValues digit(const DigitSlots& a, std::uint32_t t, const ckks::SwitchingKey& rlk,
                   const ckks::GaloisKeys& keys) const;
  LaneValues bit(const DigitSlots& a, std::uint64_t j, const ckks::SwitchingKey& rlk,
                 const ckks::GaloisKeys& keys) const;

  // to_digits, beta = 2: any form B that refresh() takes (redundant digits) to the canonical
  // digits of each lane's integer mod p, in form A (docs/lanes.md, "to_digits"):
  //  1. a refresh where the digits are beyond a refresh's bound (within 49), then carry rounds
  //     (LaneRefresher::carry_round) to digits in {-1, 0, 1, 2} (none for fresh digits);
  //  2. z + 1 = a + 2 b digit by digit, so that A mod p = a(2) + Y b(2) + 2 = a + b'' + 1 with
  //     b'' = Y b + [digit 0] (Y^n = -1 puts -b_(n-1) there): two n-bit operands, their bits in
  //     form A by the parity bootstrap (which cleans them);
  //  3. modulo 2^n + 1, a + b'' + 1 is (a + b'') mod 2^n plus 1 - k, k the carry out of a + b'':
  //     one addition with carry in c_in = 1 - k, its carries the generate and propagate bits'
  //     inclusive prefix (a Sklansky tree over the bit-reversed slots: per level, a mask of the
  //     sources, rotations that broadcast them, one product), c_in from the last position's;
  //  4. the carries moved up one digit through form B (Y, the parity bootstrap), digit 0 given
  //     c_in; digits p xor c; and beta^n, where the whole lane propagates with c_in = 1, as
  //     a_0 = -1.
  // The flags go back through the parity bootstrap whenever their levels run out; the result
  // comes at LaneRefresher::parts_level() - 2, at its digit scale. `converter`:
  // digit_converter(context, ops); `keys`: the refresher's, with add_keys()' rotations and the
  // converter's keys in `keys.galois`. Error(unsupported) for beta != 2, and as refresh().
  DigitSlots to_digits(const LaneCiphertext& x, const LaneRefresher& refresher,
                       const LaneConverter& converter, const LaneKeys& keys) const;
  // The converter to_digits() takes: its L at the lowest level from which form B reaches the
  // refresh level (a space with products_per_refresh >= 2 groups of L).
  static std::unique_ptr<LaneConverter> digit_converter(const LaneContext& context,
                                                        const ckks::RnsOps& ops);

 private:
  // A ciphertext holding factor * value, at its level's digit scale, and the value's error.
  struct Part {
    ckks::Ciphertext ct;
    double noise = 0;
    double factor = 1;
  };
  // A polynomial through f(lo), ..., f(hi), exact at those integers: for three points around 0
  // with F f(x) = m2 x^2 + m1 x + m0 in integers (F a power of two up to 8), one product, the
  // result carrying F; otherwise its interpolant in the Chebyshev basis.
  struct IntegerMap {
    ckks::ChebyshevSeries series;  // empty for the quadratic
    double m2 = 0, m1 = 0, m0 = 0, factor = 1;
    double lipschitz = 0;  // the largest |f'| at the points: how much an input error grows
    std::uint32_t depth() const;
  };
  static IntegerMap integer_map(std::int64_t lo, const std::vector<double>& values);
  Part apply(const IntegerMap& f, const Part& x, const ckks::SwitchingKey& rlk) const;
  Part multiply(const Part& x, const Part& y, const ckks::SwitchingKey& rlk) const;
  Part add(const Part& x, const Part& y) const;
  Part sub(const Part& x, const Part& y) const;
  // c - x for a constant c (in values).
  Part from_constant(double c, const Part& x) const;
  Part rotate(const Part& x, int step, const ckks::GaloisKeys& keys) const;
  // x at y's level and scale (one exact constant product when they differ).
  ckks::Ciphertext moved(const ckks::Ciphertext& x, const ckks::Ciphertext& y) const;
  // x times an integer (exact, no level).
  Part times(const Part& x, double m) const;
  // The slot `position` of every lane's block kept (one level), moved to the block's first slot.
  Part isolate(const Part& x, std::uint32_t position, const ckks::GaloisKeys& keys) const;
  void check(const DigitSlots& a, std::uint32_t depth, const char* what) const;
  // (lt, eq) of a and b's digits reduced over the whole lane (lt when asked), at each lane's first
  // slot.
  std::pair<Part, Part> compare(const DigitSlots& a, const DigitSlots& b, bool with_lt,
                                const ckks::SwitchingKey& rlk, const ckks::GaloisKeys& keys) const;
  // The flag w = [a_0 = -1] of a's low part (at every slot: 0 where a digit is not -1).
  Part wrap_flag(const DigitSlots& a, const ckks::SwitchingKey& rlk) const;
  LaneValues values(Part x) const;
  // to_digits' pieces: x at a level and a scale (its factor taken out), a plaintext of 0/1 slot
  // values in every lane block added to x, the bits of parts refreshed through form B.
  Part at(const Part& x, std::uint32_t level) const;
  Part plus_pattern(const Part& x, const std::vector<double>& block) const;
  Part masked(const Part& x, const std::vector<double>& block) const;
  // x xor y = x + y - 2 x y for bits, given their product.
  Part exclusive_or(const Part& x, const Part& y, const Part& xy) const;
  Part spread_down(Part x, std::uint32_t first, std::uint32_t count,
                   const ckks::GaloisKeys& keys) const;
  std::array<Part, 2> refresh_bits(const Part& low, const Part& high,
                                   const LaneRefresher& refresher, const LaneConverter& converter,
                                   const LaneKeys& keys, bool shift) const;

  const LaneContext* context_;
  ckks::Encoder encoder_;
  ckks::Evaluator evaluator_;
  NoiseModel noise_;
  std::uint32_t stages_ = 0;  // log2(n/2)
  // On [-1, beta - 1]: x -> [x = -1] and digit 0's -1 -> 0; the per-digit predicates of the
  // differences, on [-1, 1] for beta = 2 and [-beta, beta] otherwise.
  IntegerMap wrap_, clamp_, lt_, eq_;
};

}  // namespace safhire::lanes
