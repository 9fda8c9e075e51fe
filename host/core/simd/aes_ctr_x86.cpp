// The AES-NI and VAES counter-mode loops of aes_ctr.hpp, compiled with -maes -mvaes -mavx512f
// and called only where the processor has them. Eight blocks (AES-NI) or eight registers of
// four (VAES) are in flight per round to cover the instructions' latency.
#include <immintrin.h>

#include <cstring>

#include "safhire/core/aes_ctr.hpp"

namespace safhire::core::aes_detail {

namespace {

template <class V, int W, class Load, class Enc, class Last>
void ctr(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
         std::size_t blocks, std::uint64_t* out, Load load_key, Enc enc, Last last,
         V (*make)(std::uint64_t, std::uint64_t), void (*store)(std::uint64_t*, V)) {
  V rk[11];
  for (int r = 0; r < 11; ++r)
    rk[r] = load_key(round_keys + 16 * r);
  constexpr int kLanes = 8;
  std::size_t i = 0;
  for (; i + kLanes * W <= blocks; i += kLanes * W) {
    V x[kLanes];
    for (int k = 0; k < kLanes; ++k)
      x[k] = make(nonce, counter + i + static_cast<std::uint64_t>(k * W)) ^ rk[0];
    for (int r = 1; r < 10; ++r) {
      for (int k = 0; k < kLanes; ++k)
        x[k] = enc(x[k], rk[r]);
    }
    for (int k = 0; k < kLanes; ++k)
      store(out + 2 * (i + static_cast<std::size_t>(k * W)), last(x[k], rk[10]));
  }
  // The tail, a block at a time through a full register.
  for (; i < blocks; ++i) {
    V x = make(nonce, counter + i) ^ rk[0];
    for (int r = 1; r < 10; ++r)
      x = enc(x, rk[r]);
    std::uint64_t words[2 * W];
    store(words, last(x, rk[10]));
    std::memcpy(out + 2 * i, words, 16);
  }
}

}  // namespace

void generate_aesni(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                    std::size_t blocks, std::uint64_t* out) {
  ctr<__m128i, 1>(
      round_keys, nonce, counter, blocks, out,
      [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); },
      [](__m128i x, __m128i k) { return _mm_aesenc_si128(x, k); },
      [](__m128i x, __m128i k) { return _mm_aesenclast_si128(x, k); },
      +[](std::uint64_t n, std::uint64_t c) {
        return _mm_set_epi64x(static_cast<long long>(c), static_cast<long long>(n));
      },
      +[](std::uint64_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); });
}

void generate_vaes(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                   std::size_t blocks, std::uint64_t* out) {
  ctr<__m512i, 4>(
      round_keys, nonce, counter, blocks, out,
      [](const std::uint8_t* p) {
        return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      },
      [](__m512i x, __m512i k) { return _mm512_aesenc_epi128(x, k); },
      [](__m512i x, __m512i k) { return _mm512_aesenclast_epi128(x, k); },
      +[](std::uint64_t n, std::uint64_t c) {
        const auto ln = static_cast<long long>(n);
        return _mm512_set_epi64(static_cast<long long>(c + 3), ln, static_cast<long long>(c + 2),
                                ln, static_cast<long long>(c + 1), ln, static_cast<long long>(c),
                                ln);
      },
      +[](std::uint64_t* p, __m512i v) { _mm512_storeu_si512(p, v); });
}

}  // namespace safhire::core::aes_detail
