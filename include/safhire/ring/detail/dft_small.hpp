// The length-t DFT at the heart of every radix-t NTT level, written once over a "lanes" type V so
// that the scalar CPU path, the AVX2/AVX-512 paths and the CUDA kernels run the same algorithm.
//
// V provides: `Reg`, `add`, `sub` (wrapping), `min` (unsigned), `mullo` (low word of the
// product), `mulhi` (high word), `mulhi_approx` (high word or up to 2 less: lanes that emulate
// the 64x64 product skip the lowest partial product), `bit_and`, `shr1`, `set1`.
//
// Algorithm (Rader, with Winograd's minimal cyclic convolutions). For t prime and a generator g of
// (Z/t)^*, with n = t - 1, a_i = x_(g^i) and b_k = s * w^(g^-k):
//     y_0 = s*(x_0 + sum_i a_i),    y_(g^-j) = s*x_0 + c_j,   c = a (*) b (cyclic, length n).
// The convolution is split by the CRT over the integer factors P of X^n - 1:
//     c = sum_P ((X^n - 1)/P) * ((a mod P) * beta_P mod P),   beta_P = b * ((X^n-1)/P)^-1 mod P,
// so all rational CRT constants are folded into the precomputed beta_P and the reconstruction is
// additions only. Factors, (X+1) for every t; (X^2+1) for t = 5; (X^2+X+1), (X^2-X+1) for
// t = 7. Products mod the quadratics use Karatsuba (3 products). Multiplications per DFT:
// 2 (t = 3, one of them a halving), 5 (t = 5), 8 (t = 7), against (t-1)^2 for the naive DFT.
//
// Ranges. q < 2^62, so 4q fits a word. Values travel "lazy" in [0, 2q); a Shoup product with the
// approximate quotient lands in [0, 4q) (the estimate is at most 2 below the true quotient).
#pragma once

#include <cstdint>

#include "safhire/core/hostdevice.hpp"
#include "safhire/ring/ntt_view.hpp"

namespace safhire::ring::detail {

// Modular operations on lanes, with the ranges they take and return.
template <class V>
struct ModLanes {
  using R = typename V::Reg;
  // a in [0, 2m) -> a mod m in [0, m) (m = q or 2q)
  SAFHIRE_HD static R reduce_once(R a, R m) { return V::min(a, V::sub(a, m)); }
  // a, b in [0, q) -> [0, q)
  SAFHIRE_HD static R add(R a, R b, R q) { return reduce_once(V::add(a, b), q); }
  // a, b in [0, q) -> [0, q)
  SAFHIRE_HD static R sub(R a, R b, R q) {
    const R r = V::sub(a, b);
    return V::min(r, V::add(r, q));
  }
  // x any word, w in [0, q), wq = floor(w 2^64 / q) -> x w mod q in [0, 2q) (exact quotient)
  SAFHIRE_HD static R mul_shoup_lazy(R x, R w, R wq, R q) {
    return V::sub(V::mullo(x, w), V::mullo(V::mulhi(x, wq), q));
  }
  // x any word -> [0, q)
  SAFHIRE_HD static R mul_shoup(R x, R w, R wq, R q) {
    return reduce_once(mul_shoup_lazy(x, w, wq, q), q);
  }
  // x any word -> x w mod q in [0, 4q) (approximate quotient)
  SAFHIRE_HD static R mul4(R x, R w, R wq, R q) {
    return V::sub(V::mullo(x, w), V::mullo(V::mulhi_approx(x, wq), q));
  }
  // a, b in [0, 2q) -> a + b mod q in [0, 2q)
  SAFHIRE_HD static R add2(R a, R b, R two_q) { return reduce_once(V::add(a, b), two_q); }
  // a, b in [0, 2q) -> a - b mod q in [0, 2q)
  SAFHIRE_HD static R sub2(R a, R b, R two_q) {
    const R r = V::sub(a, b);
    return V::min(r, V::add(r, two_q));
  }
  // x any word -> x w mod q in [0, 2q)
  SAFHIRE_HD static R mul2(R x, R w, R wq, R q, R two_q) {
    return reduce_once(mul4(x, w, wq, q), two_q);
  }
  // a in [0, 2q) -> a / 2 mod q in [0, 1.5q): (a + (a odd ? q : 0)) / 2, q odd.
  SAFHIRE_HD static R half(R a, R q) {
    const R odd = V::sub(V::zero(), V::bit_and(a, V::set1(1)));  // all ones when a is odd
    return V::shr1(V::add(a, V::bit_and(odd, q)));
  }
  // a any word, b in [0, q), q_inv = q^-1 mod 2^64 -> a b 2^-64 mod q in [0, q)
  SAFHIRE_HD static R mont_mul(R a, R b, R q, R q_inv) {
    const R hi = V::mulhi(a, b);
    const R m = V::mullo(V::mullo(a, b), q_inv);
    return sub(hi, V::mulhi(m, q), q);
  }
};

// The DFT constants broadcast into registers once per level.
template <class V>
struct DftRegs {
  using R = typename V::Reg;
  R value[kDftCount];
  R quotient[kDftCount];
  R q, two_q;
  SAFHIRE_HD DftRegs(const DftConstants& c, std::uint64_t modulus) {
    for (int i = 0; i < kDftCount; ++i) {
      value[i] = V::set1(c.value[i]);
      quotient[i] = V::set1(c.quotient[i]);
    }
    q = V::set1(modulus);
    two_q = V::set1(2 * modulus);
  }
};

// How the DFT is used: `plain` computes y = DFT(x) with s = 1; `scaled_zero_x0` computes
// y = s * DFT(x) for an input with x_0 = 0 (the last step of the inverse transform, where the
// missing residue g_0 is zero and the global scale t^-a is folded in).
enum class DftMode { plain, scaled_zero_x0 };

// In place: x[0..T) -> y[0..T). Takes x_0 in [0, 2q) (ignored, taken as 0, when scaled) and
// x_1..x_(t-1) in [0, 4q) (raw lazy products); returns every y_l in [0, 2q).
template <int T, DftMode kMode, class V>
SAFHIRE_HD void dft_small(typename V::Reg (&x)[T], const DftRegs<V>& c) {
  static_assert(T == 2 || T == 3 || T == 5 || T == 7, "radix-t kernels exist for t = 2, 3, 5, 7");
  using M = ModLanes<V>;
  using R = typename V::Reg;
  constexpr int n = T - 1;
  const R q = c.q, q2 = c.two_q;
  if constexpr (T == 2) {
    // The radix-2 butterfly of the power-of-two transforms: y0 = x0 + x1, y1 = x0 - x1.
    const R x1 = M::reduce_once(x[1], q2);
    const R x0 = x[0];
    x[0] = M::add2(x0, x1, q2);
    x[1] = M::sub2(x0, x1, q2);
    return;
  } else {
    auto mul = [&](R v, int k) { return M::mul2(v, c.value[k], c.quotient[k], q, q2); };

    // a_i = x_(g^i), with g = 2, 2, 3 for t = 3, 5, 7, brought into [0, 2q).
    R a[n];
    if constexpr (T == 3) {
      a[0] = x[1], a[1] = x[2];
    } else if constexpr (T == 5) {
      a[0] = x[1], a[1] = x[2], a[2] = x[4], a[3] = x[3];
    } else {
      a[0] = x[1], a[1] = x[3], a[2] = x[2], a[3] = x[6], a[4] = x[4], a[5] = x[5];
    }
    for (int i = 0; i < n; ++i)
      a[i] = M::reduce_once(a[i], q2);

    if constexpr (T == 3 && kMode == DftMode::plain) {
      // For s = 1 the (X - 1) constant is (w + w^2)/2 = -1/2: a halving, not a product.
      //   y0 = x0 + S,  y1 = x0 - S/2 - r,  y2 = x0 - S/2 + r,  r = (w - w^2)/2 (a0 - a1).
      const R x0 = x[0];
      const R sum = M::add2(a[0], a[1], q2);
      const R r = mul(V::add(V::sub(a[0], a[1]), q2), kDftAlt);  // a0 - a1 + 2q in (0, 4q)
      const R v = M::sub2(x0, M::half(sum, q), q2);              // half(sum) in [0, 1.5q)
      x[0] = M::add2(x0, sum, q2);
      x[1] = M::sub2(v, r, q2);
      x[2] = M::add2(v, r, q2);
      return;
    }

    // Residues of a modulo X - 1 (the sum) and X + 1 (the alternating sum).
    R sum = M::add2(a[0], a[1], q2);
    R alt = M::sub2(a[0], a[1], q2);
    for (int i = 2; i < n; i += 2) {
      sum = M::add2(M::add2(sum, a[i], q2), a[i + 1], q2);
      alt = M::add2(alt, M::sub2(a[i], a[i + 1], q2), q2);
    }
    const R u = mul(sum, kDftSum);
    const R r_alt = mul(alt, kDftAlt);
    // (X^n - 1)/(X + 1) = -1 + X - X^2 + ...: even outputs get -r_alt, odd ones +r_alt.
    // With s = 1 every output also gets x_0: add it here once, not to each output.
    const R base = kMode == DftMode::plain ? M::add2(x[0], u, q2) : u;
    const R even = M::sub2(base, r_alt, q2);
    const R odd = M::add2(base, r_alt, q2);

    R cc[n];
    if constexpr (T == 3) {
      cc[0] = even;
      cc[1] = odd;
    } else if constexpr (T == 5) {
      // X^2 + 1: a mod P = (a0 - a2) + (a1 - a3) X; r = p * beta mod P (Karatsuba; the sum
      // p0 + p1 < 4q goes into the product unreduced); (X^4 - 1)/(X^2 + 1) = X^2 - 1 contributes
      // (-r0, -r1, r0, r1).
      const R p0 = M::sub2(a[0], a[2], q2);
      const R p1 = M::sub2(a[1], a[3], q2);
      const R m0 = mul(p0, kDftP0);
      const R m1 = mul(p1, kDftP1);
      const R m2 = mul(V::add(p0, p1), kDftP01);
      const R r0 = M::sub2(m0, m1, q2);
      const R r1 = M::sub2(M::sub2(m2, m0, q2), m1, q2);
      cc[0] = M::sub2(even, r0, q2);
      cc[1] = M::sub2(odd, r1, q2);
      cc[2] = M::add2(even, r0, q2);
      cc[3] = M::add2(odd, r1, q2);
    } else {
      // X^2 + X + 1 (X^3 = 1): a mod P = (a0 + a3 - a2 - a5) + (a1 + a4 - a2 - a5) X.
      const R s25 = M::add2(a[2], a[5], q2);
      const R p0 = M::sub2(M::add2(a[0], a[3], q2), s25, q2);
      const R p1 = M::sub2(M::add2(a[1], a[4], q2), s25, q2);
      const R m0 = mul(p0, kDftP0);
      const R m1 = mul(p1, kDftP1);
      const R m2 = mul(V::add(p0, p1), kDftP01);
      const R r0 = M::sub2(m0, m1, q2);  // X^2 = -X - 1
      const R r1 = M::sub2(M::sub2(m2, m0, q2), M::add2(m1, m1, q2), q2);
      // X^2 - X + 1 (X^3 = -1): a mod P = (a0 - a3 - a2 + a5) + (a1 - a4 + a2 - a5) X.
      const R d25 = M::sub2(a[2], a[5], q2);
      const R e0 = M::sub2(M::sub2(a[0], a[3], q2), d25, q2);
      const R e1 = M::add2(M::sub2(a[1], a[4], q2), d25, q2);
      const R n0 = mul(e0, kDftQ0);
      const R n1 = mul(e1, kDftQ1);
      const R n2 = mul(V::add(e0, e1), kDftQ01);
      const R s0 = M::sub2(n0, n1, q2);  // X^2 = X - 1
      const R s1 = M::sub2(n2, n0, q2);
      // Reconstruction: (X^6-1)/(X^2+X+1) = X^4 - X^3 + X - 1 and (X^6-1)/(X^2-X+1) =
      // X^4 + X^3 - X - 1, times r and s, give
      //   c += (-r0, r0 - r1, r1, -r0, r0 - r1, r1) + (-s0, -s0 - s1, -s1, s0, s0 + s1, s1).
      const R rd = M::sub2(r0, r1, q2);
      const R ss = M::add2(s0, s1, q2);
      cc[0] = M::sub2(even, M::add2(r0, s0, q2), q2);
      cc[1] = M::sub2(M::add2(odd, rd, q2), ss, q2);
      cc[2] = M::add2(even, M::sub2(r1, s1, q2), q2);
      cc[3] = M::add2(odd, M::sub2(s0, r0, q2), q2);
      cc[4] = M::add2(M::add2(even, rd, q2), ss, q2);
      cc[5] = M::add2(odd, M::add2(r1, s1, q2), q2);
    }

    if constexpr (kMode == DftMode::plain) {
      x[0] = M::add2(x[0], sum, q2);
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
  }  // T != 2
}

}  // namespace safhire::ring::detail
