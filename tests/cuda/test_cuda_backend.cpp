// The CUDA backend against the CPU backend: whole encrypted inferences of the small trained
// models download the same ciphertexts, word for word, at gamma 0, 1 and 2 (packing in fast mode,
// and in paper mode at gamma 0 and 2), and the logits equal the plaintext evaluator's; later
// sessions find the layers resident and take no new scratch. Skipped with "no CUDA device" where
// none is present (tests/hybrid/test_backend_emulation.cpp replays the same algorithm on the
// CPU); both on 64-bit and on 32-bit rows. Rows of another width are a typed error, device or
// not, and so is the backend itself without a device.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda_test.hpp"
#include "hybrid/backend_compare.hpp"
#include "hybrid/model_files.hpp"
#include "safhire/core/error.hpp"
#include "safhire/cuda/backend.hpp"
#include "safhire/hybrid/inference.hpp"

namespace {

using namespace safhire;
using namespace safhire::hybrid;

using hybrid::testing::BackendCase;

class CudaBackend : public safhire::testing::CudaTestWithParam<BackendCase> {};

TEST_P(CudaBackend, DownloadsEqualTheCpuBackendWordForWord) {
  hybrid::testing::expect_same_downloads(GetParam(), cuda::make_cuda_backend);
}

INSTANTIATE_TEST_SUITE_P(
    Trained, CudaBackend,
    ::testing::Values(BackendCase{"small-b8", "default-b8", 0},
                      BackendCase{"small-b8", "default-b8", 1},
                      BackendCase{"small-b8", "default-b8", 2},
                      BackendCase{"small-b12", "default-b12", 1},
                      BackendCase{"small-b16", "default-b16", 2},
                      BackendCase{"small-b8", "default-b8", 0, rlwe::TreeMode::paper},
                      BackendCase{"small-b8", "default-b8", 2, rlwe::TreeMode::paper}),
    [](const auto& param_info) { return hybrid::testing::case_name(param_info.param); });

// Device residency: consecutive sessions of one served model (one backend each, as the service
// makes them) upload its layers once, and a later session runs on a lane an earlier one returned
// and takes no new scratch. Each session's logits equal the plaintext evaluator's. (The same
// algorithm is replayed on the CPU by BackendEmulation.LayersGoUpOnce...)
TEST(CudaBackendResidency, LaterSessionsUploadNoLayerAndTakeNoScratch) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  const Model model = Model::load(hybrid::testing::model_path("small-b8.sfhm"));
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  const auto refs = hybrid::testing::load_reference("small-b8.ref");
  InferenceOptions options;
  options.gamma = 2;
  const backend::Config config = session_config(model, params, options);
  const auto layers = model_layers(model);
  cuda::ResidentStats after_first{};
  for (std::uint64_t session = 0; session < 3; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    auto random = core::SeededRandom::from_counter(500 + session);
    Client client(params, options, random);
    core::Seed seed{};
    seed[0] = static_cast<std::uint8_t>(20 + session);
    {
      Server server(model, params, options,
                    cuda::make_cuda_backend(params, config, client.evaluation_keys()), seed,
                    layers);
      std::optional<Upload> up = client.start(server.model_info(), refs[session].pixels);
      while (up)
        up = client.receive(server.process(*up));
    }
    EXPECT_EQ(client.logits(), evaluate(model, refs[session].pixels));
    const cuda::ResidentStats stats = cuda::resident_stats();
    if (session == 0) {
      after_first = stats;
      EXPECT_GE(stats.resident_layers, layers->size());
      EXPECT_GE(stats.idle_lanes, 1U);
      continue;
    }
    EXPECT_EQ(stats.layer_uploads, after_first.layer_uploads);
    EXPECT_EQ(stats.lanes_made, after_first.lanes_made);
    EXPECT_EQ(stats.scratch_allocations, after_first.scratch_allocations);
  }
}

// Galois keys of a fresh secret key on `params`, for the gadget of gamma = 0.
rlwe::GaloisKeys gamma0_keys(const rlwe::ParameterSet& params, std::uint64_t seed) {
  auto random = core::SeededRandom::from_counter(seed);
  const rlwe::SecretKey key(params, random);
  return rlwe::make_galois_keys(key, params.gadget(0), random);
}

TEST(CudaBackendRows, OtherWidthsAreRefused) {
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  const rlwe::GaloisKeys keys = gamma0_keys(params, 302);
  try {
    cuda::make_cuda_backend(params, {0, rlwe::TreeMode::fast, 48}, keys);
    FAIL() << "48-bit rows accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

// Where no device is usable (CI), make_cuda_backend answers with a typed device_error that says
// why, never a crash or a backend that fails later; where one is, it gives the "cuda" backend.
TEST(CudaBackendDevice, WithoutADeviceTheBackendIsATypedError) {
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  const rlwe::GaloisKeys keys = gamma0_keys(params, 303);
  const backend::Config config{0, rlwe::TreeMode::fast, 64};
  if (cuda::device_available()) {
    EXPECT_EQ(cuda::make_cuda_backend(params, config, keys)->name(), "cuda");
    return;
  }
  try {
    cuda::make_cuda_backend(params, config, keys);
    FAIL() << "a CUDA backend was made without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::device_error);
    const std::string message = e.what();
    EXPECT_NE(message.find("needs a CUDA device"), std::string::npos) << message;
    EXPECT_NE(message.find("no usable device"), std::string::npos) << message;
  }
}

}  // namespace
