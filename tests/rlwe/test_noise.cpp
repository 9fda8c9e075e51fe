// Noise of extraction and packing, measured with NoiseProbe on the target coefficients, against
// an independent simulation of the same trees (RLWE mod 2^64 with a binary key and real gadget key
// switching, written apart from this code; within half a bit) and against the conservative
// estimates of rlwe/noise.hpp (which must not be exceeded).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire::rlwe;
using safhire::core::SeededRandom;

struct Measured {
  double extract_gamma0, extract_gamma1, pack_all;
};

Measured measure(const ParameterSet& p) {
  auto random = SeededRandom::from_counter(100);
  const SecretKey key(p, random);
  Encryptor enc(key, random);
  std::mt19937_64 rng(100);
  safhire::ring::TorusPoly mu(p.ring);
  for (auto& x : mu.coeffs()) {
    x = encode_message(static_cast<std::int64_t>(rng() % 256) - 128, p.message_bits);
  }
  Measured out{};
  for (std::uint32_t gamma : {0U, 1U}) {
    const GaloisKeys keys = make_galois_keys(key, p.gadget(gamma), random);
    TraceTrees trees(p, p.gadget(gamma), keys);
    const Ciphertext ct = enc.encrypt(mu.coeffs());
    const auto parts = trees.split(ct, gamma, TreeMode::fast);
    std::uint64_t step = 1;
    for (std::uint32_t i = gamma; i < p.ring.a(); ++i)
      step *= p.ring.t();
    NoiseProbe probe;
    for (std::size_t u = 0; u < parts.size(); ++u) {
      const auto phase = enc.phase(parts[u]);
      if (gamma == 0) {
        probe.add(phase[0] - mu[u]);
      } else {
        for (std::size_t j = 0; j < phase.degree(); j += step)
          probe.add(phase[j] - mu[u + j]);
      }
    }
    (gamma == 0 ? out.extract_gamma0 : out.extract_gamma1) = probe.log2_variance();
    if (gamma == 0) {
      // Packing N LWE samples of independent ciphertexts (the samples of one ciphertext would
      // recombine into it and cancel the key-switching noise).
      std::vector<LweCiphertext> lwes;
      for (std::uint32_t j = 0; j < p.ring.N(); ++j) {
        lwes.push_back(sample_extract(p.ring, enc.encrypt(mu.coeffs()), j));
      }
      const auto phase = enc.phase(trees.pack_lwes(lwes, p.ring.a() - 1, TreeMode::fast));
      NoiseProbe pack;
      for (std::size_t j = 0; j < phase.degree(); ++j)
        pack.add(phase[j] - mu[j]);
      out.pack_all = pack.log2_variance();
    }
  }
  return out;
}

TEST(TreeNoise, MatchesAnIndependentSimulationWithinHalfABit) {
  // log2 of the noise std measured by that simulation for 3^7, sigma 2^-36, D 2^9, l 3 and for
  // 7^4, D 2^12, l 3 / D 2^16, l 2: the paper's b8 and b12 sets.
  const Measured b8 = measure(parameter_set("paper-b8", SecurityPolicy::allow_insecure));
  EXPECT_NEAR(b8.extract_gamma0, -24.3, 0.5);
  EXPECT_NEAR(b8.extract_gamma1, -28.1, 0.5);
  EXPECT_NEAR(b8.pack_all, -25.4, 0.5);
  const Measured b12 = measure(parameter_set("paper-b12", SecurityPolicy::allow_insecure));
  EXPECT_NEAR(b12.extract_gamma0, -44.7, 0.5);
  EXPECT_NEAR(b12.extract_gamma1, -42.5, 0.5);
}

TEST(TreeNoise, EstimatesAreConservativeAndDefaultsAreSafe) {
  for (const char* name : {"default-b8", "paper-b8"}) {
    const ParameterSet& p = parameter_set(name, SecurityPolicy::allow_insecure);
    const Measured m = measure(p);
    EXPECT_GE(estimate_extraction_noise(p, 0).log2_variance, m.extract_gamma0) << name;
    EXPECT_GE(estimate_extraction_noise(p, 1).log2_variance, m.extract_gamma1) << name;
    EXPECT_GE(estimate_packing_noise(p).log2_variance, m.pack_all) << name;
  }
  // Every default set keeps a coefficient's failure probability below 2^-40 after extraction
  // and packing (estimates, not measurements).
  for (const char* name : {"default-b8", "default-b12", "default-b16"}) {
    const ParameterSet& p = parameter_set(name);
    for (std::uint32_t gamma : {0U, 1U, 2U}) {
      EXPECT_LT(estimate_extraction_noise(p, gamma).failure_probability, 0x1p-40) << name;
    }
    EXPECT_LT(estimate_packing_noise(p).failure_probability, 0x1p-40) << name;
  }
}

}  // namespace

namespace {

// The rounding of modulus_switch, a and b at one width or at two: download_variance (=
// switched_variance at one width) is an upper bound of the measured phase-error variance, by at
// most one bit (the binary key's mean makes the mask term smaller than cnt E[s^2] / 12), on every
// default set; each component is the one-width switch's at its own width.
TEST(SwitchNoise, RoundingModelIsATightUpperBound) {
  for (const char* name : {"default-b8", "default-b12", "default-b16"}) {
    const ParameterSet& p = parameter_set(name);
    auto random = SeededRandom::from_counter(112);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    struct Widths {
      std::uint32_t bits, body;
    };
    for (const Widths w : {Widths{14, 14}, Widths{20, 20}, Widths{28, 28}, Widths{15, 11},
                           Widths{20, 16}, Widths{20, 14}, Widths{28, 25}}) {
      const std::string where = std::string(name) + " at " + std::to_string(w.bits) + "/" +
                                std::to_string(w.body) + " bits";
      NoiseProbe probe;
      for (int rep = 0; rep < 4; ++rep) {
        const Ciphertext ct = enc.encrypt(safhire::ring::TorusPoly(p.ring).coeffs());
        const SwitchedCiphertext sw = modulus_switch(ct, w.bits, w.body);
        ASSERT_EQ(sw.a, modulus_switch(ct, w.bits).a) << where;
        ASSERT_EQ(sw.b, modulus_switch(ct, w.body).b) << where;
        const auto before = enc.phase(ct);
        const auto after = enc.phase(expand(p.ring, sw));
        for (std::size_t j = 0; j < after.degree(); ++j)
          probe.add(after[j] - before[j]);
      }
      const double model = std::log2(download_variance(p, w.bits, w.body));
      EXPECT_LE(probe.log2_variance(), model + 0.1) << where;
      EXPECT_GE(probe.log2_variance(), model - 1.0) << where;
    }
  }
}

}  // namespace

namespace {

// Packing R_gamma blocks (gamma 1, 2): the estimate bounds the measured phase variance from
// above, by at most 2 bits, on every default set.
TEST(BlockPackNoise, EstimateIsAConservativeBound) {
  for (const char* name : {"default-b8", "default-b12", "default-b16"}) {
    const ParameterSet& p = parameter_set(name);
    auto random = SeededRandom::from_counter(120);
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    const safhire::ring::TorusPoly mu(p.ring);
    for (std::uint32_t gamma : {1U, 2U}) {
      const GaloisKeys keys = make_galois_keys(key, p.gadget(gamma), random);
      TraceTrees trees(p, p.gadget(gamma), keys);
      const PartialExtraction px(p.ring, gamma);
      NoiseProbe probe;
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<Ciphertext> blocks;
        for (std::uint32_t b = 0; b < px.blocks(); ++b)
          blocks.push_back(px.embed(px.extract(enc.encrypt(mu.coeffs()), 0)));
        probe.add(enc.phase(trees.pack_blocks(blocks, gamma, TreeMode::fast)).coeffs());
      }
      const double estimate = estimate_block_packing_noise(p, gamma).log2_variance;
      EXPECT_LE(probe.log2_variance(), estimate + 0.1) << name << ", gamma " << gamma;
      EXPECT_GE(probe.log2_variance(), estimate - 2.0) << name << ", gamma " << gamma;
    }
  }
}

}  // namespace
