// Precomputed tables of the radix-t NTT for one ring and one prime (reference §2.2), in the layout
// that both the CPU kernels and the CUDA kernels read. `NttView` is the pointer-only view a kernel
// receives; the CUDA backend builds one over device copies of the same arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "safhire/ring/ntt_view.hpp"

namespace safhire::ring {

struct NttTables {
  std::uint64_t q = 0;
  std::uint64_t omega = 0;  // primitive M-th root of unity mod q
  std::uint32_t t = 0, a = 0, m = 0, N = 0;
  DftConstants dft_forward;
  DftConstants dft_inverse;
  DftConstants dft_inverse_last[2];
  std::vector<std::uint32_t> level_block_offset;
  std::vector<std::uint64_t> twiddle_forward, twiddle_forward_quotient;
  std::vector<std::uint64_t> twiddle_inverse, twiddle_inverse_quotient;
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
            &dft_forward,
            &dft_inverse,
            dft_inverse_last,
            level_block_offset.data(),
            twiddle_forward.data(),
            twiddle_forward_quotient.data(),
            twiddle_inverse.data(),
            twiddle_inverse_quotient.data()};
  }
};

}  // namespace safhire::ring
