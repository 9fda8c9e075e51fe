// Key switching and automorphisms on the device, for a batch of ciphertexts per launch: the CPU
// KeySwitcher's algorithm (decompose, lift, l forward NTTs in one prime, Montgomery
// multiply-accumulate with the key in limb-NTT form, 2 inverse NTTs per limb, limb combine;
// ring::LimbProduct and rlwe::key_split), word for word. A batch is `count` ciphertexts stored as
// two device arrays, a and b, of [count][N] torus words.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "safhire/cuda/device_buffer.hpp"
#include "safhire/cuda/kernels.hpp"
#include "safhire/cuda/scratch_pool.hpp"
#include "safhire/rlwe/keyswitch.hpp"

namespace safhire::cuda {

// A key-switching key uploaded once: [l][a, b][limb][N] words, the CPU's limb-NTT layout.
class DeviceKeySwitchKey {
 public:
  DeviceKeySwitchKey(const rlwe::KeySwitchKey& key, cudaStream_t stream);
  std::uint64_t galois_element() const { return galois_element_; }
  const rlwe::Gadget& gadget() const { return gadget_; }
  const ring::RingParams& ring() const { return ring_; }
  ring::LimbSplit split() const { return split_; }
  const std::uint64_t* data() const { return words_.data(); }

 private:
  ring::RingParams ring_;
  std::uint64_t galois_element_;
  rlwe::Gadget gadget_;
  ring::LimbSplit split_;
  DeviceBuffer<std::uint64_t> words_;
};

class DeviceKeySwitcher {
 public:
  // Uses the prime of ring::LimbProduct::shared(params.ring), as the CPU path does; throws
  // like rlwe::KeySwitcher for a gadget beyond its bound. Its scratch comes from `pool` where
  // given (blocks taken for a call and given back when it returns, so every call must be on the
  // stream the pool's blocks are ordered on; a pool kept between sessions makes a later
  // session's switches allocate nothing), else from buffers of its own, grown to the largest
  // batch seen.
  DeviceKeySwitcher(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                    cudaStream_t stream, ScratchPool* pool = nullptr);

  // out = in switched with `key` (each ciphertext valid under the key's s'); out may alias in.
  void key_switch(const DeviceKeySwitchKey& key, const std::uint64_t* in_a,
                  const std::uint64_t* in_b, std::uint64_t* out_a, std::uint64_t* out_b,
                  std::size_t count, cudaStream_t stream);
  // out = sigma_k(in), switched back to s (k = the key's Galois element); out may alias in.
  void automorphism(const DeviceKeySwitchKey& key, const std::uint64_t* in_a,
                    const std::uint64_t* in_b, std::uint64_t* out_a, std::uint64_t* out_b,
                    std::size_t count, cudaStream_t stream);

  std::uint64_t key_switches() const { return count_; }
  const rlwe::ParameterSet& params() const { return params_; }

 private:
  void reserve(std::size_t count, cudaStream_t stream);
  void check_key(const DeviceKeySwitchKey& key) const;

  rlwe::ParameterSet params_;
  rlwe::GadgetDecomposer decomposer_;
  ring::LimbSplit split_;
  std::unique_ptr<DeviceNttTables> tables_;  // one prime
  std::uint64_t q_ = 0, q_inv_ = 0;
  ScratchPool* pool_ = nullptr;
  std::size_t capacity_ = 0;  // ciphertexts its own scratch holds (no pool)
  DeviceBuffer<std::uint64_t> digits_, residues_, acc_, sigma_;
  std::uint64_t count_ = 0;
};

// out[c] = sigma_k(in[c]) in the coefficient domain (torus words), for `count` polynomials.
void apply_automorphism(const ring::RingParams& ring, std::uint64_t k, const std::uint64_t* in,
                        std::uint64_t* out, std::size_t count, cudaStream_t stream);

}  // namespace safhire::cuda
