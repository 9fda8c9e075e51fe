// The lane refresh: a ciphertext in form B, its levels spent by products, back to the rest level
// with its digits small and exact again (lanes.md section 2.4, DESIGN.md section 6). It runs the
// stages of the homomorphic DFT it needs and no others, built from the existing stage ranges
// (ckks/dft.hpp: HomomorphicDft), not a second transform:
//
//  1. C, the cross-lane stages (SlotToCoeff on [log2(n/2), log2(N/2))), at the refresh level:
//     form B to form S, the ciphertext's plaintext S P (+ noise) with P = sum_r X^r a_r(Y) the
//     lanes' digits as coefficients (S the input's scale).
//  2. x q_0 t^-1 and the drop to level 0: the product by the integer polynomial
//     T = round(q_0 q_1 t^-1 / S), t = Y - beta = X^(N/n) - beta, lane by lane (Y commutes with the
//     interleaving), t^-1 = -(sum_(j<n) beta^(n-1-j) Y^j) / p, and the rescale by q_1 (a field
//     space's t = Y^m - beta the same way: t^-1 = -(sum_(j<n/m) beta^(n/m-1-j) Y^(m j)) / p,
//     p = beta^(n/m) + 1, |t|_1 = beta + 1 and the bounds below unchanged): level 0
//     holds q_0 phi with phi = P t^-1 mod 1. Modulo q_0 the integer part of P t^-1 is gone: a
//     free reduction of P modulo t (phi determines A = P(beta) mod p and nothing more).
//  3. ModRaise (with the sparse-secret encapsulation: to the ephemeral secret of weight h' at
//     level 0, raised, and back at the top): q_0 (phi + I), I an integer polynomial,
//     |phi + I| <= (h' + 1) / 2 on every coefficient (c_0 + c_1 s' sums h' + 1 centred terms).
//     Then x t, an exact integer product that takes no level: q_0 z with
//     z = (phi + I) t = P - (round(P t^-1) - I) t, an integer polynomial = P mod t, so every lane
//     still decodes to its integer, and |z_k| <= (beta + 1) (h' + 1) / 2: short digits, whatever
//     the digits were before (products grow them to n D^2). The input's noise e rides along:
//     z + e.
//  4. CoeffToSlot, all log2(N/2) stages, at the top: the complex-packed digits in bit-reversed
//     slots (form A), split into their real and imaginary parts (one conjugation), each / K.
//  5. The cleaning of each part, x - sin(2 pi x) / (2 pi) for |x| <= K = (beta + 1)(h' + 1)/2 +
//     1/2 (ckks::DoubleAngleSine): at x = k + e it gives k + (2 pi)^2 e^3 / 6, the noise gone.
//  6. The parts recombined (x + i y) and L, the lane stages (SlotToCoeff on [0, log2(n/2))): form
//     B at the rest level and scale (the cleaning ends at the rest scale).
// Stages per cycle: log2(N/n) + log2(N/2) + log2(n/2) = 2 log2(N/2), C at the lowest levels.
//
// The plain refresh (RefreshMode::plain) restores the levels without cleaning: steps 1-3, then
// C^-1 (CoeffToSlot on C's stages) at the top, back to form B: 2 log2(N/n) stages, the digits
// small again (step 3), the noise kept. It needs RefreshParams::plan_plain.
//
// The refresh without the reduction (RefreshMode::unreduced), to measure what the reduction buys:
// the standard bootstrap's route on the lanes. C; the drop to level 0 at a message ratio R
// (D_0 P with |D_0 P| <= q_0 / R for the input's digit bound D: no t^-1); ModRaise; CoeffToSlot;
// EvalMod with the cleaning's sine on each part, sin(2 pi (D_0 P / q_0 + I)) ~ 2 pi D_0 P / q_0,
// which removes q_0 I but not the noise; L. The same stages and the same cost as the cleaning
// refresh, but the digits come back as large as they went in (products make them n D^2, then
// n^3 D^4, ...) with an error of R D / (2 pi) times the sine's (NoiseModel::unreduced), so it
// refuses digits whose error would reach what a decryption rounds, and a chain of products is
// refused within a product or two. Needs no plan beyond the cleaning refresh's.
//
// Failure: the digits' range is bounded outright (step 3), so the cleaning never sees a digit
// outside |x| <= K; a digit comes out wrong only if its error reaches 1/2, which the noise model
// (noise.hpp) puts below NoiseModel::log2_failure of the input's noise; operations refuse
// results whose noise the cleaning could not take (evaluator.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/dft.hpp"
#include "safhire/ckks/polynomial.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/noise.hpp"

namespace safhire::lanes {

enum class RefreshMode : std::uint8_t { clean = 0, plain = 1, unreduced = 2 };

struct RefreshParams {
  // Also plan the plain refresh (C^-1 at the top: its matrices and its rotation keys).
  bool plan_plain = false;
  // At most this many baby rotations per DFT group (0: as the speed wants): fewer keys, more key
  // switches (ckks::LinearTransform).
  std::uint32_t max_babies = 0;
  // The DFT groups' diagonals that are not compact kept as integer coefficients and encoded where
  // they are used (ckks::LinearTransform's lazy mode): less memory, an NTT per limb and use.
  bool lazy_matrices = false;
};

// The keys a refresh needs (the bootstrap's: relinearization, rotations, the encapsulation).
using LaneKeys = ckks::BootstrapKeys;

class LaneRefresher {
 public:
  // Plans the transforms of the space (their matrices) and the cleaning.
  LaneRefresher(const LaneContext& context, const ckks::RnsOps& ops, RefreshParams params = {});
  LaneRefresher(const LaneRefresher&) = delete;
  LaneRefresher& operator=(const LaneRefresher&) = delete;

  const LaneContext& context() const { return *context_; }
  const RefreshParams& params() const { return params_; }
  const ckks::DoubleAngleSine& cleaning() const { return sine_; }
  const ckks::Evaluator& evaluator() const { return evaluator_; }

  // Every rotation step the refresh uses; the keys also need conjugation.
  std::vector<int> rotations() const;
  // The refresh's keys, each made at the highest level it is used at (CoeffToSlot's and C^-1's at
  // the top, C's and L's at their own); with `lane_rotations`, also the keys of those
  // whole-lane rotations (LaneEvaluator::rotate_lanes, in blocks) at the rest level.
  LaneKeys keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                std::span<const int> lane_rotations = {}) const;
  // The transforms' matrices in bytes (ckks::LinearTransform::bytes).
  std::size_t matrix_bytes() const;
  // Moves the matrices and plaintexts into ops' residence (the device for a CUDA backend).
  void make_resident(const ckks::RnsOps& ops);

  // The refresh of `mode`: Error(invalid_argument) for a ciphertext
  // below the refresh level, Error(size_mismatch) for another space's, Error(unsupported) for a
  // plain refresh that was not planned, Error(needs_refresh) when its noise is beyond what the
  // refresh takes (NoiseModel::max_refresh_input; a plain refresh: max_decodable).
  // `done`, when given, is called after each step with its name ("C", "ModRaise",
  // "CoeffToSlot", "cleaning (real part)", "cleaning (imaginary part)", "L"; a plain refresh:
  // "C", "ModRaise", "C^-1"; an unreduced one: "C", "ModRaise and CoeffToSlot", "EvalMod (real
  // part)", "EvalMod (imaginary part)", "L"), for a caller that times them (synchronizing a
  // device first).
  using StepDone = std::function<void(const char* step)>;
  LaneCiphertext refresh(const LaneCiphertext& x, const LaneKeys& keys,
                         RefreshMode mode = RefreshMode::clean, const StepDone& done = {}) const;

  // The steps, for timing and tests (the comment at the top numbers them).
  // 1: C at the refresh level (x is dropped to it): form S at level 1.
  ckks::Ciphertext cross_lanes(const LaneCiphertext& x, const LaneKeys& keys) const;
  // 2-3: x q_0 t^-1, level 0, ModRaise, x t: q_0 z at the top, labelled `scale` (its slots read
  // sigma_N(z) q_0 / scale).
  ckks::Ciphertext reduce_and_raise(const ckks::Ciphertext& s, const LaneKeys& keys,
                                    double scale) const;
  // 4: the digits / K, real and imaginary parts ({x, y}, each N/2 real slots).
  std::vector<ckks::Ciphertext> to_digits(const ckks::Ciphertext& raised,
                                          const LaneKeys& keys) const;
  // 5: x - sin(2 pi x) / (2 pi) of K v, v a part.
  ckks::Ciphertext clean(const ckks::Ciphertext& part, const LaneKeys& keys) const;
  // 6: x + i y through L, at the rest level and scale.
  ckks::Ciphertext to_lanes(const std::vector<ckks::Ciphertext>& cleaned,
                            const LaneKeys& keys) const;
  // The plain refresh's last step: C^-1 at the top, labelled for the scale of the level it ends
  // at.
  ckks::Ciphertext back_across_lanes(const ckks::Ciphertext& raised, const LaneKeys& keys) const;
  // The unreduced refresh's middle steps: the drop to level 0 at the message ratio for digits up
  // to `bound` (NoiseModel::unreduced_ratio; its scale D_0 into d0), ModRaise and CoeffToSlot:
  // the parts t / K; then EvalMod of a part (the cleaning's sine), at L's level and the rest
  // scale.
  std::vector<ckks::Ciphertext> unreduced_digits(const ckks::Ciphertext& s, double bound,
                                                 const LaneKeys& keys, double& d0) const;
  ckks::Ciphertext eval_mod(const ckks::Ciphertext& part, double d0, const LaneKeys& keys) const;

  // ModRaise of a level-0 ciphertext to the top, through the ephemeral secret where the space
  // has one (the sparse-secret encapsulation).
  ckks::Ciphertext raise(const ckks::Ciphertext& low, const LaneKeys& keys) const;

  // The digits' parities, for the carries of canonical digits (docs/lanes.md, to_digits): the
  // refresh with the drop to level 0 at x q_0 / 2 instead of x q_0 t^-1, so that the modulus q_0
  // reduces every digit z mod 2 for free, whatever its size; after ModRaise and CoeffToSlot the
  // parts hold y = z / 2 + I, and (1 - cos(2 pi y)) / 2 (the cleaning's sine a quarter period on),
  // flat at both values, is z mod 2 with the noise cleaned. Form A (the real and imaginary parts
  // at L's level and the rest scale: digit t < n/2 and t + n/2 of each lane, as the converter's
  // to_slots places them), or form B at the rest level through L, digits 0 or 1. beta = 2 only:
  // Error(unsupported) otherwise; the input as refresh() takes it.
  // `scale`: the parts' (0: the rest scale, what to_lanes() takes).
  std::vector<ckks::Ciphertext> parity_parts(const LaneCiphertext& x, const LaneKeys& keys,
                                             double scale = 0) const;
  // The level the parity parts (and the cleaning) end at: L's input, rest level + L's groups.
  std::uint32_t parts_level() const;
  LaneCiphertext parities(const LaneCiphertext& x, const LaneKeys& keys) const;
  // One carry round, beta = 2: z' = l + Y (z - l) / 2 with l = z mod 2 (parities), the same integer
  // modulo p (Y^n = -1 carries the top digit's half into digit 0 with its sign) with digits in
  // [floor(lo / 2), floor(hi / 2) + 1] for digits in [lo, hi] (digit 0: [-floor(hi / 2),
  // 1 - floor(lo / 2)]): from the rest bound 49, six rounds leave digits in {-1, 0, 1, 2}, the
  // fixed point (the tracked digit bound, symmetric, is ceil(D / 2) + 1). The halving is the
  // scale's label (exact), so z keeps its level: x must be below the rest level (one level will do)
  // and at the refresh level or above; the result is at x's level, at twice x's scale.
  LaneCiphertext carry_round(const LaneCiphertext& x, const LaneKeys& keys) const;

  // Checks x for a refresh of `mode` (see refresh()).
  void check_input(const LaneCiphertext& x, RefreshMode mode) const;

 private:
  const LaneContext* context_;
  RefreshParams params_;
  ckks::Encoder encoder_;
  ckks::Evaluator evaluator_;
  NoiseModel noise_;
  ckks::DoubleAngleSine sine_;
  std::optional<ckks::HomomorphicDft> c_, cts_, l_, c_inverse_;
  // The exact plaintexts t = X^(N/n) - beta (at the top), i (where the parts recombine) and -i
  // (after CoeffToSlot).
  ckks::Plaintext t_, i_, minus_i_;
  double eval_scale_ = 0;   // CoeffToSlot's output scale (the cleaning's first prime)
  double plain_scale_ = 0;  // the plain refresh's output scale
};

}  // namespace safhire::lanes
