// A lane ciphertext: a CKKS ciphertext in form B (lane_space.hpp) with what the lanes know of its
// digits: a bound that every digit of every lane obeys, and an estimate of the noise on them.
// Both are updated by every operation (evaluator.hpp) and decide what may follow: an operation
// whose result could no longer be refreshed exactly is refused. Versioned, validated binary form.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/lanes/context.hpp"

namespace safhire::lanes {

struct LaneCiphertext {
  ckks::Ciphertext ct;     // form B, N/2 slots, at any level from the space's refresh level up
  double digit_bound = 0;  // |a_t| <= digit_bound for every digit (exact, worst case)
  // The standard deviation of a digit's error, in units of one digit (an upper estimate from the
  // noise model, noise.hpp): a digit decodes to round(a_t + e_t), e_t of about this size.
  double noise = 0;
  std::uint64_t space = 0;  // LaneContext::fingerprint of the space it belongs to

  std::uint32_t level() const { return ct.level(); }
};

// "SHLN", format version 1, the space's fingerprint, the digit bound and the noise (IEEE
// doubles), then the CKKS ciphertext's own blob (ckks/serialize.hpp). Reading checks the magic,
// the version, the space (Error(size_mismatch) for another space's), finite non-negative bounds
// and the ciphertext against the context (form B needs N/2 slots and a level from the refresh
// level up); anything truncated, oversized or trailing is Error(malformed_input).
std::vector<std::uint8_t> serialize(const LaneContext& context, const LaneCiphertext& x);
LaneCiphertext deserialize_lane_ciphertext(const LaneContext& context,
                                           std::span<const std::uint8_t> bytes);

}  // namespace safhire::lanes
