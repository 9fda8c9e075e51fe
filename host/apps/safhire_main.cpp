// The `safhire` command-line program: encrypted inference (demo, serve, infer), a description
// of the rings, primes, parameter sets and CUDA devices of this build, and an NTT check.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ckks_commands.hpp"
#if SAFHIRE_HAVE_LANES
#include "lanes_commands.hpp"
#endif
#include "inference_commands.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/core/version.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/ring/simd.hpp"
#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/params.hpp"
#if SAFHIRE_HAVE_CUDA
#include "safhire/cuda/device.hpp"
#endif

namespace {

using safhire::ring::RingParams;

const RingParams kPaperRings[] = {RingParams(3, 7), RingParams(7, 4), RingParams(5, 5)};

void print_usage() {
  std::puts(
      "usage: safhire <command> [options]\n"
      "  demo                 encrypted inference of Fashion-MNIST test images, in process:\n"
      "                       accuracy, agreement with plaintext, time, communication\n"
      "      [--images N (25)] [--first K (0)] [--gamma G (2)] [--mode fast|paper]\n"
      "      [--model FILE] [--set NAME] [--threads T (all cores)] [--backend cpu|cuda] [--json]\n"
      "  serve                serve encrypted inference over gRPC (Ctrl-C or SIGTERM: the\n"
      "                       requests in flight finish, then it stops)\n"
      "      [--port P (7788; 0: a free one) | --listen HOST:PORT (127.0.0.1:7788)]\n"
      "      [--model FILE] [--threads T per request (1)] [--backend cpu|cuda]\n"
      "      [--tls-cert FILE --tls-key FILE (PEM; plaintext without)]\n"
      "      [--workers W (4)] [--queue Q (64) requests waiting for a worker]\n"
      "      [--max-sessions S (64)] [--max-sessions-per-client C (16)]\n"
      "      [--session-idle SECONDS (120)] [--evict-after SECONDS (10)]\n"
      "      [--memory-budget MIB (8192) for sessions] [--transport-memory MIB (512) for gRPC]\n"
      "      [--connection-idle SECONDS (300)] [--keepalive SECONDS (30)]\n"
      "      [--handshake-timeout SECONDS (10)] [--calls-per-connection N (4)] [--grace S (30)]\n"
      "      [--flood F (noise flooding: every result +-F uniform; 0)]\n"
      "  infer                encrypted inference against a server\n"
      "      [--server HOST:PORT (127.0.0.1:7788)] [--images N (10)] [--first K (0)]\n"
      "      [--set NAME] [--gamma G (2)] [--tls-ca FILE [--tls-name NAME]]\n"
      "      [--deadline SECONDS per request (300)]\n"
      "  bench                one encrypted inference of a synthetic ResNet of the paper's\n"
      "                       shapes, checked against plaintext: time and communication;\n"
      "                       exit status 1 when the logits differ from plaintext's\n"
      "      [--model resnet20|resnet18|resnet34] [--bits 8|12|16] [--gamma G (2)]\n"
      "      [--threads T] [--set NAME] [--backend cpu|cuda] [--json]\n"
      "  plan                 per-round chunks, packs, precisions, noise, key switches and\n"
      "                       bytes of an inference, before running it\n"
      "      [--model FILE] [--set NAME] [--gamma G (2)] [--mode fast|paper]\n"
      "  accuracy             plaintext quantized accuracy of a model on Fashion-MNIST test\n"
      "                       images (the C++ integer evaluator; no encryption)\n"
      "      [--model FILE] [--images N (0: all)] [--first K (0)] [--threads T (all cores)]\n"
      "      [--flood F (each accumulator +-F uniform, as serve --flood)] [--json]\n"
      "  attack               the query attack on the shuffle (zero and basis-vector queries,\n"
      "                       sorted responses) against a server, checked against --model\n"
      "      [--server HOST:PORT (none: in process, with --flood F)] [--model FILE]\n"
      "      [--rounds all|R,R.. (0)] [--repeats R (1)] [--alone] [--set NAME] [--gamma G]\n"
      "      [--patience P (0; > 0: rounds after the first probed again until P sessions\n"
      "      in a row find no new distinct column)] [--max-sessions N] [--json]\n"
      "  failures             decryption failures through whole inferences: every result\n"
      "                       against the plaintext evaluator, its noise against the\n"
      "                       estimate; exit status 1 when any result is wrong\n"
      "      [--model FILE] [--set NAME] [--gamma G (2)] [--mode fast|paper]\n"
      "      [--results N (1e7)] [--images N (100)] [--first K] [--threads T] [--json]\n"
      "  ckks demo            CKKS: encode, encrypt, multiply, rescale, rotate, conjugate and\n"
      "                       decrypt random vectors; time and precision of each step\n"
      "      [--set NAME (n14-l7)] [--threads T (1)] [--backend cpu|cuda] [--json]\n"
      "  ckks bootstrap       CKKS bootstrapping of random full slots: key generation, each\n"
      "                       step timed, precision and levels left\n"
      "      [--set NAME (n12-boot-test)] [--threads T (1)] [--backend cpu|cuda] [--json]\n"
      "      [--insecure (needed for test rings such as n12-boot-test)]\n"
      "  lanes demo           exact integers modulo beta^n + 1 in CKKS lanes: a chain of K\n"
      "                       products of random integers with the refreshes it needs, each\n"
      "                       result checked against GMP; exit status 1 on a wrong integer\n"
      "      [--space NAME | --n N (4096) [--beta B (2)] [--products-per-refresh k (1)]]\n"
      "      [--products K (16)] [--threads T] [--backend cpu|cuda] [--low-memory] [--seed S]\n"
      "      [--json] [--insecure]\n"
      "  lanes refresh        lane refreshes of products, step by step, checked against GMP\n"
      "      [--space NAME | --n N [--beta B] [--products-per-refresh k]] [--runs R (1)]\n"
      "      [--mode clean|plain|unreduced]\n"
      "      [--threads T] [--backend cpu|cuda] [--low-memory] [--compare-cpu] [--json]\n"
      "  lanes field          prime and extension fields in lanes (p = beta^(n/m) + 1): a chain\n"
      "                       of K products of random elements, refreshed, checked against GMP\n"
      "      [--space NAME (field-n16-65537)] [--products K (4)] [--seed S] [--threads T]\n"
      "      [--backend cpu|cuda] [--low-memory] [--compare-cpu] [--json] [--insecure]\n"
      "  --version            print the version\n"
      "  info                 rings, NTT primes, parameter sets (part 1, CKKS, lanes), CPU "
      "kernels\n"
      "                       and CUDA devices\n"
      "  ntt-demo [t a]       NTT round trip and an exact product checked against the\n"
      "                       schoolbook oracle (default: every ring of the paper)");
}

std::uint32_t parse_u32(const char* text) {
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || value > 0xffffffffUL) {
    throw safhire::Error(safhire::ErrorCode::invalid_argument,
                         std::string("expected a non-negative integer, got '") + text + "'");
  }
  return static_cast<std::uint32_t>(value);
}

std::string cuda_status() {
#if SAFHIRE_HAVE_CUDA
  return safhire::cuda::describe_devices();
#else
  return "CUDA: not built (no nvcc at configure time); CPU path only";
#endif
}

int run_info() {
  std::printf("Safhire %s\n\n", safhire::kVersion);
  std::printf("CPU kernels: %s (available:",
              std::string(to_string(safhire::ring::default_simd())).c_str());
  for (auto isa : safhire::ring::available_simd()) {
    std::printf(" %s", std::string(to_string(isa)).c_str());
  }
  std::printf(")\n\nRings (R = Z[X]/Phi_M, M = t^a) and their NTT primes q = 1 mod M:\n");
  for (const RingParams& ring : kPaperRings) {
    std::printf("  %s\n", ring.name().c_str());
    for (std::uint64_t q : safhire::core::primes_below(62, ring.M(), 2)) {
      std::printf("    q = %llu (%d bits), omega = %llu\n", static_cast<unsigned long long>(q),
                  64 - __builtin_clzll(q),
                  static_cast<unsigned long long>(safhire::core::root_of_unity(q, ring.M())));
    }
  }
  std::printf(
      "\nParameter sets (security: %s; a set below 128 bits is refused unless asked for):\n",
      std::string(safhire::rlwe::kSecurityMethod).c_str());
  std::printf("  %-12s %-5s %3s %7s %-18s %9s %9s %15s %13s\n", "name", "ring", "b", "log2 s",
              "gadget g=0 / g>=1", "security", "(2022)", "P[fail] extract", "P[fail] pack");
  for (const auto& set : safhire::rlwe::builtin_parameter_sets()) {
    const auto sec = set.security();
    const auto extract = safhire::rlwe::estimate_extraction_noise(set, 0);
    const auto pack = safhire::rlwe::estimate_packing_noise(set);
    const std::string ring = std::to_string(set.ring.t()) + "^" + std::to_string(set.ring.a());
    const std::string gadgets =
        std::to_string(set.gadget(0).base) + "^" + std::to_string(set.gadget(0).levels) + " / " +
        std::to_string(set.gadget(1).base) + "^" + std::to_string(set.gadget(1).levels);
    std::printf("  %-12s %-5s %3u %7.1f %-18s %9.1f %9.1f %15.1e %13.1e\n", set.name.c_str(),
                ring.c_str(), set.message_bits, set.log2_sigma, gadgets.c_str(), sec.bits,
                sec.bits_2022, extract.failure_probability, pack.failure_probability);
  }
  safhire::apps::print_ckks_sets();
#if SAFHIRE_HAVE_LANES
  safhire::apps::print_lane_spaces();
#endif
  std::printf("\n%s\n", cuda_status().c_str());
  return 0;
}

int run_ntt_demo(const std::vector<RingParams>& rings) {
  std::printf("CPU kernels: %s; times are means of 200 calls on one thread\n",
              std::string(to_string(safhire::ring::default_simd())).c_str());
  std::mt19937_64 rng(20261130);
  bool all_ok = true;
  for (const RingParams& ring : rings) {
    safhire::ring::ExactProduct product(ring);
    const auto& plan = product.plan(0);
    const std::uint64_t q = plan.modulus();
    std::vector<std::uint64_t> f(ring.N()), g(ring.N());
    for (auto& x : f)
      x = rng() % q;
    g = f;
    plan.forward(g);
    plan.inverse(g);
    const bool round_trip = f == g;

    // A torus polynomial times a binary one, exact mod 2^64, against the schoolbook oracle.
    safhire::ring::TorusPoly a(ring), s(ring), c(ring), oracle(ring);
    for (auto& x : a.coeffs())
      x = rng();
    for (auto& x : s.coeffs())
      x = rng() & 1U;
    product.multiply(a.coeffs(), s.coeffs(), c.coeffs());
    safhire::ring::schoolbook_mul(ring, a.coeffs(), s.coeffs(), oracle.coeffs(),
                                  safhire::ring::TorusArith{});
    const bool exact = std::equal(c.coeffs().begin(), c.coeffs().end(), oracle.coeffs().begin());
    all_ok = all_ok && round_trip && exact;

    // Mean times over repeated calls (warm caches), one thread.
    constexpr int kRepeats = 200;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRepeats; ++i) {
      plan.forward(g);
      plan.inverse(g);
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRepeats; ++i)
      product.multiply(a.coeffs(), s.coeffs(), c.coeffs());
    const auto t2 = std::chrono::steady_clock::now();
    auto mean_us = [](auto d) {
      return std::chrono::duration<double, std::micro>(d).count() / kRepeats;
    };
    std::printf("%-26s NTT round trip %-4s (%5.1f us)   exact product mod 2^64 %-4s (%5.1f us)\n",
                ring.name().c_str(), round_trip ? "ok" : "FAIL", mean_us(t1 - t0),
                exact ? "ok" : "FAIL", mean_us(t2 - t1));
  }
  std::printf("%s\n", all_ok ? "all checks passed" : "CHECKS FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string_view command = argc > 1 ? argv[1] : "";
    if (command == "--version" || command == "version") {
      std::printf("safhire %s\n", safhire::kVersion);
      return 0;
    }
    if (command == "info") return run_info();
    if (command == "demo") return safhire::apps::run_demo(argc, argv);
    if (command == "serve") return safhire::apps::run_serve(argc, argv);
    if (command == "infer") return safhire::apps::run_infer(argc, argv);
    if (command == "bench") return safhire::apps::run_bench(argc, argv);
    if (command == "plan") return safhire::apps::run_plan(argc, argv);
    if (command == "accuracy") return safhire::apps::run_accuracy(argc, argv);
    if (command == "attack") return safhire::apps::run_attack(argc, argv);
    if (command == "failures") return safhire::apps::run_failures(argc, argv);
    if (command == "ckks") return safhire::apps::run_ckks(argc, argv);
#if SAFHIRE_HAVE_LANES
    if (command == "lanes") return safhire::apps::run_lanes(argc, argv);
#endif
    if (command == "ntt-demo") {
      if (argc == 4) return run_ntt_demo({RingParams(parse_u32(argv[2]), parse_u32(argv[3]))});
      return run_ntt_demo({std::begin(kPaperRings), std::end(kPaperRings)});
    }
    print_usage();
    return command.empty() || command == "--help" || command == "help" ? 0 : 2;
  } catch (const safhire::Error& e) {
    std::fprintf(stderr, "safhire: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "safhire: %s\n", e.what());
    return 1;
  }
}
