// The RNS layer of CKKS: a context that owns the primes of a parameter set (q_0 .. q_L, then the
// special primes p_0 .. p_{K-1}) with one negacyclic NTT plan each; RNS polynomials, whose limbs
// name the primes they hold by their index in that list; and base conversion between any two
// disjoint sets of those primes.
//
// Base conversion (Bajard et al., Halevi-Polyakov-Shoup). For x given by its residues x_i modulo
// the primes of Q = prod q_i, with y_i = x_i (Q/q_i)^-1 mod q_i:
//   approximate: out_j = sum_i y_i (Q/q_i) mod p_j, the residues of x + u Q for some
//                0 <= u < #from (what ModUp and ModDown use: the u Q term is absorbed later);
//   exact:       the same minus v Q with v = round(sum_i y_i / q_i) computed in double, the
//                residues of the centred representative of x in (-Q/2, Q/2] (exact unless x
//                lies within about 2^-50 Q of +-Q/2).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "safhire/ckks/buffer_pool.hpp"
#include "safhire/ckks/params.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/ring/negacyclic_ntt.hpp"
#include "safhire/ring/ring_params.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::ckks {

using core::u64;
using ModulusIndex = std::uint32_t;

// The primes of a parameter set and everything derived from them alone.
class CkksContext {
 public:
  // Validates params (see CkksParams::validate) and picks distinct primes q = 1 mod 2N of the
  // requested sizes, the largest of each size first.
  explicit CkksContext(CkksParams params, bool allow_insecure = false);

  const CkksParams& params() const { return params_; }
  const ring::RingParams& ring() const { return ring_; }
  std::uint32_t degree() const { return ring_.N(); }
  std::uint32_t max_level() const { return params_.max_level(); }
  std::uint32_t special_count() const { return static_cast<std::uint32_t>(p_bits_count_); }

  std::span<const u64> primes() const { return primes_; }  // q_0 .. q_L, p_0 .. p_{K-1}
  u64 prime(ModulusIndex i) const { return primes_.at(i); }
  const ring::NegacyclicNtt& ntt(ModulusIndex i) const { return *plans_.at(i); }
  // P = p_0 ... p_(K-1) modulo each prime, by modulus index (0 for the special primes): the
  // gadget factor of key switching and the lift of Q_l to Q_l P.
  std::span<const u64> p_mod() const { return p_mod_; }

  // Moduli of Q_l = q_0 .. q_l, of P, and of digit j at level l (primes j alpha .. ).
  std::vector<ModulusIndex> q_moduli(std::uint32_t level) const;
  std::vector<ModulusIndex> p_moduli() const;
  // q_0 .. q_level then p_0 .. p_{K-1}: the basis of key switching and of keys at that level.
  std::vector<ModulusIndex> qp_moduli(std::uint32_t level) const;
  std::uint32_t digits(std::uint32_t level) const;  // ceil((l + 1) / alpha)
  std::vector<ModulusIndex> digit_moduli(std::uint32_t level, std::uint32_t digit) const;

 private:
  CkksParams params_;
  ring::RingParams ring_;
  std::size_t p_bits_count_;
  std::vector<u64> primes_, p_mod_;
  std::vector<std::unique_ptr<ring::NegacyclicNtt>> plans_;
};

// Device memory for resident polynomials, provided by a backend (cuda::make_cuda_rns_ops): words
// allocated, released and copied device to device, each in the backend's stream order.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual u64* allocate(std::size_t words) = 0;
  virtual void release(u64* p, std::size_t words) noexcept = 0;
  virtual void copy(u64* dst, const u64* src, std::size_t words) = 0;
};

// An owning block of device words with value semantics: a copy allocates and copies on the
// device. It keeps its DeviceMemory alive, so a resident polynomial may outlive its backend's
// other state.
class DeviceWords {
 public:
  DeviceWords() = default;
  DeviceWords(std::shared_ptr<DeviceMemory> memory, std::size_t words);
  DeviceWords(const DeviceWords& other);
  DeviceWords& operator=(const DeviceWords& other);
  DeviceWords(DeviceWords&& other) noexcept;
  DeviceWords& operator=(DeviceWords&& other) noexcept;
  ~DeviceWords();

  u64* data() { return data_; }
  const u64* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::shared_ptr<DeviceMemory>& memory() const { return memory_; }
  // Shrinks in place; grows into a fresh block (contents not kept).
  void resize(std::size_t words);

 private:
  void release() noexcept;

  std::shared_ptr<DeviceMemory> memory_;
  u64* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

// A polynomial in RNS form: limb k holds the residues modulo prime moduli[k] of the context,
// either as coefficients or in NTT form (all limbs alike). Its words live on the host (`data`)
// or, for a backend with device memory, on the device (`device`, then `data` is empty): the
// backend's primitives read and write both, RnsOps::make_resident and to_host move them, and
// host code (limb(), the encoder, serialization) needs host words.
struct RnsPoly {
  std::uint32_t n = 0;
  std::vector<ModulusIndex> moduli;
  Words data;  // moduli.size() * n words, limb by limb (recycled storage: buffer_pool.hpp)
  DeviceWords device;
  bool ntt = false;

  RnsPoly() = default;
  RnsPoly(std::uint32_t degree, std::vector<ModulusIndex> limbs, bool ntt_form)
      : n(degree), moduli(std::move(limbs)), data(moduli.size() * degree, 0), ntt(ntt_form) {}

  std::size_t limbs() const { return moduli.size(); }
  bool on_device() const { return device.memory() != nullptr; }
  // Host words only: Error(invalid_argument) for a resident polynomial.
  std::span<u64> limb(std::size_t k) { return {host_words() + k * n, n}; }
  std::span<const u64> limb(std::size_t k) const {
    return {const_cast<RnsPoly*>(this)->host_words() + k * n, n};
  }
  // The position of a modulus among the limbs; Error(size_mismatch) if absent.
  std::size_t position(ModulusIndex modulus) const;
  bool has(ModulusIndex modulus) const;
  // Keep only the first `count` limbs (a level drop when they are q_0 .. q_{count-1}).
  void truncate(std::size_t count);

  // Host polynomials compare by value; a resident one is an Error(invalid_argument).
  friend bool operator==(const RnsPoly& a, const RnsPoly& b);

 private:
  u64* host_words();
};

enum class Conversion { approximate, exact };

// Conversion from the primes `from` to the disjoint primes `to` (both of one context).
class BaseConverter {
 public:
  // The multiply-accumulate runs on the vector kernels of `isa` where it has some (AVX-512),
  // bit-identical to the scalar loop; Error(unsupported) if isa is not available here.
  BaseConverter(const CkksContext& context, std::vector<ModulusIndex> from,
                std::vector<ModulusIndex> to, ring::SimdIsa isa = ring::default_simd());

  std::span<const ModulusIndex> from() const { return from_; }
  std::span<const ModulusIndex> to() const { return to_; }

  // Writes coefficients into the `to` limbs of out (found by modulus; other limbs untouched)
  // from in's coefficient limbs for every `from` prime: prepare() the y_i once, then
  // convert_range() over any split of the outputs (RnsOps::convert drives both).
  // Only the output limbs [first, last) of to(): for splitting the work between threads.
  void convert_range(const RnsPoly& in, RnsPoly& out, Conversion variant, std::span<const u64> y,
                     std::size_t first, std::size_t last) const;
  // y_i = x_i (Q/q_i)^-1 mod q_i for every `from` limb, into y (from().size() * N words).
  void prepare(const RnsPoly& in, std::span<u64> y) const;

  // The constants, for other implementations of the same conversion (the CUDA kernels).
  struct Tables {
    std::span<const core::ShoupConst<u64>> qhat_inv;  // [i] (Q/q_i)^-1 mod q_i
    std::span<const core::ShoupConst<u64>> qhat_mod;  // [j * from + i] (Q/q_i) mod p_j
    std::span<const core::ShoupConst<u64>> q_mod;     // [j] Q mod p_j
    std::span<const double> inv_q;                    // [i] 1 / q_i
  };
  Tables tables() const { return {qhat_inv_, qhat_mod_, q_mod_, inv_q_}; }

 private:
  std::uint32_t n_;
  std::vector<ModulusIndex> from_, to_;
  std::vector<u64> from_q_, to_p_;
  std::vector<core::ShoupConst<u64>> qhat_inv_;  // (Q/q_i)^-1 mod q_i
  std::vector<core::ShoupConst<u64>> qhat_mod_;  // [j][i] (Q/q_i) mod p_j
  std::vector<core::ShoupConst<u64>> q_mod_;     // Q mod p_j (exact variant)
  std::vector<double> inv_q_;                    // 1 / q_i
  std::vector<core::WideReducer> ratio_;         // 2^64 mod p_j and its Shoup constants
  bool vector_ = false;                          // the AVX-512 kernel (simd/rns_kernels.hpp)
  bool narrow_ = false;  // its IFMA variant: every source prime below 2^50 (rns_kernels.hpp)
};

}  // namespace safhire::ckks
