// Exact two-prime CRT from residues mod q1, q2 to Z_{2^64} (Garner's formula): the integer
// x in (-Q/2, Q/2], Q = q1*q2, with x = x1 (mod q1) and x = x2 (mod q2), is returned mod 2^64.
// This is how exact products over the torus come back from the NTT domain.
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::core {

struct Crt2 {
  u64 q1 = 0, q2 = 0;
  ShoupConst<u64> q1_inv_mod_q2{};  // q1^-1 mod q2
  u64 q2_ratio = 0;                 // floor(2^64 / q2), to bring x1 into [0, q2)
  u64 q2_half = 0;                  // (q2 - 1) / 2
  u64 q1_half_up = 0;               // (q1 + 1) / 2
  u64 q1q2_low = 0;                 // q1*q2 mod 2^64

  // Host only. Requires distinct odd primes below 2^62; throws ErrorCode::invalid_parameters.
  static Crt2 make(u64 q1, u64 q2);

  // x1 in [0, q1), x2 in [0, q2) -> the centred lift of the CRT value, mod 2^64.
  SAFHIRE_HD u64 lift(u64 x1, u64 x2) const {
    const u64 x1r = reduce_word(x1, q2_ratio, q2);
    // y = (x2 - x1) * q1^-1 mod q2, in [0, q2): x = x1 + q1*y in [0, Q).
    const u64 y = mul_shoup(sub_mod(x2, x1r, q2), q1_inv_mod_q2, q2);
    // x > Q/2 (Q odd)  <=>  y > (q2-1)/2, or y == (q2-1)/2 and x1 >= (q1+1)/2.
    const bool negative = y > q2_half || (y == q2_half && x1 >= q1_half_up);
    u64 r = x1 + q1 * y;  // wrapping: x mod 2^64
    if (negative) r -= q1q2_low;
    return r;
  }
};

}  // namespace safhire::core
