#include "safhire/backend/backend.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::backend {

std::size_t row_words(const rlwe::ParameterSet& params, std::uint32_t gamma) {
  require(gamma < params.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
  const ring::RingParams& r = params.ring;
  const std::size_t lanes = gamma == 0 ? 1 : r.power(gamma) - r.power(gamma - 1);
  return std::size_t{r.N()} + lanes;
}

void LinearLayer::validate(std::span<const std::size_t> source_rows) const {
  const std::size_t n = outputs();
  require(!group_start.empty() && group_start.front() == 0 && group_start.back() == n &&
              tap_start.size() == n + 1 && tap_start.front() == 0 &&
              tap_start.back() == taps.size() && bias.size() == n,
          ErrorCode::invalid_argument, "linear layer: inconsistent array sizes");
  for (std::size_t g = 0; g + 1 < group_start.size(); ++g)
    require(group_start[g] <= group_start[g + 1], ErrorCode::invalid_argument,
            "linear layer: groups out of order");
  for (std::size_t o = 0; o < n; ++o)
    require(tap_start[o] <= tap_start[o + 1], ErrorCode::invalid_argument,
            "linear layer: taps out of order");
  for (const Tap& t : taps) {
    require(t.source < source_rows.size() && t.index < source_rows[t.source],
            ErrorCode::invalid_argument,
            "linear layer: tap reads row " + std::to_string(t.index) + " of source " +
                std::to_string(t.source) + ", which does not exist");
  }
  std::vector<bool> seen(n, false);
  for (std::uint32_t s : slot) {
    require(s < n && !seen[s], ErrorCode::invalid_argument,
            "linear layer: slots are not a permutation");
    seen[s] = true;
  }
}

void require_permutation(std::span<const std::uint32_t> p, const char* what) {
  std::vector<bool> seen(p.size(), false);
  for (std::uint32_t d : p) {
    require(d < p.size() && !seen[d], ErrorCode::invalid_argument,
            std::string(what) + " are not a permutation");
    seen[d] = true;
  }
}

struct HostExtraction::State {
  rlwe::ParameterSet params;
  unsigned threads;
  std::size_t width;
  std::optional<rlwe::PartialExtraction> partial;
  std::vector<std::vector<std::uint64_t>> scratch;  // per worker
  std::vector<std::vector<std::uint64_t*>> rows;    // per worker
};

HostExtraction::HostExtraction(const rlwe::ParameterSet& params, std::uint32_t gamma,
                               unsigned threads)
    : state_(std::make_unique<State>(
          State{params, std::max(threads, 1U), row_words(params, gamma), std::nullopt, {}, {}})) {
  if (gamma >= 1) state_->partial.emplace(params.ring, gamma);
  state_->scratch.resize(state_->threads);
  state_->rows.resize(state_->threads);
}

HostExtraction::~HostExtraction() = default;

void HostExtraction::run(std::span<const rlwe::SeededCiphertext> cts,
                         std::span<const std::uint32_t> destination,
                         std::span<std::uint64_t> rows) {
  using u64 = std::uint64_t;
  State& st = *state_;
  const std::size_t n = destination.size(), N = st.params.ring.N(), W = st.width;
  const std::size_t per_chunk = st.partial ? st.partial->elements().size() : 1;
  const std::size_t chunks = (n + N - 1) / N;
  require(cts.size() == chunks * per_chunk && rows.size() == n * W, ErrorCode::invalid_argument,
          "extract: " + std::to_string(chunks * per_chunk) + " ciphertexts and " +
              std::to_string(n * W) + " row words expected for " + std::to_string(n) + " values");
  require_permutation(destination, "extract: destinations");
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t values = std::min(N, n - c * N);
    if (!st.partial) {
      const rlwe::Ciphertext ct = cts[c].expand();
      core::parallel_for(values, st.threads, [&](std::size_t j, unsigned) {
        u64* row = rows.data() + destination[c * N + j] * W;
        row[N] = rlwe::sample_extract_into(st.params.ring, ct, static_cast<std::uint32_t>(j),
                                           std::span<u64>(row, N));
      });
      continue;
    }
    std::vector<rlwe::Ciphertext> powers;
    for (std::size_t k = 0; k < per_chunk; ++k)
      powers.push_back(cts[c * per_chunk + k].expand());
    const rlwe::PartialExtraction& px = *st.partial;
    const std::vector<rlwe::ModuleLwe> conj = px.conjugates(powers);
    const std::uint32_t T = px.blocks(), L = px.lanes();
    // Block i holds values i + T j, j < L: its L clean samples share the block's conjugates.
    core::parallel_for(T, st.threads, [&](std::size_t i, unsigned worker) {
      std::vector<u64*>& out = st.rows[worker];
      out.assign(L, nullptr);
      for (std::uint32_t j = 0; j < L; ++j) {
        const std::size_t p = i + std::size_t{T} * j;
        if (p < values) out[j] = rows.data() + destination[c * N + p] * W;
      }
      px.clean_samples(std::span<const rlwe::ModuleLwe>(conj.data() + i * L, L), out,
                       st.scratch[worker]);
    });
  }
}

}  // namespace safhire::backend
