// AES-128 in counter mode (FIPS 197, SP 800-38A), the expansion function of seeded key
// material: the uniform halves of CKKS switching keys are regenerated from a 16-byte seed when
// they are used instead of being stored (ckks.hpp, SwitchingKey). The seed and the material it
// expands to are public; the secret key never enters it.
//
// Block i of a stream is AES_k(nonce || counter + i), the nonce and the counter each a
// little-endian 64-bit word, and its 16 bytes are read as two little-endian 64-bit words. The
// AES-NI and VAES (four blocks per instruction) implementations on x86, and the Armv8
// Cryptography Extension one on Arm, are chosen at run time where the processor has them; the
// portable one serves everywhere else. All give the same words.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace safhire::core {

enum class AesImpl : std::uint8_t { portable, aesni, vaes, armv8 };

const char* to_string(AesImpl impl);
// The implementations this processor runs, portable first.
std::vector<AesImpl> available_aes();

class AesCtr {
 public:
  using Key = std::array<std::uint8_t, 16>;
  // With the fastest implementation available.
  explicit AesCtr(const Key& key);
  AesCtr(const Key& key, AesImpl impl);

  // 2 * blocks words: the blocks counter, counter + 1, .. of stream `nonce`.
  void generate(std::uint64_t nonce, std::uint64_t counter, std::size_t blocks,
                std::uint64_t* out) const;
  // One block of raw AES-128 (for the FIPS 197 known-answer test).
  std::array<std::uint8_t, 16> encrypt_block(const std::array<std::uint8_t, 16>& in) const;
  AesImpl impl() const { return impl_; }
  // The 11 round keys (public: expanded from the public seed), for device kernels.
  const std::array<std::uint8_t, 176>& round_keys() const { return round_keys_; }

 private:
  std::array<std::uint8_t, 176> round_keys_{};  // the 11 round keys, FIPS 197 byte order
  AesImpl impl_;
};

// The S-box (computed once from its definition), for the portable path and device kernels.
const std::array<std::uint8_t, 256>& aes_sbox();

namespace aes_detail {
// The x86 implementations (aes_ctr_x86.cpp), over the expanded round keys.
void generate_aesni(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                    std::size_t blocks, std::uint64_t* out);
void generate_vaes(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                   std::size_t blocks, std::uint64_t* out);
// The Armv8 one (aes_ctr_arm.cpp).
void generate_armv8(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                    std::size_t blocks, std::uint64_t* out);
}  // namespace aes_detail

}  // namespace safhire::core
