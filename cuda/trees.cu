// Trace trees on the device: tree_levels.hpp instantiated with kernel launches.
#include <cuda_runtime.h>

#include <string>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/core/error.hpp"
#include "safhire/cuda/trees.hpp"
#include "tree_levels.hpp"

namespace safhire::cuda {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr std::uint32_t kColorTrees = 0xff8c564b;

// Calls body(x) for every x < len, over the whole grid.
template <class Body>
__device__ void grid_stride(size_t len, Body body) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    body(x);
  }
}

static __global__ void split_kernel(block::SplitArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::split_thread(g, x); });
}
static __global__ void bottom_kernel(block::SplitArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::bottom_thread(g, x); });
}
static __global__ void merge_kernel(block::MergeArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::merge_thread(g, x); });
}
static __global__ void embed_kernel(const u64* masks, u64* embedded, u32 n, u32 m, size_t len) {
  grid_stride(len, [&](size_t x) { block::embed_thread(masks, embedded, n, m, x); });
}
static __global__ void prepare_kernel(const u64* embedded, const u64* bodies, u64* out_a,
                                      u64* out_b, u64 m_inv, u32 n, u32 M, u32 m, size_t len) {
  grid_stride(len, [&](size_t x) {
    block::prepare_item_thread(embedded, bodies, out_a, out_b, m_inv, n, M, m, x);
  });
}
static __global__ void scale_copy_kernel(u64* dst, const u64* src, u64 factor, size_t len) {
  grid_stride(len, [&](size_t x) { dst[x] = src[x] * factor; });
}
static __global__ void add_kernel(u64* dst, const u64* src, size_t len) {
  grid_stride(len, [&](size_t x) { dst[x] += src[x]; });
}

// The Ops of tree_levels.hpp on one stream.
struct CudaOps {
  using Buffer = DeviceBuffer<u64>;
  cudaStream_t stream;
  const DeviceGaloisKeys& keys;
  DeviceKeySwitcher& switcher;

  Buffer alloc(size_t words) { return Buffer(words, stream); }
  void copy(u64* dst, const u64* src, size_t words) {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync (device to device)");
  }
  void scale_copy(u64* dst, const u64* src, u64 factor, size_t words) {
    scale_copy_kernel<<<elementwise_blocks(words), kElementwiseThreads, 0, stream>>>(dst, src,
                                                                                     factor, words);
    check_launch("scale_copy_kernel");
  }
  void add(u64* dst, const u64* src, size_t words) {
    add_kernel<<<elementwise_blocks(words), kElementwiseThreads, 0, stream>>>(dst, src, words);
    check_launch("add_kernel");
  }
  void run_split(const block::SplitArgs& g, size_t threads) {
    split_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(g, threads);
    check_launch("split_kernel");
  }
  void run_bottom(const block::SplitArgs& g, size_t threads) {
    bottom_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(g, threads);
    check_launch("bottom_kernel");
  }
  void run_merge(const block::MergeArgs& g, size_t threads) {
    merge_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(g, threads);
    check_launch("merge_kernel");
  }
  void run_embed(const u64* masks, u64* embedded, u32 n, u32 m, size_t threads) {
    embed_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(masks, embedded,
                                                                                  n, m, threads);
    check_launch("embed_kernel");
  }
  void run_prepare(const u64* embedded, const u64* bodies, u64* out_a, u64* out_b, u64 m_inv, u32 n,
                   u32 M, u32 m, size_t threads) {
    prepare_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(
        embedded, bodies, out_a, out_b, m_inv, n, M, m, threads);
    check_launch("prepare_kernel");
  }
  void automorphism(u64 k, const u64* in_a, const u64* in_b, u64* out_a, u64* out_b, size_t count) {
    switcher.automorphism(keys.at(k), in_a, in_b, out_a, out_b, count, stream);
  }
};

}  // namespace

DeviceGaloisKeys::DeviceGaloisKeys(const rlwe::GaloisKeys& keys, cudaStream_t stream) {
  for (u64 k : keys.elements())
    keys_.emplace(k, DeviceKeySwitchKey(keys.at(k), stream));
}

const DeviceKeySwitchKey& DeviceGaloisKeys::at(u64 k) const {
  const auto it = keys_.find(k);
  require(it != keys_.end(), ErrorCode::invalid_argument,
          "no device key-switching key for sigma_" + std::to_string(k));
  return it->second;
}

DeviceTraceTrees::DeviceTraceTrees(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                                   const DeviceGaloisKeys& keys, cudaStream_t stream)
    : params_(params), keys_(&keys), switcher_(params, gadget, stream) {
  require(params.ring.a() >= 2, ErrorCode::unsupported, "trace trees need a >= 2");
}

DeviceCiphertexts DeviceTraceTrees::split(const u64* a, const u64* b, size_t count, u32 gamma,
                                          cudaStream_t stream) {
  const ring::RingParams& r = params_.ring;
  require(gamma < r.a(), ErrorCode::invalid_argument, "split: gamma must be below a");
  NvtxRange range("extract", NvtxCategory::rlwe, kColorTrees);
  CudaOps ops{stream, *keys_, switcher_};
  auto out = levels::split(ops, r, a, b, count, gamma);
  const size_t per_input = gamma == 0 ? r.N() : levels::power(r.t(), r.a() - gamma);
  return {std::move(out.a), std::move(out.b), count * per_input};
}

DeviceCiphertexts DeviceTraceTrees::pack_lwes(const u64* masks, const u64* bodies, size_t count,
                                              u32 k, cudaStream_t stream) {
  require(k < params_.ring.a(), ErrorCode::invalid_argument, "pack_lwes: k must be below a");
  NvtxRange range("pack", NvtxCategory::rlwe, kColorTrees);
  CudaOps ops{stream, *keys_, switcher_};
  auto out = levels::pack_lwes(ops, params_.ring, masks, bodies, count, k);
  return {std::move(out.a), std::move(out.b), count};
}

}  // namespace safhire::cuda
