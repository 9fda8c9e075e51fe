// The negacyclic NTT of Z_q[X]/(X^N + 1), the power-of-two rings RingParams{2, a} of CKKS
// (N = 2^(a-1), M = 2N). With psi a primitive 2N-th root of unity mod q, slot k of the output
// holds f(psi^e_k), e_k = 2 rev(k) + 1 (rev: the bit reversal of log2 N bits): the forward
// transform is Cooley-Tukey from natural order to bit-reversed order, the inverse Gentleman-Sande
// back. Butterflies are Harvey's (Shoup constants, values kept lazily in [0, 4q) between levels,
// one final reduction), two levels are merged per pass over the data. With SimdIsa::avx512 on a
// processor with AVX-512 IFMA, primes below 2^50 take 52-bit multiply-add kernels (same results,
// about twice as fast). As for the radix-t NttPlan,
// automorphisms sigma_k (k odd) are slot permutations. Plans are immutable and safe to share.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/ring/ring_params.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::ring {

class NegacyclicNtt {
 public:
  // ring.t() == 2, q prime, q = 1 (mod 2N), q < 2^62, psi of multiplicative order exactly 2N.
  // Violations throw Error(invalid_parameters).
  NegacyclicNtt(const RingParams& ring, std::uint64_t q, std::uint64_t psi,
                SimdIsa isa = default_simd());
  // The same with psi = core::root_of_unity(q, 2N).
  static NegacyclicNtt for_prime(const RingParams& ring, std::uint64_t q,
                                 SimdIsa isa = default_simd());

  const RingParams& ring() const { return ring_; }
  std::uint32_t degree() const { return N_; }
  std::uint64_t modulus() const { return q_; }
  std::uint64_t psi() const { return psi_; }
  SimdIsa isa() const { return isa_; }

  // In place on count = polys.size() / N polynomials. Inputs in [0, q), outputs in [0, q).
  void forward(std::span<std::uint64_t> polys) const;
  void inverse(std::span<std::uint64_t> polys) const;
  // Inputs in [0, 4q) (e.g. a sum of lazy products), outputs in [0, q).
  void forward_lazy_input(std::span<std::uint64_t> polys) const;

  // e_k for every slot k, and the slot holding exponent e (e odd, taken mod 2N).
  std::uint32_t slot_exponent(std::uint32_t k) const;
  std::uint32_t slot_of_exponent(std::uint64_t e) const;

  // perm with NTT(sigma_k a)[s] = NTT(a)[perm[s]], k odd: perm[s] = slot(k e_s mod 2N).
  std::vector<std::uint32_t> automorphism_permutation(std::uint64_t k) const;

  // Tables in the order the butterflies read them (exposed for the CUDA upload and the tests):
  // psi^rev(i) for i < N with Shoup quotients, and the inverse's psi^-(rev(i)) likewise; the
  // inverse's last level has N^-1 folded in.
  struct Tables {
    std::vector<std::uint64_t> forward, forward_quotient;
    std::vector<std::uint64_t> inverse, inverse_quotient;
    std::uint64_t n_inv = 0, n_inv_quotient = 0;                // N^-1 mod q
    std::uint64_t last_inverse = 0, last_inverse_quotient = 0;  // psi^-rev(1) N^-1
    // The same quotients at 52 bits (floor(w 2^52 / q)) for the IFMA kernels; only for q < 2^50.
    std::vector<std::uint64_t> forward_quotient52, inverse_quotient52;
    std::uint64_t n_inv_quotient52 = 0, last_inverse_quotient52 = 0;
  };
  const Tables& tables() const { return tables_; }

 private:
  void check(std::span<const std::uint64_t> polys, const char* what) const;

  RingParams ring_;
  std::uint32_t N_, log_n_;
  std::uint64_t q_, psi_;
  SimdIsa isa_;
  Tables tables_;
  const void* kernels_ = nullptr;  // simd::NegacyclicKernels chosen for isa_ and q_
};

}  // namespace safhire::ring
