// Word arithmetic modulo an odd prime q, shared by the CPU path and the CUDA kernels.
// Every function states the range of what it takes and what it returns; "lazy" results are only
// partially reduced and are meant to feed the next operation directly. The NTT primes are below
// 2^62, so four times q still fits in a 64-bit word (the headroom the lazy ranges use).
#pragma once

#include <cstdint>
#include <type_traits>

#include "safhire/core/hostdevice.hpp"

namespace safhire::core {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
__extension__ typedef unsigned __int128 u128;  // GCC/Clang/NVCC extension
__extension__ typedef __int128 i128;

// Largest modulus (exclusive) the lazy NTT arithmetic accepts: 4q must fit in a word.
inline constexpr u64 kMaxNttModulus = u64{1} << 62;

template <class W>
struct WideOf;
template <>
struct WideOf<u32> {
  using type = u64;
};
template <>
struct WideOf<u64> {
  using type = u128;
};
template <class W>
using Wide = typename WideOf<W>::type;
template <class W>
inline constexpr int kWordBits = 8 * sizeof(W);

// High word of the double-width product a*b.
template <class W>
SAFHIRE_HD W mul_hi(W a, W b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<W, u64>) {
    return __umul64hi(a, b);
  } else {
    return __umulhi(a, b);
  }
#else
  return static_cast<W>((static_cast<Wide<W>>(a) * b) >> kWordBits<W>);
#endif
}

// a, b in [0, q) -> a + b in [0, q).
template <class W>
SAFHIRE_HD W add_mod(W a, W b, W q) {
  const W r = a + b;
  return r >= q ? r - q : r;
}

// a, b in [0, q) -> a - b in [0, q).
template <class W>
SAFHIRE_HD W sub_mod(W a, W b, W q) {
  return a >= b ? a - b : a + (q - b);
}

// a in [0, q) -> -a in [0, q).
template <class W>
SAFHIRE_HD W neg_mod(W a, W q) {
  return a == 0 ? W{0} : q - a;
}

// x in [0, 2q) -> x in [0, q).
template <class W>
SAFHIRE_HD W reduce_once(W x, W q) {
  return x >= q ? x - q : x;
}

// ---- Shoup multiplication by a precomputed constant ------------------------------------------
// For a fixed w in [0, q) precompute w' = floor(w * 2^k / q) (k the word size). Then for ANY
// word x, r = x*w - floor(x*w'/2^k)*q (computed mod 2^k) lies in [0, 2q) and r = x*w (mod q)
// (Harvey, "Faster arithmetic for number-theoretic transforms", 2014, Lemma 2).
template <class W>
struct ShoupConst {
  W value;     // w in [0, q)
  W quotient;  // floor(w * 2^k / q)
};

// Host only: w in [0, q), q odd -> floor(w * 2^k / q).
template <class W>
inline W shoup_quotient(W w, W q) {
  return static_cast<W>((static_cast<Wide<W>>(w) << kWordBits<W>) / q);
}

template <class W>
inline ShoupConst<W> make_shoup(W w, W q) {
  return {w, shoup_quotient(w, q)};
}

// x any word, c = make_shoup(w, q) -> x*w mod q in [0, 2q) (lazy).
template <class W>
SAFHIRE_HD W mul_shoup_lazy(W x, W w, W w_quotient, W q) {
  const W estimate = mul_hi(x, w_quotient);
  return x * w - estimate * q;
}

// x any word -> x*w mod q in [0, q).
template <class W>
SAFHIRE_HD W mul_shoup(W x, W w, W w_quotient, W q) {
  return reduce_once(mul_shoup_lazy(x, w, w_quotient, q), q);
}

template <class W>
SAFHIRE_HD W mul_shoup(W x, ShoupConst<W> c, W q) {
  return mul_shoup(x, c.value, c.quotient, q);
}

// Barrett reduction of one word: x any word -> x mod q in [0, q). `ratio` = floor(2^k / q), which
// is the Shoup quotient of w = 1.
template <class W>
SAFHIRE_HD W reduce_word(W x, W ratio, W q) {
  return mul_shoup(x, W{1}, ratio, q);
}

// ---- Montgomery multiplication, for products of two varying operands --------------------------
// R = 2^k. With q_inv = q^-1 mod R: for a*b < q*R (e.g. a any word, b in [0, q)),
// mont_mul(a, b) = a*b*R^-1 mod q in [0, q). The low words of a*b and m*q agree by construction
// (m = lo(a*b) * q_inv), so the result is hi(a*b) - hi(m*q), corrected by +q when negative.
template <class W>
SAFHIRE_HD W mont_mul(W a, W b, W q, W q_inv) {
  const W lo = a * b;
  const W hi = mul_hi(a, b);
  const W m = lo * q_inv;
  const W mq_hi = mul_hi(m, q);
  return hi >= mq_hi ? hi - mq_hi : hi + (q - mq_hi);
}

// q odd -> q^-1 mod 2^k, by Newton iteration (each step doubles the correct low bits; q*q = 1
// mod 8 gives 3 bits to start).
template <class W>
constexpr W inverse_mod_word(W q) {
  W x = q;
  for (int i = 0; i < 6; ++i)
    x *= W{2} - q * x;
  return x;
}

// ---- Reduction of a double word -----------------------------------------------------------------
// x = x_hi 2^64 + x_lo mod q as (x_hi (2^64 mod q) + x_lo) mod q: a Shoup product by the constant
// 2^64 mod q (any x_hi, result in [0, 2q)) plus x_lo reduced by Shoup with w = 1 ([0, 2q)), then
// two conditional subtractions: five word products for any 128-bit x. What sums of lazy products
// end with: sum_i a_i b_i with a_i, b_i < 2^62 accumulates up to 16 terms in two words first.
struct WideReducer {
  u64 r;           // 2^64 mod q
  u64 r_quotient;  // floor(r 2^64 / q)
  u64 ratio;       // floor(2^64 / q), the Shoup quotient of 1
};

// Host only: q odd, 1 < q < 2^62.
inline WideReducer make_wide_reducer(u64 q) {
  const u64 r = static_cast<u64>((static_cast<u128>(1) << 64) % q);
  return {r, shoup_quotient(r, q), shoup_quotient<u64>(1, q)};
}

// (x_hi 2^64 + x_lo) mod q in [0, q).
SAFHIRE_HD u64 reduce_double_word(u64 x_hi, u64 x_lo, u64 q, WideReducer c) {
  const u64 high = mul_shoup_lazy(x_hi, c.r, c.r_quotient, q);  // [0, 2q)
  const u64 low = mul_shoup_lazy(x_lo, u64{1}, c.ratio, q);     // [0, 2q)
  u64 sum = high + low;                                         // < 4q < 2^64
  sum = sum >= 2 * q ? sum - 2 * q : sum;
  return sum >= q ? sum - q : sum;
}

// ---- Plain (slow) operations for set-up code and tests ------------------------------------------

// a, b any words -> a*b mod q in [0, q). Uses a double-width division: not for hot loops.
template <class W>
constexpr W mul_mod(W a, W b, W q) {
  return static_cast<W>((static_cast<Wide<W>>(a) * b) % q);
}

// base any word, exponent any -> base^exponent mod q in [0, q).
template <class W>
constexpr W pow_mod(W base, u64 exponent, W q) {
  W result = W{1} % q;
  base %= q;
  while (exponent != 0) {
    if (exponent & 1U) result = mul_mod(result, base, q);
    base = mul_mod(base, base, q);
    exponent >>= 1U;
  }
  return result;
}

// q prime, a not divisible by q -> a^-1 mod q (Fermat).
template <class W>
constexpr W inv_mod(W a, W q) {
  return pow_mod(a, static_cast<u64>(q - 2), q);
}

}  // namespace safhire::core
