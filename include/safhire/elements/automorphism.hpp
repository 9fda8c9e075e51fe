// One coefficient of sigma_k(a) = a(X^k) mod Phi_M, computed on its own (no state carried from
// the previous coefficient), for kernels that give each thread one coefficient. With
// c[e] = a[e k^-1 mod M] (0 where that index is >= N): out[j] = c[j] - c[N + (j mod m)]
// (X^(k j) reduced mod Phi_M). The CUDA key switcher runs it per thread; ring::automorphism
// computes the same values with a running index (tests/ring/test_cyclotomic.cpp ties the two).
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"

namespace safhire::elements {

SAFHIRE_HD std::uint64_t automorphism_coefficient(const std::uint64_t* a, std::uint32_t j,
                                                  std::uint32_t k_inv, std::uint32_t N,
                                                  std::uint32_t M, std::uint32_t m) {
  const auto source = [&](std::uint64_t e) -> std::uint64_t {
    const auto i = static_cast<std::uint32_t>(e * k_inv % M);
    return i < N ? a[i] : 0;
  };
  return source(j) - source(N + j % m);
}

}  // namespace safhire::elements
