// CPU benchmarks of the CKKS layer, one thread. Names follow the scheme so that results
// compare across versions and against the CUDA counterparts (suffix /cuda in bench_cuda):
//   ckks/ntt_forward/<N>, ckks/ntt_inverse/<N>       one polynomial, one 60-bit prime
//   ckks/ntt_forward/<N>/<isa>                       the same on each available kernel set
//   ckks/ntt_forward/<N>/q50                          a 50-bit prime (IFMA kernels where present)
//   ckks/ntt_batch/<N>/<primes>                      forward NTT of every limb of an RNS poly
//   ckks/base_convert/<N>/digit0                     exact conversion of ModUp's first digit
//   ckks/keyswitch/<N>/L<l>/dnum<d>                  hybrid key switching of one polynomial
//   ckks/seeded_a/<N>/L<l>                           a seeded key's a_j, one digit, over Q_L P
//   core/aes_ctr/<impl>                              4096 AES-CTR blocks, each implementation
//   ckks/mult_relin_rescale/<N>/L<l>                 ct x ct, relinearize, rescale
//   ckks/rotate/<N>/L<l>, ckks/rotate_hoisted8/...   one rotation; eight from one ModUp
//   ckks/dft_stages/<N>/<first>-<last>/cts|stc      one group of four DFT stages (hoisted BSGS
//                                                    linear transform and rescale), full slots
//   ckks/encode/<N>, ckks/decode/<N>                 full slots (decode at level 1)
//   ckks/eval_mod/<N>/<set>                          EvalMod of one part (the test ring)
//   ckks/bootstrap/<N>/<set>                         full-slot bootstrapping, counters per step,
//                                                    precision (bits) and levels left
//   ckks/decrypt_decode/<N>                          decryption and decoding at level 1
// The CKKS operations run on the named sets n13-l3 .. n16-l24 at their top level.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/dft.hpp"
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
    for (int bits : {60, 50})
      for (bool inverse : {false, true}) {
        const u64 q = safhire::core::primes_below(bits, ring.M(), 1)[0];
        for (SimdIsa isa : safhire::ring::available_simd()) {
          const bool best = isa == safhire::ring::default_simd();
          std::string name = inverse ? "ckks/ntt_inverse/" : "ckks/ntt_forward/";
          name += std::to_string(ring.N());
          if (bits != 60) name += "/q50";
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

using namespace safhire::ckks;

// Keys and ciphertexts of one set, built once (key generation is not what is measured).
struct State {
  CkksContext context;
  std::unique_ptr<RnsOps> ops;
  Encoder encoder;
  Evaluator evaluator;
  SecretKey sk;
  SwitchingKey rlk;
  GaloisKeys galois;
  Ciphertext x, y;
  std::vector<std::complex<double>> values;

  explicit State(const std::string& name)
      : context(named_set(name)),
        ops(make_cpu_rns_ops(context, 1)),
        encoder(context, *ops),
        evaluator(context, *ops) {
    auto rng = safhire::core::SeededRandom::from_counter(1);
    KeyGenerator gen(context, *ops, rng);
    sk = gen.secret_key();
    rlk = gen.relinearization_key(sk);
    const std::vector<int> steps{1, 2, 3, 4, 5, 6, 7, 8};
    galois = gen.galois_keys(sk, steps, false);
    values.resize(context.degree() / 2);
    std::mt19937_64 mt(2);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : values)
      v = {u(mt), u(mt)};
    Encryptor enc(context, *ops, rng);
    const double scale = std::exp2(context.params().log_scale);
    x = enc.encrypt(encoder.encode(values, scale, context.max_level()), sk);
    y = enc.encrypt(encoder.encode(values, scale, context.max_level()), sk);
  }
};

State& state(const std::string& name) {
  static std::map<std::string, std::unique_ptr<State>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<State>(name);
  return *slot;
}

// "a/b/c" from its parts (appended one by one: GCC 12's -Wrestrict misfires on chains of +).
std::string path(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) {
    if (!out.empty()) out += '/';
    out.append(part);
  }
  return out;
}

template <class Fn>
void add(const std::string& name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();
}

void register_ckks() {
  for (const char* set : {"n13-l3", "n14-l7", "n15-l14", "n16-l24"}) {
    const CkksParams& p = named_set(set);
    const std::string n = std::to_string(p.degree());
    std::string l = "L";
    l += std::to_string(p.max_level());
    std::string dnum = "dnum";
    dnum += std::to_string(p.dnum);
    const std::string primes = std::to_string(p.q_bits.size());
    const std::string name(set);
    add(path({"ckks/ntt_batch", n, primes}), [name](benchmark::State& st) {
      auto& s = state(name);
      RnsPoly poly = s.x.c[0];
      for (auto _ : st) {
        s.ops->inverse(poly);
        s.ops->forward(poly);
      }
      st.counters["transforms"] = 2;
    });
    // ModUp's conversion of the first digit (alpha primes) to the other primes of Q_L P.
    add(path({"ckks/base_convert", n, "digit0"}), [set](benchmark::State& st) {
      const CkksContext context(named_set(set));
      const auto from = context.digit_moduli(context.max_level(), 0);
      std::vector<ModulusIndex> to;
      for (ModulusIndex m = static_cast<ModulusIndex>(from.size()); m < context.primes().size();
           ++m)
        to.push_back(m);
      const BaseConverter converter(context, from, to);
      RnsPoly in(context.degree(), from, false), out(context.degree(), to, false);
      std::mt19937_64 mt(5);
      for (std::size_t k = 0; k < in.limbs(); ++k) {
        for (auto& x : in.limb(k))
          x = mt() % context.prime(in.moduli[k]);
      }
      const auto ops = make_cpu_rns_ops(context, 1);
      for (auto _ : st)
        ops->convert(converter, in, out, Conversion::exact);
      st.counters["products_per_s"] =
          benchmark::Counter(static_cast<double>(from.size() * to.size()) * context.degree(),
                             benchmark::Counter::kIsIterationInvariantRate);
    });
    add(path({"ckks/keyswitch", n, l, dnum}), [name](benchmark::State& st) {
      auto& s = state(name);
      for (auto _ : st)
        benchmark::DoNotOptimize(s.evaluator.key_switch(s.x.c[1], s.rlk));
    });
    // A seeded key's a_j for one digit over Q_L P (AES-CTR and rejection sampling), in bytes
    // of key it saves storing and reading.
    add(path({"ckks/seeded_a", n, l}), [set](benchmark::State& st) {
      const CkksContext context(named_set(set));
      const auto ops = make_cpu_rns_ops(context, 1);
      const auto moduli = context.qp_moduli(context.max_level());
      safhire::core::AesCtr::Key seed{};
      seed[3] = 1;
      RnsPoly a;
      for (auto _ : st)
        seeded_a(*ops, seed, 0, moduli, a);
      st.counters["bytes_per_s"] =
          benchmark::Counter(static_cast<double>(moduli.size() * context.degree() * 8),
                             benchmark::Counter::kIsIterationInvariantRate);
    });
    add(path({"ckks/mult_relin_rescale", n, l}), [name](benchmark::State& st) {
      auto& s = state(name);
      for (auto _ : st)
        benchmark::DoNotOptimize(
            s.evaluator.rescale(s.evaluator.multiply_relinearize(s.x, s.y, s.rlk)));
    });
    add(path({"ckks/rotate", n, l}), [name](benchmark::State& st) {
      auto& s = state(name);
      for (auto _ : st)
        benchmark::DoNotOptimize(s.evaluator.rotate(s.x, 1, s.galois));
    });
    add(path({"ckks/rotate_hoisted8", n, l}), [name](benchmark::State& st) {
      auto& s = state(name);
      const std::vector<int> steps{1, 2, 3, 4, 5, 6, 7, 8};
      for (auto _ : st)
        benchmark::DoNotOptimize(s.evaluator.rotate_hoisted(s.x, steps, s.galois));
    });
    // One merged group of four DFT stages, as bootstrapping runs them: CoeffToSlot's first
    // (the last four stages) and SlotToCoeff's first (stages 0-3), full slots, top level, with
    // the rescale.
    if (p.log_n >= 14) {
      const std::uint32_t stages = p.log_n - 1;
      for (const auto direction : {DftDirection::coeff_to_slot, DftDirection::slot_to_coeff}) {
        const bool cts = direction == DftDirection::coeff_to_slot;
        const std::uint32_t first = cts ? stages - 4 : 0, last = first + 4;
        std::string range = std::to_string(first);
        range += '-';
        range += std::to_string(last);
        add(path({"ckks/dft_stages", n, range, cts ? "cts" : "stc"}),
            [name, direction, first, last](benchmark::State& st) {
              auto& s = state(name);
              const HomomorphicDft dft(s.encoder, direction, first, last, {last - first},
                                       s.context.max_level());
              auto rng = safhire::core::SeededRandom::from_counter(3);
              KeyGenerator gen(s.context, *s.ops, rng);
              const auto keys = gen.galois_keys(s.sk, dft.rotations(), false);
              for (auto _ : st)
                benchmark::DoNotOptimize(dft.apply(s.evaluator, s.x, keys));
              st.counters["rotations"] = static_cast<double>(dft.rotations().size());
              st.counters["baby_steps"] = dft.groups()[0].baby_steps();
            });
      }
    }
    add(path({"ckks/encode", n}), [name](benchmark::State& st) {
      auto& s = state(name);
      const double scale = std::exp2(s.context.params().log_scale);
      for (auto _ : st)
        benchmark::DoNotOptimize(s.encoder.encode(s.values, scale, s.context.max_level()));
    });
    add(path({"ckks/decode", n}), [name](benchmark::State& st) {
      auto& s = state(name);
      const double scale = std::exp2(s.context.params().log_scale);
      const Plaintext plain = s.encoder.encode(s.values, scale, 1);
      for (auto _ : st)
        benchmark::DoNotOptimize(s.encoder.decode(plain));
    });
    add(path({"ckks/decrypt_decode", n}), [name](benchmark::State& st) {
      auto& s = state(name);
      const Ciphertext low = s.evaluator.drop_to_level(s.x, 1);
      for (auto _ : st)
        benchmark::DoNotOptimize(s.encoder.decode(decrypt(s.context, *s.ops, low, s.sk)));
    });
  }
}

}  // namespace

namespace {

// The insecure test ring's bootstrapping state, made once: keys, and an input of random full
// slots at level 0.
struct BootState {
  CkksContext context{named_set("n12-boot-test"), /*allow_insecure=*/true};
  std::unique_ptr<RnsOps> ops = make_cpu_rns_ops(context, 1);
  Encoder encoder{context, *ops};
  Evaluator ev{context, *ops};
  Bootstrapper boot{encoder, ev, default_bootstrap_params(context.params())};
  SecretKey sk;
  BootstrapKeys keys;
  std::vector<std::complex<double>> z;
  Ciphertext x;
  BootState() {
    auto rng = safhire::core::SeededRandom::from_counter(4);
    KeyGenerator gen(context, *ops, rng);
    sk = gen.secret_key();
    keys = boot.keys(gen, sk);
    z.resize(context.degree() / 2);
    std::mt19937_64 mt(5);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : z)
      v = {u(mt), u(mt)};
    Encryptor enc(context, *ops, rng);
    x = enc.encrypt(encoder.encode(z, std::exp2(45), 0), sk);
  }
};

BootState& boot_state() {
  static BootState s;
  return s;
}

}  // namespace

// Bootstrapping of full slots on the insecure test ring (N = 2^16 runs through the CLI: about a
// minute of setup): the whole of it per iteration, each step's time and the precision as
// counters; and EvalMod of one part alone.
void register_bootstrap() {
  const CkksParams& p = named_set("n12-boot-test");
  add(path({"ckks/bootstrap", std::to_string(p.degree()), p.name}), [](benchmark::State& st) {
    auto& s = boot_state();
    using Clock = std::chrono::steady_clock;
    double cts = 0, eval_mod = 0, stc = 0;
    Ciphertext out;
    for (auto _ : st) {
      const auto t0 = Clock::now();
      auto parts = s.boot.coeff_to_slot(s.boot.mod_raise(s.x, s.keys), s.keys);
      const auto t1 = Clock::now();
      for (auto& part : parts)
        part = s.boot.eval_mod(part, s.keys);
      const auto t2 = Clock::now();
      out = s.boot.slot_to_coeff(parts, s.x.scale, s.keys);
      const auto t3 = Clock::now();
      cts += std::chrono::duration<double, std::milli>(t1 - t0).count();
      eval_mod += std::chrono::duration<double, std::milli>(t2 - t1).count();
      stc += std::chrono::duration<double, std::milli>(t3 - t2).count();
    }
    const auto got = s.encoder.decode(decrypt(s.context, *s.ops, out, s.sk));
    double worst = 0, mean = 0;
    for (std::size_t i = 0; i < s.z.size(); ++i) {
      const double e = std::abs(got[i] - s.z[i]);
      worst = std::max(worst, e);
      mean += e / static_cast<double>(s.z.size());
    }
    const auto iterations = static_cast<double>(st.iterations());
    st.counters["modraise_cts_ms"] = cts / iterations;
    st.counters["evalmod_ms"] = eval_mod / iterations;
    st.counters["stc_ms"] = stc / iterations;
    st.counters["mean_precision_bits"] = -std::log2(mean);
    st.counters["min_precision_bits"] = -std::log2(worst);
    st.counters["levels_left"] = out.level();
  });
  add(path({"ckks/eval_mod", std::to_string(p.degree()), p.name}), [](benchmark::State& st) {
    auto& s = boot_state();
    const auto parts = s.boot.coeff_to_slot(s.boot.mod_raise(s.x, s.keys), s.keys);
    Ciphertext out;
    for (auto _ : st)
      out = s.boot.eval_mod(parts.front(), s.keys);
    st.counters["levels"] = parts.front().level() - out.level();
  });
}

// The AES-128-CTR stream alone on each implementation the processor has (seeded keys' PRF).
void register_aes() {
  for (safhire::core::AesImpl impl : safhire::core::available_aes()) {
    const std::string name = std::string("core/aes_ctr/") + safhire::core::to_string(impl);
    benchmark::RegisterBenchmark(name.c_str(), [impl](benchmark::State& st) {
      safhire::core::AesCtr::Key key{};
      key[0] = 1;
      const safhire::core::AesCtr prf(key, impl);
      std::vector<std::uint64_t> words(2 * 4096);
      std::uint64_t counter = 0;
      for (auto _ : st) {
        prf.generate(7, counter, 4096, words.data());
        counter += 4096;
        benchmark::DoNotOptimize(words.data());
      }
      st.counters["bytes_per_s"] =
          benchmark::Counter(16.0 * 4096, benchmark::Counter::kIsIterationInvariantRate);
    })->Unit(benchmark::kMicrosecond);
  }
}

int main(int argc, char** argv) {
  register_ntt();
  register_aes();
  register_ckks();
  register_bootstrap();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
