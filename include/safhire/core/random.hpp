// Randomness. Secrets (keys, noise) come from the operating system's CSPRNG through libsodium
// (OsRandom). Whatever must be reproducible from a 32-byte seed -- the public mask `a` of a
// seeded ciphertext or key, and test fixtures -- is the ChaCha20 keystream of that seed
// (SeededRandom, expand_seed), identical on every platform. Samplers for the secret and noise
// distributions of RLWE sit on top of either source.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace safhire::core {

using Seed = std::array<std::uint8_t, 32>;

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual void fill(std::span<std::uint8_t> out) = 0;

  // Uniform 64-bit words (little-endian reading of the byte stream).
  void fill_words(std::span<std::uint64_t> out);
  std::uint64_t word();
  Seed seed();  // 32 fresh bytes
};

// The operating system's CSPRNG (libsodium randombytes_buf: getrandom on Linux).
class OsRandom final : public RandomSource {
 public:
  OsRandom();  // initialises libsodium; throws ErrorCode::internal if it cannot
  void fill(std::span<std::uint8_t> out) override;
};

// Overwrites secret bytes with zeros in a way the compiler may not elide (libsodium's
// sodium_memzero): secret keys, seeds and stream state call it when they are destroyed.
void secure_zero(std::span<std::uint8_t> bytes);
template <class T>
void secure_zero_words(std::span<T> words) {
  secure_zero({reinterpret_cast<std::uint8_t*>(words.data()), words.size_bytes()});
}

// The ChaCha20 (IETF) keystream with the seed as key, nonce 0, block counter from 0.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(const Seed& seed);
  SeededRandom(const SeededRandom&) = default;
  SeededRandom& operator=(const SeededRandom&) = default;
  // The key and the unused keystream are wiped (secure_zero).
  ~SeededRandom() override;
  // A seed made from a small integer, for tests and benchmarks that must be reproducible.
  static SeededRandom from_counter(std::uint64_t value);
  void fill(std::span<std::uint8_t> out) override;

 private:
  Seed key_;
  std::uint64_t block_ = 0;  // next keystream block
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t used_ = 64;  // bytes of buffer_ already handed out
};

// out = the first out.size() words of SeededRandom(seed): the expansion of a seeded `a`.
void expand_seed(const Seed& seed, std::span<std::uint64_t> out);

// Subkey number `id` of `key` in the 8-character context `context` (libsodium's
// crypto_kdf_derive_from_key, BLAKE2b): independent seeds from one secret, e.g. one per round.
Seed derive_seed(const Seed& key, std::uint64_t id, const char (&context)[9]);

// An integer uniform in [low, high] (rejection-sampled, so unbiased); low <= high.
std::int64_t uniform_in(RandomSource& random, std::int64_t low, std::int64_t high);

// A uniform permutation of 0..n-1 (Fisher-Yates with rejection-sampled indices, so unbiased).
std::vector<std::uint32_t> random_permutation(RandomSource& random, std::uint32_t n);

// ---- Samplers, writing torus words (signed values as two's complement) --------------------------

// Uniform in {0, 1}.
void sample_binary(RandomSource& random, std::span<std::uint64_t> out);
// Uniform in {-1, 0, 1}.
void sample_ternary(RandomSource& random, std::span<std::uint64_t> out);
// Rounded Gaussian: round(sigma * 2^64 * z), z standard normal (Box-Muller on 53-bit uniforms),
// i.e. a Gaussian of standard deviation `sigma` relative to the torus. Throws
// ErrorCode::invalid_argument unless 2^-64 <= sigma <= 2^-8. For sigma * 2^64 >= 2^10, as in every
// parameter set, this is statistically indistinguishable from the discrete Gaussian of the same
// width.
void sample_gaussian(RandomSource& random, double sigma, std::span<std::uint64_t> out);

}  // namespace safhire::core
