#include "safhire/core/serialize.hpp"

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::core {

void ByteWriter::put(std::uint64_t v, int count) {
  for (int i = 0; i < count; ++i)
    bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void ByteWriter::words(std::span<const std::uint64_t> v) {
  bytes_.reserve(bytes_.size() + 8 * v.size());
  for (std::uint64_t w : v)
    put(w, 8);
}

void ByteWriter::packed_words(std::span<const std::uint64_t> v, std::uint32_t width) {
  require(width >= 1 && width <= 64, ErrorCode::invalid_argument, "packed_words: width 1..64");
  u128 acc = 0;
  std::uint32_t held = 0;
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  for (std::uint64_t w : v) {
    acc |= static_cast<u128>(w & mask) << held;
    held += width;
    while (held >= 8) {
      bytes_.push_back(static_cast<std::uint8_t>(acc));
      acc >>= 8;
      held -= 8;
    }
  }
  if (held > 0) bytes_.push_back(static_cast<std::uint8_t>(acc));
}

void ByteReader::packed_words(std::span<std::uint64_t> out, std::uint32_t width) {
  require(width >= 1 && width <= 64, ErrorCode::invalid_argument, "packed_words: width 1..64");
  const std::size_t total = (out.size() * width + 7) / 8;
  need(total);
  u128 acc = 0;
  std::uint32_t held = 0;
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  for (auto& w : out) {
    while (held < width) {
      acc |= static_cast<u128>(bytes_[at_++]) << held;
      held += 8;
    }
    w = static_cast<std::uint64_t>(acc) & mask;
    acc >>= width;
    held -= width;
  }
}

void ByteReader::fail(const std::string& why) const {
  throw Error(ErrorCode::malformed_input, what_ + ": " + why);
}

void ByteReader::need(std::size_t count) const {
  if (count > remaining()) {
    fail("truncated: needs " + std::to_string(count) + " more bytes at offset " +
         std::to_string(at_) + ", has " + std::to_string(remaining()));
  }
}

std::uint64_t ByteReader::get(int count) {
  need(static_cast<std::size_t>(count));
  std::uint64_t v = 0;
  for (int i = count - 1; i >= 0; --i)
    v = (v << 8) | bytes_[at_ + i];
  at_ += static_cast<std::size_t>(count);
  return v;
}

void ByteReader::bytes(std::span<std::uint8_t> out) {
  need(out.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = bytes_[at_ + i];
  at_ += out.size();
}

void ByteReader::words(std::span<std::uint64_t> out) {
  need(8 * out.size());
  for (auto& w : out)
    w = get(8);
}

void ByteReader::expect_remaining(std::size_t count) const {
  if (remaining() != count) {
    fail("expected " + std::to_string(count) + " more bytes, found " + std::to_string(remaining()) +
         (remaining() > count ? " (oversized)" : " (truncated)"));
  }
}

}  // namespace safhire::core
