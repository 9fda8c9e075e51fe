#include "safhire/hybrid/plan.hpp"

#include "safhire/core/error.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::hybrid {

namespace {

// Message sizes of protocol.cpp: header (16) and u32 round, values and count; each object a
// u32 length and its rlwe format (17-byte header).
constexpr std::uint64_t kRoundMessage = 16 + 12, kObject = 4 + 17;

std::uint64_t packed_bytes(std::uint64_t n, std::uint32_t bits) {
  return (n * bits + 7) / 8;
}

}  // namespace

Plan plan_inference(const Model& model, const rlwe::ParameterSet& params,
                    const InferenceOptions& options) {
  require(options.gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  const std::uint64_t N = params.ring.N();
  const std::size_t powers = rlwe::power_elements(params.ring, options.gamma).size();
  const std::uint32_t row_bits = narrowest_row_bits(model, params, options.gamma);
  // The service's CPU backend derives powers (the client sends the keys for them).
  const std::vector<RoundNoise> noise =
      estimate_round_noise(model, params, options.gamma, row_bits, options.gamma >= 1);
  const std::uint64_t per_pack =
      options.gamma == 0 ? N - 1 : params.ring.power(params.ring.a() - options.gamma) - 1;
  Plan plan;
  plan.row_bits = row_bits;
  if (options.mode == rlwe::TreeMode::fast) plan.key_switches = 0;
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    RoundPlan p;
    p.inputs = model.activation(r).size();
    p.chunks = (p.inputs + N - 1) / N;
    p.derived_powers = noise[r].derived_powers;
    p.uploaded_ciphertexts = p.chunks * (p.derived_powers ? 1 : powers);
    p.outputs = model.rounds()[r].output.size();
    p.packs = (p.outputs + N - 1) / N;
    p.encoding_bits = model.encoding_bits(r);
    p.round_bits = model.rounds()[r].bits;
    p.upload_bits = noise[r].upload_bits;
    p.download_bits = noise[r].download_bits;
    p.download_body_bits = noise[r].download_body_bits;
    p.noise = noise[r];
    if (options.mode == rlwe::TreeMode::fast) {
      p.key_switches = p.packs * per_pack + (p.derived_powers ? p.chunks * (powers - 1) : 0);
      *plan.key_switches += *p.key_switches;
    }
    p.bytes_up = kRoundMessage +
                 p.uploaded_ciphertexts * (kObject + 32 + 1 + packed_bytes(N, p.upload_bits));
    p.bytes_down = kRoundMessage + p.packs * (kObject + 2 + packed_bytes(N, p.download_bits) +
                                              packed_bytes(N, p.download_body_bits));
    plan.bytes_up += p.bytes_up;
    plan.bytes_down += p.bytes_down;
    plan.rounds.push_back(p);
  }
  return plan;
}

std::uint64_t max_upload_bytes(const Model& model, const rlwe::ParameterSet& params,
                               std::uint32_t gamma) {
  require(gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  const std::uint64_t N = params.ring.N();
  const std::size_t powers = rlwe::power_elements(params.ring, gamma).size();
  std::uint64_t most = 0;
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    const std::uint64_t chunks = (model.activation(r).size() + N - 1) / N;
    most =
        std::max(most, kRoundMessage + chunks * powers * (kObject + 32 + 1 + packed_bytes(N, 64)));
  }
  return most;
}

}  // namespace safhire::hybrid
