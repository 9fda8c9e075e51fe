// The one error type of Safhire: a code a program can branch on and a message a person can read
// ("expected ..., got ..."). Every layer throws it for bad input; nothing else is thrown on
// purpose.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace safhire {

enum class ErrorCode {
  invalid_argument,     // a value outside its documented domain
  invalid_parameters,   // a ring, prime or parameter set that is not valid
  size_mismatch,        // buffers or objects of incompatible shapes or rings
  unsupported,          // valid, but not implemented by this build or backend
  malformed_input,      // bytes that do not parse: truncated, oversized, wrong magic or version
  insecure_parameters,  // below the security level, without an explicit opt-in
  device_error,         // a CUDA call failed
  internal,             // a broken invariant: a bug in Safhire
  resource_exhausted,   // a limit (sessions, memory) is reached: retry later, or elsewhere
  needs_refresh,        // a lane ciphertext's levels, digits or noise do not allow it: refresh
};

std::string_view to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, message) when `condition` is false. For input validation on public entry
// points; hot loops use SAFHIRE_DEBUG_ASSERT instead.
inline void require(bool condition, ErrorCode code, const std::string& message) {
  if (!condition) throw Error(code, message);
}

// The same for a fixed message, which is turned into a string only on failure (a per-element check
// then costs no allocation). A message built from values must not be built before the check in a
// loop: write `if (!condition) throw Error(code, ...)` there.
inline void require(bool condition, ErrorCode code, const char* message) {
  if (!condition) throw Error(code, message);
}

}  // namespace safhire

// Invariant checks that cost time: active in debug builds (no NDEBUG) and when SAFHIRE_CHECKS is
// defined; they throw ErrorCode::internal so that tests can observe them. The message is built
// only on failure.
#if !defined(NDEBUG) || defined(SAFHIRE_CHECKS)
#define SAFHIRE_DEBUG_CHECKS 1
#define SAFHIRE_DEBUG_ASSERT(cond, msg)                                         \
  do {                                                                          \
    if (!(cond)) throw ::safhire::Error(::safhire::ErrorCode::internal, (msg)); \
  } while (false)
#else
#define SAFHIRE_DEBUG_CHECKS 0
#define SAFHIRE_DEBUG_ASSERT(cond, msg) ((void)0)
#endif
