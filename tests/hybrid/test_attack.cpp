// The shuffling attack and noise flooding. The attack runs as a client against an in-process
// service and recovers a small model's rounds as sorted columns, checked against the plaintext
// evaluator's accumulators for the zero activation and each basis vector; the check itself is
// shown to catch a wrong recovery. Flooding keeps every decrypted result within its bound of the
// true accumulator (unshuffled here, so that slots line up), varies between sessions, and makes
// the one-repeat attack fail; its plaintext twin without noise is the evaluator.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/hybrid/attack.hpp"
#include "safhire/hybrid/protocol.hpp"

namespace {

using namespace safhire::hybrid;
using safhire::core::SeededRandom;

const safhire::rlwe::ParameterSet& b8() {
  return safhire::rlwe::parameter_set("default-b8");
}

// 2-bit 4x4 images; a 3x3 convolution to 2 channels, a 1x1 one to 2, a 2x2 stride-2 one to 3x2x2
// logits, each reading only the activation before it; weights in [-2, 2] from a fixed seed.
Model tiny_model() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> weight(-2, 2), bias(-6, 6);
  const auto term = [&](std::uint32_t source, std::uint32_t in_c, std::uint32_t kernel,
                        std::uint32_t stride, std::uint32_t pad, std::uint32_t out_c, int most) {
    Term t;
    t.source = source;
    t.kernel = kernel;
    t.stride = stride;
    t.pad = pad;
    t.input.c = in_c;
    t.weights.resize(std::size_t{out_c} * in_c * kernel * kernel);
    for (auto& w : t.weights)
      w = static_cast<std::int16_t>(std::clamp(weight(rng), -most, most));
    return t;
  };
  std::vector<Round> rounds(3);
  const std::uint32_t channels[3] = {2, 2, 3};
  for (std::uint32_t r = 0; r < 3; ++r) {
    rounds[r].output.c = channels[r];
    rounds[r].bits = 8;
    for (std::uint32_t c = 0; c < channels[r]; ++c)
      rounds[r].bias.push_back(bias(rng));
    if (r < 2) rounds[r].requant = Requant{1, 2};
  }
  rounds[0].terms.push_back(term(0, 1, 3, 1, 1, 2, 2));
  rounds[1].terms.push_back(term(1, 2, 1, 1, 0, 2, 2));
  rounds[2].terms.push_back(term(2, 2, 2, 2, 0, 3, 1));
  return Model::from_parts("tiny", 8, 2, 2, Shape{1, 4, 4}, rounds);
}

ServiceLimits evict_at_once() {
  ServiceLimits limits;
  limits.evict_after = std::chrono::milliseconds(0);
  return limits;
}

TEST(ShuffleAttack, RecoversEveryRoundAsSortedColumns) {
  const Model model = tiny_model();
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, 1, evict_at_once());
  InProcessTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(40);
  const ShuffleAttackReport report = attack_shuffle(transport, b8(), {}, random, {});
  // Every round probed in each session: as many sessions as the widest round (rounds 1 and 2,
  // 32 inputs) has inputs, plus 1.
  EXPECT_EQ(report.sessions, 33U);
  ASSERT_EQ(report.rounds.size(), 3U);
  for (const RoundRecovery& r : report.rounds) {
    EXPECT_EQ(r.queries, model.activation(r.round).size() + 1) << r.round;
    const RecoveryCheck check = check_recovery(model, r);
    // The shuffle was on: the responses came permuted, yet each one is a true sorted column.
    EXPECT_TRUE(check.exact_bias) << r.round;
    EXPECT_EQ(check.wrong_columns, 0U) << r.round;
    if (r.round == 0) {
      EXPECT_TRUE(check.exact()) << check.exact_columns << " of " << check.columns;
    } else {
      // Later rounds: columns drawn with replacement, each distinct one kept once with its
      // hits. Round 1 (a 1x1 convolution) has 2 distinct columns, each hit by about 16 of 32
      // queries.
      EXPECT_TRUE(r.distinct_only) << r.round;
      EXPECT_GE(check.distinct_found, 1U) << r.round;
      ASSERT_EQ(r.hits.size(), r.columns.size()) << r.round;
      EXPECT_EQ(std::accumulate(r.hits.begin(), r.hits.end(), std::uint64_t{0}),
                model.activation(r.round).size())
          << r.round;
    }
  }
  EXPECT_EQ(check_recovery(model, report.rounds[1]).distinct_found, 2U);
  // A recovery with one value off is caught, as is a wrong bias multiset.
  RoundRecovery wrong = report.rounds[0];
  wrong.columns[5][0] += 1;
  EXPECT_EQ(check_recovery(model, wrong).exact_columns, check_recovery(model, wrong).columns - 1);
  EXPECT_EQ(check_recovery(model, wrong).wrong_columns, 1U);
  wrong.bias.back() -= 1;
  EXPECT_FALSE(check_recovery(model, wrong).exact_bias);
}

TEST(ShuffleAttack, CollectingFindsEveryDistinctColumnOfTheLaterRounds) {
  const Model model = tiny_model();
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, 1, evict_at_once());
  InProcessTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(44);
  ShuffleAttackOptions attack;
  // Round 2's rarest column is 1 in 8 of its inputs: 64 quiet sessions miss a still unseen one
  // with probability (7/8)^64 < 2e-4.
  attack.patience = 64;
  const ShuffleAttackReport report = attack_shuffle(transport, b8(), {}, random, attack);
  ASSERT_EQ(report.rounds.size(), 3U);
  std::uint64_t last_new = 0;
  for (const RoundRecovery& r : report.rounds) {
    const RecoveryCheck check = check_recovery(model, r);
    if (r.round == 0) {
      EXPECT_FALSE(r.distinct_only);
      EXPECT_TRUE(check.exact()) << check.exact_columns << " of " << check.columns;
      continue;
    }
    EXPECT_TRUE(r.distinct_only) << r.round;
    EXPECT_TRUE(check.complete()) << r.round << ": " << check.distinct_found << " of "
                                  << check.distinct_columns << ", " << check.wrong_columns
                                  << " wrong";
    EXPECT_EQ(r.columns.size(), check.distinct_columns) << r.round;
    EXPECT_GT(r.queries, model.activation(r.round).size() + 1) << r.round;
    last_new = std::max(last_new, r.last_new_session);
  }
  // It stopped after `patience` sessions without anything new.
  EXPECT_EQ(report.sessions, std::max<std::uint64_t>(last_new, 33) + attack.patience);
  // A column it never saw fails the check; so does one that is no true column.
  RoundRecovery missing = report.rounds[2];
  missing.columns.pop_back();
  EXPECT_FALSE(check_recovery(model, missing).complete());
  RoundRecovery wrong = report.rounds[2];
  wrong.columns[0][0] = 1000;  // outside the 8-bit range
  EXPECT_FALSE(check_recovery(model, wrong).complete());
  EXPECT_EQ(check_recovery(model, wrong).wrong_columns, 1U);

  // The cap stops it; collecting needs one repeat.
  attack.patience = 1000;
  attack.max_sessions = 35;
  EXPECT_EQ(attack_shuffle(transport, b8(), {}, random, attack).sessions, 35U);
  attack.repeats = 2;
  EXPECT_THROW(attack_shuffle(transport, b8(), {}, random, attack), safhire::Error);
}

TEST(NoiseFlooding, ResultsStayWithinTheBoundAndVary) {
  const Model model = tiny_model();
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128);
  constexpr std::uint32_t kBound = 3;
  service.set_flood(kBound);
  SeededRandom random = SeededRandom::from_counter(41);
  Client client(b8(), {0, safhire::rlwe::TreeMode::fast, false}, random);  // unshuffled
  Hello hello{b8().id, {0, safhire::rlwe::TreeMode::fast, false}, {}};
  for (std::uint64_t k : client.evaluation_keys().elements())
    hello.keys.push_back(client.evaluation_keys().at(k));
  const Bytes hello_bytes = encode_hello(hello, b8());
  std::vector<std::int64_t> image(16);
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = static_cast<std::int64_t>(i % 4);
  std::vector<std::vector<std::int64_t>> truth;
  evaluate(model, image, &truth);
  std::vector<std::int64_t> first_session;
  for (int session = 0; session < 2; ++session) {
    const Welcome w = decode_welcome(service.handle(hello_bytes));
    const Bytes reply =
        service.handle(encode_upload(w.session, client.start(w.model, image), b8()));
    (void)client.receive(decode_download(reply, b8()));
    const std::vector<std::int64_t>& got = client.seen().at(0);
    ASSERT_EQ(got.size(), truth[0].size());
    std::size_t moved = 0;
    for (std::size_t o = 0; o < got.size(); ++o) {
      EXPECT_LE(std::abs(got[o] - truth[0][o]), std::int64_t{kBound}) << o;
      moved += got[o] != truth[0][o] ? 1 : 0;
    }
    EXPECT_GT(moved, got.size() / 2);  // P(no noise) = 1/7 per value
    if (session == 0) {
      first_session = got;
    } else {
      EXPECT_NE(got, first_session);  // fresh noise per session
    }
  }
}

TEST(NoiseFlooding, TheOneRepeatAttackNoLongerRecoversTheColumns) {
  const Model model = tiny_model();
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, 1, evict_at_once());
  service.set_flood(2);
  InProcessTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(42);
  ShuffleAttackOptions attack;
  attack.rounds = {0};
  const ShuffleAttackReport report = attack_shuffle(transport, b8(), {}, random, attack);
  const RecoveryCheck check = check_recovery(model, report.rounds.at(0));
  EXPECT_FALSE(check.exact());
  EXPECT_LT(check.exact_columns, check.columns / 2);
}

TEST(NoiseFlooding, WithoutNoiseThePlaintextTwinIsTheEvaluator) {
  const Model model = tiny_model();
  SeededRandom random = SeededRandom::from_counter(43);
  std::vector<std::int64_t> image(16);
  for (int trial = 0; trial < 20; ++trial) {
    for (auto& v : image)
      v = static_cast<std::int64_t>(random.word() % 4);
    EXPECT_EQ(evaluate_flooded(model, image, 0, random), evaluate(model, image));
  }
}

}  // namespace
