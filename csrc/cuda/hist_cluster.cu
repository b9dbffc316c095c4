/*
 * Strategy `cluster` (seed 004, Hopper thread-block clusters): a histogram
 * too large for one block's shared memory is spread over the distributed
 * shared memory (DSMEM) of a cluster of C blocks.  Block r of the cluster
 * owns bins [r * S, (r + 1) * S) (S a power of two); any thread of the
 * cluster adds to any bin through cluster.map_shared_rank().
 *
 * Ordering: the first cluster.sync() makes every block's zeroed slice visible
 * before anyone adds to it; the second guarantees that all remote adds have
 * landed and that no block exits (releasing its shared memory) while others
 * still write to it.  Each block then merges its own slice into global
 * memory.  Launched with cudaLaunchKernelEx and a cluster-dimension
 * attribute; the grid is sized by cudaOccupancyMaxActiveClusters.
 */
#include "hist_launch.cuh"
#include "kernel_refs.cuh"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GS_NO_CLUSTERS 1 /* this kernel body is only compiled for sm_90+ */
#endif

template <class T, bool W>
__global__ void __launch_bounds__(GS_HIST_BLOCK_THREADS)
    hist_cluster_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                        int64_t ws, int wdt, void *out, int sshift)
{
#ifndef GS_NO_CLUSTERS
    using S = typename std::conditional<W, double, unsigned>::type;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ gs_smem_bins sb;
    S *h = (S *)smem;
    cg::cluster_group cl = cg::this_cluster();
    const int slice = 1 << sshift;
    for (int i = threadIdx.x; i < slice; i += blockDim.x)
        h[i] = 0;
    gs_bins_prepare(b, sb);
    cl.sync();

    gs_for_each(x, n, xs, [&](T v, int64_t i, bool ok) {
        const int64_t k = ok ? gs_dbin(b, sb, v) : -1;
        if (k < 0)
            return;
        S *dst = cl.map_shared_rank(h, (unsigned)(k >> sshift));
        const int off = (int)k & (slice - 1);
        if constexpr (W)
            atomicAdd(dst + off, gs_dweight(w, wdt, i * ws));
        else
            atomicAdd(dst + off, 1u);
    });
    cl.sync();

    const int64_t first = (int64_t)cl.block_rank() << sshift;
    for (int j = threadIdx.x; j < slice && first + j < b.nbins; j += blockDim.x) {
        if (h[j] == 0)
            continue;
        if constexpr (W)
            atomicAdd((double *)out + first + j, h[j]);
        else
            atomicAdd((unsigned long long *)out + first + j, (unsigned long long)h[j]);
    }
#endif
}

int64_t gs_hist_cluster_max_bins(const gs_device_info *dev, int weighted)
{
    const int64_t counter = weighted ? 8 : 4, room = dev->shared_memory_per_block_optin - GS_HIST_STATIC_SMEM;
    int64_t slice = 1;
    while (slice * 2 * counter <= room)
        slice *= 2;
    return slice * GS_HIST_CLUSTER_MAX;
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    const bool W = l->w != NULL;
    int sshift = 0;
    const int csize = gs_hist_cluster_shape(l->binner.nbins, W, l->dev->shared_memory_per_block_optin, &sshift);
    if (csize == 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "too many bins for strategy 'cluster'");
    const size_t smem = ((size_t)1 << sshift) * (W ? 8 : 4);
    const int threads = GS_HIST_BLOCK_THREADS;
    auto kern = W ? hist_cluster_kernel<T, true> : hist_cluster_kernel<T, false>;
    gs_status st = gs_cuda_allow_smem((const void *)kern, l->dev);
    if (st != GS_OK)
        return st;

    gs_cluster_config cc((unsigned)csize, threads, smem, l->stream);
    cudaLaunchConfig_t &cfg = cc.cfg;
    int clusters = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, (void *)kern, &cfg));
    if (clusters < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "strategy 'cluster': no cluster of %d blocks with %zu bytes of "
                                                "shared memory each fits this device", csize, smem);
    /* co-resident clusters, no more than the work needs, and enough that one
     * cluster's 32-bit counters cannot overflow */
    int64_t want = gs_hist_grid(l, (int64_t)clusters * csize, threads);
    const int64_t min_grid = (l->n / GS_HIST_MAX_ELEMS_PER_BLOCK + 1) * csize;
    if (want < min_grid)
        want = min_grid;
    want = (want + csize - 1) / csize * csize;
    cfg.gridDim = dim3((unsigned)want);
    GS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, l->binner, (const T *)l->x, l->n, l->xstride, l->w, l->wstride,
                                     l->wdtype, l->out, sshift));
    return GS_OK;
}

gs_status gs_hist_cluster_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }

int gs_hist_cluster_refs(gs_kernel_ref *r)
{
    /* 65536 bins over a cluster of 8: 8192 counters per block */
    r[0] = {"histogram:cluster", (const void *)hist_cluster_kernel<int32_t, false>, GS_HIST_BLOCK_THREADS, 8192 * 4};
    return 1;
}
