// The ring R = Z[X]/Phi_M(X) for a prime power M = t^a (N = phi(M) = (t-1) t^(a-1)): the sizes that
// every other ring object derives from. t = 2 gives the power-of-two rings of CKKS,
// Phi_{2^a} = X^N + 1 with N = 2^(a-1); the odd t the rings of part 1. Constructed only through
// validation, so a RingParams in hand is always a valid ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace safhire::ring {

class RingParams {
 public:
  // Largest supported degree N = phi(M). The CUDA transforms keep one polynomial per thread block
  // in shared memory; 2^16 is far above every ring of the paper and keeps index arithmetic in
  // 32 bits.
  static constexpr std::uint32_t kMaxDegree = 1U << 16;
  // Largest power-of-two degree (t = 2): the CKKS rings go up to N = 2^17.
  static constexpr std::uint32_t kMaxPowerOfTwoDegree = 1U << 17;

  // t an odd prime with a >= 1 and N = (t-1) t^(a-1) <= kMaxDegree, or t = 2 with a >= 2 and
  // N = 2^(a-1) <= kMaxPowerOfTwoDegree; anything else throws
  // Error(ErrorCode::invalid_parameters) with the reason.
  RingParams(std::uint32_t t, std::uint32_t a);

  std::uint32_t t() const { return t_; }
  std::uint32_t a() const { return a_; }
  std::uint32_t M() const { return M_; }  // t^a
  std::uint32_t m() const { return m_; }  // M / t = t^(a-1)
  std::uint32_t N() const { return N_; }  // phi(M) = (t-1) m
  std::size_t degree() const { return N_; }

  // t^j for 0 <= j <= a.
  std::uint32_t power(std::uint32_t j) const;

  bool power_of_two() const { return t_ == 2; }  // Phi_M = X^N + 1

  std::string name() const;  // "3^7 (M = 2187, N = 1458)"

  friend bool operator==(const RingParams& x, const RingParams& y) {
    return x.t_ == y.t_ && x.a_ == y.a_;
  }

 private:
  std::uint32_t t_, a_, M_, m_, N_;
};

}  // namespace safhire::ring
