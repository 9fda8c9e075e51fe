// Gadget decomposition and key switching on the 64-bit torus, with every key
// switch counted.
//
// A ciphertext (a', b') valid under s' is switched to s with a key KSK[i] = (a_i, a_i s + e_i +
// s' g_i), i < l, g_i = round(2^64 / D^(i+1)): with the balanced digits d_i of a' (rounded to its
// top l log2(D) bits), the output is (-sum d_i a_i, b' - sum d_i (a_i s + e_i + s' g_i)), whose
// phase is that of (a', b') under s' plus the key-switching noise
// eps s' - sum d_i e_i (eps: the rounding error of a'). Keys live in the limb-NTT form of
// ring::LimbProduct (one prime, each key word in two 32-bit limbs), so one switch costs l forward
// and 4 inverse transforms of size N; the exact two-prime product (ring::ExactProduct) would take
// 2l forward transforms for the same words. Where the key's noise is wide enough (key_split:
// default-b8), the server rounds the key words to one limb each: 2 inverse transforms and half
// the products, for a key noise wider by at most 1/256 in variance.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/elements/gadget_digits.hpp"
#include "safhire/ring/poly.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/rlwe.hpp"

namespace safhire::rlwe {

class GadgetDecomposer {
 public:
  explicit GadgetDecomposer(const Gadget& gadget);  // validates like ParameterSet

  const Gadget& gadget() const { return gadget_; }
  // g_i = round(2^64 / D^(i+1)), the torus value of digit i (i = 0 most significant).
  u64 value(std::uint32_t i) const { return values_[i]; }

  // digits[i N + j] = digit i of a[j]: a[j] is rounded to the nearest multiple of 2^64 / D^l,
  // then written in balanced digits in [-floor(D/2), ceil(D/2)) (torus words), so that
  // sum_i digits_i g_i = a[j] up to 2^63 / D^l + l D / 4.
  void decompose(std::span<const u64> a, std::span<u64> digits) const;

  // The plain description the CUDA kernel uses (elements/gadget_digits.hpp).
  const elements::GadgetView& view() const { return view_; }

 private:
  Gadget gadget_;
  std::vector<u64> values_;
  elements::GadgetView view_;
};

// Switches from s' to s. For an automorphism key, s' = sigma_k(s).
class KeySwitchKey {
 public:
  std::uint64_t galois_element() const { return galois_element_; }  // k; 1 for "other key"
  const Gadget& gadget() const { return gadget_; }
  const ring::RingParams& ring() const { return ring_; }
  std::uint16_t parameter_id() const { return parameter_id_; }

  // How the server carries the key words: key_split(params, gadget).
  ring::LimbSplit split() const { return split_; }
  // Level i in limb-NTT form (ring::LimbProduct::torus_to_ntt with split()): a_i and b_i,
  // split().limbs N words each.
  std::span<const u64> limb_a(std::uint32_t i) const;
  std::span<const u64> limb_b(std::uint32_t i) const;

  // The compact form that travels: the seed of each a_i, and each b_i on the torus.
  std::span<const core::Seed> seeds() const { return seeds_; }
  std::span<const u64> torus_b(std::uint32_t i) const;

 private:
  friend KeySwitchKey make_key_switch_key(const SecretKey&, std::span<const u64>, std::uint64_t,
                                          const Gadget&, core::RandomSource&);
  friend KeySwitchKey key_switch_key_from_parts(const ParameterSet&, std::uint64_t, const Gadget&,
                                                std::vector<core::Seed>, std::vector<u64>);
  KeySwitchKey(const ParameterSet& params, std::uint64_t k, const Gadget& gadget);
  void build_ntt_form();

  ring::RingParams ring_;
  std::uint16_t parameter_id_;
  std::uint64_t galois_element_;
  Gadget gadget_;
  ring::LimbSplit split_;
  std::vector<core::Seed> seeds_;  // [l]
  std::vector<u64> b_;             // [l][N]
  ring::AlignedWords ntt_;         // [l][a, b][limb][N]
};

// The limb split of a key's words on the server: one limb rounded as finely as
// ring::LimbProduct::finest_rounding allows for the digits' sum of t - 1 switches, (t - 1) l
// ceil(D/2) (a merge of the trees sums that many: KeySwitcher::automorphism_sum), when that adds
// at most 1/256 of sigma^2 to the key's noise variance (key_rounding_variance); else two exact
// limbs. One limb on default-b8 (shift 22: 2^-84 against sigma^2 = 2^-69, before the product
// with s), two on every other built-in set.
ring::LimbSplit key_split(const ParameterSet& params, const Gadget& gadget);

// The bits of each b word a key-switching key keeps, from its making on (it travels as seeds and
// b in these bits): the fewest whose rounding adds at most 1/256 of sigma^2 to the key's noise
// variance (2^-2k / 12 <= sigma^2 / 256; key_transport_variance): 37 for default-b8, 53 for
// default-b12.
std::uint32_t key_bits(const ParameterSet& params);

// A key from s' (any small torus polynomial, given as its coefficients) to s, with b rounded to
// key_bits(params). Client side.
KeySwitchKey make_key_switch_key(const SecretKey& key, std::span<const u64> from_key,
                                 std::uint64_t galois_element, const Gadget& gadget,
                                 core::RandomSource& noise);
// The key for sigma_k: from sigma_k(s) to s.
KeySwitchKey make_automorphism_key(const SecretKey& key, std::uint64_t k, const Gadget& gadget,
                                   core::RandomSource& noise);
// Rebuilds a key from its travelling parts (seeds and torus b_i); validates their sizes.
KeySwitchKey key_switch_key_from_parts(const ParameterSet& params, std::uint64_t galois_element,
                                       const Gadget& gadget, std::vector<core::Seed> seeds,
                                       std::vector<u64> torus_b);

// Throws ErrorCode::invalid_parameters when the digits' sum l ceil(D/2) exceeds the bound of
// ring::LimbProduct on `ring` (every parameter set's gadgets are far within it).
void require_exact_key_switching(const ring::RingParams& ring, const Gadget& gadget);

// Server side: performs key switches and automorphisms, counting the switches. Owns scratch:
// one object per thread.
class KeySwitcher {
 public:
  // Throws as require_exact_key_switching does.
  KeySwitcher(const ParameterSet& params, const Gadget& gadget);

  const Gadget& gadget() const { return decomposer_.gadget(); }

  // out = the switch of `in` (valid under the key's s') to s. out may alias in.
  void key_switch(const KeySwitchKey& key, const Ciphertext& in, Ciphertext& out);
  // out = sigma_k(in), switched back to s: a ciphertext of sigma_k(m). One key switch.
  void automorphism(const KeySwitchKey& key, const Ciphertext& in, Ciphertext& out);
  // out += sum_i sigma_(k_i)(in[i]), each switched back to s (keys[i] for k_i): what a merge of
  // the trees adds up, into the merge's sum. The switches of up to fan_in() terms sum their
  // products in the NTT domain and share one inverse transform per limb and component: exact, so
  // the words equal those of separate automorphisms added. keys.size() switches, counted. out may
  // not alias an input.
  void automorphism_sum(std::span<const KeySwitchKey* const> keys,
                        std::span<const Ciphertext* const> in, Ciphertext& out);
  // The same on words held elsewhere (a batch's slices): input i is (in_a[i], in_b[i]), N words
  // each, and (out_a, out_b) the sum.
  void automorphism_sum(std::span<const KeySwitchKey* const> keys, std::span<const u64* const> in_a,
                        std::span<const u64* const> in_b, std::span<u64> out_a,
                        std::span<u64> out_b);
  // How many switches one accumulation holds exactly: the product's bound over the digits' sum
  // l ceil(D/2) of one switch (at least t - 1 on every built-in set's full gadget, key_split).
  std::uint32_t fan_in() const { return fan_in_; }

  std::uint64_t key_switches() const { return count_; }

 private:
  void check_key(const KeySwitchKey& key) const;
  // acc_a_, acc_b_ += the products of a's digits with the key's levels.
  void accumulate_products(const KeySwitchKey& key, std::span<const u64> a);

  ParameterSet params_;
  GadgetDecomposer decomposer_;
  ring::LimbSplit split_;
  const ring::LimbProduct* product_;
  ring::AlignedWords digits_, digit_ntt_, acc_a_, acc_b_;  // scratch (digit_ntt_: every level)
  std::vector<const std::uint64_t*> digit_terms_, key_a_, key_b_;
  ring::TorusPoly sum_b_;        // scratch: sum_i d_i b_i
  Ciphertext sigma_;             // scratch: sigma_k(in)
  ring::TorusPoly sum_sigma_b_;  // scratch: automorphism_sum's sum of sigma_k(b)
  std::uint32_t fan_in_ = 1;
  std::uint64_t count_ = 0;
};

}  // namespace safhire::rlwe
