// Request-reply channels to an InferenceService that count the bytes each way (in process here;
// gRPC in rpc.hpp), and the client side of one inference through one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/hybrid/messages.hpp"
#include "safhire/hybrid/service.hpp"

namespace safhire::hybrid {

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
  Welcome welcome_;
  std::unique_ptr<Client> client_;
};

}  // namespace safhire::hybrid
