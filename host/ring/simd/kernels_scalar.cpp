// Scalar kernels: plain C++, present on every target (x86-64, Arm, ...).
#define SAFHIRE_SIMD_NS scalar
#define SAFHIRE_SIMD_NAME "scalar"
#include "simd/kernels-inl.hpp"

namespace safhire::ring::simd {
const KernelTable& scalar_kernels() {
  return scalar::kTable;
}
}  // namespace safhire::ring::simd
