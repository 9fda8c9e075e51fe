#include "decoders.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/encoder.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/ckks/serialize.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/hybrid/model.hpp"
#include "safhire/hybrid/protocol.hpp"
#include "safhire/rlwe/serialize.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::fuzz {

namespace {

using Bytes = std::vector<std::uint8_t>;
using Span = std::span<const std::uint8_t>;

// encode(decode(b)) must be a fixed point of decode-then-encode.
template <class Encode, class Decode>
void round_trip(Span bytes, Decode decode, Encode encode) {
  const Bytes once = encode(decode(bytes));
  const Bytes twice = encode(decode(Span(once)));
  if (once != twice) std::abort();
}

// ---- RLWE (the hybrid protocol's parameter set) ----------------------------------------------

const rlwe::ParameterSet& b8() {
  return rlwe::parameter_set("default-b8");
}

core::SeededRandom& seed_random() {
  static core::SeededRandom random = core::SeededRandom::from_counter(2026);
  return random;
}

// The small model the protocol seeds come from, and one recorded inference of it.
const hybrid::Model& small_model() {
  static const hybrid::Model model = hybrid::Model::load(SAFHIRE_MODELS_DIR "/small-b8.sfhm");
  return model;
}

class RecordingTransport final : public hybrid::Transport {
 public:
  explicit RecordingTransport(hybrid::InferenceService& service) : service_(&service) {}
  std::vector<Bytes> requests, replies;

 protected:
  Bytes round_trip(Span request) override {
    requests.emplace_back(request.begin(), request.end());
    replies.push_back(service_->handle(request));
    return replies.back();
  }

 private:
  hybrid::InferenceService* service_;
};

// hello, then the uploads; replies: welcome, then the downloads.
const RecordingTransport& recorded_inference() {
  static const std::unique_ptr<RecordingTransport> recorded = [] {
    static hybrid::InferenceService service(small_model(), rlwe::SecurityPolicy::require_128);
    auto t = std::make_unique<RecordingTransport>(service);
    hybrid::RemoteClient client(*t, b8(), {}, seed_random());
    std::vector<std::int64_t> image(hybrid::ModelInfo::of(small_model()).input_size);
    for (std::size_t i = 0; i < image.size(); ++i)
      image[i] = static_cast<std::int64_t>(i * 7 % 4);
    client.infer(image);
    return t;
  }();
  return *recorded;
}

std::vector<Bytes> one(Bytes b) {
  return {std::move(b)};
}

// ---- CKKS (a small insecure ring: the formats do not depend on N beyond sizes) --------------

struct CkksWorld {
  ckks::CkksContext context{ckks::named_set("n12-l2"), true};
  std::unique_ptr<ckks::RnsOps> ops = ckks::make_cpu_rns_ops(context, 1);
};

const CkksWorld& ckks_world() {
  static const CkksWorld w;
  return w;
}

struct CkksSamples {
  ckks::SecretKey sk;
  ckks::PublicKey pk;
  ckks::SwitchingKey relin, seeded_relin;
  ckks::GaloisKeys galois;
  ckks::Plaintext plain;
  ckks::Ciphertext ct, low;
};

const CkksSamples& ckks_samples() {
  static const CkksSamples s = [] {
    const CkksWorld& w = ckks_world();
    CkksSamples out;
    ckks::KeyGenerator gen(w.context, *w.ops, seed_random());
    out.sk = gen.secret_key();
    out.pk = gen.public_key(out.sk);
    out.relin = gen.relinearization_key(out.sk);
    gen.set_seeded(true);
    out.seeded_relin = gen.relinearization_key(out.sk);
    const int steps[] = {1, -3};
    out.galois = gen.galois_keys(out.sk, steps, true, 1);
    const ckks::Encoder encoder(w.context, *w.ops);
    std::vector<std::complex<double>> v(8, {0.5, -0.25});
    out.plain = encoder.encode(v, std::exp2(24), 2, 8);
    ckks::Encryptor enc(w.context, *w.ops, seed_random());
    out.ct = enc.encrypt(out.plain, out.sk);
    ckks::Evaluator ev(w.context, *w.ops);
    out.low = ev.drop_to_level(out.ct, 0);
    return out;
  }();
  return s;
}

// The live service the "service" target talks to: one open session at all times.
struct LiveService {
  hybrid::InferenceService service{small_model(), rlwe::SecurityPolicy::require_128};
  std::uint64_t session = 0;
  void open() {
    const Bytes welcome = service.handle(recorded_inference().requests.front());
    session = hybrid::decode_welcome(welcome).session;
  }
};

void service_run(Span bytes) {
  static LiveService live;
  if (live.service.sessions() == 0) live.open();
  Bytes request(bytes.begin(), bytes.end());
  // Uploads go to the open session, so that their contents, not the address, are explored.
  if (request.size() >= 16 && request[6] == static_cast<std::uint8_t>(hybrid::MessageType::upload))
    std::memcpy(request.data() + 8, &live.session, 8);
  // handle() answers everything with a message: an exception escaping it is a finding.
  const Bytes reply = live.service.handle(request);
  hybrid::message_type(reply);
}

std::vector<Bytes> uploads() {
  const auto& r = recorded_inference().requests;
  return {r.begin() + 1, r.end()};
}

std::vector<Bytes> downloads() {
  const auto& r = recorded_inference().replies;
  return {r.begin() + 1, r.end()};
}

}  // namespace

const std::vector<Decoder>& decoders() {
  using namespace hybrid;
  static const std::vector<Decoder> all = {
      {"protocol_hello",
       [](Span b) {
         round_trip(
             b, [](Span x) { return decode_hello(x, rlwe::SecurityPolicy::require_128); },
             [](const Hello& h) { return encode_hello(h, rlwe::parameter_set(h.params_id)); });
       },
       [] { return one(recorded_inference().requests.front()); }},
      {"protocol_welcome", [](Span b) { round_trip(b, decode_welcome, encode_welcome); },
       [] { return one(recorded_inference().replies.front()); }},
      {"protocol_upload",
       [](Span b) {
         const std::uint64_t session = message_session(b);
         round_trip(
             b, [](Span x) { return decode_upload(x, b8()); },
             [session](const Upload& u) { return encode_upload(session, u, b8()); });
       },
       uploads},
      {"protocol_download",
       [](Span b) {
         const std::uint64_t session = message_session(b);
         round_trip(
             b, [](Span x) { return decode_download(x, b8()); },
             [session](const Download& d) { return encode_download(session, d, b8()); });
       },
       downloads},
      {"protocol_error", [](Span b) { round_trip(b, decode_error, encode_error); },
       [] {
         return one(encode_error({ErrorCode::malformed_input, "upload: truncated ciphertext"}));
       }},
      {"service", service_run,
       [] {
         std::vector<Bytes> all = uploads();
         all.push_back(recorded_inference().requests.front());
         return all;
       }},
      {"rlwe_ciphertext",
       [](Span b) {
         round_trip(
             b, [](Span x) { return rlwe::parse_ciphertext(x, b8()); },
             [](const rlwe::Ciphertext& c) { return rlwe::serialize(b8(), c); });
       },
       [] {
         const rlwe::SecretKey key(b8(), seed_random());
         rlwe::Encryptor enc(key, seed_random());
         const std::vector<std::uint64_t> mu(b8().ring.N(), std::uint64_t{1} << 60);
         return one(rlwe::serialize(b8(), enc.encrypt(mu)));
       }},
      {"rlwe_seeded_ciphertext",
       [](Span b) {
         round_trip(
             b, [](Span x) { return rlwe::parse_seeded_ciphertext(x, b8()); },
             [](const rlwe::SeededCiphertext& c) { return rlwe::serialize(b8(), c); });
       },
       [] {
         const rlwe::SecretKey key(b8(), seed_random());
         rlwe::Encryptor enc(key, seed_random());
         const std::vector<std::uint64_t> mu(b8().ring.N(), std::uint64_t{3} << 61);
         return one(rlwe::serialize(b8(), enc.encrypt_seeded(mu, 24)));
       }},
      {"rlwe_switched_ciphertext",
       [](Span b) {
         round_trip(
             b, [](Span x) { return rlwe::parse_switched_ciphertext(x, b8()); },
             [](const rlwe::SwitchedCiphertext& c) { return rlwe::serialize(b8(), c); });
       },
       [] {
         const rlwe::SecretKey key(b8(), seed_random());
         rlwe::Encryptor enc(key, seed_random());
         const std::vector<std::uint64_t> mu(b8().ring.N(), std::uint64_t{1} << 62);
         return one(rlwe::serialize(b8(), rlwe::modulus_switch(enc.encrypt(mu), 16, 12)));
       }},
      {"rlwe_key",
       [](Span b) {
         round_trip(
             b, [](Span x) { return rlwe::parse_key_switch_key(x, b8()); },
             [](const rlwe::KeySwitchKey& k) { return rlwe::serialize(b8(), k); });
       },
       [] {
         const hybrid::Client client(b8(), {}, seed_random());
         const auto& keys = client.evaluation_keys();
         return one(rlwe::serialize(b8(), keys.at(keys.elements().front())));
       }},
      {"ckks_ciphertext",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_ciphertext(c, x); },
             [&c](const ckks::Ciphertext& ct) { return ckks::serialize(c, ct); });
       },
       [] {
         const auto& c = ckks_world().context;
         return std::vector<Bytes>{ckks::serialize(c, ckks_samples().ct),
                                   ckks::serialize(c, ckks_samples().low)};
       }},
      {"ckks_plaintext",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_plaintext(c, x); },
             [&c](const ckks::Plaintext& p) { return ckks::serialize(c, p); });
       },
       [] { return one(ckks::serialize(ckks_world().context, ckks_samples().plain)); }},
      {"ckks_public_key",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_public_key(c, x); },
             [&c](const ckks::PublicKey& k) { return ckks::serialize(c, k); });
       },
       [] { return one(ckks::serialize(ckks_world().context, ckks_samples().pk)); }},
      {"ckks_secret_key",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_secret_key(c, x); },
             [&c](const ckks::SecretKey& k) { return ckks::serialize(c, k); });
       },
       [] { return one(ckks::serialize(ckks_world().context, ckks_samples().sk)); }},
      {"ckks_switching_key",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_switching_key(c, x); },
             [&c](const ckks::SwitchingKey& k) { return ckks::serialize(c, k); });
       },
       [] {
         const auto& c = ckks_world().context;
         return std::vector<Bytes>{ckks::serialize(c, ckks_samples().relin),
                                   ckks::serialize(c, ckks_samples().seeded_relin)};
       }},
      {"ckks_galois_keys",
       [](Span b) {
         const auto& c = ckks_world().context;
         round_trip(
             b, [&c](Span x) { return ckks::deserialize_galois_keys(c, x); },
             [&c](const ckks::GaloisKeys& k) { return ckks::serialize(c, k); });
       },
       [] { return one(ckks::serialize(ckks_world().context, ckks_samples().galois)); }},
      {"ckks_params",
       [](Span b) { round_trip(b, ckks::deserialize_params, ckks::serialize_params); },
       [] {
         std::vector<Bytes> all;
         for (const auto& p : ckks::named_sets())
           all.push_back(ckks::serialize_params(p));
         return all;
       }},
      {"model",
       [](Span b) { round_trip(b, Model::parse, [](const Model& m) { return m.serialize(); }); },
       [] { return one(small_model().serialize()); }},
  };
  return all;
}

const Decoder& decoder(const std::string& name) {
  std::string known;
  for (const Decoder& d : decoders()) {
    if (name == d.name) return d;
    known += (known.empty() ? "" : ", ") + std::string(d.name);
  }
  throw Error(ErrorCode::invalid_argument, "no fuzz target '" + name + "'; known: " + known);
}

}  // namespace safhire::fuzz
