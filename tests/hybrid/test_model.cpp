// The model file and the plaintext integer evaluator: the C++ evaluator reproduces the logits of
// models/train.py's numpy evaluator on its reference images; the server's tap view of a round
// (pool windows expanded) gives the same accumulators as the direct evaluator; files round-trip;
// malformed, truncated and out-of-bound files are typed errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model_files.hpp"
#include "safhire/core/error.hpp"
#include "safhire/hybrid/model.hpp"
#include "safhire/hybrid/zoo.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::hybrid;
using safhire::ErrorCode;
using safhire::hybrid::testing::fully_connected_b8;
using safhire::hybrid::testing::load_reference;
using safhire::hybrid::testing::model_path;

class TrainedModels : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainedModels, EvaluatorMatchesTheNumpyReference) {
  const Model m = Model::load(model_path(std::string(GetParam()) + ".sfhm"));
  const auto refs = load_reference(std::string(GetParam()) + ".ref");
  ASSERT_FALSE(refs.empty());
  for (std::size_t i = 0; i < refs.size(); ++i)
    ASSERT_EQ(evaluate(m, refs[i].pixels), refs[i].logits) << "image " << i;
}

// count_correct (threaded, as `safhire accuracy` runs it on the whole test set) against the
// numpy logits' argmax, the first of equal maxima; 16 images of each model keep it short.
TEST_P(TrainedModels, CountCorrectAgreesWithTheNumpyPredictions) {
  const Model m = Model::load(model_path(std::string(GetParam()) + ".sfhm"));
  const auto refs = load_reference(std::string(GetParam()) + ".ref");
  const std::size_t n = std::min<std::size_t>(refs.size(), 16);
  std::vector<std::vector<std::int64_t>> images;
  std::vector<std::int64_t> labels;
  std::size_t expected = 0;
  for (std::size_t i = 0; i < n; ++i) {
    images.push_back(refs[i].pixels);
    labels.push_back(refs[i].label);
    std::size_t best = 0;
    for (std::size_t k = 1; k < refs[i].logits.size(); ++k)
      if (refs[i].logits[k] > refs[i].logits[best]) best = k;
    expected += static_cast<std::int64_t>(best) == refs[i].label;
  }
  ASSERT_GT(expected, 0U);
  EXPECT_EQ(count_correct(m, images, labels, 3), expected);
  // Every label moved to the next class: the images counted before are wrong now.
  for (std::int64_t& l : labels)
    l = (l + 1) % static_cast<std::int64_t>(m.logits());
  EXPECT_LE(count_correct(m, images, labels, 3), n - expected);
}

TEST_P(TrainedModels, TapsGiveTheSameAccumulatorsAsTheDirectEvaluator) {
  const Model m = Model::load(model_path(std::string(GetParam()) + ".sfhm"));
  const auto refs = load_reference(std::string(GetParam()) + ".ref");
  std::vector<std::vector<std::int64_t>> accs;
  evaluate(m, refs[0].pixels, &accs);
  // Activations rebuilt from the direct evaluator's accumulators.
  const auto acts = safhire::hybrid::testing::activations(m, refs[0].pixels, accs);
  std::vector<Tap> list;
  for (std::size_t r = 0; r < m.rounds().size(); ++r) {
    const Round& round = m.rounds()[r];
    const std::size_t hw = std::size_t{round.output.h} * round.output.w;
    for (std::size_t o = 0; o < round.output.size(); ++o) {
      taps(m, r, o, list);
      std::int64_t sum = round.bias[o / hw];
      for (const Tap& t : list)
        sum += t.weight * acts[t.source][t.index];
      ASSERT_EQ(sum, accs[r][o]) << "round " << r << ", output " << o;
    }
  }
}

TEST_P(TrainedModels, FileRoundTripsAndEveryTruncationIsRejected) {
  const Model m = Model::load(model_path(std::string(GetParam()) + ".sfhm"));
  const std::vector<std::uint8_t> bytes = m.serialize();
  EXPECT_EQ(Model::parse(bytes).serialize(), bytes);
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + cut / 64) {
    try {
      Model::parse(std::span<const std::uint8_t>(bytes.data(), cut));
      FAIL() << "a file cut at " << cut << " bytes was accepted";
    } catch (const safhire::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::malformed_input);
    }
  }
  std::vector<std::uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(Model::parse(longer), safhire::Error);
}

INSTANTIATE_TEST_SUITE_P(Trained, TrainedModels,
                         ::testing::Values("small-b8", "small-b12", "small-b16", "resnet20-b8",
                                           "resnet20-b12", "resnet20-b16"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& c : s)
                             c = c == '-' ? '_' : c;
                           return s;
                         });

std::optional<ErrorCode> parse_error(const std::vector<std::uint8_t>& bytes) {
  return safhire::testing::code_of([&] { Model::parse(bytes); });
}

TEST(ModelEvaluator, CountCorrectRefusesUnequalSizesAndTiesGoToTheFirstClass) {
  const Model m = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  const std::vector<std::int64_t> two_labels = {0, 1};
  try {
    count_correct(m, {refs[0].pixels}, two_labels, 1);
    FAIL() << "one image with two labels was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  EXPECT_EQ(predicted_class(std::vector<std::int64_t>{3, 7, 7, -1}), 1U);
  EXPECT_EQ(predicted_class(std::vector<std::int64_t>{-5, -5}), 0U);
  EXPECT_THROW(predicted_class(std::vector<std::int64_t>{}), safhire::Error);
}

TEST(ModelFile, CorruptFieldsAreTypedErrors) {
  const Model m = Model::load(model_path("small-b8.sfhm"));
  const std::vector<std::uint8_t> good = m.serialize();
  auto with = [&](std::size_t at, std::uint8_t value) {
    std::vector<std::uint8_t> b = good;
    b[at] = value;
    return b;
  };
  const std::size_t header = 4 + 4 + 4 + m.name().size();  // magic, version, name length, name
  EXPECT_EQ(parse_error(with(0, 'X')), ErrorCode::malformed_input);         // magic
  EXPECT_EQ(parse_error(with(4, 2)), ErrorCode::malformed_input);           // version
  EXPECT_EQ(parse_error(with(8, 0xff)), ErrorCode::malformed_input);        // name length
  EXPECT_EQ(parse_error(with(header, 40)), ErrorCode::malformed_input);     // accumulator bits
  EXPECT_EQ(parse_error(with(header + 1, 8)), ErrorCode::malformed_input);  // activation bits
  EXPECT_EQ(parse_error(with(header + 4, 0)), ErrorCode::malformed_input);  // input channels
  const std::size_t round0 = header + 4 + 12 + 4;
  EXPECT_EQ(parse_error(with(round0 + 8, 5)), ErrorCode::malformed_input);     // source ahead
  EXPECT_EQ(parse_error(with(round0 + 16, 3)), ErrorCode::malformed_input);    // input channels
  EXPECT_EQ(parse_error(with(round0 + 20, 200)), ErrorCode::malformed_input);  // kernel
}

TEST(ModelFile, AccumulatorBoundIsEnforced) {
  const Model m = Model::load(model_path("small-b8.sfhm"));
  std::vector<std::uint8_t> bytes = m.serialize();
  // The first weight of round 0 (after its 12-byte round header and 24-byte term header).
  const std::size_t header = 4 + 4 + 4 + m.name().size() + 4 + 12 + 4;
  const std::size_t w0 = header + 12 + 24;
  bytes[w0] = 0xff;
  bytes[w0 + 1] = 0x7f;  // 32767
  try {
    Model::parse(bytes);
    FAIL() << "accepted a weight beyond the accumulator bound";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::malformed_input);
    EXPECT_NE(std::string(e.what()).find("accumulator bound"), std::string::npos) << e.what();
  }
}

// One fully connected round over four 2-bit inputs at b = 8: the bound is the range of the
// accumulator's partial sums, so weights {42, 0, -42, 0} (l1 126, over twice what
// |bias| + l1 max_input <= 127 allows) fit with biases -2..1, and nothing wider does.
TEST(ModelFile, AccumulatorBoundIsTheRangeOfEveryPartialSum) {
  const std::vector<std::int16_t> weights = {42, 0, -42, 0};
  for (std::int32_t bias = -4; bias <= 3; ++bias) {
    const bool fits = bias >= -2 && bias <= 1;
    if (!fits) {
      EXPECT_THROW(fully_connected_b8(weights, {bias}), safhire::Error) << "bias " << bias;
      continue;
    }
    const Model m = fully_connected_b8(weights, {bias});
    // Oracle: every input in {0..3}^4 and every subset of the products, with and without the
    // bias, summed in int64; all of them inside the signed 8-bit window, and the extremes reached.
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    for (int x = 0; x < 256; ++x) {
      const std::int64_t in[4] = {x & 3, (x >> 2) & 3, (x >> 4) & 3, x >> 6};
      for (int subset = 0; subset < 32; ++subset) {
        std::int64_t sum = (subset & 16) != 0 ? bias : 0;
        for (int i = 0; i < 4; ++i)
          sum += (subset >> i & 1) != 0 ? weights[i] * in[i] : 0;
        lo = std::min(lo, sum);
        hi = std::max(hi, sum);
      }
      const std::vector<std::int64_t> image(in, in + 4);
      EXPECT_EQ(evaluate(m, image)[0], bias + 42 * (in[0] - in[2]));
    }
    EXPECT_GE(lo, -128) << "bias " << bias;
    EXPECT_LE(hi, 127) << "bias " << bias;
    EXPECT_EQ(hi, std::max(bias, 0) + 126);
    EXPECT_EQ(lo, std::min(bias, 0) - 126);
  }
  // One more unit of weight on either side does not fit, whatever the bias.
  EXPECT_THROW(fully_connected_b8({43, 0, -42, 0}, {0}), safhire::Error);
  EXPECT_THROW(fully_connected_b8({42, 0, -42, -1}, {0}), safhire::Error);
}

TEST(ModelFile, InputsOutOfRangeAreRejected) {
  const Model m = Model::load(model_path("small-b8.sfhm"));
  std::vector<std::int64_t> x(m.activation(0).size(), 0);
  x[5] = m.input_max() + 1;
  EXPECT_THROW(evaluate(m, x), safhire::Error);
  x.pop_back();
  EXPECT_THROW(evaluate(m, x), safhire::Error);
}

TEST(Zoo, SyntheticModelsHaveThePapersShapesAndPassValidation) {
  struct Expected {
    ZooModel model;
    std::size_t rounds, input, logits;
  };
  for (const Expected& e : {Expected{ZooModel::resnet20_cifar, 20, 3 * 32 * 32, 10},
                            Expected{ZooModel::resnet18_tiny, 18, 3 * 64 * 64, 200},
                            Expected{ZooModel::resnet34_imagenet, 34, 3 * 224 * 224, 1000}}) {
    const Model m = synthetic_model(e.model, 8);
    EXPECT_EQ(m.rounds().size(), e.rounds) << to_string(e.model);
    EXPECT_EQ(m.activation(0).size(), e.input);
    EXPECT_EQ(m.logits(), e.logits);
    EXPECT_EQ(Model::parse(m.serialize()).serialize(), m.serialize());
  }
  // Seeded: the same seed gives the same weights, another seed others.
  const auto a = synthetic_model(ZooModel::resnet20_cifar, 12, 7).serialize();
  EXPECT_EQ(a, synthetic_model(ZooModel::resnet20_cifar, 12, 7).serialize());
  EXPECT_NE(a, synthetic_model(ZooModel::resnet20_cifar, 12, 8).serialize());
  std::mt19937_64 rng(9);
  const Model m = synthetic_model(ZooModel::resnet20_cifar, 16);
  std::vector<std::int64_t> x(m.activation(0).size());
  for (auto& v : x)
    v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(m.input_max() + 1));
  EXPECT_EQ(evaluate(m, x).size(), 10U);
}

}  // namespace
