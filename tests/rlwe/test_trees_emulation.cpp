// The device trees' level-by-level algorithm (cuda/portable/tree_levels.hpp) run on the CPU:
// buffers come from a scratch pool and are filled with poison when handed out, the per-thread
// functions of cuda/portable/tree_element.cuh run over each launch's threads (in index order, or
// on several std::threads at once from the top down), and key switches go through the CPU
// KeySwitcher. The outputs must equal rlwe::TraceTrees word for word (packing in fast and in
// paper mode), which checks the device layouts and index arithmetic where there is no GPU, on
// the small rings and on the paper's 3^7, 7^4 and 5^5. The same algorithm over the CPU backend's
// ops (backend::HostOps: rows whole, summed key switches, two workers) must give the same words.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cpu_ops.hpp"
#include "host_ops.hpp"
#include "portable/tree_levels.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using Vec = std::vector<u64>;
using safhire::testing::CpuOps;
using safhire::testing::Schedule;

void expect_equal(const rlwe::Ciphertext& ct, const cuda::ScratchPool::Block& a,
                  const cuda::ScratchPool::Block& b, std::size_t at, const std::string& what) {
  const std::size_t n = ct.a.degree();
  ASSERT_TRUE(std::equal(ct.a.coeffs().begin(), ct.a.coeffs().end(), a.data() + at * n)) << what;
  ASSERT_TRUE(std::equal(ct.b.coeffs().begin(), ct.b.coeffs().end(), b.data() + at * n)) << what;
}

// Whose ops run the levels: the replay's, in either schedule, or the CPU backend's.
enum class Runner { sequential, concurrent, host };

struct TreeCase {
  ring::RingParams ring;
  Runner runner;
};

std::string runner_name(Runner runner) {
  return runner == Runner::host         ? "host"
         : runner == Runner::concurrent ? "concurrent"
                                        : "sequential";
}

[[maybe_unused]] void PrintTo(const TreeCase& c, std::ostream* os) {
  *os << c.ring.name() << ", " << runner_name(c.runner);
}

// The splits and packings of levels:: over the ops make_ops() gives, against TraceTrees.
template <class MakeOps>
void expect_levels_equal_trace_trees(const ring::RingParams& r, MakeOps make_ops) {
  const rlwe::ParameterSet p("test", 900, r, 8, -50, {1024, 4}, {1024, 4});
  auto random = core::SeededRandom::from_counter(130);
  const rlwe::SecretKey key(p, random);
  rlwe::Encryptor enc(key, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, p.gadget(0), random);
  const std::size_t n = r.N(), count = 2;
  std::mt19937_64 rng(130);
  std::vector<rlwe::Ciphertext> cts;
  Vec a(count * n), b(count * n);
  for (std::size_t c = 0; c < count; ++c) {
    ring::TorusPoly mu(r);
    for (auto& x : mu.coeffs())
      x = rng();
    cts.push_back(enc.encrypt(mu.coeffs()));
    std::copy(cts[c].a.coeffs().begin(), cts[c].a.coeffs().end(), a.begin() + c * n);
    std::copy(cts[c].b.coeffs().begin(), cts[c].b.coeffs().end(), b.begin() + c * n);
  }
  for (std::uint32_t gamma = 0; gamma < r.a(); ++gamma) {
    auto ops = make_ops(p, keys);
    const auto out = cuda::levels::split(ops, r, a.data(), b.data(), count, gamma);
    rlwe::TraceTrees trees(p, p.gadget(0), keys);
    for (std::size_t c = 0; c < count; ++c) {
      const auto parts = trees.split(cts[c], gamma, rlwe::TreeMode::fast);
      for (std::size_t u = 0; u < parts.size(); ++u) {
        expect_equal(parts[u], out.a, out.b, c * parts.size() + u,
                     "split gamma " + std::to_string(gamma) + ", input " + std::to_string(c) +
                         ", part " + std::to_string(u));
      }
    }
    EXPECT_EQ(ops.key_switches(), trees.key_switches());
  }
  for (std::uint32_t k = 0; k < r.a(); ++k) {
    const std::size_t items = (r.t() - 1) * cuda::levels::power(r.t(), k);
    std::vector<std::vector<rlwe::LweCiphertext>> lwes(count);
    Vec masks, bodies;
    for (std::size_t c = 0; c < count; ++c) {
      for (std::size_t i = 0; i < items; ++i) {
        lwes[c].push_back(
            rlwe::sample_extract(r, cts[(c + i) % count], static_cast<std::uint32_t>((i * 7) % n)));
        masks.insert(masks.end(), lwes[c].back().a.begin(), lwes[c].back().a.end());
        bodies.push_back(lwes[c].back().b);
      }
    }
    for (const rlwe::TreeMode mode : {rlwe::TreeMode::fast, rlwe::TreeMode::paper}) {
      auto ops = make_ops(p, keys);
      const auto out = cuda::levels::pack_lwes(ops, r, masks.data(), bodies.data(), count, k, mode);
      rlwe::TraceTrees trees(p, p.gadget(0), keys);
      for (std::size_t c = 0; c < count; ++c) {
        expect_equal(trees.pack_lwes(lwes[c], k, mode), out.a, out.b, c,
                     "pack k " + std::to_string(k) + ", group " + std::to_string(c) +
                         (mode == rlwe::TreeMode::paper ? ", paper" : ", fast"));
      }
      EXPECT_EQ(ops.key_switches(), trees.key_switches());
    }
  }
  for (std::uint32_t gamma = 1; gamma < r.a(); ++gamma) {
    const std::size_t blocks = cuda::levels::power(r.t(), r.a() - gamma);
    std::vector<std::vector<rlwe::Ciphertext>> groups(count);
    Vec ba, bb;
    for (std::size_t c = 0; c < count; ++c) {
      for (std::size_t i = 0; i < blocks; ++i) {
        groups[c].push_back(cts[(c + i) % count]);
        for (u64& w : groups[c].back().a.coeffs())
          w += i * 0x9e3779b97f4a7c15ULL;
        ba.insert(ba.end(), groups[c].back().a.coeffs().begin(), groups[c].back().a.coeffs().end());
        bb.insert(bb.end(), groups[c].back().b.coeffs().begin(), groups[c].back().b.coeffs().end());
      }
    }
    for (const rlwe::TreeMode mode : {rlwe::TreeMode::fast, rlwe::TreeMode::paper}) {
      auto ops = make_ops(p, keys);
      const auto out = cuda::levels::pack_blocks(ops, r, ba.data(), bb.data(), count, gamma, mode);
      rlwe::TraceTrees trees(p, p.gadget(0), keys);
      for (std::size_t c = 0; c < count; ++c) {
        expect_equal(trees.pack_blocks(groups[c], gamma, mode), out.a, out.b, c,
                     "pack_blocks gamma " + std::to_string(gamma) +
                         (mode == rlwe::TreeMode::paper ? ", paper" : ", fast"));
      }
      EXPECT_EQ(ops.key_switches(), trees.key_switches());
    }
  }
}

class TreesEmulation : public ::testing::TestWithParam<TreeCase> {};

TEST_P(TreesEmulation, DeviceLevelsEqualTraceTrees) {
  const Runner runner = GetParam().runner;
  if (runner == Runner::host) {
    expect_levels_equal_trace_trees(GetParam().ring,
                                    [](const rlwe::ParameterSet& p, const rlwe::GaloisKeys& keys) {
                                      return backend::HostOps(p, p.gadget(0), keys, 2, nullptr);
                                    });
    return;
  }
  const Schedule schedule =
      runner == Runner::concurrent ? Schedule::concurrent : Schedule::sequential;
  expect_levels_equal_trace_trees(
      GetParam().ring, [&](const rlwe::ParameterSet& p, const rlwe::GaloisKeys& keys) {
        return CpuOps{p, keys, rlwe::KeySwitcher(p, p.gadget(0)), schedule};
      });
}

// Every ring in the concurrent schedule and on the host's ops; the small ones in index order too.
std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (const ring::RingParams& r :
       {ring::RingParams(3, 3), ring::RingParams(5, 2), ring::RingParams(7, 2),
        ring::RingParams(3, 4), ring::RingParams(5, 3)}) {
    cases.push_back({r, Runner::sequential});
    cases.push_back({r, Runner::concurrent});
    cases.push_back({r, Runner::host});
  }
  for (const ring::RingParams& r :
       {ring::RingParams(3, 7), ring::RingParams(7, 4), ring::RingParams(5, 5)}) {
    cases.push_back({r, Runner::concurrent});
    cases.push_back({r, Runner::host});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Rings, TreesEmulation, ::testing::ValuesIn(tree_cases()),
                         [](const auto& param_info) {
                           const TreeCase& c = param_info.param;
                           return std::to_string(c.ring.t()) + "_" + std::to_string(c.ring.a()) +
                                  "_" + runner_name(c.runner);
                         });

}  // namespace
