// The bodies of the CKKS backend's kernels (besides the NTT's, negacyclic_ntt_tile.cuh), written
// for the threads of one limb: each takes the launch's arguments, the limb (blockIdx.y) and the
// thread's place in a grid-stride loop over the limb's words (first = blockIdx.x blockDim.x +
// threadIdx.x, stride = gridDim.x blockDim.x). cuda/ckks_rns.cu launches them;
// tests/ckks/test_ckks_device_emulation.cpp runs them on CPU threads through the same
// DeviceRnsOps (device_rns_ops.hpp), so that their indexing is checked without a GPU.
//
// Each launch's constants (the limbs' moduli and offsets, the inner products' addresses, the base
// conversion's tables) travel in its kernel parameters, at most 4 KB on every device and driver,
// so that a launch uploads nothing and allocates nothing: a launch covers a bounded number of
// limbs (kMaxLimbs, kMaxProductLimbs, the conversion's targets), and the backend splits longer
// polynomials over several launches.
//
// Arithmetic is the CPU's (core/modarith.hpp): products of two residues and sums of products
// through reduce_double_word, Shoup products by constants, and the exact base conversion's
// double-precision rounding with FMA contraction ruled out, so every output word is the CPU's.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "negacyclic_ntt_tile.cuh"
#include "safhire/core/aes_block.hpp"
#include "safhire/core/hostdevice.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::cuda::ckks_kernels {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

// Threads per block of every CKKS kernel.
inline constexpr u32 kThreads = 256;

// Limbs per launch of the kernels that take a constant or two per limb: every limb of the
// N = 2^16 sets' Q and P at once (33 primes for n16-l24), so that a polynomial is one launch, not
// a full one and a thin tail. More primes take several launches (DeviceRnsOps may be asked for
// fewer a launch, which its tests do to run the split).
inline constexpr u32 kMaxLimbs = 48;
// The kernel parameters' size on every device and driver (4096 bytes), less some headroom.
inline constexpr std::size_t kMaxParameterBytes = 4000;

// A launch's grid: x blocks per limb (a grid-stride loop within it), y limbs.
struct Grid {
  u32 x = 1, y = 1;
};

// Up to 64 blocks of kThreads per limb for a loop over n words.
inline Grid grid_for(u32 n, std::size_t limbs) {
  const u32 blocks = (n + kThreads - 1) / kThreads;
  return {blocks == 0 ? 1 : (blocks > 64 ? 64 : blocks), static_cast<u32>(limbs)};
}

// The negacyclic NTT's passes (negacyclic_ntt_tile.cuh) over `limbs` limbs: one thread block
// per (tile, limb), blockIdx.y the limb. The tables are the context's, [modulus][N], read in
// place for each limb's prime; the moduli and N^-1 likewise by modulus.
enum class NttPass : int { forward_columns, forward_chunks, inverse_chunks, inverse_columns };

struct NttArgs {
  u64* data;  // the launch's first limb, N words each
  negacyclic::Split split;
  const u64* tables;     // [modulus][N]: forward or inverse twiddles
  const u64* quotients;  // their Shoup quotients
  const u64* moduli;     // [modulus]
  const u64* n_inv;      // [modulus]: N^-1 and its quotient
  const u64* n_inv_quotient;
  NttPass pass;
  u32 modulus_index[kMaxLimbs];  // [limb]
};
static_assert(sizeof(NttArgs) <= kMaxParameterBytes);

template <class Sync>
SAFHIRE_HD void ntt_tile(const NttArgs& args, u32 tile, u32 limb, u64* shared, u32 tid, u32 threads,
                         Sync&& sync) {
  const u32 mod = args.modulus_index[limb];
  const std::size_t n = args.split.n();
  const negacyclic::LimbTables t{args.tables + mod * n, args.quotients + mod * n, args.moduli[mod],
                                 args.n_inv[mod], args.n_inv_quotient[mod]};
  u64* a = args.data + limb * n;
  switch (args.pass) {
    case NttPass::forward_columns:
      negacyclic::forward_columns(a, t, args.split, tile, shared, tid, threads, sync);
      break;
    case NttPass::forward_chunks:
      negacyclic::forward_chunks(a, t, args.split, tile, shared, tid, threads, sync);
      break;
    case NttPass::inverse_chunks:
      negacyclic::inverse_chunks(a, t, args.split, tile, shared, tid, threads, sync);
      break;
    case NttPass::inverse_columns:
      negacyclic::inverse_columns(a, t, args.split, tile, shared, tid, threads, sync);
      break;
  }
}

// Per output limb k: the modulus, the Barrett ratio, the offsets of the inputs' limbs (in
// words) and a Shoup constant; each kernel reads what it needs.
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

// out limb k = op(a, b) over the limbs the map names; a and b in [0, q), out in [0, q).
// out points at the launch's first output limb.
struct ElementwiseArgs {
  const u64* a;
  const u64* b;
  u64* out;
  u32 n;
  Op op;
  LimbMap map[kMaxLimbs];
};
static_assert(sizeof(ElementwiseArgs) <= kMaxParameterBytes);

SAFHIRE_HD void elementwise_limb(const ElementwiseArgs& args, u32 k, u32 first, u32 stride) {
  const LimbMap m = args.map[k];
  const u64* x = args.a + m.a;
  const u64* y = args.b + m.b;
  u64* o = args.out + std::size_t{k} * args.n;
  for (u32 t = first; t < args.n; t += stride) {
    const u64 xv = x[t];
    switch (args.op) {
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

// A modulus's reduction constants, kept on the device by modulus index (DeviceRnsOps), so that
// a launch names its limbs' moduli in a byte each.
struct ModulusReduction {
  u64 q;
  core::WideReducer ratio;
};

// out[k] = sum_j a_j[k] b_j[k]: `pairs` pairs (at most 16: the two-word sum cannot overflow).
// Pair j's polynomials start at a[j] and b[j]; the launch's limb k is limb a_pos[k][j] of a_j
// (limbs of n >> shift[j] words: a compact a_j, rns_ops.hpp) and b_pos[k][j] of b_j. a_j is read
// through perm, or at t >> shift[j], or, where a[j] is null, is a constant of one word per limb:
// constant[k * constants + slot[j]] (each limb's `constants` words in a row, so that a launch
// takes at most kProductConstants / constants limbs). Limb k reduces by
// reductions[modulus[k]]. out points at the launch's first output limb.
inline constexpr u32 kMaxPairs = 16;
inline constexpr u32 kProductConstants = 240;
struct InnerProductArgs {
  u64* out;
  const u32* perm;
  const ModulusReduction* reductions;
  u32 n;
  u32 pairs;
  u32 constants;
  u32 shift[kMaxPairs];
  const u64* a[kMaxPairs];
  const u64* b[kMaxPairs];
  std::uint8_t slot[kMaxPairs];
  std::uint8_t modulus[kMaxLimbs];
  std::uint8_t a_pos[kMaxLimbs][kMaxPairs];
  std::uint8_t b_pos[kMaxLimbs][kMaxPairs];
  u64 constant[kProductConstants];
};
static_assert(sizeof(InnerProductArgs) <= kMaxParameterBytes);

SAFHIRE_HD void inner_product_limb(const InnerProductArgs& args, u32 k, u32 first, u32 stride) {
  const ModulusReduction m = args.reductions[args.modulus[k]];
  u64* o = args.out + std::size_t{k} * args.n;
  for (u32 t = first; t < args.n; t += stride) {
    u64 hi = 0, lo = 0;
    for (u32 j = 0; j < args.pairs; ++j) {
      const u64* a = args.a[j];
      u64 x;
      if (a == nullptr) {
        x = args.constant[k * args.constants + args.slot[j]];
      } else {
        const u32 at = args.perm != nullptr ? args.perm[t] : t >> args.shift[j];
        x = a[std::size_t{args.a_pos[k][j]} * (args.n >> args.shift[j]) + at];
      }
      const u64 y = args.b[j][std::size_t{args.b_pos[k][j]} * args.n + t];
      const u64 p_lo = x * y;
      lo += p_lo;
      hi += core::mul_hi(x, y) + (lo < p_lo ? 1 : 0);
    }
    o[t] = core::reduce_double_word(hi, lo, m.q, m.ratio);
  }
}

// out limb k [t] = a limb (map a) [perm[t]]: an automorphism in NTT form.
struct PermuteArgs {
  const u64* a;
  u64* out;
  const u32* perm;
  u32 n;
  LimbMap map[kMaxLimbs];
};
static_assert(sizeof(PermuteArgs) <= kMaxParameterBytes);

SAFHIRE_HD void permute_limb(const PermuteArgs& args, u32 k, u32 first, u32 stride) {
  const u64* x = args.a + args.map[k].a;
  u64* o = args.out + std::size_t{k} * args.n;
  for (u32 t = first; t < args.n; t += stride)
    o[t] = x[args.perm[t]];
}

// out limb k [t] = c[t] mod q_k in [0, q_k): the residues of a signed integer polynomial (a lazy
// diagonal, RnsOps::expand_coefficients), c[t] as two's complement words, map[k].c =
// floor(2^64 / q_k): |c| - q floor(|c| m / 2^64) is below 3q (ckks::signed_residues' scalar
// loop).
struct SignedResiduesArgs {
  const u64* c;
  u64* out;
  u32 n;
  LimbMap map[kMaxLimbs];
};
static_assert(sizeof(SignedResiduesArgs) <= kMaxParameterBytes);

SAFHIRE_HD void signed_residues_limb(const SignedResiduesArgs& args, u32 k, u32 first, u32 stride) {
  const u64 q = args.map[k].q, m = args.map[k].c;
  u64* o = args.out + std::size_t{k} * args.n;
  for (u32 t = first; t < args.n; t += stride) {
    const u64 v = args.c[t];
    const bool negative = (v >> 63) != 0;
    const u64 x = negative ? u64{0} - v : v;
    u64 r = x - core::mul_hi(x, m) * q;
    r = r >= 2 * q ? r - 2 * q : r;
    r = r >= q ? r - q : r;
    o[t] = negative && r != 0 ? q - r : r;
  }
}

// Base conversion (rns.hpp, BaseConverter) in two kinds of launches:
//   prepare, one limb per source prime i: y_i = x_i (Q/q_i)^-1 mod q_i (from[i].c);
//   convert, one limb per target prime p_j: out_j = sum_i y_i (Q/q_i mod p_j) mod p_j, the
//   two-word sums folded every 15 terms, minus v (Q mod p_j) for the exact variant, where
//   v = round(sum_i y_i / q_i) is summed from the same words in the same pass, in the CPU's
//   order and rounding (each target's thread sums it again: k double products, where a launch
//   of its own would read the k N words of y once more).
// At most kMaxSources sources; the targets split over launches of at most kMaxTargets, with
// k constants each within kConvertConstants.
inline constexpr u32 kMaxSources = 64;
inline constexpr u32 kMaxTargets = 16;
inline constexpr u32 kConvertConstants = 288;

struct ConvertPrepareArgs {
  const u64* in;
  u64* y;  // the launch's first source row (k N words in all)
  u32 n;
  LimbMap from[kMaxLimbs];  // [i]: q_i, in's limb offset (a), (Q/q_i)^-1 mod q_i (c)
};
static_assert(sizeof(ConvertPrepareArgs) <= kMaxParameterBytes);

struct ConvertArgs {
  const u64* y;
  u64* out;
  u32 n, k;
  bool exact;
  LimbMap to[kMaxTargets];           // [j]: p_j, ratio, out's limb offset (a), Q mod p_j (c)
  u64 constants[kConvertConstants];  // [j][i]: (Q/q_i) mod p_j
  double inv_q[kMaxSources];         // [i]: 1 / q_i (the exact variant)
};
static_assert(sizeof(ConvertArgs) <= kMaxParameterBytes);

SAFHIRE_HD void convert_prepare_limb(const ConvertPrepareArgs& args, u32 i, u32 first, u32 stride) {
  const LimbMap m = args.from[i];
  u64* y = args.y + std::size_t{i} * args.n;
  for (u32 t = first; t < args.n; t += stride)
    y[t] = core::mul_shoup(args.in[m.a + t], m.c, m.c_quotient, m.q);
}

// y q^-1 summed without FMA contraction and rounded half away from zero, as the CPU does.
SAFHIRE_HD double multiply_rounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;  // the host code is built without FMA contraction into this sum
#endif
}
SAFHIRE_HD double add_rounded(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

SAFHIRE_HD void convert_limb(const ConvertArgs& args, u32 j, u32 first, u32 stride) {
  const LimbMap m = args.to[j];
  const u64* c = args.constants + j * args.k;
  for (u32 t = first; t < args.n; t += stride) {
    u64 hi = 0, lo = 0;
    double sum = 0;
    u32 i = 0;
    for (u32 limit = 15; i < args.k; limit += 15) {
      const u32 stop = args.k < limit ? args.k : limit;
      for (; i < stop; ++i) {
        const u64 x = args.y[std::size_t{i} * args.n + t];
        const u64 p_lo = x * c[i];
        lo += p_lo;
        hi += core::mul_hi(x, c[i]) + (lo < p_lo ? 1 : 0);
        if (args.exact)
          sum = add_rounded(sum, multiply_rounded(static_cast<double>(x), args.inv_q[i]));
      }
      if (i < args.k) {
        lo = core::reduce_double_word(hi, lo, m.q, m.ratio);
        hi = 0;
      }
    }
    u64 r = core::reduce_double_word(hi, lo, m.q, m.ratio);
    if (args.exact) {
      const auto v = static_cast<u64>(llround(sum));
      r = core::sub_mod(r, core::mul_shoup(v, m.c, m.c_quotient, m.q), m.q);
    }
    args.out[m.a + t] = r;
  }
}

// The uniform half of a seeded key (RnsOps::uniform; uniform_from_stream in rns_ops.hpp is the
// CPU's): one thread block per (512-word chunk, limb). Each draw has `blocks` AES blocks
// ((want + 1) / 2 first, then 8), two candidates each, masked to q's bit length and kept when
// below q; each block's count of kept words, summed over the blocks before it, places them in
// stream order, so the words are the CPU's, and the draws go on until the chunk is full.
struct AesTables {
  std::uint8_t sbox[256];
  std::uint8_t round_keys[176];
};
inline constexpr u32 kUniformChunk = 512;
inline constexpr u32 kUniformBlocks = kUniformChunk / 2;  // AES blocks of the largest draw

// out points at the launch's first limb.
struct UniformArgs {
  u64* out;
  u32 n;
  u64 q[kMaxLimbs];
  u64 stream[kMaxLimbs];  // the limb's AES-CTR stream
};
static_assert(sizeof(UniformArgs) + sizeof(AesTables) <= kMaxParameterBytes);

// All ones below q's top bit (q < 2^64).
SAFHIRE_HD u64 bit_length_mask(u64 q) {
  if (q >= (u64{1} << 63)) return ~u64{0};
  u64 mask = 1;
  while (mask < q)
    mask = (mask << 1) | 1;
  return mask;
}

// The block's shared state: the AES tables (copied in first), and each AES block's candidates
// (masked) and count of kept words in the current draw.
struct UniformShared {
  std::uint8_t sbox[256];
  std::uint8_t round_keys[176];
  u64 candidates[2 * kUniformBlocks];
  u32 kept[kUniformBlocks];
};

// Thread tid of `threads` takes the draw's AES blocks tid, tid + threads, ...: the kernel runs
// kUniformBlocks threads (one block each), an emulation any number.
template <class Sync>
SAFHIRE_HD void uniform_chunk(const AesTables& tables, const UniformArgs& args, u32 k, u32 chunk,
                              UniformShared& shared, u32 tid, u32 threads, Sync&& sync) {
  for (u32 i = tid; i < 256; i += threads)
    shared.sbox[i] = tables.sbox[i];
  for (u32 i = tid; i < 176; i += threads)
    shared.round_keys[i] = tables.round_keys[i];
  sync();
  const u32 first = chunk * kUniformChunk;
  const u64 q = args.q[k], stream = args.stream[k], mask = bit_length_mask(q);
  const u32 want = kUniformChunk < args.n - first ? kUniformChunk : args.n - first;
  u64* o = args.out + std::size_t{k} * args.n + first;
  u64 counter = u64{chunk} << 32;
  u32 kept = 0;
  for (u32 blocks = (want + 1) / 2; kept < want; blocks = 8) {
    for (u32 b = tid; b < blocks; b += threads) {
      u64* w = shared.candidates + 2 * b;
      core::aes::ctr_block(shared.sbox, shared.round_keys, stream, counter + b, w);
      w[0] &= mask;
      w[1] &= mask;
      shared.kept[b] = (w[0] < q ? 1U : 0U) + (w[1] < q ? 1U : 0U);
    }
    sync();
    for (u32 b = tid; b < blocks; b += threads) {
      // After the words kept by the blocks before b (broadcast reads of the shared counts).
      u32 at = kept;
      for (u32 i = 0; i < b; ++i)
        at += shared.kept[i];
      for (u32 i = 0; i < 2; ++i) {
        const u64 x = shared.candidates[2 * b + i];
        if (x < q) {
          if (at < want) o[at] = x;
          ++at;
        }
      }
    }
    for (u32 i = 0; i < blocks; ++i)
      kept += shared.kept[i];
    counter += blocks;
    sync();  // the next draw rewrites the candidates and counts
  }
}

}  // namespace safhire::cuda::ckks_kernels
