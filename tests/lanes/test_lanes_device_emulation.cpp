// The lanes on the CKKS CUDA backend replayed on the CPU (tests/ckks/emulated_device.hpp), word
// for word against the CPU's RnsOps: lane arithmetic and the refresh in its three modes
// (device_lanes_cases.hpp), with the refresh device-resident: between its resident input and
// output nothing is downloaded, and what goes up is N words at a time, the rotations' slot
// permutations (each once) and the reduction's integer polynomial x q_0 t^-1 (its N signed
// coefficients, whose limbs the device makes: RnsOps::expand_coefficients).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "ckks/emulated_device.hpp"
#include "device_lanes_cases.hpp"

namespace {

using namespace safhire::testing::emulation;
namespace cases = safhire::lanes::testing;

cases::Around check_residency(std::size_t n) {
  traffic = {};
  return [n](bool before, const char* name) {
    if (before) {
      traffic.smallest_upload = SIZE_MAX;
      traffic.largest_upload = traffic.downloads = 0;
      traffic.launches = traffic.uploads = traffic.copies = 0;
      return;
    }
    std::printf("[ replay   ] %s: %zu launches, %zu device-to-device copies, %zu uploads\n", name,
                traffic.launches, traffic.copies, traffic.uploads);
    if (traffic.uploads > 0) {  // none where every permutation is already up
      EXPECT_EQ(traffic.smallest_upload, n) << name;
      EXPECT_EQ(traffic.largest_upload, n) << name;
    }
    EXPECT_EQ(traffic.downloads, 0U) << name;
    EXPECT_EQ(traffic.repeated_permutations, 0U) << name;
  };
}

class LanesDeviceEmulation : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(EmulatedDevice::depth, 0) << "unbalanced NVTX ranges"; }
};

TEST_F(LanesDeviceEmulation, LaneArithmeticAndRefreshMatchTheCpuWordForWord) {
  cases::lanes_match(make_emulated, check_residency(4096));
}

// The low-memory shape (lazy matrices, at most 8 babies) on another lane degree.
TEST_F(LanesDeviceEmulation, LowMemoryRefreshMatchesTheCpuWordForWord) {
  safhire::lanes::RefreshParams params;
  params.lazy_matrices = true;
  params.max_babies = 8;
  cases::lanes_match(make_emulated, check_residency(4096), "lanes-n12-8-b2", params);
}

TEST_F(LanesDeviceEmulation, ConversionsAndFieldsMatchTheCpuWordForWord) {
  cases::conversions_and_fields_match(make_emulated);
}

TEST_F(LanesDeviceEmulation, DigitOperationsMatchTheCpuWordForWord) {
  cases::digit_operations_match(make_emulated);
}

}  // namespace
