#include "safhire/hybrid/rpc.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "health.grpc.pb.h"
#include "safhire.grpc.pb.h"

namespace safhire::hybrid {

namespace {

std::string read_pem(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::invalid_argument, "cannot read the " + what + " file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  require(text.str().find("-----BEGIN") != std::string::npos, ErrorCode::invalid_argument,
          "the " + what + " file " + path + " is not PEM");
  return text.str();
}

// The client a session is counted against: the peer's address without its port.
std::string client_of(const std::string& peer) {
  const auto colon = peer.rfind(':');
  const auto first = peer.find(':');
  return colon != std::string::npos && colon != first ? peer.substr(0, colon) : peer;
}

int as_int(std::chrono::milliseconds ms) {
  return static_cast<int>(std::min<std::int64_t>(ms.count(), std::numeric_limits<int>::max()));
}

// A fixed set of threads behind a bounded queue. submit() refuses instead of growing.
class WorkerPool {
 public:
  WorkerPool(unsigned threads, std::size_t limit) : limit_(limit) {
    for (unsigned i = 0; i < threads; ++i)
      threads_.emplace_back([this] { run(); });
  }
  ~WorkerPool() { stop(); }
  bool submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ || queue_.size() >= limit_) return false;
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
  }
  // Runs what is queued, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void run() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  std::size_t limit_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

class ExchangeService final : public safhire::v1::Inference::CallbackService {
 public:
  ExchangeService(InferenceService& service, WorkerPool& pool) : service_(&service), pool_(&pool) {}

  grpc::ServerUnaryReactor* Exchange(grpc::CallbackServerContext* context,
                                     const safhire::v1::Envelope* request,
                                     safhire::v1::Envelope* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const bool queued = pool_->submit([this, context, request, reply, reactor] {
      if (context->IsCancelled()) {  // the client left, or its deadline passed, while queued
        refused_.fetch_add(1);
        reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while queued"));
        return;
      }
      try {
        const std::string& m = request->message();
        const Bytes out =
            service_->handle({reinterpret_cast<const std::uint8_t*>(m.data()), m.size()},
                             client_of(context->peer()));
        reply->set_message(out.data(), out.size());
        served_.fetch_add(1);
        reactor->Finish(grpc::Status::OK);
      } catch (const std::bad_alloc&) {
        reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory"));
      } catch (const std::exception& e) {
        reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
      }
    });
    if (!queued) {
      refused_.fetch_add(1);
      reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "the server's request queue is full; retry later"));
    }
    return reactor;
  }
  std::atomic<std::uint64_t> served_{0}, refused_{0};

 private:
  InferenceService* service_;
  WorkerPool* pool_;
};

}  // namespace

void RpcServerOptions::validate() const {
  require(!address.empty() && address.rfind(':') != std::string::npos, ErrorCode::invalid_argument,
          "serve: the address is HOST:PORT");
  require(workers >= 1 && queue >= 1 && calls_per_connection >= 1, ErrorCode::invalid_argument,
          "serve: at least one worker, one queued request and one call per connection");
  require(tls_cert.empty() == tls_key.empty(), ErrorCode::invalid_argument,
          "serve: TLS needs both a certificate and its key");
  require(keepalive.count() > 0 && connection_idle.count() > 0 && handshake_timeout.count() > 0,
          ErrorCode::invalid_argument, "serve: timeouts must be positive");
  require(transport_memory >= (std::uint64_t{1} << 20), ErrorCode::invalid_argument,
          "serve: the transport memory is at least 1 MiB");
}

struct RpcServer::Impl {
  InferenceService* service;
  RpcServerOptions options;
  WorkerPool pool;
  ExchangeService exchange;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  // Drops idle sessions once a second, traffic or not.
  std::thread expiry;
  std::mutex mutex;
  std::condition_variable stopped;
  bool stopping = false;

  Impl(InferenceService& s, RpcServerOptions o)
      : service(&s),
        options(std::move(o)),
        pool(options.workers, options.queue),
        exchange(s, pool) {}
};

RpcServer::RpcServer(InferenceService& service, RpcServerOptions options) {
  options.validate();
  impl_ = std::make_unique<Impl>(service, std::move(options));
  const RpcServerOptions& o = impl_->options;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!o.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {read_pem(o.tls_key, "TLS key"), read_pem(o.tls_cert, "TLS certificate")});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.address, credentials, &impl_->port);
  builder.RegisterService(&impl_->exchange);
  grpc::ResourceQuota quota("safhire-serve");
  quota.Resize(static_cast<std::size_t>(o.transport_memory));
  builder.SetResourceQuota(quota);
  // The envelope adds a tag and a length to the protocol message.
  const std::size_t largest = service.max_request_bytes() + 16;
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<std::size_t>(largest, std::numeric_limits<int>::max())));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(o.calls_per_connection));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, as_int(o.keepalive));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, as_int(o.keepalive));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, as_int(o.connection_idle));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, as_int(o.handshake_timeout));
  impl_->server = builder.BuildAndStart();
  require(impl_->server != nullptr && impl_->port > 0, ErrorCode::invalid_argument,
          "serve: cannot listen on " + o.address);
  impl_->expiry = std::thread([impl = impl_.get()] {
    std::unique_lock<std::mutex> lock(impl->mutex);
    while (!impl->stopped.wait_for(lock, std::chrono::seconds(1), [&] { return impl->stopping; }))
      impl->service->expire_idle();
  });
}

RpcServer::~RpcServer() {
  shutdown(std::chrono::milliseconds(0));
}

std::uint16_t RpcServer::port() const {
  return static_cast<std::uint16_t>(impl_->port);
}

std::uint64_t RpcServer::served() const {
  return impl_->exchange.served_.load();
}

std::uint64_t RpcServer::refused() const {
  return impl_->exchange.refused_.load();
}

void RpcServer::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->stopped.notify_all();
  impl_->expiry.join();
  // New calls are refused at once; those in flight run on (the workers keep going) until done or
  // until the grace ends, when gRPC cancels them and queued ones finish as cancelled.
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->pool.stop();
  impl_->server->Wait();
}

// ---- Client -----------------------------------------------------------------------------------

struct GrpcTransport::Impl {
  RpcClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<safhire::v1::Inference::Stub> stub;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
};

GrpcTransport::GrpcTransport(const std::string& target, RpcClientOptions options)
    : impl_(std::make_unique<Impl>()) {
  require(options.deadline.count() > 0, ErrorCode::invalid_argument, "rpc: no deadline");
  impl_->options = std::move(options);
  const RpcClientOptions& o = impl_->options;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<std::size_t>(o.max_reply_bytes, std::numeric_limits<int>::max())));
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!o.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = read_pem(o.tls_ca, "TLS authority");
    credentials = grpc::SslCredentials(ssl);
    if (!o.tls_name.empty()) args.SetSslTargetNameOverride(o.tls_name);
  }
  impl_->channel = grpc::CreateCustomChannel(target, credentials, args);
  impl_->stub = safhire::v1::Inference::NewStub(impl_->channel);
  impl_->health = grpc::health::v1::Health::NewStub(impl_->channel);
}

GrpcTransport::~GrpcTransport() = default;

namespace {

[[noreturn]] void throw_status(const grpc::Status& status) {
  const ErrorCode code = status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED
                             ? ErrorCode::resource_exhausted
                             : ErrorCode::invalid_argument;
  throw Error(code, "rpc failed (gRPC status " + std::to_string(status.error_code()) +
                        "): " + status.error_message());
}

}  // namespace

Bytes GrpcTransport::round_trip(std::span<const std::uint8_t> request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->options.deadline);
  safhire::v1::Envelope envelope, reply;
  envelope.set_message(request.data(), request.size());
  const grpc::Status status = impl_->stub->Exchange(&context, envelope, &reply);
  if (!status.ok()) throw_status(status);
  const std::string& m = reply.message();
  return Bytes(m.begin(), m.end());
}

bool GrpcTransport::healthy() {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->options.deadline);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = impl_->health->Check(&context, request, &response);
  return status.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace safhire::hybrid
