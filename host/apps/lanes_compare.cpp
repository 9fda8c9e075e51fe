// `safhire lanes compare`: the lanes (integers modulo 2^n + 1, n-digit lanes, beta = 2) beside
// the mod-2^n baseline (lanes/baseline.hpp) at each n asked, on the same ring, thread count and
// code and configuration (--low-memory for both: seeded keys, lazy DFT matrices, at most 8 baby
// rotations, which the baseline's longer chain needs within 24 GB at N = 2^16): for each, the
// refresh of a product and the amortized product (one product of two ciphertexts at rest and the
// refresh after it, per integer), medians of --repeats runs, every integer checked against GMP's
// product (exit 1 on any wrong one).
#include <gmpxx.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
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

// prefix + "n<log_n>-<n>" + suffix.
std::string space_name(const char* prefix, std::uint32_t log_n, std::uint32_t n,
                       const char* suffix) {
  std::string s = prefix;
  s += "n";
  s += std::to_string(log_n);
  s += "-";
  s += std::to_string(n);
  s += suffix;
  return s;
}

struct Measured {
  std::string space;
  std::uint32_t integers = 0, levels = 0, log_qp = 0, dnum = 0;
  double security_bits = 0, key_mb = 0;
  double refresh_ms = 0, product_ms = 0, amortized_ms = 0;  // medians; amortized per integer
  std::uint64_t wrong = 0, checked = 0;
};

struct CompareOptions {
  std::uint32_t log_n;
  unsigned threads, repeats;
  bool insecure;
  unsigned seed;
  bool low_memory;  // both systems: seeded keys, lazy matrices, at most 8 babies
};

// One system on one space: keys, two random operands, a warm-up refresh, then `repeats` timed
// products and refreshes, each result decrypted and compared with GMP's. System is the lanes'
// (refresh through LaneRefresher) or the baseline's (Mod2nBaseline).
template <class Plan, class Multiply, class Refresh, class Encode, class Values>
Measured measure(const LaneSpace& space, const CompareOptions& o, const mpz_class& modulus,
                 std::uint32_t integers, Plan make_plan, Multiply multiply, Refresh refresh,
                 Encode encode, Values values) {
  const LaneContext context(space, o.insecure);
  const auto ops = make_ckks_ops(context.ckks(), "cpu", o.threads);
  RefreshParams params;
  params.lazy_matrices = o.low_memory;
  params.max_babies = o.low_memory ? 8 : 0;
  auto plan = make_plan(context, *ops, params);
  core::OsRandom random;
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  generator.set_seeded(o.low_memory);
  const ckks::SecretKey sk = generator.secret_key();
  const LaneKeys keys = plan->keys(generator, sk);
  Measured m;
  m.space = space.name;
  m.integers = integers;
  m.levels = space.top();
  m.log_qp = static_cast<std::uint32_t>(space.ckks.log_qp());
  m.dnum = space.ckks.dnum;
  m.security_bits = space.security_bits();
  m.key_mb = static_cast<double>(ckks::key_bytes(keys)) / (1 << 20);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(o.seed != 0 ? o.seed : std::random_device{}());
  std::vector<mpz_class> a(integers), b(integers);
  for (auto* v : {&a, &b}) {
    for (auto& x : *v)
      x = gmp.get_z_range(modulus);
  }
  const LaneEncryptor encryptor(context, *ops, random);
  const LaneDecryptor decryptor(context, *ops, sk);
  const LaneCiphertext x = encryptor.encrypt_digits(encode(*plan, context, *ops, a), sk);
  const LaneCiphertext y = encryptor.encrypt_digits(encode(*plan, context, *ops, b), sk);
  auto check = [&](const LaneCiphertext& out) {
    const std::vector<mpz_class> got = values(*plan, decryptor.decrypt(out));
    for (std::size_t r = 0; r < integers; ++r)
      m.wrong += got[r] == a[r] * b[r] % modulus ? 0 : 1;
    m.checked += integers;
  };
  check(refresh(*plan, multiply(*plan, context, *ops, x, y, keys), keys));  // the warm-up
  std::vector<double> products, refreshes;
  for (unsigned i = 0; i < o.repeats; ++i) {
    auto t0 = Clock::now();
    const LaneCiphertext p = multiply(*plan, context, *ops, x, y, keys);
    products.push_back(ms_since(t0));
    t0 = Clock::now();
    check(refresh(*plan, p, keys));
    refreshes.push_back(ms_since(t0));
  }
  m.product_ms = median(products);
  m.refresh_ms = median(refreshes);
  m.amortized_ms = (m.product_ms + m.refresh_ms) / integers;
  return m;
}

Measured measure_lanes(std::uint32_t n, const CompareOptions& o) {
  const LaneSpace space = make_lane_space(space_name("lanes-", o.log_n, n, "-b2"), o.log_n, n, 2);
  mpz_class p;
  mpz_ui_pow_ui(p.get_mpz_t(), 2, n);
  p += 1;
  return measure(
      space, o, p, space.lanes(),
      [](const LaneContext& c, const ckks::RnsOps& ops, const RefreshParams& params) {
        return std::make_unique<LaneRefresher>(c, ops, params);
      },
      [](const LaneRefresher&, const LaneContext& c, const ckks::RnsOps& ops,
         const LaneCiphertext& x, const LaneCiphertext& y, const LaneKeys& keys) {
        return LaneEvaluator(c, ops).multiply(x, y, keys.relinearization);
      },
      [](const LaneRefresher& r, const LaneCiphertext& x, const LaneKeys& keys) {
        return r.refresh(x, keys);
      },
      [](const LaneRefresher&, const LaneContext& c, const ckks::RnsOps& ops,
         const std::vector<mpz_class>& v) { return LaneEncoder(c, ops).digits(v); },
      [](const LaneRefresher&, const LaneDecoding& d) { return d.integers; });
}

Measured measure_baseline(std::uint32_t n, const CompareOptions& o) {
  const LaneSpace space = make_baseline_space(space_name("baseline-", o.log_n, n, ""), o.log_n, n);
  mpz_class m;
  mpz_ui_pow_ui(m.get_mpz_t(), 2, n);
  return measure(
      space, o, m, space.lanes(),
      [](const LaneContext& c, const ckks::RnsOps& ops, const RefreshParams& params) {
        return std::make_unique<Mod2nBaseline>(c, ops, params);
      },
      [](const Mod2nBaseline& b, const LaneContext&, const ckks::RnsOps&, const LaneCiphertext& x,
         const LaneCiphertext& y,
         const LaneKeys& keys) { return b.multiply(x, y, keys.relinearization); },
      [](const Mod2nBaseline& b, const LaneCiphertext& x, const LaneKeys& keys) {
        return b.refresh(x, keys);
      },
      [](const Mod2nBaseline& b, const LaneContext&, const ckks::RnsOps&,
         const std::vector<mpz_class>& v) { return b.digits(v); },
      [](const Mod2nBaseline& b, const LaneDecoding& d) { return b.values(d); });
}

void write_measured(JsonWriter& json, const char* key, const Measured& m) {
  json.begin_object(key)
      .value("space", m.space)
      .value("integers_per_ciphertext", m.integers)
      .value("levels", m.levels)
      .value("log2_qp", m.log_qp)
      .value("dnum", m.dnum)
      .value("security_bits", m.security_bits)
      .value("key_mb", m.key_mb)
      .value("refresh_ms_median", m.refresh_ms)
      .value("product_ms_median", m.product_ms)
      .value("amortized_ms_per_integer_product", m.amortized_ms)
      .value("wrong_integers", m.wrong)
      .value("integers_checked", m.checked)
      .end_object();
}

std::vector<std::uint32_t> parse_degrees(const std::string& list) {
  std::vector<std::uint32_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    require(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
                item.size() <= 6,
            ErrorCode::invalid_argument, "--n takes a comma-separated list of degrees");
    out.push_back(static_cast<std::uint32_t>(std::stoul(item)));
  }
  require(!out.empty() && out.size() <= 32, ErrorCode::invalid_argument,
          "--n takes 1 to 32 degrees");
  return out;
}

}  // namespace

int run_lanes_compare(int argc, char** argv) {
  Options opt(argc, argv, 3);
  const std::vector<std::uint32_t> degrees =
      parse_degrees(opt.get("n", "8,16,32,64,128,256,512,1024"));
  CompareOptions o{opt.number("log-n", 16), opt.number("threads", 1), opt.number("repeats", 3),
                   opt.flag("insecure"),    opt.number("seed", 0),    opt.flag("low-memory")};
  const bool json_out = opt.flag("json");
  opt.finish();
  require(o.threads >= 1 && o.threads <= 1024, ErrorCode::invalid_argument,
          "--threads must be in [1, 1024]");
  require(o.repeats >= 1 && o.repeats <= 100, ErrorCode::invalid_argument,
          "--repeats must be in [1, 100]");
  // Every space first (a bad --n or an insecure chain is refused before minutes of work).
  for (const std::uint32_t n : degrees) {
    const LaneSpace l = make_lane_space("lanes", o.log_n, n, 2);
    const LaneSpace b = make_baseline_space("baseline", o.log_n, n);
    l.validate(o.insecure);
    b.validate(o.insecure);
  }
  struct Row {
    std::uint32_t n;
    Measured lanes, baseline;
  };
  std::vector<Row> rows;
  std::uint64_t wrong = 0, checked = 0;
  for (const std::uint32_t n : degrees) {
    Row row{n, measure_lanes(n, o), measure_baseline(n, o)};
    wrong += row.lanes.wrong + row.baseline.wrong;
    checked += row.lanes.checked + row.baseline.checked;
    if (!json_out) {
      std::printf(
          "n = %5u  refresh: lanes %8.1f ms, baseline %8.1f ms (%.2fx)  amortized product: lanes "
          "%8.3f ms, baseline %8.3f ms (%.2fx)  wrong %llu\n",
          n, row.lanes.refresh_ms, row.baseline.refresh_ms,
          row.baseline.refresh_ms / row.lanes.refresh_ms, row.lanes.amortized_ms,
          row.baseline.amortized_ms, row.baseline.amortized_ms / row.lanes.amortized_ms,
          static_cast<unsigned long long>(row.lanes.wrong + row.baseline.wrong));
      std::fflush(stdout);
    }
    rows.push_back(std::move(row));
  }
  if (json_out) {
    JsonWriter json;
    json.begin_object()
        .value("command", "lanes compare")
        .value("log_n", o.log_n)
        .value("threads", o.threads)
        .value("repeats", o.repeats)
        .value("low_memory", o.low_memory)
        .value("wrong_integers", wrong)
        .value("integers_checked", checked);
    json.begin_array("rows");
    for (const Row& r : rows) {
      json.begin_object().value("n", r.n);
      write_measured(json, "lanes", r.lanes);
      write_measured(json, "baseline", r.baseline);
      json.value("refresh_speedup", r.baseline.refresh_ms / r.lanes.refresh_ms)
          .value("amortized_mult_speedup", r.baseline.amortized_ms / r.lanes.amortized_ms)
          .end_object();
    }
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
  } else {
    std::printf("%llu integers checked against GMP, %llu wrong\n",
                static_cast<unsigned long long>(checked), static_cast<unsigned long long>(wrong));
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace safhire::apps
