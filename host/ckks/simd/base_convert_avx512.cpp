// The AVX-512 F/DQ multiply-accumulate of base conversion. Per eight coefficients and one target,
// with y = a1 2^32 + a0 a row's words and c = b1 2^32 + b0 its constant (a1, b1 < 2^29 below
// 2^61), the product is a0 b0 + (a0 b1 + a1 b0) 2^32 + a1 b1 2^64, four vpmuludq; the sum over
// the rows is kept as L + (M + M2) 2^32 + H 2^64 with
//   L  += low half of a0 b0           (< 2^32 a term),
//   M  += high half of a0 b0 + a0 b1  (< 2^61 + 2^32 a term: carried into H every 7 terms),
//   M2 += a1 b0                       (< 2^61 a term: likewise),
//   H  += a1 b1,
// then assembled into two words and reduced as reduce_double_word does (two Shoup products).
#include <immintrin.h>

#include "simd/base_convert.hpp"

namespace safhire::ckks::simd {

namespace {

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

}  // namespace

bool convert_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return ok;
}

void convert_block_avx512(std::span<const u64* const> rows, std::size_t len,
                          std::span<const ConvertTarget> targets) {
  const std::size_t terms = rows.size();
  const V low32 = set1(0xffffffff);
  u64 b0[kMaxVectorTerms], b1[kMaxVectorTerms];
  for (const ConvertTarget& target : targets) {
    for (std::size_t i = 0; i < terms; ++i) {
      b0[i] = target.constants[i] & 0xffffffff;
      b1[i] = target.constants[i] >> 32;
    }
    const V p = set1(target.p), p2 = set1(2 * target.p);
    const V r = set1(target.reducer.r), rq = set1(target.reducer.r_quotient);
    const V ratio = set1(target.reducer.ratio);
    for (std::size_t t = 0; t < len; t += 8) {
      V L = _mm512_setzero_si512(), M = L, M2 = L, H = L;
      for (std::size_t i = 0; i < terms; ++i) {
        const V y = _mm512_loadu_si512(rows[i] + t);
        const V yh = _mm512_srli_epi64(y, 32);
        const V c0 = set1(b0[i]), c1 = set1(b1[i]);
        const V p00 = _mm512_mul_epu32(y, c0);
        L = _mm512_add_epi64(L, _mm512_and_si512(p00, low32));
        M = _mm512_add_epi64(M,
                             _mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_mul_epu32(y, c1)));
        M2 = _mm512_add_epi64(M2, _mm512_mul_epu32(yh, c0));
        H = _mm512_add_epi64(H, _mm512_mul_epu32(yh, c1));
        if (i % 7 == 6) {
          H = _mm512_add_epi64(
              H, _mm512_add_epi64(_mm512_srli_epi64(M, 32), _mm512_srli_epi64(M2, 32)));
          M = _mm512_and_si512(M, low32);
          M2 = _mm512_and_si512(M2, low32);
        }
      }
      // Two words: lo = L mod 2^32 + (M mod 2^32) 2^32, hi = H + the carries.
      H = _mm512_add_epi64(H,
                           _mm512_add_epi64(_mm512_srli_epi64(M, 32), _mm512_srli_epi64(M2, 32)));
      M = _mm512_add_epi64(
          _mm512_add_epi64(_mm512_and_si512(M, low32), _mm512_and_si512(M2, low32)),
          _mm512_srli_epi64(L, 32));  // < 3 2^32
      H = _mm512_add_epi64(H, _mm512_srli_epi64(M, 32));
      const V lo = _mm512_or_si512(_mm512_and_si512(L, low32), _mm512_slli_epi64(M, 32));
      // reduce_double_word: H (2^64 mod p) + lo mod p, each lazy, then fully reduced.
      const V high = lazy(H, r, rq, p);
      const V low = _mm512_sub_epi64(lo, _mm512_mullo_epi64(mul_hi64(lo, ratio), p));
      const V sum = reduce(reduce(_mm512_add_epi64(high, low), p2), p);
      _mm512_storeu_si512(target.out + t, sum);
    }
  }
}

}  // namespace safhire::ckks::simd
