// Exact products in Z_{2^64}[X]/Phi_M(X). There is no M-th root of unity mod
// 2^64, so the product is computed exactly over the integers, modulo Q = q1 q2 for two ~62-bit
// NTT primes, and brought back by the centred CRT. Exact when the true coefficients lie in
// (-Q/2, Q/2], which holds when (2t-3) m |a|_inf |b|_inf <= (Q-1)/2 (the worst-case expansion
// delta N = (2t-3) m of §1.2): torus times small (a secret, a gadget digit), never torus times
// torus.
//
// ExactProduct runs the direct radix-t NTT; PaddedProduct is an independent second path, a cyclic
// power-of-two NTT of length >= 2N-1 followed by the reduction mod Phi_M, kept as a cross-check
// and as the comparison the radix-t design has to beat.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/core/crt.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::ring {

namespace simd {
struct KernelTable;
}

// Largest |c| of a centred torus word c, as an unsigned value (|-2^63| = 2^63).
std::uint64_t centred_abs(std::uint64_t word);
std::uint64_t norm_inf(std::span<const std::uint64_t> torus_poly);

class ExactProduct {
 public:
  // The two largest primes q = 1 (mod M) below 2^62.
  explicit ExactProduct(const RingParams& ring, SimdIsa isa = default_simd());
  ExactProduct(const RingParams& ring, std::uint64_t q1, std::uint64_t q2,
               SimdIsa isa = default_simd());

  const RingParams& ring() const { return plans_[0].ring(); }
  const NttPlan& plan(int i) const { return plans_[i]; }
  const core::Crt2& crt() const { return crt_; }

  // True when |a|_inf |b|_inf is within the exactness bound above.
  bool bound_holds(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) const;
  // The bound itself: the largest |a|_inf |b|_inf (summed over the terms of a sum of products)
  // for which the result is exact.
  core::u128 product_bound() const { return bound_; }

  // A process-wide instance for `ring` (default primes, default kernels), built on first use.
  static const ExactProduct& shared(const RingParams& ring);

  // out = a * b mod Phi_M in Z_{2^64}; a, b, out hold N torus words (out may alias a or b).
  // The bound is checked in debug builds (ErrorCode::internal when it fails); a caller that
  // breaks it in a release build gets a wrong product. Every method is const and thread-safe
  // (scratch is per thread).
  void multiply(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b,
                std::span<std::uint64_t> out) const;

  // The same product in steps, for sums of products sharing one inverse transform (key
  // switching has its own one-prime form, LimbProduct below). "RNS-NTT form" is 2N words: the
  // NTT of the residues mod q1, then mod q2.
  // torus (N words, read as signed) -> its RNS-NTT form.
  void to_ntt(std::span<const std::uint64_t> torus, std::span<std::uint64_t> rns) const;
  // acc += x * y in RNS-NTT form (Montgomery products: the 2^-64 they leave is cancelled by
  // from_ntt, so acc must start at zero and collect only such products).
  void multiply_accumulate(std::span<const std::uint64_t> x, std::span<const std::uint64_t> y,
                           std::span<std::uint64_t> acc) const;
  // acc (consumed: transformed in place) -> the exact integer sum mod 2^64, as N torus words.
  // Exact while the true coefficients of the sum lie in (-Q/2, Q/2].
  void from_ntt(std::span<std::uint64_t> acc, std::span<std::uint64_t> torus) const;

 private:
  ExactProduct(const RingParams& ring, const std::vector<std::uint64_t>& primes, SimdIsa isa);

  NttPlan plans_[2];
  core::Crt2 crt_;
  core::u128 bound_;  // max |a|_inf |b|_inf
  const simd::KernelTable* kernels_;
};

// How LimbProduct carries a torus operand y.
//  - Two limbs (the default, exact): y = lo + 2^32 hi, lo and hi centred 32-bit integers.
//  - One limb, rounded: y is replaced by Y 2^shift, Y = round(y / 2^shift) a centred
//    (64 - shift)-bit integer, so that y moves by at most 2^(shift - 1). Half the products and
//    half the inverse transforms; for key switching where the key's noise is far above the
//    rounding (rlwe::key_split).
struct LimbSplit {
  std::uint32_t limbs = 2;  // 1 or 2
  std::uint32_t shift = 0;  // one limb: 1 <= shift < 64; two limbs: 0

  static constexpr LimbSplit exact() { return {2, 0}; }
  static constexpr LimbSplit rounded(std::uint32_t shift) { return {1, shift}; }
  // The largest |limb|: 2^31 for two limbs, 2^(63 - shift) for one.
  std::uint32_t limb_bits() const { return limbs == 2 ? 31 : 63 - shift; }
  bool operator==(const LimbSplit&) const = default;
};

// Sums of products small x torus (key switching: gadget digits times key words) with ONE NTT
// prime q < 2^62: the torus operand y is split into limbs (LimbSplit), two centred 32-bit limbs
// y = lo + 2^32 hi with lo, hi in [-2^31, 2^31) when exact, so that
//   sum_k x_k y_k = sum_k x_k lo_k + 2^32 sum_k x_k hi_k   (mod 2^64),
// and each limb sum is exact mod q while (2t-3) m 2^31 sum_k |x_k|_inf <= (q-1)/2 (2^(63 - shift)
// in place of 2^31 for one rounded limb). Against ExactProduct's two primes, a small operand
// costs one forward transform instead of two; the inverse transforms are one per limb. Exact
// splits give ExactProduct's words.
class LimbProduct {
 public:
  // The largest prime q = 1 (mod M) below 2^62 (ExactProduct's first).
  explicit LimbProduct(const RingParams& ring, SimdIsa isa = default_simd());

  const RingParams& ring() const { return plan_.ring(); }
  const NttPlan& plan() const { return plan_; }
  // The largest sum over the terms of |x_k|_inf for which the result is exact.
  std::uint64_t small_bound(LimbSplit split = LimbSplit::exact()) const;
  // The one-limb split of least shift (finest rounding) whose bound is at least small_sum;
  // throws ErrorCode::invalid_argument when none is (small_sum beyond the two-limb bound's 2^31
  // reach).
  LimbSplit finest_rounding(std::uint64_t small_sum) const;

  // A process-wide instance for `ring` (default kernels), built on first use.
  static const LimbProduct& shared(const RingParams& ring);

  // Small operand x (N torus words, read as signed) -> its NTT mod q (N words).
  void small_to_ntt(std::span<const std::uint64_t> small, std::span<std::uint64_t> ntt) const;
  // Torus operand y (N words) -> its limb-NTT form: the NTT of each limb, low limb first
  // (split.limbs N words).
  void torus_to_ntt(std::span<const std::uint64_t> torus, LimbSplit split,
                    std::span<std::uint64_t> limbs) const;
  // acc += sum_k xs[k] * ys[k]: xs[k] N words from small_to_ntt, ys[k] from torus_to_ntt with
  // `split`, acc split.limbs N words (Montgomery products, cancelled by from_ntt: acc starts at
  // zero).
  void multiply_accumulate(std::span<const std::uint64_t* const> xs,
                           std::span<const std::uint64_t* const> ys, LimbSplit split,
                           std::span<std::uint64_t> acc) const;
  // acc (consumed: transformed in place) -> the exact integer sum mod 2^64, as N torus words.
  void from_ntt(std::span<std::uint64_t> acc, LimbSplit split,
                std::span<std::uint64_t> torus) const;

 private:
  void require_split(LimbSplit split, std::size_t words, const char* what) const;

  NttPlan plan_;
  const simd::KernelTable* kernels_;
};

class PaddedProduct {
 public:
  // Transform length L = the least power of two >= 2N - 1; primes q = 1 (mod L) below 2^62.
  explicit PaddedProduct(const RingParams& ring, SimdIsa isa = default_simd());

  std::uint32_t transform_length() const { return 1U << log_length_; }
  const core::Crt2& crt() const { return crt_; }

  // Same contract as ExactProduct::multiply.
  void multiply(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b,
                std::span<std::uint64_t> out);

 private:
  struct PrimeTables {
    std::uint64_t q = 0, q_inv = 0, word_ratio = 0, two64_mod_q = 0;
    TwiddleTables twiddles;
    std::uint64_t scale = 0, scale_quotient = 0;
  };
  RingParams ring_;
  std::uint32_t log_length_;
  PrimeTables primes_[2];
  core::Crt2 crt_;
  const simd::KernelTable* kernels_;
  AlignedWords scratch_;  // [prime][a, b][L], then the 2N-1 words of the integer product
};

}  // namespace safhire::ring
