// The dialect's function qualifiers: what nvcc reads as __device__ / __host__ __device__ is a
// plain inline function to g++, so one kernel source compiles on both sides; and the unroll hint.
#pragma once

#if defined(__CUDACC__)
#define SIMT_DEVICE __device__ __forceinline__
#define SIMT_HOST_DEVICE __host__ __device__ __forceinline__
// Before a loop of constant trip count over a per-thread array: nvcc unrolls it fully, so the
// array's indices are constants and it lives in registers. g++ needs no such hint.
#define SIMT_UNROLL _Pragma("unroll")
#else
#define SIMT_DEVICE inline
#define SIMT_HOST_DEVICE inline
#define SIMT_UNROLL
#endif
