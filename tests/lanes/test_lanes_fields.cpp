// Prime and extension fields in lanes (fields.hpp). The oracle is the test's own GMP arithmetic:
// each element of F_(p^d) = F_p[Y]/(Y^d - gamma_i) multiplied as a polynomial modulo Y^d - gamma_i
// and p; the factorization checked without the library's theory (the roots of Y^m - beta in F_p
// counted by brute force for the small primes, Rabin's irreducibility test for Y^d - gamma, the
// product of the factors multiplied out); and the lane ring's coefficients reduced modulo each
// factor by the test. Then add, subtract, multiply, multiply by a constant and by plaintext
// elements, and the refresh, exact on random and adversarial elements (0, p - 1, every
// coefficient p - 1), and the refusals.
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "lanes_fixture.hpp"
#include "safhire/core/error.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::lanes;
using namespace safhire::lanes::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;

using Poly = std::vector<mpz_class>;  // coefficients low to high, in [0, p)

mpz_class powm(const mpz_class& x, const mpz_class& e, const mpz_class& p) {
  mpz_class out;
  mpz_powm(out.get_mpz_t(), x.get_mpz_t(), e.get_mpz_t(), p.get_mpz_t());
  return out;
}

// a b modulo Y^d - gamma and p (d = a.size() = b.size()).
Poly mul_binomial(const Poly& a, const Poly& b, const mpz_class& gamma, const mpz_class& p) {
  const std::size_t d = a.size();
  Poly out(d, 0);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      const mpz_class t = a[i] * b[j];
      if (i + j < d) {
        out[i + j] += t;
      } else {
        out[i + j - d] += t * gamma;
      }
    }
  }
  for (auto& x : out)
    x = mod(x, p);
  return out;
}

// The element-wise reference: x op y in F_p[Y]/(Y^d - gamma_i), element i of each lane.
std::vector<FieldElement> reference(const FieldSpace& field, const std::vector<FieldElement>& x,
                                    const std::vector<FieldElement>& y, char op) {
  std::vector<FieldElement> out(x.size());
  for (std::size_t e = 0; e < x.size(); ++e) {
    const mpz_class& gamma = field.gammas()[e % field.per_lane()];
    if (op == '*') {
      out[e] = mul_binomial(x[e], y[e], gamma, field.prime());
      continue;
    }
    out[e].resize(field.degree());
    for (std::size_t j = 0; j < field.degree(); ++j)
      out[e][j] = mod(op == '+' ? mpz_class(x[e][j] + y[e][j]) : mpz_class(x[e][j] - y[e][j]),
                      field.prime());
  }
  return out;
}

// Polynomials over F_p of any degree (for Rabin's test): remainder and gcd.
void trim(Poly& a) {
  while (!a.empty() && a.back() == 0)
    a.pop_back();
}
Poly remainder(Poly a, const Poly& b, const mpz_class& p) {
  trim(a);
  mpz_class lead;
  mpz_invert(lead.get_mpz_t(), b.back().get_mpz_t(), p.get_mpz_t());
  while (a.size() >= b.size()) {
    const mpz_class f = a.back() * lead % p;
    const std::size_t shift = a.size() - b.size();
    for (std::size_t i = 0; i < b.size(); ++i)
      a[shift + i] = mod(a[shift + i] - f * b[i], p);
    trim(a);
  }
  return a;
}
Poly gcd(Poly a, Poly b, const mpz_class& p) {
  trim(a);
  trim(b);
  while (!b.empty()) {
    Poly r = remainder(a, b, p);
    a = std::move(b);
    b = std::move(r);
  }
  return a;
}
// Y^e modulo Y^d - gamma and p, e >= 0.
Poly power_of_y(const mpz_class& e, std::size_t d, const mpz_class& gamma, const mpz_class& p) {
  Poly result(d, 0), base(d, 0);
  result[0] = 1;
  if (d == 1) {
    base[0] = gamma;  // Y = gamma modulo Y - gamma
  } else {
    base[1] = 1;
  }
  for (std::size_t bit = mpz_sizeinbase(e.get_mpz_t(), 2); bit-- > 0;) {
    result = mul_binomial(result, result, gamma, p);
    if (mpz_tstbit(e.get_mpz_t(), bit) != 0) result = mul_binomial(result, base, gamma, p);
  }
  return result;
}

// Rabin: f = Y^d - gamma (d a power of two) is irreducible over F_p iff Y^(p^d) = Y mod f and
// gcd(Y^(p^(d/2)) - Y, f) = 1.
bool irreducible(std::size_t d, const mpz_class& gamma, const mpz_class& p) {
  if (d == 1) return true;
  mpz_class pd, ph;
  mpz_pow_ui(pd.get_mpz_t(), p.get_mpz_t(), d);
  mpz_pow_ui(ph.get_mpz_t(), p.get_mpz_t(), d / 2);
  Poly y(d, 0);
  y[1] = 1;
  if (power_of_y(pd, d, gamma, p) != y) return false;
  Poly g = power_of_y(ph, d, gamma, p);
  g[1] = mod(g[1] - 1, p);
  Poly f(d + 1, 0);
  f[0] = mod(-gamma, p);
  f[d] = 1;
  return gcd(f, g, p).size() == 1;
}

std::vector<FieldElement> random_elements(const FieldSpace& field, std::size_t count,
                                          unsigned long seed) {
  std::vector<FieldElement> out(count);
  std::size_t i = 0;
  const auto values = random_integers(field.prime(), count * field.degree(), seed);
  for (auto& x : out) {
    x.assign(values.begin() + static_cast<std::ptrdiff_t>(i),
             values.begin() + static_cast<std::ptrdiff_t>(i + field.degree()));
    i += field.degree();
  }
  return out;
}

// Random elements with the adversarial ones first: 0, p - 1 (= beta^(n/m), no n/m-digit form),
// every coefficient p - 1, 1.
std::vector<FieldElement> adversarial_elements(const FieldSpace& field, unsigned long seed) {
  auto out = random_elements(field, field.elements(), seed);
  const mpz_class top = field.prime() - 1;
  out[0].assign(field.degree(), 0);
  out[1].assign(field.degree(), 0);
  out[1][0] = top;
  out[2].assign(field.degree(), top);
  out[3].assign(field.degree(), 0);
  out[3][0] = 1;
  return out;
}

// Every shipped field space: the space valid, the field's prime, degree and count as the math
// says, and the factorization checked independently.
struct Shape {
  const char* name;
  unsigned bits, degree, per_lane;
};

TEST(FieldSpaces, EveryShippedSpaceFactorsAsTheTheorySays) {
  const std::vector<Shape> shapes = {
      {"field-n16-65537", 17, 1, 256},   {"field-n16-46^512", 2829, 1, 8},
      {"field-n16-234^128", 1008, 1, 8}, {"field-n16-257^32", 9, 32, 16},
      {"field-n12-65537", 17, 1, 4},     {"field-n12-234^128", 1008, 1, 2},
      {"field-n12-257^2", 9, 2, 16},     {"field-n12-17^8", 5, 8, 2},
  };
  ASSERT_EQ(named_field_spaces().size() + test_field_spaces().size(), shapes.size());
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.name);
    const LaneSpace& space = named_lane_space(s.name);
    const bool secure = space.ckks.log_n == 16;
    EXPECT_NO_THROW(space.validate(!secure));
    if (secure) {
      EXPECT_GE(space.security_bits(), 128.0);
    }
    const FieldSpace field(space);
    const mpz_class& p = field.prime();
    EXPECT_EQ(mpz_sizeinbase(p.get_mpz_t(), 2), s.bits);
    EXPECT_GT(mpz_probab_prime_p(p.get_mpz_t(), 25), 0);
    EXPECT_EQ(field.degree(), s.degree);
    EXPECT_EQ(field.per_lane(), s.per_lane);
    EXPECT_EQ(field.elements(), space.lanes() * s.per_lane);
    const mpz_class beta = static_cast<unsigned long>(space.base);
    // Each Y^d - gamma_i divides Y^m - beta (gamma_i^(m/d) = beta), irreducible, all distinct.
    for (std::size_t i = 0; i < field.gammas().size(); ++i) {
      const mpz_class& g = field.gammas()[i];
      EXPECT_EQ(powm(g, field.per_lane(), p), beta);
      EXPECT_TRUE(irreducible(field.degree(), g, p)) << "gamma_" << i;
      for (std::size_t j = 0; j < i; ++j)
        EXPECT_NE(field.gammas()[j], g);
    }
    // For the small primes, Y^m - beta's roots in F_p by brute force: m of them when it splits,
    // none when its factors have degree d > 1.
    if (p <= 65537) {
      const unsigned long pu = p.get_ui(), m = space.t_degree, b = space.base;
      unsigned long roots = 0;
      for (unsigned long x = 0; x < pu; ++x) {
        unsigned long acc = 1;
        for (unsigned long e = m, base = x; e != 0; e >>= 1, base = base * base % pu) {
          if ((e & 1) != 0) acc = acc * base % pu;
        }
        roots += acc == b % pu ? 1 : 0;
      }
      EXPECT_EQ(roots, field.degree() == 1 ? m : 0);
    }
  }
}

TEST(FieldSpaces, RefusalsAreTypedErrors) {
  LaneSpaceOptions options;
  options.dnum = 4;
  // p = 2^32 + 1 = 641 x 6700417, and 2^256 + 1 (an integer space): composite.
  options.t_degree = 2;
  const LaneSpace composite = make_lane_space("composite", 12, 64, 2, options);
  EXPECT_EQ(code_of([&] { FieldSpace{composite}; }), ErrorCode::invalid_parameters);
  EXPECT_EQ(code_of([&] { FieldSpace{named_lane_space("lanes-n12-256-b2")}; }),
            ErrorCode::invalid_parameters);
  // m not a power of two, or beyond n/2.
  options.t_degree = 3;
  EXPECT_EQ(code_of([&] { make_lane_space("m3", 12, 64, 2, options); }),
            ErrorCode::invalid_parameters);
  options.t_degree = 64;
  EXPECT_EQ(code_of([&] { make_lane_space("m64", 12, 64, 2, options); }),
            ErrorCode::invalid_parameters);
  LaneSpace bad = named_lane_space("field-n12-65537");
  bad.t_degree = 6;
  EXPECT_EQ(code_of([&] { bad.validate(true); }), ErrorCode::invalid_parameters);
  // Elements of the wrong shape or too many of them.
  const FieldSpace field(named_lane_space("field-n12-17^8"));
  std::vector<FieldElement> wrong(field.elements(), FieldElement(field.degree() - 1, 0));
  EXPECT_EQ(code_of([&] { (void)field.digits(wrong, DigitForm::balanced); }),
            ErrorCode::invalid_argument);
  std::vector<FieldElement> many(field.elements() + 1, FieldElement(field.degree(), 0));
  EXPECT_EQ(code_of([&] { (void)field.digits(many, DigitForm::balanced); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)field.lane_elements(std::vector<mpz_class>(3)); }),
            ErrorCode::invalid_argument);
}

class LaneFields : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (const std::string why = long_test_skip(GetParam()); !why.empty()) GTEST_SKIP() << why;
  }
  LanesFixture& f() { return lanes_fixture(GetParam()); }
  const FieldSpace& field() {
    static std::map<std::string, std::unique_ptr<FieldSpace>> cache;
    auto& slot = cache[GetParam()];
    if (!slot) slot = std::make_unique<FieldSpace>(f().context.space());
    return *slot;
  }
  LaneCiphertext encrypt(const std::vector<FieldElement>& x) {
    return f().encryptor.encrypt_digits(field().digits(x, f().context.space().digits), f().sk);
  }
  void expect_elements(const LaneCiphertext& x, const std::vector<FieldElement>& want) {
    const LaneDecoding d = f().decryptor.decrypt(x);
    EXPECT_TRUE(d.integers.empty());  // a field space's lanes hold polynomials
    const auto got = field().elements_of(d.digits);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t e = 0; e < got.size(); ++e)
      ASSERT_EQ(got[e], want[e]) << "element " << e;
    EXPECT_LE(largest_digit(d), x.digit_bound);
    EXPECT_LE(d.max_error, 10 * x.noise);
  }
};

// In the clear: a lane's ring coefficients reduced modulo each factor by the test are its
// elements, both ways, and the digits of both forms decode to the same elements.
TEST_P(LaneFields, TheRingAndItsElementsCorrespond) {
  const FieldSpace& F = field();
  const mpz_class& p = F.prime();
  const auto lanes = adversarial_elements(F, 11);
  for (std::uint32_t r = 0; r < std::min(4U, F.space().lanes()); ++r) {
    const std::span<const FieldElement> lane(lanes.data() + std::size_t{r} * F.per_lane(),
                                             F.per_lane());
    const auto c = F.coefficients(lane);
    ASSERT_EQ(c.size(), F.space().t_degree);
    for (std::size_t i = 0; i < F.per_lane(); ++i) {
      // c(Y) mod (Y^d - gamma_i): coefficient j = sum_l c_(j + d l) gamma_i^l.
      for (std::size_t j = 0; j < F.degree(); ++j) {
        mpz_class acc = 0, g = 1;
        for (std::size_t l = 0; l < F.per_lane(); ++l) {
          acc += c[j + F.degree() * l] * g;
          g = g * F.gammas()[i] % p;
        }
        EXPECT_EQ(mod(acc, p), lane[i][j]) << "lane " << r << ", element " << i;
      }
    }
    EXPECT_EQ(F.lane_elements(c), std::vector<FieldElement>(lane.begin(), lane.end()));
  }
  for (DigitForm form : {DigitForm::canonical, DigitForm::balanced}) {
    const LaneDigits digits = F.digits(lanes, form);
    for (const auto& row : digits) {
      for (std::int64_t a : row) {
        if (form == DigitForm::canonical) {
          EXPECT_TRUE(a >= -1 && a < static_cast<std::int64_t>(F.space().base));
        } else {
          EXPECT_LE(std::abs(a), static_cast<std::int64_t>(F.space().base / 2));
        }
      }
    }
    EXPECT_EQ(F.elements_of(digits), lanes);
  }
}

TEST_P(LaneFields, ArithmeticIsExact) {
  const FieldSpace& F = field();
  const auto x = adversarial_elements(F, 21), y = random_elements(F, F.elements(), 22);
  const LaneCiphertext cx = encrypt(x), cy = encrypt(y);
  expect_elements(cx, x);
  expect_elements(f().evaluator.add(cx, cy), reference(F, x, y, '+'));
  expect_elements(f().evaluator.sub(cx, cy), reference(F, x, y, '-'));
  expect_elements(f().evaluator.multiply(cx, cy, f().keys.relinearization),
                  reference(F, x, y, '*'));
  // A constant of F_p in every element, and one plaintext element each.
  for (const mpz_class& c : {mpz_class(F.prime() - 1), random_integers(F.prime(), 1, 23)[0]}) {
    std::vector<FieldElement> cs(F.elements(), FieldElement(F.degree(), 0));
    for (auto& e : cs)
      e[0] = c;
    expect_elements(f().evaluator.multiply_integer(cx, c), reference(F, x, cs, '*'));
  }
  const auto z = random_elements(F, F.elements(), 24);
  expect_elements(f().evaluator.multiply_digits(cx, F.digits(z, DigitForm::balanced)),
                  reference(F, x, z, '*'));
}

// Products refreshed, in a chain the evaluator refreshes by itself, and one refresh by hand
// in each mode that keeps the digits. Where the space's refreshed digits leave no room for a
// product (the large-beta spaces at N = 2^16, by the noise model), the product is refused with a
// typed error, by hand and by an evaluator that refreshes by itself (which must not refresh
// forever).
TEST_P(LaneFields, RefreshedProductChainsStayExact) {
  const FieldSpace& F = field();
  auto want = adversarial_elements(F, 31);
  LaneCiphertext acc = encrypt(want);
  LaneEvaluator evaluator(f().context, *f().ops);
  evaluator.set_refresher(&f().refresher, &f().keys);
  for (RefreshMode mode : {RefreshMode::clean, RefreshMode::plain}) {
    const auto y = random_elements(F, F.elements(), 32 + static_cast<unsigned long>(mode));
    const LaneCiphertext cy = encrypt(y);
    if (mode == RefreshMode::plain && !f().evaluator.multiply_refusal(acc, cy).empty()) {
      EXPECT_EQ(code_of([&] { (void)f().evaluator.multiply(acc, cy, f().keys.relinearization); }),
                ErrorCode::needs_refresh);
      EXPECT_EQ(code_of([&] { (void)evaluator.multiply(acc, cy, f().keys.relinearization); }),
                ErrorCode::needs_refresh);
      EXPECT_NE(F.space().ckks.log_n, 12U) << "every N = 2^12 test space chains its products";
      return;
    }
    acc = f().evaluator.multiply(acc, cy, f().keys.relinearization);
    want = reference(F, want, y, '*');
    acc = f().refresher.refresh(acc, f().keys, mode);
    expect_elements(acc, want);
  }
  acc = f().refresher.refresh(acc, f().keys);
  for (unsigned long step = 0; step < 3; ++step) {
    const auto y = random_elements(F, F.elements(), 40 + step);
    acc = evaluator.multiply(acc, encrypt(y), f().keys.relinearization);
    want = reference(F, want, y, '*');
  }
  EXPECT_GE(evaluator.refreshes(), 2U);
  expect_elements(acc, want);
}

TEST_P(LaneFields, CiphertextsOfAnotherSpaceAreRefused) {
  const FieldSpace& F = field();
  const LaneCiphertext x = encrypt(random_elements(F, F.elements(), 51));
  LanesFixture& other = lanes_fixture(
      std::string(GetParam()) == "field-n12-65537" ? "field-n12-17^8" : "field-n12-65537");
  EXPECT_EQ(code_of([&] { (void)other.evaluator.add(x, x); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { (void)other.decryptor.decrypt(x); }), ErrorCode::size_mismatch);
}

std::string test_name(const ::testing::TestParamInfo<const char*>& param) {
  std::string s = param.param;
  for (char& ch : s) {
    if (ch == '-' || ch == '^') ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(TestSpaces, LaneFields,
                         ::testing::Values("field-n12-65537", "field-n12-234^128",
                                           "field-n12-257^2", "field-n12-17^8"),
                         test_name);
// The 1008-bit prime field and F_(257^32) at N = 2^16, with SAFHIRE_LONG_TESTS=1.
INSTANTIATE_TEST_SUITE_P(N16, LaneFields,
                         ::testing::Values("field-n16-234^128", "field-n16-257^32"), test_name);

}  // namespace
