#include "safhire/rlwe/keyswitch.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/rlwe/noise.hpp"

namespace safhire::rlwe {

using core::u128;

// ---- Gadget decomposition ---------------------------------------------------------------------

GadgetDecomposer::GadgetDecomposer(const Gadget& gadget) : gadget_(gadget) {
  validate_gadget(gadget, "gadget decomposition");
  const u128 two64 = static_cast<u128>(1) << 64;
  u128 power = 1;
  for (std::uint32_t i = 0; i < gadget.levels; ++i) {
    power *= gadget.base;
    values_.push_back(static_cast<u64>((two64 + power / 2) / power));  // round(2^64 / D^(i+1))
  }
  view_.base = gadget.base;
  view_.base_ratio = static_cast<u64>(two64 / gadget.base);
  view_.precision = power == two64 ? 0 : static_cast<u64>(power);
  view_.levels = gadget.levels;
}

void GadgetDecomposer::decompose(std::span<const u64> a, std::span<u64> digits) const {
  require(digits.size() == a.size() * gadget_.levels, ErrorCode::size_mismatch,
          "GadgetDecomposer::decompose: expected l * N digit words");
  const std::size_t n = a.size();
  const u64 base = gadget_.base;
  if ((base & (base - 1)) != 0) {
    for (std::size_t j = 0; j < n; ++j)
      elements::decompose_word(a[j], view_, digits.data() + j, n);
    return;
  }
  // D = 2^d (every default set): decompose_word's digits with shifts and masks, one level at a
  // time over all words (branch-free loops the compiler vectorizes). Row 0 carries the running
  // quotient until its own digit is taken last.
  const auto d = static_cast<std::uint32_t>(std::countr_zero(base));
  const std::uint32_t levels = gadget_.levels, k = d * levels;  // D^l = 2^k
  u64* top = digits.data();
  if (k >= 64) {
    std::copy(a.begin(), a.end(), top);
  } else {
    for (std::size_t j = 0; j < n; ++j)
      top[j] = (a[j] >> (64 - k)) + ((a[j] >> (63 - k)) & 1);
  }
  // r >= D/2 is bit d - 1 of r: shifts and masks only, which vectorize on every target.
  const u64 mask = base - 1;
  for (std::uint32_t i = levels; i-- > 0;) {
    u64* row = digits.data() + std::size_t{i} * n;
    if (i == 0) {
      for (std::size_t j = 0; j < n; ++j) {
        const u64 r = top[j] & mask, big = (r >> (d - 1)) & 1;
        row[j] = r - (big << d);  // r, or r - D in [-D/2, 0)
      }
      break;
    }
    for (std::size_t j = 0; j < n; ++j) {
      const u64 x = top[j], r = x & mask, big = (r >> (d - 1)) & 1;
      row[j] = r - (big << d);
      top[j] = (x >> d) + big;
    }
  }
}

// ---- Keys -------------------------------------------------------------------------------------

KeySwitchKey::KeySwitchKey(const ParameterSet& params, std::uint64_t k, const Gadget& gadget)
    : ring_(params.ring),
      parameter_id_(params.id),
      galois_element_(k),
      gadget_(gadget),
      split_(key_split(params, gadget)) {}

std::span<const u64> KeySwitchKey::limb_a(std::uint32_t i) const {
  const std::size_t size = split_.limbs * std::size_t{ring_.N()};
  return {ntt_.data() + 2 * i * size, size};
}

std::span<const u64> KeySwitchKey::limb_b(std::uint32_t i) const {
  const std::size_t size = split_.limbs * std::size_t{ring_.N()};
  return {ntt_.data() + (2 * i + 1) * size, size};
}

std::span<const u64> KeySwitchKey::torus_b(std::uint32_t i) const {
  return {b_.data() + std::size_t{i} * ring_.N(), ring_.N()};
}

void KeySwitchKey::build_ntt_form() {
  const std::size_t n = ring_.N(), size = split_.limbs * n;
  const ring::LimbProduct& product = ring::LimbProduct::shared(ring_);
  ntt_ = ring::AlignedWords(2 * gadget_.levels * size);
  std::vector<u64> a(n);
  for (std::uint32_t i = 0; i < gadget_.levels; ++i) {
    core::expand_seed(seeds_[i], a);
    product.torus_to_ntt(a, split_, {ntt_.data() + 2 * i * size, size});
    product.torus_to_ntt(torus_b(i), split_, {ntt_.data() + (2 * i + 1) * size, size});
  }
}

std::uint32_t key_bits(const ParameterSet& params) {
  return hiding_bits(params, 1.0 / 256);
}

KeySwitchKey make_key_switch_key(const SecretKey& key, std::span<const u64> from_key,
                                 std::uint64_t galois_element, const Gadget& gadget,
                                 core::RandomSource& noise) {
  const ParameterSet& params = key.params();
  const std::size_t n = params.ring.N();
  ring::require_degree(params.ring, from_key.size(), "make_key_switch_key source key");
  const GadgetDecomposer decomposer(gadget);
  const std::uint32_t bits = key_bits(params);
  KeySwitchKey ksk(params, galois_element, gadget);
  const ring::ExactProduct& product = ring::ExactProduct::shared(params.ring);
  ksk.b_.assign(std::size_t{gadget.levels} * n, 0);
  std::vector<u64> a(n), e(n);
  for (std::uint32_t i = 0; i < gadget.levels; ++i) {
    // KSK[i] = (a_i, a_i s + e_i + s' g_i), a_i from a fresh seed.
    ksk.seeds_.push_back(noise.seed());
    core::expand_seed(ksk.seeds_.back(), a);
    core::sample_gaussian(noise, params.sigma(), e);
    const std::span<u64> b(ksk.b_.data() + i * n, n);
    product.multiply(a, key.coeffs(), b);
    const u64 g = decomposer.value(i);
    for (std::size_t j = 0; j < n; ++j)
      b[j] = round_to_bits(b[j] + e[j] + from_key[j] * g, bits);
  }
  ksk.build_ntt_form();
  return ksk;
}

KeySwitchKey make_automorphism_key(const SecretKey& key, std::uint64_t k, const Gadget& gadget,
                                   core::RandomSource& noise) {
  const ring::RingParams& ring = key.params().ring;
  ring::TorusPoly sigma_s(ring);
  ring::automorphism(ring, key.coeffs(), k, sigma_s.coeffs(), ring::TorusArith{});
  return make_key_switch_key(key, sigma_s.coeffs(), k % ring.M(), gadget, noise);
}

KeySwitchKey key_switch_key_from_parts(const ParameterSet& params, std::uint64_t galois_element,
                                       const Gadget& gadget, std::vector<core::Seed> seeds,
                                       std::vector<u64> torus_b) {
  const GadgetDecomposer validate(gadget);
  require(galois_element % params.ring.t() != 0 && galois_element < params.ring.M(),
          ErrorCode::invalid_argument,
          "key-switching key: Galois element " + std::to_string(galois_element) +
              " is not a unit below M = " + std::to_string(params.ring.M()));
  require(seeds.size() == gadget.levels &&
              torus_b.size() == std::size_t{gadget.levels} * params.ring.N(),
          ErrorCode::size_mismatch,
          "key-switching key: expected " + std::to_string(gadget.levels) + " seeds and " +
              std::to_string(gadget.levels) + " x " + std::to_string(params.ring.N()) +
              " words, got " + std::to_string(seeds.size()) + " and " +
              std::to_string(torus_b.size()));
  KeySwitchKey ksk(params, galois_element, gadget);
  ksk.seeds_ = std::move(seeds);
  ksk.b_ = std::move(torus_b);
  ksk.build_ntt_form();
  return ksk;
}

// ---- Key switching ----------------------------------------------------------------------------

namespace {

// sum_i |d_i|: l terms, |d_i| <= ceil(D/2).
u128 digit_sum(const Gadget& gadget) {
  return static_cast<u128>(gadget.levels) * ((gadget.base + 1) / 2);
}

}  // namespace

ring::LimbSplit key_split(const ParameterSet& params, const Gadget& gadget) {
  const ring::LimbProduct& product = ring::LimbProduct::shared(params.ring);
  // t - 1 switches summed before their inverse transforms (a merge of the trees).
  const u128 sum = digit_sum(gadget) * (params.ring.t() - 1);
  // Beyond the two-limb bound: two limbs, the merges in smaller groups (KeySwitcher::fan_in; the
  // KeySwitcher refuses a gadget beyond it for one switch, require_exact_key_switching).
  if (sum > product.small_bound(ring::LimbSplit::exact())) return ring::LimbSplit::exact();
  const ring::LimbSplit one = product.finest_rounding(static_cast<std::uint64_t>(sum));
  return key_rounding_variance(params, one) <= params.sigma() * params.sigma() / 256
             ? one
             : ring::LimbSplit::exact();
}

void require_exact_key_switching(const ring::RingParams& ring, const Gadget& gadget) {
  // sum_i d_i a_i: l terms, each a_i split in 32-bit limbs.
  const std::uint64_t bound = ring::LimbProduct::shared(ring).small_bound();
  const u128 digit_sum = rlwe::digit_sum(gadget);
  require(digit_sum <= bound, ErrorCode::invalid_parameters,
          "gadget " + std::to_string(gadget.base) + "^" + std::to_string(gadget.levels) +
              " is too wide for exact key switching: l ceil(D/2) exceeds " + std::to_string(bound) +
              ", the bound of one 62-bit prime with 32-bit key limbs");
}

KeySwitcher::KeySwitcher(const ParameterSet& params, const Gadget& gadget)
    : params_(params),
      decomposer_(gadget),
      split_(key_split(params, gadget)),
      product_(&ring::LimbProduct::shared(params.ring)),
      digits_(std::size_t{gadget.levels} * params.ring.N()),
      digit_ntt_(std::size_t{gadget.levels} * params.ring.N()),
      acc_a_(split_.limbs * std::size_t{params.ring.N()}),
      acc_b_(split_.limbs * std::size_t{params.ring.N()}),
      sum_b_(params.ring),
      sigma_(params.ring),
      sum_sigma_b_(params.ring) {
  require_exact_key_switching(params.ring, gadget);
  fan_in_ = static_cast<std::uint32_t>(
      std::min<u128>(product_->small_bound(split_) / digit_sum(gadget), params.ring.t()));
}

void KeySwitcher::check_key(const KeySwitchKey& key) const {
  if (!(key.ring() == params_.ring && key.gadget() == decomposer_.gadget() &&
        key.split() == split_))
    throw Error(ErrorCode::size_mismatch,
                "key switch: key of ring " + key.ring().name() + " and gadget " +
                    std::to_string(key.gadget().base) + "^" + std::to_string(key.gadget().levels) +
                    " in " + std::to_string(key.split().limbs) + " limb(s), switcher of ring " +
                    params_.ring.name() + " and gadget " + std::to_string(gadget().base) + "^" +
                    std::to_string(gadget().levels) + " in " + std::to_string(split_.limbs) +
                    " limb(s)");
}

void KeySwitcher::key_switch(const KeySwitchKey& key, const Ciphertext& in, Ciphertext& out) {
  check_key(key);
  require_ring(in, params_.ring, "KeySwitcher::key_switch input");
  require_ring(out, params_.ring, "KeySwitcher::key_switch output");
  const std::size_t n = params_.ring.N(), acc_words = split_.limbs * n;
  std::fill(acc_a_.data(), acc_a_.data() + acc_words, u64{0});
  std::fill(acc_b_.data(), acc_b_.data() + acc_words, u64{0});
  accumulate_products(key, in.a.coeffs());
  // (a_out, b_out) = (-sum d_i a_i, b' - sum d_i b_i); out may alias in (in.a is consumed).
  product_->from_ntt({acc_b_.data(), acc_words}, split_, sum_b_.coeffs());
  for (std::size_t j = 0; j < n; ++j)
    out.b[j] = in.b[j] - sum_b_[j];
  product_->from_ntt({acc_a_.data(), acc_words}, split_, out.a.coeffs());
  for (u64& x : out.a.coeffs())
    x = u64{0} - x;
  ++count_;
}

void KeySwitcher::accumulate_products(const KeySwitchKey& key, std::span<const u64> a) {
  const std::size_t n = params_.ring.N();
  decomposer_.decompose(a, {digits_.data(), digits_.size()});
  const std::uint32_t levels = gadget().levels;
  digit_terms_.resize(levels);
  key_a_.resize(levels);
  key_b_.resize(levels);
  for (std::uint32_t i = 0; i < levels; ++i) {
    u64* digit_ntt = digit_ntt_.data() + i * n;
    product_->small_to_ntt({digits_.data() + i * n, n}, {digit_ntt, n});
    digit_terms_[i] = digit_ntt;
    key_a_[i] = key.limb_a(i).data();
    key_b_[i] = key.limb_b(i).data();
  }
  const std::size_t acc_words = split_.limbs * n;
  product_->multiply_accumulate(digit_terms_, key_a_, split_, {acc_a_.data(), acc_words});
  product_->multiply_accumulate(digit_terms_, key_b_, split_, {acc_b_.data(), acc_words});
}

void KeySwitcher::automorphism_sum(std::span<const KeySwitchKey* const> keys,
                                   std::span<const Ciphertext* const> in, Ciphertext& out) {
  require_ring(out, params_.ring, "KeySwitcher::automorphism_sum output");
  std::vector<const u64*> in_a(in.size()), in_b(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    require_ring(*in[i], params_.ring, "KeySwitcher::automorphism_sum input");
    in_a[i] = in[i]->a.coeffs().data();
    in_b[i] = in[i]->b.coeffs().data();
  }
  automorphism_sum(keys, in_a, in_b, out.a.coeffs(), out.b.coeffs());
}

void KeySwitcher::automorphism_sum(std::span<const KeySwitchKey* const> keys,
                                   std::span<const u64* const> in_a,
                                   std::span<const u64* const> in_b, std::span<u64> out_a,
                                   std::span<u64> out_b) {
  const std::size_t n = params_.ring.N(), acc_words = split_.limbs * n;
  require(keys.size() == in_a.size() && keys.size() == in_b.size(), ErrorCode::size_mismatch,
          "automorphism_sum: one key per ciphertext");
  require(out_a.size() == n && out_b.size() == n, ErrorCode::size_mismatch,
          "automorphism_sum: output of another ring");
  for (const KeySwitchKey* key : keys)
    check_key(*key);
  for (std::size_t first = 0; first < keys.size(); first += fan_in_) {
    const std::size_t last = std::min(keys.size(), first + fan_in_);
    std::fill(acc_a_.data(), acc_a_.data() + acc_words, u64{0});
    std::fill(acc_b_.data(), acc_b_.data() + acc_words, u64{0});
    std::fill(sum_sigma_b_.coeffs().begin(), sum_sigma_b_.coeffs().end(), u64{0});
    for (std::size_t i = first; i < last; ++i) {
      const std::uint64_t k = keys[i]->galois_element();
      ring::automorphism(params_.ring, std::span<const u64>(in_a[i], n), k, sigma_.a.coeffs(),
                         ring::TorusArith{});
      ring::automorphism(params_.ring, std::span<const u64>(in_b[i], n), k, sigma_.b.coeffs(),
                         ring::TorusArith{});
      accumulate_products(*keys[i], sigma_.a.coeffs());
      for (std::size_t j = 0; j < n; ++j)
        sum_sigma_b_[j] += sigma_.b[j];
      ++count_;
    }
    // (a, b) += (-sum d_i a_i, sum sigma(b) - sum d_i b_i) over the group.
    product_->from_ntt({acc_b_.data(), acc_words}, split_, sum_b_.coeffs());
    for (std::size_t j = 0; j < n; ++j)
      out_b[j] += sum_sigma_b_[j] - sum_b_[j];
    product_->from_ntt({acc_a_.data(), acc_words}, split_, sum_b_.coeffs());
    for (std::size_t j = 0; j < n; ++j)
      out_a[j] -= sum_b_[j];
  }
}

void KeySwitcher::automorphism(const KeySwitchKey& key, const Ciphertext& in, Ciphertext& out) {
  require_ring(in, params_.ring, "KeySwitcher::automorphism input");
  const std::uint64_t k = key.galois_element();
  ring::automorphism(params_.ring, in.a.coeffs(), k, sigma_.a.coeffs(), ring::TorusArith{});
  ring::automorphism(params_.ring, in.b.coeffs(), k, sigma_.b.coeffs(), ring::TorusArith{});
  key_switch(key, sigma_, out);
}

}  // namespace safhire::rlwe
