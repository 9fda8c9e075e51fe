// The CKKS RNS primitives on a CUDA device (ckks/rns_ops.hpp): the same operations as the CPU
// implementation, word for word, so that the evaluator written over them runs unchanged.
//
// This first version moves each operation's limbs to the device and back (every copy and launch
// on one stream, one NVTX range per primitive): it establishes the kernels and their
// bit-identity with the CPU. Keeping ciphertexts and keys resident on the device between
// operations is the next step and needs RnsPoly to own device storage.
#pragma once

#include <memory>

#include "safhire/ckks/rns_ops.hpp"

namespace safhire::cuda {

// Throws Error(device_error) when no usable device is present.
std::unique_ptr<ckks::RnsOps> make_cuda_rns_ops(const ckks::CkksContext& context);

}  // namespace safhire::cuda
