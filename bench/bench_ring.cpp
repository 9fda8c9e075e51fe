// CPU benchmarks of the ring layer, one thread. Names are `<operation>/<M>` (and a suffix for an
// explicit instruction set or batch), so that results compare across versions:
//   ntt_forward/2187, ntt_inverse/2187             one polynomial, one 62-bit prime
//   ntt_forward_batch1024/2187, ...                1024 polynomials
//   ntt_forward/2187/scalar, .../avx2, .../avx512  the same on each available kernel set
//   product_radix/2187, product_padded/2187        exact product mod 2^64 (torus x binary)
//   automorphism/2187, automorphism_ntt/2187       sigma_2 on the torus, and as a slot permutation
//   torus_matmul/288x16/avx2, torus_dot/288/avx2   the linear layer's kernels (rows x outputs)
//   torus_dot/288/avx2/signs                       torus_dot with weights +-1 only
//   torus_spmm/576x64/avx2[/scattered]             its sparse kernel, taps like a b = 8 model's
//   .../w32                                        the same three on 32-bit words
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "safhire/core/primes.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/ring/simd.hpp"

namespace {

using namespace safhire::ring;
using u64 = std::uint64_t;

const RingParams kRings[] = {RingParams(3, 7), RingParams(7, 4), RingParams(5, 5)};

std::vector<u64> random_mod(std::size_t n, u64 q, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> v(n);
  for (auto& x : v)
    x = rng() % q;
  return v;
}

// Built by appending: GCC 12 warns falsely (-Wrestrict, GCC bug 105329) on some string sums.
std::string name(const char* op, const RingParams& r, std::string_view suffix = {}) {
  std::string out(op);
  out.append("/").append(std::to_string(r.M())).append(suffix);
  return out;
}

// One NTT benchmark: `count` polynomials transformed in place per iteration.
void register_transform(const char* op, const RingParams& r, SimdIsa isa, std::string_view suffix,
                        std::size_t count, bool forward) {
  const u64 q = safhire::core::primes_below(62, r.M(), 1)[0];
  auto* bench = benchmark::RegisterBenchmark(
      name(op, r, suffix).c_str(), [r, q, isa, count, forward](benchmark::State& state) {
        const NttPlan plan = NttPlan::for_prime(r, q, isa);
        auto f = random_mod(count * r.N(), q, forward ? 1 : 2);
        for (auto _ : state) {
          if (forward) {
            plan.forward(f);
          } else {
            plan.inverse(f);
          }
          benchmark::DoNotOptimize(f.data());
        }
        state.SetItemsProcessed(state.iterations() * count * r.N());
      });
  if (count > 1) bench->Unit(benchmark::kMillisecond);
}

void register_ntt(const RingParams& r, SimdIsa isa, std::string_view suffix, bool batches) {
  register_transform("ntt_forward", r, isa, suffix, 1, true);
  register_transform("ntt_inverse", r, isa, suffix, 1, false);
  if (!batches) return;
  register_transform("ntt_forward_batch1024", r, isa, suffix, 1024, true);
  register_transform("ntt_inverse_batch1024", r, isa, suffix, 1024, false);
}

// Torus polynomial times a binary one: the shape of a * s in encryption and key switching.
template <class Product>
void product_benchmark(benchmark::State& state, const RingParams& r) {
  Product product(r);
  std::mt19937_64 rng(5);
  TorusPoly a(r), s(r), out(r);
  for (auto& x : a.coeffs())
    x = rng();
  for (auto& x : s.coeffs())
    x = rng() & 1U;
  for (auto _ : state) {
    product.multiply(a.coeffs(), s.coeffs(), out.coeffs());
    benchmark::DoNotOptimize(out.data());
  }
}

void register_ring(const RingParams& r) {
  register_ntt(r, default_simd(), "", true);
  for (SimdIsa isa : available_simd())
    register_ntt(r, isa, std::string("/").append(to_string(isa)), false);
  benchmark::RegisterBenchmark(name("product_radix", r).c_str(), [r](benchmark::State& state) {
    product_benchmark<ExactProduct>(state, r);
  });
  benchmark::RegisterBenchmark(name("product_padded", r).c_str(), [r](benchmark::State& state) {
    product_benchmark<PaddedProduct>(state, r);
  });
  benchmark::RegisterBenchmark(name("automorphism", r).c_str(), [r](benchmark::State& state) {
    std::mt19937_64 rng(6);
    TorusPoly a(r), out(r);
    for (auto& x : a.coeffs())
      x = rng();
    for (auto _ : state) {
      automorphism(r, a.coeffs(), 2, out.coeffs(), TorusArith{});
      benchmark::DoNotOptimize(out.data());
    }
  });
  benchmark::RegisterBenchmark(name("automorphism_ntt", r).c_str(), [r](benchmark::State& state) {
    const u64 q = safhire::core::primes_below(62, r.M(), 1)[0];
    const NttPlan plan = NttPlan::for_prime(r, q);
    const auto perm = plan.automorphism_permutation(2);
    const auto in = random_mod(r.N(), q, 7);
    std::vector<u64> out(r.N());
    for (auto _ : state) {
      apply_permutation(in, perm, out);
      benchmark::DoNotOptimize(out.data());
    }
  });
}

// The linear layer's dense kernel on one cache block as the CPU backend cuts it: `count` input
// rows (a 3x3 convolution over count / 9 channels), `outputs` outputs, 48K / count words each,
// small signed weights; and the one-output kernel on the same rows, with such weights and with
// +-1 only. On 32-bit words (Word = std::uint32_t) the names end in /w32: the same words, half
// the bytes.
template <class Word>
std::string word_suffix() {
  return sizeof(Word) == 4 ? "/w32" : "";
}

template <class Word>
void register_torus(std::size_t count, std::size_t outputs, SimdIsa isa) {
  const std::size_t len = 48 * 1024 / count / 32 * 32;
  std::string shape = std::to_string(count);
  shape.append("x").append(std::to_string(outputs)).append("/").append(to_string(isa));
  shape.append(word_suffix<Word>());
  std::string dot_name("torus_dot/");
  dot_name.append(std::to_string(count)).append("/").append(to_string(isa));
  dot_name.append(word_suffix<Word>());
  auto setup = [count, outputs, len](std::vector<Word>& words, std::vector<const Word*>& rows,
                                     std::vector<u64>& weights) {
    std::mt19937_64 rng(8);
    words.resize(count * len);
    for (auto& x : words)
      x = static_cast<Word>(rng());
    for (std::size_t t = 0; t < count; ++t)
      rows.push_back(words.data() + t * len);
    weights.resize(outputs * count);
    for (auto& w : weights)
      w = static_cast<u64>(static_cast<std::int64_t>(rng() % 15) - 7);
  };
  benchmark::RegisterBenchmark(
      std::string("torus_matmul/").append(shape).c_str(), [=](benchmark::State& state) {
        std::vector<Word> words;
        std::vector<u64> weights;
        std::vector<const Word*> rows;
        setup(words, rows, weights);
        std::vector<Word> out(outputs * len);
        std::vector<Word*> outs;
        for (std::size_t o = 0; o < outputs; ++o)
          outs.push_back(out.data() + o * len);
        for (auto _ : state) {
          torus_matmul(rows, weights, outs, len, isa);
          benchmark::DoNotOptimize(out.data());
        }
        state.SetItemsProcessed(state.iterations() * count * outputs * len);  // MACs
      });
  const auto dot = [=](benchmark::State& state, bool signs) {
    std::vector<Word> words;
    std::vector<u64> weights;
    std::vector<const Word*> rows;
    setup(words, rows, weights);
    weights.resize(count);
    if (signs)
      for (auto& w : weights)
        w = w >> 63 != 0 ? ~u64{0} : 1;
    std::vector<Word> out(len);
    for (auto _ : state) {
      torus_dot(rows, weights, out, isa);
      benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * count * len);
  };
  benchmark::RegisterBenchmark(dot_name.c_str(), dot, false);
  benchmark::RegisterBenchmark((dot_name + "/signs").c_str(), dot, true);
}

// The sparse kernel on one cache block of a 3x3 convolution over 64 channels (576 rows, 64
// outputs) with the tap statistics of the trained resnet20-b8 (models/): 32 nonzero weights per
// output, half of each sign, 96% of them +-1 and the others 2 to 12, units first as the CPU
// backend orders them. The rows are 64-word pieces of rows of 1536 words; `/scattered` takes
// each call's rows from a pool of 1.3 GB (a new set per call, as the backend reads a layer's
// ciphertexts from DRAM; the set comes back after 192 calls, 54 MB of pieces later), the other
// the same in-cache rows every call.
template <class Word>
void register_spmm(SimdIsa isa, bool scattered) {
  constexpr std::size_t kCount = 576, kOutputs = 64, kTaps = 32, kStride = 1536;
  const std::size_t sets = scattered ? 192 : 1;
  const std::size_t len = 48 * 1024 / kCount / 32 * 32;
  std::string name = std::string("torus_spmm/576x64/").append(to_string(isa));
  if (scattered) name.append("/scattered");
  name.append(word_suffix<Word>());
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    std::mt19937_64 rng(9);
    std::vector<Word> words(sets * kCount * kStride), out(kOutputs * len);
    std::vector<u64> magnitude;
    for (auto& x : words)
      x = static_cast<Word>(rng());
    std::vector<std::vector<const Word*>> rows(sets);
    for (std::size_t s = 0; s < sets; ++s)
      for (std::size_t t = 0; t < kCount; ++t)
        rows[s].push_back(words.data() + (s * kCount + t) * kStride);
    std::vector<Word*> outs;
    for (std::size_t o = 0; o < kOutputs; ++o)
      outs.push_back(out.data() + o * len);
    std::vector<std::uint32_t> start{0}, positives, column;
    for (std::size_t o = 0; o < kOutputs; ++o) {
      positives.push_back(kTaps / 2);
      for (std::size_t sign = 0; sign < 2; ++sign) {
        std::vector<u64> m(kTaps / 2);
        for (auto& x : m)
          x = rng() % 25 == 0 ? 2 + rng() % 11 : 1;
        std::sort(m.begin(), m.end());
        for (u64 x : m) {
          column.push_back(static_cast<std::uint32_t>(rng() % kCount));
          magnitude.push_back(x);
        }
      }
      start.push_back(static_cast<std::uint32_t>(column.size()));
    }
    const TorusSparseMatrix matrix{start, positives, column, magnitude};
    std::size_t call = 0;
    for (auto _ : state) {
      torus_spmm(rows[call++ % sets], matrix, outs, len, isa);
      benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * column.size() * len);  // MACs
  });
}

}  // namespace

int main(int argc, char** argv) {
  for (const RingParams& r : kRings)
    register_ring(r);
  for (SimdIsa isa : available_simd()) {
    register_torus<u64>(288, 16, isa);
    register_torus<std::uint32_t>(288, 16, isa);
  }
  for (SimdIsa isa : available_simd()) {
    register_spmm<u64>(isa, false);
    register_spmm<u64>(isa, true);
    register_spmm<std::uint32_t>(isa, false);
    register_spmm<std::uint32_t>(isa, true);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("simd", std::string(to_string(default_simd())));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
