// The RNS layer against GMP: base conversion (both variants), ModUp, ModDown, rescale and the
// CRT reconstruction of decoding, on every coefficient of random polynomials.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "ckks_fixture.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::ckks;
using namespace safhire::ckks::testing;
using safhire::ErrorCode;
using safhire::testing::code_of;
using u64 = std::uint64_t;

RnsPoly random_poly(const CkksContext& context, std::vector<ModulusIndex> moduli, bool ntt,
                    std::uint64_t seed) {
  auto rng = safhire::core::SeededRandom::from_counter(seed);
  RnsPoly p(context.degree(), std::move(moduli), ntt);
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    for (auto& x : p.limb(k))
      x = rng.word() % context.prime(p.moduli[k]);
  }
  return p;
}

// The seeded keys' sampler: residues below q, uniform (the share above 2^39 and the mean, for a
// modulus whose rejection rate is 1/4), chunks independent of the length asked for, streams
// independent of each other.
TEST(CkksRns, StreamSamplerIsUniformBelowQ) {
  safhire::core::AesCtr::Key seed{};
  seed[0] = 5;
  const safhire::core::AesCtr prf(seed);
  const u64 q = 3 * (u64{1} << 38) + 1;  // masked to 40 bits, 3/4 of the candidates kept
  const std::size_t n = 64 * 512 + 100;
  std::vector<u64> x(n);
  uniform_from_stream(prf, 7, q, x.data(), n);
  double mean = 0, high = 0;
  for (u64 v : x) {
    ASSERT_LT(v, q);
    mean += static_cast<double>(v) / static_cast<double>(n);
    high += v >= (u64{1} << 39) ? 1.0 / static_cast<double>(n) : 0.0;
  }
  const double nn = static_cast<double>(n), qq = static_cast<double>(q);
  EXPECT_NEAR(mean, qq / 2, 5 * qq / std::sqrt(12 * nn));
  EXPECT_NEAR(high, 1.0 / 3, 5 * std::sqrt(2.0 / 9 / nn));
  std::vector<u64> prefix(700), other(512);
  uniform_from_stream(prf, 7, q, prefix.data(), prefix.size());
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), x.begin()));
  uniform_from_stream(prf, 8, q, other.data(), other.size());
  EXPECT_FALSE(std::equal(other.begin(), other.end(), x.begin()));
  // A prime just below 2^60 (almost no rejections) and one just above a power of two.
  for (u64 p : {safhire::core::primes_below(60, 1U << 17, 1)[0], (u64{1} << 40) + 1}) {
    std::vector<u64> y(1000);
    uniform_from_stream(prf, 1, p, y.data(), y.size());
    EXPECT_LT(*std::max_element(y.begin(), y.end()), p);
    EXPECT_GT(*std::max_element(y.begin(), y.end()), p / 2);
  }
}

// Residues of signed words against the C++ remainder (made non-negative), on every instruction
// set: the extremes of int64, multiples of q and their neighbours, and random words of every
// size, for a small prime (the vector kernel's lower bound), CKKS-sized ones and one near 2^62;
// lengths that leave a scalar tail. Out-of-range moduli and mismatched sizes are refused.
TEST(CkksRns, SignedResiduesAreTheRemainders) {
  using safhire::ring::SimdIsa;
  std::mt19937_64 mt(11);
  for (u64 q : {u64{12289}, u64{16411}, safhire::core::primes_below(30, 1U << 13, 1)[0],
                safhire::core::primes_below(50, 1U << 17, 1)[0],
                safhire::core::primes_below(61, 1U << 17, 1)[0], (u64{1} << 62) - 57}) {
    const auto sq = static_cast<std::int64_t>(q);
    std::vector<std::int64_t> c{INT64_MIN, INT64_MIN + 1, INT64_MAX, 0,      1,      -1,
                                sq,        -sq,           sq - 1,    1 - sq, sq + 1, -sq - 1};
    // Multiples k q that fit in 64 bits: small, middling (2^20 or as many as fit) and the largest.
    const std::int64_t most = INT64_MAX / sq;
    for (std::int64_t k :
         {std::min<std::int64_t>(2, most), std::min<std::int64_t>(1 << 20, most), most}) {
      for (std::int64_t d : {-1, 0, 1}) {
        c.push_back(k * sq + d);
        c.push_back(-k * sq + d);
      }
    }
    while (c.size() < 1003) {  // 1003 = 125 * 8 + 3
      const int bits = static_cast<int>(mt() % 64);
      c.push_back(static_cast<std::int64_t>(mt() >> bits));
    }
    std::vector<u64> want(c.size());
    for (std::size_t t = 0; t < c.size(); ++t) {
      const std::int64_t r = c[t] % sq;  // C++: the sign of c[t]
      want[t] = r < 0 ? static_cast<u64>(r + sq) : static_cast<u64>(r);
    }
    for (SimdIsa isa : {SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512}) {
      if (!safhire::ring::simd_available(isa)) continue;
      std::vector<u64> got(c.size(), ~u64{0});
      signed_residues(c, q, got, isa);
      EXPECT_EQ(got, want) << "q = " << q << ", isa " << safhire::ring::to_string(isa);
    }
  }
  std::vector<std::int64_t> c(8, -5);
  std::vector<u64> out(8), short_out(7);
  EXPECT_EQ(code_of([&] { signed_residues(c, u64{1} << 62, out); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { signed_residues(c, 1, out); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { signed_residues(c, 12289, short_out); }), ErrorCode::size_mismatch);
}

TEST(CkksRns, ApproximateConversionAddsASmallMultipleOfQ) {
  auto& f = fixture("n14-l7");
  const auto from = f.context.q_moduli(3);  // 4 primes
  const std::vector<ModulusIndex> to{4, 5, 8, 9};
  const BaseConverter conv(f.context, from, to);
  const RnsPoly in = random_poly(f.context, from, false, 1);
  RnsPoly out(f.context.degree(), to, false);
  f.ops->convert(conv, in, out, Conversion::approximate);
  Mpz x, Q, lifted, u;
  product(f.context, from, Q.v);
  for (std::uint32_t t = 0; t < f.context.degree(); t += 7) {
    reconstruct(f.context, in, t, x.v);
    // out on the first target prime fixes u; every target prime must agree with x + u Q.
    bool found = false;
    for (unsigned long k = 0; k < from.size() && !found; ++k) {
      mpz_mul_ui(lifted.v, Q.v, k);
      mpz_add(lifted.v, lifted.v, x.v);
      bool all = true;
      for (std::size_t j = 0; j < to.size(); ++j)
        all = all && mod_u64(lifted.v, f.context.prime(to[j])) == out.limb(j)[t];
      found = all;
    }
    ASSERT_TRUE(found) << "coefficient " << t << " is not x + u Q with 0 <= u < " << from.size();
  }
}

TEST(CkksRns, ExactConversionGivesTheCentredRepresentative) {
  auto& f = fixture("n14-l7");
  for (std::uint32_t count : {1U, 3U, 6U}) {
    const auto from = f.context.q_moduli(count - 1);
    std::vector<ModulusIndex> to{7, 8, 9};
    const BaseConverter conv(f.context, from, to);
    const RnsPoly in = random_poly(f.context, from, false, 10 + count);
    RnsPoly out(f.context.degree(), to, false);
    f.ops->convert(conv, in, out, Conversion::exact);
    Mpz x, Q, half;
    product(f.context, from, Q.v);
    mpz_fdiv_q_2exp(half.v, Q.v, 1);
    for (std::uint32_t t = 0; t < f.context.degree(); t += 5) {
      reconstruct(f.context, in, t, x.v);
      if (mpz_cmp(x.v, half.v) > 0) mpz_sub(x.v, x.v, Q.v);  // centred
      for (std::size_t j = 0; j < to.size(); ++j)
        ASSERT_EQ(out.limb(j)[t], mod_u64(x.v, f.context.prime(to[j])))
            << count << " primes, coefficient " << t;
    }
  }
}

// Every instruction set's conversion kernel against GMP on 61-bit primes: wide sums (up to the
// vector kernel's 60 terms and past it, where it falls back to the scalar loop), inputs at the
// extremes 0 and q - 1.
// Sources of 61 bits (the AVX-512 F kernel) and of 49 (its IFMA variant where the processor has
// IFMA), each into targets of 61 and 49 bits (constants above and below 2^52).
class CkksConversionKernels : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(SourceBits, CkksConversionKernels, ::testing::Values(61, 49));

TEST_P(CkksConversionKernels, AgreeWithGmpOnEveryInstructionSet) {
  CkksParams params;
  params.name = "wide";
  params.log_n = 10;
  params.q_bits.assign(62, GetParam());
  params.p_bits = {61, 49, 61};
  const CkksContext context(params, /*allow_insecure=*/true);
  const std::uint32_t n = context.degree();
  struct Case {
    std::uint32_t from, to;
  };
  for (const Case c : {Case{1, 5}, Case{20, 20}, Case{59, 3}, Case{62, 2}}) {
    std::vector<ModulusIndex> from, to;
    for (ModulusIndex i = 0; i < c.from; ++i)
      from.push_back(i);
    for (ModulusIndex i = 0; i < c.to; ++i)
      to.push_back(static_cast<ModulusIndex>(context.primes().size()) - 1 - i);
    RnsPoly in = random_poly(context, from, false, 40 + c.from);
    for (std::size_t k = 0; k < in.limbs(); ++k) {
      for (std::uint32_t t = 0; t < 16; ++t)
        in.limb(k)[t] = t < 8 ? context.prime(from[k]) - 1 : 0;
    }
    Mpz x, Q, half;
    product(context, from, Q.v);
    mpz_fdiv_q_2exp(half.v, Q.v, 1);
    for (const auto isa : safhire::ring::available_simd()) {
      const BaseConverter conv(context, from, to, isa);
      const auto ops = make_cpu_rns_ops(context, 1);
      for (const Conversion variant : {Conversion::approximate, Conversion::exact}) {
        RnsPoly out(n, to, false);
        ops->convert(conv, in, out, variant);
        const bool exact = variant == Conversion::exact;
        for (std::uint32_t t = 0; t < n; t += (t < 16 ? 1 : 13)) {
          reconstruct(context, in, t, x.v);
          if (exact && mpz_cmp(x.v, half.v) > 0) mpz_sub(x.v, x.v, Q.v);
          for (std::size_t j = 0; j < to.size(); ++j) {
            const u64 p = context.prime(to[j]);
            if (exact) {
              ASSERT_EQ(out.limb(j)[t], mod_u64(x.v, p))
                  << to_string(isa) << " " << c.from << " primes, coefficient " << t;
            } else {
              // The approximate sum is x + u Q, 0 <= u < from: (out - x) / Q mod p is that u.
              bool found = false;
              Mpz lifted;
              for (unsigned long u = 0; u < c.from && !found; ++u) {
                mpz_mul_ui(lifted.v, Q.v, u);
                mpz_add(lifted.v, lifted.v, x.v);
                found = mod_u64(lifted.v, p) == out.limb(j)[t];
              }
              ASSERT_TRUE(found) << to_string(isa) << " approximate, coefficient " << t;
            }
          }
        }
      }
    }
  }
}

TEST(CkksRns, ModDownIsRoundedDivisionByP) {
  auto& f = fixture("n14-l7");
  const std::uint32_t level = 5;
  const auto moduli = f.context.qp_moduli(level);
  RnsPoly x = random_poly(f.context, moduli, false, 20);
  const RnsPoly x_coeffs = x;
  f.ops->forward(x);
  RnsPoly r = f.evaluator.mod_down(x, level);
  f.ops->inverse(r);
  Mpz X, P, half, xp, expect;
  product(f.context, f.context.p_moduli(), P.v);
  mpz_fdiv_q_2exp(half.v, P.v, 1);
  for (std::uint32_t t = 0; t < f.context.degree(); t += 11) {
    reconstruct(f.context, x_coeffs, t, X.v);
    mpz_mod(xp.v, X.v, P.v);
    if (mpz_cmp(xp.v, half.v) > 0) mpz_sub(xp.v, xp.v, P.v);  // centred [X]_P
    mpz_sub(expect.v, X.v, xp.v);
    mpz_divexact(expect.v, expect.v, P.v);  // (X - [X]_P) / P: X / P rounded
    for (std::size_t k = 0; k < r.limbs(); ++k)
      ASSERT_EQ(r.limb(k)[t], mod_u64(expect.v, f.context.prime(r.moduli[k])))
          << "coefficient " << t;
  }
}

TEST(CkksRns, ModUpDigitsAreCentredLiftsOfTheDigitResidues) {
  auto& f = fixture("n14-l7");
  const std::uint32_t level = 6;
  RnsPoly d = random_poly(f.context, f.context.q_moduli(level), false, 30);
  const RnsPoly d_coeffs = d;
  f.ops->forward(d);
  auto digits = f.evaluator.mod_up(d);
  ASSERT_EQ(digits.size(), f.context.digits(level));
  Mpz x, Qj, half;
  for (std::uint32_t j = 0; j < digits.size(); ++j) {
    f.ops->inverse(digits[j]);
    const auto own = f.context.digit_moduli(level, j);
    product(f.context, own, Qj.v);
    mpz_fdiv_q_2exp(half.v, Qj.v, 1);
    RnsPoly own_part(f.context.degree(), own, false);
    for (std::size_t k = 0; k < own.size(); ++k) {
      const auto src = d_coeffs.limb(d_coeffs.position(own[k]));
      std::copy(src.begin(), src.end(), own_part.limb(k).begin());
    }
    for (std::uint32_t t = 0; t < f.context.degree(); t += 13) {
      reconstruct(f.context, own_part, t, x.v);
      if (mpz_cmp(x.v, half.v) > 0) mpz_sub(x.v, x.v, Qj.v);
      for (std::size_t k = 0; k < digits[j].limbs(); ++k)
        ASSERT_EQ(digits[j].limb(k)[t], mod_u64(x.v, f.context.prime(digits[j].moduli[k])))
            << "digit " << j << ", coefficient " << t;
    }
  }
}

TEST(CkksRns, RescaleIsRoundedDivisionByTheLastPrime) {
  auto& f = fixture("n14-l7");
  const std::uint32_t level = 4;
  RnsPoly x = random_poly(f.context, f.context.q_moduli(level), false, 40);
  const RnsPoly x_coeffs = x;
  f.ops->forward(x);
  Ciphertext ct;
  ct.c = {x};
  ct.scale = 0x1p80;
  const Ciphertext r = f.evaluator.rescale(ct);
  EXPECT_EQ(r.level(), level - 1);
  EXPECT_DOUBLE_EQ(r.scale, 0x1p80 / static_cast<double>(f.context.prime(level)));
  RnsPoly got = r.c[0];
  f.ops->inverse(got);
  Mpz X, ql, half, rem, expect, Q;
  set_u64(ql.v, f.context.prime(level));
  mpz_fdiv_q_2exp(half.v, ql.v, 1);
  product(f.context, f.context.q_moduli(level - 1), Q.v);
  for (std::uint32_t t = 0; t < f.context.degree(); t += 3) {
    reconstruct(f.context, x_coeffs, t, X.v);
    mpz_mod(rem.v, X.v, ql.v);
    if (mpz_cmp(rem.v, half.v) > 0) mpz_sub(rem.v, rem.v, ql.v);
    mpz_sub(expect.v, X.v, rem.v);
    mpz_divexact(expect.v, expect.v, ql.v);
    for (std::size_t k = 0; k < got.limbs(); ++k)
      ASSERT_EQ(got.limb(k)[t], mod_u64(expect.v, f.context.prime(got.moduli[k])));
  }
}

TEST(CkksRns, DecodingReconstructsTheCentredCoefficients) {
  auto& f = fixture("n14-l7");
  const std::uint32_t level = 7;
  RnsPoly x = random_poly(f.context, f.context.q_moduli(level), false, 50);
  const RnsPoly x_coeffs = x;
  f.ops->forward(x);
  const Plaintext plain{x, 1.0, f.context.degree() / 2};
  const auto coeffs = f.encoder.decode_coefficients(plain);
  Mpz X, Q, half;
  product(f.context, f.context.q_moduli(level), Q.v);
  mpz_fdiv_q_2exp(half.v, Q.v, 1);
  for (std::uint32_t t = 0; t < f.context.degree(); t += 17) {
    reconstruct(f.context, x_coeffs, t, X.v);
    if (mpz_cmp(X.v, half.v) > 0) mpz_sub(X.v, X.v, Q.v);
    const long double expect = mpz_get_d(X.v);  // 53 bits suffice for the comparison
    ASSERT_NEAR(static_cast<double>(coeffs[t] / expect), 1.0, 1e-15) << t;
  }
}

// A polynomial in X^(N/m) (m nonzero coefficients, random) is constant on blocks of N/m in NTT
// form: compact_blocks finds m words per limb, equal to the NTT's, and leaves a dense
// polynomial, or one whose blocks are below the minimum, as it is. Its inner products, on every
// instruction set and for blocks of 2 .. N (broadcast or gathered), are those of the whole.
TEST(CkksRns, CompactBlockConstantPolynomialsInInnerProducts) {
  auto& f = fixture("n13-l3");
  const auto& c = f.context;
  const std::uint32_t n = c.degree();
  const auto all = c.qp_moduli(2);
  const auto dense = random_poly(c, all, true, 5);
  EXPECT_EQ(compact_blocks(dense).n, n);
  std::vector<RnsPoly> wholes, compacts;
  for (std::uint32_t m : {n / 2, n / 4, n / 8, n / 64, 2U, 1U}) {
    RnsPoly p = random_poly(c, all, false, 10 + m);
    for (std::size_t k = 0; k < p.limbs(); ++k) {
      for (std::uint32_t t = 0; t < n; ++t) {
        if (t % (n / m) != 0) p.limb(k)[t] = 0;
      }
    }
    f.ops->forward(p);
    const RnsPoly compact = compact_blocks(p, 2);
    ASSERT_EQ(compact.n, m) << "m = " << m;
    for (std::size_t k = 0; k < p.limbs(); ++k) {
      for (std::uint32_t t = 0; t < n; ++t)
        ASSERT_EQ(compact.limb(k)[t / (n / m)], p.limb(k)[t]) << "m = " << m << ", t = " << t;
    }
    if (n / m < 8) {
      EXPECT_EQ(compact_blocks(p).n, n) << "blocks below the default minimum";
    }
    wholes.push_back(std::move(p));
    compacts.push_back(compact);
  }
  const auto q = c.q_moduli(2);
  std::vector<RnsPoly> ys, zs;
  std::vector<const RnsPoly*> pw, pc, py, pz;
  for (std::size_t j = 0; j < wholes.size(); ++j) {
    ys.push_back(random_poly(c, all, true, 40 + j));
    zs.push_back(random_poly(c, all, true, 50 + j));
  }
  for (std::size_t j = 0; j < wholes.size(); ++j) {
    pw.push_back(&wholes[j]);
    pc.push_back(&compacts[j]);
    py.push_back(&ys[j]);
    pz.push_back(&zs[j]);
  }
  pc.push_back(&dense);  // a whole polynomial among compact ones
  pw.push_back(&dense);
  const auto extra = random_poly(c, all, true, 60);
  py.push_back(&extra);
  pz.push_back(&extra);
  for (const auto isa : safhire::ring::available_simd()) {
    const auto ops = make_cpu_rns_ops(c, 1, isa);
    RnsPoly expect0(n, q, true), expect1 = expect0, got0 = expect0, got1 = expect0;
    ops->inner_product_pair(pw, py, pz, expect0, expect1);
    ops->inner_product_pair(pc, py, pz, got0, got1);
    EXPECT_EQ(got0, expect0) << to_string(isa);
    EXPECT_EQ(got1, expect1) << to_string(isa);
    ops->inner_product(pc, pz, got0);
    EXPECT_EQ(got0, expect1) << to_string(isa);
    // Not through a permutation; not of a block that does not divide N.
    const auto perm = c.ntt(0).automorphism_permutation(rotation_galois_element(c, 1));
    EXPECT_EQ(code_of([&] { ops->inner_product(pc, py, got0, perm); }),
              ErrorCode::invalid_argument);
    RnsPoly odd(3, all, true);
    const std::vector<const RnsPoly*> po{&odd}, pe{&extra};
    EXPECT_EQ(code_of([&] { ops->inner_product(po, pe, got0); }), ErrorCode::size_mismatch);
  }
}

// On every instruction set, against sums of mul_mod: rows of inner products over shared second
// operands (absent terms, compact first operands with blocks below, at and above the CPU's
// tile, and of 2 words), and hoisted rotations (digits times several keys, plus c_0, permuted).
TEST(CkksRns, InnerProductRowsAndHoistedRotationsMatchTheirDefinitions) {
  auto& f = fixture("n13-l3");
  const auto& c = f.context;
  const std::uint32_t n = c.degree();
  const auto all = c.qp_moduli(3);
  const auto q = c.q_moduli(2);  // outputs over fewer limbs than the inputs
  auto compact = [&](std::uint32_t words, std::uint64_t seed) {
    RnsPoly p = random_poly(c, all, true, seed);
    RnsPoly out(words, all, true);
    for (std::size_t k = 0; k < p.limbs(); ++k)
      std::copy_n(p.limb(k).begin(), words, out.limb(k).begin());
    return out;
  };
  auto read = [&](const RnsPoly& p, std::size_t k, std::uint32_t t) {
    return p.limb(p.position(q[k]))[t / (n / p.n)];
  };
  std::vector<RnsPoly> xs, ys, zs;
  for (int j = 0; j < 5; ++j) {
    ys.push_back(random_poly(c, all, true, 200 + j));
    zs.push_back(random_poly(c, all, true, 210 + j));
  }
  xs.push_back(random_poly(c, all, true, 220));
  for (std::uint32_t words : {n / 8, n / 512, n / 4096, 1U, n / 2})
    xs.push_back(compact(words, 230 + words));
  // Rows: {x0, -, x1, x2, x3}, {x4, x1, -, -, -}, {-, -, x0, -, x4}; then with x5 (blocks of 2,
  // which the CPU gathers) for the last two terms.
  const std::vector<std::vector<const RnsPoly*>> tiled{{&xs[0], nullptr, &xs[1], &xs[2], &xs[3]},
                                                       {&xs[4], &xs[1], nullptr, nullptr, nullptr},
                                                       {nullptr, nullptr, &xs[0], nullptr, &xs[4]}};
  auto gathered = tiled;
  gathered[1][1] = gathered[2][4] = &xs[5];
  std::vector<const RnsPoly*> py, pz;
  for (int j = 0; j < 5; ++j) {
    py.push_back(&ys[j]);
    pz.push_back(&zs[j]);
  }
  const auto perm1 = c.ntt(0).automorphism_permutation(rotation_galois_element(c, 3));
  const auto perm2 = c.ntt(0).automorphism_permutation(conjugation_galois_element(c));
  const RnsPoly c0 = random_poly(c, all, true, 240);
  for (const auto isa : safhire::ring::available_simd()) {
    const auto ops = make_cpu_rns_ops(c, 1, isa);
    for (const auto& rows : {tiled, gathered}) {
      std::vector<RnsPoly> o0(3, RnsPoly(n, q, true)), o1 = o0;
      const std::vector<RnsPoly*> p0{&o0[0], &o0[1], &o0[2]}, p1{&o1[0], &o1[1], &o1[2]};
      ops->inner_product_rows(rows, py, pz, p0, p1);
      for (std::size_t g = 0; g < rows.size(); ++g) {
        for (std::size_t k = 0; k < q.size(); ++k) {
          const u64 p = c.prime(q[k]);
          for (std::uint32_t t = 0; t < n; ++t) {
            u64 e0 = 0, e1 = 0;
            for (std::size_t j = 0; j < 5; ++j) {
              if (rows[g][j] == nullptr) continue;
              const u64 x = read(*rows[g][j], k, t);
              e0 = (e0 + safhire::core::mul_mod(x, read(ys[j], k, t), p)) % p;
              e1 = (e1 + safhire::core::mul_mod(x, read(zs[j], k, t), p)) % p;
            }
            ASSERT_EQ(o0[g].limb(k)[t], e0) << to_string(isa) << " row " << g << " t " << t;
            ASSERT_EQ(o1[g].limb(k)[t], e1) << to_string(isa) << " row " << g << " t " << t;
          }
        }
      }
    }
    // Two keys of three digits: (ys[0..2], zs[0..2]) and (ys[2..4], zs[2..4]).
    const std::vector<const RnsPoly*> d{&xs[0], &ys[4], &zs[4]};
    const std::vector<std::vector<const RnsPoly*>> kb{{&ys[0], &ys[1], &ys[2]},
                                                      {&ys[2], &ys[3], &ys[4]}},
        ka{{&zs[0], &zs[1], &zs[2]}, {&zs[2], &zs[3], &zs[4]}};
    const std::vector<std::span<const std::uint32_t>> perms{perm1, perm2};
    for (const RnsPoly* add0 : {&c0, static_cast<const RnsPoly*>(nullptr)}) {
      std::vector<RnsPoly> r0(2, RnsPoly(n, q, true)), r1 = r0;
      ops->rotate_hoisted(d, kb, ka, perms, add0, std::vector<RnsPoly*>{&r0[0], &r0[1]},
                          std::vector<RnsPoly*>{&r1[0], &r1[1]});
      for (std::size_t j = 0; j < 2; ++j) {
        for (std::size_t k = 0; k < q.size(); ++k) {
          const u64 p = c.prime(q[k]);
          for (std::uint32_t t = 0; t < n; t += 7) {
            const std::uint32_t s = perms[j][t];
            u64 e0 = add0 != nullptr ? read(*add0, k, s) : 0, e1 = 0;
            for (std::size_t i = 0; i < 3; ++i) {
              e0 = (e0 + safhire::core::mul_mod(read(*d[i], k, s), read(*kb[j][i], k, s), p)) % p;
              e1 = (e1 + safhire::core::mul_mod(read(*d[i], k, s), read(*ka[j][i], k, s), p)) % p;
            }
            ASSERT_EQ(r0[j].limb(k)[t], e0) << to_string(isa) << " key " << j << " t " << t;
            ASSERT_EQ(r1[j].limb(k)[t], e1) << to_string(isa) << " key " << j << " t " << t;
          }
        }
      }
    }
  }
}

// The giant sums of hoisted rotations (RnsOps::rotate_hoisted_rows) against their definition,
// summed with mul_mod: baby 0 (x itself) and 17 keys of three digits (so that a row of 18 terms
// goes in two parts), every fourth seeded (its a_j the AES streams j << 32 | modulus); rows with
// absent terms and compact diagonals. The CPU's limb-by-limb kernel on every instruction set and
// the default (babies whole, then rows) give these words.
TEST(CkksRns, HoistedRowsMatchTheirDefinition) {
  auto& f = fixture("n13-l3");
  const auto& c = f.context;
  const std::uint32_t n = c.degree();
  const auto all = c.qp_moduli(3);
  const auto q = c.q_moduli(2);
  auto read = [&](const RnsPoly& p, std::size_t k, std::uint32_t t) {
    return p.limb(p.position(q[k]))[t / (n / p.n)];
  };
  std::vector<RnsPoly> polys;
  for (int j = 0; j < 8; ++j)
    polys.push_back(random_poly(c, all, true, 300 + j));
  const RnsPoly x0 = random_poly(c, all, true, 320), x1 = random_poly(c, all, true, 321);
  RnsPoly compact(n / 16, all, true);
  for (std::size_t k = 0; k < compact.limbs(); ++k)
    std::copy_n(polys[7].limb(k).begin(), n / 16, compact.limb(k).begin());
  constexpr std::size_t kKeys = 17;
  std::vector<std::vector<std::uint32_t>> perms;
  std::vector<RnsOps::HoistedKey> keys(kKeys);
  safhire::core::AesCtr::Key seed{};
  seed[0] = 7;
  const safhire::core::AesCtr prf(seed);
  const auto ops0 = make_cpu_rns_ops(c, 1);
  std::vector<RnsPoly> seeded_a(3);  // the oracle's copy of a seeded key's a_j
  for (std::size_t i = 0; i < 3; ++i)
    ops0->uniform(prf, std::uint64_t{i} << 32, all, seeded_a[i]);
  for (std::size_t j = 0; j < kKeys; ++j) {
    perms.push_back(
        c.ntt(0).automorphism_permutation(rotation_galois_element(c, static_cast<int>(j % 5) + 1)));
    for (std::size_t i = 0; i < 3; ++i) {
      keys[j].b.push_back(&polys[(j + i) % 7]);
      if (j % 4 != 3) keys[j].a.push_back(&polys[(j + 2 * i + 1) % 7]);
    }
    if (j % 4 == 3) keys[j].prf = &prf;
  }
  for (std::size_t j = 0; j < kKeys; ++j)
    keys[j].perm = perms[j];
  const std::vector<const RnsPoly*> d{&polys[4], &polys[5], &polys[6]};
  // Row 0: every baby (18 terms, two parts); row 1: x and three keys; row 2: compact terms only.
  std::vector<std::vector<const RnsPoly*>> rows(3, std::vector<const RnsPoly*>(kKeys + 1));
  for (std::size_t j = 0; j <= kKeys; ++j)
    rows[0][j] = &polys[j % 7];
  rows[1][0] = &polys[1];
  rows[1][2] = &polys[2];
  rows[1][4] = &compact;
  rows[1][kKeys] = &polys[3];
  rows[2][3] = rows[2][9] = &compact;
  // A lazy term (signed coefficients up to 2^62, encoded per limb) in row 2, column 5; the
  // oracle reads its encoding, made here with % and the ring's NTT.
  std::vector<std::int64_t> coeffs(n);
  std::mt19937_64 mt(77);
  for (auto& v : coeffs)
    v = static_cast<std::int64_t>(mt() >> 1) - (std::int64_t{1} << 62);
  coeffs[0] = -(std::int64_t{1} << 62);
  coeffs[1] = (std::int64_t{1} << 62) - 1;
  RnsPoly lazy_poly(n, all, false);
  for (std::size_t k = 0; k < all.size(); ++k) {
    const auto p = static_cast<std::int64_t>(c.prime(all[k]));
    for (std::uint32_t t = 0; t < n; ++t)
      lazy_poly.limb(k)[t] = static_cast<u64>(((coeffs[t] % p) + p) % p);
    c.ntt(all[k]).forward(lazy_poly.limb(k));
  }
  lazy_poly.ntt = true;
  std::vector<std::vector<const RnsOps::Coefficients*>> lazy(
      3, std::vector<const RnsOps::Coefficients*>(kKeys + 1));
  lazy[2][5] = &coeffs;
  auto oracle_rows = rows;  // what the oracle sums: the lazy term's encoding in its place
  oracle_rows[2][5] = &lazy_poly;
  // r_j,c[t] by the definition.
  auto rotated = [&](std::size_t j, int half, std::size_t k, std::uint32_t t) -> u64 {
    const u64 p = c.prime(q[k]);
    if (j == 0) return read(half == 0 ? x0 : x1, k, t);
    const RnsOps::HoistedKey& key = keys[j - 1];
    const std::uint32_t s = key.perm[t];
    u64 e = half == 0 ? read(x0, k, s) : 0;
    for (std::size_t i = 0; i < 3; ++i) {
      const RnsPoly& other = half == 0 ? *key.b[i] : key.prf ? seeded_a[i] : *key.a[i];
      e = (e + safhire::core::mul_mod(read(*d[i], k, s), read(other, k, s), p)) % p;
    }
    return e;
  };
  auto check = [&](const std::string& what, const std::vector<RnsPoly>& o0,
                   const std::vector<RnsPoly>& o1) {
    for (std::size_t g = 0; g < rows.size(); ++g) {
      for (std::size_t k = 0; k < q.size(); ++k) {
        const u64 p = c.prime(q[k]);
        for (std::uint32_t t = 0; t < n; t += 13) {
          u64 e0 = 0, e1 = 0;
          for (std::size_t j = 0; j <= kKeys; ++j) {
            if (oracle_rows[g][j] == nullptr) continue;
            const u64 w = read(*oracle_rows[g][j], k, t);
            e0 = (e0 + safhire::core::mul_mod(w, rotated(j, 0, k, t), p)) % p;
            e1 = (e1 + safhire::core::mul_mod(w, rotated(j, 1, k, t), p)) % p;
          }
          ASSERT_EQ(o0[g].limb(k)[t], e0) << what << " row " << g << " t " << t;
          ASSERT_EQ(o1[g].limb(k)[t], e1) << what << " row " << g << " t " << t;
        }
      }
    }
  };
  auto run =
      [&](const std::function<void(std::span<RnsPoly* const>, std::span<RnsPoly* const>)>& fn,
          const std::string& what) {
        std::vector<RnsPoly> o0(3, RnsPoly(n, q, true)), o1 = o0;
        fn(std::vector<RnsPoly*>{&o0[0], &o0[1], &o0[2]},
           std::vector<RnsPoly*>{&o1[0], &o1[1], &o1[2]});
        check(what, o0, o1);
      };
  for (const auto isa : safhire::ring::available_simd()) {
    const auto ops = make_cpu_rns_ops(c, 2, isa);
    run([&](auto p0, auto p1) { ops->rotate_hoisted_rows(d, keys, x0, x1, rows, p0, p1, lazy); },
        std::string(to_string(isa)));
  }
  run([&](auto p0,
          auto p1) { ops0->RnsOps::rotate_hoisted_rows(d, keys, x0, x1, rows, p0, p1, lazy); },
      "default");
  // Refused: a row of another length, and a row without terms.
  std::vector<RnsPoly> o(2, RnsPoly(n, q, true));
  const std::vector<RnsPoly*> p0{&o[0]}, p1{&o[1]};
  const std::vector<std::vector<const RnsPoly*>> short_row{{&polys[0]}},
      empty_row(1, std::vector<const RnsPoly*>(kKeys + 1));
  EXPECT_EQ(code_of([&] { ops0->rotate_hoisted_rows(d, keys, x0, x1, short_row, p0, p1); }),
            ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { ops0->rotate_hoisted_rows(d, keys, x0, x1, empty_row, p0, p1); }),
            ErrorCode::size_mismatch);
  // A term both lazy and given.
  auto both = lazy;
  both[0][0] = &coeffs;
  std::vector<RnsPoly> o3(6, RnsPoly(n, q, true));
  const std::vector<RnsPoly*> q0{&o3[0], &o3[1], &o3[2]}, q1{&o3[3], &o3[4], &o3[5]};
  EXPECT_EQ(code_of([&] { ops0->rotate_hoisted_rows(d, keys, x0, x1, rows, q0, q1, both); }),
            ErrorCode::invalid_argument);
}

// A seeded key's inner product (its a_j regenerated limb by limb where they are read) gives the
// words of inner_product_pair on the a_j made whole by uniform(), with and without a fused
// permutation, on every instruction set and through the default.
TEST(CkksRns, SeededInnerProductRegeneratesTheKeysA) {
  auto& f = fixture("n13-l3");
  const auto& c = f.context;
  const std::uint32_t n = c.degree();
  const auto all = c.qp_moduli(3);
  const auto q = c.q_moduli(2);
  std::vector<RnsPoly> xs, bs;
  for (int j = 0; j < 4; ++j) {
    xs.push_back(random_poly(c, all, true, 400 + j));
    bs.push_back(random_poly(c, all, true, 410 + j));
  }
  std::vector<const RnsPoly*> px, pb;
  for (int j = 0; j < 4; ++j) {
    px.push_back(&xs[j]);
    pb.push_back(&bs[j]);
  }
  safhire::core::AesCtr::Key seed{};
  seed[3] = 9;
  const safhire::core::AesCtr prf(seed);
  const auto perm = c.ntt(0).automorphism_permutation(rotation_galois_element(c, 5));
  const auto ops0 = make_cpu_rns_ops(c, 1);
  std::vector<RnsPoly> a(4);
  std::vector<const RnsPoly*> pa;
  for (std::size_t j = 0; j < 4; ++j) {
    ops0->uniform(prf, std::uint64_t{j} << 32, q, a[j]);
    pa.push_back(&a[j]);
  }
  for (const bool permuted : {false, true}) {
    const std::span<const std::uint32_t> p =
        permuted ? std::span<const std::uint32_t>(perm) : std::span<const std::uint32_t>();
    RnsPoly want0(n, q, true), want1(n, q, true);
    ops0->inner_product_pair(px, pb, pa, want0, want1, p);
    auto check = [&](const RnsOps& ops, bool base, const std::string& what) {
      RnsPoly got0(n, q, true), got1(n, q, true);
      if (base) {
        ops.RnsOps::inner_product_seeded(px, pb, prf, got0, got1, p);
      } else {
        ops.inner_product_seeded(px, pb, prf, got0, got1, p);
      }
      EXPECT_TRUE(got0.data == want0.data) << what << " permuted " << permuted;
      EXPECT_TRUE(got1.data == want1.data) << what << " permuted " << permuted;
    };
    for (const auto isa : safhire::ring::available_simd())
      check(*make_cpu_rns_ops(c, 2, isa), false, std::string(to_string(isa)));
    check(*ops0, true, "default");
  }
}

// On every instruction set: sums of up to 16 products (the most a key switch takes), inputs at
// q - 1 on the first coefficients, one output or both halves of a key at once.
// On primes below 2^50 (n13-l3's, and n14-l7's just below 2^50: the IFMA kernels where the
// processor has them) and above (n12-boot-test's 58 and 60 bits: the AVX-512 F kernels).
const std::array<const char*, 3> kKernelSets{"n13-l3", "n14-l7", "n12-boot-test"};

class CkksKernels : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Primes, CkksKernels, ::testing::ValuesIn(kKernelSets),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(CkksKernels, InnerProductWithAndWithoutAFusedPermutation) {
  auto& f = fixture(GetParam());
  const auto& c = f.context;
  const auto all = c.qp_moduli(3);
  const auto perm = c.ntt(0).automorphism_permutation(rotation_galois_element(c, 3));
  const auto q = c.q_moduli(2);  // an output over fewer limbs than the inputs
  for (const int pairs : {3, 16}) {
    std::vector<RnsPoly> xs, ys, zs;
    for (int j = 0; j < pairs; ++j) {
      xs.push_back(random_poly(c, all, true, 60 + j));
      ys.push_back(random_poly(c, all, true, 80 + j));
      zs.push_back(random_poly(c, all, true, 100 + j));
      for (auto* poly : {&xs.back(), &ys.back(), &zs.back()}) {
        for (std::size_t k = 0; k < poly->limbs(); ++k) {
          for (std::uint32_t t = 0; t < 8; ++t)
            poly->limb(k)[t] = c.prime(poly->moduli[k]) - 1;
        }
      }
    }
    std::vector<const RnsPoly*> px, py, pz;
    for (int j = 0; j < pairs; ++j) {
      px.push_back(&xs[j]);
      py.push_back(&ys[j]);
      pz.push_back(&zs[j]);
    }
    for (const auto isa : safhire::ring::available_simd()) {
      const auto ops = make_cpu_rns_ops(c, 1, isa);
      RnsPoly plain(c.degree(), q, true), permuted = plain, half0 = plain, half1 = plain;
      ops->inner_product(px, py, plain);
      ops->inner_product(px, py, permuted, perm);
      ops->inner_product_pair(px, py, pz, half0, half1, perm);
      for (std::size_t k = 0; k < q.size(); ++k) {
        const u64 p = c.prime(q[k]);
        for (std::uint32_t t = 0; t < c.degree(); t += (t < 8 ? 1 : 3)) {
          u64 expect = 0, expect_perm = 0, expect_z = 0;
          for (int j = 0; j < pairs; ++j) {
            const u64 x = xs[j].limb(k)[t], xp = xs[j].limb(k)[perm[t]];
            expect = (expect + safhire::core::mul_mod(x, ys[j].limb(k)[t], p)) % p;
            expect_perm = (expect_perm + safhire::core::mul_mod(xp, ys[j].limb(k)[t], p)) % p;
            expect_z = (expect_z + safhire::core::mul_mod(xp, zs[j].limb(k)[t], p)) % p;
          }
          const std::string where = std::string(to_string(isa)) + ", " + std::to_string(pairs) +
                                    " pairs, coefficient " + std::to_string(t);
          ASSERT_EQ(plain.limb(k)[t], expect) << where;
          ASSERT_EQ(permuted.limb(k)[t], expect_perm) << where;
          ASSERT_EQ(half0.limb(k)[t], expect_perm) << where;
          ASSERT_EQ(half1.limb(k)[t], expect_z) << where;
        }
      }
    }
  }
}

// Sums, products and scalings limb by limb on every instruction set against % and mul_mod, with
// inputs at q - 1 and 0 on the first coefficients and the output over fewer limbs than the inputs.
TEST_P(CkksKernels, ElementwiseProductsOnEveryInstructionSet) {
  auto& f = fixture(GetParam());
  const auto& c = f.context;
  const auto all = c.qp_moduli(3);
  RnsPoly a = random_poly(c, all, true, 91), b = random_poly(c, all, true, 92);
  for (std::size_t k = 0; k < a.limbs(); ++k) {
    for (std::uint32_t t = 0; t < 16; ++t) {
      a.limb(k)[t] = t < 8 ? c.prime(a.moduli[k]) - 1 : 0;
      b.limb(k)[t] = t % 2 == 0 ? c.prime(b.moduli[k]) - 1 : 0;
    }
  }
  std::vector<u64> scalars(c.primes().size());
  for (std::size_t i = 0; i < scalars.size(); ++i)
    scalars[i] = c.prime(static_cast<ModulusIndex>(i)) - 2 - i;
  const std::vector<ModulusIndex> out_moduli{all[4], all[0], all[2]};
  const RnsPoly start = random_poly(c, out_moduli, true, 93);
  // The tensor of (a, b) with (b, e), and the square of (a, b).
  const RnsPoly e = random_poly(c, all, true, 94);
  for (const auto isa : safhire::ring::available_simd()) {
    const auto ops = make_cpu_rns_ops(c, 1, isa);
    RnsPoly product = start, accumulated = start, scaled = start, diff = start;
    RnsPoly sum = start, difference = start;
    ops->add(a, b, sum);
    ops->sub(a, b, difference);
    ops->multiply(a, b, product);
    ops->multiply_accumulate(a, b, accumulated);
    ops->multiply_scalars(a, scalars, scaled);
    ops->sub_scale(a, b, scalars, diff);
    std::array<RnsPoly, 3> tensor{start, start, start}, square{start, start, start};
    ops->tensor(a, b, b, e, tensor[0], tensor[1], tensor[2]);
    ops->tensor(a, b, a, b, square[0], square[1], square[2]);
    for (std::size_t k = 0; k < out_moduli.size(); ++k) {
      const ModulusIndex mod = out_moduli[k];
      const u64 q = c.prime(mod), s = scalars[mod];
      const auto x = a.limb(a.position(mod)), y = b.limb(b.position(mod));
      for (std::uint32_t t = 0; t < c.degree(); t += (t < 16 ? 1 : 5)) {
        using safhire::core::mul_mod;
        const std::string where =
            std::string(to_string(isa)) + ", coefficient " + std::to_string(t);
        ASSERT_EQ(sum.limb(k)[t], (x[t] + y[t]) % q) << where;
        ASSERT_EQ(difference.limb(k)[t], (x[t] + q - y[t]) % q) << where;
        ASSERT_EQ(product.limb(k)[t], mul_mod(x[t], y[t], q)) << where;
        ASSERT_EQ(accumulated.limb(k)[t], (start.limb(k)[t] + mul_mod(x[t], y[t], q)) % q) << where;
        ASSERT_EQ(scaled.limb(k)[t], mul_mod(x[t], s, q)) << where;
        ASSERT_EQ(diff.limb(k)[t], mul_mod((x[t] + q - y[t]) % q, s, q)) << where;
        const u64 z = e.limb(e.position(mod))[t];
        ASSERT_EQ(tensor[0].limb(k)[t], mul_mod(x[t], y[t], q)) << where;
        ASSERT_EQ(tensor[1].limb(k)[t], (mul_mod(x[t], z, q) + mul_mod(y[t], y[t], q)) % q)
            << where;
        ASSERT_EQ(tensor[2].limb(k)[t], mul_mod(y[t], z, q)) << where;
        ASSERT_EQ(square[0].limb(k)[t], mul_mod(x[t], x[t], q)) << where;
        ASSERT_EQ(square[1].limb(k)[t], mul_mod(u64{2}, mul_mod(x[t], y[t], q), q)) << where;
        ASSERT_EQ(square[2].limb(k)[t], mul_mod(y[t], y[t], q)) << where;
      }
    }
  }
}

TEST(CkksRns, LargeBuffersAreRecycledAndSmallOnesAreNot) {
  // A size no polynomial has, so that nothing else in the process left one in the pool.
  constexpr std::size_t kWords = (1 << 16) + 3;
  const std::size_t before = pool_cached_bytes();
  const std::uint64_t* first = nullptr;
  {
    Words big(kWords, 7);
    first = big.data();
  }
  EXPECT_EQ(pool_cached_bytes(), before + kWords * 8);
  {
    // The same size: the same block, default-initialised (not cleared: reshape's words are
    // unspecified, and a bootstrap spent 9% of its time clearing them).
    Words again(kWords);
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(again[12345], 7U);
    EXPECT_EQ(pool_cached_bytes(), before);
  }
  {
    Words zeroed(kWords, 0);  // asked for as zeros
    EXPECT_EQ(zeroed.data(), first);
    EXPECT_EQ(zeroed[12345], 0U);
  }
  { Words small(100); }
  EXPECT_EQ(pool_cached_bytes(), before + kWords * 8);
}

// A large block mapped afresh unmaps the cached blocks beyond the most ever handed out at once
// (plus a slack of at most an eighth): one that sets a new peak above that leaves no large block
// cached (small ones are not mapped and stay), and the pool's large footprint is that peak.
TEST(CkksRns, FreshLargeBlocksKeepThePoolWithinItsPeakWorkingSet) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const PoolStats s0 = pool_stats();
  {
    Words a;  // 6 MiB with the 2 MiB rounding
    a.reserve((5 * kMiB + 8) / 8);
  }
  const PoolStats s1 = pool_stats();
  EXPECT_EQ(s1.cached, s0.cached + 6 * kMiB);
  EXPECT_EQ(s1.live, s0.live);
  const std::size_t b_bytes = 2 * s1.peak_live + 64 * kMiB;
  std::size_t cached_with_b = 0;
  {
    // Twice the peak and more: larger than every cached block, so mapped afresh (reserved, not
    // touched), and past the peak plus the slack.
    Words b;
    b.reserve(b_bytes / 8);
    const PoolStats s2 = pool_stats();
    cached_with_b = s2.cached;
    EXPECT_EQ(s2.live, s2.peak_live);
    EXPECT_GE(s2.live, s1.live + b_bytes);
    EXPECT_LE(s2.cached, s1.cached - 6 * kMiB);
  }
  const PoolStats s3 = pool_stats();
  EXPECT_EQ(s3.live, s1.live);
  // Released, it is cached for the next request (where the pool's cap leaves room).
  if (cached_with_b + b_bytes <= kPoolLimit) {
    EXPECT_GE(s3.cached, cached_with_b + b_bytes);
  }
}

TEST(CkksRns, CopyAndAddScalarsFollowTheModuliOfTheOutput) {
  auto& f = fixture("n12-l2");
  const auto& c = f.context;
  const RnsPoly a = random_poly(c, {0, 1, 2, 3}, true, 31);
  // Limbs found by modulus, in the output's order; [first, last) only; the form flag untouched.
  RnsPoly out = random_poly(c, {3, 1, 0}, false, 32);
  const RnsPoly before = out;
  f.ops->copy(a, out, 1);
  EXPECT_FALSE(out.ntt);
  EXPECT_TRUE(std::ranges::equal(out.limb(0), before.limb(0)));
  EXPECT_TRUE(std::ranges::equal(out.limb(1), a.limb(1)));
  EXPECT_TRUE(std::ranges::equal(out.limb(2), a.limb(0)));
  std::vector<u64> scalars(c.primes().size());
  for (std::size_t i = 0; i < scalars.size(); ++i)
    scalars[i] = c.prime(static_cast<ModulusIndex>(i)) - 1 - i;  // near q: the sum wraps
  RnsPoly sum = f.ops->zeros({2, 0}, true);
  f.ops->add_scalars(a, scalars, sum);
  for (std::size_t k = 0; k < sum.limbs(); ++k) {
    const ModulusIndex mod = sum.moduli[k];
    const auto x = a.limb(a.position(mod));
    for (std::uint32_t t = 0; t < c.degree(); ++t)
      ASSERT_EQ(sum.limb(k)[t], (x[t] + scalars[mod]) % c.prime(mod));
  }
  // A CPU backend's shapes are host words of the context's degree.
  RnsPoly r;
  f.ops->reshape(r, std::vector<ModulusIndex>{1, 2}, false);
  EXPECT_EQ(r.n, c.degree());
  EXPECT_EQ(r.data.size(), 2U * c.degree());
  EXPECT_FALSE(r.on_device());
}

// RnsOps::permutation: the automorphism X -> X^g in NTT form (checked against the coefficient
// rule X^i -> (-1)^(i g div N) X^(i g mod N), after the inverse NTT), made once per element and
// kept at one address while others are made (backends key their own copies by it).
TEST(CkksRns, SlotPermutationsAreTheAutomorphismsAndKeptAtOneAddress) {
  auto& f = fixture("n12-l2");
  const auto& c = f.context;
  const std::uint32_t n = c.degree();
  const std::uint64_t g = rotation_galois_element(c, 3);
  const auto first = f.ops->permutation(g);
  ASSERT_EQ(first.size(), n);
  const std::vector<std::uint32_t> copy(first.begin(), first.end());
  for (int r = 1; r < 40; ++r)
    (void)f.ops->permutation(rotation_galois_element(c, r));
  (void)f.ops->permutation(conjugation_galois_element(c));
  const auto again = f.ops->permutation(g);
  EXPECT_EQ(again.data(), first.data());
  EXPECT_TRUE(std::ranges::equal(again, copy));
  for (const std::uint64_t element : {g, conjugation_galois_element(c)}) {
    const RnsPoly a = random_poly(c, {0, 1}, true, 41);
    RnsPoly got = f.ops->zeros({0, 1}, true);
    f.ops->permute(a, f.ops->permutation(element), got);
    RnsPoly coeffs = a;
    f.ops->inverse(coeffs);
    RnsPoly want(n, {0, 1}, false);
    for (std::size_t k = 0; k < 2; ++k) {
      const u64 q = c.prime(want.moduli[k]);
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint64_t e = (std::uint64_t{i} * element) % (2 * std::uint64_t{n});
        const u64 x = coeffs.limb(k)[i];
        want.limb(k)[e % n] = e < n ? x : (x == 0 ? 0 : q - x);
      }
    }
    f.ops->forward(want);
    EXPECT_EQ(got, want) << "galois " << element;
  }
}

// Device words over host memory, counting what is held: the value semantics of DeviceWords and
// the host-only accessors of a resident polynomial, without a device.
struct CountingMemory final : DeviceMemory {
  std::size_t live_words = 0, allocations = 0;
  u64* allocate(std::size_t words) override {
    live_words += words;
    ++allocations;
    return new u64[words];
  }
  void release(u64* p, std::size_t words) noexcept override {
    live_words -= words;
    delete[] p;
  }
  void copy(u64* dst, const u64* src, std::size_t words) override {
    std::copy(src, src + words, dst);
  }
};

TEST(CkksRns, DeviceWordsCopyDeeplyAndReleaseOnce) {
  auto memory = std::make_shared<CountingMemory>();
  {
    DeviceWords a(memory, 8);
    for (int i = 0; i < 8; ++i)
      a.data()[i] = 100 + i;
    DeviceWords b = a;  // a deep copy
    EXPECT_NE(b.data(), a.data());
    EXPECT_EQ(b.data()[7], 107U);
    b.data()[0] = 1;
    EXPECT_EQ(a.data()[0], 100U);
    EXPECT_EQ(memory->live_words, 16U);
    DeviceWords c = std::move(b);  // a move takes the block
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(c.data()[0], 1U);
    c.resize(4);  // shrinks in place
    EXPECT_EQ(c.size(), 4U);
    EXPECT_EQ(memory->allocations, 2U);
    c.resize(12);  // grows into a fresh block, the old one released
    EXPECT_EQ(memory->allocations, 3U);
    EXPECT_EQ(memory->live_words, 20U);
    a = c;
    EXPECT_EQ(a.size(), 12U);
    EXPECT_EQ(memory->live_words, 24U);
  }
  EXPECT_EQ(memory->live_words, 0U);

  // A resident polynomial: copies carry their words, truncation keeps the block, and the host
  // accessors refuse it with a typed error.
  RnsPoly p;
  p.n = 4;
  p.moduli = {0, 1, 2};
  p.device = DeviceWords(memory, 12);
  RnsPoly q = p;
  EXPECT_TRUE(q.on_device());
  EXPECT_EQ(memory->live_words, 24U);
  q.truncate(2);
  EXPECT_EQ(q.device.size(), 8U);
  EXPECT_EQ(code_of([&] { (void)q.limb(0); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)(p == q); }), ErrorCode::invalid_argument);
}

TEST(CkksRns, MismatchedPolynomialsAreTypedErrors) {
  auto& f = fixture("n12-l2");
  RnsPoly a(f.context.degree(), {0, 1}, true), b(f.context.degree(), {0}, true);
  RnsPoly out(f.context.degree(), {0, 1}, true);
  EXPECT_EQ(code_of([&] { f.ops->add(a, b, out); }), ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { f.ops->forward(a); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] {
              BaseConverter(f.context, {0, 1}, {1, 2});
            }),
            ErrorCode::invalid_argument);
  RnsPoly c(f.context.degree(), {0}, false);
  EXPECT_EQ(code_of([&] {
              f.ops->convert(BaseConverter(f.context, {0}, {2}), c, a, Conversion::approximate);
            }),
            ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { a.truncate(3); }), ErrorCode::invalid_argument);
}

}  // namespace
