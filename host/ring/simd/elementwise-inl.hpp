// Element-wise kernels: Montgomery products and dot products, torus lifts, Garner's CRT, limb
// combination and centred shifts.
// Part of kernels-inl.hpp: included there, inside the instruction set's namespace, with no
// include guard on purpose.

// The lanes of each word size: 64-bit words (LanesWide, Lanes1) for the modular kernels and the
// linear layer, 32-bit ones (LanesWords, Words1) for the linear layer on 32-bit rows.
template <class Word>
struct TorusLanes;
template <>
struct TorusLanes<u64> {
  using Wide = LanesWide;
  using One = Lanes1;
};
template <>
struct TorusLanes<u32> {
  using Wide = LanesWords;
  using One = Words1;
};

// fn(lanes, i) over [0, len): whole registers, then the tail a word at a time.
template <class Word = u64, class Fn>
void for_each_lane_block(std::size_t len, Fn&& fn) {
  using W = typename TorusLanes<Word>::Wide;
  std::size_t i = 0;
  for (; i + W::kLanes <= len; i += W::kLanes)
    fn(W{}, i);
  for (; i < len; ++i)
    fn(typename TorusLanes<Word>::One{}, i);
}

void pointwise_montgomery(u64 q, u64 q_inv, const u64* a, const u64* b, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    L::store(out + i,
             ModLanes<L>::mont_mul(L::load(a + i), L::load(b + i), L::set1(q), L::set1(q_inv)));
  });
}

void pointwise_montgomery_accumulate(u64 q, u64 q_inv, const u64* a, const u64* b, u64* acc,
                                     std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    const auto product = M::mont_mul(L::load(a + i), L::load(b + i), qv, L::set1(q_inv));
    L::store(acc + i, M::add(L::load(acc + i), product, qv));
  });
}

// Lazy reduction: the 128-bit products of up to four terms are summed (each below q^2 < 2^124)
// and reduced once, by Montgomery's step, which needs the sum below q 2^64 (4 q < 2^64 for
// q < 2^62); so `terms` products cost 4 x 32x32 multiplies each plus one reduction per four.
void pointwise_montgomery_dot(u64 q, u64 q_inv, const u64* const* a, const u64* const* b,
                              std::size_t terms, u64* acc, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    auto total = L::load(acc + i);
    for (std::size_t k0 = 0; k0 < terms; k0 += 4) {
      auto lo = L::zero(), hi = L::zero();
      for (std::size_t k = k0; k < terms && k < k0 + 4; ++k) {
        typename L::Reg p_hi;
        const auto p_lo = L::mul_wide(L::load(a[k] + i), L::load(b[k] + i), p_hi);
        lo = L::add(lo, p_lo);
        hi = L::sub(L::add(hi, p_hi), L::gt(p_lo, lo));  // + the carry (all ones = -1)
      }
      const auto m = L::mullo(lo, L::set1(q_inv));
      total = M::add(total, M::sub(hi, L::mulhi(m, qv), qv), qv);
    }
    L::store(acc + i, total);
  });
}

// v signed: v mod q = (v + 2^64) mod q - (v < 0 ? 2^64 mod q : 0).
void lift_torus(u64 q, u64 word_ratio, u64 two64_mod_q, const u64* in, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto qv = L::set1(q);
    const auto x = L::load(in + i);
    const auto r = M::mul_shoup(x, L::set1(1), L::set1(word_ratio), qv);
    const auto wrap = L::bit_and(L::sign_mask(x), L::set1(two64_mod_q));
    L::store(out + i, M::sub(r, wrap, qv));
  });
}

// Garner's CRT: y = (x2 - x1) q1^-1 mod q2, x = x1 + q1 y, negative when x > Q/2.
void crt_lift(const core::Crt2& crt, const u64* x1p, const u64* x2p, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    using M = ModLanes<L>;
    const auto q1 = L::set1(crt.q1), q2 = L::set1(crt.q2);
    const auto x1 = L::load(x1p + i);
    const auto x2 = L::load(x2p + i);
    const auto x1r = M::mul_shoup(x1, L::set1(1), L::set1(crt.q2_ratio), q2);
    const auto y = M::mul_shoup(M::sub(x2, x1r, q2), L::set1(crt.q1_inv_mod_q2.value),
                                L::set1(crt.q1_inv_mod_q2.quotient), q2);
    const auto half = L::set1(crt.q2_half);
    const auto negative = L::bit_or(
        L::gt(y, half), L::bit_and(L::eq(y, half), L::gt(x1, L::set1(crt.q1_half_up - 1))));
    const auto r = L::add(x1, L::mullo(q1, y));
    L::store(out + i, L::sub(r, L::bit_and(negative, L::set1(crt.q1q2_low))));
  });
}

// A residue v in [0, q) of a centred integer is v - q when v > (q - 1)/2 (q odd).
void limb_combine(u64 q, const u64* lo, const u64* hi, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    const auto qv = L::set1(q), half = L::set1(q / 2);
    const auto lo_c = L::load(lo + i), hi_c = L::load(hi + i);
    const auto lo_s = L::sub(lo_c, L::bit_and(L::gt(lo_c, half), qv));
    const auto hi_s = L::sub(hi_c, L::bit_and(L::gt(hi_c, half), qv));
    L::store(out + i, L::add(lo_s, L::shl32(hi_s)));
  });
}

void centred_shift(u64 q, const u64* in, std::uint32_t shift, u64* out, std::size_t len) {
  for_each_lane_block(len, [&](auto lanes, std::size_t i) {
    using L = decltype(lanes);
    const auto x = L::load(in + i);
    const auto centred = L::sub(x, L::bit_and(L::gt(x, L::set1(q / 2)), L::set1(q)));
    L::store(out + i, L::shl(centred, shift));
  });
}
