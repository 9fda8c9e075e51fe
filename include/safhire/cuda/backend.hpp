// The CUDA backend of the hybrid server (backend::Backend): rows, linear layers and packing on
// the device, bit-identical to the CPU backend (cuda/portable/device_backend.hpp has the
// algorithm and what crosses the bus), in both packing modes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "safhire/backend/backend.hpp"

namespace safhire::cuda {

// Throws Error(device_error) when no usable device is present. The rows it makes must not
// outlive it. Each backend borrows a lane (a stream and its scratch
// pool) for its lifetime, and finds the layers it computes resident after their first use.
std::unique_ptr<backend::Backend> make_cuda_backend(const rlwe::ParameterSet& params,
                                                    const backend::Config& config,
                                                    const rlwe::GaloisKeys& keys);

// What the CUDA backends of this process keep on the device between sessions: the served models'
// layers (taps, their starts and biases, uploaded once each) and the lanes lent to one session at
// a time, whose scratch later sessions reuse.
struct ResidentStats {
  std::uint64_t layer_uploads = 0;        // layers uploaded so far
  std::size_t resident_layers = 0;        // layers on the device now
  std::uint64_t lanes_made = 0;           // lanes created so far
  std::size_t idle_lanes = 0;             // lanes waiting for a session now
  std::uint64_t scratch_allocations = 0;  // blocks the lanes took, as of their last return
};
ResidentStats resident_stats();

}  // namespace safhire::cuda
