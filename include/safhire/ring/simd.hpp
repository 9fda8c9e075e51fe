// Which CPU vector kernels the ring layer runs. Chosen at run time from what the processor
// supports (never by -march=native); the environment variable SAFHIRE_SIMD=scalar|avx2|avx512
// narrows the default, and objects can be built for an explicit instruction set (tests compare
// every available set against the scalar one, bit for bit).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace safhire::ring {

enum class SimdIsa { scalar, avx2, avx512 };

std::string_view to_string(SimdIsa isa);

// True when this build has kernels for `isa` and this processor can run them.
bool simd_available(SimdIsa isa);

// Every available instruction set, scalar first.
std::vector<SimdIsa> available_simd();

// The best available set, or the one SAFHIRE_SIMD names (an unavailable or unknown name throws
// Error(ErrorCode::unsupported)).
SimdIsa default_simd();

// out[i] = sum_t weights[t] rows[t][i] mod 2^64: torus words times integer weights (negative
// weights as two's complement), the multiply-accumulate of a linear layer over ciphertext words.
// Every rows[t] holds out.size() words. Runs the kernels of `isa`.
void torus_dot(std::span<const std::uint64_t* const> rows, std::span<const std::uint64_t> weights,
               std::span<std::uint64_t> out, SimdIsa isa = default_simd());

// outs[o][i] = sum_t weights[o rows.size() + t] rows[t][i] mod 2^64 for i < len: several outputs
// over the same rows (a dense block of a linear layer), each row word loaded once for four
// outputs. weights is row-major, one row per output.
void torus_matmul(std::span<const std::uint64_t* const> rows,
                  std::span<const std::uint64_t> weights, std::span<std::uint64_t* const> outs,
                  std::size_t len, SimdIsa isa = default_simd());

}  // namespace safhire::ring
