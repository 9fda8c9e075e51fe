// The direct radix-t NTT of Z_q[X]/Phi_M(X), M = t^a, t in {3, 5, 7}: a
// (t-1)-way split at level 0, then a-1 levels of t-way splits, each a twist and a length-t DFT
// (Rader/Winograd kernels, detail/dft_small.hpp). Slot k of the output holds f(omega^e_k) with
// e_k = (1 + floor(k/m)) + t * rev_(a-1)(k mod m); automorphisms are slot permutations (§3.2).
// One plan per (ring, prime); plans are immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/ring/ntt_tables.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/ring_params.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::ring {

namespace simd {
struct KernelTable;
}

class NttPlan {
 public:
  // q prime, q = 1 (mod M), q < 2^62, omega of multiplicative order exactly M, t in {3, 5, 7}.
  // Violations throw Error(invalid_parameters), or Error(unsupported) for another t.
  NttPlan(const RingParams& ring, std::uint64_t q, std::uint64_t omega,
          SimdIsa isa = default_simd());
  // The same with omega = core::root_of_unity(q, M).
  static NttPlan for_prime(const RingParams& ring, std::uint64_t q, SimdIsa isa = default_simd());

  NttPlan(NttPlan&&) noexcept = default;
  NttPlan& operator=(NttPlan&&) noexcept = default;
  NttPlan(const NttPlan&) = delete;
  NttPlan& operator=(const NttPlan&) = delete;

  const RingParams& ring() const { return ring_; }
  std::uint64_t modulus() const { return tables_.q; }
  std::uint64_t omega() const { return tables_.omega; }
  SimdIsa isa() const { return isa_; }
  const NttTables& tables() const { return tables_; }

  // In place. Inputs in [0, q), outputs in [0, q). A span of count*N words is count polynomials.
  void forward(std::span<std::uint64_t> polys) const;
  void inverse(std::span<std::uint64_t> polys, InverseScale scale = InverseScale::plain) const;
  void forward(ModBatch& batch) const;
  void inverse(ModBatch& batch, InverseScale scale = InverseScale::plain) const;

  // e_k for every slot k, and the slot holding exponent e (e coprime to M).
  std::span<const std::uint32_t> slot_exponents() const { return tables_.slot_exponent; }
  std::uint32_t slot_of_exponent(std::uint32_t e) const;

  // perm with NTT(sigma_k a)[s] = NTT(a)[perm[s]]: perm[s] = slot(k e_s mod M) (§3.2).
  std::vector<std::uint32_t> automorphism_permutation(std::uint64_t k) const;

 private:
  void check_batch(std::span<const std::uint64_t> polys, const char* what) const;

  RingParams ring_;
  NttTables tables_;
  std::vector<std::uint32_t> slot_of_exponent_;  // [M], ~0 for exponents not coprime to M
  SimdIsa isa_;
  const simd::KernelTable* kernels_;
};

// out[s] = in[perm[s]]; out must not alias in. Sizes must agree (ErrorCode::size_mismatch).
void apply_permutation(std::span<const std::uint64_t> in, std::span<const std::uint32_t> perm,
                       std::span<std::uint64_t> out);

// The Rader/Winograd constants of y_l = s sum_r w^(lr) x_r for a primitive t-th root w mod q.
// Exposed for the kernel tests.
DftConstants make_dft_constants(std::uint32_t t, std::uint64_t w, std::uint64_t s, std::uint64_t q);

}  // namespace safhire::ring
