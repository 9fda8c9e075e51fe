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

// A block of a linear layer as a sparse matrix over its input rows, in compressed rows with each
// output's positive weights first: output o has the taps [start[o], start[o + 1]), of which the
// first positives[o] add magnitude[k] rows[column[k]] and the others subtract it. Magnitudes are
// below 2^32, so that a kernel without a 64-bit vector multiply can split the words in halves.
// The kernels add the leading run of unit magnitudes of each sign without a multiply: put the
// +-1 taps first (any order is correct, that one is fast).
struct TorusSparseMatrix {
  std::span<const std::uint32_t> start;      // outputs + 1 offsets, start[0] = 0
  std::span<const std::uint32_t> positives;  // outputs
  std::span<const std::uint32_t> column;     // start[outputs] row indices
  std::span<const std::uint64_t> magnitude;  // start[outputs] magnitudes, each below 2^32
};

// outs[o][i] = sum over output o's taps of +-magnitude[k] rows[column[k]][i] mod 2^64, for
// i < len: the sparse form of torus_matmul, costing only the nonzero weights. The rows' words are
// copied block by block into one buffer first, so that the kernel reads them from cache.
// Throws Error(size_mismatch) or Error(invalid_argument) on inconsistent arrays (the per-tap
// ranges of column and magnitude are checked in debug and SAFHIRE_CHECKS builds only).
void torus_spmm(std::span<const std::uint64_t* const> rows, const TorusSparseMatrix& matrix,
                std::span<std::uint64_t* const> outs, std::size_t len,
                SimdIsa isa = default_simd());

// The same three on 32-bit torus words: sums mod 2^32, weights and magnitudes taken mod 2^32 (a
// linear layer on rows switched to a modulus of 2^32, half the bytes and twice the words per
// register).
void torus_dot(std::span<const std::uint32_t* const> rows, std::span<const std::uint64_t> weights,
               std::span<std::uint32_t> out, SimdIsa isa = default_simd());
void torus_matmul(std::span<const std::uint32_t* const> rows,
                  std::span<const std::uint64_t> weights, std::span<std::uint32_t* const> outs,
                  std::size_t len, SimdIsa isa = default_simd());
void torus_spmm(std::span<const std::uint32_t* const> rows, const TorusSparseMatrix& matrix,
                std::span<std::uint32_t* const> outs, std::size_t len,
                SimdIsa isa = default_simd());

// Torus words switched to a modulus of 2^32: out[i] = (in[i] + 2^31) >> 32 (nearest), and
// acc[i mod acc.size()] += out[i] 2^32 - in[i] mod 2^64, the error of that rounding (a signed
// value below 2^31 in magnitude), for every i < in.size(): what the rows of 32-bit words need to
// take back a key's mean (backend::key_mean_map). out.size() == in.size(), acc non-empty.
void narrow_words(std::span<const std::uint64_t> in, std::span<std::uint32_t> out,
                  std::span<std::uint64_t> acc, SimdIsa isa = default_simd());

}  // namespace safhire::ring
