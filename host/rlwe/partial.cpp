#include "safhire/rlwe/partial.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/elements/monomial.hpp"
#include "safhire/ring/cyclotomic.hpp"

namespace safhire::rlwe {

namespace {

using ring::RingParams;
using ring::TorusArith;

// dst += c Z^e src over one R_gamma element (L words), 0 <= e < t^gamma, lane by lane
// (elements::monomial_coefficient, the CUDA kernels' body).
void monomial_into(const ring::RingParams& sub, const u64* src, std::uint32_t e, u64 c, u64* dst) {
  const std::uint32_t L = sub.N(), inner = sub.m(), order = sub.M();
  for (std::uint32_t l = 0; l < L; ++l)
    dst[l] += c * elements::monomial_coefficient(src, l, e, L, order, inner);
}

// sigma_k of t^gamma times the trace-dual of lane j, Z^-j - Z^(t^(gamma-1) - j mod t^(gamma-1)):
// the exponents (mod t^gamma) of its + and - monomial.
std::pair<std::uint32_t, std::uint32_t> dual_exponents(const ring::RingParams& sub, std::uint64_t k,
                                                       std::uint32_t j) {
  const std::uint64_t order = sub.M(), inner = sub.m();
  return {static_cast<std::uint32_t>((order - k * j % order) % order),
          static_cast<std::uint32_t>(k * (inner - j % inner) % order)};
}

}  // namespace

std::vector<std::uint64_t> power_elements(const RingParams& r, std::uint32_t gamma) {
  require(gamma < r.a(), ErrorCode::invalid_argument,
          "level gamma = " + std::to_string(gamma) + " must be below a = " + std::to_string(r.a()));
  std::vector<std::uint64_t> out;
  const std::uint32_t order = r.power(gamma);
  for (std::uint64_t k = 1; k < std::max<std::uint32_t>(order, 2); ++k) {
    if (k % r.t() != 0) out.push_back(k);
  }
  return out;
}

namespace {

// t^-gamma mu, t^-gamma taken mod 2^64.
std::vector<u64> scaled_down(const RingParams& r, std::span<const u64> mu, std::uint32_t gamma) {
  ring::require_degree(r, mu.size(), "powers: message");
  const u64 scale = core::inverse_mod_word<u64>(r.power(gamma));
  std::vector<u64> scaled(mu.begin(), mu.end());
  for (u64& c : scaled)
    c *= scale;
  return scaled;
}

}  // namespace

std::vector<SeededCiphertext> encrypt_powers(Encryptor& encryptor, std::span<const u64> mu,
                                             std::uint32_t gamma, std::uint32_t bits) {
  const RingParams& r = encryptor.params().ring;
  const std::vector<u64> scaled = scaled_down(r, mu, gamma);
  std::vector<u64> conjugate(r.N());
  std::vector<SeededCiphertext> out;
  for (std::uint64_t k : power_elements(r, gamma)) {
    ring::automorphism(r, std::span<const u64>(scaled), k, std::span<u64>(conjugate), TorusArith{});
    out.push_back(encryptor.encrypt_seeded(conjugate, bits));
  }
  return out;
}

SeededCiphertext encrypt_first_power(Encryptor& encryptor, std::span<const u64> mu,
                                     std::uint32_t gamma, std::uint32_t bits) {
  return encryptor.encrypt_seeded(scaled_down(encryptor.params().ring, mu, gamma), bits);
}

PartialExtraction::PartialExtraction(const RingParams& r, std::uint32_t gamma)
    : ring_(r),
      sub_(r.t(), gamma >= 1 ? gamma : 1),
      blocks_(gamma >= 1 && gamma < r.a() ? r.power(r.a() - gamma) : 0) {
  require(gamma >= 1 && gamma < r.a(), ErrorCode::invalid_argument,
          "partial extraction needs 1 <= gamma < a = " + std::to_string(r.a()) + ", got " +
              std::to_string(gamma));
  elements_ = power_elements(r, gamma);
  simd_ = ring::default_simd();
  // Column l of the map of sigma_k(d_j) is (Z^e1 - Z^e2) Z^l, read off a unit vector.
  const std::uint32_t L = lanes();
  std::vector<u64> unit(L), column(L);
  std::vector<std::vector<DualTerm>> terms(std::size_t{L} * L);
  for (std::uint32_t j = 0; j < L; ++j)
    for (std::uint32_t kk = 0; kk < elements_.size(); ++kk) {
      const auto [e1, e2] = dual_exponents(sub_, elements_[kk], j);
      for (std::uint32_t l = 0; l < L; ++l) {
        std::fill(unit.begin(), unit.end(), u64{0});
        std::fill(column.begin(), column.end(), u64{0});
        unit[l] = 1;
        monomial_into(sub_, unit.data(), e1, 1, column.data());
        monomial_into(sub_, unit.data(), e2, ~u64{0}, column.data());
        for (std::uint32_t rr = 0; rr < L; ++rr)
          if (column[rr] != 0) terms[std::size_t{j} * L + rr].push_back({kk, l, column[rr]});
      }
    }
  // Each lane of Z^e x is one lane of x (the exponent that lands on it) minus at most one other
  // (the exponent that folds onto it): elements::monomial_terms.
  const std::uint32_t order = sub_.M();
  twist_terms_.resize(std::size_t{order} * L);
  for (std::uint32_t e = 0; e < order; ++e)
    for (std::uint32_t rr = 0; rr < L; ++rr) {
      const elements::MonomialTerms reads = elements::monomial_terms(rr, e, L, order, sub_.m());
      LaneTerms& lane = twist_terms_[std::size_t{e} * L + rr];
      lane.plus = reads.plus < L ? static_cast<std::int32_t>(reads.plus) : -1;
      lane.minus = reads.minus < L ? static_cast<std::int32_t>(reads.minus) : -1;
    }
  dual_start_.push_back(0);
  for (const auto& list : terms) {
    dual_terms_.insert(dual_terms_.end(), list.begin(), list.end());
    dual_start_.push_back(static_cast<std::uint32_t>(dual_terms_.size()));
  }
}

ModuleLwe PartialExtraction::zero() const {
  ModuleLwe x;
  x.a.assign(ring_.N(), 0);
  x.b.assign(lanes(), 0);
  return x;
}

void PartialExtraction::require_sample(const ModuleLwe& x, const char* what) const {
  if (x.a.size() != ring_.N() || x.b.size() != lanes())
    throw Error(ErrorCode::size_mismatch, std::string(what) + ": a module-LWE sample of rank " +
                                              std::to_string(blocks_) + " over " + sub_.name() +
                                              " expected");
}

// out = Z^e x in R_gamma, 0 <= e < t^gamma.
void PartialExtraction::monomial_times(const u64* x, std::uint32_t e, u64* out) const {
  std::fill(out, out + lanes(), u64{0});
  monomial_into(sub_, x, e, 1, out);
}

// The blocks of one ciphertext, transposed to contiguous lanes: a_p, Z a_p and b_p for every p.
struct PartialExtraction::Blocks {
  std::vector<u64> a, za, b;  // [p * lanes + j]
};

void PartialExtraction::blocks_into(const Ciphertext& ct, u64* a, u64* za, u64* b) const {
  require_ring(ct, ring_, "PartialExtraction");
  const std::uint32_t T = blocks_, L = lanes();
  for (std::uint32_t p = 0; p < T; ++p) {
    for (std::uint32_t j = 0; j < L; ++j) {
      a[p * L + j] = ct.a[p + T * j];
      b[p * L + j] = ct.b[p + T * j];
    }
    monomial_times(a + p * L, 1, za + p * L);
  }
}

PartialExtraction::Blocks PartialExtraction::blocks_of(const Ciphertext& ct) const {
  Blocks out;
  out.a.resize(ring_.N());
  out.za.resize(ring_.N());
  out.b.resize(ring_.N());
  blocks_into(ct, out.a.data(), out.za.data(), out.b.data());
  return out;
}

PartialExtraction::PowerBlocks PartialExtraction::power_blocks(
    std::span<const Ciphertext> powers) const {
  require(powers.size() == elements_.size(), ErrorCode::size_mismatch,
          "PartialExtraction::power_blocks: " + std::to_string(elements_.size()) +
              " powers expected at gamma = " + std::to_string(gamma()) + ", got " +
              std::to_string(powers.size()));
  const std::size_t n = ring_.N();
  PowerBlocks out;
  out.a.resize(powers.size() * n);
  out.za.resize(powers.size() * n);
  out.b.resize(powers.size() * n);
  for (std::size_t kk = 0; kk < powers.size(); ++kk)
    blocks_into(powers[kk], out.a.data() + kk * n, out.za.data() + kk * n, out.b.data() + kk * n);
  return out;
}

std::pair<std::uint32_t, std::uint32_t> PartialExtraction::conjugate_block(std::uint64_t k,
                                                                           std::uint32_t i) const {
  const std::uint32_t T = blocks_, order = sub_.M();
  const std::uint64_t ki = k * i;
  const auto q = static_cast<std::uint32_t>(ki / T % order);
  return {static_cast<std::uint32_t>(ki % T), q == 0 ? 0 : order - q};
}

// Block u of a s = sum_(p + v = u) a_p s_v + Z sum_(p + v = u + T) a_p s_v, then times Z^twist.
ModuleLwe PartialExtraction::sample(const Blocks& blocks, std::uint32_t u,
                                    std::uint32_t twist) const {
  const std::uint32_t T = blocks_, L = lanes();
  ModuleLwe x = zero();
  auto emit = [&](const u64* src, u64* dst) {
    if (twist == 0) {
      std::copy(src, src + L, dst);
    } else {
      monomial_times(src, twist, dst);
    }
  };
  for (std::uint32_t v = 0; v < T; ++v) {
    const u64* src = v <= u ? blocks.a.data() + std::size_t{u - v} * L
                            : blocks.za.data() + std::size_t{u + T - v} * L;
    emit(src, x.a.data() + std::size_t{v} * L);
  }
  emit(blocks.b.data() + std::size_t{u} * L, x.b.data());
  return x;
}

ModuleLwe PartialExtraction::extract(const Ciphertext& ct, std::uint32_t u) const {
  if (u >= blocks_)
    throw Error(ErrorCode::invalid_argument,
                "block " + std::to_string(u) + " of " + std::to_string(blocks_));
  return sample(blocks_of(ct), u, 0);
}

std::vector<ModuleLwe> PartialExtraction::conjugates(std::span<const Ciphertext> powers) const {
  const std::uint32_t T = blocks_, L = lanes();
  require(powers.size() == elements_.size(), ErrorCode::size_mismatch,
          "PartialExtraction::conjugates: " + std::to_string(elements_.size()) +
              " powers expected at gamma = " + std::to_string(gamma()) + ", got " +
              std::to_string(powers.size()));
  std::vector<ModuleLwe> out(std::size_t{T} * L);
  for (std::size_t kk = 0; kk < elements_.size(); ++kk) {
    const Blocks blocks = blocks_of(powers[kk]);
    for (std::uint32_t i = 0; i < T; ++i) {
      const auto [u, twist] = conjugate_block(elements_[kk], i);
      out[std::size_t{i} * L + kk] = sample(blocks, u, twist);
    }
  }
  return out;
}

std::vector<u64> PartialExtraction::lane_plaintexts(std::span<const std::int64_t> w) const {
  const std::uint32_t L = lanes(), order = sub_.M();
  if (w.size() != std::size_t{L} * L)
    throw Error(ErrorCode::size_mismatch, "lane_plaintexts: " + std::to_string(L) + " x " +
                                              std::to_string(L) + " weights expected, got " +
                                              std::to_string(w.size()));
  std::vector<u64> out(std::size_t{L} * elements_.size(), 0);
  for (std::size_t kk = 0; kk < elements_.size(); ++kk) {
    const std::span<u64> p(out.data() + kk * L, L);
    for (std::uint32_t z = 0; z < L; ++z) {
      for (std::uint32_t j = 0; j < L; ++j) {
        const u64 weight = static_cast<u64>(w[std::size_t{z} * L + j]);
        if (weight == 0) continue;
        // Z^z sigma_k(Z^-j - Z^(t^(gamma-1) - j mod t^(gamma-1))), exponents mod t^gamma.
        const auto [plus, minus] = dual_exponents(sub_, elements_[kk], j);
        ring::add_monomial(sub_, p, (z + plus) % order, weight, TorusArith{});
        ring::add_monomial(sub_, p, (z + minus) % order, u64{0} - weight, TorusArith{});
      }
    }
  }
  return out;
}

void PartialExtraction::monomial_accumulate(ModuleLwe& acc, const ModuleLwe& x, std::uint32_t e,
                                            u64 c) const {
  require_sample(acc, "monomial_accumulate accumulator");
  require_sample(x, "monomial_accumulate input");
  require(e < sub_.M(), ErrorCode::invalid_argument, "monomial_accumulate: exponent out of range");
  const std::uint32_t L = lanes();
  for (std::uint32_t v = 0; v < blocks_; ++v)
    monomial_into(sub_, x.a.data() + std::size_t{v} * L, e, c, acc.a.data() + std::size_t{v} * L);
  monomial_into(sub_, x.b.data(), e, c, acc.b.data());
}

void PartialExtraction::monomial_accumulate(std::span<u64> acc, std::span<const u64> x,
                                            std::uint32_t e, u64 c) const {
  require(acc.size() == row_words() && x.size() == row_words(), ErrorCode::size_mismatch,
          "monomial_accumulate: rows of N + lanes words expected");
  require(e < sub_.M(), ErrorCode::invalid_argument, "monomial_accumulate: exponent out of range");
  const std::uint32_t L = lanes();
  for (std::uint32_t v = 0; v <= blocks_; ++v)
    monomial_into(sub_, x.data() + std::size_t{v} * L, e, c, acc.data() + std::size_t{v} * L);
}

ModuleLwe PartialExtraction::from_row(std::span<const u64> row) const {
  require(row.size() == row_words(), ErrorCode::size_mismatch,
          "from_row: a row of N + lanes words expected");
  ModuleLwe x;
  x.a.assign(row.begin(), row.begin() + ring_.N());
  x.b.assign(row.begin() + ring_.N(), row.end());
  return x;
}

void PartialExtraction::clean_sample(std::span<const ModuleLwe> conjugates, std::uint32_t j,
                                     std::span<u64> row) const {
  const std::uint32_t L = lanes();
  require(conjugates.size() == elements_.size() && row.size() == row_words() && j < L,
          ErrorCode::size_mismatch, "clean_sample: one block's conjugates and a row expected");
  std::fill(row.begin(), row.end(), u64{0});
  for (std::size_t kk = 0; kk < elements_.size(); ++kk) {
    const ModuleLwe& x = conjugates[kk];
    require_sample(x, "clean_sample input");
    const auto [e1, e2] = dual_exponents(sub_, elements_[kk], j);
    for (std::uint32_t v = 0; v < blocks_; ++v) {
      monomial_into(sub_, x.a.data() + std::size_t{v} * L, e1, 1, row.data() + std::size_t{v} * L);
      monomial_into(sub_, x.a.data() + std::size_t{v} * L, e2, ~u64{0},
                    row.data() + std::size_t{v} * L);
    }
    monomial_into(sub_, x.b.data(), e1, 1, row.data() + ring_.N());
    monomial_into(sub_, x.b.data(), e2, ~u64{0}, row.data() + ring_.N());
  }
}

std::vector<u64> PartialExtraction::clean_sample_map() const {
  const std::size_t L = lanes();
  std::vector<u64> map(elements_.size() * L * L * L, 0);
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t r = 0; r < L; ++r)
      for (std::uint32_t d = dual_start_[j * L + r]; d < dual_start_[j * L + r + 1]; ++d) {
        const DualTerm& term = dual_terms_[d];
        map[((term.kk * L + j) * L + r) * L + term.l] += term.coefficient;
      }
  return map;
}

void PartialExtraction::clean_samples(std::span<const ModuleLwe> conjugates,
                                      std::span<u64* const> rows, std::vector<u64>& scratch) const {
  const std::uint32_t L = lanes(), T = blocks_, K = static_cast<std::uint32_t>(elements_.size());
  require(conjugates.size() == K && rows.size() == L, ErrorCode::size_mismatch,
          "clean_samples: one block's conjugates and one row per lane expected");
  for (const ModuleLwe& x : conjugates)
    require_sample(x, "clean_samples input");
  // Lane-major: lane l of conjugate kk is T + 1 words (the a blocks, then b) at lane kk L + l.
  const LaneScratch lanes_at = lane_scratch(scratch);
  for (std::uint32_t kk = 0; kk < K; ++kk)
    for (std::uint32_t l = 0; l < L; ++l) {
      u64* dst = lanes_at.lane(std::size_t{kk} * L + l);
      const u64* a = conjugates[kk].a.data() + l;
      for (std::uint32_t v = 0; v < T; ++v)
        dst[v] = a[std::size_t{v} * L];
      dst[T] = conjugates[kk].b[l];
    }
  clean_from_lanes(rows, lanes_at);
}

PartialExtraction::LaneScratch PartialExtraction::lane_scratch(std::vector<u64>& scratch) const {
  const std::size_t L = lanes(), K = elements_.size();
  const std::size_t stride = (std::size_t{blocks_} + 1 + 7) / 8 * 8;
  scratch.resize((K * L + L) * stride + 8);
  const auto at = reinterpret_cast<std::uintptr_t>(scratch.data());
  return {scratch.data() + (64 - at % 64) % 64 / sizeof(u64), stride};
}

void PartialExtraction::times_z(const u64* x, u64* out, std::size_t count) const {
  const std::size_t L = lanes();
  for (std::size_t p = 0; p < count; ++p)
    monomial_times(x + p * L, 1, out + p * L);
}

void PartialExtraction::clean_samples(const PowerBlocks& powers, std::uint32_t i,
                                      std::span<u64* const> rows, std::vector<u64>& scratch) const {
  const std::size_t n = ring_.N(), K = elements_.size();
  require(powers.a.size() == K * n && powers.za.size() == K * n && powers.b.size() == K * n,
          ErrorCode::size_mismatch, "clean_samples: one chunk's power blocks expected");
  clean_samples(PowerBlockView{powers.a.data(), powers.za.data(), powers.b.data()}, i, rows,
                scratch);
}

void PartialExtraction::clean_samples(PowerBlockView powers, std::uint32_t i,
                                      std::span<u64* const> rows, std::vector<u64>& scratch) const {
  const std::uint32_t L = lanes(), T = blocks_, K = static_cast<std::uint32_t>(elements_.size());
  const std::size_t n = ring_.N();
  require(i < T && rows.size() == L, ErrorCode::size_mismatch,
          "clean_samples: a block index and one row per lane expected");
  // conjugates' sample(blocks of power kk, u, twist), written lane-major as clean_samples reads
  // it: word v of lane l is lane l of Z^twist a_(u-v) (v <= u) or of Z^twist Z a_(u+T-v) (v > u),
  // word T of Z^twist b_u, where lane l of Z^twist x is x[plus] - x[minus].
  const LaneScratch lanes_at = lane_scratch(scratch);
  for (std::uint32_t kk = 0; kk < K; ++kk) {
    const auto [u, twist] = conjugate_block(elements_[kk], i);
    const u64* a = powers.a + kk * n + std::size_t{u} * L;          // v = 0
    const u64* za = powers.za + kk * n + (std::size_t{u} + T) * L;  // v = 0
    const u64* b = powers.b + kk * n + std::size_t{u} * L;
    for (std::uint32_t l = 0; l < L; ++l) {
      const LaneTerms terms = twist_terms_[std::size_t{twist} * L + l];
      u64* dst = lanes_at.lane(std::size_t{kk} * L + l);
      // Word v of lane l from the block at base - v L, for v in [first, last).
      const auto lanes = [&](const u64* base, std::size_t first, std::size_t last) {
        if (terms.minus < 0) {
          for (std::size_t v = first; v < last; ++v)
            dst[v] = base[terms.plus - static_cast<std::ptrdiff_t>(v * L)];
        } else if (terms.plus < 0) {
          for (std::size_t v = first; v < last; ++v)
            dst[v] = u64{0} - base[terms.minus - static_cast<std::ptrdiff_t>(v * L)];
        } else {
          for (std::size_t v = first; v < last; ++v) {
            const auto at = static_cast<std::ptrdiff_t>(v * L);
            dst[v] = base[terms.plus - at] - base[terms.minus - at];
          }
        }
      };
      lanes(a, 0, std::size_t{u} + 1);
      lanes(za, std::size_t{u} + 1, T);
      dst[T] = terms.of(b);
    }
  }
  clean_from_lanes(rows, lanes_at);
}

void PartialExtraction::clean_from_lanes(std::span<u64* const> rows,
                                         const LaneScratch& lanes_at) const {
  const std::uint32_t L = lanes(), T = blocks_, K = static_cast<std::uint32_t>(elements_.size());
  const std::size_t len = std::size_t{T} + 1;
  // Output lane rr of a row in lane K L + rr, then written into the row block by block.
  const std::size_t stride = lanes_at.stride;
  u64* out = lanes_at.lane(std::size_t{K} * L);
  std::vector<const u64*> sources;
  std::vector<u64> weights;
  for (std::uint32_t j = 0; j < L; ++j) {
    if (rows[j] == nullptr) continue;
    for (std::uint32_t rr = 0; rr < L; ++rr) {
      sources.clear();
      weights.clear();
      for (std::uint32_t d = dual_start_[j * L + rr]; d < dual_start_[j * L + rr + 1]; ++d) {
        sources.push_back(lanes_at.lane(std::size_t{dual_terms_[d].kk} * L + dual_terms_[d].l));
        weights.push_back(dual_terms_[d].coefficient);
      }
      ring::torus_dot(sources, weights, std::span<u64>(out + rr * stride, len), simd_);
    }
    u64* row = rows[j];
    for (std::uint32_t v = 0; v < T; ++v, row += L)
      for (std::uint32_t rr = 0; rr < L; ++rr)
        row[rr] = out[rr * stride + v];
    for (std::uint32_t rr = 0; rr < L; ++rr)
      row[rr] = out[rr * stride + T];  // row + T L = the b lanes at N
  }
}

void PartialExtraction::multiply_accumulate(ModuleLwe& acc, std::span<const u64> p,
                                            const ModuleLwe& x) const {
  require_sample(acc, "multiply_accumulate accumulator");
  require_sample(x, "multiply_accumulate input");
  ring::require_degree(sub_, p.size(), "multiply_accumulate plaintext");
  const std::uint32_t L = lanes();
  // The matrix of p: column l is p Z^l.
  std::vector<u64> matrix(std::size_t{L} * L);
  std::vector<u64> column(L);
  for (std::uint32_t l = 0; l < L; ++l) {
    monomial_times(p.data(), l, column.data());
    for (std::uint32_t r = 0; r < L; ++r)
      matrix[std::size_t{r} * L + l] = column[r];
  }
  auto apply = [&](const u64* src, u64* dst) {
    for (std::uint32_t r = 0; r < L; ++r) {
      u64 sum = 0;
      const u64* row = matrix.data() + std::size_t{r} * L;
      for (std::uint32_t l = 0; l < L; ++l)
        sum += row[l] * src[l];
      dst[r] += sum;
    }
  };
  for (std::uint32_t v = 0; v < blocks_; ++v)
    apply(x.a.data() + std::size_t{v} * L, acc.a.data() + std::size_t{v} * L);
  apply(x.b.data(), acc.b.data());
}

Ciphertext PartialExtraction::embed(const ModuleLwe& x) const {
  require_sample(x, "PartialExtraction::embed");
  const std::uint32_t T = blocks_, L = lanes();
  Ciphertext ct(ring_);
  std::vector<u64> shifted(L);
  for (std::uint32_t j = 0; j < L; ++j) {
    ct.a[T * j] = x.a[j];
    ct.b[T * j] = x.b[j];
  }
  for (std::uint32_t v = 1; v < T; ++v) {
    monomial_times(x.a.data() + std::size_t{v} * L, sub_.M() - 1, shifted.data());
    for (std::uint32_t j = 0; j < L; ++j)
      ct.a[(T - v) + T * j] = shifted[j];
  }
  return ct;
}

// Block v of sum_z Z^z x_z goes to a_0 (v = 0) or, times Z^-1, to a_(T-v): lane r of a_(T-v) is
// sum_z lane r of Z^(z-1) x_(z,v), read off twist_terms_ for each (z, r) in one pass over v.
template <class Word>
void PartialExtraction::embed_sum(std::span<const Word* const> rows, std::span<u64> out_a,
                                  std::span<u64> out_b) const {
  const std::uint32_t T = blocks_, L = lanes(), order = sub_.M();
  require(rows.size() == L, ErrorCode::size_mismatch,
          "embed_lane_sum: one row per lane expected, got " + std::to_string(rows.size()));
  require(out_a.size() == ring_.N() && out_b.size() == ring_.N(), ErrorCode::size_mismatch,
          "embed_lane_sum output: N words each expected");
  constexpr unsigned kLift = 64 - 8 * sizeof(Word);
  std::fill(out_a.begin(), out_a.end(), u64{0});
  std::fill(out_b.begin(), out_b.end(), u64{0});
  for (std::uint32_t z = 0; z < L; ++z) {
    const Word* x = rows[z];
    if (x == nullptr) continue;
    const std::uint32_t down = (z + order - 1) % order;  // Z^(z-1)
    for (std::uint32_t r = 0; r < L; ++r) {
      const LaneTerms first = twist_terms_[std::size_t{z} * L + r];
      const LaneTerms rest = twist_terms_[std::size_t{down} * L + r];
      u64* a = out_a.data() + std::size_t{T} * r;  // a_u at lane r: a[u]
      a[0] += first.of(x, kLift);
      out_b[std::size_t{T} * r] += first.of(x + std::size_t{T} * L, kLift);
      for (std::uint32_t v = 1; v < T; ++v)
        a[T - v] += rest.of(x + std::size_t{v} * L, kLift);
    }
  }
}

void PartialExtraction::embed_lane_sum(std::span<const u64* const> rows, Ciphertext& ct) const {
  require_ring(ct, ring_, "embed_lane_sum output");
  embed_sum<u64>(rows, ct.a.coeffs(), ct.b.coeffs());
}

void PartialExtraction::embed_lane_sum(std::span<const std::uint32_t* const> rows,
                                       Ciphertext& ct) const {
  require_ring(ct, ring_, "embed_lane_sum output");
  embed_sum<std::uint32_t>(rows, ct.a.coeffs(), ct.b.coeffs());
}

void PartialExtraction::embed_lane_sum(std::span<const u64* const> rows, std::span<u64> a,
                                       std::span<u64> b) const {
  embed_sum<u64>(rows, a, b);
}

void PartialExtraction::embed_lane_sum(std::span<const std::uint32_t* const> rows, std::span<u64> a,
                                       std::span<u64> b) const {
  embed_sum<std::uint32_t>(rows, a, b);
}

}  // namespace safhire::rlwe
