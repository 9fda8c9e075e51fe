// The context of a lane space: the space (validated once, here) and the CKKS context of its
// chain, which every lane object is made against. Encoders, encryptors, evaluators and the
// refresher take a LaneContext and the RNS primitives (ckks::RnsOps: the CPU's, or a CUDA
// backend's) they compute with.
#pragma once

#include <cstdint>

#include "safhire/ckks/rns.hpp"
#include "safhire/lanes/lane_space.hpp"

namespace safhire::lanes {

class LaneContext {
 public:
  // Error(invalid_parameters) or Error(insecure_parameters) as LaneSpace::validate.
  explicit LaneContext(LaneSpace space, bool allow_insecure = false);
  LaneContext(const LaneContext&) = delete;
  LaneContext& operator=(const LaneContext&) = delete;

  const LaneSpace& space() const { return space_; }
  const ckks::CkksContext& ckks() const { return ckks_; }
  const mpz_class& modulus() const { return modulus_; }
  // FNV-1a of the space (n, beta, the layout) and of the CKKS context's primes: lane objects of
  // another space are refused by it.
  std::uint64_t fingerprint() const { return fingerprint_; }
  // The scale of ciphertexts at rest: q_(rest level), which a product and its rescale keep.
  double rest_scale() const;

 private:
  LaneSpace space_;
  ckks::CkksContext ckks_;
  mpz_class modulus_;
  std::uint64_t fingerprint_ = 0;
};

}  // namespace safhire::lanes
