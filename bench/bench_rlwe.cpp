// CPU benchmarks of the RLWE layer, one thread. Names `<operation>/<M>` on the default parameter
// set of each ring (default-b8: 2187, default-b12: 2401, default-b16: 3125, gadget of gamma = 0),
// and `<operation>/<M>/paper` on the seed paper's set of that ring:
//   keyswitch/2187     one key switch (decompose, 2l forward and 4 inverse NTTs, CRT)
//   encrypt/2187       seeded encryption of N coefficients (OS randomness for the noise)
//   decrypt/2187       phase and rounding of N coefficients
//   pack_fast/2187     packing all N LWE samples of a ciphertext into one RLWE (N - 1 switches)
//   pack_paper/2187    the same in paper mode (t^a - t + N (t-1)/2 switches)
//   extract/2187/gamma0, /gamma1, /gamma2   the fast split tree at each level gamma
//   powers/2187/gamma1, /gamma2       client: the phi(t^gamma) seeded powers of one chunk
//   partial_extract/2187/gamma1, ...  server: every conjugate module-LWE sample of one chunk
//   pack_blocks/2187/gamma1, ...      server: N outputs at level gamma into one RLWE (fast,
//                                     t^(a-gamma) - 1 switches)
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/rlwe.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire::rlwe;

std::string name(const char* op, const ParameterSet& p, bool paper) {
  std::string out(op);
  out.append("/").append(std::to_string(p.ring.M())).append(paper ? "/paper" : "");
  return out;
}

// Key switches per iteration and per second of a tree benchmark.
void report_key_switches(benchmark::State& state, const TraceTrees& trees) {
  const auto total = static_cast<double>(trees.key_switches());
  state.counters["keyswitches"] = total / static_cast<double>(state.iterations());
  state.counters["keyswitches_per_s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
}

void register_set(const ParameterSet& p, bool paper) {
  benchmark::RegisterBenchmark(name("keyswitch", p, paper).c_str(), [&p](benchmark::State& state) {
    safhire::core::OsRandom random;
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    const Gadget& g = p.gadget(0);
    const KeySwitchKey ksk = make_automorphism_key(key, 2, g, random);
    KeySwitcher switcher(p, g);
    safhire::ring::TorusPoly mu(p.ring);
    const Ciphertext ct = enc.encrypt(mu.coeffs());
    Ciphertext out(p.ring);
    for (auto _ : state) {
      switcher.key_switch(ksk, ct, out);
      benchmark::DoNotOptimize(out.b.data());
    }
    state.counters["keyswitches_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["levels"] = g.levels;
    state.counters["limbs"] = ksk.split().limbs;
  });
  benchmark::RegisterBenchmark(name("encrypt", p, paper).c_str(), [&p](benchmark::State& state) {
    safhire::core::OsRandom random;
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    safhire::ring::TorusPoly mu(p.ring);
    for (auto _ : state) {
      auto ct = enc.encrypt_seeded(mu.coeffs());
      benchmark::DoNotOptimize(ct.b.data());
    }
  });
  benchmark::RegisterBenchmark(name("decrypt", p, paper).c_str(), [&p](benchmark::State& state) {
    safhire::core::OsRandom random;
    const SecretKey key(p, random);
    Encryptor enc(key, random);
    safhire::ring::TorusPoly mu(p.ring);
    const Ciphertext ct = enc.encrypt(mu.coeffs());
    for (auto _ : state) {
      auto m = enc.decrypt(ct);
      benchmark::DoNotOptimize(m.data());
    }
  });
}

void register_trees(const ParameterSet& p) {
  const std::string m = std::to_string(p.ring.M());
  for (TreeMode mode : {TreeMode::fast, TreeMode::paper}) {
    const std::string op = mode == TreeMode::fast ? "pack_fast/" : "pack_paper/";
    benchmark::RegisterBenchmark((op + m).c_str(), [&p, mode](benchmark::State& state) {
      safhire::core::OsRandom random;
      const SecretKey key(p, random);
      Encryptor enc(key, random);
      const GaloisKeys keys = make_galois_keys(key, p.gadget(0), random);
      safhire::ring::TorusPoly mu(p.ring);
      const Ciphertext ct = enc.encrypt(mu.coeffs());
      std::vector<LweCiphertext> lwes;
      for (std::uint32_t j = 0; j < p.ring.N(); ++j)
        lwes.push_back(sample_extract(p.ring, ct, j));
      TraceTrees trees(p, p.gadget(0), keys);
      for (auto _ : state) {
        Ciphertext packed = trees.pack_lwes(lwes, p.ring.a() - 1, mode);
        benchmark::DoNotOptimize(packed.b.data());
      }
      report_key_switches(state, trees);
    })->Unit(benchmark::kMillisecond);
  }
  for (std::uint32_t gamma = 0; gamma <= 2; ++gamma) {
    const std::string bench = "extract/" + m + "/gamma" + std::to_string(gamma);
    benchmark::RegisterBenchmark(bench.c_str(), [&p, gamma](benchmark::State& state) {
      safhire::core::OsRandom random;
      const SecretKey key(p, random);
      Encryptor enc(key, random);
      const GaloisKeys keys = make_galois_keys(key, p.gadget(gamma), random);
      safhire::ring::TorusPoly mu(p.ring);
      const Ciphertext ct = enc.encrypt(mu.coeffs());
      TraceTrees trees(p, p.gadget(gamma), keys);
      for (auto _ : state) {
        auto parts = trees.split(ct, gamma, TreeMode::fast);
        benchmark::DoNotOptimize(parts.data());
      }
      report_key_switches(state, trees);
    })->Unit(benchmark::kMillisecond);
  }
}

void register_partial(const ParameterSet& p) {
  const std::string m = std::to_string(p.ring.M());
  for (std::uint32_t gamma = 1; gamma <= 2; ++gamma) {
    const std::string suffix = m + "/gamma" + std::to_string(gamma);
    benchmark::RegisterBenchmark(("powers/" + suffix).c_str(), [&p,
                                                                gamma](benchmark::State& state) {
      safhire::core::OsRandom random;
      const SecretKey key(p, random);
      Encryptor enc(key, random);
      safhire::ring::TorusPoly mu(p.ring);
      for (auto _ : state) {
        auto powers = encrypt_powers(enc, mu.coeffs(), gamma);
        benchmark::DoNotOptimize(powers.data());
      }
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("partial_extract/" + suffix).c_str(),
                                 [&p, gamma](benchmark::State& state) {
                                   safhire::core::OsRandom random;
                                   const SecretKey key(p, random);
                                   Encryptor enc(key, random);
                                   safhire::ring::TorusPoly mu(p.ring);
                                   std::vector<Ciphertext> powers;
                                   for (const auto& s : encrypt_powers(enc, mu.coeffs(), gamma))
                                     powers.push_back(s.expand());
                                   const PartialExtraction px(p.ring, gamma);
                                   for (auto _ : state) {
                                     auto conj = px.conjugates(powers);
                                     benchmark::DoNotOptimize(conj.data());
                                   }
                                 })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("pack_blocks/" + suffix).c_str(), [&p, gamma](
                                                                        benchmark::State& state) {
      safhire::core::OsRandom random;
      const SecretKey key(p, random);
      Encryptor enc(key, random);
      const GaloisKeys keys = make_galois_keys(key, p.gadget(gamma), random);
      safhire::ring::TorusPoly mu(p.ring);
      const Ciphertext ct = enc.encrypt(mu.coeffs());
      const std::vector<Ciphertext> blocks(p.ring.power(p.ring.a() - gamma), ct);
      TraceTrees trees(p, p.gadget(gamma), keys);
      for (auto _ : state) {
        Ciphertext packed = trees.pack_blocks(blocks, gamma, TreeMode::fast);
        benchmark::DoNotOptimize(packed.b.data());
      }
      report_key_switches(state, trees);
    })->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* set : {"default-b8", "default-b12", "default-b16"}) {
    register_set(parameter_set(set), false);
  }
  for (const char* set : {"default-b8", "default-b12", "default-b16"}) {
    register_trees(parameter_set(set));
    register_partial(parameter_set(set));
  }
  for (const char* set : {"paper-b8", "paper-b12", "paper-b16"}) {
    register_set(parameter_set(set, SecurityPolicy::allow_insecure), true);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
