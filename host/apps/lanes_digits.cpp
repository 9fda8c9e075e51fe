// `safhire lanes digits`: the operations on canonical digits (lanes/digits.hpp) on random integers
// and, in the first run, adversarial ones (beta^n, beta^n - 1 with every digit at beta - 1, 0, 1,
// equal operands), --runs times: to_digits from form B as a refresh leaves it (beta = 2; every
// digit of every lane checked), [A < B], [A = B], one digit and one bit of A (positions drawn at
// random, beta^n's extra bit included), and from_digits to form B, every lane's result decrypted
// and checked against GMP. Exit 1 on any wrong result. --no-to-digits skips to_digits (minutes a
// call at N = 2^16).
#include <gmpxx.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "command_support.hpp"
#include "lanes_commands.hpp"
#include "options.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/lanes/lanes.hpp"

namespace safhire::apps {

namespace {

using namespace safhire::lanes;
using Clock = std::chrono::steady_clock;

// Digit t of A (0 for beta^n, whose n-digit form is a_0 = -1).
long digit_of(const mpz_class& a, const LaneContext& context, std::uint32_t t) {
  if (a == context.modulus() - 1) return 0;
  mpz_class power;
  mpz_ui_pow_ui(power.get_mpz_t(), context.space().base, t);
  return mpz_class((a / power) % context.space().base).get_si();
}

}  // namespace

int run_lanes_digits(int argc, char** argv) {
  Options opt(argc, argv, 3);
  const std::uint32_t n = opt.number("n", 1024), log_n = opt.number("log-n", 16);
  const std::uint32_t beta = opt.number("beta", 2);
  const unsigned runs = opt.number("runs", 4), threads = opt.number("threads", 1);
  const unsigned seed = opt.number("seed", 0);
  const bool insecure = opt.flag("insecure"), json_out = opt.flag("json");
  const bool skip_to_digits = opt.flag("no-to-digits");
  opt.finish();
  require(runs >= 1 && runs <= 1000, ErrorCode::invalid_argument, "--runs must be in [1, 1000]");
  require(threads >= 1 && threads <= 1024, ErrorCode::invalid_argument,
          "--threads must be in [1, 1024]");
  const LaneContext context(conversion_space(log_n, n, beta), insecure);
  const LaneSpace& space = context.space();
  const mpz_class& p = context.modulus();
  const auto ops = make_ckks_ops(context.ckks(), "cpu", threads);
  core::OsRandom random;
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const ckks::SwitchingKey rlk = generator.relinearization_key(sk);
  const LaneConverter converter(context, *ops);
  const DigitEvaluator evaluator(context, *ops);
  ckks::GaloisKeys lane_keys, digit_keys;  // the converter's at its levels, the digits' at the top
  converter.add_keys(generator, sk, lane_keys);
  evaluator.add_keys(generator, sk, digit_keys);
  // to_digits (beta = 2): the refresh, its keys with the digits' rotations and the converter's.
  const bool with_to_digits = beta == 2 && !skip_to_digits;
  const LaneRefresher refresher(context, *ops);
  const auto digit_converter = DigitEvaluator::digit_converter(context, *ops);
  LaneKeys refresh_keys;
  if (with_to_digits) {
    refresh_keys = refresher.keys(generator, sk);
    evaluator.add_keys(generator, sk, refresh_keys.galois);
    digit_converter->add_keys(generator, sk, refresh_keys.galois);
  }
  const LaneEncryptor lane_encryptor(context, *ops, random);
  const DigitEncryptor encryptor(context, *ops, random);
  const DigitDecryptor decryptor(context, *ops, sk);
  const LaneDecryptor lane_decryptor(context, *ops, sk);
  gmp_randclass gmp(gmp_randinit_default);
  const unsigned drawn = seed != 0 ? seed : std::random_device{}();
  gmp.seed(drawn);
  std::mt19937_64 positions(drawn);
  const bool bits = std::has_single_bit(beta);
  const std::uint64_t bit_count = bits ? std::countr_zero(beta) * std::uint64_t{n} : 0;

  std::uint64_t checked = 0, wrong = 0, digits_converted = 0, wrong_digits = 0;
  double worst = 0;
  std::vector<double> lt_ms, eq_ms, digit_ms, bit_ms, from_ms, to_digits_ms;
  for (unsigned run = 0; run < runs; ++run) {
    std::vector<mpz_class> a(space.lanes()), b(space.lanes());
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      a[r] = gmp.get_z_range(p);
      b[r] = r % 4 == 0 ? a[r] : mpz_class(gmp.get_z_range(p));
    }
    if (run == 0) {
      const mpz_class adversarial[][2] = {{p - 1, p - 1}, {p - 1, 0},     {0, p - 1},
                                          {p - 2, p - 1}, {p - 1, p - 2}, {p - 2, p - 2},
                                          {0, 1},         {1, 0}};
      for (std::uint32_t r = 0; r < space.lanes() && r < std::size(adversarial); ++r) {
        a[r] = adversarial[r][0];
        b[r] = adversarial[r][1];
      }
    }
    if (with_to_digits) {  // every digit of every lane from form B
      // Refreshed: digits up to (beta + 1)(h' + 1)/2, the redundant form a computation leaves.
      const LaneCiphertext lanes_a = refresher.refresh(lane_encryptor.encrypt(a, sk), refresh_keys);
      const auto t0 = Clock::now();
      const DigitSlots got =
          evaluator.to_digits(lanes_a, refresher, *digit_converter, refresh_keys);
      to_digits_ms.push_back(ms_since(t0));
      const DigitSlotsDecoding d = decryptor.decrypt(got);
      worst = std::max(worst, d.max_error);
      for (std::uint32_t r = 0; r < space.lanes(); ++r) {
        const auto want = to_digits(a[r], n, beta, DigitForm::canonical);
        for (std::uint32_t t = 0; t < n; ++t)
          wrong_digits += d.digits[r][t] == want[t] ? 0 : 1;
        digits_converted += n;
      }
    }
    const DigitSlots x = encryptor.encrypt(a, sk), y = encryptor.encrypt(b, sk);
    auto check = [&](const LaneValues& v, auto&& want) {
      const LaneValuesDecoding d = decryptor.decrypt(v);
      worst = std::max(worst, d.max_error);
      for (std::uint32_t r = 0; r < space.lanes(); ++r) {
        wrong += d.values[r] == want(r) ? 0 : 1;
        ++checked;
      }
    };
    auto t0 = Clock::now();
    const LaneValues lt = evaluator.less_than(x, y, rlk, digit_keys);
    lt_ms.push_back(ms_since(t0));
    check(lt, [&](std::uint32_t r) { return a[r] < b[r] ? 1L : 0L; });
    t0 = Clock::now();
    const LaneValues eq = evaluator.equal(x, y, rlk, digit_keys);
    eq_ms.push_back(ms_since(t0));
    check(eq, [&](std::uint32_t r) { return a[r] == b[r] ? 1L : 0L; });
    const auto t = static_cast<std::uint32_t>(positions() % n);
    t0 = Clock::now();
    const LaneValues digit = evaluator.digit(x, t, rlk, digit_keys);
    digit_ms.push_back(ms_since(t0));
    check(digit, [&](std::uint32_t r) { return digit_of(a[r], context, t); });
    if (bits) {
      const std::uint64_t j = positions() % (bit_count + 1);
      t0 = Clock::now();
      const LaneValues bit = evaluator.bit(x, j, rlk, digit_keys);
      bit_ms.push_back(ms_since(t0));
      check(bit,
            [&](std::uint32_t r) { return static_cast<long>(mpz_tstbit(a[r].get_mpz_t(), j)); });
    }
    t0 = Clock::now();
    const LaneCiphertext lanes = converter.from_digits(x, lane_keys);
    from_ms.push_back(ms_since(t0));
    const LaneDecoding back = lane_decryptor.decrypt(lanes);
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      wrong += back.integers[r] == a[r] ? 0 : 1;
      ++checked;
    }
  }
  if (json_out) {
    JsonWriter json;
    json.begin_object();
    write_space(json, context);
    json.value("threads", threads)
        .value("runs", runs)
        .value("results_checked", checked)
        .value("wrong", wrong)
        .value("digits_converted", digits_converted)
        .value("wrong_digits", wrong_digits)
        .value("to_digits_ms_median", with_to_digits ? median(to_digits_ms) : 0.0)
        .value("largest_error", worst)
        .value("less_than_ms_median", median(lt_ms))
        .value("equal_ms_median", median(eq_ms))
        .value("digit_ms_median", median(digit_ms))
        .value("bit_ms_median", bits ? median(bit_ms) : 0.0)
        .value("from_digits_ms_median", median(from_ms))
        .end_object();
    std::printf("%s\n", json.str().c_str());
  } else {
    std::printf(
        "%s: %u runs, %llu digits from to_digits, %llu wrong (%.0f ms a call); %llu results "
        "checked against GMP, %llu wrong (largest error %.3g); medians: less_than %.1f ms, equal "
        "%.1f ms, digit %.1f ms, bit %.1f ms, from_digits %.1f ms\n",
        space.name.c_str(), runs, static_cast<unsigned long long>(digits_converted),
        static_cast<unsigned long long>(wrong_digits), with_to_digits ? median(to_digits_ms) : 0.0,
        static_cast<unsigned long long>(checked), static_cast<unsigned long long>(wrong), worst,
        median(lt_ms), median(eq_ms), median(digit_ms), bits ? median(bit_ms) : 0.0,
        median(from_ms));
  }
  return wrong == 0 && wrong_digits == 0 ? 0 : 1;
}

}  // namespace safhire::apps
