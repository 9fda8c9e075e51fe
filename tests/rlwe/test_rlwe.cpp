// RLWE on the torus: message encoding, encryption and decryption on every parameter set, seeded
// ciphertexts, fresh-noise width, gadget decomposition against 128-bit arithmetic, and key
// switching: correctness for automorphisms and for a switch between two keys, counting, the
// measured noise against the key-switching variance formula (rlwe/noise.hpp), and typed errors.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <random>

#include "safhire/core/error.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/rlwe.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::rlwe;
using safhire::core::SeededRandom;
using safhire::ring::RingParams;
using safhire::ring::TorusPoly;
using safhire::testing::u64;

const ParameterSet& set(const char* name) {
  return parameter_set(name, SecurityPolicy::allow_insecure);
}

std::vector<const char*> all_set_names() {
  return {"paper-b8", "paper-b12", "paper-b16", "default-b8", "default-b12", "default-b16"};
}

TorusPoly random_message(const ParameterSet& p, std::mt19937_64& rng) {
  TorusPoly mu(p.ring);
  const std::int64_t half = std::int64_t{1} << (p.message_bits - 1);
  std::uniform_int_distribution<std::int64_t> dist(-half, half - 1);
  for (auto& x : mu.coeffs())
    x = encode_message(dist(rng), p.message_bits);
  return mu;
}

TEST(Messages, EncodeDecodeRoundTripAndRounding) {
  for (std::uint32_t b : {1U, 8U, 12U, 16U, 32U}) {
    const std::int64_t half = std::int64_t{1} << (b - 1);
    const u64 step = u64{1} << (64 - b);
    for (std::int64_t y : {-half, -half + 1, std::int64_t{-1}, std::int64_t{0}, half - 1}) {
      const u64 mu = encode_message(y, b);
      EXPECT_EQ(decode_message(mu, b), y);
      // Anything strictly within half a step rounds back to y.
      EXPECT_EQ(decode_message(mu + step / 2 - 1, b), y);
      EXPECT_EQ(decode_message(mu - step / 2, b), y);
    }
    EXPECT_THROW(encode_message(half, b), safhire::Error);
    EXPECT_THROW(encode_message(-half - 1, b), safhire::Error);
  }
  const RingParams r(3, 2);
  const std::vector<std::int64_t> values = {1, 2, 3, 4, 5, 6, 7, -8};
  const auto chunks = encode_chunks(r, values, 4);
  ASSERT_EQ(chunks.size(), 2U);
  EXPECT_EQ(decode_message(chunks[1][1], 4), -8);
  EXPECT_EQ(chunks[1][2], 0U);  // zero padding
}

TEST(Encryption, DecryptsOnEveryParameterSet) {
  std::mt19937_64 rng(60);
  for (const char* name : all_set_names()) {
    SCOPED_TRACE(name);
    const ParameterSet& p = set(name);
    auto random = SeededRandom::from_counter(60);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    const TorusPoly mu = random_message(p, rng);
    const SeededCiphertext seeded = enc.encrypt_seeded(mu.coeffs());
    const Ciphertext ct = seeded.expand();
    const auto decrypted = enc.decrypt(ct);
    for (std::size_t i = 0; i < p.ring.N(); ++i) {
      ASSERT_EQ(decrypted[i], decode_message(mu[i], p.message_bits)) << "coefficient " << i;
    }
    // The travelling `a` is the seed's expansion.
    std::vector<u64> a(p.ring.N());
    safhire::core::expand_seed(seeded.seed, a);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), ct.a.coeffs().begin()));
  }
}

TEST(Encryption, FreshNoiseHasTheSetsWidth) {
  const ParameterSet& p = set("default-b8");
  auto random = SeededRandom::from_counter(61);
  const SecretKey key(p, random);
  Encryptor enc(key, random);
  std::mt19937_64 rng(61);
  NoiseProbe probe;
  for (int trial = 0; trial < 20; ++trial) {
    const TorusPoly mu = random_message(p, rng);
    probe.add(phase_error(enc, enc.encrypt(mu.coeffs()), mu.coeffs()).coeffs());
  }
  EXPECT_NEAR(probe.log2_std(), p.log2_sigma, 0.02);
}

TEST(Gadget, DecompositionRecomposesWithinItsPrecision) {
  std::mt19937_64 rng(62);
  for (Gadget g : {Gadget{512, 3}, Gadget{64, 5}, Gadget{4096, 3}, Gadget{65536, 2}, Gadget{310, 5},
                   Gadget{310, 4}, Gadget{3, 7}, Gadget{2, 64}, Gadget{65536, 4}}) {
    SCOPED_TRACE(std::to_string(g.base) + "^" + std::to_string(g.levels));
    const GadgetDecomposer dec(g);
    std::vector<u64> a = safhire::testing::random_words(rng, 2000);
    for (u64 edge : {u64{0}, ~u64{0}, u64{1} << 63, (u64{1} << 63) - 1, u64{1}})
      a.push_back(edge);
    std::vector<u64> digits(a.size() * g.levels);
    dec.decompose(a, digits);
    // The same digits as the per-word form the CUDA kernel runs (the CPU's power-of-two path is
    // a separate loop).
    std::vector<u64> word_digits(a.size() * g.levels);
    for (std::size_t j = 0; j < a.size(); ++j)
      safhire::elements::decompose_word(a[j], dec.view(), word_digits.data() + j, a.size());
    ASSERT_EQ(digits, word_digits);
    // Bound: 2^63 / D^l from rounding, plus l * ceil(D/2) / 2 from rounding the g_i.
    long double precision = 1;
    for (std::uint32_t i = 0; i < g.levels; ++i)
      precision *= g.base;
    const long double bound = 0x1p63L / precision + g.levels * ((g.base + 1) / 2) / 2.0L + 1;
    const std::int64_t lo = -static_cast<std::int64_t>(g.base / 2);
    const std::int64_t hi = static_cast<std::int64_t>((g.base + 1) / 2);
    for (std::size_t j = 0; j < a.size(); ++j) {
      u64 sum = 0;
      for (std::uint32_t i = 0; i < g.levels; ++i) {
        const auto d = static_cast<std::int64_t>(digits[i * a.size() + j]);
        ASSERT_TRUE(d >= lo && d < hi) << "digit " << d;
        sum += static_cast<u64>(d) * dec.value(i);
      }
      const auto error = static_cast<std::int64_t>(a[j] - sum);
      ASSERT_LE(std::fabs(static_cast<long double>(error)), bound) << "a = " << a[j];
    }
    // g_i = round(2^64 / D^(i+1)).
    long double power = 1;
    for (std::uint32_t i = 0; i < g.levels; ++i) {
      power *= g.base;
      EXPECT_LE(std::fabs(static_cast<long double>(dec.value(i)) - 0x1p64L / power), 0.5L);
    }
  }
  EXPECT_THROW(GadgetDecomposer(Gadget{2, 65}), safhire::Error);
  EXPECT_THROW(GadgetDecomposer(Gadget{1, 3}), safhire::Error);
}

// sigma_k of the decoded message polynomial, mod 2^b: what an automorphism must decrypt to.
std::vector<std::int64_t> sigma_messages(const ParameterSet& p, const TorusPoly& mu, u64 k) {
  TorusPoly out(p.ring);
  safhire::ring::automorphism(p.ring, mu.coeffs(), k, out.coeffs(), safhire::ring::TorusArith{});
  std::vector<std::int64_t> m(p.ring.N());
  for (std::size_t i = 0; i < m.size(); ++i)
    m[i] = decode_message(out[i], p.message_bits);
  return m;
}

TEST(KeySwitching, AutomorphismsDecryptToSigmaOfTheMessage) {
  std::mt19937_64 rng(63);
  for (const char* name : all_set_names()) {
    const ParameterSet& p = set(name);
    auto random = SeededRandom::from_counter(63);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    for (std::uint32_t gamma : {0U, 1U}) {
      const Gadget& g = p.gadget(gamma);
      KeySwitcher switcher(p, g);
      for (u64 k : {u64{2}, u64{p.ring.M() - 1}, u64{1 + p.ring.m()}}) {
        SCOPED_TRACE(std::string(name) + ", gamma " + std::to_string(gamma) + ", k " +
                     std::to_string(k));
        const KeySwitchKey ksk = make_automorphism_key(key, k, g, random);
        const TorusPoly mu = random_message(p, rng);
        const Ciphertext ct = enc.encrypt(mu.coeffs());
        Ciphertext out(p.ring);
        const auto before = switcher.key_switches();
        switcher.automorphism(ksk, ct, out);
        EXPECT_EQ(switcher.key_switches(), before + 1);
        EXPECT_EQ(enc.decrypt(out), sigma_messages(p, mu, k));
      }
    }
  }
}

// automorphism_sum against separate automorphisms added: the same words (the shared inverse
// transforms are exact), on every set and both gadgets, with more terms than the fan-in where it
// is below t (default-b12's 65536^2: groups of 4 and 2), and the switches counted.
TEST(KeySwitching, AutomorphismSumsEqualSeparateSwitchesAdded) {
  std::mt19937_64 rng(68);
  for (const char* name : all_set_names()) {
    const ParameterSet& p = set(name);
    auto random = SeededRandom::from_counter(68);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    for (std::uint32_t gamma : {0U, 1U}) {
      const Gadget& g = p.gadget(gamma);
      SCOPED_TRACE(std::string(name) + ", gadget " + std::to_string(g.base) + "^" +
                   std::to_string(g.levels));
      KeySwitcher switcher(p, g);
      std::vector<KeySwitchKey> keys;
      std::vector<Ciphertext> cts;
      for (std::uint64_t j = 1; j < p.ring.t(); ++j) {  // a merge's elements, 1 + j t
        keys.push_back(make_automorphism_key(key, 1 + j * p.ring.t(), g, random));
        cts.push_back(enc.encrypt(random_message(p, rng).coeffs()));
      }
      Ciphertext want(p.ring), one(p.ring), got(p.ring);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        switcher.automorphism(keys[i], cts[i], one);
        for (std::size_t j = 0; j < p.ring.N(); ++j) {
          want.a[j] += one.a[j];
          want.b[j] += one.b[j];
        }
      }
      std::vector<const KeySwitchKey*> key_ptrs;
      std::vector<const Ciphertext*> ct_ptrs;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        key_ptrs.push_back(&keys[i]);
        ct_ptrs.push_back(&cts[i]);
      }
      const auto before = switcher.key_switches();
      switcher.automorphism_sum(key_ptrs, ct_ptrs, got);
      EXPECT_EQ(switcher.key_switches(), before + keys.size());
      EXPECT_TRUE(std::ranges::equal(got.a.coeffs(), want.a.coeffs()));
      EXPECT_TRUE(std::ranges::equal(got.b.coeffs(), want.b.coeffs()));
    }
  }
  KeySwitcher switcher(set("default-b8"), set("default-b8").gadget(0));
  Ciphertext out(set("default-b8").ring);
  const std::vector<const KeySwitchKey*> no_keys;
  const std::vector<const Ciphertext*> one_ct(1, &out);
  EXPECT_THROW(switcher.automorphism_sum(no_keys, one_ct, out), safhire::Error);
}

TEST(KeySwitching, SwitchesBetweenTwoKeysAndMayWorkInPlace) {
  const ParameterSet& p = set("default-b12");
  auto random = SeededRandom::from_counter(64);
  const SecretKey key(p, random), other(p, random);
  Encryptor enc(key, random), enc_other(other, random);
  const KeySwitchKey ksk = make_key_switch_key(key, other.coeffs(), 1, p.gadget(0), random);
  std::mt19937_64 rng(64);
  const TorusPoly mu = random_message(p, rng);
  Ciphertext ct = enc_other.encrypt(mu.coeffs());
  KeySwitcher switcher(p, p.gadget(0));
  switcher.key_switch(ksk, ct, ct);  // in place
  std::vector<std::int64_t> expected(p.ring.N());
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = decode_message(mu[i], 12);
  EXPECT_EQ(enc.decrypt(ct), expected);
}

TEST(KeySwitching, ProductCountsMatchTheirEnumeration) {
  // The average number of products a coefficient of a reduced product collects: 1.375 N (3^7),
  // 1.656 N (5^5), 1.764 N (7^4), as an exact-integer Python enumeration of the reduction counts.
  EXPECT_NEAR(mean_product_count(RingParams(3, 7)) / 1458, 1.375, 0.001);
  EXPECT_NEAR(mean_product_count(RingParams(5, 5)) / 2500, 1.656, 0.001);
  EXPECT_NEAR(mean_product_count(RingParams(7, 4)) / 2058, 1.764, 0.001);
}

TEST(KeySwitching, MeasuredNoiseMatchesTheFormulas) {
  // Measured e_KS = phase(out) - sigma_k(phase(in)) against V_KS (rlwe/noise.hpp) evaluated exactly
  // for the key (within 0.1 bit), and against its zero-mean-key form, an upper bound for binary
  // keys (measured at most 0.1 bit above it and within 1 bit below).
  for (const char* name : {"paper-b8", "default-b8", "paper-b16", "default-b12"}) {
    const ParameterSet& p = set(name);
    auto random = SeededRandom::from_counter(65);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    const Gadget& g = p.gadget(0);
    const u64 k = 2;
    const KeySwitchKey ksk = make_automorphism_key(key, k, g, random);
    KeySwitcher switcher(p, g);
    TorusPoly sigma_s(p.ring);
    safhire::ring::automorphism(p.ring, key.coeffs(), k, sigma_s.coeffs(),
                                safhire::ring::TorusArith{});
    std::mt19937_64 rng(65);
    NoiseProbe probe;
    for (int trial = 0; trial < 8; ++trial) {
      const TorusPoly mu = random_message(p, rng);
      const Ciphertext ct = enc.encrypt(mu.coeffs());
      Ciphertext out(p.ring);
      switcher.automorphism(ksk, ct, out);
      const TorusPoly phase_in = enc.phase(ct);
      TorusPoly expected(p.ring);
      safhire::ring::automorphism(p.ring, phase_in.coeffs(), k, expected.coeffs(),
                                  safhire::ring::TorusArith{});
      probe.add(phase_error(enc, out, expected.coeffs()).coeffs());
    }
    const double exact = std::log2(keyswitch_variance_for_key(p, g, sigma_s.coeffs()));
    const double model = std::log2(keyswitch_variance(p, g));
    const double measured = probe.log2_variance();
    SCOPED_TRACE(std::string(name) + ": measured 2^" + std::to_string(measured) +
                 ", for the key 2^" + std::to_string(exact) + ", zero-mean model 2^" +
                 std::to_string(model));
    EXPECT_NEAR(measured, exact, 0.1);
    EXPECT_LE(measured, model + 0.1);
    EXPECT_GE(measured, model - 1.0);
  }
}

TEST(KeySwitching, KeysAreRoundedToOneLimbOnlyWhereTheKeyNoiseHidesIt) {
  // key_split: one rounded limb exactly when some one-limb split keeps the digits' sums of t - 1
  // switches exact (a merge's, KeySwitcher::automorphism_sum) and its rounding adds at most
  // sigma^2 / 256 to the key's noise; then the finest such split. On the built-in sets that is
  // default-b8 alone (sigma = 2^-34.5). A switcher sums t - 1 switches before its inverse
  // transforms on the full gadget of every set.
  for (const ParameterSet& p : builtin_parameter_sets()) {
    for (std::uint32_t gamma : {0U, 1U}) {
      const Gadget& g = p.gadget(gamma);
      SCOPED_TRACE(p.name + ", gadget " + std::to_string(g.base) + "^" + std::to_string(g.levels));
      const auto& product = safhire::ring::LimbProduct::shared(p.ring);
      const std::uint64_t digit_sum =
          std::uint64_t{g.levels} * ((g.base + 1) / 2) * (p.ring.t() - 1);
      const safhire::ring::LimbSplit split = key_split(p, g);
      // Keys and switchers carry the same split; the fan-in is what the bound allows.
      auto random = SeededRandom::from_counter(67);
      const SecretKey key(p, random);
      EXPECT_EQ(make_automorphism_key(key, 2, g, random).split(), split);
      const KeySwitcher switcher(p, g);
      const std::uint64_t one = std::uint64_t{g.levels} * ((g.base + 1) / 2);
      EXPECT_LE(switcher.fan_in() * one, product.small_bound(split));
      EXPECT_TRUE(switcher.fan_in() == p.ring.t() ||
                  (switcher.fan_in() + 1) * one > product.small_bound(split));
      if (gamma == 0) {
        EXPECT_GE(switcher.fan_in(), p.ring.t() - 1);
      }
      if (digit_sum > product.small_bound()) {  // beyond any one limb (default-b12's 65536^2)
        EXPECT_EQ(split, safhire::ring::LimbSplit::exact());
        continue;
      }
      const safhire::ring::LimbSplit finest = product.finest_rounding(digit_sum);
      const double added = key_rounding_variance(p, finest), sigma2 = p.sigma() * p.sigma();
      EXPECT_EQ(split.limbs, p.name == "default-b8" ? 1U : 2U);
      if (split.limbs == 1) {
        EXPECT_EQ(split, finest);
        EXPECT_LE(added, sigma2 / 256);
        EXPECT_GE(product.small_bound(split), digit_sum);
        // The rounding against sigma^2: 2^-2(64 - shift) / 12 (1 + cnt E[s^2]).
        EXPECT_NEAR(added,
                    std::exp2(-2.0 * (64 - split.shift)) / 12 *
                        (1 + mean_product_count(p.ring) *
                                 (p.key == KeyDistribution::binary ? 0.5 : 2.0 / 3.0)),
                    added * 1e-9);
      } else {
        EXPECT_EQ(split, safhire::ring::LimbSplit::exact());
        EXPECT_GT(added, sigma2 / 256);
        EXPECT_EQ(key_rounding_variance(p, split), 0.0);
      }
    }
  }
}

TEST(KeySwitching, MismatchedKeysAreTypedErrors) {
  const ParameterSet& p = set("default-b8");
  auto random = SeededRandom::from_counter(66);
  const SecretKey key(p, random);
  const KeySwitchKey ksk = make_automorphism_key(key, 2, Gadget{512, 3}, random);
  KeySwitcher switcher(p, p.gadget(0));  // another gadget
  Ciphertext ct(p.ring), out(p.ring);
  try {
    switcher.automorphism(ksk, ct, out);
    FAIL() << "a key of another gadget was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::size_mismatch);
  }
  Ciphertext wrong_ring(RingParams(3, 3));
  EXPECT_THROW(switcher.key_switch(ksk, wrong_ring, out), safhire::Error);
  // Parts of the wrong size, or a Galois element that is no unit.
  std::vector<safhire::core::Seed> seeds(2);
  EXPECT_THROW(key_switch_key_from_parts(p, 2, p.gadget(0), seeds, {}), safhire::Error);
  std::vector<safhire::core::Seed> five(5);
  std::vector<u64> words(5 * p.ring.N());
  EXPECT_THROW(key_switch_key_from_parts(p, 3, p.gadget(0), five, words), safhire::Error);
  EXPECT_NO_THROW(key_switch_key_from_parts(p, 2, p.gadget(0), five, words));
  // A gadget whose digits would overflow the one-prime limb product (2^19 > 2^30 / 2187).
  try {
    KeySwitcher wide(p, Gadget{1U << 20, 1});
    FAIL() << "a gadget beyond the exactness bound was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::invalid_parameters);
  }
  EXPECT_NO_THROW(KeySwitcher(p, Gadget{65536, 4}));
}

}  // namespace
