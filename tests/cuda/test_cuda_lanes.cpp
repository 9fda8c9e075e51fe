// The lanes on the CUDA backend against the CPU's, word for word (tests/lanes/
// device_lanes_cases.hpp: lane arithmetic and the refresh in its three modes, device-resident, the
// digit conversions and a field product), on test spaces and on the issue's own, 16 integers
// modulo 2^4096 + 1 at N = 2^16. The CPU replay of the same backend code runs these cases in every
// CI run (test_lanes_device_emulation.cpp).
#include <gtest/gtest.h>

#include "cuda_test.hpp"
#include "lanes/device_lanes_cases.hpp"
#include "safhire/cuda/ckks.hpp"

namespace {

std::unique_ptr<safhire::ckks::RnsOps> make_cuda(const safhire::ckks::CkksContext& context) {
  return safhire::cuda::make_cuda_rns_ops(context);
}

TEST(CudaLanes, TestSpaceMatchesTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  safhire::lanes::testing::lanes_match(make_cuda);
}

TEST(CudaLanes, ConversionsAndFieldsMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  safhire::lanes::testing::conversions_and_fields_match(make_cuda);
}

TEST(CudaLanes, DigitOperationsMatchTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  safhire::lanes::testing::digit_operations_match(make_cuda);
}

TEST(CudaLanes, N16SpaceMatchesTheCpuWordForWord) {
  SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
  safhire::lanes::testing::lanes_match(make_cuda, {}, "lanes-n16-4096-b2");
}

}  // namespace
