#include "safhire/ring/ring_params.hpp"

#include <algorithm>

#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"

namespace safhire::ring {

RingParams::RingParams(std::uint32_t t, std::uint32_t a) : t_(t), a_(a) {
  const std::string what = "ring " + std::to_string(t) + "^" + std::to_string(a) + ": ";
  if (t == 2) {
    // X^N + 1, N = 2^(a-1): a = 1 would be the degenerate ring Z[X]/(X + 1).
    require(
        a >= 2 && (std::uint64_t{1} << std::min<std::uint32_t>(a - 1, 63)) <= kMaxPowerOfTwoDegree,
        ErrorCode::invalid_parameters,
        what + "a power-of-two ring needs 2 <= a and N = 2^(a-1) <= " +
            std::to_string(kMaxPowerOfTwoDegree));
    m_ = N_ = 1U << (a - 1);
    M_ = 2 * N_;
    return;
  }
  require(t >= 3 && t % 2 == 1 && core::is_prime(t), ErrorCode::invalid_parameters,
          what + "t must be 2 or an odd prime");
  require(a >= 1, ErrorCode::invalid_parameters, what + "a must be at least 1");
  // N = (t-1) t^(a-1) grows with a; stop as soon as it passes the limit (no overflow).
  std::uint64_t m = 1;
  for (std::uint32_t i = 1; i < a; ++i) {
    m *= t;
    require((t - 1) * m <= kMaxDegree, ErrorCode::invalid_parameters,
            what + "degree N = phi(t^a) exceeds " + std::to_string(kMaxDegree));
  }
  require((t - 1) * m <= kMaxDegree, ErrorCode::invalid_parameters,
          what + "degree N = phi(t^a) exceeds " + std::to_string(kMaxDegree));
  m_ = static_cast<std::uint32_t>(m);
  M_ = m_ * t;
  N_ = (t - 1) * m_;
}

std::uint32_t RingParams::power(std::uint32_t j) const {
  require(j <= a_, ErrorCode::invalid_argument,
          "t^j needs j <= a = " + std::to_string(a_) + ", got " + std::to_string(j));
  std::uint32_t p = 1;
  for (std::uint32_t i = 0; i < j; ++i)
    p *= t_;
  return p;
}

std::string RingParams::name() const {
  return std::to_string(t_) + "^" + std::to_string(a_) + " (M = " + std::to_string(M_) +
         ", N = " + std::to_string(N_) + ")";
}

}  // namespace safhire::ring
