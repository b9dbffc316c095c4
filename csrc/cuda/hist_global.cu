/*
 * Strategy `global` (seed 001, example 4.3): every element is one atomic add
 * into the histogram in global memory.  Needs no shared memory, so any
 * number of bins works -- and equal values serialize on one L2 address,
 * which is why the other strategies exist.
 *
 * Many bins (auto's choice past what shared memory holds; issue 14): the
 * adds are L2 atomics, about 95 G a second on the H200 while the counters
 * stay in L2, and a third of that once they do not -- then most adds miss
 * and wait on memory.  So an unweighted count whose int64 counters would
 * take more than GS_HIST_GLOBAL_L2_SHARE_PCT % of the L2 counts into 32-bit
 * counters in a scratch array (half the bytes) and, where even those do not
 * fit that share, in passes over the input, each pass counting only the
 * elements of one range of bins whose counters fit it; one last pass adds
 * the 32-bit counts into the int64 result.  Weighted sums (float64 atomics)
 * take the passes straight into the result, one range of it per pass
 * whose sums fit the share.  Each pass reads the input again
 * (about 2 ps an 8-byte element on the H200) and saves the misses of the
 * elements it counts (about 24 ps each on uniform bins).
 * benchmarks/results/red_width_H200_r185.txt (64M int64, graph replay of the
 * kernels alone; torch.bincount 1,054 / 1,196 / 3,600 us):
 *
 *   bins     int64 counters   32-bit, 1 pass   2 passes   3 passes
 *   1M        704.5 us          707.8 us        782.6      875.4
 *   4M        839.4             718.9           802.5      886.3
 *   16M      3212.9            2295.2          1175.7      968.8
 *   16M, runs of 64 equal values (at hashed bins): 866.0 / 898.0 / 967.8 / 1044.2
 *
 * Sorted or clustered inputs, whose adds hit L2 anyway, would only lose
 * (16M bins: 1044 against 866 us) where uniform bins gain 3.3x: the
 * locality sampler below hands them one pass.  The scratch array is bins x
 * 4 bytes, zeroed, and the last pass reads and writes every int64 count:
 * paid only where the elements are at least as
 * many as the bins (else the int64 counters take the adds directly), and
 * only while no 32-bit count can wrap (n < 2^32).  GPUSYNC_HIST_GLOBAL_L2=0
 * keeps one pass into the result (for measurements).
 */
#include "hist_launch.cuh"
#include "kernel_refs.cuh"

/* The share of the L2 (device property) the counters of one pass may take,
 * in percent, and the most passes over the input (8 x 30 MB of the H200's
 * 60 MB L2: up to 62.9M bins of 32-bit counts, 31.5M of float64 sums, in
 * L2-sized ranges; beyond, the ranges grow). */
#ifndef GS_HIST_GLOBAL_L2_SHARE_PCT
#define GS_HIST_GLOBAL_L2_SHARE_PCT 50
#endif
#ifndef GS_HIST_GLOBAL_MAX_PASSES
#define GS_HIST_GLOBAL_MAX_PASSES 8
#endif

/* hist_global_locality's verdict (below): at least half the tested stretches local. */
__host__ __device__ __forceinline__ bool locally_counted(const unsigned *v) { return v[1] > 0 && 2 * v[0] >= v[1]; }

/* One atomic add an element whose bin k lies in [lo, lo + span) (every bin:
 * lo = 0, span = the bins), into C counters (the int64 result, or 32-bit
 * scratch counters) or, weighted, into the double sums; `mode` (NULL, or
 * hist_global_locality's counts) may widen the first pass to every bin.
 * WINDOW false: one pass over every bin, without the window's values in
 * the loop (float64 data: ptxas spills 76 bytes with them, 8 without). */
template <class T, bool W, class C, bool WINDOW>
__global__ void __launch_bounds__(GS_HIST_GLOBAL_THREADS)
    hist_global_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, C *out, int64_t lo, int64_t span, const unsigned *mode)
{
    if (WINDOW && mode && locally_counted(mode)) { /* the sampled input is local: the first pass (the one from bin 0:
                                              * passes <= bins) counts every element, the rest return */
        if (lo != 0)
            return;
        span = b.nbins;
    }
    __shared__ gs_smem_bins sb;
    gs_bins_prepare(b, sb);
    gs_for_each(x, n, xs, [&](T v, int64_t i, bool ok) {
        const int64_t k = ok ? gs_dbin(b, sb, v) : -1;
        if (WINDOW ? (uint64_t)(k - lo) >= (uint64_t)span : k < 0) /* (k < 0: no bin) */
            return;
        if constexpr (W)
            atomicAdd((double *)out + k, gs_dweight(w, wdt, i * ws));
        else
            atomicAdd(out + k, (C)1);
    });
}

/* Where neighbouring elements fall into neighbouring bins -- sorted or
 * clustered values, runs of one value -- the adds hit L2 whatever the
 * counters' size, and every pass after the first would only read the input
 * again (16M bins, 64M sorted int64: int64 counters 484 us, three passes
 * 751 us; r186).  So GS_HIST_GLOBAL_SAMPLES warps (8 a block) each sample a
 * stretch of 64 consecutive elements spread over the input: a stretch with
 * at least 32 pairs of neighbours in bins is tested, and is local when its
 * bins span fewer than 4,096 or most neighbours' bins lie within 32 of each
 * other.  Counts in v[0] (local) and v[1] (tested), zero before: the first
 * pass counts every element, and the others return at once, where at least
 * half the tested stretches are local (locally_counted). */
#ifndef GS_HIST_GLOBAL_SAMPLES
#define GS_HIST_GLOBAL_SAMPLES 256
#endif
template <class T>
__global__ void __launch_bounds__(256) hist_global_locality(gs_binner b, const T *__restrict__ x, int64_t n,
                                                            int64_t xs, unsigned *v)
{
    __shared__ gs_smem_bins sb;
    gs_bins_prepare(b, sb);
    const unsigned lane = threadIdx.x & 31, c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (c >= GS_HIST_GLOBAL_SAMPLES) /* (whole warps) */
        return;
    const int64_t start = (n - 64) * (int64_t)c / (GS_HIST_GLOBAL_SAMPLES - 1), i = start + 2 * lane;
    const int64_t k0 = gs_dbin(b, sb, x[i * xs]), k1 = gs_dbin(b, sb, x[(i + 1) * xs]);
    const int64_t prev = __shfl_up_sync(0xffffffffu, k1, 1); /* the element before k0 (lane 0: none) */
    const bool v0 = k0 >= 0, v1 = k1 >= 0, vp = lane > 0 && prev >= 0;
    const int near = (v0 && v1 && (k1 - k0 < 32 && k0 - k1 < 32)) + (vp && v0 && (k0 - prev < 32 && prev - k0 < 32));
    const int pairs = (v0 && v1) + (vp && v0);
    int64_t lo = v0 ? k0 : INT64_MAX, hi = v0 ? k0 : -1;
    if (v1)
        lo = lo < k1 ? lo : k1, hi = hi > k1 ? hi : k1;
    int nsum = near, psum = pairs;
    for (int o = 16; o > 0; o >>= 1) {
        nsum += __shfl_xor_sync(0xffffffffu, nsum, o);
        psum += __shfl_xor_sync(0xffffffffu, psum, o);
        const int64_t l2 = __shfl_xor_sync(0xffffffffu, lo, o), h2 = __shfl_xor_sync(0xffffffffu, hi, o);
        lo = lo < l2 ? lo : l2, hi = hi > h2 ? hi : h2;
    }
    if (lane == 0 && psum >= 32) { /* (a stretch mostly outside the bins says nothing) */
        atomicAdd(v + 1, 1u);
        if (hi - lo < 4096 || 2 * nsum > psum)
            atomicAdd(v, 1u);
    }
}

/* out[k] += c[k]: the 32-bit counts into the int64 result. */
__global__ void __launch_bounds__(256) hist_global_widen(const unsigned *__restrict__ c, int64_t nb,
                                                         unsigned long long *out)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nb; k += (int64_t)gridDim.x * blockDim.x)
        out[k] += c[k];
}

/* Passes over the input (see the top of the file): an unweighted count
 * into 32-bit counters, a range of bins per pass whose counters fit the
 * share, where its int64 counts would not fit it; weighted sums straight
 * into the float64 result, a range per pass whose sums fit.  0: one pass
 * into the result. */
static int l2_passes(const gs_hist_launch *l)
{
    const int64_t nb = l->binner.nbins, share = l->dev->l2_cache_bytes * GS_HIST_GLOBAL_L2_SHARE_PCT / 100;
    if (share <= 0 || nb * 8 <= share || l->n < nb || (!l->w && l->n >= ((int64_t)1 << 32)) ||
        gs_env_number(GS_ENV_HIST_GLOBAL_L2, 1, NULL) == 0)
        return 0;
    const int64_t p = (nb * (l->w ? 8 : 4) + share - 1) / share;
    return (int)(p < GS_HIST_GLOBAL_MAX_PASSES ? p : GS_HIST_GLOBAL_MAX_PASSES);
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    const int threads = GS_HIST_GLOBAL_THREADS;
    const int64_t nb = l->binner.nbins;
    int passes = l2_passes(l);
    /* the scratch: the 32-bit counters (unweighted), then the sampler's two counts (more than one pass) */
    const size_t cbytes = l->w ? 0 : ((size_t)nb * 4 + 15) / 16 * 16;
    void *scratch = NULL;
    if (passes) {
        const cudaError_t e = gs_malloc_async(&scratch, cbytes + 16, l->stream);
        if (e != cudaSuccess) {
            if (gs_cuda_maybe_capturing(l->stream))
                GS_CUDA_CHECK(e); /* (a failed call has broken the capture: no fallback) */
            cudaGetLastError(); /* no room for the scratch: one pass into the result */
            scratch = NULL, passes = 0;
        }
    }
    unsigned *c = passes && !l->w ? (unsigned *)scratch : NULL;
    unsigned *mode = passes > 1 && l->n >= 64 && nb >= passes ? (unsigned *)((char *)scratch + cbytes) : NULL;
    using k64_t = void (*)(gs_binner, const T *, int64_t, int64_t, const void *, int64_t, int, unsigned long long *,
                           int64_t, int64_t, const unsigned *);
    const k64_t k64 = passes ? hist_global_kernel<T, true, unsigned long long, true>
                      : l->w ? hist_global_kernel<T, true, unsigned long long, false>
                             : hist_global_kernel<T, false, unsigned long long, false>;
    int64_t resident = 0;
    gs_status st = GS_OK;
    GS_GOTO(gs_cuda_resident_blocks(c ? (const void *)hist_global_kernel<T, false, unsigned, true> : (const void *)k64,
                                    threads, 0, l->dev, &resident));
    {
        const int64_t grid = gs_hist_grid(l, resident, threads);
        if (c || mode) /* the counters and the sampler's counts */
            GS_CUDA_GOTO(cudaMemsetAsync(c ? (void *)c : (void *)mode, 0, (c ? cbytes : 0) + (mode ? 16 : 0),
                                         l->stream));
        if (mode) {
            hist_global_locality<T><<<GS_HIST_GLOBAL_SAMPLES / 8, 256, 0, l->stream>>>(l->binner, (const T *)l->x,
                                                                                       l->n, l->xstride, mode);
            GS_CUDA_GOTO(cudaGetLastError());
        }
        const int np = passes ? passes : 1;
        for (int p = 0; p < np; p++) { /* pass p: the bins [p nb / np, (p + 1) nb / np) */
            const int64_t lo = p * nb / np, hi = (p + 1) * nb / np;
            if (c)
                hist_global_kernel<T, false, unsigned, true><<<(unsigned)grid, threads, 0, l->stream>>>(
                    l->binner, (const T *)l->x, l->n, l->xstride, NULL, 0, 0, c, lo, hi - lo, mode);
            else
                k64<<<(unsigned)grid, threads, 0, l->stream>>>(
                    l->binner, (const T *)l->x, l->n, l->xstride, l->w, l->wstride, l->wdtype,
                    (unsigned long long *)l->out, lo, hi - lo, mode);
            GS_CUDA_GOTO(cudaGetLastError());
        }
        if (c) {
            const int64_t wb = (nb + 255) / 256, most = 8 * (int64_t)l->dev->multiprocessors;
            hist_global_widen<<<(unsigned)(wb < most ? wb : most), 256, 0, l->stream>>>(c, nb,
                                                                                        (unsigned long long *)l->out);
            GS_CUDA_GOTO(cudaGetLastError());
        }
    }
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0) {
        /* the sampler's verdict: read back (a wait) outside a capture, for the debug line alone */
        unsigned v[2] = {0, 0};
        const bool read = mode && !gs_cuda_maybe_capturing(l->stream) &&
                          cudaMemcpyAsync(v, mode, sizeof v, cudaMemcpyDeviceToHost, l->stream) == cudaSuccess &&
                          cudaStreamSynchronize(l->stream) == cudaSuccess;
        char verdict[160] = "";
        if (read)
            snprintf(verdict, sizeof verdict, "; sampled: %u of %u stretches local, %s", v[0], v[1],
                     locally_counted(v) ? "the first pass counts every element" : "every pass its range");
        fprintf(stderr, "[gpusync] histogram: global atomics into %s, %d pass%s over the input (%lld bins)%s\n",
                c ? "32-bit counters" : l->w ? "the float64 sums" : "the int64 counts", passes ? passes : 1,
                passes > 1 ? "es" : "", (long long)nb, verdict);
    }
fail:
    gs_free_async(scratch, l->stream, &st);
    return st;
}

gs_status gs_hist_global_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }

int gs_hist_global_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:global", (const void *)hist_global_kernel<uint8_t, false, unsigned long long, false>,
            GS_HIST_GLOBAL_THREADS, 0};
    return 1;
}
