#include "safhire/lanes/integers.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::lanes {

namespace {

using core::i128;

mpz_class from_u64(std::uint64_t v) {
  mpz_class out;
  mpz_import(out.get_mpz_t(), 1, 1, sizeof v, 0, 0, &v);
  return out;
}

// The `count` base-beta digits of 0 <= r < beta^count into out[first ..], by halves (one
// division by beta^h splits the work, so the whole conversion costs O(M(bits) log count)).
class DigitSplitter {
 public:
  explicit DigitSplitter(std::uint64_t beta) : beta_(from_u64(beta)) {}

  void split(const mpz_class& r, std::uint32_t count, std::int64_t* out) {
    if (count <= 32) {
      mpz_class x = r, digit;
      for (std::uint32_t t = 0; t < count; ++t) {
        mpz_fdiv_qr(x.get_mpz_t(), digit.get_mpz_t(), x.get_mpz_t(), beta_.get_mpz_t());
        out[t] = static_cast<std::int64_t>(mpz_get_ui(digit.get_mpz_t()));
      }
      return;
    }
    const std::uint32_t low = count / 2;
    mpz_class q, rest;
    mpz_fdiv_qr(q.get_mpz_t(), rest.get_mpz_t(), r.get_mpz_t(), power(low).get_mpz_t());
    split(rest, low, out);
    split(q, count - low, out + low);
  }

  const mpz_class& power(std::uint32_t e) {
    auto& p = powers_[e];
    if (p == 0) mpz_pow_ui(p.get_mpz_t(), beta_.get_mpz_t(), e);
    return p;
  }

 private:
  mpz_class beta_;
  std::map<std::uint32_t, mpz_class> powers_;
};

}  // namespace

std::vector<std::int64_t> to_digits(const mpz_class& a, std::uint32_t n, std::uint64_t beta,
                                    DigitForm form) {
  require(n >= 1 && beta >= 2 && beta < (std::uint64_t{1} << 62), ErrorCode::invalid_argument,
          "digits: n must be at least 1 and beta in [2, 2^62)");
  DigitSplitter splitter(beta);
  const mpz_class beta_n = splitter.power(n);
  const mpz_class p = beta_n + 1;
  mpz_class r = a % p;
  if (r < 0) r += p;
  std::vector<std::int64_t> digits(n, 0);
  // The canonical digits of 0 <= r < p; p - 1 = beta^n = -1 has none in n digits: a_0 = -1.
  auto canonical = [&](const mpz_class& v) {
    if (v == beta_n) {
      digits.assign(n, 0);
      digits[0] = -1;
    } else {
      splitter.split(v, n, digits.data());
    }
  };
  if (form == DigitForm::canonical) {
    canonical(r);
    return digits;
  }
  // Balanced: digits in [lo, hi], hi - lo + 1 = beta, sum to every integer of the window
  // [lo m, hi m], m = (beta^n - 1) / (beta - 1), which is beta^n consecutive integers: every
  // residue mod p but one has a representative there. The digits of v are those of
  // v - lo m >= 0 (canonical) plus lo each. The one residue left out keeps its canonical digits.
  const auto lo = -static_cast<std::int64_t>(beta / 2);
  const mpz_class m = (beta_n - 1) / from_u64(beta - 1);
  const mpz_class bottom = m * lo, offset = -bottom;
  for (const mpz_class& v : {mpz_class(r), mpz_class(r - p)}) {
    if (v >= bottom && v - bottom < beta_n) {
      splitter.split(v + offset, n, digits.data());
      for (auto& d : digits)
        d += lo;
      return digits;
    }
  }
  canonical(r);
  return digits;
}

mpz_class from_digits(std::span<const std::int64_t> digits, std::uint64_t beta) {
  require(!digits.empty() && beta >= 2, ErrorCode::invalid_argument,
          "digits: at least one digit and beta >= 2");
  const mpz_class b = from_u64(beta);
  mpz_class acc = 0;
  for (std::size_t t = digits.size(); t-- > 0;) {
    acc *= b;
    acc += mpz_class(static_cast<signed long>(digits[t]));
  }
  mpz_class p;
  mpz_pow_ui(p.get_mpz_t(), b.get_mpz_t(), digits.size());
  p += 1;
  mpz_class r = acc % p;
  if (r < 0) r += p;
  return r;
}

std::vector<std::int64_t> coefficient_digits(std::span<const mpz_class> c, std::uint32_t n,
                                             std::uint64_t beta, DigitForm form) {
  const auto m = static_cast<std::uint32_t>(c.size());
  require(m >= 1 && n % m == 0, ErrorCode::invalid_argument,
          "digits: the m coefficients must divide the n digits");
  std::vector<std::int64_t> out(n, 0);
  for (std::uint32_t i = 0; i < m; ++i) {
    const auto digits = to_digits(c[i], n / m, beta, form);
    for (std::uint32_t j = 0; j < n / m; ++j)
      out[i + std::size_t{m} * j] = digits[j];
  }
  return out;
}

std::vector<mpz_class> coefficients_of_digits(std::span<const std::int64_t> digits, std::uint32_t m,
                                              std::uint64_t beta) {
  require(m >= 1 && !digits.empty() && digits.size() % m == 0, ErrorCode::invalid_argument,
          "digits: the m coefficients must divide the n digits");
  const std::size_t per = digits.size() / m;
  std::vector<mpz_class> out(m);
  std::vector<std::int64_t> strided(per);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < per; ++j)
      strided[j] = digits[i + m * j];
    out[i] = from_digits(strided, beta);
  }
  return out;
}

std::vector<std::int64_t> constant_digits(const mpz_class& c, const LaneSpace& space,
                                          DigitForm form) {
  if (space.t_degree == 1) return to_digits(c, space.lane_degree, space.base, form);
  std::vector<mpz_class> coefficients(space.t_degree, 0);
  coefficients[0] = c;
  return coefficient_digits(coefficients, space.lane_degree, space.base, form);
}

std::vector<std::int64_t> negacyclic_product(std::span<const std::int64_t> a,
                                             std::span<const std::int64_t> b) {
  require(a.size() == b.size() && !a.empty(), ErrorCode::invalid_argument,
          "negacyclic product: two digit polynomials of one degree");
  const std::size_t n = a.size();
  i128 max_a = 0, max_b = 0;
  for (std::size_t i = 0; i < n; ++i) {
    max_a = std::max<i128>(max_a, a[i] < 0 ? -static_cast<i128>(a[i]) : a[i]);
    max_b = std::max<i128>(max_b, b[i] < 0 ? -static_cast<i128>(b[i]) : b[i]);
  }
  // n max|a| max|b| < 2^63, checked without overflow.
  require(max_a == 0 || max_b == 0 ||
              static_cast<i128>(n) * max_a <= (static_cast<i128>(1) << 63) / max_b - 1,
          ErrorCode::invalid_argument, "negacyclic product: the digits could leave int64");
  std::vector<i128> acc(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const i128 term = static_cast<i128>(a[i]) * b[j];
      if (i + j < n) {
        acc[i + j] += term;
      } else {
        acc[i + j - n] -= term;  // Y^n = -1
      }
    }
  }
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::int64_t>(acc[i]);
  return out;
}

}  // namespace safhire::lanes
