#include "safhire/ring/product.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "simd/dispatch.hpp"
#include "twiddle_tree.hpp"

namespace safhire::ring {

using core::u128;

std::uint64_t centred_abs(std::uint64_t word) {
  return (word >> 63) != 0 ? u64{0} - word : word;
}

std::uint64_t norm_inf(std::span<const std::uint64_t> torus_poly) {
  u64 norm = 0;
  for (u64 w : torus_poly)
    norm = std::max(norm, centred_abs(w));
  return norm;
}

namespace {

std::vector<u64> largest_primes(const RingParams& ring) {
  return core::primes_below(62, ring.M(), 2);
}

// max |a|_inf |b|_inf such that (2t-3) m |a| |b| <= (Q-1)/2.
u128 exactness_bound(const RingParams& ring, u64 q1, u64 q2) {
  const u128 half_q = (static_cast<u128>(q1) * q2 - 1) / 2;
  return half_q / (static_cast<u128>(2 * ring.t() - 3) * ring.m());
}

// One process-wide Product per ring (default primes and kernels), built on first use.
template <class Product>
const Product& shared_instance(const RingParams& ring) {
  static std::mutex mutex;
  static std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<Product>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{ring.t(), ring.a()}];
  if (!slot) slot = std::make_unique<Product>(ring);
  return *slot;
}

}  // namespace

// ---- ExactProduct ------------------------------------------------------------------------------

ExactProduct::ExactProduct(const RingParams& ring, SimdIsa isa)
    : ExactProduct(ring, largest_primes(ring), isa) {}

ExactProduct::ExactProduct(const RingParams& ring, const std::vector<u64>& primes, SimdIsa isa)
    : ExactProduct(ring, primes.at(0), primes.at(1), isa) {}

ExactProduct::ExactProduct(const RingParams& ring, u64 q1, u64 q2, SimdIsa isa)
    : plans_{NttPlan::for_prime(ring, q1, isa), NttPlan::for_prime(ring, q2, isa)},
      crt_(core::Crt2::make(q1, q2)),
      bound_(exactness_bound(ring, q1, q2)),
      kernels_(&simd::checked_kernels(isa)) {}

const ExactProduct& ExactProduct::shared(const RingParams& ring) {
  return shared_instance<ExactProduct>(ring);
}

bool ExactProduct::bound_holds(std::span<const u64> a, std::span<const u64> b) const {
  return static_cast<u128>(norm_inf(a)) * norm_inf(b) <= bound_;
}

void ExactProduct::to_ntt(std::span<const u64> torus, std::span<u64> rns) const {
  const std::size_t n = ring().N();
  require_degree(ring(), torus.size(), "ExactProduct::to_ntt input");
  require(rns.size() == 2 * n, ErrorCode::size_mismatch, "ExactProduct::to_ntt: expected 2N words");
  for (int i = 0; i < 2; ++i) {
    const NttTables& tb = plans_[i].tables();
    kernels_->lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, torus.data(), rns.data() + i * n, n);
    plans_[i].forward(rns.subspan(i * n, n));
  }
}

void ExactProduct::multiply_accumulate(std::span<const u64> x, std::span<const u64> y,
                                       std::span<u64> acc) const {
  const std::size_t n = ring().N();
  require(x.size() == 2 * n && y.size() == 2 * n && acc.size() == 2 * n, ErrorCode::size_mismatch,
          "ExactProduct::multiply_accumulate: expected 2N words per operand");
  for (int i = 0; i < 2; ++i) {
    const NttTables& tb = plans_[i].tables();
    kernels_->pointwise_montgomery_accumulate(tb.q, tb.montgomery_q_inv, x.data() + i * n,
                                              y.data() + i * n, acc.data() + i * n, n);
  }
}

void ExactProduct::from_ntt(std::span<u64> acc, std::span<u64> torus) const {
  const std::size_t n = ring().N();
  require(acc.size() == 2 * n, ErrorCode::size_mismatch,
          "ExactProduct::from_ntt: expected 2N words");
  require_degree(ring(), torus.size(), "ExactProduct::from_ntt output");
  for (int i = 0; i < 2; ++i)
    plans_[i].inverse(acc.subspan(i * n, n), InverseScale::montgomery);
  kernels_->crt_lift(crt_, acc.data(), acc.data() + n, torus.data(), n);
}

void ExactProduct::multiply(std::span<const u64> a, std::span<const u64> b,
                            std::span<u64> out) const {
  const RingParams& r = ring();
  require_degree(r, a.size(), "ExactProduct::multiply a");
  require_degree(r, b.size(), "ExactProduct::multiply b");
  require_degree(r, out.size(), "ExactProduct::multiply out");
  SAFHIRE_DEBUG_ASSERT(bound_holds(a, b),
                       "ExactProduct::multiply: |a|_inf |b|_inf exceeds the exactness bound of "
                       "reference 2.4 (torus x torus needs a third prime)");
  const std::size_t n = r.N();
  thread_local AlignedWords scratch;
  if (scratch.size() < 4 * n) scratch = AlignedWords(4 * n);
  const std::span<u64> ra(scratch.data(), 2 * n), rb(scratch.data() + 2 * n, 2 * n);
  to_ntt(a, ra);
  to_ntt(b, rb);
  for (int i = 0; i < 2; ++i) {
    const NttTables& tb = plans_[i].tables();
    kernels_->pointwise_montgomery(tb.q, tb.montgomery_q_inv, ra.data() + i * n, rb.data() + i * n,
                                   ra.data() + i * n, n);
  }
  from_ntt(ra, out);
}

// ---- LimbProduct -------------------------------------------------------------------------------

LimbProduct::LimbProduct(const RingParams& ring, SimdIsa isa)
    : plan_(NttPlan::for_prime(ring, largest_primes(ring).at(0), isa)),
      kernels_(&simd::checked_kernels(isa)) {}

const LimbProduct& LimbProduct::shared(const RingParams& ring) {
  return shared_instance<LimbProduct>(ring);
}

std::uint64_t LimbProduct::small_bound(LimbSplit split) const {
  // (2t-3) m 2^limb_bits S <= (q-1)/2
  const std::uint64_t expansion = std::uint64_t{2 * ring().t() - 3} * ring().m();
  return ((plan_.modulus() - 1) / 2 >> split.limb_bits()) / expansion;
}

LimbSplit LimbProduct::finest_rounding(std::uint64_t small_sum) const {
  for (std::uint32_t shift = 1; shift <= 32; ++shift) {
    if (small_bound(LimbSplit::rounded(shift)) >= small_sum) return LimbSplit::rounded(shift);
  }
  throw Error(ErrorCode::invalid_argument, "LimbProduct: no one-limb split keeps sums of " +
                                               std::to_string(small_sum) + " exact on " +
                                               ring().name());
}

void LimbProduct::require_split(LimbSplit split, std::size_t words, const char* what) const {
  require((split.limbs == 2 && split.shift == 0) ||
              (split.limbs == 1 && split.shift >= 1 && split.shift < 64),
          ErrorCode::invalid_argument,
          std::string(what) + ": a split is two limbs, or one limb with a shift in [1, 64)");
  require(words == split.limbs * std::size_t{ring().N()}, ErrorCode::size_mismatch,
          std::string(what) + ": expected " + std::to_string(split.limbs) + "N words");
}

void LimbProduct::small_to_ntt(std::span<const u64> small, std::span<u64> ntt) const {
  const std::size_t n = ring().N();
  require_degree(ring(), small.size(), "LimbProduct::small_to_ntt input");
  require(ntt.size() == n, ErrorCode::size_mismatch, "LimbProduct::small_to_ntt: expected N words");
  const NttTables& tb = plan_.tables();
  kernels_->lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, small.data(), ntt.data(), n);
  plan_.forward(ntt);
}

void LimbProduct::torus_to_ntt(std::span<const u64> torus, LimbSplit split,
                               std::span<u64> limbs) const {
  const std::size_t n = ring().N();
  require_degree(ring(), torus.size(), "LimbProduct::torus_to_ntt input");
  require_split(split, limbs.size(), "LimbProduct::torus_to_ntt");
  std::vector<u64> split_words(split.limbs * n);
  for (std::size_t j = 0; j < n; ++j) {
    if (split.limbs == 1) {
      // Y = round(y / 2^shift), centred: the arithmetic shift of y + 2^(shift-1) read as signed.
      const u64 half = u64{1} << (split.shift - 1);
      split_words[j] = static_cast<u64>(static_cast<std::int64_t>(torus[j] + half) >> split.shift);
      continue;
    }
    // lo = the low 32 bits read as signed; hi = (y - lo) / 2^32, in [-2^31, 2^31).
    const u64 lo = static_cast<u64>(static_cast<std::int64_t>(static_cast<std::int32_t>(torus[j])));
    split_words[j] = lo;
    split_words[n + j] = static_cast<u64>(static_cast<std::int64_t>(torus[j] - lo) >> 32);
  }
  const NttTables& tb = plan_.tables();
  kernels_->lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, split_words.data(), limbs.data(),
                       split_words.size());
  plan_.forward(limbs);
}

void LimbProduct::multiply_accumulate(std::span<const u64* const> xs,
                                      std::span<const u64* const> ys, LimbSplit split,
                                      std::span<u64> acc) const {
  const std::size_t n = ring().N();
  require(xs.size() == ys.size(), ErrorCode::size_mismatch,
          "LimbProduct::multiply_accumulate: one y per x expected");
  require_split(split, acc.size(), "LimbProduct::multiply_accumulate accumulator");
  thread_local std::vector<const u64*> limb_terms;
  limb_terms.resize(xs.size());
  const NttTables& tb = plan_.tables();
  for (std::size_t limb = 0; limb < split.limbs; ++limb) {
    for (std::size_t k = 0; k < ys.size(); ++k)
      limb_terms[k] = ys[k] + limb * n;
    kernels_->pointwise_montgomery_dot(tb.q, tb.montgomery_q_inv, xs.data(), limb_terms.data(),
                                       xs.size(), acc.data() + limb * n, n);
  }
}

void LimbProduct::from_ntt(std::span<u64> acc, LimbSplit split, std::span<u64> torus) const {
  const std::size_t n = ring().N();
  require_split(split, acc.size(), "LimbProduct::from_ntt");
  require_degree(ring(), torus.size(), "LimbProduct::from_ntt output");
  plan_.inverse(acc, InverseScale::montgomery);
  if (split.limbs == 1) {
    kernels_->centred_shift(plan_.modulus(), acc.data(), split.shift, torus.data(), n);
  } else {
    kernels_->limb_combine(plan_.modulus(), acc.data(), acc.data() + n, torus.data(), n);
  }
}

// ---- PaddedProduct -----------------------------------------------------------------------------

namespace {

std::uint32_t log2_padded_length(const RingParams& ring) {
  std::uint32_t log_length = 0;
  while ((1U << log_length) < 2 * ring.N() - 1)
    ++log_length;
  return log_length;
}

}  // namespace

PaddedProduct::PaddedProduct(const RingParams& ring, SimdIsa isa)
    : ring_(ring),
      log_length_(log2_padded_length(ring)),
      kernels_(&simd::checked_kernels(isa)),
      scratch_(4 * (std::size_t{1} << log2_padded_length(ring)) + 2 * ring.N()) {
  const u64 length = u64{1} << log_length_;
  const std::vector<u64> qs = core::primes_below(62, length, 2);
  for (int i = 0; i < 2; ++i) {
    PrimeTables& p = primes_[i];
    const u64 q = qs[i];
    p.q = q;
    p.q_inv = core::inverse_mod_word(q);
    p.word_ratio = core::shoup_quotient<u64>(1, q);
    p.two64_mod_q = static_cast<u64>((static_cast<u128>(1) << 64) % q);
    const u64 omega = core::root_of_unity(q, length);
    // The t = 2 tree of X^L - 1 (one block, e = 0, of L words, levels 0..log L - 1).
    p.twiddles = build_twiddle_tree(q, omega, length, 2, {0}, 1, length, 0, log_length_).tables;
    // Fold the final scale L^-1 2^64 (which also cancels the Montgomery product) into level 0's
    // inverse twiddle, c'^-1 = 1; the kernel multiplies the other output by it too.
    p.scale = core::mul_mod(core::inv_mod(length % q, q), p.two64_mod_q, q);
    p.scale_quotient = core::shoup_quotient(p.scale, q);
    p.twiddles.inverse[0] = p.scale;
    p.twiddles.inverse_quotient[0] = p.scale_quotient;
  }
  crt_ = core::Crt2::make(qs[0], qs[1]);
}

void PaddedProduct::multiply(std::span<const u64> a, std::span<const u64> b, std::span<u64> out) {
  require_degree(ring_, a.size(), "PaddedProduct::multiply a");
  require_degree(ring_, b.size(), "PaddedProduct::multiply b");
  require_degree(ring_, out.size(), "PaddedProduct::multiply out");
  const std::size_t n = ring_.N(), length = std::size_t{1} << log_length_;
  u64* residues[2] = {scratch_.data(), scratch_.data() + 2 * length};
  for (int i = 0; i < 2; ++i) {
    const PrimeTables& p = primes_[i];
    u64* ra = residues[i];
    u64* rb = residues[i] + length;
    std::fill(ra, ra + 2 * length, u64{0});
    kernels_->lift_torus(p.q, p.word_ratio, p.two64_mod_q, a.data(), ra, n);
    kernels_->lift_torus(p.q, p.word_ratio, p.two64_mod_q, b.data(), rb, n);
    const simd::Radix2View view{
        p.q, log_length_, p.twiddles.column_level, p.twiddles.view(), p.scale, p.scale_quotient};
    kernels_->radix2_forward(view, ra, 2);
    kernels_->pointwise_montgomery(p.q, p.q_inv, ra, rb, ra, length);
    kernels_->radix2_inverse(view, ra, 1);
  }
  // The integer product has 2N-1 coefficients; lift them and reduce mod Phi_M (§1.2).
  u64* full = scratch_.data() + 4 * length;
  kernels_->crt_lift(crt_, residues[0], residues[1], full, 2 * n - 1);
  reduce_mod_phi(ring_, std::span<const u64>(full, 2 * n - 1), out, TorusArith{});
}

}  // namespace safhire::ring
