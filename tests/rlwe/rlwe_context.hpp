// A client and its keys for the RLWE test suites: a seeded key, an encryptor, the Galois keys of
// the trees (for both gadgets of a set), and chunk-sized random messages.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::rlwe::testing {

inline std::uint64_t power(std::uint64_t b, std::uint64_t e) {
  std::uint64_t p = 1;
  for (std::uint64_t i = 0; i < e; ++i)
    p *= b;
  return p;
}

// A small test set: noise far below the message precision, so every decryption is exact.
inline ParameterSet small_set(const ring::RingParams& r) {
  return ParameterSet("test-" + std::to_string(r.M()), 900, r, 8, -50, {1024, 4}, {1024, 4});
}

struct Context {
  ParameterSet p;
  core::SeededRandom random;
  SecretKey key;
  Encryptor enc;
  GaloisKeys keys;
  GaloisKeys partial_keys;  // for p.gadget(1), when it differs from p.gadget(0)
  explicit Context(ParameterSet params, std::uint64_t seed = 80)
      : p(std::move(params)),
        random(core::SeededRandom::from_counter(seed)),
        key(p, random),
        enc(key, random),
        keys(make_galois_keys(key, p.gadget(0), random)) {
    if (!(p.gadget(1) == p.gadget(0))) partial_keys = make_galois_keys(key, p.gadget(1), random);
  }
  const GaloisKeys& keys_for(std::uint32_t gamma) const {
    return gamma == 0 || p.gadget(1) == p.gadget(0) ? keys : partial_keys;
  }

  std::vector<std::int64_t> random_values(std::mt19937_64& rng) const {
    std::vector<std::int64_t> v(p.ring.N());
    for (auto& x : v)
      x = static_cast<std::int64_t>(rng() % 256) - 128;
    return v;
  }
  Ciphertext encrypt(const std::vector<std::int64_t>& values) {
    return enc.encrypt(encode_chunks(p.ring, values, p.message_bits)[0].coeffs());
  }
  std::vector<std::int64_t> decrypt(const Ciphertext& ct) { return enc.decrypt(ct); }
};

}  // namespace safhire::rlwe::testing
