// Homomorphic linear transforms against the plaintext matrix-vector product: dense matrices on
// sparse slots, a three-diagonal matrix (the shape of one DFT stage) on full slots, the exact
// rotation set, level and scale accounting, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ckks_fixture.hpp"
#include "safhire/ckks/linear_transform.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
using Values = std::vector<std::complex<double>>;

struct Client {
  Fixture& f;
  SecretKey sk;
  explicit Client(const char* set) : f(fixture(set)) {
    auto rng = safhire::core::SeededRandom::from_counter(77);
    KeyGenerator gen(f.context, *f.ops, rng);
    sk = gen.secret_key();
  }
  GaloisKeys keys_for(const std::vector<int>& steps, bool seeded = false) {
    auto rng = safhire::core::SeededRandom::from_counter(78);
    KeyGenerator gen(f.context, *f.ops, rng);
    gen.set_seeded(seeded);
    return gen.galois_keys(sk, steps, false);
  }
  Ciphertext encrypt(const Values& z, std::uint32_t slots, std::uint32_t level) {
    auto rng = safhire::core::SeededRandom::from_counter(79);
    Encryptor enc(f.context, *f.ops, rng);
    const double scale = std::exp2(f.context.params().log_scale);
    return enc.encrypt(f.encoder.encode(z, scale, level, slots), sk);
  }
  Values decrypt(const Ciphertext& ct) {
    return f.encoder.decode(safhire::ckks::decrypt(f.context, *f.ops, ct, sk));
  }
};

// y = M x with M given by its diagonals: y_j = sum_k diag_k[j] x_((j + k) mod n).
Values apply_plain(const LinearTransform::Diagonals& diagonals, const Values& x) {
  const std::size_t n = x.size();
  Values y(n);
  for (const auto& [k, d] : diagonals) {
    for (std::size_t j = 0; j < n; ++j)
      y[j] += d[j] * x[(j + k) % n];
  }
  return y;
}

// Six standard deviations of the output's slot error. Decoding n slots reads 2n coefficients
// (those of the subring Z[X^(N/2n)]), so a slot's error variance is 2n times a coefficient's:
// x's slot error (secret-key encryption: 2n sigma^2, in slot units times scale^2) reaches output
// slot j through sum_k diag_k[j] rot_k(e), whose variance is sum_k |diag_k[j]|^2 times a slot's for
// slot errors that are uncorrelated across slots; each rotated term adds a key switch's digit term
// (the same kind of error at x's scale). The ModDowns round at the output's scale, x's times the
// transform's, one per rotation. The diagonals' own rounding (coefficients rounded at the
// transform's scale) adds sum_k |x| sqrt(N / 12) / scale_pt.
double transform_bound(Fixture& f, const LinearTransform::Diagonals& diagonals,
                       const LinearTransform& transform, const Values& x, double scale) {
  const std::size_t n = x.size();
  double w2 = 0;
  for (std::size_t j = 0; j < n; ++j) {
    double row = 0;
    for (const auto& [k, d] : diagonals)
      row += std::norm(d[j]);
    w2 = std::max(w2, row);
  }
  double x_max = 0;
  for (const auto& v : x)
    x_max = std::max(x_max, std::abs(v));
  const double big_n = f.context.degree(), sigma = f.context.params().sigma;
  const double read = 2.0 * static_cast<double>(n);  // coefficients a slot sums
  const double fresh = std::sqrt(read) * sigma / scale;
  // key_switch_mean_square without its rounding term ((1 + h) / 12 with h = -1).
  const double digits = std::sqrt(read * key_switch_mean_square(f, transform.level(), -1)) / scale;
  const double mod_down = static_cast<double>(transform.rotations().size()) *
                          std::sqrt(read * (1 + 2 * big_n / 3) / 12) / (scale * transform.scale());
  const double rounding =
      std::sqrt(static_cast<double>(diagonals.size()) * read / 12) * x_max / transform.scale();
  return 6 * (std::sqrt(w2) * (fresh + digits) + mod_down + rounding);
}

LinearTransform::Diagonals random_diagonals(const std::set<std::uint32_t>& indices, std::uint32_t n,
                                            std::uint64_t seed) {
  LinearTransform::Diagonals d;
  for (std::uint32_t k : indices)
    d[k] = random_values(n, 1.0, seed + k);
  return d;
}

TEST(CkksLinearTransform, DenseMatrixOnSparseSlotsMatchesThePlainProduct) {
  Client s("n14-l7");
  auto& f = s.f;
  const std::uint32_t n = 64, level = f.context.max_level();
  // A dense matrix: every diagonal.
  std::vector<std::complex<double>> matrix = random_values(std::size_t{n} * n, 1.0, 5);
  const auto transform = LinearTransform::from_matrix(f.encoder, matrix, level, n);
  LinearTransform::Diagonals diagonals;
  for (std::uint32_t k = 0; k < n; ++k) {
    for (std::uint32_t j = 0; j < n; ++j)
      diagonals[k].push_back(matrix[std::size_t{j} * n + (j + k) % n]);
  }
  const Values x = random_values(n, 1.0, 6);
  const auto ct = s.encrypt(x, n, level);
  const auto keys = s.keys_for(transform.rotations());
  const Ciphertext y = transform.apply(f.evaluator, ct, keys);
  EXPECT_EQ(y.level(), level);
  EXPECT_EQ(y.scale, ct.scale * static_cast<double>(f.context.prime(level)));
  const Values expect = apply_plain(diagonals, x);
  const double bound = transform_bound(f, diagonals, transform, x, ct.scale);
  EXPECT_LE(max_error(s.decrypt(y), expect), bound);
  // Rescaling restores the input's scale exactly.
  const Ciphertext r = f.evaluator.rescale(y);
  EXPECT_EQ(r.scale, ct.scale);
  EXPECT_LE(max_error(s.decrypt(r), expect), bound + rescale_bound(f, ct.scale));
  // The rescale fused into the ModDown's division: the same level, scale and bound, and close
  // to the separate path's result.
  const Ciphertext fused = transform.apply(f.evaluator, ct, keys, true);
  EXPECT_EQ(fused.level(), r.level());
  EXPECT_EQ(fused.scale, ct.scale);
  EXPECT_LE(max_error(s.decrypt(fused), expect), bound + rescale_bound(f, ct.scale));
  EXPECT_LE(max_error(s.decrypt(fused), s.decrypt(r)), 2 * rescale_bound(f, ct.scale));
}

TEST(CkksLinearTransform, ThreeDiagonalsOnFullSlotsEveryBabyStepCount) {
  Client s("n13-l3");
  auto& f = s.f;
  const std::uint32_t n = f.context.degree() / 2, level = 2;
  // The shape of one radix-2 DFT stage: diagonals 0, t and n - t.
  const std::uint32_t t = 16;
  const auto diagonals = random_diagonals({0, t, n - t}, n, 40);
  const Values x = random_values(n, 1.0, 7);
  const auto ct = s.encrypt(x, n, level);
  const Values expect = apply_plain(diagonals, x);
  for (std::uint32_t n1 : {1U, 16U, 32U, 0U}) {
    const LinearTransform transform(f.encoder, diagonals, level, n, 0, n1);
    const auto keys = s.keys_for(transform.rotations());
    EXPECT_LE(max_error(s.decrypt(transform.apply(f.evaluator, ct, keys)), expect),
              transform_bound(f, diagonals, transform, x, ct.scale))
        << "baby steps " << transform.baby_steps();
  }
}

// Lazy diagonals (kept as integer coefficients, encoded limb by limb where they are used) give
// the eager transform's words exactly, through the hoisted rows (many babies) and through the
// batched sums (one baby), with full and seeded keys; compact diagonals stay eager, and the
// lazy ones take N words each.
TEST(CkksLinearTransform, LazyDiagonalsGiveTheEagerWords) {
  Client s("n13-l3");
  auto& f = s.f;
  const std::uint32_t n = f.context.degree() / 2, level = 2;
  // Random (not periodic) diagonals, and one constant one (compact).
  auto diagonals = random_diagonals({0, 1, 2, 5, 9, 17, n - 3, n - 1}, n, 60);
  diagonals[4] = std::vector<std::complex<double>>(n, {0.25, -0.5});
  const Values x = random_values(n, 1.0, 61);
  const auto ct = s.encrypt(x, n, level);
  for (const bool seeded : {false, true}) {
    for (std::uint32_t n1 : {1U, 4U, 0U}) {
      const LinearTransform eager(f.encoder, diagonals, level, n, 0, n1);
      const LinearTransform lazy(f.encoder, diagonals, level, n, 0, n1, 0, true);
      const auto keys = s.keys_for(eager.rotations(), seeded);
      const Ciphertext want = eager.apply(f.evaluator, ct, keys);
      const Ciphertext got = lazy.apply(f.evaluator, ct, keys);
      for (int i = 0; i < 2; ++i)
        EXPECT_TRUE(got.c[i].data == want.c[i].data) << "n1 " << n1 << " seeded " << seeded;
      if (n1 == 0) {
        // 8 lazy diagonals of N words; the constant one compact.
        EXPECT_LT(lazy.bytes(), eager.bytes() / 4);
        EXPECT_GE(lazy.bytes(), std::size_t{8} * f.context.degree() * 8);
      }
    }
  }
  // Coefficients beyond 2^63 have no 64-bit form (such a diagonal stays eager).
  EXPECT_TRUE(f.encoder.integer_coefficients(x, std::exp2(40)).has_value());
  EXPECT_FALSE(f.encoder.integer_coefficients(x, std::exp2(70)).has_value());
}

TEST(CkksLinearTransform, RotationsAreExactlyTheBabyAndGiantSteps) {
  auto& f = fixture("n13-l3");
  const std::uint32_t n = 256;
  const std::set<std::uint32_t> indices{0, 3, 9, 17, 64, 66, 255};
  const LinearTransform transform(f.encoder, random_diagonals(indices, n, 1), 1, n, 0, 8);
  // k = g + b with b = k mod 8: babies {3, 1, 1, 2, 7}, giants {8, 16, 64, 248}.
  EXPECT_EQ(transform.rotations(), (std::vector<int>{1, 2, 3, 7, 8, 16, 64, 248}));
  EXPECT_EQ(transform.baby_steps(), 8U);
}

// The diagonals of a DFT group of stages: every offset in (-w, w) stride s, periodic in the slots
// with period p. The giants are contiguous on both sides, so they run as two chains (keys n1 and
// -n1 only); the diagonals are stored in 2p words per prime; the result is the plain product.
TEST(CkksLinearTransform, ChainedGiantsAndCompactPeriodicDiagonals) {
  Client s("n13-l3");
  auto& f = s.f;
  const std::uint32_t n = f.context.degree() / 2, level = 2, stride = 4, w = 8, period = 64;
  LinearTransform::Diagonals diagonals;
  for (int k = -static_cast<int>(w) + 1; k < static_cast<int>(w); ++k) {
    const Values one = random_values(period, 1.0, 300 + k);
    Values d(n);
    for (std::uint32_t j = 0; j < n; ++j)
      d[j] = one[j % period];
    diagonals[static_cast<std::uint32_t>((k * static_cast<int>(stride) + n) % n)] = d;
  }
  const std::uint32_t n1 = 2 * stride;
  const LinearTransform transform(f.encoder, diagonals, level, n, 0, n1);
  EXPECT_TRUE(transform.chained());
  // Babies 4 (k odd); giants 8, 16, 24 and -8, .., -32 as two chains.
  EXPECT_EQ(transform.rotations(), (std::vector<int>{static_cast<int>(stride), static_cast<int>(n1),
                                                     static_cast<int>(n - n1)}));
  const std::size_t limbs = level + 1 + f.context.p_moduli().size();
  EXPECT_EQ(transform.bytes(), diagonals.size() * limbs * 2 * period * sizeof(std::uint64_t));
  const Values x = random_values(n, 1.0, 8);
  const auto ct = s.encrypt(x, n, level);
  const auto keys = s.keys_for(transform.rotations());
  EXPECT_LE(max_error(s.decrypt(transform.apply(f.evaluator, ct, keys)), apply_plain(diagonals, x)),
            transform_bound(f, diagonals, transform, x, ct.scale));
  // With at most one baby rotation: babies {0, 4} (n1 = 8) or {0} (every offset a giant).
  const LinearTransform capped(f.encoder, diagonals, level, n, 0, 0, 1);
  const auto steps = capped.rotations();
  EXPECT_LE(steps.size(), 3U);
  EXPECT_LE(max_error(s.decrypt(capped.apply(f.evaluator, ct, s.keys_for(steps))),
                      apply_plain(diagonals, x)),
            transform_bound(f, diagonals, capped, x, ct.scale));
  // Dense diagonals are stored whole.
  const auto dense = random_diagonals({0, 1}, n, 9);
  EXPECT_EQ(LinearTransform(f.encoder, dense, level, n).bytes(),
            2 * limbs * f.context.degree() * sizeof(std::uint64_t));
}

// Seeded baby keys run one at a time with their a_j regenerated, full ones all at once: all
// seeded, and seeded and full keys interleaved, give the plain product within the same bound.
TEST(CkksLinearTransform, SeededKeysGiveThePlainProduct) {
  Client s("n13-l3");
  auto& f = s.f;
  const std::uint32_t n = f.context.degree() / 2, level = 2;
  const auto diagonals = random_diagonals({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 21}, n, 41);
  const Values x = random_values(n, 1.0, 11);
  const auto ct = s.encrypt(x, n, level);
  const LinearTransform transform(f.encoder, diagonals, level, n, 0, 8);
  ASSERT_EQ(transform.baby_steps(), 8U);
  const auto steps = transform.rotations();
  const GaloisKeys seeded = s.keys_for(steps, true);
  GaloisKeys mixed = s.keys_for(steps);
  std::size_t swapped = 0;
  for (int step : {1, 4, 5, 8}) {  // babies 1, 4, 5 and a giant
    const auto g = rotation_galois_element(f.context, step);
    mixed.keys.at(g) = seeded.at(g);
    ++swapped;
  }
  ASSERT_EQ(swapped, 4U);
  const Values expect = apply_plain(diagonals, x);
  const double bound = transform_bound(f, diagonals, transform, x, ct.scale);
  EXPECT_LE(max_error(s.decrypt(transform.apply(f.evaluator, ct, seeded)), expect), bound);
  EXPECT_LE(max_error(s.decrypt(transform.apply(f.evaluator, ct, mixed)), expect), bound);
}

TEST(CkksLinearTransform, MissingKeysAndMismatchesAreTypedErrors) {
  Client s("n13-l3");
  auto& f = s.f;
  const std::uint32_t n = 128;
  const auto diagonals = random_diagonals({0, 1, 5}, n, 2);
  const LinearTransform transform(f.encoder, diagonals, 2, n, 0, 4);
  const auto ct = s.encrypt(random_values(n, 1.0, 3), n, 2);
  auto steps = transform.rotations();
  steps.pop_back();
  EXPECT_EQ(code_of([&] { transform.apply(f.evaluator, ct, s.keys_for(steps)); }),
            ErrorCode::invalid_argument);
  const auto keys = s.keys_for(transform.rotations());
  const auto lower = f.evaluator.drop_to_level(ct, 1);
  EXPECT_EQ(code_of([&] { transform.apply(f.evaluator, lower, keys); }),
            ErrorCode::invalid_argument);
  const auto other_slots = s.encrypt(random_values(2 * n, 1.0, 3), 2 * n, 2);
  EXPECT_EQ(code_of([&] { transform.apply(f.evaluator, other_slots, keys); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { LinearTransform(f.encoder, diagonals, 2, n, 0, 3); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] {
              LinearTransform(f.encoder, {{n, Values(n)}}, 2, n);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { LinearTransform(f.encoder, diagonals, 9, n); }),
            ErrorCode::invalid_argument);
}

}  // namespace
