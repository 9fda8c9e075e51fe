// CUDA benchmarks of the ring layer, timed with CUDA events (manual time: the kernels only, not
// the launch from the host). Names follow the CPU suite with a /cuda suffix:
//   ntt_forward_batch1024/2187/cuda       1024 polynomials, one 62-bit prime
//   ntt_forward_batch1024x2/2187/cuda     1024 polynomials on each of two primes, one launch
//   ntt_inverse_batch1024x2/2187/cuda
//   product_batch1024/2187/cuda           1024 exact products mod 2^64 (lift, NTT, Montgomery
//                                         product, inverse, CRT), torus x binary
//   automorphism_ntt_batch1024/2187/cuda  sigma_2 as a slot permutation of 1024 polynomials
//   keyswitch_batch256/2187/cuda          256 automorphisms with key switch (default set of the
//                                         ring, gadget of gamma = 0), counter: switches per second
//   pack_fast_batch8/2187/cuda            8 packings of all N LWE samples (fast mode)
//   extract_batch8/2187/gamma0/cuda       extraction of 8 ciphertexts at gamma 0 (and gamma1)
//   ckks/<op>/<N>/L<l>[/dnum<d>]/cuda         the CKKS evaluator over the CUDA primitives with
//                                         resident ciphertexts and keys (keyswitch,
//                                         mult_relin_rescale, rotate, rotate_hoisted8), and
//   ckks/ntt_batch/<N>/<primes>/cuda      inverse and forward NTT of every limb: wall time of
//                                         one operation to a synchronised stream
//   ckks/<op>/.../cuda/copies             the same with host operands, staged to the device and
//                                         back by every primitive
//   lanes/refresh|mult|amortized_mult/<n>/<beta>/cuda  the lanes (lanes_bench.hpp), resident
//   ckks/bootstrap/4096/n12-boot-test/cuda  one full-slot bootstrap, keys, matrices and input
//                                         resident (the insecure test ring), precision counters
// Without a device every benchmark reports "no CUDA device".
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "safhire/ckks/bootstrap.hpp"
#if SAFHIRE_HAVE_LANES
#include "lanes_bench.hpp"
#endif
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/dft.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/cuda/ckks.hpp"
#include "safhire/cuda/device.hpp"
#include "safhire/cuda/device_buffer.hpp"
#include "safhire/cuda/kernels.hpp"
#include "safhire/cuda/keyswitch.hpp"
#include "safhire/cuda/trees.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/rlwe/keyswitch.hpp"

namespace {

using namespace safhire;
using ring::RingParams;
using u64 = std::uint64_t;

constexpr size_t kBatch = 1024;
const RingParams kRings[] = {RingParams(3, 7), RingParams(7, 4), RingParams(5, 5)};

// Times `body` (which enqueues on `stream`) with CUDA events, one iteration per state step.
template <class Body>
void timed(benchmark::State& state, cudaStream_t stream, Body&& body) {
  cudaEvent_t start, stop;
  cuda::check(cudaEventCreate(&start), "cudaEventCreate");
  cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  body();  // warm-up
  cuda::check(cudaStreamSynchronize(stream), "warm-up");
  for (auto _ : state) {
    cuda::check(cudaEventRecord(start, stream), "cudaEventRecord");
    body();
    cuda::check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    state.SetIterationTime(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

std::vector<u64> random_mod(size_t n, u64 q, u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> v(n);
  for (auto& x : v)
    x = q == 0 ? rng() : rng() % q;
  return v;
}

std::string name(const char* op, const RingParams& r) {
  std::string out(op);
  out.append("/").append(std::to_string(r.M())).append("/cuda");
  return out;
}

void ntt_benchmark(benchmark::State& state, const RingParams& r, int primes, bool forward) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cuda::Stream stream;
  std::vector<ring::NttPlan> plans;
  for (u64 q : core::primes_below(62, r.M(), primes))
    plans.push_back(ring::NttPlan::for_prime(r, q));
  std::vector<const ring::NttPlan*> ptrs;
  for (const auto& p : plans)
    ptrs.push_back(&p);
  const cuda::DeviceNttTables tables(ptrs, stream.get());
  const auto host = random_mod(primes * kBatch * r.N(), plans.back().modulus(), 1);
  cuda::DeviceBuffer<u64> data(std::span<const u64>(host), stream.get());
  timed(state, stream.get(), [&] {
    if (forward) {
      cuda::ntt_forward(tables, data.data(), kBatch, stream.get());
    } else {
      cuda::ntt_inverse(tables, data.data(), kBatch, ring::InverseScale::plain, stream.get());
    }
  });
  state.SetItemsProcessed(state.iterations() * primes * kBatch);  // polynomials
}

void product_benchmark(benchmark::State& state, const RingParams& r) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cuda::Stream stream;
  ring::ExactProduct cpu(r);
  const std::vector<const ring::NttPlan*> ptrs = {&cpu.plan(0), &cpu.plan(1)};
  const cuda::DeviceNttTables tables(ptrs, stream.get());
  const size_t n = r.N(), len = kBatch * n;
  const auto a = random_mod(len, 0, 2);
  auto s = random_mod(len, 2, 3);
  cuda::DeviceBuffer<u64> d_a(std::span<const u64>(a), stream.get());
  cuda::DeviceBuffer<u64> d_s(std::span<const u64>(s), stream.get());
  cuda::DeviceBuffer<u64> ra(2 * len, stream.get()), rs(2 * len, stream.get()),
      out(len, stream.get());
  timed(state, stream.get(), [&] {
    cuda::lift_torus(tables, d_a.data(), ra.data(), kBatch, stream.get());
    cuda::lift_torus(tables, d_s.data(), rs.data(), kBatch, stream.get());
    cuda::ntt_forward(tables, ra.data(), kBatch, stream.get());
    cuda::ntt_forward(tables, rs.data(), kBatch, stream.get());
    cuda::pointwise_montgomery(tables, ra.data(), rs.data(), ra.data(), kBatch, stream.get());
    cuda::ntt_inverse(tables, ra.data(), kBatch, ring::InverseScale::montgomery, stream.get());
    cuda::crt_lift(cpu.crt(), ra.data(), ra.data() + len, out.data(), len, stream.get());
  });
  state.SetItemsProcessed(state.iterations() * kBatch);  // products
}

void automorphism_benchmark(benchmark::State& state, const RingParams& r) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cuda::Stream stream;
  const auto plan = ring::NttPlan::for_prime(r, core::primes_below(62, r.M(), 1)[0]);
  const auto perm = plan.automorphism_permutation(2);
  const auto host = random_mod(kBatch * r.N(), plan.modulus(), 4);
  cuda::DeviceBuffer<std::uint32_t> d_perm(std::span<const std::uint32_t>(perm), stream.get());
  cuda::DeviceBuffer<u64> in(std::span<const u64>(host), stream.get()),
      out(host.size(), stream.get());
  timed(state, stream.get(), [&] {
    cuda::apply_permutation(d_perm.data(), in.data(), out.data(), r.N(), kBatch, stream.get());
  });
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void keyswitch_benchmark(benchmark::State& state, const char* set) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr size_t kCount = 256;
  const auto& p = rlwe::parameter_set(set);
  cuda::Stream stream;
  auto random = core::SeededRandom::from_counter(5);
  const rlwe::SecretKey key(p, random);
  const rlwe::KeySwitchKey ksk = rlwe::make_automorphism_key(key, 2, p.gadget(0), random);
  const cuda::DeviceKeySwitchKey device_key(ksk, stream.get());
  cuda::DeviceKeySwitcher switcher(p, p.gadget(0), stream.get());
  const auto host = random_mod(kCount * p.ring.N(), 0, 6);
  cuda::DeviceBuffer<u64> a(std::span<const u64>(host), stream.get());
  cuda::DeviceBuffer<u64> b(std::span<const u64>(host), stream.get());
  timed(state, stream.get(), [&] {
    switcher.automorphism(device_key, a.data(), b.data(), a.data(), b.data(), kCount, stream.get());
  });
  state.counters["keyswitches_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kCount), benchmark::Counter::kIsRate);
}

void tree_benchmark(benchmark::State& state, const char* set, bool pack, std::uint32_t gamma) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr size_t kCount = 8;
  const auto& p = rlwe::parameter_set(set);
  const size_t n = p.ring.N();
  cuda::Stream stream;
  auto random = core::SeededRandom::from_counter(7);
  const rlwe::SecretKey key(p, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, p.gadget(gamma), random);
  const cuda::DeviceGaloisKeys device_keys(keys, stream.get());
  cuda::DeviceTraceTrees trees(p, p.gadget(gamma), device_keys, stream.get());
  const auto masks = random_mod(kCount * n * (pack ? n : 1), 0, 8);
  const auto bodies = random_mod(kCount * n, 0, 9);
  cuda::DeviceBuffer<u64> dm(std::span<const u64>(masks), stream.get());
  cuda::DeviceBuffer<u64> db(std::span<const u64>(bodies), stream.get());
  const auto before = trees.key_switches();
  timed(state, stream.get(), [&] {
    auto out = pack ? trees.pack_lwes(dm.data(), db.data(), kCount, p.ring.a() - 1, stream.get())
                    : trees.split(dm.data(), db.data(), kCount, gamma, stream.get());
    benchmark::DoNotOptimize(out.a.data());
  });
  const double switches = static_cast<double>(trees.key_switches() - before);
  state.counters["keyswitches_per_s"] = benchmark::Counter(switches, benchmark::Counter::kIsRate);
}

// Keys and ciphertexts of one CKKS set, made once per process (key generation runs on the
// CPU and is not what is measured), on the host and resident on the device.
struct CkksState {
  ckks::CkksContext context;
  std::unique_ptr<ckks::RnsOps> cpu, gpu;
  ckks::SwitchingKey rlk, resident_rlk;
  ckks::GaloisKeys galois, resident_galois;
  ckks::Ciphertext x, resident_x;
  ckks::SecretKey sk;

  explicit CkksState(const char* set)
      : context(ckks::named_set(set)),
        cpu(ckks::make_cpu_rns_ops(context, std::max(1U, std::thread::hardware_concurrency()))),
        gpu(cuda::make_cuda_rns_ops(context)) {
    auto rng = core::SeededRandom::from_counter(1);
    ckks::KeyGenerator gen(context, *cpu, rng);
    sk = gen.secret_key();
    rlk = gen.relinearization_key(sk);
    galois = gen.galois_keys(sk, kHoisted, false);
    const ckks::Encoder encoder(context, *cpu);
    const std::vector<double> z(context.degree() / 2, 0.5);
    ckks::Encryptor enc(context, *cpu, rng);
    x = enc.encrypt(encoder.encode(z, std::exp2(context.params().log_scale), context.max_level()),
                    sk);
    resident_rlk = rlk;
    resident_galois = galois;
    resident_x = x;
    ckks::make_resident(*gpu, resident_rlk);
    ckks::make_resident(*gpu, resident_galois);
    ckks::make_resident(*gpu, resident_x);
    gpu->synchronize();
  }

  static constexpr int kSteps[] = {1, 2, 3, 4, 5, 6, 7, 8};
  static constexpr std::span<const int> kHoisted{kSteps};
};

enum class CkksOp { ntt_batch, keyswitch, mult_relin_rescale, rotate, rotate_hoisted8 };

const CkksState& ckks_state(const char* set) {
  static std::map<std::string, std::unique_ptr<CkksState>> cache;
  auto& slot = cache[set];
  if (!slot) slot = std::make_unique<CkksState>(set);
  return *slot;
}

// The CKKS evaluator over the CUDA primitives, on resident or host operands.
void ckks_benchmark(benchmark::State& state, const char* set, CkksOp op, bool resident) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const CkksState& c = ckks_state(set);
  const auto& x = resident ? c.resident_x : c.x;
  const auto& rlk = resident ? c.resident_rlk : c.rlk;
  const auto& galois = resident ? c.resident_galois : c.galois;
  const ckks::Evaluator ev(c.context, *c.gpu);
  ckks::RnsPoly poly = x.c[0];
  for (auto _ : state) {
    switch (op) {
      case CkksOp::ntt_batch:
        c.gpu->inverse(poly);
        c.gpu->forward(poly);
        break;
      case CkksOp::keyswitch:
        benchmark::DoNotOptimize(ev.key_switch(x.c[1], rlk));
        break;
      case CkksOp::mult_relin_rescale:
        benchmark::DoNotOptimize(ev.rescale(ev.multiply_relinearize(x, x, rlk)));
        break;
      case CkksOp::rotate:
        benchmark::DoNotOptimize(ev.rotate(x, 1, galois));
        break;
      case CkksOp::rotate_hoisted8:
        benchmark::DoNotOptimize(ev.rotate_hoisted(x, CkksState::kHoisted, galois));
        break;
    }
    c.gpu->synchronize();
  }
}

// One prime's transform of N words (bench_ckks's ckks/ntt_forward/<N>, and /q50): limb 0 of the
// set (60 bits) or limb 1 (50 bits), resident. A single transform leaves most of the device idle;
// ckks/ntt_batch is the figure that counts for throughput.
void ntt_one_prime_benchmark(benchmark::State& state, const char* set, ckks::ModulusIndex modulus,
                             bool inverse) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const CkksState& c = ckks_state(set);
  ckks::RnsPoly poly(c.context.degree(), {modulus}, !inverse);
  std::copy_n(c.x.c[0].limb(0).begin(), poly.n, poly.limb(0).begin());
  for (auto& w : poly.limb(0))
    w %= c.context.prime(modulus);
  c.gpu->make_resident(poly);
  for (auto _ : state) {
    if (inverse) {
      c.gpu->inverse(poly);
      poly.ntt = true;
    } else {
      c.gpu->forward(poly);
      poly.ntt = false;
    }
    c.gpu->synchronize();
  }
}

// bench_ckks's ckks/dft_stages: one merged group of four stages at the top level with its
// rescale (CoeffToSlot's first or SlotToCoeff's first), full slots, matrices and keys resident.
void dft_stages_benchmark(benchmark::State& state, const char* set, ckks::DftDirection direction,
                          std::uint32_t first, std::uint32_t last) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const CkksState& c = ckks_state(set);
  const ckks::Encoder encoder(c.context, *c.gpu);
  ckks::HomomorphicDft dft(encoder, direction, first, last, {last - first}, c.context.max_level());
  dft.make_resident(*c.gpu);
  auto rng = core::SeededRandom::from_counter(3);
  ckks::KeyGenerator gen(c.context, *c.cpu, rng);
  auto keys = gen.galois_keys(c.sk, dft.rotations(), false);
  ckks::make_resident(*c.gpu, keys);
  const ckks::Evaluator ev(c.context, *c.gpu);
  for (auto _ : state) {
    benchmark::DoNotOptimize(dft.apply(ev, c.resident_x, keys));
    c.gpu->synchronize();
  }
  state.counters["rotations"] = static_cast<double>(dft.rotations().size());
  state.counters["baby_steps"] = dft.groups()[0].baby_steps();
}

// One full-slot bootstrap on the device (the N = 2^12 test ring): keys made on the CPU, then
// everything resident; wall time to a synchronised stream, and each step's as counters.
struct BootSetup {
  ckks::CkksContext context{ckks::named_set("n12-boot-test"), /*allow_insecure=*/true};
  std::unique_ptr<ckks::RnsOps> cpu = ckks::make_cpu_rns_ops(context, 1);
  std::unique_ptr<ckks::RnsOps> gpu = cuda::make_cuda_rns_ops(context);
  ckks::Encoder encoder{context, *gpu};
  ckks::Evaluator evaluator{context, *gpu};
  ckks::Bootstrapper boot{encoder, evaluator, ckks::default_bootstrap_params(context.params())};
  ckks::SecretKey sk;
  ckks::BootstrapKeys keys;
  ckks::Ciphertext x;
  std::vector<std::complex<double>> z;
  BootSetup() {
    auto rng = core::SeededRandom::from_counter(2);
    ckks::KeyGenerator gen(context, *cpu, rng);
    sk = gen.secret_key();
    keys = boot.keys(gen, sk);
    std::mt19937_64 mt(3);
    std::uniform_real_distribution<double> u(-1, 1);
    z.resize(context.degree() / 2);
    for (auto& v : z)
      v = {u(mt), u(mt)};
    const ckks::Encoder host(context, *cpu);
    ckks::Encryptor enc(context, *cpu, rng);
    x = enc.encrypt(host.encode(z, std::exp2(45), 0), sk);
    boot.make_resident(*gpu);
    ckks::make_resident(*gpu, keys);
    ckks::make_resident(*gpu, x);
    gpu->synchronize();
  }
};

BootSetup& boot_setup() {
  static BootSetup s;
  return s;
}

void bootstrap_benchmark(benchmark::State& state) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  BootSetup& s = boot_setup();
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  double cts = 0, eval_mod = 0, stc = 0;
  ckks::Ciphertext out;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto parts = s.boot.coeff_to_slot(s.boot.mod_raise(s.x, s.keys), s.keys);
    s.gpu->synchronize();
    const auto t1 = Clock::now();
    for (auto& part : parts)
      part = s.boot.eval_mod(part, s.keys);
    s.gpu->synchronize();
    const auto t2 = Clock::now();
    out = s.boot.slot_to_coeff(parts, s.x.scale, s.keys);
    s.gpu->synchronize();
    const auto t3 = Clock::now();
    cts += ms(t0, t1);
    eval_mod += ms(t1, t2);
    stc += ms(t2, t3);
  }
  const ckks::Encoder host(s.context, *s.cpu);
  const auto got = host.decode(ckks::decrypt(s.context, *s.gpu, out, s.sk));
  double mean = 0, worst = 0;
  for (std::size_t i = 0; i < s.z.size(); ++i) {
    const double e = std::abs(got[i] - s.z[i]);
    mean += e / static_cast<double>(s.z.size());
    worst = std::max(worst, e);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["modraise_cts_ms"] = cts / iterations;
  state.counters["evalmod_ms"] = eval_mod / iterations;
  state.counters["stc_ms"] = stc / iterations;
  state.counters["mean_precision_bits"] = -std::log2(mean);
  state.counters["min_precision_bits"] = -std::log2(worst);
  state.counters["levels_left"] = out.level();
}

// EvalMod of one part alone (bench_ckks's ckks/eval_mod).
void eval_mod_benchmark(benchmark::State& state) {
  if (!cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  BootSetup& s = boot_setup();
  const auto parts = s.boot.coeff_to_slot(s.boot.mod_raise(s.x, s.keys), s.keys);
  ckks::Ciphertext out;
  for (auto _ : state) {
    out = s.boot.eval_mod(parts.front(), s.keys);
    s.gpu->synchronize();
  }
  state.counters["levels"] = parts.front().level() - out.level();
}

}  // namespace

int main(int argc, char** argv) {
#if SAFHIRE_HAVE_LANES
  // The lanes (lanes_bench.hpp) on the device, every operand resident.
  safhire::bench::register_lane_benchmarks(
      "/cuda", [](const ckks::CkksContext& c) { return safhire::cuda::make_cuda_rns_ops(c); },
      true);
  safhire::bench::register_field_benchmarks(
      "/cuda", [](const ckks::CkksContext& c) { return safhire::cuda::make_cuda_rns_ops(c); },
      true);
  safhire::bench::register_conversion_benchmarks(
      "/cuda", [](const ckks::CkksContext& c) { return safhire::cuda::make_cuda_rns_ops(c); },
      true);
#endif
  for (const char* set : {"n14-l7", "n16-l24"}) {
    const auto& p = ckks::named_set(set);
    const std::string n = std::to_string(p.degree()), l = std::to_string(p.max_level());
    const std::pair<CkksOp, std::string> ops[] = {
        {CkksOp::ntt_batch, "ckks/ntt_batch/" + n + "/" + std::to_string(p.q_bits.size())},
        {CkksOp::keyswitch, "ckks/keyswitch/" + n + "/L" + l + "/dnum" + std::to_string(p.dnum)},
        {CkksOp::mult_relin_rescale, "ckks/mult_relin_rescale/" + n + "/L" + l},
        {CkksOp::rotate, "ckks/rotate/" + n + "/L" + l},
        {CkksOp::rotate_hoisted8, "ckks/rotate_hoisted8/" + n + "/L" + l}};
    for (const auto& [op, base] : ops) {
      for (bool resident : {true, false}) {
        const std::string name = base + (resident ? "/cuda" : "/cuda/copies");
        benchmark::RegisterBenchmark(
            name.c_str(),
            [set, op, resident](benchmark::State& s) { ckks_benchmark(s, set, op, resident); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (const char* set : {"n14-l7", "n16-l24"}) {
    const auto& p = ckks::named_set(set);
    const std::string n = std::to_string(p.degree());
    if (p.log_n == 16) {
      for (const bool inverse : {false, true}) {
        for (const ckks::ModulusIndex modulus : {0U, 1U}) {
          // n16-l24's limb 0 is a 60-bit prime, limb 1 a 50-bit one (bench_ckks's /q50).
          const std::string name =
              std::string(inverse ? "ckks/ntt_inverse/" : "ckks/ntt_forward/") + n +
              (modulus == 0 ? "" : "/q50") + "/cuda";
          benchmark::RegisterBenchmark(name.c_str(),
                                       [set, modulus, inverse](benchmark::State& s) {
                                         ntt_one_prime_benchmark(s, set, modulus, inverse);
                                       })
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
    const std::uint32_t stages = p.log_n - 1;
    for (const auto direction :
         {ckks::DftDirection::coeff_to_slot, ckks::DftDirection::slot_to_coeff}) {
      const bool cts = direction == ckks::DftDirection::coeff_to_slot;
      const std::uint32_t first = cts ? stages - 4 : 0, last = first + 4;
      const std::string name = "ckks/dft_stages/" + n + "/" + std::to_string(first) + "-" +
                               std::to_string(last) + (cts ? "/cts" : "/stc") + "/cuda";
      benchmark::RegisterBenchmark(name.c_str(),
                                   [set, direction, first, last](benchmark::State& s) {
                                     dft_stages_benchmark(s, set, direction, first, last);
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark("ckks/bootstrap/4096/n12-boot-test/cuda", bootstrap_benchmark)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("ckks/eval_mod/4096/n12-boot-test/cuda", eval_mod_benchmark)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (const RingParams& r : kRings) {
    benchmark::RegisterBenchmark(name("ntt_forward_batch1024", r).c_str(),
                                 [r](benchmark::State& s) { ntt_benchmark(s, r, 1, true); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(name("ntt_forward_batch1024x2", r).c_str(),
                                 [r](benchmark::State& s) { ntt_benchmark(s, r, 2, true); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(name("ntt_inverse_batch1024x2", r).c_str(),
                                 [r](benchmark::State& s) { ntt_benchmark(s, r, 2, false); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(name("product_batch1024", r).c_str(),
                                 [r](benchmark::State& s) { product_benchmark(s, r); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(name("automorphism_ntt_batch1024", r).c_str(),
                                 [r](benchmark::State& s) { automorphism_benchmark(s, r); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (const char* set : {"default-b8", "default-b12", "default-b16"}) {
    const auto& p = rlwe::parameter_set(set);
    std::string bench_name = "keyswitch_batch256/";
    bench_name.append(std::to_string(p.ring.M())).append("/cuda");
    benchmark::RegisterBenchmark(bench_name.c_str(),
                                 [set](benchmark::State& s) { keyswitch_benchmark(s, set); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (const char* set : {"default-b8", "default-b12", "default-b16"}) {
    const std::string m = std::to_string(rlwe::parameter_set(set).ring.M());
    benchmark::RegisterBenchmark(("pack_fast_batch8/" + m + "/cuda").c_str(),
                                 [set](benchmark::State& s) { tree_benchmark(s, set, true, 0); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    for (std::uint32_t gamma : {0U, 1U}) {
      const std::string bench_name =
          "extract_batch8/" + m + "/gamma" + std::to_string(gamma) + "/cuda";
      benchmark::RegisterBenchmark(
          bench_name.c_str(),
          [set, gamma](benchmark::State& s) { tree_benchmark(s, set, false, gamma); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("cuda", cuda::describe_devices());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
