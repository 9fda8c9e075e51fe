// The CKKS backend's negacyclic NTT (ring/negacyclic_ntt.hpp: Cooley-Tukey forward from natural
// to bit-reversed order, Gentleman-Sande back) in two passes over global memory instead of one
// per level: each thread block loads a tile of one limb into shared memory, runs every level that
// stays inside the tile there, and writes it back. Written for one thread of a block: thread
// `tid` of `threads`, with `sync()` a barrier across the block. The CUDA kernel (ckks_rns.cu,
// through ckks_kernels.cuh: ntt_tile) calls these bodies with threadIdx.x, blockDim.x and
// __syncthreads(); tests/ring/test_negacyclic_ntt_tile.cpp runs the same code on std::threads
// meeting at a std::barrier.
//
// The split, for N = 2^log_n, with S = N >> column_levels:
//   - column levels: the first column_levels levels of the forward transform (group distance
//     t >= S), the last ones of the inverse. Column c (0 <= c < S) holds the words c + k S,
//     which no butterfly of these levels mixes with another column's. A tile is `columns`
//     neighbouring columns, stored row by row (tile[k columns + c]) so that neighbouring threads
//     touch neighbouring words in global and shared memory alike.
//   - chunk levels: the other levels (t < S), inside chunks of S contiguous words; a tile is
//     kTileWords / S neighbouring chunks.
// For N <= kTileWords the column levels are all of them (S = 1, one tile per limb, one pass).
//
// Each butterfly is the radix-2 kernel's, on the same tables (twiddle m + i of group i at a level
// of m groups; the inverse's h + i with h = N / 2t), so the lazy ranges are the same:
//   forward: inputs in [0, q), values in [0, 4q) between levels, outputs reduced to [0, q);
//   inverse: inputs in [0, q), values in [0, 2q) between levels, outputs times N^-1 in [0, q).
// The outputs are fully reduced, so they are the CPU's words whatever order the levels run in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::cuda::negacyclic {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

// Words of one tile: 16 KB of shared memory, within what any block may take without opting in.
inline constexpr u32 kTileWords = 2048;
// Chunk levels when N > kTileWords: chunks of 512 words, four to a tile.
inline constexpr u32 kChunkLevels = 9;

struct Split {
  u32 log_n = 0;
  u32 column_levels = 0;
  u32 stride = 1;      // S = N >> column_levels: the columns' stride and the chunks' length
  u32 tile_words = 0;  // min(N, kTileWords)
  u32 columns = 1;     // columns per tile: tile_words >> column_levels
  u32 tiles = 1;       // tiles per limb (thread blocks per limb) in either pass
  SAFHIRE_HD u32 n() const { return u32{1} << log_n; }
  SAFHIRE_HD bool has_chunk_pass() const { return column_levels < log_n; }
};

// 1 <= log_n <= 20.
SAFHIRE_HD Split split(u32 log_n) {
  Split s;
  s.log_n = log_n;
  s.column_levels = log_n <= 11 ? log_n : log_n - kChunkLevels;
  s.stride = s.n() >> s.column_levels;
  s.tile_words = s.n() < kTileWords ? s.n() : kTileWords;
  s.columns = s.tile_words >> s.column_levels;
  s.tiles = s.n() / s.tile_words;
  return s;
}

// Harvey's forward butterfly: x, y in [0, 4q) -> x + w y, x - w y in [0, 4q).
SAFHIRE_HD void forward_butterfly(u64& x, u64& y, u64 w, u64 w_quotient, u64 q) {
  const u64 q2 = 2 * q;
  const u64 u = x >= q2 ? x - q2 : x;
  const u64 v = core::mul_shoup_lazy(y, w, w_quotient, q);  // [0, 2q)
  x = u + v;
  y = u - v + q2;
}

// The inverse butterfly: x, y in [0, 2q) -> x + y, w (x - y) in [0, 2q).
SAFHIRE_HD void inverse_butterfly(u64& x, u64& y, u64 w, u64 w_quotient, u64 q) {
  const u64 q2 = 2 * q;
  const u64 s = x + y;
  const u64 d = x - y + q2;
  x = s >= q2 ? s - q2 : s;
  y = core::mul_shoup_lazy(d, w, w_quotient, q);
}

// [0, 4q) -> [0, q).
SAFHIRE_HD u64 reduce_from_4q(u64 v, u64 q) {
  v = v >= 2 * q ? v - 2 * q : v;
  return v >= q ? v - q : v;
}

// The tables one limb's transform reads: its prime's twiddles (NegacyclicNtt::Tables, forward or
// inverse, N words each) and N^-1 for the inverse.
struct LimbTables {
  const u64* twiddles;
  const u64* quotients;
  u64 q;
  u64 n_inv, n_inv_quotient;
};

template <class Sync>
SAFHIRE_HD void load_columns(const u64* a, const Split& s, u32 tile, u64* shared, u32 tid,
                             u32 threads, Sync&& sync) {
  const u32 first = tile * s.columns;
  for (u32 x = tid; x < s.tile_words; x += threads)
    shared[x] = a[first + x % s.columns + std::size_t{x / s.columns} * s.stride];
  sync();
}

// A chunk-pass tile: tile_words contiguous words from tile * tile_words.
template <class Sync>
SAFHIRE_HD void load_chunks(const u64* a, const Split& s, u32 tile, u64* shared, u32 tid,
                            u32 threads, Sync&& sync) {
  const std::size_t first = std::size_t{tile} * s.tile_words;
  for (u32 x = tid; x < s.tile_words; x += threads)
    shared[x] = a[first + x];
  sync();
}

// The forward column levels on `tile`, in place in a (one limb, inputs in [0, q)): outputs in
// [0, 4q), or in [0, q) when there is no chunk pass after them.
template <class Sync>
SAFHIRE_HD void forward_columns(u64* a, const LimbTables& t, const Split& s, u32 tile, u64* shared,
                                u32 tid, u32 threads, Sync&& sync) {
  load_columns(a, s, tile, shared, tid, threads, sync);
  const u32 rows = u32{1} << s.column_levels;
  for (u32 level = 0; level < s.column_levels; ++level) {
    const u32 m = u32{1} << level, d = rows >> (level + 1);  // groups, distance in rows
    for (u32 b = tid; b < s.tile_words / 2; b += threads) {
      const u32 c = b % s.columns, r = b / s.columns;
      const u32 i = r / d, k = 2 * i * d + r % d;  // group i: it is the same group globally
      forward_butterfly(shared[k * s.columns + c], shared[(k + d) * s.columns + c],
                        t.twiddles[m + i], t.quotients[m + i], t.q);
    }
    sync();
  }
  const bool last = !s.has_chunk_pass();
  const u32 first = tile * s.columns;
  for (u32 x = tid; x < s.tile_words; x += threads) {
    const u64 v = shared[x];
    a[first + x % s.columns + std::size_t{x / s.columns} * s.stride] =
        last ? reduce_from_4q(v, t.q) : v;
  }
}

// The forward chunk levels on `tile`, in place in a (values in [0, 4q)): outputs in [0, q).
template <class Sync>
SAFHIRE_HD void forward_chunks(u64* a, const LimbTables& t, const Split& s, u32 tile, u64* shared,
                               u32 tid, u32 threads, Sync&& sync) {
  load_chunks(a, s, tile, shared, tid, threads, sync);
  const u32 butterflies = s.tile_words / 2;
  for (u32 m = u32{1} << s.column_levels, d = s.stride / 2; d >= 1; m *= 2, d /= 2) {
    for (u32 b = tid; b < butterflies; b += threads) {
      // Global butterfly g of group i; the tile's butterflies stay in the tile (d | butterflies).
      const u32 g = tile * butterflies + b;
      const u32 i = g / d, k = 2 * (b / d) * d + b % d;
      forward_butterfly(shared[k], shared[k + d], t.twiddles[m + i], t.quotients[m + i], t.q);
    }
    sync();
  }
  const std::size_t first = std::size_t{tile} * s.tile_words;
  for (u32 x = tid; x < s.tile_words; x += threads)
    a[first + x] = reduce_from_4q(shared[x], t.q);
}

// The inverse chunk levels (distance d = 1 .. S/2) on `tile`, in place in a (inputs in [0, q)):
// outputs in [0, 2q).
template <class Sync>
SAFHIRE_HD void inverse_chunks(u64* a, const LimbTables& t, const Split& s, u32 tile, u64* shared,
                               u32 tid, u32 threads, Sync&& sync) {
  load_chunks(a, s, tile, shared, tid, threads, sync);
  const u32 butterflies = s.tile_words / 2;
  for (u32 h = s.n() / 2, d = 1; d < s.stride; h /= 2, d *= 2) {
    for (u32 b = tid; b < butterflies; b += threads) {
      const u32 g = tile * butterflies + b;
      const u32 i = g / d, k = 2 * (b / d) * d + b % d;
      inverse_butterfly(shared[k], shared[k + d], t.twiddles[h + i], t.quotients[h + i], t.q);
    }
    sync();
  }
  const std::size_t first = std::size_t{tile} * s.tile_words;
  for (u32 x = tid; x < s.tile_words; x += threads)
    a[first + x] = shared[x];
}

// The inverse column levels (distance S .. N/2) on `tile`, in place in a (inputs in [0, 2q), or
// in [0, q) when there was no chunk pass), then times N^-1: outputs in [0, q).
template <class Sync>
SAFHIRE_HD void inverse_columns(u64* a, const LimbTables& t, const Split& s, u32 tile, u64* shared,
                                u32 tid, u32 threads, Sync&& sync) {
  load_columns(a, s, tile, shared, tid, threads, sync);
  const u32 rows = u32{1} << s.column_levels;
  for (u32 h = rows / 2, d = 1; h >= 1; h /= 2, d *= 2) {  // h groups, distance d in rows
    for (u32 b = tid; b < s.tile_words / 2; b += threads) {
      const u32 c = b % s.columns, r = b / s.columns;
      const u32 i = r / d, k = 2 * i * d + r % d;
      inverse_butterfly(shared[k * s.columns + c], shared[(k + d) * s.columns + c],
                        t.twiddles[h + i], t.quotients[h + i], t.q);
    }
    sync();
  }
  const u32 first = tile * s.columns;
  for (u32 x = tid; x < s.tile_words; x += threads) {
    a[first + x % s.columns + std::size_t{x / s.columns} * s.stride] =
        core::mul_shoup(shared[x], t.n_inv, t.n_inv_quotient, t.q);
  }
}

}  // namespace safhire::cuda::negacyclic
