// Binary formats: round trips, and every kind of bad input (each truncation, extra bytes, bad
// magic, version, kind, gadget; another parameter set or ring) answered with a typed error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "safhire/core/error.hpp"
#include "safhire/rlwe/serialize.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::rlwe;
using safhire::ErrorCode;
using safhire::core::SeededRandom;
using safhire::testing::code_of;
using Bytes = std::vector<std::uint8_t>;

struct Fixture {
  const ParameterSet& p = parameter_set("default-b8");
  SeededRandom random = SeededRandom::from_counter(70);
  SecretKey key{p, random};
  Encryptor enc{key, random};
  safhire::ring::TorusPoly mu{p.ring};
  Fixture() {
    std::mt19937_64 rng(70);
    for (auto& x : mu.coeffs())
      x = encode_message(static_cast<std::int64_t>(rng() % 256) - 128, 8);
  }
};

TEST(Serialize, RoundTrips) {
  Fixture f;
  const SeededCiphertext seeded = f.enc.encrypt_seeded(f.mu.coeffs());
  const Ciphertext ct = seeded.expand();
  const Ciphertext ct2 = parse_ciphertext(serialize(f.p, ct), f.p);
  EXPECT_TRUE(std::equal(ct.a.coeffs().begin(), ct.a.coeffs().end(), ct2.a.coeffs().begin()));
  EXPECT_TRUE(std::equal(ct.b.coeffs().begin(), ct.b.coeffs().end(), ct2.b.coeffs().begin()));
  const Bytes seeded_bytes = serialize(f.p, seeded);
  EXPECT_EQ(seeded_bytes.size(), 17 + 32 + 1 + 8 * f.p.ring.N());  // half a full ciphertext
  // Rounded to upload_bits, b travels in fewer bytes and still decrypts to the same messages.
  const std::uint32_t bits = upload_bits(f.p);
  EXPECT_EQ(bits, 35U);  // sigma = 2^-34.5: 2^-70 / 12 <= 2^-69 / 16
  const SeededCiphertext rounded = f.enc.encrypt_seeded(f.mu.coeffs(), bits);
  const Bytes rounded_bytes = serialize(f.p, rounded);
  EXPECT_EQ(rounded_bytes.size(), 17 + 32 + 1 + (f.p.ring.N() * bits + 7) / 8);
  EXPECT_EQ(rounded_bytes.size(), seeded_ciphertext_bytes(f.p, bits));
  EXPECT_EQ(seeded_bytes.size(), seeded_ciphertext_bytes(f.p, 64));
  const SeededCiphertext rounded2 = parse_seeded_ciphertext(rounded_bytes, f.p);
  EXPECT_EQ(rounded2.bits, bits);
  EXPECT_TRUE(std::equal(rounded.b.coeffs().begin(), rounded.b.coeffs().end(),
                         rounded2.b.coeffs().begin()));
  EXPECT_EQ(f.enc.decrypt(rounded2.expand()), f.enc.decrypt(ct));
  const SeededCiphertext seeded2 = parse_seeded_ciphertext(seeded_bytes, f.p);
  EXPECT_EQ(f.enc.decrypt(seeded2.expand()), f.enc.decrypt(ct));

  // A key that travels and comes back switches as well as the original.
  const KeySwitchKey ksk = make_automorphism_key(f.key, 2, f.p.gadget(0), f.random);
  const KeySwitchKey ksk2 = parse_key_switch_key(serialize(f.p, ksk), f.p);
  EXPECT_EQ(ksk2.galois_element(), 2U);
  for (std::uint32_t i = 0; i < f.p.gadget(0).levels; ++i) {
    ASSERT_TRUE(std::equal(ksk.limb_a(i).begin(), ksk.limb_a(i).end(), ksk2.limb_a(i).begin()));
    ASSERT_TRUE(std::equal(ksk.limb_b(i).begin(), ksk.limb_b(i).end(), ksk2.limb_b(i).begin()));
  }
  // Its b words keep key_bits(p) bits, which is all that travels after the seeds.
  const std::uint32_t kb = key_bits(f.p);
  const std::uint32_t levels = f.p.gadget(0).levels;
  for (std::uint32_t i = 0; i < levels; ++i) {
    for (std::uint64_t x : ksk.torus_b(i))
      ASSERT_EQ(x & ((std::uint64_t{1} << (64 - kb)) - 1), 0U);
  }
  EXPECT_EQ(serialize(f.p, ksk).size(),
            17 + 16 + levels * 32 + 1 + (std::size_t{levels} * f.p.ring.N() * kb + 7) / 8);
  EXPECT_EQ(serialize(f.p, ksk).size(), key_switch_key_bytes(f.p, f.p.gadget(0)));
  // A key whose b has bits below them travels rounded to nearest.
  std::vector<std::uint64_t> b;
  for (std::uint32_t i = 0; i < levels; ++i)
    for (std::uint64_t x : ksk.torus_b(i))
      b.push_back(x + (std::uint64_t{1} << (63 - kb)) + 1);
  const KeySwitchKey odd =
      key_switch_key_from_parts(f.p, 2, f.p.gadget(0), {ksk.seeds().begin(), ksk.seeds().end()}, b);
  const KeySwitchKey back = parse_key_switch_key(serialize(f.p, odd), f.p);
  for (std::uint32_t i = 0; i < levels; ++i) {
    for (std::uint32_t j = 0; j < f.p.ring.N(); ++j)
      ASSERT_EQ(back.torus_b(i)[j], ksk.torus_b(i)[j] + (std::uint64_t{1} << (64 - kb)));
  }
  KeySwitcher switcher(f.p, f.p.gadget(0));
  Ciphertext out1(f.p.ring), out2(f.p.ring);
  switcher.automorphism(ksk, ct, out1);
  switcher.automorphism(ksk2, ct, out2);
  EXPECT_EQ(f.enc.decrypt(out1), f.enc.decrypt(out2));
}

TEST(Serialize, SwitchedCiphertextsRoundTripAtEveryWidthAndRejectBadInput) {
  Fixture f;
  const Ciphertext ct = f.enc.encrypt(f.mu.coeffs());
  const std::size_t N = f.p.ring.N();
  for (std::uint32_t bits : {1U, 15U, 20U, 33U, 63U, 64U}) {
    for (std::uint32_t body_bits : {bits, bits > 4 ? bits - 4 : bits, 64U}) {
      const SwitchedCiphertext sw = modulus_switch(ct, bits, body_bits);
      const Bytes bytes = serialize(f.p, sw);
      EXPECT_EQ(bytes.size(), 17 + 2 + (N * bits + 7) / 8 + (N * body_bits + 7) / 8);
      EXPECT_EQ(bytes.size(), switched_ciphertext_bytes(f.p, bits, body_bits));
      const SwitchedCiphertext back = parse_switched_ciphertext(bytes, f.p);
      EXPECT_EQ(back.bits, bits);
      EXPECT_EQ(back.body_bits, body_bits);
      EXPECT_EQ(back.a, sw.a);
      EXPECT_EQ(back.b, sw.b);
    }
    const SwitchedCiphertext sw = modulus_switch(ct, bits);
    const Bytes bytes = serialize(f.p, sw);
    EXPECT_EQ(bytes.size(), 17 + 2 + 2 * ((N * bits + 7) / 8));
    const SwitchedCiphertext back = parse_switched_ciphertext(bytes, f.p);
    EXPECT_EQ(back.bits, bits);
    EXPECT_EQ(back.body_bits, bits);
    EXPECT_EQ(back.a, sw.a);
    EXPECT_EQ(back.b, sw.b);
    for (std::size_t cut : {std::size_t{0}, std::size_t{17}, bytes.size() - 1}) {
      EXPECT_EQ(code_of([&] {
                  parse_switched_ciphertext(Bytes(bytes.begin(), bytes.begin() + cut), f.p);
                }),
                ErrorCode::malformed_input);
    }
    for (std::size_t at : {std::size_t{17}, std::size_t{18}}) {
      for (std::uint8_t width : {std::uint8_t{0}, std::uint8_t{65}}) {
        Bytes bad_width = bytes;
        bad_width[at] = width;
        EXPECT_EQ(code_of([&] { parse_switched_ciphertext(bad_width, f.p); }),
                  ErrorCode::malformed_input);
      }
    }
  }
}

TEST(Serialize, EveryTruncationAndExtensionIsMalformed) {
  Fixture f;
  const KeySwitchKey ksk = make_automorphism_key(f.key, 2, f.p.gadget(0), f.random);
  const Bytes key_bytes = serialize(f.p, ksk);
  const Bytes ct_bytes = serialize(f.p, f.enc.encrypt(f.mu.coeffs()));
  // Cut at every header position and at a sample of payload positions.
  for (std::size_t cut = 0; cut < key_bytes.size(); cut += cut < 64 ? 1 : 997) {
    const Bytes part(key_bytes.begin(), key_bytes.begin() + cut);
    ASSERT_EQ(code_of([&] { parse_key_switch_key(part, f.p); }), ErrorCode::malformed_input)
        << "cut at " << cut;
  }
  for (std::size_t cut = 0; cut < ct_bytes.size(); cut += cut < 64 ? 1 : 1001) {
    const Bytes part(ct_bytes.begin(), ct_bytes.begin() + cut);
    ASSERT_EQ(code_of([&] { parse_ciphertext(part, f.p); }), ErrorCode::malformed_input);
  }
  Bytes longer = ct_bytes;
  longer.push_back(0);
  EXPECT_EQ(code_of([&] { parse_ciphertext(longer, f.p); }), ErrorCode::malformed_input);
}

TEST(Serialize, WrongHeadersAreTypedErrors) {
  Fixture f;
  const Bytes ct_bytes = serialize(f.p, f.enc.encrypt(f.mu.coeffs()));
  auto patched = [&](std::size_t at, std::uint8_t value) {
    Bytes b = ct_bytes;
    b[at] = value;
    return b;
  };
  EXPECT_EQ(code_of([&] { parse_ciphertext(patched(0, 'X'), f.p); }), ErrorCode::malformed_input);
  // Version 1 (keys with 64-bit b) is no longer read.
  EXPECT_EQ(code_of([&] { parse_ciphertext(patched(4, 1), f.p); }), ErrorCode::malformed_input);
  EXPECT_EQ(code_of([&] { parse_ciphertext(patched(6, 3), f.p); }), ErrorCode::malformed_input);
  EXPECT_EQ(code_of([&] { parse_seeded_ciphertext(ct_bytes, f.p); }), ErrorCode::malformed_input);
  // Another parameter set (same ring, then another ring).
  const ParameterSet& b8 = parameter_set("paper-b8", SecurityPolicy::allow_insecure);
  EXPECT_EQ(code_of([&] { parse_ciphertext(ct_bytes, b8); }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { parse_ciphertext(ct_bytes, parameter_set("default-b12")); }),
            ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { parse_ciphertext(patched(11, 5), f.p); }), ErrorCode::invalid_parameters);
  // Header: magic 0-3, version 4-5, kind 6, set id 7-8, t 9-12, a 13-16; a key continues with
  // the Galois element 17-24, base 25-28, levels 29-32.
  // A key claiming a gadget beyond 2^64, or with a length that does not match its gadget.
  const KeySwitchKey ksk = make_automorphism_key(f.key, 2, f.p.gadget(0), f.random);
  Bytes key_bytes = serialize(f.p, ksk);
  Bytes wide = key_bytes;
  wide[29] = 200;  // levels: 5 -> 200 (base 64): 64^200 is no gadget
  EXPECT_EQ(code_of([&] { parse_key_switch_key(wide, f.p); }), ErrorCode::malformed_input);
  Bytes fewer = key_bytes;
  fewer[29] = 4;  // 4 levels announced, 5 present
  EXPECT_EQ(code_of([&] { parse_key_switch_key(fewer, f.p); }), ErrorCode::malformed_input);
  Bytes bad_galois = key_bytes;
  bad_galois[17] = 3;  // k = 3 is not a unit mod 3^7
  EXPECT_EQ(code_of([&] { parse_key_switch_key(bad_galois, f.p); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { parse_key_switch_key(Bytes{}, f.p); }), ErrorCode::malformed_input);
  // The width of b follows the l seeds (33 + 5 x 32 = 193): 0 and 65 are no width.
  for (const std::uint8_t width : {std::uint8_t{0}, std::uint8_t{65}}) {
    Bytes bad_width = key_bytes;
    bad_width[193] = width;
    EXPECT_EQ(code_of([&] { parse_key_switch_key(bad_width, f.p); }), ErrorCode::malformed_input)
        << int{width};
  }
}

// key_bits against its definition: the fewest k with 2^-2k / 12 <= sigma^2 / 256.
TEST(Serialize, KeyBitsAreTheFewestWithinAQuarterPercentOfTheKeyNoise) {
  for (const char* name : {"default-b8", "default-b12", "default-b16", "paper-b16"}) {
    const ParameterSet& p = parameter_set(name);
    const std::uint32_t k = key_bits(p);
    const double budget = std::exp2(2 * p.log2_sigma) / 256;
    EXPECT_LE(std::exp2(-2.0 * k) / 12, budget) << name;
    EXPECT_GT(std::exp2(-2.0 * (k - 1)) / 12, budget) << name;
  }
  EXPECT_EQ(key_bits(parameter_set("default-b8")), 37U);
}

}  // namespace
