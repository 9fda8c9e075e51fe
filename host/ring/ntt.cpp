#include "safhire/ring/ntt.hpp"

#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "simd/dispatch.hpp"
#include "twiddle_tree.hpp"

namespace safhire::ring {

using core::add_mod;
using core::inv_mod;
using core::mul_mod;
using core::pow_mod;
using core::sub_mod;

namespace {

void set_constant(DftConstants& c, int index, u64 value, u64 q) {
  c.value[index] = value;
  c.quotient[index] = core::shoup_quotient(value, q);
}

// (p0 + p1 X)(b0 + b1 X) modulo X^2 + X + 1 (sign = +1) or X^2 - X + 1 (sign = -1).
void mul_mod_quadratic(u64 p0, u64 p1, u64 b0, u64 b1, int sign, u64 q, u64& r0, u64& r1) {
  const u64 p1b1 = mul_mod(p1, b1, q);
  r0 = sub_mod(mul_mod(p0, b0, q), p1b1, q);
  const u64 cross = add_mod(mul_mod(p0, b1, q), mul_mod(p1, b0, q), q);
  r1 = sign > 0 ? sub_mod(cross, p1b1, q) : add_mod(cross, p1b1, q);
}

}  // namespace

// See detail/dft_small.hpp for the algorithm these constants feed.
DftConstants make_dft_constants(std::uint32_t t, u64 w, u64 s, u64 q) {
  require(t == 3 || t == 5 || t == 7, ErrorCode::unsupported,
          "radix-t kernels exist for t = 3, 5, 7, got t = " + std::to_string(t));
  const u64 n = t - 1;
  const u64 g = t == 7 ? 3 : 2;
  // b_k = s w^(g^-k mod t), g^-k = g^((n - k) mod n).
  std::vector<u64> b(n);
  for (u64 k = 0; k < n; ++k) {
    const u64 exponent = pow_mod<u64>(g, (n - k) % n, t);
    b[k] = mul_mod(s, pow_mod(w, exponent, q), q);
  }
  u64 sum = 0, alt = 0;
  for (u64 k = 0; k < n; ++k) {
    sum = add_mod(sum, b[k], q);
    alt = k % 2 == 0 ? add_mod(alt, b[k], q) : sub_mod(alt, b[k], q);
  }
  DftConstants c;
  set_constant(c, kDftScale, s, q);
  // X - 1: ((X^n-1)/(X-1))(1) = n.  X + 1: ((X^n-1)/(X+1))(-1) = -n.
  set_constant(c, kDftSum, mul_mod(sum, inv_mod(n % q, q), q), q);
  set_constant(c, kDftAlt, mul_mod(alt, inv_mod(q - n % q, q), q), q);
  const u64 inv2 = inv_mod<u64>(2, q), inv6 = inv_mod<u64>(6 % q, q);
  if (t == 5) {
    // X^2 + 1: b mod P = (b0 - b2) + (b1 - b3) X; (X^4-1)/(X^2+1) = X^2 - 1 = -2 mod P.
    const u64 h = q - inv2;  // (-2)^-1
    const u64 p0 = mul_mod(sub_mod(b[0], b[2], q), h, q);
    const u64 p1 = mul_mod(sub_mod(b[1], b[3], q), h, q);
    set_constant(c, kDftP0, p0, q);
    set_constant(c, kDftP1, p1, q);
    set_constant(c, kDftP01, add_mod(p0, p1, q), q);
  } else if (t == 7) {
    // X^2 + X + 1: b mod P = (b0 + b3 - b2 - b5) + (b1 + b4 - b2 - b5) X, and
    // ((X^6-1)/P)^-1 = 2X - 2 inverted = -(X + 2)/6.
    const u64 s25 = add_mod(b[2], b[5], q);
    u64 r0 = 0, r1 = 0;
    mul_mod_quadratic(sub_mod(add_mod(b[0], b[3], q), s25, q),
                      sub_mod(add_mod(b[1], b[4], q), s25, q), q - mul_mod<u64>(2, inv6, q),
                      q - inv6, +1, q, r0, r1);
    set_constant(c, kDftP0, r0, q);
    set_constant(c, kDftP1, r1, q);
    set_constant(c, kDftP01, add_mod(r0, r1, q), q);
    // X^2 - X + 1: b mod P = (b0 - b3 - b2 + b5) + (b1 - b4 + b2 - b5) X, and
    // ((X^6-1)/P)^-1 = (-2X - 2)^-1 = (X - 2)/6.
    const u64 d25 = sub_mod(b[2], b[5], q);
    mul_mod_quadratic(sub_mod(sub_mod(b[0], b[3], q), d25, q),
                      add_mod(sub_mod(b[1], b[4], q), d25, q), q - mul_mod<u64>(2, inv6, q), inv6,
                      -1, q, r0, r1);
    set_constant(c, kDftQ0, r0, q);
    set_constant(c, kDftQ1, r1, q);
    set_constant(c, kDftQ01, add_mod(r0, r1, q), q);
  }
  return c;
}

NttPlan NttPlan::for_prime(const RingParams& ring, u64 q, SimdIsa isa) {
  return NttPlan(ring, q, core::root_of_unity(q, ring.M()), isa);
}

NttPlan::NttPlan(const RingParams& ring, u64 q, u64 omega, SimdIsa isa)
    : ring_(ring), isa_(isa), kernels_(&simd::checked_kernels(isa)) {
  const std::uint32_t t = ring.t(), a = ring.a(), m = ring.m(), M = ring.M();
  require(t == 3 || t == 5 || t == 7, ErrorCode::unsupported,
          "the radix-t NTT supports t = 3, 5, 7; ring " + ring.name());
  require(q > 2 && q < core::kMaxNttModulus && core::is_prime(q) && (q - 1) % M == 0,
          ErrorCode::invalid_parameters,
          "NTT modulus must be a prime q = 1 mod " + std::to_string(M) + " below 2^62, got " +
              std::to_string(q));
  require(omega < q && core::has_order(omega, M, q), ErrorCode::invalid_parameters,
          "omega = " + std::to_string(omega) + " is not a primitive " + std::to_string(M) +
              "-th root of unity mod " + std::to_string(q));

  NttTables& tb = tables_;
  tb.q = q;
  tb.omega = omega;
  tb.t = t;
  tb.a = a;
  tb.m = m;
  tb.N = ring.N();
  tb.montgomery_q_inv = core::inverse_mod_word(q);
  tb.word_ratio = core::shoup_quotient<u64>(1, q);
  tb.two64_mod_q = static_cast<u64>((static_cast<core::u128>(1) << 64) % q);

  const u64 w_t = pow_mod(omega, m, q);
  const u64 w_t_inv = inv_mod(w_t, q);
  const u64 scale = inv_mod(pow_mod<u64>(t, a, q), q);  // t^-a
  tb.dft_forward = make_dft_constants(t, w_t, 1, q);
  tb.dft_inverse = make_dft_constants(t, w_t_inv, 1, q);
  tb.dft_inverse_last[0] = make_dft_constants(t, w_t_inv, scale, q);
  tb.dft_inverse_last[1] = make_dft_constants(t, w_t_inv, mul_mod(scale, tb.two64_mod_q, q), q);

  // The factorisation tree of Phi_M: level 0 leaves blocks j = 1..t-1 modulo
  // X^m - w_t^j (e = j known mod t), each of m words; levels 1..a-1 split them t ways.
  std::vector<u64> level0_exponents;
  for (u64 j = 1; j < t; ++j)
    level0_exponents.push_back(j);
  TwiddleTree tree = build_twiddle_tree(q, omega, M, t, level0_exponents, t, m, 1, a);
  tb.twiddles = std::move(tree.tables);
  // Slot order (ntt_view.hpp): natural slot b*n + k of the B blocks entering the column level is
  // output slot k*B + b.
  const std::vector<u64>& leaves = tree.leaf_exponents;
  const std::uint32_t B = a > 1 ? tb.twiddles.columns : 1;
  const std::uint32_t n = ring.N() / B;
  tb.slot_exponent.resize(leaves.size());
  for (std::uint32_t b = 0; b < B; ++b) {
    for (std::uint32_t k = 0; k < n; ++k) {
      tb.slot_exponent[k * B + b] = static_cast<std::uint32_t>(leaves[b * n + k]);
    }
  }
  slot_of_exponent_.assign(M, ~std::uint32_t{0});
  for (std::size_t k = 0; k < tb.slot_exponent.size(); ++k) {
    slot_of_exponent_[tb.slot_exponent[k]] = static_cast<std::uint32_t>(k);
  }
}

std::uint32_t NttPlan::slot_of_exponent(std::uint32_t e) const {
  const std::uint32_t slot = e < ring_.M() ? slot_of_exponent_[e] : ~std::uint32_t{0};
  if (slot == ~std::uint32_t{0})
    throw Error(ErrorCode::invalid_argument, "exponent " + std::to_string(e) +
                                                 " is not a unit mod " + std::to_string(ring_.M()));
  return slot;
}

std::vector<std::uint32_t> NttPlan::automorphism_permutation(std::uint64_t k) const {
  require(
      k % ring_.t() != 0, ErrorCode::invalid_argument,
      "sigma_k needs k coprime to M = " + std::to_string(ring_.M()) + ", got " + std::to_string(k));
  const u64 kk = k % ring_.M();
  std::vector<std::uint32_t> perm(ring_.N());
  for (std::uint32_t s = 0; s < ring_.N(); ++s) {
    perm[s] = slot_of_exponent_[kk * tables_.slot_exponent[s] % ring_.M()];
  }
  return perm;
}

void NttPlan::check_batch(std::span<const u64> polys, const char* what) const {
  if (polys.size() % ring_.N() != 0)
    throw Error(ErrorCode::size_mismatch,
                std::string(what) + ": expected a multiple of N = " + std::to_string(ring_.N()) +
                    " words, got " + std::to_string(polys.size()));
#if SAFHIRE_DEBUG_CHECKS
  for (u64 x : polys)
    SAFHIRE_DEBUG_ASSERT(x < tables_.q, std::string(what) + ": word >= q");
#endif
}

void NttPlan::forward(std::span<u64> polys) const {
  check_batch(polys, "NttPlan::forward");
  kernels_->ntt_forward(tables_.view(), polys.data(), polys.size() / ring_.N());
}

void NttPlan::inverse(std::span<u64> polys, InverseScale scale) const {
  check_batch(polys, "NttPlan::inverse");
  kernels_->ntt_inverse(tables_.view(), polys.data(), polys.size() / ring_.N(), scale);
}

void NttPlan::forward(ModBatch& batch) const {
  require(batch.ring() == ring_ && batch.domain().q == tables_.q, ErrorCode::size_mismatch,
          "NttPlan::forward: batch of another ring or modulus");
  forward(batch.words());
}

void NttPlan::inverse(ModBatch& batch, InverseScale scale) const {
  require(batch.ring() == ring_ && batch.domain().q == tables_.q, ErrorCode::size_mismatch,
          "NttPlan::inverse: batch of another ring or modulus");
  inverse(batch.words(), scale);
}

void apply_permutation(std::span<const u64> in, std::span<const std::uint32_t> perm,
                       std::span<u64> out) {
  require(in.size() == perm.size() && out.size() == perm.size(), ErrorCode::size_mismatch,
          "apply_permutation: input, permutation and output sizes differ");
  for (std::size_t s = 0; s < perm.size(); ++s)
    out[s] = in[perm[s]];
}

}  // namespace safhire::ring
