// `safhire ckks demo`: one pass through the CKKS operations on random vectors, each step timed
// and its result checked against the same arithmetic in double (precision in bits).
#include "ckks_commands.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "command_support.hpp"
#include "options.hpp"
#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/serialize.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"

namespace safhire::apps {

namespace {

using namespace safhire::ckks;
using Clock = std::chrono::steady_clock;
using Values = std::vector<std::complex<double>>;

// -log2 of the largest error over the slots (the worst slot's precision), or of the mean one.
double precision_bits(const Values& got, const Values& want) {
  double err = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    err = std::max(err, std::abs(got[i] - want[i]));
  return err == 0 ? 64.0 : -std::log2(err);
}

double mean_precision_bits(const Values& got, const Values& want) {
  double err = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    err += std::abs(got[i] - want[i]) / static_cast<double>(want.size());
  return err == 0 ? 64.0 : -std::log2(err);
}

}  // namespace

void print_ckks_sets() {
  std::printf(
      "\nCKKS parameter sets (security: HE standard table for ternary secrets, extended to 2^16 "
      "and 2^17 as OpenFHE does; Lattigo's log2 QP <= 1550 for H = 192 at N = 2^16):\n");
  std::printf("  %-14s %6s %4s %5s %4s %9s %6s %-14s %9s\n", "name", "N", "L", "dnum", "K",
              "log2 QP", "scale", "secret", "security");
  for (const auto& p : named_sets()) {
    const std::string secret = p.secret == SecretDistribution::uniform_ternary
                                   ? "ternary"
                                   : "H = " + std::to_string(p.hamming_weight);
    std::printf("  %-14s %6u %4u %5u %4zu %9d %6s %-14s %9.1f\n", p.name.c_str(), p.degree(),
                p.max_level(), p.dnum, p.p_bits.size(), p.log_qp(),
                ("2^" + std::to_string(p.log_scale)).c_str(), secret.c_str(),
                estimated_security(p));
  }
}

namespace {

// safhire ckks bootstrap: key generation, then `runs` bootstraps of the same random slots with
// their steps timed (medians over the runs after the first when there are several: the first
// also builds cached tables and touches fresh memory), the precision against the input, the
// levels left and the stated failure probability.
int run_bootstrap(int argc, char** argv) {
  Options opt(argc, argv, 3);
  const std::string set = opt.get("set", "n12-boot-test");
  const unsigned threads = opt.number("threads", 1);
  const std::string backend = opt.get("backend", "cpu");
  const unsigned slot_option = opt.number("slots", 0);
  const unsigned runs = opt.number("runs", 1);
  const bool slim = opt.flag("slim");
  // --max-babies B: at most B baby rotations per DFT group (fewer keys, more key switches).
  const unsigned max_babies_option = opt.number("max-babies", 0);
  // --log-ratio B: the input scale q_0 / 2^B (0: the library's rule, BootstrapParams::input_ratio:
  // 8 at N = 2^16 and 10 at 2^12, 15 slim; the best measured at full slots on both rings and at
  // 2^10 slots on 2^16, where an earlier rule's 11, from the slot count, lost 2.8 bits).
  const unsigned log_ratio_option = opt.number("log-ratio", 0);
  // --seeded-keys: switching keys store a seed for their uniform halves (half the memory).
  const bool seeded_option = opt.flag("seeded-keys");
  // --lazy-matrices: the DFT diagonals that are not compact encoded where they are used.
  // --low-memory: --seeded-keys --lazy-matrices and at most 8 babies (unless --max-babies says
  // otherwise): the configuration that keeps key generation and a bootstrap at N = 2^16 within
  // 4 GB.
  const bool low_memory = opt.flag("low-memory");
  const bool lazy = opt.flag("lazy-matrices") || low_memory;
  // --unpacked: sparse slots' real and imaginary parts through EvalMod apart (twice).
  const bool unpacked = opt.flag("unpacked");
  // --arcsine D: the arcsine correction of odd degree D after EvalMod (0: none).
  const unsigned arcsine = opt.number("arcsine", 0);
  // --compare-cpu: the last bootstrap again on the CPU backend (on every core, with its own plan;
  // the same keys and input, brought to the host), whose output must equal this backend's word
  // for word (on the CPU backend: words independent of the thread count):
  // "identical_to_cpu" in the output, and exit status 1 when they differ.
  const bool compare_cpu = opt.flag("compare-cpu");
  const bool json = opt.flag("json");
  const bool insecure = opt.flag("insecure");
  opt.finish();
  const bool seeded = seeded_option || low_memory;
  const unsigned max_babies = max_babies_option != 0 ? max_babies_option : low_memory ? 8 : 0;
  require(runs >= 1 && runs <= 100, ErrorCode::invalid_argument, "--runs must be in [1, 100]");
  require(log_ratio_option <= 30, ErrorCode::invalid_argument, "--log-ratio must be in [1, 30]");
  const CkksParams& params = named_set(set);
  require(insecure || estimated_security(params) >= 128, ErrorCode::insecure_parameters,
          "set '" + set + "' has an estimated " +
              std::to_string(static_cast<int>(estimated_security(params))) +
              " bits of security (a test ring): pass --insecure to run it anyway");
  const CkksContext context(params, insecure);
  const auto ops = make_ckks_ops(context, backend, threads);
  const Encoder encoder(context, *ops);
  const Evaluator ev(context, *ops);
  StepTimer timed(*ops);
  auto& steps = timed.steps;
  BootstrapParams boot_params = default_bootstrap_params(context.params(), slot_option);
  boot_params.slim = slim;
  boot_params.max_babies = max_babies;
  boot_params.lazy_matrices = lazy;
  boot_params.pack_parts = !unpacked;
  const std::size_t n = slot_option == 0 ? context.degree() / 2 : slot_option;
  if (log_ratio_option != 0) boot_params.input_ratio = std::exp2(double(log_ratio_option));
  // The arcsine's interval: coefficients up to the input scale (message_ratio 0).
  boot_params.arcsine_degree = arcsine;
  Bootstrapper boot = timed("plan (CoeffToSlot and SlotToCoeff matrices)",
                            [&] { return Bootstrapper(encoder, ev, boot_params); });
  const auto log_ratio = static_cast<unsigned>(
      std::lround(std::log2(static_cast<double>(context.prime(0)) / boot.input_scale())));
  core::OsRandom random;
  KeyGenerator gen(context, *ops, random);
  gen.set_seeded(seeded);
  const SecretKey sk = gen.secret_key();
  BootstrapKeys keys = timed("keygen (relinearization, rotations, encapsulation)",
                             [&] { return boot.keys(gen, sk); });
  std::mt19937_64 mt(std::random_device{}());
  std::uniform_real_distribution<double> u(-1, 1);
  Values z(n);
  for (auto& v : z)
    v = {u(mt), u(mt)};
  Encryptor enc(context, *ops, random);
  // The input's scale, the bootstrapper's: q_0 / 2^log_ratio (the output comes out at scale
  // 2 pi Delta eval_scale / q_0, relabelled).
  const double delta = boot.input_scale();
  // At level 0, or at the lowest level the slim order takes (its SlotToCoeff's groups).
  Ciphertext x =
      enc.encrypt(encoder.encode(z, delta, boot.input_level(), static_cast<std::uint32_t>(n)), sk);
  // The CPU's copies for --compare-cpu (keys made by a device backend live on the device).
  std::optional<BootstrapKeys> host_keys;
  std::optional<Ciphertext> host_x;
  if (compare_cpu) {
    host_keys = keys;
    to_host(*ops, *host_keys);
    host_x = x;
  }
  if (backend == "cuda") {
    boot.make_resident(*ops);
    make_resident(*ops, keys);
    make_resident(*ops, x);
  }
  // Packed (sparse slots, classic order): one EvalMod for both parts.
  std::vector<std::string> names = {"ModRaise", "CoeffToSlot"};
  if (boot.packed()) {
    names.emplace_back("EvalMod (both parts, packed)");
  } else {
    names.emplace_back("EvalMod (real part)");
    names.emplace_back("EvalMod (imaginary part)");
  }
  names.emplace_back("SlotToCoeff");
  std::vector<std::vector<double>> step_ms(names.size());
  std::vector<double> totals;
  // One bootstrap, step by step. Slim: SlotToCoeff first (timed under its name, listed last),
  // and the parts recombined at the end.
  const auto bootstrap_steps = [&](const Bootstrapper& b, const BootstrapKeys& k,
                                   const Ciphertext& in, StepTimer& t) {
    const Ciphertext low =
        slim ? t(names.back(), [&] { return b.slot_to_coeff_first(in, k); }) : in;
    const Ciphertext raised = t(names[0], [&] { return b.mod_raise(low, k); });
    auto parts = t(names[1], [&] { return b.coeff_to_slot(raised, k); });
    for (std::size_t p = 0; p < parts.size(); ++p)
      parts[p] = t(names[2 + p], [&] { return b.eval_mod(parts[p], k); });
    if (!slim) return t(names.back(), [&] { return b.slot_to_coeff(parts, in.scale, k); });
    Ciphertext result = b.recombine(parts, in.scale);
    std::rotate(t.steps.begin(), t.steps.begin() + 1, t.steps.end());
    return result;
  };
  Ciphertext out;
  for (unsigned run = 0; run < runs; ++run) {
    StepTimer t(*ops);
    const auto t0 = Clock::now();
    out = bootstrap_steps(boot, keys, x, t);
    totals.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    for (std::size_t k = 0; k < names.size(); ++k)
      step_ms[k].push_back(t.steps[k].ms);
  }
  // The median of the runs after the first (of the only run when there is one).
  auto typical = [&](std::vector<double> v) {
    if (v.size() > 1) v.erase(v.begin());
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  for (std::size_t k = 0; k < names.size(); ++k)
    steps.push_back({names[k], typical(step_ms[k]), std::nan("")});
  const double total = typical(totals);
  // "true" or "false" with --compare-cpu, else "null".
  std::string identical = "null";
  if (compare_cpu) {
    const auto cpu_ops =
        make_cpu_rns_ops(context, std::max(1U, std::thread::hardware_concurrency()));
    const Encoder cpu_encoder(context, *cpu_ops);
    const Evaluator cpu_ev(context, *cpu_ops);
    const Bootstrapper cpu_boot(cpu_encoder, cpu_ev, boot_params);
    StepTimer t(*cpu_ops);
    const Ciphertext want = bootstrap_steps(cpu_boot, *host_keys, *host_x, t);
    Ciphertext got = out;
    to_host(*ops, got);
    identical = got.c == want.c && got.level() == want.level() && got.scale == want.scale ? "true"
                                                                                          : "false";
  }
  const Values got = encoder.decode(decrypt(context, *ops, out, sk));
  const double mean_bits = mean_precision_bits(got, z), worst_bits = precision_bits(got, z);
  const double security = estimated_security(context.params());
  const double failure = log2_failure_bound(context.params(), boot.params());
  const double key_mb = static_cast<double>(key_bytes(keys)) / (1 << 20);
  const double matrix_mb = static_cast<double>(boot.matrix_bytes()) / (1 << 20);
  if (json) {
    std::printf(
        "{\"set\": \"%s\", \"N\": %u, \"slots\": %zu, \"backend\": \"%s\", "
        "\"threads\": %u, \"security_bits\": %.1f, \"slim\": %s, \"max_babies\": %u, "
        "\"seeded_keys\": %s, \"lazy_matrices\": %s, "
        "\"log2_message_ratio\": %u, "
        "\"runs\": %u, "
        "\"bootstrap_ms\": %.3f, "
        "\"first_bootstrap_ms\": %.3f, \"mean_precision_bits\": %.2f, "
        "\"min_precision_bits\": %.2f, \"levels_left\": %u, \"log2_failure_bound\": %.1f, "
        "\"rotation_keys\": %zu, \"key_mb\": %.1f, \"matrix_mb\": %.1f, "
        "\"peak_rss_mb\": %.1f, \"identical_to_cpu\": %s, \"steps\": [",
        set.c_str(), context.degree(), n, backend.c_str(), threads, security,
        slim ? "true" : "false", max_babies, seeded ? "true" : "false", lazy ? "true" : "false",
        log_ratio, runs, total, totals.front(), mean_bits, worst_bits, out.level(), failure,
        keys.galois.keys.size(), key_mb, matrix_mb, peak_rss_mb(), identical.c_str());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::printf("%s{\"step\": \"%s\", \"ms\": %.3f}", i ? ", " : "", steps[i].name.c_str(),
                  steps[i].ms);
    }
    std::printf("]}\n");
    return identical == "false" ? 1 : 0;
  }
  std::printf("CKKS bootstrapping, %s on %s: N = %u, %zu slots, %.0f-bit security%s, %u thread%s\n",
              set.c_str(), backend.c_str(), context.degree(), n, security,
              security < 128 ? " (a TEST ring, insecure)" : "", threads, threads == 1 ? "" : "s");
  std::printf("  %s order; random slots in the unit square at level %u, input scale q_0 / 2^%u\n",
              slim ? "slim (SlotToCoeff first)" : "classic", boot.input_level(), log_ratio);
  std::printf("  %-44s %10s\n", "step", runs > 1 ? "ms (median)" : "ms");
  for (const auto& st : steps)
    std::printf("  %-44s %10.2f\n", st.name.c_str(), st.ms);
  std::printf(
      "  bootstrap: %.1f ms%s; precision %.1f bits mean, %.1f at the worst slot; %u levels "
      "left; failure probability below 2^%.0f\n"
      "  memory: %zu rotation keys, keys %.0f MB, matrices %.0f MB, peak resident %.0f MB\n",
      total, runs > 1 ? " (median of the runs after the first)" : "", mean_bits, worst_bits,
      out.level(), failure, keys.galois.keys.size(), key_mb, matrix_mb, peak_rss_mb());
  if (runs > 1) std::printf("  first bootstrap: %.1f ms\n", totals.front());
  if (compare_cpu) {
    std::printf("  the same bootstrap on the CPU backend: %s\n",
                identical == "true" ? "identical, word for word" : "DIFFERENT words");
  }
  return identical == "false" ? 1 : 0;
}

}  // namespace

int run_ckks(int argc, char** argv) {
  const std::string sub = argc > 2 ? argv[2] : "";
  if (sub == "bootstrap") return run_bootstrap(argc, argv);
  require(
      sub == "demo", ErrorCode::invalid_argument,
      "usage: safhire ckks demo [--set NAME] [--threads T] [--backend cpu|cuda] [--json]\n"
      "       safhire ckks bootstrap [--set NAME] [--slots S] [--slim] [--runs R] [--log-ratio B] "
      "[--max-babies B] [--seeded-keys] [--lazy-matrices] [--low-memory] [--unpacked] [--arcsine "
      "D] [--threads T] "
      "[--backend "
      "cpu|cuda] [--compare-cpu] [--json] [--insecure]");
  Options opt(argc, argv, 3);
  const std::string set = opt.get("set", "n14-l7");
  const unsigned threads = opt.number("threads", 1);
  const std::string backend = opt.get("backend", "cpu");
  const bool json = opt.flag("json");
  opt.finish();
  const CkksContext context(named_set(set));
  const auto ops = make_ckks_ops(context, backend, threads);
  const Encoder encoder(context, *ops);
  const Evaluator ev(context, *ops);
  StepTimer timed(*ops);
  auto& steps = timed.steps;

  core::OsRandom random;
  KeyGenerator gen(context, *ops, random);
  const SecretKey sk = timed("keygen secret", [&] { return gen.secret_key(); });
  const PublicKey pk = timed("keygen public", [&] { return gen.public_key(sk); });
  SwitchingKey rlk = timed("keygen relinearization", [&] { return gen.relinearization_key(sk); });
  const std::vector<int> rotation{1};
  GaloisKeys galois = timed("keygen rotation (1) + conjugation",
                            [&] { return gen.galois_keys(sk, rotation, true); });

  const std::size_t n = context.degree() / 2;
  std::mt19937_64 mt(std::random_device{}());
  std::uniform_real_distribution<double> u(-1, 1);
  Values a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = {u(mt), u(mt)};
    b[i] = {u(mt), u(mt)};
  }
  const double scale = std::exp2(context.params().log_scale);
  const std::uint32_t top = context.max_level();
  Encryptor enc(context, *ops, random);
  const Plaintext pa = timed("encode", [&] { return encoder.encode(a, scale, top); });
  const Plaintext pb = encoder.encode(b, scale, top);
  Ciphertext ca = timed("encrypt (public key)", [&] { return enc.encrypt(pa, pk); });
  Ciphertext cb = enc.encrypt(pb, pk);
  if (backend == "cuda") {
    // Keys and ciphertexts move to the device once; the evaluation below stays there.
    timed("keys and ciphertexts to the device", [&] {
      make_resident(*ops, rlk);
      make_resident(*ops, galois);
      make_resident(*ops, ca);
      make_resident(*ops, cb);
      return 0;
    });
  }

  auto check = [&](const Ciphertext& ct, const Values& want) {
    steps.back().bits = precision_bits(encoder.decode(decrypt(context, *ops, ct, sk)), want);
  };
  Values prod(n), rot(n), conj(n);
  for (std::size_t i = 0; i < n; ++i)
    prod[i] = a[i] * b[i];
  for (std::size_t i = 0; i < n; ++i) {
    rot[i] = prod[(i + 1) % n];
    conj[i] = std::conj(rot[i]);
  }
  const Values decoded =
      timed("decrypt + decode", [&] { return encoder.decode(decrypt(context, *ops, ca, sk)); });
  steps.back().bits = precision_bits(decoded, a);
  const Ciphertext sum = timed("add", [&] { return ev.add(ca, cb); });
  Values s(n);
  for (std::size_t i = 0; i < n; ++i)
    s[i] = a[i] + b[i];
  check(sum, s);
  const Ciphertext m =
      timed("multiply + relinearize", [&] { return ev.multiply_relinearize(ca, cb, rlk); });
  check(m, prod);
  const Ciphertext r = timed("rescale", [&] { return ev.rescale(m); });
  check(r, prod);
  const Ciphertext rr = timed("rotate by 1", [&] { return ev.rotate(r, 1, galois); });
  check(rr, rot);
  const Ciphertext cc = timed("conjugate", [&] { return ev.conjugate(rr, galois); });
  check(cc, conj);
  const auto bytes = timed("serialize ciphertext", [&] {
    Ciphertext host = cc;
    to_host(*ops, host);
    return serialize(context, host);
  });

  if (json) {
    std::printf(
        "{\"set\": \"%s\", \"N\": %u, \"L\": %u, \"dnum\": %u, \"threads\": %u, "
        "\"security_bits\": %.1f, \"ciphertext_bytes\": %zu, \"steps\": [",
        set.c_str(), context.degree(), top, context.params().dnum, threads,
        estimated_security(context.params()), bytes.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::printf("%s{\"step\": \"%s\", \"ms\": %.3f", i ? ", " : "", steps[i].name.c_str(),
                  steps[i].ms);
      if (!std::isnan(steps[i].bits)) std::printf(", \"precision_bits\": %.2f", steps[i].bits);
      std::printf("}");
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf(
      "CKKS %s on %s: N = %u, L = %u, dnum = %u, scale 2^%d, %.0f-bit security, %u thread%s\n",
      set.c_str(), backend.c_str(), context.degree(), top, context.params().dnum,
      context.params().log_scale, estimated_security(context.params()), threads,
      threads == 1 ? "" : "s");
  std::printf("  %-36s %10s  %s\n", "step", "ms", "precision (bits, vs double)");
  for (const auto& st : steps) {
    if (std::isnan(st.bits)) {
      std::printf("  %-36s %10.2f\n", st.name.c_str(), st.ms);
    } else {
      std::printf("  %-36s %10.2f  %.1f\n", st.name.c_str(), st.ms, st.bits);
    }
  }
  std::printf("  ciphertext: %zu bytes serialized\n", bytes.size());
  return 0;
}

}  // namespace safhire::apps
