// The server's steps, written once over an `Ops` type as cuda/tree_levels.hpp is, and run by
// both backends: Extraction, linear_rows and pack_rows, and DeviceBackend, the CUDA backend
// around them. cuda/backend.cu instantiates them with kernel launches on a stream (rows, weights
// and packing all on the device); the CPU backend (host/backend/cpu) with backend::HostOps, whose
// primitives run the host's vectorised forms of the same bodies on a worker pool;
// tests/hybrid/test_backend_emulation.cpp DeviceBackend with plain loops over the device bodies
// (tests/cpu_ops.hpp), where whole inferences through it must equal the CPU backend's downloads
// word for word.
//
// Ops provides, besides what tree_levels.hpp needs (Buffer, alloc, ...): Array<T> and
// upload<T>(span) -> Array<T> (a round's small uploads, in the scratch pool); Resident<T> and
// upload_resident<T>(span) -> Resident<T> (finished when it returns, and not tied to the backend:
// ResidentWeights keeps them for every session); download(device words, host span);
// synchronize(); scratch() (the pool's ScratchPool::Stats, where DeviceBackend::scratch is
// called); run_extract(ExtractArgs, threads), run_blocks(BlocksArgs, threads),
// run_clean(CleanArgs, threads), run_narrow(NarrowArgs, threads) (unless kNarrowsAsItWrites),
// run_linear(LinearArgs, [LayerForm,] threads), run_gather_lwe(GatherLweArgs, threads),
// run_gather_blocks(GatherBlocksArgs, threads); key_switches(). Optionally kNarrowsAsItWrites
// (narrows_as_it_writes) and LayerForm with prepare_layer(LayerWeights, rows_read)
// (layer_form_of).
//
// Device residency: rows stay on the device from extraction to packing; a served model's layer
// weights (taps, their starts, biases) go up once, on a session's first use of them, and stay for
// every later session of the same ResidentWeights; scratch comes from the pool behind Ops (the
// CUDA backend lends each session a stream with its pool, kept between sessions), so once a
// model's shapes have been seen a session's rounds allocate nothing. What crosses to the device
// per round is the upload's ciphertexts (expanded from their seeds on the host), the un-shuffling
// destinations, and the round's output slots and source addresses; what comes back is the packed
// ciphertexts. Powers the server derives are made on the device from the first. The powers'
// Galois elements and the clean-sample map go up once per backend.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend_element.cuh"
#include "safhire/backend/backend.hpp"
#include "safhire/core/error.hpp"
#include "safhire/cuda/scratch_pool.hpp"
#include "safhire/rlwe/partial.hpp"
#include "tree_levels.hpp"

namespace safhire::cuda {

// What an Ops keeps of a layer besides its taps, starts and biases: Ops::LayerForm, made by
// ops.prepare_layer(weights, rows_read) when the layer goes up and handed to its run_linear (the
// CPU's prepared groups), or nothing.
struct NoLayerForm {};
template <class Ops>
auto layer_form_of() {
  if constexpr (requires { typename Ops::LayerForm; }) {
    return std::type_identity<typename Ops::LayerForm>{};
  } else {
    return std::type_identity<NoLayerForm>{};
  }
}
template <class Ops>
using LayerForm = typename decltype(layer_form_of<Ops>())::type;

// A served model's linear layers where the backend computes (on the device: uploaded), shared by
// the backends of all its sessions: made on first use (validated once) and kept while their
// backend::LayerWeights live (backend::PerLayerCache). Thread-safe.
template <class Ops>
class ResidentWeights {
 public:
  struct Layer {
    typename Ops::template Resident<std::uint32_t> tap_start;
    typename Ops::template Resident<backend::Tap> taps;
    typename Ops::template Resident<std::uint64_t> bias;
    std::vector<std::size_t> rows_read;  // LayerWeights::rows_read
    LayerForm<Ops> form;
  };

  // The layer of `weights`, uploaded through `ops` if it is not resident yet.
  std::shared_ptr<const Layer> get(const std::shared_ptr<const backend::LayerWeights>& weights,
                                   Ops& ops) {
    return layers_.get(weights, [&] {
      weights->validate();
      Layer layer;
      layer.tap_start = ops.template upload_resident<std::uint32_t>(weights->tap_start);
      layer.taps = ops.template upload_resident<backend::Tap>(weights->taps);
      layer.bias = ops.template upload_resident<std::uint64_t>(weights->bias);
      layer.rows_read = weights->rows_read();
      if constexpr (!std::is_same_v<LayerForm<Ops>, NoLayerForm>)
        layer.form = ops.prepare_layer(*weights, layer.rows_read);
      return layer;
    });
  }

  // Layers uploaded so far, and resident now.
  std::uint64_t uploads() const { return layers_.made(); }
  std::size_t resident() const { return layers_.size(); }

 private:
  backend::PerLayerCache<Layer> layers_;
};

// The linear step of both backends (backend::Backend::linear): output o of `layer` to row
// layer.slot[o] of out (64-bit words) or out32 (32-bit ones, the other null), rows W words apart,
// all W words computed: the sum over its taps of weight times the row read, plus its bias at word
// N. sources[s]: where the rows of source s are (null where no tap reads it), counts[s] of them.
// The weights are validated once, when they go up; a call checks only its slots and the rows its
// sources hold, in O(outputs).
template <class Ops>
void linear_rows(Ops& ops, ResidentWeights<Ops>& resident, const backend::LinearLayer& layer,
                 std::span<const void* const> sources, std::span<const std::size_t> counts,
                 std::uint64_t* out, std::uint32_t* out32, std::uint32_t N, std::size_t W) {
  const auto weights = resident.get(layer.weights, ops);
  layer.validate(counts, weights->rows_read);
  std::vector<std::uint64_t> addresses(sources.size());
  for (std::size_t s = 0; s < sources.size(); ++s)
    addresses[s] = reinterpret_cast<std::uintptr_t>(sources[s]);
  const auto d_sources = ops.template upload<std::uint64_t>(addresses);
  const auto d_slot = ops.template upload<std::uint32_t>(layer.slot);
  block::LinearArgs args{};
  args.sources = reinterpret_cast<const void* const*>(d_sources.data());
  args.tap_start = weights->tap_start.data();
  args.taps = weights->taps.data();
  args.slot = d_slot.data();
  args.bias = weights->bias.data();
  args.out = out;
  args.out32 = out32;
  args.N = N;
  args.W = static_cast<std::uint32_t>(W);
  if constexpr (std::is_same_v<LayerForm<Ops>, NoLayerForm>) {
    ops.run_linear(args, layer.outputs() * W);
  } else {
    ops.run_linear(args, weights->form, layer.outputs() * W);
  }
  ops.synchronize();  // the host vectors above die here
}

// Packing of `values` rows into RLWE ciphertexts, [packs][N] words of a and of b (pack p: rows
// p N .. p N + N - 1, zeros past `values`), as backend::Backend::pack before its modulus switch:
// the gather of each pack's LWE samples (gamma = 0) or lane-sum blocks (gamma >= 1), then the
// merge levels of tree_levels.hpp in the configuration's mode. Rows of 64-bit words (rows) or of
// 32-bit ones (rows32, the other null), W words apart.
//
// `depth` cuts each pack's merge tree into P = t^depth parts, as a CPU wants (a part's levels
// stay in its cache): part q holds the items q, q + P, ... of every pack, gathered and merged up
// to level top - depth one part after the other, and the levels above merge the P parts of each
// pack. The words are those of the whole tree (depth 0: all at once, as on the device), since
// node q of a level merges the items q mod (its level's node count).
template <class Ops>
levels::Batch<Ops> pack_rows(Ops& ops, const ring::RingParams& r, const backend::Config& config,
                             const std::uint64_t* rows, const std::uint32_t* rows32,
                             std::size_t values, std::size_t W, std::uint32_t depth = 0) {
  using u32 = std::uint32_t;
  const u32 N = r.N(), gamma = config.gamma, top = r.a() - 1;
  const u32 per_pack = gamma == 0 ? N : static_cast<u32>(levels::power(r.t(), r.a() - gamma));
  require(depth <= top - gamma, ErrorCode::invalid_argument,
          "pack_rows: depth " + std::to_string(depth) + " beyond the tree's " +
              std::to_string(top - gamma) + " levels");
  const std::size_t packs = (values + N - 1) / N;
  const u32 parts = static_cast<u32>(levels::power(r.t(), depth)), items = per_pack / parts;
  // Part q of every pack, merged to level top - depth: [packs][N].
  const auto part = [&](u32 q) {
    if (gamma == 0) {
      auto masks = ops.alloc(packs * items * N);
      auto bodies = ops.alloc(packs * items);
      block::GatherLweArgs args{};
      args.rows = rows;
      args.rows32 = rows32;
      args.masks = masks.data();
      args.bodies = bodies.data();
      args.values = values;
      args.N = N;
      args.W = static_cast<u32>(W);
      args.items = items;
      args.first = q;
      args.stride = parts;
      ops.run_gather_lwe(args, packs * items * (std::size_t{N} + 1));
      return levels::merge_levels(
          ops, r, levels::lwe_items(ops, r, masks.data(), bodies.data(), packs * items), items,
          packs, 0, top - depth, config.mode);
    }
    levels::Batch<Ops> blocks{ops.alloc(packs * items * N), ops.alloc(packs * items * N)};
    block::GatherBlocksArgs args{};
    args.rows = rows;
    args.rows32 = rows32;
    args.out_a = blocks.a.data();
    args.out_b = blocks.b.data();
    args.values = values;
    args.N = N;
    args.T = per_pack;
    args.Mg = static_cast<u32>(levels::power(r.t(), gamma));
    args.mg = static_cast<u32>(levels::power(r.t(), gamma - 1));
    args.L = args.Mg - args.mg;
    args.W = static_cast<u32>(W);
    args.items = items;
    args.first = q;
    args.stride = parts;
    ops.run_gather_blocks(args, packs * items * std::size_t{N});
    return levels::pack_blocks(ops, r, std::move(blocks), items, packs, gamma, top - depth,
                               config.mode);
  };
  levels::Batch<Ops> merged;
  if (parts == 1) {
    merged = part(0);
  } else {
    levels::Batch<Ops> all{ops.alloc(packs * parts * N), ops.alloc(packs * parts * N)};
    for (u32 q = 0; q < parts; ++q) {
      const levels::Batch<Ops> done = part(q);
      ops.copy_rows(all.a.data() + std::size_t{q} * N, std::size_t{parts} * N, done.a.data(), N,
                    packs, N);
      ops.copy_rows(all.b.data() + std::size_t{q} * N, std::size_t{parts} * N, done.b.data(), N,
                    packs, N);
    }
    merged = levels::merge_levels(ops, r, std::move(all), parts, packs, top - depth + 1, top,
                                  config.mode);
  }
  // At gamma = 0 the LWE tree spans every level: Tr_(K_a/K_a) is the identity.
  return merged;
}

// Whether Ops writes 32-bit rows itself (Ops::kNarrowsAsItWrites, block::RowsOut), or takes
// 64-bit rows that run_narrow then rounds.
template <class Ops>
constexpr bool narrows_as_it_writes() {
  if constexpr (requires { Ops::kNarrowsAsItWrites; }) {
    return Ops::kNarrowsAsItWrites;
  } else {
    return false;
  }
}

// sigma_(ks[i]) with a key switch of `count` ciphertexts (a, b: [count][N]) for each i, into plane
// i of out (count N words apart): all at once where Ops has automorphisms(ks, ...) (the CPU's
// workers share the element-ciphertext pairs), else an element at a time.
template <class Ops>
void automorphisms(Ops& ops, std::span<const std::uint64_t> ks, const std::uint64_t* in_a,
                   const std::uint64_t* in_b, std::uint64_t* out_a, std::uint64_t* out_b,
                   std::size_t count, std::size_t N) {
  if constexpr (requires { ops.automorphisms(ks, in_a, in_b, out_a, out_b, count); }) {
    ops.automorphisms(ks, in_a, in_b, out_a, out_b, count);
  } else {
    for (std::size_t i = 0; i < ks.size(); ++i)
      ops.automorphism(ks[i], in_a, in_b, out_a + i * count * N, out_b + i * count * N, count);
  }
}

// The extraction step of both backends (backend::Backend::extract): an upload's ciphertexts to
// one row per value, at row destination[v] of `out`. At gamma = 0 the sample extraction of each
// coefficient (run_extract); at gamma >= 1 the clean module-LWE samples of each block (run_blocks
// cuts the powers into blocks, run_clean makes the samples), from every power of each chunk as
// uploaded or from its first, the others derived with a key switch each (when the keys hold
// every power element). 32-bit rows are made as 64-bit ones and rounded (run_narrow), unless the
// Ops rounds as it writes.
//
// `batch` chunks at a time (0: all): a batch's ciphertexts go up, its powers are derived and
// its samples made before the next batch's, so a CPU keeps a batch's powers in its caches.
template <class Ops>
class Extraction {
 public:
  using u64 = std::uint64_t;
  using u32 = std::uint32_t;

  // `derives`: whether the keys behind `ops` cover every power element (backend::has_power_keys).
  Extraction(Ops& ops, const rlwe::ParameterSet& params, const backend::Config& config,
             bool derives)
      : ring_(params.ring),
        gamma_(config.gamma),
        width_(backend::row_words(params, config.gamma)),
        derives_(derives && config.gamma >= 1),
        elements_(rlwe::power_elements(params.ring, config.gamma)),
        key_mean_words_(backend::key_mean_map(params, config.gamma)) {
    device_elements_ = ops.template upload<u64>(elements_);
    if (gamma_ >= 1) {
      map_words_ = rlwe::PartialExtraction(ring_, gamma_).clean_sample_map();
      map_ = ops.template upload<u64>(map_words_);
    }
    has_key_mean_ = config.row_bits == 32 && !key_mean_words_.empty();
    if (has_key_mean_) key_mean_ = ops.template upload<std::int64_t>(key_mean_words_);
    ops.synchronize();
  }

  bool derives_powers() const { return derives_; }

  // The rows of destination.size() values into `out` (rows or rows32 set, `stride` >= W words
  // apart; its key_mean is set here).
  void run(Ops& ops, std::span<const rlwe::SeededCiphertext> cts, std::span<const u32> destination,
           block::RowsOut out, std::size_t batch) {
    const std::size_t n = destination.size(), N = ring_.N(), W = width_;
    const std::size_t chunks = (n + N - 1) / N, K = elements_.size();
    // At gamma >= 1 either every power of each chunk, or the first only (the others derived).
    const bool derive = K > 1 && derives_ && cts.size() == chunks;
    const std::size_t per_chunk = derive ? 1 : K;
    require(cts.size() == chunks * per_chunk, ErrorCode::invalid_argument,
            "extract: " + std::to_string(chunks * K) + " ciphertexts expected for " +
                std::to_string(n) + " values" +
                (derives_ ? " (or " + std::to_string(chunks) + ", the first powers)" : ""));
    backend::require_permutation(destination, "extract: destinations");
    for (const rlwe::SeededCiphertext& ct : cts)
      require(ct.b.ring() == ring_, ErrorCode::size_mismatch, "extract: wrong ring");
    const auto dest = ops.template upload<u32>(destination);
    // 32-bit rows through 64-bit ones, unless the Ops rounds as it writes.
    typename Ops::Buffer wide;
    block::RowsOut rows = out;
    rows.key_mean = has_key_mean_ && out.rows32 != nullptr ? key_mean_.data() : nullptr;
    if (out.rows32 != nullptr && !narrows_as_it_writes<Ops>()) {
      require(out.stride == W, ErrorCode::invalid_argument, "extract: 32-bit rows W words apart");
      wide = ops.alloc(n * W);
      rows = {wide.data(), nullptr, nullptr, W};
    }
    const std::size_t step = batch == 0 ? std::max<std::size_t>(chunks, 1) : batch;
    for (std::size_t first = 0; first < chunks; first += step) {
      const std::size_t count = std::min(step, chunks - first);
      const std::size_t values = std::min(n, (first + count) * N) - first * N;
      // The batch's ciphertexts, expanded from their seeds on the host: [count][per_chunk][N]
      // (host_a_, host_b_: kept between batches and calls).
      const std::size_t words = count * per_chunk * N;
      if (host_a_.size() < words) {
        host_a_.resize(words);
        host_b_.resize(words);
      }
      for (std::size_t c = 0; c < count * per_chunk; ++c) {
        const rlwe::Ciphertext ct = cts[first * per_chunk + c].expand();
        std::copy(ct.a.coeffs().begin(), ct.a.coeffs().end(), host_a_.begin() + c * N);
        std::copy(ct.b.coeffs().begin(), ct.b.coeffs().end(), host_b_.begin() + c * N);
      }
      const auto da = ops.template upload<u64>({host_a_.data(), words});
      const auto db = ops.template upload<u64>({host_b_.data(), words});
      const u32* batch_dest = dest.data() + first * N;
      if (gamma_ == 0) {
        block::ExtractArgs args{};
        args.a = da.data();
        args.b = db.data();
        args.dest = batch_dest;
        args.out = rows;
        args.N = static_cast<u32>(N);
        args.M = ring_.M();
        args.m = ring_.m();
        args.W = static_cast<u32>(W);
        ops.run_extract(args, values * W);
      } else {
        clean(ops, da.data(), db.data(), count, derive, batch_dest, rows, values);
      }
      ops.synchronize();  // before the next batch overwrites host_a_ and host_b_
    }
    if constexpr (!narrows_as_it_writes<Ops>()) {
      if (wide.data() == nullptr) return;
      block::NarrowArgs args{};
      args.rows = wide.data();
      args.rows32 = out.rows32;
      args.N = static_cast<u32>(N);
      args.W = static_cast<u32>(W);
      args.L = args.W - args.N;
      args.map = has_key_mean_ ? key_mean_.data() : nullptr;
      ops.run_narrow(args, n * W);
      ops.synchronize();
    }
  }

 private:
  // The clean samples of `count` chunks, whose powers (or first powers, `derive`) are at a, b.
  void clean(Ops& ops, const u64* a, const u64* b, std::size_t count, bool derive, const u32* dest,
             block::RowsOut rows, std::size_t values) {
    const std::size_t N = ring_.N(), K = elements_.size(), words = count * K * N;
    // The powers: as uploaded, [count][K][N], or derived from the first of each chunk,
    // [K][count][N] (sigma_k with a key switch, a batch of chunks per element; the blocks
    // kernel reads either layout).
    typename Ops::Buffer all_a, all_b;
    if (derive) {
      all_a = ops.alloc(words);
      all_b = ops.alloc(words);
      ops.copy(all_a.data(), a, count * N);
      ops.copy(all_b.data(), b, count * N);
      automorphisms(ops, std::span<const u64>(elements_).subspan(1), a, b, all_a.data() + count * N,
                    all_b.data() + count * N, count, N);
    }
    block::BlocksArgs blocks{};
    auto blocks_a = ops.alloc(words), blocks_b = ops.alloc(words);
    blocks.a = derive ? all_a.data() : a;
    blocks.b = derive ? all_b.data() : b;
    blocks.blocks_a = blocks_a.data();
    blocks.blocks_b = blocks_b.data();
    blocks.N = static_cast<u32>(N);
    blocks.T = static_cast<u32>(levels::power(ring_.t(), ring_.a() - gamma_));
    blocks.L = static_cast<u32>(N / blocks.T);
    blocks.K = static_cast<u32>(K);
    blocks.chunks = static_cast<u32>(count);
    blocks.element_major = derive;
    ops.run_blocks(blocks, words);
    block::CleanArgs args{};
    args.blocks_a = blocks_a.data();
    args.blocks_b = blocks_b.data();
    args.map = map_.data();
    args.elements = device_elements_.data();
    args.dest = dest;
    args.out = rows;
    args.N = static_cast<u32>(N);
    args.T = blocks.T;
    args.L = blocks.L;
    args.K = static_cast<u32>(K);
    args.Mg = static_cast<u32>(levels::power(ring_.t(), gamma_));
    args.mg = static_cast<u32>(levels::power(ring_.t(), gamma_ - 1));
    args.W = static_cast<u32>(width_);
    ops.run_clean(args, values * width_);
  }

  ring::RingParams ring_;
  u32 gamma_;
  std::size_t width_;
  bool derives_;
  std::vector<u64> elements_;  // of the powers: {1} at gamma = 0
  // PartialExtraction::clean_sample_map, backend::key_mean_map: kept on the host too (an Ops may
  // read its uploads where they are).
  std::vector<u64> map_words_;
  std::vector<std::int64_t> key_mean_words_;
  std::vector<u64> host_a_, host_b_;  // a batch's expanded ciphertexts
  typename Ops::template Array<u64> device_elements_, map_;
  // key_mean_words_ for 32-bit rows (has_key_mean_: not for 64-bit ones or a key without a mean).
  typename Ops::template Array<std::int64_t> key_mean_;
  bool has_key_mean_ = false;
};

template <class Ops>
class DeviceBackend final : public backend::Backend {
 public:
  using u64 = std::uint64_t;
  using u32 = std::uint32_t;

  // `derives`: whether the keys behind `ops` cover every power element (backend::has_power_keys),
  // so that extract may take the first powers only. `weights`: where the layers are kept (shared
  // by the sessions of a served model; a backend of its own where null).
  DeviceBackend(const rlwe::ParameterSet& params, const backend::Config& config, Ops ops,
                std::string name, bool derives = false,
                std::shared_ptr<ResidentWeights<Ops>> weights = nullptr)
      : params_(params),
        config_(config),
        ops_(std::move(ops)),
        name_(std::move(name)),
        width_(backend::row_words(params, config.gamma)),
        weights_(weights != nullptr ? std::move(weights)
                                    : std::make_shared<ResidentWeights<Ops>>()),
        extraction_(ops_, params, config, derives) {
    require(config.row_bits == 32 || config.row_bits == 64, ErrorCode::invalid_argument,
            "row_bits must be 32 or 64, not " + std::to_string(config.row_bits));
  }

  std::string name() const override { return name_; }
  backend::Config config() const override { return config_; }
  void synchronize() override { ops_.synchronize(); }
  std::uint64_t key_switches() const override { return ops_.key_switches(); }

  // Where the layers are kept, and the scratch pool's counts (for tests and diagnostics).
  const ResidentWeights<Ops>& weights() const { return *weights_; }
  const ScratchPool::Stats& scratch() const { return ops_.scratch(); }

  bool derives_powers() const override { return extraction_.derives_powers(); }

  std::unique_ptr<backend::Rows> extract(std::span<const rlwe::SeededCiphertext> cts,
                                         std::span<const u32> destination) override {
    auto out = make_rows(destination.size());
    extraction_.run(ops_, cts, destination, {out->wide(), out->narrow(), nullptr, width_}, 0);
    return out;
  }

  std::unique_ptr<backend::Rows> linear(const backend::LinearLayer& layer,
                                        std::span<const backend::Rows* const> sources) override {
    std::vector<std::size_t> counts(sources.size(), 0);
    std::vector<const void*> addresses(sources.size(), nullptr);
    for (std::size_t s = 0; s < sources.size(); ++s) {
      if (!sources[s]) continue;
      const Rows& r = rows_of(*sources[s]);
      counts[s] = r.values;
      addresses[s] = r.words.data();
    }
    auto out = make_rows(layer.outputs());
    linear_rows(ops_, *weights_, layer, addresses, counts, out->wide(), out->narrow(),
                params_.ring.N(), width_);
    return out;
  }

  std::vector<rlwe::SwitchedCiphertext> pack(const backend::Rows& rows, u32 bits,
                                             u32 body_bits) override {
    const Rows& in = rows_of(rows);
    const ring::RingParams& r = params_.ring;
    const std::size_t N = r.N(), packs = (in.values + N - 1) / N;
    const levels::Batch<Ops> packed =
        pack_rows(ops_, r, config_, in.wide(), in.narrow(), in.values, width_);
    std::vector<u64> a(packs * N), b(packs * N);
    ops_.download(packed.a.data(), a);
    ops_.download(packed.b.data(), b);
    ops_.synchronize();
    std::vector<rlwe::SwitchedCiphertext> out;
    for (std::size_t p = 0; p < packs; ++p) {
      rlwe::Ciphertext ct(r);
      std::copy(a.begin() + p * N, a.begin() + (p + 1) * N, ct.a.coeffs().begin());
      std::copy(b.begin() + p * N, b.begin() + (p + 1) * N, ct.b.coeffs().begin());
      out.push_back(rlwe::modulus_switch(ct, bits, body_bits));
    }
    return out;
  }

 private:
  // Rows of 64-bit words, or of 32-bit ones in a buffer of half as many 64-bit words; wide() and
  // narrow() give the one in use and null.
  struct Rows final : backend::Rows {
    Rows(std::size_t n, typename Ops::Buffer w, bool n32)
        : values(n), words(std::move(w)), is_narrow(n32) {}
    std::size_t count() const override { return values; }
    u64* wide() { return is_narrow ? nullptr : words.data(); }
    const u64* wide() const { return is_narrow ? nullptr : words.data(); }
    u32* narrow() { return is_narrow ? reinterpret_cast<u32*>(words.data()) : nullptr; }
    const u32* narrow() const {
      return is_narrow ? reinterpret_cast<const u32*>(words.data()) : nullptr;
    }
    std::size_t values;
    typename Ops::Buffer words;
    bool is_narrow;
  };

  std::unique_ptr<Rows> make_rows(std::size_t n) {
    const bool narrow = config_.row_bits == 32;
    return std::make_unique<Rows>(n, ops_.alloc(narrow ? (n * width_ + 1) / 2 : n * width_),
                                  narrow);
  }

  static const Rows& rows_of(const backend::Rows& rows) {
    const auto* r = dynamic_cast<const Rows*>(&rows);
    require(r != nullptr, ErrorCode::invalid_argument, "rows of another backend");
    return *r;
  }

  rlwe::ParameterSet params_;
  backend::Config config_;
  Ops ops_;
  std::string name_;
  std::size_t width_;
  std::shared_ptr<ResidentWeights<Ops>> weights_;
  Extraction<Ops> extraction_;
};

}  // namespace safhire::cuda
