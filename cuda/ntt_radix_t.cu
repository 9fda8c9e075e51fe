// The radix-t NTT on the GPU: one thread block per (polynomial, prime), the polynomial held in
// shared memory (N <= 2500 words: 20 KB), one thread per butterfly and a barrier per level. The
// butterflies are the CPU's (detail/dft_small.hpp, Rader/Winograd length-t DFTs), run on the
// natural in-place layout of reference §2.2; the transposed order of the CPU column levels
// (ntt_view.hpp) appears only in the twiddle indexing and in the final store, so outputs match
// the CPU kernels word for word.
#include <cuda_runtime.h>

#include <string>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/core/error.hpp"
#include "safhire/cuda/kernels.hpp"
#include "safhire/ring/detail/dft_small.hpp"

namespace safhire::cuda {

namespace {

using ring::NttView;
using ring::detail::DftMode;
using ring::detail::DftRegs;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using Mod = ring::detail::ModLanes<DeviceLanes>;

constexpr unsigned kNttThreads = 256;

// Blocks entering the column level (ntt_view.hpp): (t-1) t^(c-1), or 1 without column levels.
__device__ u32 column_count(const NttView& p) {
  if (p.a == 1) return 1;
  u32 columns = p.t - 1;
  for (u32 l = 1; l < p.column_level; ++l)
    columns *= p.t;
  return columns;
}

// Index of twiddle r (1 <= r < T) of block beta at `level` (ntt_view.hpp, TwiddleView).
template <int T>
__device__ size_t twiddle_index(const NttView& p, u32 level, u32 blocks, u32 columns, u32 beta,
                                int r) {
  const size_t base = size_t{p.twiddles.level_block_offset[level]} * (T - 1);
  if (level < p.column_level) return base + size_t{beta} * (T - 1) + (r - 1);
  const u32 sub_blocks = blocks / columns;  // beta = b * S + s
  const u32 b = beta / sub_blocks, s = beta % sub_blocks;
  return base + (size_t{s} * (T - 1) + (r - 1)) * columns + b;
}

template <int T>
static __global__ void __launch_bounds__(kNttThreads)
    ntt_forward_kernel(const NttView* views, u64* data, u32 count) {
  extern __shared__ u64 poly[];
  const NttView p = views[blockIdx.y];
  u64* f = data + (size_t{blockIdx.y} * count + blockIdx.x) * p.N;
  for (u32 i = threadIdx.x; i < p.N; i += blockDim.x)
    poly[i] = f[i];
  __syncthreads();

  const DftRegs<DeviceLanes> c(*p.dft_forward, p.q);
  // Level 0: residues mod X^m - w_t^j, j = 1..t-1, from blocks f_0..f_(t-2) (f_(t-1) = 0).
  for (u32 i = threadIdx.x; i < p.m; i += blockDim.x) {
    u64 x[T];
    for (int r = 0; r + 1 < T; ++r)
      x[r] = poly[r * p.m + i];
    x[T - 1] = 0;
    ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
    for (int j = 1; j < T; ++j)
      poly[(j - 1) * p.m + i] = x[j];
  }
  __syncthreads();

  const u32 columns = column_count(p);
  u32 blocks = T - 1, n = p.m;
  for (u32 level = 1; level < p.a; ++level, blocks *= T, n /= T) {
    const u32 nn = n / T;
    for (u32 j = threadIdx.x; j < blocks * nn; j += blockDim.x) {
      const u32 beta = j / nn, i = j % nn;
      u64* base = poly + size_t{beta} * n;
      u64 x[T];
      x[0] = base[i];
      for (int r = 1; r < T; ++r) {
        const size_t at = twiddle_index<T>(p, level, blocks, columns, beta, r);
        x[r] = Mod::mul4(base[r * nn + i], p.twiddles.forward[at], p.twiddles.forward_quotient[at],
                         c.q);
      }
      ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
      for (int l = 0; l < T; ++l)
        base[l * nn + i] = x[l];
    }
    __syncthreads();
  }
  // Output slot o = k*B + b holds natural slot b*n_c + k.
  const u32 block_size = p.N / columns;
  for (u32 o = threadIdx.x; o < p.N; o += blockDim.x) {
    const u32 k = o / columns, b = o % columns;
    f[o] = Mod::reduce_once(poly[b * block_size + k], c.q);
  }
}

template <int T>
static __global__ void __launch_bounds__(kNttThreads)
    ntt_inverse_kernel(const NttView* views, u64* data, u32 count, int scale) {
  extern __shared__ u64 poly[];
  const NttView p = views[blockIdx.y];
  u64* f = data + (size_t{blockIdx.y} * count + blockIdx.x) * p.N;
  const u32 columns = column_count(p);
  const u32 block_size = p.N / columns;
  for (u32 o = threadIdx.x; o < p.N; o += blockDim.x) {
    const u32 k = o / columns, b = o % columns;
    poly[b * block_size + k] = f[o];
  }
  __syncthreads();

  const DftRegs<DeviceLanes> c(*p.dft_inverse, p.q);
  for (u32 level = p.a - 1; level >= 1; --level) {
    u32 blocks = T - 1, n = p.m;
    for (u32 l = 1; l < level; ++l)
      blocks *= T, n /= T;
    const u32 nn = n / T;
    for (u32 j = threadIdx.x; j < blocks * nn; j += blockDim.x) {
      const u32 beta = j / nn, i = j % nn;
      u64* base = poly + size_t{beta} * n;
      u64 x[T];
      for (int l = 0; l < T; ++l)
        x[l] = base[l * nn + i];
      ring::detail::dft_small<T, DftMode::plain, DeviceLanes>(x, c);
      base[i] = x[0];
      for (int r = 1; r < T; ++r) {
        const size_t at = twiddle_index<T>(p, level, blocks, columns, beta, r);
        base[r * nn + i] =
            Mod::mul2(x[r], p.twiddles.inverse[at], p.twiddles.inverse_quotient[at], c.q, c.two_q);
      }
    }
    __syncthreads();
  }
  // Undo level 0 with the global scale: f_r = s DFT^-1(g)_r - s DFT^-1(g)_(t-1), g_0 = 0.
  const DftRegs<DeviceLanes> last(p.dft_inverse_last[scale], p.q);
  for (u32 i = threadIdx.x; i < p.m; i += blockDim.x) {
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

template <class Kernel>
void prepare_shared_memory(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return;
  int device = 0, limit = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute");
  require(bytes <= static_cast<size_t>(limit), ErrorCode::unsupported,
          "a polynomial of " + std::to_string(bytes / 8) +
              " words does not fit the shared memory of one thread block (" +
              std::to_string(limit) + " bytes)");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)),
        "cudaFuncSetAttribute");
}

template <int T>
void launch_ntt(const DeviceNttTables& tables, u64* data, size_t count, bool forward, int scale,
                cudaStream_t stream) {
  const size_t bytes = size_t{tables.ring().N()} * sizeof(u64);
  const dim3 grid(static_cast<unsigned>(count), tables.primes());
  if (forward) {
    prepare_shared_memory(ntt_forward_kernel<T>, bytes);
    ntt_forward_kernel<T><<<grid, kNttThreads, bytes, stream>>>(tables.device_views(), data,
                                                                static_cast<u32>(count));
  } else {
    prepare_shared_memory(ntt_inverse_kernel<T>, bytes);
    ntt_inverse_kernel<T><<<grid, kNttThreads, bytes, stream>>>(tables.device_views(), data,
                                                                static_cast<u32>(count), scale);
  }
  check_launch(forward ? "ntt_forward_kernel" : "ntt_inverse_kernel");
}

void launch_ntt_any(const DeviceNttTables& tables, u64* data, size_t count, bool forward, int scale,
                    cudaStream_t stream) {
  require(count <= 0x7fffffffU, ErrorCode::invalid_argument, "NTT batch too large for one launch");
  if (count == 0) return;
  switch (tables.ring().t()) {
    case 3:
      launch_ntt<3>(tables, data, count, forward, scale, stream);
      break;
    case 5:
      launch_ntt<5>(tables, data, count, forward, scale, stream);
      break;
    case 7:
      launch_ntt<7>(tables, data, count, forward, scale, stream);
      break;
    default:
      throw Error(ErrorCode::unsupported, "CUDA NTT supports t = 3, 5, 7");
  }
}

}  // namespace

DeviceNttTables::DeviceNttTables(std::span<const ring::NttPlan* const> plans, cudaStream_t stream)
    : ring_(plans.empty() ? ring::RingParams(3, 1) : plans.front()->ring()) {
  require(!plans.empty() && plans.size() <= 65535, ErrorCode::invalid_argument,
          "DeviceNttTables needs between 1 and 65535 plans");
  std::vector<ring::DftConstants> dft;
  for (const ring::NttPlan* plan : plans) {
    require(plan->ring() == ring_, ErrorCode::size_mismatch,
            "DeviceNttTables: plans of different rings");
    const ring::NttTables& tb = plan->tables();
    dft.push_back(tb.dft_forward);
    dft.push_back(tb.dft_inverse);
    dft.push_back(tb.dft_inverse_last[0]);
    dft.push_back(tb.dft_inverse_last[1]);
    for (const auto* words : {&tb.twiddles.forward, &tb.twiddles.forward_quotient,
                              &tb.twiddles.inverse, &tb.twiddles.inverse_quotient}) {
      words_.emplace_back(std::span<const u64>(*words), stream);
    }
    offsets_.emplace_back(std::span<const u32>(tb.twiddles.level_block_offset), stream);
    q_inv_.push_back(tb.montgomery_q_inv);
    ratio_.push_back(tb.word_ratio);
    two64_.push_back(tb.two64_mod_q);
  }
  dft_ = DeviceBuffer<ring::DftConstants>(std::span<const ring::DftConstants>(dft), stream);
  for (size_t i = 0; i < plans.size(); ++i) {
    ring::NttView view = plans[i]->tables().view();
    view.dft_forward = dft_.data() + 4 * i;
    view.dft_inverse = dft_.data() + 4 * i + 1;
    view.dft_inverse_last = dft_.data() + 4 * i + 2;
    view.twiddles = {words_[4 * i].data(), words_[4 * i + 1].data(), words_[4 * i + 2].data(),
                     words_[4 * i + 3].data(), offsets_[i].data()};
    host_views_.push_back(view);
  }
  views_ = DeviceBuffer<ring::NttView>(std::span<const ring::NttView>(host_views_), stream);
  // The uploads read host vectors (dft, the plans' tables): wait for them before returning.
  check(cudaStreamSynchronize(stream), "DeviceNttTables upload");
}

void ntt_forward(const DeviceNttTables& tables, u64* data, size_t count, cudaStream_t stream) {
  NvtxRange range("ntt_forward", NvtxCategory::ring, kColorNtt);
  launch_ntt_any(tables, data, count, true, 0, stream);
}

void ntt_inverse(const DeviceNttTables& tables, u64* data, size_t count, ring::InverseScale scale,
                 cudaStream_t stream) {
  NvtxRange range("ntt_inverse", NvtxCategory::ring, kColorNtt);
  launch_ntt_any(tables, data, count, false, static_cast<int>(scale), stream);
}

}  // namespace safhire::cuda
