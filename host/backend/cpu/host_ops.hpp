// The Ops of the server's steps (cuda/portable/device_backend.hpp, tree_levels.hpp) for the CPU
// backend: the algorithms the CUDA backend runs, on host memory. Each batched primitive shares its
// work among the workers of a core::WorkerPool: rows one by one, blocks of clean samples, groups
// of a linear layer, key switches ciphertext by ciphertext with one rlwe::KeySwitcher per worker.
// A row is computed whole, by the host's vectorised form of the device's per-word body, with
// equal words:
// - sample extraction: elements::extract_mask (the runs of extracted_mask_word), row by row;
// - clean samples at gamma >= 1: rlwe::PartialExtraction::clean_samples, all lanes of a block at
//   once (clean_thread), 32-bit rows rounded as they are written (narrow_thread);
// - the linear layer: the prepared groups of prepared_layer.hpp (linear_thread);
// - monomial products: ring::add_monomial_product (the runs of elements::monomial_coefficient);
// - the LWE embedding: elements::embed_mask (the recurrence of embedded_mask_coefficient);
// - the lane sums at gamma >= 1: rlwe::PartialExtraction::embed_lane_sum (gather_blocks_words);
// - a merge's key switches, summed before one inverse transform
//   (rlwe::KeySwitcher::automorphism_sum).
// tests/rlwe/test_trees_emulation.cpp checks every level against rlwe::TraceTrees,
// tests/backend/test_pack_rows.cpp whole packings and tests/backend/test_steps.cpp extraction and
// linear layers against the device algorithm's replay.
//
// Scratch comes from a cuda::ScratchPool over host memory, used by the calling thread only (the
// workers write into blocks it took); the CPU backend empties it after each packing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "portable/backend_element.cuh"
#include "portable/tree_element.cuh"
#include "prepared_layer.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/cuda/scratch_pool.hpp"
#include "safhire/elements/embed_lwe.hpp"
#include "safhire/elements/sample_extract.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/simd.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::backend {

class HostOps {
 public:
  using u64 = std::uint64_t;
  using u32 = std::uint32_t;
  using Buffer = cuda::ScratchPool::Block;
  // A round's "uploads" are read where they are: the algorithms keep the host memory until they
  // synchronize. So are a layer's taps, starts and biases (Resident: a view of the LayerWeights,
  // which cuda::ResidentWeights keeps no longer than they live).
  template <class T>
  struct Array {
    const T* words = nullptr;
    const T* data() const { return words; }
  };
  template <class T>
  using Resident = Array<T>;
  // Extraction writes 32-bit rows itself, each made in a worker's 64-bit row and rounded there
  // (cuda::Extraction).
  static constexpr bool kNarrowsAsItWrites = true;
  // A layer's groups, prepared for the CPU's kernels (prepared_layer.hpp).
  using LayerForm = PreparedLayer;

  // On `workers` (which must outlive the ops, and run nothing else meanwhile). `partial`: gamma
  // >= 1's extraction (its lane sums gather the blocks), or null at gamma = 0. `keys` and
  // `partial` must outlive the ops.
  HostOps(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
          const rlwe::GaloisKeys& keys, core::WorkerPool& workers,
          const rlwe::PartialExtraction* partial)
      : ring_(params.ring), keys_(&keys), partial_(partial), workers_(&workers) {
    for (unsigned w = 0; w < workers_->threads(); ++w)
      scratch_.push_back(std::make_unique<Scratch>(params, gadget));
  }
  // On `threads` workers of its own.
  HostOps(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
          const rlwe::GaloisKeys& keys, unsigned threads, const rlwe::PartialExtraction* partial)
      : HostOps(params, gadget, keys, std::make_unique<core::WorkerPool>(threads), partial) {}

  Buffer alloc(std::size_t words) { return pool_->take(words); }
  template <class T>
  Array<T> upload(std::span<const T> host) {
    return {host.data()};
  }
  void synchronize() {}
  template <class T>
  Resident<T> upload_resident(std::span<const T> host) {
    return {host.data()};
  }
  PreparedLayer prepare_layer(const LayerWeights& weights, std::span<const std::size_t> rows_read) {
    return backend::prepare_layer(weights, rows_read, *workers_);
  }

  // The linear layer (block::linear_thread's words) group by group in its prepared forms.
  void run_linear(const cuda::block::LinearArgs& g, const PreparedLayer& form, std::size_t) {
    if (g.out32 != nullptr) {
      run_prepared<u32>(form, g, *workers_, simd_);
    } else {
      run_prepared<u64>(form, g, *workers_, simd_);
    }
  }
  // Idle scratch given back down to `keep` words.
  void trim(std::size_t keep) { pool_->trim(keep); }
  const cuda::ScratchPool::Stats& scratch() const { return pool_->stats(); }

  std::uint64_t key_switches() const {
    std::uint64_t total = 0;
    for (const auto& w : scratch_)
      total += w->switcher.key_switches();
    return total;
  }

  void copy(u64* dst, const u64* src, std::size_t words) {
    ranges(words, [&](std::size_t from, std::size_t to) {
      std::memcpy(dst + from, src + from, (to - from) * sizeof(u64));
    });
  }
  void copy_rows(u64* dst, std::size_t dst_stride, const u64* src, std::size_t src_stride,
                 std::size_t count, std::size_t words) {
    rows(count, [&](std::size_t r, unsigned) {
      std::memcpy(dst + r * dst_stride, src + r * src_stride, words * sizeof(u64));
    });
  }
  void scale_copy(u64* dst, const u64* src, u64 factor, std::size_t words) {
    ranges(words, [&](std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i)
        dst[i] = src[i] * factor;
    });
  }
  void add(u64* dst, const u64* src, std::size_t words) {
    ranges(words, [&](std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i)
        dst[i] += src[i];
    });
  }

  // Split level (block::split_thread, row by row): child s u of node u of input c is
  // sum_j X^(-s delta - s j m) d_j.
  void run_split(const cuda::block::SplitArgs& g, std::size_t threads) {
    const std::size_t fan = std::size_t{g.step} * g.t;
    rows(threads / g.N, [&](std::size_t x, unsigned) {
      const std::size_t c = x / fan, rest = x % fan;
      const auto s = static_cast<std::int64_t>(rest / g.step);
      const std::size_t node = (c * g.step + rest % g.step) * g.N;
      zero_row(g.out_a, g.out_b, x);
      for (u32 j = 0; j < g.t; ++j) {
        const std::int64_t e = -s * g.delta - s * j * std::int64_t{g.m};
        add_monomial(g.a + node + j * g.plane, g.b + node + j * g.plane, e, g.out_a, g.out_b, x);
      }
    });
  }

  // Bottom level (block::bottom_thread): output u + v m of input c is
  // sum_(k=1..t-1) (X^(-v k m) - X^(k m)) d_k, d_k in plane k - 1.
  void run_bottom(const cuda::block::SplitArgs& g, std::size_t threads) {
    rows(threads / g.N, [&](std::size_t x, unsigned) {
      const std::size_t c = x / g.N, rest = x % g.N;
      const std::size_t u = rest % g.m;
      const auto v = static_cast<std::int64_t>(rest / g.m);
      const std::size_t node = (c * g.m + u) * g.N;
      zero_row(g.out_a, g.out_b, x);
      for (u32 k = 1; k < g.t; ++k) {
        const std::int64_t km = std::int64_t{k} * g.m;
        const u64* a = g.a + node + (k - 1) * g.plane;
        const u64* b = g.b + node + (k - 1) * g.plane;
        add_monomial(a, b, -v * km, g.out_a, g.out_b, x);
        add_monomial(a, b, km, g.out_a, g.out_b, x, true);
      }
    });
  }

  // Merge level, one representative (block::merge_thread): w_rho of a node is
  // sum_s X^(e s rho^-1) c_s.
  void run_merge(const cuda::block::MergeArgs& g, std::size_t threads) {
    rows(threads / g.N, [&](std::size_t x, unsigned) {
      const std::size_t p = x / g.nodes, sigma = x % g.nodes;
      const std::size_t first = (p * g.prev + sigma) * g.N, stride = std::size_t{g.stride} * g.N;
      zero_row(g.out_a, g.out_b, x);
      for (u32 s = 0; s < g.items; ++s) {
        const u64 e = u64{g.e} * s % g.M * g.rho_inv % g.M;
        add_monomial(g.prev_a + first + s * stride, g.prev_b + first + s * stride,
                     static_cast<std::int64_t>(e), g.out_a, g.out_b, x);
      }
    });
  }

  // out = X^e in, or out += X^e in (block::monomial_thread).
  void run_monomial(const cuda::block::MonomialArgs& g, std::size_t threads) {
    rows(threads / g.N, [&](std::size_t x, unsigned) {
      const std::span<u64> out(g.out + x * g.N, g.N);
      if (!g.accumulate) std::fill(out.begin(), out.end(), u64{0});
      ring::add_monomial_product(ring_, {g.in + x * g.N, g.N}, g.e, out, false);
    });
  }

  // The packing items of LWE samples: each mask embedded (block::embed_thread) ...
  void run_embed(const u64* masks, u64* embedded, u32 N, u32 m, std::size_t threads) {
    rows(threads / N, [&](std::size_t i, unsigned) {
      elements::embed_mask(masks + i * N, embedded + i * N, N, m);
    });
  }
  // ... then times (1 - X^m) and M^-1 (block::prepare_item_thread), block of m by block.
  void run_prepare(const u64* embedded, const u64* bodies, u64* out_a, u64* out_b, u64 m_inv, u32 N,
                   u32 m, std::size_t threads) {
    rows(threads / N, [&](std::size_t i, unsigned) {
      const u64* e = embedded + i * N;
      u64* a = out_a + i * N;
      for (u32 k = 0; k * m < N; ++k)
        for (u32 r = 0; r < m; ++r)
          a[k * m + r] = m_inv * elements::unit_minus_zeta_coefficient(e, k, r, N, m);
      u64* b = out_b + i * N;
      std::fill(b, b + N, u64{0});
      b[0] = m_inv * bodies[i];
      if (m < N) b[m] = u64{0} - m_inv * bodies[i];
    });
  }

  // A part of each pack's LWE samples (block::gather_lwe_thread): row p N + first + j stride's
  // mask and body, zeros past `values`.
  void run_gather_lwe(const cuda::block::GatherLweArgs& g, std::size_t threads) {
    rows(threads / (std::size_t{g.N} + 1), [&](std::size_t sample, unsigned) {
      const std::size_t row = cuda::block::part_row(sample, g.items, g.first, g.stride, g.N);
      u64* mask = g.masks + sample * g.N;
      if (row >= g.values) {
        std::fill(mask, mask + g.N, u64{0});
        g.bodies[sample] = 0;
      } else if (g.rows32 != nullptr) {
        const u32* from = g.rows32 + row * g.W;
        for (u32 i = 0; i < g.N; ++i)
          mask[i] = widen_word(from[i]);
        g.bodies[sample] = widen_word(from[g.N]);
      } else {
        std::memcpy(mask, g.rows + row * g.W, g.N * sizeof(u64));
        g.bodies[sample] = g.rows[row * g.W + g.N];
      }
    });
  }

  // A part of each pack's blocks at gamma >= 1 (block::gather_blocks_thread): block beta = first
  // + i stride of pack p embeds the lane sum of rows p N + beta + T z.
  void run_gather_blocks(const cuda::block::GatherBlocksArgs& g, std::size_t threads) {
    require(partial_ != nullptr, ErrorCode::invalid_argument,
            "HostOps: blocks gathered without a partial extraction (gamma = 0)");
    rows(threads / g.N, [&](std::size_t block, unsigned w) {
      const std::size_t pack = block / g.items;
      const std::size_t beta = g.first + std::size_t{g.stride} * (block % g.items);
      Scratch& worker = *scratch_[w];
      worker.wide.assign(g.L, nullptr);
      worker.narrow.assign(g.L, nullptr);
      for (u32 z = 0; z < g.L; ++z) {
        const std::size_t s = pack * g.N + beta + std::size_t{g.T} * z;
        if (s >= g.values) continue;
        if (g.rows32 != nullptr) {
          worker.narrow[z] = g.rows32 + s * g.W;
        } else {
          worker.wide[z] = g.rows + s * g.W;
        }
      }
      const std::span<u64> a(g.out_a + block * g.N, g.N), b(g.out_b + block * g.N, g.N);
      if (g.rows32 != nullptr) {
        partial_->embed_lane_sum(worker.narrow, a, b);
      } else {
        partial_->embed_lane_sum(worker.wide, a, b);
      }
    });
  }

  // Sample extraction (block::extract_thread), a row per value: the words of
  // elements::extracted_mask_word in runs (elements::extract_mask), as rlwe::sample_extract_into.
  void run_extract(const cuda::block::ExtractArgs& g, std::size_t threads) {
    const std::size_t period = error_period(g.W - g.N);
    rows(threads / g.W, [&](std::size_t v, unsigned w) {
      u64* row = row_for(g.out, g.dest[v], g.W, w, 0);
      elements::extract_mask(g.a + v / g.N * g.N, static_cast<u32>(v % g.N), row, g.N, g.M, g.m);
      row[g.N] = g.b[v];
      if (g.out.rows32 != nullptr) narrow_row(g.out, row, g.dest[v], g.N, g.W, period, w);
    });
  }

  // Powers cut into blocks (block::blocks_thread's words), a power per row: lane j of block u is
  // coefficient u + T j.
  void run_blocks(const cuda::block::BlocksArgs& g, std::size_t threads) {
    rows(threads / g.N, [&](std::size_t power, unsigned) {
      const std::size_t kk = power % g.K, c = power / g.K;
      const std::size_t from = (g.element_major ? kk * g.chunks + c : power) * g.N;
      const u64* a = g.a + from;
      const u64* b = g.b + from;
      u64* to_a = g.blocks_a + power * g.N;
      u64* to_b = g.blocks_b + power * g.N;
      for (u32 u = 0; u < g.T; ++u, to_a += g.L, to_b += g.L)
        for (u32 j = 0; j < g.L; ++j) {
          to_a[j] = a[u + std::size_t{g.T} * j];
          to_b[j] = b[u + std::size_t{g.T} * j];
        }
    });
  }

  // The clean samples (block::clean_thread) block by block, all lanes of a block at once through
  // rlwe::PartialExtraction::clean_samples, which shares the block's conjugates between its lanes.
  // Its map and elements are the partial extraction's own, those of g.map and g.elements.
  void run_clean(const cuda::block::CleanArgs& g, std::size_t threads) {
    require(partial_ != nullptr, ErrorCode::invalid_argument,
            "HostOps: clean samples without a partial extraction (gamma = 0)");
    const std::size_t values = threads / g.W, N = g.N, chunks = (values + N - 1) / N;
    const std::size_t words = chunks * g.K * N, period = error_period(g.W - g.N);
    Buffer za = alloc(words);
    rows(chunks * g.K, [&](std::size_t power, unsigned) {
      partial_->times_z(g.blocks_a + power * N, za.data() + power * N, g.T);
    });
    rows(chunks * g.T, [&](std::size_t x, unsigned w) {
      const std::size_t c = x / g.T;
      const auto i = static_cast<u32>(x % g.T);
      Scratch& worker = *scratch_[w];
      worker.lanes.assign(g.L, nullptr);
      for (u32 j = 0; j < g.L; ++j) {
        const std::size_t v = c * N + i + std::size_t{g.T} * j;
        if (v < values) worker.lanes[j] = row_for(g.out, g.dest[v], g.W, w, j);
      }
      const std::size_t at = c * g.K * N;
      partial_->clean_samples({g.blocks_a + at, za.data() + at, g.blocks_b + at}, i, worker.lanes,
                              worker.clean);
      if (g.out.rows32 == nullptr) return;
      for (u32 j = 0; j < g.L; ++j)
        if (worker.lanes[j] != nullptr)
          narrow_row(g.out, worker.lanes[j], g.dest[c * N + i + std::size_t{g.T} * j], g.N, g.W,
                     period, w);
    });
  }

  // sigma_k with a key switch of `count` ciphertexts (out may alias in).
  void automorphism(u64 k, const u64* in_a, const u64* in_b, u64* out_a, u64* out_b,
                    std::size_t count) {
    automorphisms({&k, 1}, in_a, in_b, out_a, out_b, count);
  }
  // The same for each element ks[i], into plane i of out (count N words apart), every
  // (element, ciphertext) pair shared by the workers (out may alias in only with one element).
  void automorphisms(std::span<const u64> ks, const u64* in_a, const u64* in_b, u64* out_a,
                     u64* out_b, std::size_t count) {
    const std::size_t N = ring_.N();
    workers_->run(ks.size() * count, [&](std::size_t x, unsigned w) {
      Scratch& worker = *scratch_[w];
      const rlwe::KeySwitchKey* key = &keys_->at(ks[x / count]);
      const std::size_t c = x % count, to = x * N;  // plane x / count, ciphertext c
      const u64* a = in_a + c * N;
      const u64* b = in_b + c * N;
      if (a == out_a + to || b == out_b + to) {  // switch a copy
        worker.copy.resize(2 * N);
        std::memcpy(worker.copy.data(), a, N * sizeof(u64));
        std::memcpy(worker.copy.data() + N, b, N * sizeof(u64));
        a = worker.copy.data();
        b = worker.copy.data() + N;
      }
      std::fill(out_a + to, out_a + to + N, u64{0});
      std::fill(out_b + to, out_b + to + N, u64{0});
      worker.switcher.automorphism_sum({&key, 1}, {&a, 1}, {&b, 1}, {out_a + to, N},
                                       {out_b + to, N});
    });
  }

  // out += sum_i sigma_(ks[i]) of input i (at + i plane), each switched back, summed before one
  // inverse transform.
  void automorphism_sum(std::span<const u64> ks, const u64* in_a, const u64* in_b,
                        std::size_t plane, u64* out_a, u64* out_b, std::size_t count) {
    std::vector<const rlwe::KeySwitchKey*> keys;
    for (const u64 k : ks)
      keys.push_back(&keys_->at(k));
    const std::size_t N = ring_.N();
    workers_->run(count, [&](std::size_t c, unsigned w) {
      Scratch& worker = *scratch_[w];
      worker.in_a.resize(ks.size());
      worker.in_b.resize(ks.size());
      for (std::size_t i = 0; i < ks.size(); ++i) {
        worker.in_a[i] = in_a + i * plane + c * N;
        worker.in_b[i] = in_b + i * plane + c * N;
      }
      worker.switcher.automorphism_sum(keys, worker.in_a, worker.in_b, {out_a + c * N, N},
                                       {out_b + c * N, N});
    });
  }

 private:
  HostOps(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
          const rlwe::GaloisKeys& keys, std::unique_ptr<core::WorkerPool> own,
          const rlwe::PartialExtraction* partial)
      : HostOps(params, gadget, keys, *own, partial) {
    own_workers_ = std::move(own);
  }

  // A worker's own: its key switcher and small scratch.
  struct Scratch {
    Scratch(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget)
        : switcher(params, gadget) {}
    rlwe::KeySwitcher switcher;
    std::vector<const u64*> in_a, in_b, wide;
    std::vector<const u32*> narrow;
    std::vector<u64> copy;
    // Extraction: clean_samples' scratch and lane rows; 64-bit rows for 32-bit ones; a 32-bit
    // row's mask rounding errors by position mod error_period(lanes), then by lane.
    std::vector<u64> clean;
    std::vector<u64*> lanes;
    std::vector<u64> wide_rows;
    std::vector<u64> period_errors;
    std::vector<std::int64_t> lane_errors;
  };

  // Where worker w makes row r (lane j of its block): in place for 64-bit rows, else in its own
  // 64-bit row j.
  u64* row_for(const cuda::block::RowsOut& out, std::size_t r, std::size_t W, unsigned w,
               std::size_t j) {
    if (out.rows32 == nullptr) return out.rows + r * out.stride;
    std::vector<u64>& wide = scratch_[w]->wide_rows;
    const std::size_t count = partial_ != nullptr ? partial_->lanes() : 1;
    if (wide.size() < count * W) wide.resize(count * W);
    return wide.data() + j * W;
  }

  // lcm(lanes, 8) where that is at most 1024 words, else lanes: the period by which a 32-bit
  // row's mask errors are summed before they are folded into lanes.
  static std::size_t error_period(std::size_t lanes) {
    const std::size_t l = std::lcm(lanes, std::size_t{8});
    return l <= 1024 ? l : lanes;
  }

  // The 64-bit row `from` (W = N + L words) rounded into 32-bit row r of `out` (block::
  // narrow_thread's words): the mask by ring::narrow_words, which also sums its rounding errors
  // by word position mod `period` (error_period(L): a multiple of L, and of 8 to run whole
  // registers), folded into lanes for the bodies' backend::narrow_body; the padding zeroed.
  void narrow_row(const cuda::block::RowsOut& out, const u64* from, std::size_t r, u32 N, u32 W,
                  std::size_t period, unsigned w) {
    Scratch& worker = *scratch_[w];
    const u32 L = W - N;
    u32* row = out.rows32 + r * out.stride;
    worker.period_errors.assign(period, 0);
    worker.lane_errors.resize(L);
    ring::narrow_words({from, N}, {row, N}, worker.period_errors, simd_);
    for (u32 l = 0; l < L; ++l) {
      worker.lane_errors[l] = 0;
      for (std::size_t j = l; j < worker.period_errors.size(); j += L)
        worker.lane_errors[l] += static_cast<std::int64_t>(worker.period_errors[j]);
    }
    for (u32 k = 0; k < L; ++k)
      row[N + k] = backend::narrow_body(from[N + k],
                                        out.key_mean == nullptr ? nullptr : out.key_mean + k * L, L,
                                        [&](u32 l) { return worker.lane_errors[l]; });
    std::fill(row + W, row + out.stride, u32{0});
  }

  // body(x, worker) for each row x < count, shared by the workers.
  template <class Body>
  void rows(std::size_t count, Body body) {
    workers_->run(count, body);
  }
  // body(from, to) over [0, words) in one range per worker.
  template <class Body>
  void ranges(std::size_t words, Body body) {
    const std::size_t parts = words < kMinRange ? 1 : workers_->threads();
    workers_->run(
        parts, [&](std::size_t i, unsigned) { body(words * i / parts, words * (i + 1) / parts); });
  }
  static constexpr std::size_t kMinRange = std::size_t{1} << 16;

  void zero_row(u64* a, u64* b, std::size_t x) const {
    std::fill(a + x * ring_.N(), a + (x + 1) * ring_.N(), u64{0});
    std::fill(b + x * ring_.N(), b + (x + 1) * ring_.N(), u64{0});
  }
  // Row x of out (a and b) +=, or -=, X^e times (a, b).
  void add_monomial(const u64* a, const u64* b, std::int64_t e, u64* out_a, u64* out_b,
                    std::size_t x, bool subtract = false) const {
    const std::size_t N = ring_.N();
    ring::add_monomial_product(ring_, {a, N}, e, {out_a + x * N, N}, subtract);
    ring::add_monomial_product(ring_, {b, N}, e, {out_b + x * N, N}, subtract);
  }

  ring::RingParams ring_;
  ring::SimdIsa simd_ = ring::default_simd();
  const rlwe::GaloisKeys* keys_;
  const rlwe::PartialExtraction* partial_;
  core::WorkerPool* workers_;
  std::unique_ptr<core::WorkerPool> own_workers_;  // when it has its own
  std::vector<std::unique_ptr<Scratch>> scratch_;  // one per worker
  std::unique_ptr<cuda::HostWords> words_ = std::make_unique<cuda::HostWords>();
  std::unique_ptr<cuda::ScratchPool> pool_ = std::make_unique<cuda::ScratchPool>(*words_);
};

}  // namespace safhire::backend
