// The CUDA key-switching pipeline (cuda/keyswitch.cu) replayed on the CPU with the kernels'
// shared per-element functions and the device layouts: decompose_word into [level][count][N],
// lift and NTT in one prime, the multiply-accumulate element over the key's limb-NTT layout,
// accumulators [a, b][limb][count][N], inverse NTTs, limb combine. It must equal the CPU
// KeySwitcher word for word on a batch, and both must equal the two-prime product of
// ring::ExactProduct (an independent path) with the key words rounded as the key's split says
// (one rounded limb on default-b8, two exact limbs on the others); tests/cuda runs the real
// kernels on a GPU. Every buffer starts poisoned, as device memory starts undefined.
#include <gtest/gtest.h>

#include <random>

#include "portable/keyswitch_element.cuh"
#include "safhire/core/random.hpp"
#include "safhire/elements/automorphism.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/product.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "simd/dispatch.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;
using safhire::testing::kPoison;

TEST(KeySwitchEmulation, DeviceLayoutsReproduceKeySwitcher) {
  for (const char* name : {"default-b8", "default-b12", "paper-b16"}) {
    const auto& p = rlwe::parameter_set(name, rlwe::SecurityPolicy::allow_insecure);
    const std::uint32_t n = p.ring.N();
    auto random = core::SeededRandom::from_counter(110);
    const rlwe::SecretKey key(p, random);
    rlwe::Encryptor enc(key, random);
    const rlwe::Gadget& g = p.gadget(0);
    const std::uint64_t k = 2;
    const rlwe::KeySwitchKey ksk = rlwe::make_automorphism_key(key, k, g, random);
    const rlwe::GadgetDecomposer decomposer(g);
    const std::uint32_t l = g.levels;
    const std::size_t count = 3, len = count * n;

    // A batch [count][N] of a and b.
    Vec a(len), b(len);
    ring::TorusPoly mu(p.ring);
    for (std::size_t c = 0; c < count; ++c) {
      const rlwe::Ciphertext ct = enc.encrypt(mu.coeffs());
      std::copy(ct.a.coeffs().begin(), ct.a.coeffs().end(), a.begin() + c * n);
      std::copy(ct.b.coeffs().begin(), ct.b.coeffs().end(), b.begin() + c * n);
    }
    // sigma_k coefficient by coefficient (automorphism_kernel).
    const auto k_inv = static_cast<std::uint32_t>(core::pow_mod<u64>(k, n - 1, p.ring.M()));
    Vec sa(len, kPoison), sb(len, kPoison);
    for (std::size_t x = 0; x < len; ++x) {
      const std::size_t row = x / n;
      const auto j = static_cast<std::uint32_t>(x % n);
      sa[x] = elements::automorphism_coefficient(a.data() + row * n, j, k_inv, n, p.ring.M(),
                                                 p.ring.m());
      sb[x] = elements::automorphism_coefficient(b.data() + row * n, j, k_inv, n, p.ring.M(),
                                                 p.ring.m());
    }
    // decompose_kernel, then lift and NTT per prime: residues [p][i][c][N].
    Vec digits(l * len, kPoison);
    for (std::size_t x = 0; x < len; ++x) {
      elements::decompose_word(sa[x], decomposer.view(), digits.data() + x, len);
    }
    // lift and NTT in one prime: [level][count][N].
    const ring::LimbProduct& limbs = ring::LimbProduct::shared(p.ring);
    const ring::NttTables& tb = limbs.plan().tables();
    const auto& cpu = ring::simd::checked_kernels(ring::SimdIsa::scalar);
    Vec residues(l * len, kPoison);
    cpu.lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, digits.data(), residues.data(), l * len);
    limbs.plan().forward(residues);
    // The key as DeviceKeySwitchKey lays it out: [i][a, b][limb][N].
    Vec key_words;
    for (std::uint32_t i = 0; i < l; ++i) {
      key_words.insert(key_words.end(), ksk.limb_a(i).begin(), ksk.limb_a(i).end());
      key_words.insert(key_words.end(), ksk.limb_b(i).begin(), ksk.limb_b(i).end());
    }
    const ring::LimbSplit split = ksk.split();
    EXPECT_EQ(split.limbs, std::string(name) == "default-b8" ? 1U : 2U) << name;
    Vec acc(2 * split.limbs * len, kPoison);  // device buffers start undefined
    for (std::uint32_t limb = 0; limb < split.limbs; ++limb) {
      for (std::size_t x = 0; x < len; ++x) {
        cuda::block::multiply_accumulate_element(tb.q, tb.montgomery_q_inv, residues.data(),
                                                 key_words.data(), acc.data(), l, n, count,
                                                 split.limbs, limb, x);
      }
    }
    limbs.plan().inverse(acc, ring::InverseScale::montgomery);
    Vec out_a(len, kPoison), out_b(len, kPoison);
    const u64* acc_b = acc.data() + split.limbs * len;
    for (std::size_t x = 0; x < len; ++x) {
      out_a[x] = u64{0} -
                 cuda::block::limb_combine_word(tb.q, acc.data(), split.limbs, split.shift, len, x);
      out_b[x] =
          sb[x] - cuda::block::limb_combine_word(tb.q, acc_b, split.limbs, split.shift, len, x);
    }
    // The same sums with the two-prime product of ring::ExactProduct, row by row, each key word
    // rounded to the nearest multiple of 2^shift for one limb.
    auto round_key = [&](Vec words) {
      if (split.limbs == 1) {
        const u64 half = u64{1} << (split.shift - 1), low = (u64{1} << split.shift) - 1;
        for (u64& w : words)
          w = (w + half) & ~low;
      }
      return words;
    };
    const ring::ExactProduct& exact = ring::ExactProduct::shared(p.ring);
    for (std::size_t c = 0; c < count; ++c) {
      Vec sum_a(2 * n, 0), sum_b(2 * n, 0), rd(2 * n), rk(2 * n), torus(n);
      std::vector<u64> seed_a(n);
      for (std::uint32_t i = 0; i < l; ++i) {
        exact.to_ntt(std::span<const u64>(digits.data() + i * len + c * n, n), rd);
        core::expand_seed(ksk.seeds()[i], seed_a);
        exact.to_ntt(round_key(seed_a), rk);
        exact.multiply_accumulate(rd, rk, sum_a);
        exact.to_ntt(round_key(Vec(ksk.torus_b(i).begin(), ksk.torus_b(i).end())), rk);
        exact.multiply_accumulate(rd, rk, sum_b);
      }
      exact.from_ntt(sum_a, torus);
      for (std::size_t j = 0; j < n; ++j)
        ASSERT_EQ(out_a[c * n + j], u64{0} - torus[j]) << name << ", a of ciphertext " << c;
      exact.from_ntt(sum_b, torus);
      for (std::size_t j = 0; j < n; ++j)
        ASSERT_EQ(out_b[c * n + j], sb[c * n + j] - torus[j]) << name << ", b of ciphertext " << c;
    }
    // The CPU KeySwitcher, ciphertext by ciphertext.
    rlwe::KeySwitcher switcher(p, g);
    for (std::size_t c = 0; c < count; ++c) {
      rlwe::Ciphertext in(p.ring), out(p.ring);
      std::copy(a.begin() + c * n, a.begin() + (c + 1) * n, in.a.coeffs().begin());
      std::copy(b.begin() + c * n, b.begin() + (c + 1) * n, in.b.coeffs().begin());
      switcher.automorphism(ksk, in, out);
      ASSERT_TRUE(std::equal(out.a.coeffs().begin(), out.a.coeffs().end(), out_a.begin() + c * n))
          << name << ", ciphertext " << c;
      ASSERT_TRUE(std::equal(out.b.coeffs().begin(), out.b.coeffs().end(), out_b.begin() + c * n))
          << name << ", ciphertext " << c;
    }
  }
}

}  // namespace
