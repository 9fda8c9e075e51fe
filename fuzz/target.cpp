// One libFuzzer target: the decoder named SAFHIRE_FUZZ_TARGET (decoders.hpp). A typed refusal
// (safhire::Error) is the expected answer to bad bytes; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>

#include "decoders.hpp"
#include "safhire/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const safhire::fuzz::Decoder& decoder = safhire::fuzz::decoder(SAFHIRE_FUZZ_TARGET);
  try {
    decoder.run({data, size});
  } catch (const safhire::Error&) {
  }
  return 0;
}
