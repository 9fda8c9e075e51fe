// "Lanes" types for the CPU kernels: a register of 64-bit words and the handful of operations the
// modular arithmetic needs (see include/safhire/ring/detail/dft_small.hpp). Included once per
// instruction set inside namespace SAFHIRE_SIMD_NS (no include guard, like Highway's -inl
// headers), so that every type and function here is distinct per instruction set and no code
// compiled for AVX-512 can be picked by the linker for a caller on a machine without it.
//
// Every instruction-set namespace has Lanes1 (one word, plain C++) for narrow loops; the AVX2 and
// AVX-512 translation units add Lanes4 and Lanes8. The linear layer on 32-bit torus words has its
// own, smaller set: Words1 (plain C++), Words8 (AVX2) and Words16 (AVX-512), as LanesWords.

struct Lanes1 {
  using Reg = std::uint64_t;
  static constexpr std::uint32_t kLanes = 1;
  static constexpr bool kFastMullo = true;  // a 64x64 -> 64 multiply is one instruction
  static Reg load(const std::uint64_t* p) { return *p; }
  static void store(std::uint64_t* p, Reg v) { *p = v; }
  static Reg load_n(const std::uint64_t* p, std::uint32_t) { return *p; }
  static void store_n(std::uint64_t* p, Reg v, std::uint32_t) { *p = v; }
  // The low 32 bits of each of the first n lanes, to consecutive 32-bit words.
  static void store_low32_n(std::uint32_t* p, Reg v, std::uint32_t) {
    *p = static_cast<std::uint32_t>(v);
  }
  static Reg set1(std::uint64_t x) { return x; }
  static Reg zero() { return 0; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg min(Reg a, Reg b) { return a < b ? a : b; }
  static Reg mullo(Reg a, Reg b) { return a * b; }
  static Reg mulhi(Reg a, Reg b) {
    __extension__ typedef unsigned __int128 Wide;
    return static_cast<Reg>((static_cast<Wide>(a) * b) >> 64);
  }
  static Reg mulhi_approx(Reg a, Reg b) { return mulhi(a, b); }  // exact is cheapest here
  // Low 32 bits of a times low 32 bits of b, the whole 64-bit product; a's high 32 bits.
  static Reg mul32(Reg a, Reg b) { return (a & 0xffffffffU) * (b & 0xffffffffU); }
  // The whole 128-bit product: returns the low word, the high one in hi.
  static Reg mul_wide(Reg a, Reg b, Reg& hi) {
    __extension__ typedef unsigned __int128 Wide;
    const Wide p = static_cast<Wide>(a) * b;
    hi = static_cast<Reg>(p >> 64);
    return static_cast<Reg>(p);
  }
  static Reg shr32(Reg a) { return a >> 32; }
  static Reg shl32(Reg a) { return a << 32; }
  static Reg shl(Reg a, std::uint32_t s) { return a << s; }  // s < 64
  static Reg shr1(Reg a) { return a >> 1; }
  static Reg bit_and(Reg a, Reg b) { return a & b; }
  static Reg bit_or(Reg a, Reg b) { return a | b; }
  static Reg bit_xor(Reg a, Reg b) { return a ^ b; }
  // All-ones where the condition holds.
  static Reg gt(Reg a, Reg b) { return a > b ? ~Reg{0} : Reg{0}; }
  static Reg eq(Reg a, Reg b) { return a == b ? ~Reg{0} : Reg{0}; }
  static Reg sign_mask(Reg a) { return (a >> 63) != 0 ? ~Reg{0} : Reg{0}; }
};

// One 32-bit word: the operations of the linear layer mod 2^32.
struct Words1 {
  using Word = std::uint32_t;
  using Reg = std::uint32_t;
  static constexpr std::uint32_t kLanes = 1;
  static constexpr bool kFastMullo = true;
  static Reg load(const Word* p) { return *p; }
  static void store(Word* p, Reg v) { *p = v; }
  static Reg set1(Word x) { return x; }
  static Reg zero() { return 0; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg mullo(Reg a, Reg b) { return a * b; }
  static Reg bit_xor(Reg a, Reg b) { return a ^ b; }
};

#if defined(SAFHIRE_SIMD_AVX512)
struct Lanes8 {
  using Reg = __m512i;
  static constexpr std::uint32_t kLanes = 8;
  static constexpr bool kFastMullo = true;  // vpmullq (AVX-512DQ)
  static Reg load(const std::uint64_t* p) { return _mm512_loadu_si512(p); }
  static void store(std::uint64_t* p, Reg v) { _mm512_storeu_si512(p, v); }
  static __mmask8 mask(std::uint32_t n) { return static_cast<__mmask8>((1U << n) - 1U); }
  static Reg load_n(const std::uint64_t* p, std::uint32_t n) {
    return n == kLanes ? load(p) : _mm512_maskz_loadu_epi64(mask(n), p);
  }
  static void store_n(std::uint64_t* p, Reg v, std::uint32_t n) {
    if (n == kLanes) {
      store(p, v);
    } else {
      _mm512_mask_storeu_epi64(p, mask(n), v);
    }
  }
  static void store_low32_n(std::uint32_t* p, Reg v, std::uint32_t n) {
    _mm512_mask_cvtepi64_storeu_epi32(p, mask(n), v);
  }
  static Reg set1(std::uint64_t x) { return _mm512_set1_epi64(static_cast<long long>(x)); }
  static Reg zero() { return _mm512_setzero_si512(); }
  static Reg add(Reg a, Reg b) { return _mm512_add_epi64(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_epi64(a, b); }
  static Reg min(Reg a, Reg b) { return _mm512_min_epu64(a, b); }
  static Reg mullo(Reg a, Reg b) { return _mm512_mullo_epi64(a, b); }
  // High word of a 64x64 product (mul_wide's; the unused low word is dropped by the compiler).
  static Reg mulhi(Reg a, Reg b) {
    Reg hi;
    mul_wide(a, b, hi);
    return hi;
  }
  // hi(a b) - {0, 1, 2}: the high word without the lowest partial product's carries.
  static Reg mulhi_approx(Reg a, Reg b) {
    const Reg a_hi = _mm512_srli_epi64(a, 32);
    const Reg b_hi = _mm512_srli_epi64(b, 32);
    const Reg lh = _mm512_mul_epu32(a, b_hi);
    const Reg hl = _mm512_mul_epu32(a_hi, b);
    const Reg hh = _mm512_mul_epu32(a_hi, b_hi);
    return _mm512_add_epi64(hh,
                            _mm512_add_epi64(_mm512_srli_epi64(lh, 32), _mm512_srli_epi64(hl, 32)));
  }
  static Reg mul32(Reg a, Reg b) { return _mm512_mul_epu32(a, b); }
  // The whole 128-bit product from four 32x32 products: the low word, the high one in hi.
  static Reg mul_wide(Reg a, Reg b, Reg& hi) {
    const Reg low32 = _mm512_set1_epi64(0xffffffffLL);
    const Reg a_hi = _mm512_srli_epi64(a, 32);
    const Reg b_hi = _mm512_srli_epi64(b, 32);
    const Reg ll = _mm512_mul_epu32(a, b);
    const Reg lh = _mm512_mul_epu32(a, b_hi);
    const Reg hl = _mm512_mul_epu32(a_hi, b);
    const Reg hh = _mm512_mul_epu32(a_hi, b_hi);
    const Reg mid =
        _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, low32)),
                         _mm512_and_si512(hl, low32));
    hi = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                          _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32)));
    return _mm512_add_epi64(ll, _mm512_slli_epi64(_mm512_add_epi64(lh, hl), 32));
  }
  static Reg shr32(Reg a) { return _mm512_srli_epi64(a, 32); }
  static Reg shl32(Reg a) { return _mm512_slli_epi64(a, 32); }
  static Reg shl(Reg a, std::uint32_t s) {
    return _mm512_sll_epi64(a, _mm_cvtsi32_si128(static_cast<int>(s)));
  }
  static Reg shr1(Reg a) { return _mm512_srli_epi64(a, 1); }
  static Reg bit_and(Reg a, Reg b) { return _mm512_and_si512(a, b); }
  static Reg bit_or(Reg a, Reg b) { return _mm512_or_si512(a, b); }
  static Reg bit_xor(Reg a, Reg b) { return _mm512_xor_si512(a, b); }
  static Reg gt(Reg a, Reg b) { return _mm512_movm_epi64(_mm512_cmpgt_epu64_mask(a, b)); }
  static Reg eq(Reg a, Reg b) { return _mm512_movm_epi64(_mm512_cmpeq_epu64_mask(a, b)); }
  static Reg sign_mask(Reg a) { return _mm512_srai_epi64(a, 63); }
};
using LanesWide = Lanes8;

struct Words16 {
  using Word = std::uint32_t;
  using Reg = __m512i;
  static constexpr std::uint32_t kLanes = 16;
  static constexpr bool kFastMullo = true;  // vpmulld
  static Reg load(const Word* p) { return _mm512_loadu_si512(p); }
  static void store(Word* p, Reg v) { _mm512_storeu_si512(p, v); }
  static Reg set1(Word x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static Reg zero() { return _mm512_setzero_si512(); }
  static Reg add(Reg a, Reg b) { return _mm512_add_epi32(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_epi32(a, b); }
  static Reg mullo(Reg a, Reg b) { return _mm512_mullo_epi32(a, b); }
  static Reg bit_xor(Reg a, Reg b) { return _mm512_xor_si512(a, b); }
};
using LanesWords = Words16;
#elif defined(SAFHIRE_SIMD_AVX2)
struct Lanes4 {
  using Reg = __m256i;
  static constexpr std::uint32_t kLanes = 4;
  static constexpr bool kFastMullo = false;  // mullo takes three 32x32 products
  static Reg load(const std::uint64_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void store(std::uint64_t* p, Reg v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static Reg mask(std::uint32_t n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(n)),
                              _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static Reg load_n(const std::uint64_t* p, std::uint32_t n) {
    return n == kLanes ? load(p)
                       : _mm256_maskload_epi64(reinterpret_cast<const long long*>(p), mask(n));
  }
  static void store_n(std::uint64_t* p, Reg v, std::uint32_t n) {
    if (n == kLanes) {
      store(p, v);
    } else {
      _mm256_maskstore_epi64(reinterpret_cast<long long*>(p), mask(n), v);
    }
  }
  static void store_low32_n(std::uint32_t* p, Reg v, std::uint32_t n) {
    const __m128i low = _mm256_castsi256_si128(
        _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)));
    if (n == kLanes) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), low);
    } else {
      const __m128i lanes =
          _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(n)), _mm_setr_epi32(0, 1, 2, 3));
      _mm_maskstore_epi32(reinterpret_cast<int*>(p), lanes, low);
    }
  }
  static Reg set1(std::uint64_t x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }
  static Reg zero() { return _mm256_setzero_si256(); }
  static Reg add(Reg a, Reg b) { return _mm256_add_epi64(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_epi64(a, b); }
  static Reg flip(Reg a) { return _mm256_xor_si256(a, _mm256_set1_epi64x(LLONG_MIN)); }
  static Reg gt(Reg a, Reg b) { return _mm256_cmpgt_epi64(flip(a), flip(b)); }
  static Reg eq(Reg a, Reg b) { return _mm256_cmpeq_epi64(a, b); }
  static Reg min(Reg a, Reg b) { return _mm256_blendv_epi8(a, b, gt(a, b)); }
  static Reg mullo(Reg a, Reg b) {
    const Reg ll = _mm256_mul_epu32(a, b);
    const Reg cross = _mm256_add_epi64(_mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)),
                                       _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
  }
  // High word of a 64x64 product (mul_wide's; the unused low word is dropped by the compiler).
  static Reg mulhi(Reg a, Reg b) {
    Reg hi;
    mul_wide(a, b, hi);
    return hi;
  }
  static Reg mulhi_approx(Reg a, Reg b) {
    const Reg a_hi = _mm256_srli_epi64(a, 32);
    const Reg b_hi = _mm256_srli_epi64(b, 32);
    const Reg lh = _mm256_mul_epu32(a, b_hi);
    const Reg hl = _mm256_mul_epu32(a_hi, b);
    const Reg hh = _mm256_mul_epu32(a_hi, b_hi);
    return _mm256_add_epi64(hh,
                            _mm256_add_epi64(_mm256_srli_epi64(lh, 32), _mm256_srli_epi64(hl, 32)));
  }
  static Reg mul32(Reg a, Reg b) { return _mm256_mul_epu32(a, b); }
  // The whole 128-bit product from four 32x32 products: the low word, the high one in hi.
  static Reg mul_wide(Reg a, Reg b, Reg& hi) {
    const Reg low32 = _mm256_set1_epi64x(0xffffffffLL);
    const Reg a_hi = _mm256_srli_epi64(a, 32);
    const Reg b_hi = _mm256_srli_epi64(b, 32);
    const Reg ll = _mm256_mul_epu32(a, b);
    const Reg lh = _mm256_mul_epu32(a, b_hi);
    const Reg hl = _mm256_mul_epu32(a_hi, b);
    const Reg hh = _mm256_mul_epu32(a_hi, b_hi);
    const Reg mid =
        _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, low32)),
                         _mm256_and_si256(hl, low32));
    hi = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                          _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(_mm256_add_epi64(lh, hl), 32));
  }
  static Reg shr32(Reg a) { return _mm256_srli_epi64(a, 32); }
  static Reg shl32(Reg a) { return _mm256_slli_epi64(a, 32); }
  static Reg shl(Reg a, std::uint32_t s) {
    return _mm256_sll_epi64(a, _mm_cvtsi32_si128(static_cast<int>(s)));
  }
  static Reg shr1(Reg a) { return _mm256_srli_epi64(a, 1); }
  static Reg bit_and(Reg a, Reg b) { return _mm256_and_si256(a, b); }
  static Reg bit_or(Reg a, Reg b) { return _mm256_or_si256(a, b); }
  static Reg bit_xor(Reg a, Reg b) { return _mm256_xor_si256(a, b); }
  static Reg sign_mask(Reg a) { return _mm256_cmpgt_epi64(_mm256_setzero_si256(), a); }
};
using LanesWide = Lanes4;

struct Words8 {
  using Word = std::uint32_t;
  using Reg = __m256i;
  static constexpr std::uint32_t kLanes = 8;
  static constexpr bool kFastMullo = true;  // vpmulld
  static Reg load(const Word* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(Word* p, Reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static Reg set1(Word x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static Reg zero() { return _mm256_setzero_si256(); }
  static Reg add(Reg a, Reg b) { return _mm256_add_epi32(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_epi32(a, b); }
  static Reg mullo(Reg a, Reg b) { return _mm256_mullo_epi32(a, b); }
  static Reg bit_xor(Reg a, Reg b) { return _mm256_xor_si256(a, b); }
};
using LanesWords = Words8;
#else
using LanesWide = Lanes1;
using LanesWords = Words1;
#endif
