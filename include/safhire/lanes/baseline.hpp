// The mod-2^n baseline: exact arithmetic modulo 2^n in the same CKKS, the construction the lanes
// are measured against (the second seed compares its arithmetic modulo 2^n + 1 with Gao and
// Zheng's modulo 2^n, Crypto '26, ported to the same library).
//
// What this reconstructs, and why. Gao and Zheng's text is not at hand; ../reference/lanes.md
// records only the property the seed measures: their form for arithmetic is not an intermediate
// of bootstrapping, so that every refresh carries the integer's digits explicitly between that
// form and the slots, refreshes them there, and carries them back, at a cost that grows with n.
// Modulo 2^n that is forced, not chosen: 2^n = 0 is no ideal of Z[Y]/(Y^n + 1) (the lanes'
// reduction modulo t = Y - beta inside the bootstrap gives beta^n + 1 only), so a product must be
// truncated, its digits of weight 2^n and above dropped, and only a digit form can drop them.
// This baseline is that construction built from the lanes' own parts, so that a comparison
// measures the representation and nothing else: the same ring, chain primes, secret, ephemeral
// encapsulation, DFT stage grouping, cleaning polynomial, key switching, thread count and code.
//
//   Arithmetic form: an integer A mod 2^n as its digit polynomial a(Y) of degree < n, zero-padded
//   in a lane of degree 2n (form B of lane_space.hpp, beta = 2), so that one slot-wise product is
//   the acyclic product, digits up to 2n-2 and no wrap-around. N / (2n) integers a ciphertext,
//   half the lanes' N / n at the same n.
//
//   Refresh, after a product (P, digits up to n D^2, at the truncation level):
//    1. Truncation (digits out and back): L^-1 (CoeffToSlot on the lane stages), the real part
//       (one conjugation: digits k < n; the imaginary part holds k >= n, which are multiples of
//       2^n), L: P' = P mod Y^n, P'(2) = P(2) mod 2^n.
//    2. C, and the product by q_0 T for T the inverse of t = Y - 2 in Z[Y]/(Y^n), the power series
//       -sum_(j<n) Y^j / 2^(j+1) (P' T has degree < 2n - 1: no wrap), the drop to level 0 (the
//       free reduction), ModRaise: q_0 W, W = phi + I, with phi = frac(P' T) on digits k < n.
//    3. CoeffToSlot, and the real part (digits out): W_k for k < n. W's digits k >= n (junk: the
//       upper half of P' T, and I) are dropped here; in Z[Y]/(Y^2n + 1) the product by t would
//       carry W_(2n-1) into digit 0 (the wrap-around), which modulo 2^n is a wrong integer.
//    4. L, the product by sigma(t) slot-wise, L^-1, the real part (digits out and back): z = W t
//       mod Y^n, integers with z(2) = P'(2) mod 2^n and |z_k| <= 3 (h + 1) / 2, the lanes' bound.
//    5. The lanes' cleaning of the digits (one part: the imaginary one is empty) and L: form B at
//       the rest level, digits k >= n zero.
//   Transform stages per refresh: C's log2(N/2n) and CoeffToSlot's log2(N/2), as the lanes', and
//   5 log2(n) lane stages (L^-1 and L for the truncation and for the product by t, and the last
//   L), two of those transforms at the top levels; the lanes run log2(n/2) lane stages in all.
//   Levels: the truncation's 2g (g = L's groups) below the rest level, and 2g + 1 between the
//   cleaning and CoeffToSlot (the space's conversion levels), which make the chain longer than the
//   lanes' at the same n.
//
// Exactness: a digit is an integer throughout (steps 2 and 4 as the lanes' steps 2-3, the
// cleaning as theirs), so every integer decrypts to A B mod 2^n exactly while the noise stays
// below what the cleaning takes; the tests and `safhire lanes compare` check every result against
// GMP, and this class keeps no noise model of its own (a refresh follows every product).
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/dft.hpp"
#include "safhire/ckks/polynomial.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/refresh.hpp"

namespace safhire::lanes {

// The baseline's space for integers modulo 2^n at N = 2^log_n: lanes of degree 2n, beta = 2, the
// chain of make_lane_space(name, log_n, 2n, 2, options) with 1 + 2g levels at rest (a product and
// the truncation, the truncation's on L's primes) and 2g + 1 conversion levels on 30-bit primes.
// Where `options` keeps make_lane_space's defaults it takes the wide spaces' primes (50-bit
// cleaning, 52-bit CoeffToSlot) and groups of up to 6 stages, so that the longer chain keeps 128
// bits at N = 2^16 (with dnum 4 to 10). Error(invalid_parameters) for n outside [4, N/8] or not a
// power of two.
LaneSpace make_baseline_space(std::string name, std::uint32_t log_n, std::uint32_t n,
                              LaneSpaceOptions options = {});

// Whether a space has the baseline's layout (and so its n = lane degree / 2).
bool is_baseline_space(const LaneSpace& space);

class Mod2nBaseline {
 public:
  // Plans the transforms. Error(invalid_argument) for a space without the baseline's layout.
  Mod2nBaseline(const LaneContext& context, const ckks::RnsOps& ops, RefreshParams params = {});
  Mod2nBaseline(const Mod2nBaseline&) = delete;
  Mod2nBaseline& operator=(const Mod2nBaseline&) = delete;

  const LaneContext& context() const { return *context_; }
  std::uint32_t bits() const { return bits_; }                          // n
  std::uint32_t integers() const { return context_->space().lanes(); }  // N / (2n)
  const mpz_class& modulus() const { return modulus_; }                 // 2^n
  // The level a refresh takes its input at (a product of two ciphertexts at rest lands there).
  std::uint32_t truncation_level() const;

  std::vector<int> rotations() const;
  // Every key a refresh and a product use (relinearization, the rotations at the levels they are
  // used at, conjugation, the ephemeral secret's).
  LaneKeys keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk) const;
  std::size_t matrix_bytes() const;
  void make_resident(const ckks::RnsOps& ops);

  // The digits of up to integers() integers (reduced mod 2^n): bits k < n of lane r, digits
  // k >= n zero. Error(invalid_argument) for more integers than lanes.
  LaneDigits digits(std::span<const mpz_class> values) const;
  // The integers a decryption holds: sum_k d_k 2^k mod 2^n, lane by lane.
  std::vector<mpz_class> values(const LaneDecoding& decoded) const;

  // x y (both at one level and scale): the acyclic product, one level; Error(needs_refresh) when
  // it would land below truncation_level(), Error(size_mismatch) for another space's ciphertext,
  // Error(invalid_argument) for operands at different levels.
  LaneCiphertext multiply(const LaneCiphertext& x, const LaneCiphertext& y,
                          const ckks::SwitchingKey& rlk) const;
  // The refresh above, to the rest level. Error(invalid_argument) below truncation_level().
  // `done` is called after each step ("truncation", "C", "ModRaise", "CoeffToSlot", "x t",
  // "cleaning", "L").
  LaneCiphertext refresh(const LaneCiphertext& x, const LaneKeys& keys,
                         const LaneRefresher::StepDone& done = {}) const;

 private:
  void check_space(const LaneCiphertext& x) const;
  // w + conj(w): the real part of the slots.
  ckks::Ciphertext real_part(const ckks::Ciphertext& w, const ckks::GaloisKeys& keys) const;

  const LaneContext* context_;
  RefreshParams params_;
  ckks::Encoder encoder_;
  ckks::Evaluator evaluator_;
  ckks::DoubleAngleSine sine_;
  std::uint32_t bits_ = 0;
  mpz_class modulus_;
  // The truncation's L^-1 and L; C; CoeffToSlot; L, L^-1 around the product by t; the last L.
  std::optional<ckks::HomomorphicDft> cut_inverse_, cut_, c_, cts_, up_, down_, l_;
  ckks::Plaintext sigma_t_;
  double eval_scale_ = 0;
};

}  // namespace safhire::lanes
