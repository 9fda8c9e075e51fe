#include "safhire/core/random.hpp"

#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "safhire/core/error.hpp"

namespace safhire::core {

namespace {

std::uint64_t load_le64(const std::uint8_t* p) {
  std::uint64_t w = 0;
  for (int i = 7; i >= 0; --i)
    w = (w << 8) | p[i];
  return w;
}

// 53 random bits as a double in [0, 1).
double unit_interval(std::uint64_t word) {
  return static_cast<double>(word >> 11) * 0x1p-53;
}

}  // namespace

void RandomSource::fill_words(std::span<std::uint64_t> out) {
  std::vector<std::uint8_t> bytes(out.size() * 8);
  fill(bytes);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = load_le64(bytes.data() + 8 * i);
}

std::uint64_t RandomSource::word() {
  std::uint64_t w = 0;
  fill_words({&w, 1});
  return w;
}

Seed RandomSource::seed() {
  Seed s;
  fill(s);
  return s;
}

OsRandom::OsRandom() {
  require(sodium_init() >= 0, ErrorCode::internal, "libsodium could not be initialised");
}

void OsRandom::fill(std::span<std::uint8_t> out) {
  randombytes_buf(out.data(), out.size());
}

SeededRandom::SeededRandom(const Seed& seed) : key_(seed) {
  require(sodium_init() >= 0, ErrorCode::internal, "libsodium could not be initialised");
}

SeededRandom::~SeededRandom() {
  secure_zero(key_);
  secure_zero(buffer_);
}

void secure_zero(std::span<std::uint8_t> bytes) {
  sodium_memzero(bytes.data(), bytes.size());
}

SeededRandom SeededRandom::from_counter(std::uint64_t value) {
  Seed seed{};
  for (int i = 0; i < 8; ++i)
    seed[i] = static_cast<std::uint8_t>(value >> (8 * i));
  return SeededRandom(seed);
}

void SeededRandom::fill(std::span<std::uint8_t> out) {
  static constexpr std::uint8_t kNonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {};
  std::size_t done = 0;
  while (done < out.size()) {
    // Whole blocks straight into out: the same keystream, without a call per block.
    const std::uint64_t whole =
        std::min<std::uint64_t>((out.size() - done) / 64, (std::uint64_t{1} << 32) - block_);
    if (used_ == buffer_.size() && whole > 0) {
      const std::size_t bytes = static_cast<std::size_t>(whole) * 64;
      std::memset(out.data() + done, 0, bytes);
      crypto_stream_chacha20_ietf_xor_ic(out.data() + done, out.data() + done, bytes, kNonce,
                                         static_cast<std::uint32_t>(block_), key_.data());
      block_ += whole;
      done += bytes;
      continue;
    }
    if (used_ == buffer_.size()) {
      require(block_ < (std::uint64_t{1} << 32), ErrorCode::internal,
              "SeededRandom: a ChaCha20 stream is limited to 2^32 blocks");
      // The keystream block `block_`: ChaCha20 of zeros from that block counter.
      std::memset(buffer_.data(), 0, buffer_.size());
      crypto_stream_chacha20_ietf_xor_ic(buffer_.data(), buffer_.data(), buffer_.size(), kNonce,
                                         static_cast<std::uint32_t>(block_), key_.data());
      ++block_;
      used_ = 0;
    }
    const std::size_t take = std::min(out.size() - done, buffer_.size() - used_);
    std::memcpy(out.data() + done, buffer_.data() + used_, take);
    used_ += take;
    done += take;
  }
}

void expand_seed(const Seed& seed, std::span<std::uint64_t> out) {
  SeededRandom stream(seed);
  stream.fill_words(out);
}

Seed derive_seed(const Seed& key, std::uint64_t id, const char (&context)[9]) {
  static_assert(crypto_kdf_CONTEXTBYTES == 8 && crypto_kdf_KEYBYTES == 32);
  Seed out{};
  require(crypto_kdf_derive_from_key(out.data(), out.size(), id, context, key.data()) == 0,
          ErrorCode::internal, "crypto_kdf_derive_from_key failed");
  return out;
}

std::int64_t uniform_in(RandomSource& random, std::int64_t low, std::int64_t high) {
  require(low <= high, ErrorCode::invalid_argument, "uniform_in: empty range");
  const std::uint64_t span = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  if (span == ~std::uint64_t{0}) return static_cast<std::int64_t>(random.word());
  const std::uint64_t count = span + 1;
  // Reject the top partial range of 64-bit words.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % count + 1) % count;
  std::uint64_t w;
  do {
    w = random.word();
  } while (w > limit);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + w % count);
}

std::vector<std::uint32_t> random_permutation(RandomSource& random, std::uint32_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::uint32_t i = 0; i < n; ++i)
    p[i] = i;
  for (std::uint32_t i = n; i > 1; --i) {
    // j uniform in [0, i): reject the top partial range of 64-bit words.
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % i + 1) % i;
    std::uint64_t w;
    do {
      w = random.word();
    } while (w > limit);
    std::swap(p[i - 1], p[w % i]);
  }
  return p;
}

void sample_binary(RandomSource& random, std::span<std::uint64_t> out) {
  std::vector<std::uint8_t> bytes((out.size() + 7) / 8);
  random.fill(bytes);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = (bytes[i / 8] >> (i % 8)) & 1U;
}

void sample_ternary(RandomSource& random, std::span<std::uint64_t> out) {
  // One byte per value; bytes >= 255 are rejected so that 255 = 3 * 85 outcomes stay uniform.
  std::vector<std::uint8_t> bytes(out.size() + 16);
  std::size_t next = bytes.size();
  for (std::size_t i = 0; i < out.size();) {
    if (next == bytes.size()) {
      random.fill(bytes);
      next = 0;
    }
    const std::uint8_t byte = bytes[next++];
    if (byte == 255) continue;
    out[i++] = static_cast<std::uint64_t>(static_cast<std::int64_t>(byte % 3) - 1);
  }
}

void sample_gaussian(RandomSource& random, double sigma, std::span<std::uint64_t> out) {
  require(sigma >= 0x1p-64 && sigma <= 0x1p-8, ErrorCode::invalid_argument,
          "Gaussian width must be in [2^-64, 2^-8] of the torus");
  const double scale = sigma * 0x1p64;
  std::vector<std::uint64_t> words(out.size() + 1);
  random.fill_words(words);
  for (std::size_t i = 0; i < out.size(); i += 2) {
    // Box-Muller: u1 in (0, 1], u2 in [0, 1).
    const double u1 = 1.0 - unit_interval(words[i]);
    const double u2 = unit_interval(words[i + 1]);
    const double radius = std::sqrt(-2.0 * std::log(u1)) * scale;
    const double angle = 2.0 * std::numbers::pi * u2;
    out[i] = static_cast<std::uint64_t>(std::llround(radius * std::cos(angle)));
    if (i + 1 < out.size()) {
      out[i + 1] = static_cast<std::uint64_t>(std::llround(radius * std::sin(angle)));
    }
  }
}

}  // namespace safhire::core
