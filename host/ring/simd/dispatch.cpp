#include <cstdlib>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/simd.hpp"
#include "simd/dispatch.hpp"
#include "simd/kernels.hpp"

namespace safhire::ring {

std::string_view to_string(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::scalar:
      return "scalar";
    case SimdIsa::avx2:
      return "avx2";
    case SimdIsa::avx512:
      return "avx512";
  }
  return "unknown";
}

namespace {

bool cpu_supports(SimdIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (isa) {
    case SimdIsa::scalar:
      return true;
    case SimdIsa::avx2:
      return __builtin_cpu_supports("avx2");
    case SimdIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return isa == SimdIsa::scalar;
#endif
}

}  // namespace

bool simd_available(SimdIsa isa) {
  return cpu_supports(isa) && (isa == SimdIsa::scalar || simd::kernels_for(isa) != nullptr);
}

std::vector<SimdIsa> available_simd() {
  std::vector<SimdIsa> out;
  for (SimdIsa isa : {SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512}) {
    if (simd_available(isa)) out.push_back(isa);
  }
  return out;
}

SimdIsa default_simd() {
  if (const char* env = std::getenv("SAFHIRE_SIMD"); env != nullptr && *env != '\0') {
    const std::string_view name(env);
    for (SimdIsa isa : {SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512}) {
      if (name == to_string(isa)) {
        require(simd_available(isa), ErrorCode::unsupported,
                "SAFHIRE_SIMD=" + std::string(name) + " is not available on this processor/build");
        return isa;
      }
    }
    throw Error(ErrorCode::unsupported,
                "SAFHIRE_SIMD must be scalar, avx2 or avx512, got '" + std::string(name) + "'");
  }
  return available_simd().back();
}

namespace simd {

std::uint64_t* kernel_scratch(std::size_t words) {
  thread_local AlignedWords scratch;
  if (scratch.size() < words) scratch = AlignedWords(words);
  return scratch.data();
}

const KernelTable* kernels_for(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::scalar:
      return &scalar_kernels();
    case SimdIsa::avx2:
      return avx2_kernels();
    case SimdIsa::avx512:
      return avx512_kernels();
  }
  return nullptr;
}

const KernelTable& checked_kernels(SimdIsa isa) {
  require(simd_available(isa), ErrorCode::unsupported,
          "SIMD kernels '" + std::string(to_string(isa)) + "' are not available here");
  return *kernels_for(isa);
}

}  // namespace simd

namespace {

// The kernel table's linear-layer entries for words of type Word.
template <class Word>
struct TorusEntries;
template <>
struct TorusEntries<std::uint64_t> {
  static constexpr auto dot = &simd::KernelTable::torus_dot;
  static constexpr auto matmul = &simd::KernelTable::torus_matmul;
  static constexpr auto spmm = &simd::KernelTable::torus_spmm;
};
template <>
struct TorusEntries<std::uint32_t> {
  static constexpr auto dot = &simd::KernelTable::torus_dot32;
  static constexpr auto matmul = &simd::KernelTable::torus_matmul32;
  static constexpr auto spmm = &simd::KernelTable::torus_spmm32;
};

template <class Word>
void dot_words(std::span<const Word* const> rows, std::span<const std::uint64_t> weights,
               std::span<Word> out, SimdIsa isa) {
  require(rows.size() == weights.size(), ErrorCode::size_mismatch, "torus_dot: one weight per row");
  (simd::checked_kernels(isa).*TorusEntries<Word>::dot)(rows.data(), weights.data(), rows.size(),
                                                        out.data(), out.size());
}

template <class Word>
void matmul_words(std::span<const Word* const> rows, std::span<const std::uint64_t> weights,
                  std::span<Word* const> outs, std::size_t len, SimdIsa isa) {
  require(weights.size() == rows.size() * outs.size(), ErrorCode::size_mismatch,
          "torus_matmul: one weight per output and row");
  (simd::checked_kernels(isa).*TorusEntries<Word>::matmul)(rows.data(), rows.size(), weights.data(),
                                                           outs.size(), outs.data(), len);
}

template <class Word>
void spmm_words(std::span<const Word* const> rows, const TorusSparseMatrix& matrix,
                std::span<Word* const> outs, std::size_t len, SimdIsa isa) {
  const std::size_t outputs = outs.size();
  require(matrix.start.size() == outputs + 1 && matrix.positives.size() == outputs,
          ErrorCode::size_mismatch,
          "torus_spmm: start and positives must have one entry per output");
  require(matrix.start[0] == 0 && matrix.column.size() == matrix.start[outputs] &&
              matrix.magnitude.size() == matrix.start[outputs],
          ErrorCode::size_mismatch,
          "torus_spmm: column and magnitude must have start[outputs] taps");
  for (std::size_t o = 0; o < outputs; ++o)
    if (matrix.start[o] > matrix.start[o + 1] ||
        matrix.positives[o] > matrix.start[o + 1] - matrix.start[o])
      throw Error(ErrorCode::invalid_argument, "torus_spmm: output " + std::to_string(o) +
                                                   " has inconsistent start or positives");
#if SAFHIRE_DEBUG_CHECKS
  for (std::size_t k = 0; k < matrix.column.size(); ++k) {
    SAFHIRE_DEBUG_ASSERT(matrix.column[k] < rows.size(), "torus_spmm: column out of range");
    SAFHIRE_DEBUG_ASSERT(matrix.magnitude[k] >> 32 == 0, "torus_spmm: magnitude of 2^32 or more");
  }
#endif
  (simd::checked_kernels(isa).*TorusEntries<Word>::spmm)(
      rows.data(), rows.size(), matrix.start.data(), matrix.positives.data(), matrix.column.data(),
      matrix.magnitude.data(), outputs, outs.data(), len);
}

}  // namespace

void torus_dot(std::span<const std::uint64_t* const> rows, std::span<const std::uint64_t> weights,
               std::span<std::uint64_t> out, SimdIsa isa) {
  dot_words(rows, weights, out, isa);
}

void torus_dot(std::span<const std::uint32_t* const> rows, std::span<const std::uint64_t> weights,
               std::span<std::uint32_t> out, SimdIsa isa) {
  dot_words(rows, weights, out, isa);
}

void torus_matmul(std::span<const std::uint64_t* const> rows,
                  std::span<const std::uint64_t> weights, std::span<std::uint64_t* const> outs,
                  std::size_t len, SimdIsa isa) {
  matmul_words(rows, weights, outs, len, isa);
}

void torus_matmul(std::span<const std::uint32_t* const> rows,
                  std::span<const std::uint64_t> weights, std::span<std::uint32_t* const> outs,
                  std::size_t len, SimdIsa isa) {
  matmul_words(rows, weights, outs, len, isa);
}

void torus_spmm(std::span<const std::uint64_t* const> rows, const TorusSparseMatrix& matrix,
                std::span<std::uint64_t* const> outs, std::size_t len, SimdIsa isa) {
  spmm_words(rows, matrix, outs, len, isa);
}

void torus_spmm(std::span<const std::uint32_t* const> rows, const TorusSparseMatrix& matrix,
                std::span<std::uint32_t* const> outs, std::size_t len, SimdIsa isa) {
  spmm_words(rows, matrix, outs, len, isa);
}

void narrow_words(std::span<const std::uint64_t> in, std::span<std::uint32_t> out,
                  std::span<std::uint64_t> acc, SimdIsa isa) {
  require(out.size() == in.size() && !acc.empty(), ErrorCode::size_mismatch,
          "narrow_words: one output word per input word and a non-empty accumulator");
  simd::checked_kernels(isa).narrow_words(in.data(), out.data(), acc.data(), acc.size(), in.size());
}

}  // namespace safhire::ring
