// The transforms built from the levels: the radix-t NTT of Z_q[X]/Phi_M and the cyclic
// power-of-two NTT of the zero-padded product.
// Part of kernels-inl.hpp: included there, inside the instruction set's namespace, with no
// include guard on purpose.

// ---- Radix-t NTT of Z_q[X]/Phi_M ---------------------------------------------------------------

TreeShape radix_t_shape(const NttView& p) {
  return {1, p.a, p.column_level, 0, p.t - 1, p.m};
}

// Level 0: the residues of f mod X^m - w_t^j, j = 1..t-1, are a length-t DFT across the blocks
// f_r = f[r m, (r+1) m) with f_(t-1) = 0, output 0 dropped.
template <int T>
void forward_one(const NttView& p, u64* f) {
  const DftRegs<V> c(*p.dft_forward, p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = chunk(m, i);
    R x[T];
    for (int r = 0; r + 1 < T; ++r)
      x[r] = V::load_n(f + r * m + i, len);
    x[T - 1] = V::zero();
    detail::dft_small<T, DftMode::plain, V>(x, c);
    for (int j = 1; j < T; ++j) {
      if (p.a == 1) {
        store_level<true>(f + (j - 1) * m + i, x[j], len, c);
      } else {
        store_level<false>(f + (j - 1) * m + i, x[j], len, c);
      }
    }
  }
  tree_forward<T>(radix_t_shape(p), p.twiddles, c, f, true);
}

// Undo level 0: residues g_1..g_(t-1) (g_0 = 0) -> f_r = s*DFT^-1(g)_r - s*DFT^-1(g)_(t-1).
template <int T>
void inverse_one(const NttView& p, u64* f, InverseScale scale) {
  tree_inverse<T>(radix_t_shape(p), p.twiddles, DftRegs<V>(*p.dft_inverse, p.q), f);
  const DftRegs<V> c(p.dft_inverse_last[static_cast<int>(scale)], p.q);
  const u32 m = p.m;
  for (u32 i = 0; i < m; i += V::kLanes) {
    const u32 len = chunk(m, i);
    R x[T];
    x[0] = V::zero();
    for (int j = 1; j < T; ++j)
      x[j] = V::load_n(f + (j - 1) * m + i, len);
    detail::dft_small<T, DftMode::scaled_zero_x0, V>(x, c);
    for (int r = 0; r + 1 < T; ++r) {
      V::store_n(f + r * m + i, Mod::reduce_once(Mod::sub2(x[r], x[T - 1], c.two_q), c.q), len);
    }
  }
}

void ntt_forward(const NttView& p, u64* data, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + k * p.N;
    switch (p.t) {
      case 3:
        forward_one<3>(p, f);
        break;
      case 5:
        forward_one<5>(p, f);
        break;
      case 7:
        forward_one<7>(p, f);
        break;
      default:
        break;  // NttPlan admits t in {3, 5, 7} only
    }
  }
}

void ntt_inverse(const NttView& p, u64* data, std::size_t count, InverseScale scale) {
  for (std::size_t k = 0; k < count; ++k) {
    u64* f = data + k * p.N;
    switch (p.t) {
      case 3:
        inverse_one<3>(p, f, scale);
        break;
      case 5:
        inverse_one<5>(p, f, scale);
        break;
      case 7:
        inverse_one<7>(p, f, scale);
        break;
      default:
        break;
    }
  }
}

// ---- Cyclic power-of-two NTT for the zero-padded product ----------------------------------------
// The t = 2 tree of X^L - 1: y0 = x0 + c' x1, y1 = x0 - c' x1. The inverse's top level (c' = 1)
// multiplies both outputs by the final scale, which its twiddle table already holds.

TreeShape radix2_shape(const Radix2View& p) {
  return {0, p.log_n, p.column_level, 0, 1, 1U << p.log_n};
}

DftConstants no_constants() {
  return {};
}

void radix2_forward(const Radix2View& p, u64* data, std::size_t count) {
  const DftConstants none = no_constants();
  const DftRegs<V> c(none, p.q);
  for (std::size_t k = 0; k < count; ++k) {
    tree_forward<2>(radix2_shape(p), p.twiddles, c, data + (k << p.log_n), true);
  }
}

void radix2_inverse(const Radix2View& p, u64* data, std::size_t count) {
  const DftConstants none = no_constants();
  const DftRegs<V> c(none, p.q);
  for (std::size_t k = 0; k < count; ++k) {
    tree_inverse<2, true>(radix2_shape(p), p.twiddles, c, data + (k << p.log_n), p.scale,
                          p.scale_quotient);
  }
}
