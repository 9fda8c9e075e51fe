// The lanes' noise model: standard deviations of the error on each digit, in units of one digit,
// for every operation, so that a ciphertext's `noise` (ciphertext.hpp) says what it can still
// afford. Derived from the CKKS errors (ckks.hpp) through the lane decoding: a plaintext error
// of independent coefficients of standard deviation s, at scale S, puts an error of standard
// deviation s sqrt(N) / S on each form-B slot (sigma_N sums N coefficients on unit roots), and
// the blockwise inverse special FFT of L^-1 (n/2 slots a block, 1/(n/2) normalised) leaves
// s sqrt(N / n) / S on each real digit. A negacyclic product sums n digit products:
// e_c = a * e_b + b * e_a, of deviation sqrt(n) (D_a s_b + D_b s_a) for digit bounds D.
// The tests measure the decrypted errors against these estimates.
#pragma once

#include <cmath>
#include <cstdint>

#include "safhire/lanes/context.hpp"

namespace safhire::lanes {

class NoiseModel {
 public:
  explicit NoiseModel(const LaneContext& context);

  // The deviation of a fresh encryption at the rest level (public or secret key): the
  // coefficient error v e + e_0 + e_1 s of variance sigma^2 (4N/3 + 1) at the rest scale.
  double fresh() const;
  // What one key switch (relinearization, rotation) and one rescale add to a ciphertext of scale
  // `scale` at `level`: the key switch's sum_j d_j e_j / P and the roundings of ModDown and of
  // the rescale, (1 + h) / 12 each.
  double operation(double scale, std::uint32_t level) const;
  // Of a ct x ct product (tensor, relinearization, rescale) at `level` and `scale` (the product's,
  // after the rescale).
  double product(double bound_a, double noise_a, double bound_b, double noise_b, double scale,
                 std::uint32_t level) const;

  // The noise a cleaning refresh leaves: the cleaning's interpolation error and CKKS noise (grown
  // through its double angles) and L's key switches at the rest scale; plus what the cleaning
  // lets through of an input of deviation `input` (x - sin(2 pi x) / 2 pi maps an error e to
  // about (2 pi)^2 e^3 / 6, taken at ten deviations).
  double refreshed(double input) const;
  // The noise an unreduced refresh (refresh.hpp) leaves on digits up to `bound`: the input's,
  // which passes through; the sine's cube term, bound (2 pi / R)^2 / 6; and the cleaning sine's
  // interpolation and CKKS errors (as in refreshed()) grown by R bound / (2 pi) on the way back
  // to digits, for R = unreduced_ratio().
  double unreduced(double input, double bound) const;
  // The message ratio q_0 / (D_0 D) that minimises the last two: R^6 = 2 a^2 / b^2 for the cube
  // term's a / R^2 and the evaluation's b R.
  double unreduced_ratio() const;
  // The largest input noise a cleaning refresh takes: ten deviations within 2^-4, where the
  // cleaning's cube leaves below 2^-10.
  double max_refresh_input() const { return std::exp2(-4.0) / 10; }
  // The largest noise a decryption rounds correctly with the failure probability below: ten
  // deviations within 1/2 (ten deviations: below 2^-75 a digit, for a Gaussian).
  double max_decodable() const { return 0.05; }

  // log2 of the probability that some digit of one ciphertext (N of them) is off by 1/2 or more
  // when its error has deviation `noise`: N times the Gaussian tail, two-sided.
  double log2_failure(double noise) const;

 private:
  // The CKKS error, on the value of sin, of a double-angle sine with `double_angles` evaluated
  // from the cleaning's first level.
  double sine_noise(std::uint32_t double_angles) const;
  // The cleaning sine's whole error on the value of sin (interpolation and CKKS).
  double sine_error() const;

  const LaneContext* context_;
  double interpolation_ = 0;  // the cleaning sine's interpolation error (on sin)
};

}  // namespace safhire::lanes
