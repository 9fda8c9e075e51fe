// Element-wise kernels: Montgomery products in the NTT domain, the lift of torus words to
// residues mod q, and the exact two-prime CRT back to Z_{2^64} (core/crt.hpp). Grid-stride
// loops, one word per thread, the same arithmetic as the CPU kernels (core/modarith.hpp,
// core/crt.hpp, detail/dft_small.hpp).
#include <cuda_runtime.h>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/core/crt.hpp"
#include "safhire/cuda/kernels.hpp"
#include "safhire/ring/detail/dft_small.hpp"

namespace safhire::cuda {

namespace {

using u64 = std::uint64_t;
using Mod = ring::detail::ModLanes<DeviceLanes>;

static __global__ void pointwise_montgomery_kernel(u64 q, u64 q_inv, const u64* a, const u64* b,
                                                   u64* out, size_t len) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < len;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = Mod::mont_mul(a[i], b[i], q, q_inv);
  }
}

// v signed: v mod q = (v + 2^64) mod q - (v < 0 ? 2^64 mod q : 0).
static __global__ void lift_torus_kernel(u64 q, u64 word_ratio, u64 two64_mod_q, const u64* in,
                                         u64* out, size_t len) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < len;
       i += size_t{gridDim.x} * blockDim.x) {
    const u64 x = in[i];
    const u64 r = core::reduce_word(x, word_ratio, q);
    out[i] = core::sub_mod(r, (x >> 63) != 0 ? two64_mod_q : u64{0}, q);
  }
}

static __global__ void crt_lift_kernel(core::Crt2 crt, const u64* x1, const u64* x2, u64* out,
                                       size_t len) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < len;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = crt.lift(x1[i], x2[i]);
  }
}

}  // namespace

void pointwise_montgomery(const DeviceNttTables& tables, const u64* a, const u64* b, u64* out,
                          size_t count, cudaStream_t stream) {
  NvtxRange range("pointwise_montgomery", NvtxCategory::ring, kColorPointwise);
  const size_t len = count * tables.ring().N();
  for (std::uint32_t p = 0; p < tables.primes(); ++p) {
    const size_t at = p * len;
    pointwise_montgomery_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
        tables.modulus(p), tables.montgomery_q_inv(p), a + at, b + at, out + at, len);
    check_launch("pointwise_montgomery_kernel");
  }
}

void lift_torus(const DeviceNttTables& tables, const u64* torus, u64* residues, size_t count,
                cudaStream_t stream) {
  NvtxRange range("lift_torus", NvtxCategory::ring, kColorPointwise);
  const size_t len = count * tables.ring().N();
  for (std::uint32_t p = 0; p < tables.primes(); ++p) {
    lift_torus_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
        tables.modulus(p), tables.word_ratio(p), tables.two64_mod_q(p), torus, residues + p * len,
        len);
    check_launch("lift_torus_kernel");
  }
}

void crt_lift(const core::Crt2& crt, const u64* x1, const u64* x2, u64* out, size_t len,
              cudaStream_t stream) {
  NvtxRange range("crt", NvtxCategory::ring, kColorCrt);
  crt_lift_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(crt, x1, x2, out,
                                                                               len);
  check_launch("crt_lift_kernel");
}

}  // namespace safhire::cuda
