// The AVX-512 butterflies of the negacyclic NTT, written once over the lane multiplier `Mul`:
// Mul64 (AVX-512F/DQ, any q < 2^62: the quotient from three 32 x 32-bit products) or Mul52
// (AVX-512 IFMA, q < 2^50: 52-bit Shoup quotients, one instruction per partial product). The
// levels with butterfly distance 16 or more run on whole registers with broadcast twiddles, up to
// three levels per pass over the data (a radix-8 network in 8 registers); the four levels of
// distance 8, 4, 2 and 1 run on blocks of 16 words held in two registers, regrouped by permutes
// between levels. At N = 2^16 a transform is five passes over the data. Rings below N = 16 use the
// scalar loops. Results are bit-identical to the scalar kernels (fully reduced outputs; between
// levels the values may range wider, see forward_butterfly). Included by one translation unit per
// instruction set, each compiled with its own flags.
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

// The forward values stay in [0, 2s) between levels, s = Mul::kSpread q: Harvey's s = 2q where
// the multiplier's products are in [0, 2q), s = 4q where it leaves them in [0, 4q) (two
// instructions fewer a butterfly, for q < 2^61). x is reduced to [0, s), t = w y is in [0, s),
// and the outputs x + t and x - t + s are in [0, 2s).
template <class Mul>
inline void forward_butterfly(V& x, V& y, V w, V wq, V s, V q) {
  const V u = reduce(x, s);
  const V t = Mul::product(y, w, wq, q);
  x = _mm512_add_epi64(u, t);
  y = _mm512_add_epi64(_mm512_sub_epi64(u, t), s);
}

// A forward value in [0, 2s) reduced to [0, q).
template <class Mul>
inline V forward_final(V x, V s, V q) {
  x = reduce(x, s);
  if constexpr (Mul::kSpread == 4) x = reduce(x, _mm512_add_epi64(q, q));
  return reduce(x, q);
}

// The inverse values stay in [0, s) between levels (s = Mul::kSpread q as above): x + y reduced
// to [0, s), and (x - y + s) w in [0, s).
template <class Mul>
inline void inverse_butterfly(V& x, V& y, V w, V wq, V s, V q) {
  const V sum = _mm512_add_epi64(x, y);
  const V d = _mm512_add_epi64(_mm512_sub_epi64(x, y), s);
  x = reduce(sum, s);
  y = Mul::product(d, w, wq, q);
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

// R forward levels in one pass over the data (radix 2^R): m groups of 2t words, then the
// levels of distance t, t/2, .., t/2^(R-1). The K = 2^R registers of a butterfly network are
// words j, j + s, .., j + (K-1) s of a group (s the last level's distance), so every value is
// loaded and stored once per pass instead of once per level.
template <class Mul, int R>
void forward_levels(u64* a, std::uint32_t m, std::uint32_t t, u64 q, const Tables& tb) {
  constexpr int K = 1 << R;
  const V vq = set1(q), spread = set1(Mul::kSpread * q);
  const std::uint32_t s = t >> (R - 1);
  for (std::uint32_t i = 0; i < m; ++i) {
    // The K - 1 twiddles of the network: level l's group g at table index ((m + i) << l) + g.
    V w[K - 1], wq[K - 1];
#pragma GCC unroll 16
    for (int l = 0; l < R; ++l) {
#pragma GCC unroll 16
      for (int g = 0; g < (1 << l); ++g) {
        const std::size_t at = (static_cast<std::size_t>(m + i) << l) + g;
        w[(1 << l) - 1 + g] = set1(tb.forward[at]);
        wq[(1 << l) - 1 + g] = set1(Mul::forward_quotient(tb)[at]);
      }
    }
    u64* x = a + 2 * static_cast<std::size_t>(i) * t;
    for (std::uint32_t j = 0; j < s; j += 8) {
      V v[K];
#pragma GCC unroll 16
      for (int k = 0; k < K; ++k)
        v[k] = load(x + j + k * s);
#pragma GCC unroll 16
      for (int l = 0; l < R; ++l) {
        constexpr int one = 1;
        const int half = K >> (l + 1);
#pragma GCC unroll 16
        for (int g = 0; g < (one << l); ++g) {
#pragma GCC unroll 16
          for (int k = 0; k < half; ++k) {
            forward_butterfly<Mul>(v[2 * g * half + k], v[2 * g * half + k + half],
                                   w[(1 << l) - 1 + g], wq[(1 << l) - 1 + g], spread, vq);
          }
        }
      }
#pragma GCC unroll 16
      for (int k = 0; k < K; ++k)
        store(x + j + k * s, v[k]);
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

// Forward levels of distance 8, 4, 2, 1 on each 16-word block, then the reduction to [0, q).
template <class Mul>
void forward_last_four(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), spread = set1(Mul::kSpread * q);
  const Regroup r;
  const std::uint32_t m8 = n / 16, m4 = n / 8, m2 = n / 4, m1 = n / 2;
  for (std::uint32_t b = 0; b < n; b += 16) {
    V x = load(a + b), y = load(a + b + 8);
    forward_butterfly<Mul>(x, y, set1(tb.forward[m8 + b / 16]),
                           set1(Mul::forward_quotient(tb)[m8 + b / 16]), spread, vq);
    regroup(x, y, r.lo4, r.hi4);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m4 + b / 8, r.dup4, false),
                           twiddles(Mul::forward_quotient(tb), m4 + b / 8, r.dup4, false), spread,
                           vq);
    regroup(x, y, r.lo2, r.hi2);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m2 + b / 4, r.dup2, false),
                           twiddles(Mul::forward_quotient(tb), m2 + b / 4, r.dup2, false), spread,
                           vq);
    regroup(x, y, r.lo1, r.hi1);
    forward_butterfly<Mul>(x, y, twiddles(tb.forward, m1 + b / 2, r.dup2, true),
                           twiddles(Mul::forward_quotient(tb), m1 + b / 2, r.dup2, true), spread,
                           vq);
    x = forward_final<Mul>(x, spread, vq);
    y = forward_final<Mul>(y, spread, vq);
    store(a + b, _mm512_permutex2var_epi64(x, r.out_lo, y));
    store(a + b + 8, _mm512_permutex2var_epi64(x, r.out_hi, y));
  }
}

// The number of levels of the next pass when `levels` remain: passes of at most three levels,
// as even as possible. Radix 8 measured best on Zen 4 (N = 2^16, 60-bit prime: 243 us against
// 308 us for radix 16, whose 16 data registers leave too few for the products and whose 16
// streams at a power-of-two stride overfill an 8-way L1 set, and 248 us for radix 4).
constexpr std::uint32_t kMaxPass = 3;
inline int next_pass(std::uint32_t levels) {
  const std::uint32_t passes = (levels + kMaxPass - 1) / kMaxPass;
  return static_cast<int>((levels + passes - 1) / passes);
}

template <class Mul>
void forward(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (n < 16) {
    negacyclic_scalar::forward(a, n, log_n, q, tb);
    return;
  }
  // Levels of distance n/2 .. 16 (log_n - 4 of them) in passes of up to three, then the last four.
  std::uint32_t m = 1, t = n / 2;
  for (std::uint32_t levels = log_n - 4; levels > 0;) {
    const int r = next_pass(levels);
    switch (r) {
      case 4:
        forward_levels<Mul, 4>(a, m, t, q, tb);
        break;
      case 3:
        forward_levels<Mul, 3>(a, m, t, q, tb);
        break;
      case 2:
        forward_levels<Mul, 2>(a, m, t, q, tb);
        break;
      default:
        forward_levels<Mul, 1>(a, m, t, q, tb);
        break;
    }
    levels -= static_cast<std::uint32_t>(r);
    m <<= r;
    t >>= r;
  }
  forward_last_four<Mul>(a, n, q, tb);
}

// Inverse levels of distance 1, 2, 4 (and 8 when Eight) on each 16-word block (outputs in
// [0, s), s = Mul::kSpread q).
template <class Mul, bool Eight>
void inverse_first(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), spread = set1(Mul::kSpread * q);
  const Regroup r;
  const std::uint32_t h1 = n / 2, h2 = n / 4, h4 = n / 8, h8 = n / 16;
  for (std::uint32_t b = 0; b < n; b += 16) {
    V x = load(a + b), y = load(a + b + 8);
    regroup(x, y, r.evens, r.odds);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h1 + b / 2, r.dup2, true),
                           twiddles(Mul::inverse_quotient(tb), h1 + b / 2, r.dup2, true), spread,
                           vq);
    regroup(x, y, r.lo1, r.hi1);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h2 + b / 4, r.dup2, false),
                           twiddles(Mul::inverse_quotient(tb), h2 + b / 4, r.dup2, false), spread,
                           vq);
    regroup(x, y, r.lo2, r.hi2);
    inverse_butterfly<Mul>(x, y, twiddles(tb.inverse, h4 + b / 8, r.dup4, false),
                           twiddles(Mul::inverse_quotient(tb), h4 + b / 8, r.dup4, false), spread,
                           vq);
    regroup(x, y, r.lo4, r.hi4);
    if constexpr (Eight) {
      inverse_butterfly<Mul>(x, y, set1(tb.inverse[h8 + b / 16]),
                             set1(Mul::inverse_quotient(tb)[h8 + b / 16]), spread, vq);
    }
    store(a + b, x);
    store(a + b + 8, y);
  }
}

// R inverse levels in one pass: h groups of distance t, then h/2 of distance 2t, .., over
// blocks of K t words held in K = 2^R registers (words j, j + t, .., j + (K-1) t). When Last,
// the pass ends with the transform's last level (one group, distance n/2) with N^-1 folded into
// both outputs, reduced to [0, q).
template <class Mul, int R, bool Last>
void inverse_levels(u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  constexpr int K = 1 << R;
  const V vq = set1(q), spread = set1(Mul::kSpread * q);
  const V ni = set1(tb.n_inv), niq = set1(Mul::n_inv_quotient(tb));
  const V wl = set1(tb.last_inverse), wlq = set1(Mul::last_inverse_quotient(tb));
  const std::uint32_t blocks = h >> (R - 1);
  for (std::uint32_t i = 0; i < blocks; ++i) {
    // Level l's group g of this block at table index (h >> l) + (i << (R - 1 - l)) + g, in
    // level order.
    V w[K - 1], wq[K - 1];
    int slot = 0;
#pragma GCC unroll 16
    for (int l = 0; l < R; ++l) {
#pragma GCC unroll 16
      for (int g = 0; g < (K >> (l + 1)); ++g, ++slot) {
        const std::size_t at = (h >> l) + (static_cast<std::size_t>(i) << (R - 1 - l)) + g;
        w[slot] = set1(tb.inverse[at]);
        wq[slot] = set1(Mul::inverse_quotient(tb)[at]);
      }
    }
    u64* x = a + static_cast<std::size_t>(i) * K * t;
    for (std::uint32_t j = 0; j < t; j += 8) {
      V v[K];
#pragma GCC unroll 16
      for (int k = 0; k < K; ++k)
        v[k] = load(x + j + k * t);
      int at = 0;
#pragma GCC unroll 16
      for (int l = 0; l < R; ++l) {
        const int half = 1 << l, groups = K >> (l + 1);
        if (Last && l == R - 1) {
#pragma GCC unroll 16
          for (int k = 0; k < half; ++k) {
            const V sum = Mul::lazy(_mm512_add_epi64(v[k], v[k + half]), ni, niq, vq);
            const V diff = Mul::lazy(_mm512_add_epi64(_mm512_sub_epi64(v[k], v[k + half]), spread),
                                     wl, wlq, vq);
            v[k] = reduce(sum, vq);
            v[k + half] = reduce(diff, vq);
          }
        } else {
#pragma GCC unroll 16
          for (int g = 0; g < groups; ++g) {
#pragma GCC unroll 16
            for (int k = 0; k < half; ++k) {
              inverse_butterfly<Mul>(v[2 * g * half + k], v[2 * g * half + k + half], w[at + g],
                                     wq[at + g], spread, vq);
            }
          }
        }
        at += groups;
      }
#pragma GCC unroll 16
      for (int k = 0; k < K; ++k)
        store(x + j + k * t, v[k]);
    }
  }
}

// The last inverse level alone (n = 16): one group of distance 8 with N^-1 folded in.
template <class Mul>
void inverse_last(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const V vq = set1(q), spread = set1(Mul::kSpread * q);
  const V ni = set1(tb.n_inv), niq = set1(Mul::n_inv_quotient(tb));
  const V wl = set1(tb.last_inverse), wlq = set1(Mul::last_inverse_quotient(tb));
  const std::uint32_t t = n / 2;
  for (std::uint32_t j = 0; j < t; j += 8) {
    const V x = load(a + j), y = load(a + j + t);
    const V s = Mul::lazy(_mm512_add_epi64(x, y), ni, niq, vq);
    const V d = Mul::lazy(_mm512_add_epi64(_mm512_sub_epi64(x, y), spread), wl, wlq, vq);
    store(a + j, reduce(s, vq));
    store(a + j + t, reduce(d, vq));
  }
}

template <class Mul, bool Last>
void inverse_pass(int r, u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  switch (r) {
    case 4:
      inverse_levels<Mul, 4, Last>(a, h, t, q, tb);
      break;
    case 3:
      inverse_levels<Mul, 3, Last>(a, h, t, q, tb);
      break;
    case 2:
      inverse_levels<Mul, 2, Last>(a, h, t, q, tb);
      break;
    default:
      inverse_levels<Mul, 1, Last>(a, h, t, q, tb);
      break;
  }
}

template <class Mul>
void inverse(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (n < 16) {
    negacyclic_scalar::inverse(a, n, log_n, q, tb);
    return;
  }
  if (n == 16) {
    inverse_first<Mul, false>(a, n, q, tb);
    inverse_last<Mul>(a, n, q, tb);
    return;
  }
  // The first four levels, then distance 16 .. n/2 (log_n - 4 levels, n/32 groups first) in
  // passes of up to three, the last of which folds in N^-1.
  inverse_first<Mul, true>(a, n, q, tb);
  std::uint32_t h = n / 32, t = 16;
  for (std::uint32_t levels = log_n - 4; levels > 0;) {
    const int r = next_pass(levels);
    if (levels == static_cast<std::uint32_t>(r)) {
      inverse_pass<Mul, true>(r, a, h, t, q, tb);
    } else {
      inverse_pass<Mul, false>(r, a, h, t, q, tb);
    }
    levels -= static_cast<std::uint32_t>(r);
    h >>= r;
    t <<= r;
  }
}

}  // namespace
}  // namespace safhire::ring::simd::negacyclic_avx512
