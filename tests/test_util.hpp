// Shared helpers of the test suites: the rings every property is checked on, seeded random
// polynomials, and a scalar "lanes" type for testing the shared kernels directly.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/ring/ring_params.hpp"

namespace safhire {
// How GoogleTest prints an error code: by name.
inline void PrintTo(ErrorCode code, std::ostream* os) {
  *os << to_string(code);
}
}  // namespace safhire

namespace safhire::ring {
// How GoogleTest prints a ring parameter (found by argument-dependent lookup).
inline void PrintTo(const RingParams& r, std::ostream* os) {
  *os << r.name();
}
}  // namespace safhire::ring

namespace safhire::testing {

using u64 = std::uint64_t;
using u128 = core::u128;
using i128 = core::i128;

// The small rings of the worked test vectors and the three rings of the paper.
inline std::vector<ring::RingParams> all_rings() {
  return {ring::RingParams(3, 2), ring::RingParams(5, 2), ring::RingParams(3, 3),
          ring::RingParams(7, 2), ring::RingParams(3, 7), ring::RingParams(7, 4),
          ring::RingParams(5, 5)};
}

inline std::string ring_label(const ring::RingParams& r) {
  return std::to_string(r.t()) + "_" + std::to_string(r.a());
}

// A parameter-set name as a test-name suffix ("default-b8" -> "default_b8").
inline std::string set_label(const char* name) {
  std::string out = name;
  for (char& c : out)
    c = c == '-' ? '_' : c;
  return out;
}

// The code of the safhire::Error that fn() throws, or nullopt when it returns normally: "no
// error" is its own answer, never mistaken for a code (ErrorCode::internal is a bug report).
template <class Fn>
std::optional<ErrorCode> code_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

// What emulated device memory (a fresh allocation, shared memory) holds before anything writes
// it: cudaMallocAsync and __shared__ leave memory uninitialised, and a replay that zero-filled it
// would hide a kernel that reads a word no launch wrote.
inline constexpr u64 kPoison = 0xa5a5'5a5a'c3c3'3c3cULL;

inline std::vector<u64> random_words(std::mt19937_64& rng, std::size_t n, u64 bound = 0) {
  std::vector<u64> v(n);
  for (auto& x : v)
    x = bound == 0 ? rng() : rng() % bound;
  return v;
}

// Uniform signed integers in [lo, hi], stored as torus words.
inline std::vector<u64> random_signed(std::mt19937_64& rng, std::size_t n, std::int64_t lo,
                                      std::int64_t hi) {
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  std::vector<u64> v(n);
  for (auto& x : v)
    x = static_cast<u64>(dist(rng));
  return v;
}

// Plain scalar lanes, as the CPU scalar kernels use, for driving detail/ templates in tests.
struct TestLanes {
  using Reg = u64;
  static Reg set1(u64 x) { return x; }
  static Reg zero() { return 0; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg min(Reg a, Reg b) { return a < b ? a : b; }
  static Reg mullo(Reg a, Reg b) { return a * b; }
  static Reg mulhi(Reg a, Reg b) { return static_cast<Reg>((static_cast<u128>(a) * b) >> 64); }
  // The loosest estimate the kernels allow: 2 below the true high word when possible.
  static Reg mulhi_approx(Reg a, Reg b) {
    const Reg hi = mulhi(a, b);
    return hi >= 2 ? hi - 2 : 0;
  }
  static Reg bit_and(Reg a, Reg b) { return a & b; }
  static Reg shr1(Reg a) { return a >> 1; }
};

}  // namespace safhire::testing
