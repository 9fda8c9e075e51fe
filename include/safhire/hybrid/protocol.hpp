// The wire protocol of hybrid inference: versioned binary messages (docs/protocol.md), the
// server-side service that owns the sessions, and transports (in process and TCP) that count
// the bytes each way. Every message is untrusted: decoding checks magic, version, type, session,
// parameter set and every length before allocating, and the service answers anything malformed
// with an error message, keeping its other sessions intact.
#pragma once

#include <atomic>
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
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
// Open sessions a service keeps (each holds evaluation keys and received ciphertexts).
inline constexpr std::size_t kMaxSessions = 64;

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

// The server side: one model, many sessions. Thread-safe across sessions.
class InferenceService {
 public:
  // Makes each session's backend from its parameter set, options and evaluation keys.
  using BackendFactory = std::function<std::unique_ptr<backend::Backend>(
      const rlwe::ParameterSet&, const backend::Config&, const rlwe::GaloisKeys&)>;
  // The CPU backend with `threads` workers per request.
  InferenceService(const Model& model, rlwe::SecurityPolicy policy, unsigned threads = 1);
  InferenceService(const Model& model, rlwe::SecurityPolicy policy, BackendFactory backends);
  ~InferenceService();
  // One request, one reply. Bad input yields an error message, never an exception; a session
  // whose request failed stays as it was.
  Bytes handle(std::span<const std::uint8_t> request);
  std::size_t sessions() const;
  // Server time and key switches summed over the completed inferences.
  ServerTimes times() const;
  std::uint64_t key_switches() const;

 private:
  struct Session;
  Bytes open(std::span<const std::uint8_t> request);
  const Model* model_;
  rlwe::SecurityPolicy policy_;
  BackendFactory backends_;
  std::shared_ptr<const ModelLayers> layers_;  // built once, shared by the sessions' servers
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<Session>> sessions_;
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

// TCP, one connection: frames are a u32 length and the message.
class TcpTransport final : public Transport {
 public:
  TcpTransport(const std::string& host, std::uint16_t port);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

 protected:
  Bytes round_trip(std::span<const std::uint8_t> request) override;

 private:
  int fd_ = -1;
};

// Serves `service` on TCP `port` (0: any free port, reported through `bound_port`) until `stop`
// becomes true; a thread per connection. A frame above kMaxMessageBytes closes its connection.
void serve_tcp(InferenceService& service, std::uint16_t port, const std::atomic<bool>& stop,
               std::atomic<std::uint16_t>* bound_port = nullptr);

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
