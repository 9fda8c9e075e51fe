// The homomorphic DFT of CKKS bootstrapping as stages, so that any part of CoeffToSlot or
// SlotToCoeff can be applied on its own (the lanes of the second seed are ciphertexts between
// stages: lanes.md section 1.2).
//
// Conventions. For n slots (a power of two up to N/2), decoding is z = F(u): u the n complex
// "coefficients" (u_i = m_(i g) + i m_((i + n) g), g = N / 2n) and z the slots, F the special
// FFT (Encoder::special_fft). F = S_(k-1) ... S_1 S_0 BR, k = log2 n, BR the bit reversal and
// S_i the radix-2 stage of length 2^(i+1): with h = 2^i, for every block of 2h positions and
// j < h,
//   (v_j, v_(j+h)) -> (v_j + w_j v_(j+h), v_j - w_j v_(j+h)),   w_j = exp(2 pi i (5^j mod 8h) /
//   8h).
// Each S_i is a matrix with three nonzero diagonals, 0, h and n - h. The homomorphic transforms
// leave the bit reversal out, as every bootstrapping does (it is undone between CoeffToSlot and
// SlotToCoeff, which meet in the same order):
//   SlotToCoeff on stages [first, last) applies S_first, ..., S_(last-1) in that order;
//   CoeffToSlot on stages [first, last) applies their inverses, S_(last-1)^-1 first, each with
//   its factor 1/2 (S_i^-1: (x, y) -> ((x + y) / 2, conj(w_j) (x - y) / 2)),
// so the full CoeffToSlot maps the slots z to BR(u) = BR(F^-1 z) (the 1/n spread as 1/2 per
// stage) and the full SlotToCoeff maps BR(u) back to z. In the notation of lanes.md, with N/n'
// lanes on full slots: L = SlotToCoeff on [0, log2(n'/2)), C = SlotToCoeff on the rest, and
// L^-1, C^-1 their CoeffToSlot counterparts.
//
// A range of stages runs as merged groups (a split such as [4, 4, 4, 3] for the 15 stages of
// N = 2^16 full slots, listed in the order of application), each group one linear transform
// (linear_transform.hpp) with up to 2^(s+1) - 1 diagonals for s stages, taking one level.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "safhire/ckks/linear_transform.hpp"

namespace safhire::ckks {

enum class DftDirection { coeff_to_slot, slot_to_coeff };

// Stage i (0 <= i < log2 slots) of the special FFT on `slots` slots of the ring of degree
// n_degree, or its inverse (with its 1/2), as diagonals.
LinearTransform::Diagonals dft_stage(std::uint32_t n_degree, std::uint32_t slots, std::uint32_t i,
                                     bool inverse);

// The product of the stages [first, last) in the order of `direction` (see above), as diagonals.
LinearTransform::Diagonals dft_stages(std::uint32_t n_degree, std::uint32_t slots,
                                      std::uint32_t first, std::uint32_t last,
                                      DftDirection direction);

// A B as diagonals (the matrix that applies B first): (A B)_k = sum_(k1 + k2 = k) a_k1 (.)
// rot_k1(b_k2), indices mod slots; entries below 2^-40 of the largest are dropped.
LinearTransform::Diagonals multiply_diagonals(const LinearTransform::Diagonals& a,
                                              const LinearTransform::Diagonals& b,
                                              std::uint32_t slots);

// The diagonals of the 2n-slot matrix diag(M, c M), for M by its diagonals on n slots: it maps
// (a, b) to (M a, c M b), and an n-slot vector, which is (a, a) in 2n slots, to (M a, c M a).
// Row j of M reading column (j + k) mod n is diagonal k of the 2n-slot matrix when j + k < n and
// k + n when it wraps, so the count grows only for diagonals that wrap (a range of stages that
// includes the last one, h = n/2).
LinearTransform::Diagonals lift_to_halves(const LinearTransform::Diagonals& diagonals,
                                          std::uint32_t slots, std::complex<double> c);

// y = M x in the clear, M by its diagonals (x.size() slots): the tests' reference and the
// plaintext side of the lanes.
std::vector<std::complex<double>> apply_diagonals(const LinearTransform::Diagonals& diagonals,
                                                  const std::vector<std::complex<double>>& x);

// A contiguous range of stages as homomorphic linear transforms, one per group of the split.
class HomomorphicDft {
 public:
  // The stages [first, last) in `direction`, grouped by `split` (group sizes in the order of
  // application, summing to last - first; empty: one group per stage), for ciphertexts of
  // `slots` slots (0: N/2) at `level`; group g runs at level - g and is followed by a rescale.
  // Error(invalid_argument) for a range outside [0, log2 slots), a split that does not cover
  // it, or fewer levels than groups.
  // `factor` multiplies the whole transform, spread evenly over the groups (factor^(1/groups)
  // each), as bootstrapping folds its constants into CoeffToSlot. max_babies caps each group's
  // baby rotations (LinearTransform; 0: no cap). lazy: the groups' diagonals that are not
  // compact are kept as coefficients and encoded where they are used (LinearTransform).
  // `halves`, per group (empty: none): 0 for a group on the n slots, or c for a group on 2n
  // slots as diag(M_g, c M_g) (lift_to_halves): on an n-slot input, the stages of its two
  // halves with the upper one times c, which is how bootstrapping packs the real and imaginary
  // parts of sparse slots into one ciphertext. A lifted group's output has 2n slots; a group on
  // n slots takes n-periodic input only (apply refuses 2n slots there: sum the halves first).
  HomomorphicDft(const Encoder& encoder, DftDirection direction, std::uint32_t first,
                 std::uint32_t last, std::vector<std::uint32_t> split, std::uint32_t level,
                 std::uint32_t slots = 0, double factor = 1, std::uint32_t max_babies = 0,
                 const std::vector<std::complex<double>>& halves = {}, bool lazy = false);

  DftDirection direction() const { return direction_; }
  std::uint32_t first() const { return first_; }
  std::uint32_t last() const { return last_; }
  // Levels consumed (one per group).
  std::uint32_t depth() const { return static_cast<std::uint32_t>(groups_.size()); }
  const std::vector<LinearTransform>& groups() const { return groups_; }
  // Every rotation step of every group, ascending, without repeats.
  std::vector<int> rotations() const;
  void make_resident(const RnsOps& ops);

  // The stages on x (at the level and slot count given at construction): the result is depth()
  // levels lower at x's scale.
  Ciphertext apply(const Evaluator& evaluator, const Ciphertext& x, const GaloisKeys& keys) const;
  // Groups [from, to) only: x at group from's level, the result to - from levels lower.
  Ciphertext apply(const Evaluator& evaluator, const Ciphertext& x, const GaloisKeys& keys,
                   std::uint32_t from, std::uint32_t to) const;

 private:
  DftDirection direction_;
  std::uint32_t first_, last_;
  std::vector<LinearTransform> groups_;
};

}  // namespace safhire::ckks
