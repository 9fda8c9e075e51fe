// Trees on the device against rlwe::TraceTrees, word for word: extraction at gamma 0, 1, 2 and
// packing of all N LWE samples, each for a batch of two inputs, on the default sets of the three
// rings. Skipped with "no CUDA device" where none is present (tests/rlwe/test_trees_emulation.cpp
// replays the same level algorithm on the CPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "cuda_test.hpp"
#include "safhire/cuda/device.hpp"
#include "safhire/cuda/trees.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;

class CudaTrees : public safhire::testing::CudaTestWithParam<const char*> {};

void expect_batch_equals(const cuda::DeviceCiphertexts& got,
                         const std::vector<rlwe::Ciphertext>& want, cudaStream_t stream,
                         const std::string& what) {
  ASSERT_EQ(got.count, want.size()) << what;
  const std::size_t n = want.front().a.degree();
  Vec a(got.count * n), b(got.count * n);
  cuda::check(cudaMemcpyAsync(a.data(), got.a.data(), a.size() * sizeof(u64),
                              cudaMemcpyDeviceToHost, stream),
              "download a");
  cuda::check(cudaMemcpyAsync(b.data(), got.b.data(), b.size() * sizeof(u64),
                              cudaMemcpyDeviceToHost, stream),
              "download b");
  cuda::check(cudaStreamSynchronize(stream), "sync");
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::equal(want[i].a.coeffs().begin(), want[i].a.coeffs().end(), a.begin() + i * n))
        << what << ", output " << i;
    ASSERT_TRUE(std::equal(want[i].b.coeffs().begin(), want[i].b.coeffs().end(), b.begin() + i * n))
        << what << ", output " << i;
  }
}

TEST_P(CudaTrees, SplitAndPackMatchTheCpu) {
  const auto& p = rlwe::parameter_set(GetParam());
  const ring::RingParams& r = p.ring;
  const std::size_t n = r.N(), count = 2;
  auto random = core::SeededRandom::from_counter(140);
  const rlwe::SecretKey key(p, random);
  rlwe::Encryptor enc(key, random);
  std::mt19937_64 rng(140);
  std::vector<rlwe::Ciphertext> cts;
  Vec a, b;
  for (std::size_t c = 0; c < count; ++c) {
    ring::TorusPoly mu(r);
    for (auto& x : mu.coeffs())
      x = rng();
    cts.push_back(enc.encrypt(mu.coeffs()));
    a.insert(a.end(), cts[c].a.coeffs().begin(), cts[c].a.coeffs().end());
    b.insert(b.end(), cts[c].b.coeffs().begin(), cts[c].b.coeffs().end());
  }
  cuda::DeviceBuffer<u64> da(std::span<const u64>(a), stream()),
      db(std::span<const u64>(b), stream());
  for (std::uint32_t gamma : {0U, 1U, 2U}) {
    const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, p.gadget(gamma), random);
    const cuda::DeviceGaloisKeys device_keys(keys, stream());
    cuda::DeviceTraceTrees device_trees(p, p.gadget(gamma), device_keys, stream());
    rlwe::TraceTrees trees(p, p.gadget(gamma), keys);
    std::vector<rlwe::Ciphertext> want;
    for (const auto& ct : cts) {
      for (auto& part : trees.split(ct, gamma, rlwe::TreeMode::fast))
        want.push_back(std::move(part));
    }
    expect_batch_equals(device_trees.split(da.data(), db.data(), count, gamma, stream()), want,
                        stream(), "split gamma " + std::to_string(gamma));
    EXPECT_EQ(device_trees.key_switches(), trees.key_switches());
    if (gamma != 0) continue;
    // Packing all N LWE samples of each input (rotated so the groups differ).
    Vec masks, bodies;
    std::vector<rlwe::Ciphertext> packed;
    for (std::size_t c = 0; c < count; ++c) {
      std::vector<rlwe::LweCiphertext> lwes;
      for (std::uint32_t j = 0; j < n; ++j) {
        lwes.push_back(rlwe::sample_extract(r, cts[(c + j) % count], j));
        masks.insert(masks.end(), lwes.back().a.begin(), lwes.back().a.end());
        bodies.push_back(lwes.back().b);
      }
      packed.push_back(trees.pack_lwes(lwes, r.a() - 1, rlwe::TreeMode::fast));
    }
    cuda::DeviceBuffer<u64> dm(std::span<const u64>(masks), stream());
    cuda::DeviceBuffer<u64> dbodies(std::span<const u64>(bodies), stream());
    expect_batch_equals(
        device_trees.pack_lwes(dm.data(), dbodies.data(), count, r.a() - 1, stream()), packed,
        stream(), "pack");
  }
}

INSTANTIATE_TEST_SUITE_P(DefaultSets, CudaTrees,
                         ::testing::Values("default-b8", "default-b12", "default-b16"),
                         [](const auto& param_info) {
                           return safhire::testing::set_label(param_info.param);
                         });

}  // namespace
