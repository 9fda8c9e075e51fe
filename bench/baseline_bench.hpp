// The lanes beside the mod-2^n baseline (lanes/baseline.hpp), n = 8, 16, ..., 1024 at N = 2^16,
// one thread, for `safhire lanes compare`'s table in docs/lanes.md and its plot
// (scripts/lanes-compare-plot):
//   lanes/refresh/<n>/2/low_memory            the lanes' refresh of a product (integers modulo
//                                             2^n + 1, beta = 2), counters per step (ms)
//   lanes/amortized_mult/<n>/2/low_memory     one product of two ciphertexts at rest and that
//                                             refresh, per integer product (s_per_integer_product)
//   baseline/refresh/<n>/low_memory           the same for the baseline (integers modulo 2^n)
//   baseline/amortized_mult/<n>/low_memory
// Both in one configuration, the low-memory one (`--low-memory`: seeded keys, lazy DFT matrices,
// at most 8 baby rotations a group): the baseline's chain is up to 9 levels longer, and to keep
// 128 bits it takes more key-switching digits (dnum up to 10 against the lanes' 3), whose keys
// and top-level matrices do not fit 24 GB otherwise. The lanes' default configuration is
// lanes_bench.hpp's (lanes/refresh/<n>/2). Each result checked against GMP (a wrong integer is a
// benchmark error); each space runs one refresh untimed first; one space is alive at a time.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lanes_bench.hpp"

namespace safhire::bench {

// The n of the comparison (the seed's range).
inline std::vector<std::uint32_t> comparison_degrees() {
  return {8, 16, 32, 64, 128, 256, 512, 1024};
}

// The low-memory configuration both systems run in.
inline lanes::RefreshParams comparison_params() {
  lanes::RefreshParams params;
  params.lazy_matrices = true;
  params.max_babies = 8;
  return params;
}

// One system at one n: the lanes' (refresher set) or the baseline's.
struct ComparisonSpace {
  lanes::LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  std::unique_ptr<lanes::LaneRefresher> refresher;
  std::unique_ptr<lanes::Mod2nBaseline> baseline;
  core::SeededRandom random;
  ckks::SecretKey sk;
  lanes::LaneKeys keys;
  mpz_class modulus;
  std::vector<mpz_class> a, b;
  lanes::LaneCiphertext ca, cb, product;

  ComparisonSpace(const lanes::LaneSpace& space, const MakeLaneOps& make, bool is_baseline)
      : context(space, true),
        ops(make(context.ckks())),
        random(core::SeededRandom::from_counter(9)) {
    ckks::KeyGenerator generator(context.ckks(), *ops, random);
    generator.set_seeded(true);
    sk = generator.secret_key();
    if (is_baseline) {
      baseline = std::make_unique<lanes::Mod2nBaseline>(context, *ops, comparison_params());
      keys = baseline->keys(generator, sk);
      modulus = baseline->modulus();
    } else {
      refresher = std::make_unique<lanes::LaneRefresher>(context, *ops, comparison_params());
      keys = refresher->keys(generator, sk);
      modulus = context.modulus();
    }
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(7);
    a.resize(integers());
    b.resize(integers());
    for (auto* v : {&a, &b}) {
      for (auto& x : *v)
        x = gmp.get_z_range(modulus);
    }
    const lanes::LaneEncryptor encryptor(context, *ops, random);
    ca = encryptor.encrypt_digits(digits(a), sk);
    cb = encryptor.encrypt_digits(digits(b), sk);
    product = multiply(ca, cb);
    refresh(product);
    ops->synchronize();
  }

  std::size_t integers() const { return context.space().lanes(); }
  lanes::LaneDigits digits(const std::vector<mpz_class>& v) const {
    return baseline ? baseline->digits(v) : lanes::LaneEncoder(context, *ops).digits(v);
  }
  lanes::LaneCiphertext multiply(const lanes::LaneCiphertext& x,
                                 const lanes::LaneCiphertext& y) const {
    return baseline ? baseline->multiply(x, y, keys.relinearization)
                    : lanes::LaneEvaluator(context, *ops).multiply(x, y, keys.relinearization);
  }
  lanes::LaneCiphertext refresh(const lanes::LaneCiphertext& x,
                                const lanes::LaneRefresher::StepDone& done = {}) const {
    return baseline ? baseline->refresh(x, keys, done)
                    : refresher->refresh(x, keys, lanes::RefreshMode::clean, done);
  }
  // True when x decrypts to a b (mod 2^n + 1 or 2^n) lane by lane.
  bool is_product(const lanes::LaneCiphertext& x) const {
    const lanes::LaneDecoding d = lanes::LaneDecryptor(context, *ops, sk).decrypt(x);
    const std::vector<mpz_class> got = baseline ? baseline->values(d) : d.integers;
    for (std::size_t r = 0; r < a.size(); ++r) {
      if (got[r] != a[r] * b[r] % modulus) return false;
    }
    return true;
  }
};

inline void register_comparison_benchmarks(const std::string& suffix, MakeLaneOps make) {
  static SpaceCache<ComparisonSpace> cache;
  for (const std::uint32_t n : comparison_degrees()) {
    for (const bool is_baseline : {false, true}) {
      std::string space_name = is_baseline ? "baseline-n16-" : "lanes-n16-";
      space_name += std::to_string(n);
      if (!is_baseline) space_name += "-b2";
      const lanes::LaneSpace space = is_baseline ? lanes::make_baseline_space(space_name, 16, n)
                                                 : lanes::make_lane_space(space_name, 16, n, 2);
      auto get = [space, make, is_baseline]() -> ComparisonSpace& {
        return cache.get(space, make, is_baseline);
      };
      std::string tail = "/";
      tail += std::to_string(n);
      if (!is_baseline) tail += "/2";
      tail += "/low_memory";
      tail += suffix;
      const std::string family = is_baseline ? "baseline/" : "lanes/";
      benchmark::RegisterBenchmark(
          (family + "refresh" + tail).c_str(),
          [get](benchmark::State& state) {
            ComparisonSpace& s = get();
            std::map<std::string, double> step_ms;
            lanes::LaneCiphertext out;
            for (auto _ : state) {
              auto last = std::chrono::steady_clock::now();
              out = s.refresh(s.product, [&](const char* name) {
                s.ops->synchronize();
                const auto now = std::chrono::steady_clock::now();
                step_ms[name] += std::chrono::duration<double, std::milli>(now - last).count();
                last = now;
              });
            }
            if (!s.is_product(out)) state.SkipWithError("the refresh gave a wrong integer");
            for (const auto& [name, ms] : step_ms)
              state.counters[name + " ms"] = ms / static_cast<double>(state.iterations());
            const lanes::LaneSpace& sp = s.context.space();
            state.counters["integers"] = static_cast<double>(s.integers());
            state.counters["levels"] = sp.top();
            state.counters["dnum"] = sp.ckks.dnum;
            state.counters["log2_qp"] = sp.ckks.log_qp();
            state.counters["security_bits"] = sp.security_bits();
            state.counters["key_mb"] = static_cast<double>(ckks::key_bytes(s.keys)) / (1 << 20);
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(3);
      benchmark::RegisterBenchmark((family + "amortized_mult" + tail).c_str(),
                                   [get](benchmark::State& state) {
                                     ComparisonSpace& s = get();
                                     lanes::LaneCiphertext out;
                                     for (auto _ : state) {
                                       out = s.refresh(s.multiply(s.ca, s.cb));
                                       s.ops->synchronize();
                                     }
                                     if (!s.is_product(out))
                                       state.SkipWithError("the chain gave a wrong integer");
                                     const auto integers = static_cast<double>(s.integers());
                                     state.counters["integers"] = integers;
                                     state.counters["s_per_integer_product"] = benchmark::Counter(
                                         static_cast<double>(state.iterations()) * integers,
                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(2);
    }
  }
}

}  // namespace safhire::bench
