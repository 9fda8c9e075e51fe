// The binary form of lane ciphertexts: round trips word for word, and every malformed,
// truncated, oversized or foreign blob a typed error, never a crash or an allocation from an
// unchecked length.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "lanes_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using namespace safhire::lanes::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

TEST(LaneSerialization, RoundTripsWordForWord) {
  auto& f = lanes_fixture("lanes-n12-256-b2");
  const auto a = random_integers(f.p(), 16, 31);
  const auto x = f.evaluator.multiply(f.encryptor.encrypt(a, f.sk), f.encryptor.encrypt(a, f.sk),
                                      f.keys.relinearization);
  const auto bytes = serialize(f.context, x);
  const auto y = deserialize_lane_ciphertext(f.context, bytes);
  EXPECT_EQ(y.ct.c, x.ct.c);
  EXPECT_EQ(y.ct.scale, x.ct.scale);
  EXPECT_EQ(y.digit_bound, x.digit_bound);
  EXPECT_EQ(y.noise, x.noise);
  EXPECT_EQ(y.space, x.space);
  const auto d = f.decryptor.decrypt(y);
  for (std::size_t r = 0; r < a.size(); ++r)
    ASSERT_EQ(d.integers[r], mod(a[r] * a[r], f.p()));
}

TEST(LaneSerialization, BadBlobsAreTypedErrors) {
  auto& f = lanes_fixture("lanes-n12-256-b2");
  const auto x = f.encryptor.encrypt(random_integers(f.p(), 16, 32), f.sk);
  const auto good = serialize(f.context, x);
  auto read = [&](const std::vector<std::uint8_t>& bytes) {
    return code_of([&] { deserialize_lane_ciphertext(f.context, bytes); });
  };
  // Truncated anywhere (every length of the header, then a spread of the body's).
  for (std::size_t len = 0; len < good.size(); len += len < 64 ? 1 : good.size() / 37) {
    const std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<long>(len));
    ASSERT_EQ(read(cut), ErrorCode::malformed_input) << len;
  }
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(read(longer), ErrorCode::malformed_input);
  auto magic = good;
  magic[0] ^= 1;
  EXPECT_EQ(read(magic), ErrorCode::malformed_input);
  auto version = good;
  version[4] = 9;
  EXPECT_EQ(read(version), ErrorCode::malformed_input);
  auto foreign = good;
  foreign[6] ^= 1;  // the space's fingerprint
  EXPECT_EQ(read(foreign), ErrorCode::size_mismatch);
  auto nan = good;
  const double bad = std::nan("");
  std::memcpy(nan.data() + 14, &bad, sizeof bad);  // the digit bound
  EXPECT_EQ(read(nan), ErrorCode::malformed_input);
  auto negative = good;
  const double minus = -1;
  std::memcpy(negative.data() + 22, &minus, sizeof minus);  // the noise
  EXPECT_EQ(read(negative), ErrorCode::malformed_input);
  auto oversized = good;
  const std::uint64_t huge = ~std::uint64_t{0};
  std::memcpy(oversized.data() + 30, &huge, sizeof huge);  // the CKKS blob's length
  EXPECT_EQ(read(oversized), ErrorCode::malformed_input);
  // Another space's context refuses the blob; the ciphertext below the refresh level too.
  auto& g = lanes_fixture("lanes-n12-8-b2");
  EXPECT_EQ(code_of([&] { deserialize_lane_ciphertext(g.context, good); }),
            ErrorCode::size_mismatch);
  LaneCiphertext low = x;
  low.ct = f.evaluator.ckks_evaluator().drop_to_level(x.ct, 1);
  EXPECT_EQ(read(serialize(f.context, low)), ErrorCode::malformed_input);
}

}  // namespace
