// The per-element bodies of the key-switching kernels, shared with the CPU emulation test
// (tests/rlwe/test_keyswitch_emulation.cpp), so that the device layout is checked where there is
// no GPU. One NTT prime q; the key words in `limbs` limbs (ring::LimbProduct, rlwe::key_split:
// two exact 32-bit limbs, or one rounded limb):
//   digits: [level i][count][N]        (the NTT of the digits mod q)
//   key:    [level i][a, b][limb][N]   (rlwe::KeySwitchKey's limb-NTT layout)
//   acc:    [a, b][limb][count][N]
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_lanes.cuh"
#include "safhire/core/hostdevice.hpp"
#include "safhire/ring/detail/dft_small.hpp"

namespace safhire::cuda::block {

// Element x = c N + j of limb `limb`: acc_a = sum_i d_i ka_i, acc_b = sum_i d_i kb_i (Montgomery
// products, in [0, q)).
SAFHIRE_HD void multiply_accumulate_element(std::uint64_t q, std::uint64_t q_inv,
                                            const std::uint64_t* digits, const std::uint64_t* key,
                                            std::uint64_t* acc, std::uint32_t levels,
                                            std::uint32_t n, std::size_t count, std::uint32_t limbs,
                                            std::uint32_t limb, std::size_t x) {
  using Mod = ring::detail::ModLanes<DeviceLanes>;
  const std::size_t len = count * n, component = std::size_t{limbs} * n;
  const std::size_t j = x % n;
  std::uint64_t sum_a = 0, sum_b = 0;
  for (std::uint32_t i = 0; i < levels; ++i) {
    const std::uint64_t digit = digits[i * len + x];
    const std::uint64_t* k = key + (2 * std::size_t{i}) * component + limb * std::size_t{n} + j;
    sum_a = Mod::add(sum_a, Mod::mont_mul(digit, k[0], q, q_inv), q);
    sum_b = Mod::add(sum_b, Mod::mont_mul(digit, k[component], q, q_inv), q);
  }
  acc[limb * len + x] = sum_a;
  acc[(limbs + limb) * len + x] = sum_b;
}

// The residue mod q of a centred integer, read back as that integer (two's complement).
SAFHIRE_HD std::uint64_t centred_word(std::uint64_t q, std::uint64_t v) {
  return v > q / 2 ? v - q : v;
}

// Element x of a sum in acc ([limb][count][N] words, len = count N) -> its torus word:
// lo + 2^32 hi for two limbs, the one limb times 2^shift for one.
SAFHIRE_HD std::uint64_t limb_combine_word(std::uint64_t q, const std::uint64_t* acc,
                                           std::uint32_t limbs, std::uint32_t shift,
                                           std::size_t len, std::size_t x) {
  if (limbs == 1) return centred_word(q, acc[x]) << shift;
  return centred_word(q, acc[x]) + (centred_word(q, acc[len + x]) << 32);
}

}  // namespace safhire::cuda::block
