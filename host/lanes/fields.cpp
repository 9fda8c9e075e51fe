#include "safhire/lanes/fields.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/lanes/integers.hpp"

namespace safhire::lanes {

namespace {

mpz_class power(const mpz_class& x, const mpz_class& e, const mpz_class& p) {
  mpz_class out;
  mpz_powm(out.get_mpz_t(), x.get_mpz_t(), e.get_mpz_t(), p.get_mpz_t());
  return out;
}

mpz_class reduced(const mpz_class& x, const mpz_class& p) {
  mpz_class r = x % p;
  if (r < 0) r += p;
  return r;
}

std::string describe(const mpz_class& p) {
  const std::size_t bits = mpz_sizeinbase(p.get_mpz_t(), 2);
  return bits <= 64 ? p.get_str() : "a " + std::to_string(bits) + "-bit number";
}

}  // namespace

FieldSpace::FieldSpace(const LaneSpace& space) : space_(space), p_(space.modulus()) {
  const std::string what = "field space '" + space.name + "': ";
  const std::uint32_t n = space.lane_degree, m = space.t_degree;
  require(std::has_single_bit(m) && m <= n / 2 && std::has_single_bit(n),
          ErrorCode::invalid_parameters,
          what + "t = Y^m - beta needs m a power of two in [1, n/2], got m = " + std::to_string(m));
  require(mpz_probab_prime_p(p_.get_mpz_t(), 50) > 0, ErrorCode::invalid_parameters,
          what + "p = " + std::to_string(space.base) + "^" + std::to_string(n / m) + " + 1 (" +
              describe(p_) + ") is not prime");
  require(p_ % 4 == 1, ErrorCode::invalid_parameters,
          what + "p = 3 mod 4: the binomial factors are not known irreducible");
  // 2^e || p - 1; a root of Y^m = beta has order 2n and lies in F_(p^d).
  const mpz_class p_minus_1 = p_ - 1;
  const auto e = static_cast<std::uint32_t>(mpz_scan1(p_minus_1.get_mpz_t(), 0));
  const auto log_2n = static_cast<std::uint32_t>(std::countr_zero(n)) + 1;
  d_ = e >= log_2n ? 1 : (2 * n) >> e;
  require(d_ <= m, ErrorCode::invalid_parameters,
          what + "beta's order does not divide p - 1 (not a space of this form)");
  k_ = m / d_;
  // zeta: a primitive 2^e-th root of unity, from a non-square c.
  mpz_class c = 3;
  while (mpz_legendre(c.get_mpz_t(), p_.get_mpz_t()) != -1)
    ++c;
  const mpz_class odd = p_minus_1 >> e;
  const mpz_class zeta = power(c, odd, p_);
  // psi: primitive of order o = 2n/d (<= 2^e); w = psi^k of order 2n/m, beta's order, so
  // beta = w^u for one odd u < 2n/m, and gamma_0 = psi^u, omega = psi^(o/k).
  const std::uint32_t log_o = log_2n - static_cast<std::uint32_t>(std::countr_zero(d_));
  mpz_class psi = zeta;
  for (std::uint32_t s = log_o; s < e; ++s)
    psi = psi * psi % p_;
  const mpz_class w = power(psi, k_, p_), w2 = w * w % p_;
  const mpz_class beta = mpz_class(std::to_string(space.base));
  const std::uint32_t order = 2 * n / m;
  std::uint32_t u = 1;
  mpz_class wu = w;
  while (u < order && wu != beta) {
    wu = wu * w2 % p_;
    u += 2;
  }
  require(u < order, ErrorCode::invalid_parameters,
          what + "beta is not a power of the roots of unity (not a space of this form)");
  const mpz_class gamma0 = power(psi, u, p_);
  const mpz_class omega = power(psi, (std::uint32_t{1} << log_o) / k_, p_);

  omega_powers_.resize(k_);
  gamma0_powers_.resize(k_);
  gamma0_inverse_k_.resize(k_);
  gammas_.resize(k_);
  mpz_class inverse_gamma0, inverse_k;
  mpz_invert(inverse_gamma0.get_mpz_t(), gamma0.get_mpz_t(), p_.get_mpz_t());
  mpz_class kk = k_;
  mpz_invert(inverse_k.get_mpz_t(), kk.get_mpz_t(), p_.get_mpz_t());
  for (std::uint32_t i = 0; i < k_; ++i) {
    omega_powers_[i] = i == 0 ? mpz_class(1) : omega_powers_[i - 1] * omega % p_;
    gamma0_powers_[i] = i == 0 ? mpz_class(1) : gamma0_powers_[i - 1] * gamma0 % p_;
    gamma0_inverse_k_[i] = i == 0 ? inverse_k : gamma0_inverse_k_[i - 1] * inverse_gamma0 % p_;
    gammas_[i] = gamma0 * omega_powers_[i] % p_;
  }

  // The checks: roots of Z^k = beta, distinct, their product polynomial Z^k - beta, and the
  // factors irreducible.
  for (const auto& g : gammas_) {
    require(power(g, k_, p_) == beta, ErrorCode::invalid_parameters,
            what + "a factor's constant is not a root of Z^k = beta");
    require(d_ == 1 || power(g, p_minus_1 / 2, p_) == p_minus_1, ErrorCode::invalid_parameters,
            what + "a factor Y^d - gamma with gamma a square is reducible");
  }
  auto sorted = gammas_;
  std::sort(sorted.begin(), sorted.end());
  require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
          ErrorCode::invalid_parameters, what + "two factors coincide");
  std::vector<mpz_class> product{1};  // prod (Z - gamma_i), coefficients low to high
  for (const auto& g : gammas_) {
    std::vector<mpz_class> next(product.size() + 1, 0);
    for (std::size_t j = 0; j < product.size(); ++j) {
      next[j + 1] += product[j];
      next[j] -= product[j] * g;
    }
    for (auto& x : next)
      x = reduced(x, p_);
    product = std::move(next);
  }
  bool binomial = product[0] == reduced(-beta, p_) && product[k_] == 1;
  for (std::uint32_t j = 1; j < k_; ++j)
    binomial = binomial && product[j] == 0;
  require(binomial, ErrorCode::invalid_parameters,
          what + "the factors do not multiply to Y^m - beta");
}

std::vector<mpz_class> FieldSpace::coefficients(std::span<const FieldElement> lane) const {
  require(lane.size() == k_, ErrorCode::invalid_argument,
          "field: a lane holds " + std::to_string(k_) + " elements, got " +
              std::to_string(lane.size()));
  for (const auto& x : lane) {
    require(x.size() == d_, ErrorCode::invalid_argument,
            "field: an element of F_(p^" + std::to_string(d_) + ") has " + std::to_string(d_) +
                " coefficients, got " + std::to_string(x.size()));
  }
  // c_(j + d l) = gamma_0^-l / k sum_i E_i[j] omega^(-i l), each E_i[j] reduced once.
  std::vector<mpz_class> out(space_.t_degree);
  std::vector<mpz_class> column(k_);
  mpz_class acc;
  for (std::uint32_t j = 0; j < d_; ++j) {
    for (std::uint32_t i = 0; i < k_; ++i)
      column[i] = reduced(lane[i][j], p_);
    for (std::uint32_t l = 0; l < k_; ++l) {
      acc = 0;
      for (std::uint32_t i = 0; i < k_; ++i) {
        const auto power = (k_ - (static_cast<std::uint64_t>(i) * l) % k_) % k_;
        acc += column[i] * omega_powers_[power];
      }
      out[j + d_ * l] = reduced(acc % p_ * gamma0_inverse_k_[l], p_);
    }
  }
  return out;
}

std::vector<FieldElement> FieldSpace::lane_elements(std::span<const mpz_class> coefficients) const {
  require(coefficients.size() == space_.t_degree, ErrorCode::invalid_argument,
          "field: a lane's ring has " + std::to_string(space_.t_degree) + " coefficients, got " +
              std::to_string(coefficients.size()));
  // E_i[j] = sum_l (c_(j + d l) gamma_0^l) omega^(i l).
  std::vector<FieldElement> out(k_, FieldElement(d_));
  std::vector<mpz_class> twisted(k_);
  mpz_class acc;
  for (std::uint32_t j = 0; j < d_; ++j) {
    for (std::uint32_t l = 0; l < k_; ++l)
      twisted[l] = reduced(coefficients[j + d_ * l], p_) * gamma0_powers_[l] % p_;
    for (std::uint32_t i = 0; i < k_; ++i) {
      acc = 0;
      for (std::uint32_t l = 0; l < k_; ++l)
        acc += twisted[l] * omega_powers_[(static_cast<std::uint64_t>(i) * l) % k_];
      out[i][j] = acc % p_;
    }
  }
  return out;
}

LaneDigits FieldSpace::digits(std::span<const FieldElement> values, DigitForm form) const {
  require(values.size() <= elements(), ErrorCode::invalid_argument,
          std::to_string(values.size()) + " field elements do not fit in a ciphertext's " +
              std::to_string(elements()));
  LaneDigits out;
  out.reserve(space_.lanes());
  const FieldElement zero(d_, 0);
  std::vector<FieldElement> lane(k_);
  for (std::uint32_t r = 0; r < space_.lanes(); ++r) {
    for (std::uint32_t i = 0; i < k_; ++i) {
      const std::size_t at = std::size_t{r} * k_ + i;
      lane[i] = at < values.size() ? values[at] : zero;
    }
    out.push_back(coefficient_digits(coefficients(lane), space_.lane_degree, space_.base, form));
  }
  return out;
}

std::vector<FieldElement> FieldSpace::elements_of(const LaneDigits& digits) const {
  require(digits.size() == space_.lanes(), ErrorCode::invalid_argument,
          "field: " + std::to_string(space_.lanes()) + " lanes of digits expected, got " +
              std::to_string(digits.size()));
  std::vector<FieldElement> out;
  out.reserve(elements());
  for (const auto& row : digits) {
    require(row.size() == space_.lane_degree, ErrorCode::invalid_argument,
            "field: lanes of n = " + std::to_string(space_.lane_degree) + " digits expected");
    auto lane = lane_elements(coefficients_of_digits(row, space_.t_degree, space_.base));
    for (auto& x : lane)
      out.push_back(std::move(x));
  }
  return out;
}

}  // namespace safhire::lanes
