// The CPU implementation of the RNS primitives: each operation splits its output limbs between
// threads (core::parallel_for); the per-limb loops are plain word arithmetic (a product of two
// varying residues is the 128-bit product and a Barrett reduction, a product by a constant a
// Shoup multiplication), and the key-switching inner product runs on AVX-512 where present
// (simd/rns_kernels.hpp), word for word the same.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "simd/rns_kernels.hpp"

namespace safhire::ckks {

namespace {

using core::u128;

// a * b mod q for a, b in [0, q), q < 2^62 of k bits: Barrett with mu = floor(2^2k / q)
// (Menezes et al., Handbook 14.42): the quotient estimate floor(floor(x / 2^(k-1)) mu / 2^(k+1))
// is at most 2 below the true one.
struct Barrett {
  u64 q;
  u64 mu;
  int k;

  explicit Barrett(u64 modulus) : q(modulus), mu(0), k(64 - __builtin_clzll(modulus)) {
    mu = static_cast<u64>((static_cast<u128>(1) << (2 * k)) / modulus);
  }

  u64 mul(u64 a, u64 b) const {
    const u128 x = static_cast<u128>(a) * b;
    const u64 top = static_cast<u64>(x >> (k - 1));
    const u64 estimate = static_cast<u64>((static_cast<u128>(top) * mu) >> (k + 1));
    u64 r = static_cast<u64>(x) - estimate * q;
    r = r >= 2 * q ? r - 2 * q : r;
    return r >= q ? r - q : r;
  }
};

class CpuRnsOps final : public RnsOps {
 public:
  CpuRnsOps(const CkksContext& context, unsigned threads, ring::SimdIsa isa)
      : RnsOps(context), threads_(std::max(1U, threads)) {
    require(ring::simd_available(isa), ErrorCode::unsupported,
            "CKKS CPU primitives: instruction set " + std::string(ring::to_string(isa)) +
                " is not available here");
#if defined(SAFHIRE_CKKS_AVX512)
    vector_ = isa == ring::SimdIsa::avx512 && simd::rns_avx512_available();
#endif
    for (u64 q : context.primes()) {
      barrett_.emplace_back(q);
      reducer_.push_back(core::make_wide_reducer(q));
    }
  }

  void forward(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, true);
  }
  void inverse(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, false);
  }

  void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    if (vector_sums(a, b, out, false)) return;
    binary(a, b, out, [](u64 x, u64 y, u64, const Barrett& m) { return core::add_mod(x, y, m.q); });
  }
  void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    if (vector_sums(a, b, out, true)) return;
    binary(a, b, out, [](u64 x, u64 y, u64, const Barrett& m) { return core::sub_mod(x, y, m.q); });
  }
  void multiply(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    if (vector_products(a, b, out, false)) return;
    binary(a, b, out, [](u64 x, u64 y, u64, const Barrett& m) { return m.mul(x, y); });
  }
  void negate(const RnsPoly& a, RnsPoly& out) const override {
    binary(a, a, out, [](u64 x, u64, u64, const Barrett& m) { return core::neg_mod(x, m.q); });
  }

  void multiply_accumulate(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    if (vector_products(a, b, out, true)) return;
    binary(a, b, out, [](u64 x, u64 y, u64 o, const Barrett& m) {
      return core::add_mod(o, m.mul(x, y), m.q);
    });
  }

  void inner_product(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b,
                     RnsPoly& out, std::span<const std::uint32_t> perm) const override {
    products(a, b, {}, out, nullptr, perm);
  }

  void inner_product_pair(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b0,
                          std::span<const RnsPoly* const> b1, RnsPoly& out0, RnsPoly& out1,
                          std::span<const std::uint32_t> perm) const override {
    require(b1.size() == b0.size(), ErrorCode::size_mismatch, "inner product pair sizes differ");
    products(a, b0, b1, out0, &out1, perm);
  }

  void inner_product_seeded(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b0,
                            const core::AesCtr& prf, RnsPoly& out0, RnsPoly& out1,
                            std::span<const std::uint32_t> perm) const override {
    require(out1.moduli == out0.moduli, ErrorCode::size_mismatch,
            "inner product pair outputs over different moduli");
    products(a, b0, {}, out0, &out1, perm, &prf);
  }

  void tensor(const RnsPoly& x0, const RnsPoly& x1, const RnsPoly& y0, const RnsPoly& y1,
              RnsPoly& d0, RnsPoly& d1, RnsPoly& d2) const override {
#if defined(SAFHIRE_CKKS_AVX512)
    if (vector_ && d0.n % 8 == 0) {
      for (const RnsPoly* a : {&x1, &y0, &y1})
        check_pair(x0, *a, d0);
      require(d1.moduli == d0.moduli && d2.moduli == d0.moduli && d1.n == d0.n && d2.n == d0.n,
              ErrorCode::size_mismatch, "tensor: outputs of different shapes");
      for (RnsPoly* d : {&d0, &d1, &d2})
        d->ntt = x0.ntt;
      for_limbs(d0, [&](std::size_t k) {
        const ModulusIndex mod = d0.moduli[k];
        auto limb = [&](const RnsPoly& p) { return p.limb(p.position(mod)).data(); };
        simd::tensor_avx512(limb(x0), limb(x1), limb(y0), limb(y1), d0.limb(k).data(),
                            d1.limb(k).data(), d2.limb(k).data(), d0.n, barrett_[mod].q,
                            reducer_[mod]);
      });
      return;
    }
#endif
    RnsOps::tensor(x0, x1, y0, y1, d0, d1, d2);
  }

  // Row by row within tiles of kTile coefficients, so that the tile of every b stays in cache
  // while the rows read it: each b is read from memory once, not once per row.
  void inner_product_rows(std::span<const std::vector<const RnsPoly*>> a,
                          std::span<const RnsPoly* const> b0, std::span<const RnsPoly* const> b1,
                          std::span<RnsPoly* const> out0,
                          std::span<RnsPoly* const> out1) const override {
    require(
        !a.empty() && out0.size() == a.size() && out1.size() == a.size() && b1.size() == b0.size(),
        ErrorCode::size_mismatch, "inner product rows: mismatched counts");
    const RnsPoly& shape = *out0[0];
    const std::uint32_t n = shape.n;
    for (std::size_t g = 0; g < a.size(); ++g) {
      require(a[g].size() == b0.size(), ErrorCode::size_mismatch,
              "inner product rows: a row's length differs from the shared operands'");
      require(out0[g]->moduli == shape.moduli && out1[g]->moduli == shape.moduli &&
                  out0[g]->n == n && out1[g]->n == n,
              ErrorCode::size_mismatch, "inner product rows: outputs of different shapes");
      std::size_t terms = 0;
      for (std::size_t j = 0; j < b0.size(); ++j) {
        if (a[g][j] == nullptr) continue;
        ++terms;
        block_shift(*a[g][j], n, false);
        check_pair(*b0[j], *b1[j], shape);
        require(a[g][j]->ntt == b0[j]->ntt, ErrorCode::size_mismatch,
                "inner product of polynomials in different forms");
      }
      require(terms >= 1 && terms <= 16, ErrorCode::size_mismatch,
              "inner product rows: 1 .. 16 terms a row");
    }
    for (std::size_t g = 0; g < a.size(); ++g)
      out0[g]->ntt = out1[g]->ntt = b0[0]->ntt;
    for_limbs(shape, [&](std::size_t k) {
      const ModulusIndex mod = shape.moduli[k];
      for (std::uint32_t t0 = 0; t0 < n; t0 += kTile) {
        const std::uint32_t len = std::min(kTile, n - t0);
        for (std::size_t g = 0; g < a.size(); ++g) {
          std::array<const u64*, 16> x{}, y0{}, y1{};
          std::array<unsigned, 16> step{};
          std::size_t terms = 0;
          for (std::size_t j = 0; j < b0.size(); ++j) {
            const RnsPoly* pt = a[g][j];
            if (pt == nullptr) continue;
            const auto shift = static_cast<unsigned>(__builtin_ctz(n / pt->n));
            // t0 is a multiple of the block, or the tile lies inside one block.
            x[terms] = pt->limb(pt->position(mod)).data() + (t0 >> shift);
            step[terms] = shift;
            y0[terms] = b0[j]->limb(b0[j]->position(mod)).data() + t0;
            y1[terms] = b1[j]->limb(b1[j]->position(mod)).data() + t0;
            ++terms;
          }
          sum_products(terms, x.data(), step.data(), y0.data(), y1.data(), len, mod,
                       out0[g]->limb(k).data() + t0, out1[g]->limb(k).data() + t0);
        }
      }
    });
  }

  // Limb by limb: the digits' limb stays in cache for every key, and each sum is permuted from a
  // thread-local buffer.
  void rotate_hoisted(std::span<const RnsPoly* const> d,
                      std::span<const std::vector<const RnsPoly*>> b,
                      std::span<const std::vector<const RnsPoly*>> a,
                      std::span<const std::span<const std::uint32_t>> perm, const RnsPoly* add0,
                      std::span<RnsPoly* const> out0,
                      std::span<RnsPoly* const> out1) const override {
    require(b.size() == a.size() && perm.size() == a.size() && out0.size() == a.size() &&
                out1.size() == a.size() && !a.empty(),
            ErrorCode::size_mismatch, "hoisted rotations: mismatched counts");
    require(!d.empty() && d.size() <= 16, ErrorCode::size_mismatch,
            "hoisted rotations: 1 .. 16 digits");
    const RnsPoly& shape = *out0[0];
    const std::uint32_t n = shape.n;
    for (std::size_t j = 0; j < a.size(); ++j) {
      require(a[j].size() == d.size() && b[j].size() == d.size(), ErrorCode::size_mismatch,
              "hoisted rotations: a key with another digit count");
      require(out0[j]->moduli == shape.moduli && out1[j]->moduli == shape.moduli &&
                  out0[j]->n == n && out1[j]->n == n && perm[j].size() == n,
              ErrorCode::size_mismatch, "hoisted rotations: outputs of different shapes");
      for (std::size_t i = 0; i < d.size(); ++i) {
        check_pair(*d[i], *b[j][i], shape);
        check_pair(*d[i], *a[j][i], shape);
      }
      require(out0[j] != add0, ErrorCode::invalid_argument, "hoisted rotations: output aliases");
    }
    require(d[0]->ntt && (add0 == nullptr || (add0->ntt && add0->n == n)), ErrorCode::size_mismatch,
            "hoisted rotations take NTT-form polynomials");
    for (std::size_t j = 0; j < a.size(); ++j)
      out0[j]->ntt = out1[j]->ntt = true;
    const std::size_t digits = d.size();
    for_limbs(shape, [&](std::size_t k) {
      const ModulusIndex mod = shape.moduli[k];
      const u64 q = barrett_[mod].q;
      thread_local std::vector<u64> sum0, sum1;
      sum0.resize(n);
      sum1.resize(n);
      std::array<const u64*, 16> x{}, y0{}, y1{};
      std::array<unsigned, 16> step{};
      for (std::size_t i = 0; i < digits; ++i)
        x[i] = d[i]->limb(d[i]->position(mod)).data();
      const u64* c0 = add0 != nullptr ? add0->limb(add0->position(mod)).data() : nullptr;
      for (std::size_t j = 0; j < a.size(); ++j) {
        for (std::size_t i = 0; i < digits; ++i) {
          y0[i] = b[j][i]->limb(b[j][i]->position(mod)).data();
          y1[i] = a[j][i]->limb(a[j][i]->position(mod)).data();
        }
        u64* s0 = sum0.data();
        u64* s1 = sum1.data();
        sum_products(digits, x.data(), step.data(), y0.data(), y1.data(), n, mod, s0, s1);
        const auto& pj = perm[j];
        u64* o0 = out0[j]->limb(k).data();
        u64* o1 = out1[j]->limb(k).data();
        if (c0 != nullptr) {
          for (std::uint32_t t = 0; t < n; ++t) {
            const std::uint32_t from = pj[t];
            o0[t] = core::add_mod(s0[from], c0[from], q);
            o1[t] = s1[from];
          }
        } else {
          for (std::uint32_t t = 0; t < n; ++t) {
            o0[t] = s0[pj[t]];
            o1[t] = s1[pj[t]];
          }
        }
      }
    });
  }

  // Limb by limb: every baby rotation's limb into a thread-local buffer (a seeded key's a_j
  // regenerated for that limb alone), then that limb of every row, tile by tile as in
  // inner_product_rows. The babies never exist whole.
  void rotate_hoisted_rows(std::span<const RnsPoly* const> d, std::span<const HoistedKey> keys,
                           const RnsPoly& x0, const RnsPoly& x1,
                           std::span<const std::vector<const RnsPoly*>> rows,
                           std::span<RnsPoly* const> out0, std::span<RnsPoly* const> out1,
                           std::span<const std::vector<const Coefficients*>> lazy) const override {
    require(!rows.empty() && out0.size() == rows.size() && out1.size() == rows.size(),
            ErrorCode::size_mismatch, "hoisted rows: mismatched counts");
    require(keys.empty() || (!d.empty() && d.size() <= 16), ErrorCode::size_mismatch,
            "hoisted rows: 1 .. 16 digits");
    const RnsPoly& shape = *out0[0];
    const std::uint32_t n = shape.n;
    check_pair(x0, x1, shape);
    require(x0.ntt, ErrorCode::size_mismatch, "hoisted rows take NTT-form polynomials");
    const std::size_t babies = keys.size() + 1;
    for (const HoistedKey& key : keys) {
      require(key.b.size() == d.size() &&
                  (key.prf != nullptr ? key.a.empty() : key.a.size() == d.size()) &&
                  key.perm.size() == n,
              ErrorCode::size_mismatch, "hoisted rows: a key with another digit count");
      for (std::size_t i = 0; i < d.size(); ++i) {
        check_pair(*d[i], *key.b[i], shape);
        require(d[i]->ntt, ErrorCode::size_mismatch, "hoisted rows take NTT-form polynomials");
        if (key.prf == nullptr) check_pair(*d[i], *key.a[i], shape);
      }
    }
    for (std::size_t g = 0; g < rows.size(); ++g) {
      require(rows[g].size() == babies, ErrorCode::size_mismatch,
              "hoisted rows: a row's length differs from the baby count");
      require(out0[g]->moduli == shape.moduli && out1[g]->moduli == shape.moduli &&
                  out0[g]->n == n && out1[g]->n == n,
              ErrorCode::size_mismatch, "hoisted rows: outputs of different shapes");
      std::size_t terms = 0;
      for (std::size_t j = 0; j < babies; ++j) {
        const RnsPoly* pt = rows[g][j];
        const Coefficients* c = lazy.empty() ? nullptr : lazy[g][j];
        require(pt == nullptr || c == nullptr, ErrorCode::invalid_argument,
                "hoisted rows: a term both lazy and given");
        if (c != nullptr) {
          require(c->size() == n, ErrorCode::size_mismatch, "lazy coefficients of another degree");
          ++terms;
        }
        if (pt == nullptr) continue;
        ++terms;
        block_shift(*pt, n, false);
        require(pt->ntt, ErrorCode::size_mismatch,
                "inner product of polynomials in different forms");
      }
      require(terms != 0, ErrorCode::size_mismatch, "hoisted rows: a row without terms");
    }
    require(lazy.empty() || lazy.size() == rows.size(), ErrorCode::size_mismatch,
            "hoisted rows: lazy terms shaped unlike the rows");
    for (std::size_t g = 0; g < lazy.size(); ++g)
      require(lazy[g].size() == babies, ErrorCode::size_mismatch,
              "hoisted rows: lazy terms shaped unlike the rows");
    for (std::size_t g = 0; g < rows.size(); ++g)
      out0[g]->ntt = out1[g]->ntt = true;
    const std::size_t digits = d.size();
    for_limbs(shape, [&](std::size_t k) {
      const ModulusIndex mod = shape.moduli[k];
      const u64 q = barrett_[mod].q;
      thread_local std::vector<u64> rotated, sums, regenerated;
      rotated.resize(2 * keys.size() * std::size_t{n});
      sums.resize(2 * std::size_t{n});
      std::array<const u64*, 16> x{}, y0{}, y1{};
      std::array<unsigned, 16> step{};
      for (std::size_t i = 0; i < digits; ++i)
        x[i] = d[i]->limb(d[i]->position(mod)).data();
      thread_local std::vector<const u64*> r0, r1;  // each baby's limb
      r0.assign(babies, nullptr);
      r1.assign(babies, nullptr);
      r0[0] = x0.limb(x0.position(mod)).data();
      r1[0] = x1.limb(x1.position(mod)).data();
      for (std::size_t j = 0; j < keys.size(); ++j) {
        const HoistedKey& key = keys[j];
        if (key.prf != nullptr) regenerated.resize(digits * std::size_t{n});
        for (std::size_t i = 0; i < digits; ++i) {
          y0[i] = key.b[i]->limb(key.b[i]->position(mod)).data();
          if (key.prf == nullptr) {
            y1[i] = key.a[i]->limb(key.a[i]->position(mod)).data();
          } else {
            u64* a = regenerated.data() + i * std::size_t{n};
            uniform_from_stream(*key.prf, std::uint64_t{i} << 32 | mod, q, a, n);
            y1[i] = a;
          }
        }
        u64* s0 = sums.data();
        u64* s1 = s0 + n;
        sum_products(digits, x.data(), step.data(), y0.data(), y1.data(), n, mod, s0, s1);
        u64* o0 = rotated.data() + 2 * j * std::size_t{n};
        u64* o1 = o0 + n;
        const auto& perm = key.perm;
        for (std::uint32_t t = 0; t < n; ++t) {
          const std::uint32_t from = perm[t];
          o0[t] = core::add_mod(s0[from], r0[0][from], q);
          o1[t] = s1[from];
        }
        r0[j + 1] = o0;
        r1[j + 1] = o1;
      }
      // This limb of every lazy term: its coefficients modulo q, in NTT form.
      thread_local std::vector<u64> expanded;
      thread_local std::vector<const u64*> made;
      made.assign(lazy.empty() ? 0 : rows.size() * babies, nullptr);
      std::size_t lazy_terms = 0;
      for (std::size_t g = 0; g < lazy.size(); ++g) {
        for (std::size_t j = 0; j < babies; ++j)
          lazy_terms += lazy[g][j] != nullptr ? 1 : 0;
      }
      expanded.resize(lazy_terms * std::size_t{n});
      for (std::size_t g = 0, at = 0; g < lazy.size(); ++g) {
        for (std::size_t j = 0; j < babies; ++j) {
          if (lazy[g][j] == nullptr) continue;
          u64* limb = expanded.data() + at++ * std::size_t{n};
          signed_residues(*lazy[g][j], q, {limb, n},
                          vector_ ? ring::SimdIsa::avx512 : ring::SimdIsa::scalar);
          context().ntt(mod).forward(std::span<u64>(limb, n));
          made[g * babies + j] = limb;
        }
      }
      for (std::uint32_t t0 = 0; t0 < n; t0 += kTile) {
        const std::uint32_t len = std::min(kTile, n - t0);
        for (std::size_t g = 0; g < rows.size(); ++g) {
          u64* dst0 = out0[g]->limb(k).data() + t0;
          u64* dst1 = out1[g]->limb(k).data() + t0;
          std::array<u64, kTile> part0, part1;  // a later part of a row of more than 16 terms
          std::size_t terms = 0, done = 0;
          for (std::size_t j = 0; j <= babies; ++j) {
            const bool flush = terms == 16 || (j == babies && terms != 0);
            if (flush) {
              u64* w0 = done == 0 ? dst0 : part0.data();
              u64* w1 = done == 0 ? dst1 : part1.data();
              sum_products(terms, x.data(), step.data(), y0.data(), y1.data(), len, mod, w0, w1);
              if (done != 0) {
                for (std::uint32_t t = 0; t < len; ++t) {
                  dst0[t] = core::add_mod(dst0[t], w0[t], q);
                  dst1[t] = core::add_mod(dst1[t], w1[t], q);
                }
              }
              done += terms;
              terms = 0;
            }
            if (j == babies) break;
            const RnsPoly* pt = rows[g][j];
            const u64* lazy_limb = made.empty() ? nullptr : made[g * babies + j];
            if (pt == nullptr && lazy_limb == nullptr) continue;
            if (lazy_limb != nullptr) {
              x[terms] = lazy_limb + t0;
              step[terms] = 0;
            } else {
              const auto shift = static_cast<unsigned>(__builtin_ctz(n / pt->n));
              x[terms] = pt->limb(pt->position(mod)).data() + (t0 >> shift);
              step[terms] = shift;
            }
            y0[terms] = r0[j] + t0;
            y1[terms] = r1[j] + t0;
            ++terms;
          }
        }
      }
    });
  }

  void sub_scale(const RnsPoly& a, const RnsPoly& b, std::span<const u64> scalars,
                 RnsPoly& out) const override {
    check_pair(a, b, out);
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      const u64 q = barrett_[mod].q;
      const auto c = core::make_shoup(scalars[mod], q);
      const u64* x = a.limb(a.position(mod)).data();
      const u64* y = b.limb(b.position(mod)).data();
      u64* o = out.limb(k).data();
#if defined(SAFHIRE_CKKS_AVX512)
      if (vector_ && out.n % 8 == 0) return simd::scale_avx512(x, y, o, out.n, q, c);
#endif
      for (std::uint32_t t = 0; t < out.n; ++t)
        o[t] = core::mul_shoup(x[t] + q - y[t], c.value, c.quotient, q);
    });
  }

  void add_scalars(const RnsPoly& a, std::span<const u64> scalars, RnsPoly& out) const override {
    check_pair(a, a, out);
    out.ntt = a.ntt;
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      const u64 q = barrett_[mod].q, c = scalars[mod];
      const u64* x = a.limb(a.position(mod)).data();
      u64* o = out.limb(k).data();
      for (std::uint32_t t = 0; t < out.n; ++t)
        o[t] = core::add_mod(x[t], c, q);
    });
  }

  void copy(const RnsPoly& a, RnsPoly& out, std::size_t first, std::size_t last) const override {
    require(a.n == out.n, ErrorCode::size_mismatch, "RNS copy between different degrees");
    last = std::min(last, out.limbs());
    for (std::size_t k = first; k < last; ++k) {
      const auto src = a.limb(a.position(out.moduli[k]));
      std::copy(src.begin(), src.end(), out.limb(k).begin());
    }
  }

  void multiply_scalars(const RnsPoly& a, std::span<const u64> scalars,
                        RnsPoly& out) const override {
    check_pair(a, a, out);
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      const u64 q = barrett_[mod].q;
      const auto c = core::make_shoup(scalars[mod], q);
      const u64* x = a.limb(a.position(mod)).data();
      u64* o = out.limb(k).data();
#if defined(SAFHIRE_CKKS_AVX512)
      if (vector_ && out.n % 8 == 0) return simd::scale_avx512(x, nullptr, o, out.n, q, c);
#endif
      for (std::uint32_t t = 0; t < out.n; ++t)
        o[t] = core::mul_shoup(x[t], c.value, c.quotient, q);
    });
  }

  void uniform(const core::AesCtr& prf, std::uint64_t stream_base,
               std::span<const ModulusIndex> moduli, RnsPoly& out) const override {
    reshape(out, moduli, true);
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      uniform_from_stream(prf, stream_base | mod, context().prime(mod), out.limb(k).data(), out.n);
    });
  }

  void permute(const RnsPoly& a, std::span<const std::uint32_t> perm, RnsPoly& out) const override {
    require(&a != &out, ErrorCode::invalid_argument, "permute: output aliases input");
    require(a.ntt && perm.size() == out.n, ErrorCode::size_mismatch,
            "permute takes NTT-form limbs and a permutation of N slots");
    check_pair(a, a, out);
    for_limbs(out, [&](std::size_t k) {
      const u64* x = a.limb(a.position(out.moduli[k])).data();
      u64* o = out.limb(k).data();
      for (std::uint32_t t = 0; t < out.n; ++t)
        o[t] = x[perm[t]];
    });
  }

  void convert(const BaseConverter& converter, const RnsPoly& in, RnsPoly& out,
               Conversion variant) const override {
    require(!in.ntt && !out.ntt && in.n == out.n, ErrorCode::size_mismatch,
            "base conversion takes and writes coefficients");
    const std::size_t from = converter.from().size(), to = converter.to().size();
    Words y(from * in.n);  // pooled: megabytes per call at N = 2^16
    // y_i per input limb, then the output limbs split between the threads.
    converter.prepare(in, y);
    const std::size_t parts = std::min<std::size_t>(threads_, to);
    core::parallel_for(parts, threads_, [&](std::size_t part, unsigned) {
      converter.convert_range(in, out, variant, y, part * to / parts, (part + 1) * to / parts);
    });
  }

 private:
  // out0 = sum_j a_j b0_j and, when out1 is given, out1 = sum_j a_j b1_j, each a_j read through
  // perm when it is non-empty. Per output limb: a permuted limb is gathered into a thread-local
  // buffer first (random reads within one limb, which stays in cache), then sum_products.
  // With prf (then b1 is empty), b1[j] is the seeded a half: uniform_from_stream(prf, j << 32 |
  // modulus), made limb by limb into a thread-local buffer.
  void products(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b0,
                std::span<const RnsPoly* const> b1, RnsPoly& out0, RnsPoly* out1,
                std::span<const std::uint32_t> perm, const core::AesCtr* prf = nullptr) const {
    require(!a.empty() && a.size() == b0.size() && a.size() <= 16, ErrorCode::size_mismatch,
            "inner product of 1 .. 16 pairs of polynomials");
    require(perm.empty() || (perm.size() == out0.n && a[0]->ntt), ErrorCode::size_mismatch,
            "a fused permutation needs NTT-form inputs and N entries");
    std::array<unsigned, 16> shift{};  // a[j] block-constant on blocks of 2^shift[j]
    for (std::size_t j = 0; j < a.size(); ++j) {
      shift[j] = block_shift(*a[j], out0.n, !perm.empty());
      check_pair(*b0[j], *b0[j], out0);
      if (out1 != nullptr && prf == nullptr) check_pair(*b1[j], *b1[j], *out1);
      require(a[j]->ntt == b0[j]->ntt, ErrorCode::size_mismatch,
              "inner product of polynomials in different forms");
    }
    require(out1 == nullptr || out1->moduli == out0.moduli, ErrorCode::size_mismatch,
            "inner product pair outputs over different moduli");
    out0.ntt = a[0]->ntt;
    if (out1 != nullptr) out1->ntt = a[0]->ntt;
    const std::size_t pairs = a.size();
    const std::uint32_t n = out0.n;
    for_limbs(out0, [&](std::size_t k) {
      const ModulusIndex mod = out0.moduli[k];
      thread_local std::vector<u64> gathered, regenerated;
      std::array<const u64*, 16> x{}, y0{}, y1{};
      if (!perm.empty()) gathered.resize(pairs * std::size_t{n});
      if (prf != nullptr) regenerated.resize(pairs * std::size_t{n});
      for (std::size_t j = 0; j < pairs; ++j) {
        const u64* src = a[j]->limb(a[j]->position(mod)).data();
        if (perm.empty()) {
          x[j] = src;
        } else {
          u64* dst = gathered.data() + j * n;
          for (std::uint32_t t = 0; t < n; ++t)
            dst[t] = src[perm[t]];
          x[j] = dst;
        }
        y0[j] = b0[j]->limb(b0[j]->position(mod)).data();
        if (prf != nullptr) {
          u64* limb = regenerated.data() + j * n;
          uniform_from_stream(*prf, std::uint64_t{j} << 32 | mod, context().prime(mod), limb, n);
          y1[j] = limb;
        } else if (out1 != nullptr) {
          y1[j] = b1[j]->limb(b1[j]->position(mod)).data();
        }
      }
      // shift is 0 wherever there is a permutation (block_shift refuses compact operands then).
      sum_products(pairs, x.data(), shift.data(), y0.data(), y1.data(), n, mod, out0.limb(k).data(),
                   out1 != nullptr ? out1->limb(k).data() : nullptr);
    });
  }

  // For t < len: o0[t] = sum_j x[j][t >> step[j]] y0[j][t] mod q_mod and, when o1 is not null,
  // o1[t] likewise with y1; at most 16 terms. On the AVX-512 kernel where it runs (len a
  // multiple of 8, no block of 2 or 4 words), else in two words per coefficient, one reduction.
  void sum_products(std::size_t terms, const u64* const* x, const unsigned* step,
                    const u64* const* y0, const u64* const* y1, std::uint32_t len, ModulusIndex mod,
                    u64* o0, u64* o1) const {
    const u64 q = barrett_[mod].q;
    const auto reducer = reducer_[mod];
#if defined(SAFHIRE_CKKS_AVX512)
    if (vector_ && len % 8 == 0 &&
        std::none_of(step, step + terms, [](unsigned v) { return v == 1 || v == 2; })) {
      simd::inner_product_avx512({x, terms}, {step, terms}, {y0, terms}, {y1, terms}, len, q,
                                 reducer, o0, o1);
      return;
    }
#endif
    auto reduce = [&](core::u128 v) {
      return core::reduce_double_word(static_cast<u64>(v >> 64), static_cast<u64>(v), q, reducer);
    };
    for (std::uint32_t t = 0; t < len; ++t) {
      core::u128 s0 = 0, s1 = 0;
      for (std::size_t j = 0; j < terms; ++j) {
        const u64 xv = x[j][t >> step[j]];
        s0 += static_cast<core::u128>(xv) * y0[j][t];
        if (o1 != nullptr) s1 += static_cast<core::u128>(xv) * y1[j][t];
      }
      o0[t] = reduce(s0);
      if (o1 != nullptr) o1[t] = reduce(s1);
    }
  }

  // a + b or a - b on the AVX-512 kernel; false where it does not run.
  bool vector_sums(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, bool subtract) const {
    return vector_binary(a, b, out, [&](const u64* x, const u64* y, u64* o, ModulusIndex mod) {
#if defined(SAFHIRE_CKKS_AVX512)
      simd::add_sub_avx512(x, y, o, out.n, barrett_[mod].q, subtract);
#else
      (void)x, (void)y, (void)o, (void)mod;
#endif
    });
  }

  // a b (accumulated into out when asked) on the AVX-512 kernel; false where it does not run.
  bool vector_products(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, bool accumulate) const {
    return vector_binary(a, b, out, [&](const u64* x, const u64* y, u64* o, ModulusIndex mod) {
#if defined(SAFHIRE_CKKS_AVX512)
      simd::multiply_avx512(x, y, o, out.n, barrett_[mod].q, reducer_[mod], accumulate);
#else
      (void)x, (void)y, (void)o, (void)mod;
#endif
    });
  }

  // kernel(a's limb, b's limb, out's limb, modulus) over out's limbs where the AVX-512 kernels
  // run (n a multiple of 8); false, touching nothing, where they do not.
  template <class Kernel>
  bool vector_binary(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Kernel kernel) const {
    if (!vector_ || out.n % 8 != 0) return false;
    check_pair(a, b, out);
    out.ntt = a.ntt;
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      kernel(a.limb(a.position(mod)).data(), b.limb(b.position(mod)).data(), out.limb(k).data(),
             mod);
    });
    return true;
  }

  // log2 of a's block (0 for a whole polynomial) as an inner product's a[j] over n coefficients.
  static unsigned block_shift(const RnsPoly& a, std::uint32_t n, bool permuted) {
    require(a.n != 0 && a.n <= n && n % a.n == 0 && ((n / a.n) & (n / a.n - 1)) == 0,
            ErrorCode::size_mismatch, "inner product operand of another degree");
    require(a.n == n || !permuted, ErrorCode::invalid_argument,
            "a fused permutation of a compact polynomial");
    return static_cast<unsigned>(__builtin_ctz(n / a.n));
  }

  void check_pair(const RnsPoly& a, const RnsPoly& b, const RnsPoly& out) const {
    require(a.n == out.n && b.n == out.n && a.ntt == b.ntt, ErrorCode::size_mismatch,
            "RNS operands of different degrees or forms");
  }

  template <class Fn>
  void for_limbs(const RnsPoly& out, Fn&& fn) const {
    if (threads_ == 1 || out.limbs() == 1) {
      for (std::size_t k = 0; k < out.limbs(); ++k)
        fn(k);
      return;
    }
    core::parallel_for(out.limbs(), threads_, [&](std::size_t k, unsigned) { fn(k); });
  }

  // out[t] = op(a[t], b[t], out[t], modulus) over out's limbs.
  template <class Op>
  void binary(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Op op) const {
    check_pair(a, b, out);
    out.ntt = a.ntt;
    for_limbs(out, [&](std::size_t k) {
      const ModulusIndex mod = out.moduli[k];
      const Barrett& m = barrett_[mod];
      const u64* x = a.limb(a.position(mod)).data();
      const u64* y = b.limb(b.position(mod)).data();
      u64* o = out.limb(k).data();
      for (std::uint32_t t = 0; t < out.n; ++t)
        o[t] = op(x[t], y[t], o[t], m);
    });
  }

  void transform(RnsPoly& p, std::size_t first, std::size_t last, bool to_ntt) const {
    last = std::min(last, p.limbs());
    require(p.ntt != to_ntt, ErrorCode::invalid_argument,
            to_ntt ? "forward NTT of a polynomial already in NTT form"
                   : "inverse NTT of a polynomial in coefficient form");
    for_limbs_range(first, last, [&](std::size_t k) {
      const auto& plan = context().ntt(p.moduli[k]);
      if (to_ntt) {
        plan.forward(p.limb(k));
      } else {
        plan.inverse(p.limb(k));
      }
    });
    if (first == 0 && last == p.limbs()) p.ntt = to_ntt;
  }

  template <class Fn>
  void for_limbs_range(std::size_t first, std::size_t last, Fn&& fn) const {
    if (first >= last) return;
    if (threads_ == 1) {
      for (std::size_t k = first; k < last; ++k)
        fn(k);
      return;
    }
    core::parallel_for(last - first, threads_, [&](std::size_t k, unsigned) { fn(first + k); });
  }

  static constexpr std::uint32_t kTile = 512;  // inner_product_rows' coefficients per tile

  unsigned threads_;
  bool vector_ = false;  // the AVX-512 inner product (simd/rns_kernels.hpp)
  std::vector<Barrett> barrett_;
  std::vector<core::WideReducer> reducer_;
};

}  // namespace

RnsPoly RnsOps::zeros(std::vector<ModulusIndex> moduli, bool ntt) const {
  return RnsPoly(context().degree(), std::move(moduli), ntt);
}

void RnsOps::reshape(RnsPoly& p, std::span<const ModulusIndex> moduli, bool ntt) const {
  if (p.on_device()) p.device = {};
  p.n = context().degree();
  p.moduli.assign(moduli.begin(), moduli.end());
  p.data.resize(moduli.size() * p.n);
  p.ntt = ntt;
}

std::span<const std::uint32_t> RnsOps::permutation(std::uint64_t galois) const {
  const std::lock_guard lock(permutations_mutex_);
  auto it = permutations_.find(galois);
  if (it == permutations_.end()) {
    it = permutations_.emplace(galois, context().ntt(0).automorphism_permutation(galois)).first;
    permutation_elements_.emplace(it->second.data(), galois);
  }
  return it->second;
}

std::optional<std::uint64_t> RnsOps::permutation_element(
    std::span<const std::uint32_t> perm) const {
  const std::lock_guard lock(permutations_mutex_);
  const auto it = permutation_elements_.find(perm.data());
  if (it == permutation_elements_.end() || perm.size() != context().degree()) return std::nullopt;
  return it->second;
}

void RnsOps::inner_product_rows(std::span<const std::vector<const RnsPoly*>> a,
                                std::span<const RnsPoly* const> b0,
                                std::span<const RnsPoly* const> b1, std::span<RnsPoly* const> out0,
                                std::span<RnsPoly* const> out1) const {
  require(out0.size() == a.size() && out1.size() == a.size() && b1.size() == b0.size(),
          ErrorCode::size_mismatch, "inner product rows: mismatched counts");
  for (std::size_t g = 0; g < a.size(); ++g) {
    require(a[g].size() == b0.size(), ErrorCode::size_mismatch,
            "inner product rows: a row's length differs from the shared operands'");
    std::vector<const RnsPoly*> x, y0, y1;
    for (std::size_t j = 0; j < b0.size(); ++j) {
      if (a[g][j] == nullptr) continue;
      x.push_back(a[g][j]);
      y0.push_back(b0[j]);
      y1.push_back(b1[j]);
    }
    require(!x.empty(), ErrorCode::size_mismatch, "inner product rows: a row without terms");
    inner_product_pair(x, y0, y1, *out0[g], *out1[g]);
  }
}

void RnsOps::rotate_hoisted(std::span<const RnsPoly* const> d,
                            std::span<const std::vector<const RnsPoly*>> b,
                            std::span<const std::vector<const RnsPoly*>> a,
                            std::span<const std::span<const std::uint32_t>> perm,
                            const RnsPoly* add0, std::span<RnsPoly* const> out0,
                            std::span<RnsPoly* const> out1) const {
  require(b.size() == a.size() && perm.size() == a.size() && out0.size() == a.size() &&
              out1.size() == a.size(),
          ErrorCode::size_mismatch, "hoisted rotations: mismatched counts");
  RnsPoly u0, u1;
  for (std::size_t j = 0; j < a.size(); ++j) {
    reshape(u0, out0[j]->moduli, true);
    reshape(u1, out1[j]->moduli, true);
    inner_product_pair(d, b[j], a[j], u0, u1);
    if (add0 != nullptr) add(u0, *add0, u0);
    permute(u0, perm[j], *out0[j]);
    permute(u1, perm[j], *out1[j]);
  }
}

void RnsOps::inner_product_seeded(std::span<const RnsPoly* const> a,
                                  std::span<const RnsPoly* const> b0, const core::AesCtr& prf,
                                  RnsPoly& out0, RnsPoly& out1,
                                  std::span<const std::uint32_t> perm) const {
  std::vector<RnsPoly> regenerated(a.size());
  std::vector<const RnsPoly*> b1(a.size());
  for (std::size_t j = 0; j < a.size(); ++j) {
    uniform(prf, std::uint64_t{j} << 32, out1.moduli, regenerated[j]);
    b1[j] = &regenerated[j];
  }
  inner_product_pair(a, b0, b1, out0, out1, perm);
}

void RnsOps::expand_coefficients(const Coefficients& c, std::span<const ModulusIndex> moduli,
                                 RnsPoly& out) const {
  const std::uint32_t n = context().degree();
  require(c.size() == n, ErrorCode::size_mismatch, "lazy coefficients of another degree");
  RnsPoly host(n, {moduli.begin(), moduli.end()}, false);
  for (std::size_t k = 0; k < moduli.size(); ++k)
    signed_residues(c, context().prime(moduli[k]), host.limb(k));
  make_resident(host);
  forward(host);
  out = std::move(host);
}

void RnsOps::rotate_hoisted_rows(std::span<const RnsPoly* const> d,
                                 std::span<const HoistedKey> keys, const RnsPoly& x0,
                                 const RnsPoly& x1,
                                 std::span<const std::vector<const RnsPoly*>> rows,
                                 std::span<RnsPoly* const> out0, std::span<RnsPoly* const> out1,
                                 std::span<const std::vector<const Coefficients*>> lazy) const {
  require(!rows.empty() && out0.size() == rows.size() && out1.size() == rows.size(),
          ErrorCode::size_mismatch, "hoisted rows: mismatched counts");
  const std::vector<ModulusIndex>& moduli = out0[0]->moduli;
  if (!lazy.empty()) {
    // The lazy terms made whole first, then the rows as given.
    require(lazy.size() == rows.size(), ErrorCode::size_mismatch,
            "hoisted rows: lazy terms shaped unlike the rows");
    std::vector<std::vector<const RnsPoly*>> eager(rows.begin(), rows.end());
    std::vector<std::unique_ptr<RnsPoly>> made;
    for (std::size_t g = 0; g < rows.size(); ++g) {
      require(lazy[g].size() == rows[g].size(), ErrorCode::size_mismatch,
              "hoisted rows: lazy terms shaped unlike the rows");
      for (std::size_t j = 0; j < rows[g].size(); ++j) {
        if (lazy[g][j] == nullptr) continue;
        require(rows[g][j] == nullptr, ErrorCode::invalid_argument,
                "hoisted rows: a term both lazy and given");
        made.push_back(std::make_unique<RnsPoly>());
        expand_coefficients(*lazy[g][j], moduli, *made.back());
        eager[g][j] = made.back().get();
      }
    }
    RnsOps::rotate_hoisted_rows(d, keys, x0, x1, eager, out0, out1);
    return;
  }
  // r_1 .. r_m, one key at a time (a seeded key's a regenerated whole for its call).
  std::vector<std::array<RnsPoly, 2>> rotated(keys.size());
  std::vector<RnsPoly> regenerated;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const HoistedKey& key = keys[j];
    std::vector<const RnsPoly*> a = key.a;
    if (key.prf != nullptr) {
      regenerated.resize(d.size());
      a.resize(d.size());
      for (std::size_t i = 0; i < d.size(); ++i) {
        uniform(*key.prf, std::uint64_t{i} << 32, moduli, regenerated[i]);
        a[i] = &regenerated[i];
      }
    }
    for (RnsPoly& r : rotated[j])
      reshape(r, moduli, true);
    RnsPoly* r0 = &rotated[j][0];
    RnsPoly* r1 = &rotated[j][1];
    rotate_hoisted(d, std::span(&key.b, 1), std::span(&a, 1), std::span(&key.perm, 1), &x0,
                   std::span(&r0, 1), std::span(&r1, 1));
  }
  std::vector<const RnsPoly*> b0{&x0}, b1{&x1};
  for (const auto& r : rotated) {
    b0.push_back(&r[0]);
    b1.push_back(&r[1]);
  }
  // Rows of more than 16 terms in parts: the first into the output, the others added to it.
  constexpr std::size_t kTerms = 16;
  std::vector<std::vector<const RnsPoly*>> parts;
  std::vector<RnsPoly*> p0, p1;
  std::vector<std::size_t> owner;  // the row each part beyond the first adds to
  std::vector<std::array<RnsPoly, 2>> extra;
  extra.reserve(rows.size() * (keys.size() + kTerms) / kTerms);
  for (std::size_t g = 0; g < rows.size(); ++g) {
    require(rows[g].size() == b0.size(), ErrorCode::size_mismatch,
            "hoisted rows: a row's length differs from the baby count");
    std::size_t terms = 0;
    for (std::size_t j = 0; j < b0.size(); ++j) {
      if (rows[g][j] == nullptr) continue;
      if (terms % kTerms == 0) {
        parts.emplace_back(b0.size(), nullptr);
        if (terms == 0) {
          p0.push_back(out0[g]);
          p1.push_back(out1[g]);
        } else {
          auto& e = extra.emplace_back();
          for (RnsPoly& r : e)
            reshape(r, moduli, true);
          p0.push_back(&e[0]);
          p1.push_back(&e[1]);
          owner.push_back(g);
        }
      }
      parts.back()[j] = rows[g][j];
      ++terms;
    }
    require(terms != 0, ErrorCode::size_mismatch, "hoisted rows: a row without terms");
  }
  inner_product_rows(parts, b0, b1, p0, p1);
  for (std::size_t e = 0; e < extra.size(); ++e) {
    add(*out0[owner[e]], extra[e][0], *out0[owner[e]]);
    add(*out1[owner[e]], extra[e][1], *out1[owner[e]]);
  }
}

namespace {

// Rejection sampling's filter: words[0, count) masked, those below q kept in order until `room`
// are (simd::keep_below_avx512 where the processor has it).
std::size_t keep_below(const u64* words, std::size_t count, u64 mask, u64 q, u64* out,
                       std::size_t room) {
#if defined(SAFHIRE_CKKS_AVX512)
  if (simd::rns_avx512_available())
    return simd::keep_below_avx512(words, count, mask, q, out, room);
#endif
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count && kept < room; ++i) {
    const u64 x = words[i] & mask;
    out[kept] = x;
    kept += x < q ? 1 : 0;
  }
  return kept;
}

}  // namespace

void signed_residues(std::span<const std::int64_t> c, u64 q, std::span<u64> out,
                     ring::SimdIsa isa) {
  require(out.size() == c.size(), ErrorCode::size_mismatch, "signed residues: mismatched sizes");
  require(q > 1 && q < (u64{1} << 62), ErrorCode::invalid_argument,
          "signed residues: the modulus must lie in (1, 2^62)");
  std::size_t t = 0;
#if defined(SAFHIRE_CKKS_AVX512)
  if (isa == ring::SimdIsa::avx512 && simd::rns_avx512_available() && q > (u64{1} << 13)) {
    t = c.size() / 8 * 8;
    simd::reduce_signed_avx512(c.data(), t, q, out.data());
  }
#else
  (void)isa;
#endif
  if (t == c.size()) return;
  // |c[t]| - q floor(|c[t]| m / 2^64) with m = floor(2^64 / q) is below 3q (no division).
  const u64 m = static_cast<u64>((static_cast<u128>(1) << 64) / q);
  for (; t < c.size(); ++t) {
    const std::int64_t v = c[t];
    const u64 x = v < 0 ? static_cast<u64>(0) - static_cast<u64>(v) : static_cast<u64>(v);
    u64 r = x - static_cast<u64>((static_cast<u128>(x) * m) >> 64) * q;
    r = r >= 2 * q ? r - 2 * q : r;
    r = r >= q ? r - q : r;
    out[t] = v < 0 && r != 0 ? q - r : r;
  }
}

void uniform_from_stream(const core::AesCtr& prf, std::uint64_t stream, u64 q, u64* out,
                         std::size_t n) {
  constexpr std::size_t kChunk = 512;
  const u64 mask = q >= (u64{1} << 63) ? ~u64{0} : (u64{1} << std::bit_width(q)) - 1;
  std::array<u64, kChunk> words;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t want = std::min(kChunk, n - first);
    u64 counter = static_cast<u64>(first / kChunk) << 32;
    std::size_t kept = 0;
    for (std::size_t blocks = (want + 1) / 2; kept < want; blocks = 8) {
      prf.generate(stream, counter, blocks, words.data());
      counter += blocks;
      kept += keep_below(words.data(), 2 * blocks, mask, q, out + first + kept, want - kept);
    }
  }
}

RnsPoly compact_blocks(RnsPoly p, std::uint32_t min_block) {
  require(!p.on_device() && p.ntt, ErrorCode::invalid_argument,
          "compact_blocks takes a host polynomial in NTT form");
  // The largest block (a power of two) on which every limb is constant; a failing block size
  // fails at its first differing word, so the search costs about one pass.
  auto constant_on = [&](std::uint32_t block) {
    for (std::size_t k = 0; k < p.limbs(); ++k) {
      const auto limb = p.limb(k);
      for (std::uint32_t t = 0; t < p.n; ++t) {
        if (limb[t] != limb[t & ~(block - 1)]) return false;
      }
    }
    return true;
  };
  std::uint32_t block = p.n;
  while (block >= min_block && block > 1 && !constant_on(block))
    block /= 2;
  if (block < min_block || block == 1) return p;
  RnsPoly compact(p.n / block, p.moduli, true);
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    const auto from = p.limb(k);
    auto to = compact.limb(k);
    for (std::uint32_t i = 0; i < compact.n; ++i)
      to[i] = from[std::size_t{i} * block];
  }
  return compact;
}

std::unique_ptr<RnsOps> make_cpu_rns_ops(const CkksContext& context, unsigned threads,
                                         ring::SimdIsa isa) {
  return std::make_unique<CpuRnsOps>(context, threads, isa);
}

}  // namespace safhire::ckks
