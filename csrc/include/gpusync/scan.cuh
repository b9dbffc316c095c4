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
 * A tile's state and value share one 16-byte descriptor written and read as
 * one vector (st/ld.relaxed.gpu.v2.u64), so a reader never sees a state
 * without its value and no fence is needed on either side (the scheme CUB's
 * scan uses: an aligned 16-byte access is one transaction on NVIDIA GPUs).
 * Descriptors must be zero (TILE_EMPTY) before the launch.
 *
 * Every wait is bounded: after `timeout_ns` (%globaltimer) without progress the look-back sets
 * *error and returns false; a set *error makes every waiter leave at once.
 *
 * Written for independent thread scheduling (*_sync intrinsics, full masks);
 * blockDim.x must be a multiple of 32.  Self-contained (no host headers):
 * compiles under NVRTC too.
 */
#ifndef GPUSYNC_SCAN_CUH
#define GPUSYNC_SCAN_CUH

#include "mutex.cuh" /* globaltimer_ns, load_relaxed */

/* The look-back's longest nap between polls of its window (ns; it starts at
 * 32 and doubles): a predecessor's publication is seen at most this late. */
#ifndef GPUSYNC_LOOKBACK_SLEEP_MAX_NS
#define GPUSYNC_LOOKBACK_SLEEP_MAX_NS 512
#endif

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

/* One tile's descriptor: .x the value's bits (a double or a 64-bit
 * integer), .y its state.  Zero before the launch; 16-byte aligned. */
typedef ulonglong2 tile_desc;

namespace detail {
__device__ __forceinline__ unsigned long long bits_of(double v) { return (unsigned long long)__double_as_longlong(v); }
__device__ __forceinline__ unsigned long long bits_of(unsigned long long v) { return v; }
__device__ __forceinline__ void from_bits(unsigned long long b, double &v) { v = __longlong_as_double((long long)b); }
__device__ __forceinline__ void from_bits(unsigned long long b, unsigned long long &v) { v = b; }
__device__ __forceinline__ tile_desc load_desc(const tile_desc *p)
{
    tile_desc d;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(d.x), "=l"(d.y) : "l"(p) : "memory");
    return d;
}
} // namespace detail

/* One thread publishes tile t's aggregate (state TILE_AGGREGATE) or its
 * inclusive prefix (TILE_PREFIX).  T: double or unsigned long long. */
template <class T> __device__ __forceinline__ void tile_publish(tile_desc *desc, long long t, T value, unsigned state)
{
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(desc + t), "l"(detail::bits_of(value)),
                 "l"((unsigned long long)state)
                 : "memory");
}

/* The exclusive prefix of tile t (> 0): called by all 32 lanes of one warp,
 * every lane gets the result in *prefix.  Lane i reads tile base - i; the
 * warp waits (backing off with __nanosleep) until every lane's tile has
 * published something, then adds the values up to the nearest prefix; the
 * window moves back 32 tiles at a time until it holds a TILE_PREFIX.
 * false after a time-out (or another block's), with *error set.
 * delay_ns: a nap before the first poll -- the predecessors get that long
 * to publish their prefixes, so that the window is read once instead of
 * being polled while they load (CUB naps likewise; cumsum: GS_SCAN_DELAY_NS
 * in tuning.h, measured). */
template <class T>
__device__ __forceinline__ bool tile_lookback(const tile_desc *desc, long long t, T *prefix, int *error,
                                              unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS,
                                              unsigned delay_ns = 0)
{
    const int lane = threadIdx.x & 31;
    T acc = T();
    if (delay_ns > 0)
        __nanosleep(delay_ns);
    for (long long base = t - 1;; base -= 32) {
        const long long i = base - lane;
        /* before tile 0: nothing to add, as if a prefix of 0 */
        tile_desc d = i >= 0 ? detail::load_desc(desc + i) : make_ulonglong2(0ull, (unsigned long long)TILE_PREFIX);
        if (__any_sync(0xffffffffu, d.y == TILE_EMPTY)) {
            /* the time-out counts time without progress: a tile of the
             * window publishing resets it, and gaps in which this warp did
             * not run (time-slicing) do not count */
            unsigned long long start = globaltimer_ns(), last = start;
            unsigned seen = __ballot_sync(0xffffffffu, d.y != TILE_EMPTY);
            unsigned ns = 32;
            do {
                __nanosleep(ns);
                ns = ns < GPUSYNC_LOOKBACK_SLEEP_MAX_NS ? ns * 2 : ns;
                if (i >= 0 && d.y == TILE_EMPTY)
                    d = detail::load_desc(desc + i);
                const unsigned long long now = globaltimer_ns();
                if (now - last > GPUSYNC_SPIN_GAP_NS)
                    start += now - last;
                last = now;
                const unsigned have = __ballot_sync(0xffffffffu, d.y != TILE_EMPTY);
                if (have != seen) {
                    seen = have;
                    start = now;
                }
                const bool late = now - start > timeout_ns || load_relaxed(error);
                if (__any_sync(0xffffffffu, late)) {
                    if (lane == 0)
                        atomicExch(error, 1);
                    return false;
                }
            } while (__any_sync(0xffffffffu, d.y == TILE_EMPTY));
        }
        T v;
        detail::from_bits(d.x, v);
        const unsigned done = __ballot_sync(0xffffffffu, d.y == TILE_PREFIX);
        const int stop = done ? __ffs(done) - 1 : 31; /* the nearest tile with a prefix */
        if (lane > stop)
            v = T();
#pragma unroll
        for (int k = 16; k > 0; k >>= 1) /* butterfly: every lane ends with the same sum */
            v += __shfl_xor_sync(0xffffffffu, v, k);
        acc += v;
        if (done) {
            *prefix = acc;
            return true;
        }
    }
}

} // namespace gpusync
#endif /* GPUSYNC_SCAN_CUH */
