// The wire messages of hybrid inference: versioned binary encodings (docs/protocol.md) of the
// hello, welcome, upload, download and error. Every message is untrusted: decoding checks magic,
// version, type, session, parameter set and every length before allocating, and refuses with a
// typed Error.
#pragma once

#include <cstdint>
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
// The size of an upload or download of `count` objects of `object_bytes` each (their rlwe
// encodings: rlwe::seeded_ciphertext_bytes, rlwe::switched_ciphertext_bytes).
std::uint64_t round_message_bytes(std::uint64_t count, std::uint64_t object_bytes);

// Throws the Error an error message carries; does nothing for other messages.
void throw_if_error(std::span<const std::uint8_t> bytes);

}  // namespace safhire::hybrid
