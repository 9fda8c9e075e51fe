// AES-128-CTR: the FIPS 197 and SP 800-38A known answers, and every implementation the
// processor has giving the portable one's words for any length and counter.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "safhire/core/aes_ctr.hpp"

namespace {

using safhire::core::AesCtr;
using safhire::core::AesImpl;

std::array<std::uint8_t, 16> hex16(const std::string& hex) {
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < 16; ++i)
    out[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

TEST(AesCtr, BlocksMatchFips197) {
  // FIPS 197 appendix C.1 and appendix B.
  const AesCtr c1(hex16("000102030405060708090a0b0c0d0e0f"));
  EXPECT_EQ(c1.encrypt_block(hex16("00112233445566778899aabbccddeeff")),
            hex16("69c4e0d86a7b0430d8cdb78070b4c55a"));
  const AesCtr b(hex16("2b7e151628aed2a6abf7158809cf4f3c"));
  EXPECT_EQ(b.encrypt_block(hex16("3243f6a8885a308d313198a2e0370734")),
            hex16("3925841d02dc09fbdc118597196a0b32"));
}

TEST(AesCtr, CounterBlockMatchesSp80038aOnEveryImplementation) {
  // SP 800-38A F.5.1: counter block f0f1..feff under 2b7e..4f3c gives ec8c..a1e4; as a nonce
  // and counter read little-endian.
  const auto block = hex16("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  std::uint64_t nonce = 0, counter = 0;
  std::memcpy(&nonce, block.data(), 8);
  std::memcpy(&counter, block.data() + 8, 8);
  for (AesImpl impl : safhire::core::available_aes()) {
    const AesCtr ctr(hex16("2b7e151628aed2a6abf7158809cf4f3c"), impl);
    std::uint64_t words[2];
    ctr.generate(nonce, counter, 1, words);
    std::array<std::uint8_t, 16> got{};
    std::memcpy(got.data(), words, 16);
    EXPECT_EQ(got, hex16("ec8cdf7398607cb0f2d21675ea9ea1e4")) << to_string(impl);
  }
}

TEST(AesCtr, EveryImplementationGivesThePortableWords) {
  std::mt19937_64 rng(7);
  AesCtr::Key key{};
  for (auto& k : key)
    k = static_cast<std::uint8_t>(rng());
  const AesCtr portable(key, AesImpl::portable);
  for (AesImpl impl : safhire::core::available_aes()) {
    const AesCtr ctr(key, impl);
    // Lengths around the 8- and 32-block strides of the vector loops, counters near a carry.
    for (std::size_t blocks : {1U, 3U, 8U, 31U, 32U, 33U, 70U, 257U}) {
      const std::uint64_t nonce = rng(), counter = ~std::uint64_t{0} - 5 - (rng() & 63);
      std::vector<std::uint64_t> want(2 * blocks), got(2 * blocks);
      portable.generate(nonce, counter, blocks, want.data());
      ctr.generate(nonce, counter, blocks, got.data());
      ASSERT_EQ(got, want) << to_string(impl) << ", " << blocks << " blocks";
      // Block i alone is block i of the stream.
      std::uint64_t one[2];
      ctr.generate(nonce, counter + blocks - 1, 1, one);
      EXPECT_EQ(one[0], want[2 * blocks - 2]);
      EXPECT_EQ(one[1], want[2 * blocks - 1]);
    }
  }
}

}  // namespace
