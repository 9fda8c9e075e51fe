// The Ops of cuda/portable/tree_levels.hpp as kernel launches on one stream (used by cuda/trees.cu
// and, extended, by cuda/backend.cu). The kernels are static: each including unit has its own.
#pragma once

#include <cuda_runtime.h>

#include <span>

#include "launch.cuh"
#include "portable/tree_element.cuh"
#include "safhire/cuda/trees.hpp"

namespace safhire::cuda {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

inline constexpr std::uint32_t kColorTrees = 0xff8c564b;

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
static __global__ void monomial_kernel(block::MonomialArgs g, size_t len) {
  grid_stride(len, [&](size_t x) { block::monomial_thread(g, x); });
}
static __global__ void embed_kernel(const u64* masks, u64* embedded, u32 n, u32 m, size_t len) {
  grid_stride(len, [&](size_t x) { block::embed_thread(masks, embedded, n, m, x); });
}
static __global__ void prepare_kernel(const u64* embedded, const u64* bodies, u64* out_a,
                                      u64* out_b, u64 m_inv, u32 n, u32 m, size_t len) {
  grid_stride(len, [&](size_t x) {
    block::prepare_item_thread(embedded, bodies, out_a, out_b, m_inv, n, m, x);
  });
}
static __global__ void scale_copy_kernel(u64* dst, const u64* src, u64 factor, size_t len) {
  grid_stride(len, [&](size_t x) { dst[x] = src[x] * factor; });
}
static __global__ void add_kernel(u64* dst, const u64* src, size_t len) {
  grid_stride(len, [&](size_t x) { dst[x] += src[x]; });
}

// The Ops of tree_levels.hpp on one stream; scratch comes from a pool of blocks used on that
// stream only.
struct CudaOps {
  using Buffer = ScratchPool::Block;
  cudaStream_t stream;
  const DeviceGaloisKeys* keys;
  DeviceKeySwitcher* switcher;
  ScratchPool* pool;

  Buffer alloc(size_t words) { return pool->take(words); }
  void copy(u64* dst, const u64* src, size_t words) {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync (device to device)");
  }
  void copy_rows(u64* dst, size_t dst_stride, const u64* src, size_t src_stride, size_t rows,
                 size_t words) {
    if (rows == 0 || words == 0) return;
    check(cudaMemcpy2DAsync(dst, dst_stride * sizeof(u64), src, src_stride * sizeof(u64),
                            words * sizeof(u64), rows, cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync (device to device)");
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
  void run_monomial(const block::MonomialArgs& g, size_t threads) {
    monomial_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(g, threads);
    check_launch("monomial_kernel");
  }
  void run_embed(const u64* masks, u64* embedded, u32 n, u32 m, size_t threads) {
    embed_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(masks, embedded,
                                                                                  n, m, threads);
    check_launch("embed_kernel");
  }
  void run_prepare(const u64* embedded, const u64* bodies, u64* out_a, u64* out_b, u64 m_inv, u32 n,
                   u32 m, size_t threads) {
    prepare_kernel<<<elementwise_blocks(threads), kElementwiseThreads, 0, stream>>>(
        embedded, bodies, out_a, out_b, m_inv, n, m, threads);
    check_launch("prepare_kernel");
  }
  void automorphism(u64 k, const u64* in_a, const u64* in_b, u64* out_a, u64* out_b, size_t count) {
    switcher->automorphism(keys->at(k), in_a, in_b, out_a, out_b, count, stream);
  }
  // One switch at a time into scratch, added into out.
  void automorphism_sum(std::span<const u64> ks, const u64* in_a, const u64* in_b, size_t plane,
                        u64* out_a, u64* out_b, size_t count) {
    if (ks.empty()) return;
    const size_t words = count * switcher->params().ring.N();
    Buffer sa = alloc(words), sb = alloc(words);
    for (size_t i = 0; i < ks.size(); ++i) {
      automorphism(ks[i], in_a + i * plane, in_b + i * plane, sa.data(), sb.data(), count);
      add(out_a, sa.data(), words);
      add(out_b, sb.data(), words);
    }
  }
};

}  // namespace safhire::cuda
