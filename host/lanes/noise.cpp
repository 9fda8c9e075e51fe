#include "safhire/lanes/noise.hpp"

#include <cmath>
#include <numbers>

#include "safhire/ckks/polynomial.hpp"

namespace safhire::lanes {

namespace {

// The sine's errors have heavier tails than a Gaussian's (the double angles grow some angles'
// errors by the full 4^r, and the model's first-order terms leave out the angle's own factor
// 2 pi K), so the estimate of a refresh's deviation is this many times the root sum of squares of
// its terms: then the largest of N digits' errors stays within ten of these deviations. Measured
// (2^20 digits a space at N = 2^16, 2026-12-07): the largest error was 1.2 (lanes-n16-4096-b2),
// 5.9 (-2048-b4), 3.3 (-1024-b16) and 2.2 (-4096-b64) of them; at 4 times it had been 4.8, 22.6,
// 12.1 and 8.6 (another sample). The tests check the N = 2^12 spaces against ten.
constexpr double kTails = 16;

// log2 erfc(x) for x >= 0, without underflow: erfc(x) ~ exp(-x^2) / (x sqrt(pi)) beyond 10.
double log2_erfc(double x) {
  if (x < 10) return std::log2(std::erfc(x));
  return (-x * x - std::log(x * std::sqrt(std::numbers::pi))) / std::numbers::ln2;
}

}  // namespace

NoiseModel::NoiseModel(const LaneContext& context) : context_(&context) {
  // The cleaning sine's interpolation error (a Chebyshev fit checked on a grid): once, here.
  const auto& plan = context.space().cleaning;
  interpolation_ =
      ckks::DoubleAngleSine(plan.k, plan.degree, plan.double_angles).interpolation_error();
}

double NoiseModel::fresh() const {
  const auto& space = context_->space();
  const double n_degree = space.degree(), sigma = space.ckks.sigma;
  const double coefficient = sigma * std::sqrt(4 * n_degree / 3 + 1);
  return std::sqrt(n_degree / space.lane_degree) * coefficient / context_->rest_scale();
}

double NoiseModel::operation(double scale, std::uint32_t level) const {
  const auto& space = context_->space();
  const auto& ckks = context_->ckks();
  const double n_degree = space.degree(), sigma = space.ckks.sigma;
  const double h = space.ckks.hamming_weight;
  double log_p = 0;
  for (auto p : ckks.p_moduli())
    log_p += std::log2(static_cast<double>(ckks.prime(p)));
  double square = 2 * (1 + h) / 12;  // ModDown's and the rescale's roundings
  for (std::uint32_t j = 0; j < ckks.digits(level); ++j) {
    double log_qj = 0;
    for (auto m : ckks.digit_moduli(level, j))
      log_qj += std::log2(static_cast<double>(ckks.prime(m)));
    square += n_degree * sigma * sigma / 12 * std::exp2(2 * (log_qj - log_p));
  }
  return std::sqrt(n_degree / space.lane_degree) * std::sqrt(square) / scale;
}

double NoiseModel::product(double bound_a, double noise_a, double bound_b, double noise_b,
                           double scale, std::uint32_t level) const {
  const double n = context_->space().lane_degree;
  const double op = operation(scale, level);
  return std::sqrt(n * (bound_a * bound_a * noise_b * noise_b +
                        bound_b * bound_b * noise_a * noise_a +
                        n * noise_a * noise_a * noise_b * noise_b) +
                   op * op);
}

// The CKKS error of a double-angle sine evaluated from the cleaning's first level (form A: a slot
// is a digit), on the sine's value: one operation's at its first prime's scale, grown by up to 4
// a double angle (the first step's most: 4^r / 3 for the sum).
double NoiseModel::sine_noise(std::uint32_t double_angles) const {
  const auto& space = context_->space();
  const std::uint32_t cleaning_top =
      space.top() - static_cast<std::uint32_t>(space.cts_split.size());
  const double eval_scale = static_cast<double>(context_->ckks().prime(cleaning_top));
  const double step = operation(eval_scale, cleaning_top) * std::sqrt(space.lane_degree * 1.0);
  return step * std::exp2(2.0 * double_angles) / 3;
}

double NoiseModel::refreshed(double input) const {
  const auto& space = context_->space();
  const auto& plan = space.cleaning;
  const double two_pi = 2 * std::numbers::pi;
  // The interpolant's error through the double angles, as a sine error, over 2 pi.
  const double interpolation = interpolation_ / two_pi;
  const double cleaning = sine_noise(plan.double_angles) / two_pi;
  // L's key switches and rescales, at most at the rest scale.
  const double l_groups = static_cast<double>(space.l_split.size());
  const std::uint32_t l_top = space.rest_level() + static_cast<std::uint32_t>(space.l_split.size());
  const double l_noise = std::sqrt(l_groups) * operation(context_->rest_scale(), l_top);
  // What the cleaning lets through: (2 pi)^2 e^3 / 6 at ten deviations, per deviation.
  const double e = 10 * input;
  const double through = two_pi * two_pi * e * e * e / 6 / 10;
  // kTails times their root sum of squares.
  return kTails *
             std::sqrt(interpolation * interpolation + cleaning * cleaning + l_noise * l_noise) +
         through;
}

// The cleaning sine's error on the value of sin: its interpolation and its CKKS error, kTails
// times for the tails (as in refreshed()).
double NoiseModel::sine_error() const {
  return kTails * std::hypot(interpolation_, sine_noise(context_->space().cleaning.double_angles));
}

double NoiseModel::unreduced_ratio() const {
  const double two_pi = 2 * std::numbers::pi;
  const double a = two_pi * two_pi / 6, b = sine_error() / two_pi;
  return std::cbrt(std::numbers::sqrt2 * a / b);
}

double NoiseModel::unreduced(double input, double bound) const {
  const double two_pi = 2 * std::numbers::pi, d = std::max(1.0, bound);
  const double ratio = unreduced_ratio();
  const double cube = d * std::pow(two_pi / ratio, 2) / 6;
  const double evaluation = sine_error() * ratio * d / two_pi;
  return std::sqrt(input * input + cube * cube + evaluation * evaluation);
}

double NoiseModel::log2_failure(double noise) const {
  if (noise <= 0) return -HUGE_VAL;
  const double x = 0.5 / (noise * std::numbers::sqrt2);
  return std::log2(static_cast<double>(context_->space().degree())) + log2_erfc(x);
}

}  // namespace safhire::lanes
