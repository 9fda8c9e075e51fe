// The AVX-512 IFMA multiply-accumulates of the RNS layer, for primes q < 2^50 (rns_kernels.hpp:
// the AVX-512 entry points come here for such primes where the processor has IFMA). A product
// of two words below q is two instructions, its low and high 52 bits accumulated into two
// registers (vpmadd52luq, vpmadd52huq), against four 32 x 32-bit products and their carries on
// AVX-512 F. A sum S = hi 2^52 + lo of at most kIfmaMaxTerms products is below 2^104, so
//   h = hi + (lo >> 52) = floor(S / 2^52) < 2^52,   l = lo mod 2^52,
//   S mod q = (h (2^52 mod q) + l) mod q,
// one 52-bit Shoup product of h and one Shoup reduction of l, each in [0, 2q), then two
// conditional subtractions. Outputs are fully reduced: the words of every other kernel.
#include <immintrin.h>

#include "simd/rns_avx512-inl.hpp"
#include "simd/rns_kernels.hpp"

namespace safhire::ckks::simd {

namespace {

constexpr u64 kMask52 = (u64{1} << 52) - 1;

inline V load(const u64* p) {
  return _mm512_loadu_si512(p);
}

// floor(w 2^52 / q), the 52-bit Shoup quotient of w < q.
u64 quotient52(u64 w, u64 q) {
  return static_cast<u64>((static_cast<core::u128>(w) << 52) / q);
}

// A prime's constants, broadcast.
struct Prime52 {
  V q, q2, minus_q, mask, c, cq, one_q;
  explicit Prime52(u64 p)
      : q(set1(p)),
        q2(set1(2 * p)),
        minus_q(set1((u64{1} << 52) - p)),
        mask(set1(kMask52)),
        c(set1((u64{1} << 52) % p)),
        cq(set1(quotient52((u64{1} << 52) % p, p))),
        one_q(set1(quotient52(1, p))) {}
};

// y w mod q in [0, 2q) for y < 2^52 and w < q (Shoup): y w - floor(y w' / 2^52) q, which is
// below 2q < 2^52 and so exact modulo 2^52; the correction accumulates onto the product as
// + estimate (2^52 - q), as the NTT's IFMA multiplier does.
inline V lazy52(V y, V w, V wq, const Prime52& k) {
  const V zero = _mm512_setzero_si512();
  const V estimate = _mm512_madd52hi_epu64(zero, y, wq);
  const V product = _mm512_madd52lo_epu64(zero, y, w);
  return _mm512_and_si512(_mm512_madd52lo_epu64(product, estimate, k.minus_q), k.mask);
}

// A sum of at most kIfmaMaxTerms products of words below q, lane by lane.
struct Sum52 {
  V lo = _mm512_setzero_si512(), hi = lo;

  void add(V a, V b) {
    lo = _mm512_madd52lo_epu64(lo, a, b);
    hi = _mm512_madd52hi_epu64(hi, a, b);
  }

  // The sum modulo q, in [0, q).
  V value(const Prime52& k) const {
    const V zero = _mm512_setzero_si512();
    const V h = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));
    const V l = _mm512_and_si512(lo, k.mask);
    const V high = lazy52(h, k.c, k.cq, k);
    // l - floor(l floor(2^52 / q) / 2^52) q: the quotient is at most l / q, so the product is at
    // most l and the difference needs no mask.
    const V low = _mm512_sub_epi64(
        l, _mm512_madd52lo_epu64(zero, _mm512_madd52hi_epu64(zero, l, k.one_q), k.q));
    return reduce(reduce(_mm512_add_epi64(high, low), k.q2), k.q);
  }
};

}  // namespace

bool rns_ifma_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512ifma");
  return ok;
}

void inner_product_ifma(std::span<const u64* const> a, std::span<const unsigned> shift,
                        std::span<const u64* const> b0, std::span<const u64* const> b1,
                        std::size_t n, u64 q, u64* out0, u64* out1) {
  const Prime52 k(q);
  const std::size_t pairs = a.size();
  for (std::size_t t = 0; t < n; t += 8) {
    Sum52 s0, s1;
    for (std::size_t j = 0; j < pairs; ++j) {
      const V x = shift[j] == 0 ? load(a[j] + t) : set1(a[j][t >> shift[j]]);
      s0.add(x, load(b0[j] + t));
      if (out1 != nullptr) s1.add(x, load(b1[j] + t));
    }
    _mm512_storeu_si512(out0 + t, s0.value(k));
    if (out1 != nullptr) _mm512_storeu_si512(out1 + t, s1.value(k));
  }
}

void multiply_ifma(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, bool accumulate) {
  const Prime52 k(q);
  for (std::size_t t = 0; t < n; t += 8) {
    Sum52 sum;
    sum.add(load(a + t), load(b + t));
    V v = sum.value(k);
    if (accumulate) v = reduce(_mm512_add_epi64(v, load(out + t)), k.q);
    _mm512_storeu_si512(out + t, v);
  }
}

void scale_ifma(const u64* a, const u64* b, u64* out, std::size_t n, u64 q, u64 c) {
  const Prime52 k(q);
  const V w = set1(c), wq = set1(quotient52(c, q));
  for (std::size_t t = 0; t < n; t += 8) {
    V x = load(a + t);  // a - b + q < 2q
    if (b != nullptr) x = _mm512_sub_epi64(_mm512_add_epi64(x, k.q), load(b + t));
    _mm512_storeu_si512(out + t, reduce(lazy52(x, w, wq, k), k.q));
  }
}

void tensor_ifma(const u64* x0, const u64* x1, const u64* y0, const u64* y1, u64* d0, u64* d1,
                 u64* d2, std::size_t n, u64 q) {
  const Prime52 k(q);
  const bool square = x0 == y0 && x1 == y1;
  for (std::size_t t = 0; t < n; t += 8) {
    const V a0 = load(x0 + t), a1 = load(x1 + t);
    const V b0 = square ? a0 : load(y0 + t), b1 = square ? a1 : load(y1 + t);
    Sum52 s0, s1, s2;
    s0.add(a0, b0);
    s1.add(a0, b1);
    s1.add(a1, b0);  // a0 a1 twice for a square
    s2.add(a1, b1);
    _mm512_storeu_si512(d0 + t, s0.value(k));
    _mm512_storeu_si512(d1 + t, s1.value(k));
    _mm512_storeu_si512(d2 + t, s2.value(k));
  }
}

// Four products into three accumulators a term (two where the target's constants are below 2^52,
// Wide false); at most kMaxVectorTerms terms keep each accumulator below 2^58.
template <bool Wide>
void convert_target_ifma(std::span<const u64* const> rows, std::size_t len,
                         const ConvertTarget& target, const u64* c0, const u64* c1) {
  const std::size_t terms = rows.size();
  const V p = set1(target.p), p2 = set1(2 * target.p), one = set1(1);
  const V r = set1(target.reducer.r), rq = set1(target.reducer.r_quotient);
  const V ratio = set1(target.reducer.ratio);
  for (std::size_t t = 0; t < len; t += 8) {
    V a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0;
    for (std::size_t i = 0; i < terms; ++i) {
      const V y = load(rows[i] + t), k0 = set1(c0[i]);
      a0 = _mm512_madd52lo_epu64(a0, y, k0);
      a1 = _mm512_madd52hi_epu64(a1, y, k0);
      if constexpr (Wide) {
        const V k1 = set1(c1[i]);
        a1 = _mm512_madd52lo_epu64(a1, y, k1);
        a2 = _mm512_madd52hi_epu64(a2, y, k1);
      }
    }
    // a0 + a1 2^52 + a2 2^104 as hi 2^64 + lo.
    const V lo = _mm512_add_epi64(a0, _mm512_slli_epi64(a1, 52));
    V hi = _mm512_add_epi64(_mm512_srli_epi64(a1, 12), _mm512_slli_epi64(a2, 40));
    hi = _mm512_mask_add_epi64(hi, _mm512_cmplt_epu64_mask(lo, a0), hi, one);
    _mm512_storeu_si512(target.out + t, reduce_words(hi, lo, p, p2, r, rq, ratio));
  }
}

void convert_block_ifma(std::span<const u64* const> rows, std::size_t len,
                        std::span<const ConvertTarget> targets) {
  const std::size_t terms = rows.size();
  u64 c0[kMaxVectorTerms], c1[kMaxVectorTerms];
  for (const ConvertTarget& target : targets) {
    bool wide = false;
    for (std::size_t i = 0; i < terms; ++i) {
      c0[i] = target.constants[i] & kMask52;
      c1[i] = target.constants[i] >> 52;
      wide = wide || c1[i] != 0;
    }
    if (wide) {
      convert_target_ifma<true>(rows, len, target, c0, c1);
    } else {
      convert_target_ifma<false>(rows, len, target, c0, c1);
    }
  }
}

}  // namespace safhire::ckks::simd
