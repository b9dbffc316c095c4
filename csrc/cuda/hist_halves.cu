/*
 * Strategy `shared` with 16-bit counters (issue 14): an unweighted histogram
 * whose bins do not fit one block's shared memory as 32-bit counters (65,536
 * bins take 256 KiB; an SM has 227 KiB) but do as 16-bit halves of 32-bit
 * words (count16.cuh: 65,536 bins in 128 KiB, up to 113,136 bins on sm_90).
 * Before, such a histogram went to the cluster strategy (distributed shared
 * memory atomics, 13% of read at 65,536 bins on the H200) or to global
 * atomics: 65,536 bins of uniform int32 now read at 56% on the H100 against
 * the cluster's 21% (benchmarks/results/histogram_manybins_H100.md).
 *
 * The adds are bound by shared-memory bank conflicts (random bins, no
 * replicas) and by the old value every add returns: about 1.5 elements per
 * clock per SM.  So a 16-bit bincount keeps its two passes (the maximum,
 * then max + 1 replicated 32-bit bins: 4,096 values read at 98%) rather
 * than one pass over the dtype's whole range here: that one pass measured
 * 593 us for 256M uint16 of 4,096 values (30% of read, H100, r47).
 *
 * One block of HALF_THREADS per SM (its bins take most of the SM's shared
 * memory), every element binned by the shared binning rules (gs_dbin: the
 * same bins as every other strategy), a vector's adds issued before their
 * old values are looked at, and the block's non-zero halves added to the
 * int64 result at the end.  A half that could carry raises the block's
 * flag; a one-block recount behind the count (queued only when a block sees
 * 0xffff elements or more, and a no-op unless a flag is set) then puts the
 * result back as it was before the count (a copy taken before it: a staged
 * host input adds chunk after chunk into one result) and counts this input
 * again with global atomics.  GPUSYNC_HISTDD_COUNTER=1 raises
 * the flag in every block (tests).
 */
#include "count16.cuh"
#include "elements.cuh"
#include "hist_launch.cuh"

#include <type_traits>

namespace {

constexpr int HALF_THREADS = 1024;
/* The vector loop's one-bin warp test (GS_HIST_HALVES_SAME_WARP=0 at build time: off, for measurements). */
#ifndef GS_HIST_HALVES_SAME_WARP
#define GS_HIST_HALVES_SAME_WARP 1
#endif
constexpr bool HALF_SAME_WARP = GS_HIST_HALVES_SAME_WARP != 0;
/* A lead lane's run of one bin goes to the shared half up to this many
 * elements (one add's jump stays far from a carry: 32 warps x 512 < 0x8000),
 * to the global result above (one value: a handful of adds per thread). */
constexpr unsigned GS_HALVES_RUN_SHARED_MAX = 512;
/* 16-byte loads in flight per thread: one block of 1024 threads per SM holds
 * 64 KiB in flight with 4 (the 2 of the other kernels: 32 KiB, which held one
 * value -- no atomics left to wait for -- at 50 % of the H200's read).  The
 * loads land in L1, which shares the SM's memory with the halves: 4 only where
 * the SM's shared memory left beside the halves holds the block's 4 loads
 * (half_loads_fit).  H200 (228 KiB a SM): 65,536 bins (128 KiB of halves)
 * take 4 -- one value 243 -> 226 us, uniform int32 323 -> 311 us; float32 on
 * 100,000 bins (200 KiB) keeps 2 -- 1113 us, 1942 us with 4 (r59).  2-byte
 * types keep 2 (their 8 bins a vector spill with 4). */
#ifndef GS_HIST_HALVES_LOADS
#define GS_HIST_HALVES_LOADS 4
#endif
template <class T> constexpr int half_loads() { return sizeof(T) == 2 ? GS_HIST_VEC_UNROLL : GS_HIST_HALVES_LOADS; }
/* Whether the SM's shared memory beside smem bytes of halves holds a block's loads, `loads` 16-byte vectors a thread */
static bool half_loads_fit(const gs_device_info *dev, size_t smem, int loads)
{
    const size_t in_flight = (size_t)HALF_THREADS * (size_t)loads * 16;
    return (size_t)dev->shared_memory_per_multiprocessor >= smem + in_flight;
}

/* Bin of one element.  FMODE 0: the shared binning rules (gs_dbin: floats in double past the shared edge
 * table); 1: float32 data on float32-exact equal-width edges, the float estimate and near an edge the
 * edges' formula (hist_launch.cuh's gs_bin_uniform_f, as hist_small.cu's float kernel past the table);
 * 2: the same with the estimate as one fused multiply-add (gs_binner.fma_f).  The same bins: both are
 * NumPy's.  A template parameter: a run-time mode test in the element loop made the compiler keep both. */
template <int FMODE, class T> __device__ __forceinline__ int half_bin(const gs_binner &b, const gs_smem_bins &sb, T v)
{
    if constexpr (FMODE != 0 && std::is_same<T, float>::value)
        return (int)gs_bin_uniform_f<FMODE == 2, true>(b, sb, v);
    else
        return (int)gs_dbin(b, sb, v);
}

/* The halves: the block's dynamic shared memory, through one extern array. */
__device__ __forceinline__ unsigned *half_words()
{
    extern __shared__ unsigned gs_half_words[];
    return gs_half_words;
}

template <class T, int LOADS, int FMODE>
__global__ void __launch_bounds__(HALF_THREADS, 1)
    hist_halves_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, unsigned long long *out,
                       int *overflow, int force)
{
    __shared__ gs_smem_bins sb;
    __shared__ int s_over;
    const int nb = (int)b.nbins, words = (nb + 1) >> 1;
    for (int i = threadIdx.x; i < words; i += HALF_THREADS)
        half_words()[i] = 0u;
    if (threadIdx.x == 0)
        s_over = force;
    gs_bins_prepare(b, sb); /* also the barrier after zeroing */
    auto settle = [&](int k, unsigned old) {
        gs_settle16(half_words(), k, old, &s_over, [&](unsigned v) { atomicAdd(out + k, (unsigned long long)v); });
    };
    auto one = [&](T v, int64_t, bool ok) {
        const int k = ok ? half_bin<FMODE>(b, sb, v) : -1;
        if (k >= 0) {
            const unsigned old = gs_add16(half_words(), k);
            if (gs_near16(old))
                settle(k, old);
        }
    };
    /* the run this thread leads (one-bin warps, below): run_c elements of bin run_k not added yet */
    int run_k = -1;
    unsigned long long run_c = 0;
    auto flush_run = [&]() {
        if (run_c > GS_HALVES_RUN_SHARED_MAX) { /* a long run: straight to the result (few such adds) */
            atomicAdd(out + run_k, run_c);
        } else if (run_c) {
            const unsigned c = (unsigned)run_c;
            gs_settlen16(half_words(), run_k, gs_addn16(half_words(), run_k, c), c, &s_over,
                         [&](unsigned v) { atomicAdd(out + run_k, (unsigned long long)v); });
        }
    };
    gs_for_each_vec<LOADS>(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
        constexpr int V = 16 / sizeof(T);
        int k[V];
        unsigned old[V];
#pragma unroll
        for (int e = 0; e < V; e++)
            k[e] = ok ? half_bin<FMODE>(b, sb, r.e[e]) : -1;
        bool same = HALF_SAME_WARP && k[0] >= 0;
#pragma unroll
        for (int e = 1; e < V; e++)
            same = same && k[e] == k[0];
        if (same) { /* this thread's elements share a bin, and maybe the lanes here too (one value, runs): then
                     * one add of them all (uniform data skips this on a compare per element) */
            const unsigned mask = __activemask();
            const int lead = __ffs(mask) - 1;
            const int k0 = __shfl_sync(mask, k[0], lead);
            if (__all_sync(mask, k[0] == k0)) {
                if ((int)(threadIdx.x & 31) == lead) { /* the lead lane's run: one add when the bin changes */
                    const unsigned c = (unsigned)(V * __popc(mask));
                    if (k0 == run_k) {
                        run_c += c;
                    } else {
                        flush_run();
                        run_k = k0;
                        run_c = c;
                    }
                }
                return;
            }
        }
#pragma unroll
        for (int e = 0; e < V; e++)
            old[e] = k[e] >= 0 ? gs_add16(half_words(), k[e]) : 0u;
#pragma unroll
        for (int e = 0; e < V; e++)
            if (gs_near16(old[e])) /* (a dropped element's 0 is not) */
                settle(k[e], old[e]);
    });
    flush_run();
    __syncthreads();
    if (threadIdx.x == 0 && s_over && overflow)
        atomicExch(overflow, 1);
    gs_flush16(half_words(), nb, [&](int64_t k, unsigned v) { atomicAdd(out + k, (unsigned long long)v); });
}

/* After a count whose flag is set: out as it was before the count (`saved`:
 * a staged host input adds chunk after chunk into out), then this count
 * again with global atomics (one block: this never runs in practice). */
template <class T>
__global__ void __launch_bounds__(HALF_THREADS)
    hist_halves_recount(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, unsigned long long *out,
                        const int *overflow, const unsigned long long *saved)
{
    __shared__ gs_smem_bins sb;
    if (!*(volatile const int *)overflow)
        return; /* (every thread reads the same flag) */
    for (int64_t k = threadIdx.x; k < b.nbins; k += HALF_THREADS)
        out[k] = saved[k];
    gs_bins_prepare(b, sb); /* also orders the zeroing before the adds */
    for (int64_t i = threadIdx.x; i < n; i += HALF_THREADS) {
        const int64_t k = gs_dbin(b, sb, x[i * xs]);
        if (k >= 0)
            atomicAdd(out + k, 1ull);
    }
}

/* Dynamic shared memory of the halves of nbins bins (16-byte multiple). */
size_t halves_bytes(int64_t nbins) { return (size_t)(((nbins + 1) / 2 * 4 + 15) / 16 * 16); }

template <class T, int LOADS, int FMODE> gs_status launch_kernel(const gs_hist_launch *l)
{
    const size_t smem = halves_bytes(l->binner.nbins);
    auto kern = hist_halves_kernel<T, LOADS, FMODE>;
    gs_status st = gs_cuda_allow_smem((const void *)kern, l->dev);
    int64_t resident = 0;
    if (st == GS_OK)
        st = gs_cuda_resident_blocks((const void *)kern, HALF_THREADS, smem, l->dev, &resident);
    if (st != GS_OK)
        return st;
    if (resident < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogram: %lld bins do not fit one block's shared memory on %s",
                       (long long)l->binner.nbins, l->dev->name);
    const int64_t grid = gs_hist_grid(l, resident, HALF_THREADS);
    const int force = gs_env_number(GS_ENV_HISTDD_COUNTER, 0, NULL) == 1;
    /* the most elements one block counts (gs_for_each_vec): each of its threads takes whole vectors of V
     * grid-stride (or one element a trip, strided), plus the head and the tail (< V each) */
    constexpr int64_t V = 16 / sizeof(T);
    const int64_t nth = grid * HALF_THREADS;
    const int64_t per_block = HALF_THREADS * (V * ((l->n / V + nth - 1) / nth) + 1) + 2 * V;
    const size_t out_bytes = (size_t)l->binner.nbins * sizeof(unsigned long long);
    int *d_flag = NULL;
    unsigned long long *saved = NULL;
    st = GS_OK;
    if (gs_count16_may_overflow(per_block) || force) { /* the flag, and out as it was for the recount */
        GS_CUDA_CHECK(gs_malloc_async(&d_flag, 16 + out_bytes, l->stream));
        saved = (unsigned long long *)((char *)d_flag + 16);
        GS_CUDA_GOTO(cudaMemsetAsync(d_flag, 0, sizeof(int), l->stream));
        GS_CUDA_GOTO(cudaMemcpyAsync(saved, l->out, out_bytes, cudaMemcpyDeviceToDevice, l->stream));
    }
    kern<<<(unsigned)grid, HALF_THREADS, smem, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride,
                                                             (unsigned long long *)l->out, d_flag, force);
    GS_CUDA_GOTO(cudaGetLastError());
    if (d_flag) {
        hist_halves_recount<T><<<1, HALF_THREADS, 0, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride,
                                                                  (unsigned long long *)l->out, d_flag, saved);
        GS_CUDA_GOTO(cudaGetLastError());
    }
fail:
    gs_free_async(d_flag, l->stream, &st);
    return st;
}

/* float32 on float32-exact equal-width edges: the float estimate (FMODE 1 / 2) where the halves leave room
 * for only GS_HIST_VEC_UNROLL loads in flight; everything else: gs_dbin.  r126 (H200, 128M float32, graph
 * replay, benchmarks/results/hist_halves_f32_H200_r126.txt): 100,000 bins 1167 -> 731 us, 99,999 bins of
 * normal data 1062 -> 707 us; 65,536 bins (4 loads in flight) 629 -> 673 us: the double binning kept there. */
template <class T> gs_status launch(const gs_hist_launch *l)
{
    const gs_binner &b = l->binner;
    if (half_loads_fit(l->dev, halves_bytes(b.nbins), half_loads<T>()))
        return launch_kernel<T, half_loads<T>(), 0>(l);
    if constexpr (std::is_same<T, float>::value) {
        if (b.kind == GS_BINS_UNIFORM && b.edges_f32)
            return b.fma_f ? launch_kernel<T, GS_HIST_VEC_UNROLL, 2>(l) : launch_kernel<T, GS_HIST_VEC_UNROLL, 1>(l);
    }
    return launch_kernel<T, GS_HIST_VEC_UNROLL, 0>(l);
}

} // namespace

gs_status gs_hist_halves_launch(const gs_hist_launch *l)
{
    if (l->w != NULL)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogram: 16-bit shared counters count unweighted data only");
    GS_DISPATCH_DTYPE(l->xdtype, launch, l)
}
