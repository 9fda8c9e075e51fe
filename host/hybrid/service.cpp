#include "safhire/hybrid/service.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "safhire/core/random.hpp"
#include "safhire/hybrid/plan.hpp"
#include "safhire/rlwe/serialize.hpp"

namespace safhire::hybrid {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

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
  const std::uint64_t key = rlwe::key_switch_key_bytes(params, params.gadget(gamma));
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
        backends_(session->params, session_config(*model_, session->params, hello.options),
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

}  // namespace safhire::hybrid
