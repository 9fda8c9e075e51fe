#include "safhire/hybrid/inference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/rlwe.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::hybrid {

namespace {

using rlwe::u64;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::size_t chunks_for(std::size_t values, std::size_t n) {
  return (values + n - 1) / n;
}

std::vector<std::uint32_t> identity(std::size_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<std::uint32_t>(i);
  return p;
}

// A signed integer on the torus at scale 2^(64-b) (two's complement wraps exactly).
u64 scaled(std::int64_t v, std::uint32_t bits) {
  return static_cast<u64>(v) << (64 - bits);
}

}  // namespace

backend::Config session_config(const Model& model, const rlwe::ParameterSet& params,
                               const InferenceOptions& options) {
  return {options.gamma, options.mode, narrowest_row_bits(model, params, options.gamma)};
}

ModelInfo ModelInfo::of(const Model& model) {
  ModelInfo info;
  info.activation_max = model.activation_max();
  info.input_max = model.input_max();
  info.input_size = model.activation(0).size();
  for (const Round& r : model.rounds()) {
    info.outputs.push_back(r.output.size());
    info.round_bits.push_back(r.bits);
    info.requant.push_back(r.requant);
  }
  for (std::size_t s = 0; s < model.rounds().size(); ++s)
    info.encoding_bits.push_back(model.encoding_bits(s));
  return info;
}

// ---- Client -----------------------------------------------------------------------------------

namespace {

// The evaluation keys: those of packing at gamma in the session's mode and, at gamma >= 1, the
// powers' (for derived powers): rlwe::galois_elements.
rlwe::GaloisKeys client_keys(const rlwe::SecretKey& key, const InferenceOptions& options,
                             core::RandomSource& random) {
  const rlwe::ParameterSet& params = key.params();
  require(options.gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  return rlwe::make_galois_keys(key, params.gadget(options.gamma), random,
                                rlwe::galois_elements(params.ring, options.gamma, options.mode));
}

}  // namespace

Client::Client(const rlwe::ParameterSet& params, InferenceOptions options,
               core::RandomSource& random)
    : params_(params),
      options_(options),
      key_(params_, random),
      encryptor_(key_, random),
      keys_(client_keys(key_, options, random)) {}

Upload Client::encrypt(std::uint32_t round, std::span<const std::int64_t> values) {
  Upload up;
  up.round = round;
  up.values = static_cast<std::uint32_t>(values.size());
  const std::uint32_t bits = model_.encoding_bits.at(round), kept = model_.upload_bits.at(round);
  for (const ring::TorusPoly& chunk : rlwe::encode_chunks(params_.ring, values, bits)) {
    if (options_.gamma == 0) {
      up.ciphertexts.push_back(encryptor_.encrypt_seeded(chunk.coeffs(), kept));
    } else {
      if (model_.derived_powers.at(round)) {
        up.ciphertexts.push_back(
            rlwe::encrypt_first_power(encryptor_, chunk.coeffs(), options_.gamma, kept));
        continue;
      }
      for (auto& c : rlwe::encrypt_powers(encryptor_, chunk.coeffs(), options_.gamma, kept))
        up.ciphertexts.push_back(std::move(c));
    }
  }
  return up;
}

Upload Client::start(const ModelInfo& model, std::span<const std::int64_t> input) {
  for (std::uint32_t b : model.round_bits) {
    require(b >= 2 && b <= 32, ErrorCode::invalid_argument, "round precision out of range");
  }
  require(!model.outputs.empty() && model.round_bits.size() == model.outputs.size() &&
              model.requant.size() == model.outputs.size() &&
              model.encoding_bits.size() == model.outputs.size() &&
              model.upload_bits.size() == model.outputs.size() &&
              model.derived_powers.size() == model.outputs.size(),
          ErrorCode::invalid_argument,
          "inconsistent model description (upload precisions come from the server's session)");
  for (std::size_t r = 0; r < model.outputs.size(); ++r) {
    require(model.upload_bits[r] > model.encoding_bits[r] && model.upload_bits[r] <= 64,
            ErrorCode::invalid_argument, "upload precision out of range");
    require(model.derived_powers[r] <= 1 && (model.derived_powers[r] == 0 || options_.gamma >= 1),
            ErrorCode::invalid_argument, "derived powers at gamma = 0");
  }
  model_ = model;
  require(input.size() == model_.input_size, ErrorCode::invalid_argument,
          "client input: " + std::to_string(model_.input_size) + " values expected");
  for (std::int64_t v : input) {
    if (v < 0 || v > model_.input_max)
      throw Error(ErrorCode::invalid_argument,
                  "client input value " + std::to_string(v) + " out of range");
  }
  next_round_ = 0;
  seen_.clear();
  logits_.clear();
  return encrypt(0, input);
}

std::optional<Upload> Client::receive(const Download& d) {
  require(d.round == next_round_ && d.round < model_.outputs.size(), ErrorCode::malformed_input,
          "download for round " + std::to_string(d.round) + ", expected round " +
              std::to_string(next_round_));
  const std::size_t n = model_.outputs[d.round], N = params_.ring.N();
  require(d.values == n && d.packed.size() == chunks_for(n, N), ErrorCode::malformed_input,
          "download of round " + std::to_string(d.round) + ": wrong value or ciphertext count");
  const std::uint32_t bits = model_.round_bits[d.round];
  std::vector<std::int64_t> acc;
  acc.reserve(n);
  residuals_.clear();
  for (const rlwe::SwitchedCiphertext& sw : d.packed) {
    const ring::TorusPoly phase = encryptor_.phase(rlwe::expand(params_.ring, sw));
    for (std::size_t j = 0; j < N && acc.size() < n; ++j) {
      acc.push_back(rlwe::decode_message(phase[j], bits));
      if (keep_residuals_)
        residuals_.push_back(
            static_cast<std::int64_t>(phase[j] - rlwe::encode_message(acc.back(), bits)));
    }
  }
  seen_.push_back(acc);
  ++next_round_;
  const auto& rq = model_.requant[d.round];
  if (!rq) {
    logits_ = std::move(acc);
    return std::nullopt;
  }
  for (std::int64_t& v : acc)
    v = requantize(v, *rq, model_.activation_max);
  return encrypt(next_round_, acc);
}

Upload Client::upload(std::uint32_t round, std::span<const std::int64_t> values) {
  require(!model_.outputs.empty(), ErrorCode::invalid_argument, "upload before start");
  require(round == next_round_ && round < model_.outputs.size(), ErrorCode::invalid_argument,
          "upload for round " + std::to_string(round) + ", expected round " +
              std::to_string(next_round_));
  const std::size_t n = round == 0 ? model_.input_size : model_.outputs[round - 1];
  const std::int64_t most = round == 0 ? model_.input_max : model_.activation_max;
  require(
      values.size() == n, ErrorCode::invalid_argument,
      "upload of round " + std::to_string(round) + ": " + std::to_string(n) + " values expected");
  for (const std::int64_t v : values)
    require(v >= 0 && v <= most, ErrorCode::invalid_argument,
            "upload value " + std::to_string(v) + " out of range");
  return encrypt(round, values);
}

// ---- Server -----------------------------------------------------------------------------------

backend::LinearLayer linear_layer(const Model& model, std::size_t r,
                                  std::span<const std::uint32_t> permutation) {
  const Round& round = model.rounds().at(r);
  const std::size_t n = round.output.size(), hw = std::size_t{round.output.h} * round.output.w;
  require(permutation.size() == n, ErrorCode::invalid_argument,
          "linear layer: permutation of the wrong size");
  std::vector<std::uint32_t> slot_of(n, 0);
  for (std::size_t s = 0; s < n; ++s)
    slot_of.at(permutation[s]) = static_cast<std::uint32_t>(s);
  auto weights = std::make_shared<backend::LayerWeights>();
  backend::LinearLayer layer;
  layer.slot.reserve(n);
  weights->bias.reserve(n);
  weights->tap_start.reserve(n + 1);
  std::vector<Tap> taps_of;
  // One group per output position: its channels read the same input window.
  for (std::size_t p = 0; p < hw; ++p) {
    for (std::uint32_t c = 0; c < round.output.c; ++c) {
      const std::size_t o = c * hw + p;
      taps(model, r, o, taps_of);
      weights->taps.insert(weights->taps.end(), taps_of.begin(), taps_of.end());
      weights->tap_start.push_back(static_cast<std::uint32_t>(weights->taps.size()));
      layer.slot.push_back(slot_of[o]);
      weights->bias.push_back(scaled(round.bias[c], round.bits));
    }
    weights->group_start.push_back(static_cast<std::uint32_t>(layer.slot.size()));
  }
  layer.weights = std::move(weights);
  return layer;
}

Server::Server(const Model& model, const rlwe::ParameterSet& params, InferenceOptions options,
               const rlwe::GaloisKeys& keys, const core::Seed& session_seed, unsigned threads)
    : Server(
          model, params, options,
          backend::make_cpu_backend(params, session_config(model, params, options), keys, threads),
          session_seed) {}

backend::LinearLayer linear_layer(const backend::LinearLayer& base,
                                  std::span<const std::uint32_t> permutation) {
  const std::size_t n = base.outputs();
  require(permutation.size() == n, ErrorCode::invalid_argument,
          "linear layer: permutation of the wrong size");
  std::vector<std::uint32_t> slot_of(n, 0);
  for (std::size_t s = 0; s < n; ++s)
    slot_of.at(permutation[s]) = static_cast<std::uint32_t>(s);
  backend::LinearLayer layer{base.weights, base.slot};  // the weights shared, not copied
  for (std::uint32_t& slot : layer.slot)
    slot = slot_of.at(slot);
  return layer;
}

std::shared_ptr<const ModelLayers> model_layers(const Model& model) {
  auto layers = std::make_shared<ModelLayers>();
  for (std::size_t r = 0; r < model.rounds().size(); ++r)
    layers->push_back(linear_layer(model, r, identity(model.rounds()[r].output.size())));
  return layers;
}

Server::Server(const Model& model, const rlwe::ParameterSet& params, InferenceOptions options,
               std::unique_ptr<backend::Backend> backend, const core::Seed& session_seed,
               std::shared_ptr<const ModelLayers> layers)
    : model_(&model),
      params_(params),
      options_(options),
      seed_(session_seed),
      backend_(std::move(backend)),
      layers_(layers ? std::move(layers) : model_layers(model)) {
  require(backend_ != nullptr, ErrorCode::invalid_argument, "server: no backend");
  require(layers_->size() == model.rounds().size(), ErrorCode::invalid_argument,
          "server: layers of another model");
  const backend::Config config = backend_->config();
  require(config.gamma == options.gamma && config.mode == options.mode, ErrorCode::invalid_argument,
          "server: the backend was built for other options");
  noise_ = estimate_round_noise(model, params_, options.gamma, config.row_bits,
                                backend_->derives_powers());
  info_ = ModelInfo::of(model);
  for (const RoundNoise& rn : noise_) {
    info_.upload_bits.push_back(rn.upload_bits);
    info_.derived_powers.push_back(rn.derived_powers ? 1 : 0);
  }
  for (std::size_t r = 0; r < noise_.size(); ++r) {
    require(noise_[r].failure_probability <= kMaxFailureProbability, ErrorCode::invalid_parameters,
            "round " + std::to_string(r) + " of " + model.name() + " at " +
                std::to_string(model.rounds()[r].bits) + " bits: estimated noise 2^" +
                std::to_string(noise_[r].log2_std) + " is too large for " + params_.name +
                " at gamma = " + std::to_string(options.gamma) + " with " +
                std::to_string(config.row_bits) + "-bit rows");
  }
  activations_.resize(model.rounds().size());
}

Server::~Server() {
  core::secure_zero(seed_);  // the session's permutations derive from it
}

std::uint64_t Server::key_switches() const {
  return backend_->key_switches();
}

std::string Server::backend_name() const {
  return backend_->name();
}

std::vector<std::uint32_t> Server::permutation(std::uint32_t round) const {
  const std::size_t n = model_->rounds().at(round).output.size();
  if (!options_.shuffle || round + 1 == model_->rounds().size()) return identity(n);
  core::SeededRandom stream(core::derive_seed(seed_, round, "SFHshufl"));
  return core::random_permutation(stream, static_cast<std::uint32_t>(n));
}

Download Server::process(const Upload& up) {
  require(up.round == next_round_ && up.round < model_->rounds().size(), ErrorCode::malformed_input,
          "upload for round " + std::to_string(up.round) + ", expected round " +
              std::to_string(next_round_));
  const std::uint32_t r = up.round;
  const std::size_t n = model_->activation(r).size(), N = params_.ring.N();
  const std::size_t per_chunk = options_.gamma == 0 || info_.derived_powers[r]
                                    ? 1
                                    : rlwe::power_elements(params_.ring, options_.gamma).size();
  const std::size_t expected = chunks_for(n, N) * per_chunk;
  require(up.values == n && up.ciphertexts.size() == expected, ErrorCode::malformed_input,
          "upload of round " + std::to_string(r) + ": " + std::to_string(n) + " values in " +
              std::to_string(expected) + " ciphertexts expected");
  for (const auto& c : up.ciphertexts)
    require(c.b.ring() == params_.ring, ErrorCode::size_mismatch, "upload: wrong ring");
  if (r == 0) previous_permutation_ = identity(n);

  // Slot s carries activation index previous_permutation_[s]: un-shuffling is where a row goes.
  auto start = Clock::now();
  activations_[r] = backend_->extract(up.ciphertexts, previous_permutation_);
  backend_->synchronize();
  times_.extract += seconds_since(start);

  start = Clock::now();
  const std::vector<std::uint32_t> perm = permutation(r);
  backend::LinearLayer layer = linear_layer((*layers_)[r], perm);
  if (flood_ != 0) {
    auto flooded = std::make_shared<backend::LayerWeights>(*layer.weights);
    core::SeededRandom stream(core::derive_seed(seed_, r, "SFHflood"));
    const std::uint32_t bits = model_->rounds()[r].bits;
    for (u64& b : flooded->bias)
      b += scaled(core::uniform_in(stream, -std::int64_t{flood_}, flood_), bits);
    layer.weights = std::move(flooded);
  }
  std::vector<const backend::Rows*> sources;
  for (const auto& a : activations_)
    sources.push_back(a.get());
  times_.other += seconds_since(start);

  start = Clock::now();
  const std::unique_ptr<backend::Rows> out = backend_->linear(layer, sources);
  backend_->synchronize();
  times_.linear += seconds_since(start);

  start = Clock::now();
  Download d;
  d.round = r;
  d.values = static_cast<std::uint32_t>(layer.outputs());
  d.packed = backend_->pack(*out, noise_[r].download_bits, noise_[r].download_body_bits);
  times_.pack += seconds_since(start);

  start = Clock::now();
  previous_permutation_ = perm;
  // Activations no later round reads are dropped.
  for (std::size_t s = 0; s <= r; ++s) {
    if (activations_[s] && model_->last_use(s) <= r) activations_[s].reset();
  }
  times_.other += seconds_since(start);
  ++next_round_;
  return d;
}

}  // namespace safhire::hybrid
