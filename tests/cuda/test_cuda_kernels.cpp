// Every CUDA kernel of the ring layer against the CPU path, bit for bit, on tiny rings (where a
// human can check by hand) and on the rings of the paper. Skipped with "no CUDA device" where
// none is present (CI has none: the CPU suites carry correctness there).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "cuda_test.hpp"
#include "safhire/core/primes.hpp"
#include "safhire/cuda/device.hpp"
#include "safhire/cuda/device_buffer.hpp"
#include "safhire/cuda/kernels.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/ring/ntt.hpp"
#include "safhire/ring/product.hpp"
#include "simd/dispatch.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
using ring::NttPlan;
using ring::RingParams;
using safhire::testing::all_rings;
using safhire::testing::random_words;
using safhire::testing::u64;
using Vec = std::vector<u64>;

class CudaKernels : public safhire::testing::CudaTestWithParam<RingParams> {};

// Two primes per ring: the two largest below 2^62, and for the tiny rings also a tiny prime.
std::vector<NttPlan> plans_for(const RingParams& r) {
  std::vector<NttPlan> plans;
  if (r.M() == 9) plans.push_back(NttPlan(r, 19, 4));
  if (r.M() == 27) plans.push_back(NttPlan(r, 109, 81));
  for (u64 q : core::primes_below(62, r.M(), 2))
    plans.push_back(NttPlan::for_prime(r, q));
  return plans;
}

std::vector<const NttPlan*> pointers(const std::vector<NttPlan>& plans) {
  std::vector<const NttPlan*> out;
  for (const auto& p : plans)
    out.push_back(&p);
  return out;
}

TEST_P(CudaKernels, NttForwardAndInverseMatchCpu) {
  const RingParams& r = GetParam();
  const auto plans = plans_for(r);
  const auto ptrs = pointers(plans);
  const cuda::DeviceNttTables tables(ptrs, stream());
  std::mt19937_64 rng(30);
  const size_t count = 37, n = r.N();
  Vec host(plans.size() * count * n);
  for (size_t p = 0; p < plans.size(); ++p) {
    const Vec words = random_words(rng, count * n, plans[p].modulus());
    std::copy(words.begin(), words.end(), host.begin() + p * count * n);
  }
  cuda::DeviceBuffer<u64> dev(std::span<const u64>(host), stream());

  // Forward.
  Vec expected = host;
  for (size_t p = 0; p < plans.size(); ++p) {
    plans[p].forward(std::span<u64>(expected.data() + p * count * n, count * n));
  }
  cuda::ntt_forward(tables, dev.data(), count, stream());
  Vec got(host.size());
  dev.download(got);
  synchronize();
  ASSERT_EQ(got, expected);

  // Inverse, both scales, from the forward output.
  for (auto scale : {ring::InverseScale::plain, ring::InverseScale::montgomery}) {
    Vec expected_inv = expected;
    for (size_t p = 0; p < plans.size(); ++p) {
      plans[p].inverse(std::span<u64>(expected_inv.data() + p * count * n, count * n), scale);
    }
    cuda::DeviceBuffer<u64> in(std::span<const u64>(expected), stream());
    cuda::ntt_inverse(tables, in.data(), count, scale, stream());
    in.download(got);
    synchronize();
    ASSERT_EQ(got, expected_inv);
    if (scale == ring::InverseScale::plain) {
      ASSERT_EQ(got, host);  // round trip
    }
  }
}

TEST_P(CudaKernels, ElementwiseKernelsMatchCpu) {
  const RingParams& r = GetParam();
  const auto plans = plans_for(r);
  const auto ptrs = pointers(plans);
  const cuda::DeviceNttTables tables(ptrs, stream());
  std::mt19937_64 rng(31);
  const size_t count = 5, n = r.N(), len = count * n;
  const auto& cpu = ring::simd::checked_kernels(ring::SimdIsa::scalar);

  // Lift of torus words to every prime, then Montgomery products.
  const Vec torus = random_words(rng, len);
  Vec expected_lift(plans.size() * len), b(plans.size() * len), expected_mont(plans.size() * len);
  for (size_t p = 0; p < plans.size(); ++p) {
    const auto& tb = plans[p].tables();
    cpu.lift_torus(tb.q, tb.word_ratio, tb.two64_mod_q, torus.data(),
                   expected_lift.data() + p * len, len);
    const Vec bp = random_words(rng, len, tb.q);
    std::copy(bp.begin(), bp.end(), b.begin() + p * len);
    cpu.pointwise_montgomery(tb.q, tb.montgomery_q_inv, expected_lift.data() + p * len,
                             b.data() + p * len, expected_mont.data() + p * len, len);
  }
  cuda::DeviceBuffer<u64> d_torus(std::span<const u64>(torus), stream());
  cuda::DeviceBuffer<u64> d_res(plans.size() * len, stream());
  cuda::DeviceBuffer<u64> d_b(std::span<const u64>(b), stream());
  cuda::DeviceBuffer<u64> d_out(plans.size() * len, stream());
  cuda::lift_torus(tables, d_torus.data(), d_res.data(), count, stream());
  cuda::pointwise_montgomery(tables, d_res.data(), d_b.data(), d_out.data(), count, stream());
  Vec got_lift(plans.size() * len), got_mont(plans.size() * len);
  d_res.download(got_lift);
  d_out.download(got_mont);
  synchronize();
  EXPECT_EQ(got_lift, expected_lift);
  EXPECT_EQ(got_mont, expected_mont);

  // CRT of the two 62-bit residues (the last two plans).
  const size_t p1 = plans.size() - 2, p2 = plans.size() - 1;
  const auto crt = core::Crt2::make(plans[p1].modulus(), plans[p2].modulus());
  Vec expected_crt(len);
  for (size_t i = 0; i < len; ++i) {
    expected_crt[i] = crt.lift(expected_mont[p1 * len + i], expected_mont[p2 * len + i]);
  }
  cuda::DeviceBuffer<u64> d_crt(len, stream());
  cuda::crt_lift(crt, d_out.data() + p1 * len, d_out.data() + p2 * len, d_crt.data(), len,
                 stream());
  Vec got_crt(len);
  d_crt.download(got_crt);
  synchronize();
  EXPECT_EQ(got_crt, expected_crt);
}

TEST_P(CudaKernels, AutomorphismPermutationMatchesCpu) {
  const RingParams& r = GetParam();
  const auto plans = plans_for(r);
  const NttPlan& plan = plans.back();
  std::mt19937_64 rng(32);
  const size_t count = 3, n = r.N();
  const Vec in = random_words(rng, count * n, plan.modulus());
  for (u64 k : {u64{2}, u64{r.M() - 1}, u64{1 + r.m()}}) {
    const auto perm = plan.automorphism_permutation(k);
    Vec expected(count * n);
    for (size_t row = 0; row < count; ++row) {
      ring::apply_permutation(std::span<const u64>(in.data() + row * n, n), perm,
                              std::span<u64>(expected.data() + row * n, n));
    }
    cuda::DeviceBuffer<std::uint32_t> d_perm(std::span<const std::uint32_t>(perm), stream());
    cuda::DeviceBuffer<u64> d_in(std::span<const u64>(in), stream());
    cuda::DeviceBuffer<u64> d_out(count * n, stream());
    cuda::apply_permutation(d_perm.data(), d_in.data(), d_out.data(), n, count, stream());
    Vec got(count * n);
    d_out.download(got);
    synchronize();
    EXPECT_EQ(got, expected) << "k = " << k;
  }
}

// The whole exact product on the device (lift, NTT, Montgomery product, inverse with the
// Montgomery scale, CRT) against ExactProduct on the CPU and the schoolbook oracle.
TEST_P(CudaKernels, ExactProductPipelineMatchesCpu) {
  const RingParams& r = GetParam();
  ring::ExactProduct cpu(r);
  const std::vector<const NttPlan*> ptrs = {&cpu.plan(0), &cpu.plan(1)};
  const cuda::DeviceNttTables tables(ptrs, stream());
  std::mt19937_64 rng(33);
  const size_t n = r.N();
  const Vec a = random_words(rng, n);
  const Vec s = safhire::testing::random_signed(rng, n, -1, 1);
  Vec expected(n);
  cpu.multiply(a, s, expected);

  cuda::DeviceBuffer<u64> d_a(std::span<const u64>(a), stream());
  cuda::DeviceBuffer<u64> d_s(std::span<const u64>(s), stream());
  cuda::DeviceBuffer<u64> ra(2 * n, stream()), rs(2 * n, stream());
  cuda::DeviceBuffer<u64> d_out(n, stream());
  cuda::lift_torus(tables, d_a.data(), ra.data(), 1, stream());
  cuda::lift_torus(tables, d_s.data(), rs.data(), 1, stream());
  cuda::ntt_forward(tables, ra.data(), 1, stream());
  cuda::ntt_forward(tables, rs.data(), 1, stream());
  cuda::pointwise_montgomery(tables, ra.data(), rs.data(), ra.data(), 1, stream());
  cuda::ntt_inverse(tables, ra.data(), 1, ring::InverseScale::montgomery, stream());
  cuda::crt_lift(cpu.crt(), ra.data(), ra.data() + n, d_out.data(), n, stream());
  Vec got(n);
  d_out.download(got);
  synchronize();
  EXPECT_EQ(got, expected);
  Vec oracle(n);
  ring::schoolbook_mul(r, a, s, oracle, ring::TorusArith{});
  EXPECT_EQ(got, oracle);
}

INSTANTIATE_TEST_SUITE_P(AllRings, CudaKernels, ::testing::ValuesIn(all_rings()),
                         [](const auto& param_info) {
                           return safhire::testing::ring_label(param_info.param);
                         });

TEST(CudaDevice, DescribesDevicesOrWhyNone) {
  const std::string text = cuda::describe_devices();
  EXPECT_FALSE(text.empty());
  if (!cuda::device_available()) {
    EXPECT_NE(text.find("no usable device"), std::string::npos) << text;
    SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  }
  EXPECT_NE(text.find("compute capability"), std::string::npos);
}

}  // namespace
