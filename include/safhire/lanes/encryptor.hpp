// Encryption of integers into lanes and decryption back: fresh ciphertexts at the space's rest
// level and rest scale, with the digit bound of the digits encoded and the noise model's fresh
// estimate; decryption decodes with the lane encoder (its report says how far the digits were
// from their integers). Keys are the CKKS ones (ckks.hpp: KeyGenerator) of the space's context;
// the secret key never leaves the client that made it.
#pragma once

#include <gmpxx.h>

#include <span>

#include "safhire/ckks/ckks.hpp"
#include "safhire/core/random.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/encoder.hpp"

namespace safhire::lanes {

class LaneEncryptor {
 public:
  // Noise comes from `random` (an OsRandom for real use).
  LaneEncryptor(const LaneContext& context, const ckks::RnsOps& ops, core::RandomSource& random);

  // Up to lanes() integers (any sign and size: reduced mod p), missing lanes 0.
  LaneCiphertext encrypt(std::span<const mpz_class> integers, const ckks::PublicKey& pk) const;
  LaneCiphertext encrypt(std::span<const mpz_class> integers, const ckks::SecretKey& sk) const;
  // Digits directly (lanes() rows of n): a field space's elements (FieldSpace::digits), or
  // redundant and adversarial digit patterns.
  LaneCiphertext encrypt_digits(const LaneDigits& digits, const ckks::PublicKey& pk) const;
  LaneCiphertext encrypt_digits(const LaneDigits& digits, const ckks::SecretKey& sk) const;

 private:
  LaneCiphertext wrap(ckks::Ciphertext ct, const LaneDigits& digits) const;
  const LaneContext* context_;
  LaneEncoder encoder_;
  mutable ckks::Encryptor encryptor_;  // draws noise: not const
};

class LaneDecryptor {
 public:
  LaneDecryptor(const LaneContext& context, const ckks::RnsOps& ops, const ckks::SecretKey& sk);
  // Error(size_mismatch) for a ciphertext of another space.
  LaneDecoding decrypt(const LaneCiphertext& x) const;

 private:
  const LaneContext* context_;
  const ckks::RnsOps* ops_;
  const ckks::SecretKey* sk_;
  LaneEncoder encoder_;
};

}  // namespace safhire::lanes
