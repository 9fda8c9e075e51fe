#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "safhire/ckks/serialize.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/serialize.hpp"
#include "safhire/lanes/ciphertext.hpp"

namespace safhire::lanes {

namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'H', 'L', 'N'};
constexpr std::uint16_t kVersion = 1;

}  // namespace

std::vector<std::uint8_t> serialize(const LaneContext& context, const LaneCiphertext& x) {
  require(x.space == context.fingerprint(), ErrorCode::size_mismatch,
          "serialize: a lane ciphertext of another lane space");
  ckks::Ciphertext host = x.ct;  // serialized from host words (resident: read where it lives)
  const auto blob = ckks::serialize(context.ckks(), host);
  core::ByteWriter w;
  for (std::uint8_t b : kMagic)
    w.u8(b);
  w.u16(kVersion);
  w.u64(x.space);
  w.u64(std::bit_cast<std::uint64_t>(x.digit_bound));
  w.u64(std::bit_cast<std::uint64_t>(x.noise));
  w.u64(blob.size());
  w.bytes(blob);
  return w.take();
}

LaneCiphertext deserialize_lane_ciphertext(const LaneContext& context,
                                           std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "lane ciphertext");
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic)))
    r.fail("not a lane ciphertext (magic)");
  const std::uint16_t version = r.u16();
  if (version != kVersion) r.fail("format version " + std::to_string(version) + " unknown");
  LaneCiphertext x;
  x.space = r.u64();
  require(x.space == context.fingerprint(), ErrorCode::size_mismatch,
          "lane ciphertext of another lane space");
  x.digit_bound = std::bit_cast<double>(r.u64());
  x.noise = std::bit_cast<double>(r.u64());
  if (!(std::isfinite(x.digit_bound) && x.digit_bound >= 0 && std::isfinite(x.noise) &&
        x.noise >= 0)) {
    r.fail("digit bound and noise must be finite and non-negative");
  }
  const std::uint64_t length = r.u64();
  r.expect_remaining(length);  // before anything is read or allocated from it
  x.ct = ckks::deserialize_ciphertext(context.ckks(), bytes.subspan(bytes.size() - length));
  const LaneSpace& space = context.space();
  if (x.ct.size() != 2 || x.ct.slots != space.degree() / 2 || x.level() < space.refresh_level())
    r.fail("form B needs two components, N/2 slots and a level from the refresh level up");
  return x;
}

}  // namespace safhire::lanes
