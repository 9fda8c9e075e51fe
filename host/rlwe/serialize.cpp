#include "safhire/rlwe/serialize.hpp"

#include <algorithm>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/serialize.hpp"

namespace safhire::rlwe {

namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'F', 'H', 'R'};
enum Kind : std::uint8_t {
  kCiphertext = 1,
  kSeededCiphertext = 2,
  kKeySwitchKey = 3,
  kSwitchedCiphertext = 4
};

const char* kind_name(Kind kind) {
  switch (kind) {
    case kCiphertext:
      return "ciphertext";
    case kSeededCiphertext:
      return "seeded ciphertext";
    case kKeySwitchKey:
      return "key-switching key";
    case kSwitchedCiphertext:
      return "switched ciphertext";
  }
  return "object";
}

// Magic, u16 version, u8 kind, u16 parameter-set id, u32 t, u32 a.
constexpr std::uint64_t kHeaderBytes = 4 + 2 + 1 + 2 + 4 + 4;

std::uint64_t packed_bytes(std::uint64_t n, std::uint32_t bits) {
  return (n * bits + 7) / 8;
}

void write_header(core::ByteWriter& w, Kind kind, const ParameterSet& params) {
  w.bytes(kMagic);
  w.u16(kFormatVersion);
  w.u8(kind);
  w.u16(params.id);
  w.u32(params.ring.t());
  w.u32(params.ring.a());
}

void read_header(core::ByteReader& r, Kind kind, const ParameterSet& params) {
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic))) {
    r.fail("not a Safhire object (bad magic)");
  }
  const std::uint16_t version = r.u16();
  if (version != kFormatVersion) {
    r.fail("format version " + std::to_string(version) + ", this build reads version " +
           std::to_string(kFormatVersion));
  }
  const std::uint8_t found = r.u8();
  if (found != kind) {
    r.fail("expected a " + std::string(kind_name(kind)) + " (kind " + std::to_string(kind) +
           "), found kind " + std::to_string(found));
  }
  const std::uint16_t id = r.u16();
  const std::uint32_t t = r.u32(), a = r.u32();
  require(id == params.id && t == params.ring.t() && a == params.ring.a(),
          ErrorCode::invalid_parameters,
          std::string(kind_name(kind)) + " of parameter set " + std::to_string(id) + " (ring " +
              std::to_string(t) + "^" + std::to_string(a) + "), expected set " +
              std::to_string(params.id) + " '" + params.name + "' (ring " + params.ring.name() +
              ")");
}

}  // namespace

std::vector<std::uint8_t> serialize(const ParameterSet& params, const Ciphertext& ct) {
  require_ring(ct, params.ring, "serialize ciphertext");
  core::ByteWriter w;
  write_header(w, kCiphertext, params);
  w.words(ct.a.coeffs());
  w.words(ct.b.coeffs());
  return w.take();
}

std::vector<std::uint8_t> serialize(const ParameterSet& params, const SeededCiphertext& ct) {
  require(ct.b.ring() == params.ring, ErrorCode::size_mismatch,
          "serialize seeded ciphertext: another ring");
  require(ct.bits >= 1 && ct.bits <= 64, ErrorCode::invalid_argument, "seeded ciphertext width");
  core::ByteWriter w;
  write_header(w, kSeededCiphertext, params);
  w.bytes(ct.seed);
  w.u8(static_cast<std::uint8_t>(ct.bits));
  std::vector<std::uint64_t> top(ct.b.coeffs().begin(), ct.b.coeffs().end());
  for (auto& x : top)
    x = ct.bits == 64 ? x : x >> (64 - ct.bits);
  w.packed_words(top, ct.bits);
  return w.take();
}

std::vector<std::uint8_t> serialize(const ParameterSet& params, const KeySwitchKey& key) {
  require(key.ring() == params.ring && key.parameter_id() == params.id,
          ErrorCode::invalid_parameters, "serialize key-switching key: another parameter set");
  core::ByteWriter w;
  write_header(w, kKeySwitchKey, params);
  w.u64(key.galois_element());
  w.u32(key.gadget().base);
  w.u32(key.gadget().levels);
  for (const core::Seed& seed : key.seeds())
    w.bytes(seed);
  // b in key_bits(params) bits: a key made by make_key_switch_key has nothing below them.
  const std::uint32_t bits = key_bits(params);
  w.u8(static_cast<std::uint8_t>(bits));
  std::vector<std::uint64_t> top;
  for (std::uint32_t i = 0; i < key.gadget().levels; ++i) {
    for (std::uint64_t x : key.torus_b(i))
      top.push_back(bits == 64 ? x : round_to_bits(x, bits) >> (64 - bits));
  }
  w.packed_words(top, bits);
  return w.take();
}

std::uint64_t seeded_ciphertext_bytes(const ParameterSet& params, std::uint32_t bits) {
  require(bits >= 1 && bits <= 64, ErrorCode::invalid_argument, "seeded ciphertext width");
  return kHeaderBytes + 32 + 1 + packed_bytes(params.ring.N(), bits);
}

std::uint64_t key_switch_key_bytes(const ParameterSet& params, const Gadget& gadget) {
  return kHeaderBytes + 8 + 4 + 4 + std::uint64_t{gadget.levels} * 32 + 1 +
         packed_bytes(std::uint64_t{gadget.levels} * params.ring.N(), key_bits(params));
}

std::uint64_t switched_ciphertext_bytes(const ParameterSet& params, std::uint32_t bits,
                                        std::uint32_t body_bits) {
  require(bits >= 1 && bits <= 64 && body_bits >= 1 && body_bits <= 64, ErrorCode::invalid_argument,
          "switched ciphertext widths");
  return kHeaderBytes + 2 + packed_bytes(params.ring.N(), bits) +
         packed_bytes(params.ring.N(), body_bits);
}

std::vector<std::uint8_t> serialize(const ParameterSet& params, const SwitchedCiphertext& ct) {
  require(ct.bits >= 1 && ct.bits <= 64 && ct.body_bits >= 1 && ct.body_bits <= 64 &&
              ct.a.size() == params.ring.N() && ct.b.size() == params.ring.N(),
          ErrorCode::size_mismatch, "serialize switched ciphertext: another ring or width");
  core::ByteWriter w;
  write_header(w, kSwitchedCiphertext, params);
  w.u8(static_cast<std::uint8_t>(ct.bits));
  w.u8(static_cast<std::uint8_t>(ct.body_bits));
  w.packed_words(ct.a, ct.bits);
  w.packed_words(ct.b, ct.body_bits);
  return w.take();
}

SwitchedCiphertext parse_switched_ciphertext(std::span<const std::uint8_t> bytes,
                                             const ParameterSet& params) {
  core::ByteReader r(bytes, "switched ciphertext");
  read_header(r, kSwitchedCiphertext, params);
  SwitchedCiphertext ct;
  ct.bits = r.u8();
  ct.body_bits = r.u8();
  for (std::uint32_t bits : {ct.bits, ct.body_bits})
    if (bits < 1 || bits > 64) r.fail("width " + std::to_string(bits) + " bits");
  const std::size_t n = params.ring.N();
  r.expect_remaining(packed_bytes(n, ct.bits) + packed_bytes(n, ct.body_bits));
  ct.a.resize(n);
  ct.b.resize(n);
  r.packed_words(ct.a, ct.bits);
  r.packed_words(ct.b, ct.body_bits);  // each word read at its width: never above it
  return ct;
}

Ciphertext parse_ciphertext(std::span<const std::uint8_t> bytes, const ParameterSet& params) {
  core::ByteReader r(bytes, "ciphertext");
  read_header(r, kCiphertext, params);
  r.expect_remaining(2 * 8 * std::size_t{params.ring.N()});
  Ciphertext ct(params.ring);
  r.words(ct.a.coeffs());
  r.words(ct.b.coeffs());
  return ct;
}

SeededCiphertext parse_seeded_ciphertext(std::span<const std::uint8_t> bytes,
                                         const ParameterSet& params) {
  core::ByteReader r(bytes, "seeded ciphertext");
  read_header(r, kSeededCiphertext, params);
  SeededCiphertext ct(params.ring);
  r.bytes(ct.seed);
  ct.bits = r.u8();
  if (ct.bits < 1 || ct.bits > 64) r.fail("width " + std::to_string(ct.bits) + " bits");
  r.expect_remaining(packed_bytes(params.ring.N(), ct.bits));
  r.packed_words(ct.b.coeffs(), ct.bits);
  for (auto& x : ct.b.coeffs())
    x = ct.bits == 64 ? x : x << (64 - ct.bits);
  return ct;
}

KeySwitchKey parse_key_switch_key(std::span<const std::uint8_t> bytes, const ParameterSet& params) {
  core::ByteReader r(bytes, "key-switching key");
  read_header(r, kKeySwitchKey, params);
  const std::uint64_t galois = r.u64();
  const Gadget gadget{r.u32(), r.u32()};
  if (gadget.base < 2 || gadget.levels < 1 || gadget.log2_precision() > 64.0 + 1e-9) {
    r.fail("invalid gadget " + std::to_string(gadget.base) + "^" + std::to_string(gadget.levels));
  }
  const std::size_t n = params.ring.N();
  std::vector<core::Seed> seeds(gadget.levels);
  for (core::Seed& seed : seeds)
    r.bytes(seed);
  const std::uint32_t bits = r.u8();
  if (bits < 1 || bits > 64) r.fail("width " + std::to_string(bits) + " bits");
  std::vector<std::uint64_t> b(std::size_t{gadget.levels} * n);
  r.expect_remaining(packed_bytes(b.size(), bits));
  r.packed_words(b, bits);
  for (auto& x : b)
    x = bits == 64 ? x : x << (64 - bits);
  return key_switch_key_from_parts(params, galois, gadget, std::move(seeds), std::move(b));
}

}  // namespace safhire::rlwe
