// Launch-shape helpers shared by the CUDA kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "portable/device_lanes.cuh"
#include "safhire/cuda/device.hpp"

namespace safhire::cuda {

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
