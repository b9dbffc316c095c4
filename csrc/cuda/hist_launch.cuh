/*
 * hist_launch.cuh -- what the histogram dispatcher (hist.cu) and its strategies
 * (hist_*.cu) share: the launch shape, the launchers, and binning on the
 * device (the bin tables in shared memory, the per-dtype bin of a value, a
 * weight as double).
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_HIST_LAUNCH_CUH
#define GPUSYNC_CUDA_HIST_LAUNCH_CUH

#include "../common/binning.h"
#include "dtypes.cuh"
#include "elements.cuh"
#include "runtime.cuh"

#include <stdio.h>

/* Equal-width edges a kernel writes from their formula (NULL edges: none);
 * float32 when e32. */
struct gs_hist_formula_edges {
    gs_uniform u;
    void *edges;
    int64_t stride;
    int e32;
};

/* Launch shape of one strategy, computed by the dispatcher. */
struct gs_hist_launch {
    gs_binner binner;     /* edges: device pointer when kind == EDGES */
    const void *x;        /* device pointer */
    int64_t n, xstride;   /* elements, stride in elements */
    int xdtype;
    const void *w;        /* device pointer or NULL */
    int64_t wstride;
    int wdtype;
    void *out;            /* int64 counts (unsigned long long atomics) or double sums */
    cudaStream_t stream;
    const gs_device_info *dev;
    /* NULL, or (bincount's first count: 16/32-bit or int64 integers on DIRECT bins
     * from 0, hist_small.cu) two device words, 0 and ~0 before the count,
     * where the kernel leaves the largest x (~0 when some x < 0; atomicMax)
     * and the smallest (atomicMin; see hist_int_kernel) */
    unsigned long long *top;
    /* Nonzero when hist.cu lets the shared strategy's kernels take the fused
     * form (gs_hist_fin, below): the counts are not zeroed yet, and a kernel
     * that cannot fuse declines (launches nothing) so that the dispatcher
     * zeroes them and comes back the usual way.  fuse_edges: the edges the
     * fused kernel writes too. */
    int fuse;
    gs_hist_formula_edges fuse_edges;
};

gs_status gs_hist_global_launch(const gs_hist_launch *l);
gs_status gs_hist_shared_launch(const gs_hist_launch *l);
gs_status gs_hist_warp_launch(const gs_hist_launch *l);
gs_status gs_hist_cluster_launch(const gs_hist_launch *l);
/* `shared` with 16-bit halves (unweighted; gs_hist_halves_fit): hist_halves.cu */
gs_status gs_hist_halves_launch(const gs_hist_launch *l);
/* hist_small.cu's fast paths (8-bit data, small-range integers, floats on
 * equal-width bins), when they apply: 1 and *st set; else 0 -- also when
 * l->fuse asked for the fused form and it did not fit (*declined, nothing
 * launched). */
int gs_hist_small_try(const gs_hist_launch *l, gs_status *st, int *declined);
/* Strategy `shared` in the fused form (l->fuse set, gs_hist_fin): the fast
 * paths or the generic kernel in one launch that writes every result: 1 and
 * *st set; 0 when it did not fit (nothing launched: zero the counts and take
 * gs_hist_shared_launch). */
int gs_hist_shared_fused(const gs_hist_launch *l, gs_status *st);
/* Largest number of bins the cluster strategy can hold on this device. */
int64_t gs_hist_cluster_max_bins(const gs_device_info *dev, int weighted);

/* Blocks for a grid-stride kernel: at most `resident` (what fits on the GPU
 * at once), no more than the work needs, and enough that no block sees more
 * than GS_HIST_MAX_ELEMS_PER_BLOCK elements (32-bit shared counters). */
int64_t gs_hist_grid(const gs_hist_launch *l, int64_t resident, int threads);

/* log2 of the replicas of the launch's bins in one block's shared memory
 * (R copies laid out [bin][R], as many as GS_HIST_SMEM_BUDGET holds, capped
 * by GPUSYNC_HIST_REPLICAS); -1 when not even one copy fits. */
int gs_hist_replica_shift(const gs_hist_launch *l);

/* The bin map of the ends below: the result a replica row adds to.  The
 * identity (every kernel but the byte kernel, hist_smem.cu), or a table
 * (gs_bin_table: the byte kernel counts the 256 raw bytes and adds each
 * byte's count to the bin the binner gives it, -1: to none). */
struct gs_bin_same {
    static constexpr bool identity = true;
    __device__ int operator()(int k) const { return k; }
};
struct gs_bin_table {
    static constexpr bool identity = false;
    const int *bin; /* shared memory */
    __device__ int operator()(int k) const { return bin[k]; }
};

/* After the block's last update: its R = 1 << rshift replicas of nb bins
 * (layout [bin][R]) summed and added to out.  P threads per bin (a power of
 * two up to R, as many as the block holds for nb bins: 4 for 256 bins of 32
 * replicas on 1024 threads) each sum R / P replicas, starting from a
 * rotation that puts a warp's reads in 32 banks (32 replicas of 4-byte
 * counters; fewer replicas or 8-byte sums meet 2-4-way conflicts, as the
 * one-thread merge did), and a shuffle over those P
 * lanes adds them.  One thread per bin summing all 32 replicas left the
 * block waiting on 32 dependent shared loads at the end of every call.  The
 * first thing after the barrier is gs_pdl_wait: the shared strategies launch
 * as programmatic dependents of the kernel that zeroes out (hist.cu).
 * gs_hist_merge_each: the P-thread sums alone, put(result, sum) for each bin
 * (hist_small.cu's one-launch end stores them).  With a bin map M (the byte
 * kernel's rows are the 256 raw bytes, each adding to the bin the binner
 * gives it): the rows of a warp that map to one result are summed over the
 * warp first (a segmented suffix sum on the shuffles over runs of rows with
 * equal results, as equal-width bins and edges give), so that put sees a
 * result once a warp instead of once a byte.  64 bins over (0, 256), H200
 * graph replay (benchmarks/probes/u8_package.py; r209 before, r212 after,
 * benchmarks/results/u8_fold_H200_r212_H100_r213.txt): 4 MiB 12.7 -> 8.7
 * us, 8 MiB 13.4 -> 9.2, 32 MiB 18.0 -> 14.1 -- each block had added 4
 * counts to every bin, 4 x 128-132 global atomics a bin.  Other maps stay
 * right: a run is consecutive rows of one result. */
template <class C, class F, class M = gs_bin_same>
__device__ __forceinline__ void gs_hist_merge_each(const C *h, int nb, int rshift, F &&put, M map = M())
{
    const int R = 1 << rshift;
    int lp = 0; /* log2 P */
    while ((1 << lp) < R && lp < 5 && ((int64_t)nb << (lp + 1)) <= (int64_t)blockDim.x) /* (P <= 32: a warp) */
        lp++;
    const int P = 1 << lp, per = R >> lp;
    const int64_t slots = (int64_t)nb << lp;
    for (int64_t base = 0; base < slots; base += blockDim.x) { /* the same trips for every lane: the shuffles */
        const int64_t idx = base + threadIdx.x;
        const int k = (int)(idx >> lp), p = (int)(idx & (P - 1));
        C acc = 0;
        if (k < nb)
            for (int j = 0; j < per; j++)
                acc += h[((int64_t)k << rshift) + ((p * per + j + k) & (R - 1))];
        for (int off = P >> 1; off > 0; off >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if constexpr (M::identity) {
            if (k < nb && p == 0)
                put(k, acc);
        } else {
            /* groups of P lanes hold a row each; a group ends a run where the next group's result differs */
            const unsigned lane = threadIdx.x & 31u;
            const int r = k < nb ? map(k) : -1;
            const int next = __shfl_down_sync(0xffffffffu, r, P), prev = __shfl_up_sync(0xffffffffu, r, P);
            bool tail = lane + P >= 32u || next != r;
            for (int off = P; off < 32; off <<= 1) { /* each group: its row and the rest of its run */
                const C more = __shfl_down_sync(0xffffffffu, acc, off);
                const bool ends = __shfl_down_sync(0xffffffffu, tail, off);
                if (!tail && lane + off < 32u) {
                    acc += more;
                    tail = ends;
                }
            }
            if (k < nb && p == 0 && r >= 0 && (lane < (unsigned)P || prev != r)) /* the run's first row */
                put(r, acc);
        }
    }
}
template <class C, class O, class M = gs_bin_same>
__device__ __forceinline__ void gs_hist_merge(const C *h, int nb, int rshift, O *out, M map = M())
{
    __syncthreads();
    gs_pdl_wait();
    gs_hist_merge_each(
        h, nb, rshift,
        [&](int r, C acc) {
            if (acc != 0)
                atomicAdd(out + r, (O)acc);
        },
        map);
}

/* How a shared-strategy histogram kernel ends (issue 13: a device histogram
 * in one launch, no zeroing kernel ahead of it):
 *   GS_FIN_MERGE  the block adds its counts into counts zeroed by hist_init
 *                 (gs_hist_merge; the kernel runs as that kernel's
 *                 programmatic dependent);
 *   GS_FIN_STORE  a grid of one block stores every one of the `nb` results;
 *   GS_FIN_ADD    every block adds its counts into the scratch buffer's
 *                 accumulators (zero at rest, GS_SCRATCH_ACC, runtime.cuh),
 *                 and the block that draws the last ticket (GS_SCRATCH_TICKET)
 *                 stores the results and zeroes the accumulators and the
 *                 ticket again -- the last block's work is nb words, whatever
 *                 the grid.
 * Block 0 also writes the equal-width edges when asked.  A fused kernel
 * (STORE, ADD) is launched without the programmatic-dependent attribute:
 * nothing runs ahead of it.
 * (Measured and dropped: each block storing its counts for the last block to
 * add -- 16,384 partial counts cost that block ~4 us: uint8 1 MiB 33.0
 * against 28.5 us a call with the accumulators, int64 10^6 on the generic
 * kernel 36.7 against 32.6; no case was faster; H200, r171,
 * benchmarks/results/fuse_ends_H200_r171.txt.  And under capture, where
 * ADD has no scratch buffer: each block storing its counts as a row for a
 * second kernel to add, in place of hist_init and MERGE's atomics -- the
 * rows' kernel waits for the count's last block, while hist_init runs
 * hidden ahead of the count: uint8 256 bins 32 MiB 16.0 against 14.3 us,
 * float32 10^7 18.9 against 16.8; H200, r211,
 * benchmarks/results/capture_ab_H200_r210_r211.txt.) */
enum { GS_FIN_MERGE = 0, GS_FIN_STORE = 1, GS_FIN_ADD = 2 };
struct gs_hist_fin {
    void *acc;        /* ADD: nb accumulators of the output's type, zero at rest */
    unsigned *ticket; /* ADD */
    int64_t nb;
    int on;
    gs_hist_formula_edges e;
};

/* The fused end (STORE, ADD) of a kernel, out of line: inlined, it made the
 * counting loops of the 32-register kernels spill.  h holds nbh bins (R =
 * 1 << rshift replicas of the counter type C); the results have f.nb bins of
 * the output's type O (unsigned long long counts, double sums).  The 8-bit
 * kernel counts 256 bins into up to 256 or more results: the ones past its
 * bins are zero.  With a bin map (the byte kernel's raw bytes) a one-block
 * grid zeroes every result and adds to them, as the blocks of ADD add to the
 * accumulators. */
template <class C, class O, class M = gs_bin_same>
__device__ __noinline__ void gs_hist_fused_end(const C *h, int nbh, int rshift, O *out, const gs_hist_fin f,
                                               M map = M())
{
    const int64_t nb = f.nb;
    if (blockIdx.x == 0 && f.e.edges)
        for (int64_t i = threadIdx.x; i <= f.e.u.nbins; i += blockDim.x)
            gs_formula_edge_put(&f.e.u, f.e.edges, f.e.e32, f.e.stride, i);
    if (f.on == GS_FIN_STORE && !M::identity) /* one block: zero every result, then add to them */
        for (int64_t k = threadIdx.x; k < nb; k += blockDim.x)
            out[k] = 0;
    __syncthreads();
    if (f.on == GS_FIN_STORE && M::identity) {
        gs_hist_merge_each(h, nbh, rshift, [&](int k, C v) {
            if (k < nb)
                out[k] = (O)v;
        });
        for (int64_t k = nbh + threadIdx.x; k < nb; k += blockDim.x) /* results past the kernel's bins */
            out[k] = 0;
        return;
    }
    O *const acc = f.on == GS_FIN_STORE ? out : (O *)f.acc;
    gs_hist_merge_each(
        h, nbh, rshift,
        [&](int r, C v) {
            if (r < nb && v != 0)
                atomicAdd(acc + r, (O)v);
        },
        map);
    if (f.on == GS_FIN_STORE)
        return;
    __threadfence(); /* this block's additions are visible before its ticket is */
    __syncthreads();
    /* (the block's vote, not a __shared__ flag: static shared memory in every
     * kernel here would pass GS_HIST_STATIC_SMEM, the budget of the replicas) */
    const int last = __syncthreads_or(threadIdx.x == 0 && atomicAdd(f.ticket, 1u) == gridDim.x - 1);
    if (!last)
        return;
    __threadfence(); /* and the last block reads the sums only after every ticket */
    for (int64_t k = threadIdx.x; k < nb; k += blockDim.x) {
        out[k] = __ldcg(acc + k);
        acc[k] = 0; /* zero at rest again */
    }
    if (threadIdx.x == 0)
        *f.ticket = 0; /* ready for the next use of the scratch buffer */
}

/* The end of a kernel: gs_hist_merge into zeroed counts, or the fused form
 * (never in bincount's first count: CAN_FUSE false). */
template <bool CAN_FUSE = true, class C, class O, class M = gs_bin_same>
__device__ __forceinline__ void gs_hist_finish(const C *h, int nbh, int rshift, O *out, const gs_hist_fin &f,
                                               M map = M())
{
    if (CAN_FUSE && f.on != GS_FIN_MERGE)
        gs_hist_fused_end(h, nbh, rshift, out, f, map);
    else
        gs_hist_merge(h, nbh, rshift, out, map);
}

/* Launch a histogram kernel whose last parameter is a gs_hist_fin, on g
 * blocks of `threads` (results of 8 bytes: counts or sums).  The usual way
 * (l->fuse 0): a programmatic dependent of hist_init, adding into the zeroed
 * counts.  When the dispatcher asks for the fused form (l->fuse) and the
 * bins fit the scratch buffer's accumulators: one plain launch that writes
 * every result (STORE on one block, else ADD).  Where they do not fit, or no
 * scratch buffer is at hand for more than one block (graph capture: a graph
 * must not keep a thread's buffer), *declined and nothing launched: the
 * dispatcher zeroes the counts and comes back the usual way. */
template <class... K, class... A>
static gs_status gs_hist_launch_fin(const gs_hist_launch *l, void (*kern)(K...), int64_t g, int threads, size_t smem,
                                    int *declined, A &&...args)
{
    gs_hist_fin f{};
    if (!l->fuse)
        return gs_launch_pdl(kern, dim3((unsigned)g), dim3(threads), smem, l->stream, l->dev,
                             static_cast<A &&>(args)..., f);
    f.nb = l->binner.nbins;
    f.e = l->fuse_edges;
    f.on = g == 1 ? GS_FIN_STORE : GS_FIN_ADD;
    void *scratch = NULL;
    const int ord = l->dev->ordinal;
    if (f.nb > GS_SCRATCH_ACC_WORDS ||
        (f.on == GS_FIN_ADD && !(scratch = gs_cuda_scratch(ord, l->stream, GS_SCRATCH_DATA)))) {
        *declined = 1;
        return GS_OK;
    }
    if (scratch) {
        f.ticket = (unsigned *)((char *)scratch + GS_SCRATCH_TICKET);
        f.acc = (char *)scratch + GS_SCRATCH_ACC;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)g);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = l->stream;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, kern, static_cast<A &&>(args)..., f);
    if (scratch)
        gs_cuda_scratch_done(ord, l->stream); /* (on failure too: the use is ordered either way) */
    GS_CUDA_CHECK(e);
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] histogram: one launch (%s; %lld blocks, %lld bins)\n",
                g == 1 ? "one block stores the counts" : "the blocks add into the accumulators", (long long)g,
                (long long)f.nb);
    return GS_OK;
}

/*
 * Per-block bin tables in shared memory, filled once at kernel start by
 * gs_bins_prepare(): the 8-bit lookup table, or the edges (as double and as
 * float) when there are at most GS_HIST_SMEM_EDGES of them.  Equal-width
 * edges are computed from the verified formula, so no edge array ever has to
 * be copied from the host for them.
 */
struct gs_smem_bins {
    union {
        int32_t lut[256];
        double e[GS_HIST_SMEM_EDGES];
    };
    float ef[GS_HIST_SMEM_EDGES];
};

__host__ __device__ __forceinline__ bool gs_edges_in_smem(const gs_binner &b)
{
    return (b.kind == GS_BINS_UNIFORM || b.kind == GS_BINS_EDGES) && b.nbins < GS_HIST_SMEM_EDGES;
}

/* Ends with __syncthreads(). */
__device__ __forceinline__ void gs_bins_prepare(const gs_binner &b, gs_smem_bins &s)
{
    if (b.kind == GS_BINS_LUT) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            s.lut[i] = b.lut[i];
    } else if (gs_edges_in_smem(b)) {
        for (int i = threadIdx.x; i <= b.nbins; i += blockDim.x) {
            const double e = b.kind == GS_BINS_UNIFORM ? gs_uniform_edge(&b, i) : b.edges[i];
            s.e[i] = e;
            s.ef[i] = (float)e; /* exact whenever edges_f32 (only then used) */
        }
    }
    __syncthreads();
}

/* Correct an estimate k of x's bin with the edges e[0..n] (e[0] <= x <= e[n]):
 * the result is the k with e[k] <= x < e[k+1], or n - 1 for x == e[n].
 * Taken only near an edge (rarely), so kept out of line: the hot loops stay
 * small and within their register budget. */
template <class E>
__device__ __noinline__ int gs_correct(const E *e, int n, E x, int k)
{
    k = k < 0 ? 0 : (k > n - 1 ? n - 1 : k);
    int lo, hi; /* e[lo] <= x < e[hi] (or x == e[n], hi == n) */
    if (x < e[k]) {
        if (k > 0 && x >= e[k - 1])
            return k - 1;
        lo = 0;
        hi = k;
    } else {
        if (k >= n - 1 || x < e[k + 1])
            return k;
        lo = k + 1;
        hi = n;
    }
    while (hi - lo > 1) { /* a bad estimate: binary search, log2(n) steps */
        const int mid = lo + ((hi - lo) >> 1);
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo < n ? lo : n - 1;
}

/* Near an edge (rare), equal-width bins without the edges in shared memory
 * (more than GS_HIST_SMEM_EDGES - 1 bins): the estimate k corrected against
 * the edges' formula (gs_formula_correct: NumPy's edges, compared in double,
 * which for float32 edges and values is the float comparison). */
static __device__ __noinline__ int64_t gs_correct_formula(gs_uniform u, double x, int k)
{
    const int n = (int)u.nbins;
    return gs_formula_correct(&u, x, k < 0 ? 0 : (k > n - 1 ? n - 1 : k));
}

/* Equal-width bins: estimate f = (x - e(0)) * scale.  Farther than `margin`
 * from an integer, floor(f) is the bin (the host bounded the estimate's
 * error and the edges' offsets from their ideal positions, for any bin
 * count); near an integer (rare) the edges in shared memory settle it, or
 * past GS_HIST_SMEM_EDGES - 1 bins their formula (gs_correct_formula).  floor() by adding 2^23
 * (2^52) rounding down: no conversion instruction on the common path.
 * FMA: the estimate as one fused multiply-add x * scale + (-lo * scale)
 * (b.fma_f: the host widened the margin for the rounding of -lo * scale);
 * one instruction less per element where binning is issue-bound
 * (hist_small.cu).  ANY_N: a caller whose bins may outnumber the table
 * (hist_real_kernel, hist_floats); the others checked gs_edges_in_smem and
 * compile no out-of-line call (hist_warp_kernel's register allocation
 * failed with one, C7600, on the older architectures of the CI build). */
template <bool FMA = false, bool ANY_N = false>
__device__ __forceinline__ int64_t gs_bin_uniform_f(const gs_binner &b, const gs_smem_bins &s, float x)
{
    const int n = (int)b.nbins;
    /* fast path without a range test: x below e(0) gives k < 0, above e(n)
     * k >= n, NaN fails every comparison -- all go to the checked path */
    const float f = FMA ? __fmaf_rn(x, b.scale_f, b.off_f) : (x - b.lo_f) * b.scale_f;
    const float h = FMA ? b.half_fma_f : b.half_f;
    const float t = __fadd_rd(f, 8388608.0f);
    const int k = __float_as_int(t) - 0x4B000000;
    /* f - (k + 0.5) (t - (2^23 - 0.5) is k + 0.5 exactly; the difference is exact by Sterbenz's lemma but
     * for k = 0 and f < 0.25, off by 2^-26 at most -- and where ptxas fuses the non-FMA estimate's product
     * into this subtraction, c comes from the unrounded product, also within 2^-26: half_f's 2^-23 of
     * slack covers both, review33b emulated them): inside (m, 1 - m) of the bin as one compare of its
     * magnitude -- one instruction less than two compares (float binning is issue-bound on the H200);
     * NaN and infinities fail it */
    const float c = f - (t - 8388607.5f);
    if ((unsigned)k < (unsigned)n && fabsf(c) < h)
        return k;
    if (!(x >= b.lo_f && x <= b.stop_f))
        return -1;
    if (!ANY_N || gs_edges_in_smem(b))
        return gs_correct(s.ef, n, x, k);
    return gs_correct_formula(gs_uniform_of(&b), (double)x, k);
}
template <bool ANY_N = false>
__device__ __forceinline__ int64_t gs_bin_uniform_d(const gs_binner &b, const gs_smem_bins &s, double x)
{
    const int n = (int)b.nbins;
    if (!(x >= b.lo && x <= b.stop))
        return -1;
    const double f = (x - b.lo) * b.scale;
    const double t = __dadd_rd(f, 4503599627370496.0);
    const int k = (int)(__double_as_longlong(t) - 0x4330000000000000ll);
    const double fr = f - (t - 4503599627370496.0);
    if (fr > b.margin && fr < 1.0 - b.margin && k < n)
        return k;
    if (!ANY_N || gs_edges_in_smem(b))
        return gs_correct(s.e, n, x, k);
    return gs_correct_formula(gs_uniform_of(&b), x, k);
}
template <class E> __device__ __forceinline__ int64_t gs_bin_search(const E *e, int n, E x)
{
    if (!(x >= e[0]))
        return -1;
    if (x >= e[n])
        return x == e[n] ? n - 1 : -1;
    int lo = 0, hi = n;
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* A value whose conversion to float is exact (ints <= 16 bits, halves,
 * floats): compare in float when the edges are float32. */
__device__ __forceinline__ int64_t gs_bin_real_smem(const gs_binner &b, const gs_smem_bins &s, float xf, bool f_exact)
{
    if (!gs_edges_in_smem(b))
        return gs_bin_real(&b, (double)xf);
    if (f_exact && b.edges_f32)
        return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_f(b, s, xf) : gs_bin_search(s.ef, (int)b.nbins, xf);
    return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_d(b, s, (double)xf)
                                     : gs_bin_search(s.e, (int)b.nbins, (double)xf);
}
__device__ __forceinline__ int64_t gs_bin_real_smem_d(const gs_binner &b, const gs_smem_bins &s, double x)
{
    if (!gs_edges_in_smem(b))
        return gs_bin_real(&b, x);
    return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_d(b, s, x) : gs_bin_search(s.e, (int)b.nbins, x);
}

/* Bin of one value.  8-bit inputs: LUT or DIRECT on the raw byte; wider
 * integers: DIRECT or the real-valued rules; floats: real-valued rules. */
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, uint8_t v)
{
    return b.kind == GS_BINS_LUT ? (int64_t)s.lut[v] : gs_bin_direct(&b, v); /* LUT from shared memory */
}
#define GS_INT_BIN(T, WIDEN, REAL)                                                                            \
    __device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, T v)               \
    {                                                                                                         \
        return b.kind == GS_BINS_DIRECT ? gs_bin_direct(&b, (uint64_t)(WIDEN)v) : REAL;                      \
    }
GS_INT_BIN(int16_t, int64_t, gs_bin_real_smem(b, s, (float)v, true))
GS_INT_BIN(uint16_t, uint64_t, gs_bin_real_smem(b, s, (float)v, true))
GS_INT_BIN(int32_t, int64_t, gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(uint32_t, uint64_t, gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(int64_t, int64_t, b.kind == GS_BINS_EDGES_INT ? gs_bin_i64(&b, v) : gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(uint64_t, uint64_t, b.kind == GS_BINS_EDGES_INT ? gs_bin_u64(&b, v) : gs_bin_real_smem_d(b, s, (double)v))
#undef GS_INT_BIN
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, gs_f16 v)
{
    return gs_bin_real_smem(b, s, gs_half_to_float(v.bits), true);
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, float v)
{
    return gs_bin_real_smem(b, s, v, true);
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, double v)
{
    return gs_bin_real_smem_d(b, s, v);
}

/* A weight as double (float32 or float64 storage). */
__device__ __forceinline__ double gs_dweight(const void *w, int dt, int64_t i)
{
    return dt == GS_FLOAT32 ? (double)__ldg((const float *)w + i) : __ldg((const double *)w + i);
}

#endif /* GPUSYNC_CUDA_HIST_LAUNCH_CUH */
