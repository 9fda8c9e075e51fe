// Exact arithmetic on 4096-bit integers in CKKS lanes: 16 integers modulo 2^4096 + 1 in one
// ciphertext, multiplied and refreshed, and checked against GMP. The whole flow of the lanes:
// space, keys, encryption, products, the refresh, decryption. (docs/lanes.md tours it.)
//   examples/lanes_big_integers [--test]   (--test: the small insecure test space, seconds)
#include <cstdio>
#include <string>
#include <vector>

#include "safhire/lanes/lanes.hpp"

using namespace safhire;

int main(int argc, char** argv) {
  const bool test = argc > 1 && std::string(argv[1]) == "--test";
  // A lane space is data: N, the lane degree n, the base beta, its CKKS chain and security.
  const lanes::LaneContext context(
      lanes::named_lane_space(test ? "lanes-n12-256-b2" : "lanes-n16-4096-b2"), test);
  const auto ops = ckks::make_cpu_rns_ops(context.ckks());  // or cuda::make_cuda_rns_ops
  core::OsRandom random;
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const lanes::LaneRefresher refresher(context, *ops);
  const lanes::LaneKeys keys = refresher.keys(generator, sk);

  // Two vectors of integers modulo p = 2^n + 1, one per lane.
  const mpz_class& p = context.modulus();
  gmp_randclass gmp(gmp_randinit_default);
  std::vector<mpz_class> a(context.space().lanes()), b(a.size());
  for (std::size_t r = 0; r < a.size(); ++r) {
    a[r] = gmp.get_z_range(p);
    b[r] = gmp.get_z_range(p);
  }
  const lanes::LaneEncryptor encryptor(context, *ops, random);
  const lanes::LaneEvaluator evaluator(context, *ops);
  lanes::LaneCiphertext x = encryptor.encrypt(a, sk);
  const lanes::LaneCiphertext y = encryptor.encrypt(b, sk);

  // x <- x * y three times: one product per refresh, each lane a negacyclic product.
  std::vector<mpz_class> want = a;
  for (int i = 0; i < 3; ++i) {
    if (!evaluator.multiply_refusal(x, y).empty()) x = refresher.refresh(x, keys);
    x = evaluator.multiply(x, y, keys.relinearization);
    for (std::size_t r = 0; r < want.size(); ++r)
      want[r] = want[r] * b[r] % p;
  }
  const lanes::LaneDecoding got = lanes::LaneDecryptor(context, *ops, sk).decrypt(x);
  std::size_t wrong = 0;
  for (std::size_t r = 0; r < want.size(); ++r)
    wrong += got.integers[r] == want[r] ? 0 : 1;
  std::printf("%zu integers of %zu bits, a * b^3 mod p: %zu wrong\n", want.size(),
              context.space().modulus_bits(), wrong);
  return wrong == 0 ? 0 : 1;
}
