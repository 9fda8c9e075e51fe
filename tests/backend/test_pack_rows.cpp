// cuda::pack_rows, the packing both backends run: cut into t^depth parts per pack on the CPU
// backend's ops (backend::HostOps), it must give the words of the whole trees at depth 0 in the
// device algorithm's replay (tests/cpu_ops.hpp), at every depth, every gamma and both modes, on
// 64-bit and 32-bit rows; and the replay's words must equal rlwe::TraceTrees' packing of the same
// rows (pack_lwes of their LWE samples at gamma = 0, pack_blocks of their lane sums above).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cpu_ops.hpp"
#include "host_ops.hpp"
#include "portable/device_backend.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using u32 = std::uint32_t;

std::vector<u64> words_of(const cuda::ScratchPool::Block& a, const cuda::ScratchPool::Block& b,
                          std::size_t count) {
  std::vector<u64> w(a.data(), a.data() + count);
  w.insert(w.end(), b.data(), b.data() + count);
  return w;
}

class PackRows : public ::testing::TestWithParam<ring::RingParams> {};

TEST_P(PackRows, EveryDepthGivesTheWordsOfTheWholeTrees) {
  const ring::RingParams& r = GetParam();
  const rlwe::ParameterSet p("test", 900, r, 8, -50, {1024, 4}, {1024, 4});
  auto random = core::SeededRandom::from_counter(140);
  const rlwe::SecretKey key(p, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, p.gadget(0), random);
  const u32 N = r.N();
  std::mt19937_64 rng(140);
  for (u32 gamma = 0; gamma < r.a(); ++gamma) {
    const std::size_t W = backend::row_words(p, gamma), values = N + N / 2;  // a partial pack
    std::vector<u64> rows(values * W);
    for (u64& w : rows)
      w = rng();
    std::vector<u32> rows32(values * W);
    for (u32& w : rows32)
      w = static_cast<u32>(rng());
    std::optional<rlwe::PartialExtraction> partial;
    if (gamma >= 1) partial.emplace(r, gamma);
    for (const rlwe::TreeMode mode : {rlwe::TreeMode::fast, rlwe::TreeMode::paper}) {
      backend::Config config;
      config.gamma = gamma;
      config.mode = mode;
      for (const bool narrow : {false, true}) {
        const std::string what = "gamma " + std::to_string(gamma) +
                                 (mode == rlwe::TreeMode::paper ? ", paper" : ", fast") +
                                 (narrow ? ", 32-bit rows" : "");
        const u64* wide_rows = narrow ? nullptr : rows.data();
        const u32* narrow_rows = narrow ? rows32.data() : nullptr;
        safhire::testing::CpuOps replay{p, keys, rlwe::KeySwitcher(p, p.gadget(0))};
        const auto whole = cuda::pack_rows(replay, r, config, wide_rows, narrow_rows, values, W);
        const std::vector<u64> want = words_of(whole.a, whole.b, 2 * N);
        for (u32 depth = 0; depth + gamma < r.a(); ++depth) {
          backend::HostOps ops(p, p.gadget(0), keys, 2, partial ? &*partial : nullptr);
          const auto cut =
              cuda::pack_rows(ops, r, config, wide_rows, narrow_rows, values, W, depth);
          ASSERT_EQ(words_of(cut.a, cut.b, 2 * N), want) << what << ", depth " << depth;
          EXPECT_EQ(ops.key_switches(), replay.key_switches()) << what << ", depth " << depth;
        }
        backend::HostOps ops(p, p.gadget(0), keys, 1, partial ? &*partial : nullptr);
        EXPECT_THROW(
            cuda::pack_rows(ops, r, config, wide_rows, narrow_rows, values, W, r.a() - gamma),
            Error)
            << what;
        if (narrow || mode == rlwe::TreeMode::paper) continue;
        // The oracle: TraceTrees on the first pack's rows.
        rlwe::TraceTrees trees(p, p.gadget(0), keys);
        rlwe::Ciphertext packed(r);
        if (gamma == 0) {
          std::vector<rlwe::LweCiphertext> lwes(N);
          for (u32 j = 0; j < N; ++j) {
            lwes[j].a.assign(rows.begin() + j * W, rows.begin() + j * W + N);
            lwes[j].b = rows[j * W + N];
          }
          packed = trees.pack_lwes(lwes, r.a() - 1, mode);
        } else {
          const u32 T = partial->blocks(), L = partial->lanes();
          std::vector<rlwe::Ciphertext> blocks(T, rlwe::Ciphertext(r));
          std::vector<const u64*> lanes(L);
          for (u32 beta = 0; beta < T; ++beta) {
            for (u32 z = 0; z < L; ++z)
              lanes[z] = rows.data() + (beta + std::size_t{T} * z) * W;
            partial->embed_lane_sum(lanes, blocks[beta]);
          }
          packed = trees.pack_blocks(blocks, gamma, mode);
        }
        std::vector<u64> first(packed.a.coeffs().begin(), packed.a.coeffs().end());
        std::vector<u64> want_a(want.begin(), want.begin() + N);
        std::vector<u64> want_b(want.begin() + 2 * N, want.begin() + 3 * N);
        EXPECT_EQ(first, want_a) << what << ": a of the first pack against TraceTrees";
        EXPECT_EQ(std::vector<u64>(packed.b.coeffs().begin(), packed.b.coeffs().end()), want_b)
            << what << ": b of the first pack against TraceTrees";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SmallRings, PackRows,
                         ::testing::Values(ring::RingParams(3, 4), ring::RingParams(5, 3),
                                           ring::RingParams(7, 2)),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.t()) + "_" +
                                  std::to_string(param_info.param.a());
                         });

}  // namespace
