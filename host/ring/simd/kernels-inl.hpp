// The CPU kernels, written once over the lanes types and compiled once per instruction set: a
// translation unit defines SAFHIRE_SIMD_NS (and SAFHIRE_SIMD_AVX2 or SAFHIRE_SIMD_AVX512), then
// includes this file, which has no include guard on purpose. One part per algorithm: the NTT's
// levels (ntt_levels-inl.hpp), the transforms built from them (ntt_transforms-inl.hpp), the
// element-wise kernels (elementwise-inl.hpp) and the linear layer (linear_layer-inl.hpp); the
// table of them all closes the file.

#include <cstddef>
#include <cstdint>

#include "safhire/ring/detail/dft_small.hpp"
#include "simd/kernels.hpp"

namespace safhire::ring::simd::SAFHIRE_SIMD_NS {

#include "simd/lanes-inl.hpp"

using detail::DftMode;
using detail::DftRegs;
using detail::ModLanes;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using V = LanesWide;
using R = V::Reg;
using Mod = ModLanes<V>;

// The words of a register's load at `at` of `total`: a whole register or the tail.
u32 chunk(u32 total, u32 at) {
  return total - at < V::kLanes ? total - at : V::kLanes;
}

#include "simd/elementwise-inl.hpp"
#include "simd/linear_layer-inl.hpp"
#include "simd/ntt_levels-inl.hpp"
#include "simd/ntt_transforms-inl.hpp"

constexpr KernelTable kTable = {
    SAFHIRE_SIMD_NAME,
    ntt_forward,
    ntt_inverse,
    radix2_forward,
    radix2_inverse,
    pointwise_montgomery,
    pointwise_montgomery_accumulate,
    pointwise_montgomery_dot,
    lift_torus,
    crt_lift,
    limb_combine,
    centred_shift,
    torus_dot<u64>,
    torus_matmul<u64>,
    torus_spmm<u64>,
    torus_dot<u32>,
    torus_matmul<u32>,
    torus_spmm<u32>,
    narrow_words,
};

}  // namespace safhire::ring::simd::SAFHIRE_SIMD_NS
