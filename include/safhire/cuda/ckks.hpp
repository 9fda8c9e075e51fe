// The CKKS RNS primitives on a CUDA device (ckks/rns_ops.hpp): the same operations as the CPU
// implementation, word for word, so that the evaluator written over them runs unchanged.
//
// Polynomials it makes (RnsOps::zeros, reshape, make_resident) are resident on the device: a
// ciphertext and keys moved there once (ckks::make_resident) go through multiplication, key
// switching and rotations without a host copy, and come back with ckks::to_host. Host operands
// still work: they are staged to the device and back per operation. Every copy and launch is on
// one stream, with one NVTX range per primitive; resident words come from the device's memory
// pool (kept between synchronisations) and keep it alive until they are freed.
#pragma once

#include <memory>

#include "safhire/ckks/rns_ops.hpp"

namespace safhire::cuda {

// Throws Error(device_error) when no usable device is present.
std::unique_ptr<ckks::RnsOps> make_cuda_rns_ops(const ckks::CkksContext& context);

}  // namespace safhire::cuda
