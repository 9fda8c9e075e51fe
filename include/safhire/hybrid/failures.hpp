// Decryption failures, measured. Whole inferences run in process (a fresh client key per
// inference, the server as a session builds it, the shuffle on): every result the client decrypts
// has gone through a whole round (the upload's rounding, extraction, the model's linear layer,
// packing, the download's rounding) and is compared with the plaintext evaluator's accumulator
// for the same inputs (round_accumulators, un-permuted with the server's permutation). Its noise,
// the phase minus the decoded message (Client::residuals), is set against the estimate the server
// chose its precisions from (Server::noise_estimate plus the download's rounding): a result
// decrypts wrongly when its noise reaches half a step, estimated per result at most
// kMaxFailureProbability.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "safhire/hybrid/inference.hpp"

namespace safhire::hybrid {

struct RoundFailures {
  std::uint64_t results = 0, wrong = 0;
  // The estimate at decryption: the packed result's variance plus the download's rounding
  // (rlwe::download_variance at the session's download precisions), torus units.
  double estimated_log2_std = 0;
  double estimated_failure = 0;  // per result: erfc(half step / (sqrt(2) std))
  double measured_log2_std = 0;  // root mean square of the residuals
  double max_sigmas = 0;         // the largest |residual|, in estimated standard deviations
  double half_step_sigmas = 0;   // where a result decrypts wrongly, in the same unit
};

struct FailureReport {
  std::uint64_t inferences = 0, results = 0, wrong = 0;
  std::vector<RoundFailures> rounds;
  // tail[i]: the results whose |residual| is at least i * kTailStep estimated standard deviations
  // of their round (tail[0] = results). A Gaussian with the estimated variance has
  // results * erfc(x / sqrt(2)) there.
  static constexpr double kTailStep = 0.25;
  std::vector<std::uint64_t> tail;
  // The wrong results the estimate predicts: the sum over rounds of results * estimated_failure.
  double expected_wrong() const;
};

// Runs inferences of `model` on `images` (in turn, from the first again when they run out) until
// at least `min_results` results were decrypted, and counts the wrong ones. `progress`
// (optional) is called after each inference with the report so far.
FailureReport measure_failures(const Model& model, const rlwe::ParameterSet& params,
                               InferenceOptions options,
                               std::span<const std::vector<std::int64_t>> images,
                               std::uint64_t min_results, unsigned threads,
                               core::RandomSource& random,
                               const std::function<void(const FailureReport&)>& progress = {});

}  // namespace safhire::hybrid
