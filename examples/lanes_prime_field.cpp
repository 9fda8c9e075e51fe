// A prime field in CKKS lanes: F_65537 (the Fermat prime 2^16 + 1), 4096 elements in one N = 2^16
// ciphertext (256 in each of 16 lanes), multiplied, multiplied by a constant, refreshed, and
// checked against GMP. The field is a lane space with t = Y^m - beta (docs/lanes.md, "Prime and
// extension fields"); FieldSpace maps elements to lane digits and back.
//   examples/lanes_prime_field [--test]   (--test: the small insecure test space, seconds)
#include <cstdio>
#include <string>
#include <vector>

#include "safhire/lanes/lanes.hpp"

using namespace safhire;

int main(int argc, char** argv) {
  const bool test = argc > 1 && std::string(argv[1]) == "--test";
  const lanes::LaneContext context(
      lanes::named_lane_space(test ? "field-n12-65537" : "field-n16-65537"), test);
  const lanes::FieldSpace field(context.space());  // p checked prime, Y^m - beta factored
  const auto ops = ckks::make_cpu_rns_ops(context.ckks());
  core::OsRandom random;
  ckks::KeyGenerator generator(context.ckks(), *ops, random);
  const ckks::SecretKey sk = generator.secret_key();
  const lanes::LaneRefresher refresher(context, *ops);
  const lanes::LaneKeys keys = refresher.keys(generator, sk);

  // Elements of F_p (degree 1: one coefficient each), as many as the ciphertext holds.
  const mpz_class& p = field.prime();
  gmp_randclass gmp(gmp_randinit_default);
  std::vector<lanes::FieldElement> a(field.elements()), b(a.size());
  for (std::size_t e = 0; e < a.size(); ++e) {
    a[e] = {gmp.get_z_range(p)};
    b[e] = {gmp.get_z_range(p)};
  }
  const lanes::LaneEncryptor encryptor(context, *ops, random);
  const lanes::LaneEvaluator evaluator(context, *ops);
  const auto form = context.space().digits;
  lanes::LaneCiphertext x = encryptor.encrypt_digits(field.digits(a, form), sk);
  const lanes::LaneCiphertext y = encryptor.encrypt_digits(field.digits(b, form), sk);

  // x <- 3 x y, twice, refreshing where the next product needs it.
  std::vector<lanes::FieldElement> want = a;
  for (int i = 0; i < 2; ++i) {
    if (!evaluator.multiply_refusal(x, y).empty()) x = refresher.refresh(x, keys);
    x = evaluator.multiply_integer(evaluator.multiply(x, y, keys.relinearization), 3);
    for (std::size_t e = 0; e < want.size(); ++e)
      want[e][0] = 3 * want[e][0] * b[e][0] % p;
  }
  x = refresher.refresh(x, keys);
  const auto got = field.elements_of(lanes::LaneDecryptor(context, *ops, sk).decrypt(x).digits);
  std::size_t wrong = 0;
  for (std::size_t e = 0; e < want.size(); ++e)
    wrong += got[e] == want[e] ? 0 : 1;
  std::printf("%zu elements of F_%s, 9 a b^2 refreshed: %zu wrong\n", want.size(),
              p.get_str().c_str(), wrong);
  return wrong == 0 ? 0 : 1;
}
