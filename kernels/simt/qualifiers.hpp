// The dialect's function qualifiers: what nvcc reads as __device__ / __host__ __device__ is a
// plain inline function to g++, so one kernel source compiles on both sides.
#pragma once

#if defined(__CUDACC__)
#define SIMT_DEVICE __device__ __forceinline__
#define SIMT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SIMT_DEVICE inline
#define SIMT_HOST_DEVICE inline
#endif
