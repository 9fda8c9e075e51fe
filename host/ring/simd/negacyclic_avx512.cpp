// AVX-512 F + DQ negacyclic NTT kernels (any q < 2^62): the lane multiplier estimates the
// Shoup quotient from three 32 x 32-bit products (at most 2 low) and corrects the remainder by
// one conditional subtraction; the low products are vpmullq. Below 2^61 the butterflies skip
// that subtraction and the values range over [0, 8q) (Mul64Loose).
#include "simd/negacyclic_avx512-inl.hpp"

namespace safhire::ring::simd {

namespace {

using core::u64;
using negacyclic_avx512::V;

struct Mul64 {
  // hi64(a b) minus 0, 1 or 2: three of the four partial products (the low halves of the cross
  // products and all of a0 b0 dropped, together below 3 2^64).
  static V mul_hi64_approx(V a, V b) {
    // vpmuludq reads the low half of each lane only: the high halves move down by a dword
    // shuffle (any port that shuffles) instead of a shift (one port on Intel's cores).
    const V a_hi = _mm512_shuffle_epi32(a, _MM_PERM_DDBB),
            b_hi = _mm512_shuffle_epi32(b, _MM_PERM_DDBB);
    const V lohi = _mm512_mul_epu32(a, b_hi);
    const V hilo = _mm512_mul_epu32(a_hi, b);
    const V hihi = _mm512_mul_epu32(a_hi, b_hi);
    return _mm512_add_epi64(
        hihi, _mm512_add_epi64(_mm512_srli_epi64(lohi, 32), _mm512_srli_epi64(hilo, 32)));
  }

  // y w mod q in [0, 2q) for any y (Shoup): the approximate quotient leaves [0, 4q), one
  // conditional subtraction of 2q brings it back (q < 2^62).
  static V lazy(V y, V w, V wq, V q) {
    const V estimate = mul_hi64_approx(y, wq);
    const V r = _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(estimate, q));
    const V q2 = _mm512_add_epi64(q, q);
    return _mm512_min_epu64(r, _mm512_sub_epi64(r, q2));
  }

  static constexpr u64 kSpread = 2;
  static V product(V y, V w, V wq, V q) { return lazy(y, w, wq, q); }

  static const std::vector<u64>& forward_quotient(const Tables& tb) { return tb.forward_quotient; }
  static const std::vector<u64>& inverse_quotient(const Tables& tb) { return tb.inverse_quotient; }
  static u64 n_inv_quotient(const Tables& tb) { return tb.n_inv_quotient; }
  static u64 last_inverse_quotient(const Tables& tb) { return tb.last_inverse_quotient; }
};

// Mul64 with the forward products left in [0, 4q) (no conditional subtraction), for q < 2^61:
// the forward values then stay below 8q < 2^64.
struct Mul64Loose : Mul64 {
  static constexpr u64 kSpread = 4;
  static V product(V y, V w, V wq, V q) {
    const V estimate = mul_hi64_approx(y, wq);
    return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(estimate, q));
  }
};

void forward(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (q < (u64{1} << 61)) {
    negacyclic_avx512::forward<Mul64Loose>(a, n, log_n, q, tb);
  } else {
    negacyclic_avx512::forward<Mul64>(a, n, log_n, q, tb);
  }
}
void inverse(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  if (q < (u64{1} << 61)) {
    negacyclic_avx512::inverse<Mul64Loose>(a, n, log_n, q, tb);
  } else {
    negacyclic_avx512::inverse<Mul64>(a, n, log_n, q, tb);
  }
}

}  // namespace

const NegacyclicKernels& negacyclic_kernels_avx512() {
  static const NegacyclicKernels kernels{&forward, &inverse};
  return kernels;
}

}  // namespace safhire::ring::simd
