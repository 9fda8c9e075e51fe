// Bootstrapping: ModRaise against an exact oracle (the raised ciphertext decrypts to the
// input's plaintext plus q_0 times a small integer polynomial, by GMP), each later step against
// its plaintext meaning, and the whole bootstrap on a small insecure ring that CI can afford.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "ckks_fixture.hpp"
#include "safhire/ckks/bootstrap.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

// The decryption of ct as centred integer coefficients (GMP), at ct's level.
std::vector<std::unique_ptr<Mpz>> centred_coefficients(const CkksContext& context,
                                                       const RnsOps& ops, const Ciphertext& ct,
                                                       const SecretKey& sk) {
  Plaintext plain = decrypt(context, ops, ct, sk);
  ops.inverse(plain.poly);
  Mpz Q, half;
  product(context, plain.poly.moduli, Q.v);
  mpz_fdiv_q_2exp(half.v, Q.v, 1);
  std::vector<std::unique_ptr<Mpz>> out;
  for (std::uint32_t t = 0; t < context.degree(); ++t) {
    auto x = std::make_unique<Mpz>();
    reconstruct(context, plain.poly, t, x->v);
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

  const auto m = centred_coefficients(f.context, *f.ops, low, sk);
  const auto t = centred_coefficients(f.context, *f.ops, raised, sk);
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

struct BootFixture {
  // The insecure N = 2^12 test ring shaped like a bootstrapping set (params.cpp).
  CkksContext context{named_set("n12-boot-test"), /*allow_insecure=*/true};
  std::unique_ptr<RnsOps> ops = make_cpu_rns_ops(context, 2);
  Encoder encoder{context, *ops};
  Evaluator evaluator{context, *ops};
  BootstrapParams params = default_bootstrap_params(context.params());
  Bootstrapper boot{encoder, evaluator, params};
  SecretKey sk;
  BootstrapKeys keys;
  BootFixture() {
    auto rng = safhire::core::SeededRandom::from_counter(51);
    KeyGenerator gen(context, *ops, rng);
    sk = gen.secret_key();
    keys = boot.keys(gen, sk);
  }
};

BootFixture& boot_fixture() {
  static BootFixture f;
  return f;
}

// i with its log2(n) bits reversed.
std::uint32_t reversed(std::uint32_t i, std::uint32_t n) {
  const int bits = std::countr_zero(n);
  std::uint32_t r = 0;
  for (int b = 0; b < bits; ++b)
    r |= ((i >> b) & 1U) << (bits - 1 - b);
  return r;
}

// After CoeffToSlot the real and imaginary parts hold t_i / (K q_0) and t_(i+N/2) / (K q_0) in
// bit-reversed order, t the raised decryption; EvalMod of each is m_i / q_0 (mod 1).
TEST(CkksBootstrap, CoeffToSlotAndEvalModHaveTheirPlainMeaning) {
  auto& f = boot_fixture();
  const std::uint32_t n = f.context.degree() / 2;
  auto rng = safhire::core::SeededRandom::from_counter(52);
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(n, 1.0, 53);
  const double delta = std::exp2(45);
  const auto ct = enc.encrypt(f.encoder.encode(z, delta, 0), f.sk);
  const auto m = f.encoder.decode_coefficients(decrypt(f.context, *f.ops, ct, f.sk));
  const auto parts = f.boot.coeff_to_slot(f.boot.mod_raise(ct, f.keys), f.keys);
  ASSERT_EQ(parts.size(), 2U);
  const Ciphertext &x = parts[0], &y = parts[1];
  // The parts hold t / (K q_0): scaled back by K.
  auto xs = f.encoder.decode(decrypt(f.context, *f.ops, x, f.sk));
  auto ys = f.encoder.decode(decrypt(f.context, *f.ops, y, f.sk));
  for (auto* v : {&xs, &ys}) {
    for (auto& e : *v)
      e *= f.params.k;
  }
  const double q0 = static_cast<double>(f.context.prime(0));
  double worst_fraction = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t r = reversed(i, n);
    // t_i / q_0 = m_i / q_0 + I_i: its distance to an integer is |m_i| / q_0, tiny.
    for (const auto& [v, coeff] :
         {std::pair{xs[r].real(), m[i]}, std::pair{ys[r].real(), m[i + n]}}) {
      const double expect = static_cast<double>(coeff) * delta / q0;
      worst_fraction = std::max(worst_fraction, std::fabs((v - std::round(v)) - expect));
      ASSERT_LT(std::fabs(v), f.params.k - 0.25) << "|I| reached K";
    }
  }
  // Measured 2^-46 (in units of m / q_0 ~ 2^-15): CoeffToSlot's noise over the scale q_0.
  EXPECT_LE(worst_fraction, std::exp2(-40));
  // EvalMod removes the integers.
  const auto ex = f.encoder.decode(decrypt(f.context, *f.ops, f.boot.eval_mod(x, f.keys), f.sk));
  double worst = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t r = reversed(i, n);
    worst = std::max(worst, std::fabs(ex[r].real() - static_cast<double>(m[i]) * delta / q0));
  }
  // Measured 2^-41: the cosine's noise, times up to 4 per double angle.
  EXPECT_LE(worst, std::exp2(-36));
}

TEST(CkksBootstrap, FullSlotsComeBackWithLevelsToSpare) {
  auto& f = boot_fixture();
  const std::uint32_t n = f.context.degree() / 2;
  auto rng = safhire::core::SeededRandom::from_counter(54);
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(n, 1.0, 55);
  const auto ct = enc.encrypt(f.encoder.encode(z, std::exp2(45), 0), f.sk);
  const Ciphertext out = f.boot.bootstrap(ct, f.keys);
  EXPECT_EQ(out.level(), f.boot.output_level());
  EXPECT_EQ(out.level(), f.context.max_level() - f.boot.depth());
  EXPECT_GE(out.level(), 3U);
  const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, f.sk));
  const double worst = max_error(got, z), mean = mean_error(got, z);
  // The precision this set promises: measured 23.1 bits on average, 21.6 at the worst slot.
  RecordProperty("mean_precision_bits", std::to_string(-std::log2(mean)));
  RecordProperty("min_precision_bits", std::to_string(-std::log2(worst)));
  EXPECT_LE(mean, std::exp2(-21));
  EXPECT_LE(worst, std::exp2(-19));
}

// The bootstrap owns its input contract: from any level above its input level and any scale (a
// fresh ciphertext at level 5 and scale 2^40, and a product whose scale the rescale left), it
// brings the input to input_scale() itself, with the precision of an input prepared by hand.
TEST(CkksBootstrap, AnyLevelAndScaleIsBroughtToTheInput) {
  auto& f = boot_fixture();
  const std::uint32_t n = f.context.degree() / 2;
  EXPECT_DOUBLE_EQ(f.boot.input_scale(),
                   static_cast<double>(f.context.prime(0)) /
                       std::exp2(16.0 - static_cast<double>(f.context.params().log_n / 2)));
  auto rng = safhire::core::SeededRandom::from_counter(56);
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(n, 1.0, 57);
  const auto fresh = enc.encrypt(f.encoder.encode(z, std::exp2(40), 5), f.sk);
  const std::vector<std::complex<double>> ones(n, 1.0);
  const auto ct1 = enc.encrypt(f.encoder.encode(ones, std::exp2(45), 3), f.sk);
  const auto product = f.evaluator.relinearize_rescale(
      f.evaluator.multiply(enc.encrypt(f.encoder.encode(z, std::exp2(45), 3), f.sk), ct1),
      f.keys.relinearization);
  // At level 0 a scale near q_0 is refused: the caller bootstraps a level earlier.
  const auto near_q0 = enc.encrypt(f.encoder.encode(z, std::exp2(58), 0), f.sk);
  EXPECT_EQ(code_of([&] { (void)f.boot.bootstrap(near_q0, f.keys); }), ErrorCode::invalid_argument);
  for (const Ciphertext* ct : {&fresh, &product}) {
    const Ciphertext out = f.boot.bootstrap(*ct, f.keys);
    EXPECT_EQ(out.level(), f.boot.output_level());
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, f.sk));
    EXPECT_LE(mean_error(got, z), std::exp2(-21)) << "from level " << ct->level();
    EXPECT_LE(max_error(got, z), std::exp2(-19)) << "from level " << ct->level();
  }
}

// Sparse slots: the sum over the rotations by multiples of n keeps the raised plaintext's part in
// the subring, and n-slot transforms do the rest, with fewer levels for fewer stages.
TEST(CkksBootstrap, SparseSlotsComeBackWithMoreLevelsToSpare) {
  auto& f = boot_fixture();
  for (const std::uint32_t n : {2U, 64U, 512U}) {
    const BootstrapParams params = default_bootstrap_params(f.context.params(), n);
    const Bootstrapper boot(f.encoder, f.evaluator, params);
    EXPECT_EQ(boot.slots(), n);
    EXPECT_TRUE(boot.packed()) << n << " slots";
    EXPECT_LT(boot.depth(), f.boot.depth()) << n << " slots";
    auto rng = safhire::core::SeededRandom::from_counter(70 + n);
    KeyGenerator gen(f.context, *f.ops, rng);
    const BootstrapKeys keys = boot.keys(gen, f.sk);
    Encryptor enc(f.context, *f.ops, rng);
    const auto z = random_values(n, 1.0, 71 + n);
    const auto ct = enc.encrypt(f.encoder.encode(z, std::exp2(45), 0, n), f.sk);
    EXPECT_EQ(code_of([&] { f.boot.bootstrap(ct, f.keys); }), ErrorCode::invalid_argument);
    const Ciphertext out = boot.bootstrap(ct, keys);
    EXPECT_EQ(out.slots, n);
    EXPECT_EQ(out.level(), boot.output_level());
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, f.sk));
    ASSERT_EQ(got.size(), n);
    const double mean = mean_error(got, z), worst = max_error(got, z);
    RecordProperty("mean_precision_bits_" + std::to_string(n), std::to_string(-std::log2(mean)));
    EXPECT_LE(mean, std::exp2(-21)) << n << " slots";
    EXPECT_LE(worst, std::exp2(-19)) << n << " slots";
  }
}

// Packed parts: sparse slots' CoeffToSlot leaves one ciphertext of 2n slots whose halves are
// the two parts the unpacked order (slim, which keeps them apart) computes from the same raised
// ciphertext; and the steps refuse the other number of parts.
TEST(CkksBootstrap, PackedPartsAreTheTwoPartsSideBySide) {
  auto& f = boot_fixture();
  const std::uint32_t n = 64;
  BootstrapParams params = default_bootstrap_params(f.context.params(), n);
  const Bootstrapper packed(f.encoder, f.evaluator, params);
  params.slim = true;
  const Bootstrapper apart(f.encoder, f.evaluator, params);
  ASSERT_TRUE(packed.packed());
  ASSERT_FALSE(apart.packed());
  EXPECT_FALSE(f.boot.packed());  // full slots have no room
  auto rng = safhire::core::SeededRandom::from_counter(90);
  KeyGenerator gen(f.context, *f.ops, rng);
  BootstrapKeys keys = packed.keys(gen, f.sk);
  gen.add_galois_keys(keys.galois, f.sk, apart.rotations(), true, f.context.max_level());
  Encryptor enc(f.context, *f.ops, rng);
  const auto ct =
      enc.encrypt(f.encoder.encode(random_values(n, 1.0, 91), std::exp2(45), 0, n), f.sk);
  const Ciphertext raised = packed.mod_raise(ct, keys);
  const auto one = packed.coeff_to_slot(raised, keys);
  const auto two = apart.coeff_to_slot(raised, keys);
  ASSERT_EQ(one.size(), 1U);
  ASSERT_EQ(two.size(), 2U);
  EXPECT_EQ(one[0].slots, 2 * n);
  EXPECT_EQ(one[0].level(), two[0].level());
  auto side_by_side = f.encoder.decode(decrypt(f.context, *f.ops, two[0], f.sk));
  const auto y = f.encoder.decode(decrypt(f.context, *f.ops, two[1], f.sk));
  side_by_side.insert(side_by_side.end(), y.begin(), y.end());
  const auto got = f.encoder.decode(decrypt(f.context, *f.ops, one[0], f.sk));
  // Both read t / (K q_0) ~ 1 with CoeffToSlot's noise, about 2^-40 of it.
  EXPECT_LE(max_error(got, side_by_side), std::exp2(-34));
  EXPECT_EQ(code_of([&] { packed.slot_to_coeff(two, ct.scale, keys); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { apart.recombine(one, ct.scale); }), ErrorCode::invalid_argument);
}

// The slim order: SlotToCoeff on the input's lowest levels first, then ModRaise, CoeffToSlot and
// EvalMod. The top no longer pays for SlotToCoeff's groups, so the output sits that much higher,
// and the same slots come back.
TEST(CkksBootstrap, SlimOrderSpendsSlotToCoeffOnTheInputsLevels) {
  auto& f = boot_fixture();
  BootstrapParams params = f.params;
  params.slim = true;
  const Bootstrapper slim(f.encoder, f.evaluator, params);
  const auto stc_groups = static_cast<std::uint32_t>(params.stc_split.size());
  EXPECT_EQ(slim.input_level(), stc_groups);
  EXPECT_EQ(slim.depth(), f.boot.depth() - stc_groups);
  EXPECT_EQ(slim.output_level(), f.boot.output_level() + stc_groups);
  auto rng = safhire::core::SeededRandom::from_counter(80);
  KeyGenerator gen(f.context, *f.ops, rng);
  const BootstrapKeys keys = slim.keys(gen, f.sk);
  Encryptor enc(f.context, *f.ops, rng);
  const std::uint32_t n = f.context.degree() / 2;
  const auto z = random_values(n, 1.0, 81);
  const auto low = enc.encrypt(f.encoder.encode(z, std::exp2(45), 0), f.sk);
  EXPECT_EQ(code_of([&] { slim.bootstrap(low, keys); }), ErrorCode::invalid_argument);
  // From level input_level() and from above it.
  for (const std::uint32_t level : {stc_groups, stc_groups + 2}) {
    const auto ct = enc.encrypt(f.encoder.encode(z, std::exp2(45), level), f.sk);
    const Ciphertext out = slim.bootstrap(ct, keys);
    EXPECT_EQ(out.level(), slim.output_level());
    const auto got = f.encoder.decode(decrypt(f.context, *f.ops, out, f.sk));
    const double mean = mean_error(got, z), worst = max_error(got, z);
    RecordProperty("mean_precision_bits_from_" + std::to_string(level),
                   std::to_string(-std::log2(mean)));
    EXPECT_LE(mean, std::exp2(-21)) << "from level " << level;
    EXPECT_LE(worst, std::exp2(-19)) << "from level " << level;
  }
  // The classic order's last step is refused in the slim one, and the other way round.
  EXPECT_EQ(code_of([&] { f.boot.slot_to_coeff_first(low, f.keys); }), ErrorCode::invalid_argument);
}

// Coefficients of |m| / q_0 up to 2^-10 (coefficient encoding: random slot vectors have far
// smaller coefficients): the sine's own error, (2 pi m / q_0)^2 / 6 relative, bounds the plain
// bootstrap near 17 bits; the arcsine removes it.
TEST(CkksBootstrap, ArcsineRemovesTheSinesErrorForLargeCoefficients) {
  auto& f = boot_fixture();
  BootstrapParams with = f.params;
  with.arcsine_degree = 3;
  with.message_ratio = 1024;
  const Bootstrapper arcsine(f.encoder, f.evaluator, with);
  EXPECT_EQ(arcsine.depth(), f.boot.depth() + PolynomialEvaluator::depth(3));
  const std::uint32_t n = f.context.degree() / 2;
  std::mt19937_64 mt(58);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> coeffs(f.context.degree());
  for (auto& c : coeffs)
    c = u(mt);
  const double delta = static_cast<double>(f.context.prime(0)) / 1024;
  Plaintext plain = f.encoder.encode_coefficients(coeffs, delta, 0);
  plain.slots = n;
  const auto z = f.encoder.decode(plain);
  auto rng = safhire::core::SeededRandom::from_counter(59);
  Encryptor enc(f.context, *f.ops, rng);
  const auto ct = enc.encrypt(plain, f.sk);
  auto bootstrap_error = [&](const Bootstrapper& b) {
    return mean_error(f.encoder.decode(decrypt(f.context, *f.ops, b.bootstrap(ct, f.keys), f.sk)),
                      z);
  };
  const double plain_error = bootstrap_error(f.boot), corrected = bootstrap_error(arcsine);
  RecordProperty("plain_mean_error_log2", std::to_string(std::log2(plain_error)));
  RecordProperty("arcsine_mean_error_log2", std::to_string(std::log2(corrected)));
  EXPECT_LE(corrected, plain_error / 256);  // measured: 2^-12.8 against 2^-28.1
}

// log2 P(|S| >= a) for S the sum of n independent uniforms on [-1/2, 1/2], exactly (GMP
// rationals, the Irwin-Hall distribution): P(S >= a) = P(S' <= n/2 - a) for S' on [0, n], and
// P(S' <= y) = sum_(k <= y) (-1)^k C(n, k) (y - k)^n / n!.
double log2_irwin_hall_tail(unsigned n, double a) {
  mpq_t y, term, sum, power;
  mpq_inits(y, term, sum, power, nullptr);
  mpq_set_d(y, n / 2.0 - a);  // a half-integer here: exact in double
  Mpz binomial, factorial;
  mpz_fac_ui(factorial.v, n);
  for (unsigned k = 0; mpq_cmp_ui(y, k, 1) > 0; ++k) {  // (y - k)^n vanishes from k = y on
    mpq_set_ui(term, k, 1);
    mpq_sub(term, y, term);  // y - k
    mpq_set_ui(power, 1, 1);
    for (unsigned i = 0; i < n; ++i)
      mpq_mul(power, power, term);
    mpz_bin_uiui(binomial.v, n, k);
    mpq_set_z(term, binomial.v);
    mpq_mul(term, term, power);
    if (k % 2 == 1) mpq_neg(term, term);
    mpq_add(sum, sum, term);
  }
  mpq_set_z(term, factorial.v);
  mpq_div(sum, sum, term);
  mpq_set_ui(term, 2, 1);
  mpq_mul(sum, sum, term);  // two-sided
  // log2 of a tiny rational: mantissa and exponent of its numerator and denominator.
  long en = 0, ed = 0;
  const double mn = mpz_get_d_2exp(&en, mpq_numref(sum));
  const double md = mpz_get_d_2exp(&ed, mpq_denref(sum));
  mpq_clears(y, term, sum, power, nullptr);
  return std::log2(mn / md) + static_cast<double>(en - ed);
}

// The stated failure probability is an upper bound on the exact one (per coefficient, times N),
// and close to it: within 6 bits for the sets' shapes.
TEST(CkksBootstrap, FailureBoundIsAboveTheExactIrwinHallTailAndClose) {
  struct Case {
    std::uint32_t log_n, weight, ephemeral;
    double k;
  };
  for (const Case& c : {Case{16, 192, 32, 16}, Case{16, 192, 0, 32}, Case{16, 192, 0, 24},
                        Case{12, 32, 0, 16}, Case{12, 32, 8, 4}, Case{16, 192, 32, 12}}) {
    CkksParams p;
    p.log_n = c.log_n;
    p.secret = SecretDistribution::fixed_hamming_weight;
    p.hamming_weight = c.weight;
    BootstrapParams b;
    b.k = c.k;
    b.ephemeral_weight = c.ephemeral;
    const unsigned terms = c.ephemeral != 0 ? c.ephemeral : c.weight;
    const double exact = log2_irwin_hall_tail(terms, c.k - 0.5) + c.log_n;
    const double bound = log2_failure_bound(p, b);
    EXPECT_GE(bound, exact) << terms << " terms, K = " << c.k;
    EXPECT_LE(bound, exact + 6) << terms << " terms, K = " << c.k;
  }
  // K beyond h / 2 + 1/2: failure is impossible.
  CkksParams p;
  p.log_n = 16;
  p.secret = SecretDistribution::fixed_hamming_weight;
  p.hamming_weight = 192;
  BootstrapParams b;
  b.ephemeral_weight = 32;
  b.k = 17;
  EXPECT_EQ(log2_failure_bound(p, b), -std::numeric_limits<double>::infinity());
  // The default N = 2^16 set: the encapsulation, and a negligible bound.
  const auto defaults = default_bootstrap_params(named_set("n16-boot-h192"));
  EXPECT_EQ(defaults.ephemeral_weight, 32U);
  EXPECT_LE(log2_failure_bound(named_set("n16-boot-h192"), defaults), -100);
}

// The encapsulation: ModRaise runs under an ephemeral secret of weight h' = 8 (the test ring's
// own secret has weight 32), so |I| <= h' / 2 = 4 and I is the rounding of an Irwin-Hall sum of
// 8 terms; then the whole bootstrap with K = 6.
TEST(CkksBootstrap, EncapsulationRaisesUnderAnEphemeralSparseSecret) {
  auto& f = boot_fixture();
  BootstrapParams sparse = f.params;
  sparse.ephemeral_weight = 8;
  sparse.k = 6;
  sparse.double_angles = 2;
  sparse.degree = 31;
  const Bootstrapper boot(f.encoder, f.evaluator, sparse);
  EXPECT_LT(boot.depth(), f.boot.depth());
  auto rng = safhire::core::SeededRandom::from_counter(61);
  KeyGenerator gen(f.context, *f.ops, rng);
  const BootstrapKeys keys = boot.keys(gen, f.sk);
  ASSERT_TRUE(keys.to_ephemeral.has_value() && keys.from_ephemeral.has_value());
  EXPECT_EQ(keys.to_ephemeral->b.size(), 1U);  // level 0: one digit over q_0 and P
  Encryptor enc(f.context, *f.ops, rng);
  const std::uint32_t n = f.context.degree() / 2;
  const auto z = random_values(n, 1.0, 62);
  const auto ct = enc.encrypt(f.encoder.encode(z, std::exp2(45), 0), f.sk);
  // Without the keys: a typed error, not a wrong result.
  EXPECT_EQ(code_of([&] { boot.mod_raise(ct, f.keys); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { f.boot.mod_raise(ct, keys); }), ErrorCode::invalid_argument);

  // I over eight fresh encryptions: |I| <= 4 always, and its second moment against the exact
  // E[round(S)^2] = sum_(k >= 1) (2k - 1) P(|S| >= k - 1/2), S of 8 terms (9 with c_0 as an
  // independent term would give 0.83 rather than 0.75: measured 0.746). Coefficients of one
  // ciphertext that share terms of c_1 s' are correlated, so many ciphertexts rather than a tail
  // count with a binomial tolerance.
  Mpz q0, half, diff, I, r;
  set_u64(q0.v, f.context.prime(0));
  mpz_fdiv_q_2exp(half.v, q0.v, 1);
  long largest = 0;
  double second_moment = 0;
  const int samples = 8;
  for (int c = 0; c < samples; ++c) {
    const auto x = enc.encrypt(f.encoder.encode(z, std::exp2(45), 0), f.sk);
    const Ciphertext raised = boot.mod_raise(x, keys);
    ASSERT_EQ(raised.level(), f.context.max_level());
    const auto m = centred_coefficients(f.context, *f.ops, x, f.sk);
    const auto t = centred_coefficients(f.context, *f.ops, raised, f.sk);
    for (std::uint32_t i = 0; i < f.context.degree(); ++i) {
      // The key switches add a little noise: t - m is q_0 I up to it, so I is its rounding.
      mpz_sub(diff.v, t[i]->v, m[i]->v);
      mpz_add(diff.v, diff.v, half.v);
      mpz_fdiv_qr(I.v, r.v, diff.v, q0.v);
      ASSERT_TRUE(mpz_fits_slong_p(I.v));
      const long v = std::labs(mpz_get_si(I.v));
      largest = std::max(largest, v);
      second_moment += static_cast<double>(v * v);
    }
  }
  second_moment /= samples * static_cast<double>(f.context.degree());
  EXPECT_LE(largest, 4);
  double expected = 0;
  for (int k = 1; k <= 4; ++k)
    expected += (2 * k - 1) * std::exp2(log2_irwin_hall_tail(8, k - 0.5));
  RecordProperty("second_moment", std::to_string(second_moment));
  RecordProperty("expected_second_moment", std::to_string(expected));
  EXPECT_NEAR(second_moment, expected, 0.1 * expected);

  const auto got = f.encoder.decode(decrypt(f.context, *f.ops, boot.bootstrap(ct, keys), f.sk));
  const double mean = mean_error(got, z);
  RecordProperty("mean_precision_bits", std::to_string(-std::log2(mean)));
  EXPECT_LE(mean, std::exp2(-21));
}

TEST(CkksBootstrap, BadParametersAreTypedErrors) {
  auto& f = boot_fixture();
  BootstrapParams short_split{{4, 4}, {3, 4, 4}, 16, 47, 3};
  EXPECT_EQ(code_of([&] { Bootstrapper(f.encoder, f.evaluator, short_split); }),
            ErrorCode::invalid_argument);
  BootstrapParams too_deep{{4, 4, 3}, {3, 4, 4}, 16, 255, 6};
  EXPECT_EQ(code_of([&] { Bootstrapper(f.encoder, f.evaluator, too_deep); }),
            ErrorCode::invalid_argument);
  auto rng = safhire::core::SeededRandom::from_counter(56);
  Encryptor enc(f.context, *f.ops, rng);
  const auto sparse = enc.encrypt(f.encoder.encode(random_values(8, 1.0, 57), 1e9, 0, 8), f.sk);
  EXPECT_EQ(code_of([&] { f.boot.mod_raise(sparse, f.keys); }), ErrorCode::invalid_argument);
  for (const std::uint32_t slots : {1U, 48U, 4096U}) {
    BootstrapParams odd = f.params;
    odd.slots = slots;
    EXPECT_EQ(code_of([&] { Bootstrapper(f.encoder, f.evaluator, odd); }),
              ErrorCode::invalid_argument)
        << slots;
  }
}

}  // namespace
