/*
 * Strategy `warp`: warp-aggregated updates.  Before touching memory, the 32
 * lanes of a warp find which of them hold the same bin (__match_any_sync);
 * the lowest lane of each group adds the group's count (popcount of the
 * group mask) or the sum of its weights, with one atomic.  Skewed or
 * single-valued data then costs one atomic per warp instead of 32 serialized
 * ones.  Counts go to a private shared-memory histogram when it fits one
 * block (merged into global memory at the end), else straight to global
 * memory.
 *
 * Independent thread scheduling: gs_for_each gives every lane of a warp the
 * same trip count, so the full mask is always correct; invalid lanes take
 * part with bin -1 and add nothing.  No code assumes lock-step execution.
 */
#include "hist_launch.cuh"
#include "kernel_refs.cuh"

/* No __launch_bounds__ here: with it, ptxas 13.0 fails register allocation
 * (C7600) on this kernel; without it the kernel uses at most 48 registers,
 * so 1024-thread blocks still launch (checked by the resource report). */
template <class T, bool W, bool SMEM>
__global__ void hist_warp_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                     int64_t ws, int wdt, void *out)
{
    using C = typename std::conditional<W, double, unsigned long long>::type;
    using S = typename std::conditional<W, double, unsigned>::type;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ gs_smem_bins sb;
    S *h = (S *)smem;
    const int64_t nb = b.nbins;
    const unsigned lane = threadIdx.x & 31;
    if constexpr (SMEM)
        for (int64_t i = threadIdx.x; i < nb; i += blockDim.x)
            h[i] = 0;
    gs_bins_prepare(b, sb);

    auto one = [&](T v, int64_t i, bool ok) {
        const int k = ok ? (int)gs_dbin(b, sb, v) : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, k);
        const unsigned leader = __ffs(peers) - 1;
        if constexpr (W) {
            const double wv = k >= 0 ? gs_dweight(w, wdt, i * ws) : 0.0;
            double s = wv;
            if (__any_sync(0xffffffffu, peers != (1u << lane))) { /* some group has >1 lane */
                s = 0.0;
                for (int src = 0; src < 32; src++) {
                    const double o = __shfl_sync(0xffffffffu, wv, src);
                    if ((peers >> src) & 1u)
                        s += o;
                }
            }
            if (lane == leader && k >= 0) {
                if constexpr (SMEM)
                    atomicAdd_block(&h[k], s);
                else
                    atomicAdd((C *)out + k, s);
            }
        } else if (lane == leader && k >= 0) {
            if constexpr (SMEM)
                atomicAdd_block(&h[k], (unsigned)__popc(peers));
            else
                atomicAdd((C *)out + k, (C)__popc(peers));
        }
    };
    /* Vectors are walked element by element without unrolling: ptxas 13.0
     * fails register allocation (C7600) on 16 unrolled __match_any_sync
     * rounds of the 8-bit instantiation, and matching dominates anyway. */
    gs_for_each_vec(x, n, xs, one, [&](const gs_vec<T> &r, int64_t i0, bool ok) {
#pragma unroll 1
        for (int e = 0; e < 16 / (int)sizeof(T); e++)
            one(r.e[e], i0 + e, ok);
    });

    if constexpr (SMEM) {
        __syncthreads();
        for (int64_t k = threadIdx.x; k < nb; k += blockDim.x)
            if (h[k] != 0)
                atomicAdd((C *)out + k, (C)h[k]);
    }
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    const bool W = l->w != NULL;
    const int threads = GS_HIST_BLOCK_THREADS;
    const bool in_smem = gs_hist_replicas(l->binner.nbins, W, l->dev->shared_memory_per_block_optin) > 0;
    const size_t smem = in_smem ? (size_t)l->binner.nbins * (W ? 8 : 4) : 0;
    auto kern = W ? (in_smem ? hist_warp_kernel<T, true, true> : hist_warp_kernel<T, true, false>)
                  : (in_smem ? hist_warp_kernel<T, false, true> : hist_warp_kernel<T, false, false>);
    gs_status st = gs_cuda_allow_smem((const void *)kern, l->dev);
    int64_t resident = 0;
    if (st == GS_OK)
        st = gs_cuda_resident_blocks((const void *)kern, threads, smem, l->dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t grid = gs_hist_grid(l, resident, threads);
    kern<<<(unsigned)grid, threads, smem, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride, l->w,
                                                        l->wstride, l->wdtype, l->out);
    GS_CUDA_CHECK(cudaGetLastError());
    return GS_OK;
}

gs_status gs_hist_warp_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }

int gs_hist_warp_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:warp", (const void *)hist_warp_kernel<uint8_t, false, true>, GS_HIST_BLOCK_THREADS, 256 * 4};
    return 1;
}
