/*
 * Strategy `shared` (seed 001, example 4.4): each block counts into a private
 * histogram in shared memory and adds it to the global one once, at the end.
 *
 * Replication: the block keeps R copies of every bin (R a power of two, up to
 * 32, as many as fit GS_HIST_SMEM_BUDGET), laid out [bin][R].  Lane l of a
 * warp always updates copy l % R.  With R = 32, lane l's counter for any bin
 * sits in bank l: a warp's 32 updates never conflict and never collide on one
 * word, so uniform, text-like and single-valued data all run at the same
 * speed.  Shared-memory updates are block-scoped relaxed atomics; only the
 * final merge uses device-scope atomics on global memory.
 */
#include "internal.cuh"

template <class T, bool W>
__global__ void __launch_bounds__(GS_HIST_BLOCK_THREADS)
    hist_shared_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, void *out, int rshift)
{
    using C = typename std::conditional<W, double, unsigned>::type;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int32_t lut[256];
    C *h = (C *)smem;
    const int nb = (int)b.nbins, R = 1 << rshift;
    for (int i = threadIdx.x; i < (nb << rshift); i += blockDim.x)
        h[i] = 0;
    gs_load_lut(b, lut); /* also the barrier after zeroing */
    const int rep = threadIdx.x & (R - 1);

    gs_for_each(x, n, xs, [&](T v, int64_t i, bool ok) {
        const int64_t k = ok ? gs_dbin(b, lut, v) : -1;
        if (k < 0)
            return;
        if constexpr (W)
            atomicAdd_block(&h[((int)k << rshift) + rep], gs_dweight(w, wdt, i * ws));
        else
            atomicAdd_block(&h[((int)k << rshift) + rep], 1u);
    });
    __syncthreads();

    for (int k = threadIdx.x; k < nb; k += blockDim.x) {
        C acc = 0;
        for (int r = 0; r < R; r++) /* rotate the start so a warp reads 32 banks */
            acc += h[(k << rshift) + ((r + k) & (R - 1))];
        if (acc != 0) {
            if constexpr (W)
                atomicAdd((double *)out + k, acc);
            else
                atomicAdd((unsigned long long *)out + k, (unsigned long long)acc);
        }
    }
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    const int W = l->w != NULL;
    const int R = gs_hist_replicas(l->binner.nbins, W, l->dev->shared_memory_per_block_optin);
    if (R == 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "too many bins for strategy 'shared'");
    int rshift = 0;
    while ((1 << rshift) < R)
        rshift++;
    const size_t smem = (size_t)l->binner.nbins * R * (W ? 8 : 4);
    const int threads = GS_HIST_BLOCK_THREADS;
    auto kern = W ? hist_shared_kernel<T, true> : hist_shared_kernel<T, false>;
    GS_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
    const int64_t grid = gs_hist_grid(l, (int64_t)per_sm * l->dev->multiprocessors, threads);
    kern<<<(unsigned)grid, threads, smem, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride, l->w,
                                                        l->wstride, l->wdtype, l->out, rshift);
    GS_CUDA_CHECK(cudaGetLastError());
    return GS_OK;
}

gs_status gs_hist_shared_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }
