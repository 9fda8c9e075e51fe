// The lanes' benchmarks on the CPU, one thread (lanes_bench.hpp lists them), and the lanes beside
// the mod-2^n baseline (baseline_bench.hpp). JSON with
// --benchmark_format=json; --benchmark_filter picks spaces (each space's key generation, about
// 15 s and up to 4 GB, runs once for its benchmarks).
#include <benchmark/benchmark.h>

#include "baseline_bench.hpp"
#include "lanes_bench.hpp"

int main(int argc, char** argv) {
  safhire::bench::register_lane_benchmarks(
      "", [](const safhire::ckks::CkksContext& c) { return safhire::ckks::make_cpu_rns_ops(c, 1); },
      false);
  safhire::bench::register_comparison_benchmarks("", [](const safhire::ckks::CkksContext& c) {
    return safhire::ckks::make_cpu_rns_ops(c, 1);
  });
  safhire::bench::register_field_benchmarks(
      "", [](const safhire::ckks::CkksContext& c) { return safhire::ckks::make_cpu_rns_ops(c, 1); },
      false);
  safhire::bench::register_conversion_benchmarks(
      "", [](const safhire::ckks::CkksContext& c) { return safhire::ckks::make_cpu_rns_ops(c, 1); },
      false);
  safhire::bench::register_digit_benchmarks("", [](const safhire::ckks::CkksContext& c) {
    return safhire::ckks::make_cpu_rns_ops(c, 1);
  });
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
