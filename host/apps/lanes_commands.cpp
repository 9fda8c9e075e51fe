// `safhire lanes demo` and `safhire lanes refresh`: exact integers modulo beta^n + 1 in CKKS
// lanes, every result checked against GMP's arithmetic computed here, independently of the lanes
// code (which only ever sees the ciphertexts); `safhire lanes field`: prime and extension field
// elements the same way; and the lane spaces of `safhire info`.
#include "lanes_commands.hpp"

#include <gmpxx.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "command_support.hpp"
#include "options.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/lanes/lanes.hpp"

namespace safhire::apps {

namespace {

using namespace safhire::lanes;
using Clock = std::chrono::steady_clock;

// --space NAME, or --n N [--beta B] [--log-n L] [--products-per-refresh k]: the named space of
// that shape if there is one, else one made for it (make_lane_space's defaults). Without --beta,
// the base that makes beta^n = 2^4096 where it is an integer the space supports, else 2.
LaneSpace chosen_space(Options& opt, const char* default_space) {
  std::string name = opt.get("space", "");
  const std::uint32_t n = opt.number("n", 0), beta_option = opt.number("beta", 0);
  const std::uint32_t log_n = opt.number("log-n", 16);
  const std::uint32_t k = opt.number("products-per-refresh", 1);
  if (name.empty() && default_space != nullptr && n == 0 && beta_option == 0 && k == 1)
    name = default_space;
  if (!name.empty()) {
    require(n == 0 && beta_option == 0 && k == 1, ErrorCode::invalid_argument,
            "--space names a space: no --n, --beta or --products-per-refresh with it");
    return named_lane_space(name);
  }
  const std::uint32_t lane_degree = n == 0 ? 4096 : n;
  std::uint64_t beta = beta_option;
  if (beta == 0)
    beta = 4096 % lane_degree == 0 && 4096 / lane_degree <= 4 ? 1ULL << (4096 / lane_degree) : 2;
  for (const auto* list : {&named_lane_spaces(), &test_lane_spaces()}) {
    for (const LaneSpace& s : *list) {
      if (s.lane_degree == lane_degree && s.base == beta && s.ckks.log_n == log_n &&
          s.products_per_refresh == k)
        return s;
    }
  }
  LaneSpaceOptions options;
  options.products_per_refresh = k;
  return make_lane_space("lanes-n" + std::to_string(log_n) + "-" + std::to_string(lane_degree) +
                             "-b" + std::to_string(beta) + (k > 1 ? "-k" + std::to_string(k) : ""),
                         log_n, lane_degree, beta, options);
}

std::vector<mpz_class> random_integers(gmp_randclass& random, const mpz_class& p,
                                       std::size_t count) {
  std::vector<mpz_class> out(count);
  for (auto& x : out)
    x = random.get_z_range(p);
  return out;
}

// The lanes that differ from GMP's.
std::size_t wrong_lanes(const LaneDecoding& d, const std::vector<mpz_class>& want) {
  std::size_t wrong = 0;
  for (std::size_t r = 0; r < want.size(); ++r)
    wrong += d.integers[r] == want[r] ? 0 : 1;
  return wrong;
}

// The options both commands take: the space, the backend, memory, --insecure.
struct Setup {
  LaneSpace space;
  std::string backend;
  unsigned threads;
  bool insecure, json, seeded;
  RefreshParams params;
};

// `fields`: the command takes field spaces (safhire lanes field), else integer spaces only.
Setup common_options(Options& opt, bool fields = false) {
  Setup s{chosen_space(opt, fields ? "field-n16-65537" : nullptr),
          opt.get("backend", "cpu"),
          opt.number("threads", 1),
          opt.flag("insecure"),
          opt.flag("json"),
          false,
          {}};
  // --low-memory: seeded keys, lazy matrices, at most 8 babies (the bootstrap's 4 GB shape).
  const bool low_memory = opt.flag("low-memory");
  s.seeded = opt.flag("seeded-keys") || low_memory;
  s.params.lazy_matrices = opt.flag("lazy-matrices") || low_memory;
  const unsigned babies = opt.number("max-babies", 0);
  s.params.max_babies = babies != 0 ? babies : low_memory ? 8 : 0;
  require(s.threads >= 1 && s.threads <= 1024, ErrorCode::invalid_argument,
          "--threads must be in [1, 1024]");
  require(fields || s.space.t_degree == 1, ErrorCode::invalid_argument,
          "lane space '" + s.space.name +
              "' holds field elements, not integers: run it with `safhire lanes field`");
  require(s.insecure || s.space.security_bits() >= 128, ErrorCode::insecure_parameters,
          "lane space '" + s.space.name + "' has an estimated " +
              std::to_string(static_cast<int>(s.space.security_bits())) +
              " bits of security (a test space): pass --insecure to run it anyway");
  return s;
}

// What every lanes command sets up: the context and its backend, the refresh's plan and keys
// (each step timed), a host copy of the keys for --compare-cpu, and on a CUDA backend the plan
// and keys resident.
struct LaneSession {
  LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  StepTimer timed;
  std::optional<LaneRefresher> refresher;
  core::OsRandom random;
  std::optional<ckks::KeyGenerator> generator;
  ckks::SecretKey sk;
  LaneKeys keys;
  std::optional<LaneKeys> host_keys;
  double key_mb = 0;

  LaneSession(const Setup& setup, bool keep_host_keys)
      : context(setup.space, setup.insecure),
        ops(make_ckks_ops(context.ckks(), setup.backend, setup.threads)),
        timed(*ops) {
    const auto t_plan = Clock::now();
    refresher.emplace(context, *ops, setup.params);
    timed.steps.push_back({"plan (the refresh's DFT matrices)", ms_since(t_plan), std::nan("")});
    generator.emplace(context.ckks(), *ops, random);
    generator->set_seeded(setup.seeded);
    sk = generator->secret_key();
    keys = timed("keygen (relinearization, rotations, encapsulation)",
                 [&] { return refresher->keys(*generator, sk); });
    key_mb = static_cast<double>(ckks::key_bytes(keys)) / (1 << 20);
    if (keep_host_keys) {
      host_keys = keys;
      ckks::to_host(*ops, *host_keys);
    }
    if (setup.backend == "cuda") {
      refresher->make_resident(*ops);
      ckks::make_resident(*ops, keys);
    }
  }
};

// safhire lanes demo: a chain of K products of random integers, refreshed where needed.
int run_lanes_demo(int argc, char** argv) {
  Options opt(argc, argv, 3);
  Setup setup = common_options(opt);
  const unsigned products = opt.number("products", 16);
  const unsigned seed = opt.number("seed", 0);
  opt.finish();
  require(products >= 1 && products <= 1000000, ErrorCode::invalid_argument,
          "--products must be in [1, 10^6]");
  LaneSession session(setup, false);
  const LaneContext& context = session.context;
  const LaneSpace& space = context.space();
  const mpz_class& p = context.modulus();
  const auto& ops = session.ops;
  const LaneRefresher& refresher = *session.refresher;
  const LaneKeys& keys = session.keys;
  const ckks::SecretKey& sk = session.sk;
  const StepTimer& timed = session.timed;
  const double key_mb = session.key_mb;
  const LaneEncryptor encryptor(context, *ops, session.random);
  const LaneDecryptor decryptor(context, *ops, sk);
  const LaneEvaluator evaluator(context, *ops);
  // GMP's own randomness for the integers (seeded from the OS, or --seed for a repeatable run).
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(seed != 0 ? seed : std::random_device{}());
  std::vector<mpz_class> want = random_integers(gmp, p, space.lanes());
  LaneCiphertext acc = encryptor.encrypt(want, sk);
  if (setup.backend == "cuda") ckks::make_resident(*ops, acc.ct);
  std::vector<double> product_ms, refresh_ms;
  std::size_t wrong = 0, refreshes = 0;
  for (unsigned i = 0; i < products; ++i) {
    const auto factor = random_integers(gmp, p, space.lanes());
    LaneCiphertext y = encryptor.encrypt(factor, sk);
    if (setup.backend == "cuda") ckks::make_resident(*ops, y.ct);
    if (!evaluator.multiply_refusal(acc, y).empty()) {
      const auto t0 = Clock::now();
      acc = refresher.refresh(acc, keys);
      ops->synchronize();
      refresh_ms.push_back(ms_since(t0));
      ++refreshes;
    }
    const auto t0 = Clock::now();
    acc = evaluator.multiply(acc, y, keys.relinearization);
    ops->synchronize();
    product_ms.push_back(ms_since(t0));
    for (std::size_t r = 0; r < want.size(); ++r)
      want[r] = want[r] * factor[r] % p;
    wrong += wrong_lanes(decryptor.decrypt(acc), want);
  }
  double total_ms = 0;
  for (double v : product_ms)
    total_ms += v;
  for (double v : refresh_ms)
    total_ms += v;
  const double amortized = total_ms / (static_cast<double>(products) * space.lanes());
  const double matrix_mb = static_cast<double>(refresher.matrix_bytes()) / (1 << 20);
  if (setup.json) {
    JsonWriter json;
    json.begin_object();
    write_space(json, context);
    json.value("backend", setup.backend)
        .value("threads", setup.threads)
        .value("low_memory", setup.params.lazy_matrices && setup.seeded)
        .value("products", products)
        .value("refreshes", static_cast<std::uint64_t>(refreshes))
        .value("wrong_integers", static_cast<std::uint64_t>(wrong))
        .value("integers_checked", static_cast<std::uint64_t>(products) * space.lanes())
        .value("product_ms_median", median(product_ms))
        .value("refresh_ms_median", refresh_ms.empty() ? std::nan("") : median(refresh_ms))
        .value("amortized_ms_per_integer_product", amortized)
        .value("key_mb", key_mb)
        .value("matrix_mb", matrix_mb)
        .value("peak_rss_mb", peak_rss_mb());
    json.begin_array("steps");
    for (const Step& st : timed.steps)
      json.begin_object().value("step", st.name).value("ms", st.ms).end_object();
    json.end_array();
    json.begin_array("product_ms");
    for (double v : product_ms)
      json.element(v);
    json.end_array().begin_array("refresh_ms");
    for (double v : refresh_ms)
      json.element(v);
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return wrong == 0 ? 0 : 1;
  }
  std::printf(
      "Lanes %s on %s: %u integers modulo %lu^%u + 1 (%zu bits) a ciphertext, N = %u, %.0f-bit "
      "security%s, %u thread%s\n",
      space.name.c_str(), setup.backend.c_str(), space.lanes(),
      static_cast<unsigned long>(space.base), space.lane_degree, space.modulus_bits(),
      space.degree(), space.security_bits(),
      space.security_bits() < 128 ? " (a TEST space, insecure)" : "", setup.threads,
      setup.threads == 1 ? "" : "s");
  for (const Step& st : timed.steps)
    std::printf("  %-52s %10.1f ms\n", st.name.c_str(), st.ms);
  std::printf("  %u products, %zu refreshes: product %.1f ms, refresh %.1f ms (medians)\n",
              products, refreshes, median(product_ms),
              refresh_ms.empty() ? 0.0 : median(refresh_ms));
  std::printf("  amortized: %.1f ms per integer product, refreshes included\n", amortized);
  std::printf("  memory: keys %.0f MB, matrices %.0f MB, peak resident %.0f MB\n", key_mb,
              matrix_mb, peak_rss_mb());
  std::printf("  %zu of %zu integers wrong (each product's lanes against GMP)\n", wrong,
              static_cast<std::size_t>(products) * space.lanes());
  return wrong == 0 ? 0 : 1;
}

// safhire lanes refresh: refreshes of products of random integers, step by step.
int run_lanes_refresh(int argc, char** argv) {
  Options opt(argc, argv, 3);
  Setup setup = common_options(opt);
  const unsigned runs = opt.number("runs", 1);
  const std::string mode_name = opt.get("mode", "clean");
  const bool compare_cpu = opt.flag("compare-cpu");
  opt.finish();
  require(runs >= 1 && runs <= 10000, ErrorCode::invalid_argument, "--runs must be in [1, 10^4]");
  require(mode_name == "clean" || mode_name == "plain" || mode_name == "unreduced",
          ErrorCode::invalid_argument,
          "--mode must be clean, plain or unreduced, got " + mode_name);
  const RefreshMode mode = mode_name == "clean"   ? RefreshMode::clean
                           : mode_name == "plain" ? RefreshMode::plain
                                                  : RefreshMode::unreduced;
  setup.params.plan_plain = mode == RefreshMode::plain;
  LaneSession session(setup, compare_cpu);
  const LaneContext& context = session.context;
  const LaneSpace& space = context.space();
  const mpz_class& p = context.modulus();
  const auto& ops = session.ops;
  const LaneRefresher& refresher = *session.refresher;
  const LaneKeys& keys = session.keys;
  const ckks::SecretKey& sk = session.sk;
  const std::optional<LaneKeys>& host_keys = session.host_keys;
  const StepTimer& timed = session.timed;
  const double key_mb = session.key_mb;
  const LaneEncryptor encryptor(context, *ops, session.random);
  const LaneDecryptor decryptor(context, *ops, sk);
  const LaneEvaluator evaluator(context, *ops);
  const NoiseModel noise(context);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(std::random_device{}());
  std::vector<std::string> names;
  std::vector<std::vector<double>> step_ms;
  std::vector<double> totals;
  std::size_t wrong = 0;
  double max_error = 0, input_noise = 0, output_noise = 0;
  LaneCiphertext input, output;
  for (unsigned run = 0; run < runs; ++run) {
    const auto a = random_integers(gmp, p, space.lanes()),
               b = random_integers(gmp, p, space.lanes());
    input = evaluator.multiply(encryptor.encrypt(a, sk), encryptor.encrypt(b, sk),
                               keys.relinearization);
    ops->synchronize();
    std::size_t k = 0;
    auto last = Clock::now();
    const auto t0 = last;
    output = refresher.refresh(input, keys, mode, [&](const char* name) {
      ops->synchronize();
      if (run == 0) {
        names.emplace_back(name);
        step_ms.emplace_back();
      }
      step_ms[k++].push_back(ms_since(last));
      last = Clock::now();
    });
    totals.push_back(ms_since(t0));
    const LaneDecoding d = decryptor.decrypt(output);
    std::vector<mpz_class> want(space.lanes());
    for (std::size_t r = 0; r < want.size(); ++r)
      want[r] = a[r] * b[r] % p;
    wrong += wrong_lanes(d, want);
    max_error = std::max(max_error, d.max_error);
    input_noise = input.noise;
    output_noise = output.noise;
  }
  // Medians of the runs after the first (the first also fills caches and touches fresh memory).
  auto typical = [](std::vector<double> v) {
    if (v.size() > 1) v.erase(v.begin());
    return median(v);
  };
  std::string identical = "null";
  if (compare_cpu) {
    const auto cpu_ops =
        ckks::make_cpu_rns_ops(context.ckks(), std::max(1U, std::thread::hardware_concurrency()));
    const LaneRefresher cpu_refresher(context, *cpu_ops, setup.params);
    LaneCiphertext host_input = input, got = output;
    ckks::to_host(*ops, host_input.ct);
    ckks::to_host(*ops, got.ct);
    const LaneCiphertext want = cpu_refresher.refresh(host_input, *host_keys, mode);
    identical = want.ct.c == got.ct.c && want.ct.scale == got.ct.scale ? "true" : "false";
  }
  const std::size_t digits = static_cast<std::size_t>(runs) * space.degree();
  const double failure = noise.log2_failure(input_noise);
  const double matrix_mb = static_cast<double>(refresher.matrix_bytes()) / (1 << 20);
  if (setup.json) {
    JsonWriter json;
    json.begin_object();
    write_space(json, context);
    json.value("backend", setup.backend)
        .value("threads", setup.threads)
        .value("mode", mode_name)
        .value("runs", runs)
        .value("low_memory", setup.params.lazy_matrices && setup.seeded)
        .value("refresh_ms", typical(totals))
        .value("first_refresh_ms", totals.front())
        .value("digits_refreshed", static_cast<std::uint64_t>(digits))
        .value("wrong_integers", static_cast<std::uint64_t>(wrong))
        .value("max_digit_error", max_error)
        .value("input_noise", input_noise)
        .value("output_noise_estimate", output_noise)
        .value("log2_failure_bound", failure)
        .value("output_level", output.level())
        .value("key_mb", key_mb)
        .value("matrix_mb", matrix_mb)
        .value("rotation_keys", static_cast<std::uint64_t>(keys.galois.keys.size()))
        .value("peak_rss_mb", peak_rss_mb());
    if (compare_cpu) {
      json.value("identical_to_cpu", identical == "true");
    } else {
      json.null("identical_to_cpu");
    }
    json.begin_array("steps");
    for (const Step& st : timed.steps)
      json.begin_object().value("step", st.name).value("ms", st.ms).end_object();
    for (std::size_t k = 0; k < names.size(); ++k)
      json.begin_object().value("step", names[k]).value("ms", typical(step_ms[k])).end_object();
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return wrong == 0 && identical != "false" ? 0 : 1;
  }
  std::printf(
      "Lane refresh (%s), %s on %s: %u integers modulo %lu^%u + 1 (%zu bits), N = %u, %.0f-bit "
      "security%s, %u thread%s\n",
      mode_name.c_str(), space.name.c_str(), setup.backend.c_str(), space.lanes(),
      static_cast<unsigned long>(space.base), space.lane_degree, space.modulus_bits(),
      space.degree(), space.security_bits(),
      space.security_bits() < 128 ? " (a TEST space, insecure)" : "", setup.threads,
      setup.threads == 1 ? "" : "s");
  for (const Step& st : timed.steps)
    std::printf("  %-52s %10.1f ms\n", st.name.c_str(), st.ms);
  for (std::size_t k = 0; k < names.size(); ++k)
    std::printf("  %-52s %10.1f ms\n", names[k].c_str(), typical(step_ms[k]));
  std::printf("  refresh: %.1f ms%s, to level %u; %zu digits refreshed, %zu integers wrong\n",
              typical(totals), runs > 1 ? " (median of the runs after the first)" : "",
              output.level(), digits, wrong);
  // The Gaussian tail of the input's noise at 1/2: astronomically small; shown down to 2^-1000.
  const std::string failure_text =
      failure < -1000 ? "below 2^-1000" : "below 2^" + std::to_string(int(failure));
  std::printf(
      "  noise: input 2^%.1f (failure %s), output estimate 2^%.1f, largest digit error measured "
      "2^%.1f\n",
      std::log2(input_noise), failure_text.c_str(), std::log2(output_noise), std::log2(max_error));
  std::printf(
      "  memory: %zu rotation keys, keys %.0f MB, matrices %.0f MB, peak resident %.0f MB\n",
      keys.galois.keys.size(), key_mb, matrix_mb, peak_rss_mb());
  if (compare_cpu) {
    std::printf("  the same refresh on the CPU backend: %s\n",
                identical == "true" ? "identical, word for word" : "DIFFERENT words");
  }
  return wrong == 0 && identical != "false" ? 0 : 1;
}

// x y in F_p[Y]/(Y^d - gamma), computed here with GMP.
FieldElement field_product(const FieldElement& x, const FieldElement& y, const mpz_class& gamma,
                           const mpz_class& p) {
  const std::size_t d = x.size();
  FieldElement out(d, 0);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      if (i + j < d) {
        out[i + j] += x[i] * y[j];
      } else {
        out[i + j - d] += x[i] * y[j] * gamma;
      }
    }
  }
  for (auto& c : out)
    c %= p;
  return out;
}

std::vector<FieldElement> random_elements(gmp_randclass& random, const FieldSpace& field) {
  std::vector<FieldElement> out(field.elements(), FieldElement(field.degree()));
  for (auto& e : out) {
    for (auto& c : e)
      c = random.get_z_range(field.prime());
  }
  return out;
}

// safhire lanes field: a chain of K products of random field elements (each lane k elements of
// F_(p^d)), refreshed where needed and once at the end, each element checked against GMP.
int run_lanes_field(int argc, char** argv) {
  Options opt(argc, argv, 3);
  Setup setup = common_options(opt, true);
  const unsigned products = opt.number("products", 4);
  const unsigned seed = opt.number("seed", 0);
  const bool compare_cpu = opt.flag("compare-cpu");
  opt.finish();
  require(products >= 1 && products <= 100000, ErrorCode::invalid_argument,
          "--products must be in [1, 10^5]");
  const FieldSpace field(setup.space);  // refuses a composite p
  LaneSession session(setup, compare_cpu);
  const LaneContext& context = session.context;
  const LaneSpace& space = context.space();
  const mpz_class& p = field.prime();
  const auto& ops = session.ops;
  const LaneRefresher& refresher = *session.refresher;
  const LaneKeys& keys = session.keys;
  const ckks::SecretKey& sk = session.sk;
  const std::optional<LaneKeys>& host_keys = session.host_keys;
  const StepTimer& timed = session.timed;
  const LaneEncryptor encryptor(context, *ops, session.random);
  const LaneDecryptor decryptor(context, *ops, sk);
  const LaneEvaluator evaluator(context, *ops);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(seed != 0 ? seed : std::random_device{}());
  auto encrypt = [&](const std::vector<FieldElement>& x) {
    LaneCiphertext c = encryptor.encrypt_digits(field.digits(x, space.digits), sk);
    if (setup.backend == "cuda") ckks::make_resident(*ops, c.ct);
    return c;
  };
  std::size_t wrong = 0, checked = 0;
  auto check = [&](const LaneCiphertext& x, const std::vector<FieldElement>& want) {
    const auto got = field.elements_of(decryptor.decrypt(x).digits);
    for (std::size_t e = 0; e < want.size(); ++e)
      wrong += got[e] == want[e] ? 0 : 1;
    checked += want.size();
  };
  std::vector<FieldElement> want = random_elements(gmp, field);
  LaneCiphertext acc = encrypt(want), last_x, last_y, last_product, last_input;
  std::vector<double> product_ms, refresh_ms;
  auto refresh = [&] {
    last_input = acc;
    const auto t0 = Clock::now();
    acc = refresher.refresh(acc, keys);
    ops->synchronize();
    refresh_ms.push_back(ms_since(t0));
  };
  for (unsigned i = 0; i < products; ++i) {
    const auto factor = random_elements(gmp, field);
    const LaneCiphertext y = encrypt(factor);
    if (!evaluator.multiply_refusal(acc, y).empty()) refresh();
    last_x = acc;
    last_y = y;
    const auto t0 = Clock::now();
    acc = evaluator.multiply(acc, y, keys.relinearization);
    ops->synchronize();
    product_ms.push_back(ms_since(t0));
    last_product = acc;
    for (std::size_t e = 0; e < want.size(); ++e)
      want[e] = field_product(want[e], factor[e], field.gammas()[e % field.per_lane()], p);
    check(acc, want);
  }
  refresh();
  check(acc, want);
  // The last product and the last refresh again on the CPU backend, word for word.
  std::string identical = "null";
  if (compare_cpu) {
    const auto cpu_ops =
        ckks::make_cpu_rns_ops(context.ckks(), std::max(1U, std::thread::hardware_concurrency()));
    const LaneRefresher cpu_refresher(context, *cpu_ops, setup.params);
    const LaneEvaluator cpu_evaluator(context, *cpu_ops);
    for (auto* c : {&last_x, &last_y, &last_product, &last_input, &acc})
      ckks::to_host(*ops, c->ct);
    const LaneCiphertext product =
        cpu_evaluator.multiply(last_x, last_y, host_keys->relinearization);
    const LaneCiphertext refreshed = cpu_refresher.refresh(last_input, *host_keys);
    identical = product.ct.c == last_product.ct.c && refreshed.ct.c == acc.ct.c &&
                        refreshed.ct.scale == acc.ct.scale
                    ? "true"
                    : "false";
  }
  double total_ms = 0;
  for (double v : product_ms)
    total_ms += v;
  for (double v : refresh_ms)
    total_ms += v;
  // Per field product: the chain's products and refreshes over the elements multiplied.
  const double amortized = total_ms / (static_cast<double>(products) * field.elements());
  const auto prime_bits = static_cast<std::uint64_t>(mpz_sizeinbase(p.get_mpz_t(), 2));
  const int status = wrong == 0 && identical != "false" ? 0 : 1;
  if (setup.json) {
    JsonWriter json;
    json.begin_object();
    write_space(json, context);
    json.value("t_degree", space.t_degree)
        .value("prime_bits", prime_bits)
        .value("extension_degree", field.degree())
        .value("elements_per_lane", field.per_lane())
        .value("elements", field.elements())
        .value("backend", setup.backend)
        .value("threads", setup.threads)
        .value("products", products)
        .value("refreshes", static_cast<std::uint64_t>(refresh_ms.size()))
        .value("wrong_elements", static_cast<std::uint64_t>(wrong))
        .value("elements_checked", static_cast<std::uint64_t>(checked))
        .value("product_ms_median", median(product_ms))
        .value("refresh_ms_median", median(refresh_ms))
        .value("amortized_ms_per_field_product", amortized)
        .value("peak_rss_mb", peak_rss_mb());
    if (compare_cpu) {
      json.value("identical_to_cpu", identical == "true");
    } else {
      json.null("identical_to_cpu");
    }
    json.begin_array("steps");
    for (const Step& st : timed.steps)
      json.begin_object().value("step", st.name).value("ms", st.ms).end_object();
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return status;
  }
  std::printf(
      "Field lanes %s on %s: p = %lu^%u + 1 (%llu bits), %u element%s of F_(p^%u) in each of %u "
      "lanes (%u a ciphertext), N = %u, %.0f-bit security%s, %u thread%s\n",
      space.name.c_str(), setup.backend.c_str(), static_cast<unsigned long>(space.base),
      space.coefficient_digits(), static_cast<unsigned long long>(prime_bits), field.per_lane(),
      field.per_lane() == 1 ? "" : "s", field.degree(), space.lanes(), field.elements(),
      space.degree(), space.security_bits(),
      space.security_bits() < 128 ? " (a TEST space, insecure)" : "", setup.threads,
      setup.threads == 1 ? "" : "s");
  for (const Step& st : timed.steps)
    std::printf("  %-52s %10.1f ms\n", st.name.c_str(), st.ms);
  std::printf("  %u products, %zu refreshes: product %.1f ms, refresh %.1f ms (medians)\n",
              products, refresh_ms.size(), median(product_ms), median(refresh_ms));
  std::printf("  amortized: %.2f ms per field product, refreshes included\n", amortized);
  std::printf("  %zu of %zu elements wrong (each product's and the refresh's against GMP)\n", wrong,
              checked);
  if (compare_cpu) {
    std::printf("  the last product and refresh on the CPU backend: %s\n",
                identical == "true" ? "identical, word for word" : "DIFFERENT words");
  }
  return status;
}

}  // namespace

void write_space(JsonWriter& json, const LaneContext& context) {
  const LaneSpace& s = context.space();
  json.value("space", s.name)
      .value("N", s.degree())
      .value("n", s.lane_degree)
      .value("beta", static_cast<std::uint64_t>(s.base))
      .value("lanes", s.lanes())
      .value("modulus_bits", static_cast<std::uint64_t>(s.modulus_bits()))
      .value("security_bits", s.security_bits())
      .value("log2_qp", s.ckks.log_qp())
      .value("levels", s.top())
      .value("dnum", s.ckks.dnum)
      .value("rest_level", s.rest_level())
      .value("rest_digit_bound", s.rest_digit_bound())
      .value("cleaning_k", s.cleaning.k)
      .value("cleaning_degree", s.cleaning.degree)
      .value("cleaning_double_angles", s.cleaning.double_angles);
}

void print_lane_spaces() {
  std::printf(
      "\nLane spaces (integers modulo beta^n + 1, N/n lanes a ciphertext; security of their "
      "CKKS chains):\n");
  std::printf("  %-20s %6s %6s %5s %6s %8s %7s %5s %8s %9s\n", "name", "N", "n", "beta", "lanes",
              "bits", "levels", "dnum", "log2 QP", "security");
  for (const auto* list :
       {&named_lane_spaces(), &test_lane_spaces(), &named_field_spaces(), &test_field_spaces()}) {
    if (list == &named_field_spaces()) {
      std::printf(
          "\nField spaces (t = Y^m - beta: in each lane, m/d elements of F_(p^d), p = "
          "beta^(n/m) + 1; `safhire lanes field`):\n");
      std::printf("  %-20s %6s %6s %5s %6s %8s %7s %5s %8s %9s\n", "name", "N", "n", "beta", "m",
                  "p bits", "levels", "dnum", "log2 QP", "security");
    }
    for (const LaneSpace& s : *list) {
      const std::uint32_t shown = s.t_degree == 1 ? s.lanes() : s.t_degree;
      std::printf("  %-20s %6u %6u %5lu %6u %8zu %7u %5u %8d %9.1f\n", s.name.c_str(), s.degree(),
                  s.lane_degree, static_cast<unsigned long>(s.base), shown, s.modulus_bits(),
                  s.top(), s.ckks.dnum, s.ckks.log_qp(), s.security_bits());
    }
  }
}

int run_lanes(int argc, char** argv) {
  const std::string sub = argc > 2 ? argv[2] : "";
  if (sub == "demo") return run_lanes_demo(argc, argv);
  if (sub == "refresh") return run_lanes_refresh(argc, argv);
  if (sub == "field") return run_lanes_field(argc, argv);
  if (sub == "compare") return run_lanes_compare(argc, argv);
  if (sub == "convert") return run_lanes_convert(argc, argv);
  if (sub == "digits") return run_lanes_digits(argc, argv);
  throw Error(
      ErrorCode::invalid_argument,
      "usage: safhire lanes demo [--space NAME | --n N [--beta B]] [--products K] "
      "[--threads T] [--backend cpu|cuda] [--low-memory] [--seed S] [--json] "
      "[--insecure]\n"
      "       safhire lanes refresh [--space NAME | --n N [--beta B]] [--runs R] [--mode "
      "clean|plain|unreduced] [--threads T] [--backend cpu|cuda] [--low-memory] [--seeded-keys] "
      "[--lazy-matrices] [--max-babies B] [--compare-cpu] [--json] [--insecure]\n"
      "       safhire lanes field [--space NAME (field-n16-65537)] [--products K] [--seed S] "
      "[--threads T] [--backend cpu|cuda] [--low-memory] [--compare-cpu] [--json] [--insecure]\n"
      "       safhire lanes compare [--n 8,16,...,1024] [--log-n L (16)] [--repeats R (3)] "
      "[--threads T (1)] [--low-memory] [--seed S] [--json] [--insecure]\n"
      "       safhire lanes convert [--n N (1024)] [--beta B (2)] [--log-n L (16)] [--runs R (16)] "
      "[--threads T (1)] [--seed S] [--json] [--insecure]\n"
      "       safhire lanes digits [--n N (1024)] [--beta B (2)] [--log-n L (16)] [--runs R (4)] "
      "[--no-to-digits] [--threads T (1)] [--seed S] [--json] [--insecure]");
}

}  // namespace safhire::apps
