#include "safhire/hybrid/failures.hpp"

#include <algorithm>
#include <cmath>

#include "safhire/core/error.hpp"
#include "safhire/rlwe/noise.hpp"

namespace safhire::hybrid {

namespace {

constexpr std::size_t kTailBins = 57;  // 0 .. 14 standard deviations

// a read as a signed `bits`-bit value: what a result decrypts to when its accumulator is a.
std::int64_t wrapped(std::int64_t a, std::uint32_t bits) {
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1, half = std::uint64_t{1} << (bits - 1);
  const std::uint64_t u = (static_cast<std::uint64_t>(a) + half) & mask;
  return static_cast<std::int64_t>(u) - static_cast<std::int64_t>(half);
}

}  // namespace

double FailureReport::expected_wrong() const {
  double sum = 0;
  for (const RoundFailures& r : rounds)
    sum += static_cast<double>(r.results) * r.estimated_failure;
  return sum;
}

FailureReport measure_failures(const Model& model, const rlwe::ParameterSet& params,
                               InferenceOptions options,
                               std::span<const std::vector<std::int64_t>> images,
                               std::uint64_t min_results, unsigned threads,
                               core::RandomSource& random,
                               const std::function<void(const FailureReport&)>& progress) {
  require(!images.empty(), ErrorCode::invalid_argument, "failure count: no images");
  const std::size_t rounds = model.rounds().size();
  FailureReport report;
  report.rounds.resize(rounds);
  report.tail.assign(kTailBins, 0);
  std::vector<double> squares(rounds, 0);  // sum of squared residuals, in units of 2^-64
  std::vector<std::uint64_t> histogram(kTailBins, 0);  // bin i: |z| in [i, i + 1) steps
  while (report.results < min_results || report.inferences == 0) {
    const std::vector<std::int64_t>& image = images[report.inferences % images.size()];
    Client client(params, options, random);
    client.keep_residuals(true);
    Server server(model, params, options, client.evaluation_keys(), random.seed(), threads);
    const std::vector<RoundNoise>& noise = server.noise_estimate();
    std::vector<std::vector<std::int64_t>> acts{image};
    std::optional<Upload> upload = client.start(server.model_info(), image);
    for (std::size_t r = 0; r < rounds; ++r) {
      require(upload.has_value(), ErrorCode::internal, "failure count: the inference ended early");
      upload = client.receive(server.process(*upload));
      const Round& round = model.rounds()[r];
      const std::vector<std::int64_t>& got = client.seen()[r];  // slot order
      const std::vector<std::uint32_t> slot = server.permutation(static_cast<std::uint32_t>(r));
      const std::vector<std::int64_t> want = round_accumulators(model, r, acts);  // model order
      const std::vector<std::int64_t>& residuals = client.residuals();
      const double var =
          std::exp2(2 * noise[r].log2_std) +
          rlwe::download_variance(params, noise[r].download_bits, noise[r].download_body_bits);
      const double sigma = std::sqrt(var) * 0x1p64;  // units of 2^-64
      RoundFailures& rf = report.rounds[r];
      rf.estimated_log2_std = std::log2(var) / 2;
      rf.half_step_sigmas = std::exp2(63.0 - round.bits) / sigma;
      rf.estimated_failure = std::erfc(rf.half_step_sigmas / std::sqrt(2.0));
      std::vector<std::int64_t> next(want.size());
      for (std::size_t s = 0; s < got.size(); ++s) {
        const std::uint32_t o = slot.at(s);
        rf.wrong += got[s] != wrapped(want.at(o), round.bits) ? 1 : 0;
        const double z = std::abs(static_cast<double>(residuals[s])) / sigma;
        squares[r] += static_cast<double>(residuals[s]) * static_cast<double>(residuals[s]);
        rf.max_sigmas = std::max(rf.max_sigmas, z);
        ++histogram[std::min(kTailBins - 1,
                             static_cast<std::size_t>(z / FailureReport::kTailStep))];
        if (round.requant) next[o] = requantize(got[s], *round.requant, model.activation_max());
      }
      rf.results += got.size();
      rf.measured_log2_std = std::log2(squares[r] / static_cast<double>(rf.results)) / 2 - 64;
      report.results += got.size();
      report.wrong += rf.wrong;
      if (round.requant) acts.push_back(std::move(next));
    }
    std::uint64_t beyond = 0;
    for (std::size_t i = kTailBins; i-- > 0;)
      report.tail[i] = beyond += histogram[i];
    ++report.inferences;
    if (progress) progress(report);
  }
  return report;
}

}  // namespace safhire::hybrid
