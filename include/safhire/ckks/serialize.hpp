// Versioned binary serialisation of every CKKS object. Each blob starts with the magic "SHCK",
// a format version, the object's kind and the fingerprint of the context's primes, so that a
// blob read under other parameters is refused. Residues are bit-packed at the width of their
// prime. Reading checks everything against the context before allocating: degree, moduli
// (the ones the object kind must have), residues below their prime, scale and slot count; any
// violation, truncation or trailing byte is Error(malformed_input), a blob of another
// parameter set Error(size_mismatch). Format version 2 writes a switching key's form first (a
// seeded key: its 16-byte seed and the b_j only); version 1 blobs are still read.
//
// A secret key serialises for storage on the client that owns it; nothing in Safhire sends one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/ckks/ckks.hpp"

namespace safhire::ckks {

// FNV-1a of N and the primes: equal contexts, equal fingerprints.
std::uint64_t fingerprint(const CkksContext& context);

std::vector<std::uint8_t> serialize(const CkksContext& context, const Ciphertext& ct);
std::vector<std::uint8_t> serialize(const CkksContext& context, const Plaintext& plain);
std::vector<std::uint8_t> serialize(const CkksContext& context, const PublicKey& pk);
std::vector<std::uint8_t> serialize(const CkksContext& context, const SecretKey& sk);
std::vector<std::uint8_t> serialize(const CkksContext& context, const SwitchingKey& key);
std::vector<std::uint8_t> serialize(const CkksContext& context, const GaloisKeys& keys);
std::vector<std::uint8_t> serialize_params(const CkksParams& params);

Ciphertext deserialize_ciphertext(const CkksContext& context, std::span<const std::uint8_t> bytes);
Plaintext deserialize_plaintext(const CkksContext& context, std::span<const std::uint8_t> bytes);
PublicKey deserialize_public_key(const CkksContext& context, std::span<const std::uint8_t> bytes);
SecretKey deserialize_secret_key(const CkksContext& context, std::span<const std::uint8_t> bytes);
SwitchingKey deserialize_switching_key(const CkksContext& context,
                                       std::span<const std::uint8_t> bytes);
GaloisKeys deserialize_galois_keys(const CkksContext& context, std::span<const std::uint8_t> bytes);
CkksParams deserialize_params(std::span<const std::uint8_t> bytes);

}  // namespace safhire::ckks
