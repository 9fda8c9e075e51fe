// CUDA device discovery and error handling for the CUDA backend. Everything that talks to the
// driver goes through check(), which turns a failed call into Error(ErrorCode::device_error).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace safhire::cuda {

// True when a CUDA device is present and the driver can run this build's kernels.
bool device_available();

// One line per device (name, compute capability, memory), or why none is usable.
std::string describe_devices();

// Throws Error(ErrorCode::device_error) naming `what` when `status` is not cudaSuccess.
void check(cudaError_t status, const char* what);

// Raises the release threshold of the current device's default memory pool so that memory freed
// with cudaFreeAsync stays with the process between synchronisations instead of going back to the
// driver at each one (whose release threshold is 0 by default). Idempotent.
void keep_pool_memory();

// Owns a non-blocking CUDA stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace safhire::cuda
