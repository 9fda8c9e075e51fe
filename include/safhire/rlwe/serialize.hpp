// Versioned binary formats of what crosses a process boundary in the RLWE layer: ciphertexts,
// seeded ciphertexts and key-switching keys (the secret key has none: it never leaves the
// client). Layout, little-endian:
//   "SFHR" | u16 format version (2) | u8 kind | u16 parameter-set id | u32 t | u32 a | payload
//   kind 1, ciphertext:          N words a, N words b
//   kind 2, seeded ciphertext:   32-byte seed, u8 bits, the top `bits` bits of each of the N
//                                words b, bit-packed
//   kind 3, key-switching key:   u64 Galois element, u32 base D, u32 levels l,
//                                l 32-byte seeds of the a_i, u8 bits, the top `bits` bits
//                                of each of the l x N words b_i, bit-packed (bits =
//                                key_bits(params), rounding as needed; version 1 had 64)
//   kind 4, switched ciphertext: u8 bits, then the 2N values a, b packed at `bits` bits each
// Parsing checks everything against the parameter set the caller expects: bad magic, version,
// kind or length (truncated or oversized) -> ErrorCode::malformed_input; another parameter set
// or ring -> ErrorCode::invalid_parameters. Lengths are checked before anything is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/rlwe.hpp"

namespace safhire::rlwe {

inline constexpr std::uint16_t kFormatVersion = 3;

std::vector<std::uint8_t> serialize(const ParameterSet& params, const Ciphertext& ct);
std::vector<std::uint8_t> serialize(const ParameterSet& params, const SeededCiphertext& ct);
std::vector<std::uint8_t> serialize(const ParameterSet& params, const KeySwitchKey& key);
std::vector<std::uint8_t> serialize(const ParameterSet& params, const SwitchedCiphertext& ct);

// Serialized sizes without serializing (what plans and message limits are computed from).
std::uint64_t seeded_ciphertext_bytes(const ParameterSet& params, std::uint32_t bits);
std::uint64_t key_switch_key_bytes(const ParameterSet& params, const Gadget& gadget);
std::uint64_t switched_ciphertext_bytes(const ParameterSet& params, std::uint32_t bits,
                                        std::uint32_t body_bits);

Ciphertext parse_ciphertext(std::span<const std::uint8_t> bytes, const ParameterSet& params);
SeededCiphertext parse_seeded_ciphertext(std::span<const std::uint8_t> bytes,
                                         const ParameterSet& params);
KeySwitchKey parse_key_switch_key(std::span<const std::uint8_t> bytes, const ParameterSet& params);
SwitchedCiphertext parse_switched_ciphertext(std::span<const std::uint8_t> bytes,
                                             const ParameterSet& params);

}  // namespace safhire::rlwe
