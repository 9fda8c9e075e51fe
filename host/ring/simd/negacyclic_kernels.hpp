// The butterfly loops of the negacyclic NTT (negacyclic_ntt.hpp), one table of entry points per
// instruction set. The scalar loops are here as inline templates so that the vector units reuse
// them for the levels whose butterflies are closer than a register's width.
//
// Ranges (Harvey): the forward transform keeps every value in [0, 4q) between levels; a
// butterfly reduces x to [0, 2q), computes t = w y in [0, 2q) lazily and writes x + t and
// x - t + 2q, both in [0, 4q). The inverse keeps values in [0, 2q): x + y is reduced to [0, 2q)
// and (x - y + 2q) w is a lazy product in [0, 2q). Both end with one reduction to [0, q).
#pragma once

#include <cstdint>

#include "safhire/core/modarith.hpp"
#include "safhire/ring/negacyclic_ntt.hpp"

namespace safhire::ring::simd {

using Tables = NegacyclicNtt::Tables;

struct NegacyclicKernels {
  void (*forward)(std::uint64_t* a, std::uint32_t n, std::uint32_t log_n, std::uint64_t q,
                  const Tables& tables);
  void (*inverse)(std::uint64_t* a, std::uint32_t n, std::uint32_t log_n, std::uint64_t q,
                  const Tables& tables);
};

// The kernels of `isa` for the prime q (the scalar ones where a set has none of its own; the
// IFMA ones for avx512 and q < 2^50 where the processor has IFMA).
const NegacyclicKernels& negacyclic_kernels(SimdIsa isa, std::uint64_t q);

namespace negacyclic_scalar {

using core::u64;

inline void forward_butterfly(u64& x, u64& y, u64 w, u64 wq, u64 q2, u64 q) {
  const u64 u = x >= q2 ? x - q2 : x;
  const u64 t = core::mul_shoup_lazy(y, w, wq, q);
  x = u + t;
  y = u - t + q2;
}

inline void inverse_butterfly(u64& x, u64& y, u64 w, u64 wq, u64 q2, u64 q) {
  const u64 s = x + y;
  const u64 d = x - y + q2;
  x = s >= q2 ? s - q2 : s;
  y = core::mul_shoup_lazy(d, w, wq, q);
}

// One radix-2 forward level with `m` groups of distance `t` (twiddles at m .. 2m-1).
inline void forward_level(u64* a, std::uint32_t m, std::uint32_t t, u64 q, const Tables& tb) {
  const u64 q2 = 2 * q;
  for (std::uint32_t i = 0; i < m; ++i) {
    const u64 w = tb.forward[m + i], wq = tb.forward_quotient[m + i];
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < t; ++j)
      forward_butterfly(x[j], x[j + t], w, wq, q2, q);
  }
}

// Two forward levels at once (m and 2m groups), for the groups [first, last) of the first.
inline void forward_level_pair(u64* a, std::uint32_t m, std::uint32_t t, std::uint32_t first,
                               std::uint32_t last, u64 q, const Tables& tb) {
  const u64 q2 = 2 * q;
  const std::uint32_t h = t / 2;
  for (std::uint32_t i = first; i < last; ++i) {
    const u64 w1 = tb.forward[m + i], w1q = tb.forward_quotient[m + i];
    const u64 w2 = tb.forward[2 * (m + i)], w2q = tb.forward_quotient[2 * (m + i)];
    const u64 w3 = tb.forward[2 * (m + i) + 1], w3q = tb.forward_quotient[2 * (m + i) + 1];
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < h; ++j) {
      u64 x0 = x[j], x1 = x[j + h], x2 = x[j + t], x3 = x[j + t + h];
      forward_butterfly(x0, x2, w1, w1q, q2, q);
      forward_butterfly(x1, x3, w1, w1q, q2, q);
      forward_butterfly(x0, x1, w2, w2q, q2, q);
      forward_butterfly(x2, x3, w3, w3q, q2, q);
      x[j] = x0;
      x[j + h] = x1;
      x[j + t] = x2;
      x[j + t + h] = x3;
    }
  }
}

inline void reduce_from_4q(u64* a, std::uint32_t n, u64 q) {
  const u64 q2 = 2 * q;
  for (std::uint32_t j = 0; j < n; ++j) {
    u64 v = a[j];
    v = v >= q2 ? v - q2 : v;
    a[j] = v >= q ? v - q : v;
  }
}

// The forward levels from (m, t) on, radix-4 passes after one radix-2 level when an odd number
// remain, then the final reduction.
inline void forward_from(u64* a, std::uint32_t n, std::uint32_t m, std::uint32_t t, u64 q,
                         const Tables& tb) {
  std::uint32_t levels = 0;
  for (std::uint32_t s = t; s > 1; s /= 2)
    ++levels;
  ++levels;  // t itself is one level
  if (t >= 1 && (levels % 2) == 1) {
    forward_level(a, m, t, q, tb);
    m *= 2;
    t /= 2;
  }
  for (; t >= 2; m *= 4, t /= 4)
    forward_level_pair(a, m, t, 0, m, q, tb);
  reduce_from_4q(a, n, q);
}

inline void forward(u64* a, std::uint32_t n, std::uint32_t, u64 q, const Tables& tb) {
  forward_from(a, n, 1, n / 2, q, tb);
}

// One radix-2 inverse level: h groups of distance t (twiddles at h .. 2h-1).
inline void inverse_level(u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  const u64 q2 = 2 * q;
  for (std::uint32_t i = 0; i < h; ++i) {
    const u64 w = tb.inverse[h + i], wq = tb.inverse_quotient[h + i];
    u64* x = a + 2 * i * t;
    for (std::uint32_t j = 0; j < t; ++j)
      inverse_butterfly(x[j], x[j + t], w, wq, q2, q);
  }
}

// Two inverse levels at once: h groups of distance t, then h/2 groups of distance 2t.
inline void inverse_level_pair(u64* a, std::uint32_t h, std::uint32_t t, u64 q, const Tables& tb) {
  const u64 q2 = 2 * q;
  for (std::uint32_t i = 0; i < h / 2; ++i) {
    const u64 w1 = tb.inverse[h + 2 * i], w1q = tb.inverse_quotient[h + 2 * i];
    const u64 w2 = tb.inverse[h + 2 * i + 1], w2q = tb.inverse_quotient[h + 2 * i + 1];
    const u64 w3 = tb.inverse[h / 2 + i], w3q = tb.inverse_quotient[h / 2 + i];
    u64* x = a + 4 * i * t;
    for (std::uint32_t j = 0; j < t; ++j) {
      u64 x0 = x[j], x1 = x[j + t], x2 = x[j + 2 * t], x3 = x[j + 3 * t];
      inverse_butterfly(x0, x1, w1, w1q, q2, q);
      inverse_butterfly(x2, x3, w2, w2q, q2, q);
      inverse_butterfly(x0, x2, w3, w3q, q2, q);
      inverse_butterfly(x1, x3, w3, w3q, q2, q);
      x[j] = x0;
      x[j + t] = x1;
      x[j + 2 * t] = x2;
      x[j + 3 * t] = x3;
    }
  }
}

// The last inverse level (one group, distance n/2) with N^-1 folded into both outputs, and the
// reduction to [0, q).
inline void inverse_last(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  const u64 q2 = 2 * q;
  const std::uint32_t t = n / 2;
  for (std::uint32_t j = 0; j < t; ++j) {
    const u64 x = a[j], y = a[j + t];
    const u64 s = core::mul_shoup_lazy(x + y, tb.n_inv, tb.n_inv_quotient, q);
    const u64 d = core::mul_shoup_lazy(x - y + q2, tb.last_inverse, tb.last_inverse_quotient, q);
    a[j] = s >= q ? s - q : s;
    a[j + t] = d >= q ? d - q : d;
  }
}

// Levels h = n/2 down to 2 (radix-4 passes, one radix-2 level when an odd number remain),
// starting at distance t for h.
inline void inverse_until_last(u64* a, std::uint32_t n, u64 q, const Tables& tb) {
  std::uint32_t h = n / 2, t = 1;
  std::uint32_t levels = 0;  // levels before the last: h = n/2 .. 2
  for (std::uint32_t s = h; s >= 2; s /= 2)
    ++levels;
  for (; levels >= 2; levels -= 2, h /= 4, t *= 4)
    inverse_level_pair(a, h, t, q, tb);
  if (levels == 1) inverse_level(a, h, t, q, tb);
}

inline void inverse(u64* a, std::uint32_t n, std::uint32_t, u64 q, const Tables& tb) {
  inverse_until_last(a, n, q, tb);
  inverse_last(a, n, q, tb);
}

}  // namespace negacyclic_scalar

}  // namespace safhire::ring::simd
