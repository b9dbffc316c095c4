/*
 * dtypes.cuh -- device storage types (float16, bool) and the conversion of
 * an element to its accumulator (cv, acc_of) for sum, dot and cumsum.
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_DTYPES_CUH
#define GPUSYNC_CUDA_DTYPES_CUH

#include <cuda_fp16.h>
#include <stdint.h>

/* Storage tag for float16 (bits only; converted exactly to float). */
struct gs_f16 {
    uint16_t bits;
};

/* Element -> accumulator of sum, dot and cumsum: double for floating
 * inputs, wrapping uint64 for integers and bool (NumPy's modular sums);
 * gs_bool8 is bool's storage tag (converts as x != 0). */
struct gs_bool8 {
    uint8_t v;
};

__device__ __forceinline__ unsigned long long cv(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ unsigned long long cv(int8_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint8_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int16_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint16_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int32_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint32_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int64_t x) { return (unsigned long long)x; }
__device__ __forceinline__ unsigned long long cv(uint64_t x) { return x; }
__device__ __forceinline__ double cv(gs_f16 x) { return (double)__half2float(__ushort_as_half(x.bits)); }
__device__ __forceinline__ double cv(float x) { return (double)x; }
__device__ __forceinline__ double cv(double x) { return x; }

template <class T> using acc_of = decltype(cv(T()));

#endif /* GPUSYNC_CUDA_DTYPES_CUH */
