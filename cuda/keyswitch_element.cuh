// The per-element body of the key-switching multiply-accumulate kernel, shared with the CPU
// emulation test (tests/rlwe/test_keyswitch_emulation.cpp), so that the device layout is checked
// where there is no GPU.
//   residues: [prime][level i][count][N] (the NTT of the digits)
//   key:      [level i][a, b][prime][N]   (rlwe::KeySwitchKey's RNS-NTT layout)
//   acc:      [a, b][prime][count][N]
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_lanes.cuh"
#include "safhire/core/hostdevice.hpp"
#include "safhire/ring/detail/dft_small.hpp"

namespace safhire::cuda::block {

struct PrimePair {
  std::uint64_t q[2], q_inv[2];
};

// Element x = c N + j of prime p: acc_a = sum_i d_i ka_i, acc_b = sum_i d_i kb_i (Montgomery
// products, in [0, q)).
SAFHIRE_HD void multiply_accumulate_element(const PrimePair& primes, const std::uint64_t* residues,
                                            const std::uint64_t* key, std::uint64_t* acc,
                                            std::uint32_t levels, std::uint32_t n,
                                            std::size_t count, std::uint32_t p, std::size_t x) {
  using Mod = ring::detail::ModLanes<DeviceLanes>;
  const std::size_t len = count * n;
  const std::uint64_t q = primes.q[p], q_inv = primes.q_inv[p];
  const std::uint64_t* d = residues + p * levels * len;
  const std::size_t j = x % n;
  std::uint64_t sum_a = 0, sum_b = 0;
  for (std::uint32_t i = 0; i < levels; ++i) {
    const std::uint64_t digit = d[i * len + x];
    const std::uint64_t* k = key + (2 * std::size_t{i}) * 2 * n + p * std::size_t{n} + j;
    sum_a = Mod::add(sum_a, Mod::mont_mul(digit, k[0], q, q_inv), q);
    sum_b = Mod::add(sum_b, Mod::mont_mul(digit, k[2 * n], q, q_inv), q);
  }
  acc[p * len + x] = sum_a;
  acc[(2 + p) * len + x] = sum_b;
}

}  // namespace safhire::cuda::block
