// The noise budget of a hybrid inference: each round's estimated noise at decryption, the
// failure probability per result, and the narrowest upload, download and row precisions that
// keep it within kMaxFailureProbability. The server sizes a session's messages by it, `safhire
// plan` prints it, and tests/hybrid/test_row_bits.cpp and `safhire failures` measure it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/hybrid/model.hpp"
#include "safhire/rlwe/params.hpp"

namespace safhire::hybrid {

// The estimated noise of each round's downloaded results and the probability that one of them
// decrypts wrongly at the round's precision: fresh noise through the weights (sigma^2 times the
// largest sum of squared weights of an output, pool windows expanded; times 4 phi(t^gamma)^2 at
// gamma >= 1, the measured upper end of docs/partial-extraction.md), plus packing
// (rlwe::estimate_packing_noise, or estimate_block_packing_noise at gamma >= 1).
struct RoundNoise {
  double log2_std = 0;
  double failure_probability = 0;  // per result
  // The download's moduli: a rounded to 2^-download_bits and b to 2^-download_body_bits, the
  // pair with the fewest bits in all that keeps the failure probability within
  // kMaxFailureProbability once the switch's rounding (rlwe::download_variance) is added.
  std::uint32_t download_bits = 64;
  std::uint32_t download_body_bits = 64;
  // The bits of b kept in this round's upload (the activation it uploads, whichever rounds read
  // it): rounding b to 2^-k adds 2^-2k / 12 per sample, through the same weights and gain as
  // fresh noise.
  std::uint32_t upload_bits = 64;
  // Whether the server derives this upload's powers from the first of each chunk (gamma >= 1):
  // each derived power carries one key switch's noise (rlwe::keyswitch_variance), through the
  // same weights and gain as fresh noise.
  bool derived_powers = false;
};
// With row_bits = 32 (backend::Config) the rounding of the rows to 2^32 adds, through the same
// weights, 2^-64/12 (1 + N Var(s)) per row at gamma = 0 (a row is an LWE sample over the key's N
// coefficients: exact), and 2^-64/12 (1 + 2 N Var(s)) 2 phi(t^gamma) at gamma >= 1 (a clean
// sample's lane meets each key coefficient in at most two terms, and a packed coefficient collects
// the lanes of phi rows, each at most twice). Var(s), the centred key's (rlwe::key_variance: 1/4
// binary), because the rows' bodies take back the key's mean (backend::key_mean_map), which
// also leaves the rows' roundings uncorrelated, so they add up as the squared weights. Measured
// on default-b8 and default-b12 with strided, neighbouring and random taps: at gamma = 0 the
// estimate itself (random taps within 0.05 bits), at gamma 1 and 2 1.1 to 1.6 bits below
// (tests/hybrid/test_row_bits.cpp).
//
// The uploads are as narrow as that noise allows: activation s travels with the fewest bits of b
// (at most rlwe::upload_bits, a fresh ciphertext's own precision) whose rounding adds, in every
// round r that reads it, at most 1/16 of r's variance at decryption (the packed result's with
// exact uploads plus the download's rounding), shared among r's sources. The downloads' bits
// follow from the total. With derive_powers (a backend that derives_powers(), gamma >= 1), an
// upload's powers other than the first are derived by the server where the key switch's noise
// adds at most another such share to every reader: the upload shrinks by phi(t^gamma). A round
// that would then exceed kMaxFailureProbability keeps its sources at rlwe::upload_bits, powers
// uploaded.
std::vector<RoundNoise> estimate_round_noise(const Model& model, const rlwe::ParameterSet& params,
                                             std::uint32_t gamma, std::uint32_t row_bits = 64,
                                             bool derive_powers = false);
// The same with given upload precisions, one per round (64: b exact), and derived powers (one
// flag per round; empty: none).
std::vector<RoundNoise> estimate_round_noise(const Model& model, const rlwe::ParameterSet& params,
                                             std::uint32_t gamma, std::uint32_t row_bits,
                                             std::span<const std::uint32_t> upload_bits,
                                             std::span<const std::uint8_t> derived_powers = {});
// The row precision for a server's backend: 32 when every round's failure estimate with 32-bit
// rows stays within kMaxFailureProbability, else 64.
std::uint32_t narrowest_row_bits(const Model& model, const rlwe::ParameterSet& params,
                                 std::uint32_t gamma);
// The server refuses a model and set whose estimate exceeds this per result.
inline constexpr double kMaxFailureProbability = 0x1p-32;

}  // namespace safhire::hybrid
