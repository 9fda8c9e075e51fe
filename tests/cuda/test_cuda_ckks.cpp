// The CKKS RNS primitives on the device against the CPU's, word for word: the cases of
// tests/ckks/device_ops_cases.hpp (each primitive, then whole evaluator operations up to
// bootstrapping, with host and with resident operands) on the CUDA backend. The CPU emulation
// test runs the same cases through the same backend code in every CI run.
#include <gtest/gtest.h>

#include "ckks/device_ops_cases.hpp"
#include "cuda_test.hpp"
#include "safhire/core/error.hpp"
#include "safhire/cuda/ckks.hpp"

namespace {

using namespace safhire::ckks;
namespace cases = safhire::ckks::testing;

std::unique_ptr<RnsOps> make_cuda(const CkksContext& context) {
  return safhire::cuda::make_cuda_rns_ops(context);
}

TEST(CudaCkks, NoDeviceIsATypedError) {
  if (safhire::cuda::device_available()) GTEST_SKIP() << "a device is present";
  const CkksContext context(named_set("n12-l2"));
  try {
    safhire::cuda::make_cuda_rns_ops(context);
    FAIL() << "expected Error(device_error)";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), safhire::ErrorCode::device_error);
  }
}

TEST(CudaCkks, PrimitivesMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  const char* const sets[] = {"n12-l2", "n14-l7", "n16-l24"};
  cases::primitives_match(make_cuda, sets);
}

TEST(CudaCkks, WideOperationsMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  cases::wide_operations_match(make_cuda);
}

TEST(CudaCkks, EvaluatorOperationsMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  const char* const sets[] = {"n13-l3", "n16-l24"};
  cases::evaluator_operations_match(make_cuda, sets);
}

TEST(CudaCkks, SeededKeysMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  const char* const sets[] = {"n12-l2", "n16-l24"};
  cases::seeded_keys_match(make_cuda, sets);
}

TEST(CudaCkks, ResidentCiphertextsAndKeysMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  const char* const sets[] = {"n13-l3", "n16-l24"};
  cases::resident_ciphertexts_and_keys_match(make_cuda, sets);
}

TEST(CudaCkks, HoistedLinearTransformMatchesTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  cases::hoisted_linear_transform_matches(make_cuda);
}

TEST(CudaCkks, FusedKeySwitchingMatchesTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  cases::fused_key_switching_matches(make_cuda);
}

TEST(CudaCkks, BootstrapMatchesTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  cases::bootstrap_matches(make_cuda);
}

}  // namespace
