// The lanes on a device backend against the CPU's, word for word: lane arithmetic and the refresh
// in its three modes, from the same keys and ciphertexts, the device's operands resident; the
// digit conversions (B -> A -> B), the operations on canonical digits (less than, equal, digit
// 0, beta^n's bit) and a field product with its refresh. Run by
// the emulated device in CI (test_lanes_device_emulation.cpp) and by the real one where there is a
// GPU (tests/cuda/test_cuda_lanes.cpp). The lanes are written over the RNS primitives only, so
// these cases cover what a CUDA backend must give: the same words.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/lanes/lanes.hpp"

namespace safhire::lanes::testing {

using MakeOps = std::function<std::unique_ptr<ckks::RnsOps>(const ckks::CkksContext&)>;
// Called just before and after the device's refresh, whose operands are all resident.
using Around = std::function<void(bool before, const char* name)>;

inline void lanes_match(const MakeOps& make, const Around& around = {},
                        const char* space_name = "lanes-n12-256-b2", RefreshParams params = {}) {
  params.plan_plain = true;
  const LaneContext context(named_lane_space(space_name), /*allow_insecure=*/true);
  const auto cpu_ops = ckks::make_cpu_rns_ops(context.ckks(), 2);
  const auto gpu_ops = make(context.ckks());
  const LaneRefresher cpu_refresher(context, *cpu_ops, params);
  LaneRefresher gpu_refresher(context, *gpu_ops, params);
  gpu_refresher.make_resident(*gpu_ops);
  auto random = core::SeededRandom::from_counter(0x1a4e);
  ckks::KeyGenerator generator(context.ckks(), *cpu_ops, random);
  const auto sk = generator.secret_key();
  const LaneKeys keys = cpu_refresher.keys(generator, sk, std::vector<int>{1});
  LaneKeys resident_keys = keys;
  ckks::make_resident(*gpu_ops, resident_keys);
  const LaneEncryptor encryptor(context, *cpu_ops, random);
  const LaneDecryptor decryptor(context, *cpu_ops, sk);
  const LaneEvaluator cpu_ev(context, *cpu_ops), gpu_ev(context, *gpu_ops);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(5);
  std::vector<mpz_class> a(context.space().lanes()), b(a.size());
  for (auto& x : a)
    x = gmp.get_z_range(context.modulus());
  for (auto& x : b)
    x = gmp.get_z_range(context.modulus());
  const auto ca = encryptor.encrypt(a, sk), cb = encryptor.encrypt(b, sk);
  auto resident = [&](LaneCiphertext x) {
    ckks::make_resident(*gpu_ops, x.ct);
    return x;
  };
  auto host = [&](LaneCiphertext x) {
    ckks::to_host(*gpu_ops, x.ct);
    return x;
  };
  auto expect_same = [&](const LaneCiphertext& want, const LaneCiphertext& got, const char* what) {
    ASSERT_EQ(want.level(), got.level()) << what;
    ASSERT_EQ(want.ct.scale, got.ct.scale) << what;
    ASSERT_EQ(want.ct.c, got.ct.c) << what;
    ASSERT_EQ(want.digit_bound, got.digit_bound) << what;
    ASSERT_EQ(want.noise, got.noise) << what;
  };
  const auto ra = resident(ca), rb = resident(cb);
  const auto& rlk = keys.relinearization;
  const auto product = cpu_ev.multiply(ca, cb, rlk);
  expect_same(product, host(gpu_ev.multiply(ra, rb, resident_keys.relinearization)), "multiply");
  expect_same(cpu_ev.add(ca, cb), host(gpu_ev.add(ra, rb)), "add");
  expect_same(cpu_ev.multiply_integer(ca, b[0]), host(gpu_ev.multiply_integer(ra, b[0])),
              "multiply_integer");
  expect_same(cpu_ev.multiply_integers(ca, b), host(gpu_ev.multiply_integers(ra, b)),
              "multiply_integers");
  expect_same(cpu_ev.multiply_monomial(ca, 5), host(gpu_ev.multiply_monomial(ra, 5)),
              "multiply_monomial");
  expect_same(cpu_ev.rotate_lanes(ca, 1, keys.galois),
              host(gpu_ev.rotate_lanes(ra, 1, resident_keys.galois)), "rotate_lanes");
  const auto rproduct = resident(product);
  for (const RefreshMode mode : {RefreshMode::clean, RefreshMode::plain, RefreshMode::unreduced}) {
    const char* name = mode == RefreshMode::clean   ? "refresh"
                       : mode == RefreshMode::plain ? "plain refresh"
                                                    : "unreduced refresh";
    const auto want = cpu_refresher.refresh(product, keys, mode);
    if (around) around(true, name);
    auto got = gpu_refresher.refresh(rproduct, resident_keys, mode);
    if (around) around(false, name);
    expect_same(want, host(got), name);
    // And it is the product, exactly.
    const auto d = decryptor.decrypt(host(got));
    for (std::size_t r = 0; r < a.size(); ++r)
      ASSERT_EQ(d.integers[r], a[r] * b[r] % context.modulus()) << name << ", lane " << r;
  }
}

// The digit conversions on lanes-n12-256-b2-k5 and a product of F_(17^8) elements refreshed, on
// the device against the CPU, word for word, and exact.
inline void conversions_and_fields_match(const MakeOps& make) {
  {
    const LaneContext context(named_lane_space("lanes-n12-256-b2-k5"), true);
    const auto cpu_ops = ckks::make_cpu_rns_ops(context.ckks(), 2);
    const auto gpu_ops = make(context.ckks());
    const LaneConverter cpu(context, *cpu_ops);
    LaneConverter gpu(context, *gpu_ops);
    gpu.make_resident(*gpu_ops);
    auto random = core::SeededRandom::from_counter(0xc0);
    ckks::KeyGenerator generator(context.ckks(), *cpu_ops, random);
    const auto sk = generator.secret_key();
    ckks::GaloisKeys keys;
    cpu.add_keys(generator, sk, keys);
    ckks::GaloisKeys resident_keys = keys;
    ckks::make_resident(*gpu_ops, resident_keys);
    gmp_randclass gmp(gmp_randinit_default);
    gmp.seed(9);
    std::vector<mpz_class> a(context.space().lanes());
    for (auto& x : a)
      x = gmp.get_z_range(context.modulus());
    const LaneCiphertext x = LaneEncryptor(context, *cpu_ops, random).encrypt(a, sk);
    LaneCiphertext rx = x;
    ckks::make_resident(*gpu_ops, rx.ct);
    const DigitSlots want = cpu.to_slots(x, keys);
    DigitSlots got = gpu.to_slots(rx, resident_keys);
    const LaneCiphertext back = cpu.to_lanes(want, keys);
    LaneCiphertext got_back = gpu.to_lanes(got, resident_keys);
    ckks::to_host(*gpu_ops, got.low);
    ckks::to_host(*gpu_ops, got.high);
    ckks::to_host(*gpu_ops, got_back.ct);
    ASSERT_EQ(want.low.c, got.low.c) << "to_slots (low)";
    ASSERT_EQ(want.high.c, got.high.c) << "to_slots (high)";
    ASSERT_EQ(back.ct.c, got_back.ct.c) << "to_lanes";
    ASSERT_EQ(LaneDecryptor(context, *cpu_ops, sk).decrypt(got_back).integers, a) << "round trip";
  }
  const LaneContext context(named_lane_space("field-n12-17^8"), true);
  const FieldSpace field(context.space());
  const auto cpu_ops = ckks::make_cpu_rns_ops(context.ckks(), 2);
  const auto gpu_ops = make(context.ckks());
  const LaneRefresher cpu_refresher(context, *cpu_ops);
  LaneRefresher gpu_refresher(context, *gpu_ops);
  gpu_refresher.make_resident(*gpu_ops);
  auto random = core::SeededRandom::from_counter(0xf1);
  ckks::KeyGenerator generator(context.ckks(), *cpu_ops, random);
  const auto sk = generator.secret_key();
  const LaneKeys keys = cpu_refresher.keys(generator, sk);
  LaneKeys resident_keys = keys;
  ckks::make_resident(*gpu_ops, resident_keys);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(11);
  std::vector<FieldElement> a(field.elements(), FieldElement(field.degree())), b = a;
  for (auto* v : {&a, &b}) {
    for (auto& e : *v) {
      for (auto& c : e)
        c = gmp.get_z_range(field.prime());
    }
  }
  const LaneEncryptor encryptor(context, *cpu_ops, random);
  const auto ca = encryptor.encrypt_digits(field.digits(a, context.space().digits), sk);
  const auto cb = encryptor.encrypt_digits(field.digits(b, context.space().digits), sk);
  auto ra = ca, rb = cb;
  ckks::make_resident(*gpu_ops, ra.ct);
  ckks::make_resident(*gpu_ops, rb.ct);
  const LaneEvaluator cpu_ev(context, *cpu_ops), gpu_ev(context, *gpu_ops);
  const auto want = cpu_refresher.refresh(cpu_ev.multiply(ca, cb, keys.relinearization), keys);
  auto got =
      gpu_refresher.refresh(gpu_ev.multiply(ra, rb, resident_keys.relinearization), resident_keys);
  ckks::to_host(*gpu_ops, got.ct);
  ASSERT_EQ(want.ct.c, got.ct.c) << "field product and refresh";
  // Exact: element by element, a b modulo Y^d - gamma_i and p.
  const auto elements = field.elements_of(LaneDecryptor(context, *cpu_ops, sk).decrypt(got).digits);
  const std::size_t d = field.degree();
  for (std::size_t e = 0; e < elements.size(); ++e) {
    const mpz_class& gamma = field.gammas()[e % field.per_lane()];
    FieldElement w(d, 0);
    for (std::size_t i = 0; i < d; ++i) {
      for (std::size_t j = 0; j < d; ++j)
        w[(i + j) % d] += a[e][i] * b[e][j] * (i + j < d ? mpz_class(1) : gamma);
    }
    for (auto& c : w)
      c %= field.prime();
    ASSERT_EQ(elements[e], w) << "element " << e;
  }
}

// The operations on canonical digits (digits.hpp) on lanes-n12-256-b2, on the device against the
// CPU, word for word, and exact against GMP.
inline void digit_operations_match(const MakeOps& make) {
  const LaneContext context(named_lane_space("lanes-n12-256-b2"), true);
  const auto cpu_ops = ckks::make_cpu_rns_ops(context.ckks(), 2);
  const auto gpu_ops = make(context.ckks());
  const DigitEvaluator cpu(context, *cpu_ops), gpu(context, *gpu_ops);
  auto random = core::SeededRandom::from_counter(0xd1);
  ckks::KeyGenerator generator(context.ckks(), *cpu_ops, random);
  const auto sk = generator.secret_key();
  const auto rlk = generator.relinearization_key(sk);
  ckks::GaloisKeys keys;
  cpu.add_keys(generator, sk, keys);
  ckks::GaloisKeys resident_keys = keys;
  ckks::make_resident(*gpu_ops, resident_keys);
  ckks::SwitchingKey resident_rlk = rlk;
  ckks::make_resident(*gpu_ops, resident_rlk);
  gmp_randclass gmp(gmp_randinit_default);
  gmp.seed(13);
  std::vector<mpz_class> a(context.space().lanes()), b(a.size());
  for (std::size_t r = 0; r < a.size(); ++r) {
    a[r] = gmp.get_z_range(context.modulus());
    b[r] = r % 3 == 0 ? a[r] : mpz_class(gmp.get_z_range(context.modulus()));
  }
  a[1] = context.modulus() - 1;  // beta^n
  const DigitEncryptor encryptor(context, *cpu_ops, random);
  const DigitSlots x = encryptor.encrypt(a, sk), y = encryptor.encrypt(b, sk);
  DigitSlots rx = x, ry = y;
  for (auto* part : {&rx.low, &rx.high, &ry.low, &ry.high})
    ckks::make_resident(*gpu_ops, *part);
  const DigitDecryptor decryptor(context, *cpu_ops, sk);
  const std::uint64_t top_bit = context.space().lane_degree;
  using Op = std::function<LaneValues(const DigitEvaluator&, const DigitSlots&, const DigitSlots&,
                                      const ckks::SwitchingKey&, const ckks::GaloisKeys&)>;
  using Want = std::function<long(std::size_t)>;
  const std::tuple<const char*, Op, Want> ops[] = {
      {"less_than",
       [](const DigitEvaluator& e, const DigitSlots& u, const DigitSlots& v,
          const ckks::SwitchingKey& k,
          const ckks::GaloisKeys& g) { return e.less_than(u, v, k, g); },
       [&](std::size_t r) { return a[r] < b[r] ? 1L : 0L; }},
      {"equal",
       [](const DigitEvaluator& e, const DigitSlots& u, const DigitSlots& v,
          const ckks::SwitchingKey& k, const ckks::GaloisKeys& g) { return e.equal(u, v, k, g); },
       [&](std::size_t r) { return a[r] == b[r] ? 1L : 0L; }},
      {"digit 0",
       [](const DigitEvaluator& e, const DigitSlots& u, const DigitSlots&,
          const ckks::SwitchingKey& k, const ckks::GaloisKeys& g) { return e.digit(u, 0, k, g); },
       [&](std::size_t r) {
         return r == 1 ? 0L : static_cast<long>(mpz_tstbit(a[r].get_mpz_t(), 0));
       }},
      {"bit n",
       [top_bit](const DigitEvaluator& e, const DigitSlots& u, const DigitSlots&,
                 const ckks::SwitchingKey& k,
                 const ckks::GaloisKeys& g) { return e.bit(u, top_bit, k, g); },
       [&](std::size_t r) { return r == 1 ? 1L : 0L; }}};
  for (const auto& [name, op, want] : ops) {
    const LaneValues expected = op(cpu, x, y, rlk, keys);
    LaneValues got = op(gpu, rx, ry, resident_rlk, resident_keys);
    ckks::to_host(*gpu_ops, got.ct);
    ASSERT_EQ(expected.ct.c, got.ct.c) << name;
    const auto values = decryptor.decrypt(got).values;
    for (std::size_t r = 0; r < values.size(); ++r)
      ASSERT_EQ(values[r], want(r)) << name << ", lane " << r;
  }
}

}  // namespace safhire::lanes::testing
