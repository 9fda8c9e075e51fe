// The embedding of an LWE sample into an RLWE ciphertext (the inverse of extraction at
// coefficient 0), one coefficient of a at a time. Extraction at 0 gives A_0 = a_0 and
// A_(N-k) = a_(k+m) - a_k (k >= 1; a_(k+m) = 0 past N - 1), so a_k = -A_(N-k) + a_(k+m), which
// unrolls to a_k = -sum_(i >= 0, k + i m < N) A_(N-k-i m): each coefficient on its own, as a
// CUDA thread of the trees' packing computes it (cuda/portable/tree_element.cuh). The host
// (rlwe::embed_lwe) runs the recurrence itself over a whole mask, a third faster than the
// unrolled form coefficient by coefficient (one subtraction per coefficient instead of up to
// t - 1, and no loop per coefficient); the device emulation tests check that both give the same
// words.
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"

namespace safhire::elements {

// Coefficient k of the embedding's a for the mask A (N words, mod 2^64).
SAFHIRE_HD std::uint64_t embedded_mask_coefficient(const std::uint64_t* mask, std::uint32_t k,
                                                   std::uint32_t N, std::uint32_t m) {
  if (k == 0) return mask[0];
  std::uint64_t sum = 0;
  for (std::uint32_t x = k; x < N; x += m)
    sum -= mask[N - x];
  return sum;
}

// Coefficient l = k m + r (r < m) of (1 - X^m) e, which turns an embedded LWE sample into an
// item of the packing tree (rlwe::TraceTrees::pack_lwes; zeta_t = X^m). X^m moves exponent i to
// i + m, and i + m = N + r folds to -sum_k X^(k m + r), so (X^m e)_l = [k >= 1] e_(l-m) -
// e_(N-m+r). A CUDA thread computes it for one l; the host runs it block by block (no division).
SAFHIRE_HD std::uint64_t unit_minus_zeta_coefficient(const std::uint64_t* e, std::uint32_t k,
                                                     std::uint32_t r, std::uint32_t N,
                                                     std::uint32_t m) {
  const std::uint32_t l = k * m + r;
  return e[l] - (k >= 1 ? e[l - m] : std::uint64_t{0}) + e[N - m + r];
}

// The whole of a (N words) for the mask A, from the top: a_k = a_(k+m) - A_(N-k).
inline void embed_mask(const std::uint64_t* mask, std::uint64_t* a, std::uint32_t N,
                       std::uint32_t m) {
  a[0] = mask[0];
  for (std::uint32_t k = N - 1; k >= 1; --k)
    a[k] = (k + m < N ? a[k + m] : 0) - mask[N - k];
}

}  // namespace safhire::elements
