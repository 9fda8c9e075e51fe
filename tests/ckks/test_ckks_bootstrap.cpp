// The pieces of bootstrapping, each against an exact oracle: ModRaise's output decrypts to the
// input's plaintext plus q_0 times a small integer polynomial (GMP).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "ckks_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

// The decryption of ct as centred integer coefficients (GMP), at ct's level.
std::vector<std::unique_ptr<Mpz>> centred_coefficients(Fixture& f, const Ciphertext& ct,
                                                       const SecretKey& sk) {
  Plaintext plain = decrypt(f.context, *f.ops, ct, sk);
  f.ops->inverse(plain.poly);
  Mpz Q, half;
  product(f.context, plain.poly.moduli, Q.v);
  mpz_fdiv_q_2exp(half.v, Q.v, 1);
  std::vector<std::unique_ptr<Mpz>> out;
  for (std::uint32_t t = 0; t < f.context.degree(); ++t) {
    auto x = std::make_unique<Mpz>();
    reconstruct(f.context, plain.poly, t, x->v);
    if (mpz_cmp(x->v, half.v) > 0) mpz_sub(x->v, x->v, Q.v);
    out.push_back(std::move(x));
  }
  return out;
}

TEST(CkksBootstrap, ModRaiseAddsQ0TimesASmallIntegerPolynomial) {
  auto& f = fixture("n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(31);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  // h: the secret's Hamming weight, from its coefficients.
  RnsPoly s = sk.s;
  f.ops->inverse(s);
  std::uint32_t h = 0;
  for (std::uint64_t v : s.limb(0))
    h += v != 0 ? 1 : 0;
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(f.context.degree() / 2, 1.0, 32);
  const auto low = enc.encrypt(f.encoder.encode(z, 1 << 20, 0), sk);
  const std::uint32_t top = f.context.max_level();
  const Ciphertext raised = f.evaluator.mod_raise(low, top);
  EXPECT_EQ(raised.level(), top);
  EXPECT_EQ(raised.scale, low.scale);

  const auto m = centred_coefficients(f, low, sk);
  const auto t = centred_coefficients(f, raised, sk);
  Mpz q0, diff, I, r;
  set_u64(q0.v, f.context.prime(0));
  long largest = 0;
  for (std::uint32_t i = 0; i < f.context.degree(); ++i) {
    mpz_sub(diff.v, t[i]->v, m[i]->v);
    mpz_fdiv_qr(I.v, r.v, diff.v, q0.v);
    ASSERT_EQ(mpz_sgn(r.v), 0) << "coefficient " << i << " differs by a non-multiple of q_0";
    ASSERT_TRUE(mpz_fits_slong_p(I.v));
    largest = std::max(largest, std::labs(mpz_get_si(I.v)));
  }
  EXPECT_LE(largest, static_cast<long>((1 + h) / 2));
  EXPECT_GT(largest, 0);  // the lift is not trivial: some coefficient wrapped
}

TEST(CkksBootstrap, ModRaiseChecksItsLevels) {
  auto& f = fixture("n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(33);
  KeyGenerator gen(f.context, *f.ops, rng);
  const auto sk = gen.secret_key();
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(8, 1.0, 34);
  const auto top = enc.encrypt(f.encoder.encode(z, 1 << 20, 2), sk);
  EXPECT_EQ(code_of([&] { f.evaluator.mod_raise(top, 3); }), ErrorCode::invalid_argument);
  const auto low = f.evaluator.drop_to_level(top, 0);
  EXPECT_EQ(code_of([&] { f.evaluator.mod_raise(low, 0); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.evaluator.mod_raise(low, 4); }), ErrorCode::invalid_argument);
}

}  // namespace
