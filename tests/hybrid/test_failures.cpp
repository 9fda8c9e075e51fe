// Decryption failures measured through whole inferences of the trained small CNN: every decrypted
// result checked against the plaintext evaluator (the result count against the model's shapes),
// and the noise the client sees against the server's estimate, which must bound it.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model_files.hpp"
#include "safhire/core/random.hpp"
#include "safhire/hybrid/failures.hpp"

namespace {

using namespace safhire::hybrid;

TEST(Failures, EveryResultIsRightAndTheNoiseWithinTheEstimate) {
  const Model model = Model::load(safhire::hybrid::testing::model_path("small-b8.sfhm"));
  const std::vector<safhire::hybrid::testing::ReferenceImage> refs =
      safhire::hybrid::testing::load_reference("small-b8.ref");
  std::vector<std::vector<std::int64_t>> images{refs.at(0).pixels, refs.at(1).pixels};
  std::uint64_t per_inference = 0;
  for (const Round& r : model.rounds())
    per_inference += r.output.size();
  for (const std::uint32_t gamma : {0U, 2U}) {
    const std::uint64_t inferences = gamma == 0 ? 1 : 2;
    auto random = safhire::core::SeededRandom::from_counter(900 + gamma);
    InferenceOptions options;
    options.gamma = gamma;
    std::uint64_t calls = 0;
    const FailureReport report = measure_failures(
        model, safhire::rlwe::parameter_set("default-b8"), options, images,
        (inferences - 1) * per_inference + 1, 2, random, [&](const FailureReport&) { ++calls; });
    const std::string where = "gamma " + std::to_string(gamma);
    EXPECT_EQ(report.inferences, inferences) << where;
    EXPECT_EQ(calls, inferences) << where;
    EXPECT_EQ(report.results, inferences * per_inference) << where;
    EXPECT_EQ(report.wrong, 0U) << where;
    EXPECT_LE(report.expected_wrong(), 0x1p-32 * static_cast<double>(report.results)) << where;
    ASSERT_EQ(report.rounds.size(), model.rounds().size()) << where;
    for (std::size_t r = 0; r < report.rounds.size(); ++r) {
      const RoundFailures& rf = report.rounds[r];
      EXPECT_EQ(rf.results, inferences * model.rounds()[r].output.size()) << where << ", " << r;
      // The estimate is an upper bound (0.3 to 2.5 bits above the measured noise in
      // tests/rlwe/test_noise.cpp and test_row_bits.cpp), never far below.
      EXPECT_LE(rf.measured_log2_std, rf.estimated_log2_std + 0.1) << where << ", round " << r;
      EXPECT_GE(rf.measured_log2_std, rf.estimated_log2_std - 6) << where << ", round " << r;
      EXPECT_LT(rf.max_sigmas, rf.half_step_sigmas) << where << ", round " << r;
      EXPECT_GE(rf.half_step_sigmas, 6.2) << where << ", round " << r;  // erfc(x/sqrt 2) <= 2^-32
    }
    // The tail: every result counted at 0, non-increasing, and at 3 standard deviations below
    // what a Gaussian of the estimated variance leaves there (0.27%), with room for chance.
    ASSERT_EQ(report.tail.size(), 57U);
    EXPECT_EQ(report.tail[0], report.results) << where;
    for (std::size_t i = 1; i < report.tail.size(); ++i)
      EXPECT_LE(report.tail[i], report.tail[i - 1]) << where << ", bin " << i;
    const double at3 = static_cast<double>(report.results) * std::erfc(3 / std::sqrt(2.0));
    EXPECT_LE(static_cast<double>(report.tail[12]), 1.5 * at3 + 20) << where;
  }
}

}  // namespace
