// Trace trees along the tower K_a > K_(a-1) > ... > K_1 > Q : the split
// tree (extraction of coefficients or of K_gamma blocks), the merge tree (packing of LWE samples
// or of K_gamma blocks into one RLWE ciphertext), sample extraction RLWE -> LWE and the embedding
// LWE -> RLWE. Every node costs t-1 key switches with the DFT trick (the bottom K_1/Q node t-2);
// TreeMode::paper instead computes the t outputs of a node as t separate traces (t(t-1) key
// switches; at the bottom one Tr_(K_1/Q) of (t-1)/2 switches per output, through the subgroup
// tower of (Z/t)^*), which reproduces the seed paper's Table 2 counts. The trace factor F
// (M, or t^(a-gamma)) is odd and is cancelled by pre-multiplying the inputs by F^-1 mod 2^64
// (F is odd), so outputs carry the messages themselves.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/rlwe.hpp"

namespace safhire::rlwe {

enum class TreeMode { fast, paper };

// An LWE sample (A, B) of dimension N: B = <A, s> + mu + e (mod 2^64).
struct LweCiphertext {
  std::vector<u64> a;
  u64 b = 0;
};

// The key-switching keys for automorphisms, by Galois element.
class GaloisKeys {
 public:
  void add(KeySwitchKey key);
  bool contains(std::uint64_t k) const { return keys_.count(k) != 0; }
  // Throws ErrorCode::invalid_argument naming the missing element.
  const KeySwitchKey& at(std::uint64_t k) const;
  std::size_t size() const { return keys_.size(); }
  std::vector<std::uint64_t> elements() const;

 private:
  std::map<std::uint64_t, KeySwitchKey> keys_;
};

// Every Galois element the trees, packing and traces use for this ring, in both modes:
// 1 + j t^c (c = 1..a-1, j = 1..t-1) for the tower, 2..t-1 and M-1 for the bottom level.
std::vector<std::uint64_t> tree_galois_elements(const ring::RingParams& ring);

// The elements the hybrid server's packing uses at level gamma in `mode`, ascending: the merges of
// levels b = gamma..a-1 (TraceTrees::pack_lwes with k = a-1 at gamma = 0, pack_blocks at gamma
// >= 1), 1 + j t^b for b >= 1 and, at b = 0, 2..t-1 (fast) or those of trace_k1 (paper: M-1,
// and 2 for t = 5, 7).
std::vector<std::uint64_t> packing_elements(const ring::RingParams& ring, std::uint32_t gamma,
                                            TreeMode mode);

// A hybrid client's keys at gamma: packing_elements and, at gamma >= 1, the powers' elements
// (rlwe::power_elements, 1 aside), which TraceTrees::derive_powers uses; ascending. For 3^7 in
// fast mode: at gamma = 0 the 13 of tree_galois_elements but sigma_(M-1); at gamma = 2 the 10
// of levels 2..6 and the 5 of the powers.
std::vector<std::uint64_t> galois_elements(const ring::RingParams& ring, std::uint32_t gamma,
                                           TreeMode mode = TreeMode::fast);

// Client side: keys for `elements` (default: tree_galois_elements) with one gadget.
GaloisKeys make_galois_keys(const SecretKey& key, const Gadget& gadget, core::RandomSource& noise,
                            std::span<const std::uint64_t> elements = {});

// RLWE -> LWE of coefficient j (free): (A^(j), b_j) with <A^(j), s> = (a s)_j.
LweCiphertext sample_extract(const ring::RingParams& ring, const Ciphertext& ct, std::uint32_t j);
// The same into caller memory (N words of A, no allocation); returns b_j.
u64 sample_extract_into(const ring::RingParams& ring, const Ciphertext& ct, std::uint32_t j,
                        std::span<u64> a);
// LWE -> RLWE: (a, b = B) with (a s)_0 = <A, s>, phase mu + e at coefficient 0.
Ciphertext embed_lwe(const ring::RingParams& ring, const LweCiphertext& lwe);

// Server side. Owns a KeySwitcher (one object per thread); counts its key switches.
class TraceTrees {
 public:
  TraceTrees(const ParameterSet& params, const Gadget& gadget, const GaloisKeys& keys);

  // Extraction at level gamma (0 <= gamma < a). gamma = 0: N ciphertexts, the i-th with phase
  // a_i at coefficient 0 and nothing else but noise; gamma >= 1: t^(a-gamma) ciphertexts, the u-th
  // with phase A_u = sum_w a_(u + t^(a-gamma) w) X^(t^(a-gamma) w), the block of R_gamma at u.
  std::vector<Ciphertext> split(const Ciphertext& ct, std::uint32_t gamma, TreeMode mode);

  // Packs n = (t-1) t^k LWE samples (0 <= k < a) into one RLWE ciphertext with mu_I at
  // coefficient I t^(a-1-k): n - 1 + (a-k-1)(t-1) key switches in fast mode.
  Ciphertext pack_lwes(std::span<const LweCiphertext> lwes, std::uint32_t k, TreeMode mode);

  // Packs t^(a-gamma) ciphertexts whose phases lie in R_gamma (1 <= gamma < a), block u at
  // offset X^u: the inverse of split at gamma. t^(a-gamma) - 1 key switches in fast mode.
  Ciphertext pack_blocks(std::span<const Ciphertext> blocks, std::uint32_t gamma, TreeMode mode);

  // The powers of one chunk at level gamma >= 1 (encrypt_powers' ciphertexts, in power_elements
  // order) from the first, Enc(t^-gamma mu): sigma_k of it, switched back to s, for every other
  // k; phi(t^gamma) - 1 key switches, each adding keyswitch_variance to its power's noise.
  std::vector<Ciphertext> derive_powers(const Ciphertext& first, std::uint32_t gamma);
  // sigma_k(ct) switched back to s: one key switch (the key for k).
  Ciphertext automorphism(const Ciphertext& ct, std::uint64_t k) { return ks(ct, k); }

  std::uint64_t key_switches() const { return switcher_.key_switches(); }

 private:
  Ciphertext ks(const Ciphertext& ct, std::uint64_t k);  // sigma_k then switch back
  std::vector<Ciphertext> split_node(const Ciphertext& c, std::uint32_t b, TreeMode mode);
  std::vector<Ciphertext> bottom_node(const Ciphertext& c, TreeMode mode);
  Ciphertext trace_k1(const Ciphertext& c);  // Tr_(K_1/Q) through the subgroup tower
  Ciphertext merge(std::span<const Ciphertext* const> cs, std::uint32_t b, TreeMode mode);
  Ciphertext merge_tree(std::span<const Ciphertext* const> items, std::uint32_t top,
                        std::uint32_t bottom, TreeMode mode);
  Ciphertext trace_tower(Ciphertext c, std::uint32_t from_level);

  ParameterSet params_;
  const GaloisKeys* keys_;
  KeySwitcher switcher_;
};

}  // namespace safhire::rlwe
