#include "safhire/core/error.hpp"

namespace safhire {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::invalid_parameters:
      return "invalid_parameters";
    case ErrorCode::size_mismatch:
      return "size_mismatch";
    case ErrorCode::unsupported:
      return "unsupported";
    case ErrorCode::malformed_input:
      return "malformed_input";
    case ErrorCode::insecure_parameters:
      return "insecure_parameters";
    case ErrorCode::device_error:
      return "device_error";
    case ErrorCode::internal:
      return "internal";
    case ErrorCode::resource_exhausted:
      return "resource_exhausted";
    case ErrorCode::needs_refresh:
      return "needs_refresh";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(to_string(code)) + ": " + message), code_(code) {}

}  // namespace safhire
