// The levels of the radix-t transforms: natural levels (a loop along each block's contiguous
// words), column levels (along the columns of the transposed layout) and one tree of them.
//
// A transform is a sequence of levels (ntt_view.hpp). A natural level runs, for every block, a
// loop along the contiguous words of the block: twist part r by c'^r, then a length-t DFT across
// the parts. A column level runs the same butterflies with the loop along the columns of the
// transposed layout, where consecutive words belong to consecutive blocks. Either way every
// load and store is a whole register (or a masked tail). Values stay lazy in [0, 2q) between
// levels; the last level of each direction reduces to [0, q).
// Part of kernels-inl.hpp: included there, inside the instruction set's namespace, with no
// include guard on purpose.

// Store, reducing [0, 2q) -> [0, q) on the last level.
template <bool kFinal>
void store_level(u64* p, R v, u32 len, const DftRegs<V>& c) {
  V::store_n(p, kFinal ? Mod::reduce_once(v, c.q) : v, len);
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
