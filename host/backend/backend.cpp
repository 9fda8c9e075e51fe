#include "safhire/backend/backend.hpp"

#include <algorithm>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::backend {

std::size_t row_words(const rlwe::ParameterSet& params, std::uint32_t gamma) {
  require(gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  const ring::RingParams& r = params.ring;
  const std::size_t lanes = gamma == 0 ? 1 : r.power(gamma) - r.power(gamma - 1);
  return std::size_t{r.N()} + lanes;
}

std::vector<std::int64_t> key_mean_map(const rlwe::ParameterSet& params, std::uint32_t gamma) {
  const std::size_t L = row_words(params, gamma) - params.ring.N();
  if (params.key != rlwe::KeyDistribution::binary) return {};
  if (gamma == 0) return {1};
  // Z^l u in Z[Z]/Phi_(t^gamma)(Z), Phi = sum_(i < t) Z^(i t^(gamma - 1)): Z^k for k >= L is
  // -sum_(i < t - 1) Z^(k - L + i t^(gamma - 1)), reduced from the top.
  const std::size_t step = params.ring.power(gamma - 1), t = params.ring.t();
  std::vector<std::int64_t> map(L * L);
  std::vector<std::int64_t> p(2 * L);
  for (std::size_t l = 0; l < L; ++l) {
    std::fill(p.begin(), p.end(), 0);
    for (std::size_t m = 0; m < L; ++m)
      p[l + m] = 1;
    for (std::size_t k = 2 * L - 1; k >= L; --k) {
      const std::int64_t c = p[k];
      p[k] = 0;
      for (std::size_t i = 0; i + 1 < t; ++i)
        p[k - L + i * step] -= c;
    }
    for (std::size_t r = 0; r < L; ++r)
      map[r * L + l] = p[r];
  }
  return map;
}

void LayerWeights::validate() const {
  const std::size_t n = outputs();
  require(!group_start.empty() && group_start.front() == 0 && group_start.back() == n &&
              !tap_start.empty() && tap_start.front() == 0 && tap_start.back() == taps.size() &&
              bias.size() == n,
          ErrorCode::invalid_argument, "linear layer: inconsistent array sizes");
  for (std::size_t g = 0; g + 1 < group_start.size(); ++g)
    require(group_start[g] <= group_start[g + 1], ErrorCode::invalid_argument,
            "linear layer: groups out of order");
  for (std::size_t o = 0; o < n; ++o)
    require(tap_start[o] <= tap_start[o + 1], ErrorCode::invalid_argument,
            "linear layer: taps out of order");
}

std::vector<std::size_t> LayerWeights::rows_read() const {
  std::vector<std::size_t> rows;
  for (const Tap& t : taps) {
    if (t.source >= rows.size()) rows.resize(std::size_t{t.source} + 1, 0);
    rows[t.source] = std::max(rows[t.source], std::size_t{t.index} + 1);
  }
  return rows;
}

void LinearLayer::validate(std::span<const std::size_t> source_rows) const {
  require(weights != nullptr, ErrorCode::invalid_argument, "linear layer: no weights");
  weights->validate();
  validate(source_rows, weights->rows_read());
}

void LinearLayer::validate(std::span<const std::size_t> source_rows,
                           std::span<const std::size_t> rows_read) const {
  require(weights != nullptr, ErrorCode::invalid_argument, "linear layer: no weights");
  const std::size_t n = outputs();
  require(weights->outputs() == n, ErrorCode::invalid_argument,
          "linear layer: " + std::to_string(n) + " slots for " +
              std::to_string(weights->outputs()) + " outputs");
  for (std::size_t s = 0; s < rows_read.size(); ++s) {
    const std::size_t have = s < source_rows.size() ? source_rows[s] : 0;
    if (rows_read[s] > have)
      throw Error(ErrorCode::invalid_argument, "linear layer: a tap reads row " +
                                                   std::to_string(rows_read[s] - 1) +
                                                   " of source " + std::to_string(s) +
                                                   ", which has " + std::to_string(have) + " rows");
  }
  std::vector<bool> seen(n, false);
  for (std::uint32_t s : slot) {
    require(s < n && !seen[s], ErrorCode::invalid_argument,
            "linear layer: slots are not a permutation");
    seen[s] = true;
  }
}

bool has_power_keys(const rlwe::GaloisKeys& keys, const ring::RingParams& ring,
                    std::uint32_t gamma) {
  if (gamma == 0) return false;
  const std::vector<std::uint64_t> elements = rlwe::power_elements(ring, gamma);
  return std::all_of(elements.begin(), elements.end(),
                     [&](std::uint64_t k) { return k == 1 || keys.contains(k); });
}

void require_packing_keys(const rlwe::GaloisKeys& keys, const ring::RingParams& ring,
                          const Config& config) {
  for (const std::uint64_t k : rlwe::packing_elements(ring, config.gamma, config.mode))
    require(keys.contains(k), ErrorCode::invalid_argument,
            "no key-switching key for sigma_" + std::to_string(k) +
                ", which packing at gamma = " + std::to_string(config.gamma) +
                (config.mode == rlwe::TreeMode::fast ? " (fast mode)" : " (paper mode)") +
                " needs");
}

void Config::validate(const rlwe::ParameterSet& params, const rlwe::GaloisKeys& keys) const {
  require(gamma < params.ring.a(), ErrorCode::invalid_argument,
          "gamma must be below a = " + std::to_string(params.ring.a()) + ", got " +
              std::to_string(gamma));
  require(mode == rlwe::TreeMode::fast || mode == rlwe::TreeMode::paper,
          ErrorCode::invalid_argument, "unknown tree mode");
  require(row_bits == 32 || row_bits == 64, ErrorCode::invalid_argument,
          "row_bits must be 32 or 64, not " + std::to_string(row_bits));
  require_packing_keys(keys, params.ring, *this);
}

void require_permutation(std::span<const std::uint32_t> p, const char* what) {
  std::vector<bool> seen(p.size(), false);
  for (std::uint32_t d : p) {
    if (d >= p.size() || seen[d])
      throw Error(ErrorCode::invalid_argument, std::string(what) + " are not a permutation");
    seen[d] = true;
  }
}

}  // namespace safhire::backend
