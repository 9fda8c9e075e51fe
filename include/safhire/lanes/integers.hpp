// Integers modulo p = beta^n + 1 and their digit polynomials, in the clear: what the lane encoder
// writes into a lane and reads back out of one (lanes.md section 1.4: Z[Y]/(Y^n + 1, Y - beta)
// is Z/(beta^n + 1) by a(Y) -> a(beta)). Digits are signed 64-bit words; any digits decode, so
// that the redundant digits of a product or a refresh need no normalisation before decoding.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/lanes/lane_space.hpp"

namespace safhire::lanes {

// The n digits of A mod p (A any integer, reduced first) in `form` (lane_space.hpp: DigitForm).
// Error(invalid_argument) for n = 0 or beta < 2.
std::vector<std::int64_t> to_digits(const mpz_class& a, std::uint32_t n, std::uint64_t beta,
                                    DigitForm form);

// a(beta) mod p in [0, p) for any digits (n = digits.size()).
mpz_class from_digits(std::span<const std::int64_t> digits, std::uint64_t beta);

// Elements of Z_p[Y]/(Y^m - beta), p = beta^(n/m) + 1 (the message of a lane whose space has
// t_degree m; m = 1 is the integer case above): c(Y) = sum_(i<m) c_i Y^i, 0 <= c_i < p. A lane's
// digits a_k (k < n) write it as c_i = sum_(j<n/m) a_(i + m j) beta^j mod p (Y^m = beta).
//
// The n digits of c (m = c.size() coefficients, each reduced mod p first) in `form`: c_i's n/m
// digits at positions i, i + m, i + 2m, ... Error(invalid_argument) when m does not divide n.
std::vector<std::int64_t> coefficient_digits(std::span<const mpz_class> c, std::uint32_t n,
                                             std::uint64_t beta, DigitForm form);
// The m coefficients in [0, p) that any n digits write (m divides n = digits.size()).
std::vector<mpz_class> coefficients_of_digits(std::span<const std::int64_t> digits, std::uint32_t m,
                                              std::uint64_t beta);
// The n digits of the constant c (c_0 = c mod p, the other coefficients 0) of the space's
// message ring: to_digits(c, n, beta, form) for integers, the same digits m apart otherwise.
std::vector<std::int64_t> constant_digits(const mpz_class& c, const LaneSpace& space,
                                          DigitForm form);

// The negacyclic product of two digit polynomials (mod Y^n + 1), exact in 128-bit sums:
// Error(invalid_argument) when a coefficient could leave int64 (n max|a| max|b| >= 2^63).
std::vector<std::int64_t> negacyclic_product(std::span<const std::int64_t> a,
                                             std::span<const std::int64_t> b);

}  // namespace safhire::lanes
