// CKKS bootstrapping for full slots, step by step: ModRaise, CoeffToSlot, EvalMod, SlotToCoeff
// (the order of Cheon et al. 2018 with the improvements of Bossuat et al. 2021: hoisted BSGS
// transforms, exact scales, a cosine with double angles).
//
// Input: a ciphertext at level 0, modulus q_0, whose slots hold z = sigma(m) / Delta. After
// ModRaise it encrypts t = m + q_0 I modulo Q_top. Its scale is relabelled to the evaluation
// scale Delta_e (a level prime's size, so that the scales stay put through EvalMod), and
// CoeffToSlot, with the factor Delta_e / (2 K q_0) folded into its matrices, leaves in its slots
// w = (t_i + i t_(i+N/2)) / (2 K q_0) in bit-reversed order. The real and imaginary parts,
// x = w + conj(w) and -i (w - conj(w)), are the t_i / (K q_0) in [-1, 1], t_i / q_0 being
// m_i / q_0 plus an integer I_i: |I| < K - 1/4 is required (it holds with overwhelming probability
// for a sparse secret of weight h when K exceeds a few sqrt(h / 12); the failure probability
// is the chance that some |I_i| reaches K).
// EvalMod computes sin(2 pi K y) = cos(2 pi (K y - 1/4)): a Chebyshev interpolant of
// cos(2 pi (K y - 1/4) / 2^r) on [-1, 1] (so that no level goes to an affine map), then r
// double angles c -> 2 c^2 - 1. For |m / q_0|
// small, sin(2 pi x) ~ 2 pi m / q_0, so relabelling the scale by 2 pi Delta / q_0 gives
// m / Delta again (the sine's error is (2 pi m / q_0)^3 / 6 relative to it). The two parts
// recombine as x + i y and SlotToCoeff returns the slots z, bit reversal undone. With the
// arcsine correction, a polynomial for arcsin(s) / (2 pi) replaces the relabelling by 2 pi and
// removes the sine's error, so that |m| / q_0 can be 2^-10 rather than 2^-15 or less.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "safhire/ckks/dft.hpp"
#include "safhire/ckks/polynomial.hpp"

namespace safhire::ckks {

struct BootstrapParams {
  std::vector<std::uint32_t> cts_split;  // CoeffToSlot groups (stages, in order), e.g. {4, 4, 3}
  std::vector<std::uint32_t> stc_split;  // SlotToCoeff groups, e.g. {3, 4, 4}
  double k = 16;                         // EvalMod's interval [-K, K] in units of q_0
  std::uint32_t degree = 47;             // of the cosine's interpolant
  std::uint32_t double_angles = 3;       // r
  // The arcsine correction: 0 (off) or the odd degree of arcsin(s) / (2 pi) on the sines of
  // |m| / q_0 <= 1 / message_ratio, which turns sin(2 pi m / q_0) / (2 pi) back into m / q_0 and
  // so allows messages much closer to q_0 (more precision) at the cost of its depth.
  std::uint32_t arcsine_degree = 0;
  double message_ratio = 1024;  // q_0 / max |m|, for the arcsine's interval
};

// Even splits of at most four stages per group for CoeffToSlot and five for SlotToCoeff (at
// N = 2^16: [4, 4, 4, 3] and [5, 5, 5], as Lattigo's defaults), K from the secret (16 for weights
// up to 32, 32 beyond, with 3 and 4 double angles), a cosine of degree 47.
BootstrapParams default_bootstrap_params(const CkksParams& params);

class Bootstrapper {
 public:
  // For ciphertexts of full slots; ModRaise goes to the context's top level. Error
  // (invalid_argument) when the splits do not cover log2(N/2) stages or the levels do not
  // suffice (depth() > top).
  Bootstrapper(const Encoder& encoder, const Evaluator& evaluator, BootstrapParams params);

  const BootstrapParams& params() const { return params_; }
  // Levels consumed: CoeffToSlot, EvalMod, SlotToCoeff.
  std::uint32_t depth() const;
  // The output's level (the top minus depth()).
  std::uint32_t output_level() const;
  // The scale EvalMod works at (its first prime); an input at scale Delta comes out at about
  // 2 pi Delta eval_scale() / q_0.
  double eval_scale() const { return eval_scale_; }
  // Rotation steps of both transforms; the keys also need conjugation.
  std::vector<int> rotations() const;
  // The keys the bootstrap needs, each made at the highest level it is used at: CoeffToSlot's
  // rotations and conjugation at the top, SlotToCoeff's others at its own level (a fraction of
  // the size).
  GaloisKeys galois_keys(KeyGenerator& generator, const SecretKey& sk) const;

  // The steps, for tests and for the lanes.
  Ciphertext mod_raise(const Ciphertext& x) const;
  // The raised ciphertext to (x, y): the real and imaginary parts of its coefficients
  // / (K q_0).
  std::pair<Ciphertext, Ciphertext> coeff_to_slot(const Ciphertext& raised,
                                                  const GaloisKeys& keys) const;
  // sin(2 pi K v) / (2 pi) of a real part v (slot by slot): m_i / q_0.
  Ciphertext eval_mod(const Ciphertext& v, const SwitchingKey& rlk) const;
  // x + i y through SlotToCoeff, relabelled so that it decodes to z.
  Ciphertext slot_to_coeff(const Ciphertext& x, const Ciphertext& y, double input_scale,
                           const GaloisKeys& keys) const;

  // All of it: x at level 0 with full slots, to output_level().
  Ciphertext bootstrap(const Ciphertext& x, const SwitchingKey& rlk, const GaloisKeys& keys) const;

 private:
  const Evaluator* ev_;
  BootstrapParams params_;
  std::uint32_t arcsine_depth() const;

  std::uint32_t top_;
  double eval_scale_;
  ChebyshevSeries cosine_, arcsine_;
  Plaintext minus_i_, i_;  // -i after CoeffToSlot, i before SlotToCoeff
  std::optional<HomomorphicDft> cts_, stc_;
};

}  // namespace safhire::ckks
