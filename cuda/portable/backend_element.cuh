// Per-word bodies of the CUDA backend's kernels (cuda/backend.cu), shared with the CPU replay in
// tests/hybrid/test_backend_emulation.cpp: each computes one output word from its inputs without
// state, so one GPU thread owns it. Rows are [count][W] words (backend::row_words): 64-bit, or
// 32-bit (backend::Config::row_bits = 32) where the Args' rows32 pointers are set instead, in
// which case extraction makes 64-bit rows that narrow_thread rounds (backend::narrow_word, the
// key's mean compensated in the bodies: backend::narrow_body), the linear layer sums mod 2^32
// and the gathers of packing lift them back (backend::widen_word).
#pragma once

#include <cstddef>
#include <cstdint>

#include "safhire/backend/backend.hpp"
#include "safhire/core/hostdevice.hpp"
#include "safhire/elements/sample_extract.hpp"
#include "tree_element.cuh"

namespace safhire::cuda::block {

// Where extraction writes its rows (W words each, backend::row_words): row r at
// rows + r stride. The kernels write 64-bit rows (rows32 null; narrow_thread rounds them later);
// an Ops that rounds as it writes (cuda::narrows_as_it_writes, the CPU's) may instead be given
// 32-bit rows, rows32 set and rows null, the key's mean map (backend::key_mean_map, L x L, or
// null) and its padding words [W, stride) to zero.
struct RowsOut {
  u64* rows;
  u32* rows32;
  const std::int64_t* key_mean;
  std::size_t stride;
};

// Sample extraction of every value of an upload at gamma = 0 (rlwe::sample_extract_into): value
// v = c N + j is coefficient j of ciphertext c (a, b: [chunks][N]) and becomes row dest[v]: the
// mask words of elements::extracted_mask_word, then b_j. One thread per word of the values' rows.
struct ExtractArgs {
  const u64* a;
  const u64* b;
  const u32* dest;
  RowsOut out;
  u32 N, M, m, W;
};

SAFHIRE_HD void extract_thread(const ExtractArgs& g, std::size_t x) {
  const std::size_t v = x / g.W;
  const auto i = static_cast<u32>(x % g.W);
  const std::size_t c = v / g.N;
  const auto j = static_cast<u32>(v % g.N);
  g.out.rows[std::size_t{g.dest[v]} * g.out.stride + i] =
      i == g.N ? g.b[c * g.N + j]
               : elements::extracted_mask_word(g.a + c * g.N, j, i, g.N, g.M, g.m);
}

// Extraction at gamma >= 1, step 1: each power ciphertext to block-major lanes, [powers][T][L]
// (lane j of block u is coefficient u + T j), as PartialExtraction's blocks; power c K + kk is
// power kk of chunk c. The ciphertexts (a, b) are chunk-major, [chunks][K][N] (uploaded), or
// element-major, [K][chunks][N] (derived on the device, element by element).
struct BlocksArgs {
  const u64* a;
  const u64* b;
  u64* blocks_a;
  u64* blocks_b;
  u32 N, T, L, K, chunks;
  bool element_major;
};

SAFHIRE_HD void blocks_thread(const BlocksArgs& g, std::size_t x) {
  const std::size_t power = x / g.N;
  const auto y = static_cast<u32>(x % g.N);
  const std::size_t to = (power * g.T + y % g.T) * g.L + y / g.T;
  const std::size_t kk = power % g.K, c = power / g.K;
  const std::size_t from = g.element_major ? (kk * g.chunks + c) * g.N + y : x;
  g.blocks_a[to] = g.a[from];
  g.blocks_b[to] = g.b[from];
}

// Step 2: the clean samples (PartialExtraction::clean_samples, which the CPU runs). Value
// v = c N + i + T j (block i, lane j of chunk c) becomes row dest[v]; word w of it is lane r of
// component a_(w / L) (w < N) or of b (w >= N, r = w - N):
//   sum over powers kk and lanes l of map[kk][j][r][l] times lane l of conjugate (i, kk),
// conjugate (i, kk) being block u = k i mod T of power kk times Z^twist (twist = -floor(k i / T)
// mod Mg): component a_v is Z^twist a_(u-v) (v <= u) or Z^(twist+1) a_(u+T-v), b is Z^twist b_u.
struct CleanArgs {
  const u64* blocks_a;  // [chunks][K][T][L]
  const u64* blocks_b;
  const u64* map;       // [K][L][L][L], PartialExtraction::clean_sample_map
  const u64* elements;  // the K Galois elements of the powers
  const u32* dest;
  RowsOut out;
  u32 N, T, L, K, Mg, mg, W;
};

SAFHIRE_HD void clean_thread(const CleanArgs& g, std::size_t x) {
  const std::size_t value = x / g.W;
  const auto w = static_cast<u32>(x % g.W);
  const std::size_t c = value / g.N;
  const auto p = static_cast<u32>(value % g.N);
  const u32 i = p % g.T, j = p / g.T;
  const bool is_b = w >= g.N;
  const u32 v = is_b ? 0 : w / g.L, r = is_b ? w - g.N : w % g.L;
  u64 sum = 0;
  for (u32 kk = 0; kk < g.K; ++kk) {
    const u64 ki = g.elements[kk] * i;
    const auto u = static_cast<u32>(ki % g.T);
    const auto q = static_cast<u32>(ki / g.T % g.Mg);
    const u32 twist = q == 0 ? 0 : g.Mg - q;
    const std::size_t power = (c * g.K + kk) * g.T;
    const u64* src;
    u32 e = twist;
    if (is_b) {
      src = g.blocks_b + (power + u) * g.L;
    } else if (v <= u) {
      src = g.blocks_a + (power + u - v) * g.L;
    } else {
      src = g.blocks_a + (power + u + g.T - v) * g.L;
      e = e + 1 == g.Mg ? 0 : e + 1;
    }
    const u64* coefficients = g.map + ((std::size_t{kk} * g.L + j) * g.L + r) * g.L;
    for (u32 l = 0; l < g.L; ++l) {
      if (coefficients[l] != 0)
        sum += coefficients[l] * monomial_coefficient(src, l, e, g.L, g.Mg, g.mg);
    }
  }
  g.out.rows[std::size_t{g.dest[value]} * g.out.stride + w] = sum;
}

// 64-bit rows ([count][W], W = N + L) rounded to 32-bit ones: mask words by narrow_word, body
// lane r by narrow_body with row r of backend::key_mean_map (map: L x L, or null), the lane
// errors summed over the row by the thread itself (N words per body word).
struct NarrowArgs {
  const u64* rows;
  const std::int64_t* map;
  u32* rows32;
  u32 N, L, W;
};

SAFHIRE_HD void narrow_thread(const NarrowArgs& g, std::size_t x) {
  const auto w = static_cast<u32>(x % g.W);
  if (w < g.N) {
    g.rows32[x] = backend::narrow_word(g.rows[x]);
    return;
  }
  const u64* row = g.rows + (x - w);
  const u32 r = w - g.N;
  g.rows32[x] =
      backend::narrow_body(row[w], g.map == nullptr ? nullptr : g.map + std::size_t{r} * g.L, g.L,
                           [&](u32 l) { return backend::lane_narrow_error(row, g.N, g.L, l); });
}

// The linear layer (backend::LinearLayer in compressed rows): word w of output o is
// sum over its taps of weight * word w of row `index` of source `source`, plus the bias at word N;
// written to row slot[o]. sources[s] is the device address of source s's rows. On 32-bit rows
// (out32 set instead of out) the same mod 2^32, the bias rounded.
struct LinearArgs {
  const void* const* sources;
  const u32* tap_start;
  const backend::Tap* taps;
  const u32* slot;
  const u64* bias;
  u64* out;
  u32* out32;
  u32 N, W;
};

template <class Word>
SAFHIRE_HD Word linear_word(const LinearArgs& g, std::size_t o, u32 w, Word bias) {
  Word sum = w == g.N ? bias : Word{0};
  for (u32 k = g.tap_start[o]; k < g.tap_start[o + 1]; ++k) {
    const backend::Tap& t = g.taps[k];
    const auto weight = static_cast<Word>(static_cast<std::int64_t>(t.weight));
    sum += weight * static_cast<const Word*>(g.sources[t.source])[std::size_t{t.index} * g.W + w];
  }
  return sum;
}

SAFHIRE_HD void linear_thread(const LinearArgs& g, std::size_t x) {
  const std::size_t o = x / g.W;
  const auto w = static_cast<u32>(x % g.W);
  const std::size_t at = std::size_t{g.slot[o]} * g.W + w;
  if (g.out32 != nullptr) {
    g.out32[at] = linear_word<u32>(g, o, w, backend::narrow_word(g.bias[o]));
  } else {
    g.out[at] = linear_word<u64>(g, o, w, g.bias[o]);
  }
}

// The LWE samples of one part of each pack at gamma = 0, for levels::pack_lwes: sample j < items of
// pack p is row p N + first + j stride (zero past `values`), split into its mask, masks
// [packs][items][N], and body, bodies [packs][items]. The whole pack: first 0, stride 1, items N.
struct GatherLweArgs {
  const u64* rows;
  const u32* rows32;  // 32-bit rows: set instead of rows
  u64* masks;
  u64* bodies;
  std::size_t values;
  u32 N, W, items, first, stride;
};

// The row of sample `sample` ([packs][items]) of a part: pack p's first + j stride.
SAFHIRE_HD std::size_t part_row(std::size_t sample, u32 items, u32 first, u32 stride, u32 N) {
  return sample / items * N + first + std::size_t{stride} * (sample % items);
}

SAFHIRE_HD void gather_lwe_thread(const GatherLweArgs& g, std::size_t x) {
  const std::size_t sample = x / (std::size_t{g.N} + 1);
  const auto i = static_cast<u32>(x % (std::size_t{g.N} + 1));
  const std::size_t row = part_row(sample, g.items, g.first, g.stride, g.N);
  u64 word = 0;
  if (row < g.values)
    word =
        g.rows32 != nullptr ? backend::widen_word(g.rows32[row * g.W + i]) : g.rows[row * g.W + i];
  if (i < g.N) {
    g.masks[sample * g.N + i] = word;
  } else {
    g.bodies[sample] = word;
  }
}

// The block ciphertexts of one part of each pack at gamma >= 1 (PartialExtraction::embed_lane_sum
// on the host): block beta of pack p is x = sum_z Z^z row(p N + beta + T z) over R_gamma (L =
// phi(t^gamma) lanes, Z^(Mg) = 1 with Phi_Mg), embedded: coefficient u + T j of a is lane j of
// x.a_0 (u = 0) or of Z^(Mg - 1) x.a_(T-u); of b, lane j of x.b (u = 0) or 0. The part's block
// i < items of pack p is beta = first + i stride. Outputs a, b: [packs][items][N]. The whole pack:
// first 0, stride 1, items T.
struct GatherBlocksArgs {
  const u64* rows;
  const u32* rows32;  // 32-bit rows: set instead of rows
  u64* out_a;
  u64* out_b;
  std::size_t values;
  u32 N, T, L, Mg, mg, W, items, first, stride;
};

// Coefficient x of the blocks from rows of Word (the sums in that word; lifted by the caller).
template <class Word>
SAFHIRE_HD void gather_blocks_words(const GatherBlocksArgs& g, const Word* rows, std::size_t x,
                                    Word& a, Word& b) {
  const auto coefficient = static_cast<u32>(x % g.N);
  const std::size_t block = x / g.N;  // p items + i
  const std::size_t pack = block / g.items;
  const u32 beta = g.first + g.stride * static_cast<u32>(block % g.items);
  const u32 u = coefficient % g.T, j = coefficient / g.T;
  const u32 component = u == 0 ? 0 : g.T - u;  // a_component; b is component T
  const u32 twist = u == 0 ? 0 : g.Mg - 1;
  a = 0;
  b = 0;
  for (u32 z = 0; z < g.L; ++z) {
    const std::size_t s = pack * g.N + beta + std::size_t{g.T} * z;
    if (s >= g.values) continue;
    const Word* row = rows + s * g.W;
    a += monomial_coefficient(row + std::size_t{component} * g.L, j, (z + twist) % g.Mg, g.L, g.Mg,
                              g.mg);
    if (u == 0) b += monomial_coefficient(row + std::size_t{g.T} * g.L, j, z, g.L, g.Mg, g.mg);
  }
}

// (Lifting is additive: widen_word(x + y mod 2^32) = widen_word(x) + widen_word(y) mod 2^64, so
// 32-bit rows are summed in 32 bits and the sums lifted.)
SAFHIRE_HD void gather_blocks_thread(const GatherBlocksArgs& g, std::size_t x) {
  if (g.rows32 != nullptr) {
    u32 a, b;
    gather_blocks_words(g, g.rows32, x, a, b);
    g.out_a[x] = backend::widen_word(a);
    g.out_b[x] = backend::widen_word(b);
  } else {
    u64 a, b;
    gather_blocks_words(g, g.rows, x, a, b);
    g.out_a[x] = a;
    g.out_b[x] = b;
  }
}

}  // namespace safhire::cuda::block
