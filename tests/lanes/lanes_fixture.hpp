// Shared pieces of the lanes tests: per space (the N = 2^12 test spaces, insecure, and on demand
// an N = 2^16 one: long_test_skip), one context with its CPU
// primitives, a secret key, the refresh's keys (with the plain refresh planned and whole-lane
// rotations by 1 and 3 blocks), and the encryptor, decryptor and evaluator, built once per
// process. Random integers come from GMP's generator; the oracle is GMP's own arithmetic mod p.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/lanes/lanes.hpp"

namespace safhire::lanes::testing {

struct LanesFixture {
  LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  core::SeededRandom random;
  ckks::KeyGenerator generator;
  ckks::SecretKey sk;
  LaneRefresher refresher;
  LaneKeys keys;
  LaneEncryptor encryptor;
  LaneDecryptor decryptor;
  LaneEvaluator evaluator;

  explicit LanesFixture(const std::string& name)
      : context(named_lane_space(name), /*allow_insecure=*/true),
        ops(ckks::make_cpu_rns_ops(context.ckks(), 2)),
        random(core::SeededRandom::from_counter(0x1a4e5)),
        generator(context.ckks(), *ops, random),
        sk(generator.secret_key()),
        refresher(context, *ops, RefreshParams{.plan_plain = true}),
        keys(refresher.keys(generator, sk, std::vector<int>{1, 3})),
        encryptor(context, *ops, random),
        decryptor(context, *ops, sk),
        evaluator(context, *ops) {}

  const mpz_class& p() const { return context.modulus(); }
};

// The reason to skip a test on space `name`: its N = 2^16 spaces run on demand only (key
// generation alone takes about 20 s and 4 GB), with SAFHIRE_LONG_TESTS=1. Empty: run it.
inline std::string long_test_skip(const std::string& name) {
  const char* asked = std::getenv("SAFHIRE_LONG_TESTS");
  if (named_lane_space(name).ckks.log_n < 16 || (asked != nullptr && std::string(asked) == "1"))
    return {};
  return "the N = 2^16 lane space " + name + " runs with SAFHIRE_LONG_TESTS=1";
}

inline LanesFixture& lanes_fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<LanesFixture>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<LanesFixture>(name);
  return *slot;
}

// `count` integers uniform in [0, p).
inline std::vector<mpz_class> random_integers(const mpz_class& p, std::size_t count,
                                              unsigned long seed) {
  gmp_randclass random(gmp_randinit_default);
  random.seed(seed);
  std::vector<mpz_class> out(count);
  for (auto& x : out)
    x = random.get_z_range(p);
  return out;
}

inline mpz_class mod(const mpz_class& x, const mpz_class& p) {
  mpz_class r = x % p;
  if (r < 0) r += p;
  return r;
}

// The largest |digit| of a decryption.
inline double largest_digit(const LaneDecoding& d) {
  double m = 0;
  for (const auto& lane : d.digits) {
    for (std::int64_t v : lane)
      m = std::max(m, std::fabs(static_cast<double>(v)));
  }
  return m;
}

}  // namespace safhire::lanes::testing
