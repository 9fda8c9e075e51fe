// A parameterised GoogleTest fixture for CUDA tests: skipped with "no CUDA device" where none is
// present, and owning a stream otherwise (created only after the device check).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "safhire/cuda/device.hpp"

namespace safhire::testing {

template <class Param>
class CudaTestWithParam : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
    stream_ = std::make_unique<cuda::Stream>();
  }
  cudaStream_t stream() const { return stream_->get(); }
  void synchronize() const { stream_->synchronize(); }

 private:
  std::unique_ptr<cuda::Stream> stream_;
};

}  // namespace safhire::testing
