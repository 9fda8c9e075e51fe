// Partial extraction at level gamma and the client's powers (docs/partial-extraction.md): the
// client uploads Enc(sigma_k(t^-gamma m)) for the phi(t^gamma) elements k of (Z/t^gamma)^*; the
// server cuts each into t^(a-gamma) module-LWE samples over R_gamma (free), takes linear
// combinations whose results are clean (the trace Tr_(K_gamma/Q) is a plain sum over the
// conjugates, so no key switch), and packs them with the top a-gamma levels of the merge tree
// (TraceTrees::pack_blocks): t^(a-gamma) - 1 key switches per N outputs instead of N - 1.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "safhire/ring/ring_params.hpp"
#include "safhire/ring/simd.hpp"
#include "safhire/rlwe/rlwe.hpp"

namespace safhire::rlwe {

// The Galois elements of the powers at level gamma: k in [1, t^gamma) prime to t, ascending
// (phi(t^gamma) of them; {1} at gamma = 0, where the power is the chunk itself).
std::vector<std::uint64_t> power_elements(const ring::RingParams& ring, std::uint32_t gamma);

// Client: the powers of one chunk mu (torus words, N of them): Enc(sigma_k(t^-gamma mu)) for k in
// power_elements, in that order. t^-gamma is taken mod 2^64, which on an encoded message
// 2^(64-b) y is the message t^-gamma y mod 2^b: the server's traces multiply it back by t^gamma.
std::vector<SeededCiphertext> encrypt_powers(Encryptor& encryptor, std::span<const u64> mu,
                                             std::uint32_t gamma, std::uint32_t bits = 64);
// The first of them only, Enc(t^-gamma mu) (k = 1), from which a server with keys for the other
// elements derives the rest (TraceTrees::derive_powers).
SeededCiphertext encrypt_first_power(Encryptor& encryptor, std::span<const u64> mu,
                                     std::uint32_t gamma, std::uint32_t bits = 64);

// A module-LWE sample of rank T = t^(a-gamma) over R_gamma = Z[Z]/Phi_(t^gamma)(Z), under the
// blocks s_v of the secret (s = sum_v X^v s_v(X^T)): b = sum_v a_v s_v + mu + e in R_gamma.
struct ModuleLwe {
  std::vector<u64> a;  // T elements of R_gamma: a[v * lanes + j] is coefficient j of a_v
  std::vector<u64> b;  // lanes coefficients
};

// The block structure of R_a over R_gamma (1 <= gamma < a): R_a = R_gamma[X]/(X^T - Z), so block
// u of a polynomial is the R_gamma element whose lane j is its coefficient u + T j.
class PartialExtraction {
 public:
  PartialExtraction(const ring::RingParams& ring, std::uint32_t gamma);

  const ring::RingParams& ring() const { return ring_; }
  const ring::RingParams& subring() const { return sub_; }  // R_gamma, M = t^gamma
  std::uint32_t gamma() const { return sub_.a(); }
  std::uint32_t blocks() const { return blocks_; }  // T = t^(a-gamma)
  std::uint32_t lanes() const { return sub_.N(); }  // phi(t^gamma)
  const std::vector<std::uint64_t>& elements() const { return elements_; }

  ModuleLwe zero() const;

  // Block u of ct as a module-LWE sample whose phase is block u of ct's phase (no key switch).
  ModuleLwe extract(const Ciphertext& ct, std::uint32_t u) const;

  // From the powers of one chunk (expanded, in power_elements order): for every block i and
  // element k, the sample whose phase is sigma_k(y_i), y_i the block i of t^-gamma m; at index
  // i * lanes() + (position of k). sigma_k sends block i to block k i mod T times Z^q,
  // q = floor(k i / T), which Z^-q undoes.
  std::vector<ModuleLwe> conjugates(std::span<const Ciphertext> powers) const;

  // The plaintexts of one (output block, input block) pair, for the lanes() x lanes() weights w
  // (row-major: w[z * lanes + j] is the weight of input lane j in output lane z): P_k =
  // sum_z Z^z sigma_k(c_z), c_z = sum_j w[z][j] (Z^-j - Z^(t^(gamma-1) - j mod t^(gamma-1))),
  // t^gamma times the trace-dual of the weights. Then sum_k P_k * conj(i, k) has phase
  // sum_z Z^z (sum_j w[z][j] y_i[j]) t^gamma: clean lanes. lanes() polynomials, P_k at
  // [k_index * lanes(), (k_index + 1) * lanes()).
  std::vector<u64> lane_plaintexts(std::span<const std::int64_t> w) const;

  // acc += c Z^e x in R_gamma, component by component (0 <= e < t^gamma).
  void monomial_accumulate(ModuleLwe& acc, const ModuleLwe& x, std::uint32_t e, u64 c) const;

  // Samples as flat rows of row_words() = N + lanes() words (a, then b): the server's layout.
  std::size_t row_words() const { return std::size_t{ring_.N()} + lanes(); }
  void monomial_accumulate(std::span<u64> acc, std::span<const u64> x, std::uint32_t e,
                           u64 c) const;
  ModuleLwe from_row(std::span<const u64> row) const;

  // The clean sample of lane j of one block, from that block's conjugate samples (lanes() of
  // them, power_elements order): sum_k sigma_k(Z^-j - Z^(t^(gamma-1) - j mod t^(gamma-1))) conj_k,
  // whose phase is the block's value y[j] in lane 0 and nothing but noise in the other lanes
  // (t^gamma times the trace-dual of lane j, applied to t^-gamma y). Written as a row. A linear
  // layer is then plain integer MACs of such rows, exactly as with LWE samples at gamma = 0.
  void clean_sample(std::span<const ModuleLwe> conjugates, std::uint32_t j,
                    std::span<u64> row) const;
  // The same for every lane j of the block at once: rows[j] (row_words() words each; null: not
  // wanted). Works lane-major so that each output lane is one ring::torus_dot of length T + 1
  // over the conjugates' lanes; `scratch` is reused between calls (no allocation once grown).
  void clean_samples(std::span<const ModuleLwe> conjugates, std::span<u64* const> rows,
                     std::vector<u64>& scratch) const;
  // One chunk's powers (expanded, power_elements order) cut into blocks once: for power kk,
  // a_p, Z a_p and b_p, lanes() words each, at [(kk T + p) lanes(), ...).
  struct PowerBlocks {
    std::vector<u64> a, za, b;
  };
  PowerBlocks power_blocks(std::span<const Ciphertext> powers) const;
  // The same blocks held elsewhere ([powers][T][lanes()] words each, as the CUDA backend's
  // blocks kernel cuts them; za from times_z).
  struct PowerBlockView {
    const u64* a;
    const u64* za;
    const u64* b;
  };
  // out = Z x for each of `count` R_gamma elements (lanes() words each) at x.
  void times_z(const u64* x, u64* out, std::size_t count) const;
  // clean_samples of block i straight from the chunk's blocks: the lanes of conjugates(powers)
  // [i lanes(), (i + 1) lanes()) are formed in `scratch`, with no sample in between.
  void clean_samples(const PowerBlocks& powers, std::uint32_t i, std::span<u64* const> rows,
                     std::vector<u64>& scratch) const;
  void clean_samples(PowerBlockView powers, std::uint32_t i, std::span<u64* const> rows,
                     std::vector<u64>& scratch) const;

  // The linear map of clean_samples as a dense table: lane r of the clean sample of lane j is
  // sum over k-index kk and lane l of map[((kk lanes() + j) lanes() + r) lanes() + l] times lane
  // l of conjugate kk (the CUDA backend's extraction reads it).
  std::vector<u64> clean_sample_map() const;
  // acc += p x in R_gamma, component by component (p: lanes() words).
  void multiply_accumulate(ModuleLwe& acc, std::span<const u64> p, const ModuleLwe& x) const;

  // An RLWE ciphertext whose block 0 has x's phase (other blocks: unrelated values, which the
  // merge of TraceTrees::pack_blocks removes): a_0 = x.a_0, a_(T-v) = Z^-1 x.a_v.
  Ciphertext embed(const ModuleLwe& x) const;
  // embed(sum_z Z^z x_z) for the rows x_z of lanes z < lanes() (row_words() words each; null: a
  // zero row), into ct (of ring()): one output block as the server packs it. The 32-bit form
  // reads rows whose words w stand for w 2^32 (backend::Config::row_bits = 32).
  void embed_lane_sum(std::span<const u64* const> rows, Ciphertext& ct) const;
  void embed_lane_sum(std::span<const std::uint32_t* const> rows, Ciphertext& ct) const;
  // The same into words held elsewhere (N each).
  void embed_lane_sum(std::span<const u64* const> rows, std::span<u64> a, std::span<u64> b) const;
  void embed_lane_sum(std::span<const std::uint32_t* const> rows, std::span<u64> a,
                      std::span<u64> b) const;

 private:
  struct Blocks;
  Blocks blocks_of(const Ciphertext& ct) const;
  void blocks_into(const Ciphertext& ct, u64* a, u64* za, u64* b) const;
  // conjugate k of block i: its block u = k i mod T and its twist Z^twist (conjugates' comment).
  std::pair<std::uint32_t, std::uint32_t> conjugate_block(std::uint64_t k, std::uint32_t i) const;
  // clean_samples' lanes in its scratch: K lanes() conjugate lanes, then lanes() output lanes, of
  // T + 1 words each, every lane on a 64-byte line (`stride`: T + 1 rounded up to 8 words), so
  // that the vector kernels' loads do not straddle lines.
  struct LaneScratch {
    u64* base;
    std::size_t stride;
    u64* lane(std::size_t index) const { return base + index * stride; }
  };
  LaneScratch lane_scratch(std::vector<u64>& scratch) const;
  // The dot products of clean_samples over the lane-major conjugates, into `rows`.
  void clean_from_lanes(std::span<u64* const> rows, const LaneScratch& lanes_at) const;
  ModuleLwe sample(const Blocks& blocks, std::uint32_t u, std::uint32_t twist) const;
  void monomial_times(const u64* x, std::uint32_t e, u64* out) const;
  template <class Word>
  void embed_sum(std::span<const Word* const> rows, std::span<u64> a, std::span<u64> b) const;
  void require_sample(const ModuleLwe& x, const char* what) const;

  ring::RingParams ring_, sub_;
  std::uint32_t blocks_;
  std::vector<std::uint64_t> elements_;
  // clean_samples' maps: lane r of output lane j is sum over dual_terms_ of coefficient times
  // lane l of conjugate kk, the terms of (j, r) at [dual_start_[j L + r], dual_start_[j L + r +
  // 1]).
  struct DualTerm {
    std::uint32_t kk, l;
    u64 coefficient;
  };
  std::vector<DualTerm> dual_terms_;
  std::vector<std::uint32_t> dual_start_;
  // Z^e x in R_gamma, lane by lane: lane r is x[plus] - x[minus] (-1: no such term), at
  // [e lanes() + r], for every e < t^gamma.
  struct LaneTerms {
    std::int32_t plus = -1, minus = -1;
    // The lane of x it stands for, x's words w read as w 2^lift.
    template <class Word>
    u64 of(const Word* x, unsigned lift = 0) const {
      return (plus < 0 ? u64{0} : static_cast<u64>(x[plus]) << lift) -
             (minus < 0 ? u64{0} : static_cast<u64>(x[minus]) << lift);
    }
  };
  std::vector<LaneTerms> twist_terms_;
  ring::SimdIsa simd_;
};

}  // namespace safhire::rlwe
