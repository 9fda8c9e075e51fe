// The CKKS device backend against the CPU's RnsOps, word for word, written once and run twice:
// by tests/cuda/test_cuda_ckks.cpp on the CUDA backend where a device is present, and by
// tests/ckks/test_ckks_device_emulation.cpp on the same backend code over the kernel bodies run
// on CPU threads (cuda/portable/device_rns_ops.hpp), in every CI run. Each case: every primitive
// on random limbs, then whole evaluator operations (multiply-relinearize-rescale, rotations,
// hoisted rotations, linear transforms, fused key switching, bootstrapping) run once over each
// backend from the same keys and ciphertexts, with host operands (staged per operation) and
// with resident ciphertexts and keys.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/linear_transform.hpp"

namespace safhire::ckks::testing {

using u64 = std::uint64_t;

// Makes the backend under test for a context.
using MakeOps = std::function<std::unique_ptr<RnsOps>(const CkksContext&)>;

struct Both {
  CkksContext context;
  std::unique_ptr<RnsOps> cpu, gpu;
  Both(const char* set, const MakeOps& make)
      : context(named_set(set)), cpu(make_cpu_rns_ops(context, 2)), gpu(make(context)) {}
};

// A device backend's results are resident: their words, brought to the host to compare.
inline std::vector<RnsPoly> host_words(const RnsOps& ops, Ciphertext ct) {
  to_host(ops, ct);
  return ct.c;
}

// Keys made on the CPU from a seeded generator (with the rotations `steps` and conjugation) and
// two encryptions of z_i = f(i) over every slot at the top level.
struct KeysAndCiphertexts {
  SecretKey sk;
  SwitchingKey rlk;
  GaloisKeys galois;
  Ciphertext x, y;
};
inline KeysAndCiphertexts keys_and_two_ciphertexts(const CkksContext& c, const RnsOps& cpu,
                                                   std::uint64_t seed,
                                                   const std::vector<int>& steps,
                                                   double (*f)(double)) {
  auto rng = safhire::core::SeededRandom::from_counter(seed);
  KeyGenerator gen(c, cpu, rng);
  auto sk = gen.secret_key();
  auto rlk = gen.relinearization_key(sk);
  auto galois = gen.galois_keys(sk, steps, true);
  const Encoder encoder(c, cpu);
  std::vector<double> z(c.degree() / 2);
  for (std::size_t i = 0; i < z.size(); ++i)
    z[i] = f(static_cast<double>(i));
  Encryptor enc(c, cpu, rng);
  const double scale = std::exp2(c.params().log_scale);
  auto x = enc.encrypt(encoder.encode(z, scale, c.max_level()), sk);
  auto y = enc.encrypt(encoder.encode(z, scale, c.max_level()), sk);
  return {std::move(sk), std::move(rlk), std::move(galois), std::move(x), std::move(y)};
}

inline RnsPoly random_poly(const CkksContext& context, std::vector<ModulusIndex> moduli, bool ntt,
                           u64 seed) {
  std::mt19937_64 rng(seed);
  RnsPoly p(context.degree(), std::move(moduli), ntt);
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    for (auto& x : p.limb(k))
      x = rng() % context.prime(p.moduli[k]);
  }
  return p;
}

inline void primitives_match(const MakeOps& make, std::span<const char* const> sets) {
  for (const char* set : sets) {
    Both b(set, make);
    const auto& c = b.context;
    const std::uint32_t level = c.max_level();
    const auto all = c.qp_moduli(level);
    // NTT both ways, including a partial range of limbs.
    RnsPoly x = random_poly(c, all, false, 1), y = x;
    b.cpu->forward(x);
    b.gpu->forward(y);
    ASSERT_EQ(x, y) << set << " forward";
    b.cpu->inverse(x);
    b.gpu->inverse(y);
    ASSERT_EQ(x, y) << set << " inverse";
    b.cpu->forward(x, 1, 3);
    b.gpu->forward(y, 1, 3);
    ASSERT_EQ(x, y) << set << " forward of limbs 1..2";
    // Elementwise operations, with inputs over more limbs than the output.
    const RnsPoly a = random_poly(c, all, true, 2), d = random_poly(c, all, true, 3);
    const auto q = c.q_moduli(level);
    std::vector<u64> scalars(c.primes().size());
    for (std::size_t i = 0; i < scalars.size(); ++i)
      scalars[i] = (i * 1234567 + 89) % c.prime(static_cast<ModulusIndex>(i));
    RnsPoly o1(c.degree(), q, true), o2 = o1;
    auto same = [&](const char* what, auto op) {
      o1 = random_poly(c, q, true, 4);
      o2 = o1;
      op(*b.cpu, o1);
      op(*b.gpu, o2);
      ASSERT_EQ(o1, o2) << set << " " << what;
    };
    same("add", [&](const RnsOps& ops, RnsPoly& o) { ops.add(a, d, o); });
    same("sub", [&](const RnsOps& ops, RnsPoly& o) { ops.sub(a, d, o); });
    same("negate", [&](const RnsOps& ops, RnsPoly& o) { ops.negate(a, o); });
    same("multiply", [&](const RnsOps& ops, RnsPoly& o) { ops.multiply(a, d, o); });
    same("multiply_accumulate",
         [&](const RnsOps& ops, RnsPoly& o) { ops.multiply_accumulate(a, d, o); });
    same("sub_scale", [&](const RnsOps& ops, RnsPoly& o) { ops.sub_scale(a, d, scalars, o); });
    same("multiply_scalars",
         [&](const RnsOps& ops, RnsPoly& o) { ops.multiply_scalars(a, scalars, o); });
    const auto perm = c.ntt(0).automorphism_permutation(5);
    same("permute", [&](const RnsOps& ops, RnsPoly& o) { ops.permute(a, perm, o); });
    const RnsPoly e = random_poly(c, all, true, 5), f = random_poly(c, all, true, 6);
    const std::vector<const RnsPoly*> xs{&a, &d, &e}, ys{&f, &e, &a};
    same("inner_product", [&](const RnsOps& ops, RnsPoly& o) { ops.inner_product(xs, ys, o); });
    same("inner_product (permuted)",
         [&](const RnsOps& ops, RnsPoly& o) { ops.inner_product(xs, ys, o, perm); });
    // Compact (block-constant) first operands: blocks of 1024, 4 and 2 coefficients, and a
    // constant (one word per limb).
    RnsPoly c1(c.degree() / 1024, all, true), c2(c.degree() / 4, all, true),
        c3(c.degree() / 2, all, true), c4(1, all, true);
    for (RnsPoly* cp : {&c1, &c2, &c3, &c4}) {
      for (std::size_t k = 0; k < cp->limbs(); ++k)
        std::copy_n(a.limb(k).begin(), cp->n, cp->limb(k).begin());
    }
    const std::vector<const RnsPoly*> cs{&c1, &c2, &d, &c3, &c4};
    const std::vector<const RnsPoly*> ds{&f, &e, &a, &d, &e};
    same("inner_product (compact)",
         [&](const RnsOps& ops, RnsPoly& o) { ops.inner_product(cs, ds, o); });
    // A lazy diagonal's limbs from its signed coefficients (the extremes of int64 among them).
    std::vector<std::int64_t> signed_coefficients(c.degree());
    std::mt19937_64 coefficient_rng(9);
    for (auto& v : signed_coefficients)
      v = static_cast<std::int64_t>(coefficient_rng()) >> (coefficient_rng() % 64);
    signed_coefficients[0] = INT64_MIN;
    signed_coefficients[1] = INT64_MAX;
    signed_coefficients[2] = -1;
    signed_coefficients[3] = -static_cast<std::int64_t>(c.prime(0));
    RnsPoly l1, l2;
    b.cpu->expand_coefficients(signed_coefficients, all, l1);
    b.gpu->expand_coefficients(signed_coefficients, all, l2);
    b.gpu->to_host(l2);
    ASSERT_EQ(l1, l2) << set << " expand_coefficients";
    // Copies by modulus from limb 1 on, the output's moduli in two runs of consecutive limbs of
    // the input (the backend copies a run at once), limb 0 kept.
    std::vector<ModulusIndex> rotated(all.begin() + 2, all.end());
    rotated.insert(rotated.end(), all.begin(), all.begin() + 2);
    RnsPoly k1 = random_poly(c, rotated, true, 10), k2 = k1;
    b.cpu->copy(a, k1, 1);
    b.gpu->copy(a, k2, 1);
    b.gpu->to_host(k2);
    ASSERT_EQ(k1, k2) << set << " copy";
    // Base conversion, both variants, into a polynomial whose other limbs must be kept.
    const BaseConverter conv(c, c.q_moduli(std::min(level, 8U)), c.p_moduli());
    const RnsPoly in = random_poly(c, all, false, 7);
    for (Conversion v : {Conversion::approximate, Conversion::exact}) {
      RnsPoly r1 = random_poly(c, all, false, 8), r2 = r1;
      b.cpu->convert(conv, in, r1, v);
      b.gpu->convert(conv, in, r2, v);
      ASSERT_EQ(r1, r2) << set << " convert";
    }
  }
}

// Operations wider than one launch, on the 23 primes of the bootstrapping test ring: base
// conversions from 20 sources (two prepare launches; each target's exact rounding sums all 20)
// and into 21 targets (two convert launches), both variants; and an inner product of 16 pairs
// whose first operands are constants of one word per limb, 16 x 23 of them, more than one
// launch's parameters hold.
inline void wide_operations_match(const MakeOps& make) {
  const CkksContext c(named_set("n12-boot-test"), /*allow_insecure=*/true);
  const auto cpu = make_cpu_rns_ops(c, 2);
  const auto gpu = make(c);
  std::vector<ModulusIndex> all(c.primes().size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<ModulusIndex>(i);
  ASSERT_GE(all.size(), 23U);
  const RnsPoly in = random_poly(c, all, false, 11);
  for (const std::size_t sources : {std::size_t{20}, std::size_t{2}}) {
    const std::vector<ModulusIndex> from(all.begin(), all.begin() + sources);
    const std::vector<ModulusIndex> to(all.begin() + sources, all.end());
    const BaseConverter conv(c, from, to);
    for (Conversion v : {Conversion::approximate, Conversion::exact}) {
      RnsPoly r1 = random_poly(c, all, false, 12), r2 = r1;
      cpu->convert(conv, in, r1, v);
      gpu->convert(conv, in, r2, v);
      gpu->to_host(r2);
      ASSERT_EQ(r1, r2) << sources << " sources, variant " << static_cast<int>(v);
    }
  }
  std::vector<RnsPoly> constants, others;
  std::vector<const RnsPoly*> xs, ys;
  for (std::uint32_t j = 0; j < 16; ++j) {
    RnsPoly& k = constants.emplace_back(1, all, true);
    for (std::size_t limb = 0; limb < all.size(); ++limb)
      k.limb(limb)[0] = (j * 1000003 + limb * 7919 + 1) % c.prime(all[limb]);
    others.push_back(random_poly(c, all, true, 20 + j));
  }
  for (std::uint32_t j = 0; j < 16; ++j) {
    xs.push_back(&constants[j]);
    ys.push_back(&others[j]);
  }
  RnsPoly p1(c.degree(), all, true), p2 = p1;
  cpu->inner_product(xs, ys, p1);
  gpu->inner_product(xs, ys, p2);
  gpu->to_host(p2);
  ASSERT_EQ(p1, p2) << "inner product of 16 constant pairs";
}

inline void evaluator_operations_match(const MakeOps& make, std::span<const char* const> sets) {
  for (const char* set : sets) {
    Both b(set, make);
    const auto& c = b.context;
    const std::vector<int> steps{1, 2, 3};
    const auto [sk, rlk, galois, x, y] =
        keys_and_two_ciphertexts(c, *b.cpu, 9, steps, [](double i) { return std::sin(i); });
    const Evaluator cpu(c, *b.cpu), gpu(c, *b.gpu);
    const auto m1 = cpu.rescale(cpu.multiply_relinearize(x, y, rlk));
    const auto m2 = gpu.rescale(gpu.multiply_relinearize(x, y, rlk));
    ASSERT_EQ(m1.c, host_words(*b.gpu, m2)) << set << " multiply-relinearize-rescale";
    ASSERT_EQ(cpu.rotate(m1, 1, galois).c, host_words(*b.gpu, gpu.rotate(m2, 1, galois)))
        << set << " rotate";
    ASSERT_EQ(cpu.conjugate(x, galois).c, host_words(*b.gpu, gpu.conjugate(x, galois)))
        << set << " conjugate";
    const auto h1 = cpu.rotate_hoisted(x, steps, galois);
    const auto h2 = gpu.rotate_hoisted(x, steps, galois);
    for (std::size_t i = 0; i < steps.size(); ++i)
      ASSERT_EQ(h1[i].c, host_words(*b.gpu, h2[i])) << set << " hoisted rotation " << steps[i];
  }
}

// A seeded key's uniform half made on the device (AES-CTR and rejection in shared memory) is
// the CPU's word for word, over every prime and a few levels; seeded keys then switch alike.
inline void seeded_keys_match(const MakeOps& make, std::span<const char* const> sets) {
  for (const char* set : sets) {
    Both b(set, make);
    const auto& c = b.context;
    safhire::core::AesCtr::Key seed{};
    seed[7] = 42;
    const safhire::core::AesCtr prf(seed);
    for (std::uint32_t level : {0U, c.max_level()}) {
      const auto moduli = c.qp_moduli(level);
      RnsPoly x, y;
      b.cpu->uniform(prf, std::uint64_t{3} << 32, moduli, x);
      b.gpu->uniform(prf, std::uint64_t{3} << 32, moduli, y);
      b.gpu->to_host(y);
      ASSERT_EQ(x, y) << set << " level " << level;
    }
    auto rng = safhire::core::SeededRandom::from_counter(19);
    KeyGenerator gen(c, *b.cpu, rng);
    gen.set_seeded(true);
    const auto sk = gen.secret_key();
    const auto rlk = gen.relinearization_key(sk);
    const std::vector<int> steps{1, 5};
    const auto galois = gen.galois_keys(sk, steps, false);
    Encryptor enc(c, *b.cpu, rng);
    Encoder encoder(c, *b.cpu);
    std::vector<double> z(c.degree() / 2, 0.25);
    const auto x =
        enc.encrypt(encoder.encode(z, std::exp2(c.params().log_scale), c.max_level()), sk);
    const Evaluator cpu(c, *b.cpu), gpu(c, *b.gpu);
    ASSERT_EQ(cpu.multiply_relinearize(x, x, rlk).c,
              host_words(*b.gpu, gpu.multiply_relinearize(x, x, rlk)))
        << set;
    const auto h1 = cpu.rotate_hoisted(x, steps, galois);
    const auto h2 = gpu.rotate_hoisted(x, steps, galois);
    for (std::size_t i = 0; i < steps.size(); ++i)
      ASSERT_EQ(h1[i].c, host_words(*b.gpu, h2[i])) << set << " hoisted rotation " << steps[i];
  }
}

inline void resident_ciphertexts_and_keys_match(const MakeOps& make,
                                                std::span<const char* const> sets) {
  for (const char* set : sets) {
    Both b(set, make);
    const auto& c = b.context;
    const std::vector<int> steps{1, -2, 5};
    const auto [sk, rlk, galois, x, y] =
        keys_and_two_ciphertexts(c, *b.cpu, 11, steps, [](double i) { return std::cos(i); });

    // The same ciphertexts and keys, resident; a round trip through the device is exact.
    auto rx = x, ry = y;
    auto rrlk = rlk;
    auto rgalois = galois;
    make_resident(*b.gpu, rx);
    make_resident(*b.gpu, ry);
    make_resident(*b.gpu, rrlk);
    make_resident(*b.gpu, rgalois);
    ASSERT_TRUE(rx.c[0].on_device() && rrlk.b[0].on_device());
    auto back = rx;
    to_host(*b.gpu, back);
    ASSERT_EQ(back.c, x.c) << set << " round trip";
    RnsPoly zero = b.gpu->zeros(c.q_moduli(1), true);
    b.gpu->to_host(zero);
    ASSERT_EQ(zero, RnsPoly(c.degree(), c.q_moduli(1), true)) << set << " zeros";

    const Evaluator cpu(c, *b.cpu), gpu(c, *b.gpu);
    // Every result stays on the device until asked for.
    auto same = [&](const char* what, const Ciphertext& expect, Ciphertext got) {
      for (const auto& p : got.c)
        ASSERT_TRUE(p.on_device()) << set << " " << what << " left the device";
      to_host(*b.gpu, got);
      ASSERT_EQ(expect.c, got.c) << set << " " << what;
      ASSERT_EQ(expect.scale, got.scale) << set << " " << what;
    };
    const auto m1 = cpu.rescale(cpu.multiply_relinearize(x, y, rlk));
    const auto m2 = gpu.rescale(gpu.multiply_relinearize(rx, ry, rrlk));
    same("multiply-relinearize-rescale", m1, m2);
    same("rotate", cpu.rotate(m1, 1, galois), gpu.rotate(m2, 1, rgalois));
    same("conjugate", cpu.conjugate(x, galois), gpu.conjugate(rx, rgalois));
    same("add", cpu.add(x, y), gpu.add(rx, ry));
    same("add_constant", cpu.add_constant(x, -0.75), gpu.add_constant(rx, -0.75));
    same("multiply_constant", cpu.multiply_constant(x, 3.0, 1.0),
         gpu.multiply_constant(rx, 3.0, 1.0));
    same("drop_to_level", cpu.drop_to_level(x, 1), gpu.drop_to_level(rx, 1));
    const auto h1 = cpu.rotate_hoisted(x, steps, galois);
    const auto h2 = gpu.rotate_hoisted(rx, steps, rgalois);
    for (std::size_t i = 0; i < steps.size(); ++i)
      same("hoisted rotation", h1[i], h2[i]);
    // Decryption reads a resident ciphertext through staging, to the same plaintext.
    const auto d1 = decrypt(c, *b.cpu, m1, sk);
    const auto d2 = decrypt(c, *b.gpu, m2, sk);
    ASSERT_EQ(d1.poly, d2.poly) << set << " decrypt";
  }
}

inline void hoisted_linear_transform_matches(const MakeOps& make) {
  Both b("n13-l3", make);
  const auto& c = b.context;
  auto rng = safhire::core::SeededRandom::from_counter(21);
  KeyGenerator gen(c, *b.cpu, rng);
  const auto sk = gen.secret_key();
  const Encoder encoder(c, *b.cpu);
  const std::uint32_t n = c.degree() / 2, level = 2;
  LinearTransform::Diagonals diagonals;
  for (std::uint32_t k : {0U, 1U, 16U, 17U, n - 1}) {
    diagonals[k].resize(n);
    for (std::uint32_t j = 0; j < n; ++j)
      diagonals[k][j] = {std::sin(k + j * 0.5), std::cos(k * 0.25 + j)};
  }
  LinearTransform transform(encoder, diagonals, level, n, 0, 4);
  auto galois = gen.galois_keys(sk, transform.rotations(), false);
  std::vector<double> z(n);
  for (std::size_t i = 0; i < z.size(); ++i)
    z[i] = std::sin(0.1 * static_cast<double>(i));
  Encryptor enc(c, *b.cpu, rng);
  const auto x = enc.encrypt(encoder.encode(z, std::exp2(c.params().log_scale), level), sk);
  const Evaluator cpu(c, *b.cpu), gpu(c, *b.gpu);
  const auto expect = transform.apply(cpu, x, galois);
  auto rx = x;
  make_resident(*b.gpu, rx);
  make_resident(*b.gpu, galois);
  transform.make_resident(*b.gpu);
  auto got = transform.apply(gpu, rx, galois);
  to_host(*b.gpu, got);
  ASSERT_EQ(expect.c, got.c);
}

// The fused key-switching paths against the CPU's: the relinearization and rescale in one
// division; linear transforms with eager and lazy diagonals (signed coefficients made into limbs
// where used), full and seeded keys (a_j regenerated inside the inner product), the giants' sums
// from the babies limb by limb (rotate_hoisted_rows) or whole, with and without the closing
// ModDown-and-rescale. The CUDA backend runs the default compositions of its own kernels.
inline void fused_key_switching_matches(const MakeOps& make) {
  Both b("n13-l3", make);
  const auto& c = b.context;
  auto rng = safhire::core::SeededRandom::from_counter(31);
  KeyGenerator gen(c, *b.cpu, rng);
  const auto sk = gen.secret_key();
  const auto rlk = gen.relinearization_key(sk);
  const Encoder encoder(c, *b.cpu);
  const std::uint32_t n = c.degree() / 2, level = 3;
  std::vector<double> z(n);
  for (std::size_t i = 0; i < z.size(); ++i)
    z[i] = std::cos(0.3 * static_cast<double>(i));
  Encryptor enc(c, *b.cpu, rng);
  const auto x = enc.encrypt(encoder.encode(z, std::exp2(c.params().log_scale), level), sk);
  const Evaluator cpu(c, *b.cpu), gpu(c, *b.gpu);
  ASSERT_EQ(cpu.relinearize_rescale(cpu.multiply(x, x), rlk).c,
            host_words(*b.gpu, gpu.relinearize_rescale(gpu.multiply(x, x), rlk)))
      << "relinearize_rescale";
  // Random diagonals (not periodic: lazy when asked) and one constant (compact) diagonal.
  LinearTransform::Diagonals diagonals;
  for (std::uint32_t k : {0U, 1U, 2U, 5U, 9U, 17U, n - 3, n - 1}) {
    diagonals[k].resize(n);
    for (std::uint32_t j = 0; j < n; ++j)
      diagonals[k][j] = {std::sin(k + j * 0.7), std::cos(k * 0.5 + j)};
  }
  diagonals[4] = std::vector<std::complex<double>>(n, {0.25, -0.5});
  for (const bool seeded : {false, true}) {
    for (const bool lazy : {false, true}) {
      for (const std::uint32_t n1 : {4U, 0U}) {
        LinearTransform transform(encoder, diagonals, level, n, 0, n1, 0, lazy);
        gen.set_seeded(seeded);
        auto galois = gen.galois_keys(sk, transform.rotations(), false);
        for (const bool rescale : {false, true}) {
          const auto want = transform.apply(cpu, x, galois, rescale);
          auto rx = x;
          auto rgalois = galois;
          make_resident(*b.gpu, rx);
          make_resident(*b.gpu, rgalois);
          LinearTransform resident = transform;
          resident.make_resident(*b.gpu);
          auto got = resident.apply(gpu, rx, rgalois, rescale);
          to_host(*b.gpu, got);
          ASSERT_EQ(want.c, got.c)
              << "seeded " << seeded << " lazy " << lazy << " n1 " << n1 << " rescale " << rescale;
        }
      }
    }
  }
}

// A bootstrap configuration: slots (0: full), the slim order, seeded keys, lazy matrices and the
// babies' cap (0: none).
struct BootstrapConfig {
  const char* name;
  std::uint32_t slots;
  bool slim, seeded, lazy;
  std::uint32_t max_babies;
};
// The classic order with full keys; the 4 GB configuration's shape (slim, seeded keys, lazy
// matrices, at most 8 babies); sparse slots packed through one EvalMod.
inline constexpr BootstrapConfig kBootstrapConfigs[] = {
    {"classic", 0, false, false, false, 0},
    {"slim low-memory", 0, true, true, true, 8},
    {"sparse packed", 64, false, false, false, 0}};

// The whole bootstrap on the device, resident, against the CPU's word for word, from the same
// keys and ciphertext, in each configuration (by default the N = 2^12 test ring in all three).
// around(true, name) and around(false, name) are called just before and after the device's
// bootstrap, whose operands are all resident (the emulation checks there that no polynomial
// crosses between host and device).
using Around = std::function<void(bool before, const char* name)>;
inline void bootstrap_matches(const MakeOps& make, const Around& around = {},
                              const char* set = "n12-boot-test",
                              std::span<const BootstrapConfig> configs = kBootstrapConfigs) {
  const CkksContext c(named_set(set), /*allow_insecure=*/true);
  const auto cpu_ops = make_cpu_rns_ops(c, 2);
  const auto gpu_ops = make(c);
  for (const BootstrapConfig& cfg : configs) {
    BootstrapParams params = default_bootstrap_params(c.params(), cfg.slots);
    params.slim = cfg.slim;
    params.lazy_matrices = cfg.lazy;
    params.max_babies = cfg.max_babies;
    const Encoder cpu_encoder(c, *cpu_ops), gpu_encoder(c, *gpu_ops);
    const Evaluator cpu_ev(c, *cpu_ops), gpu_ev(c, *gpu_ops);
    const Bootstrapper cpu_boot(cpu_encoder, cpu_ev, params);
    Bootstrapper gpu_boot(gpu_encoder, gpu_ev, params);
    gpu_boot.make_resident(*gpu_ops);
    auto rng = safhire::core::SeededRandom::from_counter(33);
    KeyGenerator gen(c, *cpu_ops, rng);
    gen.set_seeded(cfg.seeded);
    const auto sk = gen.secret_key();
    const BootstrapKeys keys = cpu_boot.keys(gen, sk);
    const std::uint32_t slots = cfg.slots == 0 ? c.degree() / 2 : cfg.slots;
    std::vector<std::complex<double>> z(slots);
    for (std::uint32_t i = 0; i < slots; ++i)
      z[i] = {std::sin(0.01 * i), std::cos(0.02 * i) / 2};
    Encryptor enc(c, *cpu_ops, rng);
    const auto x =
        enc.encrypt(cpu_encoder.encode(z, std::exp2(45), cpu_boot.input_level(), slots), sk);
    const auto want = cpu_boot.bootstrap(x, keys);
    BootstrapKeys resident_keys = keys;
    make_resident(*gpu_ops, resident_keys);
    auto rx = x;
    make_resident(*gpu_ops, rx);
    if (around) around(true, cfg.name);
    auto got = gpu_boot.bootstrap(rx, resident_keys);
    if (around) around(false, cfg.name);
    to_host(*gpu_ops, got);
    ASSERT_EQ(want.level(), got.level()) << cfg.name;
    ASSERT_EQ(want.c, got.c) << cfg.name;
    // And it is a bootstrap: the slots come back (the test ring's precision is about 2^-20).
    const auto decoded = cpu_encoder.decode(decrypt(c, *cpu_ops, got, sk));
    double worst = 0;
    for (std::uint32_t i = 0; i < slots; ++i)
      worst = std::max(worst, std::abs(decoded[i] - z[i]));
    EXPECT_LT(worst, std::exp2(-15)) << cfg.name;
  }
}

}  // namespace safhire::ckks::testing
