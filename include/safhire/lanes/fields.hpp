// Prime and extension fields in lanes (lanes.md section 1.4). A lane space whose plaintext
// polynomial is t = Y^m - beta (LaneSpace::t_degree = m > 1) holds in each lane an element of
// Z_p[Y]/(Y^m - beta), p = beta^(n/m) + 1: the lanes' ring Z[Y]/(Y^n + 1) maps onto it
// (Y^n = (Y^m)^(n/m) = beta^(n/m) = -1), so every lane operation (evaluator.hpp) and the refresh
// (refresh.hpp, whose reduction is modulo this t) act on it exactly. When p is prime the ring is a
// product of fields:
//
//   Y^m - beta = prod_(i<k) (Y^d - gamma_i)  modulo p,   k = m / d,
//
// each factor irreducible, so a lane holds k elements of F_(p^d), and one CKKS product multiplies
// every element of every lane at once (d = 1: m elements of the prime field F_p a lane).
//
// The factorization. beta has order 2n/m modulo p, so a root y of Y^m = beta has order 2n; with 2^e
// the largest power of two dividing p - 1 (p = 1 mod 4 for these p), y lies in F_(p^d) for
// d = max(1, 2n / 2^e), since v2(p^d - 1) = e + v2(d). The gamma_i = y^d are the k roots of
// Z^k = beta in F_p, gamma_0 omega^i for a primitive k-th root of unity omega, and Y^d - gamma_i
// (d a power of two) is irreducible exactly when gamma_i is not a square. FieldSpace computes them
// from a primitive 2^e-th root of unity and checks the whole claim at construction: p a probable
// prime (GMP, 50 rounds), gamma_i^k = beta, the gamma_i distinct, prod (Z - gamma_i) = Z^k - beta
// as polynomials, and each gamma_i a non-square (Euler's criterion) when d > 1.
//
// An element of F_(p^d) = F_p[Y]/(Y^d - gamma_i) is its d coefficients in [0, p) (FieldElement).
// A lane's c(Y) = sum_(j<d) Y^j C_j(Y^d) has residue i with coefficients C_j(gamma_i): a length-k
// transform over F_p per j, and its inverse for encoding.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/lane_space.hpp"

namespace safhire::lanes {

// d coefficients in [0, p): c_0 + c_1 Y + ... + c_(d-1) Y^(d-1) modulo Y^d - gamma_i.
using FieldElement = std::vector<mpz_class>;

class FieldSpace {
 public:
  // Error(invalid_parameters) with the reason: t_degree 1 (an integer space), p composite, or a
  // factorization that fails its checks. The space must be valid (LaneSpace::validate).
  explicit FieldSpace(const LaneSpace& space);

  const LaneSpace& space() const { return space_; }
  const mpz_class& prime() const { return p_; }                   // p = beta^(n/m) + 1
  std::uint32_t degree() const { return d_; }                     // d: the elements lie in F_(p^d)
  std::uint32_t per_lane() const { return k_; }                   // k = m / d elements a lane
  std::uint32_t elements() const { return space_.lanes() * k_; }  // a ciphertext's
  // gamma_0 .. gamma_(k-1): element i of a lane lives modulo Y^d - gamma_i.
  const std::vector<mpz_class>& gammas() const { return gammas_; }

  // Lane r's k elements (at [r k, (r + 1) k)) to the ring's m coefficients, and back.
  // Error(invalid_argument) for a count other than k (m) or an element of another degree.
  std::vector<mpz_class> coefficients(std::span<const FieldElement> lane) const;
  std::vector<FieldElement> lane_elements(std::span<const mpz_class> coefficients) const;

  // A ciphertext's elements() elements (fewer: the rest 0) as lane digits in `form`, to encrypt
  // (LaneEncryptor::encrypt_digits) or multiply by (LaneEvaluator::multiply_digits); and the
  // elements that any lane digits (a decryption's LaneDecoding::digits) hold.
  LaneDigits digits(std::span<const FieldElement> values, DigitForm form) const;
  std::vector<FieldElement> elements_of(const LaneDigits& digits) const;

 private:
  LaneSpace space_;
  mpz_class p_;
  std::uint32_t d_ = 1, k_ = 1;
  std::vector<mpz_class> gammas_;
  std::vector<mpz_class> omega_powers_;      // omega^j, j < k
  std::vector<mpz_class> gamma0_powers_;     // gamma_0^l, l < k
  std::vector<mpz_class> gamma0_inverse_k_;  // gamma_0^-l / k, l < k
};

}  // namespace safhire::lanes
