// The wire protocol of hybrid inference: versioned binary messages (docs/protocol.md), the
// server-side service that owns the sessions, and the transport interface that counts the bytes
// each way (in process here; gRPC in rpc.hpp). Every message is untrusted: decoding checks magic,
// version, type, session, parameter set and every length before allocating, and the service answers
// anything malformed with an error message, keeping its other sessions intact.
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
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/hybrid/inference.hpp"

namespace safhire::hybrid {

using Bytes = std::vector<std::uint8_t>;

enum class MessageType : std::uint8_t {
  hello = 1,
  welcome = 2,
  upload = 3,
  download = 4,
  error = 5
};

inline constexpr std::uint16_t kProtocolVersion = 3;

// Client -> server, opening a session: the parameter set, the level and tree mode, and the
// evaluation keys (key-switching keys, each as seeds and b).
struct Hello {
  std::uint16_t params_id = 0;
  InferenceOptions options;
  std::vector<rlwe::KeySwitchKey> keys;
};

// Server -> client: the session number and what the client may know of the model.
struct Welcome {
  std::uint64_t session = 0;
  std::string model_name;
  ModelInfo model;
};

struct ErrorMessage {
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

Bytes encode_hello(const Hello& hello, const rlwe::ParameterSet& params);
Bytes encode_welcome(const Welcome& welcome);
Bytes encode_upload(std::uint64_t session, const Upload& up, const rlwe::ParameterSet& params);
Bytes encode_download(std::uint64_t session, const Download& d, const rlwe::ParameterSet& params);
Bytes encode_error(const ErrorMessage& e);

// The type and session of a message (header checks only).
MessageType message_type(std::span<const std::uint8_t> bytes);
std::uint64_t message_session(std::span<const std::uint8_t> bytes);

// The parameter set is resolved from the id (SecurityPolicy applied).
Hello decode_hello(std::span<const std::uint8_t> bytes, rlwe::SecurityPolicy policy);
Welcome decode_welcome(std::span<const std::uint8_t> bytes);
Upload decode_upload(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params);
Download decode_download(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params);
ErrorMessage decode_error(std::span<const std::uint8_t> bytes);
// Throws the Error an error message carries; does nothing for other messages.
void throw_if_error(std::span<const std::uint8_t> bytes);

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

// A request-reply channel to an InferenceService, counting bytes.
class Transport {
 public:
  virtual ~Transport() = default;
  Bytes exchange(std::span<const std::uint8_t> request);
  std::uint64_t bytes_up() const { return up_; }
  std::uint64_t bytes_down() const { return down_; }

 protected:
  virtual Bytes round_trip(std::span<const std::uint8_t> request) = 0;

 private:
  std::uint64_t up_ = 0, down_ = 0;
};

class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(InferenceService& service) : service_(&service) {}

 protected:
  Bytes round_trip(std::span<const std::uint8_t> request) override;

 private:
  InferenceService* service_;
};

// The client side of one inference through a transport. Per-round bytes and times for reports.
struct InferenceReport {
  std::vector<std::int64_t> logits;
  double client_s = 0;  // key generation excluded (per session, reported apart)
  double keygen_s = 0;
  std::uint64_t bytes_up = 0, bytes_down = 0, key_bytes = 0;
};

class RemoteClient {
 public:
  RemoteClient(Transport& transport, const rlwe::ParameterSet& params, InferenceOptions options,
               core::RandomSource& random);
  // One inference in its own session. image_max 0: the image is in the model's input range
  // already; else its values lie in [0, image_max] and are requantized (dataset.hpp) to the
  // model's range, which the server's welcome gives (a client need not know the model).
  InferenceReport infer(std::span<const std::int64_t> image, std::int64_t image_max = 0);
  const ModelInfo& model() const { return welcome_.model; }
  const std::string& model_name() const { return welcome_.model_name; }

 private:
  Transport* transport_;
  rlwe::ParameterSet params_;
  InferenceOptions options_;
  core::RandomSource* random_;
  double keygen_s_ = 0;
  std::uint64_t key_bytes_ = 0;
  Welcome welcome_;
  std::unique_ptr<Client> client_;
};

}  // namespace safhire::hybrid
