// Homomorphic linear transforms of the slots: y = M x for a matrix M over the n slots of a
// ciphertext, given by its nonzero diagonals diag_k[j] = M[j][(j + k) mod n], so that
//   M x = sum_k diag_k (.) rot_k(x)          (rot_k: left rotation by k slots).
//
// Evaluation is baby-step giant-step (Halevi-Shoup): with k = g + b, g a multiple of the baby
// count n1 and 0 <= b < n1,
//   M x = sum_g rot_g( sum_b rot_-g(diag_(g+b)) (.) rot_b(x) ),
// so the rotations are the baby steps b and the giant steps g that nonzero diagonals reach, each
// once. The baby rotations share one ModUp of x (single hoisting), and everything runs in the
// extended basis Q_l P with key switches before their ModDown: the baby rotations, the inner
// sums of the giant steps (whose c_1 part alone comes down for the giant rotation's ModUp), and
// the rotated giant steps, so that the whole transform ends with one ModDown per component
// (both halves of Bossuat et al.'s double hoisting, Eurocrypt 2021). x enters as P x, whose
// ModDown is x exactly; the pre-rotated diagonals are encoded over Q_l P.
//
// Memory and traffic: where the giants' sums take less memory than the baby rotations (a DFT
// group's 4 giants against 15 babies), every sum comes from one RnsOps::rotate_hoisted_rows,
// which the CPU runs limb by limb without ever holding a baby whole; else the baby rotations run
// limb by limb from one ModUp (RnsOps::rotate_hoisted) and the giant steps' sums read them once
// per batch of giants (RnsOps::inner_product_rows). A diagonal periodic in the slots (period p) is
// a polynomial in X^(N/2p) and is stored in 2p words per prime (compact_blocks), as are the DFT's
// groups of low stages; contiguous giants run as two Horner chains by n1 and -n1, two keys in all.
//
// Level and scale: the diagonals are encoded at the ciphertext's level with a scale chosen at
// construction (by default q_level, so that rescaling the output restores x's scale exactly);
// the output is at x's level with scale x.scale * transform.scale(), not rescaled.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include "safhire/ckks/ckks.hpp"

namespace safhire::ckks {

class LinearTransform {
 public:
  using Diagonals = std::map<std::uint32_t, std::vector<std::complex<double>>>;

  // diagonals: index k in [0, slots) -> n values (shorter vectors are padded with zeros);
  // slots a power of two in [1, N/2] (0: N/2); level <= the context's top; scale > 0 (0: the
  // prime q_level); baby_steps n1 a power of two in [1, slots] (0: chosen to balance the baby
  // and giant rotations, with at most max_babies nonzero baby rotations when that is not 0: each
  // is a key, while chained giants take two). Error(invalid_argument) for anything else.
  // lazy: every diagonal that is not compact (not periodic in the slots) is kept as its integer
  // coefficients (N words, Encoder::integer_coefficients) and encoded limb by limb where it is
  // used (RnsOps::rotate_hoisted_rows' lazy terms: one NTT per limb and use) instead of one limb
  // per prime of Q_l P (30 at the top level of N = 2^16: 15 MB a diagonal against 0.5 MB);
  // the same words.
  LinearTransform(const Encoder& encoder, const Diagonals& diagonals, std::uint32_t level,
                  std::uint32_t slots = 0, double scale = 0, std::uint32_t baby_steps = 0,
                  std::uint32_t max_babies = 0, bool lazy = false);

  // From a dense n x n matrix (row-major), keeping the diagonals with a nonzero entry.
  static LinearTransform from_matrix(const Encoder& encoder,
                                     const std::vector<std::complex<double>>& matrix,
                                     std::uint32_t level, std::uint32_t slots = 0, double scale = 0,
                                     std::uint32_t baby_steps = 0);

  std::uint32_t level() const { return level_; }
  std::uint32_t slots() const { return slots_; }
  double scale() const { return scale_; }
  std::uint32_t baby_steps() const { return n1_; }
  // Every rotation step the evaluation uses (baby and giant, nonzero, ascending): the Galois
  // keys to generate for it, and no more.
  std::vector<int> rotations() const;
  // True when the giant steps run as two chains of rotations by n1 and -n1 (two keys instead of
  // one per giant, the same number of key switches): when the nonzero giants are contiguous
  // multiples of n1 on each side, as a DFT group's are.
  bool chained() const { return chained_; }

  // The encoded diagonals' size in bytes. A diagonal periodic in the slots with period p is a
  // polynomial in X^(N/2p), stored compact (rns_ops.hpp: compact_blocks) in 2p words per prime:
  // the DFT's groups of low stages are such. A lazy diagonal takes N words.
  std::size_t bytes() const;

  // Moves the encoded diagonals into ops' residence (the device for a CUDA backend).
  void make_resident(const RnsOps& ops);

  // M x for x at this transform's level with slots() slots, or fewer that divide them (a vector of
  // n slots is n-periodic in 2n: the same vector), Error(invalid_argument) otherwise: at x's
  // level with slots() slots, scale x.scale * scale(), 2 components.
  // With rescale, the output is divided by q_level in the ModDown's division
  // (Evaluator::mod_down_rescale): one level lower, scale x.scale * scale() / q_level.
  Ciphertext apply(const Evaluator& evaluator, const Ciphertext& x, const GaloisKeys& keys,
                   bool rescale = false) const;

 private:
  const CkksContext* context_;
  std::uint32_t level_ = 0, slots_ = 0, n1_ = 1;
  double scale_ = 1;
  // The giants as two Horner chains, by n1 and by -n1 (see apply), instead of a key each.
  bool chained_ = false;
  // giant step g -> baby step b -> rot_-g(diag_(g+b)), NTT form over Q_level and P, compact
  // where it is block-constant.
  std::map<std::uint32_t, std::map<std::uint32_t, RnsPoly>> plain_;
  // The lazy diagonals' coefficients (their plain_ entries are empty).
  std::map<std::uint32_t, std::map<std::uint32_t, RnsOps::Coefficients>> lazy_;
  const RnsOps::Coefficients* lazy_at(std::uint32_t g, std::uint32_t b) const;

  // A rotation over Q_l P: (sigma(c_0 + v_0), sigma(v_1)) into r0, r1, v the inner product of
  // the ModUp digits with the stored key (v0, v1: scratch).
  void rotate_extended(const Evaluator& evaluator, const std::vector<RnsPoly>& digits,
                       const SwitchingKey& key, std::uint64_t galois, const RnsPoly& c0,
                       RnsPoly& v0, RnsPoly& v1, RnsPoly& r0, RnsPoly& r1) const;
};

}  // namespace safhire::ckks
