// One AES-128 block, byte by byte (FIPS 197), written once for the host's portable path and the
// CUDA kernels: the state is column-major (byte 4 c + r is row r of column c), `sbox` the
// S-box table and `round_keys` the 11 expanded round keys (aes_ctr.hpp).
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"

namespace safhire::core::aes {

SAFHIRE_HD std::uint8_t xtime(std::uint8_t x) {
  return static_cast<std::uint8_t>((x << 1) ^ ((x & 0x80U) != 0 ? 0x1bU : 0U));
}

SAFHIRE_HD void encrypt_block(const std::uint8_t* sbox, const std::uint8_t* round_keys,
                              const std::uint8_t* in, std::uint8_t* out) {
  std::uint8_t st[16];
  for (int i = 0; i < 16; ++i)
    st[i] = static_cast<std::uint8_t>(in[i] ^ round_keys[i]);
  for (int round = 1; round <= 10; ++round) {
    std::uint8_t t[16];
    for (int c = 0; c < 4; ++c) {  // SubBytes and ShiftRows
      for (int r = 0; r < 4; ++r)
        t[4 * c + r] = sbox[st[4 * ((c + r) % 4) + r]];
    }
    if (round != 10) {  // MixColumns
      for (int c = 0; c < 4; ++c) {
        const std::uint8_t a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
        const auto all = static_cast<std::uint8_t>(a0 ^ a1 ^ a2 ^ a3);
        t[4 * c] = static_cast<std::uint8_t>(a0 ^ all ^ xtime(static_cast<std::uint8_t>(a0 ^ a1)));
        t[4 * c + 1] =
            static_cast<std::uint8_t>(a1 ^ all ^ xtime(static_cast<std::uint8_t>(a1 ^ a2)));
        t[4 * c + 2] =
            static_cast<std::uint8_t>(a2 ^ all ^ xtime(static_cast<std::uint8_t>(a2 ^ a3)));
        t[4 * c + 3] =
            static_cast<std::uint8_t>(a3 ^ all ^ xtime(static_cast<std::uint8_t>(a3 ^ a0)));
      }
    }
    for (int i = 0; i < 16; ++i)
      st[i] = static_cast<std::uint8_t>(t[i] ^ round_keys[16 * round + i]);
  }
  for (int i = 0; i < 16; ++i)
    out[i] = st[i];
}

// Block `counter` of stream `nonce` as two little-endian 64-bit words (aes_ctr.hpp).
SAFHIRE_HD void ctr_block(const std::uint8_t* sbox, const std::uint8_t* round_keys,
                          std::uint64_t nonce, std::uint64_t counter, std::uint64_t* words) {
  std::uint8_t block[16];
  for (int i = 0; i < 8; ++i) {
    block[i] = static_cast<std::uint8_t>(nonce >> (8 * i));
    block[8 + i] = static_cast<std::uint8_t>(counter >> (8 * i));
  }
  encrypt_block(sbox, round_keys, block, block);
  words[0] = words[1] = 0;
  for (int i = 0; i < 8; ++i) {
    words[0] |= std::uint64_t{block[i]} << (8 * i);
    words[1] |= std::uint64_t{block[8 + i]} << (8 * i);
  }
}

}  // namespace safhire::core::aes
