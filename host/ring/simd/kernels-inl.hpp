// The CPU kernels, written once over the lanes types and compiled once per instruction set: a
// translation unit defines SAFHIRE_SIMD_NS (and SAFHIRE_SIMD_AVX2 or SAFHIRE_SIMD_AVX512), then
// includes this file, which has no include guard on purpose.
//
// Radix-t transform (reference §2.2), in place on the natural layout. Level 0 splits
// Phi_M = prod_j (X^m - w_t^j): the (t-1) residues of f are a length-t DFT across the blocks
// f_r = f[r m .. (r+1) m) with f_(t-1) = 0, output 0 dropped. Level l = 1..a-1 splits every block
// of size n = t nn modulo X^n - c into t blocks modulo X^nn - c' w_t^j: twist part r by c'^r, then
// a length-t DFT across the parts. The inverse runs the levels backwards with w_t^-1 and c'^-r;
// the factors 1/t of all levels (and, for products, the Montgomery 2^64) are folded into the
// constants of the last step. Loops run along the contiguous index inside a block, so the wide
// lanes serve every level whose blocks are at least half a register long; narrower levels use
// one-word lanes.

#include <cstddef>
#include <cstdint>

#include "safhire/ring/detail/dft_small.hpp"
#include "simd/kernels.hpp"

namespace safhire::ring::simd::SAFHIRE_SIMD_NS {

#include "simd/lanes-inl.hpp"

using detail::DftMode;
using detail::DftRegs;
using detail::ModLanes;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// A level with blocks of nn contiguous words runs on the wide lanes if nn fills at least half of
// a register; otherwise one word at a time.
template <class V>
bool use_wide(u32 nn) {
  return 2 * nn >= V::kLanes;
}

template <int T, class V>
void forward_level0(const NttView& p, u64* f) {
  using R = typename V::Reg;
  const DftRegs<V> c(*p.dft_forward);
  const R q = V::set1(p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = m - i < V::kLanes ? m - i : V::kLanes;
    R x[T];
    for (int r = 0; r + 1 < T; ++r)
      x[r] = V::load_n(f + r * m + i, len);
    x[T - 1] = V::zero();
    detail::dft_small<T, DftMode::plain, V>(x, c, q);
    for (int j = 1; j < T; ++j)
      V::store_n(f + (j - 1) * m + i, x[j], len);
  }
}

template <int T, class V>
void forward_level(const NttView& p, u32 level, u32 blocks, u32 nn, u64* f) {
  using R = typename V::Reg;
  using Mod = ModLanes<V>;
  const DftRegs<V> c(*p.dft_forward);
  const R q = V::set1(p.q);
  const u64* tw = p.twiddle_forward + std::size_t{p.level_block_offset[level]} * (T - 1);
  const u64* twq = p.twiddle_forward_quotient + std::size_t{p.level_block_offset[level]} * (T - 1);
  for (u32 b = 0; b < blocks; ++b) {
    R w[T - 1], wq[T - 1];
    for (int r = 0; r + 1 < T; ++r) {
      w[r] = V::set1(tw[b * (T - 1) + r]);
      wq[r] = V::set1(twq[b * (T - 1) + r]);
    }
    u64* base = f + std::size_t{b} * nn * T;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = nn - i < V::kLanes ? nn - i : V::kLanes;
      R x[T];
      x[0] = V::load_n(base + i, len);
      for (int r = 1; r < T; ++r) {
        x[r] = Mod::mul_shoup(V::load_n(base + r * nn + i, len), w[r - 1], wq[r - 1], q);
      }
      detail::dft_small<T, DftMode::plain, V>(x, c, q);
      for (int l = 0; l < T; ++l)
        V::store_n(base + l * nn + i, x[l], len);
    }
  }
}

template <int T, class V>
void inverse_level(const NttView& p, u32 level, u32 blocks, u32 nn, u64* f) {
  using R = typename V::Reg;
  using Mod = ModLanes<V>;
  const DftRegs<V> c(*p.dft_inverse);
  const R q = V::set1(p.q);
  const u64* tw = p.twiddle_inverse + std::size_t{p.level_block_offset[level]} * (T - 1);
  const u64* twq = p.twiddle_inverse_quotient + std::size_t{p.level_block_offset[level]} * (T - 1);
  for (u32 b = 0; b < blocks; ++b) {
    R w[T - 1], wq[T - 1];
    for (int r = 0; r + 1 < T; ++r) {
      w[r] = V::set1(tw[b * (T - 1) + r]);
      wq[r] = V::set1(twq[b * (T - 1) + r]);
    }
    u64* base = f + std::size_t{b} * nn * T;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = nn - i < V::kLanes ? nn - i : V::kLanes;
      R x[T];
      for (int l = 0; l < T; ++l)
        x[l] = V::load_n(base + l * nn + i, len);
      detail::dft_small<T, DftMode::plain, V>(x, c, q);
      V::store_n(base + i, x[0], len);
      for (int r = 1; r < T; ++r) {
        V::store_n(base + r * nn + i, Mod::mul_shoup(x[r], w[r - 1], wq[r - 1], q), len);
      }
    }
  }
}

// Undo level 0: residues g_1..g_(t-1) (g_0 = 0) -> f_r = s*DFT^-1(g)_r - s*DFT^-1(g)_(t-1).
template <int T, class V>
void inverse_level0(const NttView& p, u64* f, InverseScale scale) {
  using R = typename V::Reg;
  using Mod = ModLanes<V>;
  const DftRegs<V> c(p.dft_inverse_last[static_cast<int>(scale)]);
  const R q = V::set1(p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = m - i < V::kLanes ? m - i : V::kLanes;
    R x[T];
    x[0] = V::zero();
    for (int j = 1; j < T; ++j)
      x[j] = V::load_n(f + (j - 1) * m + i, len);
    detail::dft_small<T, DftMode::scaled_zero_x0, V>(x, c, q);
    for (int r = 0; r + 1 < T; ++r) {
      V::store_n(f + r * m + i, Mod::sub(x[r], x[T - 1], q), len);
    }
  }
}

template <int T>
void forward_one(const NttView& p, u64* f) {
  if (use_wide<LanesWide>(p.m)) {
    forward_level0<T, LanesWide>(p, f);
  } else {
    forward_level0<T, Lanes1>(p, f);
  }
  u32 blocks = T - 1, nn = p.m;
  for (u32 level = 1; level < p.a; ++level) {
    nn /= T;
    if (use_wide<LanesWide>(nn)) {
      forward_level<T, LanesWide>(p, level, blocks, nn, f);
    } else {
      forward_level<T, Lanes1>(p, level, blocks, nn, f);
    }
    blocks *= T;
  }
}

template <int T>
void inverse_one(const NttView& p, u64* f, InverseScale scale) {
  u32 blocks = p.N / T, nn = 1;  // level a-1 has (t-1) t^(a-2) blocks of t words
  for (u32 level = p.a - 1; level >= 1; --level) {
    if (use_wide<LanesWide>(nn)) {
      inverse_level<T, LanesWide>(p, level, blocks, nn, f);
    } else {
      inverse_level<T, Lanes1>(p, level, blocks, nn, f);
    }
    blocks /= T;
    nn *= T;
  }
  if (use_wide<LanesWide>(p.m)) {
    inverse_level0<T, LanesWide>(p, f, scale);
  } else {
    inverse_level0<T, Lanes1>(p, f, scale);
  }
}

void ntt_forward(const NttView& p, u64* data, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + k * p.N;
    switch (p.t) {
      case 3:
        forward_one<3>(p, f);
        break;
      case 5:
        forward_one<5>(p, f);
        break;
      case 7:
        forward_one<7>(p, f);
        break;
      default:
        break;  // NttPlan admits t in {3, 5, 7} only
    }
  }
}

void ntt_inverse(const NttView& p, u64* data, std::size_t count, InverseScale scale) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + k * p.N;
    switch (p.t) {
      case 3:
        inverse_one<3>(p, f, scale);
        break;
      case 5:
        inverse_one<5>(p, f, scale);
        break;
      case 7:
        inverse_one<7>(p, f, scale);
        break;
      default:
        break;
    }
  }
}

// ---- Cyclic power-of-two NTT for the zero-padded product ----------------------------------------
// Forward: y0 = x0 + c' x1, y1 = x0 - c' x1. Inverse: x0 = y0 + y1, x1 = c'^-1 (y0 - y1); the
// top level (c' = 1) also multiplies both outputs by the final scale.

template <class V>
void radix2_forward_level(const Radix2View& p, u32 level, u64* f) {
  using R = typename V::Reg;
  using Mod = ModLanes<V>;
  const R q = V::set1(p.q);
  const u32 blocks = 1U << level;
  const u32 nn = (1U << p.log_n) >> (level + 1);
  const u64* tw = p.twiddle_forward + (blocks - 1);
  const u64* twq = p.twiddle_forward_quotient + (blocks - 1);
  for (u32 b = 0; b < blocks; ++b) {
    const R w = V::set1(tw[b]), wq = V::set1(twq[b]);
    u64* base = f + std::size_t{b} * 2 * nn;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = nn - i < V::kLanes ? nn - i : V::kLanes;
      const R x0 = V::load_n(base + i, len);
      const R x1 = Mod::mul_shoup(V::load_n(base + nn + i, len), w, wq, q);
      V::store_n(base + i, Mod::add(x0, x1, q), len);
      V::store_n(base + nn + i, Mod::sub(x0, x1, q), len);
    }
  }
}

template <class V>
void radix2_inverse_level(const Radix2View& p, u32 level, u64* f) {
  using R = typename V::Reg;
  using Mod = ModLanes<V>;
  const R q = V::set1(p.q);
  const u32 blocks = 1U << level;
  const u32 nn = (1U << p.log_n) >> (level + 1);
  const u64* tw = p.twiddle_inverse + (blocks - 1);
  const u64* twq = p.twiddle_inverse_quotient + (blocks - 1);
  const R s = V::set1(p.scale), sq = V::set1(p.scale_quotient);
  for (u32 b = 0; b < blocks; ++b) {
    const R w = V::set1(tw[b]), wq = V::set1(twq[b]);
    u64* base = f + std::size_t{b} * 2 * nn;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = nn - i < V::kLanes ? nn - i : V::kLanes;
      const R y0 = V::load_n(base + i, len);
      const R y1 = V::load_n(base + nn + i, len);
      R x0 = Mod::add(y0, y1, q);
      R x1 = Mod::sub(y0, y1, q);
      if (level == 0) {
        x0 = Mod::mul_shoup(x0, s, sq, q);
        x1 = Mod::mul_shoup(x1, s, sq, q);
      } else {
        x1 = Mod::mul_shoup(x1, w, wq, q);
      }
      V::store_n(base + i, x0, len);
      V::store_n(base + nn + i, x1, len);
    }
  }
}

void radix2_forward(const Radix2View& p, u64* data, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + (k << p.log_n);
    for (u32 level = 0; level < p.log_n; ++level) {
      const u32 nn = (1U << p.log_n) >> (level + 1);
      if (use_wide<LanesWide>(nn)) {
        radix2_forward_level<LanesWide>(p, level, f);
      } else {
        radix2_forward_level<Lanes1>(p, level, f);
      }
    }
  }
}

void radix2_inverse(const Radix2View& p, u64* data, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + (k << p.log_n);
    for (u32 level = p.log_n; level-- > 0;) {
      const u32 nn = (1U << p.log_n) >> (level + 1);
      if (use_wide<LanesWide>(nn)) {
        radix2_inverse_level<LanesWide>(p, level, f);
      } else {
        radix2_inverse_level<Lanes1>(p, level, f);
      }
    }
  }
}

// ---- Element-wise kernels ----------------------------------------------------------------------

template <class Fn>
void for_each_lane_block(std::size_t len, Fn&& fn) {
  std::size_t i = 0;
  for (; i + LanesWide::kLanes <= len; i += LanesWide::kLanes)
    fn(LanesWide{}, i);
  for (; i < len; ++i)
    fn(Lanes1{}, i);
}

void pointwise_montgomery(u64 q, u64 q_inv, const u64* a, const u64* b, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using V = decltype(lanes);
    V::store(out + i,
             ModLanes<V>::mont_mul(V::load(a + i), V::load(b + i), V::set1(q), V::set1(q_inv)));
  });
}

// v signed: v mod q = (v + 2^64) mod q - (v < 0 ? 2^64 mod q : 0).
void lift_torus(u64 q, u64 word_ratio, u64 two64_mod_q, const u64* in, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using V = decltype(lanes);
    using Mod = ModLanes<V>;
    const auto qv = V::set1(q);
    const auto x = V::load(in + i);
    const auto r = Mod::mul_shoup(x, V::set1(1), V::set1(word_ratio), qv);
    const auto wrap = V::bit_and(V::sign_mask(x), V::set1(two64_mod_q));
    V::store(out + i, Mod::sub(r, wrap, qv));
  });
}

// Reference §2.4: y = (x2 - x1) q1^-1 mod q2, x = x1 + q1 y, negative when x > Q/2.
void crt_lift(const core::Crt2& crt, const u64* x1p, const u64* x2p, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using V = decltype(lanes);
    using Mod = ModLanes<V>;
    const auto q1 = V::set1(crt.q1), q2 = V::set1(crt.q2);
    const auto x1 = V::load(x1p + i);
    const auto x2 = V::load(x2p + i);
    const auto x1r = Mod::mul_shoup(x1, V::set1(1), V::set1(crt.q2_ratio), q2);
    const auto y = Mod::mul_shoup(Mod::sub(x2, x1r, q2), V::set1(crt.q1_inv_mod_q2.value),
                                  V::set1(crt.q1_inv_mod_q2.quotient), q2);
    const auto half = V::set1(crt.q2_half);
    const auto negative = V::bit_or(
        V::gt(y, half), V::bit_and(V::eq(y, half), V::gt(x1, V::set1(crt.q1_half_up - 1))));
    const auto r = V::add(x1, V::mullo(q1, y));
    V::store(out + i, V::sub(r, V::bit_and(negative, V::set1(crt.q1q2_low))));
  });
}

constexpr KernelTable kTable = {
    SAFHIRE_SIMD_NAME, ntt_forward,          ntt_inverse, radix2_forward,
    radix2_inverse,    pointwise_montgomery, lift_torus,  crt_lift,
};

}  // namespace safhire::ring::simd::SAFHIRE_SIMD_NS
