/*
 * sum and dot (CUDA backend): every way of combining the blocks' results.
 *
 * Every strategy shares the first step: each thread accumulates its share
 * of the elements (16-byte loads, GS_REDUCE_UNROLL in flight per array) in
 * double (floating inputs) or wrapping uint64 (integer and bool inputs).  The
 * strategies differ in how the per-block or per-warp results meet:
 *
 *   atomic       block result -> atomicAdd on one accumulator
 *   mutex        block result -> added under a spin lock (mutex.cuh)
 *   warp         no block step: warp shuffles, one atomicAdd per warp
 *   two-pass     block result -> partials[block]; a second kernel adds them
 *   threadfence  partials[block], __threadfence(), atomic ticket: the block
 *                that draws the last ticket adds the partials
 *   grid         partials[block], a grid barrier (barrier.cuh's sense
 *                barrier; the grid is at most the co-resident maximum), then
 *                block 0 adds the partials -- one launch, no ticket
 *
 * With deterministic=True, two-pass, threadfence and grid switch to fixed tiles
 * (GS_REDUCE_TILE elements, one partial each, reduced in a fixed order by a
 * fixed number of threads): the result no longer depends on the grid, the
 * device or the strategy.
 *
 * All strategies add their result into a per-call workspace accumulator
 * (host inputs arrive in chunks and add up there); a one-thread kernel
 * converts it to the result dtype at the end -- except where the finishing
 * block stores the result into a device output itself (two-pass, threadfence
 * and grid on device inputs).  Strategy auto on device inputs: one block or
 * one cluster for small inputs (no workspace); above that, outside graph
 * capture, threadfence into the calling thread's kept workspace for its
 * stream (gs_cuda_scratch: one launch, no allocation), and under capture
 * two-pass with a per-call workspace.
 */
#include "dtypes.cuh"
#include "elements.cuh"
#include "kernel_refs.cuh"
#include "stage.cuh"
#include "../common/convert.h"
#include "gpusync/barrier.cuh"
#include "gpusync/mutex.cuh"
#include "gpusync/reduce.cuh"

#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>

namespace cg = cooperative_groups;

namespace {

/* The workspace: per call (zeroed before the first kernel), or the calling
 * thread's kept one (zeroed once; the threadfence kernel resets its ticket). */
struct reduce_ws {
    union {
        double f;
        unsigned long long i;
    } acc;
    unsigned int ticket;
    int lock;
    int error;
    int pad;
    unsigned long long result; /* the converted result, for host outputs */
};
#define GS_WS_PARTIALS_OFFSET GS_SCRATCH_DATA /* partials follow the header, 8-byte aligned */
/* the kept workspace is a scratch buffer: its ticket where every user of one keeps it (runtime.cuh) */
static_assert(offsetof(reduce_ws, ticket) == GS_SCRATCH_TICKET && sizeof(reduce_ws) <= GS_SCRATCH_ACC,
              "reduce_ws: the scratch buffer layout");


template <bool DOT, class T> __device__ __forceinline__ void add(double &s, T x, T y)
{
    s = DOT ? fma(cv(x), cv(y), s) : s + cv(x);
}
template <bool DOT, class T> __device__ __forceinline__ void add(unsigned long long &s, T x, T y)
{
    s += DOT ? cv(x) * cv(y) : cv(x);
}

/* Accumulate elements lo <= i < hi that this thread owns: start, start +
 * step, ...  Contiguous inputs (vec) go through 16-byte loads: a scalar
 * head up to the first aligned address, whole vectors, a scalar tail. */
__device__ __forceinline__ int4 load16(const int4 *p, bool stream)
{
    return stream ? __ldcs(p) : __ldg(p); /* evict-first only when the input is larger than L2 */
}

/* 16-byte loads in flight per thread and array: sums of 8-byte elements
 * take twice GS_REDUCE_UNROLL (half the elements per load).  The order of
 * additions does not depend on it (each thread adds its elements in index
 * order), so deterministic results do not either. */
template <class T, bool DOT> __host__ __device__ constexpr int unroll_of() { return (!DOT && sizeof(T) >= 8) ? 2 * GS_REDUCE_UNROLL : GS_REDUCE_UNROLL; }

/* deterministic=True: a tile is GS_REDUCE_TILE elements for 256 threads;
 * sums load a whole float32 tile in one round (16 vectors per thread). */
template <class T, bool DOT> __host__ __device__ constexpr int tile_unroll_of() { return DOT ? 8 : 16; }

/* Pairwise sum of the N values x[0..N) (into x[0]): a tree of depth log2 N
 * instead of a chain of N dependent adds. */
template <int N, class A> __device__ __forceinline__ A pairwise(A *x)
{
#pragma unroll
    for (int w = 1; w < N; w *= 2)
#pragma unroll
        for (int i = 0; i + w < N; i += 2 * w)
            x[i] += x[i + w];
    return x[0];
}

/* Sums of 4-byte elements take the pairwise tree below, and their kernel
 * asks for a full SM of blocks: 32 registers (sm_90, -Xptxas -v; the tree
 * alone took 48 and 5 blocks per SM), no spills (the finishing step inside
 * the threadfence and grid kernels loads 4 partials at a time, see
 * in_kernel_finish_loads).  2-byte float16 spilled under
 * that bound and 1-byte elements hold 16 converted values per vector: both
 * keep the chain. */
template <class T, bool DOT> __host__ __device__ constexpr bool tree_of() { return !DOT && sizeof(T) == 4; }
/* Partials in flight a thread in a finishing step inside the element kernel
 * (threadfence, grid): 4 under the 32-register bound of the tree sums
 * (GS_REDUCE_FINISH_LOADS = 8 spilled uint32's 24-32 bytes there, review35
 * F2), else as the finishing kernel. */
template <class T, bool DOT> __host__ __device__ constexpr int in_kernel_finish_loads()
{
    return tree_of<T, DOT>() ? 4 : GS_REDUCE_FINISH_LOADS;
}

/* Blocks an SM the element loop's registers must allow.  Dots of <= 4-byte
 * elements (every strategy) before sm_100: 3 of 256 threads (<= 80
 * registers), the class the two-pass partial kernel fell in unbounded; the
 * threadfence kernel, whose last block finishes, took 85-91 registers
 * without the bound for float32, float16 and int8 (2 blocks an SM: float32
 * 100M 105 -> 126 us on the H200, r147) and 72 for 16/32-bit integers (3
 * blocks; 64 and 4 with it).  No spills under it on sm_75/80/86/90
 * (-Xptxas -v); native sm_120 code spilled 8-48 bytes, so sm_100+ keep no
 * bound (the compute_90 PTX that a build with no GPU in sight ships carries
 * it, and ptxas 13.0 assembles it for sm_120 at 80 registers, no spills). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 1000
#define GS_REDUCE_DOT_BOUND_THREADS 768
#else
#define GS_REDUCE_DOT_BOUND_THREADS 0
#endif
template <class T, bool DOT> __host__ __device__ constexpr int reduce_min_blocks(int threads)
{
    return tree_of<T, DOT>()                                                    ? 2048 / threads
           : (DOT && sizeof(T) <= 4 && threads <= GS_REDUCE_DOT_BOUND_THREADS) ? GS_REDUCE_DOT_BOUND_THREADS / threads
                                                                               : 1;
}

/* TREE (sums, deterministic=False): each round's U x V elements meet in a
 * pairwise tree before one add into s; a thread's only dependent chain is
 * one add per round (a chain of U x V double adds per round held 4-byte sums
 * at 0.87-0.94x CUB's float adds where a block runs one or two rounds). */
template <class T, bool DOT, class A, int U = unroll_of<T, DOT>(), bool TREE = false>
__device__ __forceinline__ void accumulate(A &s, const T *__restrict__ a, int64_t sa, const T *__restrict__ b,
                                           int64_t sb, int64_t lo, int64_t hi, int64_t start, int64_t step, bool vec,
                                           bool stream)
{
    if (!vec) {
        for (int64_t i = lo + start; i < hi; i += step)
            add<DOT>(s, a[i * sa], DOT ? b[i * sb] : T());
        return;
    }
    constexpr int V = 16 / sizeof(T);
    int64_t hv = (int64_t)(((16 - ((uintptr_t)(a + lo) & 15)) & 15) / sizeof(T));
    if (hv > hi - lo)
        hv = hi - lo;
    for (int64_t i = lo + start; i < lo + hv; i += step)
        add<DOT>(s, a[i], DOT ? b[i] : T());
    const int64_t v0 = lo + hv, nv = (hi - v0) / V;
    const int4 *av = reinterpret_cast<const int4 *>(a + v0);
    const int4 *bv = reinterpret_cast<const int4 *>(DOT ? b + v0 : a + v0);
    for (int64_t j = start; j < nv; j += (int64_t)U * step) {
        gs_vec<T> ra[U], rb[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t jj = j + u * step;
            ra[u].v = jj < nv ? load16(av + jj, stream) : make_int4(0, 0, 0, 0);
            if (DOT)
                rb[u].v = jj < nv ? load16(bv + jj, stream) : make_int4(0, 0, 0, 0);
        }
        if constexpr (TREE && !DOT) { /* vectors past nv were loaded as zeros */
            A t[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                A x[V];
#pragma unroll
                for (int e = 0; e < V; e++)
                    x[e] = cv(ra[u].e[e]);
                t[u] = pairwise<V>(x);
            }
            s += pairwise<U>(t);
        } else {
#pragma unroll
            for (int u = 0; u < U; u++)
                if (j + u * step < nv) {
#pragma unroll
                    for (int e = 0; e < V; e++)
                        add<DOT>(s, ra[u].e[e], DOT ? rb[u].e[e] : T());
                }
        }
    }
    for (int64_t i = v0 + nv * V + start; i < hi; i += step)
        add<DOT>(s, a[i], DOT ? b[i] : T());
}

enum { MODE_ATOMIC, MODE_MUTEX, MODE_WARP, MODE_PARTIAL, MODE_THREADFENCE, MODE_GRID, MODE_SINGLE };

template <class T> struct reduce_args {
    const T *a, *b;
    int64_t n, sa, sb;
    int vec, stream; /* 16-byte loads; evict-first loads */
    reduce_ws *ws;
    void *out; /* non-NULL: the block that finishes stores the result here (no store kernel) */
    int out_dtype;
    gpusync::grid_barrier_words *bw; /* grid: the barrier's words */
    unsigned *groups;
    unsigned long long timeout_ns;
};

__device__ __forceinline__ double *acc_ptr(reduce_ws *ws, double) { return &ws->acc.f; }
__device__ __forceinline__ unsigned long long *acc_ptr(reduce_ws *ws, unsigned long long) { return &ws->acc.i; }

template <class A> __device__ __forceinline__ A *partials_of(reduce_ws *ws)
{
    return reinterpret_cast<A *>(reinterpret_cast<char *>(ws) + GS_WS_PARTIALS_OFFSET);
}

__device__ __forceinline__ void store_result(void *out, int dt, double v) { gs_store_acc(out, dt, v, 0); }
__device__ __forceinline__ void store_result(void *out, int dt, unsigned long long v) { gs_store_acc(out, dt, 0.0, v); }

/* Add partials[0..p) in a fixed order (GS_REDUCE_THREADS threads: thread t
 * takes t, t + 256, ...; then a block reduction) into the accumulator, or,
 * with out, store accumulator + that sum converted to out's dtype. */
template <class A, int L = GS_REDUCE_FINISH_LOADS>
__device__ __forceinline__ void finish(reduce_ws *ws, int64_t p, void *out, int out_dtype)
{
    __shared__ A scratch[32];
    const A *part = partials_of<A>(ws);
    A s = A();
    /* More partials than threads: GS_REDUCE_FINISH_LOADS of a thread's
     * partials in flight, added in the same order as one at a time
     * (deterministic results keep their bits) -- one L2 round trip per group
     * instead of one per partial (H200, ncu: 1,056 partials took 4.0 us
     * against CUB's single-tile 3.2 us; graph replay of 3-10M float32 sums 4-6%
     * faster, r137).  At most one partial each: one load, as the grouped
     * loop's address arithmetic cost this one-block kernel ~0.13 us (r137). */
    if (p <= (int64_t)blockDim.x) {
        if ((int64_t)threadIdx.x < p)
            s += __ldcg(part + threadIdx.x); /* L2: written by other SMs */
    } else {
        for (int64_t i0 = threadIdx.x; i0 < p; i0 += (int64_t)L * blockDim.x) {
            A v[L];
#pragma unroll
            for (int k = 0; k < L; k++) {
                const int64_t i = i0 + (int64_t)k * blockDim.x;
                v[k] = i < p ? __ldcg(part + i) : A();
            }
#pragma unroll
            for (int k = 0; k < L; k++)
                if (i0 + (int64_t)k * blockDim.x < p)
                    s += v[k];
        }
    }
    s = gpusync::block_sum(s, scratch);
    if (threadIdx.x == 0) {
        if (out) /* one launch over a device input: nothing was added before (no memset needed) */
            store_result(out, out_dtype, A() + s);
        else
            *acc_ptr(ws, A()) += s; /* the only writer; kernels on the stream run in order */
    }
}

/* grid: every block waits at the barrier (its release / acquire orders the
 * partials), then block 0 adds them. */
template <class A, int L, class R> __device__ __forceinline__ void grid_finish(const R &r, int64_t parts)
{
    unsigned round = 0;
    if (gpusync::barrier_sense(r.bw, r.groups, round, &r.ws->error, r.timeout_ns) && blockIdx.x == 0)
        finish<A, L>(r.ws, parts, r.out, r.out_dtype);
}

/* threadfence: the last block to take a ticket adds the partials.  `last`
 * is the kernel's __shared__ flag. */
template <class A, int L, class R> __device__ __forceinline__ void threadfence_finish(const R &r, int64_t parts, bool &last)
{
    if (threadIdx.x == 0) {
        __threadfence(); /* our partial is visible before our ticket is */
        last = atomicAdd(&r.ws->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        __threadfence(); /* and we read the partials only after seeing every ticket */
        finish<A, L>(r.ws, parts, r.out, r.out_dtype);
        if (threadIdx.x == 0)
            r.ws->ticket = 0; /* ready for the next chunk */
    }
}

/* The block step of every strategy (deterministic=False).  Blocks take
 * tiles of THREADS x GS_REDUCE_UNROLL 16-byte vectors in turn, so that each
 * block's loads in flight are one contiguous stretch of memory. */
template <class T, bool DOT, int MODE, int THREADS>
__global__ void __launch_bounds__(THREADS, reduce_min_blocks<T, DOT>(THREADS)) reduce_kernel(reduce_args<T> r)
{
    using A = acc_of<T>;
    __shared__ A scratch[32];
    __shared__ bool last;
    A s = A();
    constexpr int64_t TB = (int64_t)THREADS * (16 / sizeof(T)) * unroll_of<T, DOT>();
    if (MODE == MODE_PARTIAL)
        gs_pdl_launch_dependents(); /* the finishing kernel may launch; it waits for us (gs_pdl_wait) */
    for (int64_t lo = (int64_t)blockIdx.x * TB; lo < r.n; lo += (int64_t)gridDim.x * TB)
        accumulate<T, DOT, A, unroll_of<T, DOT>(), tree_of<T, DOT>()>(s, r.a, r.sa, r.b, r.sb, lo, lo + TB < r.n ? lo + TB : r.n,
                                                         threadIdx.x, THREADS, r.vec, r.stream);
    if (MODE == MODE_SINGLE) { /* one block: no workspace, no second step */
        s = gpusync::block_sum(s, scratch);
        if (threadIdx.x == 0)
            store_result(r.out, r.out_dtype, s);
        return;
    }
    A *acc = acc_ptr(r.ws, A());
    if (MODE == MODE_WARP) {
        s = gpusync::warp_sum(s);
        if ((threadIdx.x & 31) == 0)
            atomicAdd(acc, s);
        return;
    }
    s = gpusync::block_sum(s, scratch);
    if (threadIdx.x == 0) {
        if (MODE == MODE_ATOMIC) {
            atomicAdd(acc, s);
        } else if (MODE == MODE_MUTEX) {
            if (gpusync::mutex_lock(&r.ws->lock, &r.ws->error, r.timeout_ns)) {
                volatile A *p = acc;
                *p = *p + s;
                gpusync::mutex_unlock(&r.ws->lock);
            }
        } else {
            partials_of<A>(r.ws)[blockIdx.x] = s;
        }
    }
    if (MODE == MODE_THREADFENCE)
        threadfence_finish<A, in_kernel_finish_loads<T, DOT>()>(r, gridDim.x, last);
    if (MODE == MODE_GRID)
        grid_finish<A, in_kernel_finish_loads<T, DOT>()>(r, gridDim.x);
}

/* deterministic=True: the sum of fixed tile t (valid in thread 0). */
template <class T, bool DOT, class A>
__device__ __forceinline__ A tile_total(const reduce_args<T> &r, int64_t t, A *scratch)
{
    A s = A();
    const int64_t lo = t * GS_REDUCE_TILE, hi = lo + GS_REDUCE_TILE < r.n ? lo + GS_REDUCE_TILE : r.n;
    accumulate<T, DOT, A, tile_unroll_of<T, DOT>()>(s, r.a, r.sa, r.b, r.sb, lo, hi, threadIdx.x, blockDim.x, r.vec,
                                                    r.stream);
    return gpusync::block_sum(s, scratch);
}

/* deterministic=True: one partial per fixed tile, in a fixed order. */
template <class T, bool DOT, int MODE>
__global__ void __launch_bounds__(GS_REDUCE_THREADS) reduce_tiles_kernel(reduce_args<T> r)
{
    using A = acc_of<T>;
    __shared__ A scratch[32];
    __shared__ bool last;
    const int64_t tiles = (r.n + GS_REDUCE_TILE - 1) / GS_REDUCE_TILE;
    if (MODE == MODE_PARTIAL)
        gs_pdl_launch_dependents();
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const A s = tile_total<T, DOT, A>(r, t, scratch);
        if (threadIdx.x == 0)
            partials_of<A>(r.ws)[t] = s;
        __syncthreads(); /* scratch is reused by the next tile */
    }
    if (MODE == MODE_THREADFENCE)
        threadfence_finish<A, GS_REDUCE_FINISH_LOADS>(r, tiles, last);
    if (MODE == MODE_GRID)
        grid_finish<A, GS_REDUCE_FINISH_LOADS>(r, tiles);
}

/* deterministic=True on a few tiles: one block does what the tile kernel's
 * blocks and finish() do, in the same order (thread t % GS_REDUCE_THREADS
 * adds tile t's sum in tile order, then the block reduction, then 0 + that),
 * so the bits match every other deterministic path -- with no workspace. */
template <class T, bool DOT> __global__ void __launch_bounds__(GS_REDUCE_THREADS) reduce_tiles_single_kernel(reduce_args<T> r)
{
    using A = acc_of<T>;
    __shared__ A scratch[32];
    __shared__ A tile_sum;
    const int64_t tiles = (r.n + GS_REDUCE_TILE - 1) / GS_REDUCE_TILE;
    A fin = A();
    for (int64_t t = 0; t < tiles; t++) {
        const A s = tile_total<T, DOT, A>(r, t, scratch);
        if (threadIdx.x == 0)
            tile_sum = s;
        __syncthreads();
        if (threadIdx.x == t % blockDim.x)
            fin += tile_sum;
        __syncthreads(); /* tile_sum and scratch are reused by the next tile */
    }
    fin = gpusync::block_sum(fin, scratch);
    if (threadIdx.x == 0)
        store_result(r.out, r.out_dtype, A() + fin);
}

/* Small device inputs, strategy auto: one cluster of up to 8 blocks (one
 * launch, no workspace, no memset).  Each block reduces its tiles; the
 * block sums meet in block 0 through distributed shared memory. */
template <class T, bool DOT>
__global__ void __launch_bounds__(GS_REDUCE_SMALL_THREADS) reduce_cluster_kernel(reduce_args<T> r)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap(); /* clusters need sm_90; the host launches this only where dev->major >= 9 */
#else
    using A = acc_of<T>;
    __shared__ A scratch[32];
    __shared__ A part;
    cg::cluster_group cl = cg::this_cluster();
    A s = A();
    constexpr int64_t TB = (int64_t)GS_REDUCE_SMALL_THREADS * (16 / sizeof(T)) * unroll_of<T, DOT>();
    for (int64_t lo = (int64_t)blockIdx.x * TB; lo < r.n; lo += (int64_t)gridDim.x * TB)
        accumulate<T, DOT, A, unroll_of<T, DOT>(), tree_of<T, DOT>()>(s, r.a, r.sa, r.b, r.sb, lo, lo + TB < r.n ? lo + TB : r.n,
                                                         threadIdx.x, GS_REDUCE_SMALL_THREADS, r.vec, r.stream);
    s = gpusync::block_sum(s, scratch);
    if (threadIdx.x == 0)
        part = s;
    cl.sync(); /* every block's part is written (the grid is one cluster: rank == blockIdx.x) */
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        A t = A();
        for (unsigned b = 0; b < gridDim.x; b++)
            t += *cl.map_shared_rank(&part, b);
        store_result(r.out, r.out_dtype, t);
    }
    cl.sync(); /* no block leaves (its shared memory) before block 0 has read it */
#endif
}

/* two-pass: the second kernel (one block). */
template <class A>
__global__ void __launch_bounds__(GS_REDUCE_THREADS) finish_kernel(reduce_ws *ws, int64_t p, void *out, int out_dtype)
{
    gs_pdl_wait(); /* launched early (programmatic dependent launch): the partials are ready after this */
    finish<A>(ws, p, out, out_dtype);
}

/* Convert the accumulator to the result dtype. */
__global__ void store_kernel(reduce_ws *ws, void *out, int dtype, int is_float)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        gs_store_acc(out ? out : (void *)&ws->result, dtype, is_float ? ws->acc.f : 0.0, is_float ? 0 : ws->acc.i);
}

/* grid: the barrier's words and group counters for the largest grid. */
size_t grid_words_bytes(const gs_device_info *dev)
{
    const size_t blocks = (size_t)dev->multiprocessors * (dev->max_threads_per_multiprocessor / 32);
    return sizeof(gpusync::grid_barrier_words) + (blocks / GPUSYNC_SENSE_GROUP + 1) * GPUSYNC_SENSE_STRIDE * 4;
}

struct reduce_plan {
    gs_strategy strategy;
    int deterministic, dot;
    reduce_ws *ws;
    gpusync::grid_barrier_words *bw;
    unsigned *groups;
    const gs_device_info *dev;
    cudaStream_t stream;
    void *out;      /* device output: the finishing block stores the result (threadfence, grid, two-pass) */
    int out_dtype;
    int single;     /* one launch of one block or one cluster, no workspace (small inputs, strategy auto) */
    int stream_loads;
};

template <class T, bool DOT>
gs_status launch_typed(const reduce_plan &p, const void *a, const void *b, int64_t n, int64_t sa, int64_t sb)
{
    using A = acc_of<T>;
    reduce_args<T> r;
    r.a = (const T *)a;
    r.b = (const T *)b;
    r.n = n;
    r.sa = sa;
    r.sb = sb;
    r.vec = sa == 1 && (!DOT || (sb == 1 && ((uintptr_t)a & 15) == ((uintptr_t)b & 15)));
    r.ws = p.ws;
    r.stream = p.stream_loads;
    r.out = p.out;
    r.out_dtype = p.out_dtype;
    r.bw = NULL;
    r.groups = NULL;
    r.timeout_ns = (unsigned long long)gs_spin_timeout_ns();
    if (p.single) {
        void *args1[] = {&r};
        if (p.deterministic) {
            GS_CUDA_CHECK(cudaLaunchKernel((const void *)reduce_tiles_single_kernel<T, DOT>, dim3(1),
                                           dim3(GS_REDUCE_THREADS), args1, 0, p.stream));
        } else if (p.single > 1) { /* one cluster of p.single blocks */
            gs_cluster_config cc((unsigned)p.single, GS_REDUCE_SMALL_THREADS, 0, p.stream);
            GS_CUDA_CHECK(cudaLaunchKernelEx(&cc.cfg, reduce_cluster_kernel<T, DOT>, r));
        } else {
            GS_CUDA_CHECK(cudaLaunchKernel((const void *)reduce_kernel<T, DOT, MODE_SINGLE, GS_REDUCE_SMALL_THREADS>,
                                           dim3(1), dim3(GS_REDUCE_SMALL_THREADS), args1, 0, p.stream));
        }
        return GS_OK;
    }
    const int threads =
        (!p.deterministic && p.strategy == GS_STRATEGY_MUTEX) ? GS_REDUCE_MUTEX_THREADS : GS_REDUCE_THREADS;
    const void *kernel;
    if (p.deterministic) {
        kernel = p.strategy == GS_STRATEGY_THREADFENCE ? (const void *)reduce_tiles_kernel<T, DOT, MODE_THREADFENCE>
                 : p.strategy == GS_STRATEGY_GRID      ? (const void *)reduce_tiles_kernel<T, DOT, MODE_GRID>
                                                       : (const void *)reduce_tiles_kernel<T, DOT, MODE_PARTIAL>;
    } else {
        switch (p.strategy) {
        case GS_STRATEGY_ATOMIC: kernel = (const void *)reduce_kernel<T, DOT, MODE_ATOMIC, GS_REDUCE_THREADS>; break;
        case GS_STRATEGY_MUTEX:
            kernel = (const void *)reduce_kernel<T, DOT, MODE_MUTEX, GS_REDUCE_MUTEX_THREADS>;
            break;
        case GS_STRATEGY_WARP: kernel = (const void *)reduce_kernel<T, DOT, MODE_WARP, GS_REDUCE_THREADS>; break;
        case GS_STRATEGY_THREADFENCE:
            kernel = (const void *)reduce_kernel<T, DOT, MODE_THREADFENCE, GS_REDUCE_THREADS>;
            break;
        case GS_STRATEGY_GRID: kernel = (const void *)reduce_kernel<T, DOT, MODE_GRID, GS_REDUCE_THREADS>; break;
        default: kernel = (const void *)reduce_kernel<T, DOT, MODE_PARTIAL, GS_REDUCE_THREADS>; break;
        }
    }
    int64_t resident;
    gs_status st = gs_cuda_resident_blocks(kernel, threads, 0, p.dev, &resident);
    if (st != GS_OK)
        return st;
    if (!p.deterministic && p.strategy == GS_STRATEGY_MUTEX && resident > p.dev->multiprocessors)
        resident = p.dev->multiprocessors; /* one big block per SM: fewest lock hand-overs */
    const int64_t per_block = p.deterministic ? GS_REDUCE_TILE
                                              : (int64_t)threads * (16 / (int64_t)sizeof(T)) * unroll_of<T, DOT>();
    const int64_t work = (n + per_block - 1) / per_block;
    int64_t grid = resident < work ? resident : (work > 0 ? work : 1);
    int forced = 0; /* block-count sweeps */
    const double force = gs_env_number(GS_ENV_REDUCE_GRID, 0, &forced);
    if (forced && !p.deterministic && p.strategy != GS_STRATEGY_GRID)
        grid = (int64_t)force; /* (never past the co-resident maximum for the grid barrier) */
    const int64_t cap = (int64_t)p.dev->multiprocessors * (p.dev->max_threads_per_multiprocessor / 32);
    if (grid > cap) /* the workspace holds this many partials */
        grid = cap;
    void *args[] = {&r};
    if (p.strategy == GS_STRATEGY_GRID) { /* fresh barrier words for every launch (chunks of host input) */
        r.bw = p.bw;
        r.groups = p.groups;
        GS_CUDA_CHECK(cudaMemsetAsync(p.bw, 0, grid_words_bytes(p.dev), p.stream));
    }
    if (p.strategy == GS_STRATEGY_GRID && p.dev->cooperative_launch) /* the driver guarantees co-residency */
        GS_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3((unsigned)grid), dim3(threads), args, 0, p.stream));
    else
        GS_CUDA_CHECK(cudaLaunchKernel(kernel, dim3((unsigned)grid), dim3(threads), args, 0, p.stream));
    if (p.strategy == GS_STRATEGY_TWO_PASS) {
        const int64_t parts = p.deterministic ? work : grid;
        return gs_launch_pdl(finish_kernel<A>, dim3(1), dim3(threads), 0, p.stream, p.dev, p.ws, parts, p.out,
                             p.out_dtype);
    }
    return GS_OK;
}

template <bool DOT>
gs_status launch(const reduce_plan &p, gs_dtype dt, const void *a, const void *b, int64_t n, int64_t sa, int64_t sb)
{
    return gs_dtype_switch(dt, [&](auto t) { return launch_typed<GS_TYPE(t), DOT>(p, a, b, n, sa, sb); });
}

} // namespace

/* Partials the workspace must hold for n elements. */
static int64_t partials_needed(const gs_device_info *dev, int64_t n, int det)
{
    if (det)
        return (n + GS_REDUCE_TILE - 1) / GS_REDUCE_TILE + 1;
    /* at most every SM full of the smallest blocks */
    return (int64_t)dev->multiprocessors * (dev->max_threads_per_multiprocessor / 32) + 1;
}

extern "C" gs_status gs_cuda_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy,
                                    int deterministic, void *stream, gs_strategy *used)
{
    const int on_host = a->device == GS_HOST;
    if (b && (b->length != a->length || b->dtype != a->dtype))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "dot: a and b must have the same length and dtype");
    if ((b && b->device != a->device) || out->device != a->device)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "a, b and out must all be on the host or all on device %d",
                       a->device);
    if (out->length != 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "out must hold one element");
    if (on_host && (a->stride != 1 || (b && b->stride != 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "host inputs must be contiguous");
    const int is_float = gs_dtype_is_float(a->dtype);
    const gs_strategy asked = strategy;
    int det = 0;
    gs_status st = gs_reduce_resolve(&strategy, deterministic, is_float, 1, &det);
    if (st != GS_OK)
        return st;
    *used = strategy;

    gs_cuda_call call(a->device, stream);
    st = call.status;
    if (st != GS_OK)
        return st;
    const int ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;

    const size_t es = gs_dtype_size(a->dtype);
    const int64_t chunk = on_host ? GS_STAGE_BYTES / (int64_t)es : a->length;
    const int64_t maxn = a->length < chunk ? a->length : chunk;
    const size_t part_bytes = ((GS_WS_PARTIALS_OFFSET + (size_t)partials_needed(dev, maxn, det) * 8) + 127) & ~(size_t)127;
    const size_t ws_bytes = part_bytes + (strategy == GS_STRATEGY_GRID ? grid_words_bytes(dev) : 0);
    reduce_plan p{}; /* named fields (workspace, barrier words, groups, output: set below) */
    p.strategy = strategy;
    p.deterministic = det;
    p.dot = b != NULL;
    p.dev = dev;
    p.stream = s;
    p.out_dtype = out->dtype;
    const int64_t in_bytes = a->length * (int64_t)es * (b ? 2 : 1);
    /* inputs larger than L2 stream through it (evict-first loads); smaller ones may stay for the next call */
    p.stream_loads = (on_host ? (int64_t)GS_STAGE_BYTES * (b ? 2 : 1) : in_bytes) > dev->l2_cache_bytes;
    if (!on_host && a->length > 0 && asked == GS_STRATEGY_AUTO) {
        /* Device input, strategy auto.  Small inputs: one launch of one block
         * (or one cluster of blocks on devices with clusters), no workspace
         * -- launch latency dominates there.  Larger: the finishing block
         * stores the result (no memset, no store kernel; a memset in a stream
         * or graph costs about a launch more): threadfence into the kept
         * workspace below, or two-pass (two launches). */
        const int clusters = dev->major >= 9;
        int set = 0; /* threshold sweeps */
        const double forced = gs_env_number(GS_ENV_REDUCE_SMALL_BYTES, 0, &set);
        const int64_t small = set ? (int64_t)forced : clusters ? GS_REDUCE_CLUSTER_BYTES : GS_REDUCE_SMALL_BYTES;
        if (det) {
            p.single = a->length <= (int64_t)GS_REDUCE_TILE * GS_REDUCE_SMALL_TILES;
        } else if (in_bytes <= small) {
            int64_t c = clusters ? (in_bytes + GS_REDUCE_SMALL_BYTES - 1) / GS_REDUCE_SMALL_BYTES : 1;
            p.single = (int)(c < 1 ? 1 : c > GS_REDUCE_CLUSTER_MAX ? GS_REDUCE_CLUSTER_MAX : c);
        }
        strategy = p.strategy = GS_STRATEGY_TWO_PASS;
        *used = strategy;
    }
    /* device output and a strategy whose last step is one block: that block stores the result */
    const int fused = !on_host && (p.single || strategy == GS_STRATEGY_THREADFENCE || strategy == GS_STRATEGY_GRID ||
                                   strategy == GS_STRATEGY_TWO_PASS);
    if (fused && a->length > 0)
        p.out = out->data;
    /* Outside graph capture: the calling thread's kept workspace for this stream, whose ticket the last block
     * resets, and the threadfence kernel -- one launch, no allocation, no free (H200 host, r148: 14.1-15.2 ->
     * 10.0-10.9 us a call).  Under capture, or when no kept workspace can be had: two-pass, per call. */
    int kept = 0;
    if (!p.single && p.out && asked == GS_STRATEGY_AUTO && !det && strategy == GS_STRATEGY_TWO_PASS) {
        p.ws = (reduce_ws *)gs_cuda_scratch(ord, s, ws_bytes);
        if (p.ws) {
            kept = 1;
            strategy = p.strategy = GS_STRATEGY_THREADFENCE;
            *used = strategy;
        }
    }
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] %s n=%lld dtype=%d strategy=%s deterministic=%d device=%d%s%s\n",
                b ? "dot" : "sum", (long long)a->length, (int)a->dtype, gs_strategy_name(strategy), det, ord,
                on_host ? " (host input staged)" : "", kept ? " (kept workspace)" : "");

    if (p.single || kept) {
        st = b ? launch<true>(p, a->dtype, a->data, b->data, a->length, a->stride, b->stride)
               : launch<false>(p, a->dtype, a->data, NULL, a->length, a->stride, 1);
        if (kept)
            gs_cuda_scratch_done(ord, s); /* (on failure too: the use is ordered either way) */
        return st;
    }
    GS_CUDA_GOTO(gs_malloc_async((void **)&p.ws, ws_bytes, s));
    if (!(p.out && strategy == GS_STRATEGY_TWO_PASS)) /* (two-pass storing into out reads no header word) */
        GS_CUDA_GOTO(cudaMemsetAsync(p.ws, 0, sizeof(reduce_ws), s));
    p.bw = (gpusync::grid_barrier_words *)((char *)p.ws + part_bytes);
    p.groups = (unsigned *)(p.bw + 1);
    {
        gs_staged arr[2] = {gs_staged(a), gs_staged(b)};
        GS_GOTO(gs_cuda_staged(arr, 2, a->length, chunk, s, [&](int64_t, int64_t cnt) {
            return b ? launch<true>(p, a->dtype, arr[0].ptr, arr[1].ptr, cnt, arr[0].stride, arr[1].stride)
                     : launch<false>(p, a->dtype, arr[0].ptr, NULL, cnt, arr[0].stride, 1);
        }));
    }
    if (!p.out) {
        store_kernel<<<1, 32, 0, s>>>(p.ws, on_host ? NULL : out->data, out->dtype, is_float);
        GS_CUDA_GOTO(cudaGetLastError());
    }
    if (on_host) {
        GS_CUDA_GOTO(cudaMemcpyAsync(out->data, &p.ws->result, gs_dtype_size(out->dtype), cudaMemcpyDeviceToHost, s));
        if ((st = gs_cuda_wait_stream(s)) != GS_OK)
            goto fail;
    }
    if (strategy == GS_STRATEGY_MUTEX || strategy == GS_STRATEGY_GRID) {
        st = gs_cuda_check_deadlock(&p.ws->error, s, "sum/dot", strategy, "a block", "the others");
    }
fail:
    if (p.ws)
        cudaFreeAsync(p.ws, s);
    return st;
}

int gs_reduce_refs(gs_kernel_ref *r)
{
    int k = 0;
    r[k++] = {"sum:atomic", (const void *)reduce_kernel<float, false, MODE_ATOMIC, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"sum:mutex", (const void *)reduce_kernel<float, false, MODE_MUTEX, GS_REDUCE_MUTEX_THREADS>,
              GS_REDUCE_MUTEX_THREADS, 0};
    r[k++] = {"sum:two-pass", (const void *)reduce_kernel<float, false, MODE_PARTIAL, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"sum:threadfence", (const void *)reduce_kernel<float, false, MODE_THREADFENCE, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"sum:grid", (const void *)reduce_kernel<float, false, MODE_GRID, GS_REDUCE_THREADS>, GS_REDUCE_THREADS,
              0};
    r[k++] = {"sum:warp", (const void *)reduce_kernel<float, false, MODE_WARP, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"sum:deterministic", (const void *)reduce_tiles_kernel<float, false, MODE_THREADFENCE>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"dot:atomic", (const void *)reduce_kernel<float, true, MODE_ATOMIC, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    r[k++] = {"dot:threadfence", (const void *)reduce_kernel<float, true, MODE_THREADFENCE, GS_REDUCE_THREADS>,
              GS_REDUCE_THREADS, 0};
    return k;
}
