#include "safhire/lanes/digits.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <string>

#include "refresh_steps.hpp"
#include "safhire/core/error.hpp"
#include "safhire/lanes/integers.hpp"
#include "safhire/lanes/lane_space.hpp"

namespace safhire::lanes {

namespace {

// The digits of each lane's integer, canonical (lane_space.hpp), lanes() rows.
LaneDigits canonical_rows(const LaneSpace& space, std::span<const mpz_class> integers) {
  require(integers.size() <= space.lanes(), ErrorCode::invalid_argument,
          "digit encryption: " + std::to_string(integers.size()) + " integers for " +
              std::to_string(space.lanes()) + " lanes");
  LaneDigits rows(space.lanes());
  for (std::uint32_t r = 0; r < space.lanes(); ++r)
    rows[r] = to_digits(r < integers.size() ? integers[r] : mpz_class(0), space.lane_degree,
                        space.base, DigitForm::canonical);
  return rows;
}

// A pattern over one lane's block of n/2 slots, times `factor`, in every block: N/2 slot values.
std::vector<double> tiled(const LaneSpace& space, const std::vector<double>& block, double factor) {
  std::vector<double> values(space.degree() / 2, 0.0);
  for (std::uint32_t b = 0; b < space.lanes(); ++b)
    for (std::size_t i = 0; i < block.size(); ++i)
      values[b * space.lane_slots() + i] = block[i] * factor;
  return values;
}

// The slot of digit t < n/2 within its lane's block (bit-reversed).
std::uint32_t position_of(const LaneSpace& space, std::uint32_t t) {
  return slot_of_digit(space, 0, t) - block_of_lane(space, 0) * space.lane_slots();
}

}  // namespace

// --- encryption -----------------------------------------------------------------------------

DigitEncryptor::DigitEncryptor(const LaneContext& context, const ckks::RnsOps& ops,
                               core::RandomSource& random)
    : context_(&context), encoder_(context.ckks(), ops), encryptor_(context.ckks(), ops, random) {}

std::pair<ckks::Plaintext, ckks::Plaintext> DigitEncryptor::encode(
    std::span<const mpz_class> integers, std::uint32_t level) const {
  const LaneSpace& space = context_->space();
  const std::uint32_t at = level == 0 ? space.top() : level;
  require(at <= space.top(), ErrorCode::invalid_argument,
          "digit encryption: level " + std::to_string(level) + " above the chain's top");
  const LaneDigits rows = canonical_rows(space, integers);
  const std::uint32_t half = space.lane_slots();
  std::vector<double> low(space.degree() / 2), high(space.degree() / 2);
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    for (std::uint32_t t = 0; t < half; ++t) {
      const std::uint32_t s = slot_of_digit(space, r, t);
      low[s] = static_cast<double>(rows[r][t]);
      high[s] = static_cast<double>(rows[r][t + half]);
    }
  }
  const double scale = digit_scale(*context_, at);
  return {encoder_.encode(low, scale, at), encoder_.encode(high, scale, at)};
}

DigitSlots DigitEncryptor::wrap(ckks::Ciphertext low, ckks::Ciphertext high) const {
  DigitSlots out;
  const NoiseModel noise(*context_);
  out.noise = noise.fresh() * context_->rest_scale() / low.scale;
  out.low = std::move(low);
  out.high = std::move(high);
  out.digit_bound = std::max(1.0, static_cast<double>(context_->space().base) - 1);
  out.space = context_->fingerprint();
  out.canonical = true;
  return out;
}

DigitSlots DigitEncryptor::encrypt(std::span<const mpz_class> integers, const ckks::PublicKey& pk,
                                   std::uint32_t level) const {
  const auto [low, high] = encode(integers, level);
  return wrap(encryptor_.encrypt(low, pk), encryptor_.encrypt(high, pk));
}

DigitSlots DigitEncryptor::encrypt(std::span<const mpz_class> integers, const ckks::SecretKey& sk,
                                   std::uint32_t level) const {
  const auto [low, high] = encode(integers, level);
  return wrap(encryptor_.encrypt(low, sk), encryptor_.encrypt(high, sk));
}

// --- decryption -----------------------------------------------------------------------------

DigitDecryptor::DigitDecryptor(const LaneContext& context, const ckks::RnsOps& ops,
                               const ckks::SecretKey& sk)
    : context_(&context), ops_(&ops), sk_(&sk), encoder_(context.ckks(), ops) {}

std::vector<std::complex<double>> DigitDecryptor::slots(const ckks::Ciphertext& ct) const {
  return encoder_.decode(ckks::decrypt(context_->ckks(), *ops_, ct, *sk_));
}

LaneValuesDecoding DigitDecryptor::decrypt(const LaneValues& x) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "lane values of another lane space");
  const LaneSpace& space = context_->space();
  const auto z = slots(x.ct);
  LaneValuesDecoding out;
  out.values.resize(space.lanes());
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    const std::complex<double> v = z[block_of_lane(space, r) * space.lane_slots()];
    out.values[r] = std::llround(v.real());
    out.max_error =
        std::max({out.max_error, std::fabs(v.real() - std::round(v.real())), std::fabs(v.imag())});
  }
  return out;
}

DigitSlotsDecoding DigitDecryptor::decrypt(const DigitSlots& x) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "digits of another lane space");
  const LaneSpace& space = context_->space();
  const auto low = slots(x.low), high = slots(x.high);
  const std::uint32_t half = space.lane_slots();
  DigitSlotsDecoding out;
  out.digits.assign(space.lanes(), std::vector<std::int64_t>(space.lane_degree));
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    for (std::uint32_t t = 0; t < half; ++t) {
      const std::uint32_t s = slot_of_digit(space, r, t);
      for (const auto& [v, digit] : {std::pair{low[s], t}, std::pair{high[s], t + half}}) {
        out.digits[r][digit] = std::llround(v.real());
        out.max_error = std::max(
            {out.max_error, std::fabs(v.real() - std::round(v.real())), std::fabs(v.imag())});
      }
    }
    out.integers.push_back(from_digits(out.digits[r], space.base));
  }
  return out;
}

// --- the maps on integer points -------------------------------------------------------------

std::uint32_t DigitEvaluator::IntegerMap::depth() const {
  return series.coeffs.empty() ? 1 : ckks::PolynomialEvaluator::depth(series);
}

DigitEvaluator::IntegerMap DigitEvaluator::integer_map(std::int64_t lo,
                                                       const std::vector<double>& values) {
  IntegerMap f;
  const auto count = static_cast<std::int64_t>(values.size());
  // Lagrange's form through the points, in long double.
  auto lagrange = [lo, count, &values](long double x) {
    long double sum = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      long double term = values[static_cast<std::size_t>(i)];
      for (std::int64_t j = 0; j < count; ++j)
        if (j != i)
          term *= (x - static_cast<long double>(lo + j)) / static_cast<long double>(i - j);
      sum += term;
    }
    return sum;
  };
  bool quadratic = false;
  if (lo == -1 && count == 3) {
    const double c0 = values[1], c1 = (values[2] - values[0]) / 2,
                 c2 = (values[2] + values[0]) / 2 - values[1];
    for (double factor = 1; factor <= 8 && !quadratic; factor *= 2) {
      auto integral = [](double v) { return v == std::round(v); };
      if (integral(factor * c0) && integral(factor * c1) && integral(factor * c2)) {
        quadratic = true;
        f.m2 = factor * c2;
        f.m1 = factor * c1;
        f.m0 = factor * c0;
        f.factor = factor;
      }
    }
  }
  if (!quadratic) {
    f.series =
        ckks::chebyshev_interpolate([&](double x) { return static_cast<double>(lagrange(x)); },
                                    static_cast<std::uint32_t>(count - 1), static_cast<double>(lo),
                                    static_cast<double>(lo + count - 1));
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const long double x = lo + i, h = 1e-4L;
    f.lipschitz = std::max(
        f.lipschitz, static_cast<double>(std::fabs((lagrange(x + h) - lagrange(x - h)) / (2 * h))));
  }
  return f;
}

// --- the evaluator --------------------------------------------------------------------------

double digit_scale(const LaneContext& context, std::uint32_t level) {
  require(level <= context.space().top(), ErrorCode::invalid_argument,
          "digit scale: level " + std::to_string(level) + " above the chain's top");
  double scale = std::ldexp(static_cast<double>(context.ckks().prime(0)), -8);
  for (std::uint32_t l = 1; l <= level; ++l)
    scale = std::sqrt(scale * static_cast<double>(context.ckks().prime(l)));
  return scale;
}

DigitEvaluator::DigitEvaluator(const LaneContext& context, const ckks::RnsOps& ops)
    : context_(&context),
      encoder_(context.ckks(), ops),
      evaluator_(context.ckks(), ops),
      noise_(context),
      stages_(context.space().l_stages()) {
  const LaneSpace& space = context.space();
  require(space.t_degree == 1, ErrorCode::unsupported,
          "digit operations: integer spaces only (a field space's lanes hold polynomials)");
  require(space.base <= 16, ErrorCode::unsupported,
          "digit operations: beta = " + std::to_string(space.base) +
              " > 16, whose per-digit interpolants would lose the digits to rounding");
  const auto beta = static_cast<std::int64_t>(space.base);
  std::vector<double> wrap(static_cast<std::size_t>(beta) + 1, 0.0), clamp(wrap);
  wrap[0] = 1;
  for (std::int64_t x = 0; x < beta; ++x)
    clamp[static_cast<std::size_t>(x + 1)] = static_cast<double>(x);
  wrap_ = integer_map(-1, wrap);
  clamp_ = integer_map(-1, clamp);
  const std::int64_t reach = beta == 2 ? 1 : beta;
  std::vector<double> lt, eq;
  for (std::int64_t d = -reach; d <= reach; ++d) {
    lt.push_back(d < 0 ? 1.0 : 0.0);
    eq.push_back(d == 0 ? 1.0 : 0.0);
  }
  lt_ = integer_map(-reach, lt);
  eq_ = integer_map(-reach, eq);
}

std::vector<int> DigitEvaluator::rotations() const {
  std::vector<int> steps;
  for (std::uint32_t k = 0; k < stages_; ++k) {
    steps.push_back(1 << k);
    steps.push_back(-(1 << k));  // to_digits' prefix moves sources up
  }
  return steps;
}

void DigitEvaluator::add_keys(ckks::KeyGenerator& generator, const ckks::SecretKey& sk,
                              ckks::GaloisKeys& keys) const {
  generator.add_galois_keys(keys, sk, rotations(), false);
}

std::uint32_t DigitEvaluator::equal_depth() const {
  // The predicate, the tree and high over low; for beta = 2 the closing by 1 - (w_a - w_b)^2.
  const std::uint32_t eq = eq_.depth() + stages_ + 1;
  return context_->space().base == 2 ? std::max(eq, wrap_.depth() + 1) + 1 : eq;
}

std::uint32_t DigitEvaluator::less_than_depth() const {
  // The predicates, the tree and high over low, then the closing by (1 - w_a)(1 - w_b).
  const std::uint32_t lt = std::max(lt_.depth(), eq_.depth()) + stages_ + 1;
  return std::max(lt, wrap_.depth() + 1) + 1;
}

std::uint32_t DigitEvaluator::digit_depth(std::uint32_t t) const {
  return (t == 0 ? clamp_.depth() : 0) + 1;
}

std::uint32_t DigitEvaluator::bit_depth(std::uint64_t j) const {
  const auto k = static_cast<std::uint64_t>(std::countr_zero(context_->space().base));
  if (j == k * context_->space().lane_degree) return wrap_.depth() + 1;
  if (context_->space().base == 2) return digit_depth(static_cast<std::uint32_t>(j));
  return clamp_.depth() + 1;  // a bit's interpolant has the clamp's points
}

ckks::Ciphertext DigitEvaluator::moved(const ckks::Ciphertext& x, const ckks::Ciphertext& y) const {
  return detail::aligned(context_->ckks(), evaluator_, x, y).first;
}

DigitEvaluator::Part DigitEvaluator::times(const Part& x, double m) const {
  if (m == 1) return x;
  return {evaluator_.multiply_constant(x.ct, m, 1.0), x.noise * std::fabs(m), x.factor * m};
}

DigitEvaluator::Part DigitEvaluator::apply(const IntegerMap& f, const Part& x,
                                           const ckks::SwitchingKey& rlk) const {
  // f acts on the value: x's factor first taken out (it is 1 wherever a map is applied here).
  require(x.factor == 1, ErrorCode::internal, "digit map on a scaled operand");
  Part out;
  out.noise = f.lipschitz * x.noise;
  const std::uint32_t level = x.ct.level() - f.depth();
  if (f.series.coeffs.empty()) {
    // m2 x^2 + m1 x + m0 = F f(x): x^2 lands on the next level's scale, x is moved there by one
    // constant product, the integer products are exact.
    const ckks::Ciphertext square =
        evaluator_.relinearize_rescale(evaluator_.multiply(x.ct, x.ct), rlk);
    ckks::Ciphertext y = f.m2 == 1 ? square : evaluator_.multiply_constant(square, f.m2, 1.0);
    if (f.m1 != 0)
      y = evaluator_.add(y, evaluator_.multiply_constant(moved(x.ct, square), f.m1, 1.0));
    out.ct = f.m0 == 0 ? y : evaluator_.add_constant(y, f.m0);
    out.factor = f.factor;
  } else {
    const ckks::PolynomialEvaluator poly(evaluator_);
    out.ct = poly.evaluate(x.ct, f.series, rlk, digit_scale(*context_, level));
  }
  out.noise += noise_.operation(out.ct.scale, out.ct.level());
  return out;
}

DigitEvaluator::Part DigitEvaluator::multiply(const Part& x, const Part& y,
                                              const ckks::SwitchingKey& rlk) const {
  const auto [a, b] = detail::aligned(context_->ckks(), evaluator_, x.ct, y.ct);
  Part out;
  out.ct = evaluator_.relinearize_rescale(evaluator_.multiply(a, b), rlk);
  // Both values in [0, 1] up to their errors.
  out.noise = x.noise + y.noise + noise_.operation(out.ct.scale, out.ct.level());
  out.factor = x.factor * y.factor;
  return out;
}

DigitEvaluator::Part DigitEvaluator::add(const Part& x, const Part& y) const {
  // One factor for both (the larger is a power-of-two multiple of the smaller).
  const Part xs = times(x, std::max(1.0, y.factor / x.factor));
  const Part ys = times(y, std::max(1.0, x.factor / y.factor));
  const auto [a, b] = detail::aligned(context_->ckks(), evaluator_, xs.ct, ys.ct);
  return {evaluator_.add(a, b), x.noise + y.noise, xs.factor};
}

DigitEvaluator::Part DigitEvaluator::sub(const Part& x, const Part& y) const {
  return add(x, {evaluator_.negate(y.ct), y.noise, y.factor});
}

DigitEvaluator::Part DigitEvaluator::from_constant(double c, const Part& x) const {
  return {evaluator_.add_constant(evaluator_.negate(x.ct), c * x.factor), x.noise, x.factor};
}

DigitEvaluator::Part DigitEvaluator::rotate(const Part& x, int step,
                                            const ckks::GaloisKeys& keys) const {
  return {evaluator_.rotate(x.ct, step, keys),
          std::hypot(x.noise, noise_.operation(x.ct.scale, x.ct.level())), x.factor};
}

DigitEvaluator::Part DigitEvaluator::masked(const Part& x, const std::vector<double>& block) const {
  const LaneSpace& space = context_->space();
  const std::vector<double> mask = tiled(space, block, 1.0);
  const std::uint32_t level = x.ct.level();
  // The mask at the scale that lands the product on the next level's digit scale.
  const double mask_scale = digit_scale(*context_, level - 1) *
                            static_cast<double>(context_->ckks().prime(level)) / x.ct.scale;
  ckks::Plaintext plain = encoder_.encode(mask, mask_scale, level);
  ckks::make_resident(evaluator_.ops(), plain);  // where the ciphertext lives (a device's)
  Part out;
  out.ct = evaluator_.rescale(evaluator_.multiply_plain(x.ct, plain));
  out.ct.scale = digit_scale(*context_, level - 1);  // to rounding
  out.noise = x.noise + noise_.operation(out.ct.scale, out.ct.level());
  out.factor = x.factor;
  return out;
}

DigitEvaluator::Part DigitEvaluator::isolate(const Part& x, std::uint32_t position,
                                             const ckks::GaloisKeys& keys) const {
  std::vector<double> block(context_->space().lane_slots(), 0.0);
  block[position] = 1;
  Part out = masked(x, block);
  for (std::uint32_t k = 0; (position >> k) != 0; ++k)
    if (((position >> k) & 1U) != 0) out = rotate(out, 1 << k, keys);
  return out;
}

void DigitEvaluator::check(const DigitSlots& a, std::uint32_t depth, const char* what) const {
  require(a.space == context_->fingerprint(), ErrorCode::size_mismatch,
          std::string(what) + ": digits of another lane space");
  require(a.canonical, ErrorCode::invalid_argument,
          std::string(what) +
              ": the digits are not canonical (to_slots gives redundant digits; DigitEncryptor "
              "makes canonical ones)");
  const std::uint32_t level = std::min(a.low.level(), a.high.level());
  require(level >= depth, ErrorCode::invalid_argument,
          std::string(what) + " takes " + std::to_string(depth) +
              " levels; the digits are at level " + std::to_string(level));
  for (const ckks::Ciphertext* part : {&a.low, &a.high})
    require(detail::same_scale(part->scale, digit_scale(*context_, part->level())),
            ErrorCode::invalid_argument,
            std::string(what) + ": digits not at their level's digit scale (digit_scale)");
}

DigitEvaluator::Part DigitEvaluator::wrap_flag(const DigitSlots& a,
                                               const ckks::SwitchingKey& rlk) const {
  return apply(wrap_, {a.low, a.noise}, rlk);
}

std::pair<DigitEvaluator::Part, DigitEvaluator::Part> DigitEvaluator::compare(
    const DigitSlots& a, const DigitSlots& b, bool with_lt, const ckks::SwitchingKey& rlk,
    const ckks::GaloisKeys& keys) const {
  const Part d[2] = {sub({a.low, a.noise}, {b.low, b.noise}),
                     sub({a.high, a.noise}, {b.high, b.noise})};
  if (!with_lt) {
    // Equality is a product over every digit in any order: the parts first, one tree after.
    Part eq = multiply(apply(eq_, d[1], rlk), apply(eq_, d[0], rlk), rlk);
    for (std::uint32_t j = 0; j < stages_; ++j)
      eq = multiply(rotate(eq, 1 << (stages_ - 1 - j), keys), eq, rlk);
    return {Part{}, eq};
  }
  Part lt[2] = {apply(lt_, d[0], rlk), apply(lt_, d[1], rlk)};
  Part eq[2] = {apply(eq_, d[0], rlk), apply(eq_, d[1], rlk)};
  // The tree: at step j, the range starting 2^(stages - 1 - j) slots later is the upper one.
  for (std::uint32_t j = 0; j < stages_; ++j) {
    const int step = 1 << (stages_ - 1 - j);
    for (int part = 0; part < 2; ++part) {
      const Part eq_upper = rotate(eq[part], step, keys);
      lt[part] = add(rotate(lt[part], step, keys), multiply(eq_upper, lt[part], rlk));
      if (j + 1 < stages_ || part == 1) eq[part] = multiply(eq_upper, eq[part], rlk);
    }
  }
  // The high part's digits over the low part's.
  return {add(lt[1], multiply(eq[1], lt[0], rlk)), Part{}};
}

LaneValues DigitEvaluator::values(Part x) const {
  x.ct.scale *= x.factor;  // the value itself: the factor out of the label
  return {x.ct, x.noise, context_->fingerprint()};
}

LaneValues DigitEvaluator::less_than(const DigitSlots& a, const DigitSlots& b,
                                     const ckks::SwitchingKey& rlk,
                                     const ckks::GaloisKeys& keys) const {
  check(a, less_than_depth(), "less_than");
  check(b, less_than_depth(), "less_than");
  const Part lt = compare(a, b, true, rlk, keys).first;
  // beta^n (a_0 = -1) is the largest value: (1 - w_a)(1 - w_b) lt + (1 - w_a) w_b.
  const Part wa = wrap_flag(a, rlk), wb = wrap_flag(b, rlk);
  const Part not_wa = from_constant(1, wa);
  const Part keep = multiply(not_wa, from_constant(1, wb), rlk);
  return values(add(multiply(keep, lt, rlk), multiply(not_wa, wb, rlk)));
}

LaneValues DigitEvaluator::equal(const DigitSlots& a, const DigitSlots& b,
                                 const ckks::SwitchingKey& rlk,
                                 const ckks::GaloisKeys& keys) const {
  check(a, equal_depth(), "equal");
  check(b, equal_depth(), "equal");
  const Part eq = compare(a, b, false, rlk, keys).second;
  if (context_->space().base != 2) return values(eq);
  // beta = 2's quadratics are exact on d in {-1, 0, 1} only: eq (1 - (w_a - w_b)^2).
  const Part diff = sub(wrap_flag(a, rlk), wrap_flag(b, rlk));
  return values(multiply(eq, from_constant(1, multiply(diff, diff, rlk)), rlk));
}

LaneValues DigitEvaluator::digit(const DigitSlots& a, std::uint32_t t,
                                 const ckks::SwitchingKey& rlk,
                                 const ckks::GaloisKeys& keys) const {
  const LaneSpace& space = context_->space();
  require(t < space.lane_degree, ErrorCode::invalid_argument,
          "digit " + std::to_string(t) + " of a lane of " + std::to_string(space.lane_degree));
  check(a, digit_depth(t), "digit");
  const std::uint32_t half = space.lane_slots();
  Part x{t < half ? a.low : a.high, a.noise};
  if (t == 0) x = apply(clamp_, x, rlk);  // beta^n's a_0 = -1 -> 0
  return values(isolate(x, position_of(space, t % half), keys));
}

LaneValues DigitEvaluator::bit(const DigitSlots& a, std::uint64_t j, const ckks::SwitchingKey& rlk,
                               const ckks::GaloisKeys& keys) const {
  const LaneSpace& space = context_->space();
  require(std::has_single_bit(space.base), ErrorCode::unsupported,
          "bit extraction: beta = " + std::to_string(space.base) + " is not a power of two");
  const auto k = static_cast<std::uint64_t>(std::countr_zero(space.base));
  require(j <= k * space.lane_degree, ErrorCode::invalid_argument,
          "bit " + std::to_string(j) + " of an integer of at most 2^" +
              std::to_string(k * space.lane_degree) + " (bits 0 .. " +
              std::to_string(k * space.lane_degree) + ")");
  check(a, bit_depth(j), "bit");
  if (j == k * space.lane_degree)  // set only for beta^n: w at digit 0's slot
    return values(isolate(wrap_flag(a, rlk), 0, keys));
  const auto t = static_cast<std::uint32_t>(j / k);
  if (space.base == 2) return digit(a, t, rlk, keys);
  const std::uint32_t half = space.lane_slots();
  std::vector<double> bits(static_cast<std::size_t>(space.base) + 1, 0.0);
  for (std::uint64_t x = 0; x < space.base; ++x)
    bits[x + 1] = static_cast<double>((x >> (j % k)) & 1U);
  const Part x = apply(integer_map(-1, bits), {t < half ? a.low : a.high, a.noise}, rlk);
  return values(isolate(x, position_of(space, t % half), keys));
}

// --- to_digits ------------------------------------------------------------------------------

std::unique_ptr<LaneConverter> DigitEvaluator::digit_converter(const LaneContext& context,
                                                               const ckks::RnsOps& ops) {
  const LaneSpace& space = context.space();
  const auto groups = static_cast<std::uint32_t>(space.l_split.size());
  require(space.rest_level() >= space.refresh_level() + 2 * groups, ErrorCode::invalid_parameters,
          "to_digits: the space needs products_per_refresh >= " + std::to_string(2 * groups) +
              " (L's groups twice) to take form A to form B at the refresh level");
  return std::make_unique<LaneConverter>(context, ops, space.rest_level(),
                                         space.rest_level() - space.refresh_level() - 2 * groups);
}

DigitEvaluator::Part DigitEvaluator::at(const Part& x, std::uint32_t level) const {
  const double target = digit_scale(*context_, level);
  if (x.ct.level() == level && x.factor == 1 && detail::same_scale(x.ct.scale, target)) {
    Part out = x;
    out.ct.scale = target;  // exactly, as the converter compares the parts' scales
    return out;
  }
  require(x.ct.level() > level, ErrorCode::internal, "to_digits: an operand below its level");
  const std::uint32_t from = level + 1;
  const double q = static_cast<double>(context_->ckks().prime(from));
  Part out;
  // x (factor f times the value) by round(target q / (scale f)), labelled target q: the value.
  out.ct = evaluator_.rescale(
      evaluator_.multiply_constant_at(x.ct, 1.0 / x.factor, target * q / x.ct.scale, from));
  out.ct.scale = target;
  out.noise = x.noise + noise_.operation(target, level);
  return out;
}

DigitEvaluator::Part DigitEvaluator::plus_pattern(const Part& x,
                                                  const std::vector<double>& block) const {
  const LaneSpace& space = context_->space();
  ckks::Plaintext plain = encoder_.encode(tiled(space, block, x.factor), x.ct.scale, x.ct.level());
  ckks::make_resident(evaluator_.ops(), plain);
  return {evaluator_.add_plain(x.ct, plain), x.noise, x.factor};
}

DigitEvaluator::Part DigitEvaluator::exclusive_or(const Part& x, const Part& y,
                                                  const Part& xy) const {
  Part twice = xy;  // x + y - 2 x y for bits
  twice.ct = evaluator_.multiply_constant(xy.ct, 2.0, 1.0);
  return sub(add(x, y), twice);
}

DigitEvaluator::Part DigitEvaluator::spread_down(Part x, std::uint32_t first, std::uint32_t count,
                                                 const ckks::GaloisKeys& keys) const {
  for (std::uint32_t i = 0; i < count; ++i)
    x = add(x, rotate(x, 1 << (first + i), keys));
  return x;
}

std::array<DigitEvaluator::Part, 2> DigitEvaluator::refresh_bits(const Part& low, const Part& high,
                                                                 const LaneRefresher& refresher,
                                                                 const LaneConverter& converter,
                                                                 const LaneKeys& keys,
                                                                 bool shift) const {
  // Both parts at L's level and its digit scale, through L to form B (times Y when shifting),
  // and back through the parity bootstrap, which keeps 0 and 1 and cleans them.
  const std::uint32_t level = converter.lanes_level();
  const Part l = at(low, level), h = at(high, level);
  DigitSlots slots;
  slots.low = l.ct;
  slots.high = h.ct;
  slots.digit_bound = 1;
  slots.noise = std::max(l.noise, h.noise);
  slots.space = context_->fingerprint();
  LaneCiphertext b = converter.to_lanes(slots, keys.galois);
  if (shift)
    b.ct = evaluator_.multiply_plain(
        b.ct, detail::monomial_plaintext(*context_, evaluator_.ops(), 1, b.level()));
  const std::uint32_t top = refresher.parts_level();
  const auto parts = refresher.parity_parts(b, keys, digit_scale(*context_, top));
  const double noise = noise_.refreshed(b.noise);
  return {Part{parts[0], noise, 1}, Part{parts[1], noise, 1}};
}

DigitSlots DigitEvaluator::to_digits(const LaneCiphertext& x, const LaneRefresher& refresher,
                                     const LaneConverter& converter, const LaneKeys& keys) const {
  const LaneSpace& space = context_->space();
  require(space.base == 2, ErrorCode::unsupported, "to_digits: beta = 2 only");
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "to_digits: a ciphertext of another lane space");
  const ckks::SwitchingKey& rlk = keys.relinearization;
  const ckks::GaloisKeys& galois = keys.galois;
  const std::uint32_t s = stages_, half = space.lane_slots();
  const LaneEncoder encoder(*context_, evaluator_.ops());
  auto digit_rows = [&](std::int64_t digit0, std::int64_t others) {
    LaneDigits rows(space.lanes(), std::vector<std::int64_t>(space.lane_degree, others));
    for (auto& row : rows)
      row[0] = digit0;
    return rows;
  };

  // 1. A refresh, then carry rounds until the digits are in {-1, 0, 1, 2} (their exact range
  //    [lo, hi] followed round by round: digit 0 takes -floor(hi / 2)).
  // (A refresh only where the digits are beyond a refresh's: the carry rounds take any
  // refreshable ciphertext below the rest level whose digits are within the bound they track.)
  LaneCiphertext z = x.digit_bound > space.rest_digit_bound() ? refresher.refresh(x, keys) : x;
  if (z.level() >= space.rest_level())
    z.ct = evaluator_.drop_to_level(z.ct, space.rest_level() - 1);
  auto lo = static_cast<std::int64_t>(-std::floor(z.digit_bound));
  auto hi = static_cast<std::int64_t>(std::floor(z.digit_bound));
  auto floor_half = [](std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  while (lo < -1 || hi > 2) {
    z = refresher.carry_round(z, keys);
    const std::int64_t lo2 = std::min(floor_half(lo), -floor_half(hi));
    hi = std::max(floor_half(hi) + 1, 1 - floor_half(lo));
    lo = lo2;
  }

  // 2. z + 1 = a + 2 b: a by the parity bootstrap (form A, and form B through L), b = (z + 1 - a)
  //    / 2 by the label, b'' = Y b + [digit 0], its bits in form A by the parity bootstrap.
  LaneCiphertext z1 = z;
  z1.ct =
      evaluator_.add_plain(z.ct, encoder.encode_digits(digit_rows(1, 1), z.ct.scale, z.level()));
  const std::vector<ckks::Ciphertext> a_parts = refresher.parity_parts(z1, keys);
  const ckks::Ciphertext a_lanes = refresher.to_lanes(a_parts, keys);
  const std::uint32_t top = refresher.parts_level();
  const Part a[2] = {at(Part{a_parts[0], 0, 1}, top - 1), at(Part{a_parts[1], 0, 1}, top - 1)};
  ckks::Ciphertext b =
      evaluator_.sub(z1.ct, detail::aligned(context_->ckks(), evaluator_, a_lanes, z1.ct).first);
  b.scale *= 2;  // (z + 1 - a) / 2: the digits b
  b = evaluator_.multiply_plain(
      b, detail::monomial_plaintext(*context_, evaluator_.ops(), 1, b.level()));
  b = evaluator_.add_plain(b, encoder.encode_digits(digit_rows(1, 0), b.scale, b.level()));
  LaneCiphertext b2 = z;
  b2.ct = b;
  const auto b_parts = refresher.parity_parts(b2, keys, digit_scale(*context_, top));
  const Part bb[2] = {{b_parts[0], 0, 1}, {b_parts[1], 0, 1}};

  // 3. Generate and propagate, and their inclusive prefix (a Sklansky tree: at level j the
  //    positions with bit j set take the last position below them in their 2^(j+1) block; in
  //    the bit-reversed slots those are the slots with bit s - 1 - j set, and their source the
  //    one with that bit clear and the bits above it all set).
  Part g[2], p[2], G[2], P[2];
  for (int part = 0; part < 2; ++part) {
    g[part] = multiply(a[part], bb[part], rlk);
    p[part] = exclusive_or(a[part], bb[part], g[part]);
    G[part] = g[part];
    P[part] = p[part];
  }
  const std::uint32_t floor_level = converter.lanes_level();
  auto ensure = [&](std::uint32_t levels) {
    if (std::min({G[0].ct.level(), P[0].ct.level(), G[1].ct.level(), P[1].ct.level()}) >=
        floor_level + levels)
      return;
    auto gs = refresh_bits(G[0], G[1], refresher, converter, keys, false);
    auto ps = refresh_bits(P[0], P[1], refresher, converter, keys, false);
    G[0] = gs[0];
    G[1] = gs[1];
    P[0] = ps[0];
    P[1] = ps[1];
  };
  auto pattern = [&](auto&& keep) {
    std::vector<double> v(half, 0.0);
    for (std::uint32_t q = 0; q < half; ++q)
      v[q] = keep(q) ? 1.0 : 0.0;
    return v;
  };
  for (std::uint32_t j = 0; j < s; ++j) {
    ensure(2);
    const std::uint32_t bit = s - 1 - j;
    const auto source = pattern([&](std::uint32_t q) {
      return ((q >> bit) & 1U) == 0 && (q >> (bit + 1)) == (1U << j) - 1;
    });
    const auto other = pattern([&](std::uint32_t q) { return ((q >> bit) & 1U) == 0; });
    for (int part = 0; part < 2; ++part) {
      auto broadcast = [&](const Part& v) {
        return spread_down(rotate(masked(v, source), -(1 << bit), galois), bit + 1, j, galois);
      };
      const Part bg = broadcast(G[part]), bp = plus_pattern(broadcast(P[part]), other);
      G[part] = add(G[part], multiply(P[part], bg, rlk));
      P[part] = multiply(P[part], bp, rlk);
    }
  }
  ensure(2);
  const auto last = pattern([&](std::uint32_t q) { return q == half - 1; });
  {  // The high half takes the low half's last position.
    const Part bg = spread_down(masked(G[0], last), 0, s, galois);
    const Part bp = spread_down(masked(P[0], last), 0, s, galois);
    G[1] = add(G[1], multiply(P[1], bg, rlk));
    P[1] = multiply(P[1], bp, rlk);
  }

  // c_in = 1 - (the carry out of a + b''), every slot; the carry out of each position; the
  // carries into them: one digit up through form B, digit 0 given c_in. c_in and the whole lane's
  // propagate bit go through the parity bootstrap together (the two parts of one ciphertext).
  ensure(2);
  const Part g_all = spread_down(masked(G[1], last), 0, s, galois);
  const Part p_all = spread_down(masked(P[1], last), 0, s, galois);
  const Part c_in = from_constant(1, g_all);
  Part carry[2];
  for (int part = 0; part < 2; ++part)
    carry[part] = add(G[part], multiply(P[part], c_in, rlk));
  auto c = refresh_bits(carry[0], carry[1], refresher, converter, keys, true);
  const auto flags = refresh_bits(c_in, p_all, refresher, converter, keys, false);
  const auto first = pattern([](std::uint32_t q) { return q == 0; });
  c[0] = add(sub(c[0], masked(c[0], first)), masked(flags[0], first));

  // 4. The digits p xor c, refreshed; beta^n (every position propagating, c_in = 1) as a_0 = -1.
  //    (p waited at the level it was made at: where a space has few levels at rest, back through
  //    the parity bootstrap first, so that the product stays above L's level.)
  if (p[0].ct.level() <= floor_level) {
    const auto fresh = refresh_bits(p[0], p[1], refresher, converter, keys, false);
    p[0] = fresh[0];
    p[1] = fresh[1];
  }
  Part d[2];
  for (int part = 0; part < 2; ++part) {
    d[part] = exclusive_or(p[part], c[part], multiply(p[part], c[part], rlk));
  }
  const auto out = refresh_bits(d[0], d[1], refresher, converter, keys, false);
  const Part special = masked(multiply(flags[1], flags[0], rlk), first);
  const Part low = sub(out[0], special);
  const Part high = at(out[1], low.ct.level());
  DigitSlots result;
  result.low = at(low, low.ct.level()).ct;
  result.high = high.ct;
  result.digit_bound = 1;
  result.noise = low.noise;
  result.space = context_->fingerprint();
  result.canonical = true;
  return result;
}

}  // namespace safhire::lanes
