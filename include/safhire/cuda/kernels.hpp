// Host-side launchers of the CUDA kernels of the ring layer: the radix-t NTT (forward and
// inverse, batched over polynomials and primes), pointwise operations, the lift of torus words to
// residues, the exact two-prime CRT back to Z_{2^64}, and automorphisms as slot permutations.
// Every launcher takes its stream explicitly and only enqueues work; results are bit-identical
// to the CPU kernels (tests/cuda). Device data layout: [prime][count][N] words.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "safhire/core/crt.hpp"
#include "safhire/cuda/device_buffer.hpp"
#include "safhire/ring/ntt.hpp"

namespace safhire::cuda {

// The NTT tables of one ring for one or more primes, uploaded once; kernels index the primes by
// blockIdx.y.
class DeviceNttTables {
 public:
  // All plans must be of the same ring. Throws ErrorCode::unsupported when a polynomial does not
  // fit the shared memory of one thread block on this device.
  DeviceNttTables(std::span<const ring::NttPlan* const> plans, cudaStream_t stream);

  const ring::RingParams& ring() const { return ring_; }
  std::uint32_t primes() const { return static_cast<std::uint32_t>(host_views_.size()); }
  std::uint64_t modulus(std::uint32_t prime) const { return host_views_[prime].q; }
  std::uint64_t montgomery_q_inv(std::uint32_t prime) const { return q_inv_[prime]; }
  std::uint64_t word_ratio(std::uint32_t prime) const { return ratio_[prime]; }
  std::uint64_t two64_mod_q(std::uint32_t prime) const { return two64_[prime]; }
  const ring::NttView* device_views() const { return views_.data(); }

 private:
  ring::RingParams ring_;
  std::vector<ring::NttView> host_views_;  // with device pointers
  std::vector<std::uint64_t> q_inv_, ratio_, two64_;
  std::vector<DeviceBuffer<std::uint64_t>> words_;
  std::vector<DeviceBuffer<std::uint32_t>> offsets_;
  DeviceBuffer<ring::DftConstants> dft_;  // [prime][forward, inverse, last plain, last mont]
  DeviceBuffer<ring::NttView> views_;
};

// data: [primes][count][N], values in [0, q); in place; outputs in [0, q).
void ntt_forward(const DeviceNttTables& tables, std::uint64_t* data, std::size_t count,
                 cudaStream_t stream);
void ntt_inverse(const DeviceNttTables& tables, std::uint64_t* data, std::size_t count,
                 ring::InverseScale scale, cudaStream_t stream);

// out[p][i] = a[p][i] b[p][i] 2^-64 mod q_p over [primes][count][N]; a any word, b in [0, q).
void pointwise_montgomery(const DeviceNttTables& tables, const std::uint64_t* a,
                          const std::uint64_t* b, std::uint64_t* out, std::size_t count,
                          cudaStream_t stream);

// residues[p][k][i] = torus[k][i] (read as signed) mod q_p, for `count` torus polynomials.
void lift_torus(const DeviceNttTables& tables, const std::uint64_t* torus, std::uint64_t* residues,
                std::size_t count, cudaStream_t stream);

// out[i] = centred CRT lift of (x1[i] mod q1, x2[i] mod q2) mod 2^64, for `len` words.
void crt_lift(const core::Crt2& crt, const std::uint64_t* x1, const std::uint64_t* x2,
              std::uint64_t* out, std::size_t len, cudaStream_t stream);

// out[k][s] = in[k][perm[s]] for `count` rows of n words (perm on the device): an automorphism
// in the NTT domain (NttPlan::automorphism_permutation). out must not alias in.
void apply_permutation(const std::uint32_t* perm, const std::uint64_t* in, std::uint64_t* out,
                       std::size_t n, std::size_t count, cudaStream_t stream);

}  // namespace safhire::cuda
