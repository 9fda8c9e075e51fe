// The pointer-only view of the radix-t NTT tables that a transform kernel receives: the CPU
// kernels (per instruction set) and the CUDA kernels read exactly this layout. The owning tables,
// built by NttPlan, are in ntt_tables.hpp.
//
// Layout of a transform (the factorisation tree of Phi_M, with one change of order). Level 0 splits
// Phi_M into t-1 blocks of m words; level l = 1..a-1 splits each block of n = t*nn words into t
// blocks of nn. Levels l < c ("natural" levels) work in place on the natural layout, where the
// children of block b are blocks t*b + j. Before level c, the first level whose blocks are shorter
// than kColumnWidth words, the array of B blocks of n words is transposed to n rows of B columns,
// and levels c..a-1 run on the columns, so that every level reads and writes whole registers. Hence
// the output order: slot k*B + b holds natural slot b*n + k. NttPlan::slot_exponents() gives the
// evaluation point omega^e of every slot.
#pragma once

#include <cstdint>

namespace safhire::ring {

// Levels whose blocks have fewer words than this run on the transposed (column) layout. A fixed
// number, not the register width of the machine, so that the slot order is the same for every
// instruction set and for the CUDA kernels.
inline constexpr std::uint32_t kColumnWidth = 16;

// Constants of the length-t DFT kernel y_l = s * sum_r w^(l r) x_r (Rader's algorithm, the
// length-(t-1) cyclic convolution split by Winograd over the factors of X^(t-1) - 1; see
// detail/dft_small.hpp). Each constant is kept with its Shoup quotient.
enum DftConst : int {
  kDftScale = 0,  // s (used only by the scaled variant)
  kDftSum = 1,    // the (X - 1) factor: multiplies the sum of x_1..x_(t-1)
  kDftAlt = 2,    // the (X + 1) factor: multiplies the alternating sum
  kDftP0 = 3,     // first quadratic factor (X^2 + 1 for t = 5, X^2 + X + 1 for t = 7):
  kDftP1 = 4,     //   beta_0, beta_1, beta_0 + beta_1 for a Karatsuba product
  kDftP01 = 5,
  kDftQ0 = 6,  // second quadratic factor (X^2 - X + 1, t = 7)
  kDftQ1 = 7,
  kDftQ01 = 8,
  kDftCount = 9,
};

struct DftConstants {
  std::uint64_t value[kDftCount] = {};
  std::uint64_t quotient[kDftCount] = {};
};

// Twiddles of a tree of levels (a radix-t NTT, or the radix-2 transform of the padded product).
// Level l has `blocks` blocks; block beta twists part r (1 <= r < radix) by c'^r, c' its root.
// Natural levels (l < column_level) store them as [beta][r-1]; column levels as [s][r-1][b] with
// beta = b*S + s, S = blocks / columns (so that a register of consecutive columns loads them).
// Entries of level l start at level_block_offset[l] * (radix - 1).
struct TwiddleView {
  const std::uint64_t* forward;  // c'^r
  const std::uint64_t* forward_quotient;
  const std::uint64_t* inverse;  // c'^-r
  const std::uint64_t* inverse_quotient;
  const std::uint32_t* level_block_offset;
};

struct NttView {
  std::uint64_t q;
  std::uint32_t t, a, m, N;
  std::uint32_t column_level;       // c, in [1, a-1] for a >= 2 (a for a = 1: no column levels)
  const DftConstants* dft_forward;  // w_t, unscaled
  const DftConstants* dft_inverse;  // w_t^-1, unscaled
  const DftConstants* dft_inverse_last;  // [2]: w_t^-1 scaled by t^-a, and by t^-a * 2^64 mod q
  TwiddleView twiddles;                  // levels 1..a-1
};

// Which scale the inverse transform applies: t^-a alone (plain INTT), or t^-a * 2^64, which
// cancels the 2^-64 that a Montgomery pointwise product leaves.
enum class InverseScale : int { plain = 0, montgomery = 1 };

}  // namespace safhire::ring
