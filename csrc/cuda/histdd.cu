/*
 * histogramdd (CUDA backend): numpy.histogramdd's counts in one fused
 * kernel (issue 15).  Each thread takes points grid-stride; for each
 * dimension it loads the coordinate, bins it exactly as NumPy does
 * (gs_histdd_bin: a guess from the equal-width formula checked against the
 * edges, else a binary search -- csrc/common/histdd.h), and adds one to the
 * point's C-order linear bin:
 *
 *   shared   every block keeps a private copy of all bins in shared memory
 *            (uint32 counts, or float64 weight sums) next to the edges, and
 *            adds its non-zero bins to the result at the end; used when the
 *            bins (and edges) fit in a block's opt-in shared memory;
 *   shared16 unweighted counts as two 16-bit halves of a 32-bit word: twice
 *            the bins a block holds (65,536 bins in 128 KiB: a 256 x 256
 *            histogram2d stays in one block's shared memory); the carry
 *            rule, the overflow flag and its recount: count16.cuh;
 *   cluster  (sm_90+) when the bins do not fit one block: a thread-block
 *            cluster of C blocks holds them, each block a power-of-two slice
 *            in its shared memory, and every block adds to any bin through
 *            distributed shared memory (cluster.map_shared_rank);
 *   global   otherwise: one global atomic per counted point.
 *
 * Edges live in shared memory when there are at most EDGES_SMEM of them --
 * as float32 when the coordinates are float32 and every edge is a float32
 * value (np.linspace(0, 1, 257) is): a float32 comparison with such an edge
 * is the float64 one, so the bin is NumPy's, at float32's speed.  The bin
 * is guessed from the equal-width formula and checked against its two
 * edges; a failed check (out of range, NaN, the closed last edge, uneven
 * edges) takes gs_histdd_bin on the float64 edges.  The 32-bit shared and
 * cluster kernels bound their grids so that no block counts 2^32 points.
 */
#include "count16.cuh"
#include "elements.cuh"
#include "guess.cuh"
#include "stage.cuh"
#include "../common/histdd.h"

#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>
#include <type_traits>

namespace cg = cooperative_groups;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GS_HISTDD_NO_CLUSTERS 1 /* the cluster kernel's body is only compiled for sm_90+ */
#endif

namespace {

constexpr int THREADS = 512;      /* the global kernel; the privatized ones when two blocks fit an SM */
constexpr int MAX_THREADS = 1024; /* a privatized block alone on its SM, the cluster kernel: all its threads */
constexpr int64_t EDGES_SMEM = 4096;

struct dd_args {
    const char *coord[GS_HISTDD_MAX_DIMS];
    int64_t cstride[GS_HISTDD_MAX_DIMS]; /* elements */
    int64_t nedges[GS_HISTDD_MAX_DIMS], eoff[GS_HISTDD_MAX_DIMS], bstride[GS_HISTDD_MAX_DIMS];
    double scale[GS_HISTDD_MAX_DIMS];
    /* per dimension: lo (the first edge), scale, mlo, mhi of the guess (bin_of), in the type the kernel bins in
     * (gd float64, gf float32: only that one is filled, gs_guess_window in guess.cuh) */
    double gd[4 * GS_HISTDD_MAX_DIMS];
    float gf[4 * GS_HISTDD_MAX_DIMS];
    const double *edges; /* device, all dimensions */
    const double *w;
    int64_t wstride, n, nbins, nedges_total;
    int ndim, edges_in_smem;
    int *overflow; /* shared16: a slot per block, non-zero when one of its 16-bit halves reached 0xffff */
    int force_recount; /* tests (GPUSYNC_HISTDD_COUNTER=1): every shared16 block raises the flag */
    int edges_f32; /* every edge is a float32 value */
    int out_f64; /* unweighted counts written as float64 (exact below 2^53: what NumPy returns) */
    void *out;   /* int64 counts or float64 sums / counts */
    int64_t ring_off; /* > 0: the byte offset of the block's load ring in its dynamic shared memory (ring_loads) */
    uint4 *dump;       /* unweighted shared bins: each block's counter words copied here (dump_cols a block), */
    int64_t dump_cols; /* summed into the result by histdd_sum_dumps; NULL: global atomics per bin (flush) */
    int sum_writes;    /* the dumps' sum writes every bin (out not zeroed first: no count adds to it before) */
    unsigned *carry;   /* with sum_writes, shared16: block b's settled halves, the bins whose half reached 0x8000 */
    int64_t carry_cap; /* (carry[b * (carry_cap + 1)]: how many; the bins follow), summed by histdd_sum_dumps */
    double *edges_out; /* NULL, or the edges (nedges_total) written here by block 0 of the count (NumPy's edges) */
};

__device__ __forceinline__ double to_d(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ double to_d(gs_f16 x) { return (double)__half2float(__ushort_as_half(x.bits)); }
template <class T> __device__ __forceinline__ double to_d(T x) { return (double)x; }

/* U consecutive coordinates of group g (U > 1: one 16-byte load; the
 * launch checked contiguity and alignment), or coordinate g (U == 1). */
template <class T, int U> struct loader {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, T *x)
    {
        x[0] = ((const T *)r.coord[d])[g * r.cstride[d]];
    }
};
template <> struct loader<float, 4> {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, float *x)
    {
        const float4 q = __ldg((const float4 *)r.coord[d] + g);
        x[0] = q.x, x[1] = q.y, x[2] = q.z, x[3] = q.w;
    }
};
template <> struct loader<double, 2> {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, double *x)
    {
        const double2 q = __ldg((const double2 *)r.coord[d] + g);
        x[0] = q.x, x[1] = q.y;
    }
};

/* The edge type: float for float32 coordinates whose edges are all float32
 * values (the launch checked), else double. */
template <class E> __device__ __forceinline__ E to_e(float x) { return (E)x; }
template <class E, class T> __device__ __forceinline__ E to_e(T x) { return to_d(x); }

/* One dimension's guess window in E (guess.cuh: t = (v - lo) * scale, k = floor(t)). */
template <class E> struct guess_of;
template <> struct guess_of<float> {
    static __device__ __forceinline__ const float *p(const dd_args &r) { return r.gf; }
};
template <> struct guess_of<double> {
    static __device__ __forceinline__ const double *p(const dd_args &r) { return r.gd; }
};

/* k < m1 as the unsigned comparison of k's width (k < 0 fails too). */
__device__ __forceinline__ bool below(int k, int64_t m1) { return (unsigned)k < (unsigned)m1; } /* m1 < 2^31 */
__device__ __forceinline__ bool below(int64_t k, int64_t m1) { return (uint64_t)k < (uint64_t)m1; }

/* NumPy's bin of v in dimension d (-1: dropped).  e: that dimension's
 * edges as E (shared or global memory).  g[4 * d ...]: lo, scale and the
 * fraction window (mlo, mhi) -- the host computed t at every edge with
 * these very operations and mlo >= max |t(e[k]) - k|, so mlo < t - k < mhi
 * means t(e[k]) < t < t(e[k + 1]), i.e. e[k] <= v < e[k + 1] (t is monotone
 * in v): the bin without reading an edge.  Else the two edges of the guess,
 * else gs_histdd_bin on the float64 edges. */
template <class E, bool WINDOW = true>
__device__ __forceinline__ int64_t bin_of(const dd_args &r, const E *e, int d, E v)
{
    const E *g = guess_of<E>::p(r) + 4 * d;
    const int64_t m1 = r.nedges[d] - 1;
    E fr;
    const auto k = gs_guess_floor_frac(gs_guess_t(v, g[0], g[1]), &fr);
    if (below(k, m1)) {
        if (WINDOW && fr > g[2] && fr < g[3])
            return k;
        if (e[k] <= v && v < e[k + 1])
            return k;
    }
    return gs_histdd_bin(r.edges + r.eoff[d], m1 + 1, r.scale[d], (double)v);
}

/* The linear bins of the U points of group g (-1: a coordinate is dropped),
 * as I (int where the bins fit shared memory).  All dimensions' loads of a
 * group are issued before their binning.  ND: the dimensions when known at
 * compile time (2: histogram2d), else 0.  With ND known, every coordinate
 * first takes only its guess window, the linear bin built by Horner's rule
 * in unsigned arithmetic; a group with a coordinate outside its window
 * (rare: near an edge, out of range, NaN) is binned again by bin_of,
 * without the window (the group failed it: checking it again only made the
 * compiler keep every comparison's result in a register bit for the rare
 * path -- 20 instructions a group of four). */
template <class T, int U, int ND> struct group {
    T x[ND][U];
    __device__ __forceinline__ void load(const dd_args &r, int64_t g)
    {
#pragma unroll
        for (int d = 0; d < ND; d++)
            loader<T, U>::get(r, d, g, x[d]);
    }
};

/* The linear bins of a loaded group (ND known). */
template <class T, int U, class E, int ND, class I>
__device__ __forceinline__ void group_bins(const dd_args &r, const E *edges, const group<T, U, ND> &q, I *at)
{
    const auto &x = q.x;
    {
        using UI = typename std::make_unsigned<I>::type;
        bool fast = true;
#pragma unroll
        for (int j = 0; j < U; j++) {
            UI a = 0;
#pragma unroll
            for (int d = 0; d < ND; d++) {
                const E *gw = guess_of<E>::p(r) + 4 * d;
                const int64_t m1 = r.nedges[d] - 1;
                E fr;
                const auto k = gs_guess_floor_frac(gs_guess_t(to_e<E>(x[d][j]), gw[0], gw[1]), &fr);
                fast = fast & below(k, m1) & (fr > gw[2]) & (fr < gw[3]);
                a = a * (UI)m1 + (UI)k;
            }
            at[j] = (I)a;
        }
        if (fast)
            return;
#pragma unroll
        for (int j = 0; j < U; j++) {
            I a = 0;
#pragma unroll
            for (int d = 0; d < ND; d++) {
                const I b = (I)bin_of<E, false>(r, edges + r.eoff[d], d, to_e<E>(x[d][j]));
                a = (a < 0 || b < 0) ? (I)-1 : a * (I)(r.nedges[d] - 1) + b;
            }
            at[j] = a;
        }
    }
}

template <class T, int U, class E, int ND, class I>
__device__ __forceinline__ void linear_bins(const dd_args &r, const E *edges, int64_t g, I *at)
{
    if constexpr (ND > 0) {
        group<T, U, ND> q;
        q.load(r, g);
        group_bins<T, U, E, ND, I>(r, edges, q, at);
    } else {
#pragma unroll
        for (int j = 0; j < U; j++)
            at[j] = 0;
        for (int d = 0; d < r.ndim; d++) {
            T x[U];
            loader<T, U>::get(r, d, g, x);
            const I stride = (I)r.bstride[d];
#pragma unroll
            for (int j = 0; j < U; j++) {
                const I b = (I)bin_of<E>(r, edges + r.eoff[d], d, to_e<E>(x[j]));
                at[j] = (at[j] < 0 || b < 0) ? (I)-1 : at[j] + b * stride;
            }
        }
    }
}

/* The privatized bins: the first bytes of the block's dynamic shared
 * memory (the edges follow them).  Addressed through this array rather than
 * a pointer: a generic pointer made every add convert it (the CTA id read
 * and the shared window's base: five instructions a point). */
__device__ __forceinline__ unsigned *bin_words()
{
    extern __shared__ unsigned dd_words[];
    return dd_words;
}

/* Where a counted point goes. */
enum { TO_SHARED, TO_SHARED16, TO_GLOBAL };

/* v more in result bin k (unweighted: int64 counts, or float64 ones). */
__device__ __forceinline__ void add_count(const dd_args &r, int64_t k, unsigned v)
{
    if (r.out_f64)
        atomicAdd((double *)r.out + k, (double)v);
    else
        atomicAdd((unsigned long long *)r.out + k, (unsigned long long)v);
}

template <bool WEIGHTED, int DEST> __device__ __forceinline__ void add_point(const dd_args &r, int64_t at, int64_t i)
{
    if (DEST == TO_SHARED) {
        if (WEIGHTED)
            atomicAdd((double *)bin_words() + at, r.w[i * r.wstride]);
        else
            atomicAdd(bin_words() + at, 1u);
    } else if (WEIGHTED) {
        atomicAdd((double *)r.out + at, r.w[i * r.wstride]);
    } else {
        add_count(r, at, 1u);
    }
}

/* Bytes the bins take ahead of the edges (16-byte aligned). */
__host__ __device__ constexpr size_t bin_bytes(int64_t bytes) { return ((size_t)bytes + 15) / 16 * 16; }

/* A block's shared flags: its 16-bit overflow and its settled halves logged in r.carry. */
struct block_flags {
    int overflow;
    int carries;
};

/* shared16's counters (count16.cuh) on the bins at the start of the block's
 * dynamic shared memory: one more in bin `at`, the word's old half back.
 * A half that reaches 0x8000 moves 0x8000 to the result (atomics), or where
 * the dumps' sum writes the result (nothing may add to it before), to the
 * block's log: each entry stands for 0x8000 of the block's points, so
 * carry_cap = (the block's most points) / 0x8000 + 1 never fills (a full
 * log would raise the flag: the recount counts again from zero). */
__device__ __forceinline__ unsigned add16(int at) { return gs_add16(bin_words(), at); }
__device__ __forceinline__ void settle16(const dd_args &r, int at, unsigned old, block_flags *f)
{
    gs_settle16(bin_words(), at, old, &f->overflow, [&](unsigned v) {
        if (!r.carry) {
            add_count(r, at, v);
            return;
        }
        const int i = atomicAdd(&f->carries, 1);
        if (i < r.carry_cap)
            r.carry[(int64_t)blockIdx.x * (r.carry_cap + 1) + 1 + i] = (unsigned)at;
        else
            f->overflow = 1;
    });
}

/* The load ring (shared16, where the block's shared memory has room for
 * it: a 256 x 256 count leaves 96 KiB): each thread copies the 16-byte
 * coordinate loads of its groups RING - 1 iterations ahead with cp.async
 * into its own slots (slot s of dimension d at ring[(s * ND + d) *
 * blockDim.x + threadIdx.x]) and reads them back when their turn comes.
 * Three groups of loads in flight a thread instead of one: the registers
 * held one prefetched group, and the SM's warps still spent half their
 * cycles waiting on memory (ncu r30).  A thread reads only what it copied,
 * so cp.async.wait_group is all the synchronization there is. */
constexpr int RING = 3;
template <class T, int U, int ND>
__device__ __forceinline__ void ring_issue(const dd_args &r, uint4 *ring, int slot, int64_t g, int64_t groups)
{
    static_assert(sizeof(T) * U == 16, "the ring holds 16-byte groups");
    if (g < groups) {
#pragma unroll
        for (int d = 0; d < ND; d++)
            gs_cp_async16(ring + ((int64_t)(slot * ND + d) * blockDim.x + threadIdx.x), (const uint4 *)r.coord[d] + g);
    }
    gs_cp_async_commit(); /* (an empty group past the end keeps the count of groups in flight) */
}
template <class T, int U, int ND>
__device__ __forceinline__ void ring_read(const uint4 *ring, int slot, group<T, U, ND> &q)
{
#pragma unroll
    for (int d = 0; d < ND; d++) {
        const uint4 v = ring[(int64_t)(slot * ND + d) * blockDim.x + threadIdx.x];
        memcpy(q.x[d], &v, 16);
    }
}

/* Whether a count loads its next coordinates ahead (registers, or the
 * ring where the launch gives it room): ND known, 16-byte loads, shared
 * bins, the edges in the coordinates' type (float32 points on float64
 * edges, and the global kernel, spilled with it). */
template <class T, int U, class E, int ND, int DEST> constexpr bool loads_ahead()
{
    return ND > 0 && U > 1 && sizeof(E) == sizeof(T) && DEST != TO_GLOBAL;
}

/* Every point of [0, n) once over the grid: groups of U, then the n % U
 * last points one per thread.  shared16 issues a group's U adds before it
 * looks at what they returned.  With ND known and 16-byte loads, a thread
 * loads its next group before it bins the current one: the loads are in
 * flight while it computes (without that the SM's warps all waited on
 * memory at once -- half the issue slots idle, ncu r26). */
template <class T, int U, bool WEIGHTED, int DEST, class E, int ND>
__device__ __forceinline__ void count_points(const dd_args &r, const E *edges, block_flags *s_flags)
{
    using I = typename std::conditional<DEST == TO_GLOBAL, int64_t, int>::type; /* shared bins: < 2^31 */
    const int64_t groups = r.n / U, step = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    auto count = [&](const I (&at)[U], int64_t g) {
        if (DEST == TO_SHARED16) {
            unsigned old[U];
#pragma unroll
            for (int j = 0; j < U; j++)
                old[j] = at[j] >= 0 ? add16(at[j]) : 0u;
#pragma unroll
            for (int j = 0; j < U; j++)
                if (gs_near16(old[j])) /* (a dropped point's 0 is not) */
                    settle16(r, at[j], old[j], s_flags);
        } else {
#pragma unroll
            for (int j = 0; j < U; j++)
                if (at[j] >= 0)
                    add_point<WEIGHTED, DEST>(r, at[j], g * U + j);
        }
    };
    if constexpr (loads_ahead<T, U, E, ND, DEST>()) {
        if (r.ring_off > 0) {
            uint4 *ring = (uint4 *)((char *)bin_words() + r.ring_off);
#pragma unroll
            for (int k = 0; k < RING - 1; k++)
                ring_issue<T, U, ND>(r, ring, k, tid + k * step, groups);
            int slot = 0;
            for (int64_t g = tid; g < groups; g += step) {
                const int ahead = slot == 0 ? RING - 1 : slot - 1; /* (slot + RING - 1) % RING: read last turn */
                ring_issue<T, U, ND>(r, ring, ahead, g + (RING - 1) * step, groups);
                gs_cp_async_wait<RING - 1>(); /* this turn's group is in */
                group<T, U, ND> cur;
                ring_read<T, U, ND>(ring, slot, cur);
                I at[U];
                group_bins<T, U, E, ND, I>(r, edges, cur, at);
                count(at, g);
                slot = slot == RING - 1 ? 0 : slot + 1;
            }
            gs_cp_async_wait<0>();
        } else {
            group<T, U, ND> cur, next;
            if (tid < groups)
                cur.load(r, tid);
            for (int64_t g = tid; g < groups; g += step) {
                if (g + step < groups)
                    next.load(r, g + step);
                I at[U];
                group_bins<T, U, E, ND, I>(r, edges, cur, at);
                count(at, g);
                cur = next; /* (two buffers taking turns instead, unrolled by two, spilled and measured no faster) */
            }
        }
    } else {
        for (int64_t g = tid; g < groups; g += step) {
            I at[U];
            linear_bins<T, U, E, ND>(r, edges, g, at);
            count(at, g);
        }
    }
    if (U > 1 && tid < r.n - groups * U) {
        const int64_t i = groups * U + tid;
        I at;
        linear_bins<T, 1, E, ND>(r, edges, i, &at);
        if (at >= 0) {
            if (DEST == TO_SHARED16) {
                const unsigned old = add16(at);
                if (gs_near16(old))
                    settle16(r, at, old, s_flags);
            } else {
                add_point<WEIGHTED, DEST>(r, at, i);
            }
        }
    }
}

/* A block's (or a cluster slice's) partial bin k added to the result. */
template <bool WEIGHTED> __device__ __forceinline__ void flush(const dd_args &r, int64_t k, const void *bins, int64_t j)
{
    if (WEIGHTED) {
        const double v = ((const double *)bins)[j];
        if (v != 0.0)
            atomicAdd((double *)r.out + k, v);
    } else {
        const unsigned v = ((const unsigned *)bins)[j];
        if (v)
            add_count(r, k, v);
    }
}

/* shared16: the block's non-zero halves added to the result (count16.cuh). */
__device__ __forceinline__ void flush16(const dd_args &r)
{
    gs_flush16(bin_words(), r.nbins, [&](int64_t k, unsigned v) { add_count(r, k, v); });
}

/* The block's counter words, whole 16-byte columns, to its slot of the
 * dump (the summing kernel may start launching: it waits for this one). */
__device__ __forceinline__ void dump_block(const dd_args &r)
{
    gs_pdl_launch_dependents();
    const uint4 *src = (const uint4 *)bin_words();
    uint4 *dst = r.dump + (int64_t)blockIdx.x * r.dump_cols;
    for (int64_t k = threadIdx.x; k < r.dump_cols; k += blockDim.x)
        dst[k] = src[k];
}

/* NumPy's edges (the call's float64 table) to r.edges_out, by block 0:
 * the caller's edge arrays without a launch of their own. */
__device__ __forceinline__ void write_edges(const dd_args &r)
{
    if (r.edges_out && blockIdx.x == 0)
        for (int64_t k = threadIdx.x; k < r.nedges_total; k += blockDim.x)
            r.edges_out[k] = r.edges[k];
}

/* The edges a block reads: copied to shared memory as E when they fit. */
template <class E> __device__ __forceinline__ const E *stage_edges(const dd_args &r, E *s_edges)
{
    if (!r.edges_in_smem)
        return (const E *)r.edges; /* E is double here (the launch checked) */
    for (int64_t k = threadIdx.x; k < r.nedges_total; k += blockDim.x)
        s_edges[k] = (E)r.edges[k];
    return s_edges;
}

/* The privatized kernels (DEST TO_SHARED, TO_SHARED16) and the global one. */
template <class T, int U, bool WEIGHTED, int DEST, class E, int ND>
__global__ void __launch_bounds__(MAX_THREADS) histdd_kernel(dd_args r)
{
    extern __shared__ double smem[];
    __shared__ block_flags s_flags;
    const int64_t words = DEST == TO_GLOBAL ? 0 : DEST == TO_SHARED16 ? (r.nbins + 1) / 2 : r.nbins;
    char *s_bins = (char *)smem; /* bin_words() */
    E *s_edges = (E *)(s_bins + bin_bytes(words * (WEIGHTED ? 8 : 4)));
    if (threadIdx.x == 0)
        s_flags = block_flags{r.force_recount, 0};
    write_edges(r);
    if (DEST != TO_GLOBAL) {
        /* (a dump copies whole 16-byte columns: the padding words up to bin_bytes are zeroed with the bins) */
        const int64_t zeroed = !WEIGHTED && r.dump ? r.dump_cols * 4 : words;
        for (int64_t k = threadIdx.x; k < zeroed; k += blockDim.x) {
            if (WEIGHTED)
                ((double *)s_bins)[k] = 0.0;
            else
                ((unsigned *)s_bins)[k] = 0u;
        }
    }
    const E *edges = stage_edges<E>(r, s_edges);
    __syncthreads();
    count_points<T, U, WEIGHTED, DEST, E, ND>(r, edges, &s_flags);
    if (DEST == TO_SHARED) {
        __syncthreads();
        if (!WEIGHTED && r.dump) {
            dump_block(r);
        } else {
            for (int64_t k = threadIdx.x; k < r.nbins; k += blockDim.x)
                flush<WEIGHTED>(r, k, s_bins, k);
        }
    } else if (DEST == TO_SHARED16) {
        __syncthreads();
        if (threadIdx.x == 0 && r.overflow)
            r.overflow[blockIdx.x] = s_flags.overflow; /* every block writes its slot: no zeroing before the launch */
        if (threadIdx.x == 0 && r.carry)
            r.carry[(int64_t)blockIdx.x * (r.carry_cap + 1)] = (unsigned)min(s_flags.carries, (int)r.carry_cap);
        if (r.dump)
            dump_block(r);
        else
            flush16(r);
    }
}

/* The sum of the dumps: a block of SUM_COLS x SUM_ROWS threads takes
 * SUM_COLS consecutive 16-byte columns of the dumped blocks b with
 * b % gridDim.y == blockIdx.y (a warp reads 512 contiguous bytes of one),
 * each of its SUM_ROWS rows of threads every SUM_ROWS-th of those, four
 * loads in flight; the rows' partial sums meet in shared memory and one
 * thread a bin adds the total to the result -- without an atomic where
 * gridDim.y is 1: the count kernel has finished (gs_pdl_wait) and no other
 * thread writes the bin.  There (sum_writes) the result was not zeroed: the
 * thread writes the bin, its settled halves (the blocks' carry logs, 0x8000
 * each, counted by the block in shared memory) added.  (gridDim.y > 1
 * spreads few columns over the SMs: launch_priv.)  HALVES: a
 * word holds two 16-bit counts (count16.cuh; bins 2w and 2w + 1), each
 * below 0x10000, so a uint32 sum holds 65,536 blocks; else 32-bit counts,
 * summed in 64 bits. */
constexpr int SUM_COLS = 32, SUM_ROWS = 8;
template <bool HALVES> __global__ void __launch_bounds__(SUM_COLS * SUM_ROWS) histdd_sum_dumps(dd_args r, int64_t blocks)
{
    constexpr int V = HALVES ? 8 : 4; /* bins a 16-byte column */
    using A = typename std::conditional<HALVES, unsigned, unsigned long long>::type;
    __shared__ A part[SUM_ROWS][SUM_COLS * V];
    __shared__ unsigned carried[HALVES ? SUM_COLS * V : 1];
    const int col = threadIdx.x % SUM_COLS, row = threadIdx.x / SUM_COLS;
    const int64_t c = (int64_t)blockIdx.x * SUM_COLS + col;
    A acc[V];
#pragma unroll
    for (int v = 0; v < V; v++)
        acc[v] = 0;
    auto add = [&](const uint4 &q) {
        const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (HALVES) {
                acc[2 * j] += w[j] & 0xffffu;
                acc[2 * j + 1] += w[j] >> 16;
            } else {
                acc[j] += w[j];
            }
        }
    };
    const bool logs = HALVES && r.carry;
    if (logs)
        for (int t = threadIdx.x; t < SUM_COLS * V; t += blockDim.x)
            carried[t] = 0;
    gs_pdl_wait(); /* the count kernel's dumps (and settled halves) are complete and visible */
    if (logs) {
        __syncthreads();
        const int64_t first = (int64_t)blockIdx.x * SUM_COLS * V;
        for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) {
            const unsigned *log = r.carry + b * (r.carry_cap + 1);
            const unsigned m = log[0];
            for (unsigned i = 0; i < m; i++) {
                const int64_t t = (int64_t)log[1 + i] - first;
                if (t >= 0 && t < SUM_COLS * V)
                    atomicAdd(&carried[t], 1u);
            }
        }
    }
    if (c < r.dump_cols) {
        const uint4 *p = r.dump + c;
        const int64_t step = (int64_t)SUM_ROWS * gridDim.y;
        int64_t b = (int64_t)row * gridDim.y + blockIdx.y;
        for (; b + 3 * step < blocks; b += 4 * step) {
            uint4 q[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                q[j] = p[(b + j * step) * r.dump_cols];
#pragma unroll
            for (int j = 0; j < 4; j++)
                add(q[j]);
        }
        for (; b < blocks; b += step)
            add(p[b * r.dump_cols]);
    }
#pragma unroll
    for (int v = 0; v < V; v++)
        part[row][col * V + v] = acc[v];
    __syncthreads();
    for (int t = threadIdx.x; t < SUM_COLS * V; t += blockDim.x) {
        A total = 0;
#pragma unroll
        for (int j = 0; j < SUM_ROWS; j++)
            total += part[j][t];
        const int64_t k = (int64_t)blockIdx.x * SUM_COLS * V + t;
        if (k < r.nbins && r.sum_writes) {
            const unsigned long long v = (unsigned long long)total + (logs ? 0x8000ull * carried[t] : 0ull);
            if (r.out_f64)
                ((double *)r.out)[k] = (double)v;
            else
                ((unsigned long long *)r.out)[k] = v;
        } else if (k < r.nbins && total) {
            if (gridDim.y > 1) { /* (the dumped blocks split over gridDim.y: a part each) */
                if (r.out_f64)
                    atomicAdd((double *)r.out + k, (double)total);
                else
                    atomicAdd((unsigned long long *)r.out + k, (unsigned long long)total);
            } else if (r.out_f64)
                ((double *)r.out)[k] += (double)total;
            else
                ((unsigned long long *)r.out)[k] += (unsigned long long)total;
        }
    }
}

/* After a shared16 count whose flag is set: the counts again, from zero,
 * with global atomics (one block: this never runs in practice). */
template <class T, int U, class E, int ND> __global__ void __launch_bounds__(MAX_THREADS) histdd_recount(dd_args r, int64_t blocks)
{
    int any = 0;
    for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
        any |= r.overflow[b];
    if (!__syncthreads_or(any))
        return;
    for (int64_t k = threadIdx.x; k < r.nbins; k += blockDim.x) {
        if (r.out_f64)
            ((double *)r.out)[k] = 0.0;
        else
            ((unsigned long long *)r.out)[k] = 0ull;
    }
    __syncthreads();
    extern __shared__ double smem[];
    const E *edges = stage_edges<E>(r, (E *)smem);
    __syncthreads();
    count_points<T, U, false, TO_GLOBAL, E, ND>(r, edges, NULL);
}

/* Block r of a cluster keeps bins [r << sshift, (r + 1) << sshift); the
 * first cluster.sync() publishes the zeroed slices, the second makes every
 * block's adds visible before the slices are flushed. */
template <class T, int U, bool WEIGHTED, class E>
__global__ void __launch_bounds__(MAX_THREADS) histdd_cluster_kernel(dd_args r, int sshift)
{
#ifndef GS_HISTDD_NO_CLUSTERS
    using S = typename std::conditional<WEIGHTED, double, unsigned>::type;
    extern __shared__ double smem[];
    const int64_t slice = (int64_t)1 << sshift;
    S *h = (S *)smem;
    E *s_edges = (E *)(smem + (slice * sizeof(S) + 7) / 8);
    cg::cluster_group cl = cg::this_cluster();
    for (int64_t k = threadIdx.x; k < slice; k += blockDim.x)
        h[k] = 0;
    write_edges(r);
    const E *edges = stage_edges<E>(r, s_edges);
    cl.sync();
    const int64_t groups = r.n / U, step = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    auto add = [&](int64_t at, int64_t i) {
        S *dst = cl.map_shared_rank(h, (unsigned)(at >> sshift));
        if (WEIGHTED)
            atomicAdd((double *)dst + (at & (slice - 1)), r.w[i * r.wstride]);
        else
            atomicAdd((unsigned *)dst + (at & (slice - 1)), 1u);
    };
    for (int64_t g = tid; g < groups; g += step) {
        int64_t at[U];
        linear_bins<T, U, E, 0>(r, edges, g, at);
#pragma unroll
        for (int j = 0; j < U; j++)
            if (at[j] >= 0)
                add(at[j], g * U + j);
    }
    if (U > 1 && tid < r.n - groups * U) { /* the n % U last points */
        const int64_t i = groups * U + tid;
        int64_t at;
        linear_bins<T, 1, E, 0>(r, edges, i, &at);
        if (at >= 0)
            add(at, i);
    }
    cl.sync();
    const int64_t first = (int64_t)cl.block_rank() << sshift;
    for (int64_t k = threadIdx.x; k < slice && first + k < r.nbins; k += blockDim.x)
        flush<WEIGHTED>(r, first + k, h, k);
#endif
}

/* The smallest cluster size tried (a power of two up to GS_HIST_CLUSTER_MAX):
 * 2, or GPUSYNC_HISTDD_CLUSTER (a tuning knob; docs/environment.md). */
int cluster_floor()
{
    const int c = (int)gs_env_number(GS_ENV_HISTDD_CLUSTER, 2.0, NULL);
    int p = 2;
    while (p < c && p < GS_HIST_CLUSTER_MAX)
        p *= 2;
    return p;
}

/* Bytes of the edges a block keeps in shared memory as E. */
template <class E> size_t edge_bytes(const dd_args &r) { return r.edges_in_smem ? (size_t)r.nedges_total * sizeof(E) : 0; }
/* Room for a block's dynamic shared memory: the opt-in less the kernels'
 * static words (s_flags) and their alignment. */
int64_t smem_room(const gs_device_info *dev) { return dev->shared_memory_per_block_optin - 64; }

/* The result zeroed on the stream, before a count that adds to it. */
gs_status zero_out(const dd_args &r, cudaStream_t s)
{
    GS_CUDA_CHECK(cudaMemsetAsync(r.out, 0, (size_t)r.nbins * 8, s));
    return GS_OK;
}

/* The cluster launch, or GS_ERR_UNSUPPORTED_DEVICE when no cluster shape
 * fits (the caller then counts with global atomics). */
template <class T, int U, bool WEIGHTED, class E>
gs_status launch_cluster(dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    if (dev->major < 9 || !dev->cluster_launch)
        return GS_ERR_UNSUPPORTED_DEVICE;
    const size_t ebytes = edge_bytes<E>(r);
    const int64_t cell = WEIGHTED ? 8 : 4, room = smem_room(dev) - (int64_t)ebytes;
    int csize = 0, sshift = 0;
    for (int c = cluster_floor(); c <= GS_HIST_CLUSTER_MAX && !csize; c *= 2) {
        int sh = 0;
        while (((int64_t)1 << sh) * c < r.nbins)
            sh++;
        if (((int64_t)1 << sh) * cell <= room)
            csize = c, sshift = sh;
    }
    if (!csize)
        return GS_ERR_UNSUPPORTED_DEVICE;
    auto kern = histdd_cluster_kernel<T, U, WEIGHTED, E>;
    gs_status st = gs_cuda_allow_smem((const void *)kern, dev);
    if (st != GS_OK)
        return st;
    const size_t smem = (((size_t)1 << sshift) * (size_t)cell + 7) / 8 * 8 + ebytes;
    gs_cluster_config cc((unsigned)csize, MAX_THREADS, smem, s);
    cudaLaunchConfig_t &cfg = cc.cfg;
    int clusters = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, (void *)kern, &cfg));
    if (clusters < 1)
        return GS_ERR_UNSUPPORTED_DEVICE;
    const int64_t work = (r.n + MAX_THREADS * 8 - 1) / (MAX_THREADS * 8);
    int64_t grid = (int64_t)clusters * csize < work ? (int64_t)clusters * csize : work;
    const int64_t min_grid = ((r.n >> 31) + 1) * csize; /* < 2^31 points per cluster: 32-bit counters */
    if (grid < min_grid)
        grid = min_grid;
    grid = (grid + csize - 1) / csize * csize;
    if (grid > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "histogramdd: grid of %lld blocks", (long long)grid);
    cfg.gridDim = dim3((unsigned)grid);
    st = zero_out(r, s);
    if (st != GS_OK)
        return st;
    GS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, r, sshift));
    return GS_OK;
}

/* A privatized (or global) kernel's launch: its block size -- all
 * MAX_THREADS when a block of THREADS would be alone on its SM anyway --
 * and the blocks resident at once. */
struct priv_shape {
    int threads;
    int64_t resident;
};
gs_status shape_of(const void *k, size_t smem, const gs_device_info *dev, priv_shape *sh)
{
    gs_status st = gs_cuda_allow_smem(k, dev);
    if (st != GS_OK)
        return st;
    int64_t res = 0, big = 0;
    st = gs_cuda_resident_blocks(k, THREADS, smem, dev, &res);
    if (st == GS_OK && res <= dev->multiprocessors)
        st = gs_cuda_resident_blocks(k, MAX_THREADS, smem, dev, &big);
    if (st != GS_OK)
        return st;
    if (big * MAX_THREADS > res * THREADS)
        *sh = {MAX_THREADS, big};
    else
        *sh = {THREADS, res > 0 ? res : 1};
    return GS_OK;
}

template <class T, int U, bool WEIGHTED, int DEST, class E, int ND>
const void *priv_kernel()
{
    return (const void *)histdd_kernel<T, U, WEIGHTED, DEST, E, ND>;
}

/* How a block hands its unweighted shared counts to the result.  Atomics:
 * one global add per non-empty bin and block, grid x nbins of them at the
 * end of the count, all at once, at the L2's rate for atomics.  A dump:
 * each block copies its counter words to global memory (grid x nbins x 2
 * or 4 bytes, kept in L2) and histdd_sum_dumps reads them back and adds
 * each bin once: its launch (PDL) and tail, plus the bytes twice.
 * Measured (r70, H200, ncu at base clocks, 100M points; the counters' L2
 * traffic either way, so the ratio holds on other sm_90 parts):
 *   16-bit, 132 blocks x 65,536 bins (8.65M pairs): count kernel 263.7 us
 *     with atomics, 240.0 us with the dump + 8.3-9.3 us of summing: the dump
 *     saves ~15 us;
 *   32-bit, 264 blocks x 4,096 bins (1.08M pairs): count kernel 194.6 us
 *     either way + 12 us of summing (32 columns of blocks): atomics win.
 * Per (block, bin) pair: an atomic ~2.45 ns (21.2 us / 8.65M), the dump's
 * sum ~0.92 ns (8 us / 8.65M) plus its launch and tail (~3 us).  Atomics
 * are paid for non-empty pairs only -- at most n, and for uniform points
 * pairs x (1 - exp(-n / pairs)) -- the dump for every pair: dumps are taken
 * for 16-bit counters where the atomics they save cost more (1M points into
 * 256 x 256 bins on 123 blocks fill 0.94M of 8.1M pairs: atomics).  A
 * 32-bit pair costs the dump twice the bytes and its atomic the same, and
 * the 64 x 64 case gained nothing: 32-bit counters keep their atomics.
 * GPUSYNC_HISTDD_FLUSH 1 / 2 forces atomics / dumps (tests, A/B). */
constexpr double ATOMIC_NS = 2.45, DUMP_NS = 0.92, DUMP_FIXED_NS = 3000.0;
bool dumps(int64_t grid, int64_t nbins, int64_t n, bool halves)
{
    const int force = (int)gs_env_number(GS_ENV_HISTDD_FLUSH, 0.0, NULL);
    if (force == 1 || force == 2)
        return force == 2;
    if (!halves)
        return false;
    const double pairs = (double)grid * (double)nbins;
    const double filled = pairs * -expm1(-(double)n / pairs); /* expected non-empty pairs (uniform points) */
    return filled * ATOMIC_NS > pairs * DUMP_NS + DUMP_FIXED_NS;
}

template <class T, int U, bool WEIGHTED, int DEST, class E, int ND>
gs_status launch_priv(dd_args &r, size_t smem, const priv_shape &sh, const gs_device_info *dev, cudaStream_t s)
{
    const int64_t work = (r.n + sh.threads * 8 - 1) / (sh.threads * 8);
    int64_t grid = sh.resident < work ? sh.resident : (work > 0 ? work : 1);
    if (DEST != TO_SHARED16) {
        const int64_t min_blocks = (r.n >> 31) + 1; /* < 2^31 points per block: 32-bit counters */
        if (grid < min_blocks)
            grid = min_blocks;
    }
    if (grid > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "histogramdd: grid of %lld blocks", (long long)grid);
    /* shared16: a half can reach 0xffff only in a block that counts that
     * many points -- then the flag and the recount behind the count */
    const int64_t step = grid * sh.threads, groups = r.n / U;
    const int64_t per_block = (int64_t)sh.threads * (((groups + step - 1) / step) * U + 1);
    const bool flag = DEST == TO_SHARED16 && (gs_count16_may_overflow(per_block) || r.force_recount);
    const bool dump = !WEIGHTED && DEST != TO_GLOBAL && dumps(grid, r.nbins, r.n, DEST == TO_SHARED16);
    const int64_t cols = dump ? ((DEST == TO_SHARED16 ? (r.nbins + 1) / 2 : r.nbins) + 3) / 4 : 0;
    /* the dumped blocks split over gridDim.y where the columns alone give an SM no block (r71: 32 columns of
     * blocks summed 4,096 32-bit bins of 264 blocks in 11.7 us, 32 x 9 in 4.7 us); where they do not, the sum
     * writes every bin and the result needs no zeroing before the count (r107: a memset's 2-4 us of host time
     * before the launch, and its own slot on the stream) -- shared16's settled halves then go to the blocks'
     * carry logs (settle16) */
    const int64_t xb = cols > SUM_COLS ? (cols + SUM_COLS - 1) / SUM_COLS : 1;
    int64_t yb = ((int64_t)dev->multiprocessors + xb - 1) / xb;
    const int64_t most = (grid + 4 * SUM_ROWS - 1) / (4 * SUM_ROWS); /* four loads a thread at least */
    yb = yb < most ? yb : most;
    yb = yb < 1 ? 1 : yb > 65535 ? 65535 : yb;
    r.sum_writes = dump && yb == 1;
    r.carry_cap = r.sum_writes && DEST == TO_SHARED16 ? per_block / 0x8000 + 1 : 0;
    /* one scratch allocation: the blocks' overflow slots, the dump and the carry logs (whole 16-byte words) */
    const int64_t slots = flag ? (grid + 3) / 4 : 0, dumped = grid * cols;
    const int64_t logs = r.carry_cap ? (grid * (r.carry_cap + 1) + 3) / 4 : 0;
    uint4 *d_scratch = NULL;
    gs_status st = GS_OK;
    r.overflow = NULL;
    r.dump = NULL;
    r.carry = NULL;
    r.dump_cols = cols;
    if (flag || dump)
        GS_CUDA_CHECK(gs_malloc_async(&d_scratch, (size_t)(slots + dumped + logs) * sizeof(uint4), s));
    if (flag)
        r.overflow = (int *)d_scratch;
    if (dump)
        r.dump = d_scratch + slots;
    if (logs)
        r.carry = (unsigned *)(d_scratch + slots + dumped);
    if (!r.sum_writes)
        GS_GOTO(zero_out(r, s));
    {
        void *args[] = {&r};
        GS_CUDA_GOTO(cudaLaunchKernel(priv_kernel<T, U, WEIGHTED, DEST, E, ND>(), dim3((unsigned)grid),
                                      dim3(sh.threads), args, smem, s));
        if (dump) {
            GS_GOTO(gs_launch_pdl(histdd_sum_dumps<DEST == TO_SHARED16>, dim3((unsigned)xb, (unsigned)yb),
                                  dim3(SUM_COLS * SUM_ROWS), 0, s, dev, r, grid));
        }
        if (flag) { /* (after the sum: the recount starts the result again from zero) */
            void *rargs[] = {&r, &grid};
            GS_CUDA_GOTO(cudaLaunchKernel((const void *)histdd_recount<T, U, E, ND>, dim3(1), dim3(MAX_THREADS), rargs,
                                          edge_bytes<E>(r), s));
        }
    }
fail:
    gs_free_async(d_scratch, s, &st);
    return st;
}

/* The counter width of unweighted shared bins: 16 bits when only they fit,
 * or when they keep more threads resident (GPUSYNC_HISTDD_COUNTER: 16 or
 * 32 forces one where it fits). */
template <class T, int U, class E, int ND>
gs_status launch_counts(dd_args &r, const gs_device_info *dev, cudaStream_t s, bool *done)
{
    const size_t eb = edge_bytes<E>(r);
    const size_t smem32 = bin_bytes(r.nbins * 4) + eb, smem16 = bin_bytes((r.nbins + 1) / 2 * 4) + eb;
    const int64_t room = smem_room(dev);
    const bool fit32 = (int64_t)smem32 <= room, fit16 = (int64_t)smem16 <= room;
    *done = fit16;
    if (!fit16)
        return GS_OK;
    const int force = (int)gs_env_number(GS_ENV_HISTDD_COUNTER, 0.0, NULL);
    priv_shape s16, s32 = {0, 0};
    gs_status st = shape_of(priv_kernel<T, U, false, TO_SHARED16, E, ND>(), smem16, dev, &s16);
    if (st == GS_OK && fit32)
        st = shape_of(priv_kernel<T, U, false, TO_SHARED, E, ND>(), smem32, dev, &s32);
    if (st != GS_OK)
        return st;
    r.force_recount = force == 1;
    const bool use16 = !fit32 || force == 16 || force == 1 ||
                       (force != 32 && s16.threads * s16.resident > s32.threads * s32.resident);
    r.ring_off = 0;
    if (!use16)
        return launch_priv<T, U, false, TO_SHARED, E, ND>(r, smem32, s32, dev, s);
    /* the load ring where the count has it (ND known, 16-byte loads) and a block has room for it beside its
     * bins and edges -- and its SM holds no second block either way (the ring costs no residency) */
    size_t smem = smem16;
    const size_t ring = (size_t)RING * ND * s16.threads * 16;
    if (loads_ahead<T, U, E, ND, TO_SHARED16>() && dev->major >= 8 /* cp.async */ &&
        (int64_t)(bin_bytes((int64_t)smem16) + ring) <= room && s16.resident <= dev->multiprocessors &&
        gs_env_number(GS_ENV_HISTDD_RING, 1.0, NULL) != 0) {
        r.ring_off = (int64_t)bin_bytes((int64_t)smem16);
        smem = (size_t)r.ring_off + ring;
    }
    return launch_priv<T, U, false, TO_SHARED16, E, ND>(r, smem, s16, dev, s);
}

template <class T, int U, class E, int ND> gs_status launch_e(dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    if (!r.w) {
        bool done = false;
        gs_status st = launch_counts<T, U, E, ND>(r, dev, s, &done);
        if (st != GS_OK || done)
            return st;
    } else {
        const size_t smem = bin_bytes(r.nbins * 8) + edge_bytes<E>(r);
        if ((int64_t)smem <= smem_room(dev)) {
            priv_shape sh;
            gs_status st = shape_of(priv_kernel<T, U, true, TO_SHARED, E, ND>(), smem, dev, &sh);
            return st != GS_OK ? st : launch_priv<T, U, true, TO_SHARED, E, ND>(r, smem, sh, dev, s);
        }
    }
    /* the bins spread over a cluster's shared memory, else global atomics */
    gs_status st = r.w ? launch_cluster<T, U, true, E>(r, dev, s) : launch_cluster<T, U, false, E>(r, dev, s);
    if (st != GS_ERR_UNSUPPORTED_DEVICE)
        return st;
    const size_t smem = edge_bytes<E>(r);
    priv_shape sh;
    st = r.w ? shape_of(priv_kernel<T, U, true, TO_GLOBAL, E, ND>(), smem, dev, &sh)
             : shape_of(priv_kernel<T, U, false, TO_GLOBAL, E, ND>(), smem, dev, &sh);
    if (st != GS_OK)
        return st;
    return r.w ? launch_priv<T, U, true, TO_GLOBAL, E, ND>(r, smem, sh, dev, s)
               : launch_priv<T, U, false, TO_GLOBAL, E, ND>(r, smem, sh, dev, s);
}

/* float32 coordinates binned in float32 when every edge is a float32 value
 * and they sit in shared memory; float32 / float64 2-D (histogram2d) with
 * the dimension loop unrolled. */
template <class T, int U> gs_status launch(dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    if constexpr (std::is_same<T, float>::value) {
        if (r.edges_in_smem && r.edges_f32)
            return r.ndim == 2 ? launch_e<T, U, float, 2>(r, dev, s) : launch_e<T, U, float, 0>(r, dev, s);
    }
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
        if (r.ndim == 2)
            return launch_e<T, U, double, 2>(r, dev, s);
    }
    return launch_e<T, U, double, 0>(r, dev, s);
}

/* float32 / float64 coordinates that are contiguous and 16-byte aligned:
 * 16-byte loads (4 / 2 points a load). */
bool vectorizable(const dd_args &r)
{
    for (int d = 0; d < r.ndim; d++)
        if (r.cstride[d] != 1 || ((uintptr_t)r.coord[d] & 15) != 0)
            return false;
    return true;
}

gs_status launch_dtype(gs_dtype dt, dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    switch (dt) {
    case GS_BOOL: return launch<gs_bool8, 1>(r, dev, s);
    case GS_INT8: return launch<int8_t, 1>(r, dev, s);
    case GS_UINT8: return launch<uint8_t, 1>(r, dev, s);
    case GS_INT16: return launch<int16_t, 1>(r, dev, s);
    case GS_UINT16: return launch<uint16_t, 1>(r, dev, s);
    case GS_INT32: return launch<int32_t, 1>(r, dev, s);
    case GS_UINT32: return launch<uint32_t, 1>(r, dev, s);
    case GS_INT64: return launch<int64_t, 1>(r, dev, s);
    case GS_UINT64: return launch<uint64_t, 1>(r, dev, s);
    case GS_FLOAT16: return launch<gs_f16, 1>(r, dev, s);
    case GS_FLOAT32: return vectorizable(r) ? launch<float, 4>(r, dev, s) : launch<float, 1>(r, dev, s);
    case GS_FLOAT64: return vectorizable(r) ? launch<double, 2>(r, dev, s) : launch<double, 1>(r, dev, s);
    default: return gs_fail(GS_ERR_TYPE, "histogramdd: unsupported dtype %d", (int)dt);
    }
}

} // namespace

extern "C" gs_status gs_cuda_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                         const gs_array *weights, gs_array *out, gs_array *edges_out, void *stream)
{
    if (ndim < 1 || ndim > GS_HISTDD_MAX_DIMS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: %d dimensions (1 to %d are supported)", ndim,
                       GS_HISTDD_MAX_DIMS);
    const int device = coords[0].device, on_host = device == GS_HOST;
    const int64_t n = coords[0].length;
    dd_args r;
    memset(&r, 0, sizeof r);
    r.ndim = ndim;
    r.n = n;
    int64_t nbins = 1, etotal = 0;
    for (int d = 0; d < ndim; d++) {
        if (coords[d].length != n || coords[d].device != device || coords[d].dtype != coords[0].dtype)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: coordinates must have one length, dtype and device");
        if (on_host && coords[d].stride != 1 && n > 1)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: host coordinates must be contiguous");
        if (nedges[d] < 2)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: dimension %d has %lld edges", d,
                           (long long)nedges[d]);
        if (nbins > INT64_MAX / (nedges[d] - 1))
            return gs_fail(GS_ERR_OVERFLOW, "histogramdd: too many bins");
        r.nedges[d] = nedges[d];
        r.eoff[d] = etotal;
        r.scale[d] = gs_histdd_scale(edges + etotal, nedges[d]);
        r.cstride[d] = on_host ? 1 : coords[d].stride;
        etotal += nedges[d];
        nbins *= nedges[d] - 1;
    }
    for (int d = ndim - 1; d >= 0; d--) /* C order */
        r.bstride[d] = d == ndim - 1 ? 1 : r.bstride[d + 1] * (nedges[d + 1] - 1);
    r.nbins = nbins;
    r.nedges_total = etotal;
    r.edges_f32 = 1;
    for (int64_t k = 0; k < etotal && r.edges_f32; k++)
        r.edges_f32 = (double)(float)edges[k] == edges[k];
    r.edges_in_smem = etotal <= EDGES_SMEM;
    const bool bin_f32 = coords[0].dtype == GS_FLOAT32 && r.edges_in_smem && r.edges_f32; /* (launch's choice) */
    for (int d = 0; d < ndim; d++)
        gs_guess_window(edges + r.eoff[d], nedges[d], r.scale[d], bin_f32 ? NULL : r.gd + 4 * d,
                     bin_f32 ? r.gf + 4 * d : NULL);
    r.out_f64 = !weights && out->dtype == GS_FLOAT64;
    /* unweighted device counts may be float64 (NumPy's result type: no cast afterwards; exact below 2^53) */
    if (out->device != device || out->length != nbins || (nbins > 1 && out->stride != 1) ||
        !(out->dtype == GS_FLOAT64 || (!weights && out->dtype == GS_INT64)) ||
        (on_host && !weights && out->dtype != GS_INT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: out must be %lld contiguous %s next to the coordinates",
                       (long long)nbins, weights ? "float64" : "int64 (float64 on the device)");
    if (weights && (weights->dtype != GS_FLOAT64 || weights->length != n || weights->device != device ||
                    (on_host && weights->stride != 1 && n > 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: weights must be %lld float64 next to the coordinates",
                       (long long)n);
    if (edges_out && (edges_out->device != out->device || edges_out->length != etotal || edges_out->stride != 1 ||
                      edges_out->dtype != GS_FLOAT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: edges_out must be %lld contiguous float64 next to out",
                       (long long)etotal);
    gs_cuda_call call(device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const size_t es = gs_dtype_size(coords[0].dtype);
    void *d_edges = NULL, *d_out = NULL, *d_w = NULL;
    void *d_coord[GS_HISTDD_MAX_DIMS] = {NULL};
    r.edges = (const double *)gs_cuda_constants(edges, (size_t)etotal * 8, call.ordinal, s);
    if (!r.edges) {
        GS_CUDA_GOTO(gs_malloc_async(&d_edges, (size_t)etotal * 8, s));
        GS_CUDA_GOTO(cudaMemcpyAsync(d_edges, edges, (size_t)etotal * 8, cudaMemcpyHostToDevice, s));
        r.edges = (const double *)d_edges;
    }
    if (on_host) { /* stage coordinates, weights and the result */
        for (int d = 0; d < ndim && n > 0; d++) {
            GS_CUDA_GOTO(gs_malloc_async(&d_coord[d], (size_t)n * es, s));
            GS_GOTO(gs_cuda_h2d(d_coord[d], coords[d].data, (size_t)n * es, s));
        }
        if (weights && n > 0) {
            GS_CUDA_GOTO(gs_malloc_async(&d_w, (size_t)n * 8, s));
            GS_GOTO(gs_cuda_h2d(d_w, weights->data, (size_t)n * 8, s));
        }
        GS_CUDA_GOTO(gs_malloc_async(&d_out, (size_t)nbins * 8, s));
    }
    for (int d = 0; d < ndim; d++)
        r.coord[d] = on_host ? (const char *)d_coord[d] : (const char *)coords[d].data;
    r.w = weights ? (on_host ? (const double *)d_w : (const double *)weights->data) : NULL;
    r.wstride = weights ? (on_host ? 1 : weights->stride) : 0;
    r.out = on_host ? d_out : out->data;
    /* the edges: by the count's block 0 on the device, else copied here */
    if (edges_out && on_host)
        memcpy(edges_out->data, edges, (size_t)etotal * 8);
    else if (edges_out && n > 0)
        r.edges_out = (double *)edges_out->data;
    else if (edges_out) /* (no points: no count kernel; the table is on the device already) */
        GS_CUDA_GOTO(cudaMemcpyAsync(edges_out->data, r.edges, (size_t)etotal * 8, cudaMemcpyDeviceToDevice, s));
    if (n > 0) { /* (each launch zeroes the result where its count adds to it) */
        st = launch_dtype(coords[0].dtype, r, dev, s);
        if (st != GS_OK)
            goto fail;
    } else {
        GS_GOTO(zero_out(r, s));
    }
    /* (the pageable edges were read when cudaMemcpyAsync returned: device arrays need no wait) */
    if (on_host)
        GS_GOTO(gs_cuda_d2h(out->data, d_out, (size_t)nbins * 8, s));
fail:
    for (int d = 0; d < ndim; d++)
        if (d_coord[d])
            cudaFreeAsync(d_coord[d], s);
    if (d_w)
        cudaFreeAsync(d_w, s);
    if (d_out)
        cudaFreeAsync(d_out, s);
    if (d_edges)
        cudaFreeAsync(d_edges, s);
    return st;
}
