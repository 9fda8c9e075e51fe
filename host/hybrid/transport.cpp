#include "safhire/hybrid/transport.hpp"

#include <chrono>

#include "safhire/hybrid/dataset.hpp"

namespace safhire::hybrid {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

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
