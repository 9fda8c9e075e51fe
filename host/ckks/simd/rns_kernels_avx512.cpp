// The AVX-512 F/DQ multiply-accumulates of base conversion and of the key-switching inner
// product. Per eight coefficients, with y = a1 2^32 + a0 and c = b1 2^32 + b0 the factors of a
// product (a1, b1 < 2^29 below 2^61), the product is a0 b0 + (a0 b1 + a1 b0) 2^32 + a1 b1 2^64,
// four vpmuludq; the sum over the products is kept as L + (M + M2) 2^32 + H 2^64 with
//   L  += low half of a0 b0           (< 2^32 a term),
//   M  += high half of a0 b0 + a0 b1  (< 2^61 + 2^32 a term: carried into H every 7 terms),
//   M2 += a1 b0                       (< 2^61 a term: likewise),
//   H  += a1 b1,
// then assembled into two words and reduced as reduce_double_word does (two Shoup products).
#include <immintrin.h>

#include "simd/rns_avx512-inl.hpp"
#include "simd/rns_kernels.hpp"

namespace safhire::ckks::simd {

namespace {

// A sum of products of words below 2^61, L + (M + M2) 2^32 + H 2^64 lane by lane (see above):
// add() one product given its factors' 32-bit halves, value() reduced modulo p.
struct WideSum {
  V L = _mm512_setzero_si512(), M = L, M2 = L, H = L;

  // a0, b0: the words (vpmuludq reads their low halves); a1, b1: their high halves.
  void add(V a0, V a1, V b0, V b1, V low32) {
    const V p00 = _mm512_mul_epu32(a0, b0);
    L = _mm512_add_epi64(L, _mm512_and_si512(p00, low32));
    M = _mm512_add_epi64(M, _mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_mul_epu32(a0, b1)));
    M2 = _mm512_add_epi64(M2, _mm512_mul_epu32(a1, b0));
    H = _mm512_add_epi64(H, _mm512_mul_epu32(a1, b1));
  }
  // Moves M's and M2's high halves into H: needed at least every 7 products.
  void carry(V low32) {
    H = _mm512_add_epi64(H, _mm512_add_epi64(_mm512_srli_epi64(M, 32), _mm512_srli_epi64(M2, 32)));
    M = _mm512_and_si512(M, low32);
    M2 = _mm512_and_si512(M2, low32);
  }
  // The sum modulo p as reduce_double_word computes it: two words, two Shoup products.
  V value(V low32, V p, V p2, V r, V rq, V ratio) {
    carry(low32);
    const V mid = _mm512_add_epi64(_mm512_add_epi64(M, M2), _mm512_srli_epi64(L, 32));  // < 3 2^32
    const V hi = _mm512_add_epi64(H, _mm512_srli_epi64(mid, 32));
    const V lo = _mm512_or_si512(_mm512_and_si512(L, low32), _mm512_slli_epi64(mid, 32));
    return reduce_words(hi, lo, p, p2, r, rq, ratio);
  }
};

}  // namespace

bool rns_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return ok;
}

void reduce_signed_avx512(const std::int64_t* c, std::size_t n, u64 q, u64* out) {
  // |c / q| < 2^50 (q > 2^13), and its estimate carries three roundings of relative size 2^-53:
  // an error below 1/2, so floor() lands on floor(c / q) or next to it, and r = c - e q (exact
  // modulo 2^64) lies in [-q, 2q).
  const V vq = set1(q), zero = _mm512_setzero_si512();
  const __m512d inv = _mm512_set1_pd(1.0 / static_cast<double>(q));
  for (std::size_t t = 0; t < n; t += 8) {
    const V x = _mm512_loadu_si512(c + t);
    const __m512d quotient = _mm512_roundscale_pd(_mm512_mul_pd(_mm512_cvtepi64_pd(x), inv),
                                                  _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    V r = _mm512_sub_epi64(x, _mm512_mullo_epi64(_mm512_cvtpd_epi64(quotient), vq));
    r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, zero), r, vq);
    _mm512_storeu_si512(out + t, reduce(r, vq));
  }
}

std::size_t keep_below_avx512(const u64* words, std::size_t count, u64 mask, u64 q, u64* out,
                              std::size_t room) {
  const V vm = set1(mask), vq = set1(q);
  std::size_t kept = 0, i = 0;
  for (; i + 8 <= count && kept + 8 <= room; i += 8) {
    const V x = _mm512_and_si512(_mm512_loadu_si512(words + i), vm);
    const __mmask8 below = _mm512_cmplt_epu64_mask(x, vq);
    _mm512_storeu_si512(out + kept, _mm512_maskz_compress_epi64(below, x));
    kept += static_cast<std::size_t>(__builtin_popcount(below));
  }
  for (; i < count && kept < room; ++i) {
    const u64 x = words[i] & mask;
    out[kept] = x;
    kept += x < q ? 1 : 0;
  }
  return kept;
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
      WideSum sum;
      for (std::size_t i = 0; i < terms; ++i) {
        const V y = _mm512_loadu_si512(rows[i] + t);
        sum.add(y, _mm512_srli_epi64(y, 32), set1(b0[i]), set1(b1[i]), low32);
        if (i % 7 == 6) sum.carry(low32);
      }
      _mm512_storeu_si512(target.out + t, sum.value(low32, p, p2, r, rq, ratio));
    }
  }
}

void inner_product_avx512(std::span<const u64* const> a, std::span<const unsigned> shift,
                          std::span<const u64* const> b0, std::span<const u64* const> b1,
                          std::size_t n, u64 q, core::WideReducer reducer, u64* out0, u64* out1) {
  if (use_ifma(q, a.size())) return inner_product_ifma(a, shift, b0, b1, n, q, out0, out1);
  const V low32 = set1(0xffffffff), p = set1(q), p2 = set1(2 * q);
  const V r = set1(reducer.r), rq = set1(reducer.r_quotient), ratio = set1(reducer.ratio);
  const std::size_t pairs = a.size();
  for (std::size_t t = 0; t < n; t += 8) {
    WideSum s0, s1;
    for (std::size_t j = 0; j < pairs; ++j) {
      const V x = shift[j] == 0 ? _mm512_loadu_si512(a[j] + t) : set1(a[j][t >> shift[j]]);
      const V xh = _mm512_srli_epi64(x, 32);
      const V y0 = _mm512_loadu_si512(b0[j] + t);
      s0.add(x, xh, y0, _mm512_srli_epi64(y0, 32), low32);
      if (out1 != nullptr) {
        const V y1 = _mm512_loadu_si512(b1[j] + t);
        s1.add(x, xh, y1, _mm512_srli_epi64(y1, 32), low32);
      }
      if (j % 7 == 6) {
        s0.carry(low32);
        s1.carry(low32);
      }
    }
    _mm512_storeu_si512(out0 + t, s0.value(low32, p, p2, r, rq, ratio));
    if (out1 != nullptr) _mm512_storeu_si512(out1 + t, s1.value(low32, p, p2, r, rq, ratio));
  }
}

void multiply_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q,
                     core::WideReducer reducer, bool accumulate) {
  if (use_ifma(q)) return multiply_ifma(a, b, out, n, q, accumulate);
  const V low32 = set1(0xffffffff), p = set1(q), p2 = set1(2 * q);
  const V r = set1(reducer.r), rq = set1(reducer.r_quotient), ratio = set1(reducer.ratio);
  for (std::size_t t = 0; t < n; t += 8) {
    const V x = _mm512_loadu_si512(a + t), y = _mm512_loadu_si512(b + t);
    WideSum sum;
    sum.add(x, _mm512_srli_epi64(x, 32), y, _mm512_srli_epi64(y, 32), low32);
    V v = sum.value(low32, p, p2, r, rq, ratio);
    if (accumulate) v = reduce(_mm512_add_epi64(v, _mm512_loadu_si512(out + t)), p);
    _mm512_storeu_si512(out + t, v);
  }
}

void scale_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q,
                  core::ShoupConst<u64> c) {
  if (use_ifma(q)) return scale_ifma(a, b, out, n, q, c.value);
  const V p = set1(q), w = set1(c.value), wq = set1(c.quotient);
  for (std::size_t t = 0; t < n; t += 8) {
    V x = _mm512_loadu_si512(a + t);
    if (b != nullptr) x = _mm512_sub_epi64(_mm512_add_epi64(x, p), _mm512_loadu_si512(b + t));
    _mm512_storeu_si512(out + t, reduce(lazy(x, w, wq, p), p));
  }
}

void add_sub_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, bool subtract) {
  const V p = set1(q);
  if (subtract) {
    for (std::size_t t = 0; t < n; t += 8) {
      const V x = _mm512_loadu_si512(a + t), y = _mm512_loadu_si512(b + t);
      _mm512_storeu_si512(out + t, reduce(_mm512_sub_epi64(_mm512_add_epi64(x, p), y), p));
    }
  } else {
    for (std::size_t t = 0; t < n; t += 8) {
      const V x = _mm512_loadu_si512(a + t), y = _mm512_loadu_si512(b + t);
      _mm512_storeu_si512(out + t, reduce(_mm512_add_epi64(x, y), p));
    }
  }
}

void tensor_avx512(const u64* x0, const u64* x1, const u64* y0, const u64* y1, u64* d0, u64* d1,
                   u64* d2, std::size_t n, u64 q, core::WideReducer reducer) {
  if (use_ifma(q, 2)) return tensor_ifma(x0, x1, y0, y1, d0, d1, d2, n, q);
  const V low32 = set1(0xffffffff), p = set1(q), p2 = set1(2 * q);
  const V r = set1(reducer.r), rq = set1(reducer.r_quotient), ratio = set1(reducer.ratio);
  const bool square = x0 == y0 && x1 == y1;
  for (std::size_t t = 0; t < n; t += 8) {
    const V a0 = _mm512_loadu_si512(x0 + t), a1 = _mm512_loadu_si512(x1 + t);
    const V a0h = _mm512_srli_epi64(a0, 32), a1h = _mm512_srli_epi64(a1, 32);
    V b0 = a0, b1 = a1, b0h = a0h, b1h = a1h;
    if (!square) {
      b0 = _mm512_loadu_si512(y0 + t);
      b1 = _mm512_loadu_si512(y1 + t);
      b0h = _mm512_srli_epi64(b0, 32);
      b1h = _mm512_srli_epi64(b1, 32);
    }
    WideSum s0, s1, s2;
    s0.add(a0, a0h, b0, b0h, low32);
    s2.add(a1, a1h, b1, b1h, low32);
    s1.add(a0, a0h, b1, b1h, low32);
    V cross;
    if (square) {
      const V once = s1.value(low32, p, p2, r, rq, ratio);
      cross = reduce(_mm512_add_epi64(once, once), p);
    } else {
      s1.add(a1, a1h, b0, b0h, low32);
      cross = s1.value(low32, p, p2, r, rq, ratio);
    }
    _mm512_storeu_si512(d0 + t, s0.value(low32, p, p2, r, rq, ratio));
    _mm512_storeu_si512(d1 + t, cross);
    _mm512_storeu_si512(d2 + t, s2.value(low32, p, p2, r, rq, ratio));
  }
}

void rounded_quotients_avx512(std::span<const u64* const> rows, const double* inv_q,
                              std::size_t len, u64* v) {
  const __m512d half = _mm512_set1_pd(0.5);
  const V one = set1(1);
  for (std::size_t t = 0; t < len; t += 8) {
    __m512d sum = _mm512_setzero_pd();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const __m512d y = _mm512_cvtepu64_pd(_mm512_loadu_si512(rows[i] + t));
      sum = _mm512_add_pd(sum, _mm512_mul_pd(y, _mm512_set1_pd(inv_q[i])));
    }
    // round_nonnegative: the truncation, plus one where the fraction is at least a half.
    const V whole = _mm512_cvttpd_epu64(sum);
    const __m512d fraction = _mm512_sub_pd(sum, _mm512_cvtepu64_pd(whole));
    const __mmask8 up = _mm512_cmp_pd_mask(fraction, half, _CMP_GE_OQ);
    _mm512_storeu_si512(v + t, _mm512_mask_add_epi64(whole, up, whole, one));
  }
}

void lift_one_avx512(const u64* y, const u64* wrap, u64* out, std::size_t n, u64 p,
                     core::ShoupConst<u64> one, u64 q_mod) {
  const V vp = set1(p), w = set1(one.value), wq = set1(one.quotient), qm = set1(q_mod);
  for (std::size_t t = 0; t < n; t += 8) {
    const V r = reduce(lazy(_mm512_loadu_si512(y + t), w, wq, vp), vp);
    const V d = _mm512_sub_epi64(r, _mm512_and_si512(_mm512_loadu_si512(wrap + t), qm));
    _mm512_storeu_si512(out + t, _mm512_min_epu64(d, _mm512_add_epi64(d, vp)));
  }
}

}  // namespace safhire::ckks::simd
