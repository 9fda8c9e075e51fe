#include "safhire/ckks/bootstrap.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

std::uint32_t sum(const std::vector<std::uint32_t>& v) {
  return std::accumulate(v.begin(), v.end(), 0U);
}

}  // namespace

BootstrapParams default_bootstrap_params(const CkksParams& params, std::uint32_t slots) {
  const std::uint32_t full = params.log_n - 1;
  const std::uint32_t stages =
      slots == 0 ? full : std::min(full, static_cast<std::uint32_t>(std::bit_width(slots) - 1));
  // Groups as even as possible, the larger first.
  auto split = [stages](std::uint32_t most) {
    const std::uint32_t groups = (stages + most - 1) / most;
    std::vector<std::uint32_t> sizes(groups, stages / groups);
    for (std::uint32_t g = 0; g < stages % groups; ++g)
      ++sizes[g];
    return sizes;
  };
  BootstrapParams b;
  b.slots = slots;
  b.cts_split = split(5);
  b.stc_split = split(5);
  const bool sparse =
      params.secret == SecretDistribution::fixed_hamming_weight && params.hamming_weight <= 32;
  b.ephemeral_weight = sparse ? 0 : 32;
  b.k = 16;
  b.double_angles = 3;
  b.degree = 39;
  return b;
}

Bootstrapper::Bootstrapper(const Encoder& encoder, const Evaluator& evaluator,
                           BootstrapParams params)
    : ev_(&evaluator), params_(std::move(params)), top_(evaluator.context().max_level()) {
  const CkksContext& context = evaluator.context();
  const std::uint32_t slots = params_.slots == 0 ? context.degree() / 2 : params_.slots;
  require(slots >= 2 && slots <= context.degree() / 2 && std::has_single_bit(slots),
          ErrorCode::invalid_argument,
          "bootstrapping: the slot count must be a power of two in [2, N/2], got " +
              std::to_string(slots));
  slots_ = slots;
  const double ratio = params_.input_ratio != 0 ? params_.input_ratio
                       : params_.slim           ? std::exp2(15.0)
                                                : std::exp2(16.0 - context.params().log_n / 2);
  require(ratio >= 2, ErrorCode::invalid_argument,
          "bootstrapping: input_ratio must be at least 2 (q_0 over the input's scale)");
  input_scale_ = static_cast<double>(context.prime(0)) / ratio;
  if (params_.message_ratio == 0) params_.message_ratio = ratio;
  const auto stages = static_cast<std::uint32_t>(std::countr_zero(slots));
  const std::uint32_t gap = context.degree() / 2 / slots;
  for (std::uint32_t step = 1; step < gap; step *= 2)
    subsum_.push_back(static_cast<int>(slots * step));
  require(sum(params_.cts_split) == stages && sum(params_.stc_split) == stages,
          ErrorCode::invalid_argument,
          "bootstrapping: the CoeffToSlot and SlotToCoeff splits must cover the " +
              std::to_string(stages) + " stages of " + std::to_string(slots) + " slots");
  require(params_.k >= 1 && params_.degree >= 2, ErrorCode::invalid_argument,
          "bootstrapping: K must be at least 1 and the cosine's degree at least 2");
  sine_ = DoubleAngleSine(params_.k, params_.degree, params_.double_angles);
  require(params_.arcsine_degree == 0 || params_.message_ratio >= 8, ErrorCode::invalid_argument,
          "bootstrapping: the arcsine needs q_0 / max |m| of at least 8");
  require(params_.ephemeral_weight <= context.degree(), ErrorCode::invalid_argument,
          "bootstrapping: the ephemeral secret's weight must be at most N");
  require(depth() <= top_, ErrorCode::invalid_argument,
          "bootstrapping needs " + std::to_string(depth()) + " levels above level 0, the set has " +
              std::to_string(top_));
  // The evaluation scale: EvalMod's first prime, so that its products keep the scale near the
  // primes they are rescaled by (CoeffToSlot's own primes may be of another size: its plaintexts
  // are encoded at those primes and keep any scale).
  eval_scale_ = static_cast<double>(
      context.prime(top_ - static_cast<std::uint32_t>(params_.cts_split.size())));
  const double q0 = static_cast<double>(context.prime(0));
  packed_ = params_.pack_parts && !params_.slim && gap >= 2;
  const auto cts_groups = static_cast<std::uint32_t>(params_.cts_split.size());
  const auto stc_groups = static_cast<std::uint32_t>(params_.stc_split.size());
  // Packed: CoeffToSlot's last group and SlotToCoeff's first on both halves of 2n slots.
  std::vector<std::complex<double>> cts_halves, stc_halves;
  if (packed_) {
    cts_halves.assign(cts_groups, 0.0);
    cts_halves.back() = {0, -1};
    stc_halves.assign(stc_groups, 0.0);
    stc_halves.front() = {0, 1};
  }
  cts_.emplace(encoder, DftDirection::coeff_to_slot, 0, stages, params_.cts_split, top_, slots,
               eval_scale_ / (2 * q0 * params_.k * gap), params_.max_babies, cts_halves,
               params_.lazy_matrices);
  // SlotToCoeff starts where EvalMod ends, or (slim) on the input's lowest levels.
  const std::uint32_t stc_level = params_.slim ? stc_groups : output_level() + stc_groups;
  stc_.emplace(encoder, DftDirection::slot_to_coeff, 0, stages, params_.stc_split, stc_level, slots,
               1, params_.max_babies, stc_halves, params_.lazy_matrices && !params_.slim);
  if (!packed_) {
    // The exact plaintexts -i and i (X^(N/2) negated and itself, scale 1) where they are used:
    // after CoeffToSlot and before SlotToCoeff.
    const std::vector<std::complex<double>> minus_i(slots, {0, -1}), i(slots, {0, 1});
    minus_i_ = encoder.encode(minus_i, 1.0, top_ - cts_groups, slots);
    i_ = encoder.encode(i, 1.0, params_.slim ? output_level() : stc_level, slots);
  }
  if (params_.arcsine_degree > 0) {
    // The sines of |x| <= 1 / ratio, with a little room for the noise.
    const double s = std::min(0.99, 1.05 * std::sin(kTwoPi / params_.message_ratio));
    arcsine_ = chebyshev_interpolate([](double v) { return std::asin(v) / kTwoPi; },
                                     params_.arcsine_degree, -s, s, Parity::odd);
  }
}

std::uint32_t Bootstrapper::depth() const {
  return static_cast<std::uint32_t>(params_.cts_split.size() +
                                    (params_.slim ? 0 : params_.stc_split.size())) +
         sine_.depth() + arcsine_depth();
}

std::uint32_t Bootstrapper::input_level() const {
  return params_.slim ? static_cast<std::uint32_t>(params_.stc_split.size()) : 0;
}

std::uint32_t Bootstrapper::arcsine_depth() const {
  return params_.arcsine_degree == 0 ? 0 : PolynomialEvaluator::depth(params_.arcsine_degree);
}

std::uint32_t Bootstrapper::output_level() const {
  return top_ - depth();
}

std::vector<int> Bootstrapper::rotations() const {
  auto steps = cts_->rotations();
  steps.insert(steps.end(), subsum_.begin(), subsum_.end());
  const auto more = stc_->rotations();
  steps.insert(steps.end(), more.begin(), more.end());
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

BootstrapKeys Bootstrapper::keys(KeyGenerator& generator, const SecretKey& sk) const {
  BootstrapKeys keys;
  keys.relinearization = generator.relinearization_key(sk);
  generator.add_galois_keys(keys.galois, sk, cts_->rotations(), true, top_);
  generator.add_galois_keys(keys.galois, sk, subsum_, false, top_);
  generator.add_galois_keys(keys.galois, sk, stc_->rotations(), false,
                            stc_->groups().front().level());
  if (params_.ephemeral_weight > 0) {
    const SecretKey ephemeral = generator.secret_key(params_.ephemeral_weight);
    keys.to_ephemeral = generator.switching_key(ephemeral, sk.s, 0);
    keys.from_ephemeral = generator.switching_key(sk, ephemeral.s, top_);
  }
  return keys;
}

void Bootstrapper::make_resident(const RnsOps& ops) {
  cts_->make_resident(ops);
  stc_->make_resident(ops);
  if (!packed_) {
    ckks::make_resident(ops, minus_i_);
    ckks::make_resident(ops, i_);
  }
}

std::size_t Bootstrapper::matrix_bytes() const {
  std::size_t bytes = 0;
  for (const auto* dft : {&*cts_, &*stc_}) {
    for (const LinearTransform& group : dft->groups())
      bytes += group.bytes();
  }
  return bytes;
}

std::size_t key_bytes(const BootstrapKeys& keys) {
  auto size = [](const SwitchingKey& key) {
    std::size_t words = 0;
    for (const auto* half : {&key.b, &key.a}) {
      for (const RnsPoly& digit : *half)
        words += digit.limbs() * std::size_t{digit.n};
    }
    return words * sizeof(u64);
  };
  std::size_t bytes = size(keys.relinearization);
  for (const auto& [galois, key] : keys.galois.keys)
    bytes += size(key);
  for (const auto* key : {&keys.to_ephemeral, &keys.from_ephemeral}) {
    if (key->has_value()) bytes += size(**key);
  }
  return bytes;
}

void make_resident(const RnsOps& ops, BootstrapKeys& keys) {
  make_resident(ops, keys.relinearization);
  make_resident(ops, keys.galois);
  for (auto* key : {&keys.to_ephemeral, &keys.from_ephemeral}) {
    if (key->has_value()) make_resident(ops, **key);
  }
}

void to_host(const RnsOps& ops, BootstrapKeys& keys) {
  to_host(ops, keys.relinearization);
  to_host(ops, keys.galois);
  for (auto* key : {&keys.to_ephemeral, &keys.from_ephemeral}) {
    if (key->has_value()) to_host(ops, **key);
  }
}

namespace {

// log(sinh(x) / x) for x > 0, without overflow.
double log_sinhc(double x) {
  return x + std::log1p(-std::exp(-2 * x)) - std::numbers::ln2 - std::log(x);
}

}  // namespace

double log2_failure_bound(const CkksParams& p, const BootstrapParams& boot) {
  const double n = p.degree();
  double h = boot.ephemeral_weight;
  if (h == 0)
    h = p.secret == SecretDistribution::fixed_hamming_weight ? p.hamming_weight : 2 * n / 3;
  const double terms = h, a = boot.k - 0.5;
  if (a > terms / 2) return -std::numeric_limits<double>::infinity();  // |I| <= h / 2
  // min over lambda of -lambda a + terms log(sinh(lambda / 2) / (lambda / 2)): convex, by a
  // golden-section search.
  auto f = [&](double lambda) { return -lambda * a + terms * log_sinhc(lambda / 2); };
  double lo = 1e-6, hi = 1e4;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 200; ++i) {
    const double m1 = hi - phi * (hi - lo), m2 = lo + phi * (hi - lo);
    if (f(m1) < f(m2)) {
      hi = m2;
    } else {
      lo = m1;
    }
  }
  return (f((lo + hi) / 2) + std::log(2 * n)) / std::numbers::ln2;
}

Ciphertext Bootstrapper::mod_raise(const Ciphertext& x, const BootstrapKeys& keys) const {
  require(x.slots == slots_, ErrorCode::invalid_argument,
          "bootstrapping built for " + std::to_string(slots_) + " slots, given a ciphertext of " +
              std::to_string(x.slots));
  const bool encapsulated = params_.ephemeral_weight > 0;
  require(encapsulated == (keys.to_ephemeral.has_value() && keys.from_ephemeral.has_value()),
          ErrorCode::invalid_argument,
          encapsulated ? "bootstrapping with the encapsulation needs the ephemeral secret's keys"
                       : "bootstrapping keys with an encapsulation this bootstrapper does not use");
  Ciphertext raised =
      encapsulated ? ev_->switch_key(ev_->mod_raise(ev_->switch_key(x, *keys.to_ephemeral), top_),
                                     *keys.from_ephemeral)
                   : ev_->mod_raise(x, top_);
  // Sparse slots: gap times t's part in the subring (1/gap is in CoeffToSlot's matrices).
  for (int step : subsum_)
    raised = ev_->add(raised, ev_->rotate(raised, step, keys.galois));
  raised.scale = eval_scale_;  // a label: the slots now read sigma(t) / Delta_e
  return raised;
}

std::vector<Ciphertext> Bootstrapper::coeff_to_slot(const Ciphertext& raised,
                                                    const BootstrapKeys& keys) const {
  // w = (t_i + i t_(i+N/2)) / (2 K q_0), bit-reversed; packed, (w, -i w) in 2n slots, whose sum
  // with its conjugate is (x, y).
  const Ciphertext w = cts_->apply(*ev_, raised, keys.galois);
  const Ciphertext conj = ev_->conjugate(w, keys.galois);
  if (packed_) return {ev_->add(w, conj)};
  const Ciphertext x = ev_->add(w, conj);
  // -i (w - conj(w)): the product by the exact plaintext -i.
  const Ciphertext y = ev_->multiply_plain(ev_->sub(w, conj), minus_i_);
  return {x, y};
}

void Bootstrapper::check_parts(const std::vector<Ciphertext>& parts) const {
  require(parts.size() == (packed_ ? 1U : 2U), ErrorCode::invalid_argument,
          std::string("bootstrapping: ") +
              (packed_ ? "packed parts are one ciphertext" : "the parts are two ciphertexts") +
              ", given " + std::to_string(parts.size()));
}

Ciphertext Bootstrapper::eval_mod(const Ciphertext& v, const BootstrapKeys& keys) const {
  const SwitchingKey& rlk = keys.relinearization;
  Ciphertext c = sine_.evaluate(*ev_, v, rlk);
  if (params_.arcsine_degree > 0) return PolynomialEvaluator(*ev_).evaluate(c, arcsine_, rlk);
  c.scale *= kTwoPi;  // a label: the slots now read sin(2 pi v) / (2 pi)
  return c;
}

Ciphertext Bootstrapper::slot_to_coeff_first(const Ciphertext& x, const BootstrapKeys& keys) const {
  require(params_.slim, ErrorCode::invalid_argument,
          "SlotToCoeff comes first only in the slim order");
  require(x.level() >= input_level(), ErrorCode::invalid_argument,
          "slim bootstrapping needs its input at level " + std::to_string(input_level()) +
              " or above, got " + std::to_string(x.level()));
  return stc_->apply(*ev_, ev_->drop_to_level(x, input_level()), keys.galois);
}

Ciphertext Bootstrapper::recombine(const std::vector<Ciphertext>& parts, double input_scale) const {
  require(params_.slim, ErrorCode::invalid_argument, "recombine ends the slim order");
  check_parts(parts);
  Ciphertext out = ev_->add(parts[0], ev_->multiply_plain(parts[1], i_));
  // The slots read sigma(m) / q_0 of the input's m: relabelled, sigma(m) / Delta.
  out.scale *= input_scale / static_cast<double>(ev_->context().prime(0));
  return out;
}

Ciphertext Bootstrapper::slot_to_coeff(const std::vector<Ciphertext>& parts, double input_scale,
                                       const BootstrapKeys& keys) const {
  require(!params_.slim, ErrorCode::invalid_argument,
          "in the slim order SlotToCoeff comes first (slot_to_coeff_first)");
  check_parts(parts);
  Ciphertext out;
  if (packed_) {
    // (G x, i G y) in 2n slots; with its rotation by n, G (x + i y) in both halves: n slots.
    Ciphertext halves = stc_->apply(*ev_, parts[0], keys.galois, 0, 1);
    out = ev_->add(halves, ev_->rotate(halves, static_cast<int>(slots_), keys.galois));
    out.slots = slots_;
    if (stc_->depth() > 1) out = stc_->apply(*ev_, out, keys.galois, 1, stc_->depth());
  } else {
    const Ciphertext iy = ev_->multiply_plain(parts[1], i_);
    out = stc_->apply(*ev_, ev_->add(parts[0], iy), keys.galois);
  }
  // The slots read sigma(m) / q_0: relabelled, sigma(m) / Delta.
  out.scale *= input_scale / static_cast<double>(ev_->context().prime(0));
  return out;
}

Ciphertext Bootstrapper::bootstrap(const Ciphertext& x, const BootstrapKeys& keys) const {
  // Named ranges (NVTX on CUDA), so that a profiler's timeline reads like the breakdown.
  const RnsOps& ops = ev_->ops();
  const StepRange whole(ops, "ckks bootstrap");
  require(x.slots == slots_, ErrorCode::invalid_argument,
          "bootstrapping built for " + std::to_string(slots_) + " slots, given a ciphertext of " +
              std::to_string(x.slots));
  require(x.level() >= input_level(), ErrorCode::invalid_argument,
          "bootstrapping needs its input at level " + std::to_string(input_level()) +
              " or above, got " + std::to_string(x.level()));
  // At input_level() the scale is the caller's: at most twice input_scale(), or the sine would
  // see messages too close to q_0 and lose them.
  require(
      x.level() > input_level() || x.scale <= 2 * input_scale_, ErrorCode::invalid_argument,
      "bootstrapping at level " + std::to_string(input_level()) + " takes a scale of at most " +
          "q_0 / " +
          std::to_string(std::lround(static_cast<double>(ev_->context().prime(0)) / input_scale_)) +
          " there; bootstrap from a level above, where the scale is brought down first");
  // From above input_level(): there, at input_scale(), by one exact constant product.
  Ciphertext in = x;
  if (x.level() > input_level()) {
    const std::uint32_t at = input_level() + 1;
    const double q = static_cast<double>(ev_->context().prime(at));
    in = ev_->rescale(ev_->multiply_constant_at(x, 1.0, input_scale_ * q / x.scale, at));
    in.scale = input_scale_;  // to rounding
  }
  Ciphertext low = in;
  if (params_.slim) {
    const StepRange step(ops, "ckks SlotToCoeff");
    low = slot_to_coeff_first(in, keys);
  }
  Ciphertext raised;
  {
    const StepRange step(ops, "ckks ModRaise");
    raised = mod_raise(low, keys);
  }
  std::vector<Ciphertext> parts;
  {
    const StepRange step(ops, "ckks CoeffToSlot");
    parts = coeff_to_slot(raised, keys);
  }
  {
    const StepRange step(ops, "ckks EvalMod");
    for (Ciphertext& part : parts)
      part = eval_mod(part, keys);
  }
  if (params_.slim) return recombine(parts, in.scale);
  const StepRange step(ops, "ckks SlotToCoeff");
  return slot_to_coeff(parts, in.scale, keys);
}

}  // namespace safhire::ckks
