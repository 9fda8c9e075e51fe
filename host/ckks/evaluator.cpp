// The CKKS evaluator over the RNS primitives. Nothing here touches a residue directly: every
// step is an RnsOps call, so a backend that provides the primitives runs all of it.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "safhire/ckks/ckks.hpp"
#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

bool same_scale(double a, double b) {
  return std::fabs(a - b) <= std::ldexp(std::fabs(a), -40);
}

// The residues of round(c) for a real c, one per modulus index. Beyond 2^63 (a constant at the
// square of a scale, as polynomial evaluation adds them) round(c) is read exactly from its
// binary expansion, a 64-bit mantissa times a power of two.
std::vector<u64> constant_residues(const CkksContext& context, long double c) {
  require(std::isfinite(c) && std::fabs(c) < 0x1p1000L, ErrorCode::invalid_argument,
          "constant too large to encode");
  const long double v = std::round(c);
  const long double magnitude = std::fabs(v);
  std::vector<u64> r(context.primes().size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    const u64 q = context.primes()[i];
    u64 m;
    if (magnitude < 0x1p63L) {
      m = static_cast<u64>(magnitude) % q;
    } else {
      int exponent = 0;
      const long double frac = std::frexp(magnitude, &exponent);  // [0.5, 1) 2^exponent
      m = static_cast<u64>(std::ldexp(frac, 64)) % q;             // exact: 64-bit mantissa
      m = core::mul_mod(m, core::pow_mod<u64>(2, static_cast<u64>(exponent - 64), q), q);
    }
    r[i] = v < 0 ? core::neg_mod(m, q) : m;
  }
  return r;
}

}  // namespace

Evaluator::Evaluator(const CkksContext& context, const RnsOps& ops)
    : context_(&context), ops_(&ops) {
  const std::size_t count = context.primes().size();
  p_inv_.assign(count, 0);
  for (ModulusIndex i = 0; i <= context.max_level(); ++i)
    p_inv_[i] = core::inv_mod(context.p_mod()[i], context.prime(i));
  q_last_inv_.assign(context.max_level() + 1, std::vector<u64>(count, 0));
  pq_last_inv_ = q_last_inv_;
  for (std::uint32_t l = 1; l <= context.max_level(); ++l) {
    for (ModulusIndex i = 0; i < l; ++i) {
      const u64 q = context.prime(i);
      q_last_inv_[l][i] = core::inv_mod(context.prime(l) % q, q);
      pq_last_inv_[l][i] = core::mul_mod(q_last_inv_[l][i], p_inv_[i], q);
    }
  }
}

const BaseConverter& Evaluator::mod_up_converter(std::uint32_t level, std::uint32_t digit) const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = mod_up_[{level, digit}];
  if (!slot) {
    const auto from = context_->digit_moduli(level, digit);
    std::vector<ModulusIndex> to;
    for (ModulusIndex m : context_->qp_moduli(level)) {
      if (std::find(from.begin(), from.end(), m) == from.end()) to.push_back(m);
    }
    slot = std::make_unique<BaseConverter>(*context_, from, to);
  }
  return *slot;
}

const BaseConverter& Evaluator::mod_down_converter(std::uint32_t level) const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = mod_down_[level];
  if (!slot) {
    slot =
        std::make_unique<BaseConverter>(*context_, context_->p_moduli(), context_->q_moduli(level));
  }
  return *slot;
}

const BaseConverter& Evaluator::rescale_converter(std::uint32_t level) const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = rescale_[level];
  if (!slot) {
    slot = std::make_unique<BaseConverter>(*context_, std::vector<ModulusIndex>{level},
                                           context_->q_moduli(level - 1));
  }
  return *slot;
}

const BaseConverter& Evaluator::fused_converter(std::uint32_t level) const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = fused_[level];
  if (!slot) {
    std::vector<ModulusIndex> from{static_cast<ModulusIndex>(level)};
    const auto p = context_->p_moduli();
    from.insert(from.end(), p.begin(), p.end());
    slot = std::make_unique<BaseConverter>(*context_, from, context_->q_moduli(level - 1));
  }
  return *slot;
}

const BaseConverter& Evaluator::raise_converter(std::uint32_t level) const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = raise_[level];
  if (!slot) {
    auto to = context_->q_moduli(level);
    to.erase(to.begin());
    slot = std::make_unique<BaseConverter>(*context_, std::vector<ModulusIndex>{0}, to);
  }
  return *slot;
}

std::span<const std::uint32_t> Evaluator::permutation(std::uint64_t galois) const {
  return ops_->permutation(galois);
}

void Evaluator::check_pair(const Ciphertext& x, const Ciphertext& y) const {
  require(x.level() == y.level(), ErrorCode::invalid_argument,
          "ciphertexts at different levels (" + std::to_string(x.level()) + ", " +
              std::to_string(y.level()) + "): drop one first");
  require(same_scale(x.scale, y.scale), ErrorCode::invalid_argument,
          "ciphertexts at different scales (2^" + std::to_string(std::log2(x.scale)) + ", 2^" +
              std::to_string(std::log2(y.scale)) + ")");
}

// ---- linear operations --------------------------------------------------------------------------

// The operations below write their outputs directly (reshape, then one pass over the inputs)
// rather than copying an input and updating the copy: half the memory traffic, and no fresh
// words to clear.

namespace {

// out with the shape of x (every component reshaped, nothing written), scale and slots copied.
Ciphertext shaped_like(const RnsOps& ops, const Ciphertext& x, std::size_t components,
                       std::span<const ModulusIndex> moduli) {
  Ciphertext out;
  out.scale = x.scale;
  out.slots = x.slots;
  out.c.resize(components);
  for (auto& c : out.c)
    ops.reshape(c, moduli, true);
  return out;
}

}  // namespace

Ciphertext Evaluator::add(const Ciphertext& x, const Ciphertext& y) const {
  check_pair(x, y);
  const Ciphertext& big = x.size() >= y.size() ? x : y;
  const Ciphertext& other = x.size() >= y.size() ? y : x;
  Ciphertext out = shaped_like(*ops_, big, big.size(), big.c[0].moduli);
  for (std::size_t i = 0; i < big.size(); ++i) {
    if (i < other.size()) {
      ops_->add(x.c[i], y.c[i], out.c[i]);
    } else {
      ops_->copy(big.c[i], out.c[i]);
    }
  }
  return out;
}

Ciphertext Evaluator::sub(const Ciphertext& x, const Ciphertext& y) const {
  check_pair(x, y);
  const std::size_t size = std::max(x.size(), y.size());
  Ciphertext out = shaped_like(*ops_, x, size, x.c[0].moduli);
  for (std::size_t i = 0; i < size; ++i) {
    if (i < x.size() && i < y.size()) {
      ops_->sub(x.c[i], y.c[i], out.c[i]);
    } else if (i < x.size()) {
      ops_->copy(x.c[i], out.c[i]);
    } else {
      ops_->negate(y.c[i], out.c[i]);
    }
  }
  return out;
}

Ciphertext Evaluator::negate(const Ciphertext& x) const {
  Ciphertext out = shaped_like(*ops_, x, x.size(), x.c[0].moduli);
  for (std::size_t i = 0; i < x.size(); ++i)
    ops_->negate(x.c[i], out.c[i]);
  return out;
}

Ciphertext Evaluator::add_plain(const Ciphertext& x, const Plaintext& p) const {
  require(p.level() >= x.level() && same_scale(x.scale, p.scale), ErrorCode::invalid_argument,
          "plaintext below the ciphertext's level or at another scale");
  Ciphertext out = shaped_like(*ops_, x, x.size(), x.c[0].moduli);
  ops_->add(x.c[0], p.poly, out.c[0]);
  for (std::size_t i = 1; i < x.size(); ++i)
    ops_->copy(x.c[i], out.c[i]);
  return out;
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& x, const Plaintext& p) const {
  require(p.level() >= x.level(), ErrorCode::invalid_argument,
          "plaintext below the ciphertext's level");
  Ciphertext out = shaped_like(*ops_, x, x.size(), x.c[0].moduli);
  for (std::size_t i = 0; i < x.size(); ++i)
    ops_->multiply(x.c[i], p.poly, out.c[i]);
  out.scale = x.scale * p.scale;
  return out;
}

Ciphertext Evaluator::add_constant(const Ciphertext& x, double c) const {
  // A constant polynomial is the same value in every NTT slot.
  const auto r = constant_residues(*context_, static_cast<long double>(c) * x.scale);
  Ciphertext out = shaped_like(*ops_, x, x.size(), x.c[0].moduli);
  ops_->add_scalars(x.c[0], r, out.c[0]);
  for (std::size_t i = 1; i < x.size(); ++i)
    ops_->copy(x.c[i], out.c[i]);
  return out;
}

Ciphertext Evaluator::multiply_constant(const Ciphertext& x, double c,
                                        double constant_scale) const {
  return multiply_constant_at(x, c, constant_scale, x.level());
}

Ciphertext Evaluator::multiply_constant_at(const Ciphertext& x, double c, double constant_scale,
                                           std::uint32_t level) const {
  require(constant_scale > 0, ErrorCode::invalid_argument, "constant scale must be positive");
  require(level <= x.level(), ErrorCode::invalid_argument,
          "cannot drop to level " + std::to_string(level) + " from " + std::to_string(x.level()));
  const auto r = constant_residues(*context_, static_cast<long double>(c) * constant_scale);
  // Limbs are matched by modulus: the product reads only the limbs of the output's level.
  Ciphertext out = shaped_like(*ops_, x, x.size(), context_->q_moduli(level));
  for (std::size_t i = 0; i < x.size(); ++i)
    ops_->multiply_scalars(x.c[i], r, out.c[i]);
  out.scale = x.scale * constant_scale;
  return out;
}

Ciphertext Evaluator::linear_combination_at(std::span<const Ciphertext* const> xs,
                                            std::span<const double> c,
                                            std::span<const double> constant_scales,
                                            std::uint32_t level) const {
  require(!xs.empty() && c.size() == xs.size() && constant_scales.size() == xs.size(),
          ErrorCode::invalid_argument, "linear combination: mismatched counts");
  const auto moduli = context_->q_moduli(level);
  const double scale = xs[0]->scale * constant_scales[0];
  // One word per limb: the constants as block-constant polynomials (rns_ops.hpp), read by
  // inner_product as whole ones.
  std::vector<RnsPoly> constants;
  constants.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    require(constant_scales[i] > 0, ErrorCode::invalid_argument, "constant scale must be positive");
    require(level <= xs[i]->level() && xs[i]->size() == xs[0]->size(), ErrorCode::invalid_argument,
            "linear combination: a term below the level or of another size");
    require(same_scale(xs[i]->scale * constant_scales[i], scale), ErrorCode::invalid_argument,
            "linear combination: terms at different scales");
    const auto r =
        constant_residues(*context_, static_cast<long double>(c[i]) * constant_scales[i]);
    RnsPoly& k = constants.emplace_back(1, moduli, true);
    for (std::size_t j = 0; j < moduli.size(); ++j)
      k.data[j] = r[moduli[j]];
  }
  Ciphertext out = shaped_like(*ops_, *xs[0], xs[0]->size(), moduli);
  out.scale = scale;
  constexpr std::size_t kTerms = 16;
  RnsPoly part;
  for (std::size_t comp = 0; comp < out.size(); ++comp) {
    for (std::size_t first = 0; first < xs.size(); first += kTerms) {
      const std::size_t count = std::min(kTerms, xs.size() - first);
      std::vector<const RnsPoly*> a, b;
      for (std::size_t i = first; i < first + count; ++i) {
        a.push_back(&constants[i]);
        b.push_back(&xs[i]->c[comp]);
      }
      if (first == 0) {
        ops_->inner_product(a, b, out.c[comp]);
      } else {
        ops_->reshape(part, moduli, true);
        ops_->inner_product(a, b, part);
        ops_->add(out.c[comp], part, out.c[comp]);
      }
    }
  }
  return out;
}

Ciphertext Evaluator::drop_to_level(const Ciphertext& x, std::uint32_t level) const {
  require(level <= x.level(), ErrorCode::invalid_argument,
          "cannot drop to level " + std::to_string(level) + " from " + std::to_string(x.level()));
  // Only the kept limbs are copied (the polynomial invariants drop the rest).
  const auto moduli = context_->q_moduli(level);
  Ciphertext out;
  out.scale = x.scale;
  out.slots = x.slots;
  out.c.resize(x.c.size());
  for (std::size_t i = 0; i < x.c.size(); ++i) {
    ops_->reshape(out.c[i], moduli, x.c[i].ntt);
    ops_->copy(x.c[i], out.c[i]);
  }
  return out;
}

// ---- multiplication -----------------------------------------------------------------------------

Ciphertext Evaluator::multiply(const Ciphertext& x, const Ciphertext& y) const {
  require(x.level() == y.level(), ErrorCode::invalid_argument,
          "ciphertexts at different levels: drop one first");
  return multiply_at(x, y, x.level());
}

Ciphertext Evaluator::multiply_at(const Ciphertext& x, const Ciphertext& y,
                                  std::uint32_t level) const {
  require(x.size() == 2 && y.size() == 2, ErrorCode::invalid_argument,
          "the tensor product takes two 2-component ciphertexts (relinearize first)");
  require(level <= x.level() && level <= y.level(), ErrorCode::invalid_argument,
          "the tensor at level " + std::to_string(level) + " of ciphertexts at levels " +
              std::to_string(x.level()) + " and " + std::to_string(y.level()));
  Ciphertext out;
  out.scale = x.scale * y.scale;
  out.slots = x.slots;
  out.c.resize(3);
  const auto moduli = context_->q_moduli(level);
  for (auto& c : out.c)
    ops_->reshape(c, moduli, true);
  ops_->tensor(x.c[0], x.c[1], y.c[0], y.c[1], out.c[0], out.c[1], out.c[2]);
  return out;
}

Ciphertext Evaluator::relinearize(const Ciphertext& x, const SwitchingKey& rlk) const {
  require(x.size() == 3, ErrorCode::invalid_argument, "relinearize takes 3 components");
  auto [u0, u1] = key_switch(x.c[2], rlk);
  Ciphertext out;
  out.scale = x.scale;
  out.slots = x.slots;
  ops_->add(x.c[0], u0, u0);
  ops_->add(x.c[1], u1, u1);
  out.c.push_back(std::move(u0));
  out.c.push_back(std::move(u1));
  return out;
}

Ciphertext Evaluator::multiply_relinearize(const Ciphertext& x, const Ciphertext& y,
                                           const SwitchingKey& rlk) const {
  return relinearize(multiply(x, y), rlk);
}

Ciphertext Evaluator::rescale(const Ciphertext& x) const {
  const std::uint32_t l = x.level();
  require(l >= 1, ErrorCode::invalid_argument, "cannot rescale at level 0");
  const auto& converter = rescale_converter(l);
  const auto below = context_->q_moduli(l - 1);
  const ModulusIndex top[] = {static_cast<ModulusIndex>(l)};
  Ciphertext out;
  out.scale = x.scale / static_cast<double>(context_->prime(l));
  out.slots = x.slots;
  for (const auto& c : x.c) {
    // (c - centred [c]_{q_l}) / q_l on q_0 .. q_{l-1}: division with rounding.
    RnsPoly last, lifted, r;
    ops_->reshape(last, top, true);
    ops_->copy(c, last);
    ops_->inverse(last);
    ops_->reshape(lifted, below, false);
    ops_->convert(converter, last, lifted, Conversion::exact);
    ops_->forward(lifted);
    ops_->reshape(r, below, true);
    ops_->sub_scale(c, lifted, q_last_inv_[l], r);
    out.c.push_back(std::move(r));
  }
  return out;
}

Ciphertext Evaluator::mod_raise(const Ciphertext& x, std::uint32_t level) const {
  require(x.level() == 0, ErrorCode::invalid_argument,
          "ModRaise takes a ciphertext at level 0, got level " + std::to_string(x.level()));
  require(level >= 1 && level <= context_->max_level(), ErrorCode::invalid_argument,
          "ModRaise to level " + std::to_string(level) + ": outside 1 .. the top level");
  const auto& converter = raise_converter(level);
  const auto moduli = context_->q_moduli(level);
  Ciphertext out;
  out.scale = x.scale;
  out.slots = x.slots;
  for (const auto& c : x.c) {
    // The centred lift of c's coefficients modulo q_0 to every prime of Q_level: the exact
    // conversion from one prime.
    RnsPoly coeffs, raised;
    ops_->reshape(coeffs, c.moduli, true);
    ops_->copy(c, coeffs);
    ops_->inverse(coeffs);
    ops_->reshape(raised, moduli, false);
    ops_->copy(coeffs, raised, 0, 1);
    ops_->convert(converter, coeffs, raised, Conversion::exact);
    ops_->forward(raised);
    out.c.push_back(std::move(raised));
  }
  return out;
}

// ---- key switching ------------------------------------------------------------------------------

namespace {}  // namespace

// Buffers of one thread's key switches, kept between calls (one set per thread and evaluator,
// in the backend's residence): at N = 2^16 a polynomial over Q and P is 17 MB, and fresh pages
// cost as much as the arithmetic.
struct Evaluator::Scratch {
  RnsPoly coeffs, acc0, acc1, p_part, converted;
  std::vector<RnsPoly> digits;
};

Evaluator::~Evaluator() = default;

Evaluator::Scratch& Evaluator::scratch() const {
  std::lock_guard lock(cache_mutex_);
  auto& slot = scratch_[std::this_thread::get_id()];
  if (!slot) slot = std::make_unique<Scratch>();
  return *slot;
}

void Evaluator::mod_up_into(const RnsPoly& d, std::vector<RnsPoly>& out) const {
  require(d.ntt, ErrorCode::invalid_argument, "key switching takes an NTT-form polynomial");
  const auto l = static_cast<std::uint32_t>(d.limbs() - 1);
  RnsPoly& coeffs = scratch().coeffs;
  ops_->reshape(coeffs, d.moduli, true);
  ops_->copy(d, coeffs);
  ops_->inverse(coeffs);
  out.resize(context_->digits(l));
  std::vector<ModulusIndex> moduli;
  for (std::uint32_t j = 0; j < out.size(); ++j) {
    const auto& converter = mod_up_converter(l, j);
    // The digit's own limbs first (copied in NTT form), then the converted ones.
    moduli.assign(converter.from().begin(), converter.from().end());
    moduli.insert(moduli.end(), converter.to().begin(), converter.to().end());
    RnsPoly& ext = out[j];
    ops_->reshape(ext, moduli, false);
    ops_->convert(converter, coeffs, ext, Conversion::exact);
    const std::size_t own = converter.from().size();
    ops_->forward(ext, own, ext.limbs());
    ops_->copy(d, ext, 0, own);
    ext.ntt = true;
  }
}

std::vector<RnsPoly> Evaluator::mod_up(const RnsPoly& d) const {
  std::vector<RnsPoly> out;
  mod_up_into(d, out);
  return out;
}

RnsPoly Evaluator::mod_down(const RnsPoly& x, std::uint32_t level) const {
  const auto q_moduli = context_->q_moduli(level);
  Scratch& s = scratch();
  RnsPoly& p_part = s.p_part;
  ops_->reshape(p_part, context_->p_moduli(), true);
  ops_->copy(x, p_part);
  ops_->inverse(p_part);
  RnsPoly& converted = s.converted;
  ops_->reshape(converted, q_moduli, false);
  ops_->convert(mod_down_converter(level), p_part, converted, Conversion::exact);
  ops_->forward(converted);
  RnsPoly out;
  ops_->reshape(out, q_moduli, true);
  ops_->sub_scale(x, converted, p_inv_, out);
  return out;
}

void Evaluator::key_switch_inner_into(const std::vector<RnsPoly>& digits, const SwitchingKey& key,
                                      std::uint32_t level, std::span<const std::uint32_t> perm,
                                      RnsPoly& u0, RnsPoly& u1) const {
  require(!digits.empty() && digits.size() <= key.b.size(), ErrorCode::invalid_argument,
          "switching key has fewer digits than the ciphertext needs");
  const auto moduli = context_->qp_moduli(level);
  std::vector<const RnsPoly*> d(digits.size()), b(digits.size()), a;
  for (std::size_t j = 0; j < digits.size(); ++j) {
    d[j] = &digits[j];
    b[j] = &key.b[j];
    if (!key.seeded()) a.push_back(&key.a[j]);
  }
  ops_->reshape(u0, moduli, true);
  ops_->reshape(u1, moduli, true);
  if (key.seeded()) {
    // The a_j regenerated where the inner product reads them (RnsOps::inner_product_seeded).
    ops_->inner_product_seeded(d, b, core::AesCtr(*key.seed), u0, u1, perm);
  } else {
    ops_->inner_product_pair(d, b, a, u0, u1, perm);
  }
}

std::pair<RnsPoly, RnsPoly> Evaluator::key_switch_inner(const std::vector<RnsPoly>& digits,
                                                        const SwitchingKey& key,
                                                        std::uint32_t level,
                                                        std::span<const std::uint32_t> perm) const {
  std::pair<RnsPoly, RnsPoly> u;
  key_switch_inner_into(digits, key, level, perm, u.first, u.second);
  return u;
}

std::pair<RnsPoly, RnsPoly> Evaluator::key_switch_extended(
    const std::vector<RnsPoly>& digits, const SwitchingKey& key, std::uint32_t level,
    std::span<const std::uint32_t> perm) const {
  Scratch& s = scratch();
  key_switch_inner_into(digits, key, level, perm, s.acc0, s.acc1);
  RnsPoly u0 = mod_down(s.acc0, level);
  RnsPoly u1 = mod_down(s.acc1, level);
  return {std::move(u0), std::move(u1)};
}

std::pair<RnsPoly, RnsPoly> Evaluator::key_switch(const RnsPoly& d, const SwitchingKey& key) const {
  auto& digits = scratch().digits;
  mod_up_into(d, digits);
  return key_switch_extended(digits, key, static_cast<std::uint32_t>(d.limbs() - 1), {});
}

// ---- automorphisms ------------------------------------------------------------------------------

Ciphertext Evaluator::apply_galois(const Ciphertext& x, std::uint64_t galois,
                                   const SwitchingKey& key) const {
  require(x.size() == 2, ErrorCode::invalid_argument, "rotate a relinearized ciphertext");
  // The key is sigma^-1 of the key for sigma (GaloisKeys): switch c_1 as it is, then permute.
  auto [u0, u1] = key_switch(x.c[1], key);
  ops_->add(x.c[0], u0, u0);
  return permuted(u0, u1, galois, x);
}

Ciphertext Evaluator::permuted(const RnsPoly& c0, const RnsPoly& c1, std::uint64_t galois,
                               const Ciphertext& like) const {
  const auto& perm = permutation(galois);
  Ciphertext out;
  out.scale = like.scale;
  out.slots = like.slots;
  out.c.resize(2);
  ops_->reshape(out.c[0], c0.moduli, true);
  ops_->reshape(out.c[1], c1.moduli, true);
  ops_->permute(c0, perm, out.c[0]);
  ops_->permute(c1, perm, out.c[1]);
  return out;
}

Ciphertext Evaluator::switch_key(const Ciphertext& x, const SwitchingKey& key) const {
  require(x.size() == 2, ErrorCode::invalid_argument,
          "switch the key of a relinearized ciphertext");
  auto [u0, u1] = key_switch(x.c[1], key);
  ops_->add(x.c[0], u0, u0);
  Ciphertext out;
  out.scale = x.scale;
  out.slots = x.slots;
  out.c = {std::move(u0), std::move(u1)};
  return out;
}

Ciphertext Evaluator::rotate(const Ciphertext& x, int step, const GaloisKeys& keys) const {
  const u64 g = rotation_galois_element(*context_, step);
  return apply_galois(x, g, keys.at(g));
}

Ciphertext Evaluator::conjugate(const Ciphertext& x, const GaloisKeys& keys) const {
  const u64 g = conjugation_galois_element(*context_);
  return apply_galois(x, g, keys.at(g));
}

std::vector<Ciphertext> Evaluator::rotate_hoisted(const Ciphertext& x, std::span<const int> steps,
                                                  const GaloisKeys& keys) const {
  require(x.size() == 2, ErrorCode::invalid_argument, "rotate a relinearized ciphertext");
  const auto digits = mod_up(x.c[1]);
  std::vector<Ciphertext> out;
  for (int step : steps) {
    const u64 g = rotation_galois_element(*context_, step);
    auto [u0, u1] = key_switch_extended(digits, keys.at(g), x.level(), {});
    ops_->add(x.c[0], u0, u0);
    out.push_back(permuted(u0, u1, g, x));
  }
  return out;
}

Ciphertext Evaluator::relinearize_rescale(const Ciphertext& x, const SwitchingKey& rlk) const {
  if (x.size() == 2) return rescale(x);
  require(x.size() == 3, ErrorCode::invalid_argument, "relinearize takes 3 components");
  const std::uint32_t l = x.level();
  require(l >= 1, ErrorCode::invalid_argument, "cannot rescale at level 0");
  Scratch& s = scratch();
  mod_up_into(x.c[2], s.digits);
  key_switch_inner_into(s.digits, rlk, l, {}, s.acc0, s.acc1);
  Ciphertext out;
  out.scale = x.scale / static_cast<double>(context_->prime(l));
  out.slots = x.slots;
  out.c = {divide_extended(s.acc0, &x.c[0], l), divide_extended(s.acc1, &x.c[1], l)};
  return out;
}

RnsPoly Evaluator::mod_down_rescale(const RnsPoly& w, std::uint32_t level) const {
  require(level >= 1, ErrorCode::invalid_argument, "cannot rescale at level 0");
  return divide_extended(w, nullptr, level);
}

RnsPoly Evaluator::divide_extended(const RnsPoly& u, const RnsPoly* c, std::uint32_t l) const {
  // w = P c + u over Q_l P (u alone without c); (w - [w]_{P q_l}) / (P q_l) on q_0 .. q_(l-1),
  // with [w]_{P q_l} the exact (centred) conversion of w's limbs at q_l and P.
  const auto& converter = fused_converter(l);
  const auto below = context_->q_moduli(l - 1);
  Scratch& s = scratch();
  RnsPoly& part = s.p_part;
  ops_->reshape(part, converter.from(), true);
  ops_->copy(u, part);
  if (c != nullptr) {
    const ModulusIndex top[] = {static_cast<ModulusIndex>(l)};
    RnsPoly last;
    ops_->reshape(last, top, true);
    ops_->multiply_scalars(*c, context_->p_mod(), last);
    ops_->add(u, last, last);
    ops_->copy(last, part, 0, 1);
  }
  ops_->inverse(part);
  RnsPoly& lifted = s.converted;
  ops_->reshape(lifted, below, false);
  ops_->convert(converter, part, lifted, Conversion::exact);
  ops_->forward(lifted);
  RnsPoly out;
  ops_->reshape(out, below, true);
  if (c != nullptr) {
    ops_->multiply_scalars(*c, context_->p_mod(), out);
    ops_->add(u, out, out);
    ops_->sub_scale(out, lifted, pq_last_inv_[l], out);
  } else {
    ops_->sub_scale(u, lifted, pq_last_inv_[l], out);
  }
  return out;
}

}  // namespace safhire::ckks
