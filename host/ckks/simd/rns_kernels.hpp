// The multiply-accumulates of the RNS layer as kernels per instruction set (internal to the CKKS
// layer). Base conversion (rns.hpp) over a block of coefficients, for each target limb:
//   out[t] = sum_i rows[i][t] constants[i] mod p,   t < len,
// fully reduced, so that every kernel gives the same words. Rows and constants are below 2^61
// (the CKKS primes' bound), and terms <= kMaxVectorTerms keeps the exact sum below 2^128.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "safhire/core/modarith.hpp"

namespace safhire::ckks::simd {

using core::u64;

struct ConvertTarget {
  u64 p;
  core::WideReducer reducer;
  const u64* constants;  // one per row, each below p
  u64* out;              // len words
};

inline constexpr std::size_t kMaxVectorTerms = 60;

// AVX-512 F: eight coefficients per register, the 122-bit products assembled from 32 x 32-bit
// ones into three accumulators. Only where the processor has AVX-512 F and DQ; len a multiple
// of 8.
void convert_block_avx512(std::span<const u64* const> rows, std::size_t len,
                          std::span<const ConvertTarget> targets);

// The key-switching inner product on AVX-512 F: out0[t] = sum_j a[j][t'] b0[j][t] mod q and,
// when out1 is not null, out1[t] = sum_j a[j][t'] b1[j][t] mod q, for t < n (a multiple of 8),
// words below 2^61 (below q where q < kIfmaPrimeBound: the IFMA kernel's bound, which RnsPoly's
// reduced limbs meet), at most kMaxVectorTerms pairs; t' = t >> shift[j], shift[j] 0 or >= 3 (a
// block-constant a[j], one word per block of 2^shift[j] >= 8).
void inner_product_avx512(std::span<const u64* const> a, std::span<const unsigned> shift,
                          std::span<const u64* const> b0, std::span<const u64* const> b1,
                          std::size_t n, u64 q, core::WideReducer reducer, u64* out0, u64* out1);

// Elementwise on AVX-512 F, n a multiple of 8, words below q < 2^61, outputs in [0, q):
//   multiply: out = a b mod q (out += a b mod q when accumulating);
//   scale:    out = (a - b) c mod q (a c when b is null), c a Shoup constant below q;
void multiply_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q,
                     core::WideReducer reducer, bool accumulate);
void scale_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q,
                  core::ShoupConst<u64> c);
//   add_sub:  out = a + b mod q, or a - b mod q when subtracting.
void add_sub_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, bool subtract);

// The tensor on AVX-512 F, n a multiple of 8, words below q < 2^61, outputs in [0, q):
// d0 = x0 y0, d1 = x0 y1 + x1 y0, d2 = x1 y1 mod q; a square (x0 == y0, x1 == y1) forms x0 x1
// once and doubles it.
void tensor_avx512(const u64* x0, const u64* x1, const u64* y0, const u64* y1, u64* d0, u64* d1,
                   u64* d2, std::size_t n, u64 q, core::WideReducer reducer);

// The exact conversion's v: v[t] = round(sum_i rows[i][t] inv_q[i]) in double, the terms added
// in order with one rounding per product and per sum (as the scalar loop and the CUDA kernel),
// halves up, for sums below 2^52; len a multiple of 8, on AVX-512 F and DQ.
void rounded_quotients_avx512(std::span<const u64* const> rows, const double* inv_q,
                              std::size_t len, u64* v);

// The conversion from one prime q (rescale's, ModRaise's): out = (y mod p) - (q mod p where
// wrap[t] is all ones), mod p, on AVX-512 F, n a multiple of 8; one = the Shoup constant of 1.
void lift_one_avx512(const u64* y, const u64* wrap, u64* out, std::size_t n, u64 p,
                     core::ShoupConst<u64> one, u64 q_mod);

// Residues of signed words: out[t] = c[t] mod q in [0, q) for |c[t]| <= 2^63 and 2^13 < q < 2^62,
// from a quotient estimated in double (floor(c / q) or one off), on AVX-512 F and DQ, n a multiple
// of 8; the same words as the scalar loop.
void reduce_signed_avx512(const std::int64_t* c, std::size_t n, u64 q, u64* out);

// Rejection sampling's filter: words[0, count) masked to `mask`, those below q kept in order
// into out until `room` are kept; returns how many (at most room). AVX-512 F.
std::size_t keep_below_avx512(const u64* words, std::size_t count, u64 mask, u64 q, u64* out,
                              std::size_t room);

// True when this build has the AVX-512 kernels and the processor runs them.
bool rns_avx512_available();

// AVX-512 IFMA (52-bit multiply-accumulates) for primes q < kIfmaPrimeBound, words below q and
// sums of at most kIfmaMaxTerms products (below 2^104; the scaling's a - b + q below 3q):
// the AVX-512 entry points above hand such calls to these
// where the processor has IFMA (rns_ifma_available), and they give the same words. A product is
// two instructions instead of four 32 x 32-bit ones and their carries.
inline constexpr u64 kIfmaPrimeBound = u64{1} << 50;
inline constexpr std::size_t kIfmaMaxTerms = 16;
bool rns_ifma_available();
void inner_product_ifma(std::span<const u64* const> a, std::span<const unsigned> shift,
                        std::span<const u64* const> b0, std::span<const u64* const> b1,
                        std::size_t n, u64 q, u64* out0, u64* out1);
void multiply_ifma(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, bool accumulate);
// c below q (its 52-bit Shoup quotient is formed here).
void scale_ifma(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, u64 c);
void tensor_ifma(const u64* x0, const u64* x1, const u64* y0, const u64* y1, u64* d0, u64* d1,
                 u64* d2, std::size_t n, u64 q);

// convert_block_avx512 for rows below 2^52 (sources' primes below kIfmaPrimeBound) and any
// targets: a constant c = c1 2^52 + c0 times a row word is four IFMA products (two where c is
// below 2^52) into three accumulators, against four 32 x 32-bit products and their carries.
void convert_block_ifma(std::span<const u64* const> rows, std::size_t len,
                        std::span<const ConvertTarget> targets);

// True when the IFMA kernels take a call on q with `terms` products a sum.
inline bool use_ifma(u64 q, std::size_t terms = 1) {
  return q < kIfmaPrimeBound && terms <= kIfmaMaxTerms && rns_ifma_available();
}

}  // namespace safhire::ckks::simd
