// The CUDA NTT kernels' bodies (cuda/portable/ntt_block.cuh) run on the CPU: each emulated thread
// block is `threads` std::threads meeting at a std::barrier where the GPU has __syncthreads().
// Checks the GPU path's index arithmetic (levels, twiddle layout, slot order) against NttPlan on
// every ring, in CI, without a GPU. tests/cuda runs the real kernels where a device is present.
#include <gtest/gtest.h>

#include <barrier>
#include <random>
#include <thread>
#include <vector>

#include "portable/ntt_block.cuh"
#include "safhire/core/primes.hpp"
#include "safhire/ring/ntt.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
using ring::NttPlan;
using ring::RingParams;
using safhire::testing::random_words;
using safhire::testing::u64;
using Vec = std::vector<u64>;

// Runs body(tid, sync) on `threads` threads sharing one barrier, like one CUDA thread block.
template <class Body>
void run_block(std::uint32_t threads, Body body) {
  std::barrier barrier(static_cast<std::ptrdiff_t>(threads));
  std::vector<std::thread> pool;
  for (std::uint32_t tid = 0; tid < threads; ++tid) {
    pool.emplace_back([&, tid] { body(tid, [&] { barrier.arrive_and_wait(); }); });
  }
  for (auto& th : pool)
    th.join();
}

template <int T>
void forward_block(const ring::NttView& p, u64* f, std::uint32_t threads) {
  Vec shared(p.N, safhire::testing::kPoison);  // __shared__ memory starts undefined
  run_block(threads, [&](std::uint32_t tid, auto sync) {
    cuda::block::ntt_forward<T>(p, f, shared.data(), tid, threads, sync);
  });
}

template <int T>
void inverse_block(const ring::NttView& p, u64* f, std::uint32_t threads, int scale) {
  Vec shared(p.N, safhire::testing::kPoison);  // __shared__ memory starts undefined
  run_block(threads, [&](std::uint32_t tid, auto sync) {
    cuda::block::ntt_inverse<T>(p, f, shared.data(), tid, threads, scale, sync);
  });
}

void forward_any(const ring::NttView& p, u64* f, std::uint32_t threads) {
  switch (p.t) {
    case 3:
      forward_block<3>(p, f, threads);
      break;
    case 5:
      forward_block<5>(p, f, threads);
      break;
    default:
      forward_block<7>(p, f, threads);
      break;
  }
}

void inverse_any(const ring::NttView& p, u64* f, std::uint32_t threads, int scale) {
  switch (p.t) {
    case 3:
      inverse_block<3>(p, f, threads, scale);
      break;
    case 5:
      inverse_block<5>(p, f, threads, scale);
      break;
    default:
      inverse_block<7>(p, f, threads, scale);
      break;
  }
}

class NttBlockEmulation : public ::testing::TestWithParam<RingParams> {};

TEST_P(NttBlockEmulation, MatchesTheCpuTransforms) {
  const RingParams& r = GetParam();
  std::mt19937_64 rng(40);
  std::vector<NttPlan> plans;
  if (r.M() == 9) plans.push_back(NttPlan(r, 19, 4));
  plans.push_back(NttPlan::for_prime(r, core::primes_below(62, r.M(), 1)[0]));
  const std::vector<std::uint32_t> thread_counts =
      r.N() <= 50 ? std::vector<std::uint32_t>{1, 3, 32, 256} : std::vector<std::uint32_t>{7, 256};
  for (const NttPlan& plan : plans) {
    const ring::NttView view = plan.tables().view();
    for (std::uint32_t threads : thread_counts) {
      SCOPED_TRACE("q = " + std::to_string(plan.modulus()) +
                   ", threads = " + std::to_string(threads));
      const Vec a = random_words(rng, r.N(), plan.modulus());
      Vec expected = a, got = a;
      plan.forward(expected);
      forward_any(view, got.data(), threads);
      ASSERT_EQ(got, expected);
      for (auto scale : {ring::InverseScale::plain, ring::InverseScale::montgomery}) {
        Vec expected_inv = expected, got_inv = expected;
        plan.inverse(expected_inv, scale);
        inverse_any(view, got_inv.data(), threads, static_cast<int>(scale));
        ASSERT_EQ(got_inv, expected_inv);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllRings, NttBlockEmulation,
                         ::testing::ValuesIn(safhire::testing::all_rings()),
                         [](const auto& param_info) {
                           return safhire::testing::ring_label(param_info.param);
                         });

}  // namespace
