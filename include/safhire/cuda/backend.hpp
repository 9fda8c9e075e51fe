// The CUDA backend of the hybrid server (backend::Backend): rows, linear layers and packing on
// the device, bit-identical to the CPU backend (cuda/device_backend.hpp has the algorithm and
// what crosses the bus). Fast packing mode only.
#pragma once

#include <memory>

#include "safhire/backend/backend.hpp"

namespace safhire::cuda {

// Throws Error(device_error) when no usable device is present, Error(unsupported) for paper mode.
// The rows it makes must not outlive it.
std::unique_ptr<backend::Backend> make_cuda_backend(const rlwe::ParameterSet& params,
                                                    const backend::Config& config,
                                                    const rlwe::GaloisKeys& keys);

}  // namespace safhire::cuda
