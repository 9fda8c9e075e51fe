// AVX-512 kernels (8 words per register; F and DQ). Compiled with -mavx512f -mavx512dq on x86-64
// only; called only after the run-time check in dispatch.cpp.
#include <immintrin.h>

#define SAFHIRE_SIMD_NS avx512
#define SAFHIRE_SIMD_NAME "avx512"
#define SAFHIRE_SIMD_AVX512 1
#include "simd/kernels-inl.hpp"

namespace safhire::ring::simd {
const KernelTable* avx512_kernels() {
  return &avx512::kTable;
}
}  // namespace safhire::ring::simd
