// The linear layer: torus words (64-bit, or 32-bit rows) times small integer weights, dense and
// sparse, and the narrowing of rows to 32-bit words.
// Part of kernels-inl.hpp: included there, inside the instruction set's namespace, with no
// include guard on purpose.

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
