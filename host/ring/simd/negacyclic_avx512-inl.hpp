// The AVX-512 butterflies of the negacyclic NTT, written once over the lane multiplier `Mul`:
// Mul64 (AVX-512F/DQ, any q < 2^62: the quotient from three 32 x 32-bit products) or Mul52
// (AVX-512 IFMA, q < 2^50: 52-bit Shoup quotients, one instruction per partial product). The
// levels with butterfly distance 8 or more run on whole registers with a broadcast twiddle (two
// levels per pass); the three levels of distance 4, 2 and 1 run on blocks of 16 words held in
// two registers, regrouped by permutes between levels. Rings below N = 16 use the scalar loops.
// Results are bit-identical to the scalar kernels (same ranges, fully reduced outputs).
// Included by one translation unit per instruction set, each compiled with its own flags.
#pragma once

#include <immintrin.h>

#include "simd/negacyclic_kernels.hpp"

namespace safhire::ring::simd::negacyclic_avx512 {
// Internal linkage: each including unit (compiled for its own instruction set) keeps its copy.
namespace {

using core::u64;
using V = __m512i;

// x >= bound ? x - bound : x, for x < 2 bound.
inline V reduce(V x, V bound) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, bound));
}

template <class Mul>
inline void forward_butterfly(V& x, V& y, V w, V wq, V q2, V q) {
  const V u = reduce(x, q2);
  const V t = Mul::lazy(y, w, wq, q);
  x = _mm512_add_epi64(u, t);
  y = _mm512_add_epi64(_mm512_sub_epi64(u, t), q2);
}

template <class Mul>
inline void inverse_butterfly(V& x, V& y, V w, V wq, V q2, V q) {
  const V s = _mm512_add_epi64(x, y);
  const V d = _mm512_add_epi64(_mm512_sub_epi64(x, y), q2);
  x = reduce(s, q2);
  y = Mul::lazy(d, w, wq, q);
}

inline V load(const u64* p) {
  return _mm512_loadu_si512(p);
}
inline void store(u64* p, V v) {
  _mm512_storeu_si512(p, v);
}
inline V set1(u64 v) {
  return _mm512_set1_epi64(static_cast<long long>(v));
}
inline V index(long long i0, long long i1, long long i2, long long i3, long long i4, long long i5,
               long long i6, long long i7) {
  return _mm512_setr_epi64(i0, i1, i2, i3, i4, i5, i6, i7);
}

template <class Mul>
void forward_level(u64* a, std::uint32_t m, std::uint32_t t, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  for (std::uint32_t i = 0; i < m; ++i) {
    const V w = set1(tb.forward[m + i]), wq = set1(Mul::forward_quotient(tb)[m + i]);
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < t; j += 8) {
      V x0 = load(x + j), x1 = load(x + j + t);
      forward_butterfly<Mul>(x0, x1, w, wq, q2, vq);
      store(x + j, x0);
      store(x + j + t, x1);
    }
  }
}

template <class Mul>
void forward_level_pair(u64* a, std::uint32_t m, std::uint32_t t, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  const std::uint32_t h = t / 2;
  for (std::uint32_t i = 0; i < m; ++i) {
    const V w1 = set1(tb.forward[m + i]), w1q = set1(Mul::forward_quotient(tb)[m + i]);
    const V w2 = set1(tb.forward[2 * (m + i)]), w2q = set1(Mul::forward_quotient(tb)[2 * (m + i)]);
    const V w3 = set1(tb.forward[2 * (m + i) + 1]);
    const V w3q = set1(Mul::forward_quotient(tb)[2 * (m + i) + 1]);
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < h; j += 8) {
      V x0 = load(x + j), x1 = load(x + j + h), x2 = load(x + j + t), x3 = load(x + j + t + h);
      forward_butterfly<Mul>(x0, x2, w1, w1q, q2, vq);
      forward_butterfly<Mul>(x1, x3, w1, w1q, q2, vq);
      forward_butterfly<Mul>(x0, x1, w2, w2q, q2, vq);
      forward_butterfly<Mul>(x2, x3, w3, w3q, q2, vq);
      store(x + j, x0);
      store(x + j + h, x1);
      store(x + j + t, x2);
      store(x + j + t + h, x3);
    }
  }
}

// The regroupings of a 16-word block (v0 = words 0..7, v1 = 8..15) between the last levels:
// distance 4 pairs X = (0-3, 8-11) with Y = (4-7, 12-15); distance 2 pairs (0,1,4,5,..) with
// (2,3,6,7,..); distance 1 evens with odds. The same two index vectors move one layout to the
// next in either direction; out_* interleave evens and odds back, evens/odds split a block.
struct Regroup {
  V lo4 = index(0, 1, 2, 3, 8, 9, 10, 11), hi4 = index(4, 5, 6, 7, 12, 13, 14, 15);
  V lo2 = index(0, 1, 8, 9, 4, 5, 12, 13), hi2 = index(2, 3, 10, 11, 6, 7, 14, 15);
  V lo1 = index(0, 8, 2, 10, 4, 12, 6, 14), hi1 = index(1, 9, 3, 11, 5, 13, 7, 15);
  V dup4 = index(0, 0, 0, 0, 1, 1, 1, 1), dup2 = index(0, 0, 1, 1, 2, 2, 3, 3);
  V out_lo = index(0, 8, 1, 9, 2, 10, 3, 11), out_hi = index(4, 12, 5, 13, 6, 14, 7, 15);
  V evens = index(0, 2, 4, 6, 8, 10, 12, 14), odds = index(1, 3, 5, 7, 9, 11, 13, 15);
};

inline void regroup(V& x, V& y, V lo, V hi) {
  const V nx = _mm512_permutex2var_epi64(x, lo, y);
  y = _mm512_permutex2var_epi64(x, hi, y);
  x = nx;
}

// Twiddles of `groups` consecutive groups starting at table index `first`, each repeated so that
// lane k gets the twiddle of its group (dup selects; groups == 8 is a plain load).
inline V twiddles(const std::vector<u64>& table, std::uint32_t first, V dup, bool plain) {
  const V v = load(table.data() + first);
  return plain ? v : _mm512_permutexvar_epi64(dup, v);
}

// Forward levels of distance 4, 2, 1 on each 16-word block, then the reduction to [0, q).
template <class Mul>
void forward_last_three(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  const Regroup r;
  const std::uint32_t m4 = n / 8, m2 = n / 4, m1 = n / 2;
  for (std::uint32_t b = 0; b < n; b += 16) {
    V x = load(a + b), y = load(a + b + 8);
    regroup(x, y, r.lo4, r.hi4);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m4 + b / 8, r.dup4, false),
                           twiddles(Mul::forward_quotient(tb), m4 + b / 8, r.dup4, false), q2, vq);
    regroup(x, y, r.lo2, r.hi2);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m2 + b / 4, r.dup2, false),
                           twiddles(Mul::forward_quotient(tb), m2 + b / 4, r.dup2, false), q2, vq);
    regroup(x, y, r.lo1, r.hi1);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m1 + b / 2, r.dup2, true),
                           twiddles(Mul::forward_quotient(tb), m1 + b / 2, r.dup2, true), q2, vq);
    x = reduce(reduce(x, q2), vq);
    y = reduce(reduce(y, q2), vq);
    store(a + b, _mm512_permutex2var_epi64(x, r.out_lo, y));
    store(a + b + 8, _mm512_permutex2var_epi64(x, r.out_hi, y));
  }
}

template <class Mul>
void forward(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (n < 16) {
    negacyclic_scalar::forward(a, n, log_n, q, tb);
    return;
  }
  // Levels of distance n/2 .. 8: log_n - 3 of them, one radix-2 first when that is odd.
  std::uint32_t m = 1, t = n / 2;
  if ((log_n - 3) % 2 == 1) {
    forward_level<Mul>(a, m, t, q, tb);
    m *= 2;
    t /= 2;
  }
  for (; t >= 16; m *= 4, t /= 4)
    forward_level_pair<Mul>(a, m, t, q, tb);
  forward_last_three<Mul>(a, n, q, tb);
}

// Inverse levels of distance 1, 2, 4 on each 16-word block (outputs in [0, 2q)).
template <class Mul>
void inverse_first_three(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  const Regroup r;
  const std::uint32_t h1 = n / 2, h2 = n / 4, h4 = n / 8;
  for (std::uint32_t b = 0; b < n; b += 16) {
    V x = load(a + b), y = load(a + b + 8);
    regroup(x, y, r.evens, r.odds);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h1 + b / 2, r.dup2, true),
                           twiddles(Mul::inverse_quotient(tb), h1 + b / 2, r.dup2, true), q2, vq);
    regroup(x, y, r.lo1, r.hi1);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h2 + b / 4, r.dup2, false),
                           twiddles(Mul::inverse_quotient(tb), h2 + b / 4, r.dup2, false), q2, vq);
    regroup(x, y, r.lo2, r.hi2);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h4 + b / 8, r.dup4, false),
                           twiddles(Mul::inverse_quotient(tb), h4 + b / 8, r.dup4, false), q2, vq);
    regroup(x, y, r.lo4, r.hi4);
    store(a + b, x);
    store(a + b + 8, y);
  }
}

template <class Mul>
void inverse_level(u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  for (std::uint32_t i = 0; i < h; ++i) {
    const V w = set1(tb.inverse[h + i]), wq = set1(Mul::inverse_quotient(tb)[h + i]);
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < t; j += 8) {
      V x0 = load(x + j), x1 = load(x + j + t);
      inverse_butterfly<Mul>(x0, x1, w, wq, q2, vq);
      store(x + j, x0);
      store(x + j + t, x1);
    }
  }
}

template <class Mul>
void inverse_level_pair(u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  for (std::uint32_t i = 0; i < h / 2; ++i) {
    const V w1 = set1(tb.inverse[h + 2 * i]), w1q = set1(Mul::inverse_quotient(tb)[h + 2 * i]);
    const V w2 = set1(tb.inverse[h + 2 * i + 1]);
    const V w2q = set1(Mul::inverse_quotient(tb)[h + 2 * i + 1]);
    const V w3 = set1(tb.inverse[h / 2 + i]), w3q = set1(Mul::inverse_quotient(tb)[h / 2 + i]);
    u64* x = a + 4 * i * t;
    for (std::uint32_t j = 0; j < t; j += 8) {
      V x0 = load(x + j), x1 = load(x + j + t), x2 = load(x + j + 2 * t), x3 = load(x + j + 3 * t);
      inverse_butterfly<Mul>(x0, x1, w1, w1q, q2, vq);
      inverse_butterfly<Mul>(x2, x3, w2, w2q, q2, vq);
      inverse_butterfly<Mul>(x0, x2, w3, w3q, q2, vq);
      inverse_butterfly<Mul>(x1, x3, w3, w3q, q2, vq);
      store(x + j, x0);
      store(x + j + t, x1);
      store(x + j + 2 * t, x2);
      store(x + j + 3 * t, x3);
    }
  }
}

template <class Mul>
void inverse_last(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), q2 = set1(2 * q);
  const V ni = set1(tb.n_inv), niq = set1(Mul::n_inv_quotient(tb));
  const V wl = set1(tb.last_inverse), wlq = set1(Mul::last_inverse_quotient(tb));
  const std::uint32_t t = n / 2;
  for (std::uint32_t j = 0; j < t; j += 8) {
    const V x = load(a + j), y = load(a + j + t);
    const V s = Mul::lazy(_mm512_add_epi64(x, y), ni, niq, vq);
    const V d = Mul::lazy(_mm512_add_epi64(_mm512_sub_epi64(x, y), q2), wl, wlq, vq);
    store(a + j, reduce(s, vq));
    store(a + j + t, reduce(d, vq));
  }
}

template <class Mul>
void inverse(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (n < 16) {
    negacyclic_scalar::inverse(a, n, log_n, q, tb);
    return;
  }
  inverse_first_three<Mul>(a, n, q, tb);
  // Levels of distance 8 .. n/4 (h = n/16 .. 2 groups), then the last with N^-1.
  std::uint32_t h = n / 16, t = 8;
  std::uint32_t levels = log_n - 4;
  for (; levels >= 2; levels -= 2, h /= 4, t *= 4)
    inverse_level_pair<Mul>(a, h, t, q, tb);
  if (levels == 1) inverse_level<Mul>(a, h, t, q, tb);
  inverse_last<Mul>(a, n, q, tb);
}

}  // namespace
}  // namespace safhire::ring::simd::negacyclic_avx512
