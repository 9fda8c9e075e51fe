// Every decoder of untrusted bytes, by name, for the libFuzzer targets (one binary per name,
// fuzz/target.cpp) and for the seed corpus (fuzz/make_corpus.cpp writes valid blobs of each).
//
// A decoder either throws safhire::Error (the typed refusal) or succeeds; anything else that
// escapes (std::bad_alloc, std::length_error, a crash, a sanitizer report) is a finding. On
// success the decoded object is serialized, decoded and serialized again: the two encodings
// must agree (a decoder that accepts what its own encoder cannot reproduce aborts).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace safhire::fuzz {

struct Decoder {
  const char* name;
  // Decodes (and round-trips) the bytes; throws safhire::Error on a refusal.
  void (*run)(std::span<const std::uint8_t> bytes);
  // Valid inputs for the seed corpus.
  std::vector<std::vector<std::uint8_t>> (*seeds)();
};

const std::vector<Decoder>& decoders();
// Error(invalid_argument) naming the known ones for an unknown name.
const Decoder& decoder(const std::string& name);

}  // namespace safhire::fuzz
