// Automorphisms in the NTT domain: sigma_k permutes the slots (f(omega^e) -> f(omega^(ke))), so
// applying it to a batch is a gather through the permutation of
// NttPlan::automorphism_permutation(k).
#include <cuda_runtime.h>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/cuda/kernels.hpp"

namespace safhire::cuda {

namespace {

static __global__ void permute_kernel(const std::uint32_t* perm, const std::uint64_t* in,
                                      std::uint64_t* out, size_t n, size_t len) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < len;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t row = i / n, slot = i % n;
    out[i] = in[row * n + perm[slot]];
  }
}

}  // namespace

void apply_permutation(const std::uint32_t* perm, const std::uint64_t* in, std::uint64_t* out,
                       size_t n, size_t count, cudaStream_t stream) {
  NvtxRange range("automorphism", NvtxCategory::ring, kColorAutomorphism);
  const size_t len = n * count;
  if (len == 0) return;
  permute_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(perm, in, out, n,
                                                                              len);
  check_launch("permute_kernel");
}

}  // namespace safhire::cuda
