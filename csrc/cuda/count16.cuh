/*
 * count16.cuh -- a block's private counts as 16-bit halves of 32-bit shared
 * words: twice the bins one block's shared memory holds (65,536 bins in
 * 128 KiB).  Used by histogramdd's shared16 kernel (histdd.cu) and by
 * histogram's `shared` strategy when 32-bit counters do not fit
 * (hist_halves.cu).  The words are addressed through the caller's extern
 * shared array (a generic pointer made every add convert it: histdd.cu).
 *
 * Overflow: the add that takes a half from 0x7fff to 0x8000 -- exactly one
 * add sees the old value 0x7fff -- moves 0x8000 of it to the result (the
 * caller's to_result: a global add, or histdd.cu's per-block carry log where
 * the result is written after the count), so a half stays far below 0x10000.  An add that sees 0xffff (a half about to
 * carry into its neighbour: 32,768 adds to one bin while one thread went
 * from its add to its subtraction -- never seen, but not excluded by any
 * bound) raises the block's flag, and the launcher's recount (every count
 * again, with global atomics) runs when a flag is set.  Only a block that
 * counts 0xffff points or more can raise it (gs_count16_may_overflow).
 */
#ifndef GPUSYNC_CUDA_COUNT16_CUH
#define GPUSYNC_CUDA_COUNT16_CUH

#include <stdint.h>

/* One more in half `at` (half at & 1 of word at >> 1); returns the word's
 * old value shifted down to that half (the bits above it are the
 * neighbour's): gs_near16 / gs_settle16 look at it. */
__device__ __forceinline__ unsigned gs_add16(unsigned *words, int at)
{
    const int sh = (at & 1) * 16;
    return atomicAdd(words + (at >> 1), 1u << sh) >> sh;
}

/* The half was 0x7fff or 0xffff (one LOP3 and a branch on the common path). */
__device__ __forceinline__ bool gs_near16(unsigned old) { return (~old & 0x7fffu) == 0; }

/* c more in half `at` at once (a warp's elements of one bin, c <= 4096);
 * returns the half's old value. */
__device__ __forceinline__ unsigned gs_addn16(unsigned *words, int at, unsigned c)
{
    const int sh = (at & 1) * 16;
    return (atomicAdd(words + (at >> 1), c << sh) >> sh) & 0xffffu;
}

/* After gs_addn16: the add that took the half from below 0x8000 to 0x8000
 * or more moves 0x8000 to the result (for c = 1: the add that found 0x7fff);
 * one that carried past 0xffff raises the overflow flag (the recount then
 * counts the input again). */
template <class F>
__device__ __forceinline__ void gs_settlen16(unsigned *words, int at, unsigned old, unsigned c, int *s_overflow,
                                             F &&to_result)
{
    if (old + c > 0xffffu) {
        *s_overflow = 1;
    } else if (old < 0x8000u && old + c >= 0x8000u) {
        atomicSub(words + (at >> 1), 0x8000u << ((at & 1) * 16));
        to_result(0x8000u);
    }
}

/* After gs_add16 and gs_near16 (c = 1): gs_settlen16 of the half's old value. */
template <class F>
__device__ __forceinline__ void gs_settle16(unsigned *words, int at, unsigned old, int *s_overflow, F &&to_result)
{
    gs_settlen16(words, at, old & 0xffffu, 1u, s_overflow, to_result);
}

/* Half k's count. */
__device__ __forceinline__ unsigned gs_half16(const unsigned *words, int64_t k)
{
    return (words[k >> 1] >> ((int)(k & 1) * 16)) & 0xffffu;
}

/* The block's non-zero halves of bins [0, nbins): add(k, count) for each,
 * after the block's last count (the caller's barrier).  A warp's adds go to
 * consecutive bins (32 consecutive 8-byte results: a few L2 sectors an add
 * -- lanes four bins apart measured 1.6x slower, ncu r29), and a thread
 * reads its next GS_FLUSH16_UNROLL bins before it adds them: one bin at a
 * time left it waiting on shared-memory latency 64 times in a row (a third
 * of a 20M-point 256 x 256 count, ncu r27). */
constexpr int GS_FLUSH16_UNROLL = 4;
template <class F> __device__ __forceinline__ void gs_flush16(const unsigned *words, int64_t nbins, F &&add)
{
    const int64_t span = (int64_t)GS_FLUSH16_UNROLL * blockDim.x;
    for (int64_t k0 = threadIdx.x; k0 < nbins; k0 += span) {
        unsigned v[GS_FLUSH16_UNROLL];
#pragma unroll
        for (int j = 0; j < GS_FLUSH16_UNROLL; j++) {
            const int64_t k = k0 + (int64_t)j * blockDim.x;
            v[j] = k < nbins ? gs_half16(words, k) : 0u;
        }
#pragma unroll
        for (int j = 0; j < GS_FLUSH16_UNROLL; j++)
            if (v[j])
                add(k0 + (int64_t)j * blockDim.x, v[j]);
    }
}

/* Whether a block that counts at most `per_block` points can raise the
 * overflow flag (then the launcher allocates it and queues the recount). */
__host__ __device__ constexpr bool gs_count16_may_overflow(int64_t per_block) { return per_block >= 0xffff; }

#endif /* GPUSYNC_CUDA_COUNT16_CUH */
