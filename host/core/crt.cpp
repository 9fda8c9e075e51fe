#include "safhire/core/crt.hpp"

#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"

namespace safhire::core {

Crt2 Crt2::make(u64 q1, u64 q2) {
  require(q1 != q2 && q1 > 2 && q2 > 2 && q1 < kMaxNttModulus && q2 < kMaxNttModulus &&
              is_prime(q1) && is_prime(q2),
          ErrorCode::invalid_parameters,
          "CRT needs two distinct odd primes below 2^62, got " + std::to_string(q1) + " and " +
              std::to_string(q2));
  Crt2 crt;
  crt.q1 = q1;
  crt.q2 = q2;
  crt.q1_inv_mod_q2 = make_shoup(inv_mod(q1 % q2, q2), q2);
  crt.q2_ratio = shoup_quotient<u64>(1, q2);
  crt.q2_half = (q2 - 1) / 2;
  crt.q1_half_up = (q1 + 1) / 2;
  crt.q1q2_low = q1 * q2;
  return crt;
}

}  // namespace safhire::core
