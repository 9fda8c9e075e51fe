#include "safhire/lanes/refresh.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "refresh_steps.hpp"
#include "safhire/core/error.hpp"

namespace safhire::lanes {

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

}  // namespace

LaneRefresher::LaneRefresher(const LaneContext& context, const ckks::RnsOps& ops,
                             RefreshParams params)
    : context_(&context),
      params_(params),
      encoder_(context.ckks(), ops),
      evaluator_(context.ckks(), ops),
      noise_(context) {
  const LaneSpace& space = context.space();
  const ckks::CkksContext& ckks = context.ckks();
  require(space.conversion_levels == 0, ErrorCode::invalid_argument,
          "lane refresh: space '" + space.name +
              "' has conversion levels in its refresh (the mod-2^n baseline's layout)");
  const std::uint32_t n_degree = space.degree(), top = space.top();
  const std::uint32_t stages = space.ckks.log_n - 1, lane_stages = space.l_stages();
  const auto cts_groups = static_cast<std::uint32_t>(space.cts_split.size());
  const auto l_groups = static_cast<std::uint32_t>(space.l_split.size());
  const auto& plan = space.cleaning;
  sine_ = ckks::DoubleAngleSine(plan.k, plan.degree, plan.double_angles);
  const double q0 = static_cast<double>(ckks.prime(0));

  // CoeffToSlot at the top: with the raised ciphertext labelled eval_scale_, its slots read
  // sigma_N(q_0 z) / eval_scale_; the factor leaves the complex-packed digits / (2 K), whose real
  // and imaginary parts, w + conj(w) and -i (w - conj(w)), are the digits / K.
  eval_scale_ = static_cast<double>(ckks.prime(top - cts_groups));
  cts_.emplace(encoder_, ckks::DftDirection::coeff_to_slot, 0, stages, space.cts_split, top, 0,
               eval_scale_ / (2 * q0 * plan.k), params_.max_babies,
               std::vector<std::complex<double>>{}, params_.lazy_matrices);
  c_.emplace(encoder_, ckks::DftDirection::slot_to_coeff, lane_stages, stages, space.c_split,
             space.refresh_level(), 0, 1.0, params_.max_babies);

  // The cleaning ends at the rest scale (its sine at rest / (2 pi): DoubleAngleSine's output
  // scale), so that L, which keeps the scale, leaves form B at the rest level and scale. (A factor
  // folded into L instead would cost its diagonals that many bits of precision.)
  const std::uint32_t recombine_level = space.rest_level() + l_groups;
  require(top - cts_groups - plan.depth() == recombine_level, ErrorCode::internal,
          "lane refresh: the cleaning does not end where L starts");
  l_.emplace(encoder_, ckks::DftDirection::slot_to_coeff, 0, lane_stages, space.l_split,
             recombine_level, 0, 1.0, params_.max_babies);
  if (params_.plan_plain) {
    // C^-1 at the top on the raised ciphertext labelled q_0 (slots sigma_N(z)), to form B at the
    // scale of the level it ends at.
    plain_scale_ =
        static_cast<double>(ckks.prime(top - static_cast<std::uint32_t>(space.c_split.size())));
    c_inverse_.emplace(encoder_, ckks::DftDirection::coeff_to_slot, lane_stages, stages,
                       space.c_split, top, 0, plain_scale_ / q0, params_.max_babies,
                       std::vector<std::complex<double>>{}, params_.lazy_matrices);
  }

  // t = Y^m - beta = X^(m N/n) - beta, exact, at the top.
  ckks::RnsOps::Coefficients t(n_degree, 0);
  t[0] = -static_cast<std::int64_t>(space.base);
  t[std::size_t{space.t_degree} * (n_degree / space.lane_degree)] = 1;
  t_ = detail::integer_plaintext(ckks, ops, t, top);
  const std::vector<std::complex<double>> i(n_degree / 2, {0, 1}), minus_i(n_degree / 2, {0, -1});
  i_ = encoder_.encode(i, 1.0, recombine_level);
  minus_i_ = encoder_.encode(minus_i, 1.0, top - cts_groups);
}

std::vector<int> LaneRefresher::rotations() const {
  std::vector<int> all;
  for (const auto* dft : {&cts_, &c_, &l_, &c_inverse_}) {
    if (!dft->has_value()) continue;
    const auto r = (*dft)->rotations();
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

LaneKeys LaneRefresher::keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                             std::span<const int> lane_rotations) const {
  const LaneSpace& space = context_->space();
  LaneKeys keys;
  keys.relinearization = generator.relinearization_key(sk);
  // Highest level first: a key already made (at a higher level) serves the lower uses.
  generator.add_galois_keys(keys.galois, sk, cts_->rotations(), true, space.top());
  if (c_inverse_)
    generator.add_galois_keys(keys.galois, sk, c_inverse_->rotations(), false, space.top());
  generator.add_galois_keys(keys.galois, sk, l_->rotations(), false, l_->groups().front().level());
  generator.add_galois_keys(keys.galois, sk, c_->rotations(), false, c_->groups().front().level());
  if (!lane_rotations.empty()) {
    std::vector<int> steps;
    const int slots = static_cast<int>(space.degree() / 2);
    for (int blocks : lane_rotations) {
      const int step = static_cast<int>(
          ((static_cast<long long>(blocks) * space.lane_slots()) % slots + slots) % slots);
      if (step != 0) steps.push_back(step);
    }
    generator.add_galois_keys(keys.galois, sk, steps, false, space.rest_level());
  }
  if (space.ephemeral_weight > 0) {
    const ckks::SecretKey ephemeral = generator.secret_key(space.ephemeral_weight);
    keys.to_ephemeral = generator.switching_key(ephemeral, sk.s, 0);
    keys.from_ephemeral = generator.switching_key(sk, ephemeral.s, space.top());
  }
  return keys;
}

std::size_t LaneRefresher::matrix_bytes() const {
  std::size_t bytes = 0;
  for (const auto* dft : {&cts_, &c_, &l_, &c_inverse_}) {
    if (!dft->has_value()) continue;
    for (const auto& group : (*dft)->groups())
      bytes += group.bytes();
  }
  return bytes;
}

void LaneRefresher::make_resident(const ckks::RnsOps& ops) {
  for (auto* dft : {&cts_, &c_, &l_, &c_inverse_}) {
    if (dft->has_value()) (*dft)->make_resident(ops);
  }
  for (auto* p : {&t_, &i_, &minus_i_})
    ckks::make_resident(ops, *p);
}

void LaneRefresher::check_input(const LaneCiphertext& x, RefreshMode mode) const {
  const LaneSpace& space = context_->space();
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "lane refresh: a ciphertext of another lane space");
  require(x.ct.size() == 2 && x.ct.slots == space.degree() / 2, ErrorCode::invalid_argument,
          "lane refresh: a relinearized ciphertext of N/2 slots expected");
  require(x.level() >= space.refresh_level(), ErrorCode::invalid_argument,
          "lane refresh: the input must be at level " + std::to_string(space.refresh_level()) +
              " or above, got " + std::to_string(x.level()));
  require(mode != RefreshMode::plain || c_inverse_.has_value(), ErrorCode::unsupported,
          "lane refresh: the plain refresh was not planned (RefreshParams::plan_plain)");
  const double limit =
      mode == RefreshMode::clean ? noise_.max_refresh_input() : noise_.max_decodable();
  if (mode == RefreshMode::unreduced) {
    // Its output keeps the digits and adds EvalMod's error, which grows with them.
    const double out = noise_.unreduced(x.noise, x.digit_bound);
    require(out <= noise_.max_decodable(), ErrorCode::needs_refresh,
            "lane refresh without the reduction: digits up to 2^" +
                std::to_string(std::log2(x.digit_bound)) + " would come back with noise 2^" +
                std::to_string(std::log2(out)) + ", beyond the 2^" +
                std::to_string(std::log2(noise_.max_decodable())) + " a decryption rounds");
  }
  require(x.noise <= limit, ErrorCode::needs_refresh,
          "lane refresh: noise 2^" + std::to_string(std::log2(x.noise)) + " beyond the 2^" +
              std::to_string(std::log2(limit)) + " this refresh takes");
}

ckks::Ciphertext LaneRefresher::cross_lanes(const LaneCiphertext& x, const LaneKeys& keys) const {
  const std::uint32_t level = context_->space().refresh_level();
  const ckks::Ciphertext in = x.level() == level ? x.ct : evaluator_.drop_to_level(x.ct, level);
  return c_->apply(evaluator_, in, keys.galois);
}

ckks::Ciphertext LaneRefresher::raise(const ckks::Ciphertext& low, const LaneKeys& keys) const {
  return detail::raise(*context_, evaluator_, low, keys);
}

ckks::Ciphertext LaneRefresher::reduce_and_raise(const ckks::Ciphertext& s, const LaneKeys& keys,
                                                 double scale) const {
  const ckks::CkksContext& ckks = context_->ckks();
  require(s.level() == 1, ErrorCode::invalid_argument,
          "lane refresh: the reduction takes form S at level 1");
  const ckks::Plaintext t_inverse =
      detail::reduction_plaintext(*context_, evaluator_.ops(), s.scale);
  // Level 0: q_0 (P t^-1 mod 1), the integer part of P t^-1 gone with the modulus q_0 q_1.
  ckks::Ciphertext low = evaluator_.rescale(evaluator_.multiply_plain(s, t_inverse));
  low.scale = static_cast<double>(ckks.prime(0));
  ckks::Ciphertext raised = raise(low, keys);
  // x t: q_0 z, z = (phi + I) t, an integer polynomial = P mod t with |z| <= (beta + 1)(h+1)/2.
  raised = evaluator_.multiply_plain(raised, t_);
  raised.scale = scale;  // a label: the slots read sigma_N(q_0 z) / scale
  return raised;
}

std::vector<ckks::Ciphertext> LaneRefresher::to_digits(const ckks::Ciphertext& raised,
                                                       const LaneKeys& keys) const {
  const ckks::Ciphertext w = cts_->apply(evaluator_, raised, keys.galois);
  const ckks::Ciphertext conj = evaluator_.conjugate(w, keys.galois);
  return {evaluator_.add(w, conj), evaluator_.multiply_plain(evaluator_.sub(w, conj), minus_i_)};
}

ckks::Ciphertext LaneRefresher::clean(const ckks::Ciphertext& part, const LaneKeys& keys) const {
  return detail::clean(*context_, evaluator_, sine_, part, keys.relinearization);
}

ckks::Ciphertext LaneRefresher::to_lanes(const std::vector<ckks::Ciphertext>& cleaned,
                                         const LaneKeys& keys) const {
  require(cleaned.size() == 2, ErrorCode::invalid_argument,
          "lane refresh: the real and imaginary parts, two ciphertexts");
  const ckks::Ciphertext packed =
      evaluator_.add(cleaned[0], evaluator_.multiply_plain(cleaned[1], i_));
  return l_->apply(evaluator_, packed, keys.galois);
}

ckks::Ciphertext LaneRefresher::back_across_lanes(const ckks::Ciphertext& raised,
                                                  const LaneKeys& keys) const {
  require(c_inverse_.has_value(), ErrorCode::unsupported,
          "lane refresh: the plain refresh was not planned (RefreshParams::plan_plain)");
  ckks::Ciphertext out = c_inverse_->apply(evaluator_, raised, keys.galois);
  out.scale = plain_scale_;  // C^-1's factor plain_scale_ / q_0 on slots labelled q_0
  return out;
}

std::vector<ckks::Ciphertext> LaneRefresher::unreduced_digits(const ckks::Ciphertext& s,
                                                              double bound, const LaneKeys& keys,
                                                              double& d0) const {
  const ckks::CkksContext& ckks = context_->ckks();
  require(s.level() == 1, ErrorCode::invalid_argument,
          "lane refresh: the drop takes form S at level 1");
  const double q0 = static_cast<double>(ckks.prime(0)), q1 = static_cast<double>(ckks.prime(1));
  // Level 0 holds D_0 P, D_0 ~ q_0 / (R D) for the model's message ratio R: the product by
  // m = round(D_0 q_1 / S) and the rescale, D_0 = S m / q_1 exactly.
  const double m =
      std::round(q0 / (noise_.unreduced_ratio() * std::max(1.0, bound)) * q1 / s.scale);
  require(m >= 1 && m < 0x1p62, ErrorCode::invalid_argument,
          "lane refresh: the input's scale does not allow the drop");
  ckks::Ciphertext low = evaluator_.rescale(evaluator_.multiply_constant(s, m, 1.0));
  d0 = s.scale * m / q1;
  low.scale = d0;  // a label: the slots read sigma(P)
  ckks::Ciphertext raised = raise(low, keys);
  // The raised plaintext is q_0 t, t = D_0 P / q_0 + I, labelled as the cleaning refresh's: the
  // parts are t / K at the cleaning's first prime (the scale at which the sine is most precise).
  raised.scale = eval_scale_;
  return to_digits(raised, keys);
}

ckks::Ciphertext LaneRefresher::eval_mod(const ckks::Ciphertext& part, double d0,
                                         const LaneKeys& keys) const {
  // sin(2 pi K v) = sin(2 pi t) ~ 2 pi D_0 P / q_0 at scale T reads P at the label
  // T 2 pi D_0 / q_0: the rest scale for T = rest q_0 / (2 pi D_0). It ends where the cleaning
  // does, at L's level.
  const double rest = context_->rest_scale();
  const double q0 = static_cast<double>(context_->ckks().prime(0));
  ckks::Ciphertext out =
      sine_.evaluate(evaluator_, part, keys.relinearization, rest * q0 / (kTwoPi * d0));
  out.scale = rest;
  return out;
}

std::uint32_t LaneRefresher::parts_level() const {
  const LaneSpace& space = context_->space();
  return space.rest_level() + static_cast<std::uint32_t>(space.l_split.size());
}

std::vector<ckks::Ciphertext> LaneRefresher::parity_parts(const LaneCiphertext& x,
                                                          const LaneKeys& keys,
                                                          double scale) const {
  const LaneSpace& space = context_->space();
  require(space.base == 2 && space.t_degree == 1, ErrorCode::unsupported,
          "parities: beta = 2 integer spaces only (space '" + space.name + "')");
  check_input(x, RefreshMode::clean);
  const ckks::CkksContext& ckks = context_->ckks();
  const ckks::Ciphertext s = cross_lanes(x, keys);
  // Level 0 holds (q_0 / 2) P: the product by m = round(q_0 q_1 / (2 S)) and the rescale by q_1;
  // modulo q_0 only P mod 2 is left (m's rounding moves the phase by S / q_1 per unit of P).
  const double q0 = static_cast<double>(ckks.prime(0)), q1 = static_cast<double>(ckks.prime(1));
  const double m = std::round(q0 / 2 * q1 / s.scale);
  require(m >= 1 && m < 0x1p62, ErrorCode::invalid_argument,
          "parities: the input's scale does not allow the drop");
  ckks::Ciphertext low = evaluator_.rescale(evaluator_.multiply_constant(s, m, 1.0));
  low.scale = q0;
  ckks::Ciphertext raised = raise(low, keys);
  raised.scale = eval_scale_;  // as the cleaning refresh's: the parts are y / K, y = P / 2 + I
  std::vector<ckks::Ciphertext> parts = to_digits(raised, keys);
  // cos(2 pi y) = sin(2 pi K (v + 1 / (4 K))) at half the rest scale; (1 - cos) / 2 by the label.
  const double out = scale != 0 ? scale : context_->rest_scale();
  for (ckks::Ciphertext& part : parts) {
    const ckks::Ciphertext shifted = evaluator_.add_constant(part, 1 / (4 * sine_.k()));
    ckks::Ciphertext c = sine_.evaluate(evaluator_, shifted, keys.relinearization, out / 2);
    part = evaluator_.add_constant(evaluator_.negate(c), 1.0);
    part.scale = out;  // 2 (out / 2): the value halved
  }
  return parts;
}

LaneCiphertext LaneRefresher::parities(const LaneCiphertext& x, const LaneKeys& keys) const {
  LaneCiphertext out;
  out.ct = to_lanes(parity_parts(x, keys), keys);
  out.digit_bound = 1;
  out.noise = noise_.refreshed(x.noise);
  out.space = context_->fingerprint();
  return out;
}

LaneCiphertext LaneRefresher::carry_round(const LaneCiphertext& x, const LaneKeys& keys) const {
  const LaneSpace& space = context_->space();
  require(x.level() < space.rest_level(), ErrorCode::invalid_argument,
          "carry round: the input must be below the rest level, where the parities come back");
  const LaneCiphertext l = parities(x, keys);
  // l, one level above x at least, at x's level and a given scale (one exact constant product).
  auto moved = [&](const ckks::Ciphertext& like) {
    return detail::aligned(context_->ckks(), evaluator_, l.ct, like).first;
  };
  // (z - l) / 2 by the label, then Y times it: the exact monomial, no level.
  ckks::Ciphertext half = evaluator_.sub(x.ct, moved(x.ct));
  half.scale *= 2;
  half = evaluator_.multiply_plain(
      half, detail::monomial_plaintext(*context_, evaluator_.ops(), 1, x.level()));
  LaneCiphertext out = x;
  out.ct = evaluator_.add(half, moved(half));
  out.digit_bound = std::ceil(x.digit_bound / 2) + 1;  // digit 0 takes -h_(n-1)
  out.noise = x.noise / 2 + l.noise;
  return out;
}

LaneCiphertext LaneRefresher::refresh(const LaneCiphertext& x, const LaneKeys& keys,
                                      RefreshMode mode, const StepDone& done) const {
  check_input(x, mode);
  const ckks::RnsOps& ops = evaluator_.ops();
  const ckks::StepRange whole(ops, "lanes refresh");
  // Each step in a profiler range of its name, then reported.
  auto step = [&](const char* name, auto fn) {
    const std::string range = std::string("lanes ") + name;
    auto result = [&] {
      const ckks::StepRange r(ops, range.c_str());
      return fn();
    }();
    if (done) done(name);
    return result;
  };
  const ckks::Ciphertext s = step("C", [&] { return cross_lanes(x, keys); });
  LaneCiphertext out;
  out.space = context_->fingerprint();
  out.digit_bound = context_->space().rest_digit_bound();
  if (mode == RefreshMode::unreduced) {
    double d0 = 0;
    std::vector<ckks::Ciphertext> parts = step(
        "ModRaise and CoeffToSlot", [&] { return unreduced_digits(s, x.digit_bound, keys, d0); });
    parts[0] = step("EvalMod (real part)", [&] { return eval_mod(parts[0], d0, keys); });
    parts[1] = step("EvalMod (imaginary part)", [&] { return eval_mod(parts[1], d0, keys); });
    out.ct = step("L", [&] { return to_lanes(parts, keys); });
    // The digits are the input's, with the input's noise and EvalMod's error (NoiseModel).
    out.digit_bound = x.digit_bound;
    out.noise = noise_.unreduced(x.noise, x.digit_bound);
    return out;
  }
  if (mode == RefreshMode::plain) {
    const ckks::Ciphertext raised = step("ModRaise", [&] {
      return reduce_and_raise(s, keys, static_cast<double>(context_->ckks().prime(0)));
    });
    out.ct = step("C^-1", [&] { return back_across_lanes(raised, keys); });
    const double op = noise_.operation(plain_scale_, out.level());
    out.noise = std::sqrt(x.noise * x.noise + op * op);
    return out;
  }
  const ckks::Ciphertext raised =
      step("ModRaise", [&] { return reduce_and_raise(s, keys, eval_scale_); });
  std::vector<ckks::Ciphertext> parts =
      step("CoeffToSlot", [&] { return to_digits(raised, keys); });
  parts[0] = step("cleaning (real part)", [&] { return clean(parts[0], keys); });
  parts[1] = step("cleaning (imaginary part)", [&] { return clean(parts[1], keys); });
  out.ct = step("L", [&] { return to_lanes(parts, keys); });
  out.noise = noise_.refreshed(x.noise);
  return out;
}

}  // namespace safhire::lanes
