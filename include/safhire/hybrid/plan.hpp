// The planner: what an inference of a model will cost before it runs. Per round (one linear
// block between two client-side non-linearities): the values uploaded and the chunks of N they
// fill (times phi(t^gamma) powers at gamma >= 1), the outputs and the packed ciphertexts that
// carry them, the precisions of upload and download, the estimated noise, the key switches of
// fast packing (and of derived powers) and the bytes each way; the noise with the rows a
// service's server keeps (narrowest_row_bits), whose CPU backend derives powers where the noise
// allows. Slot s of a round lives at coefficient s mod N of chunk (or pack) s / N;
// the server's permutation maps slots to model indices (inference.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "safhire/hybrid/inference.hpp"

namespace safhire::hybrid {

struct RoundPlan {
  std::size_t inputs = 0, chunks = 0, uploaded_ciphertexts = 0;
  std::size_t outputs = 0, packs = 0;
  std::uint32_t encoding_bits = 0, round_bits = 0, upload_bits = 0;
  std::uint32_t download_bits = 0, download_body_bits = 0;  // of a and of b
  bool derived_powers = false;  // the first power of each chunk uploaded, the others derived
  std::optional<std::uint64_t> key_switches;   // known in fast mode
  std::uint64_t bytes_up = 0, bytes_down = 0;  // the round's upload and download messages
  RoundNoise noise;
};

struct Plan {
  std::uint32_t row_bits = 64;  // of the server's rows (narrowest_row_bits)
  std::vector<RoundPlan> rounds;
  std::optional<std::uint64_t> key_switches;
  std::uint64_t bytes_up = 0, bytes_down = 0;
};

Plan plan_inference(const Model& model, const rlwe::ParameterSet& params,
                    const InferenceOptions& options);

// A bound on any round's upload at gamma, without the noise analysis: every power uploaded, in
// 64-bit words (plan_inference's bytes_up never exceed it).
std::uint64_t max_upload_bytes(const Model& model, const rlwe::ParameterSet& params,
                               std::uint32_t gamma);

}  // namespace safhire::hybrid
