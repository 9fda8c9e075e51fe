// AVX-512 IFMA negacyclic NTT kernels for primes q < 2^50: Shoup products with 52-bit
// quotients w' = floor(w 2^52 / q), each partial product one vpmadd52 instruction. Every lazy
// value stays below 4q < 2^52, the inputs IFMA takes.
#include "simd/negacyclic_avx512-inl.hpp"

namespace safhire::ring::simd {

namespace {

using core::u64;
using negacyclic_avx512::V;

struct Mul52 {
  // y w mod q in [0, 2q) for y < 2^52: y w - floor(y w' / 2^52) q, taken mod 2^52, the
  // correction accumulated onto the product as + estimate (2^52 - q) (one instruction for two).
  static V lazy(V y, V w, V wq, V q) {
    const V zero = _mm512_setzero_si512();
    const V mask = _mm512_set1_epi64((1LL << 52) - 1);
    const V minus_q = _mm512_sub_epi64(_mm512_set1_epi64(1LL << 52), q);
    const V estimate = _mm512_madd52hi_epu64(zero, y, wq);
    const V product = _mm512_madd52lo_epu64(zero, y, w);
    return _mm512_and_si512(_mm512_madd52lo_epu64(product, estimate, minus_q), mask);
  }
  static constexpr u64 kSpread = 2;
  static V product(V y, V w, V wq, V q) { return lazy(y, w, wq, q); }

  static const std::vector<u64>& forward_quotient(const Tables& tb) {
    return tb.forward_quotient52;
  }
  static const std::vector<u64>& inverse_quotient(const Tables& tb) {
    return tb.inverse_quotient52;
  }
  static u64 n_inv_quotient(const Tables& tb) { return tb.n_inv_quotient52; }
  static u64 last_inverse_quotient(const Tables& tb) { return tb.last_inverse_quotient52; }
};

void forward(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  negacyclic_avx512::forward<Mul52>(a, n, log_n, q, tb);
}
void inverse(u64* a, std::uint32_t n, std::uint32_t log_n, u64 q, const Tables& tb) {
  negacyclic_avx512::inverse<Mul52>(a, n, log_n, q, tb);
}

}  // namespace

const NegacyclicKernels& negacyclic_kernels_ifma() {
  static const NegacyclicKernels kernels{&forward, &inverse};
  return kernels;
}

}  // namespace safhire::ring::simd
