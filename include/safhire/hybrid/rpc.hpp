// The hybrid protocol over gRPC. The service's versioned binary messages (messages.hpp) travel
// unchanged as the payload of one unary method, safhire.v1.Inference/Exchange
// (proto/safhire.proto); gRPC's standard health service answers beside it.
//
// What gRPC bounds: its own buffers (a resource quota), a message's size (the largest request a
// client of the served model sends: max_request_bytes), calls at once per connection, and the
// time a connection may stay silent, idle or unauthenticated. What the server adds: a fixed pool
// of worker threads with a bounded queue in front of it (a call past the queue is refused with
// RESOURCE_EXHAUSTED, never given a thread of its own), calls whose deadline passed while queued
// are dropped unserved, and the service's own limits (sessions, memory: ServiceLimits).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "safhire/hybrid/transport.hpp"

namespace safhire::hybrid {

struct RpcServerOptions {
  std::string address = "127.0.0.1:7788";  // HOST:PORT; loopback unless asked; port 0: any free
  unsigned workers = 4;                    // threads that run requests
  std::size_t queue = 64;                  // requests waiting for a worker, at most
  std::string tls_cert, tls_key;           // PEM files: TLS when both are given
  std::chrono::milliseconds keepalive{std::chrono::seconds(30)};  // pings on a quiet connection
  std::chrono::milliseconds connection_idle{std::chrono::minutes(5)};  // with no call: closed
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  std::uint32_t calls_per_connection = 4;
  std::uint64_t transport_memory = std::uint64_t{512} << 20;  // gRPC's buffers, all connections
  void validate() const;
};

class RpcServer {
 public:
  // Listening when constructed; refuses an address it cannot bind with ErrorCode::invalid_argument.
  RpcServer(InferenceService& service, RpcServerOptions options);
  ~RpcServer();  // shutdown() with no grace
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;
  std::uint16_t port() const;
  // Refuses new calls, lets queued and running ones finish for up to `grace`, then cancels what
  // is left; returns once every worker has stopped. Idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(30));
  // Requests served and refused (queue full, deadline passed while queued) so far.
  std::uint64_t served() const;
  std::uint64_t refused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct RpcClientOptions {
  std::string tls_ca;    // PEM file of the authority that signed the server: TLS when given
  std::string tls_name;  // the name its certificate carries, when not the target's host
  std::chrono::milliseconds deadline{std::chrono::minutes(5)};  // per call
  std::size_t max_reply_bytes = std::size_t{512} << 20;
};

// One gRPC channel of its own (its own connection) to TARGET = HOST:PORT. A call that fails at
// the RPC layer throws ErrorCode::invalid_argument (unreachable, deadline) or
// resource_exhausted (the server's queue or buffers are full), with gRPC's message.
class GrpcTransport final : public Transport {
 public:
  explicit GrpcTransport(const std::string& target, RpcClientOptions options = {});
  ~GrpcTransport() override;
  GrpcTransport(const GrpcTransport&) = delete;
  GrpcTransport& operator=(const GrpcTransport&) = delete;
  // The health service's answer for the whole server: true when it says SERVING.
  bool healthy();

 protected:
  Bytes round_trip(std::span<const std::uint8_t> request) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace safhire::hybrid
