/*
 * Histogram dispatch (CUDA backend): validates the call, resolves `auto`,
 * stages host inputs through device memory, uploads non-uniform edges, zeroes
 * the output and hands the launch to one strategy file.  It never touches
 * elements itself; the kernels never choose a strategy.  Also the kernel
 * that writes equal-width bin edges on the device (so that a histogram of a
 * device array with bins and range given never waits for the host).
 */
#include "../common/convert.h"
#include "hist_launch.cuh"
#include "stage.cuh"

#include <stdio.h>
#include <stdlib.h>

/* Host inputs are copied to the device in chunks of GS_STAGE_BYTES, so that
 * inputs of any size need bounded device memory (the histogram is additive). */

/* GPUSYNC_HIST_GRID overrides the number of blocks of the histogram kernels
 * (for the seed's block-count sweep in benchmarks/histogram.py); still raised
 * to what keeps 32-bit block counters from overflowing. */

int64_t gs_hist_grid(const gs_hist_launch *l, int64_t resident, int threads)
{
    const int64_t es = (int64_t)gs_dtype_size((gs_dtype)l->xdtype);
    const int64_t per_thread = (16 / es) * GS_HIST_VEC_UNROLL; /* one full unrolled step */
    int64_t work = (l->n + threads * per_thread - 1) / (threads * per_thread);
    int64_t g = resident < work ? resident : work;
    int forced = 0; /* block-count sweeps (benchmarks) */
    const double force = gs_env_number(GS_ENV_HIST_GRID, 0, &forced);
    if (forced)
        g = (int64_t)force;
    if (g < 1)
        g = 1;
    if (g <= l->n / GS_HIST_MAX_ELEMS_PER_BLOCK)
        g = l->n / GS_HIST_MAX_ELEMS_PER_BLOCK + 1;
    return g < 0x7fffffff ? g : 0x7fffffff;
}

int gs_hist_replica_shift(const gs_hist_launch *l)
{
    int R = gs_hist_replicas(l->binner.nbins, l->w != NULL, l->dev->shared_memory_per_block_optin);
    if (R == 0)
        return -1;
    const int cap = (int)gs_env_number(GS_ENV_HIST_REPLICAS, 0, NULL); /* tuning sweeps (scripts/tune_small.py) */
    while (cap > 0 && R > cap)
        R /= 2;
    int rshift = 0;
    while ((1 << rshift) < R)
        rshift++;
    return rshift;
}

/* The counts zeroed by a kernel rather than cudaMemsetAsync: the shared
 * strategies launch as its programmatic dependents (gs_launch_pdl) and count
 * while it runs, waiting for it only before their merge (gs_hist_merge).  A
 * memset node ahead of the kernel cost a graph replay about 2 us of its 15
 * us on 32 MiB of bytes (H200).  With `edges` it also writes the edges of an
 * equal-width formula (float32 when e32): the device fast path's call needs
 * no launch of uniform_edges of its own (host time, issue 13), and
 * uniform_edges is this kernel with no counts.  It takes the 40-byte formula,
 * not the 1.1 KB binner (parameter bytes of every histogram launch). */
__global__ void hist_init_kernel(unsigned long long *out, int64_t n, gs_uniform u, void *edges, int64_t es, int e32,
                                 unsigned long long *word)
{
    gs_pdl_launch_dependents();
    if (word && blockIdx.x == 0 && threadIdx.x == 0) {
        word[0] = 0; /* bincount's first count: the largest x and the smallest (gs_hist_launch.top) */
        word[1] = ~0ull;
    }
    const int64_t m = edges && u.nbins + 1 > n ? u.nbins + 1 : n;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += (int64_t)gridDim.x * blockDim.x) {
        if (i < n)
            out[i] = 0;
        if (edges && i <= u.nbins)
            gs_formula_edge_put(&u, edges, e32, es, i);
    }
}

/* hist_init_kernel's launch: enough blocks of 256 for `m` elements, at most
 * two per SM (grid-stride). */
static gs_status hist_init(const gs_device_info *dev, cudaStream_t s, unsigned long long *out, int64_t n,
                           const gs_hist_bins *bins, gs_array *edges, unsigned long long *word)
{
    const gs_uniform u = edges ? gs_uniform_of_bins(bins) : gs_uniform{};
    const int64_t m = edges && bins->nbins + 1 > n ? bins->nbins + 1 : n;
    const int64_t blocks = (m + 255) / 256, most = 2 * (int64_t)dev->multiprocessors;
    hist_init_kernel<<<(unsigned)(blocks < 1 ? 1 : blocks < most ? blocks : most), 256, 0, s>>>(
        out, n, u, edges ? edges->data : NULL, edges ? edges->stride : 0, edges && edges->dtype == GS_FLOAT32, word);
    GS_CUDA_CHECK(cudaGetLastError());
    return GS_OK;
}

static gs_status run_strategy(gs_strategy s, const gs_hist_launch *l)
{
    switch (s) {
    case GS_STRATEGY_GLOBAL: return gs_hist_global_launch(l);
    case GS_STRATEGY_SHARED: return gs_hist_shared_launch(l);
    case GS_STRATEGY_WARP: return gs_hist_warp_launch(l);
    case GS_STRATEGY_CLUSTER: return gs_hist_cluster_launch(l);
    default: return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)s);
    }
}

/* Check that `s` can run this problem on this device; resolve auto. */
static gs_status resolve_strategy(gs_strategy *s, const gs_hist_bins *bins, int64_t n, int weighted, gs_dtype dt,
                                  const gs_device_info *dev)
{
    const int64_t nb = bins->nbins;
    if (*s == GS_STRATEGY_AUTO) {
        gs_hist_shape shape = {n,         nb, weighted, (int)gs_dtype_size(dt), dev->major,
                               dev->shared_memory_per_block_optin, dev->shared_memory_per_multiprocessor};
        *s = gs_hist_auto_strategy(&shape);
    }
    if (*s == GS_STRATEGY_SHARED && gs_hist_replicas(nb, weighted, dev->shared_memory_per_block_optin) == 0 &&
        !gs_hist_halves_fit(nb, weighted, dev->shared_memory_per_block_optin)) {
        /* unweighted: 16-bit halves, two a 32-bit word */
        int64_t max = weighted ? (dev->shared_memory_per_block_optin - GS_HIST_STATIC_SMEM) / 8
                               : gs_hist_halves_max(dev->shared_memory_per_block_optin);
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "strategy 'shared' holds at most %lld bins%s in one block's shared memory on %s; got %lld "
                       "(use 'cluster', 'global' or 'auto')",
                       (long long)max, weighted ? " with weights" : "", dev->name, (long long)nb);
    }
    if (*s == GS_STRATEGY_CLUSTER) {
        if (dev->major < 9 || !dev->cluster_launch)
            return gs_fail(GS_ERR_UNSUPPORTED_DEVICE,
                           "strategy 'cluster' needs thread-block clusters (compute capability >= 9.0); "
                           "device %d (%s) has compute capability %d.%d",
                           dev->ordinal, dev->name, dev->major, dev->minor);
        int64_t max = gs_hist_cluster_max_bins(dev, weighted);
        if (nb > max)
            return gs_fail(GS_ERR_INVALID_ARGUMENT,
                           "strategy 'cluster' holds at most %lld bins%s on %s; got %lld (use 'global' or 'auto')",
                           (long long)max, weighted ? " with weights" : "", dev->name, (long long)nb);
    }
    return GS_OK;
}

extern "C" gs_status gs_cuda_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *bins,
                                       gs_array *out, gs_array *edges, gs_strategy strategy, void *stream,
                                       gs_strategy *used)
{
    const int64_t nb = bins->nbins;
    const int weighted = w != NULL;
    const int on_host = x->device == GS_HOST;
    if (nb < 0 || x->length < 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "negative length");
    if ((out->device == GS_HOST) != on_host || (w && w->device != x->device) ||
        (!on_host && out->device != x->device))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "x, weights and out must all be on the host or all on device %d",
                       x->device);
    if (out->stride != 1 || out->length != nb)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "out must be contiguous with nbins elements");
    if (on_host && (x->stride != 1 || (w && w->stride != 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "host inputs must be contiguous");
    if (w && w->dtype != GS_FLOAT32 && w->dtype != GS_FLOAT64)
        return gs_fail(GS_ERR_TYPE, "weights must be float32 or float64 at the C API");
    gs_status est = gs_hist_bins_check(bins, x, out, edges);
    if (est != GS_OK)
        return est;
    if (edges && on_host) { /* host output: the edges are host memory too */
        gs_hist_edges_fill_host(bins, edges);
        edges = NULL;
    }

    gs_cuda_call call(x->device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const int dev_ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    st = resolve_strategy(&strategy, bins, x->length, weighted, x->dtype, dev);
    if (st != GS_OK)
        return st;
    *used = strategy;
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] histogram n=%lld nbins=%lld kind=%d weighted=%d strategy=%s device=%d%s\n",
                (long long)x->length, (long long)nb, (int)bins->kind, weighted, gs_strategy_name(strategy), dev_ord,
                on_host ? " (host input staged)" : "");

    const size_t out_bytes = (size_t)nb * 8;
    void *d_out = on_host ? NULL : out->data;
    double *d_edges = NULL;
    const double *kept = NULL; /* the edges kept on the device by an earlier call (gs_cuda_constants) */
    gs_hist_launch l;
    memset(&l, 0, sizeof l);

    if (nb == 0 && !edges)
        return GS_OK;
    /* A device call of the shared strategy counts in one launch that writes
     * every result and the edges (gs_hist_fin, hist_launch.cuh) -- no zeroing
     * kernel ahead of it.  H200, CuPy float64, 100 bins, range given (r162):
     * the zeroing launch was ~3.5 us of a 30 us call's host time.  Weighted
     * calls keep the zeroing kernel (hist_smem.cu); GPUSYNC_HIST_ONE_LAUNCH=0
     * gives it to every call. */
    const int fuse = !on_host && nb > 0 && strategy == GS_STRATEGY_SHARED && !weighted &&
                     gs_env_number(GS_ENV_HIST_ONE_LAUNCH, 1, NULL) != 0;
    if (on_host)
        GS_CUDA_GOTO(gs_malloc_async(&d_out, out_bytes, s));
    if (!fuse)
        GS_GOTO(hist_init(dev, s, (unsigned long long *)d_out, nb, bins, edges, NULL));
    if (nb == 0)
        return GS_OK;
    if (bins->kind == GS_BINS_EDGES || bins->kind == GS_BINS_EDGES_INT) {
        /* the edges come from host memory; this copy may wait for the stream */
        kept = (const double *)gs_cuda_constants(bins->edges, (size_t)(nb + 1) * sizeof(double), dev_ord, s);
        if (!kept) {
            GS_CUDA_GOTO(gs_malloc_async((void **)&d_edges, (size_t)(nb + 1) * sizeof(double), s));
            GS_CUDA_GOTO(cudaMemcpyAsync(d_edges, bins->edges, (size_t)(nb + 1) * sizeof(double),
                                         cudaMemcpyHostToDevice, s));
        }
    }
    gs_binner_init(&l.binner, bins, kept ? kept : d_edges);
    l.xdtype = x->dtype;
    l.wdtype = w ? w->dtype : GS_FLOAT64;
    l.out = d_out;
    l.stream = s;
    l.dev = dev;
    if (fuse) {
        l.fuse = fuse;
        if (edges) {
            l.fuse_edges.u = gs_uniform_of_bins(bins);
            l.fuse_edges.edges = edges->data;
            l.fuse_edges.stride = edges->stride;
            l.fuse_edges.e32 = edges->dtype == GS_FLOAT32;
        }
        l.x = x->data;
        l.n = x->length;
        l.xstride = x->stride;
        const int one = gs_hist_shared_fused(&l, &st);
        if (!one && gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0) /* (one launch: gs_hist_launch_fin says so) */
            fprintf(stderr, "[gpusync] histogram: the zeroing kernel, then the count\n");
        if (one)
            goto fail; /* one launch, or nothing launched and the error (st) */
        l.fuse = 0; /* declined: zeroed counts, the usual road */
        GS_GOTO(hist_init(dev, s, (unsigned long long *)d_out, nb, bins, edges, NULL));
    }

    {
        gs_staged arr[2] = {gs_staged(x), gs_staged(w)};
        GS_GOTO(gs_cuda_staged(arr, 2, x->length, GS_STAGE_BYTES / (int64_t)gs_dtype_size(x->dtype), s,
                               [&](int64_t, int64_t cnt) {
                                   l.x = arr[0].ptr;
                                   l.n = cnt;
                                   l.xstride = arr[0].stride;
                                   l.w = arr[1].ptr;
                                   l.wstride = arr[1].stride;
                                   return run_strategy(strategy, &l);
                               }));
    }
    if (on_host) {
        GS_CUDA_GOTO(cudaMemcpyAsync(out->data, d_out, out_bytes, cudaMemcpyDeviceToHost, s));
        if ((st = gs_cuda_wait_stream(s)) != GS_OK)
            goto fail;
    }

fail:
    if (d_edges)
        cudaFreeAsync(d_edges, s);
    if (on_host) {
        if (d_out)
            cudaFreeAsync(d_out, s);
        if (st != GS_OK)
            cudaStreamSynchronize(s);
    }
    return st;
}

extern "C" gs_status gs_cuda_minmax(const gs_array *x, void *out2, void *stream);

/* bincount's first count (ops->bincount_first): the integer kernel of
 * hist_small.cu on DIRECT bins 0 .. nbins - 1, leaving the largest and the
 * smallest x in two device words -- one read of x where a min/max pass and a
 * count took two.  Where that kernel does not run (GPUSYNC_HIST_SMALL=0), the
 * shared strategy counts and gs_cuda_minmax reads them. */
extern "C" gs_status gs_cuda_bincount_first(const gs_array *x, gs_array *out, int64_t *top, int64_t *bottom,
                                            int *negative, void *stream)
{
    const gs_dtype dt = x->dtype;
    if (const gs_status bad = gs_bincount_first_check(x, out, 0); bad != GS_OK)
        return bad;
    *top = -1;
    *bottom = -1;
    *negative = 0;
    gs_cuda_call call(x->device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    cudaStream_t s = call.stream;
    gs_hist_bins bins;
    memset(&bins, 0, sizeof bins);
    bins.kind = GS_BINS_DIRECT;
    bins.nbins = out->length; /* (offset 0: the kernel's TOP maximum is of x itself) */
    gs_hist_launch l;
    memset(&l, 0, sizeof l);
    gs_binner_init(&l.binner, &bins, NULL);
    l.x = x->data;
    l.n = x->length;
    l.xstride = x->stride;
    l.xdtype = dt;
    l.wdtype = GS_FLOAT64;
    l.out = out->data;
    l.stream = s;
    l.dev = call.dev;
    unsigned long long *d_top = NULL, h_top[2] = {0, 0}; /* (largest, smallest) */
    int declined = 0;                                    /* (l.fuse 0: never) */
    GS_CUDA_GOTO(gs_malloc_async(&d_top, sizeof h_top, s));
    GS_GOTO(hist_init(call.dev, s, (unsigned long long *)out->data, out->length, &bins, NULL, d_top));
    if (x->length == 0)
        goto fail; /* (zeroed counts; *top -1) */
    l.top = d_top;
    if (!gs_hist_small_try(&l, &st, &declined)) {
        l.top = NULL;
        GS_GOTO(gs_hist_shared_launch(&l));
        int64_t mm[2] = {0, 0}; /* (min, max) in x's dtype */
        GS_GOTO(gs_cuda_minmax(x, mm, stream));
        const int64_t lo = gs_int_at(mm, dt, 0), hi = gs_int_at(mm, dt, 1);
        *negative = lo < 0;
        *top = lo < 0 ? -1 : hi;
        *bottom = lo < 0 ? -1 : lo;
        goto fail;
    }
    GS_GOTO(st);
    GS_CUDA_GOTO(cudaMemcpyAsync(h_top, d_top, sizeof h_top, cudaMemcpyDeviceToHost, s));
    GS_GOTO(gs_cuda_wait_stream(s));
    *negative = h_top[0] == ~0ull;
    *top = *negative ? -1 : (int64_t)h_top[0];
    *bottom = *negative || h_top[1] == ~0ull ? -1 : (int64_t)h_top[1]; /* (~0: 16-bit data all past the bins) */
fail:
    gs_free_async(d_top, s, &st);
    return st;
}

/* The edges of an equal-width description, computed on the device (the
 * formula gs_uniform_edge that the kernels bin by): hist_init_kernel with
 * no counts. */
extern "C" gs_status gs_cuda_uniform_edges(const gs_hist_bins *bins, gs_array *out, void *stream)
{
    if (bins->kind != GS_BINS_UNIFORM || out->length != bins->nbins + 1 || out->device == GS_HOST ||
        (out->dtype != GS_FLOAT32 && out->dtype != GS_FLOAT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "uniform_edges: bad arguments");
    gs_cuda_call call(out->device, stream);
    if (call.status != GS_OK)
        return call.status;
    return hist_init(call.dev, call.stream, NULL, 0, bins, out, NULL);
}
