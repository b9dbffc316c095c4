/*
 * Strategy `global` (seed 001, example 4.3): every element is one atomic add
 * into the histogram in global memory.  Needs no shared memory, so any
 * number of bins works -- and equal values serialize on one L2 address,
 * which is why the other strategies exist.
 */
#include "hist_launch.cuh"
#include "kernel_refs.cuh"

template <class T, bool W>
__global__ void __launch_bounds__(GS_HIST_GLOBAL_THREADS)
    hist_global_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, void *out)
{
    __shared__ gs_smem_bins sb;
    gs_bins_prepare(b, sb);
    gs_for_each(x, n, xs, [&](T v, int64_t i, bool ok) {
        const int64_t k = ok ? gs_dbin(b, sb, v) : -1;
        if (k < 0)
            return;
        if constexpr (W)
            atomicAdd((double *)out + k, gs_dweight(w, wdt, i * ws));
        else
            atomicAdd((unsigned long long *)out + k, 1ull);
    });
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    const int threads = GS_HIST_GLOBAL_THREADS;
    auto kern = l->w ? hist_global_kernel<T, true> : hist_global_kernel<T, false>;
    int64_t resident = 0;
    const gs_status st = gs_cuda_resident_blocks((const void *)kern, threads, 0, l->dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t grid = gs_hist_grid(l, resident, threads);
    kern<<<(unsigned)grid, threads, 0, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride, l->w,
                                                     l->wstride, l->wdtype, l->out);
    GS_CUDA_CHECK(cudaGetLastError());
    return GS_OK;
}

gs_status gs_hist_global_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }

int gs_hist_global_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:global", (const void *)hist_global_kernel<uint8_t, false>, GS_HIST_GLOBAL_THREADS, 0};
    return 1;
}
