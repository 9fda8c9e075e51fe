// CPU benchmarks of the CKKS layer, one thread. Names follow the scheme so that results
// compare across versions and against the CUDA counterparts (suffix /cuda in bench_cuda):
//   ckks/ntt_forward/<N>, ckks/ntt_inverse/<N>       one polynomial, one 60-bit prime
//   ckks/ntt_forward/<N>/<isa>                       the same on each available kernel set
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "safhire/core/primes.hpp"
#include "safhire/ring/negacyclic_ntt.hpp"

namespace {

using safhire::ring::NegacyclicNtt;
using safhire::ring::RingParams;
using safhire::ring::SimdIsa;
using u64 = std::uint64_t;

std::vector<u64> random_mod(std::size_t n, u64 q, u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> v(n);
  for (auto& x : v)
    x = rng() % q;
  return v;
}

void register_ntt() {
  for (std::uint32_t log_m = 13; log_m <= 18; ++log_m) {
    const RingParams ring(2, log_m);
    const u64 q = safhire::core::primes_below(60, ring.M(), 1)[0];
    for (bool inverse : {false, true}) {
      for (SimdIsa isa : safhire::ring::available_simd()) {
        const bool best = isa == safhire::ring::default_simd();
        std::string name = inverse ? "ckks/ntt_inverse/" : "ckks/ntt_forward/";
        name += std::to_string(ring.N());
        if (!best) {
          name += '/';
          name += safhire::ring::to_string(isa);
        }
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          const auto plan = NegacyclicNtt::for_prime(ring, q, isa);
          auto a = random_mod(ring.N(), q, 1);
          for (auto _ : state) {
            if (inverse) {
              plan.inverse(a);
            } else {
              plan.forward(a);
            }
            benchmark::DoNotOptimize(a.data());
          }
        })->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_ntt();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
