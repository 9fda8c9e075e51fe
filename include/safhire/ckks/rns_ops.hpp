// The batched RNS primitives the CKKS evaluator is written over. Everything above this
// interface (key switching, rescale, rotations, the evaluator) is written once; a backend
// provides these few operations on whole RNS polynomials. The CPU backend threads them over
// limbs and runs the ring layer's vector NTT; a CUDA backend provides the same with
// device-resident limbs, bit for bit.
//
// Limbs are matched by modulus: an operation writes the limbs of its output and finds the limb
// of the same modulus in each input (Error(size_mismatch) when an input lacks one), so that
// polynomials over Q_l, over Q_l and P, and keys over every prime combine without copies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "safhire/ckks/rns.hpp"
#include "safhire/core/aes_ctr.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::ckks {

class RnsOps {
 public:
  virtual ~RnsOps() = default;
  const CkksContext& context() const { return *context_; }

  // ---- Storage. A backend keeps the polynomials it makes where its primitives run: host words
  // for the CPU, device words for CUDA (rns.hpp). Every primitive takes operands in either place.
  // A zero polynomial over `moduli` in this backend's residence.
  virtual RnsPoly zeros(std::vector<ModulusIndex> moduli, bool ntt) const;
  // Gives p the shape (moduli, form) in this backend's residence, reusing its storage where it
  // can; the words are unspecified (callers overwrite every one).
  virtual void reshape(RnsPoly& p, std::span<const ModulusIndex> moduli, bool ntt) const;
  // Moves p's words into this backend's residence, or to the host (no-ops on the CPU).
  virtual void make_resident(RnsPoly& p) const { (void)p; }
  virtual void to_host(RnsPoly& p) const { (void)p; }
  // Returns once every operation issued so far has finished (for timing; no-op on the CPU).
  virtual void synchronize() const {}
  // A named range of steps for profilers (NVTX on CUDA; nothing on the CPU), nested as calls
  // nest: see StepRange below.
  virtual void begin_range(const char* name) const { (void)name; }
  virtual void end_range() const {}

  // out's limbs [first, last) (all by default) from a's limbs of the same moduli; out's form
  // flag is left as it is.
  virtual void copy(const RnsPoly& a, RnsPoly& out, std::size_t first = 0,
                    std::size_t last = SIZE_MAX) const = 0;

  // Coefficients <-> NTT form for the limbs [first, last) (all by default); the whole
  // polynomial must be in the source form, and the flag changes when every limb is done.
  virtual void forward(RnsPoly& p, std::size_t first = 0, std::size_t last = SIZE_MAX) const = 0;
  virtual void inverse(RnsPoly& p, std::size_t first = 0, std::size_t last = SIZE_MAX) const = 0;

  // Over out's limbs: out = a + b, a - b, -a, a * b (pointwise: NTT form for ring products),
  // out += a * b.
  virtual void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const = 0;
  virtual void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const = 0;
  virtual void negate(const RnsPoly& a, RnsPoly& out) const = 0;
  virtual void multiply(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const = 0;
  virtual void multiply_accumulate(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const = 0;
  // out = sum_j a[j] * b[j] (pointwise), one reduction per coefficient: the inner product of
  // key switching, between the digits and a key. With a permutation (NTT form), each a[j] is
  // read through it first, a[j][perm[t]]: the automorphism of a hoisted rotation, fused.
  // Without one, an a[j] may be block-constant (a compact plaintext, see compact_blocks below):
  // a[j]->n a power of two dividing out.n, read as a[j][t / (out.n / a[j]->n)].
  virtual void inner_product(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b,
                             RnsPoly& out, std::span<const std::uint32_t> perm = {}) const = 0;
  // Both halves of a key at once: out0 = sum_j a[j] b0[j], out1 = sum_j a[j] b1[j] (with the same
  // optional permutation of a), so that a backend reads (and permutes) the digits once. The
  // default calls inner_product twice.
  virtual void inner_product_pair(std::span<const RnsPoly* const> a,
                                  std::span<const RnsPoly* const> b0,
                                  std::span<const RnsPoly* const> b1, RnsPoly& out0, RnsPoly& out1,
                                  std::span<const std::uint32_t> perm = {}) const {
    inner_product(a, b0, out0, perm);
    inner_product(a, b1, out1, perm);
  }
  // inner_product_pair with b1 the a half of a seeded key, regenerated where it is read: b1[j]
  // is uniform(prf, j << 32, out1's moduli) (ckks.hpp: seeded_a). The CPU makes each limb of it
  // inside its limb loop (never a whole digit: 72 MB a key switch at the top of N = 2^16, written
  // and read back); the default regenerates the digits whole, then inner_product_pair.
  virtual void inner_product_seeded(std::span<const RnsPoly* const> a,
                                    std::span<const RnsPoly* const> b0, const core::AesCtr& prf,
                                    RnsPoly& out0, RnsPoly& out1,
                                    std::span<const std::uint32_t> perm = {}) const;
  // Rows of inner products over shared second operands: for each row g,
  //   out0[g] = sum_j a[g][j] * b0[j],   out1[g] = sum_j a[g][j] * b1[j],
  // a null a[g][j] contributing nothing (at most 16 terms a row; a[g][j] may be compact as in
  // inner_product). A linear transform's giant-step sums over its baby rotations: a backend
  // may interleave the rows so that each b is read once. The default runs inner_product_pair
  // row by row.
  virtual void inner_product_rows(std::span<const std::vector<const RnsPoly*>> a,
                                  std::span<const RnsPoly* const> b0,
                                  std::span<const RnsPoly* const> b1,
                                  std::span<RnsPoly* const> out0,
                                  std::span<RnsPoly* const> out1) const;
  // The tensor of two ciphertexts (x0, x1) and (y0, y1) in NTT form: d0 = x0 y0,
  // d1 = x0 y1 + x1 y0, d2 = x1 y1 over d0's moduli (d1, d2 shaped like d0). A backend may read
  // each input once (and, for a square, form x0 x1 once). The default runs four products.
  virtual void tensor(const RnsPoly& x0, const RnsPoly& x1, const RnsPoly& y0, const RnsPoly& y1,
                      RnsPoly& d0, RnsPoly& d1, RnsPoly& d2) const {
    multiply(x0, y0, d0);
    multiply(x0, y1, d1);
    multiply_accumulate(x1, y0, d1);
    multiply(x1, y1, d2);
  }
  // Hoisted rotations of one ModUp's digits d by several keys (b[j], a[j]: the halves of key j,
  // one polynomial per digit) and automorphisms perm[j], in NTT form over out's moduli:
  //   out0[j][s] = (add0 + sum_i d[i] b[j][i])[perm[j][s]],
  //   out1[j][s] = (sum_i d[i] a[j][i])[perm[j][s]]
  // (add0 may be null). A backend may run them limb by limb, so that the digits are read once
  // for all the keys and the sums are permuted from cache. The default runs
  // inner_product_pair, add and permute per key.
  virtual void rotate_hoisted(std::span<const RnsPoly* const> d,
                              std::span<const std::vector<const RnsPoly*>> b,
                              std::span<const std::vector<const RnsPoly*>> a,
                              std::span<const std::span<const std::uint32_t>> perm,
                              const RnsPoly* add0, std::span<RnsPoly* const> out0,
                              std::span<RnsPoly* const> out1) const;
  // One key of rotate_hoisted_rows: its halves per digit (b, and a unless it is seeded), and the
  // automorphism. A seeded key's a is regenerated where it is used: digit i's is
  // uniform(*prf, i << 32, ...) over out's moduli (ckks.hpp: seeded_a), limb by limb or whole.
  struct HoistedKey {
    std::vector<const RnsPoly*> b, a;  // a empty when prf is set
    const core::AesCtr* prf = nullptr;
    std::span<const std::uint32_t> perm;
  };
  // The giant-step sums of a hoisted baby-step giant-step transform, without the baby rotations
  // in memory: with r_0 = (x0, x1) and r_j, j >= 1, the hoisted rotation of x by keys[j - 1] as
  // in rotate_hoisted with add0 = x0,
  //   out0[g] = sum_j rows[g][j] r_j,0,   out1[g] = sum_j rows[g][j] r_j,1,
  // rows[g] holding keys.size() + 1 entries (null: no term, at least one not null; compact
  // allowed as in inner_product). The CPU runs it limb by limb: a limb of every baby rotation,
  // then that limb of every row, so that a transform holds its giant sums and one limb of its
  // babies rather than every baby (450 MB for a CoeffToSlot group at N = 2^16). The default
  // makes the rotations (rotate_hoisted, a seeded key's a regenerated whole, one key at a time),
  // then the rows (inner_product_rows, in parts of at most 16 terms): the same words.
  // Lazy terms: where lazy is not empty (then shaped like rows), a term may instead be given by
  // the signed coefficients of an integer polynomial (lazy[g][j], rows[g][j] null), whose limb
  // at each modulus is made where it is used: the coefficients modulo the prime, in NTT form
  // (a diagonal kept as N words instead of one limb per prime: LinearTransform's lazy mode).
  using Coefficients = std::vector<std::int64_t>;
  virtual void rotate_hoisted_rows(
      std::span<const RnsPoly* const> d, std::span<const HoistedKey> keys, const RnsPoly& x0,
      const RnsPoly& x1, std::span<const std::vector<const RnsPoly*>> rows,
      std::span<RnsPoly* const> out0, std::span<RnsPoly* const> out1,
      std::span<const std::vector<const Coefficients*>> lazy = {}) const;
  // The polynomial of signed coefficients c over `moduli` in NTT form, in this backend's
  // residence: limb k is the NTT of c mod q_k. The default makes the residues on the host.
  virtual void expand_coefficients(const Coefficients& c, std::span<const ModulusIndex> moduli,
                                   RnsPoly& out) const;
  // out = (a - b) * scalars[modulus] per limb; scalars indexed by modulus index, in [0, q).
  virtual void sub_scale(const RnsPoly& a, const RnsPoly& b, std::span<const u64> scalars,
                         RnsPoly& out) const = 0;
  // out = a + scalars[modulus] per limb (a constant polynomial added in NTT form).
  virtual void add_scalars(const RnsPoly& a, std::span<const u64> scalars, RnsPoly& out) const = 0;
  // out = a * scalars[modulus] per limb (scalars by modulus index, in [0, q)).
  virtual void multiply_scalars(const RnsPoly& a, std::span<const u64> scalars,
                                RnsPoly& out) const = 0;
  // out over `moduli` in NTT form (reshaped, in this backend's residence): limb k is
  // uniform_from_stream(prf, stream_base | moduli[k], q_k), the uniform half of a seeded key.
  virtual void uniform(const core::AesCtr& prf, std::uint64_t stream_base,
                       std::span<const ModulusIndex> moduli, RnsPoly& out) const = 0;
  // An automorphism in NTT form: out[s] = a[perm[s]] on every limb (perm from permutation()
  // below, or any permutation of the N slots).
  virtual void permute(const RnsPoly& a, std::span<const std::uint32_t> perm,
                       RnsPoly& out) const = 0;
  // Base conversion (rns.hpp) of in's coefficient limbs into out's.
  virtual void convert(const BaseConverter& converter, const RnsPoly& in, RnsPoly& out,
                       Conversion variant) const = 0;

  // The automorphism X -> X^galois (galois odd) in NTT form, as the permutation of the N slots
  // that permute, inner_product and the hoisted rotations take
  // (NegacyclicNtt::automorphism_permutation, the same for every prime). Made once per element
  // and kept, at the same address, as long as these ops: a backend may keep its own copy of
  // each (the CUDA one keeps them on the device, uploaded once).
  std::span<const std::uint32_t> permutation(std::uint64_t galois) const;

 protected:
  explicit RnsOps(const CkksContext& context) : context_(&context) {}
  // The Galois element of perm when perm is one of permutation()'s (the same span), nullopt for
  // any other.
  std::optional<std::uint64_t> permutation_element(std::span<const std::uint32_t> perm) const;

 private:
  const CkksContext* context_;
  mutable std::mutex permutations_mutex_;
  mutable std::map<std::uint64_t, std::vector<std::uint32_t>> permutations_;    // by element
  mutable std::map<const std::uint32_t*, std::uint64_t> permutation_elements_;  // by address
};

// out[t] = c[t] mod q in [0, q) for signed words and 1 < q < 2^62: the residues of a signed
// integer polynomial (an encoding, a sampled error, a lazy diagonal). `isa` picks the kernel
// (AVX-512 F/DQ where asked for and present, else scalar); every kernel gives the same words.
void signed_residues(std::span<const std::int64_t> c, std::uint64_t q, std::span<std::uint64_t> out,
                     ring::SimdIsa isa = ring::default_simd());

// Residues uniform modulo q from stream `stream` of an AES-CTR generator: chunk c of 512 words
// draws the blocks from counter c 2^32 on, two 64-bit candidates per block, each masked to q's
// bit length and kept when below q (rejection sampling: uniform given the PRF), the first draw
// (want + 1) / 2 blocks and every further one 8 blocks. Chunks are independent, so a backend
// makes them in parallel; the CUDA kernel keeps the same words in the same order.
void uniform_from_stream(const core::AesCtr& prf, std::uint64_t stream, std::uint64_t q,
                         std::uint64_t* out, std::size_t n);

// The compact form of an NTT-form polynomial that is constant on aligned blocks of at least
// min_block coefficients on every limb (a polynomial in X^(N/m) for some m < N, whose values in
// the bit-reversed NTT order repeat in blocks of N/m): one word per block, n = N / block. p
// itself when it is not. Exact: inner_product reads the compact form as the whole polynomial.
RnsPoly compact_blocks(RnsPoly p, std::uint32_t min_block = 8);

// begin_range / end_range as a scope.
class StepRange {
 public:
  StepRange(const RnsOps& ops, const char* name) : ops_(&ops) { ops.begin_range(name); }
  ~StepRange() { ops_->end_range(); }
  StepRange(const StepRange&) = delete;
  StepRange& operator=(const StepRange&) = delete;

 private:
  const RnsOps* ops_;
};

// The CPU primitives on `threads` threads (limbs split between them), with the vector kernels
// of `isa` where there are some (Error(unsupported) if it is not available here).
std::unique_ptr<RnsOps> make_cpu_rns_ops(const CkksContext& context, unsigned threads = 1,
                                         ring::SimdIsa isa = ring::default_simd());

}  // namespace safhire::ckks
