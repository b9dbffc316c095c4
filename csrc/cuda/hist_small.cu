/*
 * Strategy `shared`, fast paths for integer data whose bins are few (issue 14):
 *
 *  - 8-bit data into at most 256 bins (identity, offset with a closed top, or
 *    a lookup table): 32 replicas of the 256 counters in static shared
 *    memory, laid out [bin][32], lane l always updating replica l -- lane l's
 *    counter of every bin sits in bank l, so a warp's 32 updates never
 *    conflict and never collide on one word, whatever the data (one value,
 *    alternating, runs...).  16-byte loads, software-pipelined: the next
 *    U vectors are in flight while the current U are counted.
 *  - float32 and float64 on equal-width bins whose replicas fit shared memory:
 *    the same replicas and pipelined loads, in a kernel with its own launch
 *    bounds (the generic shared kernel spilled at its 32 registers).
 *  - 16- and 32-bit integers on unit-width integer bins (bincount, and
 *    histogram with integer edges) that fit a block's shared memory: R
 *    replicas (lane % R), 16-byte loads pipelined the same way, 32-bit index
 *    arithmetic for 16-bit data; int64 too (its differences modulo 2^64).
 *
 * Each kernel ends in one of the ways of gs_hist_fin (hist_launch.cuh):
 * adding its block's counts into counts zeroed by hist_init (it runs as that
 * kernel's programmatic dependent), or -- a device call, hist.cu decides --
 * writing every count itself in one launch.
 *
 * Launch shape from the device: threads per block fixed per kernel, blocks
 * per SM from the occupancy API, grid = resident blocks (or fewer when the
 * input is small).  Inputs that fit in L2 are read with ordinary loads (a
 * repeated call finds them there); larger ones with evict-first loads.
 *
 * The 8-bit kernel runs only up to GS_HIST_U8_SMALL_MAX_BYTES: on the H200
 * it lost to the generic shared kernel above that (1 GiB: 82% against 91% of
 * read; benchmarks/results/histogram_dist_H200.md), and won below it by
 * sizing the grid from the work (1e4..1e6 bytes: 5.8-6.3 us against
 * 6.3-6.7 us, graph replay).  Above it contiguous 8-bit data now take
 * hist_smem.cu's byte kernel (tuning.h: GS_HIST_BYTES_*).
 *
 * GPUSYNC_HIST_SMALL=0 turns these paths off (the generic shared kernel of
 * hist_smem.cu runs -- for contiguous 8-bit data its byte kernel, unless
 * GPUSYNC_HIST_BYTES=0: before/after measurements), =2 takes the 8-bit kernel
 * at every size; GPUSYNC_HIST_U8_CFG=<c>
 * picks the 8-bit kernel's shape (0: 512 threads x U=2, 1: 1024 x U=2,
 * 2: 256 x U=2, 3: 512 x U=4 at 2 blocks per SM) for tuning sweeps.
 */
#include "internal.cuh"

#include <stdlib.h>

namespace {

template <bool STREAM> __device__ __forceinline__ int4 ld16(const int4 *p)
{
    if (STREAM)
        return __ldcs(p); /* streamed once: evict-first */
    return __ldg(p);
}

/* Visit the 16-byte vectors [0, nv) of xv that this thread owns (grid
 * stride), U at a time, with the next U loads issued before the current ones
 * are used.  f(vec) for each. */
template <int U, bool STREAM, class F>
__device__ __forceinline__ void pipelined(const int4 *__restrict__ xv, int64_t nv, int64_t tid, int64_t nth, F &&f)
{
    int4 cur[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t j = tid + (int64_t)u * nth;
        cur[u] = j < nv ? ld16<STREAM>(xv + j) : make_int4(0, 0, 0, 0);
    }
    for (int64_t j0 = tid; j0 < nv; j0 += (int64_t)U * nth) {
        const int64_t j1 = j0 + (int64_t)U * nth;
        int4 nxt[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = j1 + (int64_t)u * nth;
            nxt[u] = j < nv ? ld16<STREAM>(xv + j) : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            if (j0 + (int64_t)u * nth < nv)
                f(cur[u]);
#pragma unroll
        for (int u = 0; u < U; u++)
            cur[u] = nxt[u];
    }
}

/* Every element of x[0, n) this thread owns: the misaligned head and the
 * tail one at a time, the 16-byte vectors between them pipelined (U loads in
 * flight).  add(value) for each. */
template <class T, int U, bool STREAM, class F>
__device__ __forceinline__ void each_element(const T *__restrict__ x, int64_t n, int64_t tid, int64_t nth, F &&add)
{
    constexpr int V = 16 / sizeof(T);
    int64_t head = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / sizeof(T));
    if (head > n)
        head = n;
    const int4 *xv = reinterpret_cast<const int4 *>(x + head);
    const int64_t nv = (n - head) / V, done = head + nv * V;
    pipelined<U, STREAM>(xv, nv, tid, nth, [&](const int4 &v) {
        gs_vec<T> r;
        r.v = v;
#pragma unroll
        for (int e = 0; e < V; e++)
            add(r.e[e]);
    });
    if (tid < head)
        add(x[tid]);
    if (tid < n - done)
        add(x[done + tid]);
}

/* Blocks for one of these kernels: the resident count (occupancy API; a
 * kernel with dynamic shared memory may use up to the device's opt-in), no
 * more than the work needs (`vectors` / (threads x U)) unless
 * GPUSYNC_HIST_GRID forces the grid, within gs_hist_grid's bounds. */
static gs_status small_grid(const gs_hist_launch *l, const void *kern, int threads, size_t smem, int64_t vectors,
                            int u, int64_t *grid)
{
    gs_status st = smem > 0 ? gs_cuda_allow_smem(kern, l->dev) : GS_OK;
    int64_t resident = 0;
    if (st == GS_OK)
        st = gs_cuda_resident_blocks(kern, threads, smem, l->dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t work = (vectors + (int64_t)threads * u - 1) / ((int64_t)threads * u);
    int64_t g = gs_hist_grid(l, resident, threads);
    int forced = 0;
    gs_env_number(GS_ENV_HIST_GRID, 0, &forced);
    if (!forced && g > work)
        g = work > 0 ? work : 1;
    *grid = g;
    return GS_OK;
}

/* ---------------------------------------------------------------- 8-bit */

constexpr int U8_R = 32;

/* mode 0: bin = byte (offset 0, >= 256 bins); mode 1: bin from the table
 * map[byte] (already shifted by 5; -1: dropped). */
template <int THREADS, int MINB, int U, bool STREAM>
__global__ void __launch_bounds__(THREADS, MINB)
    hist_u8_kernel(gs_binner b, const uint8_t *__restrict__ x, int64_t n, unsigned long long *out, int mode,
                   gs_hist_fin fin)
{
    __shared__ __align__(16) unsigned h[256 * U8_R];
    __shared__ int map[256];
    for (int i = threadIdx.x; i < 256 * U8_R / 4; i += THREADS)
        reinterpret_cast<uint4 *>(h)[i] = make_uint4(0, 0, 0, 0);
    for (int i = threadIdx.x; i < 256; i += THREADS) {
        const int64_t k = b.kind == GS_BINS_LUT ? (int64_t)b.lut[i] : gs_bin_direct(&b, (uint64_t)i);
        map[i] = k >= 0 && k < 256 ? (int)k << 5 : -1;
    }
    __syncthreads();
    unsigned *const mine = h + (threadIdx.x & 31);
    const int64_t tid = (int64_t)blockIdx.x * THREADS + threadIdx.x, nth = (int64_t)gridDim.x * THREADS;

    int64_t head = (int64_t)((16 - ((uintptr_t)x & 15)) & 15);
    if (head > n)
        head = n;
    const int4 *xv = reinterpret_cast<const int4 *>(x + head);
    const int64_t nv = (n - head) >> 4, done = head + (nv << 4);
    if (mode == 0) {
        pipelined<U, STREAM>(xv, nv, tid, nth, [&](const int4 &v) {
            const unsigned w[4] = {(unsigned)v.x, (unsigned)v.y, (unsigned)v.z, (unsigned)v.w};
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    atomicAdd_block(mine + (((w[q] >> (8 * j)) & 0xffu) << 5), 1u);
        });
    } else {
        pipelined<U, STREAM>(xv, nv, tid, nth, [&](const int4 &v) {
            const unsigned w[4] = {(unsigned)v.x, (unsigned)v.y, (unsigned)v.z, (unsigned)v.w};
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int k = map[(w[q] >> (8 * j)) & 0xffu];
                    if (k >= 0)
                        atomicAdd_block(mine + k, 1u);
                }
        });
    }
    /* the unaligned head (< 16 bytes) and the tail (< 16 bytes) */
    if (tid < head) {
        const int k = map[x[tid]];
        if (k >= 0)
            atomicAdd_block(mine + k, 1u);
    }
    if (tid < n - done) {
        const int k = map[x[done + tid]];
        if (k >= 0)
            atomicAdd_block(mine + k, 1u);
    }
    gs_hist_finish(h, 256, 5, out, fin);
}

template <int THREADS, int MINB, int U>
static gs_status launch_u8_shape(const gs_hist_launch *l, bool stream, int mode, int *declined)
{
    auto kern = stream ? hist_u8_kernel<THREADS, MINB, U, true> : hist_u8_kernel<THREADS, MINB, U, false>;
    int64_t g = 0;
    const gs_status st = small_grid(l, (const void *)kern, THREADS, 0, l->n >> 4, U, &g);
    if (st != GS_OK)
        return st;
    return gs_hist_launch_fin(l, kern, g, THREADS, 0, declined, l->binner, (const uint8_t *)l->x, l->n,
                        (unsigned long long *)l->out, mode);
}

static int env_int(gs_env_var v, int dflt) { return (int)gs_env_number(v, dflt, NULL); }

/* ------------------------------------------ 16-, 32- and 64-bit signed integers */

template <class T> struct int_math {
    using I = typename std::conditional<(sizeof(T) <= 2), int, long long>::type;
};

/* TOP (bincount's first count, offset 0): the kernel also leaves the largest x
 * in top[0], or ~0 when some x < 0, and the smallest in top[1] -- one
 * unsigned max an element, in the data's own width (a negative signed x is
 * past the signed range as unsigned), so a bincount needs no min/max pass,
 * and its second count can take only the values min .. max.  The smallest:
 * 32-bit data one min an element; 16-bit data only the smallest counted x
 * (each block's first nonzero bin, after the merge), ~0 when every x is
 * past the bins -- a min an element cost 16-bit data of 4,096 values 5 %
 * (r153), and a min of only the x past the bins (a branch) 9 % (r154).
 * (The max of the 64-bit difference spilled 8 bytes for 32-bit data, and one
 * int32 pass over 65,536 values ran 11 % slower than the min/max pass,
 * r142.)  int64 data keep both extremes in 64 bits, one min and one max an
 * element as 32-bit data do. */
template <class T, int U, bool STREAM, bool TOP>
__global__ void __launch_bounds__(GS_HIST_BLOCK_THREADS, GS_HIST_BLOCKS_PER_SM)
    hist_int_kernel(const T *__restrict__ x, int64_t n, long long offset, int nb, int closed,
                    unsigned long long *out, int rshift, unsigned long long *top, gs_hist_fin fin)
{
    using I = typename int_math<T>::I;
    extern __shared__ __align__(16) unsigned hs[];
    const int R = 1 << rshift;
    for (int i = threadIdx.x; i < (nb << rshift); i += GS_HIST_BLOCK_THREADS)
        hs[i] = 0;
    __syncthreads();
    unsigned *const mine = hs + (threadIdx.x & (R - 1));
    const I off = (I)offset;
    using UI = typename std::make_unsigned<I>::type;
    const UI lim = (UI)nb + (UI)closed, last = (UI)nb - 1;
    using UT = typename std::make_unsigned<T>::type;
    /* the extremes' registers: UT widened to 32 bits (16-bit extremes in 32-bit registers), 64 bits for int64 */
    using UW = typename std::conditional<(sizeof(T) == 8), unsigned long long, unsigned>::type;
    UW tmax = 0, tmin = ~(UW)0;
    auto add = [&](T v) {
        if (TOP) { /* offset 0, no closed top (launch_int checks): x itself is the bin */
            const UW u = (UW)(UT)v; /* a negative signed x: past every bin */
            tmax = max(tmax, u);
            if (sizeof(T) >= 4) /* (16-bit: the smallest counted x alone, from the counts below) */
                tmin = min(tmin, u);
            if (u < (UW)nb)
                atomicAdd_block(mine + ((unsigned)u << rshift), 1u);
            return;
        }
        /* v - off modulo 2^bits(I) is below lim exactly when v - off is: small_try keeps |off| <= 2^30 for 16-bit
         * data and 2^40 else, so a negative difference wraps to far past lim and int64's largest stays below 2^64 */
        const UI d = (UI)(I)v - (UI)off;
        if (d < lim)
            atomicAdd_block(mine + ((unsigned)(d < last ? d : last) << rshift), 1u);
    };
    each_element<T, U, STREAM>(x, n, (int64_t)blockIdx.x * GS_HIST_BLOCK_THREADS + threadIdx.x,
                               (int64_t)gridDim.x * GS_HIST_BLOCK_THREADS, add);
    gs_hist_finish<!TOP>(hs, nb, rshift, out, fin);
    /* After the merge: it waits for the kernel that zeroes the counts and *top
     * (gs_pdl_wait; this kernel is its programmatic dependent and may start
     * while it runs), so that zero (and word[1] = ~0) cannot land after our max or min. */
    if (TOP) { /* every thread of the block is here: full-warp reductions */
        /* 16-bit data: the smallest x this block counted (the merge's barrier:
         * the counts are whole); 32-bit data's tmin is already the smallest x
         * (a counted x is no smaller: no scan, review36b #3) */
        UW first = ~(UW)0;
        if (sizeof(T) == 2)
            for (int i = threadIdx.x; i < (nb << rshift); i += GS_HIST_BLOCK_THREADS)
                if (hs[i]) {
                    first = (UW)(i >> rshift);
                    break;
                }
        UW m = tmax, b = min(tmin, first);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
            b = min(b, __shfl_xor_sync(0xffffffffu, b, o));
        }
        const bool neg = std::is_signed<T>::value && m > (UW)((UT) ~(UT)0 >> 1);
        if ((threadIdx.x & 31) == 0 && m)
            atomicMax(top, neg ? ~0ull : (unsigned long long)m);
        /* (32/64-bit: a warp that saw no element adds ~0, no smaller than any x; 16-bit: ~0 is "no value
         * counted" and adds nothing, so top[1] stays ~0 when every x is past the bins: not known) */
        if ((threadIdx.x & 31) == 0 && (sizeof(T) >= 4 || b != ~(UW)0))
            atomicMin(top + 1, (unsigned long long)b);
    }
}

template <class T> static gs_status launch_int(const gs_hist_launch *l, int rshift, bool stream, int *declined)
{
    constexpr int U = 2;
    if (l->top && (l->binner.offset != 0 || l->binner.closed_top))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "internal: a first count's bins start at 0 and have no closed top");
    const auto kern = l->top ? (stream ? hist_int_kernel<T, U, true, true> : hist_int_kernel<T, U, false, true>)
                             : (stream ? hist_int_kernel<T, U, true, false> : hist_int_kernel<T, U, false, false>);
    const size_t smem = (size_t)l->binner.nbins << rshift << 2;
    int64_t g = 0;
    const gs_status st =
        small_grid(l, (const void *)kern, GS_HIST_BLOCK_THREADS, smem, l->n / (16 / (int)sizeof(T)), U, &g);
    if (st != GS_OK)
        return st;
    return gs_hist_launch_fin(l, kern, g, GS_HIST_BLOCK_THREADS, smem, declined, (const T *)l->x, l->n,
                        (long long)l->binner.offset, (int)l->binner.nbins, l->binner.closed_top,
                        (unsigned long long *)l->out, rshift, l->top);
}


/* ------------------------------------- float32 / float64 on equal-width bins */

/* Bin of one value on equal-width edges held in shared memory; -1: out.
 * MODE 0: in double; 1: float32 data on float32-exact edges, in float;
 * 2: the same with the estimate as one fused multiply-add (gs_binner.fma_f).
 * The mode is a template parameter: a run-time test in the element loop let
 * the compiler execute both paths (measured: 64% of read against 75% for the
 * generic kernel on float32). */
template <int MODE, bool ANY_N>
__device__ __forceinline__ int real_bin(const gs_binner &b, const gs_smem_bins &sb, float v)
{
    if (MODE == 0)
        return (int)gs_bin_uniform_d<ANY_N>(b, sb, (double)v);
    return (int)gs_bin_uniform_f<MODE == 2, ANY_N>(b, sb, v);
}
template <int MODE, bool ANY_N>
__device__ __forceinline__ int real_bin(const gs_binner &b, const gs_smem_bins &sb, double v)
{
    return (int)gs_bin_uniform_d<ANY_N>(b, sb, v);
}

/* R replicas (lane % R) of the bins in dynamic shared memory, the edges in
 * static shared memory; its own launch bounds, so that the binning and the
 * loads in flight need no spills (the generic shared kernel, 1024 x 2 at 32
 * registers, spilled on floats). */
template <class T, int MODE, int SHIFT, int THREADS, int MINB, int U, bool STREAM, bool ANY_N>
__global__ void __launch_bounds__(THREADS, MINB)
    hist_real_kernel(gs_binner b, const T *__restrict__ x, int64_t n, unsigned long long *out, int rshift_,
                     gs_hist_fin fin)
{
    extern __shared__ __align__(16) unsigned hr[];
    __shared__ gs_smem_bins sb;
    const int rshift = SHIFT >= 0 ? SHIFT : rshift_; /* 32 replicas: a constant shift (one instruction less) */
    const int nb = (int)b.nbins, R = 1 << rshift;
    for (int i = threadIdx.x; i < (nb << rshift); i += THREADS)
        hr[i] = 0;
    gs_bins_prepare(b, sb); /* also the barrier after zeroing */
    unsigned *const mine = hr + (threadIdx.x & (R - 1));
    auto add = [&](T v) {
        const int k = real_bin<MODE, ANY_N>(b, sb, v);
        if (k >= 0)
            atomicAdd_block(mine + (k << rshift), 1u);
    };
    each_element<T, U, STREAM>(x, n, (int64_t)blockIdx.x * THREADS + threadIdx.x, (int64_t)gridDim.x * THREADS, add);
    gs_hist_finish(hr, nb, rshift, out, fin);
}

template <class T, int MODE, int THREADS, int MINB, int U, bool ANY_N>
static gs_status launch_real_shape(const gs_hist_launch *l, int rshift, bool stream, int *declined)
{
    auto kern = rshift == 5 ? (stream ? hist_real_kernel<T, MODE, 5, THREADS, MINB, U, true, ANY_N>
                                      : hist_real_kernel<T, MODE, 5, THREADS, MINB, U, false, ANY_N>)
                            : (stream ? hist_real_kernel<T, MODE, -1, THREADS, MINB, U, true, ANY_N>
                                      : hist_real_kernel<T, MODE, -1, THREADS, MINB, U, false, ANY_N>);
    const size_t smem = (size_t)l->binner.nbins << rshift << 2;
    int64_t g = 0;
    const gs_status st = small_grid(l, (const void *)kern, THREADS, smem, l->n / (16 / (int)sizeof(T)), U, &g);
    if (st != GS_OK)
        return st;
    return gs_hist_launch_fin(l, kern, g, THREADS, smem, declined, l->binner, (const T *)l->x, l->n,
                        (unsigned long long *)l->out, rshift);
}

/* GPUSYNC_HIST_REAL_CFG: 0: 512 threads x 2 blocks/SM (64 registers), 4
 * loads in flight; 1: 512 x 3 (42 registers), 3 loads; 2: shape 0 with the
 * float32 estimate as a subtraction and a multiplication (no FMA).
 * Float32 binning is issue-bound (ncu: 0.88 warps issued per scheduler at
 * 512 x 3 x 2): the 4 loads of shape 0 measured best on the H200 for both
 * dtypes (benchmarks/results/histogram_float_H200.md). */
template <class T, int MODE>
static gs_status launch_real(const gs_hist_launch *l, int rshift, bool stream, int *declined)
{
    /* bins whose edges fit the shared table: a kernel without the out-of-line formula call on its checked
     * path (56 registers instead of 64).  r125 (H200, 256M float32, builds alternating twice,
     * benchmarks/results/hist_f32_anyn_H200_r125.txt): 10 bins of normal data on (-1, 1), 32 % outside,
     * 353 / 367 -> 341 / 342 us; on (-5, 5) 279 / 290 -> 271 / 272; uniform 100 bins 282 / 295 -> 277 / 278 */
    const bool any_n = !gs_edges_in_smem(l->binner);
    switch (env_int(GS_ENV_HIST_REAL_CFG, 0)) { /* (the tuning shapes 1 and 2: one kernel for every bin count) */
    case 1: return launch_real_shape<T, MODE, 512, 3, 3, true>(l, rshift, stream, declined);
    case 2: return launch_real_shape<T, MODE == 2 ? 1 : MODE, 512, 2, 4, true>(l, rshift, stream, declined);
    default:
        return any_n ? launch_real_shape<T, MODE, 512, 2, 4, true>(l, rshift, stream, declined)
                     : launch_real_shape<T, MODE, 512, 2, 4, false>(l, rshift, stream, declined);
    }
}

} // namespace

static int small_try(const gs_hist_launch *l, gs_status *st, int *declined);

/* The fast paths above, when they apply to this launch (unweighted,
 * contiguous; 8-bit data, integers on few unit-width bins, or floats on
 * equal-width bins whose replicas fit shared memory): 1 and *st set; else 0
 * -- also when l->fuse asked for the fused form and it did not fit: then
 * *declined and nothing was launched. */
int gs_hist_small_try(const gs_hist_launch *l, gs_status *st, int *declined)
{
    return small_try(l, st, declined) && !*declined;
}

static int small_try(const gs_hist_launch *l, gs_status *st, int *declined)
{
    const int on = env_int(GS_ENV_HIST_SMALL, 1);
    if (l->w != NULL || l->xstride != 1 || l->n <= 0 || on == 0)
        return 0;
    const gs_binner &b = l->binner;
    const int es = (int)gs_dtype_size((gs_dtype)l->xdtype);
    const bool stream = l->n * (int64_t)es > l->dev->l2_cache_bytes;
    if (l->top && (!gs_bincount_first_takes((gs_dtype)l->xdtype) || b.kind != GS_BINS_DIRECT))
        return 0; /* only the integer kernel below keeps the largest value (bincount_first) */
    if (es == 1) {
        /* measured slower than the generic kernel above this size (see
         * GS_HIST_U8_SMALL_MAX_BYTES); GPUSYNC_HIST_SMALL=2 takes it anyway */
        if (on != 2 && l->n > GS_HIST_U8_SMALL_MAX_BYTES)
            return 0;
        int mode;
        if (gs_bins_are_bytes(&b))
            mode = 0;
        else if ((b.kind == GS_BINS_DIRECT || b.kind == GS_BINS_LUT) && b.nbins <= 256)
            mode = 1;
        else
            return 0;
        switch (env_int(GS_ENV_HIST_U8_CFG, 0)) {
        case 1: *st = launch_u8_shape<1024, 2, 2>(l, stream, mode, declined); break;
        case 2: *st = launch_u8_shape<256, 8, 2>(l, stream, mode, declined); break;
        case 3: *st = launch_u8_shape<512, 2, 4>(l, stream, mode, declined); break;
        default: *st = launch_u8_shape<512, 4, 2>(l, stream, mode, declined); break;
        }
        return 1;
    }
    /* (any bin count whose replicas fit: past GS_HIST_SMEM_EDGES - 1 bins the rare values near an edge are
     * settled by the edges' formula instead of the shared table -- 1000 bins of normal float32 data ran on the
     * generic kernel at 32 % of read, histogram_float_H200.md) */
    const bool real = (l->xdtype == GS_FLOAT32 || l->xdtype == GS_FLOAT64) && b.kind == GS_BINS_UNIFORM &&
                      b.nbins >= 1;
    if (real) {
        const int rshift = gs_hist_replica_shift(l);
        if (rshift < 0)
            return 0;
        if (l->xdtype == GS_FLOAT64)
            *st = launch_real<double, 0>(l, rshift, stream, declined);
        else if (!b.edges_f32)
            *st = launch_real<float, 0>(l, rshift, stream, declined);
        else
            *st = b.fma_f ? launch_real<float, 2>(l, rshift, stream, declined)
                          : launch_real<float, 1>(l, rshift, stream, declined);
        return 1;
    }
    if (b.kind != GS_BINS_DIRECT || b.nbins < 1 || b.nbins > (1 << 20))
        return 0;
    /* the kernel subtracts modulo 2^32 (16-bit data) or 2^64: keep the
     * offset where that decides the range exactly and the difference fits 32 bits */
    const int64_t lo_ok = es <= 2 ? -(int64_t(1) << 30) : -(int64_t(1) << 40);
    if (b.offset < lo_ok || b.offset > -lo_ok)
        return 0;
    const int rshift = gs_hist_replica_shift(l);
    if (rshift < 0)
        return 0;
    switch (l->xdtype) {
    case GS_INT16: *st = launch_int<int16_t>(l, rshift, stream, declined); return 1;
    case GS_UINT16: *st = launch_int<uint16_t>(l, rshift, stream, declined); return 1;
    case GS_INT32: *st = launch_int<int32_t>(l, rshift, stream, declined); return 1;
    case GS_UINT32: *st = launch_int<uint32_t>(l, rshift, stream, declined); return 1;
    case GS_INT64: *st = launch_int<int64_t>(l, rshift, stream, declined); return 1;
    default: return 0; /* (uint64 too: a value past int64 minus a negative offset would wrap into the bins) */
    }
}

/* The fast-path kernels as gs.occupancy reports them (kernel_refs.cuh): the
 * float64 and float32 equal-width kernels (100 bins of 32 replicas), the
 * 16-bit unit-bin kernel (4,096 bins of 4 replicas) and the 8-bit kernel. */
int gs_hist_small_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:shared-f64", (const void *)hist_real_kernel<double, 0, 5, 512, 2, 4, false, false>, 512,
            (size_t)100 * 32 * 4};
    r[1] = {"histogram:shared-f32", (const void *)hist_real_kernel<float, 1, 5, 512, 2, 4, false, false>, 512,
            (size_t)100 * 32 * 4};
    r[2] = {"histogram:shared-u16", (const void *)hist_int_kernel<uint16_t, 2, false, false>, GS_HIST_BLOCK_THREADS,
            (size_t)4096 * 4 * 4};
    r[3] = {"histogram:shared-u8", (const void *)hist_u8_kernel<512, 4, 2, false>, 512, 0};
    return 4;
}
