// The body of the radix-t NTT kernels, written for one thread of a thread block: thread `tid` of
// `threads`, with `sync()` a barrier across the block. One block transforms one polynomial held
// in `poly` (N words of block-shared memory), one thread per butterfly and a barrier per level.
// The CUDA kernels (ntt_radix_t.cu) call these with threadIdx.x, blockDim.x and __syncthreads();
// the CPU test tests/ring/test_ntt_block.cpp runs the same code on std::threads with a
// std::barrier, so the GPU's index arithmetic is checked where there is no GPU.
//
// The butterflies are the CPU's (detail/dft_small.hpp), run on the natural in-place layout of
// NttPlan's factorisation tree; the CPU's transposed column levels (ntt_view.hpp) appear only in
// the twiddle indexing and in the final store, so the outputs match the CPU kernels word for word.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_lanes.cuh"
#include "safhire/core/hostdevice.hpp"
#include "safhire/ring/detail/dft_small.hpp"
#include "safhire/ring/ntt_view.hpp"

namespace safhire::cuda::block {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

// Blocks entering the column level (ntt_view.hpp): (t-1) t^(c-1), or 1 without column levels.
SAFHIRE_HD u32 column_count(const ring::NttView& p) {
  if (p.a == 1) return 1;
  u32 columns = p.t - 1;
  for (u32 l = 1; l < p.column_level; ++l)
    columns *= p.t;
  return columns;
}

// Index of twiddle r (1 <= r < T) of natural block beta at `level`, which has `blocks` blocks
// (ntt_view.hpp, TwiddleView): [beta][r-1] on natural levels, [s][r-1][b] with beta = b S + s on
// column levels.
template <int T>
SAFHIRE_HD std::size_t twiddle_index(const ring::NttView& p, u32 level, u32 blocks, u32 columns,
                                     u32 beta, int r) {
  const std::size_t base = std::size_t{p.twiddles.level_block_offset[level]} * (T - 1);
  if (level < p.column_level) return base + std::size_t{beta} * (T - 1) + (r - 1);
  const u32 sub_blocks = blocks / columns;
  const u32 b = beta / sub_blocks, s = beta % sub_blocks;
  return base + (std::size_t{s} * (T - 1) + (r - 1)) * columns + b;
}

// f (global memory, N words in [0, q)) -> its NTT in slot order, in place. poly: N words shared
// by the block.
template <int T, class Sync>
SAFHIRE_HD void ntt_forward(const ring::NttView& p, u64* f, u64* poly, u32 tid, u32 threads,
                            Sync&& sync) {
  using Mod = ring::detail::ModLanes<DeviceLanes>;
  using ring::detail::DftMode;
  for (u32 i = tid; i < p.N; i += threads)
    poly[i] = f[i];
  sync();

  const ring::detail::DftRegs<DeviceLanes> c(*p.dft_forward, p.q);
  // Level 0: residues mod X^m - w_t^j, j = 1..t-1, from blocks f_0..f_(t-2) (f_(t-1) = 0).
  for (u32 i = tid; i < p.m; i += threads) {
    u64 x[T];
    for (int r = 0; r + 1 < T; ++r)
      x[r] = poly[r * p.m + i];
    x[T - 1] = 0;
    ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
    for (int j = 1; j < T; ++j)
      poly[(j - 1) * p.m + i] = x[j];
  }
  sync();

  const u32 columns = column_count(p);
  u32 blocks = T - 1, n = p.m;
  for (u32 level = 1; level < p.a; ++level, blocks *= T, n /= T) {
    const u32 nn = n / T;
    for (u32 j = tid; j < blocks * nn; j += threads) {
      const u32 beta = j / nn, i = j % nn;
      u64* base = poly + std::size_t{beta} * n;
      u64 x[T];
      x[0] = base[i];
      for (int r = 1; r < T; ++r) {
        const std::size_t at = twiddle_index<T>(p, level, blocks, columns, beta, r);
        x[r] = Mod::mul4(base[r * nn + i], p.twiddles.forward[at], p.twiddles.forward_quotient[at],
                         c.q);
      }
      ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
      for (int l = 0; l < T; ++l)
        base[l * nn + i] = x[l];
    }
    sync();
  }
  // Output slot o = k B + b holds natural slot b n_c + k.
  const u32 block_size = p.N / columns;
  for (u32 o = tid; o < p.N; o += threads) {
    const u32 k = o / columns, b = o % columns;
    f[o] = Mod::reduce_once(poly[b * block_size + k], c.q);
  }
}

// f (global memory, N words in [0, q), slot order) -> the coefficients times the scale of
// `scale` (ring::InverseScale), in place.
template <int T, class Sync>
SAFHIRE_HD void ntt_inverse(const ring::NttView& p, u64* f, u64* poly, u32 tid, u32 threads,
                            int scale, Sync&& sync) {
  using Mod = ring::detail::ModLanes<DeviceLanes>;
  using ring::detail::DftMode;
  const u32 columns = column_count(p);
  const u32 block_size = p.N / columns;
  for (u32 o = tid; o < p.N; o += threads) {
    const u32 k = o / columns, b = o % columns;
    poly[b * block_size + k] = f[o];
  }
  sync();

  const ring::detail::DftRegs<DeviceLanes> c(*p.dft_inverse, p.q);
  for (u32 level = p.a - 1; level >= 1; --level) {
    u32 blocks = T - 1, n = p.m;
    for (u32 l = 1; l < level; ++l)
      blocks *= T, n /= T;
    const u32 nn = n / T;
    for (u32 j = tid; j < blocks * nn; j += threads) {
      const u32 beta = j / nn, i = j % nn;
      u64* base = poly + std::size_t{beta} * n;
      u64 x[T];
      for (int l = 0; l < T; ++l)
        x[l] = base[l * nn + i];
      ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
      base[i] = x[0];
      for (int r = 1; r < T; ++r) {
        const std::size_t at = twiddle_index<T>(p, level, blocks, columns, beta, r);
        base[r * nn + i] =
            Mod::mul2(x[r], p.twiddles.inverse[at], p.twiddles.inverse_quotient[at], c.q, c.two_q);
      }
    }
    sync();
  }
  // Undo level 0 with the global scale: f_r = s DFT^-1(g)_r - s DFT^-1(g)_(t-1), g_0 = 0.
  const ring::detail::DftRegs<DeviceLanes> last(p.dft_inverse_last[scale], p.q);
  for (u32 i = tid; i < p.m; i += threads) {
    u64 x[T];
    x[0] = 0;
    for (int j = 1; j < T; ++j)
      x[j] = poly[(j - 1) * p.m + i];
    ring::detail::dft_small<T, DftMode::scaled_zero_x0, DeviceLanes>(x, last);
    for (int r = 0; r + 1 < T; ++r) {
      f[r * p.m + i] = Mod::reduce_once(Mod::sub2(x[r], x[T - 1], last.two_q), last.q);
    }
  }
}

}  // namespace safhire::cuda::block
