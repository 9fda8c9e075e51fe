#include "safhire/hybrid/noise_budget.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::hybrid {

namespace {

// Per round: the largest sum, over an output channel, of the squared weights that read each
// source (pool windows expanded); indexed [round][source].
std::vector<std::vector<double>> squared_weights(const Model& model) {
  std::vector<std::vector<double>> out;
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    const Round& round = model.rounds()[r];
    std::vector<double> worst(r + 1, 0.0);
    std::vector<double> sum(r + 1);
    for (std::uint32_t o = 0; o < round.output.c; ++o) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (const Term& t : round.terms) {
        const double area = t.pool == 0 ? 1.0 : static_cast<double>(t.pool) * t.pool;
        for (std::uint32_t i = 0; i < t.input.c; ++i)
          for (std::uint32_t ky = 0; ky < t.kernel; ++ky)
            for (std::uint32_t kx = 0; kx < t.kernel; ++kx) {
              const double w = t.weight(o, i, ky, kx);
              sum.at(t.source) += w * w * area;
            }
      }
      for (std::size_t s = 0; s <= r; ++s)
        worst[s] = std::max(worst[s], sum[s]);
    }
    out.push_back(std::move(worst));
  }
  return out;
}

// The noise model of estimate_round_noise, for given upload precisions.
struct NoiseModel {
  std::vector<std::vector<double>> squares;  // squared_weights
  double fresh = 0, gain = 0, rounded = 0, pack = 0;
  double derived = 0;  // what deriving a power adds (one key switch), through the gain

  NoiseModel(const Model& model, const rlwe::ParameterSet& params, std::uint32_t gamma,
             std::uint32_t row_bits)
      : squares(squared_weights(model)) {
    require(row_bits == 32 || row_bits == 64, ErrorCode::invalid_argument,
            "row_bits must be 32 or 64");
    fresh = std::exp2(2 * params.log2_sigma);
    const double phi =
        gamma == 0 ? 1.0
                   : static_cast<double>(params.ring.power(gamma) - params.ring.power(gamma - 1));
    gain = gamma == 0 ? 1.0 : 4 * phi * phi;
    // The rounding of rows to 2^row_bits, per row and through packing: gamma = 0 exactly; at
    // gamma >= 1 each lane meets a key coefficient in at most two terms, and a packed
    // coefficient collects the lanes of phi rows, each at most twice. The rows' bodies take
    // back the key's mean (backend::key_mean_map), so the mask's rounding meets the centred key,
    // Var(s), and the rows' roundings are uncorrelated: they add up as the squared weights.
    rounded = row_bits == 64
                  ? 0.0
                  : std::exp2(-2.0 * row_bits) / 12 *
                        (1 + (gamma == 0 ? 1 : 2) * params.ring.N() * rlwe::key_variance(params)) *
                        (gamma == 0 ? 1 : 2 * phi);
    pack = std::exp2((gamma == 0 ? rlwe::estimate_packing_noise(params)
                                 : rlwe::estimate_block_packing_noise(params, gamma))
                         .log2_variance);
    derived = gamma == 0 ? 0.0 : rlwe::keyswitch_variance(params, params.gadget(gamma)) * gain;
  }

  // The variance that rounding b to `bits` bits adds to an uploaded sample, before the weights.
  double upload(std::uint32_t bits) const { return rlwe::word_rounding_variance(bits) * gain; }

  // Round r's variance with upload precisions `bits` and derived powers `derive` (one per
  // uploaded activation; `derive` empty: none derived).
  double variance(std::size_t r, std::span<const std::uint32_t> bits,
                  std::span<const std::uint8_t> derive) const {
    double v = 0;
    for (std::size_t s = 0; s < squares[r].size(); ++s) {
      const double own = !derive.empty() && derive[s] ? derived : 0.0;
      v += (fresh * gain + upload(bits[s]) + own + rounded) * squares[r][s];
    }
    return v + pack;
  }
};

RoundNoise round_noise(const rlwe::ParameterSet& params, const Round& round, double variance) {
  const double half_step = std::exp2(-static_cast<double>(round.bits) - 1);
  auto failure = [&](double v) { return std::erfc(half_step / std::sqrt(2 * v)); };
  RoundNoise rn{std::log2(variance) / 2, failure(variance), 64, 64, 64};
  // The narrowest pair (ties: the smaller variance); the mask's rounding meets the key, so the
  // body usually ends up a few bits narrower than the mask.
  double best = 0;
  for (std::uint32_t k = round.bits + 1; k < 64; ++k) {
    for (std::uint32_t kb = round.bits + 1; kb < 64; ++kb) {
      const double v = variance + rlwe::download_variance(params, k, kb);
      if (failure(v) > kMaxFailureProbability) continue;
      const std::uint32_t total = k + kb, held = rn.download_bits + rn.download_body_bits;
      if (total < held || (total == held && v < best)) {
        rn.download_bits = k;
        rn.download_body_bits = kb;
        best = v;
      }
      break;  // wider bodies only add bits
    }
  }
  return rn;
}

std::vector<RoundNoise> round_noises(const NoiseModel& noise, const Model& model,
                                     const rlwe::ParameterSet& params,
                                     std::span<const std::uint32_t> upload_bits,
                                     std::span<const std::uint8_t> derive) {
  std::vector<RoundNoise> out;
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    out.push_back(round_noise(params, model.rounds()[r], noise.variance(r, upload_bits, derive)));
    out.back().upload_bits = upload_bits[r];
    out.back().derived_powers = !derive.empty() && derive[r];
  }
  return out;
}

}  // namespace

std::vector<RoundNoise> estimate_round_noise(const Model& model, const rlwe::ParameterSet& params,
                                             std::uint32_t gamma, std::uint32_t row_bits,
                                             std::span<const std::uint32_t> upload_bits,
                                             std::span<const std::uint8_t> derived_powers) {
  require(upload_bits.size() == model.rounds().size() &&
              (derived_powers.empty() || derived_powers.size() == model.rounds().size()),
          ErrorCode::invalid_argument, "one upload precision (and form) per round expected");
  for (std::uint32_t b : upload_bits)
    require(b >= 1 && b <= 64, ErrorCode::invalid_argument, "upload precision out of 1..64");
  const bool any = std::any_of(derived_powers.begin(), derived_powers.end(),
                               [](std::uint8_t d) { return d != 0; });
  require(!any || gamma >= 1, ErrorCode::invalid_argument, "powers are derived at gamma >= 1 only");
  return round_noises(NoiseModel(model, params, gamma, row_bits), model, params, upload_bits,
                      derived_powers);
}

std::vector<RoundNoise> estimate_round_noise(const Model& model, const rlwe::ParameterSet& params,
                                             std::uint32_t gamma, std::uint32_t row_bits,
                                             bool derive_powers) {
  const std::size_t rounds = model.rounds().size();
  const NoiseModel noise(model, params, gamma, row_bits);
  // Round r's variance at decryption with exact uploads: the packed result's, plus the rounding
  // of the download to the precision that variance calls for.
  const std::vector<std::uint32_t> exact(rounds, 64);
  std::vector<double> budget(rounds);
  std::vector<std::size_t> sources(rounds, 0);
  for (std::size_t r = 0; r < rounds; ++r) {
    const double v = noise.variance(r, exact, {});
    const RoundNoise rn = round_noise(params, model.rounds()[r], v);
    for (double sq : noise.squares[r])
      sources[r] += sq > 0 ? 1 : 0;
    budget[r] = (v + rlwe::download_variance(params, rn.download_bits, rn.download_body_bits)) /
                16 / static_cast<double>(std::max<std::size_t>(sources[r], 1));
  }
  // Activation s (uploaded in round s) at the fewest bits whose rounding adds at most
  // budget[r] to every round r that reads it; never more than a fresh ciphertext's own precision.
  // Its powers derived by the server where that adds at most another budget[r] to every reader.
  const auto fits = [&](std::size_t s, double added) {
    for (std::size_t r = s; r < rounds; ++r)
      if (added * noise.squares[r][s] > budget[r]) return false;
    return true;
  };
  const std::uint32_t widest = rlwe::upload_bits(params);
  std::vector<std::uint32_t> bits(rounds, widest);
  std::vector<std::uint8_t> derive(rounds, 0);
  for (std::size_t s = 0; s < rounds; ++s) {
    for (std::uint32_t k = model.encoding_bits(s) + 1; k < widest; ++k) {
      if (fits(s, noise.upload(k))) {
        bits[s] = k;
        break;
      }
    }
    derive[s] = derive_powers && gamma >= 1 && fits(s, noise.derived) ? 1 : 0;
  }
  std::vector<RoundNoise> out = round_noises(noise, model, params, bits, derive);
  // A round over the failure bound keeps its sources at a fresh ciphertext's precision, powers
  // uploaded (if it is over even so, the server refuses the model).
  bool widened = false;
  for (std::size_t r = 0; r < rounds; ++r) {
    if (out[r].failure_probability <= kMaxFailureProbability) continue;
    for (std::size_t s = 0; s <= r; ++s) {
      if (noise.squares[r][s] > 0 && (bits[s] != widest || derive[s])) {
        bits[s] = widest;
        derive[s] = 0;
        widened = true;
      }
    }
  }
  return widened ? round_noises(noise, model, params, bits, derive) : out;
}

std::uint32_t narrowest_row_bits(const Model& model, const rlwe::ParameterSet& params,
                                 std::uint32_t gamma) {
  const std::vector<RoundNoise> noise = estimate_round_noise(model, params, gamma, 32);
  const bool fits = std::all_of(noise.begin(), noise.end(), [](const RoundNoise& n) {
    return n.failure_probability <= kMaxFailureProbability;
  });
  return fits ? 32 : 64;
}

}  // namespace safhire::hybrid
