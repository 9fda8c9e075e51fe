// The Armv8 Cryptography Extension counter-mode loop of aes_ctr.hpp, compiled with
// -march=armv8-a+crypto and called only where the processor reports AES (HWCAP_AES). AESE is
// AddRoundKey, SubBytes and ShiftRows, AESMC MixColumns; eight blocks are in flight per round.
#include <arm_neon.h>

#include <cstring>

#include "safhire/core/aes_ctr.hpp"

namespace safhire::core::aes_detail {

namespace {

inline uint8x16_t counter_block(std::uint64_t nonce, std::uint64_t counter) {
  return vreinterpretq_u8_u64(vcombine_u64(vcreate_u64(nonce), vcreate_u64(counter)));
}

}  // namespace

void generate_armv8(const std::uint8_t* round_keys, std::uint64_t nonce, std::uint64_t counter,
                    std::size_t blocks, std::uint64_t* out) {
  uint8x16_t rk[11];
  for (int r = 0; r < 11; ++r)
    rk[r] = vld1q_u8(round_keys + 16 * r);
  constexpr std::size_t kLanes = 8;
  std::size_t i = 0;
  for (; i + kLanes <= blocks; i += kLanes) {
    uint8x16_t x[kLanes];
    for (std::size_t k = 0; k < kLanes; ++k)
      x[k] = counter_block(nonce, counter + i + k);
    for (int r = 0; r < 9; ++r) {
      for (std::size_t k = 0; k < kLanes; ++k)
        x[k] = vaesmcq_u8(vaeseq_u8(x[k], rk[r]));
    }
    for (std::size_t k = 0; k < kLanes; ++k)
      vst1q_u8(reinterpret_cast<std::uint8_t*>(out + 2 * (i + k)),
               veorq_u8(vaeseq_u8(x[k], rk[9]), rk[10]));
  }
  for (; i < blocks; ++i) {
    uint8x16_t x = counter_block(nonce, counter + i);
    for (int r = 0; r < 9; ++r)
      x = vaesmcq_u8(vaeseq_u8(x, rk[r]));
    vst1q_u8(reinterpret_cast<std::uint8_t*>(out + 2 * i), veorq_u8(vaeseq_u8(x, rk[9]), rk[10]));
  }
}

}  // namespace safhire::core::aes_detail
