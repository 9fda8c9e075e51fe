// Per-coefficient bodies of the tree-level kernels (cuda/trees.cu), shared with the CPU replay in
// tests/rlwe/test_trees_emulation.cpp; the ring's per-coefficient arithmetic (monomials, the LWE
// embedding) is the host's own, from include/safhire/elements. Each computes one output coefficient
// from its inputs without state, so one GPU thread can own it. Layouts: a batch of polynomials is
// [count][N].
#pragma once

#include <cstddef>
#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/elements/embed_lwe.hpp"
#include "safhire/elements/monomial.hpp"

namespace safhire::cuda::block {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

using elements::exponent_mod;
using elements::monomial_coefficient;

// The polynomials a node's coefficient reads are strided: input j of a node is d + j stride
// (words), so that a thread computes each address instead of indexing an array of pointers (which
// a GPU keeps in local memory).

// Split level (fast, DFT trick): coefficient l of c_s = sum_j X^(-s delta - s j m) d_j.
SAFHIRE_HD u64 split_coefficient(const u64* d, std::size_t stride, u32 t, u32 s, u32 delta, u32 l,
                                 u32 N, u32 M, u32 m) {
  u64 sum = 0;
  for (u32 j = 0; j < t; ++j) {
    const long long e = -static_cast<long long>(s) * delta - static_cast<long long>(s) * j * m;
    sum += monomial_coefficient(d + j * stride, l, exponent_mod(e, M), N, M, m);
  }
  return sum;
}

// Bottom level (fast): coefficient l of out_v = sum_(k=1..t-1) (X^(-v k m) - X^(k m)) d_k, with
// d_k = d + (k - 1) stride (d_1 the node itself).
SAFHIRE_HD u64 bottom_coefficient(const u64* d, std::size_t stride, u32 t, u32 v, u32 l, u32 N,
                                  u32 M, u32 m) {
  u64 sum = 0;
  for (u32 k = 1; k < t; ++k) {
    const long long km = static_cast<long long>(k) * m;
    const u64* d_k = d + (k - 1) * stride;
    sum += monomial_coefficient(d_k, l, exponent_mod(-static_cast<long long>(v) * km, M), N, M, m);
    sum -= monomial_coefficient(d_k, l, exponent_mod(km, M), N, M, m);
  }
  return sum;
}

// Merge level (fast): coefficient l of w_rho = sum_s X^(e s rho^-1) c_s over the node's `items`
// inputs c_s = d + s stride (t, or t-1 at the bottom).
SAFHIRE_HD u64 merge_w_coefficient(const u64* d, std::size_t stride, u32 items, u32 e, u32 rho_inv,
                                   u32 l, u32 N, u32 M, u32 m) {
  u64 sum = 0;
  for (u32 s = 0; s < items; ++s) {
    const auto exponent = static_cast<u32>(static_cast<u64>(e) * s % M * rho_inv % M);
    sum += monomial_coefficient(d + s * stride, l, exponent, N, M, m);
  }
  return sum;
}

// ---- Per-thread work of the tree-level kernels: thread x owns one output coefficient. The CUDA
// kernels are grid-stride loops over x; the CPU replay is a plain loop. ------------------------

// Split level: node u of input c (nodes [count][step]) has children u + s step (s < t), stored
// [count][step t]. a, b: planes of `plane` words, [t][count step][N]: plane 0 the nodes, plane j
// their sigma_(1 + j t^(b-1)) switches.
struct SplitArgs {
  const u64* a;
  const u64* b;
  std::size_t plane;
  u64* out_a;
  u64* out_b;
  u32 t, step, delta, N, M, m;
};

SAFHIRE_HD void split_thread(const SplitArgs& g, std::size_t x) {
  const u32 l = static_cast<u32>(x % g.N);
  const std::size_t child = x / g.N;
  const std::size_t fan = std::size_t{g.step} * g.t;
  const std::size_t c = child / fan, rest = child % fan;
  const u32 s = static_cast<u32>(rest / g.step), u = static_cast<u32>(rest % g.step);
  const std::size_t node = (c * g.step + u) * g.N;
  g.out_a[x] = split_coefficient(g.a + node, g.plane, g.t, s, g.delta, l, g.N, g.M, g.m);
  g.out_b[x] = split_coefficient(g.b + node, g.plane, g.t, s, g.delta, l, g.N, g.M, g.m);
}

// Bottom level: node u < m of input c (nodes [count][m]); outputs [count][N], output u + v m.
// Planes [t-1][count m][N]: plane k - 1 is sigma_k of the nodes (plane 0 the nodes themselves).
SAFHIRE_HD void bottom_thread(const SplitArgs& g, std::size_t x) {
  const u32 l = static_cast<u32>(x % g.N);
  const std::size_t child = x / g.N;
  const std::size_t c = child / g.N;
  const auto rest = static_cast<u32>(child % g.N);
  const u32 u = rest % g.m, v = rest / g.m;
  const std::size_t node = (c * g.m + u) * g.N;
  g.out_a[x] = bottom_coefficient(g.a + node, g.plane, g.t, v, l, g.N, g.M, g.m);
  g.out_b[x] = bottom_coefficient(g.b + node, g.plane, g.t, v, l, g.N, g.M, g.m);
}

// Merge level, one representative rho: node sigma of packing p (nodes [count][nodes]) merges the
// `items` inputs p prev + sigma + s stride (s < items) of the previous level ([count][prev]) into
// w_rho, stored [count][nodes].
struct MergeArgs {
  const u64* prev_a;
  const u64* prev_b;
  u64* out_a;
  u64* out_b;
  u32 prev, nodes, stride, items, e, rho_inv, N, M, m;
};

SAFHIRE_HD void merge_thread(const MergeArgs& g, std::size_t x) {
  const u32 l = static_cast<u32>(x % g.N);
  const std::size_t node = x / g.N;
  const std::size_t p = node / g.nodes, sigma = node % g.nodes;
  const std::size_t first = (p * g.prev + sigma) * g.N, stride = std::size_t{g.stride} * g.N;
  g.out_a[x] =
      merge_w_coefficient(g.prev_a + first, stride, g.items, g.e, g.rho_inv, l, g.N, g.M, g.m);
  g.out_b[x] =
      merge_w_coefficient(g.prev_b + first, stride, g.items, g.e, g.rho_inv, l, g.N, g.M, g.m);
}

// Times a monomial, for a batch ([count][N]): out = X^e in, or out += X^e in (accumulate).
struct MonomialArgs {
  const u64* in;
  u64* out;
  u32 e, N, M, m;
  bool accumulate;
};

SAFHIRE_HD void monomial_thread(const MonomialArgs& g, std::size_t x) {
  const std::size_t node = x / g.N;
  const u64 v =
      monomial_coefficient(g.in + node * g.N, static_cast<u32>(x % g.N), g.e, g.N, g.M, g.m);
  g.out[x] = g.accumulate ? g.out[x] + v : v;
}

// Packing items: LWE i (mask [n][N], body [n]) embedded, times (1 - X^m), times m_inv = M^-1;
// `embedded` holds the embedding's a part, [n][N] (written by embed_thread first).
SAFHIRE_HD void embed_thread(const u64* masks, u64* embedded, u32 N, u32 m, std::size_t x) {
  const std::size_t i = x / N;
  embedded[x] = elements::embedded_mask_coefficient(masks + i * N, static_cast<u32>(x % N), N, m);
}

SAFHIRE_HD void prepare_item_thread(const u64* embedded, const u64* bodies, u64* out_a, u64* out_b,
                                    u64 m_inv, u32 N, u32 m, std::size_t x) {
  const std::size_t i = x / N;
  const auto l = static_cast<u32>(x % N);
  const u64* a = embedded + i * N;
  out_a[x] = m_inv * elements::unit_minus_zeta_coefficient(a, l / m, l % m, N, m);
  // b = (B, 0, ..., 0): (1 - X^m) b = B (1 - X^m), whose coefficient l is B [l == 0] - B [l == m].
  const u64 body = bodies[i];
  out_b[x] = m_inv * ((l == 0 ? body : u64{0}) - (l == m && m < N ? body : u64{0}));
}

}  // namespace safhire::cuda::block
