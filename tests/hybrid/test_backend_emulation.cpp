// The CUDA backend's algorithm (cuda/portable/device_backend.hpp) replayed on the CPU
// (tests/cpu_ops.hpp: the kernels' per-word functions over each launch's threads, run
// concurrently, on poisoned scratch): whole encrypted inferences through it download the same
// ciphertexts, word for word, as through the CPU backend, on 3^7, 7^4 and 5^5 at gamma 0, 1 and 2
// (packing in fast mode, and in paper mode at gamma 0 and 2), and the logits equal the plaintext
// evaluator's. This checks the device layouts and index arithmetic of extraction, the linear
// layer, gathering and packing where there is no GPU; tests/cuda runs the real kernels where
// there is one.
#include <gtest/gtest.h>

#include <utility>

#include "cpu_ops.hpp"
#include "hybrid/backend_compare.hpp"
#include "hybrid/model_files.hpp"
#include "portable/device_backend.hpp"
#include "safhire/core/error.hpp"
#include "safhire/hybrid/inference.hpp"

namespace {

using namespace safhire;
using namespace safhire::hybrid;
using safhire::testing::CpuOps;
using safhire::testing::Schedule;

using hybrid::testing::BackendCase;
using hybrid::testing::load_reference;
using hybrid::testing::model_path;

class BackendEmulation : public ::testing::TestWithParam<BackendCase> {};

TEST_P(BackendEmulation, DownloadsEqualTheCpuBackendWordForWord) {
  const std::uint32_t gamma = GetParam().gamma;
  hybrid::testing::expect_same_downloads(GetParam(), [gamma](const rlwe::ParameterSet& params,
                                                             const backend::Config& config,
                                                             const rlwe::GaloisKeys& keys) {
    return std::make_unique<cuda::DeviceBackend<CpuOps>>(
        params, config,
        CpuOps{params, keys, rlwe::KeySwitcher(params, params.gadget(gamma)), Schedule::concurrent},
        "emulated cuda", backend::has_power_keys(keys, params.ring, gamma));
  });
}

// The CPU backend on one thread against its two-thread self, which extracts two chunks at a time
// and shares each step of rounds with few packs between both workers: the same words.
TEST_P(BackendEmulation, OneThreadDownloadsTheSameAsTwo) {
  hybrid::testing::expect_same_downloads(
      GetParam(), [](const rlwe::ParameterSet& params, const backend::Config& config,
                     const rlwe::GaloisKeys& keys) {
        return backend::make_cpu_backend(params, config, keys, 1);
      });
}

INSTANTIATE_TEST_SUITE_P(
    Trained, BackendEmulation,
    ::testing::Values(BackendCase{"small-b8", "default-b8", 0},
                      BackendCase{"small-b12", "default-b12", 1},
                      BackendCase{"small-b8", "default-b8", 2},
                      BackendCase{"small-b16", "default-b16", 2},
                      BackendCase{"small-b8", "default-b8", 0, rlwe::TreeMode::paper},
                      BackendCase{"small-b8", "default-b8", 2, rlwe::TreeMode::paper}),
    [](const auto& param_info) { return hybrid::testing::case_name(param_info.param); });

// Device residency, replayed: two sessions of one served model, each with its own backend, share
// the resident layers and (as consecutive sessions on one of the CUDA backend's lanes do) the
// scratch pool. Every layer goes up once, in the first session; the second session uploads no
// layer and takes no new scratch (its rounds reuse the blocks the first one sized, which a lane's
// trim at the end of a session keeps), and both sessions' logits equal the plaintext evaluator's.
TEST(BackendEmulation, LayersGoUpOnceAndALaterSessionTakesNoNewScratch) {
  const Model model = Model::load(model_path("small-b8.sfhm"));
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  const auto refs = load_reference("small-b8.ref");
  InferenceOptions options;
  options.gamma = 2;
  const backend::Config config = session_config(model, params, options);
  const auto layers = model_layers(model);
  const auto weights = std::make_shared<cuda::ResidentWeights<CpuOps>>();
  const auto scratch = std::make_shared<safhire::testing::HostScratch>();
  std::uint64_t first_allocations = 0;
  for (std::uint64_t session = 0; session < 2; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    auto random = core::SeededRandom::from_counter(400 + session);
    Client client(params, options, random);
    const rlwe::GaloisKeys& keys = client.evaluation_keys();
    auto device = std::make_unique<cuda::DeviceBackend<CpuOps>>(
        params, config,
        CpuOps{params, keys, rlwe::KeySwitcher(params, params.gadget(options.gamma)),
               Schedule::sequential, scratch},
        "emulated cuda", backend::has_power_keys(keys, params.ring, options.gamma), weights);
    core::Seed seed{};
    seed[0] = static_cast<std::uint8_t>(10 + session);
    Server server(model, params, options, std::move(device), seed, layers);
    const auto& pixels = refs[session].pixels;
    std::optional<Upload> up = client.start(server.model_info(), pixels);
    while (up)
      up = client.receive(server.process(*up));
    EXPECT_EQ(client.logits(), evaluate(model, pixels));
    EXPECT_EQ(weights->uploads(), layers->size());
    EXPECT_EQ(weights->resident(), layers->size());
    if (session == 0) first_allocations = scratch->pool.stats().allocations;
  }
  EXPECT_GT(first_allocations, 0U);
  EXPECT_EQ(scratch->pool.stats().allocations, first_allocations);
  EXPECT_EQ(scratch->pool.stats().in_use, 0U);  // every block came back
  // What a lane keeps between sessions on the device holds all of it.
  EXPECT_LE(scratch->pool.stats().cached,
            cuda::ScratchPool::kKeepPeaks * scratch->pool.stats().peak);
}

// Rows are 32 or 64 bits: another width is a typed error when the backend is made.
TEST(BackendEmulation, OtherRowWidthsAreRefusedWithATypedError) {
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  auto random = core::SeededRandom::from_counter(301);
  const rlwe::SecretKey key(params, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, params.gadget(0), random);
  for (const rlwe::TreeMode mode : {rlwe::TreeMode::fast, rlwe::TreeMode::paper}) {
    try {
      cuda::DeviceBackend<CpuOps> b(
          params, {0, mode, 48}, CpuOps{params, keys, rlwe::KeySwitcher(params, params.gadget(0))},
          "emulated cuda");
      FAIL() << "accepted 48-bit rows";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    }
  }
}

}  // namespace
