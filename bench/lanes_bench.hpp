// The lanes' benchmarks, for one backend (bench_lanes.cpp: the CPU on one thread; bench_cuda.cpp:
// the CUDA backend, every operand resident):
//   lanes/refresh/<n>/<beta>            one refresh of a product, counters per step (ms), the
//                                       digits refreshed and the levels left
//   lanes/refresh_plain/<n>/<beta>      the plain refresh (C, the reduction, C^-1: no cleaning)
//   lanes/refresh_unreduced/<n>/<beta>  the refresh without the reduction mod t (EvalMod on the
//                                       digits as they are); skipped with the refusal where the
//                                       product's digits are beyond what it keeps exact
//   lanes/mult/<n>/<beta>               one ct x ct lane product at the rest level
//   lanes/amortized_mult/<n>/<beta>     the products a refresh makes room for (one, or k on the
//                                       spaces named .../k<k>, each by a fresh ciphertext) and
//                                       that refresh, per integer product (counter
//                                       s_per_integer_product: the whole over k N/n products)
// at N = 2^16 (128-bit), on n = 8, 64, 512, 4096, 16384 with beta = 2 (the refresh's flatness in
// n), on the spaces of about 4096 bits: 2^4096 + 1 in 16, 32 and 64 lanes, 256^512 + 1 in 128
// lanes, and 64^4096 + 1 (24,577 bits), and on 2^4096 + 1 in 16 and 32 lanes refreshed every two
// products (k2). Every result is checked against GMP once per benchmark (a wrong one is a
// benchmark error). Steady state: each space runs one refresh untimed before its benchmarks (the
// first refresh of a process also faults its working memory in; `safhire lanes refresh` reports
// it apart as first_refresh_ms). One space's keys (up to 4 GB) are alive at a time.
//
// The field spaces (fields.hpp; lane_space.hpp: named_field_spaces), by name:
//   fields/refresh/<space>          one refresh of a product of field elements
//   fields/amortized_mult/<space>   one product and the refresh after it, per field product
//                                   (counter s_per_field_product: the whole over the ciphertext's
//                                   elements)
// each result checked against the test-free reference: the elements multiplied modulo
// Y^d - gamma_i and p with GMP.
//
// The digit conversions (convert.hpp), beta = 2, n = 64 .. 4096, on spaces with L's levels twice
// at rest (products_per_refresh = 2 groups):
//   lanes/to_slots/<n>/2   B -> A: L^-1 and the real and imaginary split
//   lanes/to_lanes/<n>/2   A -> B: the recombination and L
// the integers checked after the round trip.
//
// The operations on canonical digits (digits.hpp), on the same spaces, the CPU only (their CUDA
// run is still to come):
//   lanes/less_than/<n>/2     [A < B] lane by lane, from canonical digits at the lowest level
//                             that every operation here takes
//   lanes/equal/<n>/2         [A = B]
//   lanes/digit/<n>/2         digit n/2 + 1 of every lane
//   lanes/from_digits/<n>/2   canonical digits to form B (LaneConverter::from_digits)
//   lanes/to_digits/<n>/2     form B as a refresh leaves it (digits up to 49) to canonical
//                             digits (DigitEvaluator::to_digits), every digit checked
// every result checked against GMP (a wrong one is a benchmark error); counter digits: the N
// digits one call acts on.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/lanes/lanes.hpp"

namespace safhire::bench {

using MakeLaneOps = std::function<std::unique_ptr<ckks::RnsOps>(const ckks::CkksContext&)>;

// The benchmark space of one kind in use: rebuilt (the previous one freed first) when a benchmark
// of another lane space runs, so that one space's keys are alive at a time.
template <class Space>
struct SpaceCache {
  std::unique_ptr<Space> current;
  std::string name;
  template <class... Args>
  Space& get(const lanes::LaneSpace& space, const Args&... args) {
    if (name != space.name) {
      current.reset();
      current = std::make_unique<Space>(space, args...);
      name = space.name;
    }
    return *current;
  }
};

// A space's context, backend, refresh plan and keys, and two operands a and b with their
// product: what both kinds of benchmark (integers, fields) run on.
struct LaneBenchBase {
  lanes::LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  lanes::LaneRefresher refresher;
  core::SeededRandom random;
  ckks::SecretKey sk;
  lanes::LaneKeys keys;
  lanes::LaneCiphertext ca, cb, product;

  LaneBenchBase(const lanes::LaneSpace& space, const MakeLaneOps& make, std::uint64_t seed)
      : context(space, true),
        ops(make(context.ckks())),
        refresher(context, *ops, lanes::RefreshParams{.plan_plain = true}),
        random(core::SeededRandom::from_counter(seed)) {
    ckks::KeyGenerator generator(context.ckks(), *ops, random);
    sk = generator.secret_key();
    keys = refresher.keys(generator, sk);
  }

  // Encrypts the operands' digits, makes everything resident if asked, and multiplies them; then
  // one refresh, the warm-up (see the top).
  void start(const lanes::LaneDigits& a, const lanes::LaneDigits& b, bool resident) {
    const lanes::LaneEncryptor encryptor(context, *ops, random);
    ca = encryptor.encrypt_digits(a, sk);
    cb = encryptor.encrypt_digits(b, sk);
    if (resident) {
      refresher.make_resident(*ops);
      ckks::make_resident(*ops, keys);
      ckks::make_resident(*ops, ca.ct);
      ckks::make_resident(*ops, cb.ct);
    }
    product = lanes::LaneEvaluator(context, *ops).multiply(ca, cb, keys.relinearization);
    refresher.refresh(product, keys);
    ops->synchronize();
  }
};

struct LaneBenchSpace : LaneBenchBase {
  std::vector<mpz_class> a, b;

  LaneBenchSpace(const lanes::LaneSpace& space, const MakeLaneOps& make, bool resident)
      : LaneBenchBase(space, make, 0x1a4eb) {
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(3);
    a.resize(space.lanes());
    b.resize(space.lanes());
    for (auto& x : a)
      x = gmp.get_z_range(context.modulus());
    for (auto& x : b)
      x = gmp.get_z_range(context.modulus());
    const lanes::LaneEncoder encoder(context, *ops);
    start(encoder.digits(a), encoder.digits(b), resident);
  }

  // True when x decrypts to a b^k lane by lane.
  bool is_product(const lanes::LaneCiphertext& x, unsigned k = 1) const {
    const auto d = lanes::LaneDecryptor(context, *ops, sk).decrypt(x);
    for (std::size_t r = 0; r < a.size(); ++r) {
      mpz_class want = a[r];
      for (unsigned i = 0; i < k; ++i)
        want = want * b[r] % context.modulus();
      if (d.integers[r] != want) return false;
    }
    return true;
  }
};

// The spaces benchmarked: by (n, beta), and the k2 ones by (n, beta, k).
inline std::vector<lanes::LaneSpace> lane_bench_spaces() {
  std::vector<lanes::LaneSpace> spaces;
  auto add = [&](std::uint32_t n, std::uint64_t beta, const lanes::LaneSpaceOptions& options) {
    std::string name = "lanes-n16-";
    name += std::to_string(n);
    name += "-b";
    name += std::to_string(beta);
    if (options.products_per_refresh > 1)
      name += "-k" + std::to_string(options.products_per_refresh);
    auto s = lanes::make_lane_space(name, 16, n, beta, options);
    try {
      s.validate();
      spaces.push_back(std::move(s));
    } catch (const Error&) {
      // Not buildable at 128 bits (or beyond the decoder's range): left out.
    }
  };
  for (const std::uint32_t n : {8U, 64U, 512U, 4096U, 16384U})
    add(n, 2, {});
  add(2048, 4, {});
  add(1024, 16, {});
  lanes::LaneSpaceOptions wide;  // lanes-n16-4096-b64's: 50-bit cleaning primes
  wide.clean_bits = 50;
  wide.cts_bits = 52;
  add(512, 256, wide);
  add(4096, 64, wide);
  lanes::LaneSpaceOptions two;  // a refresh every two products
  two.products_per_refresh = 2;
  add(4096, 2, two);
  add(2048, 4, two);
  return spaces;
}

struct FieldBenchSpace : LaneBenchBase {
  lanes::FieldSpace field;
  std::vector<lanes::FieldElement> a, b;

  FieldBenchSpace(const lanes::LaneSpace& space, const MakeLaneOps& make, bool resident)
      : LaneBenchBase(space, make, 0xf1e1d), field(space) {
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(5);
    for (auto* v : {&a, &b}) {
      v->assign(field.elements(), lanes::FieldElement(field.degree()));
      for (auto& e : *v) {
        for (auto& c : e)
          c = gmp.get_z_range(field.prime());
      }
    }
    start(field.digits(a, space.digits), field.digits(b, space.digits), resident);
  }

  // True when x decrypts to a b element by element (in F_p[Y]/(Y^d - gamma_i)).
  bool is_product(const lanes::LaneCiphertext& x) const {
    const auto got = field.elements_of(lanes::LaneDecryptor(context, *ops, sk).decrypt(x).digits);
    const mpz_class& p = field.prime();
    const std::size_t d = field.degree();
    for (std::size_t e = 0; e < got.size(); ++e) {
      const mpz_class& gamma = field.gammas()[e % field.per_lane()];
      std::vector<mpz_class> want(d, 0);
      for (std::size_t i = 0; i < d; ++i) {
        for (std::size_t j = 0; j < d; ++j)
          want[(i + j) % d] += a[e][i] * b[e][j] * (i + j < d ? mpz_class(1) : gamma);
      }
      for (std::size_t i = 0; i < d; ++i) {
        if (got[e][i] != want[i] % p) return false;
      }
    }
    return true;
  }
};

inline void register_field_benchmarks(const std::string& suffix, MakeLaneOps make, bool resident) {
  static SpaceCache<FieldBenchSpace> cache;
  for (const lanes::LaneSpace& space : lanes::named_field_spaces()) {
    auto get = [space, make, resident]() -> FieldBenchSpace& {
      return cache.get(space, make, resident);
    };
    const std::string tail = "/" + space.name + suffix;
    benchmark::RegisterBenchmark(("fields/refresh" + tail).c_str(),
                                 [get](benchmark::State& state) {
                                   FieldBenchSpace& s = get();
                                   lanes::LaneCiphertext out;
                                   for (auto _ : state) {
                                     out = s.refresher.refresh(s.product, s.keys);
                                     s.ops->synchronize();
                                   }
                                   if (!s.is_product(out))
                                     state.SkipWithError("the refresh gave a wrong element");
                                   state.counters["elements"] = s.field.elements();
                                   state.counters["prime_bits"] = static_cast<double>(
                                       mpz_sizeinbase(s.field.prime().get_mpz_t(), 2));
                                   state.counters["extension_degree"] = s.field.degree();
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(2);
    benchmark::RegisterBenchmark(
        ("fields/amortized_mult" + tail).c_str(),
        [get](benchmark::State& state) {
          FieldBenchSpace& s = get();
          const lanes::LaneEvaluator ev(s.context, *s.ops);
          lanes::LaneCiphertext out;
          for (auto _ : state) {
            out = s.refresher.refresh(ev.multiply(s.ca, s.cb, s.keys.relinearization), s.keys);
            s.ops->synchronize();
          }
          if (!s.is_product(out)) state.SkipWithError("the chain gave a wrong element");
          const double elements = s.field.elements();
          state.counters["elements"] = elements;
          state.counters["s_per_field_product"] =
              benchmark::Counter(static_cast<double>(state.iterations()) * elements,
                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
        })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(2);
  }
}

struct ConvertBenchSpace {
  lanes::LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  lanes::LaneConverter converter;
  core::SeededRandom random;
  ckks::SecretKey sk;
  ckks::GaloisKeys keys;
  std::vector<mpz_class> a;
  lanes::LaneCiphertext x;
  lanes::DigitSlots slots;

  ConvertBenchSpace(const lanes::LaneSpace& space, const MakeLaneOps& make, bool resident)
      : context(space, true),
        ops(make(context.ckks())),
        converter(context, *ops),
        random(core::SeededRandom::from_counter(0xc0de)) {
    ckks::KeyGenerator generator(context.ckks(), *ops, random);
    sk = generator.secret_key();
    converter.add_keys(generator, sk, keys);
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(7);
    a.resize(space.lanes());
    for (auto& v : a)
      v = gmp.get_z_range(context.modulus());
    x = lanes::LaneEncryptor(context, *ops, random).encrypt(a, sk);
    if (resident) {
      converter.make_resident(*ops);
      ckks::make_resident(*ops, keys);
      ckks::make_resident(*ops, x.ct);
    }
    slots = converter.to_slots(x, keys);  // the warm-up
    ops->synchronize();
  }

  bool round_trips(const lanes::LaneCiphertext& y) const {
    return lanes::LaneDecryptor(context, *ops, sk).decrypt(y).integers == a;
  }
};

inline void register_conversion_benchmarks(const std::string& suffix, MakeLaneOps make,
                                           bool resident) {
  static SpaceCache<ConvertBenchSpace> cache;
  for (const std::uint32_t n : {64U, 128U, 256U, 512U, 1024U, 2048U, 4096U}) {
    const lanes::LaneSpace space = lanes::conversion_space(16, n, 2);
    auto get = [space, make, resident]() -> ConvertBenchSpace& {
      return cache.get(space, make, resident);
    };
    std::string tail = "/";
    tail += std::to_string(n);
    tail += "/2";
    tail += suffix;
    benchmark::RegisterBenchmark(("lanes/to_slots" + tail).c_str(),
                                 [get](benchmark::State& state) {
                                   ConvertBenchSpace& s = get();
                                   for (auto _ : state) {
                                     s.slots = s.converter.to_slots(s.x, s.keys);
                                     s.ops->synchronize();
                                   }
                                   if (!s.round_trips(s.converter.to_lanes(s.slots, s.keys)))
                                     state.SkipWithError("the round trip gave a wrong integer");
                                   state.counters["digits"] = s.context.space().degree();
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("lanes/to_lanes" + tail).c_str(),
                                 [get](benchmark::State& state) {
                                   ConvertBenchSpace& s = get();
                                   lanes::LaneCiphertext out;
                                   for (auto _ : state) {
                                     out = s.converter.to_lanes(s.slots, s.keys);
                                     s.ops->synchronize();
                                   }
                                   if (!s.round_trips(out))
                                     state.SkipWithError("the round trip gave a wrong integer");
                                   state.counters["digits"] = s.context.space().degree();
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

inline void register_lane_benchmarks(const std::string& suffix, MakeLaneOps make, bool resident) {
  // The space in use, rebuilt when a benchmark of another one runs.
  static SpaceCache<LaneBenchSpace> cache;
  for (const lanes::LaneSpace& space : lane_bench_spaces()) {
    auto get = [space, make, resident]() -> LaneBenchSpace& {
      return cache.get(space, make, resident);
    };
    const unsigned k = space.products_per_refresh;
    std::string tail = "/";
    tail += std::to_string(space.lane_degree);
    tail += '/';
    tail += std::to_string(space.base);
    if (k > 1) tail += "/k" + std::to_string(k);
    tail += suffix;
    // The refreshes, one a mode (the k2 spaces' refresh is the same but for its chain's level).
    const std::pair<const char*, lanes::RefreshMode> modes[] = {
        {"lanes/refresh", lanes::RefreshMode::clean},
        {"lanes/refresh_plain", lanes::RefreshMode::plain},
        {"lanes/refresh_unreduced", lanes::RefreshMode::unreduced}};
    for (const auto& [family, mode] : modes) {
      if (k > 1) break;
      benchmark::RegisterBenchmark(
          (family + tail).c_str(),
          [get, mode = mode](benchmark::State& state) {
            LaneBenchSpace& s = get();
            std::map<std::string, double> step_ms;
            lanes::LaneCiphertext out;
            try {
              s.refresher.check_input(s.product, mode);
            } catch (const Error& e) {
              state.SkipWithError(e.what());
              for (auto _ : state) {
              }
              return;
            }
            for (auto _ : state) {
              auto last = std::chrono::steady_clock::now();
              out = s.refresher.refresh(s.product, s.keys, mode, [&](const char* name) {
                s.ops->synchronize();
                const auto now = std::chrono::steady_clock::now();
                step_ms[name] += std::chrono::duration<double, std::milli>(now - last).count();
                last = now;
              });
            }
            if (!s.is_product(out)) state.SkipWithError("the refresh gave a wrong integer");
            for (const auto& [name, ms] : step_ms)
              state.counters[name + " ms"] = ms / static_cast<double>(state.iterations());
            state.counters["digits"] = s.context.space().degree();
            state.counters["lanes"] = s.context.space().lanes();
            state.counters["levels_left"] = out.level();
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(3);
    }
    if (k == 1) {
      benchmark::RegisterBenchmark(("lanes/mult" + tail).c_str(),
                                   [get](benchmark::State& state) {
                                     LaneBenchSpace& s = get();
                                     const lanes::LaneEvaluator ev(s.context, *s.ops);
                                     lanes::LaneCiphertext out;
                                     for (auto _ : state) {
                                       out = ev.multiply(s.ca, s.cb, s.keys.relinearization);
                                       s.ops->synchronize();
                                     }
                                     if (!s.is_product(out))
                                       state.SkipWithError("the product gave a wrong integer");
                                     state.counters["lanes"] = s.context.space().lanes();
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(("lanes/amortized_mult" + tail).c_str(),
                                 [get, k](benchmark::State& state) {
                                   LaneBenchSpace& s = get();
                                   const lanes::LaneEvaluator ev(s.context, *s.ops);
                                   lanes::LaneCiphertext out;
                                   for (auto _ : state) {
                                     // k products by a fresh ciphertext from the rest level, and
                                     // the refresh that makes room for the next k.
                                     out = s.ca;
                                     for (unsigned i = 0; i < k; ++i)
                                       out = ev.multiply(out, s.cb, s.keys.relinearization);
                                     out = s.refresher.refresh(out, s.keys);
                                     s.ops->synchronize();
                                   }
                                   if (!s.is_product(out, k))
                                     state.SkipWithError("the chain gave a wrong integer");
                                   const double lanes = s.context.space().lanes();
                                   state.counters["lanes"] = lanes;
                                   state.counters["products_per_refresh"] = k;
                                   // Seconds of wall time per integer product (the rate inverted).
                                   state.counters["s_per_integer_product"] = benchmark::Counter(
                                       static_cast<double>(state.iterations()) * lanes * k,
                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(2);
  }
}

struct DigitBenchSpace {
  lanes::LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  lanes::LaneConverter converter;
  lanes::DigitEvaluator evaluator;
  // to_digits': the refresh (made on first use: its keys take most of the memory).
  std::unique_ptr<lanes::LaneRefresher> refresher;
  std::unique_ptr<lanes::LaneConverter> digit_converter;
  lanes::LaneKeys refresh_keys;
  lanes::LaneCiphertext refreshed;  // a's integers as a refresh leaves them
  core::SeededRandom random;
  ckks::SecretKey sk;
  ckks::SwitchingKey rlk;
  ckks::GaloisKeys keys, digit_keys;  // the converter's at its levels, the digits' at the top
  std::vector<mpz_class> a, b;
  lanes::DigitSlots x, y;

  DigitBenchSpace(const lanes::LaneSpace& space, const MakeLaneOps& make)
      : context(space, true),
        ops(make(context.ckks())),
        converter(context, *ops),
        evaluator(context, *ops),
        random(core::SeededRandom::from_counter(0xd161)) {
    ckks::KeyGenerator generator(context.ckks(), *ops, random);
    sk = generator.secret_key();
    rlk = generator.relinearization_key(sk);
    converter.add_keys(generator, sk, keys);
    evaluator.add_keys(generator, sk, digit_keys);
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(8);
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      a.push_back(gmp.get_z_range(context.modulus()));
      b.push_back(r % 4 == 0 ? a.back() : mpz_class(gmp.get_z_range(context.modulus())));
    }
    a[0] = context.modulus() - 1;  // beta^n
    // At the lowest level every operation here accepts (the deepest's depth): key switches
    // cost what they would in a circuit that spends its levels.
    const lanes::DigitEncryptor encryptor(context, *ops, random);
    const std::uint32_t level = std::max(evaluator.less_than_depth(), evaluator.equal_depth());
    x = encryptor.encrypt(a, sk, level);
    y = encryptor.encrypt(b, sk, level);
  }

  void prepare_to_digits() {
    if (refresher) return;
    refresher = std::make_unique<lanes::LaneRefresher>(context, *ops);
    digit_converter = lanes::DigitEvaluator::digit_converter(context, *ops);
    ckks::KeyGenerator generator(context.ckks(), *ops, random);
    refresh_keys = refresher->keys(generator, sk);
    evaluator.add_keys(generator, sk, refresh_keys.galois);
    digit_converter->add_keys(generator, sk, refresh_keys.galois);
    refreshed = refresher->refresh(lanes::LaneEncryptor(context, *ops, random).encrypt(a, sk),
                                   refresh_keys);
  }

  // The decrypted values against `want` lane by lane.
  bool decrypts_to(const lanes::LaneValues& v, const std::function<long(std::size_t)>& want) const {
    const auto got = lanes::DigitDecryptor(context, *ops, sk).decrypt(v).values;
    for (std::size_t r = 0; r < got.size(); ++r)
      if (got[r] != want(r)) return false;
    return true;
  }
};

inline void register_digit_benchmarks(const std::string& suffix, MakeLaneOps make) {
  static SpaceCache<DigitBenchSpace> cache;
  for (const std::uint32_t n : {64U, 128U, 256U, 512U, 1024U, 2048U, 4096U}) {
    const lanes::LaneSpace space = lanes::conversion_space(16, n, 2);
    auto get = [space, make]() -> DigitBenchSpace& { return cache.get(space, make); };
    std::string tail = "/";
    tail += std::to_string(n);
    tail += "/2";
    tail += suffix;
    using Op = std::function<lanes::LaneValues(DigitBenchSpace&)>;
    using Want = std::function<long(const DigitBenchSpace&, std::size_t)>;
    const std::uint32_t t = n / 2 + 1;
    const std::tuple<std::string, Op, Want> ops[] = {
        {"lanes/less_than",
         [](DigitBenchSpace& s) { return s.evaluator.less_than(s.x, s.y, s.rlk, s.digit_keys); },
         [](const DigitBenchSpace& s, std::size_t r) { return s.a[r] < s.b[r] ? 1L : 0L; }},
        {"lanes/equal",
         [](DigitBenchSpace& s) { return s.evaluator.equal(s.x, s.y, s.rlk, s.digit_keys); },
         [](const DigitBenchSpace& s, std::size_t r) { return s.a[r] == s.b[r] ? 1L : 0L; }},
        {"lanes/digit",
         [t](DigitBenchSpace& s) { return s.evaluator.digit(s.x, t, s.rlk, s.digit_keys); },
         [t](const DigitBenchSpace& s, std::size_t r) {
           return r == 0 ? 0L : static_cast<long>(mpz_tstbit(s.a[r].get_mpz_t(), t));
         }}};
    for (const auto& [family, op, want] : ops) {
      benchmark::RegisterBenchmark(
          (family + tail).c_str(),
          [get, op, want](benchmark::State& state) {
            DigitBenchSpace& s = get();
            lanes::LaneValues out;
            for (auto _ : state)
              out = op(s);
            if (!s.decrypts_to(out, [&](std::size_t r) { return want(s, r); }))
              state.SkipWithError("a wrong result against GMP");
            state.counters["digits"] = s.context.space().degree();
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(
        ("lanes/to_digits" + tail).c_str(),
        [get](benchmark::State& state) {
          DigitBenchSpace& s = get();
          s.prepare_to_digits();
          lanes::DigitSlots out;
          for (auto _ : state)
            out = s.evaluator.to_digits(s.refreshed, *s.refresher, *s.digit_converter,
                                        s.refresh_keys);
          const auto got = lanes::DigitDecryptor(s.context, *s.ops, s.sk).decrypt(out);
          const auto& lane_space = s.context.space();
          for (std::uint32_t r = 0; r < lane_space.lanes(); ++r) {
            if (got.digits[r] !=
                lanes::to_digits(s.a[r], lane_space.lane_degree, 2, lanes::DigitForm::canonical))
              state.SkipWithError("a wrong digit against GMP");
          }
          state.counters["digits"] = lane_space.degree();
        })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark(
        ("lanes/from_digits" + tail).c_str(),
        [get](benchmark::State& state) {
          DigitBenchSpace& s = get();
          lanes::LaneCiphertext out;
          for (auto _ : state)
            out = s.converter.from_digits(s.x, s.keys);
          if (lanes::LaneDecryptor(s.context, *s.ops, s.sk).decrypt(out).integers != s.a)
            state.SkipWithError("a wrong integer against GMP");
          state.counters["digits"] = s.context.space().degree();
        })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace safhire::bench
