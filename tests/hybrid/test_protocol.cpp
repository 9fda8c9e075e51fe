// The wire protocol: messages round-trip; a whole inference through the in-process transport
// (gRPC's: test_serve.cpp) gives the plaintext evaluator's logits and counts its bytes; malformed,
// truncated, oversized and misaddressed messages get typed error replies while other sessions
// go on.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model_files.hpp"
#include "safhire/hybrid/plan.hpp"
#include "safhire/hybrid/protocol.hpp"

namespace {

using namespace safhire::hybrid;
using safhire::ErrorCode;
using safhire::core::SeededRandom;
using safhire::hybrid::testing::load_reference;
using safhire::hybrid::testing::model_path;

const safhire::rlwe::ParameterSet& b8() {
  return safhire::rlwe::parameter_set("default-b8");
}

TEST(Protocol, WelcomeRoundTrips) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  Welcome w{42, model.name(), ModelInfo::of(model)};
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    w.model.upload_bits.push_back(model.encoding_bits(r) + 1 + static_cast<std::uint32_t>(r));
    w.model.derived_powers.push_back(r % 2 == 0 ? 1 : 0);
  }
  const Welcome back = decode_welcome(encode_welcome(w));
  EXPECT_EQ(back.session, 42U);
  EXPECT_EQ(back.model_name, model.name());
  EXPECT_EQ(back.model.outputs, w.model.outputs);
  EXPECT_EQ(back.model.round_bits, w.model.round_bits);
  EXPECT_EQ(back.model.encoding_bits, w.model.encoding_bits);
  EXPECT_EQ(back.model.upload_bits, w.model.upload_bits);
  EXPECT_EQ(back.model.derived_powers, w.model.derived_powers);
  EXPECT_EQ(back.model.input_max, w.model.input_max);
  ASSERT_EQ(back.model.requant.size(), w.model.requant.size());
  for (std::size_t r = 0; r < w.model.requant.size(); ++r) {
    ASSERT_EQ(back.model.requant[r].has_value(), w.model.requant[r].has_value());
    if (w.model.requant[r]) {
      EXPECT_EQ(back.model.requant[r]->mult, w.model.requant[r]->mult);
      EXPECT_EQ(back.model.requant[r]->shift, w.model.requant[r]->shift);
    }
  }
  const Bytes bytes = encode_welcome(w);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_THROW(decode_welcome(std::span<const std::uint8_t>(bytes.data(), cut)), safhire::Error);
  // An upload precision that would not carry the encoded values, or beyond a word, is refused.
  for (std::uint32_t bad : {w.model.encoding_bits[0], 65U}) {
    Welcome odd = w;
    odd.model.upload_bits[0] = bad;
    try {
      decode_welcome(encode_welcome(odd));
      ADD_FAILURE() << "upload precision " << bad << " accepted";
    } catch (const safhire::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::malformed_input) << bad;
    }
  }
  Welcome odd = w;
  odd.model.derived_powers[0] = 2;  // neither uploaded nor derived
  EXPECT_THROW(decode_welcome(encode_welcome(odd)), safhire::Error);
}

TEST(Protocol, InferenceThroughTheInProcessTransport) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128);
  InProcessTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(300);
  RemoteClient client(transport, b8(), {}, random);
  // Two sessions: the second finds the layers the CPU backend prepared for the first.
  for (int i = 0; i < 2; ++i) {
    const InferenceReport report = client.infer(refs[i].pixels);
    EXPECT_EQ(report.logits, evaluate(model, refs[i].pixels));
    EXPECT_GT(report.bytes_up, 0U);
    EXPECT_GT(report.bytes_down, 0U);
    EXPECT_GT(report.key_bytes, 0U);
  }
  EXPECT_EQ(service.sessions(), 0U);  // finished sessions are dropped
}

// A client that knows nothing of the model sends pixels of 8 bits: the welcome's input range
// (small-b8 takes 2-bit images) requantizes them, round(p 3 / 255), as the training did.
TEST(Protocol, ClientsLearnTheInputRangeFromTheWelcome) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  ASSERT_EQ(model.input_max(), 3);
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128);
  InProcessTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(301);
  RemoteClient client(transport, b8(), {}, random);
  const std::size_t size = ModelInfo::of(model).input_size;
  std::vector<std::int64_t> pixels(size), expected(size);
  std::uint64_t state = 7;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    pixels[i] = static_cast<std::int64_t>(state >> 56);  // 0 .. 255
    expected[i] = std::lround(static_cast<double>(pixels[i]) * 3.0 / 255.0);
  }
  EXPECT_EQ(client.infer(pixels, 255).logits, evaluate(model, expected));
  pixels[5] = 256;
  try {
    client.infer(pixels, 255);
    ADD_FAILURE() << "a value above the stated range was sent";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

// The planner predicts, to the byte and to the switch, what an inference costs: with every power
// uploaded (gamma 0, and small-b12's 12-bit rounds at gamma 1) and with the server deriving them
// (small-b8's 8-bit rounds on default-b8 at gamma 2).
TEST(Protocol, PlanPredictsBytesAndKeySwitches) {
  struct Case {
    const char* model;
    const char* set;
    std::uint32_t gamma;
  };
  std::size_t derived = 0;
  for (const Case& c : {Case{"small-b12", "default-b12", 0}, Case{"small-b12", "default-b12", 1},
                        Case{"small-b8", "default-b8", 2}}) {
    const Model model = Model::load(model_path(std::string(c.model) + ".sfhm"));
    const auto refs = load_reference(std::string(c.model) + ".ref");
    const auto& params = safhire::rlwe::parameter_set(c.set);
    InferenceOptions options;
    options.gamma = c.gamma;
    const Plan plan = plan_inference(model, params, options);
    InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128);
    InProcessTransport transport(service);
    SeededRandom random = SeededRandom::from_counter(303);
    RemoteClient client(transport, params, options, random);
    const InferenceReport report = client.infer(refs[2].pixels);
    const std::string where = std::string(c.model) + ", gamma " + std::to_string(c.gamma);
    EXPECT_EQ(report.logits, evaluate(model, refs[2].pixels)) << where;
    EXPECT_EQ(service.key_switches(), *plan.key_switches) << where;
    EXPECT_EQ(report.bytes_up, plan.bytes_up) << where;
    ModelInfo info = ModelInfo::of(model);
    for (const RoundPlan& r : plan.rounds) {
      info.upload_bits.push_back(r.upload_bits);
      info.derived_powers.push_back(r.derived_powers ? 1 : 0);
      derived += r.derived_powers ? 1 : 0;
    }
    EXPECT_EQ(client.model().derived_powers, info.derived_powers) << where;
    const std::uint64_t welcome = encode_welcome(Welcome{1, model.name(), info}).size();
    EXPECT_EQ(report.bytes_down, plan.bytes_down + welcome) << where;
  }
  EXPECT_GT(derived, 0U);
}

ErrorCode reply_code(const Bytes& reply) {
  EXPECT_EQ(message_type(reply), MessageType::error);
  return decode_error(reply).code;
}

TEST(Protocol, BadMessagesGetTypedErrorsAndOtherSessionsContinue) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const auto refs = load_reference("small-b8.ref");
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128);
  // A genuine session, driven by hand.
  SeededRandom random = SeededRandom::from_counter(302);
  Client client(b8(), {}, random);
  Hello hello{b8().id, {}, {}};
  for (std::uint64_t k : client.evaluation_keys().elements())
    hello.keys.push_back(client.evaluation_keys().at(k));
  const Bytes hello_bytes = encode_hello(hello, b8());
  const Welcome welcome = decode_welcome(service.handle(hello_bytes));
  std::optional<Upload> up = client.start(welcome.model, refs[1].pixels);
  const Bytes first = encode_upload(welcome.session, *up, b8());

  EXPECT_EQ(reply_code(service.handle(Bytes{1, 2, 3})), ErrorCode::malformed_input);
  Bytes bad_magic = first;
  bad_magic[0] = 'X';
  EXPECT_EQ(reply_code(service.handle(bad_magic)), ErrorCode::malformed_input);
  for (std::size_t cut : {std::size_t{10}, first.size() / 2, first.size() - 1}) {
    EXPECT_EQ(reply_code(service.handle(std::span<const std::uint8_t>(first.data(), cut))),
              ErrorCode::malformed_input)
        << "cut at " << cut;
  }
  // Every cut inside the 16-byte header, including those that keep the type but not the
  // session (7 to 15 bytes: once read past the end, found by fuzz_protocol_upload).
  for (std::size_t cut = 0; cut < 16; ++cut) {
    const std::span<const std::uint8_t> head(first.data(), cut);
    EXPECT_THROW(message_session(head), safhire::Error) << "cut at " << cut;
    EXPECT_EQ(reply_code(service.handle(head)), ErrorCode::malformed_input) << "cut at " << cut;
  }
  Bytes longer = first;
  longer.push_back(0);
  EXPECT_EQ(reply_code(service.handle(longer)), ErrorCode::malformed_input);
  EXPECT_EQ(reply_code(service.handle(encode_upload(welcome.session + 1, *up, b8()))),
            ErrorCode::invalid_argument);  // unknown session
  Upload later = *up;
  later.round = 2;
  EXPECT_EQ(reply_code(service.handle(encode_upload(welcome.session, later, b8()))),
            ErrorCode::malformed_input);  // out of order
  for (std::size_t cut : {std::size_t{20}, hello_bytes.size() / 3, hello_bytes.size() - 1}) {
    EXPECT_EQ(reply_code(service.handle(std::span<const std::uint8_t>(hello_bytes.data(), cut))),
              ErrorCode::malformed_input);
  }
  Bytes insecure = hello_bytes;
  insecure[16] = 1;  // parameter-set id 1: paper-b8, below 128 bits
  insecure[17] = 0;
  EXPECT_EQ(reply_code(service.handle(insecure)), ErrorCode::insecure_parameters);
  // Too few keys for packing (rlwe::packing_elements): refused at the hello, no session opened.
  const std::size_t open = service.sessions();
  Hello fewer = hello;
  fewer.keys.pop_back();
  EXPECT_EQ(reply_code(service.handle(encode_hello(fewer, b8()))), ErrorCode::invalid_argument);
  Hello paper = hello;  // paper mode's bottom level needs sigma_(M-1), which fast mode's keys lack
  paper.options.mode = safhire::rlwe::TreeMode::paper;
  EXPECT_EQ(reply_code(service.handle(encode_hello(paper, b8()))), ErrorCode::invalid_argument);
  EXPECT_EQ(service.sessions(), open);
  // The genuine session is untouched and completes.
  Bytes request = first;
  while (true) {
    const Bytes reply = service.handle(request);
    ASSERT_EQ(message_type(reply), MessageType::download);
    up = client.receive(decode_download(reply, b8()));
    if (!up) break;
    request = encode_upload(welcome.session, *up, b8());
  }
  EXPECT_EQ(client.logits(), evaluate(model, refs[1].pixels));
}

}  // namespace
