// The pointer-only view of the radix-t NTT tables that a transform kernel receives: the CPU
// kernels (per instruction set) and the CUDA kernels read exactly this layout. The owning tables,
// built by NttPlan, are in ntt_tables.hpp.
#pragma once

#include <cstdint>

namespace safhire::ring {

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

struct NttView {
  std::uint64_t q;
  std::uint32_t t, a, m, N;
  const DftConstants* dft_forward;          // w_t, unscaled
  const DftConstants* dft_inverse;          // w_t^-1, unscaled
  const DftConstants* dft_inverse_last;     // [2]: w_t^-1 scaled by t^-a, and by t^-a * 2^64 mod q
  const std::uint32_t* level_block_offset;  // [a]: first block of level l = 1..a-1
  const std::uint64_t* twiddle_forward;     // [block][t-1]: c'^r for r = 1..t-1
  const std::uint64_t* twiddle_forward_quotient;
  const std::uint64_t* twiddle_inverse;  // [block][t-1]: c'^-r
  const std::uint64_t* twiddle_inverse_quotient;
};

// Which scale the inverse transform applies: t^-a alone (plain INTT), or t^-a * 2^64, which
// cancels the 2^-64 that a Montgomery pointwise product leaves.
enum class InverseScale : int { plain = 0, montgomery = 1 };

}  // namespace safhire::ring
