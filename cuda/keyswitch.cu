// Batched key switching on the device (see include/safhire/cuda/keyswitch.hpp). The per-word
// pieces are the CPU's: detail::decompose_word, ModLanes::mont_mul, the NTT and CRT kernels,
// detail::automorphism_coefficient.
#include <cuda_runtime.h>

#include <string>

#include "keyswitch_element.cuh"
#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/cuda/keyswitch.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/detail/automorphism_word.hpp"
#include "safhire/ring/detail/dft_small.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/rlwe/detail/gadget_word.hpp"

namespace safhire::cuda {

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

constexpr std::uint32_t kNvtxKeySwitch = 0xff9467bd;

// digits[i][x] for x < len (x = c N + j): the l digits of a[x].
static __global__ void decompose_kernel(rlwe::detail::GadgetView g, const u64* a, u64* digits,
                                        size_t len) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    rlwe::detail::decompose_word(a[x], g, digits + x, len);
  }
}

// One thread per element (blockIdx.y: the prime); see keyswitch_element.cuh for the layouts.
static __global__ void multiply_accumulate_kernel(block::PrimePair primes, const u64* residues,
                                                  const u64* key, u64* acc, u32 levels, u32 n,
                                                  size_t count) {
  const size_t len = count * n;
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    block::multiply_accumulate_element(primes, residues, key, acc, levels, n, count, blockIdx.y, x);
  }
}

// out_a = -sum_a, out_b = in_b - sum_b.
static __global__ void combine_kernel(const u64* sum_a, const u64* sum_b, const u64* in_b,
                                      u64* out_a, u64* out_b, size_t len) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    out_a[x] = u64{0} - sum_a[x];
    out_b[x] = in_b[x] - sum_b[x];
  }
}

static __global__ void automorphism_kernel(const u64* in, u64* out, u32 k_inv, u32 n, u32 M, u32 m,
                                           size_t len) {
  for (size_t x = blockIdx.x * size_t{blockDim.x} + threadIdx.x; x < len;
       x += size_t{gridDim.x} * blockDim.x) {
    const size_t row = x / n;
    out[x] = ring::detail::automorphism_coefficient(in + row * n, static_cast<u32>(x % n), k_inv, n,
                                                    M, m);
  }
}

}  // namespace

DeviceKeySwitchKey::DeviceKeySwitchKey(const rlwe::KeySwitchKey& key, cudaStream_t stream)
    : ring_(key.ring()), galois_element_(key.galois_element()), gadget_(key.gadget()) {
  // [i][a, b][prime][N]: the two-prime RNS-NTT form (the CPU switcher keeps the limb form).
  const std::vector<u64> words = key.rns_ntt_form();
  words_ = DeviceBuffer<u64>(std::span<const u64>(words), stream);
  check(cudaStreamSynchronize(stream), "DeviceKeySwitchKey upload");
}

DeviceKeySwitcher::DeviceKeySwitcher(const rlwe::ParameterSet& params, const rlwe::Gadget& gadget,
                                     cudaStream_t stream)
    : params_(params), decomposer_(gadget) {
  const ring::ExactProduct& product = ring::ExactProduct::shared(params.ring);
  const ring::NttPlan* plans[2] = {&product.plan(0), &product.plan(1)};
  tables_ = std::make_unique<DeviceNttTables>(plans, stream);
  crt_ = product.crt();
  for (int p = 0; p < 2; ++p) {
    q_[p] = tables_->modulus(p);
    q_inv_[p] = tables_->montgomery_q_inv(p);
  }
}

void DeviceKeySwitcher::reserve(size_t count, cudaStream_t stream) {
  if (count <= capacity_) return;
  const size_t n = params_.ring.N(), l = decomposer_.gadget().levels;
  digits_ = DeviceBuffer<u64>(l * count * n, stream);
  residues_ = DeviceBuffer<u64>(2 * l * count * n, stream);
  acc_ = DeviceBuffer<u64>(4 * count * n, stream);
  sums_ = DeviceBuffer<u64>(2 * count * n, stream);
  sigma_ = DeviceBuffer<u64>(2 * count * n, stream);
  capacity_ = count;
}

void DeviceKeySwitcher::check_key(const DeviceKeySwitchKey& key) const {
  require(key.ring() == params_.ring && key.gadget() == decomposer_.gadget(),
          ErrorCode::size_mismatch, "DeviceKeySwitcher: key of another ring or gadget");
}

void DeviceKeySwitcher::key_switch(const DeviceKeySwitchKey& key, const u64* in_a, const u64* in_b,
                                   u64* out_a, u64* out_b, size_t count, cudaStream_t stream) {
  check_key(key);
  if (count == 0) return;
  NvtxRange range("keyswitch", NvtxCategory::rlwe, kNvtxKeySwitch);
  reserve(count, stream);
  const u32 n = params_.ring.N(), l = decomposer_.gadget().levels;
  const size_t len = count * n;
  decompose_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
      decomposer_.view(), in_a, digits_.data(), len);
  check_launch("decompose_kernel");
  lift_torus(*tables_, digits_.data(), residues_.data(), l * count, stream);
  ntt_forward(*tables_, residues_.data(), l * count, stream);
  const block::PrimePair primes{{q_[0], q_[1]}, {q_inv_[0], q_inv_[1]}};
  const dim3 grid(elementwise_blocks(len), 2);
  multiply_accumulate_kernel<<<grid, kElementwiseThreads, 0, stream>>>(
      primes, residues_.data(), key.data(), acc_.data(), l, n, count);
  check_launch("multiply_accumulate_kernel");
  u64* acc_a = acc_.data();
  u64* acc_b = acc_.data() + 2 * len;
  ntt_inverse(*tables_, acc_a, count, ring::InverseScale::montgomery, stream);
  ntt_inverse(*tables_, acc_b, count, ring::InverseScale::montgomery, stream);
  crt_lift(crt_, acc_a, acc_a + len, sums_.data(), len, stream);
  crt_lift(crt_, acc_b, acc_b + len, sums_.data() + len, len, stream);
  combine_kernel<<<elementwise_blocks(len), kElementwiseThreads, 0, stream>>>(
      sums_.data(), sums_.data() + len, in_b, out_a, out_b, len);
  check_launch("combine_kernel");
  count_ += count;
}

void DeviceKeySwitcher::automorphism(const DeviceKeySwitchKey& key, const u64* in_a,
                                     const u64* in_b, u64* out_a, u64* out_b, size_t count,
                                     cudaStream_t stream) {
  check_key(key);
  if (count == 0) return;
  reserve(count, stream);
  const size_t len = count * params_.ring.N();
  apply_automorphism(params_.ring, key.galois_element(), in_a, sigma_.data(), count, stream);
  apply_automorphism(params_.ring, key.galois_element(), in_b, sigma_.data() + len, count, stream);
  key_switch(key, sigma_.data(), sigma_.data() + len, out_a, out_b, count, stream);
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
