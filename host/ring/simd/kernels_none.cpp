// Targets without x86-64 vector kernels (Arm, ...): the scalar kernels serve every call.
#include "simd/kernels.hpp"

namespace safhire::ring::simd {
const KernelTable* avx2_kernels() {
  return nullptr;
}
const KernelTable* avx512_kernels() {
  return nullptr;
}
}  // namespace safhire::ring::simd
