// CKKS bootstrapping for full slots, step by step: ModRaise, CoeffToSlot, EvalMod, SlotToCoeff
// (the order of Cheon et al. 2018 with the improvements of Bossuat et al. 2021: hoisted BSGS
// transforms, exact scales, a cosine with double angles; and the sparse-secret encapsulation of
// Bossuat et al. 2022).
//
// Input: a ciphertext at level 0, modulus q_0, whose slots hold z = sigma(m) / Delta (bootstrap()
// brings one from any higher level there itself, Delta = input_scale()). After
// ModRaise it encrypts t = m + q_0 I modulo Q_top. Its scale is relabelled to the evaluation
// scale Delta_e (a level prime's size, so that the scales stay put through EvalMod), and
// CoeffToSlot, with the factor Delta_e / (2 K q_0) folded into its matrices, leaves in its slots
// w = (t_i + i t_(i+N/2)) / (2 K q_0) in bit-reversed order. The real and imaginary parts,
// x = w + conj(w) and -i (w - conj(w)), are the t_i / (K q_0) in [-1, 1], t_i / q_0 being
// m_i / q_0 plus an integer I_i: |I| < K - 1/2 is required.
// I_i is the rounding of (c_1 s)_i / q_0 for the centred lifts (c_0 = -c_1 s + m + e only
// supplies the fractional part), a sum of h terms close to uniform on [-1/2, 1/2] for a secret
// of weight h. So |I| <= h / 2 always, and the failure probability, that some |I_i| reaches K,
// is an Irwin-Hall tail (bounded above by log2_failure_bound()). The encapsulation makes h small
// whatever the main secret: at level 0 the ciphertext is switched to an ephemeral secret of weight
// h' (32 by default; the key lives modulo q_0 P only, where a weight of 32 is secure), raised, and
// switched back to s at the top. With h' = 32 and K = 16, the bound is 2^-101 per bootstrap at N =
// 2^16, where the weight-192 secret alone would need K = 32 for 2^-29; the smaller K saves a double
// angle. EvalMod computes sin(2 pi K y) = cos(2 pi (K y - 1/4)): a Chebyshev interpolant of cos(2
// pi (K y - 1/4) / 2^r) on [-1, 1] (so that no level goes to an affine map), then r double angles c
// -> 2 c^2 - 1. For |m / q_0| small, sin(2 pi x) ~ 2 pi m / q_0, so relabelling the scale by 2 pi
// Delta / q_0 gives m / Delta again (the sine's error is (2 pi m / q_0)^3 / 6 relative to it). The
// two parts recombine as x + i y and SlotToCoeff returns the slots z, bit reversal undone. With the
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
  // The ciphertexts' slot count n, a power of two in [2, N/2] (0: N/2); the splits cover its
  // log2(n) stages.
  std::uint32_t slots = 0;
  double k = 16;                    // EvalMod's interval [-K, K] in units of q_0
  std::uint32_t degree = 47;        // of the cosine's interpolant
  std::uint32_t double_angles = 3;  // r
  // The arcsine correction: 0 (off) or the odd degree of arcsin(s) / (2 pi) on the sines of
  // |m| / q_0 <= 1 / message_ratio, which turns sin(2 pi m / q_0) / (2 pi) back into m / q_0 and
  // so allows messages much closer to q_0 (more precision) at the cost of its depth.
  std::uint32_t arcsine_degree = 0;
  double message_ratio = 0;  // q_0 / max |m|, for the arcsine's interval (0: input_ratio's)
  // q_0 / the scale bootstrap() brings an input above input_level() to (0: the measured best,
  // 2^(16 - floor(log2(N) / 2)) in the classic order, 8 at N = 2^16 and 10 at 2^12, where
  // EvalMod's noise bounds the precision while the sine's error on slots of magnitude up to 1
  // stays below it; 2^15 in the slim order, whose EvalMod sees the slots themselves).
  double input_ratio = 0;
  // The sparse-secret encapsulation: 0 (off) or the weight h' of the ephemeral secret.
  std::uint32_t ephemeral_weight = 0;
  // "Slim" order (Chen, Chillotti and Song 2019): SlotToCoeff first, on the input's own lowest
  // levels, then ModRaise, CoeffToSlot and EvalMod, whose real and imaginary parts recombine as
  // the slots. The top levels then pay for CoeffToSlot and EvalMod only; the input must be at
  // level input_level() (the SlotToCoeff groups) or above.
  bool slim = false;
  // Sparse slots in the classic order: both parts through one EvalMod (packed, see Bootstrapper),
  // 1.6x faster at N = 2^16 for half a bit of precision (each output slot then sums two noises of
  // one ciphertext where the two EvalMods give independent ones); false: two EvalMods.
  bool pack_parts = true;
  // At most this many baby rotations per DFT group (0: as many as the speed wants). Each is a key
  // of the top level's size (150 MB at N = 2^16) while the giants take two keys whatever their
  // number, so a cap trades rotation keys, and so memory, for giant key switches.
  std::uint32_t max_babies = 0;
  // The DFT groups' diagonals that are not compact (CoeffToSlot's first group and SlotToCoeff's
  // last: 0.75 GB of the 0.78 GB of matrices at N = 2^16) kept as integer coefficients and
  // encoded limb by limb where they are used (LinearTransform's lazy mode): memory for one NTT
  // per limb and use. Slim leaves SlotToCoeff's eager: on the input's lowest levels its
  // matrices are small (0.1 GB) and the NTTs would not pay.
  bool lazy_matrices = false;
};

// What a bootstrap needs besides the ciphertext. The ephemeral secret itself is never kept.
struct BootstrapKeys {
  SwitchingKey relinearization;
  GaloisKeys galois;
  // With the encapsulation: s to the ephemeral secret at level 0, and back at the top.
  std::optional<SwitchingKey> to_ephemeral, from_ephemeral;
};

// The keys' size in bytes (every digit of every key).
std::size_t key_bytes(const BootstrapKeys& keys);

// For `slots` slots (0: N/2): even splits of at most five stages per group (full slots at
// N = 2^16: [5, 5, 5] both ways; at N = 2^12: [4, 4, 3]), the encapsulation with h' = 32 unless the
// secret is already that sparse, K = 16, three double angles and a cosine of degree 39 (nine levels
// for EvalMod; its interpolation error near the integers is about 2^-44 in units of q_0).
BootstrapParams default_bootstrap_params(const CkksParams& params, std::uint32_t slots = 0);

// An upper bound on log2 of the probability that a bootstrap fails (some |I_i| reaches K): the
// Chernoff bound on a sum of h uniform terms on [-1/2, 1/2] reaching K - 1/2, two-sided, times
// N coefficients; h is the ephemeral weight, else the set's weight, else 2N/3 for a uniform
// ternary secret. -infinity where h / 2 < K - 1/2 (failure impossible).
double log2_failure_bound(const CkksParams& params, const BootstrapParams& boot);

// Moves the keys into ops' residence (the device for a CUDA backend), or back to the host.
void make_resident(const RnsOps& ops, BootstrapKeys& keys);
void to_host(const RnsOps& ops, BootstrapKeys& keys);

// Sparse slots (n < N/2): the message lives in the subring Z[X^gap], gap = N / 2n, whose n slots
// repeat gap times; the raised t = m + q_0 I does not. After ModRaise, the sum of the rotations
// by n j, j < gap (log2(gap) rotations and additions: the automorphisms fixing X^gap are the
// 5^(n j)), keeps gap times the part of t in the subring; 1/gap is folded into CoeffToSlot, whose
// n-slot special FFT (and SlotToCoeff's) then read t's subring coefficients as for full slots in
// a ring of degree 2n.
// Packed parts (sparse slots in the classic order, 2n <= N/2): CoeffToSlot's last group runs on
// 2n slots with its upper half times -i, so that adding the conjugate leaves the real parts in
// slots [0, n) and the imaginary ones in [n, 2n) of one ciphertext, and EvalMod runs once
// instead of twice. SlotToCoeff's first group runs on the 2n slots with its upper half times i,
// and the sum with the rotation by n (a key the sparse sum already has) brings the halves
// together as x + i y before the other groups (lift_to_halves in dft.hpp).
class Bootstrapper {
 public:
  // For ciphertexts of params.slots slots; ModRaise goes to the context's top level. Error
  // (invalid_argument) when the slot count is not a power of two in [2, N/2], the splits do not
  // cover its log2 stages, or the levels do not suffice (depth() > top).
  Bootstrapper(const Encoder& encoder, const Evaluator& evaluator, BootstrapParams params);

  const BootstrapParams& params() const { return params_; }
  // Levels consumed from the top: CoeffToSlot, EvalMod, and SlotToCoeff unless slim.
  std::uint32_t depth() const;
  // The lowest level an input may have: 0, or SlotToCoeff's groups when slim.
  std::uint32_t input_level() const;
  // The scale bootstrap() brings an input from above input_level() to: q_0 / input_ratio.
  double input_scale() const { return input_scale_; }
  // The output's level (the top minus depth()).
  std::uint32_t output_level() const;
  // The scale EvalMod works at (its first prime); an input at scale Delta comes out at about
  // 2 pi Delta eval_scale() / q_0.
  double eval_scale() const { return eval_scale_; }
  std::uint32_t slots() const { return slots_; }
  // True when the real and imaginary parts share one ciphertext (see above): coeff_to_slot
  // returns one part of 2n slots.
  bool packed() const { return packed_; }
  // Rotation steps of both transforms and of the sparse sum; the keys also need conjugation.
  std::vector<int> rotations() const;
  // The keys the bootstrap needs, each made at the highest level it is used at: CoeffToSlot's
  // rotations and conjugation at the top, SlotToCoeff's others at its own level (a fraction of
  // the size); with the encapsulation, a fresh ephemeral secret's two keys.
  BootstrapKeys keys(KeyGenerator& generator, const SecretKey& sk) const;

  // The CoeffToSlot and SlotToCoeff matrices' size in bytes (LinearTransform::bytes).
  std::size_t matrix_bytes() const;

  // Moves the transforms' matrices and the bootstrap's plaintexts into ops' residence (the
  // device for a CUDA backend), so that no step stages them.
  void make_resident(const RnsOps& ops);

  // The steps, for tests and for the lanes.
  Ciphertext mod_raise(const Ciphertext& x, const BootstrapKeys& keys) const;
  // The raised ciphertext to the parts EvalMod takes, the real and imaginary parts of its
  // coefficients / (K q_0): {x, y}, or when packed() one ciphertext of 2n slots, (x, y).
  std::vector<Ciphertext> coeff_to_slot(const Ciphertext& raised, const BootstrapKeys& keys) const;
  // sin(2 pi K v) / (2 pi) of a part v (slot by slot): m_i / q_0.
  Ciphertext eval_mod(const Ciphertext& v, const BootstrapKeys& keys) const;
  // The parts after EvalMod, as x + i y, through SlotToCoeff, relabelled so that it decodes to z
  // (not slim).
  Ciphertext slot_to_coeff(const std::vector<Ciphertext>& parts, double input_scale,
                           const BootstrapKeys& keys) const;
  // Slim: SlotToCoeff of x (dropped to input_level()) down to level 0, ready for ModRaise; and
  // x + i y relabelled so that it decodes to z, after EvalMod.
  Ciphertext slot_to_coeff_first(const Ciphertext& x, const BootstrapKeys& keys) const;
  Ciphertext recombine(const std::vector<Ciphertext>& parts, double input_scale) const;

  // All of it, owning its input contract: x with slots() slots at any level from input_level()
  // up and any scale, its slots of magnitude up to about 1. Above input_level(), x is brought to
  // input_level() at input_scale() by one exact constant product and its rescale (the caller
  // computes no scale); at input_level() its own scale is taken as it is (what the steps above
  // do), up to twice input_scale(). Returns a ciphertext at output_level() whose slots decode to
  // x's values (its scale the label that makes them so). Error(invalid_argument) for another slot
  // count, a level below input_level(), a larger scale at input_level() (bootstrap a level
  // earlier), or keys that do not match the encapsulation.
  Ciphertext bootstrap(const Ciphertext& x, const BootstrapKeys& keys) const;

 private:
  const Evaluator* ev_;
  BootstrapParams params_;
  std::uint32_t arcsine_depth() const;

  std::uint32_t top_, slots_;
  bool packed_ = false;
  double eval_scale_;
  double input_scale_ = 0;
  std::vector<int> subsum_;  // the sparse sum's rotations, n 2^i for 2^i < gap
  DoubleAngleSine sine_;
  ChebyshevSeries arcsine_;
  // -i after CoeffToSlot, i before SlotToCoeff (after EvalMod if slim); unused when packed.
  Plaintext minus_i_, i_;
  // Checks that parts has what coeff_to_slot returns (one part when packed, else two).
  void check_parts(const std::vector<Ciphertext>& parts) const;
  std::optional<HomomorphicDft> cts_, stc_;
};

}  // namespace safhire::ckks
