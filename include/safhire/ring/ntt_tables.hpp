// Precomputed tables of the radix-t NTT for one ring and one prime, in the layout
// that both the CPU kernels and the CUDA kernels read (ntt_view.hpp describes it). Built by
// NttPlan; the CUDA backend uploads these arrays as they are.
#pragma once

#include <cstdint>
#include <vector>

#include "safhire/ring/ntt_view.hpp"

namespace safhire::ring {

struct TwiddleTables {
  std::vector<std::uint64_t> forward, forward_quotient, inverse, inverse_quotient;
  std::vector<std::uint32_t> level_block_offset;  // one entry per level
  std::uint32_t column_level = 0;                 // first level on the column layout
  std::uint32_t columns = 0;                      // B: blocks entering the column level

  TwiddleView view() const {
    return {forward.data(), forward_quotient.data(), inverse.data(), inverse_quotient.data(),
            level_block_offset.data()};
  }
};

struct NttTables {
  std::uint64_t q = 0;
  std::uint64_t omega = 0;  // primitive M-th root of unity mod q
  std::uint32_t t = 0, a = 0, m = 0, N = 0;
  DftConstants dft_forward;
  DftConstants dft_inverse;
  DftConstants dft_inverse_last[2];
  TwiddleTables twiddles;                    // levels 1..a-1
  std::vector<std::uint32_t> slot_exponent;  // slot k holds f(omega^slot_exponent[k])
  std::uint64_t montgomery_q_inv = 0;        // q^-1 mod 2^64
  std::uint64_t word_ratio = 0;              // floor(2^64 / q)
  std::uint64_t two64_mod_q = 0;             // 2^64 mod q

  NttView view() const {
    return {q,
            t,
            a,
            m,
            N,
            twiddles.column_level,
            &dft_forward,
            &dft_inverse,
            dft_inverse_last,
            twiddles.view()};
  }
};

}  // namespace safhire::ring
