// AVX2 kernels (4 words per register). Compiled with -mavx2 on x86-64 only; called only after the
// run-time check in dispatch.cpp.
#include <immintrin.h>

#include <climits>

#define SAFHIRE_SIMD_NS avx2
#define SAFHIRE_SIMD_NAME "avx2"
#define SAFHIRE_SIMD_AVX2 1
#include "simd/kernels-inl.hpp"

namespace safhire::ring::simd {
const KernelTable* avx2_kernels() {
  return &avx2::kTable;
}
}  // namespace safhire::ring::simd
