// The level-by-level algorithm of the batched trees, written once over an `Ops` type that
// supplies buffers and runs the per-thread functions of tree_element.cuh over a range of threads.
// cuda/trees.cu and cuda/backend.cu instantiate it with kernel launches on a stream; the CPU
// backend with whole rows on its workers (host/backend/cpu/host_ops.hpp); the CPU replay in
// tests/rlwe/test_trees_emulation.cpp with plain loops and the CPU KeySwitcher, which checks the
// replay and the CPU backend's ops against rlwe::TraceTrees word for word. Extraction (split) is
// in fast mode; packing (the merge levels) in either mode.
//
// Ops provides: Buffer (with data()), alloc(words), copy(dst, src, words),
// copy_rows(dst, dst_stride, src, src_stride, rows, words) (row r: words words from src + r
// src_stride to dst + r dst_stride),
// scale_copy(dst, src, factor, words) (dst may be src), add(dst, src, words) (dst += src),
// run_split/run_bottom(SplitArgs, threads), run_merge(MergeArgs, threads),
// run_monomial(MonomialArgs, threads), run_embed(masks, embedded, N, m, threads),
// run_prepare(embedded, bodies, out_a, out_b, m_inv, N, m, threads),
// automorphism(k, in_a, in_b, out_a, out_b, count) (sigma_k with key switch; out may alias in),
// automorphism_sum(ks, in_a, in_b, plane, out_a, out_b, count): out += sum_i sigma_(ks[i]) of
// input i, each switched back, for each of `count` ciphertexts; input i at in + i plane (plane 0:
// the same input for every key); out overlaps no input. The CPU sums the switches' products
// before one inverse transform (rlwe::KeySwitcher::automorphism_sum), the device switches one
// at a time; the words are the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "safhire/core/modarith.hpp"
#include "safhire/ring/ring_params.hpp"
#include "safhire/rlwe/trees.hpp"
#include "tree_element.cuh"

namespace safhire::cuda::levels {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

inline u64 power(u64 base, u32 e) {
  u64 p = 1;
  for (u32 i = 0; i < e; ++i)
    p *= base;
  return p;
}

template <class Ops>
struct Batch {
  typename Ops::Buffer a, b;
};

// The arguments of a split or bottom level reading the planes of `in` into `out`.
template <class Ops>
block::SplitArgs split_args(const ring::RingParams& r, Batch<Ops>& in, std::size_t plane,
                            Batch<Ops>& out, u32 step, u32 delta) {
  block::SplitArgs args{};
  args.a = in.a.data();
  args.b = in.b.data();
  args.plane = plane;
  args.out_a = out.a.data();
  args.out_b = out.b.data();
  args.t = r.t();
  args.step = step;
  args.delta = delta;
  args.N = r.N();
  args.M = r.M();
  args.m = r.m();
  return args;
}

// Extraction at gamma of `count` ciphertexts ([count][N] each for a and b): outputs
// [count][t^(a-gamma)][N] (gamma >= 1) or [count][N][N] (gamma = 0), as TraceTrees::split.
// Each level's nodes are written to plane 0 of a buffer whose other planes receive their
// conjugates (the next level's key switches), so the level kernels read strided inputs.
template <class Ops>
Batch<Ops> split(Ops& ops, const ring::RingParams& r, const u64* in_a, const u64* in_b,
                 std::size_t count, u32 gamma) {
  const u32 t = r.t(), a = r.a(), N = r.N(), M = r.M(), m = r.m();
  const u32 lowest = gamma > 1 ? gamma : 1;  // split levels b = a .. lowest + 1
  // Planes the nodes below level b need: t for another split level, t - 1 for the bottom
  // (gamma = 0), none beyond their own for the output.
  const auto planes_below = [&](u32 b) -> u32 {
    return b - 1 > lowest ? t : gamma == 0 ? t - 1 : 1;
  };
  const u64 factor = gamma == 0 ? M : power(t, a - gamma);
  Batch<Ops> cur{ops.alloc(t * count * N), ops.alloc(t * count * N)};
  ops.scale_copy(cur.a.data(), in_a, core::inverse_mod_word(factor), count * N);
  ops.scale_copy(cur.b.data(), in_b, core::inverse_mod_word(factor), count * N);
  u32 step = 1;  // nodes per input at this level
  for (u32 b = a; b > lowest; --b, step *= t) {
    const std::size_t nodes = count * step, plane = nodes * N;
    for (u64 j = 1; j < t; ++j)
      ops.automorphism(1 + j * power(t, b - 1), cur.a.data(), cur.b.data(),
                       cur.a.data() + j * plane, cur.b.data() + j * plane, nodes);
    const std::size_t next_words = planes_below(b) * nodes * t * N;
    Batch<Ops> next{ops.alloc(next_words), ops.alloc(next_words)};
    ops.run_split(split_args(r, cur, plane, next, step, static_cast<u32>(power(t, a - b))),
                  nodes * t * N);
    cur = std::move(next);
  }
  if (gamma >= 1) return cur;
  // Bottom: nodes [count][m]; plane 0 the nodes (d_1), plane k - 1 sigma_k of them.
  const std::size_t nodes = count * m, plane = nodes * N;
  for (u64 k = 2; k < t; ++k)
    ops.automorphism(k, cur.a.data(), cur.b.data(), cur.a.data() + (k - 1) * plane,
                     cur.b.data() + (k - 1) * plane, nodes);
  Batch<Ops> out{ops.alloc(count * N * N), ops.alloc(count * N * N)};
  ops.run_bottom(split_args(r, cur, plane, out, m, 0), count * N * N);
  return out;
}

// sigma_k of a batch with a key switch, added into acc ([count][N] each; acc is not the input).
template <class Ops>
void add_switched(Ops& ops, Batch<Ops>& acc, const u64* in_a, const u64* in_b, u64 k,
                  std::size_t count) {
  const u64 ks[] = {k};
  ops.automorphism_sum(std::span<const u64>(ks), in_a, in_b, 0, acc.a.data(), acc.b.data(), count);
}

template <class Ops>
Batch<Ops> copy_of(Ops& ops, const u64* a, const u64* b, std::size_t words) {
  Batch<Ops> out{ops.alloc(words), ops.alloc(words)};
  ops.copy(out.a.data(), a, words);
  ops.copy(out.b.data(), b, words);
  return out;
}

// Tr_(K_1/Q) of a batch, as TraceTrees::trace_k1: the sum over (Z/t)^* through its subgroup
// tower, t = 3: 1 + sigma_-1; t = 5: (1 + sigma_-1)(1 + sigma_2); t = 7: (1 + sigma_-1)(1 +
// sigma_2 + sigma_4), the last by Horner: (t - 1)/2 key switches.
template <class Ops>
Batch<Ops> trace_k1(Ops& ops, const ring::RingParams& r, const u64* in_a, const u64* in_b,
                    std::size_t count) {
  const std::size_t words = count * r.N();
  Batch<Ops> y = copy_of(ops, in_a, in_b, words);
  add_switched(ops, y, in_a, in_b, r.M() - 1, count);
  if (r.t() == 5) {
    const Batch<Ops> z = copy_of(ops, y.a.data(), y.b.data(), words);
    add_switched(ops, y, z.a.data(), z.b.data(), 2, count);
  } else if (r.t() == 7) {
    Batch<Ops> inner = copy_of(ops, y.a.data(), y.b.data(), words);
    add_switched(ops, inner, y.a.data(), y.b.data(), 2, count);  // y + sigma_2 y
    add_switched(ops, y, inner.a.data(), inner.b.data(), 2, count);
  }
  return y;
}

// One merge level in paper mode, as TraceTrees::merge: node sigma of packing p sums
// X^(e s) T_b(c_s) over its inputs c_s = p prev + sigma + s nodes, each traced on its own
// (T_b = the sum of sigma_rho over the representatives: t - 1 key switches per input at b >= 1,
// summed by one automorphism_sum, Tr_(K_1/Q) at b = 0).
template <class Ops>
Batch<Ops> merge_level_paper(Ops& ops, const ring::RingParams& r, const Batch<Ops>& prev,
                             u32 prev_count, u32 nodes, u32 items, std::size_t count, u32 b) {
  const u32 t = r.t(), N = r.N(), M = r.M(), m = r.m();
  const std::size_t words = count * nodes * N;
  const u64 e = power(t, r.a() - b - 1);
  Batch<Ops> out{ops.alloc(words), ops.alloc(words)};
  for (u32 s = 0; s < items; ++s) {
    // Input s of every node, contiguous: [count][nodes][N].
    Batch<Ops> c{ops.alloc(words), ops.alloc(words)};
    const std::size_t row = std::size_t{nodes} * N, from = std::size_t{s} * row;
    ops.copy_rows(c.a.data(), row, prev.a.data() + from, std::size_t{prev_count} * N, count, row);
    ops.copy_rows(c.b.data(), row, prev.b.data() + from, std::size_t{prev_count} * N, count, row);
    Batch<Ops> traced;
    if (b == 0) {
      traced = trace_k1(ops, r, c.a.data(), c.b.data(), count * nodes);
    } else {
      traced = copy_of(ops, c.a.data(), c.b.data(), words);
      std::vector<u64> ks;
      for (u64 j = 1; j < t; ++j)
        ks.push_back(1 + j * power(t, b));
      ops.automorphism_sum(std::span<const u64>(ks), c.a.data(), c.b.data(), 0, traced.a.data(),
                           traced.b.data(), count * nodes);
    }
    block::MonomialArgs args{};
    args.e = static_cast<u32>(e * s % M);
    args.N = N;
    args.M = M;
    args.m = m;
    args.accumulate = s > 0;
    args.in = traced.a.data();
    args.out = out.a.data();
    ops.run_monomial(args, words);
    args.in = traced.b.data();
    args.out = out.b.data();
    ops.run_monomial(args, words);
  }
  return out;
}

// The merge levels from..to of `count` trees whose items are `prev` ([count][items][N]), as
// TraceTrees::merge_tree: node q of a level merges items q + nodes s of the level below; the
// bottom level of an LWE packing (from = 0) merges t - 1 items per node, every other level t.
// Outputs [count][N]. Fast mode: one key switch per representative rho != 1 for all of a node's
// inputs (the w_rho in planes of one buffer, their switches summed by one automorphism_sum);
// paper mode: each input traced on its own.
template <class Ops>
Batch<Ops> merge_levels(Ops& ops, const ring::RingParams& r, Batch<Ops> prev, u32 items,
                        std::size_t count, u32 from, u32 to, rlwe::TreeMode mode) {
  const u32 t = r.t(), a = r.a(), N = r.N(), M = r.M(), m = r.m();
  u32 prev_count = items;
  for (u32 b = from; b <= to; ++b) {
    const u32 nodes = static_cast<u32>(power(t, to - b));
    const std::size_t words = count * nodes * N;
    if (mode == rlwe::TreeMode::paper) {
      prev = merge_level_paper(ops, r, prev, prev_count, nodes, b == 0 ? t - 1 : t, count, b);
      prev_count = nodes;
      continue;
    }
    const u32 reps = b == 0 ? t - 1 : t;
    Batch<Ops> out{ops.alloc(words), ops.alloc(words)};
    Batch<Ops> w{ops.alloc((reps - 1) * words), ops.alloc((reps - 1) * words)};
    std::vector<u64> ks;  // rho != 1, for the planes of w
    for (u64 j = 0; j < reps; ++j) {
      const u64 rho = b == 0 ? j + 1 : 1 + j * power(t, b);
      block::MergeArgs args{};
      args.prev_a = prev.a.data();
      args.prev_b = prev.b.data();
      args.prev = prev_count;
      args.nodes = nodes;
      args.stride = nodes;
      args.items = reps;
      args.e = static_cast<u32>(power(t, a - b - 1));
      args.rho_inv = static_cast<u32>(core::pow_mod<u64>(rho, N - 1, M));
      args.N = N;
      args.M = M;
      args.m = m;
      // w_1 needs no switch: it starts the sum.
      args.out_a = rho == 1 ? out.a.data() : w.a.data() + ks.size() * words;
      args.out_b = rho == 1 ? out.b.data() : w.b.data() + ks.size() * words;
      ops.run_merge(args, words);
      if (rho != 1) ks.push_back(rho);
    }
    ops.automorphism_sum(std::span<const u64>(ks), w.a.data(), w.b.data(), words, out.a.data(),
                         out.b.data(), count * nodes);
    prev = std::move(out);
    prev_count = nodes;
  }
  return prev;
}

// The packing items of `samples` LWE samples (masks [samples][N], bodies [samples]): each
// embedded, times (1 - X^m) and M^-1 (the factor of the full trace), [samples][N].
template <class Ops>
Batch<Ops> lwe_items(Ops& ops, const ring::RingParams& r, const u64* masks, const u64* bodies,
                     std::size_t samples) {
  const u32 N = r.N(), m = r.m();
  auto embedded = ops.alloc(samples * N);
  ops.run_embed(masks, embedded.data(), N, m, samples * N);
  Batch<Ops> items{ops.alloc(samples * N), ops.alloc(samples * N)};
  ops.run_prepare(embedded.data(), bodies, items.a.data(), items.b.data(),
                  core::inverse_mod_word<u64>(r.M()), N, m, samples * N);
  return items;
}

// Tr_(K_a/K_from) of a batch ([count][N]): Horner c + sigma(c + sigma(...)) with sigma =
// sigma_(1 + t^b) per level b = from .. a - 1.
template <class Ops>
Batch<Ops> trace_tower(Ops& ops, const ring::RingParams& r, Batch<Ops> prev, std::size_t count,
                       u32 from) {
  const std::size_t words = count * r.N();
  for (u32 b = from; b < r.a(); ++b) {
    const u64 g = 1 + power(r.t(), b);
    Batch<Ops> acc = copy_of(ops, prev.a.data(), prev.b.data(), words);
    for (u32 i = 0; i + 1 < r.t(); ++i) {
      Batch<Ops> next = copy_of(ops, prev.a.data(), prev.b.data(), words);
      add_switched(ops, next, acc.a.data(), acc.b.data(), g, count);
      acc = std::move(next);
    }
    prev = std::move(acc);
  }
  return prev;
}

// Packing of `count` groups of n = (t-1) t^k LWE samples (masks [count][n][N], bodies
// [count][n]): outputs [count][N], as TraceTrees::pack_lwes.
template <class Ops>
Batch<Ops> pack_lwes(Ops& ops, const ring::RingParams& r, const u64* masks, const u64* bodies,
                     std::size_t count, u32 k, rlwe::TreeMode mode = rlwe::TreeMode::fast) {
  const u32 n = static_cast<u32>((r.t() - 1) * power(r.t(), k));
  Batch<Ops> items = lwe_items(ops, r, masks, bodies, count * n);
  return trace_tower(ops, r, merge_levels(ops, r, std::move(items), n, count, 0, k, mode), count,
                     k + 1);
}

// The merges gamma .. to of `count` groups of `items` block ciphertexts ([count][items][N], 1 <=
// gamma < a), scaled in place by T^-1 (T = t^(a-gamma), the trace's factor): the whole packing
// of TraceTrees::pack_blocks with items = T and to = a - 1, or one part of it (pack_rows).
template <class Ops>
Batch<Ops> pack_blocks(Ops& ops, const ring::RingParams& r, Batch<Ops> blocks, u32 items,
                       std::size_t count, u32 gamma, u32 to, rlwe::TreeMode mode) {
  const std::size_t words = count * items * r.N();
  const u64 f_inv = core::inverse_mod_word<u64>(power(r.t(), r.a() - gamma));
  ops.scale_copy(blocks.a.data(), blocks.a.data(), f_inv, words);
  ops.scale_copy(blocks.b.data(), blocks.b.data(), f_inv, words);
  return merge_levels(ops, r, std::move(blocks), items, count, gamma, to, mode);
}

// Packing of `count` groups of t^(a-gamma) block ciphertexts the caller keeps (a and b
// [count][T][N]): outputs [count][N], as TraceTrees::pack_blocks.
template <class Ops>
Batch<Ops> pack_blocks(Ops& ops, const ring::RingParams& r, const u64* blocks_a,
                       const u64* blocks_b, std::size_t count, u32 gamma,
                       rlwe::TreeMode mode = rlwe::TreeMode::fast) {
  const u32 T = static_cast<u32>(power(r.t(), r.a() - gamma));
  return pack_blocks(ops, r, copy_of(ops, blocks_a, blocks_b, count * T * r.N()), T, count, gamma,
                     r.a() - 1, mode);
}

}  // namespace safhire::cuda::levels
