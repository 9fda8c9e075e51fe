// Multiplication by a monomial X^e modulo a prime-power cyclotomic Phi_M (M = t^a, N = phi(M),
// m = M / t), one output coefficient at a time: the body that the CUDA kernels run per thread
// (cuda/portable/tree_element.cuh, backend_element.cuh) and the host's PartialExtraction uses
// for its lane tables. Exponent i of a moves to i + e mod M; a landing exponent x >= N folds back
// as X^x = -sum_(k < t-1) X^(k m + (x - N)), so coefficient l of X^e a reads at most two
// coefficients of a: the one that lands on l, minus the one that lands on N + (l mod m).
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"

namespace safhire::elements {

// e mod M for any integer e.
SAFHIRE_HD std::uint32_t exponent_mod(long long e, std::uint32_t M) {
  const long long r = e % static_cast<long long>(M);
  return static_cast<std::uint32_t>(r < 0 ? r + M : r);
}

// The coefficients of a that coefficient l of X^e a reads (0 <= e < M): a[plus] - a[minus],
// where an index N stands for no coefficient (reads 0).
struct MonomialTerms {
  std::uint32_t plus, minus;
};

SAFHIRE_HD MonomialTerms monomial_terms(std::uint32_t l, std::uint32_t e, std::uint32_t N,
                                        std::uint32_t M, std::uint32_t m) {
  const auto source = [&](std::uint32_t x) -> std::uint32_t {
    const std::uint32_t i = x >= e ? x - e : x + M - e;
    return i < N ? i : N;
  };
  return {source(l), source(N + l % m)};
}

// Coefficient l of X^e a mod Phi_M (0 <= e < M), on words of any unsigned type: mod 2^64 or,
// for 32-bit rows, mod 2^32.
template <class Word>
SAFHIRE_HD Word monomial_coefficient(const Word* a, std::uint32_t l, std::uint32_t e,
                                     std::uint32_t N, std::uint32_t M, std::uint32_t m) {
  const MonomialTerms terms = monomial_terms(l, e, N, M, m);
  return (terms.plus < N ? a[terms.plus] : Word{0}) - (terms.minus < N ? a[terms.minus] : Word{0});
}

}  // namespace safhire::elements
