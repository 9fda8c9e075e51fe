// Trace trees on the device, a whole level per launch for a batch of inputs (fast mode): the
// algorithm of rlwe::TraceTrees, word for word (cuda/portable/tree_levels.hpp is the shared
// level-by-level form; its CPU replay is tested against TraceTrees).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "safhire/cuda/device_buffer.hpp"
#include "safhire/cuda/keyswitch.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::cuda {

// The automorphism keys of an rlwe::GaloisKeys, uploaded.
class DeviceGaloisKeys {
 public:
  DeviceGaloisKeys(const rlwe::GaloisKeys& keys, cudaStream_t stream);
  const DeviceKeySwitchKey& at(std::uint64_t k) const;  // ErrorCode::invalid_argument if missing

 private:
  std::map<std::uint64_t, DeviceKeySwitchKey> keys_;
};

// A batch of ciphertexts on the device: a and b, each [count][N], in blocks of the scratch pool
// of the DeviceTraceTrees that made them (which they must not outlive).
struct DeviceCiphertexts {
  ScratchPool::Block a, b;
  std::size_t count = 0;
};

// Runs on the stream it is made with: the calls' `stream` must be that one (Error
// invalid_argument otherwise), as their scratch is reused in that stream's order.
class DeviceTraceTrees {
 public:
  DeviceTraceTrees(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                   const DeviceGaloisKeys& keys, cudaStream_t stream);
  DeviceTraceTrees(const DeviceTraceTrees&) = delete;  // its pool refers to words_
  DeviceTraceTrees& operator=(const DeviceTraceTrees&) = delete;

  // Extraction at gamma of `count` ciphertexts (device arrays [count][N]): count * N outputs
  // (gamma = 0) or count * t^(a-gamma), in TraceTrees::split's order per input.
  DeviceCiphertexts split(const std::uint64_t* a, const std::uint64_t* b, std::size_t count,
                          std::uint32_t gamma, cudaStream_t stream);
  // Packing of `count` groups of (t-1) t^k LWE samples: masks [count][n][N], bodies [count][n].
  DeviceCiphertexts pack_lwes(const std::uint64_t* masks, const std::uint64_t* bodies,
                              std::size_t count, std::uint32_t k, cudaStream_t stream);

  std::uint64_t key_switches() const { return switcher_.key_switches(); }

 private:
  rlwe::ParameterSet params_;
  const DeviceGaloisKeys* keys_;
  DeviceKeySwitcher switcher_;
  cudaStream_t stream_;
  StreamWords words_;
  std::unique_ptr<ScratchPool> pool_;
};

}  // namespace safhire::cuda
