#include "safhire/rlwe/noise.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/rlwe/keyswitch.hpp"

namespace safhire::rlwe {

namespace {

double count_mean_products(const ring::RingParams& ring) {
  const std::int64_t N = ring.N(), M = ring.M(), m = ring.m();
  auto pairs = [&](std::int64_t e) -> double {
    if (e < 0 || e > 2 * N - 2) return 0;
    return static_cast<double>(std::min(e, 2 * N - 2 - e) + 1);
  };
  double total = 0;
  for (std::int64_t l = 0; l < N; ++l)
    total += pairs(l) + pairs(l + M) + pairs(N + l % m);
  return total / static_cast<double>(N);
}

}  // namespace

// Counted once per ring: the noise budget's search over download precisions asks for it
// thousands of times per session (0.2 s of an e2e/resnet20/b8/gamma2 inference before).
double mean_product_count(const ring::RingParams& ring) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint32_t, std::uint32_t>, double> counted;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(ring.t(), ring.a());
  const auto it = counted.find(key);
  if (it != counted.end()) return it->second;
  return counted[key] = count_mean_products(ring);
}

double digit_second_moment(std::uint32_t base) {
  const double D = base;
  return base % 2 == 0 ? (D * D + 2) / 12 : (D * D - 1) / 12;
}

namespace {

double rounding_variance(const Gadget& gadget) {
  return std::exp2(-2 * gadget.log2_precision()) / 12;
}

double key_noise_term(const ParameterSet& params, const Gadget& gadget) {
  const double key_variance = std::exp2(2 * params.log2_sigma) + key_transport_variance(params) +
                              key_rounding_variance(params, key_split(params, gadget));
  return mean_product_count(params.ring) * gadget.levels * digit_second_moment(gadget.base) *
         key_variance;
}

}  // namespace

double key_second_moment(const ParameterSet& params) {
  return params.key == KeyDistribution::binary ? 0.5 : 2.0 / 3.0;
}

double key_variance(const ParameterSet& params) {
  return params.key == KeyDistribution::binary ? 0.25 : 2.0 / 3.0;
}

double keyswitch_variance(const ParameterSet& params, const Gadget& gadget) {
  return mean_product_count(params.ring) * key_second_moment(params) * rounding_variance(gadget) +
         key_noise_term(params, gadget);
}

double keyswitch_variance_for_key(const ParameterSet& params, const Gadget& gadget,
                                  std::span<const std::uint64_t> from_key) {
  // The squared Frobenius norm of a -> a s' equals the sum over i of ||X^i s' mod Phi_M||^2.
  const ring::RingParams& ring = params.ring;
  std::vector<std::uint64_t> column(ring.N());
  double frobenius = 0;
  for (std::uint32_t i = 0; i < ring.N(); ++i) {
    ring::mul_monomial(ring, from_key, i, column, ring::TorusArith{});
    for (std::uint64_t x : column) {
      const auto v = static_cast<double>(static_cast<std::int64_t>(x));
      frobenius += v * v;
    }
  }
  return frobenius / ring.N() * rounding_variance(gadget) + key_noise_term(params, gadget);
}

namespace {

NoiseEstimate estimate(const ParameterSet& params, double variance) {
  // P(|e| >= 2^-(b+1)) for e ~ N(0, variance).
  const double threshold = std::exp2(-static_cast<double>(params.message_bits) - 1);
  return {std::log2(variance), std::erfc(threshold / std::sqrt(2 * variance))};
}

}  // namespace

NoiseEstimate estimate_extraction_noise(const ParameterSet& params, std::uint32_t gamma) {
  const ring::RingParams& r = params.ring;
  const double v_ks = keyswitch_variance(params, params.gadget(gamma));
  if (gamma == 0) {
    const double f = r.M();
    return estimate(params, 0.4 * f * f * v_ks);
  }
  const double f = std::pow(static_cast<double>(r.t()), static_cast<double>(r.a() - gamma));
  return estimate(params, 1.7 / (r.t() + 1) * f * f * v_ks);
}

NoiseEstimate estimate_block_packing_noise(const ParameterSet& params, std::uint32_t gamma) {
  require(gamma >= 1 && gamma < params.ring.a(), ErrorCode::invalid_argument,
          "block packing needs 1 <= gamma < a");
  return estimate_extraction_noise(params, gamma);
}

NoiseEstimate estimate_packing_noise(const ParameterSet& params) {
  const double f = params.ring.M();
  return estimate(params, 0.15 * f * f * keyswitch_variance(params, params.gadget(0)));
}

double switched_variance(const ParameterSet& params, std::uint32_t bits) {
  return download_variance(params, bits, bits);
}

double download_variance(const ParameterSet& params, std::uint32_t bits, std::uint32_t body_bits) {
  return (std::exp2(-2.0 * body_bits) +
          std::exp2(-2.0 * bits) * mean_product_count(params.ring) * key_second_moment(params)) /
         12;
}

double key_transport_variance(const ParameterSet& params) {
  return word_rounding_variance(key_bits(params));
}

double key_rounding_variance(const ParameterSet& params, ring::LimbSplit split) {
  return split.limbs == 2 ? 0.0 : switched_variance(params, 64 - split.shift);
}

}  // namespace safhire::rlwe
