// Batched key switching on the device (see include/safhire/cuda/keyswitch.hpp). The per-word
// pieces are the CPU's: elements::decompose_word, ModLanes::mont_mul, the NTT kernels,
// elements::automorphism_coefficient.
#include <cuda_runtime.h>

#include <string>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "portable/keyswitch_element.cuh"
#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/cuda/keyswitch.hpp"
#include "safhire/elements/automorphism.hpp"
#include "safhire/elements/gadget_digits.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/detail/dft_small.hpp"
#include "safhire/ring/product.hpp"

namespace safhire::cuda {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr std::uint32_t kNvtxKeySwitch = 0xff9467bd;

// digits[i][x] for x < len (x = c N + j): the l digits of a[x].
static __global__ void decompose_kernel(elements::GadgetView g, const u64* a, u64* digits,
                                        size_t len) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    elements::decompose_word(a[x], g, digits + x, len);
  }
}

// One thread per element (blockIdx.y: the limb); see keyswitch_element.cuh for the layouts.
static __global__ void multiply_accumulate_kernel(u64 q, u64 q_inv, const u64* digits,
                                                  const u64* key, u64* acc, u32 levels, u32 n,
                                                  size_t count, u32 limbs) {
  const size_t len = count * n;
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    block::multiply_accumulate_element(q, q_inv, digits, key, acc, levels, n, count, limbs,
                                       blockIdx.y, x);
  }
}

// out_a = -sum_a, out_b = in_b - sum_b, each sum from its limbs in acc ([a, b][limb][len]).
static __global__ void combine_kernel(u64 q, const u64* acc, u32 limbs, u32 shift, const u64* in_b,
                                      u64* out_a, u64* out_b, size_t len) {
  const u64* acc_b = acc + limbs * len;
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    out_a[x] = u64{0} - block::limb_combine_word(q, acc, limbs, shift, len, x);
    out_b[x] = in_b[x] - block::limb_combine_word(q, acc_b, limbs, shift, len, x);
  }
}

static __global__ void automorphism_kernel(const u64* in, u64* out, u32 k_inv, u32 n, u32 M, u32 m,
                                           size_t len) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    const size_t row = x / n;
    out[x] =
        elements::automorphism_coefficient(in + row * n, static_cast<u32>(x % n), k_inv, n, M, m);
  }
}

}  // namespace

DeviceKeySwitchKey::DeviceKeySwitchKey(const rlwe::KeySwitchKey& key, cudaStream_t stream)
    : ring_(key.ring()),
      galois_element_(key.galois_element()),
      gadget_(key.gadget()),
      split_(key.split()) {
  const size_t size = split_.limbs * size_t{ring_.N()};  // one component of one level
  std::vector<u64> words(2 * gadget_.levels * size);
  for (u32 i = 0; i < gadget_.levels; ++i) {
    std::copy(key.limb_a(i).begin(), key.limb_a(i).end(), words.begin() + 2 * i * size);
    std::copy(key.limb_b(i).begin(), key.limb_b(i).end(), words.begin() + (2 * i + 1) * size);
  }
  words_ = DeviceBuffer<u64>(std::span<const u64>(words), stream);
  check(cudaStreamSynchronize(stream), "DeviceKeySwitchKey upload");
}

DeviceKeySwitcher::DeviceKeySwitcher(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                                     cudaStream_t stream, ScratchPool* pool)
    : params_(params), decomposer_(gadget), split_(rlwe::key_split(params, gadget)), pool_(pool) {
  rlwe::require_exact_key_switching(params.ring, gadget);
  const ring::NttPlan* plans[1] = {&ring::LimbProduct::shared(params.ring).plan()};
  tables_ = std::make_unique<DeviceNttTables>(plans, stream);
  q_ = tables_->modulus(0);
  q_inv_ = tables_->montgomery_q_inv(0);
}

void DeviceKeySwitcher::reserve(size_t count, cudaStream_t stream) {
  if (count <= capacity_) return;
  const size_t n = params_.ring.N(), l = decomposer_.gadget().levels;
  digits_ = DeviceBuffer<u64>(l * count * n, stream);
  residues_ = DeviceBuffer<u64>(l * count * n, stream);
  acc_ = DeviceBuffer<u64>(2 * split_.limbs * count * n, stream);
  sigma_ = DeviceBuffer<u64>(2 * count * n, stream);
  capacity_ = count;
}

void DeviceKeySwitcher::check_key(const DeviceKeySwitchKey& key) const {
  require(
      key.ring() == params_.ring && key.gadget() == decomposer_.gadget() && key.split() == split_,
      ErrorCode::size_mismatch, "DeviceKeySwitcher: key of another ring, gadget or split");
}

void DeviceKeySwitcher::key_switch(const DeviceKeySwitchKey& key, const u64* in_a, const u64* in_b,
                                   u64* out_a, u64* out_b, size_t count, cudaStream_t stream) {
  check_key(key);
  if (count == 0) return;
  NvtxRange range("keyswitch", NvtxCategory::rlwe, kNvtxKeySwitch);
  const u32 n = params_.ring.N(), l = decomposer_.gadget().levels;
  const size_t len = count * n;
  ScratchPool::Block pooled_digits, pooled_residues, pooled_acc;
  u64 *digits, *residues, *acc;
  if (pool_ != nullptr) {
    pooled_digits = pool_->take(l * len);
    pooled_residues = pool_->take(l * len);
    pooled_acc = pool_->take(2 * split_.limbs * len);
    digits = pooled_digits.data();
    residues = pooled_residues.data();
    acc = pooled_acc.data();
  } else {
    reserve(count, stream);
    digits = digits_.data();
    residues = residues_.data();
    acc = acc_.data();
  }
  decompose_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(decomposer_.view(),
                                                                                in_a, digits, len);
  check_launch("decompose_kernel");
  lift_torus(*tables_, digits, residues, l * count, stream);
  ntt_forward(*tables_, residues, l * count, stream);
  const dim3 grid(elementwise_blocks(len), split_.limbs);
  multiply_accumulate_kernel<<<grid, kElementwiseThreads, 0, stream>>>(
      q_, q_inv_, residues, key.data(), acc, l, n, count, split_.limbs);
  check_launch("multiply_accumulate_kernel");
  ntt_inverse(*tables_, acc, 2 * split_.limbs * count, ring::InverseScale::montgomery, stream);
  combine_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
      q_, acc, split_.limbs, split_.shift, in_b, out_a, out_b, len);
  check_launch("combine_kernel");
  count_ += count;
}

void DeviceKeySwitcher::automorphism(const DeviceKeySwitchKey& key, const u64* in_a,
                                     const u64* in_b, u64* out_a, u64* out_b, size_t count,
                                     cudaStream_t stream) {
  check_key(key);
  if (count == 0) return;
  const size_t len = count * params_.ring.N();
  ScratchPool::Block pooled;
  u64* sigma;
  if (pool_ != nullptr) {
    pooled = pool_->take(2 * len);
    sigma = pooled.data();
  } else {
    reserve(count, stream);
    sigma = sigma_.data();
  }
  apply_automorphism(params_.ring, key.galois_element(), in_a, sigma, count, stream);
  apply_automorphism(params_.ring, key.galois_element(), in_b, sigma + len, count, stream);
  key_switch(key, sigma, sigma + len, out_a, out_b, count, stream);
}

void apply_automorphism(const ring::RingParams& ring, u64 k, const u64* in, u64* out, size_t count,
                        cudaStream_t stream) {
  ring::require_galois_element(ring, k);
  const size_t len = count * ring.N();
  if (len == 0) return;
  NvtxRange range("automorphism", NvtxCategory::ring, kColorAutomorphism);
  const auto k_inv = static_cast<u32>(core::pow_mod<u64>(k % ring.M(), ring.N() - 1, ring.M()));
  automorphism_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
      in, out, k_inv, ring.N(), ring.M(), ring.m(), len);
  check_launch("automorphism_kernel");
}

}  // namespace safhire::cuda
