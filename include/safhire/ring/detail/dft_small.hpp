// The length-t DFT at the heart of every radix-t NTT level, written once over a "lanes" type V so
// that the scalar CPU path, the AVX2/AVX-512 paths and the CUDA kernels run the same algorithm.
//
// V provides: `Reg`, `add`, `sub` (wrapping), `min` (unsigned), `mullo` (low word of the
// product), `mulhi` (high word), `set1`. All values below are in [0, q) unless stated.
//
// Algorithm (Rader, with Winograd's minimal cyclic convolutions). For t prime and a generator g of
// (Z/t)^*, with n = t - 1, a_i = x_(g^i) and b_k = s * w^(g^-k):
//     y_0 = s*(x_0 + sum_i a_i),    y_(g^-j) = s*x_0 + c_j,   c = a (*) b (cyclic, length n).
// The convolution is split by the CRT over the integer factors P of X^n - 1:
//     c = sum_P ((X^n - 1)/P) * ((a mod P) * beta_P mod P),   beta_P = b * ((X^n-1)/P)^-1 mod P,
// so all rational CRT constants are folded into the precomputed beta_P and the reconstruction is
// additions only. Factors, (X+1) for every t; (X^2+1) for t = 5; (X^2+X+1), (X^2-X+1) for
// t = 7. Products mod the quadratics use Karatsuba (3 products). Multiplications per DFT:
// 2 (t = 3), 5 (t = 5), 8 (t = 7), against (t-1)^2 for the naive DFT.
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/ring/ntt_view.hpp"

namespace safhire::ring::detail {

// Modular operations on lanes. Ranges as stated; q < 2^62.
template <class V>
struct ModLanes {
  using R = typename V::Reg;
  // a, b in [0, q) -> [0, q)
  SAFHIRE_HD static R add(R a, R b, R q) {
    const R r = V::add(a, b);
    return V::min(r, V::sub(r, q));
  }
  // a, b in [0, q) -> [0, q)
  SAFHIRE_HD static R sub(R a, R b, R q) {
    const R r = V::sub(a, b);
    return V::min(r, V::add(r, q));
  }
  // x any word, w in [0, q), wq = floor(w 2^64 / q) -> [0, 2q)
  SAFHIRE_HD static R mul_shoup_lazy(R x, R w, R wq, R q) {
    return V::sub(V::mullo(x, w), V::mullo(V::mulhi(x, wq), q));
  }
  // x any word -> [0, q)
  SAFHIRE_HD static R mul_shoup(R x, R w, R wq, R q) {
    const R r = mul_shoup_lazy(x, w, wq, q);
    return V::min(r, V::sub(r, q));
  }
  // a any word, b in [0, q), q_inv = q^-1 mod 2^64 -> a b 2^-64 mod q in [0, q)
  SAFHIRE_HD static R mont_mul(R a, R b, R q, R q_inv) {
    const R hi = V::mulhi(a, b);
    const R m = V::mullo(V::mullo(a, b), q_inv);
    return sub(hi, V::mulhi(m, q), q);
  }
};

// The DFT constants broadcast into registers once per transform.
template <class V>
struct DftRegs {
  using R = typename V::Reg;
  R value[kDftCount];
  R quotient[kDftCount];
  SAFHIRE_HD explicit DftRegs(const DftConstants& c) {
    for (int i = 0; i < kDftCount; ++i) {
      value[i] = V::set1(c.value[i]);
      quotient[i] = V::set1(c.quotient[i]);
    }
  }
};

// How the DFT is used: `plain` computes y = DFT(x) with s = 1; `scaled_zero_x0` computes
// y = s * DFT(x) for an input with x_0 = 0 (the last step of the inverse transform, where the
// missing residue g_0 is zero and the global scale t^-a is folded in).
enum class DftMode { plain, scaled_zero_x0 };

// In place: x[0..T) -> y[0..T).
template <int T, DftMode kMode, class V>
SAFHIRE_HD void dft_small(typename V::Reg (&x)[T], const DftRegs<V>& c, typename V::Reg q) {
  static_assert(T == 3 || T == 5 || T == 7, "radix-t kernels exist for t = 3, 5, 7");
  using M = ModLanes<V>;
  using R = typename V::Reg;
  constexpr int n = T - 1;
  auto mul = [&](R v, int k) { return M::mul_shoup(v, c.value[k], c.quotient[k], q); };

  // a_i = x_(g^i), with g = 2, 2, 3 for t = 3, 5, 7.
  R a[n];
  if constexpr (T == 3) {
    a[0] = x[1], a[1] = x[2];
  } else if constexpr (T == 5) {
    a[0] = x[1], a[1] = x[2], a[2] = x[4], a[3] = x[3];
  } else {
    a[0] = x[1], a[1] = x[3], a[2] = x[2], a[3] = x[6], a[4] = x[4], a[5] = x[5];
  }

  // Residues of a modulo X - 1 (the sum) and X + 1 (the alternating sum).
  R sum = M::add(a[0], a[1], q);
  R alt = M::sub(a[0], a[1], q);
  for (int i = 2; i < n; i += 2) {
    sum = M::add(M::add(sum, a[i], q), a[i + 1], q);
    alt = M::add(alt, M::sub(a[i], a[i + 1], q), q);
  }
  const R u = mul(sum, kDftSum);
  const R r_alt = mul(alt, kDftAlt);
  // (X^n - 1)/(X + 1) = -1 + X - X^2 + ...: even outputs get -r_alt, odd ones +r_alt.
  const R even = M::sub(u, r_alt, q);
  const R odd = M::add(u, r_alt, q);

  R cc[n];
  if constexpr (T == 3) {
    cc[0] = even;
    cc[1] = odd;
  } else if constexpr (T == 5) {
    // X^2 + 1: a mod P = (a0 - a2) + (a1 - a3) X; r = p * beta mod P (Karatsuba);
    // (X^4 - 1)/(X^2 + 1) = X^2 - 1 contributes (-r0, -r1, r0, r1).
    const R p0 = M::sub(a[0], a[2], q);
    const R p1 = M::sub(a[1], a[3], q);
    const R m0 = mul(p0, kDftP0);
    const R m1 = mul(p1, kDftP1);
    const R m2 = mul(M::add(p0, p1, q), kDftP01);
    const R r0 = M::sub(m0, m1, q);
    const R r1 = M::sub(M::sub(m2, m0, q), m1, q);
    cc[0] = M::sub(even, r0, q);
    cc[1] = M::sub(odd, r1, q);
    cc[2] = M::add(even, r0, q);
    cc[3] = M::add(odd, r1, q);
  } else {
    // X^2 + X + 1 (X^3 = 1): a mod P = (a0 + a3 - a2 - a5) + (a1 + a4 - a2 - a5) X.
    const R s25 = M::add(a[2], a[5], q);
    const R p0 = M::sub(M::add(a[0], a[3], q), s25, q);
    const R p1 = M::sub(M::add(a[1], a[4], q), s25, q);
    const R m0 = mul(p0, kDftP0);
    const R m1 = mul(p1, kDftP1);
    const R m2 = mul(M::add(p0, p1, q), kDftP01);
    const R r0 = M::sub(m0, m1, q);  // X^2 = -X - 1
    const R r1 = M::sub(M::sub(m2, m0, q), M::add(m1, m1, q), q);
    // X^2 - X + 1 (X^3 = -1): a mod P = (a0 - a3 - a2 + a5) + (a1 - a4 + a2 - a5) X.
    const R d25 = M::sub(a[2], a[5], q);
    const R e0 = M::sub(M::sub(a[0], a[3], q), d25, q);
    const R e1 = M::add(M::sub(a[1], a[4], q), d25, q);
    const R n0 = mul(e0, kDftQ0);
    const R n1 = mul(e1, kDftQ1);
    const R n2 = mul(M::add(e0, e1, q), kDftQ01);
    const R s0 = M::sub(n0, n1, q);  // X^2 = X - 1
    const R s1 = M::sub(n2, n0, q);
    // Reconstruction: (X^6-1)/(X^2+X+1) = X^4 - X^3 + X - 1 and (X^6-1)/(X^2-X+1) =
    // X^4 + X^3 - X - 1, times r and s, give
    //   c += (-r0, r0 - r1, r1, -r0, r0 - r1, r1) + (-s0, -s0 - s1, -s1, s0, s0 + s1, s1).
    const R rd = M::sub(r0, r1, q);
    const R ss = M::add(s0, s1, q);
    cc[0] = M::sub(even, M::add(r0, s0, q), q);
    cc[1] = M::sub(M::add(odd, rd, q), ss, q);
    cc[2] = M::add(even, M::sub(r1, s1, q), q);
    cc[3] = M::add(odd, M::sub(s0, r0, q), q);
    cc[4] = M::add(M::add(even, rd, q), ss, q);
    cc[5] = M::add(odd, M::add(r1, s1, q), q);
  }

  if constexpr (kMode == DftMode::plain) {
    const R x0 = x[0];
    x[0] = M::add(x0, sum, q);
    for (int j = 0; j < n; ++j)
      cc[j] = M::add(x0, cc[j], q);
  } else {
    x[0] = mul(sum, kDftScale);
  }
  // c_j lands at y_(g^-j).
  if constexpr (T == 3) {
    x[1] = cc[0], x[2] = cc[1];
  } else if constexpr (T == 5) {
    x[1] = cc[0], x[3] = cc[1], x[4] = cc[2], x[2] = cc[3];
  } else {
    x[1] = cc[0], x[5] = cc[1], x[4] = cc[2], x[6] = cc[3], x[2] = cc[4], x[3] = cc[5];
  }
}

}  // namespace safhire::ring::detail
