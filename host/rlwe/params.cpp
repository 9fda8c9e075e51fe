#include "safhire/rlwe/params.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::rlwe {

double Gadget::log2_precision() const {
  return static_cast<double>(levels) * std::log2(static_cast<double>(base));
}

SecurityEstimate estimate_security(std::uint32_t n, double log2_sigma) {
  const double gap = -log2_sigma;
  const double gap_128_current = 0.025697 * n - 2.6759;
  const double gap_128_2022 = 0.026405 * n - 2.4826;
  return {128.0 * gap_128_current / gap, 128.0 * gap_128_2022 / gap};
}

void validate_gadget(const Gadget& g, const std::string& what) {
  require(g.base >= 2 && g.levels >= 1, ErrorCode::invalid_parameters,
          what + ": gadget needs base >= 2 and levels >= 1, got D = " + std::to_string(g.base) +
              ", l = " + std::to_string(g.levels));
  core::u128 power = 1;
  for (std::uint32_t i = 0; i < g.levels; ++i) {
    power *= g.base;
    require(power <= (static_cast<core::u128>(1) << 64), ErrorCode::invalid_parameters,
            what + ": D^l = " + std::to_string(g.base) + "^" + std::to_string(g.levels) +
                " exceeds 2^64, the torus");
  }
}

ParameterSet::ParameterSet(std::string name_, std::uint16_t id_, ring::RingParams ring_,
                           std::uint32_t message_bits_, double log2_sigma_, Gadget gadget_full_,
                           Gadget gadget_partial_, KeyDistribution key_)
    : name(std::move(name_)),
      id(id_),
      ring(ring_),
      message_bits(message_bits_),
      log2_sigma(log2_sigma_),
      gadget_full(gadget_full_),
      gadget_partial(gadget_partial_),
      key(key_) {
  const std::string what = "parameter set '" + name + "'";
  require(!name.empty(), ErrorCode::invalid_parameters, "a parameter set needs a name");
  require(!ring.power_of_two(), ErrorCode::invalid_parameters,
          what + ": the hybrid scheme runs on odd prime-power rings (radix-t NTT); " + ring.name() +
              " is a CKKS ring");
  require(message_bits >= 1 && message_bits <= 32, ErrorCode::invalid_parameters,
          what + ": message bits must be in [1, 32], got " + std::to_string(message_bits));
  require(log2_sigma >= -64 && log2_sigma <= -8, ErrorCode::invalid_parameters,
          what + ": log2(sigma) must be in [-64, -8], got " + std::to_string(log2_sigma));
  validate_gadget(gadget_full, what);
  validate_gadget(gadget_partial, what);
}

double ParameterSet::sigma() const {
  return std::exp2(log2_sigma);
}

void ParameterSet::check_security(SecurityPolicy policy) const {
  const SecurityEstimate est = security();
  if (policy == SecurityPolicy::allow_insecure || est.bits >= 128.0) return;
  throw Error(ErrorCode::insecure_parameters,
              "parameter set '" + name + "' is estimated at " + std::to_string(est.bits) +
                  " bits (" + std::string(kSecurityMethod) +
                  "), below 128; pass SecurityPolicy::allow_insecure to use it anyway");
}

std::span<const ParameterSet> builtin_parameter_sets() {
  using ring::RingParams;
  static const std::vector<ParameterSet> sets = {
      // The seed paper's Table 4, exactly.
      ParameterSet("paper-b8", 1, RingParams(3, 7), 8, -36, {512, 3}, {512, 3}),
      ParameterSet("paper-b12", 2, RingParams(7, 4), 12, -51, {4096, 3}, {65536, 2}),
      ParameterSet("paper-b16", 3, RingParams(5, 5), 16, -51, {310, 5}, {310, 4}),
      // 128 bits on the current curve. 3^7: sigma 2^-34.5 (129 bits), and base 2^6 with 5
      // levels, which keeps the key-switching noise (V_KS, rlwe/noise.hpp) about 2^6 below the
      // paper's despite the wider key noise. 7^4: sigma 2^-50 (128.5 bits), the paper's gadgets.
      // 5^5: the paper's width (154 bits) with a power-of-two gadget.
      ParameterSet("default-b8", 11, RingParams(3, 7), 8, -34.5, {64, 5}, {64, 5}),
      ParameterSet("default-b12", 12, RingParams(7, 4), 12, -50, {4096, 3}, {65536, 2}),
      ParameterSet("default-b16", 13, RingParams(5, 5), 16, -51, {4096, 4}, {4096, 4}),
  };
  return sets;
}

const ParameterSet& parameter_set(std::string_view name, SecurityPolicy policy) {
  for (const ParameterSet& set : builtin_parameter_sets()) {
    if (set.name == name) {
      set.check_security(policy);
      return set;
    }
  }
  std::string known;
  for (const ParameterSet& set : builtin_parameter_sets())
    known += " " + set.name;
  throw Error(ErrorCode::invalid_argument,
              "unknown parameter set '" + std::string(name) + "'; known:" + known);
}

const ParameterSet& parameter_set(std::uint16_t id, SecurityPolicy policy) {
  for (const ParameterSet& set : builtin_parameter_sets()) {
    if (set.id == id) {
      set.check_security(policy);
      return set;
    }
  }
  throw Error(ErrorCode::invalid_argument, "unknown parameter set id " + std::to_string(id));
}

}  // namespace safhire::rlwe
