// The CUDA key-switching pipeline (cuda/keyswitch.cu) replayed on the CPU with the kernels'
// shared per-element functions and the device layouts: decompose_word into [level][count][N],
// residues [prime][level][count][N], the multiply-accumulate element over the key's RNS-NTT
// layout, accumulators [a, b][prime][count][N], inverse NTTs, CRT, combine. It must equal the
// CPU KeySwitcher word for word on a batch; tests/cuda runs the real kernels on a GPU.
#include <gtest/gtest.h>

#include <random>

#include "keyswitch_element.cuh"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/detail/automorphism_word.hpp"
#include "safhire/rlwe/keyswitch.hpp"
#include "simd/dispatch.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;

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
    Vec sa(len), sb(len);
    for (std::size_t x = 0; x < len; ++x) {
      const std::size_t row = x / n;
      const auto j = static_cast<std::uint32_t>(x % n);
      sa[x] = ring::detail::automorphism_coefficient(a.data() + row * n, j, k_inv, n, p.ring.M(),
                                                     p.ring.m());
      sb[x] = ring::detail::automorphism_coefficient(b.data() + row * n, j, k_inv, n, p.ring.M(),
                                                     p.ring.m());
    }
    // decompose_kernel, then lift and NTT per prime: residues [p][i][c][N].
    Vec digits(l * len);
    for (std::size_t x = 0; x < len; ++x) {
      rlwe::detail::decompose_word(sa[x], decomposer.view(), digits.data() + x, len);
    }
    const ring::ExactProduct& product = ring::ExactProduct::shared(p.ring);
    const auto& cpu = ring::simd::checked_kernels(ring::SimdIsa::scalar);
    Vec residues(2 * l * len);
    cuda::block::PrimePair primes{};
    for (int q = 0; q < 2; ++q) {
      const auto& tb = product.plan(q).tables();
      primes.q[q] = tb.q;
      primes.q_inv[q] = tb.montgomery_q_inv;
      cpu.lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, digits.data(),
                     residues.data() + q * l * len, l * len);
      product.plan(q).forward(std::span<u64>(residues.data() + q * l * len, l * len));
    }
    // The key as DeviceKeySwitchKey lays it out: [i][a, b][prime][N].
    const Vec key_words = ksk.rns_ntt_form();
    Vec acc(4 * len);
    for (std::uint32_t q = 0; q < 2; ++q) {
      for (std::size_t x = 0; x < len; ++x) {
        cuda::block::multiply_accumulate_element(primes, residues.data(), key_words.data(),
                                                 acc.data(), l, n, count, q, x);
      }
    }
    Vec out_a(len), out_b(len);
    for (int comp = 0; comp < 2; ++comp) {
      u64* base = acc.data() + comp * 2 * len;
      for (int q = 0; q < 2; ++q) {
        product.plan(q).inverse(std::span<u64>(base + q * len, len),
                                ring::InverseScale::montgomery);
      }
      for (std::size_t x = 0; x < len; ++x) {
        const u64 sum = product.crt().lift(base[x], base[len + x]);
        if (comp == 0) {
          out_a[x] = u64{0} - sum;
        } else {
          out_b[x] = sb[x] - sum;
        }
      }
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
