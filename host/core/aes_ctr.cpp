#include "safhire/core/aes_ctr.hpp"

#include <bit>
#include <cstring>

#include "safhire/core/aes_block.hpp"
#include "safhire/core/error.hpp"

#if defined(SAFHIRE_AES_X86)
#include <cpuid.h>
#endif
#if defined(SAFHIRE_AES_ARM)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace safhire::core {

static_assert(std::endian::native == std::endian::little,
              "the words of an AES stream are read little-endian");

namespace {

using u8 = std::uint8_t;

u8 gf_mul(u8 a, u8 b) {
  u8 r = 0;
  for (; b != 0; b >>= 1, a = aes::xtime(a)) {
    if ((b & 1U) != 0) r ^= a;
  }
  return r;
}

// The S-box from its definition: the inverse in GF(2^8) (0 to 0), then the affine map.
std::array<u8, 256> make_sbox() {
  std::array<u8, 256> s{};
  for (int x = 0; x < 256; ++x) {
    u8 inv = 0;
    if (x != 0) {
      u8 p = 1;  // x^254 = x^-1
      for (int e = 0; e < 254; ++e)
        p = gf_mul(p, static_cast<u8>(x));
      inv = p;
    }
    u8 y = inv;
    for (int k = 1; k <= 4; ++k)
      y ^= static_cast<u8>((inv << k) | (inv >> (8 - k)));
    s[x] = static_cast<u8>(y ^ 0x63U);
  }
  return s;
}

}  // namespace

const std::array<std::uint8_t, 256>& aes_sbox() {
  static const std::array<std::uint8_t, 256> s = make_sbox();
  return s;
}

namespace {

void expand_key(const AesCtr::Key& key, std::array<u8, 176>& rk) {
  const auto& s = aes_sbox();
  std::memcpy(rk.data(), key.data(), 16);
  u8 rcon = 1;
  for (int i = 4; i < 44; ++i) {
    u8 t[4];
    std::memcpy(t, rk.data() + 4 * (i - 1), 4);
    if (i % 4 == 0) {
      const u8 first = t[0];
      t[0] = static_cast<u8>(s[t[1]] ^ rcon);
      t[1] = s[t[2]];
      t[2] = s[t[3]];
      t[3] = s[first];
      rcon = aes::xtime(rcon);
    }
    for (int k = 0; k < 4; ++k)
      rk[4 * i + k] = static_cast<u8>(rk[4 * (i - 4) + k] ^ t[k]);
  }
}

bool supported(AesImpl impl) {
#if defined(SAFHIRE_AES_X86)
  if (impl == AesImpl::aesni) {
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
  }
  if (impl == AesImpl::vaes) {
    // VAES is CPUID leaf 7, ECX bit 9 (not every compiler's __builtin_cpu_supports knows it).
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 &&
           (c & (1U << 9)) != 0;
  }
#endif
#if defined(SAFHIRE_AES_ARM)
  if (impl == AesImpl::armv8) return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#endif
  return impl == AesImpl::portable;
}

}  // namespace

const char* to_string(AesImpl impl) {
  switch (impl) {
    case AesImpl::portable:
      return "portable";
    case AesImpl::aesni:
      return "aesni";
    case AesImpl::vaes:
      return "vaes";
    case AesImpl::armv8:
      return "armv8";
  }
  return "?";
}

namespace {

// The fastest implementation here, looked up once (a seeded key makes a generator per digit).
AesImpl best_aes() {
  static const AesImpl best = available_aes().back();
  return best;
}

}  // namespace

std::vector<AesImpl> available_aes() {
  std::vector<AesImpl> out;
  for (AesImpl impl : {AesImpl::portable, AesImpl::aesni, AesImpl::vaes, AesImpl::armv8}) {
    if (supported(impl)) out.push_back(impl);
  }
  return out;
}

AesCtr::AesCtr(const Key& key) : AesCtr(key, best_aes()) {}

AesCtr::AesCtr(const Key& key, AesImpl impl) : impl_(impl) {
  require(supported(impl), ErrorCode::unsupported,
          std::string("AES implementation ") + to_string(impl) + " is not available here");
  expand_key(key, round_keys_);
}

std::array<std::uint8_t, 16> AesCtr::encrypt_block(const std::array<std::uint8_t, 16>& in) const {
  std::array<std::uint8_t, 16> out{};
  aes::encrypt_block(aes_sbox().data(), round_keys_.data(), in.data(), out.data());
  return out;
}

void AesCtr::generate(std::uint64_t nonce, std::uint64_t counter, std::size_t blocks,
                      std::uint64_t* out) const {
#if defined(SAFHIRE_AES_X86)
  if (impl_ == AesImpl::vaes) {
    aes_detail::generate_vaes(round_keys_.data(), nonce, counter, blocks, out);
    return;
  }
  if (impl_ == AesImpl::aesni) {
    aes_detail::generate_aesni(round_keys_.data(), nonce, counter, blocks, out);
    return;
  }
#endif
#if defined(SAFHIRE_AES_ARM)
  if (impl_ == AesImpl::armv8) {
    aes_detail::generate_armv8(round_keys_.data(), nonce, counter, blocks, out);
    return;
  }
#endif
  const std::uint8_t* sbox = aes_sbox().data();
  for (std::size_t i = 0; i < blocks; ++i)
    aes::ctr_block(sbox, round_keys_.data(), nonce, counter + i, out + 2 * i);
}

}  // namespace safhire::core
