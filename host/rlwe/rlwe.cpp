#include "safhire/rlwe/rlwe.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::rlwe {

u64 encode_message(std::int64_t y, std::uint32_t bits) {
  if (bits < 1 || bits > 32)
    throw Error(ErrorCode::invalid_argument,
                "message bits must be in [1, 32], got " + std::to_string(bits));
  const std::int64_t half = std::int64_t{1} << (bits - 1);
  if (y < -half || y >= half)
    throw Error(ErrorCode::invalid_argument, "message " + std::to_string(y) +
                                                 " is outside the signed " + std::to_string(bits) +
                                                 "-bit range");
  return static_cast<u64>(y) << (64 - bits);
}

std::int64_t decode_message(u64 phase, std::uint32_t bits) {
  // Round to the nearest multiple of 2^(64-b), then read the top b bits as a signed value.
  const u64 rounded = (phase + (u64{1} << (63 - bits))) >> (64 - bits);
  const u64 mask = (u64{1} << bits) - 1;
  const u64 y = rounded & mask;
  return (y >> (bits - 1)) != 0 ? static_cast<std::int64_t>(y) - (std::int64_t{1} << bits)
                                : static_cast<std::int64_t>(y);
}

std::vector<ring::TorusPoly> encode_chunks(const ring::RingParams& ring,
                                           std::span<const std::int64_t> values,
                                           std::uint32_t bits) {
  std::vector<ring::TorusPoly> chunks;
  for (std::size_t at = 0; at < values.size(); at += ring.N()) {
    chunks.emplace_back(ring);
    const std::size_t n = std::min<std::size_t>(ring.N(), values.size() - at);
    for (std::size_t i = 0; i < n; ++i)
      chunks.back()[i] = encode_message(values[at + i], bits);
  }
  return chunks;
}

SecretKey::SecretKey(const ParameterSet& params, core::RandomSource& random)
    : params_(params), s_(params.ring) {
  if (params.key == KeyDistribution::binary) {
    core::sample_binary(random, s_.coeffs());
  } else {
    core::sample_ternary(random, s_.coeffs());
  }
}

Ciphertext SeededCiphertext::expand() const {
  Ciphertext ct(b.ring());
  core::expand_seed(seed, ct.a.coeffs());
  std::copy(b.coeffs().begin(), b.coeffs().end(), ct.b.coeffs().begin());
  return ct;
}

SwitchedCiphertext modulus_switch(const Ciphertext& ct, std::uint32_t bits,
                                  std::uint32_t body_bits) {
  require(bits >= 1 && bits <= 64 && body_bits >= 1 && body_bits <= 64, ErrorCode::invalid_argument,
          "modulus_switch: bits in 1..64");
  SwitchedCiphertext out;
  out.bits = bits;
  out.body_bits = body_bits;
  // round_to_bits, in units of 2^(64 - width).
  auto round = [](u64 x, std::uint32_t width) {
    return width == 64 ? x : round_to_bits(x, width) >> (64 - width);
  };
  out.a.resize(ct.a.degree());
  out.b.resize(ct.b.degree());
  for (std::size_t i = 0; i < out.a.size(); ++i) {
    out.a[i] = round(ct.a[i], bits);
    out.b[i] = round(ct.b[i], body_bits);
  }
  return out;
}

Ciphertext expand(const ring::RingParams& ring, const SwitchedCiphertext& ct) {
  require(ct.bits >= 1 && ct.bits <= 64 && ct.body_bits >= 1 && ct.body_bits <= 64 &&
              ct.a.size() == ring.N() && ct.b.size() == ring.N(),
          ErrorCode::size_mismatch, "switched ciphertext of another ring or width");
  Ciphertext out(ring);
  const std::uint32_t drop = 64 - ct.bits, body_drop = 64 - ct.body_bits;
  for (std::size_t i = 0; i < ring.N(); ++i) {
    out.a[i] = ct.a[i] << drop;
    out.b[i] = ct.b[i] << body_drop;
  }
  return out;
}

void require_ring(const Ciphertext& ct, const ring::RingParams& ring, const char* what) {
  if (!(ct.a.ring() == ring && ct.b.ring() == ring))
    throw Error(ErrorCode::size_mismatch, std::string(what) + ": ciphertext of ring " +
                                              ct.a.ring().name() + ", expected " + ring.name());
}

Encryptor::Encryptor(const SecretKey& key, core::RandomSource& noise)
    : key_(&key), noise_(&noise), product_(&ring::ExactProduct::shared(key.params().ring)) {}

void Encryptor::multiply_by_secret(std::span<const u64> a, std::span<u64> out) {
  product_->multiply(a, key_->coeffs(), out);
}

std::uint32_t hiding_bits(const ParameterSet& params, double share) {
  const double budget = share * std::exp2(2 * params.log2_sigma);
  std::uint32_t k = 1;
  while (k < 64 && word_rounding_variance(k) > budget)
    ++k;
  return k;
}

std::uint32_t upload_bits(const ParameterSet& params) {
  return hiding_bits(params, 1.0 / 16);
}

SeededCiphertext Encryptor::encrypt_seeded(std::span<const u64> mu, std::uint32_t bits) {
  const ring::RingParams& ring = params().ring;
  ring::require_degree(ring, mu.size(), "Encryptor::encrypt message");
  require(bits >= 1 && bits <= 64, ErrorCode::invalid_argument, "encrypt_seeded: bits in 1..64");
  SeededCiphertext ct(ring);
  ct.bits = bits;
  ct.seed = noise_->seed();
  ring::TorusPoly a(ring), e(ring);
  core::expand_seed(ct.seed, a.coeffs());
  core::sample_gaussian(*noise_, params().sigma(), e.coeffs());
  multiply_by_secret(a.coeffs(), ct.b.coeffs());
  for (std::size_t i = 0; i < ring.N(); ++i)
    ct.b[i] = round_to_bits(ct.b[i] + mu[i] + e[i], bits);
  return ct;
}

Ciphertext Encryptor::encrypt(std::span<const u64> mu) {
  return encrypt_seeded(mu).expand();
}

ring::TorusPoly Encryptor::phase(const Ciphertext& ct) {
  require_ring(ct, params().ring, "Encryptor::phase");
  ring::TorusPoly p(params().ring);
  multiply_by_secret(ct.a.coeffs(), p.coeffs());
  for (std::size_t i = 0; i < p.degree(); ++i)
    p[i] = ct.b[i] - p[i];
  return p;
}

std::vector<std::int64_t> Encryptor::decrypt(const Ciphertext& ct) {
  const ring::TorusPoly p = phase(ct);
  std::vector<std::int64_t> out(p.degree());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = decode_message(p[i], params().message_bits);
  return out;
}

void NoiseProbe::add(u64 error) {
  const auto e = static_cast<long double>(static_cast<std::int64_t>(error));
  sum_squares_ += e * e;
  max_abs_ = std::max(max_abs_, static_cast<double>(std::fabs(e)) * 0x1p-64);
  ++count_;
}

void NoiseProbe::add(std::span<const u64> errors) {
  for (u64 e : errors)
    add(e);
}

double NoiseProbe::variance() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_squares_ / count_) * 0x1p-128;
}

double NoiseProbe::log2_variance() const {
  return std::log2(variance());
}

ring::TorusPoly phase_error(Encryptor& encryptor, const Ciphertext& ct,
                            std::span<const u64> expected_phase) {
  ring::TorusPoly p = encryptor.phase(ct);
  ring::require_degree(p.ring(), expected_phase.size(), "phase_error expected phase");
  for (std::size_t i = 0; i < p.degree(); ++i)
    p[i] -= expected_phase[i];
  return p;
}

}  // namespace safhire::rlwe
