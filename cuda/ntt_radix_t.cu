// The radix-t NTT on the GPU: one thread block per (polynomial, prime), the polynomial held in
// shared memory (N <= 2500 words: 20 KB). The kernel bodies are in ntt_block.cuh, shared with the
// CPU emulation test; this file launches them and uploads the tables.
#include <cuda_runtime.h>

#include <string>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "portable/ntt_block.cuh"
#include "safhire/core/error.hpp"
#include "safhire/cuda/kernels.hpp"

namespace safhire::cuda {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr unsigned kNttThreads = 256;

// One block per (polynomial, prime): blockIdx.x the polynomial, blockIdx.y the prime.
template <int T>
static __global__ void __launch_bounds__(kNttThreads)
    ntt_forward_kernel(const ring::NttView* views, u64* data, u32 count) {
  extern __shared__ u64 poly[];
  const ring::NttView p = views[blockIdx.y];
  u64* f = data + (size_t{blockIdx.y} * count + blockIdx.x) * p.N;
  block::ntt_forward<T>(p, f, poly, threadIdx.x, blockDim.x, [] { __syncthreads(); });
}

template <int T>
static __global__ void __launch_bounds__(kNttThreads)
    ntt_inverse_kernel(const ring::NttView* views, u64* data, u32 count, int scale) {
  extern __shared__ u64 poly[];
  const ring::NttView p = views[blockIdx.y];
  u64* f = data + (size_t{blockIdx.y} * count + blockIdx.x) * p.N;
  block::ntt_inverse<T>(p, f, poly, threadIdx.x, blockDim.x, scale, [] { __syncthreads(); });
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
