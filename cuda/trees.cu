// Trace trees on the device: tree_levels.hpp instantiated with kernel launches.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda_ops.cuh"
#include "launch.cuh"
#include "nvtx_range.cuh"
#include "portable/tree_levels.hpp"
#include "safhire/core/error.hpp"
#include "safhire/cuda/trees.hpp"

namespace safhire::cuda {

DeviceGaloisKeys::DeviceGaloisKeys(const rlwe::GaloisKeys& keys, cudaStream_t stream) {
  for (u64 k : keys.elements())
    keys_.emplace(k, DeviceKeySwitchKey(keys.at(k), stream));
}

const DeviceKeySwitchKey& DeviceGaloisKeys::at(u64 k) const {
  const auto it = keys_.find(k);
  require(it != keys_.end(), ErrorCode::invalid_argument,
          "no device key-switching key for sigma_" + std::to_string(k));
  return it->second;
}

DeviceTraceTrees::DeviceTraceTrees(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                                   const DeviceGaloisKeys& keys, cudaStream_t stream)
    : params_(params),
      keys_(&keys),
      switcher_(params, gadget, stream),
      stream_(stream),
      words_(stream),
      pool_(std::make_unique<ScratchPool>(words_)) {
  require(params.ring.a() >= 2, ErrorCode::unsupported, "trace trees need a >= 2");
}

DeviceCiphertexts DeviceTraceTrees::split(const u64* a, const u64* b, size_t count, u32 gamma,
                                          cudaStream_t stream) {
  const ring::RingParams& r = params_.ring;
  require(gamma < r.a(), ErrorCode::invalid_argument, "split: gamma must be below a");
  require(stream == stream_, ErrorCode::invalid_argument, "split: not the trees' stream");
  NvtxRange range("extract", NvtxCategory::rlwe, kColorTrees);
  CudaOps ops{stream, keys_, &switcher_, pool_.get()};
  auto out = levels::split(ops, r, a, b, count, gamma);
  const size_t per_input = gamma == 0 ? r.N() : levels::power(r.t(), r.a() - gamma);
  return {std::move(out.a), std::move(out.b), count * per_input};
}

DeviceCiphertexts DeviceTraceTrees::pack_lwes(const u64* masks, const u64* bodies, size_t count,
                                              u32 k, cudaStream_t stream) {
  require(k < params_.ring.a(), ErrorCode::invalid_argument, "pack_lwes: k must be below a");
  require(stream == stream_, ErrorCode::invalid_argument, "pack_lwes: not the trees' stream");
  NvtxRange range("pack", NvtxCategory::rlwe, kColorTrees);
  CudaOps ops{stream, keys_, &switcher_, pool_.get()};
  auto out = levels::pack_lwes(ops, params_.ring, masks, bodies, count, k);
  return {std::move(out.a), std::move(out.b), count};
}

}  // namespace safhire::cuda
