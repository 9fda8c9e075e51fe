// RLWE parameter sets: the ring, the message precision b, the noise width, the gadget of key
// switching, the key distribution, and an estimate of their security. The sets of the seed paper
// (its Table 4: paper-b8, paper-b12, paper-b16) are reproduced exactly; the default sets meet 128
// bits on current estimates (estimate_security). A set below 128 bits is refused unless the
// caller says SecurityPolicy::allow_insecure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "safhire/ring/ring_params.hpp"

namespace safhire::rlwe {

enum class KeyDistribution : std::uint8_t { binary = 0, ternary = 1 };

// Gadget of key switching: base D >= 2 (any integer) and l levels, with D^l <= 2^64: a torus word
// a is rounded to the nearest multiple of 2^64 / D^l and written in l balanced digits.
struct Gadget {
  std::uint32_t base = 0;
  std::uint32_t levels = 0;
  double log2_precision() const;  // log2(D^l): bits of `a` the decomposition keeps
  friend bool operator==(const Gadget&, const Gadget&) = default;
};

// Throws Error(invalid_parameters), naming `what`, unless D >= 2, l >= 1 and D^l <= 2^64.
void validate_gadget(const Gadget& gadget, const std::string& what);

// Estimated security in bits, and how it was obtained.
struct SecurityEstimate {
  double bits;       // on the current Concrete / TFHE-rs curve (the one policies use)
  double bits_2022;  // on the 2022 Concrete curve, for comparison
};

// The estimate used everywhere: lambda = 128 * g128(n) / g, where g = -log2(sigma) is the noise
// gap of the set (q = 2^64, sigma relative to the torus) and g128(n) the gap that the 128-bit
// curve requires at LWE dimension n = N. Curves (binary secret, all lattice-estimator attacks,
// q = 2^64): current log2(sigma_128) = -0.025697 n + 2.6759; 2022: -0.026405 n + 2.4826
// (zama-ai/concrete-security-curves). Scaling by 1/g is a first-order model of the estimator
// near these dimensions: it gives 3.7 bits of security per bit of log2(sigma) at n = 1458, where
// the lattice estimator's own figures read about 3 off the curves; re-run the lattice estimator
// before relying on a set far from the 128-bit line. Ternary secrets are at least as hard as binary
// ones at equal width, so the estimate is a lower bound for them.
SecurityEstimate estimate_security(std::uint32_t n, double log2_sigma);
inline constexpr std::string_view kSecurityMethod =
    "lambda = 128 * g128(N) / (-log2 sigma), g128 from the Concrete/TFHE-rs 128-bit curve "
    "log2(sigma) = -0.025697 N + 2.6759 (binary key, q = 2^64)";

enum class SecurityPolicy { require_128, allow_insecure };

struct ParameterSet {
  std::string name;
  std::uint16_t id = 0;  // stable number carried in messages
  ring::RingParams ring;
  std::uint32_t message_bits = 0;  // b: messages in Z_{2^b}, scaled by 2^(64-b)
  double log2_sigma = 0;           // noise of fresh encryptions and of keys, relative to the torus
  Gadget gadget_full;              // key switching for extraction level gamma = 0
  Gadget gadget_partial;           // ... for gamma >= 1
  KeyDistribution key = KeyDistribution::binary;

  // Validates every field (typed errors: invalid_parameters).
  ParameterSet(std::string name, std::uint16_t id, ring::RingParams ring,
               std::uint32_t message_bits, double log2_sigma, Gadget gadget_full,
               Gadget gadget_partial, KeyDistribution key = KeyDistribution::binary);

  const Gadget& gadget(std::uint32_t gamma) const {
    return gamma == 0 ? gadget_full : gadget_partial;
  }
  double sigma() const;
  SecurityEstimate security() const { return estimate_security(ring.N(), log2_sigma); }
  // Throws Error(insecure_parameters) when below 128 bits and the policy asks for 128.
  void check_security(SecurityPolicy policy) const;
};

// Every built-in set: paper-b8, paper-b12, paper-b16, default-b8, default-b12, default-b16.
std::span<const ParameterSet> builtin_parameter_sets();

// The built-in set of that name. Throws Error(invalid_argument) for an unknown name and
// Error(insecure_parameters) for a set below 128 bits under SecurityPolicy::require_128.
const ParameterSet& parameter_set(std::string_view name,
                                  SecurityPolicy policy = SecurityPolicy::require_128);
const ParameterSet& parameter_set(std::uint16_t id,
                                  SecurityPolicy policy = SecurityPolicy::require_128);

}  // namespace safhire::rlwe
