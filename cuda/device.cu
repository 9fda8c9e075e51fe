// Device discovery, error checks and streams.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/cuda/device.hpp"

namespace safhire::cuda {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(ErrorCode::device_error, std::string(what) +
                                             " failed: " + cudaGetErrorName(status) + " (" +
                                             cudaGetErrorString(status) + ")");
  }
}

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return false;
  }
  return true;
}

std::string describe_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();
    return std::string("CUDA: backend built, but no usable device (") +
           (status != cudaSuccess ? cudaGetErrorString(status) : "no device") + ")";
  }
  std::string out = "CUDA devices:";
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    out += "\n  [" + std::to_string(d) + "] " + prop.name + ", compute capability " +
           std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
           std::to_string(prop.totalGlobalMem >> 20) + " MiB, " +
           std::to_string(prop.multiProcessorCount) + " SMs";
  }
  return out;
}

void keep_pool_memory() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
        "cudaMemPoolSetAttribute");
}

Stream::Stream() {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void Stream::synchronize() const {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace safhire::cuda
