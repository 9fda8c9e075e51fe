#include "safhire/hybrid/protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "safhire/core/random.hpp"
#include "safhire/core/serialize.hpp"
#include "safhire/hybrid/dataset.hpp"
#include "safhire/hybrid/plan.hpp"
#include "safhire/rlwe/serialize.hpp"

namespace safhire::hybrid {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint8_t kMagic[4] = {'S', 'F', 'H', 'P'};
constexpr std::uint32_t kMaxRounds = 4096, kMaxKeys = 4096, kMaxText = 4096;
constexpr std::size_t kMaxValues = std::size_t{1} << 24;

void write_header(core::ByteWriter& w, MessageType type, std::uint64_t session) {
  w.bytes(kMagic);
  w.u16(kProtocolVersion);
  w.u8(static_cast<std::uint8_t>(type));
  w.u8(0);
  w.u64(session);
}

// Reads the header and checks the type; returns the session.
std::uint64_t read_header(core::ByteReader& r, MessageType expected) {
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic)))
    r.fail("not a Safhire protocol message (bad magic)");
  const std::uint16_t version = r.u16();
  if (version != kProtocolVersion)
    r.fail("protocol version " + std::to_string(version) + ", this build speaks " +
           std::to_string(kProtocolVersion));
  const std::uint8_t type = r.u8();
  if (type != static_cast<std::uint8_t>(expected))
    r.fail("message type " + std::to_string(type) + ", expected " +
           std::to_string(static_cast<int>(expected)));
  r.u8();
  return r.u64();
}

void write_blob(core::ByteWriter& w, const Bytes& blob) {
  w.u32(static_cast<std::uint32_t>(blob.size()));
  w.bytes(blob);
}

Bytes read_blob(core::ByteReader& r) {
  const std::uint32_t n = r.u32();
  if (n > r.remaining()) r.fail("truncated object of " + std::to_string(n) + " bytes");
  Bytes b(n);
  r.bytes(b);
  return b;
}

std::string read_text(core::ByteReader& r) {
  const std::uint32_t n = r.u32();
  if (n > kMaxText || n > r.remaining()) r.fail("bad text length " + std::to_string(n));
  Bytes b(n);
  r.bytes(b);
  return std::string(b.begin(), b.end());
}

void write_text(core::ByteWriter& w, const std::string& s) {
  w.u32(static_cast<std::uint32_t>(s.size()));
  w.bytes(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

std::uint32_t bounded(core::ByteReader& r, std::uint64_t lo, std::uint64_t hi, const char* what) {
  const std::uint64_t v = r.u32();
  if (v < lo || v > hi) r.fail(std::string(what) + " = " + std::to_string(v) + " out of range");
  return static_cast<std::uint32_t>(v);
}

}  // namespace

// ---- Messages ---------------------------------------------------------------------------------

Bytes encode_hello(const Hello& hello, const rlwe::ParameterSet& params) {
  core::ByteWriter w;
  write_header(w, MessageType::hello, 0);
  w.u16(hello.params_id);
  w.u8(static_cast<std::uint8_t>(hello.options.gamma));
  w.u8(hello.options.mode == rlwe::TreeMode::fast ? 0 : 1);
  w.u8(hello.options.shuffle ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(hello.keys.size()));
  for (const rlwe::KeySwitchKey& k : hello.keys)
    write_blob(w, rlwe::serialize(params, k));
  return w.take();
}

Hello decode_hello(std::span<const std::uint8_t> bytes, rlwe::SecurityPolicy policy) {
  core::ByteReader r(bytes, "hello");
  read_header(r, MessageType::hello);
  Hello h;
  h.params_id = r.u16();
  const rlwe::ParameterSet& params = rlwe::parameter_set(h.params_id, policy);
  h.options.gamma = r.u8();
  const std::uint8_t mode = r.u8(), shuffle = r.u8();
  if (h.options.gamma >= params.ring.a()) r.fail("gamma must be below a");
  if (mode > 1 || shuffle > 1) r.fail("bad mode or shuffle flag");
  h.options.mode = mode == 0 ? rlwe::TreeMode::fast : rlwe::TreeMode::paper;
  h.options.shuffle = shuffle == 1;
  const std::uint32_t count = bounded(r, 1, kMaxKeys, "key count");
  for (std::uint32_t i = 0; i < count; ++i)
    h.keys.push_back(rlwe::parse_key_switch_key(read_blob(r), params));
  r.expect_end();
  return h;
}

Bytes encode_welcome(const Welcome& welcome) {
  core::ByteWriter w;
  write_header(w, MessageType::welcome, welcome.session);
  write_text(w, welcome.model_name);
  const ModelInfo& m = welcome.model;
  w.u64(static_cast<std::uint64_t>(m.activation_max));
  w.u64(static_cast<std::uint64_t>(m.input_max));
  w.u64(m.input_size);
  w.u32(static_cast<std::uint32_t>(m.outputs.size()));
  for (std::size_t r = 0; r < m.outputs.size(); ++r) {
    w.u64(m.outputs[r]);
    w.u32(m.round_bits[r]);
    w.u32(m.encoding_bits[r]);
    w.u8(static_cast<std::uint8_t>(m.upload_bits.at(r)));
    w.u8(m.derived_powers.at(r));
    w.u8(m.requant[r] ? 1 : 0);
    w.u32(m.requant[r] ? m.requant[r]->mult : 0);
    w.u32(m.requant[r] ? m.requant[r]->shift : 0);
  }
  return w.take();
}

Welcome decode_welcome(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "welcome");
  Welcome out;
  out.session = read_header(r, MessageType::welcome);
  out.model_name = read_text(r);
  ModelInfo& m = out.model;
  m.activation_max = static_cast<std::int64_t>(r.u64());
  m.input_max = static_cast<std::int64_t>(r.u64());
  m.input_size = r.u64();
  if (m.activation_max < 1 || m.activation_max > (std::int64_t{1} << 31) || m.input_max < 1 ||
      m.input_max > 0xffff || m.input_size == 0 || m.input_size > kMaxValues)
    r.fail("bad model description");
  const std::uint32_t rounds = bounded(r, 1, kMaxRounds, "round count");
  for (std::uint32_t i = 0; i < rounds; ++i) {
    const std::uint64_t outputs = r.u64();
    if (outputs == 0 || outputs > kMaxValues) r.fail("bad output count");
    m.outputs.push_back(outputs);
    m.round_bits.push_back(bounded(r, 2, 32, "round bits"));
    m.encoding_bits.push_back(bounded(r, 2, 32, "encoding bits"));
    const std::uint8_t kept = r.u8();
    if (kept <= m.encoding_bits.back() || kept > 64) r.fail("bad upload precision");
    m.upload_bits.push_back(kept);
    const std::uint8_t derived = r.u8();
    if (derived > 1) r.fail("bad upload form");
    m.derived_powers.push_back(derived);
    const std::uint8_t has = r.u8();
    const std::uint32_t mult = r.u32(), shift = r.u32();
    if (has > 1 || (has == 1) != (i + 1 < rounds) || (has && (shift < 1 || shift > 32)))
      r.fail("bad requantization of round " + std::to_string(i));
    m.requant.push_back(has ? std::optional<Requant>(Requant{mult, shift}) : std::nullopt);
  }
  r.expect_end();
  return out;
}

namespace {

// Uploads and downloads share a layout: u32 round, u32 values, u32 count, count objects.
template <class Item>
Bytes encode_round(MessageType type, std::uint64_t session, std::uint32_t round,
                   std::uint32_t values, const std::vector<Item>& items,
                   const rlwe::ParameterSet& params) {
  core::ByteWriter w;
  write_header(w, type, session);
  w.u32(round);
  w.u32(values);
  w.u32(static_cast<std::uint32_t>(items.size()));
  for (const Item& item : items)
    write_blob(w, rlwe::serialize(params, item));
  return w.take();
}

// `min_bytes`: the least an object can take, so that the count is checked against the bytes
// present before anything is reserved.
template <class Message, class Parse>
Message decode_round(std::span<const std::uint8_t> bytes, MessageType type, const char* what,
                     std::size_t min_bytes, Parse parse) {
  core::ByteReader r(bytes, what);
  read_header(r, type);
  Message m;
  m.round = bounded(r, 0, kMaxRounds, "round");
  m.values = bounded(r, 1, kMaxValues, "value count");
  const std::uint32_t count = r.u32();
  if (count == 0 || count > r.remaining() / min_bytes)
    r.fail("bad ciphertext count " + std::to_string(count));
  for (std::uint32_t i = 0; i < count; ++i)
    parse(m, read_blob(r));
  r.expect_end();
  return m;
}

}  // namespace

Bytes encode_upload(std::uint64_t session, const Upload& up, const rlwe::ParameterSet& params) {
  return encode_round(MessageType::upload, session, up.round, up.values, up.ciphertexts, params);
}

Upload decode_upload(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params) {
  // A seeded ciphertext holds at least its seed and one bit per value.
  const std::size_t min_bytes = 32 + (std::size_t{params.ring.N()} + 7) / 8;
  return decode_round<Upload>(
      bytes, MessageType::upload, "upload", min_bytes, [&](Upload& up, const Bytes& blob) {
        up.ciphertexts.push_back(rlwe::parse_seeded_ciphertext(blob, params));
      });
}

Bytes encode_download(std::uint64_t session, const Download& d, const rlwe::ParameterSet& params) {
  return encode_round(MessageType::download, session, d.round, d.values, d.packed, params);
}

Download decode_download(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params) {
  // A switched ciphertext holds at least one bit per value of a and of b.
  const std::size_t min_bytes = 2 * ((std::size_t{params.ring.N()} + 7) / 8);
  return decode_round<Download>(bytes, MessageType::download, "download", min_bytes,
                                [&](Download& d, const Bytes& blob) {
                                  d.packed.push_back(rlwe::parse_switched_ciphertext(blob, params));
                                });
}

Bytes encode_error(const ErrorMessage& e) {
  core::ByteWriter w;
  write_header(w, MessageType::error, 0);
  w.u8(static_cast<std::uint8_t>(e.code));
  write_text(w, e.message.substr(0, kMaxText));
  return w.take();
}

ErrorMessage decode_error(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "error message");
  read_header(r, MessageType::error);
  ErrorMessage e;
  const std::uint8_t code = r.u8();
  if (code > static_cast<std::uint8_t>(ErrorCode::resource_exhausted)) r.fail("unknown error code");
  e.code = static_cast<ErrorCode>(code);
  e.message = read_text(r);
  r.expect_end();
  return e;
}

MessageType message_type(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "message");
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic)))
    r.fail("not a Safhire protocol message (bad magic)");
  if (r.u16() != kProtocolVersion) r.fail("unsupported protocol version");
  const std::uint8_t type = r.u8();
  if (type < 1 || type > 5) r.fail("unknown message type " + std::to_string(type));
  return static_cast<MessageType>(type);
}

std::uint64_t message_session(std::span<const std::uint8_t> bytes) {
  // The whole header: a message of 7 or fewer bytes has a type but no session (read past the
  // end before the fuzz target found it).
  const MessageType type = message_type(bytes);
  core::ByteReader r(bytes, "message");
  return read_header(r, type);
}

void throw_if_error(std::span<const std::uint8_t> bytes) {
  if (message_type(bytes) != MessageType::error) return;
  const ErrorMessage e = decode_error(bytes);
  throw Error(e.code, "server: " + e.message);
}

// ---- Service ----------------------------------------------------------------------------------

struct InferenceService::Session {
  rlwe::ParameterSet params;
  rlwe::GaloisKeys keys;
  std::unique_ptr<Server> server;
  std::mutex mutex;  // one request at a time
  // Under the service's mutex:
  std::string client;
  Clock::time_point last_used;
  bool busy = false;        // a request is being served: never expired nor evicted
  std::uint64_t bytes = 0;  // charged to the memory budget
  explicit Session(const rlwe::ParameterSet& p) : params(p) {}
};

namespace {

// Memory charged for a session, per byte of its hello: the keys as decoded (a regenerated from
// its seed beside b, in limb-NTT form) and as the backend keeps them. Each upload is charged
// twice its size (the message and the decoded rows) until the session ends.
constexpr std::uint64_t kChargePerHelloByte = 3, kChargePerUploadByte = 2;

// The size of a hello at gamma in both tree modes (its keys all have one size).
std::size_t hello_bytes(const rlwe::ParameterSet& params, std::uint32_t gamma) {
  const rlwe::Gadget& gadget = params.gadget(gamma);
  const std::size_t key =
      rlwe::serialize(params,
                      rlwe::key_switch_key_from_parts(
                          params, 1, gadget, std::vector<core::Seed>(gadget.levels),
                          std::vector<std::uint64_t>(std::size_t{gadget.levels} * params.ring.N())))
          .size();
  const std::size_t header = encode_hello(Hello{params.id, {gamma}, {}}, params).size();
  std::size_t keys = 0;
  for (const rlwe::TreeMode mode : {rlwe::TreeMode::fast, rlwe::TreeMode::paper})
    keys = std::max(keys, rlwe::galois_elements(params.ring, gamma, mode).size());
  return header + keys * (4 + key);
}

}  // namespace

std::size_t max_request_bytes(const Model& model, rlwe::SecurityPolicy policy) {
  std::size_t most = 0;
  for (const rlwe::ParameterSet& set : rlwe::builtin_parameter_sets()) {
    try {
      (void)rlwe::parameter_set(set.id, policy);  // refused sets are never served
    } catch (const Error&) {
      continue;
    }
    for (std::uint32_t gamma = 0; gamma < set.ring.a(); ++gamma) {
      most = std::max(most, hello_bytes(set, gamma));
      most = std::max<std::size_t>(most, max_upload_bytes(model, set, gamma));
    }
  }
  return most;
}

void ServiceLimits::validate() const {
  require(max_sessions >= 1 && max_sessions_per_client >= 1, ErrorCode::invalid_argument,
          "service limits: at least one session (in all and per client)");
  require(idle_timeout.count() > 0 && evict_after.count() >= 0 && evict_after <= idle_timeout,
          ErrorCode::invalid_argument,
          "service limits: the idle timeout must be positive and at least the eviction age");
  require(memory_budget > 0, ErrorCode::invalid_argument, "service limits: no memory budget");
}

InferenceService::InferenceService(const Model& model, rlwe::SecurityPolicy policy,
                                   unsigned threads, ServiceLimits limits)
    : InferenceService(
          model, policy,
          [threads](const rlwe::ParameterSet& params, const backend::Config& config,
                    const rlwe::GaloisKeys& keys) {
            return backend::make_cpu_backend(params, config, keys, threads);
          },
          limits) {}

InferenceService::InferenceService(const Model& model, rlwe::SecurityPolicy policy,
                                   BackendFactory backends, ServiceLimits limits)
    : model_(&model),
      policy_(policy),
      backends_(std::move(backends)),
      limits_(limits),
      max_request_(hybrid::max_request_bytes(model, policy)),
      layers_(model_layers(model)) {
  require(static_cast<bool>(backends_), ErrorCode::invalid_argument,
          "inference service: no backend factory");
  limits_.validate();
}

InferenceService::~InferenceService() = default;

std::size_t InferenceService::sessions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

std::uint64_t InferenceService::memory_charged() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return charged_;
}

ServerTimes InferenceService::times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return times_;
}

std::uint64_t InferenceService::key_switches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return key_switches_;
}

void InferenceService::drop(SessionMap::iterator it) {
  charged_ -= it->second->bytes;
  sessions_.erase(it);  // a request in flight keeps the session alive until it returns
}

std::size_t InferenceService::expire_locked() {
  const Clock::time_point now = Clock::now();
  std::size_t dropped = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const auto next = std::next(it);
    if (!it->second->busy && now - it->second->last_used >= limits_.idle_timeout) {
      drop(it);
      ++dropped;
    }
    it = next;
  }
  return dropped;
}

std::size_t InferenceService::expire_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return expire_locked();
}

void InferenceService::make_room(const std::string& client, std::uint64_t bytes) {
  expire_locked();
  const Clock::time_point now = Clock::now();
  const auto per_client = [&](const std::string& who) {
    std::size_t n = opening_.count(who) != 0 ? opening_.at(who) : 0;
    for (const auto& [id, session] : sessions_)
      n += session->client == who ? 1 : 0;
    return n;
  };
  std::size_t opening = 0;
  for (const auto& [who, n] : opening_)
    opening += n;
  while (true) {
    const bool client_full = per_client(client) >= limits_.max_sessions_per_client;
    const bool full = sessions_.size() + opening >= limits_.max_sessions ||
                      charged_ + bytes > limits_.memory_budget;
    if (!client_full && !full) return;
    // Whose session makes room: the client's own, else the client that holds the most.
    std::string victim_client = client;
    if (!client_full) {
      std::map<std::string, std::size_t> held;
      for (const auto& [id, session] : sessions_)
        ++held[session->client];
      std::size_t most = 0;
      for (const auto& [who, n] : held)
        if (n > most) most = n, victim_client = who;
    }
    auto victim = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      const Session& s = *it->second;
      if (s.busy || s.client != victim_client || now - s.last_used < limits_.evict_after) continue;
      if (victim == sessions_.end() || s.last_used < victim->second->last_used) victim = it;
    }
    if (victim == sessions_.end()) {
      std::string why;
      if (client_full)
        why = "this client holds its " + std::to_string(limits_.max_sessions_per_client) +
              " sessions";
      else if (charged_ + bytes > limits_.memory_budget)
        why =
            "the memory budget of " + std::to_string(limits_.memory_budget >> 20) + " MiB is spent";
      else
        why = "the server holds its " + std::to_string(limits_.max_sessions) + " sessions";
      throw Error(ErrorCode::resource_exhausted, why + ", all in use; retry later");
    }
    drop(victim);
  }
}

Bytes InferenceService::open(std::span<const std::uint8_t> request, const std::string& client) {
  // Its place and memory are held while the keys are decoded, so that concurrent hellos cannot
  // pass the caps between the check and the insertion.
  const std::uint64_t bytes = kChargePerHelloByte * request.size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    make_room(client, bytes);
    ++opening_[client];
    charged_ += bytes;
  }
  const auto release = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--opening_[client] == 0) opening_.erase(client);
    charged_ -= bytes;
  };
  std::shared_ptr<Session> session;
  try {
    const Hello hello = decode_hello(request, policy_);
    const rlwe::ParameterSet& params = rlwe::parameter_set(hello.params_id, policy_);
    session = std::make_shared<Session>(params);
    for (const rlwe::KeySwitchKey& k : hello.keys)
      session->keys.add(k);
    core::OsRandom random;
    core::Seed seed = random.seed();
    session->server = std::make_unique<Server>(
        *model_, session->params, hello.options,
        backends_(session->params,
                  {hello.options.gamma, hello.options.mode,
                   narrowest_row_bits(*model_, session->params, hello.options.gamma)},
                  session->keys),
        seed, layers_);
    session->server->set_flood(flood_.load());
    core::secure_zero(seed);
  } catch (...) {
    release();
    throw;
  }
  core::OsRandom random;
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--opening_[client] == 0) opening_.erase(client);
    do {
      id = random.word();
    } while (id == 0 || sessions_.count(id) != 0);
    session->client = client;
    session->last_used = Clock::now();
    session->bytes = bytes;  // already charged
    sessions_[id] = session;
  }
  return encode_welcome(Welcome{id, model_->name(), session->server->model_info()});
}

Bytes InferenceService::round(std::span<const std::uint8_t> request) {
  const std::uint64_t id = message_session(request);
  const std::uint64_t bytes = kChargePerUploadByte * request.size();
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    expire_locked();
    const auto it = sessions_.find(id);
    require(
        it != sessions_.end(), ErrorCode::invalid_argument,
        "unknown session " + std::to_string(id) + " (never opened, finished, expired or evicted)");
    require(!it->second->busy, ErrorCode::invalid_argument,
            "session " + std::to_string(id) + " is serving another request");
    require(charged_ + bytes <= limits_.memory_budget, ErrorCode::resource_exhausted,
            "the memory budget of " + std::to_string(limits_.memory_budget >> 20) +
                " MiB is spent; retry later");
    session = it->second;
    session->busy = true;
    session->bytes += bytes;
    charged_ += bytes;
  }
  const auto done = [&](bool finished) {
    std::lock_guard<std::mutex> lock(mutex_);
    session->busy = false;
    session->last_used = Clock::now();
    const auto it = sessions_.find(id);
    if (finished && it != sessions_.end()) drop(it);
  };
  try {
    std::lock_guard<std::mutex> lock(session->mutex);
    const Upload up = decode_upload(request, session->params);
    const Download d = session->server->process(up);
    Bytes reply = encode_download(id, d, session->params);
    const bool finished = up.round + 1 == model_->rounds().size();
    if (finished) {
      std::lock_guard<std::mutex> guard(mutex_);
      const ServerTimes& t = session->server->times();
      times_.extract += t.extract;
      times_.linear += t.linear;
      times_.pack += t.pack;
      times_.other += t.other;
      key_switches_ += session->server->key_switches();
    }
    done(finished);  // the inference is complete: its session ends
    return reply;
  } catch (...) {
    done(false);
    throw;
  }
}

Bytes InferenceService::handle(std::span<const std::uint8_t> request, const std::string& client) {
  try {
    require(request.size() <= max_request_, ErrorCode::malformed_input,
            "message of " + std::to_string(request.size()) + " bytes exceeds the largest (" +
                std::to_string(max_request_) + ") a client of this model sends");
    const MessageType type = message_type(request);
    if (type == MessageType::hello) return open(request, client);
    require(type == MessageType::upload, ErrorCode::malformed_input,
            "the server accepts hello and upload messages only");
    return round(request);
  } catch (const Error& e) {
    return encode_error(ErrorMessage{e.code(), e.what()});
  } catch (const std::bad_alloc&) {
    return encode_error(ErrorMessage{ErrorCode::resource_exhausted,
                                     "the server ran out of memory for this request"});
  } catch (const std::exception& e) {
    return encode_error(ErrorMessage{ErrorCode::internal, e.what()});
  }
}

// ---- Transports -------------------------------------------------------------------------------

Bytes Transport::exchange(std::span<const std::uint8_t> request) {
  up_ += request.size();
  Bytes reply = round_trip(request);
  down_ += reply.size();
  return reply;
}

Bytes InProcessTransport::round_trip(std::span<const std::uint8_t> request) {
  return service_->handle(request);
}

// ---- Client driver ----------------------------------------------------------------------------

RemoteClient::RemoteClient(Transport& transport, const rlwe::ParameterSet& params,
                           InferenceOptions options, core::RandomSource& random)
    : transport_(&transport), params_(params), options_(options), random_(&random) {}

InferenceReport RemoteClient::infer(std::span<const std::int64_t> image, std::int64_t image_max) {
  require(image_max >= 0, ErrorCode::invalid_argument, "negative image range");
  InferenceReport report;
  const std::uint64_t up0 = transport_->bytes_up(), down0 = transport_->bytes_down();
  // Every inference is its own session: fresh keys (the server drops a finished session).
  auto start = Clock::now();
  client_ = std::make_unique<Client>(params_, options_, *random_);
  Hello hello{params_.id, options_, {}};
  for (std::uint64_t k : client_->evaluation_keys().elements())
    hello.keys.push_back(client_->evaluation_keys().at(k));
  const Bytes hello_bytes = encode_hello(hello, params_);
  report.keygen_s = std::chrono::duration<double>(Clock::now() - start).count();
  report.key_bytes = hello_bytes.size();
  const Bytes welcome_bytes = transport_->exchange(hello_bytes);
  throw_if_error(welcome_bytes);
  welcome_ = decode_welcome(welcome_bytes);
  double client_s = 0;
  start = Clock::now();
  std::vector<std::int64_t> requantized;
  if (image_max != 0) {
    requantized.reserve(image.size());
    for (const std::int64_t v : image) {
      require(
          v >= 0 && v <= image_max, ErrorCode::invalid_argument,
          "image value " + std::to_string(v) + " outside [0, " + std::to_string(image_max) + "]");
      requantized.push_back(requantize(v, image_max, welcome_.model.input_max));
    }
    image = requantized;
  }
  std::optional<Upload> up = client_->start(welcome_.model, image);
  while (up) {
    const Bytes request = encode_upload(welcome_.session, *up, params_);
    client_s += std::chrono::duration<double>(Clock::now() - start).count();
    const Bytes reply = transport_->exchange(request);
    start = Clock::now();
    throw_if_error(reply);
    require(message_session(reply) == welcome_.session, ErrorCode::malformed_input,
            "reply for another session");
    up = client_->receive(decode_download(reply, params_));
  }
  client_s += std::chrono::duration<double>(Clock::now() - start).count();
  report.client_s = client_s;
  report.logits = client_->logits();
  report.bytes_up = transport_->bytes_up() - up0 - report.key_bytes;
  report.bytes_down = transport_->bytes_down() - down0;
  return report;
}

}  // namespace safhire::hybrid
