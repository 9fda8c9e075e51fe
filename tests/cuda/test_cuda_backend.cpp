// The CUDA backend against the CPU backend: whole encrypted inferences of the small trained
// models download the same ciphertexts, word for word, at gamma 0, 1 and 2, and the logits equal
// the plaintext evaluator's. Skipped with "no CUDA device" where none is present
// (tests/hybrid/test_backend_emulation.cpp replays the same algorithm on the CPU); both on 64-bit
// and on 32-bit rows. Rows of another width are a typed error, device or not, and so is the
// backend itself without a device.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda_test.hpp"
#include "hybrid/backend_compare.hpp"
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

INSTANTIATE_TEST_SUITE_P(Trained, CudaBackend,
                         ::testing::Values(BackendCase{"small-b8", "default-b8", 0},
                                           BackendCase{"small-b8", "default-b8", 1},
                                           BackendCase{"small-b8", "default-b8", 2},
                                           BackendCase{"small-b12", "default-b12", 1},
                                           BackendCase{"small-b16", "default-b16", 2}),
                         [](const auto& param_info) {
                           return hybrid::testing::case_name(param_info.param);
                         });

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
