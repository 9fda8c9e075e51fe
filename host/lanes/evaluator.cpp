#include "safhire/lanes/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "refresh_steps.hpp"
#include "safhire/core/error.hpp"
#include "safhire/lanes/integers.hpp"

namespace safhire::lanes {

namespace {

std::string power_of_two(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2^%.1f", std::log2(x));
  return buf;
}

}  // namespace

LaneEvaluator::LaneEvaluator(const LaneContext& context, const ckks::RnsOps& ops)
    : context_(&context),
      ops_(&ops),
      evaluator_(context.ckks(), ops),
      encoder_(context, ops),
      noise_(context) {}

void LaneEvaluator::set_refresher(const LaneRefresher* refresher, const LaneKeys* keys) {
  require((refresher == nullptr) == (keys == nullptr), ErrorCode::invalid_argument,
          "lane evaluator: a refresher needs its keys");
  require(refresher == nullptr || &refresher->context() == context_, ErrorCode::size_mismatch,
          "lane evaluator: a refresher of another lane context");
  refresher_ = refresher;
  keys_ = keys;
}

void LaneEvaluator::check_space(const LaneCiphertext& x) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "a lane ciphertext of another lane space");
  require(x.ct.slots == context_->space().degree() / 2 && x.ct.size() == 2,
          ErrorCode::invalid_argument, "a lane ciphertext holds N/2 slots in two components");
}

std::string LaneEvaluator::refusal(std::uint32_t level, double bound, double noise) const {
  const LaneSpace& space = context_->space();
  const auto& ckks = context_->ckks();
  if (level < space.refresh_level()) {
    return "level " + std::to_string(level) + " is below the refresh level " +
           std::to_string(space.refresh_level());
  }
  if (!(noise <= noise_.max_refresh_input())) {
    return "noise " + power_of_two(noise) + " beyond the " +
           power_of_two(noise_.max_refresh_input()) + " the cleaning takes";
  }
  // Form B's slots reach n D, form S's coefficients D, at the rest scale: within the modulus of
  // the refresh level and of level 1 with room, and within the decoder's exact range.
  auto log_q = [&](std::uint32_t l) {
    double bits = 0;
    for (std::uint32_t i = 0; i <= l; ++i)
      bits += std::log2(static_cast<double>(ckks.prime(i)));
    return bits;
  };
  const double scale_bits = std::log2(context_->rest_scale());
  const double slot_bits = std::log2(std::max(1.0, bound * space.lane_degree));
  if (!(scale_bits + slot_bits + 4 <= log_q(space.refresh_level()) &&
        scale_bits + std::log2(std::max(1.0, bound)) + 4 <= log_q(1) && slot_bits <= 44)) {
    return "digits up to " + power_of_two(bound) + " do not fit the refresh's modulus";
  }
  return {};
}

LaneCiphertext LaneEvaluator::checked(ckks::Ciphertext ct, double bound, double noise,
                                      const char* what) const {
  const std::string why = refusal(ct.level(), bound, noise);
  require(why.empty(), ErrorCode::needs_refresh,
          std::string("lanes ") + what + ": the result could not be refreshed exactly (" + why +
              "): refresh an operand first");
  LaneCiphertext out;
  out.ct = std::move(ct);
  out.digit_bound = bound;
  out.noise = noise;
  out.space = context_->fingerprint();
  return out;
}

void LaneEvaluator::still_refused(const std::string& why, const char* what) const {
  require(why.empty(), ErrorCode::needs_refresh,
          std::string("lanes ") + what +
              ": refused even on refreshed operands (the space's refreshed digits and noise "
              "leave no room for it): " +
              why);
}

LaneCiphertext LaneEvaluator::refreshed(const LaneCiphertext& x) const {
  ++refreshes_;
  return refresher_->refresh(x, *keys_);
}

std::pair<ckks::Ciphertext, ckks::Ciphertext> LaneEvaluator::aligned(
    const LaneCiphertext& x, const LaneCiphertext& y) const {
  return detail::aligned(context_->ckks(), evaluator_, x.ct, y.ct);
}

LaneCiphertext LaneEvaluator::add(const LaneCiphertext& x, const LaneCiphertext& y) const {
  check_space(x);
  check_space(y);
  auto plan = [&](const LaneCiphertext& a, const LaneCiphertext& b) {
    return refusal(std::min(a.level(), b.level()), a.digit_bound + b.digit_bound,
                   std::hypot(a.noise, b.noise));
  };
  if (refresher_ != nullptr && !plan(x, y).empty()) {
    const LaneCiphertext rx = refreshed(x), ry = refreshed(y);
    still_refused(plan(rx, ry), "add");
    return add(rx, ry);
  }
  const auto [a, b] = aligned(x, y);
  return checked(evaluator_.add(a, b), x.digit_bound + y.digit_bound, std::hypot(x.noise, y.noise),
                 "add");
}

LaneCiphertext LaneEvaluator::sub(const LaneCiphertext& x, const LaneCiphertext& y) const {
  return add(x, negate(y));
}

LaneCiphertext LaneEvaluator::negate(const LaneCiphertext& x) const {
  check_space(x);
  LaneCiphertext out = x;
  out.ct = evaluator_.negate(x.ct);
  return out;
}

std::tuple<std::uint32_t, double, double> LaneEvaluator::product_result(
    const LaneCiphertext& x, const LaneCiphertext& y) const {
  const std::uint32_t level = std::min(x.level(), y.level());
  const double bound =
      static_cast<double>(context_->space().lane_degree) * x.digit_bound * y.digit_bound;
  const double noise = level == 0 ? HUGE_VAL
                                  : noise_.product(x.digit_bound, x.noise, y.digit_bound, y.noise,
                                                   context_->rest_scale(), level);
  return {level == 0 ? 0U : level - 1, bound, noise};
}

std::string LaneEvaluator::multiply_refusal(const LaneCiphertext& x,
                                            const LaneCiphertext& y) const {
  check_space(x);
  check_space(y);
  if (std::min(x.level(), y.level()) == 0) return "an operand at level 0";
  const auto [level, bound, noise] = product_result(x, y);
  return refusal(level, bound, noise);
}

LaneCiphertext LaneEvaluator::multiply(const LaneCiphertext& x, const LaneCiphertext& y,
                                       const ckks::SwitchingKey& rlk) const {
  check_space(x);
  check_space(y);
  auto refused = [&](const LaneCiphertext& a, const LaneCiphertext& b) {
    return multiply_refusal(a, b);
  };
  if (refresher_ != nullptr && !refused(x, y).empty()) {
    // The operand with fewer levels (or more noise) first, then the other.
    const bool x_first = x.level() < y.level() || (x.level() == y.level() && x.noise >= y.noise);
    LaneCiphertext a = x_first ? refreshed(x) : x, b = x_first ? y : refreshed(y);
    if (!refused(a, b).empty()) {
      if (x_first) {
        b = refreshed(b);
      } else {
        a = refreshed(a);
      }
    }
    still_refused(refused(a, b), "multiply");
    return multiply(a, b, rlk);
  }
  const auto [level, bound, noise] = product_result(x, y);
  require(std::min(x.level(), y.level()) >= 1, ErrorCode::needs_refresh,
          "lanes multiply: an operand at level 0");
  const auto [a, b] = aligned(x, y);
  ckks::Ciphertext product = evaluator_.relinearize_rescale(evaluator_.multiply(a, b), rlk);
  (void)level;
  return checked(std::move(product), bound, noise, "multiply");
}

LaneCiphertext LaneEvaluator::multiply_integer(const LaneCiphertext& x, const mpz_class& c) const {
  check_space(x);
  const LaneSpace& space = context_->space();
  // c's balanced digits as the integer polynomial c(X^(N/n)): its embedding is sigma_n(c) in every
  // block, the form-B product by c in every lane, exact.
  const auto digits = constant_digits(c, space, DigitForm::balanced);
  const std::uint32_t gap = space.degree() / space.lane_degree;
  ckks::RnsOps::Coefficients coeffs(space.degree(), 0);
  double l1 = 0, l2 = 0;
  for (std::uint32_t t = 0; t < space.lane_degree; ++t) {
    coeffs[std::size_t{t} * gap] = digits[t];
    l1 += std::fabs(static_cast<double>(digits[t]));
    l2 += static_cast<double>(digits[t]) * static_cast<double>(digits[t]);
  }
  const double bound = l1 * x.digit_bound, noise = std::sqrt(l2) * x.noise;
  const std::string why = refusal(x.level(), bound, noise);
  if (refresher_ != nullptr && !why.empty()) {
    const LaneCiphertext r = refreshed(x);
    still_refused(refusal(r.level(), l1 * r.digit_bound, std::sqrt(l2) * r.noise),
                  "multiply_integer");
    return multiply_integer(r, c);
  }
  ckks::Plaintext plain;
  ops_->expand_coefficients(coeffs, context_->ckks().q_moduli(x.level()), plain.poly);
  plain.scale = 1;
  plain.slots = x.ct.slots;
  return checked(evaluator_.multiply_plain(x.ct, plain), bound, noise, "multiply_integer");
}

LaneCiphertext LaneEvaluator::multiply_integers(const LaneCiphertext& x,
                                                std::span<const mpz_class> c) const {
  check_space(x);
  const LaneSpace& space = context_->space();
  require(c.size() <= space.lanes(), ErrorCode::invalid_argument,
          std::to_string(c.size()) + " integers do not fit in " + std::to_string(space.lanes()) +
              " lanes");
  LaneDigits digits(space.lanes(), std::vector<std::int64_t>(space.lane_degree, 0));
  for (std::size_t r = 0; r < c.size(); ++r)
    digits[r] = constant_digits(c[r], space, DigitForm::balanced);
  return multiply_digits(x, digits);
}

LaneCiphertext LaneEvaluator::multiply_digits(const LaneCiphertext& x,
                                              const LaneDigits& digits) const {
  check_space(x);
  const LaneSpace& space = context_->space();
  require(digits.size() == space.lanes(), ErrorCode::invalid_argument,
          "lanes multiply_digits: " + std::to_string(space.lanes()) + " digit rows expected, got " +
              std::to_string(digits.size()));
  double l1 = 0, l2 = 0;
  for (const auto& row : digits) {
    require(row.size() == space.lane_degree, ErrorCode::invalid_argument,
            "lanes multiply_digits: rows of n = " + std::to_string(space.lane_degree) +
                " digits expected");
    double a = 0, b = 0;
    for (std::int64_t d : row) {
      a += std::fabs(static_cast<double>(d));
      b += static_cast<double>(d) * static_cast<double>(d);
    }
    l1 = std::max(l1, a);
    l2 = std::max(l2, b);
  }
  // The result's bound and noise, and its refusal: the plaintext's rounding at scale q_level, on
  // slots up to n D, is an error of about sqrt(N) / (2 q) on each of its slots, times the
  // ciphertext's slots, and the rescale.
  auto result = [&](const LaneCiphertext& a) {
    const std::uint32_t at = a.level();
    const double q = at >= 1 ? static_cast<double>(context_->ckks().prime(at)) : 1;
    const double rounding = a.digit_bound * std::sqrt(1.0 * space.lane_degree) *
                            std::sqrt(1.0 * space.degree()) / (2 * q);
    const double op = at >= 1 ? noise_.operation(a.ct.scale, at) : 0;
    const double noise = std::sqrt(l2 * a.noise * a.noise + rounding * rounding + op * op);
    const double bound = l1 * a.digit_bound;
    return std::tuple{q, bound, noise, refusal(at == 0 ? 0 : at - 1, bound, noise)};
  };
  const auto [q, bound, noise, why] = result(x);
  if (refresher_ != nullptr && !why.empty()) {
    const LaneCiphertext r = refreshed(x);
    still_refused(std::get<3>(result(r)), "multiply_digits");
    return multiply_digits(r, digits);
  }
  const std::uint32_t level = x.level();
  require(level >= 1, ErrorCode::needs_refresh, "lanes multiply_digits: a ciphertext at level 0");
  const auto z = encoder_.slots(digits);
  std::vector<std::complex<double>> values(z.size());
  for (std::size_t j = 0; j < z.size(); ++j)
    values[j] = {static_cast<double>(z[j].real()), static_cast<double>(z[j].imag())};
  const ckks::Plaintext plain = encoder_.ckks_encoder().encode(values, q, level);
  return checked(evaluator_.rescale(evaluator_.multiply_plain(x.ct, plain)), bound, noise,
                 "multiply_digits");
}

LaneCiphertext LaneEvaluator::multiply_monomial(const LaneCiphertext& x, std::int64_t k) const {
  check_space(x);
  LaneCiphertext out = x;
  out.ct =
      evaluator_.multiply_plain(x.ct, detail::monomial_plaintext(*context_, *ops_, k, x.level()));
  return out;
}

LaneCiphertext LaneEvaluator::rotate_lanes(const LaneCiphertext& x, int blocks,
                                           const ckks::GaloisKeys& keys) const {
  check_space(x);
  const LaneSpace& space = context_->space();
  const auto lanes = static_cast<long long>(space.lanes());
  const long long m = ((blocks % lanes) + lanes) % lanes;
  if (m == 0) return x;
  const int step = static_cast<int>(m * space.lane_slots());
  const double op = noise_.operation(x.ct.scale, x.level());
  return checked(evaluator_.rotate(x.ct, step, keys), x.digit_bound, std::hypot(x.noise, op),
                 "rotate_lanes");
}

}  // namespace safhire::lanes
