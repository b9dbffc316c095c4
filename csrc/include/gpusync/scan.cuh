/*
 * gpusync/scan.cuh -- prefix sums (scans) for CUDA kernels: warp and block
 * scans, and the decoupled look-back that chains the tiles of one grid.
 *
 *   #include <gpusync/scan.cuh>
 *   double incl = gpusync::warp_inclusive_scan(v);          // lane i: v_0 + ... + v_i
 *   __shared__ double scratch[33];
 *   double total, excl = gpusync::block_exclusive_scan(v, scratch, &total);
 *
 * Decoupled look-back (Merrill & Garland, 2016) lets one kernel scan an
 * array of any length in a single pass: tile t (taken in launch order from
 * an atomic ticket, so that every tile it waits for belongs to a block that
 * is already running) publishes its aggregate at once, then looks back over
 * the tiles before it -- adding aggregates until it meets a tile that has
 * published its inclusive prefix -- and publishes its own inclusive prefix.
 * Each tile has a flag and two value slots; a value is written before its
 * flag with release semantics (st.release.gpu) and read after the flag with
 * acquire semantics (ld.acquire.gpu), so a reader never sees a flag without
 * its value.  Flags must be zero (TILE_EMPTY) before the launch.
 *
 * Every wait is bounded: after `timeout_ns` (%globaltimer) the look-back sets
 * *error and returns false; a set *error makes every waiter leave at once.
 *
 * Written for independent thread scheduling (*_sync intrinsics, full masks);
 * blockDim.x must be a multiple of 32.  Self-contained (no host headers):
 * compiles under NVRTC too.
 */
#ifndef GPUSYNC_SCAN_CUH
#define GPUSYNC_SCAN_CUH

#include "mutex.cuh" /* globaltimer_ns, load_acquire_gpu, store_release_gpu, load_relaxed */

namespace gpusync {

/* Inclusive scan over the lanes named in `mask` (all 32 by default):
 * Hillis-Steele with __shfl_up_sync, log2(32) steps. */
template <class T> __device__ __forceinline__ T warp_inclusive_scan(T v, unsigned mask = 0xffffffffu)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const T o = __shfl_up_sync(mask, v, d);
        if (lane >= d)
            v += o;
    }
    return v;
}

/* Exclusive block scan: returns v_0 + ... + v_{t-1} for thread t and the
 * block's total in *total.  `scratch`: 33 elements of shared memory.  Every
 * thread must call it; it begins and ends with __syncthreads(), so scratch
 * may be reused at once.  Only additions (no subtraction), so a floating
 * exclusive prefix is as exact as the inclusive one. */
template <class T> __device__ __forceinline__ T block_exclusive_scan(T v, T *scratch, T *total)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const T incl = warp_inclusive_scan(v);
    T excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0)
        excl = T();
    __syncthreads(); /* the previous use of scratch is over */
    if (lane == 31)
        scratch[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const T w = lane < nwarps ? scratch[lane] : T();
        const T wi = warp_inclusive_scan(w);
        T we = __shfl_up_sync(0xffffffffu, wi, 1);
        if (lane == 0)
            we = T();
        if (lane < nwarps)
            scratch[lane] = we;
        if (lane == 31)
            scratch[32] = wi;
    }
    __syncthreads();
    const T r = scratch[warp] + excl;
    *total = scratch[32];
    __syncthreads();
    return r;
}

/* Tile states of the decoupled look-back. */
enum { TILE_EMPTY = 0, TILE_AGGREGATE = 1, TILE_PREFIX = 2 };

/* flag[t], aggregate[t], inclusive[t] for every tile; flags zeroed first. */
template <class T> struct tile_states {
    unsigned *flag;
    T *aggregate;
    T *inclusive;
};

/* One thread publishes tile t's aggregate (state TILE_AGGREGATE) or its
 * inclusive prefix (TILE_PREFIX). */
template <class T> __device__ __forceinline__ void tile_publish(tile_states<T> s, long long t, T value, unsigned state)
{
    T *slot = state == TILE_PREFIX ? s.inclusive + t : s.aggregate + t;
    *(volatile T *)slot = value;
    store_release_gpu(s.flag + t, state); /* the value before the flag */
}

/* The exclusive prefix of tile t (> 0): called by all 32 lanes of one warp,
 * every lane gets the result in *prefix.  Lane i reads tile base - i; the
 * window moves back 32 tiles at a time until it holds a TILE_PREFIX.
 * false after a time-out (or another block's), with *error set. */
template <class T>
__device__ __forceinline__ bool tile_lookback(tile_states<T> s, long long t, T *prefix, int *error,
                                              unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    const int lane = threadIdx.x & 31;
    T acc = T();
    for (long long base = t - 1;; base -= 32) {
        const long long i = base - lane;
        unsigned f = TILE_PREFIX; /* before tile 0: nothing to add */
        T v = T();
        bool ok = true;
        if (i >= 0) {
            f = load_acquire_gpu(s.flag + i);
            if (f == TILE_EMPTY) {
                const unsigned long long start = globaltimer_ns();
                for (unsigned spins = 0; f == TILE_EMPTY; spins++) {
                    f = load_acquire_gpu(s.flag + i);
                    if ((spins & 15) == 15 && f == TILE_EMPTY) {
                        if (load_relaxed(error) || globaltimer_ns() - start > timeout_ns) {
                            atomicExch(error, 1);
                            ok = false;
                            break;
                        }
                    }
                }
            }
            if (ok)
                v = f == TILE_PREFIX ? *(volatile T *)(s.inclusive + i) : *(volatile T *)(s.aggregate + i);
        }
        if (__any_sync(0xffffffffu, !ok))
            return false;
        const unsigned done = __ballot_sync(0xffffffffu, f == TILE_PREFIX);
        const int stop = done ? __ffs(done) - 1 : 31; /* the nearest tile with a prefix */
        if (lane > stop)
            v = T();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) /* the same order in every lane */
            v += __shfl_xor_sync(0xffffffffu, v, d);
        acc += v;
        if (done) {
            *prefix = acc;
            return true;
        }
    }
}

} // namespace gpusync
#endif /* GPUSYNC_SCAN_CUH */
