// RNS-CKKS: keys, encryption, and the evaluator, written once over the RNS primitives
// (rns_ops.hpp). Ciphertexts and keys are in NTT form. A ciphertext at level l lives modulo
// Q_l = q_0 ... q_l with a scale (a real number tracked exactly through every operation);
// rescaling divides by q_l and moves to level l - 1.
//
// Key switching is the hybrid method (Han-Ki): the primes of Q are cut into digits of alpha
// consecutive primes (dnum digits at the top level); a key for s' holds, per digit j,
// (b_j, a_j) = (-a_j s + e_j + [P]_{digit j} s', a_j) modulo Q P, where [P]_{digit j} is P on
// the primes of digit j and 0 elsewhere. Switching d: ModUp each digit of d to Q_l P,
// multiply-accumulate with the key, ModDown by P. Both conversions are the exact (centred)
// variant: the lifted digits are centred, so the error sum_j d_j e_j / P has mean zero and
// E[d_j^2] = Q_j^2 / 12 (the approximate lift in [0, alpha Q_j) has a mean of alpha Q_j / 2,
// whose constant part concentrates the error in a few slots), and ModDown rounds to nearest.
// Hoisted rotations share the ModUp of one ciphertext between many rotations: an automorphism
// commutes with ModUp, so each rotation reuses the digits, and with the keys stored as sigma^-1
// of themselves (GaloisKeys) it multiplies them as they are and permutes only its outputs.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "safhire/ckks/encoder.hpp"
#include "safhire/ckks/rns.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/aes_ctr.hpp"
#include "safhire/core/random.hpp"

namespace safhire::ckks {

struct Ciphertext {
  std::vector<RnsPoly> c;  // c_0, c_1 (and c_2 after a tensor product), NTT form over Q_level
  double scale = 1;
  std::uint32_t slots = 0;
  std::uint32_t level() const { return static_cast<std::uint32_t>(c.at(0).limbs()) - 1; }
  std::size_t size() const { return c.size(); }
};

struct SecretKey {
  RnsPoly s;  // NTT form over Q_L and P
  // Its host words are wiped (core::secure_zero) before the storage returns to the pool.
  ~SecretKey();
};

struct PublicKey {
  RnsPoly b, a;  // (-a s + e, a), NTT form over Q_L
};

struct SwitchingKey {
  std::vector<RnsPoly> b, a;  // one pair per digit, NTT form over Q_L and P (a empty if seeded)
  // A seeded key (KeyGenerator::set_seeded) stores no a_j: each is regenerated from this public
  // seed where the key is used (seeded_a), which halves the key's memory.
  std::optional<core::AesCtr::Key> seed;
  bool seeded() const { return seed.has_value(); }
};

// Digit j's a of a seeded key over `moduli` (those of the level it switches at: a subset of b_j's)
// into `out`, in ops' residence: RnsOps::uniform with streams j << 32 | modulus.
void seeded_a(const RnsOps& ops, const core::AesCtr::Key& seed, std::size_t digit,
              std::span<const ModulusIndex> moduli, RnsPoly& out);
// The a_j of a key's first `digits` digits over `moduli`: pointers to its own for a full key, or
// regenerated into `storage` (resized to `digits`, its polynomials reused) for a seeded one.
std::vector<const RnsPoly*> key_a(const RnsOps& ops, const SwitchingKey& key, std::size_t digits,
                                  std::span<const ModulusIndex> moduli,
                                  std::vector<RnsPoly>& storage);

// The key for sigma_g is stored as sigma_g^-1 of its digits: the key switch of sigma(c_1),
// sum_j sigma(ModUp_j(c_1)) k_j, is sigma(sum_j ModUp_j(c_1) sigma^-1(k_j)), so a rotation
// multiplies the digits as they are and permutes its two outputs, instead of permuting every
// digit (dnum times as many limbs, and a gather inside the inner product).
struct GaloisKeys {
  std::map<std::uint64_t, SwitchingKey> keys;  // by Galois element, stored as above
  const SwitchingKey& at(std::uint64_t galois) const;
};

// The Galois element of a left rotation by `step` slots (5^step mod 2N, negative steps
// allowed), and of complex conjugation (2N - 1).
std::uint64_t rotation_galois_element(const CkksContext& context, int step);
std::uint64_t conjugation_galois_element(const CkksContext& context);

// Moves the polynomials of a ciphertext, plaintext or key into ops' residence (device-resident
// for a CUDA backend: the evaluator's operations then run without copies), or back to the host
// (for decryption, decoding and serialization). No-ops on the CPU backend.
void make_resident(const RnsOps& ops, Ciphertext& x);
void make_resident(const RnsOps& ops, Plaintext& p);
void make_resident(const RnsOps& ops, SwitchingKey& key);
void make_resident(const RnsOps& ops, GaloisKeys& keys);
void to_host(const RnsOps& ops, Ciphertext& x);
void to_host(const RnsOps& ops, SwitchingKey& key);
void to_host(const RnsOps& ops, GaloisKeys& keys);

class KeyGenerator {
 public:
  // Secrets and noise come from `random` (an OsRandom for real keys).
  KeyGenerator(const CkksContext& context, const RnsOps& ops, core::RandomSource& random);

  // Switching keys made after set_seeded(true) are seeded (SwitchingKey::seed): half the memory,
  // and each use regenerates its a_j.
  void set_seeded(bool seeded) { seeded_ = seeded; }
  bool seeded() const { return seeded_; }

  SecretKey secret_key();
  // A secret of exactly `hamming_weight` coefficients +-1, whatever the set's distribution (the
  // ephemeral sparse secret of bootstrapping's encapsulation).
  SecretKey secret_key(std::uint32_t hamming_weight);
  PublicKey public_key(const SecretKey& sk);
  SwitchingKey relinearization_key(const SecretKey& sk);
  // Keys may be made for ciphertexts up to a level below the top (kMaxLevel: the top): over
  // q_0 .. q_level and P, with that level's digits, a fraction of a top-level key's size. They
  // switch any ciphertext at that level or below.
  static constexpr std::uint32_t kMaxLevel = UINT32_MAX;
  // A key from sigma_galois(s) to s.
  SwitchingKey galois_key(const SecretKey& sk, std::uint64_t galois,
                          std::uint32_t level = kMaxLevel);
  // Keys for every rotation step in `steps` and, when asked, conjugation, added to `into` (steps
  // it already has a key for are skipped).
  GaloisKeys galois_keys(const SecretKey& sk, std::span<const int> steps, bool conjugation,
                         std::uint32_t level = kMaxLevel);
  void add_galois_keys(GaloisKeys& into, const SecretKey& sk, std::span<const int> steps,
                       bool conjugation, std::uint32_t level = kMaxLevel);
  // A switching key from s' (NTT form over Q_L and P) to s.
  SwitchingKey switching_key(const SecretKey& sk, const RnsPoly& s_prime,
                             std::uint32_t level = kMaxLevel);

  // The samplers the keys and encryption share: uniform residues (NTT form) over `moduli`, and
  // N rounded-Gaussian error coefficients of the set's sigma.
  RnsPoly sample_uniform(const std::vector<ModulusIndex>& moduli);
  std::vector<std::int64_t> sample_error();

 private:
  RnsPoly small(std::span<const std::int64_t> coeffs, const std::vector<ModulusIndex>& moduli);
  std::vector<ModulusIndex> all_moduli() const;
  // The key (b_j, a_j) = (-a_j secret + e_j + [P]_{digit j} s_prime, a_j).
  SwitchingKey make_key(const RnsPoly& secret, const RnsPoly& s_prime, std::uint32_t level);

  const CkksContext* context_;
  const RnsOps* ops_;
  core::RandomSource* random_;
  bool seeded_ = false;
};

class Encryptor {
 public:
  Encryptor(const CkksContext& context, const RnsOps& ops, core::RandomSource& random);
  // (v b + e_0 + m, v a + e_1) with v ternary: at the plaintext's level.
  Ciphertext encrypt(const Plaintext& plain, const PublicKey& pk);
  // (-a s + e + m, a) with a uniform.
  Ciphertext encrypt(const Plaintext& plain, const SecretKey& sk);

 private:
  const CkksContext* context_;
  const RnsOps* ops_;
  core::RandomSource* random_;
};

// m = c_0 + c_1 s (+ c_2 s^2), as a plaintext at the ciphertext's level and scale, on the host
// (a resident ciphertext is read where it lives).
Plaintext decrypt(const CkksContext& context, const RnsOps& ops, const Ciphertext& ct,
                  const SecretKey& sk);

class Evaluator {
 public:
  Evaluator(const CkksContext& context, const RnsOps& ops);
  ~Evaluator();

  const CkksContext& context() const { return *context_; }
  const RnsOps& ops() const { return *ops_; }

  // Same level and scale (relative difference below 2^-40) or Error(invalid_argument).
  Ciphertext add(const Ciphertext& x, const Ciphertext& y) const;
  Ciphertext sub(const Ciphertext& x, const Ciphertext& y) const;
  Ciphertext negate(const Ciphertext& x) const;
  Ciphertext add_plain(const Ciphertext& x, const Plaintext& p) const;
  Ciphertext multiply_plain(const Ciphertext& x, const Plaintext& p) const;  // scales multiply
  // x + c (c real, encoded at x's scale).
  Ciphertext add_constant(const Ciphertext& x, double c) const;
  // x * round(c * constant_scale); the scale is multiplied by constant_scale (1 for integers).
  Ciphertext multiply_constant(const Ciphertext& x, double c, double constant_scale) const;
  // The same at `level` <= x's level: the level drop fused into the product (no copy).
  Ciphertext multiply_constant_at(const Ciphertext& x, double c, double constant_scale,
                                  std::uint32_t level) const;

  // sum_i xs[i] * round(c[i] * constant_scales[i]) at `level` (at most every input's level), in
  // one pass with one reduction per coefficient (the same words as the products summed); the
  // terms' scales xs[i].scale * constant_scales[i] must agree, and so must their sizes.
  Ciphertext linear_combination_at(std::span<const Ciphertext* const> xs, std::span<const double> c,
                                   std::span<const double> constant_scales,
                                   std::uint32_t level) const;

  // The tensor product (3 components), relinearization back to 2, and both together.
  Ciphertext multiply(const Ciphertext& x, const Ciphertext& y) const;
  // The tensor at `level` (at most both inputs' levels), reading their limbs of that level in
  // place: multiply(drop_to_level(x, level), drop_to_level(y, level)) without the copies.
  Ciphertext multiply_at(const Ciphertext& x, const Ciphertext& y, std::uint32_t level) const;
  Ciphertext relinearize(const Ciphertext& x, const SwitchingKey& rlk) const;
  Ciphertext multiply_relinearize(const Ciphertext& x, const Ciphertext& y,
                                  const SwitchingKey& rlk) const;
  // Divide by q_level: level - 1, scale / q_level.
  Ciphertext rescale(const Ciphertext& x) const;
  // rescale(relinearize(x)) in one division: for 3 components, the relinearization's inner
  // product (u_0, u_1) over Q_l P is divided by P q_l together with P (c_0, c_1), so that its
  // ModDown and the rescale share one base conversion (from P and q_l) and one set of NTTs,
  // l + 1 fewer per component. The result is the same ciphertext up to the rounding of the
  // division (one rounding instead of two). For 2 components, rescale(x). A product may be
  // added to others, scaled and shifted before it (lazy relinearization: sums of products then
  // take one key switch).
  Ciphertext relinearize_rescale(const Ciphertext& x, const SwitchingKey& rlk) const;
  // Drop primes down to `level` (the scale is unchanged).
  Ciphertext drop_to_level(const Ciphertext& x, std::uint32_t level) const;

  // Bootstrapping's ModRaise: x at level 0 read with its components' centred coefficients
  // (in (-q_0/2, q_0/2]) as polynomials modulo Q_level. It decrypts to m + q_0 I with I an
  // integer polynomial, |I| <= (1 + h) / 2 for a secret of Hamming weight h; the scale is kept.
  Ciphertext mod_raise(const Ciphertext& x, std::uint32_t level) const;

  // x under s' to the same plaintext under s, with key = KeyGenerator::switching_key(s, s')
  // (made at x's level or above).
  Ciphertext switch_key(const Ciphertext& x, const SwitchingKey& key) const;

  Ciphertext rotate(const Ciphertext& x, int step, const GaloisKeys& keys) const;
  Ciphertext conjugate(const Ciphertext& x, const GaloisKeys& keys) const;
  Ciphertext apply_galois(const Ciphertext& x, std::uint64_t galois, const SwitchingKey& key) const;
  // Every step of `steps` from one ModUp of x's c_1 (single hoisting).
  std::vector<Ciphertext> rotate_hoisted(const Ciphertext& x, std::span<const int> steps,
                                         const GaloisKeys& keys) const;

  // The key switching of d (NTT form over Q_l): (u_0, u_1) with u_0 + u_1 s ~ d s'.
  std::pair<RnsPoly, RnsPoly> key_switch(const RnsPoly& d, const SwitchingKey& key) const;

  // The pieces, exposed for tests and for the bootstrapping built on them.
  // ModUp of every digit of d (NTT form over Q_l): one polynomial per digit over Q_l and P.
  std::vector<RnsPoly> mod_up(const RnsPoly& d) const;
  // (x - ([x]_P converted to Q_l)) P^-1 for x in NTT form over Q_l and P.
  RnsPoly mod_down(const RnsPoly& x, std::uint32_t level) const;
  // ModDown and rescale in one division: w over Q_level P to (w - [w]_{P q_level}) / (P q_level)
  // over q_0 .. q_(level-1) (the exact conversion from q_level and P); level >= 1.
  RnsPoly mod_down_rescale(const RnsPoly& w, std::uint32_t level) const;
  // The inner product of mod_up's digits (permuted by perm when non-empty) with a key, then
  // ModDown.
  std::pair<RnsPoly, RnsPoly> key_switch_extended(const std::vector<RnsPoly>& digits,
                                                  const SwitchingKey& key, std::uint32_t level,
                                                  std::span<const std::uint32_t> perm) const;

  // The same inner product without the ModDown: (u_0, u_1) over Q_l and P, with
  // mod_down(u_i, level) what key_switch_extended returns. Sums of such products (scaled by
  // plaintexts over Q_l P) share one ModDown: the hoisted baby steps of linear transforms.
  std::pair<RnsPoly, RnsPoly> key_switch_inner(const std::vector<RnsPoly>& digits,
                                               const SwitchingKey& key, std::uint32_t level,
                                               std::span<const std::uint32_t> perm) const;

  // The automorphism's slot permutation, kept by the ops (RnsOps::permutation).
  std::span<const std::uint32_t> permutation(std::uint64_t galois) const;

 private:
  struct Scratch;
  Scratch& scratch() const;
  void mod_up_into(const RnsPoly& d, std::vector<RnsPoly>& out) const;
  void key_switch_inner_into(const std::vector<RnsPoly>& digits, const SwitchingKey& key,
                             std::uint32_t level, std::span<const std::uint32_t> perm, RnsPoly& u0,
                             RnsPoly& u1) const;
  const BaseConverter& mod_up_converter(std::uint32_t level, std::uint32_t digit) const;
  const BaseConverter& mod_down_converter(std::uint32_t level) const;
  const BaseConverter& rescale_converter(std::uint32_t level) const;
  // (P c + u) / (P q_l) rounded, over q_0 .. q_(l-1), for u over Q_l P and c over Q_l (none:
  // u alone).
  RnsPoly divide_extended(const RnsPoly& u, const RnsPoly* c, std::uint32_t l) const;
  // From q_level and P to q_0 .. q_(level-1) (relinearize_rescale).
  const BaseConverter& fused_converter(std::uint32_t level) const;
  const BaseConverter& raise_converter(std::uint32_t level) const;
  void check_pair(const Ciphertext& x, const Ciphertext& y) const;
  // (sigma(c0), sigma(c1)) with like's scale and slots.
  Ciphertext permuted(const RnsPoly& c0, const RnsPoly& c1, std::uint64_t galois,
                      const Ciphertext& like) const;

  const CkksContext* context_;
  const RnsOps* ops_;
  std::vector<u64> p_inv_;                     // P^-1 mod q_i, by modulus index
  std::vector<std::vector<u64>> q_last_inv_;   // [l][i]: q_l^-1 mod q_i
  std::vector<std::vector<u64>> pq_last_inv_;  // [l][i]: (P q_l)^-1 mod q_i
  mutable std::mutex cache_mutex_;
  mutable std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<BaseConverter>> mod_up_;
  mutable std::map<std::uint32_t, std::unique_ptr<BaseConverter>> mod_down_, rescale_, raise_,
      fused_;
  mutable std::map<std::thread::id, std::unique_ptr<Scratch>> scratch_;
};

}  // namespace safhire::ckks
