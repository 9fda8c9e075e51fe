#include "simd/negacyclic_kernels.hpp"

namespace safhire::ring::simd {

#if defined(SAFHIRE_NEGACYCLIC_AVX512)
const NegacyclicKernels& negacyclic_kernels_avx512();
const NegacyclicKernels& negacyclic_kernels_ifma();
#endif

const NegacyclicKernels& negacyclic_kernels(SimdIsa isa, std::uint64_t q) {
  static const NegacyclicKernels scalar{&negacyclic_scalar::forward, &negacyclic_scalar::inverse};
#if defined(SAFHIRE_NEGACYCLIC_AVX512)
  if (isa == SimdIsa::avx512) {
    static const bool ifma = __builtin_cpu_supports("avx512ifma");
    return ifma && q < (std::uint64_t{1} << 50) ? negacyclic_kernels_ifma()
                                                : negacyclic_kernels_avx512();
  }
#else
  (void)isa;
  (void)q;
#endif
  return scalar;
}

}  // namespace safhire::ring::simd
