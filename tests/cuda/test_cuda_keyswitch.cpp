// Batched key switching and coefficient-domain automorphisms on the device against the CPU path,
// word for word, on the default sets of the three rings. Skipped with "no CUDA device" where none
// is present (tests/rlwe/test_keyswitch_emulation.cpp replays the same pipeline on the CPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "cuda_test.hpp"
#include "safhire/cuda/device.hpp"
#include "safhire/cuda/keyswitch.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;

class CudaKeySwitch : public safhire::testing::CudaTestWithParam<const char*> {};

TEST_P(CudaKeySwitch, BatchedAutomorphismsMatchTheCpu) {
  const auto& p = rlwe::parameter_set(GetParam());
  const std::uint32_t n = p.ring.N();
  auto random = core::SeededRandom::from_counter(120);
  const rlwe::SecretKey key(p, random);
  rlwe::Encryptor enc(key, random);
  for (std::uint32_t gamma : {0U, 1U}) {
    const rlwe::Gadget& g = p.gadget(gamma);
    const rlwe::KeySwitchKey ksk = rlwe::make_automorphism_key(key, p.ring.M() - 1, g, random);
    const std::size_t count = 17;
    Vec a(count * n), b(count * n), expected_a(count * n), expected_b(count * n);
    rlwe::KeySwitcher switcher(p, g);
    std::mt19937_64 rng(120);
    for (std::size_t c = 0; c < count; ++c) {
      ring::TorusPoly mu(p.ring);
      for (auto& x : mu.coeffs())
        x = rng();
      const rlwe::Ciphertext ct = enc.encrypt(mu.coeffs());
      rlwe::Ciphertext out(p.ring);
      switcher.automorphism(ksk, ct, out);
      std::copy(ct.a.coeffs().begin(), ct.a.coeffs().end(), a.begin() + c * n);
      std::copy(ct.b.coeffs().begin(), ct.b.coeffs().end(), b.begin() + c * n);
      std::copy(out.a.coeffs().begin(), out.a.coeffs().end(), expected_a.begin() + c * n);
      std::copy(out.b.coeffs().begin(), out.b.coeffs().end(), expected_b.begin() + c * n);
    }
    const cuda::DeviceKeySwitchKey device_key(ksk, stream());
    cuda::DeviceKeySwitcher device_switcher(p, g, stream());
    cuda::DeviceBuffer<u64> da(std::span<const u64>(a), stream());
    cuda::DeviceBuffer<u64> db(std::span<const u64>(b), stream());
    device_switcher.automorphism(device_key, da.data(), db.data(), da.data(), db.data(), count,
                                 stream());
    Vec got_a(count * n), got_b(count * n);
    da.download(got_a);
    db.download(got_b);
    cuda::check(cudaStreamSynchronize(stream()), "sync");
    EXPECT_EQ(got_a, expected_a) << "gamma " << gamma;
    EXPECT_EQ(got_b, expected_b) << "gamma " << gamma;
    EXPECT_EQ(device_switcher.key_switches(), count);
  }
}

TEST_P(CudaKeySwitch, CoefficientAutomorphismMatchesTheCpu) {
  const auto& p = rlwe::parameter_set(GetParam());
  const std::uint32_t n = p.ring.N();
  std::mt19937_64 rng(121);
  const std::size_t count = 5;
  Vec in(count * n), expected(count * n);
  for (auto& x : in)
    x = rng();
  for (u64 k : {u64{2}, u64{p.ring.M() - 1}, u64{1 + p.ring.m()}}) {
    for (std::size_t c = 0; c < count; ++c) {
      ring::automorphism(p.ring, std::span<const u64>(in.data() + c * n, n), k,
                         std::span<u64>(expected.data() + c * n, n), ring::TorusArith{});
    }
    cuda::DeviceBuffer<u64> din(std::span<const u64>(in), stream()), dout(in.size(), stream());
    cuda::apply_automorphism(p.ring, k, din.data(), dout.data(), count, stream());
    Vec got(in.size());
    dout.download(got);
    cuda::check(cudaStreamSynchronize(stream()), "sync");
    EXPECT_EQ(got, expected) << "k = " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(DefaultSets, CudaKeySwitch,
                         ::testing::Values("default-b8", "default-b12", "default-b16"),
                         [](const auto& param_info) {
                           return safhire::testing::set_label(param_info.param);
                         });

}  // namespace
