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

#include <stdlib.h>

/* f(byte) for each of the 16 bytes of a vector, in order. */
template <class F> __device__ __forceinline__ void gs_each_byte(const int4 &v, F &&f)
{
    const unsigned w[4] = {(unsigned)v.x, (unsigned)v.y, (unsigned)v.z, (unsigned)v.w};
#pragma unroll
    for (int q = 0; q < 4; q++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            f((w[q] >> (8 * j)) & 0xffu);
}

/* Count 8-bit data into this lane's replica `mine` (replica stride
 * 1 << shift words): identity, offset with a closed top, or lookup table.
 * SHIFT >= 0 makes the stride a compile-time constant. */
template <int SHIFT, class T, class F1>
__device__ __forceinline__ void hist_bytes(const gs_binner &b, const gs_smem_bins &sb, const T *__restrict__ x,
                                           int64_t n, int64_t xs, unsigned *mine, int rshift, F1 &one)
{
    const int sh = SHIFT >= 0 ? SHIFT : rshift;
    auto add = [&](unsigned k) { atomicAdd_block(mine + (k << sh), 1u); };
    if (b.kind == GS_BINS_LUT) {
        gs_for_each_vec(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
            if (ok)
                gs_each_byte(r.v, [&](unsigned v) {
                    const int k = sb.lut[v];
                    if (k >= 0)
                        add((unsigned)k);
                });
        });
    } else if (b.offset == 0 && b.nbins >= 256) {
        gs_for_each_vec(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
            if (ok)
                gs_each_byte(r.v, add);
        });
    } else if (b.offset >= 0 && b.offset <= 255) {
        const unsigned off = (unsigned)b.offset, lim = (unsigned)(b.nbins + b.closed_top),
                       last = (unsigned)b.nbins - 1;
        gs_for_each_vec(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
            if (ok)
                gs_each_byte(r.v, [&](unsigned v) {
                    const unsigned d = v - off;
                    if (d < lim)
                        add(min(d, last));
                });
        });
    } else {
        gs_for_each(x, n, xs, one);
    }
}

/* float32 on equal-width float32 edges: the float estimate alone. */
template <int SHIFT>
__device__ __forceinline__ void hist_floats(const gs_binner &b, const gs_smem_bins &sb, const float *__restrict__ x,
                                            int64_t n, int64_t xs, unsigned *mine, int rshift)
{
    const int sh = SHIFT >= 0 ? SHIFT : rshift;
    gs_for_each(x, n, xs, [&](float v, int64_t, bool ok) {
        const int k = ok ? (int)gs_bin_uniform_f(b, sb, v) : -1;
        if (k >= 0)
            atomicAdd_block(mine + (k << sh), 1u);
    });
}

template <class T, bool W>
__global__ void __launch_bounds__(GS_HIST_BLOCK_THREADS, GS_HIST_BLOCKS_PER_SM)
    hist_shared_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, void *out, int rshift)
{
    using C = typename std::conditional<W, double, unsigned>::type;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ gs_smem_bins sb;
    C *h = (C *)smem;
    const int nb = (int)b.nbins, R = 1 << rshift;
    for (int i = threadIdx.x; i < (nb << rshift); i += blockDim.x)
        h[i] = 0;
    gs_bins_prepare(b, sb); /* also the barrier after zeroing */
    C *const mine = h + (threadIdx.x & (R - 1)); /* this lane's replica */

    auto one = [&](T v, int64_t i, bool ok) {
        const int64_t k = ok ? gs_dbin(b, sb, v) : -1;
        if (k < 0)
            return;
        if constexpr (W)
            atomicAdd_block(mine + ((int)k << rshift), gs_dweight(w, wdt, i * ws));
        else
            atomicAdd_block(mine + ((int)k << rshift), 1u);
    };
    if constexpr (sizeof(T) == 1 && !W) {
        /* 8-bit fast path: 16 bytes per load, the bin mapping hoisted out of
         * the loop; 32 replicas (the usual case) get compile-time addressing */
        if (rshift == 5)
            hist_bytes<5>(b, sb, x, n, xs, (unsigned *)mine, 5, one);
        else
            hist_bytes<-1>(b, sb, x, n, xs, (unsigned *)mine, rshift, one);
    } else if constexpr (std::is_same<T, float>::value && !W) {
        /* float32 on equal-width float32 edges: the float estimate alone,
         * with the mode tests hoisted out of the loop */
        if (b.kind == GS_BINS_UNIFORM && b.edges_f32 && gs_edges_in_smem(b)) {
            if (rshift == 5)
                hist_floats<5>(b, sb, x, n, xs, (unsigned *)mine, 5);
            else
                hist_floats<-1>(b, sb, x, n, xs, (unsigned *)mine, rshift);
        } else {
            gs_for_each(x, n, xs, one);
        }
    } else {
        gs_for_each(x, n, xs, one);
    }
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

/* 8-bit data into at most GS_HIST_U8_BINS bins, unweighted, contiguous:
 * GS_HIST_U8_THREADS-thread blocks, GS_HIST_U8_BLOCKS_PER_SM of them per
 * SM, 32 replicas (lane l of every warp owns bank l, whatever the data),
 * GS_HIST_U8_UNROLL 16-byte loads in flight per thread.  MODE: 0 identity
 * (byte = bin), 1 offset with a closed top, 2 lookup table. */
template <int MODE>
__global__ void __launch_bounds__(GS_HIST_U8_THREADS, GS_HIST_U8_BLOCKS_PER_SM)
    hist_u8_kernel(gs_binner b, const uint8_t *__restrict__ x, int64_t n, unsigned long long *__restrict__ out)
{
    __shared__ unsigned h[GS_HIST_U8_BINS * 32];
    __shared__ int lut[MODE == 2 ? 256 : 1];
    for (int i = threadIdx.x; i < GS_HIST_U8_BINS * 32; i += blockDim.x)
        h[i] = 0;
    if (MODE == 2)
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            lut[i] = b.lut[i];
    __syncthreads();
    unsigned *const mine = h + (threadIdx.x & 31);
    const unsigned off = (unsigned)b.offset, lim = (unsigned)(b.nbins + b.closed_top), last = (unsigned)b.nbins - 1;
    auto add = [&](unsigned v) {
        if (MODE == 0) {
            atomicAdd_block(mine + (v << 5), 1u);
        } else if (MODE == 1) {
            const unsigned d = v - off;
            if (d < lim)
                atomicAdd_block(mine + (min(d, last) << 5), 1u);
        } else {
            const int k = lut[v];
            if (k >= 0)
                atomicAdd_block(mine + ((unsigned)k << 5), 1u);
        }
    };
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
    int64_t head = (int64_t)((16 - ((uintptr_t)x & 15)) & 15);
    if (head > n)
        head = n;
    if (tid < head)
        add(x[tid]);
    const int4 *xv = reinterpret_cast<const int4 *>(x + head);
    const int64_t nv = (n - head) >> 4;
    constexpr int U = GS_HIST_U8_UNROLL;
    for (int64_t j = tid; j < nv; j += U * step) {
        int4 r[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            r[u] = j + u * step < nv ? __ldcs(xv + j + u * step) : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; u++)
            if (j + u * step < nv)
                gs_each_byte(r[u], add);
    }
    const int64_t t0 = head + (nv << 4);
    if (tid < n - t0)
        add(x[t0 + tid]);
    __syncthreads();
    for (int k = threadIdx.x; k < (int)b.nbins; k += blockDim.x) {
        unsigned acc = 0;
        for (int r = 0; r < 32; r++) /* rotate the start so a warp reads 32 banks */
            acc += h[(k << 5) + ((r + k) & 31)];
        if (acc != 0)
            atomicAdd(out + k, (unsigned long long)acc);
    }
}

/* The 8-bit kernel above, when it applies (returns 1 and launches). */
static int launch_u8(const gs_hist_launch *l, gs_status *st)
{
    const gs_binner &b = l->binner;
    if (l->w || l->xstride != 1 || b.nbins > GS_HIST_U8_BINS || b.nbins < 1)
        return 0;
    const char *off = getenv("GPUSYNC_HIST_U8_KERNEL"); /* A/B against the general kernel */
    if (off && atoi(off) == 0)
        return 0;
    int mode;
    if (b.kind == GS_BINS_LUT)
        mode = 2;
    else if (b.offset == 0 && b.nbins >= 256)
        mode = 0;
    else if (b.offset >= 0 && b.offset <= 255)
        mode = 1;
    else
        return 0;
    const void *kern = mode == 0 ? (const void *)hist_u8_kernel<0>
                       : mode == 1 ? (const void *)hist_u8_kernel<1>
                                   : (const void *)hist_u8_kernel<2>;
    int per_sm = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, GS_HIST_U8_THREADS, 0);
    if (e != cudaSuccess) {
        *st = gs_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", __FILE__, __LINE__);
        return 1;
    }
    const int64_t resident = (int64_t)(per_sm > 0 ? per_sm : 1) * l->dev->multiprocessors;
    const int64_t per_block = (int64_t)GS_HIST_U8_THREADS * 16 * GS_HIST_U8_UNROLL;
    int64_t grid = (l->n + per_block - 1) / per_block;
    if (grid > resident)
        grid = resident;
    if (grid < (l->dev->multiprocessors + 1) / 2 && l->n > per_block)
        grid = (l->dev->multiprocessors + 1) / 2; /* small inputs: spread over half the SMs at least */
    if (grid <= l->n / GS_HIST_MAX_ELEMS_PER_BLOCK) /* 32-bit shared counters */
        grid = l->n / GS_HIST_MAX_ELEMS_PER_BLOCK + 1;
    if (grid < 1)
        grid = 1;
    const char *force = getenv("GPUSYNC_HIST_GRID"); /* block-count sweeps */
    if (force && atoll(force) > 0)
        grid = atoll(force);
    gs_binner bb = b;
    const uint8_t *xp = (const uint8_t *)l->x;
    int64_t n = l->n;
    unsigned long long *o = (unsigned long long *)l->out;
    void *args[] = {&bb, &xp, &n, &o};
    e = cudaLaunchKernel(kern, dim3((unsigned)grid), dim3(GS_HIST_U8_THREADS), args, 0, l->stream);
    *st = e == cudaSuccess ? GS_OK : gs_cuda_fail(e, "cudaLaunchKernel", __FILE__, __LINE__);
    return 1;
}

template <class T> static gs_status launch(const gs_hist_launch *l)
{
    if constexpr (sizeof(T) == 1) {
        gs_status st8;
        if (launch_u8(l, &st8))
            return st8;
    }
    const int W = l->w != NULL;
    int R = gs_hist_replicas(l->binner.nbins, W, l->dev->shared_memory_per_block_optin);
    if (R == 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "too many bins for strategy 'shared'");
    const char *cap = getenv("GPUSYNC_HIST_REPLICAS"); /* tuning sweeps (scripts/tune_small.py) */
    while (cap && atoi(cap) > 0 && R > atoi(cap))
        R /= 2;
    int rshift = 0;
    while ((1 << rshift) < R)
        rshift++;
    const size_t smem = (size_t)l->binner.nbins * R * (W ? 8 : 4);
    const int threads = GS_HIST_BLOCK_THREADS;
    auto kern = W ? hist_shared_kernel<T, true> : hist_shared_kernel<T, false>;
    const gs_status st = gs_cuda_allow_smem((const void *)kern, l->dev);
    if (st != GS_OK)
        return st;
    int per_sm = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
    const int64_t resident = (int64_t)per_sm * l->dev->multiprocessors;
    int64_t grid = gs_hist_grid(l, resident, threads);
    if (grid < resident && !getenv("GPUSYNC_HIST_GRID")) {
        /* a small input: between half and one block per SM does best
         * (benchmarks/results/tune_small.txt: 5.7 M bytes 9.8 us at 132 blocks
         * against 11.1 us at 174; 1 M bytes 6.5 us at 66 against 7.6 at 32) */
        const int64_t lo = (l->dev->multiprocessors + 1) / 2, hi = l->dev->multiprocessors;
        grid = grid < lo ? lo : (grid > hi ? hi : grid);
    }
    kern<<<(unsigned)grid, threads, smem, l->stream>>>(l->binner, (const T *)l->x, l->n, l->xstride, l->w,
                                                        l->wstride, l->wdtype, l->out, rshift);
    GS_CUDA_CHECK(cudaGetLastError());
    return GS_OK;
}

gs_status gs_hist_shared_launch(const gs_hist_launch *l) { GS_DISPATCH_DTYPE(l->xdtype, launch, l) }

int gs_hist_shared_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:shared", (const void *)hist_shared_kernel<uint8_t, false>, GS_HIST_BLOCK_THREADS,
            (size_t)256 * GS_HIST_MAX_REPLICAS * 4};
    return 1;
}
