// The CPU kernels, written once over the lanes types and compiled once per instruction set: a
// translation unit defines SAFHIRE_SIMD_NS (and SAFHIRE_SIMD_AVX2 or SAFHIRE_SIMD_AVX512), then
// includes this file, which has no include guard on purpose.
//
// A transform is a sequence of levels (ntt_view.hpp). A natural level runs, for every block, a
// loop along the contiguous words of the block: twist part r by c'^r, then a length-t DFT across
// the parts. A column level runs the same butterflies with the loop along the columns of the
// transposed layout, where consecutive words belong to consecutive blocks. Either way every
// load and store is a whole register (or a masked tail). Values stay lazy in [0, 2q) between
// levels; the last level of each direction reduces to [0, q).

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
using V = LanesWide;
using R = V::Reg;
using Mod = ModLanes<V>;

// Store, reducing [0, 2q) -> [0, q) on the last level.
template <bool kFinal>
void store_level(u64* p, R v, u32 len, const DftRegs<V>& c) {
  V::store_n(p, kFinal ? Mod::reduce_once(v, c.q) : v, len);
}

u32 chunk(u32 total, u32 at) {
  return total - at < V::kLanes ? total - at : V::kLanes;
}

// ---- Natural levels: blocks of n = T nn contiguous words, loop along the block ----------------

// The twiddles c'^r (r = 1..T-1, at w[r]) of natural block b, broadcast to every lane.
template <int T>
struct BlockTwiddles {
  R w[T], wq[T];
  BlockTwiddles(const u64* tw, const u64* twq, u32 b) {
    for (int r = 1; r < T; ++r) {
      w[r] = V::set1(tw[std::size_t{b} * (T - 1) + r - 1]);
      wq[r] = V::set1(twq[std::size_t{b} * (T - 1) + r - 1]);
    }
  }
};

template <int T, bool kFinal>
void natural_forward(u64* f, u32 blocks, u32 nn, const u64* tw, const u64* twq,
                     const DftRegs<V>& c) {
  for (u32 b = 0; b < blocks; ++b) {
    const BlockTwiddles<T> tb(tw, twq, b);
    const R* w = tb.w;
    const R* wq = tb.wq;
    u64* base = f + std::size_t{b} * nn * T;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = chunk(nn, i);
      R x[T];
      x[0] = V::load_n(base + i, len);
      for (int r = 1; r < T; ++r)
        x[r] = Mod::mul4(V::load_n(base + r * nn + i, len), w[r], wq[r], c.q);
      detail::dft_small<T, DftMode::plain, V>(x, c);
      for (int l = 0; l < T; ++l)
        store_level<kFinal>(base + l * nn + i, x[l], len, c);
    }
  }
}

// With kScaleX0 the untwisted part is multiplied by `scale` too (the top level of the radix-2
// inverse, whose twiddles already carry the scale).
template <int T, bool kScaleX0>
void natural_inverse(u64* f, u32 blocks, u32 nn, const u64* tw, const u64* twq, const DftRegs<V>& c,
                     u64 scale, u64 scale_q) {
  const R s = V::set1(scale), sq = V::set1(scale_q);
  for (u32 b = 0; b < blocks; ++b) {
    const BlockTwiddles<T> tb(tw, twq, b);
    const R* w = tb.w;
    const R* wq = tb.wq;
    u64* base = f + std::size_t{b} * nn * T;
    for (u32 i = 0; i < nn; i += V::kLanes) {
      const u32 len = chunk(nn, i);
      R x[T];
      for (int l = 0; l < T; ++l)
        x[l] = V::load_n(base + l * nn + i, len);
      detail::dft_small<T, DftMode::plain, V>(x, c);
      if constexpr (kScaleX0) {
        V::store_n(base + i, Mod::reduce_once(Mod::mul2(x[0], s, sq, c.q, c.two_q), c.q), len);
        for (int r = 1; r < T; ++r) {
          V::store_n(base + r * nn + i,
                     Mod::reduce_once(Mod::mul2(x[r], w[r], wq[r], c.q, c.two_q), c.q), len);
        }
      } else {
        V::store_n(base + i, x[0], len);
        for (int r = 1; r < T; ++r) {
          V::store_n(base + r * nn + i, Mod::mul2(x[r], w[r], wq[r], c.q, c.two_q), len);
        }
      }
    }
  }
}

// ---- Column levels: word k of block b at k*B + b; S sub-blocks of T nn words per column -------

template <int T, bool kFinal>
void column_forward(const u64* src, u64* dst, u32 columns, u32 sub_blocks, u32 nn, const u64* tw,
                    const u64* twq, const DftRegs<V>& c) {
  const std::size_t B = columns;
  for (u32 s = 0; s < sub_blocks; ++s) {
    const u64* w_s = tw + std::size_t{s} * (T - 1) * B;
    const u64* wq_s = twq + std::size_t{s} * (T - 1) * B;
    for (u32 i = 0; i < nn; ++i) {
      const std::size_t row = std::size_t{s} * T * nn + i;  // row of part 0
      for (u32 b = 0; b < columns; b += V::kLanes) {
        const u32 len = chunk(columns, b);
        R x[T];
        x[0] = V::load_n(src + row * B + b, len);
        for (int r = 1; r < T; ++r) {
          x[r] = Mod::mul4(V::load_n(src + (row + r * nn) * B + b, len),
                           V::load_n(w_s + (r - 1) * B + b, len),
                           V::load_n(wq_s + (r - 1) * B + b, len), c.q);
        }
        detail::dft_small<T, DftMode::plain, V>(x, c);
        for (int l = 0; l < T; ++l)
          store_level<kFinal>(dst + (row + l * nn) * B + b, x[l], len, c);
      }
    }
  }
}

template <int T, bool kScaleX0>
void column_inverse(const u64* src, u64* dst, u32 columns, u32 sub_blocks, u32 nn, const u64* tw,
                    const u64* twq, const DftRegs<V>& c, u64 scale, u64 scale_q) {
  const std::size_t B = columns;
  const R sc = V::set1(scale), scq = V::set1(scale_q);
  for (u32 s = 0; s < sub_blocks; ++s) {
    const u64* w_s = tw + std::size_t{s} * (T - 1) * B;
    const u64* wq_s = twq + std::size_t{s} * (T - 1) * B;
    for (u32 i = 0; i < nn; ++i) {
      const std::size_t row = std::size_t{s} * T * nn + i;
      for (u32 b = 0; b < columns; b += V::kLanes) {
        const u32 len = chunk(columns, b);
        R x[T];
        for (int l = 0; l < T; ++l)
          x[l] = V::load_n(src + (row + l * nn) * B + b, len);
        detail::dft_small<T, DftMode::plain, V>(x, c);
        R y[T];
        y[0] = kScaleX0 ? Mod::mul2(x[0], sc, scq, c.q, c.two_q) : x[0];
        for (int r = 1; r < T; ++r) {
          const R w = V::load_n(w_s + (r - 1) * B + b, len);
          const R wq = V::load_n(wq_s + (r - 1) * B + b, len);
          y[r] = Mod::mul2(x[r], w, wq, c.q, c.two_q);
        }
        for (int r = 0; r < T; ++r) {
          V::store_n(dst + (row + r * nn) * B + b, kScaleX0 ? Mod::reduce_once(y[r], c.q) : y[r],
                     len);
        }
      }
    }
  }
}

// rows x cols matrix `in` (row-major) -> its transpose `out` (cols x rows).
void transpose(const u64* in, u64* out, u32 rows, u32 cols) {
  constexpr u32 kTile = 8;
  for (u32 r0 = 0; r0 < rows; r0 += kTile) {
    const u32 r1 = r0 + kTile < rows ? r0 + kTile : rows;
    for (u32 c = 0; c < cols; ++c) {
      for (u32 r = r0; r < r1; ++r)
        out[std::size_t{c} * rows + r] = in[std::size_t{r} * cols + c];
    }
  }
}

// ---- One tree of levels: natural levels in place, then the column levels ----------------------
// `first` is the first level of the tree; the twiddles of level l start at
// level_block_offset[l] * (T - 1); level l has blocks0 * T^(l - first) blocks of block0 / T^...

struct TreeShape {
  u32 first, levels, column_level, columns;
  u32 blocks0;      // blocks entering level `first`
  u32 block_size0;  // their size
};

template <int T>
void tree_forward(const TreeShape& shape, const TwiddleView& tw, const DftRegs<V>& c, u64* f,
                  bool final_natural) {
  u32 blocks = shape.blocks0, n = shape.block_size0;
  for (u32 level = shape.first; level < shape.column_level; ++level, blocks *= T, n /= T) {
    const std::size_t at = std::size_t{tw.level_block_offset[level]} * (T - 1);
    if (final_natural && level + 1 == shape.levels) {
      natural_forward<T, true>(f, blocks, n / T, tw.forward + at, tw.forward_quotient + at, c);
    } else {
      natural_forward<T, false>(f, blocks, n / T, tw.forward + at, tw.forward_quotient + at, c);
    }
  }
  if (shape.column_level >= shape.levels) return;
  // Transpose B blocks of n words to n rows of B columns, run the column levels on the scratch
  // copy, and let the last one write back into f.
  u64* scratch = kernel_scratch(std::size_t{blocks} * n);
  transpose(f, scratch, blocks, n);
  const u32 columns = blocks;
  for (u32 level = shape.column_level; level < shape.levels; ++level, blocks *= T, n /= T) {
    const std::size_t at = std::size_t{tw.level_block_offset[level]} * (T - 1);
    const bool last = level + 1 == shape.levels;
    const u32 sub_blocks = blocks / columns;
    if (last) {
      column_forward<T, true>(scratch, f, columns, sub_blocks, n / T, tw.forward + at,
                              tw.forward_quotient + at, c);
    } else {
      column_forward<T, false>(scratch, scratch, columns, sub_blocks, n / T, tw.forward + at,
                               tw.forward_quotient + at, c);
    }
  }
}

template <int T, bool kScaleFirst = false>
void tree_inverse(const TreeShape& shape, const TwiddleView& tw, const DftRegs<V>& c, u64* f,
                  u64 scale = 0, u64 scale_q = 0) {
  // Blocks entering level l, and their size, are blocks0 T^(l - first) and block_size0 / T^(...).
  auto blocks_at = [&](u32 level) {
    u32 b = shape.blocks0;
    for (u32 l = shape.first; l < level; ++l)
      b *= T;
    return b;
  };
  auto size_at = [&](u32 level) { return shape.blocks0 * shape.block_size0 / blocks_at(level); };
  auto twiddles = [&](u32 level, const u64*& w, const u64*& wq) {
    const std::size_t at = std::size_t{tw.level_block_offset[level]} * (T - 1);
    w = tw.inverse + at;
    wq = tw.inverse_quotient + at;
  };
  const u64* w = nullptr;
  const u64* wq = nullptr;
  if (shape.column_level < shape.levels) {
    const u32 columns = blocks_at(shape.column_level);
    u64* scratch = kernel_scratch(std::size_t{columns} * size_at(shape.column_level));
    for (u32 level = shape.levels; level-- > shape.column_level;) {
      twiddles(level, w, wq);
      const u64* src = level + 1 == shape.levels ? f : scratch;
      const u32 sub_blocks = blocks_at(level) / columns, nn = size_at(level) / T;
      if (kScaleFirst && level == shape.first) {
        column_inverse<T, true>(src, scratch, columns, sub_blocks, nn, w, wq, c, scale, scale_q);
      } else {
        column_inverse<T, false>(src, scratch, columns, sub_blocks, nn, w, wq, c, 0, 0);
      }
    }
    transpose(scratch, f, size_at(shape.column_level), columns);
  }
  for (u32 level = shape.column_level; level-- > shape.first;) {
    twiddles(level, w, wq);
    if (kScaleFirst && level == shape.first) {
      natural_inverse<T, true>(f, blocks_at(level), size_at(level) / T, w, wq, c, scale, scale_q);
    } else {
      natural_inverse<T, false>(f, blocks_at(level), size_at(level) / T, w, wq, c, 0, 0);
    }
  }
}

// ---- Radix-t NTT of Z_q[X]/Phi_M ---------------------------------------------------------------

TreeShape radix_t_shape(const NttView& p) {
  return {1, p.a, p.column_level, 0, p.t - 1, p.m};
}

// Level 0: the residues of f mod X^m - w_t^j, j = 1..t-1, are a length-t DFT across the blocks
// f_r = f[r m, (r+1) m) with f_(t-1) = 0, output 0 dropped.
template <int T>
void forward_one(const NttView& p, u64* f) {
  const DftRegs<V> c(*p.dft_forward, p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = chunk(m, i);
    R x[T];
    for (int r = 0; r + 1 < T; ++r)
      x[r] = V::load_n(f + r * m + i, len);
    x[T - 1] = V::zero();
    detail::dft_small<T, DftMode::plain, V>(x, c);
    for (int j = 1; j < T; ++j) {
      if (p.a == 1) {
        store_level<true>(f + (j - 1) * m + i, x[j], len, c);
      } else {
        store_level<false>(f + (j - 1) * m + i, x[j], len, c);
      }
    }
  }
  tree_forward<T>(radix_t_shape(p), p.twiddles, c, f, true);
}

// Undo level 0: residues g_1..g_(t-1) (g_0 = 0) -> f_r = s*DFT^-1(g)_r - s*DFT^-1(g)_(t-1).
template <int T>
void inverse_one(const NttView& p, u64* f, InverseScale scale) {
  tree_inverse<T>(radix_t_shape(p), p.twiddles, DftRegs<V>(*p.dft_inverse, p.q), f);
  const DftRegs<V> c(p.dft_inverse_last[static_cast<int>(scale)], p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = chunk(m, i);
    R x[T];
    x[0] = V::zero();
    for (int j = 1; j < T; ++j)
      x[j] = V::load_n(f + (j - 1) * m + i, len);
    detail::dft_small<T, DftMode::scaled_zero_x0, V>(x, c);
    for (int r = 0; r + 1 < T; ++r) {
      V::store_n(f + r * m + i, Mod::reduce_once(Mod::sub2(x[r], x[T - 1], c.two_q), c.q), len);
    }
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
// The t = 2 tree of X^L - 1: y0 = x0 + c' x1, y1 = x0 - c' x1. The inverse's top level (c' = 1)
// multiplies both outputs by the final scale, which its twiddle table already holds.

TreeShape radix2_shape(const Radix2View& p) {
  return {0, p.log_n, p.column_level, 0, 1, 1U << p.log_n};
}

DftConstants no_constants() {
  return {};
}

void radix2_forward(const Radix2View& p, u64* data, std::size_t count) {
  const DftConstants none = no_constants();
  const DftRegs<V> c(none, p.q);
  for (std::size_t k = 0; k < count; ++k) {
    tree_forward<2>(radix2_shape(p), p.twiddles, c, data + (k << p.log_n), true);
  }
}

void radix2_inverse(const Radix2View& p, u64* data, std::size_t count) {
  const DftConstants none = no_constants();
  const DftRegs<V> c(none, p.q);
  for (std::size_t k = 0; k < count; ++k) {
    tree_inverse<2, true>(radix2_shape(p), p.twiddles, c, data + (k << p.log_n), p.scale,
                          p.scale_quotient);
  }
}

// ---- Element-wise kernels ----------------------------------------------------------------------

// The lanes of each word size: 64-bit words (LanesWide, Lanes1) for the modular kernels and the
// linear layer, 32-bit ones (LanesWords, Words1) for the linear layer on 32-bit rows.
template <class Word>
struct TorusLanes;
template <>
struct TorusLanes<u64> {
  using Wide = LanesWide;
  using One = Lanes1;
};
template <>
struct TorusLanes<u32> {
  using Wide = LanesWords;
  using One = Words1;
};

// fn(lanes, i) over [0, len): whole registers, then the tail a word at a time.
template <class Word = u64, class Fn>
void for_each_lane_block(std::size_t len, Fn&& fn) {
  using W = typename TorusLanes<Word>::Wide;
  std::size_t i = 0;
  for (; i + W::kLanes <= len; i += W::kLanes)
    fn(W{}, i);
  for (; i < len; ++i)
    fn(typename TorusLanes<Word>::One{}, i);
}

void pointwise_montgomery(u64 q, u64 q_inv, const u64* a, const u64* b, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    L::store(out + i,
             ModLanes<L>::mont_mul(L::load(a + i), L::load(b + i), L::set1(q), L::set1(q_inv)));
  });
}

void pointwise_montgomery_accumulate(u64 q, u64 q_inv, const u64* a, const u64* b, u64* acc,
                                     std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    const auto product = M::mont_mul(L::load(a + i), L::load(b + i), qv, L::set1(q_inv));
    L::store(acc + i, M::add(L::load(acc + i), product, qv));
  });
}

// Lazy reduction: the 128-bit products of up to four terms are summed (each below q^2 < 2^124)
// and reduced once, by Montgomery's step, which needs the sum below q 2^64 (4 q < 2^64 for
// q < 2^62); so `terms` products cost 4 x 32x32 multiplies each plus one reduction per four.
void pointwise_montgomery_dot(u64 q, u64 q_inv, const u64* const* a, const u64* const* b,
                              std::size_t terms, u64* acc, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    auto total = L::load(acc + i);
    for (std::size_t k0 = 0; k0 < terms; k0 += 4) {
      auto lo = L::zero(), hi = L::zero();
      for (std::size_t k = k0; k < terms && k < k0 + 4; ++k) {
        typename L::Reg p_hi;
        const auto p_lo = L::mul_wide(L::load(a[k] + i), L::load(b[k] + i), p_hi);
        lo = L::add(lo, p_lo);
        hi = L::sub(L::add(hi, p_hi), L::gt(p_lo, lo));  // + the carry (all ones = -1)
      }
      const auto m = L::mullo(lo, L::set1(q_inv));
      total = M::add(total, M::sub(hi, L::mulhi(m, qv), qv), qv);
    }
    L::store(acc + i, total);
  });
}

// v signed: v mod q = (v + 2^64) mod q - (v < 0 ? 2^64 mod q : 0).
void lift_torus(u64 q, u64 word_ratio, u64 two64_mod_q, const u64* in, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    const auto x = L::load(in + i);
    const auto r = M::mul_shoup(x, L::set1(1), L::set1(word_ratio), qv);
    const auto wrap = L::bit_and(L::sign_mask(x), L::set1(two64_mod_q));
    L::store(out + i, M::sub(r, wrap, qv));
  });
}

// Garner's CRT: y = (x2 - x1) q1^-1 mod q2, x = x1 + q1 y, negative when x > Q/2.
void crt_lift(const core::Crt2& crt, const u64* x1p, const u64* x2p, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto q1 = L::set1(crt.q1), q2 = L::set1(crt.q2);
    const auto x1 = L::load(x1p + i);
    const auto x2 = L::load(x2p + i);
    const auto x1r = M::mul_shoup(x1, L::set1(1), L::set1(crt.q2_ratio), q2);
    const auto y = M::mul_shoup(M::sub(x2, x1r, q2), L::set1(crt.q1_inv_mod_q2.value),
                                L::set1(crt.q1_inv_mod_q2.quotient), q2);
    const auto half = L::set1(crt.q2_half);
    const auto negative = L::bit_or(
        L::gt(y, half), L::bit_and(L::eq(y, half), L::gt(x1, L::set1(crt.q1_half_up - 1))));
    const auto r = L::add(x1, L::mullo(q1, y));
    L::store(out + i, L::sub(r, L::bit_and(negative, L::set1(crt.q1q2_low))));
  });
}

// A residue v in [0, q) of a centred integer is v - q when v > (q - 1)/2 (q odd).
void limb_combine(u64 q, const u64* lo, const u64* hi, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    const auto qv = L::set1(q), half = L::set1(q / 2);
    const auto lo_c = L::load(lo + i), hi_c = L::load(hi + i);
    const auto lo_s = L::sub(lo_c, L::bit_and(L::gt(lo_c, half), qv));
    const auto hi_s = L::sub(hi_c, L::bit_and(L::gt(hi_c, half), qv));
    L::store(out + i, L::add(lo_s, L::shl32(hi_s)));
  });
}

void centred_shift(u64 q, const u64* in, std::uint32_t shift, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    const auto x = L::load(in + i);
    const auto centred = L::sub(x, L::bit_and(L::gt(x, L::set1(q / 2)), L::set1(q)));
    L::store(out + i, L::shl(centred, shift));
  });
}

// ---- The linear layer: torus words times small integer weights -------------------------------
//
// Written once over the word size: 64-bit torus words (LanesWide, Lanes1) or 32-bit ones
// (LanesWords, Words1), mod 2^64 or 2^32. Weights arrive as 64-bit two's complement and are
// reduced to the word size.
//
// Where a 64-bit vector multiply is three 32x32 products (AVX2: kFastMullo false), a weight below
// 2^32 needs two, with the two halves of the words accumulated apart:
//   sum_t w_t x_t = sum_t w_t lo(x_t) + 2^32 sum_t w_t hi(x_t)   (mod 2^64),
// where only the low 32 bits of the second sum count.

// lo + 2^32 hi - correction.
R split_result(R lo, R hi, R correction) {
  return V::sub(V::add(lo, V::shl32(hi)), correction);
}

// out[i] = init + sum_t term(lanes, weights[t], rows[t][i] as lanes): four registers of outputs
// stay in registers across all rows; the tail a register (or word) at a time.
template <class Word, class Term>
void dot_rows(const Word* const* rows, const u64* weights, std::size_t count, Word* out,
              std::size_t len, Word init, const Term& term) {
  using W = typename TorusLanes<Word>::Wide;
  constexpr std::size_t kBlock = 4 * W::kLanes;
  std::size_t i = 0;
  for (; i + kBlock <= len; i += kBlock) {
    auto a0 = W::set1(init), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t t = 0; t < count; ++t) {
      const Word* r = rows[t] + i;
      const auto w = static_cast<Word>(weights[t]);
      a0 = W::add(a0, term(W{}, w, W::load(r)));
      a1 = W::add(a1, term(W{}, w, W::load(r + W::kLanes)));
      a2 = W::add(a2, term(W{}, w, W::load(r + 2 * W::kLanes)));
      a3 = W::add(a3, term(W{}, w, W::load(r + 3 * W::kLanes)));
    }
    W::store(out + i, a0);
    W::store(out + i + W::kLanes, a1);
    W::store(out + i + 2 * W::kLanes, a2);
    W::store(out + i + 3 * W::kLanes, a3);
  }
  for_each_lane_block<Word>(len - i, [&](auto lanes, std::size_t j) {
    using L = decltype(lanes);
    auto acc = L::set1(init);
    for (std::size_t t = 0; t < count; ++t)
      acc = L::add(acc, term(lanes, static_cast<Word>(weights[t]), L::load(rows[t] + i + j)));
    L::store(out + i + j, acc);
  });
}

// When every weight is +1 or -1 (partial extraction's clean-sample maps), -x = ~x + 1 makes the
// sum sum_t (x_t XOR m_t) + (the number of -1s), m_t all ones for a -1: no multiply.
template <class Word>
void torus_dot(const Word* const* rows, const u64* weights, std::size_t count, Word* out,
               std::size_t len) {
  Word negatives = 0;
  std::size_t signs = 0;
  for (; signs < count && (weights[signs] == 1 || weights[signs] == ~u64{0}); ++signs)
    negatives += static_cast<Word>(weights[signs] >> 63);
  if (signs == count) {
    dot_rows(rows, weights, count, out, len, negatives, [](auto lanes, Word w, auto x) {
      using L = decltype(lanes);
      return L::bit_xor(L::set1(static_cast<Word>(0 - (w >> (8 * sizeof(Word) - 1)))), x);
    });
  } else {
    dot_rows(rows, weights, count, out, len, Word{0}, [](auto lanes, Word w, auto x) {
      using L = decltype(lanes);
      return L::mullo(L::set1(w), x);
    });
  }
}

// Dense torus_matmul with split weights: the weights shifted by c = -min(w, 0) into [0, 2^32)
// (`shifted`, row-major), so that sum_t (w_t + c) x_t - c sum_t x_t is the product. Four outputs
// over one register of words, a low and a high accumulator each: a row word loaded (and shifted)
// once feeds eight 32x32 products. With kSum the pass also adds up the rows and sets
// `correction` = c sum_t x_t for the later outputs of the register.
template <bool kSum>
void split_quad(const u64* const* rows, std::size_t count, const u64* shifted, u64 offset,
                std::size_t i, R& correction, u64* const* outs) {
  const u64* w0 = shifted;
  const u64* w1 = w0 + count;
  const u64* w2 = w1 + count;
  const u64* w3 = w2 + count;
  R lo0 = V::zero(), lo1 = V::zero(), lo2 = V::zero(), lo3 = V::zero();
  R hi0 = V::zero(), hi1 = V::zero(), hi2 = V::zero(), hi3 = V::zero();
  R sum = V::zero();
  for (std::size_t t = 0; t < count; ++t) {
    if (kSum) __builtin_prefetch(rows[t] + i + 4 * V::kLanes);
    const R x = V::load(rows[t] + i);
    const R xh = V::shr32(x);
    if (kSum) sum = V::add(sum, x);
    const R c0 = V::set1(w0[t]), c1 = V::set1(w1[t]);
    lo0 = V::add(lo0, V::mul32(x, c0));
    hi0 = V::add(hi0, V::mul32(xh, c0));
    lo1 = V::add(lo1, V::mul32(x, c1));
    hi1 = V::add(hi1, V::mul32(xh, c1));
    const R c2 = V::set1(w2[t]), c3 = V::set1(w3[t]);
    lo2 = V::add(lo2, V::mul32(x, c2));
    hi2 = V::add(hi2, V::mul32(xh, c2));
    lo3 = V::add(lo3, V::mul32(x, c3));
    hi3 = V::add(hi3, V::mul32(xh, c3));
  }
  if (kSum) correction = V::mullo(V::set1(offset), sum);
  V::store(outs[0] + i, split_result(lo0, hi0, correction));
  V::store(outs[1] + i, split_result(lo1, hi1, correction));
  V::store(outs[2] + i, split_result(lo2, hi2, correction));
  V::store(outs[3] + i, split_result(lo3, hi3, correction));
}

// The first `quads` outputs of torus_matmul through split_quad, when every weight is a signed
// 32-bit value; returns the words done (whole registers), 0 when the weights spread wider.
std::size_t split_matmul(const u64* const* rows, std::size_t count, const u64* weights,
                         std::size_t quads, u64* const* outs, std::size_t len) {
  std::int64_t lo = 0, hi = 0;
  for (std::size_t k = 0; k < quads * count; ++k) {
    const auto w = static_cast<std::int64_t>(weights[k]);
    lo = w < lo ? w : lo;
    hi = w > hi ? w : hi;
  }
  if (lo < -(std::int64_t{1} << 31) || hi >= (std::int64_t{1} << 31)) return 0;
  const u64 offset = 0 - static_cast<u64>(lo);
  u64* shifted = kernel_scratch(quads * count);
  for (std::size_t k = 0; k < quads * count; ++k)
    shifted[k] = weights[k] + offset;
  std::size_t i = 0;
  for (; i + V::kLanes <= len; i += V::kLanes) {
    R correction = V::zero();
    for (std::size_t o = 0; o < quads; o += 4) {
      if (o == 0 && offset != 0) {
        split_quad<true>(rows, count, shifted, offset, i, correction, outs);
      } else {
        split_quad<false>(rows, count, shifted + o * count, offset, i, correction, outs + o);
      }
    }
  }
  return i;
}

// Four outputs share every row load: 4 x 2 registers of accumulators per 2 registers of words,
// so a row word loaded once feeds four multiply-adds; and all outputs run over one block of
// words before the next, so the block's rows stay in L1. Leftover outputs go through torus_dot.
template <class Word>
void torus_matmul(const Word* const* rows, std::size_t count, const u64* weights,
                  std::size_t outputs, Word* const* outs, std::size_t len) {
  using W = typename TorusLanes<Word>::Wide;
  constexpr std::size_t kBlock = 2 * W::kLanes;
  const std::size_t quads = outputs / 4 * 4;
  std::size_t i = 0;
  if constexpr (!W::kFastMullo) {
    if (quads > 0) i = split_matmul(rows, count, weights, quads, outs, len);
  }
  if (i == 0) {
    for (; i + kBlock <= len; i += kBlock) {
      for (std::size_t o = 0; o < quads; o += 4) {
        const u64* w0 = weights + o * count;
        const u64* w1 = w0 + count;
        const u64* w2 = w1 + count;
        const u64* w3 = w2 + count;
        auto a00 = W::zero(), a01 = W::zero(), a10 = W::zero(), a11 = W::zero();
        auto a20 = W::zero(), a21 = W::zero(), a30 = W::zero(), a31 = W::zero();
        for (std::size_t t = 0; t < count; ++t) {
          if (o == 0) {  // the next block's words of this row, while they are far away
            __builtin_prefetch(rows[t] + i + 2 * kBlock);
            __builtin_prefetch(rows[t] + i + 2 * kBlock + kBlock / 2);
          }
          const auto r0 = W::load(rows[t] + i), r1 = W::load(rows[t] + i + W::kLanes);
          const auto c0 = W::set1(static_cast<Word>(w0[t])), c1 = W::set1(static_cast<Word>(w1[t]));
          a00 = W::add(a00, W::mullo(c0, r0));
          a01 = W::add(a01, W::mullo(c0, r1));
          a10 = W::add(a10, W::mullo(c1, r0));
          a11 = W::add(a11, W::mullo(c1, r1));
          const auto c2 = W::set1(static_cast<Word>(w2[t])), c3 = W::set1(static_cast<Word>(w3[t]));
          a20 = W::add(a20, W::mullo(c2, r0));
          a21 = W::add(a21, W::mullo(c2, r1));
          a30 = W::add(a30, W::mullo(c3, r0));
          a31 = W::add(a31, W::mullo(c3, r1));
        }
        W::store(outs[o] + i, a00);
        W::store(outs[o] + i + W::kLanes, a01);
        W::store(outs[o + 1] + i, a10);
        W::store(outs[o + 1] + i + W::kLanes, a11);
        W::store(outs[o + 2] + i, a20);
        W::store(outs[o + 2] + i + W::kLanes, a21);
        W::store(outs[o + 3] + i, a30);
        W::store(outs[o + 3] + i + W::kLanes, a31);
      }
    }
  }
  for (std::size_t o = 0; o < quads; ++o) {
    const u64* w = weights + o * count;
    for_each_lane_block<Word>(len - i, [&](auto lanes, std::size_t j) {
      using L = decltype(lanes);
      auto acc = L::zero();
      for (std::size_t t = 0; t < count; ++t)
        acc = L::add(acc, L::mullo(L::set1(static_cast<Word>(w[t])), L::load(rows[t] + i + j)));
      L::store(outs[o] + i + j, acc);
    });
  }
  for (std::size_t o = quads; o < outputs; ++o)
    torus_dot(rows, weights + o * count, count, outs[o], len);
}

// Adds (kSubtract: subtracts) the taps [from, to) of torus_spmm to one output's accumulators over
// a packed block (two registers of words of each row, one row after the other). The leading run
// of unit magnitudes (most weights of a model trained under an 8-bit accumulator bound are +-1)
// adds the words themselves, without a multiply.
template <bool kSubtract, class Word, class Reg>
void spmm_taps(const Word* block, const u32* column, const u64* magnitude, std::size_t from,
               std::size_t to, Reg (&acc)[4]) {
  using W = typename TorusLanes<Word>::Wide;
  constexpr std::size_t kBlock = 2 * W::kLanes;
  std::size_t k = from;
  for (; k < to && magnitude[k] == 1; ++k) {
    const Word* x = block + std::size_t{column[k]} * kBlock;
    const Reg x0 = W::load(x), x1 = W::load(x + W::kLanes);
    acc[0] = kSubtract ? W::sub(acc[0], x0) : W::add(acc[0], x0);
    acc[1] = kSubtract ? W::sub(acc[1], x1) : W::add(acc[1], x1);
  }
  for (; k < to; ++k) {
    const Reg c = W::set1(static_cast<Word>(magnitude[k]));
    const Word* x = block + std::size_t{column[k]} * kBlock;
    const Reg x0 = W::load(x), x1 = W::load(x + W::kLanes);
    Reg p[4];
    if constexpr (W::kFastMullo) {
      p[0] = W::mullo(x0, c);
      p[1] = W::mullo(x1, c);
    } else {
      p[0] = W::mul32(x0, c);
      p[1] = W::mul32(x1, c);
      p[2] = W::mul32(W::shr32(x0), c);
      p[3] = W::mul32(W::shr32(x1), c);
    }
    for (std::size_t r = 0; r < (W::kFastMullo ? 2 : 4); ++r)
      acc[r] = kSubtract ? W::sub(acc[r], p[r]) : W::add(acc[r], p[r]);
  }
}

// The rows' words are first copied, block by block of two registers, into one buffer (each row
// read front to back), so that every output then reads its taps from a few KB of L1 instead of
// from rows scattered over memory; an output costs its nonzero weights only.
template <class Word>
void torus_spmm(const Word* const* rows, std::size_t count, const u32* start, const u32* positives,
                const u32* column, const u64* magnitude, std::size_t outputs, Word* const* outs,
                std::size_t len) {
  using W = typename TorusLanes<Word>::Wide;
  using Reg = typename W::Reg;
  constexpr std::size_t kBlock = 2 * W::kLanes;
  const std::size_t whole = len / kBlock * kBlock;
  Word* packed = reinterpret_cast<Word*>(
      kernel_scratch((count * whole * sizeof(Word) + sizeof(u64) - 1) / sizeof(u64)));
  for (std::size_t t = 0; t < count; ++t)
    for (std::size_t i = 0; i < whole; i += kBlock) {
      Word* to = packed + i * count + t * kBlock;
      W::store(to, W::load(rows[t] + i));
      W::store(to + W::kLanes, W::load(rows[t] + i + W::kLanes));
    }
  for (std::size_t i = 0; i < whole; i += kBlock) {
    const Word* block = packed + i * count;
    for (std::size_t o = 0; o < outputs; ++o) {
      Reg acc[4] = {W::zero(), W::zero(), W::zero(), W::zero()};
      spmm_taps<false>(block, column, magnitude, start[o], start[o] + positives[o], acc);
      spmm_taps<true>(block, column, magnitude, start[o] + positives[o], start[o + 1], acc);
      if constexpr (W::kFastMullo) {
        W::store(outs[o] + i, acc[0]);
        W::store(outs[o] + i + W::kLanes, acc[1]);
      } else {
        W::store(outs[o] + i, W::add(acc[0], W::shl32(acc[2])));
        W::store(outs[o] + i + W::kLanes, W::add(acc[1], W::shl32(acc[3])));
      }
    }
  }
  for (std::size_t o = 0; o < outputs; ++o)
    for (std::size_t i = whole; i < len; ++i) {
      Word acc = 0;
      for (std::size_t k = start[o]; k < start[o + 1]; ++k) {
        const Word p = static_cast<Word>(magnitude[k]) * rows[column[k]][i];
        acc = k < start[o] + positives[o] ? acc + p : acc - p;
      }
      outs[o][i] = acc;
    }
}

// The top 32 bits of each word rounded to nearest, and what the rounding adds summed by position
// mod period (KernelTable::narrow_words).
void narrow_words(const u64* in, u32* out, u64* acc, std::size_t period, std::size_t len) {
  const R half = V::set1(u64{1} << 31);
  for (std::size_t k = 0; k < len; k += period) {
    const auto part = static_cast<u32>(len - k < period ? len - k : period);
    for (u32 j = 0; j < part; j += V::kLanes) {
      const u32 n = chunk(part, j);
      const R x = V::load_n(in + k + j, n);
      const R top = V::shr32(V::add(x, half));
      V::store_low32_n(out + k + j, top, n);
      V::store_n(acc + j, V::add(V::load_n(acc + j, n), V::sub(V::shl32(top), x)), n);
    }
  }
}

constexpr KernelTable kTable = {
    SAFHIRE_SIMD_NAME,
    ntt_forward,
    ntt_inverse,
    radix2_forward,
    radix2_inverse,
    pointwise_montgomery,
    pointwise_montgomery_accumulate,
    pointwise_montgomery_dot,
    lift_torus,
    crt_lift,
    limb_combine,
    centred_shift,
    torus_dot<u64>,
    torus_matmul<u64>,
    torus_spmm<u64>,
    torus_dot<u32>,
    torus_matmul<u32>,
    torus_spmm<u32>,
    narrow_words,
};

}  // namespace safhire::ring::simd::SAFHIRE_SIMD_NS
