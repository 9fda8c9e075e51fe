// Gadget decomposition of one torus word, shared by the CPU decomposer and the CUDA kernel (same
// code, so the same digits). See rlwe/keyswitch.hpp for what the digits mean.
#pragma once

#include <cstddef>
#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::elements {

// Plain data describing a gadget of base D and l levels.
struct GadgetView {
  std::uint64_t base;        // D
  std::uint64_t base_ratio;  // floor(2^64 / D), for division by D
  std::uint64_t precision;   // D^l, or 0 when D^l = 2^64
  std::uint32_t levels;      // l
};

// digits[i * stride] (i < l, most significant first) = balanced digits of round(a D^l / 2^64),
// in [-floor(D/2), ceil(D/2)) as torus words; the final carry (a multiple of D^l) is dropped.
SAFHIRE_HD void decompose_word(std::uint64_t a, const GadgetView& g, std::uint64_t* digits,
                               std::size_t stride) {
  using u64 = std::uint64_t;
  // x = round(a D^l / 2^64) in [0, D^l]: the multiple of 2^64 / D^l nearest to a.
  u64 x = a;
  if (g.precision != 0) {
    const u64 lo = a * g.precision;
    const u64 hi = core::mul_hi(a, g.precision);
    x = hi + (lo >> 63);  // + 1/2, rounded: the carry out of lo + 2^63
  }
  for (std::uint32_t i = g.levels; i-- > 0;) {
    u64 q = core::mul_hi(x, g.base_ratio);  // floor(x / D) or up to 2 less
    u64 r = x - q * g.base;
    while (r >= g.base) {
      r -= g.base;
      ++q;
    }
    if (2 * r >= g.base) {  // r - D in [-floor(D/2), 0)
      digits[i * stride] = r - g.base;
      ++q;
    } else {
      digits[i * stride] = r;
    }
    x = q;
  }
}

}  // namespace safhire::elements
