// Annotations that let one arithmetic definition serve the CPU path and CUDA kernels alike.
// Everything marked SAFHIRE_HD is plain C++ when compiled by the host compiler.
#pragma once

#if defined(__CUDACC__)
#define SAFHIRE_HD __host__ __device__ __forceinline__
#define SAFHIRE_DEVICE __device__ __forceinline__
#else
#define SAFHIRE_HD inline
#define SAFHIRE_DEVICE inline
#endif
