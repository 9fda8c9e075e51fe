#include "simd/negacyclic_kernels.hpp"

namespace safhire::ring::simd {

#if defined(SAFHIRE_NEGACYCLIC_AVX512)
const NegacyclicKernels& negacyclic_kernels_avx512();
#endif

const NegacyclicKernels& negacyclic_kernels(SimdIsa isa) {
  static const NegacyclicKernels scalar{&negacyclic_scalar::forward, &negacyclic_scalar::inverse};
#if defined(SAFHIRE_NEGACYCLIC_AVX512)
  if (isa == SimdIsa::avx512) return negacyclic_kernels_avx512();
#else
  (void)isa;
#endif
  return scalar;
}

}  // namespace safhire::ring::simd
