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
#include "hist_launch.cuh"
#include "kernel_refs.cuh"

#include <stdio.h>
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

/* The byte and float loops below use no warp-wide intrinsics: their vectors
 * go without the per-vector warp vote (elements.cuh).  GS_HIST_LEAN=0 puts
 * the vote back (an A/B build). */
#ifndef GS_HIST_LEAN
#define GS_HIST_LEAN 1
#endif
constexpr bool LOOP_WARP = GS_HIST_LEAN == 0;

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
        gs_for_each_vec<GS_HIST_VEC_UNROLL, LOOP_WARP>(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
            if (ok)
                gs_each_byte(r.v, [&](unsigned v) {
                    const int k = sb.lut[v];
                    if (k >= 0)
                        add((unsigned)k);
                });
        });
    } else if (gs_bins_are_bytes(&b)) {
        gs_for_each_vec<GS_HIST_VEC_UNROLL, LOOP_WARP>(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
            if (ok)
                gs_each_byte(r.v, add);
        });
    } else if (b.offset >= 0 && b.offset <= 255) {
        const unsigned off = (unsigned)b.offset, lim = (unsigned)(b.nbins + b.closed_top),
                       last = (unsigned)b.nbins - 1;
        gs_for_each_vec<GS_HIST_VEC_UNROLL, LOOP_WARP>(x, n, xs, one, [&](const gs_vec<T> &r, int64_t, bool ok) {
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
    gs_for_each<LOOP_WARP>(x, n, xs, [&](float v, int64_t, bool ok) {
        const int k = ok ? (int)gs_bin_uniform_f(b, sb, v) : -1;
        if (k >= 0)
            atomicAdd_block(mine + (k << sh), 1u);
    });
}

template <class T, bool W>
__global__ void __launch_bounds__(GS_HIST_BLOCK_THREADS, GS_HIST_BLOCKS_PER_SM)
    hist_shared_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, void *out, int rshift, gs_hist_fin fin)
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
            /* (past the shared table the generic path below: the edges' formula compiled into this loop made
             * the kernel spill 144 bytes instead of 64 -- review33b; contiguous data past it takes
             * hist_small.cu's kernel) */
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
    /* (weighted: never fused -- the call to the fused end made the float32 and float16 weighted kernels spill
     * 100 more bytes of loads at their 32 registers; hist.cu does not ask) */
    if constexpr (W)
        gs_hist_merge(h, nb, rshift, (double *)out);
    else
        gs_hist_finish(h, nb, rshift, (unsigned long long *)out, fin);
}

/* Contiguous 8-bit data past GS_HIST_U8_SMALL_MAX_BYTES, unweighted: the byte kernel.  The issue slots, not the
 * shared atomics' pipe, bounded the generic kernel above on these bytes (ncu, H200 r204 / r205: 76 % of issue slots
 * busy, six instructions a shared atomic; with one PRMT a byte the same atomics alone ran 1.37x faster).  So the
 * kernel counts the 256 raw bytes, whatever the bins: every byte value has GS_HIST_BYTES_REPLICAS = 64 words, laid
 * out [byte][64]; lane l of an even warp adds to word l of the row, of an odd warp to word 32 + l, and the counter's
 * byte offset v << 8 | l << 2 | (warp & 1) << 7 is one __byte_perm of the loaded word and the thread's low byte -- a
 * PRMT and the atomic, a byte.  A warp's 32 updates sit in 32 banks, as with 32 replicas.  The block's end is
 * gs_hist_finish's on the 256 rows: on the identity bins (IDENT: byte v counts in bin v, a 256-bin histogram over
 * (0, 256), bincount of bytes) row v is bin v; else row v adds to the bin the binner gives byte v (a table in shared
 * memory; fewer bins, an offset, a lookup table: no per-byte lookup in the loop). */
constexpr size_t BYTES_SMEM = (size_t)256 * GS_HIST_BYTES_REPLICAS * sizeof(unsigned); /* the byte kernel's rows */
template <int U, bool IDENT>
__global__ void __launch_bounds__(GS_HIST_BYTES_THREADS, 1)
    hist_bytes_kernel(gs_binner b, const uint8_t *__restrict__ x, int64_t n, void *out, int stream, gs_hist_fin fin)
{
    static_assert(GS_HIST_BYTES_REPLICAS == 64, "the byte offset below is 8 bits of byte, 6 of replica, 2 of word");
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int bin[IDENT ? 1 : 256];
    unsigned *const h = (unsigned *)smem;
    for (int i = threadIdx.x; i < 256 * GS_HIST_BYTES_REPLICAS / 4; i += blockDim.x)
        reinterpret_cast<uint4 *>(h)[i] = make_uint4(0, 0, 0, 0);
    if (!IDENT)
        for (int i = threadIdx.x; i < 256; i += blockDim.x) {
            const int64_t k = gs_bin_byte(&b, (uint8_t)i);
            bin[i] = k >= 0 && k < b.nbins ? (int)k : -1;
        }
    __syncthreads();
    const unsigned mine = (threadIdx.x << 2) & 0xfcu; /* lane << 2 | (warp & 1) << 7 */
    auto add = [&](unsigned off) { atomicAdd_block((unsigned *)(smem + off), 1u); };
    gs_for_each_vec<U, false>(
        x, n, 1,
        [&](uint8_t v, int64_t, bool ok) {
            if (ok)
                add((unsigned)v << 8 | mine);
        },
        [&](const gs_vec<uint8_t> &r, int64_t, bool) {
            const unsigned w[4] = {(unsigned)r.v.x, (unsigned)r.v.y, (unsigned)r.v.z, (unsigned)r.v.w};
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int j = 0; j < 4; j++) /* result bytes: mine, byte j of w, 0, 0 */
                    add(__byte_perm(w[q], mine, 0x5504u | (unsigned)j << 4));
        },
        stream != 0);
    if constexpr (IDENT)
        gs_hist_finish(h, 256, 6, (unsigned long long *)out, fin);
    else
        gs_hist_finish(h, 256, 6, (unsigned long long *)out, fin, gs_bin_table{bin});
}

/* The grid of a small input (fewer blocks than fit at once): between half
 * and one block per SM does best (benchmarks/results/tune_small.txt: 5.7 M
 * bytes 9.8 us at 132 blocks against 11.1 us at 174; 1 M bytes 6.5 us at 66
 * against 7.6 at 32), unless GPUSYNC_HIST_GRID forced it. */
static int64_t small_input_grid(const gs_hist_launch *l, int64_t grid, int64_t resident)
{
    int forced = 0;
    gs_env_number(GS_ENV_HIST_GRID, 0, &forced);
    if (grid >= resident || forced)
        return grid;
    const int64_t lo = (l->dev->multiprocessors + 1) / 2, hi = l->dev->multiprocessors;
    return grid < lo ? lo : (grid > hi ? hi : grid);
}

/* hist_bytes_kernel where it applies (1 and *st set), else 0. */
static int bytes_try(const gs_hist_launch *l, gs_status *st, int *declined)
{
    const gs_binner &b = l->binner;
    const size_t smem = BYTES_SMEM, table = 256 * sizeof(int); /* (bin[], static) */
    if (l->w || l->xstride != 1 || (b.kind != GS_BINS_DIRECT && b.kind != GS_BINS_LUT) ||
        (int64_t)(smem + table) > l->dev->shared_memory_per_block_optin ||
        gs_env_number(GS_ENV_HIST_BYTES, 1, NULL) == 0)
        return 0;
    const bool ident = gs_bins_are_bytes(&b);
    auto kern = ident ? hist_bytes_kernel<GS_HIST_BYTES_LOADS, true> : hist_bytes_kernel<GS_HIST_BYTES_LOADS, false>;
    const int threads = GS_HIST_BYTES_THREADS;
    int64_t resident = 0;
    *st = gs_cuda_allow_smem((const void *)kern, l->dev);
    if (*st == GS_OK)
        *st = gs_cuda_resident_blocks((const void *)kern, threads, smem, l->dev, &resident);
    if (*st != GS_OK)
        return 1;
    const int64_t grid = small_input_grid(l, gs_hist_grid(l, resident, threads), resident);
    /* evict-first loads only for inputs larger than the L2 (the sums' rule, reduce.cu) */
    const int forced = (int)gs_env_number(GS_ENV_HIST_BYTES_STREAM, -1, NULL);
    const int stream = forced >= 0 ? forced : l->n > l->dev->l2_cache_bytes;
    *st = gs_hist_launch_fin(l, kern, grid, threads, smem, declined, l->binner, (const uint8_t *)l->x, l->n, l->out,
                             stream);
    if (*st == GS_OK && !*declined && gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] histogram kernel: bytes%s (%lld blocks of %d)\n", ident ? "" : ", bins from a table",
                (long long)grid, threads);
    return 1;
}

/* The fast paths of hist_small.cu where they apply, else this kernel; with
 * l->fuse (the fused form asked for), *declined when it does not fit and
 * nothing was launched. */
template <class T> static gs_status launch(const gs_hist_launch *l, int *declined)
{
    gs_status small_st = GS_OK;
    if (gs_hist_small_try(l, &small_st, declined) || *declined)
        return small_st;
    if (sizeof(T) == 1 && bytes_try(l, &small_st, declined))
        return small_st;
    const int W = l->w != NULL;
    const int rshift = gs_hist_replica_shift(l);
    if (rshift < 0) { /* not even one copy of 32-bit counters: 16-bit halves (resolve_strategy checked they fit) */
        if (l->fuse) {
            *declined = 1;
            return GS_OK;
        }
        return gs_hist_halves_launch(l);
    }
    const int R = 1 << rshift;
    const size_t smem = (size_t)l->binner.nbins * R * (W ? 8 : 4);
    const int threads = GS_HIST_BLOCK_THREADS;
    auto kern = W ? hist_shared_kernel<T, true> : hist_shared_kernel<T, false>;
    gs_status st = gs_cuda_allow_smem((const void *)kern, l->dev);
    int64_t resident = 0;
    if (st == GS_OK)
        st = gs_cuda_resident_blocks((const void *)kern, threads, smem, l->dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t grid = small_input_grid(l, gs_hist_grid(l, resident, threads), resident);
    return gs_hist_launch_fin(l, kern, grid, threads, smem, declined, l->binner, (const T *)l->x, l->n, l->xstride,
                              l->w, l->wstride, l->wdtype, l->out, rshift);
}

int gs_hist_shared_fused(const gs_hist_launch *l, gs_status *st)
{
    if (l->n <= 0)
        return 0; /* (zeroes alone: hist_init is the one launch) */
    int declined = 0;
    *st = gs_dtype_switch((gs_dtype)l->xdtype,
                          [&](auto t_) { return launch<gs_byte_as_u8<GS_TYPE(t_)>>(l, &declined); });
    return !declined;
}

gs_status gs_hist_shared_launch(const gs_hist_launch *l)
{
    gs_status st = GS_OK;
    gs_hist_shared_fused(l, &st); /* (l->fuse == 0: never declined) */
    return st;
}

int gs_hist_shared_refs(gs_kernel_ref *r)
{
    r[0] = {"histogram:shared", (const void *)hist_shared_kernel<uint8_t, false>, GS_HIST_BLOCK_THREADS,
            (size_t)256 * GS_HIST_MAX_REPLICAS * 4};
    r[1] = {"histogram:shared-bytes", (const void *)hist_bytes_kernel<GS_HIST_BYTES_LOADS, true>, GS_HIST_BYTES_THREADS,
            BYTES_SMEM};
    return 2;
}
