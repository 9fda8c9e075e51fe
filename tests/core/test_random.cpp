// Randomness: the seeded stream against the ChaCha20 test vectors of RFC 8439 (appendix A.1),
// stream consistency, and the samplers' distributions (fixed seeds, so the tests are
// deterministic; the bounds are many standard errors wide).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <new>
#include <numeric>
#include <span>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"

namespace {

using namespace safhire::core;

TEST(Random, SeededStreamIsChaCha20) {
  // RFC 8439 A.1, test vectors 1 and 2: key 0, nonce 0, block counters 0 and 1.
  const std::uint8_t expected[128] = {
      0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd,
      0x28, 0xbd, 0xd2, 0x19, 0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36, 0xef, 0xcc, 0x8b, 0x77,
      0x0d, 0xc7, 0xda, 0x41, 0x59, 0x7c, 0x51, 0x57, 0x48, 0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8,
      0xd8, 0x4a, 0x37, 0x6a, 0x43, 0xb8, 0xf4, 0x15, 0x18, 0xa1, 0x1c, 0xc3, 0x87, 0xb6, 0x69,
      0xb2, 0xee, 0x65, 0x86, 0x9f, 0x07, 0xe7, 0xbe, 0x55, 0x51, 0x38, 0x7a, 0x98, 0xba, 0x97,
      0x7c, 0x73, 0x2d, 0x08, 0x0d, 0xcb, 0x0f, 0x29, 0xa0, 0x48, 0xe3, 0x65, 0x69, 0x12, 0xc6,
      0x53, 0x3e, 0x32, 0xee, 0x7a, 0xed, 0x29, 0xb7, 0x21, 0x76, 0x9c, 0xe6, 0x4e, 0x43, 0xd5,
      0x71, 0x33, 0xb0, 0x74, 0xd8, 0x39, 0xd5, 0x31, 0xed, 0x1f, 0x28, 0x51, 0x0a, 0xfb, 0x45,
      0xac, 0xe1, 0x0a, 0x1f, 0x4b, 0x79, 0x4d, 0x6f};
  SeededRandom stream(Seed{});
  std::vector<std::uint8_t> got(128);
  stream.fill(got);
  EXPECT_EQ(got, std::vector<std::uint8_t>(std::begin(expected), std::end(expected)));
}

TEST(Random, StreamDoesNotDependOnHowItIsRead) {
  const Seed seed = SeededRandom::from_counter(7).seed();
  std::vector<std::uint8_t> whole(1000), pieces(1000);
  SeededRandom(seed).fill(whole);
  SeededRandom stream(seed);
  std::size_t at = 0;
  for (std::size_t step : {1, 63, 64, 65, 3, 200, 604}) {
    stream.fill(std::span<std::uint8_t>(pieces.data() + at, step));
    at += step;
  }
  ASSERT_EQ(at, pieces.size());
  EXPECT_EQ(whole, pieces);
  // expand_seed reads the same stream as little-endian words.
  std::vector<std::uint64_t> words(100);
  expand_seed(seed, words);
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint64_t w = 0;
    for (int b = 7; b >= 0; --b)
      w = (w << 8) | whole[8 * i + b];
    ASSERT_EQ(words[i], w);
  }
  // Different seeds, different streams; the OS source gives distinct seeds.
  std::vector<std::uint64_t> other(100);
  expand_seed(SeededRandom::from_counter(8).seed(), other);
  EXPECT_NE(words, other);
  OsRandom os;
  EXPECT_NE(os.seed(), os.seed());
}

TEST(Random, BinaryAndTernaryAreUniform) {
  auto random = SeededRandom::from_counter(1);
  const std::size_t n = 300000;
  std::vector<std::uint64_t> v(n);
  sample_binary(random, v);
  std::size_t ones = 0;
  for (auto x : v) {
    ASSERT_LE(x, 1U);
    ones += x;
  }
  // Standard error of the count: sqrt(n)/2 ~ 274; allow 6 of them.
  EXPECT_NEAR(static_cast<double>(ones), n / 2.0, 6 * std::sqrt(n) / 2);
  sample_ternary(random, v);
  std::size_t counts[3] = {};
  for (auto x : v) {
    const auto s = static_cast<std::int64_t>(x);
    ASSERT_TRUE(s >= -1 && s <= 1);
    ++counts[s + 1];
  }
  for (auto c : counts)
    EXPECT_NEAR(static_cast<double>(c), n / 3.0, 6 * std::sqrt(n * 2.0 / 9));
}

TEST(Random, GaussianHasTheRequestedWidth) {
  auto random = SeededRandom::from_counter(2);
  for (double log2_sigma : {-36.0, -51.0, -20.0}) {
    const double sigma_abs = std::exp2(log2_sigma + 64);
    const std::size_t n = 200000;
    std::vector<std::uint64_t> v(n);
    sample_gaussian(random, std::exp2(log2_sigma), v);
    double sum = 0, sum2 = 0, sum4 = 0;
    std::size_t beyond_2sigma = 0;
    for (auto x : v) {
      const double z = static_cast<double>(static_cast<std::int64_t>(x)) / sigma_abs;
      sum += z;
      sum2 += z * z;
      sum4 += z * z * z * z;
      beyond_2sigma += std::abs(z) > 2;
    }
    EXPECT_NEAR(sum / n, 0.0, 6 / std::sqrt(n));
    EXPECT_NEAR(sum2 / n, 1.0, 6 * std::sqrt(2.0 / n));   // Var(z^2) = 2
    EXPECT_NEAR(sum4 / n, 3.0, 6 * std::sqrt(96.0 / n));  // the kurtosis of a normal
    EXPECT_NEAR(static_cast<double>(beyond_2sigma) / n, 0.0455, 6 * std::sqrt(0.0455 / n));
  }
  std::vector<std::uint64_t> v(4);
  EXPECT_THROW(sample_gaussian(random, 0.5, v), safhire::Error);
  EXPECT_THROW(sample_gaussian(random, 0x1p-70, v), safhire::Error);
}

TEST(Random, DerivedSeedsAreDeterministicAndIndependentPerIdAndContext) {
  Seed key{};
  key[3] = 7;
  EXPECT_EQ(derive_seed(key, 5, "SFHshufl"), derive_seed(key, 5, "SFHshufl"));
  EXPECT_NE(derive_seed(key, 5, "SFHshufl"), derive_seed(key, 6, "SFHshufl"));
  EXPECT_NE(derive_seed(key, 5, "SFHshufl"), derive_seed(key, 5, "SFHother"));
  Seed other = key;
  other[0] ^= 1;
  EXPECT_NE(derive_seed(key, 5, "SFHshufl"), derive_seed(other, 5, "SFHshufl"));
}

TEST(Random, PermutationsAreUniform) {
  // All 24 orders of 4 elements, each with probability 1/24 (chi-square, 23 degrees of freedom,
  // bound far in the tail: p < 1e-9).
  auto random = SeededRandom::from_counter(9);
  std::map<std::vector<std::uint32_t>, int> counts;
  const int draws = 48000;
  for (int i = 0; i < draws; ++i)
    ++counts[random_permutation(random, 4)];
  ASSERT_EQ(counts.size(), 24U);
  double chi2 = 0;
  for (const auto& [perm, c] : counts)
    chi2 += (c - draws / 24.0) * (c - draws / 24.0) / (draws / 24.0);
  EXPECT_LT(chi2, 80.0);
  std::vector<std::uint32_t> p = random_permutation(random, 1000), id(1000);
  std::iota(id.begin(), id.end(), 0U);
  EXPECT_NE(p, id);
  std::sort(p.begin(), p.end());
  EXPECT_EQ(p, id);
  EXPECT_TRUE(random_permutation(random, 0).empty());
}

// Whether `needle` occurs anywhere in `hay`.
bool contains(std::span<const std::uint8_t> hay, std::span<const std::uint8_t> needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

// A seeded stream's key and its unused keystream are gone from its storage once it is destroyed
// (the object lives in a buffer here, so that the bytes it leaves behind can be read).
TEST(Random, SeededStreamsWipeTheirKeyAndKeystream) {
  Seed seed;
  for (std::size_t i = 0; i < seed.size(); ++i)
    seed[i] = static_cast<std::uint8_t>(0xA0 + i);
  std::array<std::uint8_t, 16> next{};
  {
    SeededRandom twin(seed);
    std::array<std::uint8_t, 8> first{};
    twin.fill(first);
    twin.fill(next);  // what the stream's buffer still holds after its first 8 bytes
  }
  alignas(SeededRandom) std::array<std::uint8_t, sizeof(SeededRandom)> storage{};
  auto* stream = new (storage.data()) SeededRandom(seed);
  std::array<std::uint8_t, 8> first{};
  stream->fill(first);
  ASSERT_TRUE(contains(storage, seed));
  ASSERT_TRUE(contains(storage, next));
  stream->~SeededRandom();
  EXPECT_FALSE(contains(storage, seed));
  EXPECT_FALSE(contains(storage, next));
}

}  // namespace
