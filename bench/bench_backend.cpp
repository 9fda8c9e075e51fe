// The backend's steps on their own, one ResNet-20 round (synthetic weights, hybrid/zoo.hpp) per
// benchmark:
//   backend/cpu/linear/resnet20-b<b>/round<r>/gamma<g>/threads<T>   the linear layer
//   backend/cpu/extract/resnet20-b8/round1/gamma<g>                  extraction of one upload
//   backend/cpu/pack/resnet20-b8/rows<n>/gamma2/threads<T>           packing n rows (16384: 12
//                                                                    packs; 4096: 3 packs)
// and all with /rows32 on rows of 32-bit words (backend::Config::row_bits = 32; packing: only).
// Counters: outputs, taps (nonzero weights), word_macs (taps x row words) and word_macs_per_s.
#include <benchmark/benchmark.h>

#include <numeric>
#include <string>
#include <vector>

#include "safhire/backend/backend.hpp"
#include "safhire/hybrid/inference.hpp"
#include "safhire/hybrid/zoo.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire;

struct Setup {
  Setup(std::uint32_t bits, std::uint32_t gamma, unsigned threads, std::uint32_t row_bits)
      : model(hybrid::synthetic_model(hybrid::ZooModel::resnet20_cifar, bits)),
        params(rlwe::parameter_set("default-b" + std::to_string(bits))),
        random(core::Seed{}),
        key(params, random),
        encryptor(key, random),
        keys(rlwe::make_galois_keys(key, params.gadget(gamma), random)),
        backend(backend::make_cpu_backend(params, {gamma, rlwe::TreeMode::fast, row_bits}, keys,
                                          threads)) {
    const std::size_t per_chunk = rlwe::power_elements(params.ring, gamma).size();
    std::vector<rlwe::u64> zero(params.ring.N(), 0);
    for (std::size_t s = 0; s < model.rounds().size(); ++s) {
      const std::size_t n = model.activation(s).size();
      std::vector<rlwe::SeededCiphertext> cts;
      for (std::size_t c = 0; c < (n + params.ring.N() - 1) / params.ring.N() * per_chunk; ++c)
        cts.push_back(encryptor.encrypt_seeded(zero));
      uploads.push_back(std::move(cts));
    }
  }
  std::vector<std::uint32_t> identity(std::size_t n) const {
    std::vector<std::uint32_t> p(n);
    std::iota(p.begin(), p.end(), 0U);
    return p;
  }

  hybrid::Model model;
  rlwe::ParameterSet params;
  core::SeededRandom random;
  rlwe::SecretKey key;
  rlwe::Encryptor encryptor;
  rlwe::GaloisKeys keys;
  std::unique_ptr<backend::Backend> backend;
  std::vector<std::vector<rlwe::SeededCiphertext>> uploads;  // per activation
};

void linear(benchmark::State& state, std::uint32_t bits, std::uint32_t round, std::uint32_t gamma,
            unsigned threads, std::uint32_t row_bits) {
  Setup s(bits, gamma, threads, row_bits);
  std::vector<std::unique_ptr<backend::Rows>> rows(round + 1);
  std::vector<const backend::Rows*> sources(round + 1, nullptr);
  for (const hybrid::Term& t : s.model.rounds()[round].terms) {
    if (rows[t.source]) continue;
    rows[t.source] =
        s.backend->extract(s.uploads[t.source], s.identity(s.model.activation(t.source).size()));
    sources[t.source] = rows[t.source].get();
  }
  const backend::LinearLayer layer =
      hybrid::linear_layer(s.model, round, s.identity(s.model.rounds()[round].output.size()));
  for (auto _ : state) {
    auto out = s.backend->linear(layer, sources);
    benchmark::DoNotOptimize(out.get());
  }
  const double macs = static_cast<double>(layer.weights->taps.size()) *
                      static_cast<double>(backend::row_words(s.params, gamma));
  state.counters["outputs"] = static_cast<double>(layer.outputs());
  state.counters["taps"] = static_cast<double>(layer.weights->taps.size());
  state.counters["word_macs"] = macs;
  state.counters["word_macs_per_s"] =
      benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
}

void extract(benchmark::State& state, std::uint32_t gamma, std::uint32_t row_bits) {
  Setup s(8, gamma, 1, row_bits);
  const std::size_t n = s.model.activation(1).size();
  for (auto _ : state) {
    auto rows = s.backend->extract(s.uploads[1], s.identity(n));
    benchmark::DoNotOptimize(rows.get());
  }
  state.counters["outputs"] = static_cast<double>(n);
}

// Packs the rows extracted from the upload of the first activation of n values (the rows'
// contents do not change the work) into ciphertexts of 2^64.
void pack(benchmark::State& state, std::size_t n, std::uint32_t gamma, unsigned threads) {
  Setup s(8, gamma, threads, 32);
  std::size_t a = 0;
  while (s.model.activation(a).size() != n)
    ++a;
  const auto rows = s.backend->extract(s.uploads[a], s.identity(n));
  for (auto _ : state) {
    auto packed = s.backend->pack(*rows, 64, 64);
    benchmark::DoNotOptimize(packed.data());
  }
  state.counters["packs"] = static_cast<double>((n + s.params.ring.N() - 1) / s.params.ring.N());
}

std::string rows_suffix(std::uint32_t row_bits) {
  return row_bits == 32 ? "/rows32" : "";
}

void register_all() {
  for (std::uint32_t row_bits : {64U, 32U})
    for (std::uint32_t bits : {8U, 16U})
      for (std::uint32_t gamma : {0U, 2U})
        for (unsigned threads : {1U, 2U}) {
          const std::string name = "backend/cpu/linear/resnet20-b" + std::to_string(bits) +
                                   "/round1/gamma" + std::to_string(gamma) + "/threads" +
                                   std::to_string(threads) + rows_suffix(row_bits);
          benchmark::RegisterBenchmark(
              name.c_str(),
              [=](benchmark::State& st) { linear(st, bits, 1, gamma, threads, row_bits); })
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
  for (std::uint32_t row_bits : {64U, 32U})
    for (std::uint32_t gamma : {0U, 1U, 2U})
      benchmark::RegisterBenchmark(("backend/cpu/extract/resnet20-b8/round1/gamma" +
                                    std::to_string(gamma) + rows_suffix(row_bits))
                                       .c_str(),
                                   [=](benchmark::State& st) { extract(st, gamma, row_bits); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  for (std::size_t n : {std::size_t{16384}, std::size_t{4096}})
    for (unsigned threads : {1U, 2U})
      benchmark::RegisterBenchmark(("backend/cpu/pack/resnet20-b8/rows" + std::to_string(n) +
                                    "/gamma2/threads" + std::to_string(threads) + "/rows32")
                                       .c_str(),
                                   [=](benchmark::State& st) { pack(st, n, 2, threads); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
