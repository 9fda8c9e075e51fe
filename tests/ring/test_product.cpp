// Exact products in Z_{2^64}[X]/Phi_M: the radix-t path and the zero-padded power-of-two path,
// each against the schoolbook oracle mod 2^64, on every ring and instruction set, for the operand
// shapes RLWE uses (binary and ternary secrets, balanced gadget digits, the largest operands the
// bound allows); then the element-wise kernels against scalar arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/product.hpp"
#include "simd/dispatch.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ring;
using safhire::testing::all_rings;
using safhire::testing::random_signed;
using safhire::testing::random_words;
using safhire::testing::u128;
using safhire::testing::u64;
using Vec = std::vector<u64>;

Vec schoolbook(const RingParams& r, const Vec& a, const Vec& b) {
  Vec out(r.N());
  schoolbook_mul(r, a, b, out, TorusArith{});
  return out;
}

// Second operands of the shapes key switching and encryption multiply by.
std::vector<Vec> small_operands(const RingParams& r, std::mt19937_64& rng) {
  return {random_signed(rng, r.N(), 0, 1),        // binary secret
          random_signed(rng, r.N(), -1, 1),       // ternary secret
          random_signed(rng, r.N(), -256, 255),   // balanced digits, base 2^9
          random_signed(rng, r.N(), -155, 155)};  // balanced digits, base 310
}

class ProductOnRing : public ::testing::TestWithParam<RingParams> {};

TEST_P(ProductOnRing, RadixTMatchesSchoolbookOnEveryInstructionSet) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(20);
  for (SimdIsa isa : available_simd()) {
    SCOPED_TRACE(std::string(to_string(isa)));
    ExactProduct product(r, isa);
    for (const Vec& b : small_operands(r, rng)) {
      const Vec a = random_words(rng, r.N());  // uniform torus
      ASSERT_TRUE(product.bound_holds(a, b));
      Vec out(r.N());
      product.multiply(a, b, out);
      EXPECT_EQ(out, schoolbook(r, a, b));
    }
  }
}

TEST_P(ProductOnRing, PaddedMatchesSchoolbookOnEveryInstructionSet) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(21);
  for (SimdIsa isa : available_simd()) {
    SCOPED_TRACE(std::string(to_string(isa)));
    PaddedProduct product(r, isa);
    EXPECT_GE(product.transform_length(), 2 * r.N() - 1);
    EXPECT_LT(product.transform_length(), 4 * r.N() - 2);
    for (const Vec& b : small_operands(r, rng)) {
      const Vec a = random_words(rng, r.N());
      Vec out(r.N());
      product.multiply(a, b, out);
      EXPECT_EQ(out, schoolbook(r, a, b));
    }
  }
}

TEST_P(ProductOnRing, ExactAtTheEdgeOfTheBound) {
  // |a| = 2^63 everywhere and |b| as large as the bound allows: the largest coefficient the
  // product can reach, still exact.
  const RingParams& r = GetParam();
  ExactProduct product(r);
  const u128 Q = static_cast<u128>(product.crt().q1) * product.crt().q2;
  const u64 b_max =
      static_cast<u64>((Q - 1) / 2 / (static_cast<u128>(2 * r.t() - 3) * r.m()) >> 63);
  Vec a(r.N(), u64{1} << 63), b(r.N());
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = (i % 3 == 0) ? u64{0} - b_max : b_max;
  ASSERT_TRUE(product.bound_holds(a, b));
  Vec out(r.N());
  product.multiply(a, b, out);
  EXPECT_EQ(out, schoolbook(r, a, b));
  // Torus times torus is outside the bound.
  std::mt19937_64 rng(22);
  EXPECT_FALSE(product.bound_holds(random_words(rng, r.N()), random_words(rng, r.N())));
}

TEST_P(ProductOnRing, TwoPathsAgree) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(23);
  ExactProduct radix(r);
  PaddedProduct padded(r);
  for (int trial = 0; trial < 3; ++trial) {
    const Vec a = random_words(rng, r.N());
    const Vec b = random_signed(rng, r.N(), -1000, 1000);
    Vec x(r.N()), y(r.N());
    radix.multiply(a, b, x);
    padded.multiply(a, b, y);
    EXPECT_EQ(x, y);
  }
  // out may alias an input.
  Vec a = random_words(rng, r.N());
  const Vec b = random_signed(rng, r.N(), -3, 3);
  const Vec expected = schoolbook(r, a, b);
  radix.multiply(a, b, a);
  EXPECT_EQ(a, expected);
}

TEST_P(ProductOnRing, SumsOfProductsInRnsNttForm) {
  // sum_i a_i * d_i with one inverse transform.
  const RingParams& r = GetParam();
  std::mt19937_64 rng(26);
  ExactProduct product(r);
  const std::size_t n = r.N();
  Vec acc(2 * n, 0), expected(n, 0);
  for (int i = 0; i < 5; ++i) {
    const Vec a = random_words(rng, n);
    const Vec d = random_signed(rng, n, -256, 255);
    Vec ra(2 * n), rd(2 * n);
    product.to_ntt(a, ra);
    product.to_ntt(d, rd);
    product.multiply_accumulate(ra, rd, acc);
    const Vec term = schoolbook(r, a, d);
    for (std::size_t j = 0; j < n; ++j)
      expected[j] += term[j];
  }
  Vec out(n);
  product.from_ntt(acc, out);
  EXPECT_EQ(out, expected);
}

TEST_P(ProductOnRing, LimbSumsMatchSchoolbookAtTheBound) {
  // sum_k x_k * y_k with one prime, on every instruction set, for the exact split (two 32-bit
  // limbs) and for one rounded limb (shifts 20 and 32), with the small operands using up the
  // split's whole bound (|x_k|_inf = small_bound / terms): aligned, then random with the limbs'
  // extremes among the torus words. The oracle is the schoolbook product with y_k rounded to the
  // nearest multiple of 2^shift for one limb. Aligned: every y_k is the constant whose limbs are
  // all the most negative (-2^31 for two limbs, -2^(63-shift) for one), every x_k is +-c with the
  // signs that make one output coefficient as large as the reduction mod Phi_M allows (found
  // from the products of y with each X^i; the constant -c on the larger rings, where that search
  // is slow).
  const RingParams& r = GetParam();
  std::mt19937_64 rng(28);
  const std::size_t n = r.N(), terms = 5;
  std::vector<int> aligned_signs(n, -1);
  if (n <= 64) {
    std::vector<std::vector<std::int64_t>> rows(n, std::vector<std::int64_t>(n));  // [j][i]
    for (std::size_t i = 0; i < n; ++i) {
      Vec monomial(n, 0);
      monomial[i] = 1;
      const Vec shifted = schoolbook(r, monomial, Vec(n, u64{1}));
      for (std::size_t j = 0; j < n; ++j)
        rows[j][i] = static_cast<std::int64_t>(shifted[j]);
    }
    std::size_t best = 0;
    std::int64_t best_norm = -1;
    for (std::size_t j = 0; j < n; ++j) {
      std::int64_t norm = 0;
      for (std::int64_t v : rows[j])
        norm += v < 0 ? -v : v;
      if (norm > best_norm) {
        best_norm = norm;
        best = j;
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      aligned_signs[i] = rows[best][i] < 0 ? 1 : -1;  // y's limbs are negative
  }
  for (const LimbSplit split :
       {LimbSplit::exact(), LimbSplit::rounded(20), LimbSplit::rounded(32)}) {
    const bool one = split.limbs == 1;
    const Vec extreme(n, one ? 0x8000000000000000ULL : 0x8000000080000000ULL);
    auto rounded = [&](Vec y) {
      const u64 low = one ? (u64{1} << split.shift) - 1 : 0, half = one ? (low >> 1) + 1 : 0;
      for (u64& w : y)
        w = (w + half) & ~low;
      return y;
    };
    for (SimdIsa isa : available_simd()) {
      const LimbProduct product(r, isa);
      const auto c = static_cast<std::int64_t>(product.small_bound(split) / terms);
      ASSERT_GT(c, 0);
      for (bool aligned : {true, false}) {
        SCOPED_TRACE(std::string(to_string(isa)) + (aligned ? ", aligned" : ", random") + ", " +
                     std::to_string(split.limbs) + " limb(s), shift " +
                     std::to_string(split.shift));
        const std::size_t words = split.limbs * n;
        Vec expected(n, 0), acc(words, 0), out(n);
        std::vector<Vec> xs(terms, Vec(n)), ys(terms, Vec(words));
        std::vector<const u64*> px, py;
        for (std::size_t k = 0; k < terms; ++k) {
          Vec x = random_signed(rng, n, -c, c), y = aligned ? extreme : random_words(rng, n);
          for (std::size_t i = 0; aligned && i < n; ++i)
            x[i] = static_cast<u64>(aligned_signs[i] * c);
          for (std::size_t j = 0; !aligned && j < n; j += 5)
            y[j] = (j / 5) % 3 == 0   ? extreme[0]
                   : (j / 5) % 3 == 1 ? (one ? 0x7fffffffffffffffULL : 0x7fffffff7fffffffULL)
                                      : (one ? 0x8000000000000000ULL : 0xffffffff80000000ULL);
          product.small_to_ntt(x, xs[k]);
          product.torus_to_ntt(y, split, ys[k]);
          px.push_back(xs[k].data());
          py.push_back(ys[k].data());
          const Vec term = schoolbook(r, x, rounded(y));
          for (std::size_t j = 0; j < n; ++j)
            expected[j] += term[j];
        }
        product.multiply_accumulate(px, py, split, acc);
        product.from_ntt(acc, split, out);
        EXPECT_EQ(out, expected);
      }
    }
  }
}

TEST_P(ProductOnRing, FinestRoundingIsTheLeastShiftWithinTheBound) {
  // finest_rounding(S) is the least shift s whose one-limb bound (2t-3) m 2^(63-s) S <= (q-1)/2
  // holds, computed here from q directly; two limbs have the bound of limb magnitude 2^31.
  const RingParams& r = GetParam();
  const LimbProduct& product = LimbProduct::shared(r);
  const u64 q = product.plan().modulus();
  const u128 expansion = u128{2 * r.t() - 3} * r.m();
  auto holds = [&](std::uint32_t limb_bits, u64 sum) {
    return expansion * sum <= ((q - 1) / 2 >> limb_bits);
  };
  EXPECT_TRUE(holds(31, product.small_bound()));
  EXPECT_FALSE(holds(31, product.small_bound() + 1));
  for (u64 sum : {u64{1}, u64{160}, u64{6144}, product.small_bound()}) {
    const LimbSplit split = product.finest_rounding(sum);
    EXPECT_EQ(split.limbs, 1U);
    EXPECT_TRUE(holds(63 - split.shift, sum)) << sum;
    EXPECT_FALSE(holds(64 - split.shift, sum)) << sum;  // one less shift breaks the bound
    EXPECT_GE(product.small_bound(split), sum);
  }
  EXPECT_THROW((void)product.finest_rounding(product.small_bound() + 1), safhire::Error);
}

INSTANTIATE_TEST_SUITE_P(AllRings, ProductOnRing, ::testing::ValuesIn(all_rings()),
                         [](const auto& param_info) {
                           return safhire::testing::ring_label(param_info.param);
                         });

TEST(Product, ElementwiseKernelsMatchScalarArithmetic) {
  std::mt19937_64 rng(24);
  const u64 q1 = 4611686018427230833ULL, q2 = 4611686018427191467ULL;
  const auto crt = safhire::core::Crt2::make(q1, q2);
  const std::size_t len = 1001;  // not a multiple of any register width
  const Vec a = random_words(rng, len), b = random_words(rng, len, q1);
  Vec x2 = random_words(rng, len, q2), x1 = random_words(rng, len, q1);
  const u64 q_inv = safhire::core::inverse_mod_word(q1);
  const u64 two64 = static_cast<u64>((static_cast<u128>(1) << 64) % q1);
  for (SimdIsa isa : available_simd()) {
    SCOPED_TRACE(std::string(to_string(isa)));
    const auto& k = simd::checked_kernels(isa);
    Vec mont(len), lifted(len), crt_out(len), shifted(len), acc = x1;
    k.pointwise_montgomery(q1, q_inv, a.data(), b.data(), mont.data(), len);
    k.pointwise_montgomery_accumulate(q1, q_inv, a.data(), b.data(), acc.data(), len);
    k.lift_torus(q1, safhire::core::shoup_quotient<u64>(1, q1), two64, a.data(), lifted.data(),
                 len);
    k.crt_lift(crt, x1.data(), x2.data(), crt_out.data(), len);
    k.centred_shift(q1, x1.data(), 21, shifted.data(), len);
    for (std::size_t i = 0; i < len; ++i) {
      ASSERT_EQ(mont[i], safhire::core::mont_mul(a[i], b[i], q1, q_inv));
      ASSERT_EQ(acc[i], safhire::core::add_mod(x1[i], mont[i], q1));
      const auto v = static_cast<safhire::testing::i128>(static_cast<std::int64_t>(a[i]));
      const u64 expected = static_cast<u64>((v % q1 + q1) % q1);
      ASSERT_EQ(lifted[i], expected);
      ASSERT_EQ(crt_out[i], crt.lift(x1[i], x2[i]));
      // x1 read as the centred integer in (-q1/2, q1/2], times 2^21 mod 2^64.
      const auto centred = static_cast<safhire::testing::i128>(x1[i]) -
                           (x1[i] > q1 / 2 ? static_cast<safhire::testing::i128>(q1) : 0);
      ASSERT_EQ(shifted[i], static_cast<u64>(centred * (1 << 21)));
    }
  }
}

// The lazily reduced dot of `terms` products (one reduction per four) equals `terms`
// Montgomery accumulations word for word, on primes just below 2^62 (the worst case of its
// bound) and with operands at q - 1.
TEST(Product, MontgomeryDotEqualsRepeatedAccumulation) {
  std::mt19937_64 rng(27);
  const std::size_t len = 1001;
  for (const u64 q : {4611686018427230833ULL, 4611686018427191467ULL}) {
    const u64 q_inv = safhire::core::inverse_mod_word(q);
    for (std::size_t terms : {0, 1, 3, 4, 5, 8, 9}) {
      std::vector<Vec> xs, ys;
      std::vector<const u64*> px, py;
      for (std::size_t k = 0; k < terms; ++k) {
        xs.push_back(random_words(rng, len, q));
        ys.push_back(random_words(rng, len, q));
        for (std::size_t i = 0; i < len; i += 7)
          xs.back()[i] = ys.back()[i] = q - 1;
        px.push_back(xs.back().data());
        py.push_back(ys.back().data());
      }
      const Vec start = random_words(rng, len, q);
      Vec expected = start;
      for (std::size_t k = 0; k < terms; ++k)
        for (std::size_t i = 0; i < len; ++i)
          expected[i] = safhire::core::add_mod(
              expected[i], safhire::core::mont_mul(xs[k][i], ys[k][i], q, q_inv), q);
      for (SimdIsa isa : available_simd()) {
        Vec acc = start;
        simd::checked_kernels(isa).pointwise_montgomery_dot(q, q_inv, px.data(), py.data(), terms,
                                                            acc.data(), len);
        ASSERT_EQ(acc, expected) << to_string(isa) << ", " << terms << " terms";
      }
    }
  }
}

TEST(Product, BoundIsAssertedInCheckedBuilds) {
#if SAFHIRE_DEBUG_CHECKS
  const RingParams r(3, 7);
  ExactProduct product(r);
  std::mt19937_64 rng(25);
  const Vec a = random_words(rng, r.N()), b = random_words(rng, r.N());
  Vec out(r.N());
  try {
    product.multiply(a, b, out);  // torus x torus: beyond the two-prime bound
    FAIL() << "the exactness bound was not checked";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::internal);
  }
#else
  GTEST_SKIP() << "built without invariant checks (Debug or SAFHIRE_CHECKS=ON enables them)";
#endif
}

TEST(Product, SizeMismatchIsATypedError) {
  const RingParams r(3, 3);
  ExactProduct product(r);
  Vec a(18), b(17), out(18);
  try {
    product.multiply(a, b, out);
    FAIL();
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::size_mismatch);
  }
}

// The linear-layer kernels on 64-bit torus words (mod 2^64) and on 32-bit ones (mod 2^32),
// against plain unsigned arithmetic in the word type.
template <class Word>
class TorusKernels : public ::testing::Test {};
using TorusWords = ::testing::Types<std::uint64_t, std::uint32_t>;
TYPED_TEST_SUITE(TorusKernels, TorusWords);

// A weight (64-bit two's complement, as the kernels take it) applied in the word type.
template <class Word>
Word word_weight(std::uint64_t w) {
  return static_cast<Word>(w);
}

// Weights up to 2^15 in magnitude, and weights all +-1 (the kernels' multiply-free path).
TYPED_TEST(TorusKernels, DotMatchesPlainWordArithmetic) {
  using Word = TypeParam;
  std::mt19937_64 rng(77);
  for (std::size_t len : {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{1459}}) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{9}, std::size_t{40}})
      for (const bool signs : {false, true}) {
        std::vector<std::vector<Word>> rows(count, std::vector<Word>(len));
        std::vector<const Word*> pointers;
        std::vector<std::uint64_t> weights;
        for (auto& r : rows) {
          for (auto& x : r)
            x = static_cast<Word>(rng());
          pointers.push_back(r.data());
          weights.push_back(
              signs ? (rng() % 2 != 0 ? 1 : ~std::uint64_t{0})
                    : static_cast<std::uint64_t>(static_cast<std::int64_t>(rng() % 65535) - 32767));
        }
        std::vector<Word> expected(len, 0);
        for (std::size_t t = 0; t < count; ++t)
          for (std::size_t i = 0; i < len; ++i)
            expected[i] += word_weight<Word>(weights[t]) * rows[t][i];
        for (SimdIsa isa : available_simd()) {
          std::vector<Word> out(len, 123);
          torus_dot(pointers, weights, out, isa);
          ASSERT_EQ(out, expected) << to_string(isa) << ", len " << len << ", rows " << count
                                   << (signs ? ", weights +-1" : "");
        }
      }
  }
}

// `count` rows of `len` random words, with pointers to them; and `outputs` rows of `len` words
// holding a value every kernel must overwrite.
template <class Word>
struct RandomRows {
  RandomRows(std::mt19937_64& rng, std::size_t count, std::size_t len)
      : rows(count, std::vector<Word>(len)) {
    for (auto& r : rows) {
      for (auto& x : r)
        x = static_cast<Word>(rng());
      pointers.push_back(r.data());
    }
  }
  std::vector<std::vector<Word>> rows;
  std::vector<const Word*> pointers;
};

template <class Word>
struct OutputRows {
  OutputRows(std::size_t outputs, std::size_t len) : rows(outputs, std::vector<Word>(len, 5)) {
    for (auto& v : rows)
      pointers.push_back(v.data());
  }
  std::vector<std::vector<Word>> rows;
  std::vector<Word*> pointers;
};

// Weight kinds: small signed (the AVX2 kernel's split multiply with an offset), small
// nonnegative (split, no offset), and whole words (the 64-bit multiply).
std::uint64_t matmul_weight(std::mt19937_64& rng, int kind) {
  switch (kind) {
    case 0:
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(rng() % 65535) - 32767);
    case 1:
      return rng() % 4;
    default:
      return rng();
  }
}

TYPED_TEST(TorusKernels, MatmulMatchesPlainWordArithmetic) {
  using Word = TypeParam;
  std::mt19937_64 rng(78);
  for (int kind = 0; kind < 3; ++kind)
    for (std::size_t len : {std::size_t{1}, std::size_t{17}, std::size_t{1459}}) {
      for (std::size_t outputs :
           {std::size_t{1}, std::size_t{4}, std::size_t{7}, std::size_t{16}}) {
        const std::size_t count = 1 + rng() % 40;
        const RandomRows<Word> in(rng, count, len);
        std::vector<std::uint64_t> weights(outputs * count);
        for (auto& w : weights)
          w = matmul_weight(rng, kind);
        std::vector<std::vector<Word>> expected(outputs, std::vector<Word>(len, 0));
        for (std::size_t o = 0; o < outputs; ++o)
          for (std::size_t t = 0; t < count; ++t)
            for (std::size_t i = 0; i < len; ++i)
              expected[o][i] += word_weight<Word>(weights[o * count + t]) * in.rows[t][i];
        for (SimdIsa isa : available_simd()) {
          OutputRows<Word> out(outputs, len);
          torus_matmul(in.pointers, weights, out.pointers, len, isa);
          ASSERT_EQ(out.rows, expected) << to_string(isa) << ", len " << len << ", outputs "
                                        << outputs << ", weights " << kind;
        }
      }
    }
}

// A random sparse matrix in TorusSparseMatrix form (some outputs without taps, repeated
// columns allowed, half the magnitudes 1: on even outputs the units lead each sign's taps, the
// kernels' fast run; elsewhere they are scattered) against the sum of signed products word by
// word.
TYPED_TEST(TorusKernels, SpmmMatchesPlainWordArithmetic) {
  using Word = TypeParam;
  std::mt19937_64 rng(79);
  for (std::size_t len : {std::size_t{1}, std::size_t{9}, std::size_t{40}, std::size_t{1459}}) {
    for (std::size_t outputs : {std::size_t{1}, std::size_t{5}, std::size_t{16}}) {
      const std::size_t count = 1 + rng() % 50;
      const RandomRows<Word> in(rng, count, len);
      std::vector<std::uint32_t> start{0}, positives, column;
      std::vector<std::uint64_t> magnitude;
      for (std::size_t o = 0; o < outputs; ++o) {
        const std::size_t taps = o % 3 == 2 ? 0 : rng() % (2 * count);
        positives.push_back(static_cast<std::uint32_t>(taps == 0 ? 0 : rng() % (taps + 1)));
        for (std::size_t k = 0; k < taps; ++k) {
          column.push_back(static_cast<std::uint32_t>(rng() % count));
          magnitude.push_back(k % 5 == 0  ? (std::uint64_t{1} << 32) - 1 - rng() % 3
                              : rng() % 2 ? 1
                                          : rng() % 300);
        }
        if (o % 2 == 0) {
          const auto begin = magnitude.begin() + start.back();
          const auto unit_first = [](std::uint64_t x, std::uint64_t y) { return x == 1 && y != 1; };
          std::stable_sort(begin, begin + positives.back(), unit_first);
          std::stable_sort(begin + positives.back(), magnitude.end(), unit_first);
        }
        start.push_back(static_cast<std::uint32_t>(column.size()));
      }
      std::vector<std::vector<Word>> expected(outputs, std::vector<Word>(len, 0));
      for (std::size_t o = 0; o < outputs; ++o)
        for (std::size_t k = start[o]; k < start[o + 1]; ++k)
          for (std::size_t i = 0; i < len; ++i) {
            const Word p = word_weight<Word>(magnitude[k]) * in.rows[column[k]][i];
            expected[o][i] += k - start[o] < positives[o] ? p : Word{0} - p;
          }
      const TorusSparseMatrix matrix{start, positives, column, magnitude};
      for (SimdIsa isa : available_simd()) {
        OutputRows<Word> out(outputs, len);
        torus_spmm(in.pointers, matrix, out.pointers, len, isa);
        ASSERT_EQ(out.rows, expected)
            << to_string(isa) << ", len " << len << ", outputs " << outputs;
      }
    }
  }
}

// narrow_words against 128-bit arithmetic: each word's top 32 bits rounded to nearest, and the
// rounding errors (exact signed integers) summed by position mod the accumulator's length, on
// every instruction set, for lengths and periods that leave masked tails; words at the rounding
// boundary and at the top of the torus included.
TEST(NarrowWords, RoundAndSumTheErrorsByPosition) {
  __extension__ typedef __int128 i128;
  std::mt19937_64 rng(77);
  for (const std::size_t len : {std::size_t{1}, std::size_t{7}, std::size_t{1458}}) {
    for (const std::size_t period :
         {std::size_t{1}, std::size_t{6}, std::size_t{24}, std::size_t{11}}) {
      std::vector<u64> in = random_words(rng, len);
      in[0] = (u64{1} << 31) - (len % 2);  // just below / at the half-way point
      if (len > 1) in[len - 1] = ~u64{0};  // rounds up to 2^64: the word 0, error +1
      std::vector<std::uint32_t> want(len);
      std::vector<std::int64_t> want_sums(period, 0);
      for (std::size_t i = 0; i < len; ++i) {
        const u128 up = static_cast<u128>(in[i]) + (u128{1} << 31);
        want[i] = static_cast<std::uint32_t>(up >> 32);
        // the error: want[i] 2^32 - in[i] as an integer, the top carried out (2^64 = 0 on the
        // torus), so |error| <= 2^31
        const auto lifted = static_cast<i128>((up >> 32) << 32);
        want_sums[i % period] += static_cast<std::int64_t>(lifted - static_cast<i128>(in[i]));
      }
      for (SimdIsa isa : available_simd()) {
        std::vector<std::uint32_t> out(len);
        std::vector<u64> acc(period, 0);
        narrow_words(in, out, acc, isa);
        ASSERT_EQ(out, want) << to_string(isa) << ", len " << len << ", period " << period;
        for (std::size_t j = 0; j < period; ++j)
          ASSERT_EQ(static_cast<std::int64_t>(acc[j]), want_sums[j])
              << to_string(isa) << ", len " << len << ", period " << period << ", position " << j;
      }
    }
  }
  std::vector<u64> in(4);
  std::vector<std::uint32_t> out(3);
  std::vector<u64> acc(1);
  EXPECT_THROW(narrow_words(in, out, acc), safhire::Error);
}

TEST(TorusSpmm, InconsistentMatrixIsATypedError) {
  std::vector<std::uint64_t> row(8, 1), out(8, 0);
  const std::vector<const std::uint64_t*> rows{row.data()};
  const std::vector<std::uint64_t*> outs{out.data()};
  const std::vector<std::uint32_t> column{0, 0};
  const std::vector<std::uint64_t> magnitude{1, 2};
  const auto code = [&](std::vector<std::uint32_t> start,
                        std::vector<std::uint32_t> positives) -> std::optional<safhire::ErrorCode> {
    try {
      torus_spmm(rows, {start, positives, column, magnitude}, outs, 8);
    } catch (const safhire::Error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  EXPECT_EQ(code({0, 2}, {1}), std::nullopt);                           // consistent: runs
  EXPECT_EQ(out, std::vector<std::uint64_t>(8, std::uint64_t{0} - 1));  // 1 - 2
  EXPECT_EQ(code({0}, {}), safhire::ErrorCode::size_mismatch);          // no entry for the output
  EXPECT_EQ(code({0, 1}, {1}), safhire::ErrorCode::size_mismatch);      // 1 tap, 2 given
  EXPECT_EQ(code({0, 2}, {3}), safhire::ErrorCode::invalid_argument);   // 3 positives of 2
}

}  // namespace
