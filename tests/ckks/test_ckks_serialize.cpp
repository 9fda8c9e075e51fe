// CKKS serialisation: every object round-trips bit for bit (and still decrypts), every
// truncation and corruption is a typed error, blobs of another parameter set are refused.
#include <gtest/gtest.h>

#include "ckks_fixture.hpp"
#include "safhire/ckks/serialize.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
using Bytes = std::vector<std::uint8_t>;

struct Objects {
  SecretKey sk;
  PublicKey pk;
  SwitchingKey rlk;
  GaloisKeys galois;
  Plaintext plain;
  Ciphertext ct, ct3;
};

Objects make(Fixture& f) {
  auto rng = safhire::core::SeededRandom::from_counter(21);
  KeyGenerator gen(f.context, *f.ops, rng);
  Objects o;
  o.sk = gen.secret_key();
  o.pk = gen.public_key(o.sk);
  o.rlk = gen.relinearization_key(o.sk);
  const std::vector<int> steps{1, -2};
  o.galois = gen.galois_keys(o.sk, steps, true);
  o.plain = f.encoder.encode(random_values(16, 1.0, 22), 0x1p24, 1, 16);
  Encryptor enc(f.context, *f.ops, rng);
  o.ct = enc.encrypt(o.plain, o.pk);
  o.ct3 = f.evaluator.multiply(o.ct, o.ct);
  return o;
}

// Every strict prefix fails with malformed_input, and so does one trailing byte.
template <class Read>
void expect_truncations_rejected(const Bytes& bytes, Read read) {
  const std::size_t step = std::max<std::size_t>(1, bytes.size() / 97);
  for (std::size_t len = 0; len < bytes.size(); len += (len < 64 ? 1 : step)) {
    const std::span<const std::uint8_t> prefix(bytes.data(), len);
    ASSERT_EQ(code_of([&] { read(prefix); }), ErrorCode::malformed_input) << "length " << len;
  }
  Bytes longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(code_of([&] { read(longer); }), ErrorCode::malformed_input);
}

TEST(CkksSerialize, EveryObjectRoundTripsExactly) {
  auto& f = fixture("n12-l2");
  const Objects o = make(f);
  const auto& c = f.context;
  const auto ct = deserialize_ciphertext(c, serialize(c, o.ct));
  EXPECT_EQ(ct.c, o.ct.c);
  EXPECT_EQ(ct.scale, o.ct.scale);
  EXPECT_EQ(ct.slots, o.ct.slots);
  EXPECT_EQ(deserialize_ciphertext(c, serialize(c, o.ct3)).c, o.ct3.c);
  const auto plain = deserialize_plaintext(c, serialize(c, o.plain));
  EXPECT_EQ(plain.poly, o.plain.poly);
  EXPECT_EQ(plain.scale, o.plain.scale);
  EXPECT_EQ(deserialize_public_key(c, serialize(c, o.pk)).b, o.pk.b);
  EXPECT_EQ(deserialize_secret_key(c, serialize(c, o.sk)).s, o.sk.s);
  const auto rlk = deserialize_switching_key(c, serialize(c, o.rlk));
  EXPECT_EQ(rlk.b, o.rlk.b);
  EXPECT_EQ(rlk.a, o.rlk.a);
  const auto galois = deserialize_galois_keys(c, serialize(c, o.galois));
  ASSERT_EQ(galois.keys.size(), o.galois.keys.size());
  for (const auto& [g, key] : o.galois.keys)
    EXPECT_EQ(galois.at(g).a, key.a);
  // A read-back ciphertext and key still work.
  const auto back = f.encoder.decode(decrypt(c, *f.ops, f.evaluator.rotate(ct, 1, galois),
                                             deserialize_secret_key(c, serialize(c, o.sk))));
  const auto want = f.encoder.decode(o.plain);
  for (std::size_t j = 0; j < 16; ++j)
    EXPECT_NEAR(std::abs(back[j] - want[(j + 1) % 16]), 0.0, 0.05);
  for (const auto& params : named_sets()) {
    const auto p = deserialize_params(serialize_params(params));
    EXPECT_EQ(p.name, params.name);
    EXPECT_EQ(p.q_bits, params.q_bits);
    EXPECT_EQ(p.p_bits, params.p_bits);
    EXPECT_EQ(p.hamming_weight, params.hamming_weight);
    EXPECT_EQ(p.sigma, params.sigma);
  }
}

// A seeded key round-trips as its seed and b_j and still switches; version 1 blobs (before the
// form byte) are still read; an unknown form, and every truncation of a seeded key, are refused.
// Keys made below the top (bootstrapping's SlotToCoeff keys, the encapsulation's at level 0)
// have that level's digits and limbs: they round-trip, full and seeded, and a digit count that
// does not match the limbs is refused. (The fuzz target's seed corpus found them refused.)
TEST(CkksSerialize, KeysMadeBelowTheTopRoundTrip) {
  auto& f = fixture("n12-l2");
  const Objects o = make(f);
  const auto& c = f.context;
  auto rng = safhire::core::SeededRandom::from_counter(41);
  KeyGenerator gen(c, *f.ops, rng);
  const std::vector<int> step{1};
  for (const bool seeded : {false, true}) {
    gen.set_seeded(seeded);
    for (const std::uint32_t level : {0U, 1U}) {
      const GaloisKeys keys = gen.galois_keys(o.sk, step, true, level);
      const auto back = deserialize_galois_keys(c, serialize(c, keys));
      ASSERT_EQ(back.keys.size(), keys.keys.size());
      for (const auto& [g, key] : keys.keys) {
        ASSERT_EQ(key.b.size(), c.digits(level));
        EXPECT_EQ(back.at(g).b, key.b);
        EXPECT_EQ(back.at(g).a, key.a);
        EXPECT_EQ(back.at(g).seed, key.seed);
      }
    }
  }
  gen.set_seeded(false);
  const SwitchingKey key = gen.galois_key(o.sk, rotation_galois_element(c, 1), 1);
  ASSERT_EQ(key.b.size(), 2U);
  EXPECT_EQ(deserialize_switching_key(c, serialize(c, key)).b, key.b);
  // Header (15 bytes), the form byte, then the digit count.
  constexpr std::size_t kDigits = 16;
  for (const int digits : {0, 1, 3}) {
    Bytes blob = serialize(c, key);
    blob[kDigits] = static_cast<std::uint8_t>(digits);
    EXPECT_EQ(code_of([&] { deserialize_switching_key(c, blob); }), ErrorCode::malformed_input)
        << digits << " digits";
  }
}

TEST(CkksSerialize, SeededKeysAndVersionOneBlobs) {
  auto& f = fixture("n12-l2");
  const Objects o = make(f);
  const auto& c = f.context;
  auto rng = safhire::core::SeededRandom::from_counter(31);
  KeyGenerator gen(c, *f.ops, rng);
  gen.set_seeded(true);
  const std::vector<int> step{1};
  const GaloisKeys seeded = gen.galois_keys(o.sk, step, false);
  const Bytes blob = serialize(c, seeded);
  const auto back = deserialize_galois_keys(c, blob);
  const auto& key = seeded.keys.begin()->second;
  const auto& got = back.at(seeded.keys.begin()->first);
  EXPECT_EQ(got.seed, key.seed);
  EXPECT_EQ(got.b, key.b);
  EXPECT_TRUE(got.a.empty());
  EXPECT_LT(blob.size(), serialize(c, o.galois).size() / o.galois.keys.size() * 3 / 5);
  const auto ct = deserialize_ciphertext(c, serialize(c, o.ct));
  const auto rotated = f.encoder.decode(decrypt(c, *f.ops, f.evaluator.rotate(ct, 1, back), o.sk));
  const auto want = f.encoder.decode(o.plain);
  for (std::size_t j = 0; j < 16; ++j)
    EXPECT_NEAR(std::abs(rotated[j] - want[(j + 1) % 16]), 0.0, 0.05);
  expect_truncations_rejected(blob, [&](auto b) { deserialize_galois_keys(c, b); });

  // Header: magic (4), version (2), kind (1), fingerprint (8); the form byte follows.
  constexpr std::size_t kForm = 15;
  Bytes full = serialize(c, o.rlk);
  ASSERT_EQ(full[kForm], 0);
  Bytes v1 = full;
  v1.erase(v1.begin() + kForm);
  v1[4] = 1;
  v1[5] = 0;
  const auto old = deserialize_switching_key(c, v1);
  EXPECT_EQ(old.b, o.rlk.b);
  EXPECT_EQ(old.a, o.rlk.a);
  Bytes unknown = full;
  unknown[kForm] = 2;
  EXPECT_EQ(code_of([&] { deserialize_switching_key(c, unknown); }), ErrorCode::malformed_input);
  Bytes future = full;
  future[4] = 3;
  EXPECT_EQ(code_of([&] { deserialize_switching_key(c, future); }), ErrorCode::malformed_input);
}

TEST(CkksSerialize, TruncationsAndTrailingBytesAreRejected) {
  auto& f = fixture("n12-l2");
  const Objects o = make(f);
  const auto& c = f.context;
  expect_truncations_rejected(serialize(c, o.ct), [&](auto b) { deserialize_ciphertext(c, b); });
  expect_truncations_rejected(serialize(c, o.plain), [&](auto b) { deserialize_plaintext(c, b); });
  expect_truncations_rejected(serialize(c, o.pk), [&](auto b) { deserialize_public_key(c, b); });
  expect_truncations_rejected(serialize(c, o.sk), [&](auto b) { deserialize_secret_key(c, b); });
  expect_truncations_rejected(serialize(c, o.rlk),
                              [&](auto b) { deserialize_switching_key(c, b); });
  expect_truncations_rejected(serialize(c, o.galois),
                              [&](auto b) { deserialize_galois_keys(c, b); });
  expect_truncations_rejected(serialize_params(c.params()), [&](auto b) { deserialize_params(b); });
}

TEST(CkksSerialize, CorruptFieldsAndForeignParametersAreTypedErrors) {
  auto& f = fixture("n12-l2");
  const Objects o = make(f);
  const auto& c = f.context;
  const Bytes ct = serialize(c, o.ct);
  auto corrupt = [&](std::size_t at, std::uint8_t value) {
    Bytes b = ct;
    b.at(at) = value;
    return code_of([&] { deserialize_ciphertext(c, b); });
  };
  EXPECT_EQ(corrupt(0, 'X'), ErrorCode::malformed_input);       // magic
  EXPECT_EQ(corrupt(4, 9), ErrorCode::malformed_input);         // version
  EXPECT_EQ(corrupt(6, 2), ErrorCode::malformed_input);         // kind: plaintext
  EXPECT_EQ(corrupt(7, ct[7] ^ 1U), ErrorCode::size_mismatch);  // fingerprint
  EXPECT_EQ(corrupt(15, 4), ErrorCode::malformed_input);        // 4 components
  EXPECT_EQ(corrupt(23, 0xff), ErrorCode::malformed_input);     // scale: NaN
  EXPECT_EQ(corrupt(24, 3), ErrorCode::malformed_input);        // slots 3
  EXPECT_EQ(corrupt(28, 9), ErrorCode::malformed_input);        // 9 limbs > L + 1
  EXPECT_EQ(corrupt(32, 0), ErrorCode::malformed_input);        // coefficient form
  // A residue at or above its prime: all ones in the first packed word.
  Bytes big = ct;
  for (std::size_t i = 37; i < 41; ++i)
    big[i] = 0xff;
  EXPECT_EQ(code_of([&] { deserialize_ciphertext(c, big); }), ErrorCode::malformed_input);
  // Another parameter set's context refuses the blob before reading polynomials.
  auto& g = fixture("n13-l3");
  EXPECT_EQ(code_of([&] { deserialize_ciphertext(g.context, ct); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { deserialize_galois_keys(g.context, serialize(c, o.galois)); }),
            ErrorCode::size_mismatch);
  // A plaintext blob is not a ciphertext.
  EXPECT_EQ(code_of([&] { deserialize_ciphertext(c, serialize(c, o.plain)); }),
            ErrorCode::malformed_input);
  // A malformed parameter set.
  CkksParams p = c.params();
  p.log_n = 40;
  EXPECT_EQ(code_of([&] { deserialize_params(serialize_params(p)); }),
            ErrorCode::invalid_parameters);
}

}  // namespace
