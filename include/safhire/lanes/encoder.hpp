// Form B, in the clear: integers modulo beta^n + 1 to the slots of a CKKS plaintext and back
// (lanes.md section 1.2).
//
// Encoding: lane r's integer A_r becomes its n digits (lane_space.hpp: DigitForm), its digit
// polynomial a_r(Y), and the slot block sigma_n(a_r): the special FFT of ring degree n
// (ckks::Encoder::special_fft) of the complex-packed digits u_t = a_t + i a_(t + n/2), t < n/2,
// so that slot j of the block is a_r(zeta_n^(5^j)), zeta_n = exp(i pi / n). The block sits at
// slots [b n/2, (b + 1) n/2) for b = rev(r) (the lane order: block_of_lane). The N/2 slots are
// then encoded at the scale given (the rest scale for a fresh ciphertext) by the CKKS encoder.
//
// Decoding reverses it in long double: the plaintext's exact coefficients (multi-word CRT), the
// slots, each block's inverse special FFT, the digits rounded to the nearest integer, and
// a(beta) mod p. A digit rounds correctly while its error is below 1/2; the decoding reports
// the largest distance of a digit to its integer (the noise actually there) and their RMS, so
// that a caller sees how close it came. Slot values grow to n max|a_t| (n^2 max|a_t|^2 for a
// product before it is refreshed); long double (64-bit mantissa) keeps them exact to 2^-20 up
// to 2^44.
#pragma once

#include <gmpxx.h>

#include <complex>
#include <cstdint>
#include <span>
#include <vector>

#include "safhire/ckks/encoder.hpp"
#include "safhire/lanes/context.hpp"

namespace safhire::lanes {

// Digits per lane: lanes() rows of n digits each.
using LaneDigits = std::vector<std::vector<std::int64_t>>;

struct LaneDecoding {
  // Lane by lane, in [0, p); only for integer spaces (t_degree 1): a field space's lanes hold
  // polynomials, which FieldEncoder (fields.hpp) reads from `digits`.
  std::vector<mpz_class> integers;
  LaneDigits digits;     // the rounded digits (redundant: any integers)
  double max_error = 0;  // the largest |digit - round(digit)|
  double rms_error = 0;  // their RMS over every digit
};

class LaneEncoder {
 public:
  LaneEncoder(const LaneContext& context, const ckks::RnsOps& ops);
  const LaneContext& context() const { return *context_; }
  const ckks::Encoder& ckks_encoder() const { return encoder_; }

  // The digits of each integer (reduced mod p) in the space's form. At most lanes() integers;
  // missing lanes hold 0. In a field space an integer is the constant c_0 of its lane's ring.
  LaneDigits digits(std::span<const mpz_class> integers) const;

  // Form B slots of the digit polynomials (exactly lanes() rows of n digits).
  std::vector<std::complex<long double>> slots(const LaneDigits& digits) const;
  // The digits (not rounded) that form-B slots hold.
  std::vector<std::vector<long double>> digits_of_slots(
      std::span<const std::complex<long double>> slots) const;

  // The plaintext of the integers (or of digits directly) at `level` and `scale`.
  // Error(invalid_argument) for more integers than lanes, digit rows of the wrong shape, or a
  // scaled value that the level's modulus cannot hold.
  ckks::Plaintext encode(std::span<const mpz_class> integers, double scale,
                         std::uint32_t level) const;
  ckks::Plaintext encode_digits(const LaneDigits& digits, double scale, std::uint32_t level) const;

  // Decodes a plaintext in form B (a decryption) to integers.
  LaneDecoding decode(const ckks::Plaintext& plain) const;

 private:
  const LaneContext* context_;
  ckks::Encoder encoder_;
};

}  // namespace safhire::lanes
