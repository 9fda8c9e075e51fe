// CUDA kernels of the CKKS RNS primitives and the RnsOps that launches them. Arithmetic is the
// CPU's (core/modarith.hpp): Harvey butterflies with fully reduced outputs, products of two
// residues and sums of products through reduce_double_word, Shoup products by constants, and the
// exact base conversion's double-precision rounding with FMA contraction ruled out
// (__dmul_rn/__dadd_rn), so every output word equals the CPU's.
//
// Residency: polynomials this backend makes (zeros, reshape, make_resident) keep their words on
// the device, in stream-ordered allocations from the device's memory pool, and every primitive
// works on them in place. A host operand is staged (uploaded, and downloaded again when it is an
// output), so host and resident polynomials mix freely; only resident ones avoid the copies.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <cub/block/block_scan.cuh>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "safhire/core/aes_block.hpp"
#include "safhire/core/aes_ctr.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/cuda/ckks.hpp"
#include "safhire/cuda/device_buffer.hpp"

namespace safhire::cuda {

namespace {

using ckks::Conversion;
using ckks::ModulusIndex;
using ckks::RnsPoly;
using core::u64;

constexpr std::uint32_t kColour = 0xff2e86c1;
constexpr std::uint32_t kStepColour = 0xff8e44ad;

// ---- kernels ----------------------------------------------------------------------------------

// One radix-2 level over every limb: blockIdx.y is the limb, thread b the butterfly. Forward:
// m groups of distance t, twiddle m + i. Inverse: the same indexing with the inverse tables.
__global__ void ntt_level_kernel(u64* data, std::uint32_t n, const u64* tables,
                                 const u64* quotients, const u64* moduli,
                                 const std::uint32_t* modulus_index, std::uint32_t m,
                                 std::uint32_t t, bool inverse) {
  const std::uint32_t limb = blockIdx.y;
  const u64 q = moduli[limb], q2 = 2 * q;
  u64* a = data + std::size_t{limb} * n;
  // The context's tables, [modulus][N], read in place for this limb's prime.
  const u64* tw = tables + std::size_t{modulus_index[limb]} * n;
  const u64* twq = quotients + std::size_t{modulus_index[limb]} * n;
  for (std::uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n / 2;
       b += gridDim.x * blockDim.x) {
    const std::uint32_t i = b / t, j = b % t;
    u64& x = a[2 * i * t + j];
    u64& y = a[2 * i * t + j + t];
    const u64 w = tw[m + i], wq = twq[m + i];
    if (!inverse) {
      const u64 u = x >= q2 ? x - q2 : x;
      const u64 v = core::mul_shoup_lazy(y, w, wq, q);
      x = u + v;
      y = u - v + q2;
    } else {
      const u64 s = x + y;
      const u64 d = x - y + q2;
      x = s >= q2 ? s - q2 : s;
      y = core::mul_shoup_lazy(d, w, wq, q);
    }
  }
}

// Forward: values in [0, 4q) to [0, q). Inverse: times N^-1 (a Shoup constant), to [0, q).
__global__ void ntt_finish_kernel(u64* data, std::uint32_t n, const u64* moduli, const u64* n_inv,
                                  const u64* n_inv_quotient, bool inverse) {
  const std::uint32_t limb = blockIdx.y;
  const u64 q = moduli[limb];
  u64* a = data + std::size_t{limb} * n;
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += gridDim.x * blockDim.x) {
    u64 v = a[t];
    if (inverse) {
      v = core::mul_shoup(v, n_inv[limb], n_inv_quotient[limb], q);
    } else {
      v = v >= 2 * q ? v - 2 * q : v;
      v = v >= q ? v - q : v;
    }
    a[t] = v;
  }
}

// Per output limb k: the modulus, the Barrett ratio, the offsets of the inputs' limbs (in
// words) and a Shoup constant; the elementwise operations read what they need.
struct LimbMap {
  u64 q;
  core::WideReducer ratio;
  std::size_t a, b;
  u64 c, c_quotient;
};

enum class Op : int {
  add,
  sub,
  negate,
  multiply,
  multiply_accumulate,
  sub_scale,
  scale,
  add_scalar
};

__global__ void elementwise_kernel(const u64* a, const u64* b, u64* out, std::uint32_t n,
                                   const LimbMap* map, Op op) {
  const std::uint32_t k = blockIdx.y;
  const LimbMap m = map[k];
  const u64* x = a + m.a;
  const u64* y = b + m.b;
  u64* o = out + std::size_t{k} * n;
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += gridDim.x * blockDim.x) {
    const u64 xv = x[t];
    switch (op) {
      case Op::add:
        o[t] = core::add_mod(xv, y[t], m.q);
        break;
      case Op::sub:
        o[t] = core::sub_mod(xv, y[t], m.q);
        break;
      case Op::negate:
        o[t] = core::neg_mod(xv, m.q);
        break;
      case Op::multiply:
        o[t] = core::reduce_double_word(core::mul_hi(xv, y[t]), xv * y[t], m.q, m.ratio);
        break;
      case Op::multiply_accumulate:
        o[t] = core::add_mod(
            o[t], core::reduce_double_word(core::mul_hi(xv, y[t]), xv * y[t], m.q, m.ratio), m.q);
        break;
      case Op::sub_scale:
        o[t] = core::mul_shoup(xv + m.q - y[t], m.c, m.c_quotient, m.q);
        break;
      case Op::scale:
        o[t] = core::mul_shoup(xv, m.c, m.c_quotient, m.q);
        break;
      case Op::add_scalar:
        o[t] = core::add_mod(xv, m.c, m.q);
        break;
    }
  }
}

// out[k] = sum_j a_j[k] b_j[k]: `pairs` pairs, the limbs' addresses per (k, j) in limbs
// ([k][j][a, b]); a_j read through perm, or at t >> shift[j] (a compact a_j, rns_ops.hpp).
__global__ void inner_product_kernel(const u64* const* limbs, u64* out, std::uint32_t n,
                                     const LimbMap* map, std::uint32_t pairs,
                                     const std::uint32_t* perm, const std::uint32_t* shift) {
  const std::uint32_t k = blockIdx.y;
  const LimbMap m = map[k];
  const u64* const* l = limbs + std::size_t{k} * pairs * 2;
  u64* o = out + std::size_t{k} * n;
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += gridDim.x * blockDim.x) {
    u64 hi = 0, lo = 0;
    for (std::uint32_t j = 0; j < pairs; ++j) {
      const u64 x = l[2 * j][perm != nullptr ? perm[t] : t >> shift[j]], y = l[2 * j + 1][t];
      const u64 p_lo = x * y;
      lo += p_lo;
      hi += core::mul_hi(x, y) + (lo < p_lo ? 1 : 0);
    }
    o[t] = core::reduce_double_word(hi, lo, m.q, m.ratio);
  }
}

// The uniform half of a seeded key (RnsOps::uniform; uniform_from_stream in rns_ops.hpp is
// the CPU's): one thread block per (512-word chunk, limb). Each draw has `blocks` AES blocks
// ((want + 1) / 2 first, then 8), one per thread, two candidates each, masked to q's bit length
// and kept when below q; an exclusive scan of the threads' counts places the kept words in
// stream order, so the words are the CPU's, and the draws go on until the chunk is full.
struct AesTables {
  std::uint8_t sbox[256];
  std::uint8_t round_keys[176];
};
constexpr int kUniformThreads = 256;
constexpr std::uint32_t kUniformChunk = 512;

__global__ void uniform_kernel(AesTables tables, const LimbMap* map, const u64* streams,
                               std::uint32_t n, u64* out) {
  __shared__ std::uint8_t sbox[256];
  __shared__ std::uint8_t rk[176];
  using Scan = cub::BlockScan<std::uint32_t, kUniformThreads>;
  __shared__ typename Scan::TempStorage scan;
  for (int i = threadIdx.x; i < 256; i += blockDim.x)
    sbox[i] = tables.sbox[i];
  for (int i = threadIdx.x; i < 176; i += blockDim.x)
    rk[i] = tables.round_keys[i];
  __syncthreads();
  const std::uint32_t k = blockIdx.y, first = blockIdx.x * kUniformChunk;
  const u64 q = map[k].q, stream = streams[k];
  const u64 mask = q >= (u64{1} << 63) ? ~u64{0} : (u64{1} << (64 - __clzll(q))) - 1;
  const std::uint32_t want = min(kUniformChunk, n - first);
  u64* o = out + std::size_t{k} * n + first;
  u64 counter = u64{blockIdx.x} << 32;
  std::uint32_t kept = 0;
  for (std::uint32_t blocks = (want + 1) / 2; kept < want; blocks = 8) {
    u64 w[2] = {0, 0};
    std::uint32_t count = 0;
    if (threadIdx.x < blocks) {
      core::aes::ctr_block(sbox, rk, stream, counter + threadIdx.x, w);
      w[0] &= mask;
      w[1] &= mask;
      count = (w[0] < q ? 1U : 0U) + (w[1] < q ? 1U : 0U);
    }
    std::uint32_t at = 0, total = 0;
    Scan(scan).ExclusiveSum(count, at, total);
    at += kept;
    for (int i = 0; i < 2 && threadIdx.x < blocks; ++i) {
      if (w[i] < q) {
        if (at < want) o[at] = w[i];
        ++at;
      }
    }
    kept += total;
    counter += blocks;
    __syncthreads();  // the scan's storage is reused by the next draw
  }
}

__global__ void permute_kernel(const u64* a, u64* out, std::uint32_t n, const LimbMap* map,
                               const std::uint32_t* perm) {
  const std::uint32_t k = blockIdx.y;
  const u64* x = a + map[k].a;
  u64* o = out + std::size_t{k} * n;
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n; t += gridDim.x * blockDim.x)
    o[t] = x[perm[t]];
}

// Base conversion. prepare: y_i = x_i (Q/q_i)^-1 mod q_i (LimbMap c = that constant).
__global__ void convert_prepare_kernel(const u64* in, u64* y, std::uint32_t n,
                                       const LimbMap* from) {
  const std::uint32_t i = blockIdx.y;
  const LimbMap m = from[i];
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n; t += gridDim.x * blockDim.x)
    y[std::size_t{i} * n + t] = core::mul_shoup(in[m.a + t], m.c, m.c_quotient, m.q);
}

// v = round(sum_i y_i / q_i), in the CPU's order and rounding.
__global__ void convert_v_kernel(const u64* y, u64* v, std::uint32_t n, std::uint32_t k,
                                 const double* inv_q) {
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += gridDim.x * blockDim.x) {
    double sum = 0;
    for (std::uint32_t i = 0; i < k; ++i)
      sum = __dadd_rn(sum, __dmul_rn(static_cast<double>(y[std::size_t{i} * n + t]), inv_q[i]));
    v[t] = static_cast<u64>(llround(sum));
  }
}

// out_j = sum_i y_i c_ij mod p_j (two-word sums folded every 15 terms), minus v (Q mod p_j)
// for the exact variant. constants: [j][i]; map[j]: p_j, ratio, out offset (a), Q mod p_j (c).
__global__ void convert_kernel(const u64* y, const u64* v, u64* out, std::uint32_t n,
                               std::uint32_t k, const LimbMap* map, const u64* constants,
                               bool exact) {
  const std::uint32_t j = blockIdx.y;
  const LimbMap m = map[j];
  const u64* c = constants + std::size_t{j} * k;
  for (std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += gridDim.x * blockDim.x) {
    u64 hi = 0, lo = 0;
    std::uint32_t i = 0;
    for (std::uint32_t limit = 15; i < k; limit += 15) {
      const std::uint32_t stop = k < limit ? k : limit;
      for (; i < stop; ++i) {
        const u64 x = y[std::size_t{i} * n + t];
        const u64 p_lo = x * c[i];
        lo += p_lo;
        hi += core::mul_hi(x, c[i]) + (lo < p_lo ? 1 : 0);
      }
      if (i < k) {
        lo = core::reduce_double_word(hi, lo, m.q, m.ratio);
        hi = 0;
      }
    }
    u64 r = core::reduce_double_word(hi, lo, m.q, m.ratio);
    if (exact) r = core::sub_mod(r, core::mul_shoup(v[t], m.c, m.c_quotient, m.q), m.q);
    out[m.a + t] = r;
  }
}

dim3 grid(std::uint32_t n, std::size_t limbs) {
  return dim3(elementwise_blocks(n) > 64 ? 64 : elementwise_blocks(n),
              static_cast<unsigned>(limbs));
}

// ---- device words ------------------------------------------------------------------------------

// Stream-ordered allocations from the device's default memory pool, whose release threshold is
// raised so that freed blocks stay with the process between synchronisations, and copies, all on
// one stream that every primitive of the backend uses.
class CudaMemory final : public ckks::DeviceMemory {
 public:
  CudaMemory() { keep_pool_memory(); }
  u64* allocate(std::size_t words) override {
    void* p = nullptr;
    check(cudaMallocAsync(&p, words * sizeof(u64), stream()), "cudaMallocAsync");
    return static_cast<u64*>(p);
  }
  void release(u64* p, std::size_t) noexcept override { cudaFreeAsync(p, stream()); }
  void copy(u64* dst, const u64* src, std::size_t words) override {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, stream()),
          "cudaMemcpyAsync (device to device)");
  }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  Stream stream_;
};

void check_words(const RnsPoly& p) {
  const std::size_t words = p.on_device() ? p.device.size() : p.data.size();
  require(words == p.limbs() * std::size_t{p.n}, ErrorCode::size_mismatch,
          "RNS polynomial's words do not match its limbs");
}

// An input's words on the device: its own when resident, else a staged copy of its host words.
class DeviceView {
 public:
  DeviceView(const RnsPoly& p, cudaStream_t stream) {
    check_words(p);
    if (p.on_device()) {
      ptr_ = p.device.data();
    } else {
      staged_ = DeviceBuffer<u64>(std::span<const u64>(p.data), stream);
      ptr_ = staged_.data();
    }
  }
  const u64* get() const { return ptr_; }
  bool staged() const { return staged_.size() > 0; }
  void download(std::span<u64> host) const { staged_.download(host); }

 private:
  DeviceBuffer<u64> staged_;
  const u64* ptr_ = nullptr;
};

// An output's words on the device: its own when resident, else a staged copy of its host words
// (uploaded, so that limbs the operation does not write are kept), downloaded by finish().
class DeviceTarget {
 public:
  DeviceTarget(RnsPoly& p, cudaStream_t stream) : view_(p, stream), poly_(&p), stream_(stream) {}
  // Writable: the view is of the caller's own (non-const) output.
  u64* get() const { return const_cast<u64*>(view_.get()); }
  void finish() {
    if (view_.staged()) {
      view_.download(poly_->data);
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
  }

 private:
  DeviceView view_;
  RnsPoly* poly_;
  cudaStream_t stream_;
};

// ---- the RnsOps -------------------------------------------------------------------------------

class CudaRnsOps final : public ckks::RnsOps {
 public:
  explicit CudaRnsOps(const ckks::CkksContext& context)
      : RnsOps(context), device_(require_device()), memory_(std::make_shared<CudaMemory>()) {
    const std::uint32_t n = context.degree();
    const std::size_t primes = context.primes().size();
    std::vector<u64> fw(primes * n), fwq(primes * n), iv(primes * n), ivq(primes * n);
    for (std::size_t p = 0; p < primes; ++p) {
      const auto& tb = context.ntt(static_cast<ModulusIndex>(p)).tables();
      std::copy(tb.forward.begin(), tb.forward.end(), fw.begin() + p * n);
      std::copy(tb.forward_quotient.begin(), tb.forward_quotient.end(), fwq.begin() + p * n);
      std::copy(tb.inverse.begin(), tb.inverse.end(), iv.begin() + p * n);
      std::copy(tb.inverse_quotient.begin(), tb.inverse_quotient.end(), ivq.begin() + p * n);
      n_inv_.push_back(tb.n_inv);
      n_inv_quotient_.push_back(tb.n_inv_quotient);
    }
    forward_ = DeviceBuffer<u64>(std::span<const u64>(fw), s());
    forward_q_ = DeviceBuffer<u64>(std::span<const u64>(fwq), s());
    inverse_ = DeviceBuffer<u64>(std::span<const u64>(iv), s());
    inverse_q_ = DeviceBuffer<u64>(std::span<const u64>(ivq), s());
    check(cudaStreamSynchronize(s()), "upload NTT tables");
  }

  // ---- storage
  RnsPoly zeros(std::vector<ModulusIndex> moduli, bool ntt) const override {
    RnsPoly p;
    reshape(p, moduli, ntt);
    if (p.device.size() > 0) {
      check(cudaMemsetAsync(p.device.data(), 0, p.device.size() * sizeof(u64), s()),
            "cudaMemsetAsync");
    }
    return p;
  }

  void reshape(RnsPoly& p, std::span<const ModulusIndex> moduli, bool ntt) const override {
    p.n = context().degree();
    p.moduli.assign(moduli.begin(), moduli.end());
    p.ntt = ntt;
    const std::size_t words = p.limbs() * std::size_t{p.n};
    if (!p.on_device() || p.device.memory() != memory_) {
      ckks::Words().swap(p.data);
      p.device = ckks::DeviceWords(memory_, words);
    } else {
      p.device.resize(words);
    }
  }

  void make_resident(RnsPoly& p) const override {
    if (p.on_device()) return;
    check_words(p);
    ckks::DeviceWords words(memory_, p.data.size());
    if (!p.data.empty()) {
      // From pageable memory: staged before the call returns, so the host words may go.
      check(cudaMemcpyAsync(words.data(), p.data.data(), p.data.size() * sizeof(u64),
                            cudaMemcpyHostToDevice, s()),
            "cudaMemcpyAsync (upload)");
    }
    ckks::Words().swap(p.data);
    p.device = std::move(words);
  }

  void to_host(RnsPoly& p) const override {
    if (!p.on_device()) return;
    ckks::Words host(p.device.size());
    if (!host.empty()) {
      check(cudaMemcpyAsync(host.data(), p.device.data(), host.size() * sizeof(u64),
                            cudaMemcpyDeviceToHost, s()),
            "cudaMemcpyAsync (download)");
    }
    check(cudaStreamSynchronize(s()), "cudaStreamSynchronize");
    p.device = {};
    p.data = std::move(host);
  }

  void synchronize() const override { check(cudaStreamSynchronize(s()), "cudaStreamSynchronize"); }

  // Ranges of whole steps (bootstrapping's ModRaise, CoeffToSlot, EvalMod, SlotToCoeff) in the
  // same domain as the primitives' ranges, which nest inside them.
  void begin_range(const char* name) const override {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.category = static_cast<std::uint32_t>(NvtxCategory::ring);
    attributes.colorType = NVTX_COLOR_ARGB;
    attributes.color = kStepColour;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(NvtxRange::domain(), &attributes);
  }
  void end_range() const override { nvtxDomainRangePop(NvtxRange::domain()); }

  void copy(const RnsPoly& a, RnsPoly& out, std::size_t first, std::size_t last) const override {
    NvtxRange range("ckks copy", NvtxCategory::ring, kColour);
    require(a.n == out.n, ErrorCode::size_mismatch, "RNS copy between different degrees");
    last = std::min(last, out.limbs());
    if (first >= last) return;
    const DeviceView src(a, s());
    DeviceTarget dst(out, s());
    const std::size_t n = out.n;
    for (std::size_t k = first; k < last; ++k) {
      check(cudaMemcpyAsync(dst.get() + k * n, src.get() + a.position(out.moduli[k]) * n,
                            n * sizeof(u64), cudaMemcpyDeviceToDevice, s()),
            "cudaMemcpyAsync (limb)");
    }
    dst.finish();
  }

  // ---- arithmetic
  void forward(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, false);
  }
  void inverse(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, true);
  }
  void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::add, {});
  }
  void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::sub, {});
  }
  void negate(const RnsPoly& a, RnsPoly& out) const override {
    elementwise(a, a, out, Op::negate, {});
  }
  void multiply(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::multiply, {});
  }
  void multiply_accumulate(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::multiply_accumulate, {});
  }
  void sub_scale(const RnsPoly& a, const RnsPoly& b, std::span<const u64> scalars,
                 RnsPoly& out) const override {
    elementwise(a, b, out, Op::sub_scale, scalars);
  }
  void multiply_scalars(const RnsPoly& a, std::span<const u64> scalars,
                        RnsPoly& out) const override {
    elementwise(a, a, out, Op::scale, scalars);
  }
  void add_scalars(const RnsPoly& a, std::span<const u64> scalars, RnsPoly& out) const override {
    elementwise(a, a, out, Op::add_scalar, scalars);
  }

  void inner_product(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b,
                     RnsPoly& out, std::span<const std::uint32_t> perm) const override {
    NvtxRange range("ckks inner_product", NvtxCategory::ring, kColour);
    require(!a.empty() && a.size() == b.size() && a.size() <= 16, ErrorCode::size_mismatch,
            "inner product of 1 .. 16 pairs of polynomials");
    const std::uint32_t n = out.n;
    require(perm.empty() || perm.size() == n, ErrorCode::size_mismatch,
            "a fused permutation needs N entries");
    std::vector<DeviceView> va, vb;
    std::vector<std::uint32_t> shift;
    va.reserve(a.size());
    vb.reserve(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
      const std::uint32_t an = a[j]->n;
      require(an != 0 && n % an == 0 && ((n / an) & (n / an - 1)) == 0 && b[j]->n == n &&
                  a[j]->ntt == b[j]->ntt,
              ErrorCode::size_mismatch, "RNS operands of different degrees or forms");
      require(an == n || perm.empty(), ErrorCode::invalid_argument,
              "a fused permutation of a compact polynomial");
      shift.push_back(static_cast<std::uint32_t>(__builtin_ctz(n / an)));
      va.emplace_back(*a[j], s());
      vb.emplace_back(*b[j], s());
    }
    std::vector<LimbMap> map;
    std::vector<const u64*> limbs;  // [k][j][a, b]
    for (ModulusIndex mod : out.moduli) {
      map.push_back(limb_map(mod, 0, 0, 0));
      for (std::size_t j = 0; j < a.size(); ++j) {
        limbs.push_back(va[j].get() + a[j]->position(mod) * a[j]->n);
        limbs.push_back(vb[j].get() + b[j]->position(mod) * n);
      }
    }
    DeviceTarget dout(out, s());
    DeviceBuffer<LimbMap> dmap(std::span<const LimbMap>(map), s());
    DeviceBuffer<const u64*> dlimbs(std::span<const u64* const>(limbs), s());
    DeviceBuffer<std::uint32_t> dperm(perm, s());
    DeviceBuffer<std::uint32_t> dshift(std::span<const std::uint32_t>(shift), s());
    inner_product_kernel<<<grid(n, out.limbs()), kElementwiseThreads, 0, s()>>>(
        dlimbs.data(), dout.get(), n, dmap.data(), static_cast<std::uint32_t>(a.size()),
        perm.empty() ? nullptr : dperm.data(), dshift.data());
    check_launch("inner_product_kernel");
    out.ntt = a[0]->ntt;
    dout.finish();
  }

  void uniform(const core::AesCtr& prf, std::uint64_t stream_base,
               std::span<const ModulusIndex> moduli, RnsPoly& out) const override {
    NvtxRange range("ckks uniform", NvtxCategory::ring, kColour);
    reshape(out, moduli, true);
    std::vector<LimbMap> map;
    std::vector<u64> streams;
    for (ModulusIndex mod : out.moduli) {
      map.push_back(limb_map(mod, 0, 0, 0));
      streams.push_back(stream_base | mod);
    }
    AesTables tables{};
    std::copy(core::aes_sbox().begin(), core::aes_sbox().end(), tables.sbox);
    std::copy(prf.round_keys().begin(), prf.round_keys().end(), tables.round_keys);
    DeviceTarget dout(out, s());
    DeviceBuffer<LimbMap> dmap(std::span<const LimbMap>(map), s());
    DeviceBuffer<u64> dstreams(std::span<const u64>(streams), s());
    const dim3 blocks((out.n + kUniformChunk - 1) / kUniformChunk,
                      static_cast<std::uint32_t>(out.limbs()));
    uniform_kernel<<<blocks, kUniformThreads, 0, s()>>>(tables, dmap.data(), dstreams.data(), out.n,
                                                        dout.get());
    check_launch("uniform_kernel");
    dout.finish();
  }

  void permute(const RnsPoly& a, std::span<const std::uint32_t> perm, RnsPoly& out) const override {
    NvtxRange range("ckks permute", NvtxCategory::ring, kColour);
    require(&a != &out, ErrorCode::invalid_argument, "permute: output aliases input");
    require(a.ntt && perm.size() == out.n && a.n == out.n, ErrorCode::size_mismatch,
            "permute takes NTT-form limbs and a permutation of N slots");
    std::vector<LimbMap> map;
    for (ModulusIndex mod : out.moduli)
      map.push_back(limb_map(mod, a.position(mod) * a.n, 0, 0));
    const DeviceView da(a, s());
    DeviceTarget dout(out, s());
    DeviceBuffer<LimbMap> dmap(std::span<const LimbMap>(map), s());
    DeviceBuffer<std::uint32_t> dperm(perm, s());
    permute_kernel<<<grid(out.n, out.limbs()), kElementwiseThreads, 0, s()>>>(
        da.get(), dout.get(), out.n, dmap.data(), dperm.data());
    check_launch("permute_kernel");
    dout.finish();
  }

  void convert(const ckks::BaseConverter& converter, const RnsPoly& in, RnsPoly& out,
               Conversion variant) const override {
    NvtxRange range("ckks convert", NvtxCategory::ring, kColour);
    require(!in.ntt && !out.ntt && in.n == out.n, ErrorCode::size_mismatch,
            "base conversion takes and writes coefficients");
    const std::uint32_t n = in.n;
    const auto from = converter.from();
    const auto to = converter.to();
    const auto k = static_cast<std::uint32_t>(from.size());
    const auto& tables = converter.tables();
    std::vector<LimbMap> from_map, to_map;
    for (std::size_t i = 0; i < k; ++i) {
      LimbMap m = limb_map(from[i], in.position(from[i]) * n, 0, 0);
      m.c = tables.qhat_inv[i].value;
      m.c_quotient = tables.qhat_inv[i].quotient;
      from_map.push_back(m);
    }
    std::vector<u64> constants;
    for (std::size_t j = 0; j < to.size(); ++j) {
      LimbMap m = limb_map(to[j], out.position(to[j]) * n, 0, 0);
      m.c = tables.q_mod[j].value;
      m.c_quotient = tables.q_mod[j].quotient;
      to_map.push_back(m);
      for (std::size_t i = 0; i < k; ++i)
        constants.push_back(tables.qhat_mod[j * k + i].value);
    }
    const DeviceView din(in, s());
    DeviceTarget dout(out, s());  // other limbs kept
    DeviceBuffer<u64> dy(std::size_t{k} * n, s()), dv(n, s());
    DeviceBuffer<LimbMap> dfrom(std::span<const LimbMap>(from_map), s());
    DeviceBuffer<LimbMap> dto(std::span<const LimbMap>(to_map), s());
    DeviceBuffer<u64> dconst(std::span<const u64>(constants), s());
    DeviceBuffer<double> dinv(std::span<const double>(tables.inv_q), s());
    convert_prepare_kernel<<<grid(n, k), kElementwiseThreads, 0, s()>>>(din.get(), dy.data(), n,
                                                                        dfrom.data());
    check_launch("convert_prepare_kernel");
    const bool exact = variant == Conversion::exact;
    if (exact) {
      convert_v_kernel<<<grid(n, 1), kElementwiseThreads, 0, s()>>>(dy.data(), dv.data(), n, k,
                                                                    dinv.data());
      check_launch("convert_v_kernel");
    }
    convert_kernel<<<grid(n, to.size()), kElementwiseThreads, 0, s()>>>(
        dy.data(), dv.data(), dout.get(), n, k, dto.data(), dconst.data(), exact);
    check_launch("convert_kernel");
    dout.finish();
  }

 private:
  cudaStream_t s() const { return memory_->stream(); }

  LimbMap limb_map(ModulusIndex mod, std::size_t a, std::size_t b, u64 c) const {
    const u64 q = context().prime(mod);
    return {q, core::make_wide_reducer(q), a, b, c, c == 0 ? 0 : core::shoup_quotient(c, q)};
  }

  void elementwise(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Op op,
                   std::span<const u64> scalars) const {
    NvtxRange range("ckks elementwise", NvtxCategory::ring, kColour);
    require(a.n == out.n && b.n == out.n && a.ntt == b.ntt, ErrorCode::size_mismatch,
            "RNS operands of different degrees or forms");
    std::vector<LimbMap> map;
    for (ModulusIndex mod : out.moduli) {
      map.push_back(limb_map(mod, a.position(mod) * a.n, b.position(mod) * b.n,
                             scalars.empty() ? 0 : scalars[mod]));
    }
    const DeviceView da(a, s()), db(b, s());
    DeviceTarget dout(out, s());
    DeviceBuffer<LimbMap> dmap(std::span<const LimbMap>(map), s());
    elementwise_kernel<<<grid(out.n, out.limbs()), kElementwiseThreads, 0, s()>>>(
        da.get(), db.get(), dout.get(), out.n, dmap.data(), op);
    check_launch("elementwise_kernel");
    if (op != Op::sub_scale && op != Op::scale) out.ntt = a.ntt;
    dout.finish();
  }

  void transform(RnsPoly& p, std::size_t first, std::size_t last, bool inverse) const {
    NvtxRange range(inverse ? "ckks ntt inverse" : "ckks ntt forward", NvtxCategory::ring, kColour);
    last = std::min(last, p.limbs());
    require(p.ntt == inverse, ErrorCode::invalid_argument,
            inverse ? "inverse NTT of a polynomial in coefficient form"
                    : "forward NTT of a polynomial already in NTT form");
    if (first >= last) return;
    const std::uint32_t n = p.n;
    const std::size_t count = last - first;
    // Tables for the limbs' moduli, gathered into one array each.
    std::vector<u64> moduli, ni, niq;
    for (std::size_t k = first; k < last; ++k) {
      moduli.push_back(context().prime(p.moduli[k]));
      ni.push_back(n_inv_[p.moduli[k]]);
      niq.push_back(n_inv_quotient_[p.moduli[k]]);
    }
    const u64* tw = inverse ? inverse_.data() : forward_.data();
    const u64* twq = inverse ? inverse_q_.data() : forward_q_.data();
    const std::vector<std::uint32_t> index(p.moduli.begin() + first, p.moduli.begin() + last);
    DeviceBuffer<std::uint32_t> dindex(std::span<const std::uint32_t>(index), s());
    DeviceTarget target(p, s());
    u64* d = target.get() + first * n;
    DeviceBuffer<u64> dmod(std::span<const u64>(moduli), s()), dni(std::span<const u64>(ni), s()),
        dniq(std::span<const u64>(niq), s());
    const dim3 g(elementwise_blocks(n / 2) > 64 ? 64 : elementwise_blocks(n / 2),
                 static_cast<unsigned>(count));
    if (!inverse) {
      for (std::uint32_t m = 1, t = n / 2; m < n; m *= 2, t /= 2) {
        ntt_level_kernel<<<g, kElementwiseThreads, 0, s()>>>(d, n, tw, twq, dmod.data(),
                                                             dindex.data(), m, t, false);
      }
    } else {
      for (std::uint32_t h = n / 2, t = 1; h >= 1; h /= 2, t *= 2) {
        ntt_level_kernel<<<g, kElementwiseThreads, 0, s()>>>(d, n, tw, twq, dmod.data(),
                                                             dindex.data(), h, t, true);
      }
    }
    check_launch("ntt_level_kernel");
    ntt_finish_kernel<<<grid(n, count), kElementwiseThreads, 0, s()>>>(
        d, n, dmod.data(), dni.data(), dniq.data(), inverse);
    check_launch("ntt_finish_kernel");
    target.finish();
    if (first == 0 && last == p.limbs()) p.ntt = !inverse;
  }

  // Checked before the stream is made, so that no device reads as such, not as a failed call.
  static bool require_device() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    require(status == cudaSuccess && count > 0, ErrorCode::device_error,
            std::string("the CKKS CUDA backend needs a CUDA device: no usable device (") +
                cudaGetErrorString(status) + ")");
    return true;
  }

  bool device_;
  std::shared_ptr<CudaMemory> memory_;  // shared with the resident polynomials' words
  DeviceBuffer<u64> forward_, forward_q_, inverse_, inverse_q_;  // [modulus][N]
  std::vector<u64> n_inv_, n_inv_quotient_;
};

}  // namespace

std::unique_ptr<ckks::RnsOps> make_cuda_rns_ops(const ckks::CkksContext& context) {
  return std::make_unique<CudaRnsOps>(context);
}

}  // namespace safhire::cuda
