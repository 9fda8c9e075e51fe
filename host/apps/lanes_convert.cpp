// `safhire lanes convert`: the digit conversions form B -> form A -> form B (lanes/convert.hpp)
// on random integers, --runs times, every digit checked where it lands: each of the N digits of a
// ciphertext decrypted from its slot in form A (slot_of_digit) and rounded must be the digit that
// was encrypted, and the round trip must decrypt to the same integers (GMP). Exit 1 on any wrong
// digit or integer.
#include <gmpxx.h>

#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
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

}  // namespace

int run_lanes_convert(int argc, char** argv) {
  Options opt(argc, argv, 3);
  const std::uint32_t n = opt.number("n", 1024), log_n = opt.number("log-n", 16);
  const std::uint32_t beta = opt.number("beta", 2);
  const unsigned runs = opt.number("runs", 16), threads = opt.number("threads", 1);
  const unsigned seed = opt.number("seed", 0);
  const bool insecure = opt.flag("insecure"), json_out = opt.flag("json");
  opt.finish();
  require(runs >= 1 && runs <= 10000, ErrorCode::invalid_argument, "--runs must be in [1, 10^4]");
  require(threads >= 1 && threads <= 1024, ErrorCode::invalid_argument,
          "--threads must be in [1, 1024]");
  const LaneContext context(conversion_space(log_n, n, beta), insecure);
  const LaneSpace& space = context.space();
  const auto ops = make_ckks_ops(context.ckks(), "cpu", threads);
  core::OsRandom random;
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const LaneConverter converter(context, *ops);
  ckks::GaloisKeys keys;
  converter.add_keys(generator, sk, keys);
  const LaneEncoder encoder(context, *ops);
  const LaneEncryptor encryptor(context, *ops, random);
  const LaneDecryptor decryptor(context, *ops, sk);
  const ckks::Encoder slots_encoder(context.ckks(), *ops);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(seed != 0 ? seed : std::random_device{}());

  std::uint64_t digits_checked = 0, wrong_digits = 0, wrong_integers = 0;
  double worst = 0;
  std::vector<double> to_slots_ms, to_lanes_ms;
  const std::uint32_t half = space.lane_slots();
  for (unsigned run = 0; run < runs; ++run) {
    std::vector<mpz_class> values(space.lanes());
    for (auto& v : values)
      v = gmp.get_z_range(context.modulus());
    const LaneDigits digits = encoder.digits(values);
    const LaneCiphertext x = encryptor.encrypt_digits(digits, sk);
    auto t0 = Clock::now();
    const DigitSlots a = converter.to_slots(x, keys);
    to_slots_ms.push_back(ms_since(t0));
    // Every digit in its slot: digit t < n/2 in `low`, t + n/2 in `high`, both real.
    const auto low = slots_encoder.decode(ckks::decrypt(context.ckks(), *ops, a.low, sk));
    const auto high = slots_encoder.decode(ckks::decrypt(context.ckks(), *ops, a.high, sk));
    for (std::uint32_t r = 0; r < space.lanes(); ++r) {
      for (std::uint32_t t = 0; t < half; ++t) {
        const std::uint32_t s = converter.slot_of_digit(r, t);
        for (const auto& [slot, digit] :
             {std::pair{low[s], digits[r][t]}, std::pair{high[s], digits[r][t + half]}}) {
          const double error = std::fabs(slot.real() - static_cast<double>(digit));
          worst = std::max(worst, std::max(error, std::fabs(slot.imag())));
          wrong_digits += std::llround(slot.real()) == digit ? 0 : 1;
          ++digits_checked;
        }
      }
    }
    t0 = Clock::now();
    const LaneCiphertext back = converter.to_lanes(a, keys);
    to_lanes_ms.push_back(ms_since(t0));
    const LaneDecoding d = decryptor.decrypt(back);
    for (std::size_t r = 0; r < values.size(); ++r)
      wrong_integers += d.integers[r] == values[r] ? 0 : 1;
  }
  if (json_out) {
    JsonWriter json;
    json.begin_object();
    write_space(json, context);
    json.value("threads", threads)
        .value("runs", runs)
        .value("digits_checked", digits_checked)
        .value("wrong_digits", wrong_digits)
        .value("integers_checked", static_cast<std::uint64_t>(runs) * space.lanes())
        .value("wrong_integers", wrong_integers)
        .value("largest_digit_error", worst)
        .value("to_slots_ms_median", median(to_slots_ms))
        .value("to_lanes_ms_median", median(to_lanes_ms))
        .end_object();
    std::printf("%s\n", json.str().c_str());
  } else {
    std::printf(
        "%s: %u runs, %llu digits checked in form A, %llu wrong (largest error %.3g), %llu "
        "integers after the round trip, %llu wrong; B -> A %.1f ms, A -> B %.1f ms (medians)\n",
        space.name.c_str(), runs, static_cast<unsigned long long>(digits_checked),
        static_cast<unsigned long long>(wrong_digits), worst,
        static_cast<unsigned long long>(runs) * space.lanes(),
        static_cast<unsigned long long>(wrong_integers), median(to_slots_ms), median(to_lanes_ms));
  }
  return wrong_digits == 0 && wrong_integers == 0 ? 0 : 1;
}

}  // namespace safhire::apps
