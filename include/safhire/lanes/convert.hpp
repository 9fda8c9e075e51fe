// Form B <-> form A (lanes.md section 3.1): a lane ciphertext's digits moved into slots, one
// digit a slot, so that slot-wise real functions (CKKS polynomials, products, constants) act on
// every digit of every lane at once, and moved back.
//
//   to_slots   B -> A: L^-1, CoeffToSlot on the lane stages [0, log2(n/2)), block by block, in
//              the space's L groups (one level each), then the real and imaginary split with one
//              conjugation: `low` holds digit t < n/2 and `high` digit t + n/2 of lane r, both in
//              slot slot_of_digit(r, t), as real numbers (the digits are complex-packed in form
//              B: u_t = a_t + i a_(t + n/2)).
//   to_lanes   A -> B: low + i high (an exact product by i) and L, SlotToCoeff on the same stages.
//
// Each direction costs L's groups in levels. A converter is built for the level its input comes
// at (to_slots drops a higher input to it) and the levels left for slot-wise functions between
// the two; form B comes back 2 groups + function levels lower, and must stay at or above the
// refresh level (so a space needs products_per_refresh >= 2 groups + function levels: Error
// (invalid_parameters) otherwise). The digits keep their bound through both directions; the noise
// grows by each group's key switches and rescale (NoiseModel::operation). Slot-wise functions
// change the digits: to_lanes takes the digit bound and noise of what it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/dft.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/noise.hpp"

namespace safhire::lanes {

// The space of N = 2^log_n, lane degree n and base beta with room for both directions at rest
// (products_per_refresh = 2 groups of L), named lanes-n<log_n>-<n>-b<beta>-k<2 groups>: what
// `safhire lanes convert|digits` and the conversion benchmarks run on. Errors as make_lane_space.
LaneSpace conversion_space(std::uint32_t log_n, std::uint32_t n, std::uint64_t beta);

// Form A: two real ciphertexts of N/2 slots (see the top).
struct DigitSlots {
  ckks::Ciphertext low, high;
  double digit_bound = 0;  // |digit| <= digit_bound in every slot
  double noise = 0;        // the deviation of a slot's error, in digits (noise.hpp)
  std::uint64_t space = 0;
  // The digits are A's canonical ones (digits.hpp: 0 <= a_t < beta, beta^n as a_0 = -1), as
  // DigitEncryptor makes them; to_slots gives redundant digits (false).
  bool canonical = false;
};

class LaneConverter {
 public:
  // B -> A takes its input at `level` (0: the space's rest level); `function_levels` levels are
  // left between the two directions. Error(invalid_parameters) where form B would come back below
  // the refresh level.
  LaneConverter(const LaneContext& context, const ckks::RnsOps& ops, std::uint32_t level = 0,
                std::uint32_t function_levels = 0);

  std::uint32_t level() const { return level_; }              // to_slots' input
  std::uint32_t slots_level() const { return slots_level_; }  // form A, after to_slots
  std::uint32_t lanes_level() const { return lanes_level_; }  // to_lanes' input
  std::uint32_t output_level() const;                         // form B, after to_lanes
  // The slot of digit t (and t + n/2, in `high`) of lane r, t < n/2.
  std::uint32_t slot_of_digit(std::uint32_t lane, std::uint32_t t) const;

  // The rotation keys both directions use, at their levels, and the conjugation.
  void add_keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                ckks::GaloisKeys& keys) const;
  void make_resident(const ckks::RnsOps& ops);

  // Error(size_mismatch) for a ciphertext of another space, Error(invalid_argument) for one
  // below level().
  DigitSlots to_slots(const LaneCiphertext& x, const ckks::GaloisKeys& keys) const;
  // Parts at lanes_level() or above (dropped to it), of one scale; Error(invalid_argument)
  // otherwise.
  LaneCiphertext to_lanes(const DigitSlots& digits, const ckks::GaloisKeys& keys) const;
  // Canonical digits (digits.hpp) to form B: to_lanes with the digit bound beta - 1 (1 for
  // beta = 2, where beta^n's a_0 = -1 is the largest). Error(invalid_argument) for digits not
  // canonical.
  LaneCiphertext from_digits(const DigitSlots& digits, const ckks::GaloisKeys& keys) const;

 private:
  const LaneContext* context_;
  ckks::Encoder encoder_;
  ckks::Evaluator evaluator_;
  NoiseModel noise_;
  std::uint32_t level_ = 0, slots_level_ = 0, lanes_level_ = 0;
  std::optional<ckks::HomomorphicDft> l_inverse_, l_;
  ckks::Plaintext minus_i_, i_;
};

}  // namespace safhire::lanes
