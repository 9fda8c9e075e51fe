// Sample extraction, one mask word at a time: word i of the LWE mask whose phase is coefficient j
// of an RLWE ciphertext's phase mod Phi_M (M = t^a, N = phi(M), m = M / t). Coefficient j of a s
// collects a_(j-i) s_i for i <= j, a_(j+M-i) s_i where X^(j+M) lands back at j (i > j + m), and
// minus a_(N+r-i) s_i (r = j mod m) where the fold of X^(N+r) reaches j. The CUDA backend's
// extraction kernel runs it per thread (cuda/portable/backend_element.cuh); the host
// (rlwe::sample_extract_into, the CPU backend's HostOps) runs extract_mask, its words in runs.
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"

namespace safhire::elements {

// A_i = [i <= j] a_(j-i) + [i > j+m] a_(j+M-i) - [i > r] a_(N+r-i), r = j mod m (mod 2^64).
SAFHIRE_HD std::uint64_t extracted_mask_word(const std::uint64_t* a, std::uint32_t j,
                                             std::uint32_t i, std::uint32_t N, std::uint32_t M,
                                             std::uint32_t m) {
  const std::uint32_t r = j % m;
  std::uint64_t word = 0;
  if (i <= j) word += a[j - i];
  if (i > j + m) word += a[j + M - i];
  if (i > r) word -= a[N + r - i];
  return word;
}

// The whole mask (N words) at once, as the host runs it: the same words in four runs of i with
// no test per word. With r = j mod m <= j: [0, r] a_(j-i); (r, j] a_(j-i) - a_(N+r-i);
// (j, j+m] -a_(N+r-i); (j+m, N) a_(j+M-i) - a_(N+r-i).
inline void extract_mask(const std::uint64_t* a, std::uint32_t j, std::uint64_t* out,
                         std::uint32_t N, std::uint32_t M, std::uint32_t m) {
  const std::uint32_t r = j % m, top = j + m < N ? j + m : N - 1;
  for (std::uint32_t i = 0; i <= r; ++i)
    out[i] = a[j - i];
  for (std::uint32_t i = r + 1; i <= j; ++i)
    out[i] = a[j - i] - a[N + r - i];
  for (std::uint32_t i = j + 1; i <= top; ++i)
    out[i] = std::uint64_t{0} - a[N + r - i];
  for (std::uint32_t i = top + 1; i < N; ++i)
    out[i] = a[j + M - i] - a[N + r - i];
}

}  // namespace safhire::elements
