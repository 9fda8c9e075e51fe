// The CKKS CUDA backend's negacyclic NTT (cuda/portable/negacyclic_ntt_tile.cuh: two passes over
// shared-memory tiles) replayed on CPU threads, every thread block of a launch at once
// (block_launch.hpp), against NegacyclicNtt word for word on every degree of the CKKS sets and
// primes up to 2^62, so that the device transform's tiling, twiddle indexing and lazy ranges are
// checked where there is no GPU (and under ThreadSanitizer by scripts/test-replays-tsan).
// tests/cuda runs the real kernels where a device is present.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "block_launch.hpp"
#include "portable/negacyclic_ntt_tile.cuh"
#include "safhire/core/primes.hpp"
#include "safhire/ring/negacyclic_ntt.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire;
namespace tile = cuda::negacyclic;
using safhire::testing::random_words;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;

// The transforms' launches: kTileWords words of shared memory per block.
template <class Body>
void launch(u32 blocks, u32 threads, Body body) {
  using Tile = std::array<u64, tile::kTileWords>;
  safhire::testing::launch_blocks<Tile>(
      blocks, threads,
      [&](u32 b, Tile& shared, u32 tid, auto sync) { body(b, shared.data(), tid, sync); });
}

// The kernels' launch sequence (ckks_rns.cu, transform) on one limb.
void device_forward(const ring::NegacyclicNtt& ntt, Vec& a, u32 threads) {
  const auto& tb = ntt.tables();
  const tile::Split s = tile::split(static_cast<u32>(__builtin_ctz(ntt.degree())));
  const tile::LimbTables t{tb.forward.data(), tb.forward_quotient.data(), ntt.modulus(), tb.n_inv,
                           tb.n_inv_quotient};
  launch(s.tiles, threads, [&](u32 block, u64* shared, u32 tid, auto sync) {
    tile::forward_columns(a.data(), t, s, block, shared, tid, threads, sync);
  });
  if (!s.has_chunk_pass()) return;
  launch(s.tiles, threads, [&](u32 block, u64* shared, u32 tid, auto sync) {
    tile::forward_chunks(a.data(), t, s, block, shared, tid, threads, sync);
  });
}

void device_inverse(const ring::NegacyclicNtt& ntt, Vec& a, u32 threads) {
  const auto& tb = ntt.tables();
  const tile::Split s = tile::split(static_cast<u32>(__builtin_ctz(ntt.degree())));
  const tile::LimbTables t{tb.inverse.data(), tb.inverse_quotient.data(), ntt.modulus(), tb.n_inv,
                           tb.n_inv_quotient};
  if (s.has_chunk_pass()) {
    launch(s.tiles, threads, [&](u32 block, u64* shared, u32 tid, auto sync) {
      tile::inverse_chunks(a.data(), t, s, block, shared, tid, threads, sync);
    });
  }
  launch(s.tiles, threads, [&](u32 block, u64* shared, u32 tid, auto sync) {
    tile::inverse_columns(a.data(), t, s, block, shared, tid, threads, sync);
  });
}

TEST(NegacyclicNttTiles, SplitCoversEveryLevelOnce) {
  for (u32 log_n = 1; log_n <= 20; ++log_n) {
    const tile::Split s = tile::split(log_n);
    EXPECT_EQ(s.stride << s.column_levels, s.n());
    EXPECT_EQ(s.tiles * s.tile_words, s.n());
    EXPECT_EQ(s.columns << s.column_levels, s.tile_words);
    EXPECT_LE(s.tile_words, tile::kTileWords);
    // A tile holds whole chunks in the chunk pass.
    if (s.has_chunk_pass()) {
      EXPECT_EQ(s.tile_words % s.stride, 0U);
    }
  }
}

class NegacyclicNttTileEmulation : public ::testing::TestWithParam<u32> {};

TEST_P(NegacyclicNttTileEmulation, MatchesTheCpuTransforms) {
  const u32 log_n = GetParam();
  const u32 n = u32{1} << log_n;
  std::mt19937_64 rng(log_n);
  // The largest prime the NTT takes (below 2^62: the forward's [0, 4q) is tightest there), a
  // 60-bit one and the small ones of the IFMA kernels and the test sets.
  std::vector<u64> primes;
  for (int bits : {62, 60, 50, 30})
    primes.push_back(core::primes_below(bits, 2 * u64{n}, 1)[0]);
  // The launch's own 256 threads where the grid is small, a few (loops over many butterflies per
  // thread) everywhere.
  std::vector<u32> thread_counts{5};
  if (log_n <= 12) thread_counts.push_back(256);
  for (u64 q : primes) {
    const auto ntt = ring::NegacyclicNtt::for_prime(ring::RingParams(2, log_n + 1), q);
    for (u32 threads : thread_counts) {
      SCOPED_TRACE("q = " + std::to_string(q) + ", threads = " + std::to_string(threads));
      const Vec a = random_words(rng, n, q);
      Vec expected = a, got = a;
      ntt.forward(expected);
      device_forward(ntt, got, threads);
      ASSERT_EQ(got, expected);
      device_inverse(ntt, got, threads);
      ASSERT_EQ(got, a);
      // The inverse on its own input, not only the forward's output.
      Vec expected_inv = a, got_inv = a;
      ntt.inverse(expected_inv);
      device_inverse(ntt, got_inv, threads);
      ASSERT_EQ(got_inv, expected_inv);
    }
  }
}

// Every degree of the CKKS sets (2^10 .. 2^17): one-pass (N <= 2^11) and two-pass transforms.
INSTANTIATE_TEST_SUITE_P(Degrees, NegacyclicNttTileEmulation, ::testing::Range(10U, 18U),
                         [](const auto& param_info) {
                           return "N2e" + std::to_string(param_info.param);
                         });

}  // namespace
