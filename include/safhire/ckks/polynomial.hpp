// Polynomials in the Chebyshev basis on an interval [a, b], evaluated homomorphically by
// baby-step giant-step with exact scales (the scheme of Bossuat et al., Eurocrypt 2021, in the
// form below), and their interpolation from a function.
//
// Evaluation of p(x) = sum_i c_i T_i(y), y = (2x - a - b) / (b - a):
//  1. y from x (one constant product and one rescale), skipped on [-1, 1] where y = x.
//  2. A plan: p divided by giant steps, p = q T_g + r with g = 2^floor(log2 deg p) and
//     q = c_g + sum_(j >= 1) 2 c_(g+j) T_j, r_i = c_i - c_(2g-i) (T_(g+j) = 2 T_g T_j - T_(g-j)),
//     recursively, down to leaves of degree below B (B a power of two near sqrt(d + 1)), each a
//     linear combination of baby steps T_1 .. T_(B-1). A leaf that would sit a level too low for
//     the optimum is divided further by the baby steps' powers of two (the leading leaf of a
//     degree 2^k - 1 is; Lattigo re-splits it the same way), so the depth is ceil(log2(d + 1)),
//     plus one for the affine map: level-optimal for every degree.
//  3. Powers: those the plan reads and those they are made from, by T_2k = 2 T_k^2 - 1 and
//     T_2k+1 = 2 T_k T_k+1 - T_1, each with one rescale: T_i at ceil(log2 i) levels below T_1.
//     Terms with zero coefficients are never formed, so an odd series (sin, arcsin) or an even
//     one (cos) skips the baby steps of the other parity that nothing else needs
//     (chebyshev_interpolate makes such series exact with its `parity`).
//  4. Scales, top-down: every node is asked for an exact output scale. A leaf multiplies each
//     T_i by c_i encoded at the scale that brings it to the leaf's common scale, sums, adds c_0
//     and rescales once; a division node asks q for target * q_L / scale(T_g) (L the level of
//     the product, known beforehand from the plan), multiplies by T_g, adds r evaluated at the
//     product's scale without its own rescale, and rescales once. No level is spent on scale
//     matching, and every addition is between equal scales.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "safhire/ckks/ckks.hpp"

namespace safhire::ckks {

// A series' parity in y: odd (every even-index coefficient zero), even (every odd-index one
// zero), or neither.
enum class Parity { none, even, odd };

struct ChebyshevSeries {
  std::vector<double> coeffs;  // c_0 .. c_d
  double a = -1, b = 1;        // the interval

  std::uint32_t degree() const { return static_cast<std::uint32_t>(coeffs.size()) - 1; }
  // p(x) in the clear (Clenshaw's recurrence, long double).
  double operator()(double x) const;
  Parity parity() const;
};

// The Chebyshev interpolant of f of the given degree on [a, b] (at the degree + 1 Chebyshev
// nodes of the first kind). For f odd or even about the interval's centre, `parity` makes the
// other parity's coefficients (zero in exact arithmetic, rounding residue here) exact zeros.
ChebyshevSeries chebyshev_interpolate(const std::function<double(double)>& f, std::uint32_t degree,
                                      double a, double b, Parity parity = Parity::none);

class PolynomialEvaluator {
 public:
  explicit PolynomialEvaluator(const Evaluator& evaluator) : ev_(&evaluator) {}

  // Levels that evaluate() consumes for this degree: ceil(log2(degree + 1)), plus the affine
  // map's unless the interval is [-1, 1].
  static std::uint32_t depth(std::uint32_t degree, bool unit_interval = false);
  static std::uint32_t depth(const ChebyshevSeries& p) {
    return depth(p.degree(), p.a == -1 && p.b == 1);
  }
  // Products of two ciphertexts (each with its relinearization and rescale) that evaluate()
  // takes for p: the powers it forms and its quotients by a giant step.
  static std::uint32_t products(const ChebyshevSeries& p);

  // p(x) slot by slot, at scale `scale` (0: x's scale), depth(p) levels below x.
  // Error(invalid_argument) if x has fewer levels, for an empty series or an empty interval.
  Ciphertext evaluate(const Ciphertext& x, const ChebyshevSeries& p, const SwitchingKey& rlk,
                      double scale = 0) const;

 private:
  const Evaluator* ev_;
};

// sin(2 pi K v) slot by slot for v in [-1, 1] (|K v| up to K periods): the Chebyshev interpolant
// of cos(2 pi (K v - 1/4) / 2^r) of the given degree (an argument of at most 2 pi K / 2^r
// radians, so that a modest degree is exact to 2^-40), then r double angles c -> 2 c^2 - 1, each
// one product and one rescale; cos(2 pi (K v - 1/4)) = sin(2 pi K v). Near the integers, where
// sin(2 pi x) ~ 2 pi (x - round(x)), it is the mod-1 reduction of bootstrapping's EvalMod (K = 16,
// the bound on the ModRaise overflow) and the noise that the lanes' digit cleaning removes (K the
// digits' bound). A double angle multiplies an error in c by at most 4 c, so the interpolant's
// error and the noise of the first steps grow by up to 4^r; size r so that K / 2^r stays near 1.
class DoubleAngleSine {
 public:
  DoubleAngleSine() = default;
  // Error(invalid_argument) for K < 1/2 or a degree below 2.
  DoubleAngleSine(double k, std::uint32_t degree, std::uint32_t double_angles);

  double k() const { return k_; }
  std::uint32_t degree() const { return cosine_.degree(); }
  std::uint32_t double_angles() const { return double_angles_; }
  const ChebyshevSeries& cosine() const { return cosine_; }
  // Levels consumed: the interpolant's (on [-1, 1]) and one per double angle.
  std::uint32_t depth() const {
    return PolynomialEvaluator::depth(cosine_.degree(), true) + double_angles_;
  }
  // Products of two ciphertexts: the interpolant's and one per double angle.
  std::uint32_t products() const { return PolynomialEvaluator::products(cosine_) + double_angles_; }
  // The largest error of the interpolant on [-1, 1] against cos, times 4^r (its growth through
  // the double angles): a bound on the error of sin(2 pi K v) in exact arithmetic.
  double interpolation_error() const;

  // sin(2 pi K v), depth() levels below v. Its scale: with output_scale 0, v's through the
  // interpolant, then S^2 / q per double angle (q the prime rescaled away), as the products leave
  // it; else output_scale (to rounding), the interpolant's scale chosen backwards through the
  // double angles (S_j = sqrt(S_(j+1) q_j)) so that no level goes to a scale change.
  Ciphertext evaluate(const Evaluator& evaluator, const Ciphertext& v, const SwitchingKey& rlk,
                      double output_scale = 0) const;

 private:
  double k_ = 0;
  std::uint32_t double_angles_ = 0;
  ChebyshevSeries cosine_;
};

}  // namespace safhire::ckks
