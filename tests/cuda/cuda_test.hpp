// The device gate of the CUDA tests: where no CUDA device is usable a test is skipped with
// "no CUDA device", unless SAFHIRE_REQUIRE_CUDA=1 is set (the device check sets it), which turns
// that skip into a failure, so that a run on a machine whose driver or device is broken cannot
// report green. CudaTestWithParam is the parameterised fixture that applies it and owns a stream.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "safhire/cuda/device.hpp"

namespace safhire::testing {

// True when SAFHIRE_REQUIRE_CUDA is set to anything but "" or "0".
inline bool cuda_required() {
  const char* v = std::getenv("SAFHIRE_REQUIRE_CUDA");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace safhire::testing

// Skips the current test with "no CUDA device" (or fails it, under SAFHIRE_REQUIRE_CUDA=1) when
// no device is usable. Returns from the calling function either way.
#define SAFHIRE_REQUIRE_DEVICE_OR_SKIP()                                            \
  do {                                                                              \
    if (!::safhire::cuda::device_available()) {                                     \
      if (::safhire::testing::cuda_required()) {                                    \
        GTEST_FAIL() << "no CUDA device, and SAFHIRE_REQUIRE_CUDA=1 asks for one: " \
                     << ::safhire::cuda::describe_devices();                        \
      }                                                                             \
      GTEST_SKIP() << "no CUDA device";                                             \
    }                                                                               \
  } while (0)

namespace safhire::testing {

template <class Param>
class CudaTestWithParam : public ::testing::TestWithParam<Param> {
 protected:
  // A fatal failure or a skip here keeps the test body from running.
  void SetUp() override {
    SAFHIRE_REQUIRE_DEVICE_OR_SKIP();
    stream_ = std::make_unique<cuda::Stream>();
  }
  cudaStream_t stream() const { return stream_->get(); }
  void synchronize() const { stream_->synchronize(); }

 private:
  std::unique_ptr<cuda::Stream> stream_;
};

}  // namespace safhire::testing
