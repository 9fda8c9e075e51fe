// The server side of hybrid inference: one model, many sessions, the limits on what each client
// can make it hold. It answers anything malformed with an error message, keeping its other
// sessions intact.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "safhire/hybrid/messages.hpp"

namespace safhire::hybrid {

// The largest request a client may send to a service of `model`: over the parameter sets the
// policy admits, every gamma and tree mode, the larger of the hello (its evaluation keys) and
// the largest upload of plan_inference. Transports refuse anything longer before reading it.
std::size_t max_request_bytes(const Model& model, rlwe::SecurityPolicy policy);

// What a service lets its clients hold. Each session holds evaluation keys and the ciphertexts
// received and not yet consumed (about 100 MB at default-b8, gamma 0); `memory_bytes` charges it
// what its objects hold, estimated from the hello (keys as decoded and as the backend keeps them)
// and each upload. Sessions unused for `idle_timeout` are dropped. When a hello would pass a cap
// (sessions in all, sessions of its client, memory), the least recently used session idle for at
// least `evict_after` makes room: the client's own when the client is at its cap, else one of the
// client that holds the most. A session in the middle of a request is never dropped. Past that,
// the hello is refused with ErrorCode::resource_exhausted; a refused or evicted client may retry.
struct ServiceLimits {
  std::size_t max_sessions = 64;
  std::size_t max_sessions_per_client = 16;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
  std::chrono::milliseconds evict_after{std::chrono::seconds(10)};
  std::uint64_t memory_budget = std::uint64_t{8} << 30;
  void validate() const;
};

// The server side: one model, many sessions. Thread-safe across sessions.
class InferenceService {
 public:
  // Makes each session's backend from its parameter set, options and evaluation keys.
  using BackendFactory = std::function<std::unique_ptr<backend::Backend>(
      const rlwe::ParameterSet&, const backend::Config&, const rlwe::GaloisKeys&)>;
  // The CPU backend with `threads` workers per request.
  InferenceService(const Model& model, rlwe::SecurityPolicy policy, unsigned threads = 1,
                   ServiceLimits limits = {});
  InferenceService(const Model& model, rlwe::SecurityPolicy policy, BackendFactory backends,
                   ServiceLimits limits = {});
  ~InferenceService();
  // One request from `client` (what the transport knows of the peer), one reply. Bad input, a
  // limit reached or an allocation that fails yields an error message, never an exception; a
  // session whose request failed stays as it was.
  Bytes handle(std::span<const std::uint8_t> request, const std::string& client = "local");
  // Drops the sessions idle past the limit (handle does too); returns how many.
  std::size_t expire_idle();
  std::size_t sessions() const;
  // The memory charged to open sessions and to hellos being decoded (ServiceLimits).
  std::uint64_t memory_charged() const;
  const ServiceLimits& limits() const { return limits_; }
  // Noise flooding of every result for sessions opened from now on (Server::set_flood).
  void set_flood(std::uint32_t bound) { flood_.store(bound); }
  std::size_t max_request_bytes() const { return max_request_; }
  // Server time and key switches summed over the completed inferences.
  ServerTimes times() const;
  std::uint64_t key_switches() const;

 private:
  struct Session;
  using SessionMap = std::map<std::uint64_t, std::shared_ptr<Session>>;
  Bytes open(std::span<const std::uint8_t> request, const std::string& client);
  Bytes round(std::span<const std::uint8_t> request);
  // With mutex_ held: room for one more session of `client` charging `bytes`, or a throw.
  void make_room(const std::string& client, std::uint64_t bytes);
  void drop(SessionMap::iterator it);  // mutex_ held
  std::size_t expire_locked();
  const Model* model_;
  rlwe::SecurityPolicy policy_;
  BackendFactory backends_;
  ServiceLimits limits_;
  std::size_t max_request_ = 0;
  std::atomic<std::uint32_t> flood_{0};
  std::shared_ptr<const ModelLayers> layers_;  // built once, shared by the sessions' servers
  mutable std::mutex mutex_;
  SessionMap sessions_;
  // Hellos being decoded hold their place: per client, and their memory in charged_.
  std::map<std::string, std::size_t> opening_;
  std::uint64_t charged_ = 0;
  ServerTimes times_;
  std::uint64_t key_switches_ = 0;
};

}  // namespace safhire::hybrid
