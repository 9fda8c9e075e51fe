#include "safhire/lanes/convert.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/lanes/lane_space.hpp"

namespace safhire::lanes {

LaneSpace conversion_space(std::uint32_t log_n, std::uint32_t n, std::uint64_t beta) {
  const auto groups =
      static_cast<std::uint32_t>(make_lane_space("probe", log_n, n, beta).l_split.size());
  LaneSpaceOptions options;
  options.products_per_refresh = 2 * groups;
  std::string name = "lanes-n";
  name += std::to_string(log_n);
  name += "-";
  name += std::to_string(n);
  name += "-b";
  name += std::to_string(beta);
  name += "-k";
  name += std::to_string(2 * groups);
  return make_lane_space(name, log_n, n, beta, options);
}

LaneConverter::LaneConverter(const LaneContext& context, const ckks::RnsOps& ops,
                             std::uint32_t level, std::uint32_t function_levels)
    : context_(&context),
      encoder_(context.ckks(), ops),
      evaluator_(context.ckks(), ops),
      noise_(context) {
  const LaneSpace& space = context.space();
  const auto groups = static_cast<std::uint32_t>(space.l_split.size());
  level_ = level == 0 ? space.rest_level() : level;
  require(level_ <= space.top(), ErrorCode::invalid_parameters,
          "lane conversion: level " + std::to_string(level_) + " above the chain's top");
  require(
      level_ >= space.refresh_level() + 2 * groups + function_levels, ErrorCode::invalid_parameters,
      "lane conversion: from level " + std::to_string(level_) + ", form B would come back " +
          std::to_string(2 * groups + function_levels) + " levels lower, below the refresh " +
          "level " + std::to_string(space.refresh_level()) +
          " (a space with products_per_refresh >= " + std::to_string(2 * groups + function_levels) +
          " has the room)");
  slots_level_ = level_ - groups;
  lanes_level_ = slots_level_ - function_levels;
  // L^-1: CoeffToSlot on the lane stages, its groups in the reverse of L's order, times 1/2 so
  // that w + conj(w) and -i (w - conj(w)) are the real and imaginary parts themselves.
  std::vector<std::uint32_t> reversed(space.l_split.rbegin(), space.l_split.rend());
  l_inverse_.emplace(encoder_, ckks::DftDirection::coeff_to_slot, 0, space.l_stages(), reversed,
                     level_, 0, 0.5);
  l_.emplace(encoder_, ckks::DftDirection::slot_to_coeff, 0, space.l_stages(), space.l_split,
             lanes_level_, 0, 1.0);
  const std::vector<std::complex<double>> i(space.degree() / 2, {0, 1}),
      minus_i(space.degree() / 2, {0, -1});
  minus_i_ = encoder_.encode(minus_i, 1.0, slots_level_);
  i_ = encoder_.encode(i, 1.0, lanes_level_);
}

std::uint32_t LaneConverter::output_level() const {
  return lanes_level_ - static_cast<std::uint32_t>(context_->space().l_split.size());
}

std::uint32_t LaneConverter::slot_of_digit(std::uint32_t lane, std::uint32_t t) const {
  return lanes::slot_of_digit(context_->space(), lane, t);
}

void LaneConverter::add_keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                             ckks::GaloisKeys& keys) const {
  generator.add_galois_keys(keys, sk, l_inverse_->rotations(), true, level_);
  generator.add_galois_keys(keys, sk, l_->rotations(), false, lanes_level_);
}

void LaneConverter::make_resident(const ckks::RnsOps& ops) {
  l_inverse_->make_resident(ops);
  l_->make_resident(ops);
  ckks::make_resident(ops, minus_i_);
  ckks::make_resident(ops, i_);
}

DigitSlots LaneConverter::to_slots(const LaneCiphertext& x, const ckks::GaloisKeys& keys) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "lane conversion: a ciphertext of another lane space");
  require(x.level() >= level_, ErrorCode::invalid_argument,
          "lane conversion: the input must be at level " + std::to_string(level_) +
              " or above, got " + std::to_string(x.level()));
  const ckks::Ciphertext in = x.level() == level_ ? x.ct : evaluator_.drop_to_level(x.ct, level_);
  const ckks::Ciphertext w = l_inverse_->apply(evaluator_, in, keys);
  const ckks::Ciphertext conj = evaluator_.conjugate(w, keys);
  DigitSlots out;
  out.low = evaluator_.add(w, conj);
  out.high = evaluator_.multiply_plain(evaluator_.sub(w, conj), minus_i_);
  out.digit_bound = x.digit_bound;
  // The input's noise, each group's key switches and rescale, and the conjugation's key switch.
  double square = x.noise * x.noise;
  for (std::uint32_t g = 0; g <= l_inverse_->depth(); ++g) {
    const double op = noise_.operation(x.ct.scale, level_ - std::min(g, l_inverse_->depth() - 1));
    square += op * op;
  }
  out.noise = std::sqrt(square);
  out.space = x.space;
  return out;
}

LaneCiphertext LaneConverter::to_lanes(const DigitSlots& digits,
                                       const ckks::GaloisKeys& keys) const {
  require(digits.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "lane conversion: digits of another lane space");
  require(digits.low.level() >= lanes_level_ && digits.high.level() >= lanes_level_ &&
              digits.low.scale == digits.high.scale,
          ErrorCode::invalid_argument,
          "lane conversion: both parts at level " + std::to_string(lanes_level_) +
              " or above, at one scale");
  auto at = [&](const ckks::Ciphertext& c) {
    return c.level() == lanes_level_ ? c : evaluator_.drop_to_level(c, lanes_level_);
  };
  const ckks::Ciphertext packed =
      evaluator_.add(at(digits.low), evaluator_.multiply_plain(at(digits.high), i_));
  LaneCiphertext out;
  out.ct = l_->apply(evaluator_, packed, keys);
  out.digit_bound = digits.digit_bound;
  double square = digits.noise * digits.noise;
  for (std::uint32_t g = 0; g < l_->depth(); ++g) {
    const double op = noise_.operation(packed.scale, lanes_level_ - g);
    square += op * op;
  }
  out.noise = std::sqrt(square);
  out.space = digits.space;
  return out;
}

LaneCiphertext LaneConverter::from_digits(const DigitSlots& digits,
                                          const ckks::GaloisKeys& keys) const {
  require(digits.canonical, ErrorCode::invalid_argument,
          "from_digits: the digits are not canonical (DigitEncryptor makes canonical ones)");
  LaneCiphertext out = to_lanes(digits, keys);
  out.digit_bound = std::max(1.0, static_cast<double>(context_->space().base) - 1);
  return out;
}

}  // namespace safhire::lanes
