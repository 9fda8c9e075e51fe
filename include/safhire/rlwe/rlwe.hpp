// RLWE over the 64-bit torus: secret keys, ciphertexts (a, b) with b = a s + mu + e (mod 2^64),
// the seeded form (seed, b) in which fresh ciphertexts travel, encoding of signed b-bit messages
// scaled by 2^(64-b), and client-side encryption and decryption. Products a*s are exact
// (ring::ExactProduct: torus times small).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/rlwe/params.hpp"

namespace safhire::rlwe {

using u64 = std::uint64_t;

// ---- Messages ---------------------------------------------------------------------------------

// y in [-2^(b-1), 2^(b-1)) -> y 2^(64-b) on the torus. Throws ErrorCode::invalid_argument for a
// value outside that range.
u64 encode_message(std::int64_t y, std::uint32_t bits);
// The nearest message: round(phase / 2^(64-b)) read as a signed b-bit value.
std::int64_t decode_message(u64 phase, std::uint32_t bits);

// Values split into chunks of N coefficients (the last one zero-padded), each encoded.
std::vector<ring::TorusPoly> encode_chunks(const ring::RingParams& ring,
                                           std::span<const std::int64_t> values,
                                           std::uint32_t bits);

// x rounded to the nearest multiple of 2^(64 - bits), wrapping mod 2^64 (bits in 1..64).
inline u64 round_to_bits(u64 x, std::uint32_t bits) {
  const std::uint32_t drop = 64 - bits;
  return drop == 0 ? x : ((x + (u64{1} << (drop - 1))) >> drop) << drop;
}

// The variance round_to_bits adds to a word (a uniform rounding error, torus units):
// 2^-2bits / 12, and 0 at 64 bits.
inline double word_rounding_variance(std::uint32_t bits) {
  return bits >= 64 ? 0.0 : std::exp2(-2.0 * bits) / 12;
}

// The fewest bits (1..64) whose word_rounding_variance is at most share sigma^2.
std::uint32_t hiding_bits(const ParameterSet& params, double share);

// The fewest bits of a fresh ciphertext's b whose rounding adds at most 1/16 of the fresh noise
// variance (2^-2bits / 12 <= sigma^2 / 16): 35 for default-b8, 51 for default-b12.
std::uint32_t upload_bits(const ParameterSet& params);

// ---- Keys and ciphertexts ---------------------------------------------------------------------

// The client's secret: uniform binary (or ternary) coefficients. Never leaves the client: it has
// no serialisation. Its coefficients are wiped when it is destroyed (core::secure_zero).
class SecretKey {
 public:
  SecretKey(const ParameterSet& params, core::RandomSource& random);
  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey&) = default;
  ~SecretKey() { core::secure_zero_words(s_.coeffs()); }
  const ParameterSet& params() const { return params_; }
  const ring::TorusPoly& poly() const { return s_; }
  std::span<const u64> coeffs() const { return s_.coeffs(); }

 private:
  ParameterSet params_;
  ring::TorusPoly s_;
};

struct Ciphertext {
  ring::TorusPoly a, b;
  explicit Ciphertext(const ring::RingParams& ring) : a(ring), b(ring) {}
};

// A fresh ciphertext as it travels: `a` is expand_seed(seed) (core/random.hpp), and b is rounded
// to a multiple of 2^(64-bits) so that only its top `bits` bits travel.
struct SeededCiphertext {
  core::Seed seed{};
  std::uint32_t bits = 64;
  ring::TorusPoly b;
  explicit SeededCiphertext(const ring::RingParams& ring) : b(ring) {}
  Ciphertext expand() const;
};

// A ciphertext switched to smaller moduli (what the server downloads): a holds values below
// 2^bits, b values below 2^body_bits, standing for a 2^(64-bits) and b 2^(64-body_bits) on the
// torus.
struct SwitchedCiphertext {
  std::uint32_t bits = 64;       // of the mask a
  std::uint32_t body_bits = 64;  // of the body b
  std::vector<u64> a, b;
};
// a rounded to 2^bits and b to 2^body_bits (by default the same). The phase gains e_b - e_a s,
// e_a uniform in [-1/2, 1/2] 2^-bits and e_b in [-1/2, 1/2] 2^-body_bits (download_variance). The
// mask's error meets the key in about 2N products, so b can be rounded a few bits coarser than a
// at almost no cost: the download's widths (hybrid::RoundNoise).
SwitchedCiphertext modulus_switch(const Ciphertext& ct, std::uint32_t bits,
                                  std::uint32_t body_bits);
inline SwitchedCiphertext modulus_switch(const Ciphertext& ct, std::uint32_t bits) {
  return modulus_switch(ct, bits, bits);
}
// Back on the torus (the low 64 - bits bits zero): decrypts like any ciphertext.
Ciphertext expand(const ring::RingParams& ring, const SwitchedCiphertext& ct);

// Encryption and decryption under one secret key. Not thread-safe (it draws from one random
// source): one object per thread.
class Encryptor {
 public:
  // `noise` supplies the Gaussian errors and the seeds; production code passes an OsRandom.
  Encryptor(const SecretKey& key, core::RandomSource& noise);

  const ParameterSet& params() const { return key_->params(); }

  // Encryption of the torus polynomial mu (already scaled): b = a s + mu + e, a from a fresh seed,
  // b rounded to `bits` bits (upload_bits: no measurable extra noise).
  SeededCiphertext encrypt_seeded(std::span<const u64> mu, std::uint32_t bits = 64);
  Ciphertext encrypt(std::span<const u64> mu);

  // b - a s: the message plus the noise.
  ring::TorusPoly phase(const Ciphertext& ct);
  // The decoded messages of every coefficient.
  std::vector<std::int64_t> decrypt(const Ciphertext& ct);

  // (a s) for any torus a: what keys and probes need.
  void multiply_by_secret(std::span<const u64> a, std::span<u64> out);

 private:
  const SecretKey* key_;
  core::RandomSource* noise_;
  const ring::ExactProduct* product_;
};

// ---- Noise ------------------------------------------------------------------------------------

// Accumulates phase errors (torus words, read as signed) and reports their statistics relative
// to the torus: the probe behind every noise test and the failure estimates.
class NoiseProbe {
 public:
  void add(u64 error);
  void add(std::span<const u64> errors);
  std::size_t count() const { return count_; }
  double variance() const;  // E[e^2] in torus units (the mean is expected to be 0)
  double log2_variance() const;
  double log2_std() const { return log2_variance() / 2; }
  double max_abs() const { return max_abs_; }  // torus units

 private:
  long double sum_squares_ = 0;  // in units of 2^-64, squared
  double max_abs_ = 0;
  std::size_t count_ = 0;
};

// phase(ct) - expected, coefficient by coefficient: the error of a ciphertext under a known key.
ring::TorusPoly phase_error(Encryptor& encryptor, const Ciphertext& ct,
                            std::span<const u64> expected_phase);

// Throws ErrorCode::size_mismatch unless ct belongs to `ring`.
void require_ring(const Ciphertext& ct, const ring::RingParams& ring, const char* what);

}  // namespace safhire::rlwe
