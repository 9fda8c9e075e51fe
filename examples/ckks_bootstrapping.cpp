// CKKS with bootstrapping in one file: x y^k, a chain deeper than the modulus, refreshed as the
// levels run out. Run: examples/ckks_bootstrapping [--test] (--test: the N = 2^12 test ring).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <vector>
#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/random.hpp"

using namespace safhire;

int main(int argc, char** argv) {
  const bool test = argc > 1 && std::string(argv[1]) == "--test";
  const ckks::CkksContext context(ckks::named_set(test ? "n12-boot-test" : "n16-boot-h192"), test);
  const auto ops = ckks::make_cpu_rns_ops(context);
  const ckks::Encoder encoder(context, *ops);
  const ckks::Evaluator evaluator(context, *ops);
  const ckks::Bootstrapper bootstrapper(encoder, evaluator,
                                        ckks::default_bootstrap_params(context.params()));
  core::OsRandom random;
  ckks::KeyGenerator generator(context, *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const ckks::BootstrapKeys keys = bootstrapper.keys(generator, sk);  // relinearization included

  // Slots on the unit circle (so that x y^k stays there), encrypted at the bootstrap's output.
  const std::size_t slots = context.degree() / 2;
  std::vector<std::complex<double>> x(slots), y(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    x[i] = std::polar(1.0, std::sin(static_cast<double>(i)));
    y[i] = std::polar(1.0, 0.1 * std::cos(static_cast<double>(i)));
  }
  ckks::Encryptor encryptor(context, *ops, random);
  const double scale = std::exp2(context.params().log_scale);
  ckks::Ciphertext c = encryptor.encrypt(encoder.encode(x, scale, bootstrapper.output_level()), sk);
  const auto cy = encryptor.encrypt(encoder.encode(y, scale, bootstrapper.output_level()), sk);

  // Products by y, one level each: far more of them than the chain holds.
  const int products = 24;
  int bootstraps = 0;
  for (int k = 0; k < products; ++k) {
    if (c.level() == 1) {                   // the last level goes to the bootstrap's own scaling
      c = bootstrapper.bootstrap(c, keys);  // back at output_level()
      ++bootstraps;
    }
    c = evaluator.relinearize_rescale(evaluator.multiply_at(c, cy, c.level()),
                                      keys.relinearization);
  }

  const auto got = encoder.decode(ckks::decrypt(context, *ops, c, sk));
  double worst = 0;
  for (std::size_t i = 0; i < slots; ++i)
    worst = std::max(worst, std::abs(got[i] - x[i] * std::pow(y[i], products)));
  const bool ok = worst < 1e-3;
  std::printf("x y^%d on %zu slots with %d bootstraps: largest error %.1e (%s)\n", products, slots,
              bootstraps, worst, ok ? "ok" : "too large");
  return ok ? 0 : 1;
}
