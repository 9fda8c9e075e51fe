// Binary serialisation primitives: little-endian integers and word arrays, written to a growing
// buffer and read back with bounds checks. Every read past the end is an
// Error(ErrorCode::malformed_input); nothing is allocated from a length before it is checked
// against the bytes actually present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace safhire::core {

class ByteWriter {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void bytes(std::span<const std::uint8_t> v) { bytes_.insert(bytes_.end(), v.begin(), v.end()); }
  void words(std::span<const std::uint64_t> v);
  // The low `width` bits (1..64) of each word, packed little-endian: ceil(n width / 8) bytes.
  void packed_words(std::span<const std::uint64_t> v, std::uint32_t width);
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  void put(std::uint64_t v, int count);
  std::vector<std::uint8_t> bytes_;
};

class ByteReader {
 public:
  // `what` names the object in error messages ("ciphertext", "key-switching key", ...).
  ByteReader(std::span<const std::uint8_t> bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  void bytes(std::span<std::uint8_t> out);
  void words(std::span<std::uint64_t> out);
  // Reads what packed_words wrote (the width must match).
  void packed_words(std::span<std::uint64_t> out, std::uint32_t width);
  std::size_t remaining() const { return bytes_.size() - at_; }
  // Throws malformed_input unless exactly `count` bytes remain (before reading a payload).
  void expect_remaining(std::size_t count) const;
  // Throws malformed_input if bytes are left over.
  void expect_end() const { expect_remaining(0); }
  [[noreturn]] void fail(const std::string& why) const;

 private:
  std::uint64_t get(int count);
  void need(std::size_t count) const;
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
  std::string what_;
};

}  // namespace safhire::core
