// AVX-512 F/DQ helpers shared by the RNS kernels' translation units (each compiled with its own
// instruction-set flags, each keeping its own copy: internal linkage).
#pragma once

#include <immintrin.h>

#include "safhire/core/modarith.hpp"

namespace safhire::ckks::simd {
namespace {

using core::u64;
using V = __m512i;

inline V set1(u64 v) {
  return _mm512_set1_epi64(static_cast<long long>(v));
}

// hi64(a b) lane by lane, from the 32-bit halves.
inline V mul_hi64(V a, V b) {
  const V a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
  const V lolo = _mm512_mul_epu32(a, b);
  const V lohi = _mm512_mul_epu32(a, b_hi);
  const V hilo = _mm512_mul_epu32(a_hi, b);
  const V hihi = _mm512_mul_epu32(a_hi, b_hi);
  const V mid = _mm512_add_epi64(lohi, _mm512_srli_epi64(lolo, 32));  // < 2^64
  const V mid2 = _mm512_add_epi64(hilo, _mm512_and_si512(mid, set1(0xffffffff)));
  return _mm512_add_epi64(_mm512_add_epi64(hihi, _mm512_srli_epi64(mid, 32)),
                          _mm512_srli_epi64(mid2, 32));
}

// y w mod q in [0, 2q) for any y (Shoup), as core::mul_shoup_lazy.
inline V lazy(V y, V w, V wq, V q) {
  return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(mul_hi64(y, wq), q));
}

// x >= bound ? x - bound : x, for x < 2 bound.
inline V reduce(V x, V bound) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, bound));
}

// (hi 2^64 + lo) mod p in [0, p) for any two words, as core::reduce_double_word computes it:
// hi 2^64 by a Shoup product with r = 2^64 mod p, lo by one with the quotient of 1, both in
// [0, 2p), then two conditional subtractions.
inline V reduce_words(V hi, V lo, V p, V p2, V r, V rq, V ratio) {
  const V high = lazy(hi, r, rq, p);
  const V low = _mm512_sub_epi64(lo, _mm512_mullo_epi64(mul_hi64(lo, ratio), p));
  return reduce(reduce(_mm512_add_epi64(high, low), p2), p);
}

}  // namespace
}  // namespace safhire::ckks::simd
