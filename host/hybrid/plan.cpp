#include "safhire/hybrid/plan.hpp"

#include <algorithm>

#include "safhire/core/error.hpp"
#include "safhire/hybrid/messages.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/serialize.hpp"

namespace safhire::hybrid {

Plan plan_inference(const Model& model, const rlwe::ParameterSet& params,
                    const InferenceOptions& options) {
  require(options.gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  const std::uint64_t N = params.ring.N();
  const std::size_t powers = rlwe::power_elements(params.ring, options.gamma).size();
  const std::uint32_t row_bits = session_config(model, params, options).row_bits;
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
    p.bytes_up = round_message_bytes(p.uploaded_ciphertexts,
                                     rlwe::seeded_ciphertext_bytes(params, p.upload_bits));
    p.bytes_down = round_message_bytes(
        p.packs, rlwe::switched_ciphertext_bytes(params, p.download_bits, p.download_body_bits));
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
    most = std::max(
        most, round_message_bytes(chunks * powers, rlwe::seeded_ciphertext_bytes(params, 64)));
  }
  return most;
}

}  // namespace safhire::hybrid
