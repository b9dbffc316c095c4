/*
 * gpusync/reduce.cuh -- warp and block reductions for CUDA kernels.
 *
 *   #include <gpusync/reduce.cuh>
 *   double s = gpusync::warp_sum(v);                 // every lane gets the sum
 *   __shared__ double scratch[32];
 *   double t = gpusync::block_sum(v, scratch);       // thread 0 gets the block's sum
 *
 * Written for independent thread scheduling: every warp-level step is a
 * *_sync intrinsic with an explicit mask, or is separated from the next one by
 * __syncwarp(mask); nothing assumes that the lanes of a warp run in
 * lock-step.  All lanes named in `mask` must call the function.
 *
 * Two warp reductions are given, both butterflies (after log2(32) = 5 steps
 * every lane holds the result):
 *   warp_reduce       registers and __shfl_xor_sync;
 *   warp_reduce_smem  the shared-memory version of seed 003, with
 *                     __syncwarp() between the write and the read of each
 *                     step: without it a lane may read its partner's slot
 *                     before the partner wrote it (a race that pre-Volta
 *                     lock-step used to hide).
 * Self-contained (no host headers): compiles under NVRTC too.
 */
#ifndef GPUSYNC_REDUCE_CUH
#define GPUSYNC_REDUCE_CUH

namespace gpusync {

struct op_sum {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct op_min {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct op_max {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};

/* Butterfly over the full warp with register shuffles. */
template <class T, class Op = op_sum>
__device__ __forceinline__ T warp_reduce(T v, Op op = Op(), unsigned mask = 0xffffffffu)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = op(v, __shfl_xor_sync(mask, v, off));
    return v;
}

template <class T> __device__ __forceinline__ T warp_sum(T v) { return warp_reduce(v, op_sum()); }

/* Butterfly through shared memory: buf holds 32 elements for this warp.
 * The full warp must call it. */
template <class T, class Op = op_sum>
__device__ __forceinline__ T warp_reduce_smem(T v, volatile T *buf, Op op = Op())
{
    const int lane = threadIdx.x & 31;
    buf[lane] = v;
    __syncwarp();
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const T other = buf[lane ^ off];
        __syncwarp(); /* every lane has read before anyone overwrites */
        v = op(v, other);
        buf[lane] = v;
        __syncwarp(); /* every lane has written before anyone reads */
    }
    return v;
}

/* Block reduction: warps reduce with shuffles, warp 0 reduces the warps'
 * results.  `scratch` holds 32 elements of shared memory; the result is valid
 * in thread 0.  Every thread of the block must call it (it has
 * __syncthreads()); blockDim.x must be a multiple of 32.  `scratch` may be
 * reused after another __syncthreads(). */
template <class T, class Op = op_sum>
__device__ __forceinline__ T block_reduce(T v, T *scratch, T identity = T(), Op op = Op())
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_reduce(v, op);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? scratch[lane] : identity;
        v = warp_reduce(v, op);
    }
    return v;
}

template <class T> __device__ __forceinline__ T block_sum(T v, T *scratch) { return block_reduce(v, scratch, T(), op_sum()); }

} // namespace gpusync
#endif /* GPUSYNC_REDUCE_CUH */
