// The CPU kernels behind NttPlan, ExactProduct and PaddedProduct, compiled once per instruction
// set (scalar always; AVX2 and AVX-512 on x86-64) and chosen at run time through a table of
// function pointers. Only plain data crosses this boundary.
#pragma once

#include <cstddef>
#include <cstdint>

#include "safhire/core/crt.hpp"
#include "safhire/ring/ntt_view.hpp"

namespace safhire::ring::simd {

// Tables of the cyclic power-of-two NTT of length 2^log_n used by the zero-padded product: the
// radix-2 tree X^n - c = (X^(n/2) - c')(X^(n/2) + c') from X^L - 1, in the layout of
// ntt_view.hpp. The inverse twiddles of level 0 (c' = 1) hold the final scale.
struct Radix2View {
  std::uint64_t q;
  std::uint32_t log_n;
  std::uint32_t column_level;
  TwiddleView twiddles;
  std::uint64_t scale, scale_quotient;  // 2^-log_n * 2^64 mod q (cancels a Montgomery product)
};

// A buffer of at least `words` words for the transposed levels, owned by the calling thread and
// reused across calls (defined outside the instruction-set units: it allocates).
std::uint64_t* kernel_scratch(std::size_t words);

struct KernelTable {
  const char* name;
  // count polynomials of N words in [0, q), in place; outputs in [0, q).
  void (*ntt_forward)(const NttView& view, std::uint64_t* data, std::size_t count);
  void (*ntt_inverse)(const NttView& view, std::uint64_t* data, std::size_t count,
                      InverseScale scale);
  void (*radix2_forward)(const Radix2View& view, std::uint64_t* data, std::size_t count);
  void (*radix2_inverse)(const Radix2View& view, std::uint64_t* data, std::size_t count);
  // out[i] = a[i] b[i] 2^-64 mod q; a any word, b in [0, q); out may alias a or b.
  void (*pointwise_montgomery)(std::uint64_t q, std::uint64_t q_inv, const std::uint64_t* a,
                               const std::uint64_t* b, std::uint64_t* out, std::size_t len);
  // acc[i] = acc[i] + a[i] b[i] 2^-64 mod q; acc in [0, q) in and out, a any word, b in [0, q).
  void (*pointwise_montgomery_accumulate)(std::uint64_t q, std::uint64_t q_inv,
                                          const std::uint64_t* a, const std::uint64_t* b,
                                          std::uint64_t* acc, std::size_t len);
  // acc[i] = acc[i] + sum_k a[k][i] b[k][i] 2^-64 mod q, k < terms; a[k], b[k] and acc in
  // [0, q), q < 2^62: the products summed in 128 bits and reduced once per four terms.
  void (*pointwise_montgomery_dot)(std::uint64_t q, std::uint64_t q_inv,
                                   const std::uint64_t* const* a, const std::uint64_t* const* b,
                                   std::size_t terms, std::uint64_t* acc, std::size_t len);
  // Torus words read as signed integers -> their residues in [0, q).
  void (*lift_torus)(std::uint64_t q, std::uint64_t word_ratio, std::uint64_t two64_mod_q,
                     const std::uint64_t* in, std::uint64_t* out, std::size_t len);
  // Residues mod q1, q2 -> centred CRT lift mod 2^64.
  void (*crt_lift)(const core::Crt2& crt, const std::uint64_t* x1, const std::uint64_t* x2,
                   std::uint64_t* out, std::size_t len);
  // Residues mod q of two centred integers lo, hi in (-q/2, q/2] -> lo + 2^32 hi mod 2^64
  // (the one-prime product of LimbProduct).
  void (*limb_combine)(std::uint64_t q, const std::uint64_t* lo, const std::uint64_t* hi,
                       std::uint64_t* out, std::size_t len);
  // The residue mod q of one centred integer x in (-q/2, q/2] -> x 2^shift mod 2^64, shift < 64
  // (LimbProduct with one rounded limb).
  void (*centred_shift)(std::uint64_t q, const std::uint64_t* in, std::uint32_t shift,
                        std::uint64_t* out, std::size_t len);
  // out[i] = sum_t weights[t] rows[t][i] mod 2^64 (torus words times integer weights).
  void (*torus_dot)(const std::uint64_t* const* rows, const std::uint64_t* weights,
                    std::size_t count, std::uint64_t* out, std::size_t len);
  // outs[o][i] = sum_t weights[o count + t] rows[t][i] mod 2^64, for o < outputs.
  void (*torus_matmul)(const std::uint64_t* const* rows, std::size_t count,
                       const std::uint64_t* weights, std::size_t outputs,
                       std::uint64_t* const* outs, std::size_t len);
  // Sparse outputs (ring::TorusSparseMatrix in compressed rows, magnitudes below 2^32):
  // outs[o][i] = sum of +-magnitude[k] rows[column[k]][i] over k in [start[o], start[o + 1]),
  // + for the first positives[o] taps.
  void (*torus_spmm)(const std::uint64_t* const* rows, std::size_t count,
                     const std::uint32_t* start, const std::uint32_t* positives,
                     const std::uint32_t* column, const std::uint64_t* magnitude,
                     std::size_t outputs, std::uint64_t* const* outs, std::size_t len);
  // The same three on 32-bit torus words, mod 2^32 (weights and magnitudes taken mod 2^32).
  void (*torus_dot32)(const std::uint32_t* const* rows, const std::uint64_t* weights,
                      std::size_t count, std::uint32_t* out, std::size_t len);
  void (*torus_matmul32)(const std::uint32_t* const* rows, std::size_t count,
                         const std::uint64_t* weights, std::size_t outputs,
                         std::uint32_t* const* outs, std::size_t len);
  void (*torus_spmm32)(const std::uint32_t* const* rows, std::size_t count,
                       const std::uint32_t* start, const std::uint32_t* positives,
                       const std::uint32_t* column, const std::uint64_t* magnitude,
                       std::size_t outputs, std::uint32_t* const* outs, std::size_t len);
  // out[i] = (in[i] + 2^31) >> 32, the word switched to 2^32; acc[i mod period] += out[i] 2^32 -
  // in[i] mod 2^64, what that rounding adds (signed); for i < len.
  void (*narrow_words)(const std::uint64_t* in, std::uint32_t* out, std::uint64_t* acc,
                       std::size_t period, std::size_t len);
};

const KernelTable& scalar_kernels();
// nullptr when the build has no such kernels (not an x86-64 target).
const KernelTable* avx2_kernels();
const KernelTable* avx512_kernels();

}  // namespace safhire::ring::simd
