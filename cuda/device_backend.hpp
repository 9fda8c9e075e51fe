// The CUDA backend's algorithm, written once over an `Ops` type as cuda/tree_levels.hpp is:
// cuda/backend.cu instantiates it with kernel launches on a stream (rows, weights and packing all
// on the device), tests/hybrid/test_backend_emulation.cpp with plain loops on the CPU, where whole
// inferences through it must equal the CPU backend's downloads word for word.
//
// Ops provides, besides what tree_levels.hpp needs: Array<T> (with data()) and
// upload<T>(span) -> Array<T>; download(device words, host span); synchronize();
// run_extract(ExtractArgs, threads), run_linear(LinearArgs, threads),
// run_gather_lwe(GatherLweArgs, threads), run_gather_blocks(GatherBlocksArgs, threads);
// key_switches().
//
// Device residency: rows stay on the device from extraction to packing; what crosses to the
// device per round is the upload's ciphertexts (expanded from their seeds on the host), the
// un-shuffling destinations and the round's linear layer (taps, slots, biases); what comes back
// is the packed ciphertexts. At gamma >= 1 the extraction itself still runs on the host
// (backend::HostExtraction) and its rows are uploaded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend_element.cuh"
#include "safhire/backend/backend.hpp"
#include "safhire/core/error.hpp"
#include "tree_levels.hpp"

namespace safhire::cuda {

template <class Ops>
class DeviceBackend final : public backend::Backend {
 public:
  using u64 = std::uint64_t;
  using u32 = std::uint32_t;

  // `host_threads` run the host side of extraction at gamma >= 1.
  DeviceBackend(const rlwe::ParameterSet& params, const backend::Config& config, Ops ops,
                std::string name, unsigned host_threads)
      : params_(params),
        config_(config),
        ops_(std::move(ops)),
        name_(std::move(name)),
        width_(backend::row_words(params, config.gamma)) {
    require(config.mode == rlwe::TreeMode::fast, ErrorCode::unsupported,
            "the CUDA backend packs in fast mode only (paper mode runs on the CPU backend)");
    if (config.gamma >= 1) host_.emplace(params, config.gamma, host_threads);
  }

  std::string name() const override { return name_; }
  backend::Config config() const override { return config_; }
  void synchronize() override { ops_.synchronize(); }
  std::uint64_t key_switches() const override { return ops_.key_switches(); }

  std::unique_ptr<backend::Rows> extract(std::span<const rlwe::SeededCiphertext> cts,
                                         std::span<const u32> destination) override {
    const std::size_t n = destination.size(), N = params_.ring.N();
    auto out = std::make_unique<Rows>(n, ops_.alloc(n * width_));
    if (host_) {
      std::vector<u64> rows(n * width_);
      host_->run(cts, destination, rows);
      auto uploaded = ops_.template upload<u64>(rows);
      ops_.copy(out->words.data(), uploaded.data(), rows.size());
      ops_.synchronize();
      return out;
    }
    const std::size_t chunks = (n + N - 1) / N;
    require(cts.size() == chunks, ErrorCode::invalid_argument,
            "extract: " + std::to_string(chunks) + " ciphertexts expected for " +
                std::to_string(n) + " values");
    backend::require_permutation(destination, "extract: destinations");
    std::vector<u64> a(chunks * N), b(chunks * N);
    for (std::size_t c = 0; c < chunks; ++c) {
      require(cts[c].b.ring() == params_.ring, ErrorCode::size_mismatch, "extract: wrong ring");
      const rlwe::Ciphertext ct = cts[c].expand();
      std::copy(ct.a.coeffs().begin(), ct.a.coeffs().end(), a.begin() + c * N);
      std::copy(ct.b.coeffs().begin(), ct.b.coeffs().end(), b.begin() + c * N);
    }
    const auto da = ops_.template upload<u64>(a);
    const auto db = ops_.template upload<u64>(b);
    const auto dest = ops_.template upload<u32>(destination);
    block::ExtractArgs args{};
    args.a = da.data();
    args.b = db.data();
    args.dest = dest.data();
    args.rows = out->words.data();
    args.N = static_cast<u32>(N);
    args.M = params_.ring.M();
    args.m = params_.ring.m();
    args.W = static_cast<u32>(width_);
    ops_.run_extract(args, n * width_);
    ops_.synchronize();  // the host vectors above die here
    return out;
  }

  std::unique_ptr<backend::Rows> linear(const backend::LinearLayer& layer,
                                        std::span<const backend::Rows* const> sources) override {
    std::vector<std::size_t> counts(sources.size(), 0);
    std::vector<u64> addresses(sources.size(), 0);
    for (std::size_t s = 0; s < sources.size(); ++s) {
      if (!sources[s]) continue;
      const Rows& r = rows_of(*sources[s]);
      counts[s] = r.values;
      addresses[s] = reinterpret_cast<std::uintptr_t>(r.words.data());
    }
    layer.validate(counts);
    const std::size_t taps = layer.taps.size();
    std::vector<u32> source(taps), index(taps);
    std::vector<std::int32_t> weight(taps);
    for (std::size_t k = 0; k < taps; ++k) {
      source[k] = layer.taps[k].source;
      index[k] = layer.taps[k].index;
      weight[k] = layer.taps[k].weight;
    }
    const auto d_sources = ops_.template upload<u64>(addresses);
    const auto d_start = ops_.template upload<u32>(layer.tap_start);
    const auto d_source = ops_.template upload<u32>(source);
    const auto d_index = ops_.template upload<u32>(index);
    const auto d_weight = ops_.template upload<std::int32_t>(weight);
    const auto d_slot = ops_.template upload<u32>(layer.slot);
    const auto d_bias = ops_.template upload<u64>(layer.bias);
    const std::size_t n = layer.outputs();
    auto out = std::make_unique<Rows>(n, ops_.alloc(n * width_));
    block::LinearArgs args{};
    args.sources = reinterpret_cast<const u64* const*>(d_sources.data());
    args.tap_start = d_start.data();
    args.tap_source = d_source.data();
    args.tap_index = d_index.data();
    args.tap_weight = d_weight.data();
    args.slot = d_slot.data();
    args.bias = d_bias.data();
    args.out = out->words.data();
    args.N = params_.ring.N();
    args.W = static_cast<u32>(width_);
    ops_.run_linear(args, n * width_);
    ops_.synchronize();
    return out;
  }

  std::vector<rlwe::SwitchedCiphertext> pack(const backend::Rows& rows, u32 bits) override {
    const Rows& in = rows_of(rows);
    const ring::RingParams& r = params_.ring;
    const std::size_t N = r.N(), packs = (in.values + N - 1) / N;
    levels::Batch<Ops> packed;
    if (config_.gamma == 0) {
      auto masks = ops_.alloc(packs * N * N);
      auto bodies = ops_.alloc(packs * N);
      block::GatherLweArgs args{};
      args.rows = in.words.data();
      args.masks = masks.data();
      args.bodies = bodies.data();
      args.values = in.values;
      args.N = static_cast<u32>(N);
      args.W = static_cast<u32>(width_);
      ops_.run_gather_lwe(args, packs * N * (N + 1));
      packed = levels::pack_lwes(ops_, r, masks.data(), bodies.data(), packs, r.a() - 1);
    } else {
      const u32 gamma = config_.gamma;
      const u32 T = static_cast<u32>(levels::power(r.t(), r.a() - gamma));
      auto blocks_a = ops_.alloc(packs * T * N);
      auto blocks_b = ops_.alloc(packs * T * N);
      block::GatherBlocksArgs args{};
      args.rows = in.words.data();
      args.out_a = blocks_a.data();
      args.out_b = blocks_b.data();
      args.values = in.values;
      args.N = static_cast<u32>(N);
      args.T = T;
      args.Mg = static_cast<u32>(levels::power(r.t(), gamma));
      args.mg = static_cast<u32>(levels::power(r.t(), gamma - 1));
      args.L = args.Mg - args.mg;
      args.W = static_cast<u32>(width_);
      ops_.run_gather_blocks(args, packs * T * N);
      packed = levels::pack_blocks(ops_, r, blocks_a.data(), blocks_b.data(), packs, gamma);
    }
    std::vector<u64> a(packs * N), b(packs * N);
    ops_.download(packed.a.data(), a);
    ops_.download(packed.b.data(), b);
    ops_.synchronize();
    std::vector<rlwe::SwitchedCiphertext> out;
    for (std::size_t p = 0; p < packs; ++p) {
      rlwe::Ciphertext ct(r);
      std::copy(a.begin() + p * N, a.begin() + (p + 1) * N, ct.a.coeffs().begin());
      std::copy(b.begin() + p * N, b.begin() + (p + 1) * N, ct.b.coeffs().begin());
      out.push_back(rlwe::modulus_switch(ct, bits));
    }
    return out;
  }

 private:
  struct Rows final : backend::Rows {
    Rows(std::size_t n, typename Ops::Buffer w) : values(n), words(std::move(w)) {}
    std::size_t count() const override { return values; }
    std::size_t values;
    typename Ops::Buffer words;
  };

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
  std::optional<backend::HostExtraction> host_;
};

}  // namespace safhire::cuda
