// The lanes on a device backend against the CPU's, word for word: lane arithmetic and the refresh
// in its three modes, from the same keys and ciphertexts, the device's operands resident. Run by
// the emulated device in CI (test_lanes_device_emulation.cpp) and by the real one where there is a
// GPU (tests/cuda/test_cuda_lanes.cpp). The lanes are written over the RNS primitives only, so
// these cases cover what a CUDA backend must give: the same words.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
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

}  // namespace safhire::lanes::testing
