// Shared pieces of the CUDA kernels: the lanes type that runs the shared arithmetic templates
// (detail/dft_small.hpp) one word per thread, and launch-shape helpers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/cuda/device.hpp"

namespace safhire::cuda {

// One word per thread. mulhi is exact (__umul64hi), so lazy products stay in [0, 2q), inside the
// [0, 4q) that the shared templates allow.
struct DeviceLanes {
  using Reg = std::uint64_t;
  SAFHIRE_HD static Reg set1(std::uint64_t x) { return x; }
  SAFHIRE_HD static Reg zero() { return 0; }
  SAFHIRE_HD static Reg add(Reg a, Reg b) { return a + b; }
  SAFHIRE_HD static Reg sub(Reg a, Reg b) { return a - b; }
  SAFHIRE_HD static Reg min(Reg a, Reg b) { return a < b ? a : b; }
  SAFHIRE_HD static Reg mullo(Reg a, Reg b) { return a * b; }
  SAFHIRE_HD static Reg mulhi(Reg a, Reg b) { return core::mul_hi(a, b); }
  SAFHIRE_HD static Reg mulhi_approx(Reg a, Reg b) { return core::mul_hi(a, b); }
  SAFHIRE_HD static Reg bit_and(Reg a, Reg b) { return a & b; }
  SAFHIRE_HD static Reg shr1(Reg a) { return a >> 1; }
};

inline constexpr unsigned kElementwiseThreads = 256;

// Blocks for a grid-stride loop over `n` elements.
inline unsigned elementwise_blocks(std::size_t n) {
  const std::size_t blocks = (n + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks == 0 ? 1 : blocks) : 65535 * 16);
}

inline void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

}  // namespace safhire::cuda
