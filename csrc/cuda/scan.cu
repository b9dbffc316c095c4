/*
 * cumsum (CUDA backend): three ways for the blocks of a grid to hand each
 * other their prefixes.
 *
 *   lookback  one pass, one kernel: tiles taken in launch order publish their
 *             aggregates, look back over their predecessors' flags (release /
 *             acquire) and publish their inclusive prefixes (scan.cuh).  Reads
 *             the input once, writes the output once.
 *   barrier   one persistent kernel of co-resident blocks, one contiguous
 *             chunk each: sum the chunk, grid barrier (barrier.cuh's sense
 *             barrier), add the sums of the chunks before it (every block does
 *             this itself, which saves the second barrier a separate scan of
 *             the block sums would need), scan the chunk.  Reads the input twice.
 *   relaunch  the same with kernel boundaries as barriers: chunk sums, a
 *             one-block scan of them, the chunks' scans -- three kernels.
 *
 * Each thread holds ITEMS consecutive elements of a tile in registers
 * (through a per-warp shared-memory exchange: coalesced 16-byte loads and
 * stores either side, see shape); their sum goes through one block scan,
 * and the same registers are then scanned and written -- within a tile the
 * input is read once.
 * Floating inputs accumulate in double and each output is rounded once
 * (float32 cumsums come out far more accurate than NumPy's running float32
 * sum); integer and bool inputs in wrapping uint64, NumPy's int64 / uint64.
 * A carry in the workspace chains the chunks of a staged host input.
 */
#include "dtypes.cuh"
#include "elements.cuh"
#include "kernel_refs.cuh"
#include "stage.cuh"
#include "../common/convert.h"
#include "gpusync/barrier.cuh"
#include "gpusync/reduce.cuh"
#include "gpusync/scan.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr int THREADS = GS_SCAN_THREADS, NW = GS_SCAN_THREADS / 32;

/* A tile is THREADS x ITEMS consecutive elements, warp w's part the 32 x
 * ITEMS of them from w * 32 * ITEMS on (its segment).  A warp moves its
 * segment through its own stretch of shared memory: read with 16-byte
 * loads, lane after lane (warp-striped, coalesced), and taken out in blocked
 * order -- lane l gets the ITEMS consecutive elements from l * ITEMS on --
 * so that a thread sums its elements serially and the tile needs one block
 * scan of one value a thread; the outputs go back the same way (CUB's
 * BLOCK_LOAD_WARP_TRANSPOSE arrangement).  ITEMS is odd: lane l's j-th
 * element sits at l * ITEMS + j, on a different bank for every lane (4-byte
 * words; 8-byte words: per half-warp), so neither direction has conflicts.
 * The exchange holds the wider of input and output: outputs of at most 4
 * bytes (float32, float16) take GS_SCAN_ITEMS4 a thread, 8-byte outputs
 * GS_SCAN_ITEMS (the stretch, and a thread's registers, per element). */
template <class T, class O> struct shape {
    static constexpr int ITEMS = sizeof(O) <= 4 ? GS_SCAN_ITEMS4 : sizeof(T) == 8 ? GS_SCAN_ITEMS8 : GS_SCAN_ITEMS;
    static_assert(ITEMS % 2 == 1, "odd items: conflict-free exchange");
    static_assert(sizeof(O) >= sizeof(T), "the exchange holds outputs at least as wide as the inputs");
    static constexpr int SEG = 32 * ITEMS;                    /* a warp's elements */
    static constexpr int SEG_BYTES = SEG * (int)sizeof(O);    /* its stretch of the exchange */
    static constexpr int64_t TILE = (int64_t)THREADS * ITEMS; /* a multiple of 16 bytes of T and of O */
};

/* Accumulator -> output element. */
__device__ __forceinline__ void put(float &o, double a) { o = (float)a; }
__device__ __forceinline__ void put(double &o, double a) { o = a; }
__device__ __forceinline__ void put(gs_f16 &o, double a) { o.bits = gs_double_to_half(a); }
__device__ __forceinline__ void put(int64_t &o, unsigned long long a) { o = (int64_t)a; }
__device__ __forceinline__ void put(uint64_t &o, unsigned long long a) { o = a; }

/* Workspace header; the per-tile or per-chunk arrays follow it. */
struct scan_ws {
    gpusync::grid_barrier_words w;
    unsigned long long ticket;
    union {
        double f;
        unsigned long long i;
    } carry; /* the sum of everything before this launch's input */
    int error;
    int pad;
};

template <class T, class O> struct scan_args {
    const T *a;
    int64_t sa, n;
    O *out;
    int vec;
    int64_t chunk; /* barrier, relaunch: elements per block (a multiple of the tile) */
    scan_ws *ws;
    gpusync::tile_desc *tiles; /* lookback */
    acc_of<T> *partials;       /* barrier, relaunch: one per block */
    unsigned *groups;          /* barrier: the sense barrier's group counters */
    unsigned long long timeout_ns;
    unsigned delay_ns; /* lookback: the nap before the first poll (GS_SCAN_DELAY_NS) */
    int fallback; /* lookback, tests: every tile takes the time-out's path (GPUSYNC_SCAN_FALLBACK) */
};

__device__ __forceinline__ double &carry_of(scan_ws *ws, double) { return ws->carry.f; }
__device__ __forceinline__ unsigned long long &carry_of(scan_ws *ws, unsigned long long) { return ws->carry.i; }

/* Shared memory of the tile scan: the warps' sums (block_sum's scratch
 * too), the tile's prefix, ticket and look-back result. */
template <class A> struct tile_smem {
    A warp[32];
    A prefix; /* lookback: the tile's exclusive prefix */
    long long tile;
    bool ok;
};

/* The 16-byte vectors of a warp's segment, lane after lane. */
template <class X, int SEG> struct seg_vectors {
    static constexpr int N = SEG * (int)sizeof(X) / 16, PER_LANE = (N + 31) / 32;
};

/* This thread's ITEMS consecutive elements of the tile at `base` (elements
 * at n or past it read as zero) into x, through the warp's stretch `seg` of
 * the exchange.  Ends with the stretch free again. */
template <class T, class O, int ITEMS = shape<T, O>::ITEMS>
__device__ __forceinline__ void load_items(T (&x)[ITEMS], const T *__restrict__ a, int64_t sa, int64_t base,
                                           int64_t n, bool vec, unsigned char *seg)
{
    constexpr int SEG = shape<T, O>::SEG;
    const int lane = threadIdx.x & 31;
    const int64_t w0 = base + (int64_t)(threadIdx.x >> 5) * SEG;
    T *s = reinterpret_cast<T *>(seg);
    if (vec && w0 + SEG <= n) {
        using V = seg_vectors<T, SEG>;
        const int4 *src = reinterpret_cast<const int4 *>(a + w0);
        int4 v[V::PER_LANE];
#pragma unroll
        for (int k = 0; k < V::PER_LANE; k++)
            if (k * 32 + lane < V::N)
                v[k] = GS_SCAN_STREAMING ? __ldcs(src + k * 32 + lane) : src[k * 32 + lane]; /* read once */
#pragma unroll
        for (int k = 0; k < V::PER_LANE; k++)
            if (k * 32 + lane < V::N)
                reinterpret_cast<int4 *>(seg)[k * 32 + lane] = v[k];
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int64_t i = w0 + k * 32 + lane;
            s[k * 32 + lane] = i < n ? a[i * sa] : T();
        }
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < ITEMS; j++)
        x[j] = s[lane * ITEMS + j];
    __syncwarp();
}

template <class T, int ITEMS> __device__ __forceinline__ acc_of<T> items_sum(const T (&x)[ITEMS])
{
    acc_of<T> s = acc_of<T>();
#pragma unroll
    for (int j = 0; j < ITEMS; j++)
        s += cv(x[j]);
    return s;
}

/* The tile's block scan of one value a thread (`mine`, the sum of its
 * items): returns the sum of the tile before this thread's items, and the
 * tile's total in *total.  One __syncthreads(); sm.warp must be free (a
 * loop over tiles separates them with a barrier). */
template <class A> __device__ __forceinline__ A tile_offset(A mine, tile_smem<A> &sm, A *total)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const A inc = gpusync::warp_inclusive_scan(mine);
    A ex = __shfl_up_sync(0xffffffffu, inc, 1);
    if (lane == 0)
        ex = A();
    if (lane == 31)
        sm.warp[warp] = inc;
    __syncthreads();
    A before = A(), all = A();
#pragma unroll
    for (int w = 0; w < NW; w++) {
        const A v = sm.warp[w];
        if (w < warp)
            before += v;
        all += v;
    }
    *total = all;
    return before + ex;
}

/* Scan this thread's items onto `run` (the sum of the input before them)
 * and write the outputs below n, back through the warp's stretch. */
template <class T, class O, int ITEMS = shape<T, O>::ITEMS, class A = acc_of<T>>
__device__ __forceinline__ void store_items(const T (&x)[ITEMS], A run, O *__restrict__ out, int64_t base, int64_t n,
                                            bool vec, unsigned char *seg)
{
    constexpr int SEG = shape<T, O>::SEG;
    const int lane = threadIdx.x & 31;
    const int64_t w0 = base + (int64_t)(threadIdx.x >> 5) * SEG;
    O *s = reinterpret_cast<O *>(seg);
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        run += cv(x[j]);
        O o;
        put(o, run);
        s[lane * ITEMS + j] = o;
    }
    __syncwarp();
    if (vec && w0 + SEG <= n) {
        using V = seg_vectors<O, SEG>;
        int4 *dst = reinterpret_cast<int4 *>(out + w0);
#pragma unroll
        for (int k = 0; k < V::PER_LANE; k++)
            if (k * 32 + lane < V::N)
                if (GS_SCAN_STREAMING)
                    __stcs(dst + k * 32 + lane, reinterpret_cast<const int4 *>(seg)[k * 32 + lane]);
                else
                    dst[k * 32 + lane] = reinterpret_cast<const int4 *>(seg)[k * 32 + lane];
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int64_t i = w0 + k * 32 + lane;
            if (i < n)
                out[i] = s[k * 32 + lane];
        }
    }
    __syncwarp();
}

/* The exchange: one stretch a warp. */
template <class T, class O> struct exchange {
    unsigned char bytes[NW * shape<T, O>::SEG_BYTES];
    __device__ __forceinline__ unsigned char *seg() { return bytes + (threadIdx.x >> 5) * shape<T, O>::SEG_BYTES; }
};

/* lookback: the tile's number -- an atomic ticket in the order blocks
 * start (GS_SCAN_TICKET), so that every tile it may wait for belongs to a
 * block that already runs.  Clears the block's time-out word. */
template <class A> __device__ __forceinline__ long long take_tile(scan_ws *ws, tile_smem<A> &sm, int *late)
{
#if GS_SCAN_TICKET
    if (threadIdx.x == 0) {
        sm.tile = (long long)atomicAdd(&ws->ticket, 1ull);
        *late = 0;
    }
    __syncthreads();
    return sm.tile;
#else
    if (threadIdx.x == 0)
        *late = 0;
    return blockIdx.x;
#endif
}

/* lookback: tile t (starting at element `base`, its sum `total`) publishes
 * its aggregate, warp 0 looks back, and the tile's exclusive prefix lands in
 * sm.prefix for every thread (one or two __syncthreads()).  A look-back
 * that times out (no predecessor published anything for the spin time-out:
 * a block that holds a ticket is never descheduled for that long in
 * practice) sums the input before the tile itself -- a bounded loop -- and
 * publishes its prefix, so the output is always complete and correct and
 * the host never waits for the kernel to check for a time-out. */
template <class T, class O, class A>
__device__ __forceinline__ void tile_prefix(const scan_args<T, O> &s, long long t, int64_t base, A total,
                                            tile_smem<A> &sm, int *late)
{
    if (threadIdx.x < 32) {
        A p = A();
        bool good = true;
        if (t == 0) {
            p = carry_of(s.ws, A());
        } else {
            if (threadIdx.x == 0)
                gpusync::tile_publish(s.tiles, t, total, gpusync::TILE_AGGREGATE);
            good = !s.fallback && gpusync::tile_lookback(s.tiles, t, &p, late, s.timeout_ns, s.delay_ns);
        }
        if (threadIdx.x == 0) {
            if (good)
                gpusync::tile_publish(s.tiles, t, p + total, gpusync::TILE_PREFIX);
            sm.prefix = p;
            sm.ok = good;
        }
    }
    __syncthreads();
    if (!sm.ok) { /* block-uniform: the time-out's path */
        A acc = A();
        for (int64_t i = threadIdx.x; i < base; i += THREADS)
            acc += cv(s.a[i * s.sa]);
        acc = gpusync::block_sum(acc, sm.warp); /* (the warps' sums are read: tile_offset is past its barrier) */
        if (threadIdx.x == 0) {
            const A p = carry_of(s.ws, A()) + acc;
            gpusync::tile_publish(s.tiles, t, p + total, gpusync::TILE_PREFIX);
            sm.prefix = p;
        }
        __syncthreads();
    }
}

/* lookback: one tile per block, its items in registers between the sum and
 * the scan (8-byte outputs; every type without GS_SCAN_SMEM). */
template <class T, class O>
__global__ void __launch_bounds__(THREADS, GS_SCAN_MIN_BLOCKS) lookback_kernel(scan_args<T, O> s)
{
    using A = acc_of<T>;
    __shared__ tile_smem<A> sm;
    __shared__ __align__(16) exchange<T, O> xch;
    __shared__ int late; /* this block's time-out word (tile_lookback's *error) */
    const long long t = take_tile(s.ws, sm, &late);
    const int64_t base = t * shape<T, O>::TILE;
    T x[shape<T, O>::ITEMS];
    load_items<T, O>(x, s.a, s.sa, base, s.n, s.vec, xch.seg());
    A total;
    const A off = tile_offset(items_sum(x), sm, &total);
    tile_prefix(s, t, base, total, sm, &late);
    store_items<T, O>(x, sm.prefix + off, s.out, base, s.n, s.vec, xch.seg());
}

/* lookback with outputs as wide as the inputs and at most 4 bytes
 * (float32, float16; GS_SCAN_SMEM): the tile stays in shared memory instead
 * of registers -- its warps' segments copied in with cp.async (16 bytes a
 * lane, every copy in flight at once without holding a register), summed
 * from there, then scanned in place and stored -- so a thread needs 40
 * registers and 12 blocks, half again the bytes in flight, fit an SM
 * (tuning.h: 256M float32 on the H200 in 588 us against 631 us from
 * registers).  8-byte types keep their registers (they measured 1 % faster
 * there: 15 items of 8 bytes fill the shared memory 12 blocks can have). */
template <class T, class O> struct smem_shape {
    static constexpr bool ON = GS_SCAN_SMEM && sizeof(T) == sizeof(O) && sizeof(O) <= 4;
    static constexpr int ITEMS = GS_SCAN_SMEM_ITEMS;
    static_assert(ITEMS % 2 == 1, "odd items: conflict-free reads by lane");
    static constexpr int SEG = 32 * ITEMS;
    static constexpr int64_t TILE = (int64_t)THREADS * ITEMS;
    static constexpr int NV = SEG * (int)sizeof(T) / 16; /* a segment's 16-byte vectors */
};

template <class T, class O>
__global__ void __launch_bounds__(THREADS, GS_SCAN_SMEM_BLOCKS) lookback_smem_kernel(scan_args<T, O> s)
{
    using A = acc_of<T>;
    using S = smem_shape<T, O>;
    constexpr int ITEMS = S::ITEMS;
    __shared__ tile_smem<A> sm;
    __shared__ __align__(16) T tile[NW * S::SEG];
    __shared__ int late;
    const long long t = take_tile(s.ws, sm, &late);
    const int64_t base = t * S::TILE;
    const int lane = threadIdx.x & 31;
    const int64_t w0 = base + (int64_t)(threadIdx.x >> 5) * S::SEG;
    T *seg = tile + (threadIdx.x >> 5) * S::SEG;
    const bool whole = s.vec && w0 + S::SEG <= s.n;
    if (whole) {
        const int4 *src = reinterpret_cast<const int4 *>(s.a + w0);
#pragma unroll
        for (int q = 0; q < (S::NV + 31) / 32; q++)
            if (q * 32 + lane < S::NV)
                gs_cp_async16(reinterpret_cast<int4 *>(seg) + q * 32 + lane, src + q * 32 + lane);
        gs_cp_async_commit();
        gs_cp_async_wait<0>();
    } else {
#pragma unroll 4
        for (int k = 0; k < ITEMS; k++) {
            const int64_t i = w0 + k * 32 + lane;
            seg[k * 32 + lane] = i < s.n ? s.a[i * s.sa] : T();
        }
    }
    __syncwarp();
    A mine = A();
#pragma unroll
    for (int j = 0; j < ITEMS; j++)
        mine += cv(seg[lane * ITEMS + j]);
    A total;
    const A off = tile_offset(mine, sm, &total);
    tile_prefix(s, t, base, total, sm, &late);
    A run = sm.prefix + off;
    O *oseg = reinterpret_cast<O *>(seg); /* in place: a lane rewrites only the items it read */
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        run += cv(seg[lane * ITEMS + j]);
        O o;
        put(o, run);
        oseg[lane * ITEMS + j] = o;
    }
    __syncwarp();
    if (whole) {
        int4 *dst = reinterpret_cast<int4 *>(s.out + w0);
#pragma unroll
        for (int q = 0; q < (S::NV + 31) / 32; q++) {
            const int k = q * 32 + lane;
            if (k < S::NV) {
                if (GS_SCAN_STREAMING)
                    __stcs(dst + k, reinterpret_cast<const int4 *>(seg)[k]);
                else
                    dst[k] = reinterpret_cast<const int4 *>(seg)[k];
            }
        }
    } else {
#pragma unroll 4
        for (int k = 0; k < ITEMS; k++) {
            const int64_t i = w0 + k * 32 + lane;
            if (i < s.n)
                s.out[i] = oseg[k * 32 + lane];
        }
    }
}

/* Sum of one block's chunk [lo, hi), valid in thread 0. */
template <class T, class O>
__device__ __forceinline__ acc_of<T> chunk_sum(const scan_args<T, O> &s, int64_t lo, int64_t hi, acc_of<T> *scratch,
                                               exchange<T, O> &xch)
{
    acc_of<T> ts = acc_of<T>();
    for (int64_t t0 = lo; t0 < hi; t0 += shape<T, O>::TILE) {
        T x[shape<T, O>::ITEMS];
        load_items<T, O>(x, s.a, s.sa, t0, hi, s.vec, xch.seg());
        ts += items_sum(x);
    }
    return gpusync::block_sum(ts, scratch);
}

/* Scan one block's chunk onto `run`, tile by tile. */
template <class T, class O>
__device__ __forceinline__ void chunk_scan(const scan_args<T, O> &s, int64_t lo, int64_t hi, acc_of<T> run,
                                           tile_smem<acc_of<T>> &sm, exchange<T, O> &xch)
{
    for (int64_t t0 = lo; t0 < hi; t0 += shape<T, O>::TILE) {
        T x[shape<T, O>::ITEMS];
        load_items<T, O>(x, s.a, s.sa, t0, hi, s.vec, xch.seg());
        acc_of<T> total;
        __syncthreads(); /* the previous tile's sums in sm.warp are read */
        const acc_of<T> off = tile_offset(items_sum(x), sm, &total);
        store_items<T, O>(x, run + off, s.out, t0, hi, s.vec, xch.seg());
        run += total;
    }
}

/* barrier: one persistent kernel of co-resident blocks. */
template <class T, class O> __global__ void __launch_bounds__(THREADS, GS_SCAN_MIN_BLOCKS) barrier_kernel(scan_args<T, O> s)
{
    using A = acc_of<T>;
    __shared__ tile_smem<A> sm;
    __shared__ __align__(16) exchange<T, O> xch;
    const int64_t lo = (int64_t)blockIdx.x * s.chunk, hi = lo + s.chunk < s.n ? lo + s.chunk : s.n;
    const A carry = carry_of(s.ws, A()); /* read before the barrier: the last block rewrites it after */
    const A mine = chunk_sum(s, lo, hi, sm.warp, xch);
    if (threadIdx.x == 0)
        s.partials[blockIdx.x] = mine;
    unsigned round = 0;
    if (!gpusync::barrier_sense(&s.ws->w, s.groups, round, &s.ws->error, s.timeout_ns))
        return;
    A p = A();
    for (unsigned i = threadIdx.x; i < blockIdx.x; i += blockDim.x)
        p += __ldcg(s.partials + i); /* other SMs wrote them: read from L2 */
    p = gpusync::block_sum(p, sm.warp);
    if (threadIdx.x == 0)
        sm.prefix = carry + p;
    __syncthreads();
    const A run = sm.prefix;
    chunk_scan(s, lo, hi, run, sm, xch);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
        carry_of(s.ws, A()) = run + mine;
}

/* relaunch, kernel 1: the chunks' sums. */
template <class T, class O> __global__ void __launch_bounds__(THREADS, GS_SCAN_MIN_BLOCKS) chunk_sums_kernel(scan_args<T, O> s)
{
    __shared__ acc_of<T> scratch[32];
    __shared__ __align__(16) exchange<T, O> xch;
    const int64_t lo = (int64_t)blockIdx.x * s.chunk, hi = lo + s.chunk < s.n ? lo + s.chunk : s.n;
    const acc_of<T> mine = chunk_sum(s, lo, hi, scratch, xch);
    if (threadIdx.x == 0)
        s.partials[blockIdx.x] = mine;
}

/* relaunch, kernel 2 (one block): the sums -> exclusive prefixes, carry
 * included; the carry moves on past them. */
template <class A> __global__ void __launch_bounds__(THREADS) scan_sums_kernel(scan_ws *ws, A *partials, int64_t m)
{
    __shared__ A scratch[33];
    A run = carry_of(ws, A());
    for (int64_t b0 = 0; b0 < m; b0 += blockDim.x) {
        const int64_t i = b0 + threadIdx.x;
        const A v = i < m ? partials[i] : A();
        A total;
        const A excl = gpusync::block_exclusive_scan(v, scratch, &total);
        if (i < m)
            partials[i] = run + excl;
        run += total;
    }
    if (threadIdx.x == 0)
        carry_of(ws, A()) = run;
}

/* relaunch, kernel 3: each chunk scanned from its prefix. */
template <class T, class O> __global__ void __launch_bounds__(THREADS, GS_SCAN_MIN_BLOCKS) chunk_scans_kernel(scan_args<T, O> s)
{
    __shared__ tile_smem<acc_of<T>> sm;
    __shared__ __align__(16) exchange<T, O> xch;
    const int64_t lo = (int64_t)blockIdx.x * s.chunk, hi = lo + s.chunk < s.n ? lo + s.chunk : s.n;
    chunk_scan(s, lo, hi, s.partials[blockIdx.x], sm, xch);
}

/* lookback: the last tile's inclusive prefix becomes the carry. */
template <class A> __global__ void carry_kernel(scan_ws *ws, const gpusync::tile_desc *tiles, int64_t last)
{
    A v;
    gpusync::detail::from_bits(tiles[last].x, v);
    carry_of(ws, A()) = v;
}

struct scan_plan {
    gs_strategy strategy;
    const gs_device_info *dev;
    cudaStream_t stream;
    scan_ws *ws;
    char *arrays; /* flags, aggregates, inclusives (lookback) or partials, groups */
    int64_t max_n;
    bool zeroed; /* lookback: the ticket and the tiles are still zero (the call's first launch) */
    bool last;   /* no chunk follows this launch (no carry to hand on) */
};

/* Blocks of the barrier and relaunch strategies: the co-resident maximum
 * (no more than there are tiles), each a whole number of tiles. */
template <class T, class O> gs_status chunking(const scan_plan &p, int64_t n, int64_t *grid, int64_t *chunk)
{
    int64_t resident;
    const gs_status st = gs_cuda_resident_blocks((const void *)barrier_kernel<T, O>, THREADS, 0, p.dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t tiles = (n + shape<T, O>::TILE - 1) / shape<T, O>::TILE;
    const int64_t g = resident < tiles ? resident : tiles;
    *chunk = (tiles + g - 1) / g * shape<T, O>::TILE;
    *grid = (n + *chunk - 1) / *chunk;
    return GS_OK;
}

/* The lookback kernel of T -> O (only that one is instantiated). */
template <class T, class O> const void *lookback_of()
{
    if constexpr (smem_shape<T, O>::ON)
        return (const void *)lookback_smem_kernel<T, O>;
    else
        return (const void *)lookback_kernel<T, O>;
}

template <class T, class O> gs_status launch_typed(const scan_plan &p, const void *a, int64_t sa, int64_t n, void *out)
{
    using A = acc_of<T>;
    scan_args<T, O> s;
    memset(&s, 0, sizeof s);
    s.a = (const T *)a;
    s.sa = sa;
    s.n = n;
    s.out = (O *)out;
    s.vec = sa == 1 && ((uintptr_t)a & 15) == 0 && ((uintptr_t)out & 15) == 0;
    s.ws = p.ws;
    s.timeout_ns = (unsigned long long)gs_spin_timeout_ns();
    s.fallback = p.strategy == GS_STRATEGY_LOOKBACK && gs_env_number(GS_ENV_SCAN_FALLBACK, 0, NULL) != 0;
    const double delay = gs_env_number(GS_ENV_SCAN_DELAY_NS, -1.0, NULL);
    s.delay_ns = delay >= 0 ? (unsigned)delay : GS_SCAN_DELAY_NS;
    void *args[] = {&s};
    if (p.strategy == GS_STRATEGY_LOOKBACK) {
        constexpr int64_t tile = smem_shape<T, O>::ON ? smem_shape<T, O>::TILE : shape<T, O>::TILE;
        const void *kernel = lookback_of<T, O>();
        const int64_t tiles = (n + tile - 1) / tile;
        if (tiles > 0x7fffffff)
            return gs_fail(GS_ERR_OVERFLOW, "cumsum: %lld elements are too many tiles", (long long)n);
        s.tiles = (gpusync::tile_desc *)p.arrays;
        if (!p.zeroed) { /* a later chunk of a staged input: the previous launch used them */
            GS_CUDA_CHECK(cudaMemsetAsync(&p.ws->ticket, 0, sizeof p.ws->ticket, p.stream));
            GS_CUDA_CHECK(cudaMemsetAsync(s.tiles, 0, (size_t)tiles * sizeof(gpusync::tile_desc), p.stream));
        }
        GS_CUDA_CHECK(cudaLaunchKernel(kernel, dim3((unsigned)tiles), dim3(THREADS),
                                       args, 0, p.stream));
        if (!p.last) {
            carry_kernel<A><<<1, 1, 0, p.stream>>>(p.ws, s.tiles, tiles - 1);
            GS_CUDA_CHECK(cudaGetLastError());
        }
        return GS_OK;
    }
    int64_t grid, chunk;
    gs_status st = chunking<T, O>(p, n, &grid, &chunk);
    if (st != GS_OK)
        return st;
    s.chunk = chunk;
    s.partials = (A *)p.arrays;
    s.groups = (unsigned *)(p.arrays + (size_t)grid * 8);
    if (p.strategy == GS_STRATEGY_BARRIER) {
        const int64_t ngroups = (grid + GPUSYNC_SENSE_GROUP - 1) / GPUSYNC_SENSE_GROUP;
        GS_CUDA_CHECK(cudaMemsetAsync(&p.ws->w, 0, sizeof p.ws->w, p.stream));
        GS_CUDA_CHECK(cudaMemsetAsync(s.groups, 0, (size_t)ngroups * GPUSYNC_SENSE_STRIDE * 4, p.stream));
        if (p.dev->cooperative_launch) /* the driver then guarantees that the grid is co-resident */
            GS_CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)barrier_kernel<T, O>, dim3((unsigned)grid),
                                                      dim3(THREADS), args, 0, p.stream));
        else
            GS_CUDA_CHECK(cudaLaunchKernel((const void *)barrier_kernel<T, O>, dim3((unsigned)grid), dim3(THREADS),
                                           args, 0, p.stream));
        return GS_OK;
    }
    GS_CUDA_CHECK(cudaLaunchKernel((const void *)chunk_sums_kernel<T, O>, dim3((unsigned)grid), dim3(THREADS), args, 0,
                                   p.stream));
    scan_sums_kernel<A><<<1, THREADS, 0, p.stream>>>(p.ws, s.partials, grid);
    GS_CUDA_CHECK(cudaGetLastError());
    GS_CUDA_CHECK(cudaLaunchKernel((const void *)chunk_scans_kernel<T, O>, dim3((unsigned)grid), dim3(THREADS), args, 0,
                                   p.stream));
    return GS_OK;
}

/* NumPy's cumsum dtypes: bool and signed -> int64, unsigned -> uint64,
 * floats keep theirs. */
gs_status launch(const scan_plan &p, gs_dtype dt, const void *a, int64_t sa, int64_t n, void *out)
{
    return gs_dtype_switch(dt, [&](auto t) {
        using T = GS_TYPE(t);
        using O = typename std::conditional<
            std::is_floating_point<T>::value || std::is_same<T, gs_f16>::value, T,
            typename std::conditional<std::is_unsigned<T>::value, uint64_t, int64_t>::type>::type;
        return launch_typed<T, O>(p, a, sa, n, out);
    });
}

/* Bytes of the per-launch arrays for n elements (lookback: a descriptor per
 * tile of the smallest shape, so that every dtype's tiles have one). */
size_t arrays_bytes(const gs_device_info *dev, gs_strategy s, int64_t n)
{
    if (s == GS_STRATEGY_LOOKBACK) {
        int items = GS_SCAN_ITEMS;
        for (int i : {GS_SCAN_ITEMS4, GS_SCAN_ITEMS8, GS_SCAN_SMEM ? GS_SCAN_SMEM_ITEMS : GS_SCAN_ITEMS})
            items = i < items ? i : items;
        const int64_t tile = (int64_t)THREADS * items;
        return (size_t)((n + tile - 1) / tile) * sizeof(gpusync::tile_desc);
    }
    const int64_t blocks = (int64_t)dev->multiprocessors * (dev->max_threads_per_multiprocessor / THREADS) + 1;
    return (size_t)blocks * 8 + ((size_t)blocks / GPUSYNC_SENSE_GROUP + 1) * GPUSYNC_SENSE_STRIDE * 4;
}

} // namespace

extern "C" gs_status gs_cuda_cumsum(const gs_array *a, gs_array *out, gs_strategy strategy, void *stream,
                                    gs_strategy *used)
{
    gs_status st = gs_scan_resolve(&strategy, a->dtype, out->dtype);
    if (st != GS_OK)
        return st;
    *used = strategy;
    if (out->length != a->length || out->device != a->device)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "cumsum: out must have a's length and device");
    if (out->stride != 1 && out->length > 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "cumsum: out must be contiguous");
    const int on_host = a->device == GS_HOST;
    if (on_host && a->stride != 1 && a->length > 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "host inputs must be contiguous");
    gs_cuda_call call(a->device, stream);
    st = call.status;
    if (st != GS_OK)
        return st;
    const int ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] cumsum n=%lld dtype=%d strategy=%s device=%d%s\n", (long long)a->length,
                (int)a->dtype, gs_strategy_name(strategy), ord, on_host ? " (host input staged)" : "");
    if (a->length == 0)
        return GS_OK;

    const size_t os = gs_dtype_size(out->dtype);
    /* host input: chunks of GS_STAGE_BYTES of output, a multiple of every tile */
    const int64_t chunk = on_host ? GS_STAGE_BYTES / (int64_t)os : a->length;
    const int64_t maxn = a->length < chunk ? a->length : chunk;
    scan_plan p{}; /* named fields (workspace and arrays: set below) */
    p.strategy = strategy;
    p.dev = dev;
    p.stream = s;
    p.max_n = maxn;
    char *mem = NULL;
    const size_t head = (sizeof(scan_ws) + 255) & ~(size_t)255;
    const size_t arrays = arrays_bytes(dev, strategy, maxn);
    GS_CUDA_GOTO(gs_malloc_async((void **)&mem, head + arrays, s));
    /* one memset: the workspace, and for lookback the ticket and the tiles of the first launch */
    GS_CUDA_GOTO(cudaMemsetAsync(mem, 0, strategy == GS_STRATEGY_LOOKBACK ? head + arrays : sizeof(scan_ws), s));
    p.ws = (scan_ws *)mem;
    p.arrays = mem + head;
    p.zeroed = true;
    {
        gs_staged arr[2] = {gs_staged(a), gs_staged(out, 1)};
        GS_GOTO(gs_cuda_staged(arr, 2, a->length, chunk, s, [&](int64_t off, int64_t cnt) {
            p.last = off + cnt >= a->length;
            const gs_status ls = launch(p, a->dtype, arr[0].ptr, arr[0].stride, cnt, arr[1].ptr);
            p.zeroed = false;
            return ls;
        }));
    }
    /* barrier spins, and a time-out leaves the output unwritten: read its flag.  lookback finishes the
     * output on a time-out (above) and relaunch never spins: no wait for the stream */
    if (strategy == GS_STRATEGY_BARRIER)
        st = gs_cuda_check_deadlock(&p.ws->error, s, "cumsum", strategy, "a block", "another block");
fail:
    if (mem)
        cudaFreeAsync(mem, s);
    return st;
}

int gs_scan_refs(gs_kernel_ref *r)
{
    int k = 0;
    r[k++] = {"cumsum:lookback", lookback_of<float, float>(), THREADS, 0};
    r[k++] = {"cumsum:barrier", (const void *)barrier_kernel<float, float>, THREADS, 0};
    r[k++] = {"cumsum:relaunch", (const void *)chunk_scans_kernel<float, float>, THREADS, 0};
    return k;
}
