// CKKS operations against plaintext arithmetic in double, with error bounds from the noise
// analysis; key-switching noise against its formula; rotations and conjugation as group actions.
#include <gtest/gtest.h>

#include <cmath>

#include "ckks_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
using Values = std::vector<std::complex<double>>;

struct Keys {
  SecretKey sk;
  PublicKey pk;
  SwitchingKey rlk;
  GaloisKeys galois;
};

Keys& keys(Fixture& f, const std::string& name) {
  static std::map<std::string, std::unique_ptr<Keys>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto rng = safhire::core::SeededRandom::from_counter(1234);
    KeyGenerator gen(f.context, *f.ops, rng);
    slot = std::make_unique<Keys>();
    slot->sk = gen.secret_key();
    slot->pk = gen.public_key(slot->sk);
    slot->rlk = gen.relinearization_key(slot->sk);
    const int n = static_cast<int>(f.context.degree() / 2);
    const std::vector<int> steps{1, 2, 3, 5, 8, -3, n - 1, 16, 64};
    slot->galois = gen.galois_keys(slot->sk, steps, true);
  }
  return *slot;
}

Values decrypt_values(Fixture& f, const Ciphertext& ct, const SecretKey& sk) {
  return f.encoder.decode(decrypt(f.context, *f.ops, ct, sk));
}

// Two random vectors of the full slot count, encrypted under the public key at the top level.
struct Operands {
  Values a, b;
  Ciphertext ca, cb;
  double scale;
  std::uint32_t top;
};

Operands encrypt_two(Fixture& f, const Keys& k, std::uint64_t seed) {
  auto rng = safhire::core::SeededRandom::from_counter(seed);
  Encryptor enc(f.context, *f.ops, rng);
  Operands o;
  o.scale = std::exp2(f.context.params().log_scale);
  o.top = f.context.max_level();
  o.a = random_values(f.context.degree() / 2, 1.0, seed + 1);
  o.b = random_values(f.context.degree() / 2, 1.0, seed + 2);
  o.ca = enc.encrypt(f.encoder.encode(o.a, o.scale, o.top), k.pk);
  o.cb = enc.encrypt(f.encoder.encode(o.b, o.scale, o.top), k.pk);
  return o;
}

class CkksScheme : public ::testing::TestWithParam<const char*> {};

TEST_P(CkksScheme, EncryptDecryptWithinTheFreshNoiseBound) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  auto rng = safhire::core::SeededRandom::from_counter(1);
  Encryptor enc(f.context, *f.ops, rng);
  const double scale = std::exp2(f.context.params().log_scale);
  const auto z = random_values(f.context.degree() / 2, 1.0, 2);
  const auto plain = f.encoder.encode(z, scale, f.context.max_level());
  const auto pk_ct = enc.encrypt(plain, k.pk);
  const auto sk_ct = enc.encrypt(plain, k.sk);
  EXPECT_LE(max_error(decrypt_values(f, pk_ct, k.sk), z), fresh_bound(f, scale));
  EXPECT_LE(max_error(decrypt_values(f, sk_ct, k.sk), z), fresh_bound(f, scale));
  EXPECT_EQ(pk_ct.level(), f.context.max_level());
}

TEST_P(CkksScheme, LinearOperationsMatchPlaintextArithmetic) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 3);
  const double bound = 2 * fresh_bound(f, scale);
  Values sum(a.size()), diff(a.size()), neg(a.size()), shifted(a.size()), scaled(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum[i] = a[i] + b[i];
    diff[i] = a[i] - b[i];
    neg[i] = -a[i];
    shifted[i] = a[i] + 0.25;
    scaled[i] = a[i] * -3.0;
  }
  const auto& ev = f.evaluator;
  EXPECT_LE(max_error(decrypt_values(f, ev.add(ca, cb), k.sk), sum), bound);
  EXPECT_LE(max_error(decrypt_values(f, ev.sub(ca, cb), k.sk), diff), bound);
  EXPECT_LE(max_error(decrypt_values(f, ev.negate(ca), k.sk), neg), bound);
  EXPECT_LE(
      max_error(decrypt_values(f, ev.add_plain(ca, f.encoder.encode(b, scale, top)), k.sk), sum),
      bound);
  EXPECT_LE(max_error(decrypt_values(f, ev.add_constant(ca, 0.25), k.sk), shifted), bound);
  EXPECT_LE(max_error(decrypt_values(f, ev.multiply_constant(ca, -3.0, 1.0), k.sk), scaled),
            3 * bound);
}

TEST_P(CkksScheme, MultiplyRelinearizeRescaleMatchesTheProduct) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 6);
  Values prod(a.size()), plain_prod(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    prod[i] = a[i] * b[i];
  const auto& ev = f.evaluator;
  // Before relinearization (3 components) and after, then rescaled.
  const auto tensor = ev.multiply(ca, cb);
  const double e = fresh_bound(f, scale);
  const double product_bound = 2 * std::sqrt(2.0) * e + e * e;  // |a|, |b| <= sqrt 2
  EXPECT_LE(max_error(decrypt_values(f, tensor, k.sk), prod), product_bound);
  const auto relin = ev.relinearize(tensor, k.rlk);
  const auto rescaled = ev.rescale(relin);
  EXPECT_EQ(rescaled.level(), top - 1);
  EXPECT_DOUBLE_EQ(rescaled.scale, scale * scale / static_cast<double>(f.context.prime(top)));
  const double bound = product_bound + rescale_bound(f, rescaled.scale) +
                       key_switch_bound(f, top, scale * scale) * scale / rescaled.scale;
  const double err = max_error(decrypt_values(f, rescaled, k.sk), prod);
  EXPECT_LE(err, bound);
  RecordProperty("precision_bits", std::to_string(-std::log2(err)));
  // Times a plaintext, rescaled again: the scales multiply and divide exactly.
  const auto pc = ev.multiply_plain(rescaled, f.encoder.encode(b, scale, rescaled.level()));
  const auto twice = ev.rescale(pc);
  for (std::size_t i = 0; i < a.size(); ++i)
    plain_prod[i] = prod[i] * b[i];
  EXPECT_LE(max_error(decrypt_values(f, twice, k.sk), plain_prod),
            std::sqrt(2.0) * bound + 2 * e + rescale_bound(f, twice.scale));
}

// relinearize_rescale divides the relinearization's inner product and P times the product by
// P q_l at once: within the separate path's bound of the plaintext product, close to that path's
// own result, for a sum of two products (lazy relinearization: one key switch) as well; two
// components are rescale() word for word.
TEST_P(CkksScheme, RelinearizeAndRescaleInOneDivision) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 16);
  const auto& ev = f.evaluator;
  Values prod(a.size()), sum(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    prod[i] = a[i] * b[i];
    sum[i] = prod[i] + b[i] * b[i];
  }
  const auto tensor = ev.multiply(ca, cb);
  const auto fused = ev.relinearize_rescale(tensor, k.rlk);
  const auto separate = ev.rescale(ev.relinearize(tensor, k.rlk));
  EXPECT_EQ(fused.size(), 2U);
  EXPECT_EQ(fused.level(), top - 1);
  EXPECT_DOUBLE_EQ(fused.scale, separate.scale);
  const double e = fresh_bound(f, scale);
  const double bound = 2 * std::sqrt(2.0) * e + e * e + rescale_bound(f, fused.scale) +
                       key_switch_bound(f, top, scale * scale) * scale / fused.scale;
  const Values got = decrypt_values(f, fused, k.sk);
  EXPECT_LE(max_error(got, prod), bound);
  // The two paths differ by their roundings only: far below the bound's key-switch share.
  EXPECT_LE(max_error(got, decrypt_values(f, separate, k.sk)), 2 * rescale_bound(f, fused.scale));
  // Lazy: a b + b b from one key switch.
  const auto both = ev.relinearize_rescale(ev.add(tensor, ev.multiply(cb, cb)), k.rlk);
  EXPECT_LE(max_error(decrypt_values(f, both, k.sk), sum), 2 * bound);
  // Two components: the plain rescale.
  const auto relin = ev.relinearize(tensor, k.rlk);
  const auto plain = ev.relinearize_rescale(relin, k.rlk);
  const auto reference = ev.rescale(relin);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(plain.c[i].data == reference.c[i].data);
  EXPECT_EQ(code_of([&] { ev.relinearize_rescale(ev.drop_to_level(tensor, 0), k.rlk); }),
            ErrorCode::invalid_argument);
}

// linear_combination_at gives the words of the products multiply_constant_at makes, summed
// (18 terms: two inner products), at a level below the inputs'; mismatched scales are refused.
TEST_P(CkksScheme, LinearCombinationIsTheSumOfItsProducts) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 26);
  const auto& ev = f.evaluator;
  const std::uint32_t level = top > 0 ? top - 1 : 0;
  std::vector<const Ciphertext*> xs;
  std::vector<double> c, scales;
  for (int i = 0; i < 18; ++i) {
    xs.push_back(i % 2 == 0 ? &ca : &cb);
    c.push_back(0.37 * (i - 7));
    scales.push_back(1 << 20);
  }
  const Ciphertext got = ev.linear_combination_at(xs, c, scales, level);
  Ciphertext want = ev.multiply_constant_at(*xs[0], c[0], scales[0], level);
  for (std::size_t i = 1; i < xs.size(); ++i)
    want = ev.add(want, ev.multiply_constant_at(*xs[i], c[i], scales[i], level));
  EXPECT_EQ(got.level(), level);
  EXPECT_DOUBLE_EQ(got.scale, want.scale);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(got.c[i].data == want.c[i].data);
  scales[3] = 1 << 21;
  EXPECT_EQ(code_of([&] { ev.linear_combination_at(xs, c, scales, level); }),
            ErrorCode::invalid_argument);
}

// multiply_at reads both inputs' limbs of its level in place: the words of multiply on the
// dropped copies, for inputs at two levels; a level above either input is refused.
TEST_P(CkksScheme, TensorAtALowerLevelReadsTheInputsInPlace) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 36);
  if (top < 2) GTEST_SKIP() << "needs two levels below the top";
  const auto& ev = f.evaluator;
  const Ciphertext lower = ev.drop_to_level(cb, top - 1);
  const Ciphertext got = ev.multiply_at(ca, lower, top - 2);
  const Ciphertext want =
      ev.multiply(ev.drop_to_level(ca, top - 2), ev.drop_to_level(lower, top - 2));
  EXPECT_EQ(got.level(), top - 2);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(got.c[i].data == want.c[i].data);
  const std::uint32_t above = top;  // a structured binding cannot be captured (C++17 rules)
  const Ciphertext& higher = ca;
  EXPECT_EQ(code_of([&] { ev.multiply_at(higher, lower, above); }), ErrorCode::invalid_argument);
}

TEST_P(CkksScheme, RotationsAndConjugationPermuteTheSlots) {
  auto& f = fixture(GetParam());
  auto& k = keys(f, GetParam());
  auto rng = safhire::core::SeededRandom::from_counter(9);
  Encryptor enc(f.context, *f.ops, rng);
  const double scale = std::exp2(f.context.params().log_scale);
  const std::uint32_t top = f.context.max_level();
  const int n = static_cast<int>(f.context.degree() / 2);
  const auto z = random_values(static_cast<std::size_t>(n), 1.0, 10);
  const auto ct = enc.encrypt(f.encoder.encode(z, scale, top), k.pk);
  const double bound = fresh_bound(f, scale) + key_switch_bound(f, top, scale);
  auto rotated = [&](int step) {
    Values r(z.size());
    for (int j = 0; j < n; ++j)
      r[static_cast<std::size_t>(j)] = z[static_cast<std::size_t>(((j + step) % n + n) % n)];
    return r;
  };
  const std::vector<int> steps{1, 3, -3, n - 1, 64};
  for (int step : steps) {
    EXPECT_LE(
        max_error(decrypt_values(f, f.evaluator.rotate(ct, step, k.galois), k.sk), rotated(step)),
        bound)
        << "step " << step;
  }
  const auto hoisted = f.evaluator.rotate_hoisted(ct, steps, k.galois);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_LE(max_error(decrypt_values(f, hoisted[i], k.sk), rotated(steps[i])), bound)
        << "hoisted step " << steps[i];
  }
  // Composition: 1 then 2 is 3; conjugating twice is the identity.
  const auto r12 = f.evaluator.rotate(f.evaluator.rotate(ct, 1, k.galois), 2, k.galois);
  EXPECT_LE(max_error(decrypt_values(f, r12, k.sk), rotated(3)), 2 * bound);
  Values conj(z.size());
  for (std::size_t i = 0; i < z.size(); ++i)
    conj[i] = std::conj(z[i]);
  const auto c1 = f.evaluator.conjugate(ct, k.galois);
  EXPECT_LE(max_error(decrypt_values(f, c1, k.sk), conj), bound);
  EXPECT_LE(max_error(decrypt_values(f, f.evaluator.conjugate(c1, k.galois), k.sk), z), 2 * bound);
}

INSTANTIATE_TEST_SUITE_P(Sets, CkksScheme,
                         ::testing::Values("n12-l2", "n13-l3", "n14-l7", "n15-l14"));

// A key made for level 1 rotates ciphertexts at levels 1 and 0, is smaller than a top-level
// key, and refuses a ciphertext above its level with a typed error.
TEST(CkksScheme, LowerLevelKeysRotateAtTheirLevelAndBelow) {
  auto& f = fixture("n13-l3");
  auto& k = keys(f, "n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(61);
  KeyGenerator gen(f.context, *f.ops, rng);
  const std::vector<int> step{3};
  const auto low = gen.galois_keys(k.sk, step, false, 1);
  const auto& key = low.at(rotation_galois_element(f.context, 3));
  EXPECT_EQ(key.b.size(), f.context.digits(1));
  EXPECT_EQ(key.b[0].limbs(), 2 + f.context.p_moduli().size());
  const auto [a, b, ca, cb, scale, top] = encrypt_two(f, k, 62);
  (void)b;
  (void)cb;
  const std::size_t n = a.size();
  Values rotated(n);
  for (std::size_t i = 0; i < n; ++i)
    rotated[i] = a[(i + 3) % n];
  for (std::uint32_t level : {1U, 0U}) {
    const auto x = f.evaluator.drop_to_level(ca, level);
    const auto r = f.evaluator.rotate(x, 3, low);
    EXPECT_LE(max_error(decrypt_values(f, r, k.sk), rotated),
              2 * fresh_bound(f, scale) + key_switch_bound(f, level, scale))
        << "level " << level;
  }
  // Level 3 has two digits, the key one.
  EXPECT_EQ(code_of([&, &ca = ca] { f.evaluator.rotate(ca, 3, low); }),
            ErrorCode::invalid_argument);
}

// Seeded keys store b_j and a seed. Their defining equation, with a_j regenerated and the
// stored sigma^-1 form undone by sigma itself: sigma(b_j) + sigma(a_j) s - [P]_j sigma(s) is a
// small error (and b_j + a_j s - [P]_j s^2 for relinearization); they relinearize, rotate,
// conjugate and rotate hoisted like full keys.
TEST(CkksScheme, SeededKeysHoldTheKeyEquationAndSwitchLikeFullKeys) {
  auto& f = fixture("n13-l3");
  auto& k = keys(f, "n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(71);
  KeyGenerator gen(f.context, *f.ops, rng);
  gen.set_seeded(true);
  const int n = static_cast<int>(f.context.degree() / 2);
  const std::vector<int> steps{1, 3, -3};
  const GaloisKeys galois = gen.galois_keys(k.sk, steps, true);
  const SwitchingKey rlk = gen.relinearization_key(k.sk);
  const std::uint32_t top = f.context.max_level();
  const auto& ops = *f.ops;
  const auto moduli = f.context.qp_moduli(top);
  // max |centred coefficient| of sigma(b) + sigma(a) s - [P]_j target, over every digit.
  auto worst_error = [&](const SwitchingKey& key, std::span<const std::uint32_t> sigma,
                         const RnsPoly& target) {
    EXPECT_TRUE(key.seeded());
    EXPECT_TRUE(key.a.empty());
    EXPECT_EQ(key.b.size(), f.context.digits(top));
    double worst = 0;
    for (std::size_t j = 0; j < key.b.size(); ++j) {
      RnsPoly a, sb(f.context.degree(), moduli, true), sa(f.context.degree(), moduli, true);
      seeded_a(ops, *key.seed, j, moduli, a);
      ops.permute(key.b[j], sigma, sb);
      ops.permute(a, sigma, sa);
      RnsPoly e(f.context.degree(), moduli, true), scaled(f.context.degree(), moduli, true);
      ops.multiply(sa, k.sk.s, e);
      ops.add(e, sb, e);
      std::vector<std::uint64_t> factor(f.context.primes().size(), 0);
      for (ModulusIndex i : f.context.digit_moduli(top, static_cast<std::uint32_t>(j)))
        factor[i] = f.context.p_mod()[i];
      ops.multiply_scalars(target, factor, scaled);
      ops.sub(e, scaled, e);
      ops.inverse(e);
      for (std::size_t l = 0; l < e.limbs(); ++l) {
        const std::uint64_t q = f.context.prime(e.moduli[l]);
        for (std::uint64_t x : e.limb(l)) {
          worst = std::max(worst, static_cast<double>(std::min(x, q - x)));
        }
      }
    }
    return worst;
  };
  // Rounded Gaussian errors of sigma 3.19: beyond 12 sigma has probability below 2^-100.
  const double bound = 12 * f.context.params().sigma;
  std::vector<std::uint32_t> identity(f.context.degree());
  for (std::uint32_t t = 0; t < identity.size(); ++t)
    identity[t] = t;
  RnsPoly s2(f.context.degree(), moduli, true);
  ops.multiply(k.sk.s, k.sk.s, s2);
  EXPECT_LE(worst_error(rlk, identity, s2), bound);
  for (const auto& [g, key] : galois.keys) {
    const auto sigma = f.context.ntt(0).automorphism_permutation(g);
    RnsPoly rotated(f.context.degree(), moduli, true);
    ops.permute(k.sk.s, sigma, rotated);
    EXPECT_LE(worst_error(key, sigma, rotated), bound) << "Galois element " << g;
  }
  // The same key twice: the same a_j.
  RnsPoly a1, a2;
  seeded_a(ops, *rlk.seed, 1, moduli, a1);
  seeded_a(ops, *rlk.seed, 1, moduli, a2);
  EXPECT_EQ(a1, a2);

  // In use, against plaintext arithmetic with the full keys' bounds.
  const auto [a, b, ca, cb, scale, level] = encrypt_two(f, k, 72);
  const double e = fresh_bound(f, scale);
  const double ks = key_switch_bound(f, level, scale);
  auto rotated = [&, &a = a](int step) {
    Values r(a.size());
    for (int j = 0; j < n; ++j)
      r[static_cast<std::size_t>(j)] = a[static_cast<std::size_t>(((j + step) % n + n) % n)];
    return r;
  };
  for (int step : steps) {
    EXPECT_LE(
        max_error(decrypt_values(f, f.evaluator.rotate(ca, step, galois), k.sk), rotated(step)),
        e + ks)
        << "step " << step;
  }
  const auto hoisted = f.evaluator.rotate_hoisted(ca, steps, galois);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_LE(max_error(decrypt_values(f, hoisted[i], k.sk), rotated(steps[i])), e + ks);
  }
  Values conj(a.size()), prod(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    conj[i] = std::conj(a[i]);
    prod[i] = a[i] * b[i];
  }
  EXPECT_LE(max_error(decrypt_values(f, f.evaluator.conjugate(ca, galois), k.sk), conj), e + ks);
  const auto relin = f.evaluator.relinearize(f.evaluator.multiply(ca, cb), rlk);
  EXPECT_LE(max_error(decrypt_values(f, relin, k.sk), prod),
            2 * std::sqrt(2.0) * e + e * e + key_switch_bound(f, level, scale * scale));
}

TEST(CkksScheme, GaloisElementsFormTheRotationGroup) {
  auto& f = fixture("n13-l3");
  const std::uint64_t M = 2 * f.context.degree();
  const int n = static_cast<int>(f.context.degree() / 2);
  for (int a : {0, 1, 7, -5, n - 1}) {
    for (int b : {1, 3, -2, n}) {
      EXPECT_EQ(rotation_galois_element(f.context, a) * rotation_galois_element(f.context, b) % M,
                rotation_galois_element(f.context, a + b));
    }
  }
  EXPECT_EQ(rotation_galois_element(f.context, n), 1U);  // 5 has order N/2
  const std::uint64_t c = conjugation_galois_element(f.context);
  EXPECT_EQ(c * c % M, 1U);
}

TEST(CkksScheme, SparseSlotsRotateWithinTheirPeriod) {
  auto& f = fixture("n13-l3");
  auto& k = keys(f, "n13-l3");
  auto rng = safhire::core::SeededRandom::from_counter(11);
  Encryptor enc(f.context, *f.ops, rng);
  const std::uint32_t slots = 64;
  const auto z = random_values(slots, 1.0, 12);
  const double scale = 0x1p33;
  const auto ct = enc.encrypt(f.encoder.encode(z, scale, 3, slots), k.pk);
  const auto r = decrypt_values(f, f.evaluator.rotate(ct, 5, k.galois), k.sk);
  ASSERT_EQ(r.size(), slots);
  for (std::uint32_t j = 0; j < slots; ++j)
    EXPECT_LE(std::abs(r[j] - z[(j + 5) % slots]), 2 * fresh_bound(f, scale));
}

TEST(CkksScheme, KeySwitchingNoiseIsWithinABitOfItsFormula) {
  for (const char* name : {"n12-l2", "n13-l3", "n14-l7"}) {
    auto& f = fixture(name);
    auto& k = keys(f, name);
    const std::uint32_t level = f.context.max_level();
    const std::uint32_t n = f.context.degree();
    auto rng = safhire::core::SeededRandom::from_counter(13);
    KeyGenerator gen(f.context, *f.ops, rng);
    const RnsPoly d = gen.sample_uniform(f.context.q_moduli(level));
    auto [u0, u1] = f.evaluator.key_switch(d, k.rlk);
    RnsPoly s2(n, f.context.q_moduli(level), true), err(n, f.context.q_moduli(level), true);
    f.ops->multiply(k.sk.s, k.sk.s, s2);
    f.ops->multiply(d, s2, s2);        // d s^2
    f.ops->multiply(u1, k.sk.s, err);  // u_1 s
    f.ops->add(err, u0, err);
    f.ops->sub(err, s2, err);
    f.ops->inverse(err);
    RnsPoly s(n, {0}, true);
    std::copy(k.sk.s.limb(0).begin(), k.sk.s.limb(0).end(), s.data.begin());
    f.ops->inverse(s);
    const std::uint64_t q0 = f.context.prime(0);
    double h = 0;
    for (auto x : s.limb(0))
      h += x != 0 ? 1 : 0;
    double measured = 0;
    for (auto x : err.limb(0)) {
      const double v = x > q0 / 2 ? -static_cast<double>(q0 - x) : static_cast<double>(x);
      measured += v * v;
    }
    measured /= n;
    const double expected = key_switch_mean_square(f, level, h);
    const double bits = 0.5 * std::log2(measured / expected);  // of the standard deviations
    EXPECT_LE(std::fabs(bits), 1.0) << name << ": measured rms 2^" << 0.5 * std::log2(measured)
                                    << ", formula 2^" << 0.5 * std::log2(expected);
  }
}

TEST(CkksScheme, MismatchedOperandsAreTypedErrors) {
  auto& f = fixture("n12-l2");
  auto& k = keys(f, "n12-l2");
  auto rng = safhire::core::SeededRandom::from_counter(14);
  Encryptor enc(f.context, *f.ops, rng);
  const auto z = random_values(4, 1.0, 15);
  const auto top = enc.encrypt(f.encoder.encode(z, 0x1p24, 2, 4), k.pk);
  const auto low = enc.encrypt(f.encoder.encode(z, 0x1p24, 1, 4), k.pk);
  const auto other_scale = enc.encrypt(f.encoder.encode(z, 0x1p23, 2, 4), k.pk);
  const auto& ev = f.evaluator;
  EXPECT_EQ(code_of([&] { ev.add(top, low); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.add(top, other_scale); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.multiply(top, low); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.rescale(ev.drop_to_level(top, 0)); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.drop_to_level(low, 2); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.rotate(top, 7, k.galois); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.relinearize(top, k.rlk); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { ev.rotate(ev.multiply(top, top), 1, k.galois); }),
            ErrorCode::invalid_argument);
  // Dropping a level keeps the values.
  EXPECT_LE(max_error(decrypt_values(f, ev.drop_to_level(top, 0), k.sk), z),
            fresh_bound(f, 0x1p24));
}

// One N = 2^16 pass (the sparse-secret set, 21 primes): multiply, relinearize, rescale and
// rotate, against plaintext arithmetic. Kept to one ciphertext product and one rotation key.
TEST(CkksScheme, FullSizeRingMultipliesAndRotates) {
  const CkksContext context(named_set("n16-l20-h192"));
  const auto ops = make_cpu_rns_ops(context, 2);
  const Encoder encoder(context, *ops);
  const Evaluator ev(context, *ops);
  auto rng = safhire::core::SeededRandom::from_counter(16);
  KeyGenerator gen(context, *ops, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  const std::vector<int> steps{7};
  const auto galois = gen.galois_keys(sk, steps, false);
  Encryptor enc(context, *ops, rng);
  const std::uint32_t level = 3;  // a low level keeps the test cheap; the keys cover all
  const double scale = 0x1p45;
  const auto a = random_values(context.degree() / 2, 1.0, 17);
  const auto ct = enc.encrypt(encoder.encode(a, scale, level), sk);
  const auto sq = ev.rotate(ev.rescale(ev.multiply_relinearize(ct, ct, rlk)), 7, galois);
  const auto back = encoder.decode(decrypt(context, *ops, sq, sk));
  const std::size_t n = a.size();
  double err = 0;
  for (std::size_t j = 0; j < n; ++j)
    err = std::max(err, std::abs(back[j] - a[(j + 7) % n] * a[(j + 7) % n]));
  EXPECT_LE(err, 0x1p-25);
}

}  // namespace
