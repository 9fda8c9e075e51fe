// Encrypted inference end to end, in process: the client's logits equal the plaintext integer
// evaluator's, bit for bit, at every level gamma; the server's permutations are fresh per session
// and round and are undone correctly; the client sees only permuted hidden pre-activations;
// malformed messages are rejected with typed errors and leave the session usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "model_files.hpp"
#include "safhire/core/error.hpp"
#include "safhire/hybrid/inference.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::hybrid;
using safhire::ErrorCode;
using safhire::core::Seed;
using safhire::core::SeededRandom;
using safhire::hybrid::testing::fully_connected_b8;
using safhire::hybrid::testing::load_reference;
using safhire::hybrid::testing::model_path;
using safhire::rlwe::ParameterSet;

Seed seed_of(std::uint8_t v) {
  Seed s{};
  s[0] = v;
  return s;
}

std::vector<std::uint32_t> perm_identity(std::size_t n) {
  std::vector<std::uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0U);
  return p;
}

struct Transcript {
  std::vector<std::int64_t> logits;
  std::vector<std::vector<std::int64_t>> seen;
  std::vector<std::vector<std::uint32_t>> perms;
  std::uint64_t key_switches = 0;
  std::vector<std::uint8_t> derived_powers;  // per round, as the server chose
};

Transcript infer(const Model& model, const ParameterSet& params, InferenceOptions options,
                 const std::vector<std::int64_t>& image, std::uint8_t session = 1,
                 unsigned threads = 1) {
  SeededRandom random = SeededRandom::from_counter(200 + session);
  Client client(params, options, random);
  Server server(model, params, options, client.evaluation_keys(), seed_of(session), threads);
  std::optional<Upload> up = client.start(server.model_info(), image);
  while (up)
    up = client.receive(server.process(*up));
  Transcript run{client.logits(),
                 client.seen(),
                 {},
                 server.key_switches(),
                 server.model_info().derived_powers};
  for (std::uint32_t r = 0; r < model.rounds().size(); ++r)
    run.perms.push_back(server.permutation(r));
  return run;
}

struct Case {
  const char* model;
  const char* set;
  std::uint32_t gamma;
};

std::string case_label(const Case& c) {
  std::string s = std::string(c.model) + "_" + c.set + "_gamma" + std::to_string(c.gamma);
  for (char& ch : s)
    ch = ch == '-' ? '_' : ch;
  return s;
}

// How GoogleTest prints a case (found by argument-dependent lookup).
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
  *os << case_label(c);
}

class EncryptedInference : public ::testing::TestWithParam<Case> {};

TEST_P(EncryptedInference, LogitsEqualThePlaintextEvaluator) {
  const Case c = GetParam();
  const Model model = Model::load(model_path(std::string(c.model) + ".sfhm"));
  const ParameterSet& params = safhire::rlwe::parameter_set(c.set);
  const auto refs = load_reference(std::string(c.model) + ".ref");
  InferenceOptions options;
  options.gamma = c.gamma;
  const auto& image = refs[c.gamma].pixels;
  const Transcript run = infer(model, params, options, image);
  std::vector<std::vector<std::int64_t>> accs;
  EXPECT_EQ(run.logits, evaluate(model, image, &accs));
  // Packing cost: per packed ciphertext N - 1 (gamma 0) or t^(a-gamma) - 1 switches; and
  // phi(t^gamma) - 1 per chunk of an upload whose powers the server derived.
  const std::uint64_t N = params.ring.N();
  std::uint64_t packs = 0, derived = 0;
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    packs += (model.rounds()[r].output.size() + N - 1) / N;
    if (run.derived_powers.at(r))
      derived += (model.activation(r).size() + N - 1) / N *
                 (safhire::rlwe::power_elements(params.ring, c.gamma).size() - 1);
  }
  const std::uint64_t per_pack =
      c.gamma == 0 ? N - 1 : params.ring.power(params.ring.a() - c.gamma) - 1;
  EXPECT_EQ(run.key_switches, packs * per_pack + derived);
  // What the client saw: round r's accumulators in the server's slot order.
  ASSERT_EQ(run.seen.size(), accs.size());
  for (std::size_t r = 0; r < accs.size(); ++r) {
    for (std::size_t s = 0; s < accs[r].size(); ++s)
      ASSERT_EQ(run.seen[r][s], accs[r][run.perms[r][s]]) << "round " << r << ", slot " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Trained, EncryptedInference,
    ::testing::Values(Case{"small-b8", "default-b8", 0}, Case{"small-b8", "default-b8", 1},
                      Case{"small-b8", "default-b8", 2}, Case{"small-b12", "default-b12", 0},
                      Case{"small-b12", "default-b12", 1}, Case{"small-b12", "default-b12", 2},
                      Case{"small-b16", "default-b16", 0}, Case{"small-b16", "default-b16", 1},
                      Case{"small-b16", "default-b16", 2},
                      // The trained ResNet-20 (8-bit hidden rounds, 12-bit first and last) on
                      // default-b8 at gamma 2, the paper's headline setting: one image; and the
                      // 12-bit one on the same set, whose noise at gamma 2 carries 12 bits.
                      Case{"resnet20-b8", "default-b8", 2}, Case{"resnet20-b12", "default-b8", 2}),
    [](const auto& param_info) { return case_label(param_info.param); });

// The backend's view of a round (backend::LinearLayer) on plaintext integers gives the direct
// evaluator's accumulators, each in the slot the permutation assigns, built from the model or
// from the model's identity-permutation layers (model_layers, what a service shares between
// sessions); malformed layers are typed errors.
TEST(LinearLayer, IsTheRoundsMatrixInSlotOrder) {
  const Model m = Model::load(model_path("small-b12.sfhm"));
  const auto refs = load_reference("small-b12.ref");
  std::vector<std::vector<std::int64_t>> accs;
  evaluate(m, refs[1].pixels, &accs);
  const auto acts = safhire::hybrid::testing::activations(m, refs[1].pixels, accs);
  const auto bases = model_layers(m);
  ASSERT_EQ(bases->size(), m.rounds().size());
  SeededRandom rng = SeededRandom::from_counter(9);
  for (std::size_t r = 0; r < m.rounds().size(); ++r) {
    const std::size_t n = m.rounds()[r].output.size();
    const auto perm = safhire::core::random_permutation(rng, static_cast<std::uint32_t>(n));
    for (const safhire::backend::LinearLayer& layer :
         {linear_layer(m, r, perm), linear_layer((*bases)[r], perm)}) {
      std::vector<std::size_t> counts;
      for (const auto& a : acts)
        counts.push_back(a.size());
      layer.validate(counts);
      ASSERT_EQ(layer.outputs(), n);
      const safhire::backend::LayerWeights& w = *layer.weights;
      const std::uint32_t bits = m.rounds()[r].bits;
      for (std::size_t o = 0; o < n; ++o) {
        std::int64_t sum = static_cast<std::int64_t>(w.bias[o]) >> (64 - bits);
        for (std::uint32_t k = w.tap_start[o]; k < w.tap_start[o + 1]; ++k)
          sum += w.taps[k].weight * acts[w.taps[k].source][w.taps[k].index];
        ASSERT_EQ(sum, accs[r][perm[layer.slot[o]]]) << "round " << r << ", entry " << o;
      }
    }
    // A session's layer shares the model's weights; only its slots are its own.
    EXPECT_EQ(linear_layer((*bases)[r], perm).weights, (*bases)[r].weights);
  }
  const std::size_t outputs = m.rounds()[0].output.size();
  const std::vector<std::size_t> input_rows = {m.activation(0).size()};
  safhire::backend::LinearLayer bad = linear_layer(m, 0, perm_identity(outputs));
  bad.slot[0] = bad.slot[1];
  EXPECT_THROW(bad.validate(input_rows), safhire::Error);
  // Weights that read a row the source lacks, or with inconsistent arrays, or none at all.
  const auto broken = [&](auto&& change) {
    safhire::backend::LinearLayer layer = linear_layer(m, 0, perm_identity(outputs));
    auto weights = std::make_shared<safhire::backend::LayerWeights>(*layer.weights);
    change(*weights);
    layer.weights = weights;
    return layer;
  };
  EXPECT_THROW(broken([&](auto& w) {
                 w.taps[0].index = static_cast<std::uint32_t>(input_rows[0]);
               }).validate(input_rows),
               safhire::Error);
  EXPECT_THROW(broken([](auto& w) { w.tap_start.pop_back(); }).validate(input_rows),
               safhire::Error);
  EXPECT_THROW(broken([](auto& w) { w.bias.pop_back(); }).validate(input_rows), safhire::Error);
  bad = linear_layer(m, 0, perm_identity(outputs));
  bad.weights = nullptr;
  EXPECT_THROW(bad.validate(input_rows), safhire::Error);
}

// A round with no nonzero weight at all (every output is its bias: groups without taps) feeding a
// dense 1x1 round (the dense kernel) and a sparse fully connected one: encrypted equals plaintext.
TEST(EncryptedInference, EmptyDenseAndSparseGroups) {
  auto term = [](std::uint32_t source, std::uint32_t in_c, std::uint32_t kernel, std::uint32_t pad,
                 std::uint32_t out_c, std::int16_t value) {
    Term t;
    t.source = source;
    t.kernel = kernel;
    t.pad = pad;
    t.input.c = in_c;
    t.weights.assign(std::size_t{out_c} * in_c * kernel * kernel, value);
    return t;
  };
  std::vector<Round> rounds(3);
  rounds[0].output.c = 4;
  rounds[0].bits = 8;
  rounds[0].terms.push_back(term(0, 1, 3, 1, 4, 0));
  rounds[0].bias = {5, -3, 7, 0};
  rounds[0].requant = Requant{1, 1};
  rounds[1].output.c = 8;
  rounds[1].bits = 8;
  rounds[1].terms.push_back(term(1, 4, 1, 0, 8, 1));
  rounds[1].terms[0].weights[3] = -2;
  rounds[1].bias = {1, 2, 3, 4, -1, -2, -3, -4};
  rounds[1].requant = Requant{1, 2};
  rounds[2].output.c = 2;
  rounds[2].bits = 8;
  rounds[2].terms.push_back(term(2, 8, 4, 0, 2, 0));
  rounds[2].terms[0].weights[5] = 1;
  rounds[2].terms[0].weights[200] = -1;
  rounds[2].bias = {0, 1};
  const Model model = Model::from_parts("groups", 8, 2, 4, Shape{1, 4, 4}, rounds);
  std::vector<std::int64_t> image(16);
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = static_cast<std::int64_t>(i % 16);
  for (std::uint32_t gamma : {0U, 2U}) {
    InferenceOptions options;
    options.gamma = gamma;
    EXPECT_EQ(infer(model, safhire::rlwe::parameter_set("default-b8"), options, image).logits,
              evaluate(model, image))
        << "gamma " << gamma;
  }
}

// Two terms reading the same rows (a 3x3 and a 1x1 convolution of one source): the backend merges
// their taps on a row before its sparse kernel, to 0 (dropped), +1, -2 and +2, with other
// taps of both signs beside them; encrypted equals plaintext on 64-bit and on 32-bit rows.
TEST(EncryptedInference, TapsOnOneRowAreMerged) {
  Round round;
  round.output.c = 4;
  round.bits = 8;
  for (const std::uint32_t kernel : {3U, 1U}) {
    Term t;
    t.kernel = kernel;
    t.pad = kernel / 2;
    t.input.c = 4;
    t.weights.assign(std::size_t{4} * 4 * kernel * kernel, 0);
    round.terms.push_back(t);
  }
  const auto set = [&](std::size_t term, std::uint32_t o, std::uint32_t i, std::uint32_t ky,
                       std::uint32_t kx, std::int16_t w) {
    Term& t = round.terms[term];
    t.weights[((std::size_t{o} * t.input.c + i) * t.kernel + ky) * t.kernel + kx] = w;
  };
  const std::int16_t center[4] = {1, 2, -3, 1}, pointwise[4] = {-1, -1, 1, 1};
  for (std::uint32_t o = 0; o < 4; ++o) {
    set(0, o, o, 1, 1, center[o]);  // the same row as the 1x1 tap below
    set(1, o, o, 0, 0, pointwise[o]);
    set(0, o, (o + 1) % 4, 0, 2, static_cast<std::int16_t>(o % 2 == 0 ? 1 : -1));
    set(0, o, (o + 2) % 4, 2, 0, -3);
  }
  round.bias = {3, -1, 0, 2};
  const Model model = Model::from_parts("merged", 8, 2, 2, Shape{4, 4, 4}, {round});
  std::vector<std::int64_t> image(64);
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = static_cast<std::int64_t>((i * 7) % 4);
  const ParameterSet& params = safhire::rlwe::parameter_set("default-b8");
  for (const std::uint32_t row_bits : {64U, 32U}) {
    InferenceOptions options;
    options.gamma = 2;
    SeededRandom random = SeededRandom::from_counter(210);
    Client client(params, options, random);
    Server server(model, params, options,
                  safhire::backend::make_cpu_backend(params, {2, options.mode, row_bits},
                                                     client.evaluation_keys(), 1),
                  seed_of(5));
    std::optional<Upload> up = client.start(server.model_info(), image);
    while (up)
      up = client.receive(server.process(*up));
    EXPECT_EQ(client.logits(), evaluate(model, image)) << row_bits << "-bit rows";
  }
}

// Accumulators at both ends of the signed 8-bit window (the model bound allows them: it is the
// range of the partial sums, not |bias| + l1 max_input) decrypt exactly.
TEST(EncryptedInference, AccumulatorsAtTheEdgesOfTheWindow) {
  const Model model = fully_connected_b8({42, 0, -42, 0, -42, 0, 42, 0}, {1, -2});
  const std::vector<std::int64_t> image = {3, 1, 0, 2};
  const std::vector<std::int64_t> expected = {1 + 42 * 3, -2 - 42 * 3};  // 127, -128
  ASSERT_EQ(evaluate(model, image), expected);
  for (std::uint32_t gamma : {0U, 2U}) {
    InferenceOptions options;
    options.gamma = gamma;
    EXPECT_EQ(infer(model, safhire::rlwe::parameter_set("default-b8"), options, image).logits,
              expected)
        << "gamma " << gamma;
  }
}

TEST(EncryptedInferenceThreads, ThreeWorkersGiveTheSameResults) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  for (std::uint32_t gamma : {0U, 1U}) {
    InferenceOptions options;
    options.gamma = gamma;
    const Transcript run =
        infer(model, safhire::rlwe::parameter_set("default-b8"), options, refs[7].pixels, 4, 3);
    EXPECT_EQ(run.logits, evaluate(model, refs[7].pixels)) << "gamma " << gamma;
  }
}

TEST(Shuffling, FreshPerSessionAndRoundAndNeverOnTheLastRound) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const ParameterSet& params = safhire::rlwe::parameter_set("default-b8");
  SeededRandom random = SeededRandom::from_counter(210);
  Client client(params, {}, random);
  Server a(model, params, {}, client.evaluation_keys(), seed_of(1));
  Server b(model, params, {}, client.evaluation_keys(), seed_of(2));
  const std::uint32_t rounds = static_cast<std::uint32_t>(model.rounds().size());
  for (std::uint32_t r = 0; r + 1 < rounds; ++r) {
    const auto pa = a.permutation(r), pb = b.permutation(r);
    std::vector<std::uint32_t> sorted = pa;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::uint32_t> id(pa.size());
    std::iota(id.begin(), id.end(), 0U);
    EXPECT_EQ(sorted, id) << "round " << r << " is not a permutation";
    EXPECT_NE(pa, id) << "round " << r << " is not shuffled";
    EXPECT_NE(pa, pb) << "two sessions share round " << r << "'s permutation";
    if (r + 2 < rounds && pa.size() == a.permutation(r + 1).size()) {
      EXPECT_NE(pa, a.permutation(r + 1)) << "rounds " << r << " and " << r + 1 << " share one";
    }
  }
  std::vector<std::uint32_t> last = a.permutation(rounds - 1), id(last.size());
  std::iota(id.begin(), id.end(), 0U);
  EXPECT_EQ(last, id);
}

TEST(Shuffling, ClientNeverSeesUnshuffledHiddenPreactivations) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  const Transcript run =
      infer(model, safhire::rlwe::parameter_set("default-b8"), {}, refs[5].pixels);
  std::vector<std::vector<std::int64_t>> accs;
  evaluate(model, refs[5].pixels, &accs);
  for (std::size_t r = 0; r + 1 < accs.size(); ++r)
    EXPECT_NE(run.seen[r], accs[r]) << "round " << r << " reached the client in model order";
  EXPECT_EQ(run.seen.back(), accs.back());  // the logits, by design
}

TEST(Messages, MalformedUploadsAreRejectedAndTheSessionContinues) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  const ParameterSet& params = safhire::rlwe::parameter_set("default-b8");
  SeededRandom random = SeededRandom::from_counter(220);
  Client client(params, {}, random);
  Server server(model, params, {}, client.evaluation_keys(), seed_of(3));
  std::optional<Upload> up = client.start(server.model_info(), refs[0].pixels);
  auto code_of = [&](const Upload& bad) {
    return safhire::testing::code_of([&] { server.process(bad); });
  };
  Upload wrong_round = *up;
  wrong_round.round = 3;
  EXPECT_EQ(code_of(wrong_round), ErrorCode::malformed_input);
  Upload missing = *up;
  missing.ciphertexts.pop_back();
  EXPECT_EQ(code_of(missing), ErrorCode::malformed_input);
  Upload wrong_count = *up;
  wrong_count.values += 1;
  EXPECT_EQ(code_of(wrong_count), ErrorCode::malformed_input);
  Upload wrong_ring = *up;
  wrong_ring.ciphertexts[0] = safhire::rlwe::SeededCiphertext(safhire::ring::RingParams(3, 3));
  EXPECT_EQ(code_of(wrong_ring), ErrorCode::size_mismatch);
  // The session goes on with the genuine messages.
  while (up)
    up = client.receive(server.process(*up));
  EXPECT_EQ(client.logits(), evaluate(model, refs[0].pixels));
  // A download for the wrong round is rejected by the client.
  Download stray;
  stray.round = 7;
  EXPECT_THROW(client.receive(stray), safhire::Error);
}

}  // namespace
