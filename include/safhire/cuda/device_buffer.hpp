// A typed device allocation with stream-ordered lifetime (cudaMallocAsync / cudaFreeAsync on the
// stream it was made for, which must outlive it), and asynchronous copies on that stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>

#include "safhire/core/error.hpp"
#include "safhire/cuda/device.hpp"
#include "safhire/cuda/scratch_pool.hpp"

namespace safhire::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count_ > 0) {
      check(cudaMallocAsync(reinterpret_cast<void**>(&data_), count_ * sizeof(T), stream_),
            "cudaMallocAsync");
    }
  }
  // Allocates and uploads `host`.
  DeviceBuffer(std::span<const T> host, cudaStream_t stream) : DeviceBuffer(host.size(), stream) {
    upload(host);
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  cudaStream_t stream() const { return stream_; }

  // Copies on the buffer's stream; the host memory must stay valid until the stream reaches them.
  void upload(std::span<const T> host) {
    require(host.size() <= count_, ErrorCode::size_mismatch,
            "DeviceBuffer::upload: too many elements");
    if (!host.empty()) {
      check(cudaMemcpyAsync(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync (upload)");
    }
  }
  void download(std::span<T> host) const {
    require(host.size() <= count_, ErrorCode::size_mismatch,
            "DeviceBuffer::download: too many elements");
    if (!host.empty()) {
      check(cudaMemcpyAsync(host.data(), data_, host.size_bytes(), cudaMemcpyDeviceToHost, stream_),
            "cudaMemcpyAsync (download)");
    }
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    count_ = 0;
  }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(stream_, other.stream_);
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

// A scratch pool's words: stream-ordered allocations on one stream (which must outlive it),
// from the device's default memory pool (see keep_pool_memory).
class StreamWords final : public WordSource {
 public:
  explicit StreamWords(cudaStream_t stream) : stream_(stream) {}
  std::uint64_t* allocate(std::size_t words) override {
    void* p = nullptr;
    check(cudaMallocAsync(&p, words * sizeof(std::uint64_t), stream_), "cudaMallocAsync");
    return static_cast<std::uint64_t*>(p);
  }
  void release(std::uint64_t* p, std::size_t) noexcept override { cudaFreeAsync(p, stream_); }

 private:
  cudaStream_t stream_;
};

}  // namespace safhire::cuda
