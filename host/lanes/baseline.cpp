#include "safhire/lanes/baseline.hpp"

#include <algorithm>
#include <bit>
#include <complex>
#include <string>

#include "refresh_steps.hpp"
#include "safhire/core/error.hpp"

namespace safhire::lanes {

namespace {

// L's groups for lanes of degree lane_degree under make_lane_space's split.
std::uint32_t l_groups(std::uint32_t lane_degree, std::uint32_t max_stages) {
  const auto stages = static_cast<std::uint32_t>(std::countr_zero(lane_degree)) - 1;
  return (stages + max_stages - 1) / max_stages;
}

}  // namespace

LaneSpace make_baseline_space(std::string name, std::uint32_t log_n, std::uint32_t n,
                              LaneSpaceOptions options) {
  require(log_n >= 10 && log_n <= 17 && std::has_single_bit(n) && n >= 4 && n <= (1U << log_n) / 8,
          ErrorCode::invalid_parameters,
          "baseline space: n must be a power of two in [4, N/8], got " + std::to_string(n));
  require(options.max_stages >= 1 && options.max_stages <= 8, ErrorCode::invalid_parameters,
          "baseline space: at most 1 .. 8 stages a group");
  // Where the caller keeps make_lane_space's defaults, the primes of the wide lane spaces (50-bit
  // cleaning, 52-bit CoeffToSlot) and up to 6 stages a group: the baseline's longer chain then
  // keeps 128 bits with at most 10 key-switching digits at N = 2^16 (dnum 4 up to n = 64).
  const LaneSpaceOptions defaults;
  if (options.clean_bits == defaults.clean_bits) options.clean_bits = 50;
  if (options.cts_bits == defaults.cts_bits) options.cts_bits = 52;
  if (options.max_stages == defaults.max_stages) options.max_stages = 6;
  const std::uint32_t g = l_groups(2 * n, options.max_stages);
  options.products_per_refresh = 1 + 2 * g;
  options.conversion_levels = 2 * g + 1;
  // Smaller primes where the baseline's extra levels are: its truncation's on L's (as the lanes'
  // L at the bottom of the chain), the conversions at the top on 30 bits (a group's diagonals
  // encoded at its prime: the digits / K, at most 1, at the cleaning's scale, keep about 2^-25 of
  // precision), so that its longer chain keeps 128 bits.
  options.truncation_levels = 2 * g;
  if (options.truncation_bits == 0) options.truncation_bits = options.l_bits;
  if (options.conversion_bits == 0) options.conversion_bits = 30;
  options.t_degree = 1;
  options.digits = DigitForm::canonical;
  return make_lane_space(std::move(name), log_n, 2 * n, 2, options);
}

bool is_baseline_space(const LaneSpace& space) {
  const auto g = static_cast<std::uint32_t>(space.l_split.size());
  return space.base == 2 && space.t_degree == 1 && g >= 1 &&
         space.products_per_refresh == 1 + 2 * g && space.conversion_levels == 2 * g + 1;
}

Mod2nBaseline::Mod2nBaseline(const LaneContext& context, const ckks::RnsOps& ops,
                             RefreshParams params)
    : context_(&context),
      params_(params),
      encoder_(context.ckks(), ops),
      evaluator_(context.ckks(), ops) {
  const LaneSpace& space = context.space();
  require(is_baseline_space(space), ErrorCode::invalid_argument,
          "mod-2^n baseline: space '" + space.name +
              "' does not have the baseline's layout (make_baseline_space)");
  const ckks::CkksContext& ckks = context.ckks();
  bits_ = space.lane_degree / 2;
  mpz_ui_pow_ui(modulus_.get_mpz_t(), 2, bits_);
  const auto& plan = space.cleaning;
  sine_ = ckks::DoubleAngleSine(plan.k, plan.degree, plan.double_angles);
  const std::uint32_t top = space.top(), stages = space.ckks.log_n - 1;
  const std::uint32_t lane_stages = space.l_stages();
  const auto g = static_cast<std::uint32_t>(space.l_split.size());
  const auto cts_groups = static_cast<std::uint32_t>(space.cts_split.size());
  const std::vector<std::uint32_t> reversed(space.l_split.rbegin(), space.l_split.rend());
  const std::uint32_t babies = params_.max_babies;
  const bool lazy = params_.lazy_matrices;
  using ckks::DftDirection;

  // 1. The truncation: L^-1 (x 1/2: w + conj(w) is the real part) and L, from truncation_level().
  const std::uint32_t cut_level = truncation_level();
  cut_inverse_.emplace(encoder_, DftDirection::coeff_to_slot, 0, lane_stages, reversed, cut_level,
                       0, 0.5, babies);
  cut_.emplace(encoder_, DftDirection::slot_to_coeff, 0, lane_stages, space.l_split, cut_level - g,
               0, 1.0, babies);
  // 2. C at the refresh level.
  c_.emplace(encoder_, DftDirection::slot_to_coeff, lane_stages, stages, space.c_split,
             space.refresh_level(), 0, 1.0, babies);
  // 3. CoeffToSlot at the top, as the lanes' (refresh.cpp): the real part reads W / K, at the
  // scale the cleaning takes its input at (its first prime: the conversions between keep it).
  const double q0 = static_cast<double>(ckks.prime(0));
  eval_scale_ = static_cast<double>(ckks.prime(space.rest_level() + g + plan.depth()));
  cts_.emplace(encoder_, DftDirection::coeff_to_slot, 0, stages, space.cts_split, top, 0,
               eval_scale_ / (2 * q0 * plan.k), babies, std::vector<std::complex<double>>{}, lazy);
  // 4. L, the product by sigma(t) (one level), L^-1 (x 1/2).
  const std::uint32_t up_level = top - cts_groups;
  up_.emplace(encoder_, DftDirection::slot_to_coeff, 0, lane_stages, space.l_split, up_level, 0,
              1.0, babies, std::vector<std::complex<double>>{}, lazy);
  const std::uint32_t t_level = up_level - g;
  down_.emplace(encoder_, DftDirection::coeff_to_slot, 0, lane_stages, reversed, t_level - 1, 0,
                0.5, babies, std::vector<std::complex<double>>{}, lazy);
  // 5. The cleaning from t_level - 1 - g down to L's level, then L to the rest level.
  const std::uint32_t l_level = space.rest_level() + g;
  require(t_level - 1 - g - plan.depth() == l_level, ErrorCode::internal,
          "mod-2^n baseline: the cleaning does not end where L starts");
  l_.emplace(encoder_, DftDirection::slot_to_coeff, 0, lane_stages, space.l_split, l_level, 0, 1.0,
             babies);

  // sigma(t), t = Y - 2 in every lane: form-B slots of the digits (-2, 1, 0, ...), at t_level's
  // prime as its scale (the product and its rescale keep the ciphertext's scale).
  const LaneEncoder lane_encoder(context, ops);
  LaneDigits t(space.lanes(), std::vector<std::int64_t>(space.lane_degree, 0));
  for (auto& row : t) {
    row[0] = -2;
    row[1] = 1;
  }
  const auto slots = lane_encoder.slots(t);
  std::vector<std::complex<double>> values(slots.size());
  std::transform(slots.begin(), slots.end(), values.begin(), [](const auto& z) {
    return std::complex<double>(static_cast<double>(z.real()), static_cast<double>(z.imag()));
  });
  sigma_t_ = encoder_.encode(values, static_cast<double>(ckks.prime(t_level)), t_level);
}

std::uint32_t Mod2nBaseline::truncation_level() const {
  const LaneSpace& space = context_->space();
  return space.refresh_level() + 2 * static_cast<std::uint32_t>(space.l_split.size());
}

std::vector<int> Mod2nBaseline::rotations() const {
  std::vector<int> all;
  for (const auto* dft : {&cut_inverse_, &cut_, &c_, &cts_, &up_, &down_, &l_}) {
    const auto r = (*dft)->rotations();
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

LaneKeys Mod2nBaseline::keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk) const {
  const LaneSpace& space = context_->space();
  LaneKeys keys;
  keys.relinearization = generator.relinearization_key(sk);
  // Highest level first: a key made at a higher level serves the lower uses; the conjugation's at
  // the top serves all three real parts.
  generator.add_galois_keys(keys.galois, sk, cts_->rotations(), true, space.top());
  for (const auto* dft : {&up_, &down_, &l_, &cut_inverse_, &cut_, &c_})
    generator.add_galois_keys(keys.galois, sk, (*dft)->rotations(), false,
                              (*dft)->groups().front().level());
  if (space.ephemeral_weight > 0) {
    const ckks::SecretKey ephemeral = generator.secret_key(space.ephemeral_weight);
    keys.to_ephemeral = generator.switching_key(ephemeral, sk.s, 0);
    keys.from_ephemeral = generator.switching_key(sk, ephemeral.s, space.top());
  }
  return keys;
}

std::size_t Mod2nBaseline::matrix_bytes() const {
  std::size_t bytes = 0;
  for (const auto* dft : {&cut_inverse_, &cut_, &c_, &cts_, &up_, &down_, &l_}) {
    for (const auto& group : (*dft)->groups())
      bytes += group.bytes();
  }
  return bytes;
}

void Mod2nBaseline::make_resident(const ckks::RnsOps& ops) {
  for (auto* dft : {&cut_inverse_, &cut_, &c_, &cts_, &up_, &down_, &l_})
    (*dft)->make_resident(ops);
  ckks::make_resident(ops, sigma_t_);
}

LaneDigits Mod2nBaseline::digits(std::span<const mpz_class> values) const {
  const LaneSpace& space = context_->space();
  require(values.size() <= space.lanes(), ErrorCode::invalid_argument,
          "mod-2^n baseline: " + std::to_string(values.size()) + " integers for " +
              std::to_string(space.lanes()) + " lanes");
  LaneDigits out(space.lanes(), std::vector<std::int64_t>(space.lane_degree, 0));
  for (std::size_t r = 0; r < values.size(); ++r) {
    mpz_class v = values[r] % modulus_;
    if (v < 0) v += modulus_;
    for (std::uint32_t k = 0; k < bits_; ++k)
      out[r][k] = mpz_tstbit(v.get_mpz_t(), k);
  }
  return out;
}

std::vector<mpz_class> Mod2nBaseline::values(const LaneDecoding& decoded) const {
  std::vector<mpz_class> out;
  out.reserve(decoded.digits.size());
  for (const auto& row : decoded.digits) {
    // Digits k >= n weigh multiples of 2^n: only the first n count.
    mpz_class v = 0;
    for (std::uint32_t k = std::min<std::uint32_t>(bits_, static_cast<std::uint32_t>(row.size()));
         k-- > 0;) {
      v *= 2;
      v += static_cast<long>(row[k]);
    }
    v %= modulus_;
    if (v < 0) v += modulus_;
    out.push_back(v);
  }
  return out;
}

void Mod2nBaseline::check_space(const LaneCiphertext& x) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "mod-2^n baseline: a ciphertext of another space");
  require(x.ct.size() == 2 && x.ct.slots == context_->space().degree() / 2,
          ErrorCode::invalid_argument,
          "mod-2^n baseline: a relinearized ciphertext of N/2 slots expected");
}

LaneCiphertext Mod2nBaseline::multiply(const LaneCiphertext& x, const LaneCiphertext& y,
                                       const ckks::SwitchingKey& rlk) const {
  check_space(x);
  check_space(y);
  require(x.level() == y.level(), ErrorCode::invalid_argument,
          "mod-2^n baseline: operands at levels " + std::to_string(x.level()) + " and " +
              std::to_string(y.level()));
  require(x.level() > truncation_level(), ErrorCode::needs_refresh,
          "mod-2^n baseline: a product at level " + std::to_string(x.level()) +
              " would land below the truncation level " + std::to_string(truncation_level()));
  LaneCiphertext out;
  out.ct = evaluator_.relinearize_rescale(evaluator_.multiply(x.ct, y.ct), rlk);
  out.space = x.space;
  // Digits below n of each operand (the rest zero): the acyclic product's digits.
  out.digit_bound = static_cast<double>(bits_) * x.digit_bound * y.digit_bound;
  out.noise = 0;  // no model of its own (see the top of baseline.hpp)
  return out;
}

ckks::Ciphertext Mod2nBaseline::real_part(const ckks::Ciphertext& w,
                                          const ckks::GaloisKeys& keys) const {
  return evaluator_.add(w, evaluator_.conjugate(w, keys));
}

LaneCiphertext Mod2nBaseline::refresh(const LaneCiphertext& x, const LaneKeys& keys,
                                      const LaneRefresher::StepDone& done) const {
  check_space(x);
  const std::uint32_t cut_level = truncation_level();
  require(x.level() >= cut_level, ErrorCode::invalid_argument,
          "mod-2^n baseline: the refresh takes its input at level " + std::to_string(cut_level) +
              " or above, got " + std::to_string(x.level()));
  const ckks::RnsOps& ops = evaluator_.ops();
  const ckks::StepRange whole(ops, "baseline refresh");
  auto step = [&](const char* name, auto fn) {
    const std::string range = std::string("baseline ") + name;
    auto result = [&] {
      const ckks::StepRange r(ops, range.c_str());
      return fn();
    }();
    if (done) done(name);
    return result;
  };
  const ckks::Ciphertext truncated = step("truncation", [&] {
    const ckks::Ciphertext in =
        x.level() == cut_level ? x.ct : evaluator_.drop_to_level(x.ct, cut_level);
    return cut_->apply(evaluator_,
                       real_part(cut_inverse_->apply(evaluator_, in, keys.galois), keys.galois),
                       keys.galois);
  });
  const ckks::Ciphertext s =
      step("C", [&] { return c_->apply(evaluator_, truncated, keys.galois); });
  const ckks::Ciphertext raised = step("ModRaise", [&] {
    const ckks::Plaintext t_inverse =
        detail::reduction_plaintext(*context_, ops, s.scale, true, bits_);
    ckks::Ciphertext low = evaluator_.rescale(evaluator_.multiply_plain(s, t_inverse));
    low.scale = static_cast<double>(context_->ckks().prime(0));
    ckks::Ciphertext r = detail::raise(*context_, evaluator_, low, keys);
    r.scale = eval_scale_;  // a label: CoeffToSlot's factor leaves W / (2 K)
    return r;
  });
  const ckks::Ciphertext w = step("CoeffToSlot", [&] {
    return real_part(cts_->apply(evaluator_, raised, keys.galois), keys.galois);
  });
  const ckks::Ciphertext z = step("x t", [&] {
    const ckks::Ciphertext b = up_->apply(evaluator_, w, keys.galois);
    const ckks::Ciphertext bt = evaluator_.rescale(evaluator_.multiply_plain(b, sigma_t_));
    return real_part(down_->apply(evaluator_, bt, keys.galois), keys.galois);
  });
  const ckks::Ciphertext cleaned = step("cleaning", [&] {
    return detail::clean(*context_, evaluator_, sine_, z, keys.relinearization);
  });
  LaneCiphertext out;
  out.ct = step("L", [&] { return l_->apply(evaluator_, cleaned, keys.galois); });
  out.space = x.space;
  out.digit_bound = context_->space().rest_digit_bound();
  out.noise = 0;
  return out;
}

}  // namespace safhire::lanes
