// Noise formulas of key switching, to compare with what NoiseProbe measures and
// to estimate decryption failures. Variances are relative to the torus.
#pragma once

#include <cstdint>
#include <span>

#include "safhire/ring/product.hpp"
#include "safhire/ring/ring_params.hpp"
#include "safhire/rlwe/params.hpp"

namespace safhire::rlwe {

// The secret key's coefficients: E[s^2] (binary 1/2, ternary 2/3) and Var(s) = E[(s - E[s])^2]
// (binary 1/4, ternary 2/3). Roundings whose error meets the key with its mean taken back
// (backend::key_mean_map) see Var(s); the others E[s^2].
double key_second_moment(const ParameterSet& params);
double key_variance(const ParameterSet& params);

// Mean over the coefficients l of cnt(l) = n(l) + n(l + M) + n(N + l mod m), where
// n(e) = #{(i, j) in [0, N)^2 : i + j = e}: the number of +-1 terms a coefficient of a product
// mod Phi_M collects (1.375 N for 3^7).
double mean_product_count(const ring::RingParams& ring);

// E[d^2] of a balanced digit in base D: (D^2 + 2)/12 for even D, (D^2 - 1)/12 for odd D.
double digit_second_moment(std::uint32_t base);

// V_KS = cnt (E[s^2] / (12 D^(2l)) + l E[d^2] sigma_k^2), averaged over the
// coefficients, with E[s^2] = 1/2 (binary) or 2/3 (ternary). It treats the key's coefficients as
// independent and centred; a binary key has mean 1/2, which makes the rounding term smaller than
// this (by up to 0.8 bits for 7^4): an upper bound for binary keys. sigma_k^2 is the key's noise
// variance sigma^2 plus the rounding of its b to key_bits (key_transport_variance) and what the
// server's rounding of its words adds (key_rounding_variance).
double keyswitch_variance(const ParameterSet& params, const Gadget& gadget);

// The same, with the rounding term evaluated exactly for the source key s' (its coefficients as
// torus words): E over l of ||row l of the multiplication-by-s' matrix||^2 / (12 D^(2l)).
// O(N^2): for tests and analysis.
double keyswitch_variance_for_key(const ParameterSet& params, const Gadget& gadget,
                                  std::span<const std::uint64_t> from_key);

// Predicted noise of what the trees output, and the probability that one coefficient decrypts
// wrongly (|error| >= 2^-(b+1), a Gaussian tail). Var_out ~ c F^2 V_KS with
// F the trace factor (M for gamma = 0 and for packing LWE samples, t^(a-gamma) for gamma >= 1)
// and c at the upper end of the measured ranges: 0.4 for extraction at gamma = 0, 1.7/(t+1) at
// gamma >= 1, 0.15 for packing; V_KS from keyswitch_variance (itself an upper bound for binary
// keys). Measured values sit 0.3-2 bits below these (tests/rlwe/test_noise.cpp).
struct NoiseEstimate {
  double log2_variance;
  double failure_probability;  // per coefficient
};
NoiseEstimate estimate_extraction_noise(const ParameterSet& params, std::uint32_t gamma);
NoiseEstimate estimate_packing_noise(const ParameterSet& params);
// Packing t^(a-gamma) blocks of R_gamma (TraceTrees::pack_blocks, gamma >= 1): the top a - gamma
// levels only, c F^2 V_KS with F = t^(a-gamma) and c = 1.7/(t+1) as for extraction at that
// level; measured 0.6-1.5 bits below on the default sets.
NoiseEstimate estimate_block_packing_noise(const ParameterSet& params, std::uint32_t gamma);

// Variance (torus units) that modulus_switch to 2^bits adds to each phase coefficient:
// 2^-2bits / 12 (1 + mean_product_count E[s^2]): the rounding of b plus the rounded mask times
// the key (E[s^2] = 1/2 binary, 2/3 ternary). Treating the key as centred makes this an upper
// bound for binary keys (measured 0.5-0.9 bits below, tests/rlwe/test_noise.cpp).
double switched_variance(const ParameterSet& params, std::uint32_t bits);
// The same for modulus_switch(ct, bits, body_bits): 2^-2body_bits / 12 for b plus
// 2^-2bits / 12 mean_product_count E[s^2] for the mask.
double download_variance(const ParameterSet& params, std::uint32_t bits, std::uint32_t body_bits);

// What the rounding of a key's b to key_bits(params) adds to each coefficient of its noise:
// 2^-2 key_bits / 12, at most sigma^2 / 256.
double key_transport_variance(const ParameterSet& params);

// What a one-limb key split (rlwe::key_split) adds to each coefficient of a key's noise: both key
// words rounded to multiples of 2^(shift - 64), the noise e + r_b - r_a s, i.e.
// switched_variance(params, 64 - shift). 0 for the exact two-limb split.
double key_rounding_variance(const ParameterSet& params, ring::LimbSplit split);

}  // namespace safhire::rlwe
