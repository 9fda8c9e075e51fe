// Run-time choice of the kernel table for an instruction set (internal to the ring layer).
#pragma once

#include "safhire/ring/simd.hpp"
#include "simd/kernels.hpp"

namespace safhire::ring::simd {

// The table compiled for `isa`, or nullptr if this build has none.
const KernelTable* kernels_for(SimdIsa isa);

// The table for `isa`; throws Error(ErrorCode::unsupported) unless it is available here.
const KernelTable& checked_kernels(SimdIsa isa);

}  // namespace safhire::ring::simd
