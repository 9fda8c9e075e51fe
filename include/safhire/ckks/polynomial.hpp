// Polynomials in the Chebyshev basis on an interval [a, b], evaluated homomorphically by
// baby-step giant-step with exact scales (the scheme of Bossuat et al., Eurocrypt 2021, in the
// form below), and their interpolation from a function.
//
// Evaluation of p(x) = sum_i c_i T_i(y), y = (2x - a - b) / (b - a):
//  1. y from x (one constant product and one rescale), skipped on [-1, 1] where y = x.
//  2. Powers: the baby steps T_1 .. T_(B-1), B a power of two, and the giant steps T_B, T_2B,
//     T_4B, ... up to the degree, by T_2k = 2 T_k^2 - 1 and T_2k+1 = 2 T_k T_k+1 - T_1, each
//     with one rescale; their scales are whatever the primes make them, tracked exactly.
//  3. Division by the largest giant step G <= deg p: p = q T_G + r with
//     q = c_G + sum_(j >= 1) 2 c_(G+j) T_j and r_i = c_i - c_(2G-i) (T_(G+j) = 2 T_G T_j -
//     T_(G-j)), recursively, down to leaves of degree below B, each a linear combination of baby
//     steps.
//  4. Scales, top-down: every node is asked for an exact output scale. A leaf multiplies each
//     T_i by c_i encoded at the scale that brings it to the leaf's common scale, sums, adds c_0
//     and rescales once; a division node asks q for target * q_L / scale(T_G) (L the level of
//     the product, known beforehand from the tree), multiplies by T_G, adds r evaluated at the
//     product's scale without its own rescale, and rescales once. No level is spent on scale
//     matching, and every addition is between equal scales.
// Depth: the affine map plus ceil(log2(d + 1)), or one level more for some degrees (31 and 63
// among them: depth() says); the level-optimal ordering of Bossuat et al. would save that one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "safhire/ckks/ckks.hpp"

namespace safhire::ckks {

struct ChebyshevSeries {
  std::vector<double> coeffs;  // c_0 .. c_d
  double a = -1, b = 1;        // the interval

  std::uint32_t degree() const { return static_cast<std::uint32_t>(coeffs.size()) - 1; }
  // p(x) in the clear (Clenshaw's recurrence, long double).
  double operator()(double x) const;
};

// The Chebyshev interpolant of f of the given degree on [a, b] (at the degree + 1 Chebyshev
// nodes of the first kind).
ChebyshevSeries chebyshev_interpolate(const std::function<double(double)>& f, std::uint32_t degree,
                                      double a, double b);

class PolynomialEvaluator {
 public:
  explicit PolynomialEvaluator(const Evaluator& evaluator) : ev_(&evaluator) {}

  // Levels that evaluate() consumes for this degree: the affine map's included, unless the
  // interval is [-1, 1].
  static std::uint32_t depth(std::uint32_t degree, bool unit_interval = false);
  static std::uint32_t depth(const ChebyshevSeries& p) {
    return depth(p.degree(), p.a == -1 && p.b == 1);
  }

  // p(x) slot by slot, at scale `scale` (0: x's scale), depth(p) levels below x.
  // Error(invalid_argument) if x has fewer levels, for an empty series or an empty interval.
  Ciphertext evaluate(const Ciphertext& x, const ChebyshevSeries& p, const SwitchingKey& rlk,
                      double scale = 0) const;

 private:
  const Evaluator* ev_;
};

}  // namespace safhire::ckks
