// The lanes type that runs the shared arithmetic templates (detail/dft_small.hpp) one word per
// thread. Plain C++ apart from SAFHIRE_HD, so that host code (the block emulation test) can use it.
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::cuda {

// mulhi is exact (__umul64hi on the device), so lazy products stay in [0, 2q), inside the
// [0, 4q) that the shared templates allow.
struct DeviceLanes {
  using Reg = std::uint64_t;
  SAFHIRE_HD static Reg set1(std::uint64_t x) { return x; }
  SAFHIRE_HD static Reg zero() { return 0; }
  SAFHIRE_HD static Reg add(Reg a, Reg b) { return a + b; }
  SAFHIRE_HD static Reg sub(Reg a, Reg b) { return a - b; }
  SAFHIRE_HD static Reg min(Reg a, Reg b) { return a < b ? a : b; }
  SAFHIRE_HD static Reg mullo(Reg a, Reg b) { return a * b; }
  SAFHIRE_HD static Reg mulhi(Reg a, Reg b) { return core::mul_hi(a, b); }
  SAFHIRE_HD static Reg mulhi_approx(Reg a, Reg b) { return core::mul_hi(a, b); }
  SAFHIRE_HD static Reg bit_and(Reg a, Reg b) { return a & b; }
  SAFHIRE_HD static Reg shr1(Reg a) { return a >> 1; }
};

}  // namespace safhire::cuda
