#include "refresh_steps.hpp"

#include <cmath>
#include <numbers>

#include "safhire/core/error.hpp"

namespace safhire::lanes::detail {

ckks::Plaintext integer_plaintext(const ckks::CkksContext& context, const ckks::RnsOps& ops,
                                  const ckks::RnsOps::Coefficients& coeffs, std::uint32_t level) {
  ckks::Plaintext p;
  ops.expand_coefficients(coeffs, context.q_moduli(level), p.poly);
  p.scale = 1;
  p.slots = context.degree() / 2;
  return p;
}

ckks::Plaintext monomial_plaintext(const LaneContext& context, const ckks::RnsOps& ops,
                                   std::int64_t k, std::uint32_t level) {
  const LaneSpace& space = context.space();
  const auto n = static_cast<std::int64_t>(space.lane_degree);
  const std::int64_t e = ((k % (2 * n)) + 2 * n) % (2 * n);  // Y^(2n) = 1
  ckks::RnsOps::Coefficients coeffs(space.degree(), 0);
  const std::uint32_t gap = space.degree() / space.lane_degree;
  coeffs[static_cast<std::size_t>(e % n) * gap] = e >= n ? -1 : 1;  // Y^n = -1
  return integer_plaintext(context.ckks(), ops, coeffs, level);
}

ckks::Plaintext reduction_plaintext(const LaneContext& context, const ckks::RnsOps& ops,
                                    double scale, bool truncated, std::uint32_t truncated_digits) {
  const LaneSpace& space = context.space();
  const ckks::CkksContext& ckks = context.ckks();
  const std::uint32_t n_degree = space.degree(), gap = n_degree / space.lane_degree;
  require(!truncated || (space.t_degree == 1 && truncated_digits >= 1 &&
                         truncated_digits <= space.lane_degree),
          ErrorCode::invalid_argument, "lane reduction: a truncated inverse needs m = 1, d <= n");
  // Coefficient m j is -(q_0 q_1 / S) beta^-(j+1) / (1 + beta^-(n/m)) (the wrap-around of
  // Y^n = -1; none in the truncated series), nonzero for the first few j only.
  const long double q01 =
      static_cast<long double>(ckks.prime(0)) * static_cast<long double>(ckks.prime(1));
  const long double beta = static_cast<long double>(space.base);
  const std::uint32_t per = truncated ? truncated_digits : space.coefficient_digits();
  const long double wrap =
      truncated ? 1.0L : 1.0L / (1.0L + std::pow(beta, -static_cast<long double>(per)));
  ckks::RnsOps::Coefficients coeffs(n_degree, 0);
  long double magnitude = q01 / static_cast<long double>(scale) * wrap;
  for (std::uint32_t j = 0; j < per; ++j) {
    magnitude /= beta;
    if (magnitude < 0.5L) break;
    require(magnitude < 0x1p62L, ErrorCode::invalid_argument,
            "lane refresh: the input's scale is too small for the reduction");
    coeffs[std::size_t{j} * space.t_degree * gap] =
        -static_cast<std::int64_t>(std::llround(magnitude));
  }
  return integer_plaintext(ckks, ops, coeffs, 1);
}

ckks::Ciphertext raise(const LaneContext& context, const ckks::Evaluator& evaluator,
                       const ckks::Ciphertext& low, const ckks::BootstrapKeys& keys) {
  const LaneSpace& space = context.space();
  if (space.ephemeral_weight == 0) return evaluator.mod_raise(low, space.top());
  require(keys.to_ephemeral.has_value() && keys.from_ephemeral.has_value(),
          ErrorCode::invalid_argument, "lane refresh: the keys lack the ephemeral secret's");
  return evaluator.switch_key(
      evaluator.mod_raise(evaluator.switch_key(low, *keys.to_ephemeral), space.top()),
      *keys.from_ephemeral);
}

ckks::Ciphertext clean(const LaneContext& context, const ckks::Evaluator& evaluator,
                       const ckks::DoubleAngleSine& sine, const ckks::Ciphertext& part,
                       const ckks::SwitchingKey& rlk) {
  constexpr double kTwoPi = 2 * std::numbers::pi;
  // s = sin(2 pi K v) at the rest scale / (2 pi); K v at s's level and the rest scale by one
  // exact constant product; then K v - s / (2 pi), at the rest scale.
  const double rest = context.rest_scale();
  ckks::Ciphertext s = sine.evaluate(evaluator, part, rlk, rest / kTwoPi);
  const std::uint32_t level = s.level();
  const double q = static_cast<double>(context.ckks().prime(level + 1));
  ckks::Ciphertext kv = evaluator.rescale(
      evaluator.multiply_constant_at(part, sine.k(), rest * q / part.scale, level + 1));
  s.scale = kv.scale = rest;  // both equal to it to rounding (s reads sin(2 pi K v) / (2 pi))
  return evaluator.sub(kv, s);
}

bool same_scale(double a, double b) {
  return std::fabs(a - b) <= std::ldexp(std::fabs(a), -40);
}

std::pair<ckks::Ciphertext, ckks::Ciphertext> aligned(const ckks::CkksContext& context,
                                                      const ckks::Evaluator& evaluator,
                                                      const ckks::Ciphertext& x,
                                                      const ckks::Ciphertext& y) {
  if (x.level() == y.level()) {
    require(same_scale(x.scale, y.scale), ErrorCode::invalid_argument,
            "ciphertexts at one level with different scales");
    return {x, y};
  }
  const bool x_high = x.level() > y.level();
  const ckks::Ciphertext& high = x_high ? x : y;
  const ckks::Ciphertext& low = x_high ? y : x;
  ckks::Ciphertext moved;
  if (same_scale(high.scale, low.scale)) {
    moved = evaluator.drop_to_level(high, low.level());
  } else {
    // The other's scale by one exact constant product and its rescale.
    const std::uint32_t at = low.level() + 1;
    const double q = static_cast<double>(context.prime(at));
    moved = evaluator.rescale(
        evaluator.multiply_constant_at(high, 1.0, low.scale * q / high.scale, at));
    moved.scale = low.scale;
  }
  return x_high ? std::pair{moved, low} : std::pair{low, moved};
}

}  // namespace safhire::lanes::detail
