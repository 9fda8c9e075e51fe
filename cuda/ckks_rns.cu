// The CKKS RNS primitives on a CUDA device: DeviceRnsOps (portable/device_rns_ops.hpp, the
// backend's one implementation, replayed on the CPU by the emulation test) over CudaCkksDevice,
// whose launches run the kernel bodies of portable/ckks_kernels.cuh, and whose memory is
// stream-ordered allocations from the device's memory pool. Every output word equals the CPU's.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "launch.cuh"
#include "nvtx_range.cuh"
#include "portable/ckks_kernels.cuh"
#include "portable/device_rns_ops.hpp"
#include "safhire/core/error.hpp"
#include "safhire/cuda/ckks.hpp"
#include "safhire/cuda/device_buffer.hpp"

namespace safhire::cuda {

namespace {

using core::u64;
namespace kernels = ckks_kernels;

constexpr std::uint32_t kColour = 0xff2e86c1;
constexpr std::uint32_t kStepColour = 0xff8e44ad;

// ---- kernels: the bodies of portable/ckks_kernels.cuh over a grid ---------------------------

__device__ __forceinline__ std::uint32_t stride_first() {
  return blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::uint32_t stride_step() {
  return gridDim.x * blockDim.x;
}

__global__ void __launch_bounds__(kernels::kThreads) ntt_kernel(kernels::NttArgs args) {
  __shared__ u64 tile[negacyclic::kTileWords];
  kernels::ntt_tile(args, blockIdx.x, blockIdx.y, tile, threadIdx.x, blockDim.x,
                    [] { __syncthreads(); });
}

__global__ void elementwise_kernel(kernels::ElementwiseArgs args) {
  kernels::elementwise_limb(args, blockIdx.y, stride_first(), stride_step());
}

__global__ void inner_product_kernel(kernels::InnerProductArgs args) {
  kernels::inner_product_limb(args, blockIdx.y, stride_first(), stride_step());
}

__global__ void __launch_bounds__(kernels::kUniformBlocks)
    uniform_kernel(kernels::AesTables tables, kernels::UniformArgs args) {
  __shared__ kernels::UniformShared shared;
  kernels::uniform_chunk(tables, args, blockIdx.y, blockIdx.x, shared, threadIdx.x, blockDim.x,
                         [] { __syncthreads(); });
}

__global__ void permute_kernel(kernels::PermuteArgs args) {
  kernels::permute_limb(args, blockIdx.y, stride_first(), stride_step());
}

__global__ void signed_residues_kernel(kernels::SignedResiduesArgs args) {
  kernels::signed_residues_limb(args, blockIdx.y, stride_first(), stride_step());
}

__global__ void convert_prepare_kernel(kernels::ConvertPrepareArgs args) {
  kernels::convert_prepare_limb(args, blockIdx.y, stride_first(), stride_step());
}

__global__ void convert_kernel(kernels::ConvertArgs args) {
  kernels::convert_limb(args, blockIdx.y, stride_first(), stride_step());
}

dim3 dims(kernels::Grid g) {
  return dim3(g.x, g.y);
}

// ---- the device --------------------------------------------------------------------------------

struct CudaCkksDevice {
  using Stream = cudaStream_t;
  template <class T>
  using Buffer = DeviceBuffer<T>;

  // Stream-ordered allocations from the device's default memory pool, whose release threshold
  // is raised so that freed blocks stay with the process between synchronisations, and copies,
  // all on one stream that every primitive of the backend uses.
  class Memory final : public ckks::DeviceMemory {
   public:
    Memory() { keep_pool_memory(); }
    u64* allocate(std::size_t words) override {
      void* p = nullptr;
      check(cudaMallocAsync(&p, words * sizeof(u64), stream()), "cudaMallocAsync");
      return static_cast<u64*>(p);
    }
    void release(u64* p, std::size_t) noexcept override { cudaFreeAsync(p, stream()); }
    void copy(u64* dst, const u64* src, std::size_t words) override {
      CudaCkksDevice::copy(dst, src, words, stream());
    }
    cudaStream_t stream() const { return stream_.get(); }

   private:
    cuda::Stream stream_;
  };

  static void require_device() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    require(status == cudaSuccess && count > 0, ErrorCode::device_error,
            std::string("the CKKS CUDA backend needs a CUDA device: no usable device (") +
                cudaGetErrorString(status) + ")");
  }

  static void zero(u64* p, std::size_t words, Stream s) {
    check(cudaMemsetAsync(p, 0, words * sizeof(u64), s), "cudaMemsetAsync");
  }
  static void upload(u64* dst, const u64* src, std::size_t words, Stream s) {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (upload)");
  }
  static void download(u64* dst, const u64* src, std::size_t words, Stream s) {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (download)");
  }
  static void copy(u64* dst, const u64* src, std::size_t words, Stream s) {
    check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, s),
          "cudaMemcpyAsync (device to device)");
  }
  static void synchronize(Stream s) { check(cudaStreamSynchronize(s), "cudaStreamSynchronize"); }

  // One NVTX range per primitive; the steps around them in their own colour, same domain.
  class Range {
   public:
    explicit Range(const char* name) : range_(name, NvtxCategory::ring, kColour) {}

   private:
    NvtxRange range_;
  };
  static void push_range(const char* name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.category = static_cast<std::uint32_t>(NvtxCategory::ring);
    attributes.colorType = NVTX_COLOR_ARGB;
    attributes.color = kStepColour;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(NvtxRange::domain(), &attributes);
  }
  static void pop_range() { nvtxDomainRangePop(NvtxRange::domain()); }

  static void ntt(kernels::Grid g, const kernels::NttArgs& args, Stream s) {
    ntt_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("ntt_kernel");
  }
  static void elementwise(kernels::Grid g, const kernels::ElementwiseArgs& args, Stream s) {
    elementwise_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("elementwise_kernel");
  }
  static void inner_product(kernels::Grid g, const kernels::InnerProductArgs& args, Stream s) {
    inner_product_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("inner_product_kernel");
  }
  static void uniform(kernels::Grid g, const kernels::AesTables& tables,
                      const kernels::UniformArgs& args, Stream s) {
    uniform_kernel<<<dims(g), kernels::kUniformBlocks, 0, s>>>(tables, args);
    check_launch("uniform_kernel");
  }
  static void permute(kernels::Grid g, const kernels::PermuteArgs& args, Stream s) {
    permute_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("permute_kernel");
  }
  static void signed_residues(kernels::Grid g, const kernels::SignedResiduesArgs& args, Stream s) {
    signed_residues_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("signed_residues_kernel");
  }
  static void convert_prepare(kernels::Grid g, const kernels::ConvertPrepareArgs& args, Stream s) {
    convert_prepare_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("convert_prepare_kernel");
  }
  static void convert(kernels::Grid g, const kernels::ConvertArgs& args, Stream s) {
    convert_kernel<<<dims(g), kernels::kThreads, 0, s>>>(args);
    check_launch("convert_kernel");
  }
};

}  // namespace

std::unique_ptr<ckks::RnsOps> make_cuda_rns_ops(const ckks::CkksContext& context) {
  return std::make_unique<DeviceRnsOps<CudaCkksDevice>>(context);
}

}  // namespace safhire::cuda
