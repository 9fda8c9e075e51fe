// One hybrid inference: the client encrypts its activations, the server runs each
// round's linear block on ciphertexts, shuffles and packs the outputs, and the client decrypts,
// applies ReLU and requantization, and re-encrypts for the next round; after the last round
// (never shuffled) it holds the logits. Level gamma = 0 works on LWE samples (sample extraction,
// pack_lwes); gamma >= 1 on the conjugate module-LWE samples of docs/partial-extraction.md
// (client powers, pack_blocks). Slot s of a round's result is coefficient s mod N of packed
// ciphertext s / N, and the next upload keeps that order: the server undoes its permutation by
// re-indexing, for free.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "safhire/backend/backend.hpp"
#include "safhire/core/random.hpp"
#include "safhire/hybrid/model.hpp"
#include "safhire/hybrid/noise_budget.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::hybrid {

// What the client knows of the model: shapes, precisions and requantization, not weights.
struct ModelInfo {
  std::int64_t activation_max = 0, input_max = 0;
  std::size_t input_size = 0;
  std::vector<std::size_t> outputs;             // per round
  std::vector<std::uint32_t> round_bits;        // per round: precision of its results
  std::vector<std::uint32_t> encoding_bits;     // per activation: precision of its upload
  std::vector<std::optional<Requant>> requant;  // per round; absent for the last
  // Per round: the bits of b that its upload keeps (RoundNoise::upload_bits), set by the server
  // for a session (Server::model_info); ModelInfo::of leaves it empty.
  std::vector<std::uint32_t> upload_bits;
  // Per round: 1 where the upload carries the first power of each chunk only (gamma >= 1; the
  // server derives the others, RoundNoise::derived_powers), else 0; set with upload_bits.
  std::vector<std::uint8_t> derived_powers;
  static ModelInfo of(const Model& model);
};

struct InferenceOptions {
  std::uint32_t gamma = 0;
  rlwe::TreeMode mode = rlwe::TreeMode::fast;
  bool shuffle = true;  // every round but the last
};

// The backend configuration of a session with these options: its gamma and tree mode, and rows
// the narrowest the noise allows (narrowest_row_bits). Chosen here only.
backend::Config session_config(const Model& model, const rlwe::ParameterSet& params,
                               const InferenceOptions& options);

// Client -> server: the activation of one round, chunk by chunk (at gamma >= 1, the
// phi(t^gamma) powers of each chunk in power_elements order).
struct Upload {
  std::uint32_t round = 0;
  std::uint32_t values = 0;
  std::vector<rlwe::SeededCiphertext> ciphertexts;
};

// Server -> client: one round's outputs in slot order, switched to a small modulus.
struct Download {
  std::uint32_t round = 0;
  std::uint32_t values = 0;
  std::vector<rlwe::SwitchedCiphertext> packed;
};

class Client {
 public:
  // Generates the secret key and the evaluation keys; `random` must be a CSPRNG (OsRandom) in
  // production, a SeededRandom in tests.
  Client(const rlwe::ParameterSet& params, InferenceOptions options, core::RandomSource& random);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const rlwe::GaloisKeys& evaluation_keys() const { return keys_; }
  const rlwe::ParameterSet& params() const { return params_; }

  // Starts an inference of `model` (what the server published of it) on `input`.
  Upload start(const ModelInfo& model, std::span<const std::int64_t> input);
  // Decrypts a round's result: the next upload, or nothing once the logits are in.
  std::optional<Upload> receive(const Download& download);
  const std::vector<std::int64_t>& logits() const { return logits_; }
  // The pre-activations of every round as the client saw them (slot order): what it learns.
  const std::vector<std::vector<std::int64_t>>& seen() const { return seen_; }
  // What a client may send in round r instead of the upload receive() computed: any activation
  // in the round's range, in the slot order the server expects (the server cannot tell). The
  // probes of the shuffling attack (attack.hpp); the round must be the next one.
  Upload upload(std::uint32_t round, std::span<const std::int64_t> values);
  // With keep_residuals(true), receive() also keeps each result's noise as the client sees it:
  // its phase minus the message it decoded to (signed, units of 2^-64), in slot order, for the
  // last round received (failures.hpp measures the noise tail with them).
  void keep_residuals(bool on) { keep_residuals_ = on; }
  const std::vector<std::int64_t>& residuals() const { return residuals_; }

 private:
  Upload encrypt(std::uint32_t round, std::span<const std::int64_t> values);

  ModelInfo model_;
  rlwe::ParameterSet params_;
  InferenceOptions options_;
  rlwe::SecretKey key_;
  rlwe::Encryptor encryptor_;
  rlwe::GaloisKeys keys_;
  std::uint32_t next_round_ = 0;
  std::vector<std::int64_t> logits_;
  std::vector<std::vector<std::int64_t>> seen_;
  bool keep_residuals_ = false;
  std::vector<std::int64_t> residuals_;
};

// Server time per step, in seconds.
struct ServerTimes {
  double extract = 0, linear = 0, pack = 0, other = 0;
  double total() const { return extract + linear + pack + other; }
};

// Round r's linear layer for the backend: one group per output position (its channels), output
// o written to the slot s with permutation[s] = o, the bias scaled to the round's precision.
backend::LinearLayer linear_layer(const Model& model, std::size_t r,
                                  std::span<const std::uint32_t> permutation);
// The same from the layer with the identity permutation (`base`, built once per model): only the
// slots change; the weights are shared with `base`.
backend::LinearLayer linear_layer(const backend::LinearLayer& base,
                                  std::span<const std::uint32_t> permutation);
// Every round's layer with the identity permutation: what a server needs of the model's weights,
// shared by the sessions of one service.
using ModelLayers = std::vector<backend::LinearLayer>;
std::shared_ptr<const ModelLayers> model_layers(const Model& model);

class Server {
 public:
  // `keys` are the client's evaluation keys (for params.gadget(gamma)); `session_seed` the
  // secret from which every round's permutation is derived (from a CSPRNG in production);
  // `threads` workers share each round's outputs and packings.
  Server(const Model& model, const rlwe::ParameterSet& params, InferenceOptions options,
         const rlwe::GaloisKeys& keys, const core::Seed& session_seed, unsigned threads = 1);
  // The same on another backend (built for options.gamma and options.mode); `layers`, when
  // given, model_layers(model) built once for many servers.
  Server(const Model& model, const rlwe::ParameterSet& params, InferenceOptions options,
         std::unique_ptr<backend::Backend> backend, const core::Seed& session_seed,
         std::shared_ptr<const ModelLayers> layers = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Download process(const Upload& upload);

  // Noise flooding of the results (a mitigation of the shuffling attack, attack.hpp): every
  // pre-activation the client decrypts gains an integer uniform in [-bound, bound], fresh per
  // session and round (from the session's seed), added to the layer's bias words. 0: none.
  // Each flooded round prepares its layer anew (the weights are copied); the accuracy it costs
  // is the plaintext evaluator's with the same noise (evaluate_flooded).
  void set_flood(std::uint32_t bound) { flood_ = bound; }

  // The permutation of round r: slot s carries output permutation(r)[s] (identity when not
  // shuffled, and for the last round).
  std::vector<std::uint32_t> permutation(std::uint32_t round) const;

  const ServerTimes& times() const { return times_; }
  // What the client needs of the model for this session: ModelInfo::of(model) with the upload
  // precisions and forms of estimate_round_noise for the session's gamma, rows and backend.
  const ModelInfo& model_info() const { return info_; }
  // The noise estimate this session's download precisions and upload forms come from
  // (estimate_round_noise for its gamma, rows and backend), one per round.
  const std::vector<RoundNoise>& noise_estimate() const { return noise_; }
  std::uint64_t key_switches() const;
  std::string backend_name() const;

 private:
  const Model* model_;
  rlwe::ParameterSet params_;
  InferenceOptions options_;
  core::Seed seed_;
  std::unique_ptr<backend::Backend> backend_;
  std::shared_ptr<const ModelLayers> layers_;
  ModelInfo info_;
  std::vector<RoundNoise> noise_;  // per round: the download precisions too
  // Received activations (row i is activation value i); dropped after their last reader.
  std::vector<std::unique_ptr<backend::Rows>> activations_;
  std::vector<std::uint32_t> previous_permutation_;
  std::uint32_t next_round_ = 0;
  std::uint32_t flood_ = 0;
  ServerTimes times_;
};

}  // namespace safhire::hybrid
