// CKKS in one file: a parameter set, keys, encoding, encryption, an addition, a product (with its
// relinearization and rescale), a rotation, decryption; the result compared with the same
// arithmetic in the clear. (docs/ckks.md tours the API.)
//   examples/ckks_basics [--test]   (--test: the N = 2^13 set, for CI)
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/encoder.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/random.hpp"

using namespace safhire;

int main(int argc, char** argv) {
  const bool test = argc > 1 && std::string(argv[1]) == "--test";
  // A named set: N = 2^16 and 24 levels at 128 bits, or a small one for a quick run.
  const ckks::CkksContext context(ckks::named_set(test ? "n13-l3" : "n16-l24"), test);
  const auto ops = ckks::make_cpu_rns_ops(context);  // or cuda::make_cuda_rns_ops
  core::OsRandom random;
  ckks::KeyGenerator generator(context, *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const ckks::PublicKey pk = generator.public_key(sk);
  const ckks::SwitchingKey rlk = generator.relinearization_key(sk);
  const std::vector<int> steps = {1};
  const ckks::GaloisKeys galois = generator.galois_keys(sk, steps, false);

  // Two vectors of N/2 complex slots, encoded at the set's scale on the top level.
  const std::size_t slots = context.degree() / 2;
  std::vector<std::complex<double>> a(slots), b(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(slots);
    a[i] = {std::cos(50 * t), 0.5};
    b[i] = {0.25, std::sin(30 * t)};
  }
  const ckks::Encoder encoder(context, *ops);
  const double scale = std::exp2(context.params().log_scale);
  ckks::Encryptor encryptor(context, *ops, random);
  const ckks::Ciphertext x = encryptor.encrypt(encoder.encode(a, scale, context.max_level()), pk);
  const ckks::Ciphertext y = encryptor.encrypt(encoder.encode(b, scale, context.max_level()), pk);

  // rotate(x * y + x, 1): x y (relinearized, rescaled: one level), x times encoded ones (the same
  // scale and level as x y), their sum, a rotation by one slot.
  const ckks::Evaluator evaluator(context, *ops);
  const ckks::Ciphertext xy = evaluator.relinearize_rescale(evaluator.multiply(x, y), rlk);
  const std::vector<std::complex<double>> ones(slots, 1.0);
  const ckks::Ciphertext x1 = evaluator.rescale(
      evaluator.multiply_plain(x, encoder.encode(ones, scale, context.max_level())));
  const ckks::Ciphertext z = evaluator.rotate(evaluator.add(xy, x1), 1, galois);

  const auto got = encoder.decode(ckks::decrypt(context, *ops, z, sk));
  double worst = 0;
  for (std::size_t i = 0; i < slots; ++i) {
    const std::size_t j = (i + 1) % slots;  // slot i holds what slot i + 1 held
    worst = std::max(worst, std::abs(got[i] - (a[j] * b[j] + a[j])));
  }
  const bool ok = worst < 1e-3;
  std::printf("rotate(x * y + x, 1) on %zu slots: largest error %.1e (%s)\n", slots, worst,
              ok ? "ok" : "too large");
  return ok ? 0 : 1;
}
