// The CKKS encoder: the canonical embedding restricted to the slots z_j = m(zeta^(5^j)),
// zeta = exp(i pi / N), j < n, for n a power of two up to N/2 (n < N/2 is a sparse packing: m
// then lives in Z[X^(N/2n)]). Rotating slots by k is sigma_(5^k), conjugating them is sigma_(-1).
//
// Encoding runs the inverse special FFT (the radix-2 factorisation of the embedding in the 5^j
// order, in double; in long double when scale * max|z| needs more than double's 53 bits), scales,
// rounds each coefficient to the nearest integer and reduces it exactly modulo every prime of
// the level (coefficients beyond 2^63 through their exact binary expansion). Decoding
// reconstructs each coefficient exactly from its residues (multi-word CRT), centres it, and runs
// the forward special FFT in long double.
//
// A Plaintext is the NTT form over q_0 .. q_level with its scale, tracked as a real number (any
// scale, not only powers of two) and its slot count.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "safhire/ckks/rns.hpp"
#include "safhire/ckks/rns_ops.hpp"

namespace safhire::ckks {

struct Plaintext {
  RnsPoly poly;  // NTT form over q_0 .. q_level
  double scale = 1;
  std::uint32_t slots = 0;
  std::uint32_t level() const { return static_cast<std::uint32_t>(poly.limbs()) - 1; }
};

class Encoder {
 public:
  Encoder(const CkksContext& context, const RnsOps& ops);
  const CkksContext& context() const { return *context_; }

  // values.size() <= slots; slots a power of two in [1, N/2] (0: N/2); missing values are 0.
  // Error(invalid_argument) for a bad slot count, a non-positive scale, non-finite values or a
  // scaled coefficient of magnitude Q_level / 2 or more (it would wrap).
  Plaintext encode(std::span<const std::complex<double>> values, double scale, std::uint32_t level,
                   std::uint32_t slots = 0) const;
  Plaintext encode(std::span<const double> values, double scale, std::uint32_t level,
                   std::uint32_t slots = 0) const;
  // The same integer polynomial over q_0 .. q_level and the special primes P (NTT form), for
  // products in the extended basis of key switching (hoisted linear transforms); its size is
  // still bounded by Q_level / 2.
  RnsPoly encode_extended(std::span<const std::complex<double>> values, double scale,
                          std::uint32_t level, std::uint32_t slots = 0) const;
  // The integer polynomial encode_extended reduces, as signed 64-bit coefficients, when every
  // one lies in (-2^63, 2^63) (nothing otherwise): any limb of the encoding is then these
  // coefficients modulo its prime, in NTT form (LinearTransform's lazy diagonals).
  std::optional<std::vector<std::int64_t>> integer_coefficients(
      std::span<const std::complex<double>> values, double scale, std::uint32_t slots = 0) const;
  // The coefficients round(scale * coeffs[i]) directly (coefficient encoding, coeffs.size() <= N).
  Plaintext encode_coefficients(std::span<const double> coeffs, double scale,
                                std::uint32_t level) const;

  std::vector<std::complex<double>> decode(const Plaintext& plain) const;
  // round-trip helper: the centred integer coefficients / scale (coefficient decoding).
  std::vector<long double> decode_coefficients(const Plaintext& plain) const;

  // The plain special FFT in long double, for tests and the homomorphic DFT: forward maps the
  // n complex "coefficients" u (u_i = m_(i gap) + i m_((i + n) gap)) to the slots; inverse back.
  static void special_fft(std::vector<std::complex<long double>>& values, std::uint32_t n_degree);
  static void special_fft_inverse(std::vector<std::complex<long double>>& values,
                                  std::uint32_t n_degree);

 private:
  // The rounded, scaled coefficients of the inverse special FFT of values (slots checked and
  // set).
  std::vector<long double> scaled_coefficients(std::span<const std::complex<double>> values,
                                               double scale, std::uint32_t& slots) const;
  void to_rns(std::span<const long double> scaled, std::uint32_t level, bool extended,
              RnsPoly& out) const;

  const CkksContext* context_;
  const RnsOps* ops_;
};

}  // namespace safhire::ckks
