// Coefficient-domain operations in Z[X]/Phi_M(X), M = t^a: reduction of
// any polynomial modulo Phi_M, multiplication by X^e, the automorphisms sigma_k: X -> X^k, and the
// schoolbook product (the test oracle for every faster product). They use additions only (except
// the schoolbook product), so they are exact over the torus Z_{2^64} and over any Z_q alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "safhire/core/modarith.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/ring_params.hpp"

namespace safhire::ring {

// Coefficient arithmetic of the torus Z_{2^64}: wrapping word operations.
struct TorusArith {
  u64 add(u64 x, u64 y) const { return x + y; }
  u64 sub(u64 x, u64 y) const { return x - y; }
  u64 mul(u64 x, u64 y) const { return x * y; }
};

// Coefficient arithmetic of Z_q, inputs and outputs in [0, q).
struct ModArith {
  u64 q;
  u64 add(u64 x, u64 y) const { return core::add_mod(x, y, q); }
  u64 sub(u64 x, u64 y) const { return core::sub_mod(x, y, q); }
  u64 mul(u64 x, u64 y) const { return core::mul_mod(x, y, q); }
};

// out += value * X^j mod Phi_M, for 0 <= j < M. Uses X^(N+r) = -sum_{k<t-1} X^(k m + r) (§1.2).
template <class Arith>
void add_monomial(const RingParams& ring, std::span<u64> out, std::uint32_t j, u64 value,
                  Arith arith) {
  if (j < ring.N()) {
    out[j] = arith.add(out[j], value);
    return;
  }
  const std::uint32_t r = j - ring.N();
  for (std::uint32_t k = 0; k + 1 < ring.t(); ++k) {
    out[k * ring.m() + r] = arith.sub(out[k * ring.m() + r], value);
  }
}

// out = h mod Phi_M for a polynomial h of any length (X^M = 1, then the top block folded).
template <class Arith>
void reduce_mod_phi(const RingParams& ring, std::span<const u64> h, std::span<u64> out,
                    Arith arith) {
  require_degree(ring, out.size(), "reduce_mod_phi output");
  for (u64& c : out)
    c = 0;
  std::uint32_t j = 0;  // e mod M
  for (std::size_t e = 0; e < h.size(); ++e) {
    add_monomial(ring, out, j, h[e], arith);
    if (++j == ring.M()) j = 0;
  }
}

// out = X^e * a mod Phi_M, e any integer (negative exponents taken mod M). out must not alias a.
template <class Arith>
void mul_monomial(const RingParams& ring, std::span<const u64> a, std::int64_t e,
                  std::span<u64> out, Arith arith) {
  require_degree(ring, a.size(), "mul_monomial input");
  require_degree(ring, out.size(), "mul_monomial output");
  const std::int64_t M = ring.M();
  const auto shift = static_cast<std::uint32_t>(((e % M) + M) % M);
  for (u64& c : out)
    c = 0;
  for (std::uint32_t i = 0; i < ring.N(); ++i) {
    add_monomial(ring, out, (i + shift) % ring.M(), a[i], arith);
  }
}

// dst += X^e src (or dst -= X^e src) mod Phi_M over the torus, e any integer; dst must not alias
// src. No allocation: X^e rotates the exponents mod M (at most three contiguous runs), and the
// run that lands in [N, M) folds into the t-1 lower blocks (§1.2).
void add_monomial_product(const RingParams& ring, std::span<const u64> src, std::int64_t e,
                          std::span<u64> dst, bool subtract = false);

// Throws ErrorCode::invalid_argument unless gcd(k, M) = 1, i.e. t does not divide k.
void require_galois_element(const RingParams& ring, std::uint64_t k);

// out = sigma_k(a) = a(X^k) mod Phi_M for k coprime to M (§3.1). out must not alias a.
// Not a signed permutation: an output coefficient can be a difference of two inputs.
// As a gather: with c[e] = a[e k^-1 mod M] (zero where that index is >= N), the unreduced
// image is sum_e c[e] X^e, and out[j] = c[j] - c[N + (j mod m)] (§1.2). Branch-free, so the
// irregular pattern of indices that land in the top block costs no mispredictions.
template <class Arith>
void automorphism(const RingParams& ring, std::span<const u64> a, std::uint64_t k,
                  std::span<u64> out, Arith arith) {
  require_galois_element(ring, k);
  require_degree(ring, a.size(), "automorphism input");
  require_degree(ring, out.size(), "automorphism output");
  const std::uint32_t M = ring.M(), N = ring.N(), m = ring.m();
  // k^-1 = k^(N-1) mod M (Euler), and the source of exponent e, with 0 where it is >= N.
  const auto k_inv = static_cast<std::uint32_t>(core::pow_mod<u64>(k % M, N - 1, M));
  auto source = [&](std::uint32_t i) {
    const u64 keep = i < N ? ~u64{0} : u64{0};
    return a[i < N ? i : 0] & keep;
  };
  auto advance = [&](std::uint32_t& i) {
    i += k_inv;
    if (i >= M) i -= M;
  };
  std::uint32_t i = 0;  // j k^-1 mod M
  for (std::uint32_t j = 0; j < N; ++j, advance(i))
    out[j] = source(i);
  for (std::uint32_t r = 0; r < m; ++r, advance(i)) {  // i = (N + r) k^-1 mod M
    const u64 top = source(i);
    for (std::uint32_t block = 0; block + 1 < ring.t(); ++block) {
      out[block * m + r] = arith.sub(out[block * m + r], top);
    }
  }
}

// out = a * b mod Phi_M by the schoolbook product (O(N^2)): the oracle for the NTT products.
// Exact mod 2^64 with TorusArith, mod q with ModArith. out may alias a or b.
template <class Arith>
void schoolbook_mul(const RingParams& ring, std::span<const u64> a, std::span<const u64> b,
                    std::span<u64> out, Arith arith) {
  require_degree(ring, a.size(), "schoolbook_mul input a");
  require_degree(ring, b.size(), "schoolbook_mul input b");
  const std::size_t n = ring.N();
  std::vector<u64> full(2 * n - 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      full[i + j] = arith.add(full[i + j], arith.mul(a[i], b[j]));
    }
  }
  reduce_mod_phi(ring, full, out, arith);
}

}  // namespace safhire::ring
