/*
 * Strategy `global` (seed 001, example 4.3): every element is one atomic add
 * into the histogram in global memory.  Needs no shared memory, so any
 * number of bins works -- and equal values serialize on one L2 address,
 * which is why the other strategies exist.
 *
 * Unweighted counts on 65,536 to 16M bins of 4M+ elements take the partition
 * instead (below, part_bits): shared-memory adds, a digit of the bins at a
 * time; what follows is for the others (weighted sums, more bins, local
 * input, GPUSYNC_HIST_PART=0).
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
#include "gpusync/scan.cuh"
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

/* hist_global_locality's verdicts (below): at least half the tested stretches
 * local; for the partition also runs of equal bins shorter than 32 on average
 * (fewer than 31 of 32 neighbours' pairs equal): longer runs put the one
 * pass's adds on one L2 address after another, while the partition counts
 * them in registers and shared memory.  Sorted int64 (r221/r222, H200, one
 * pass / partition): runs of 64 (64M on 1M bins) 778 / 436 us; runs of 16
 * (64M on 4M bins) 485-502 / 537-548, (16M on 1M bins) 139 / 160; runs of 4
 * (64M on 16M bins) 476-484 / 499. */
__host__ __device__ __forceinline__ bool locally_counted(const unsigned *v) { return v[1] > 0 && 2 * v[0] >= v[1]; }
__host__ __device__ __forceinline__ bool part_one_pass(const unsigned *v)
{
    return locally_counted(v) && 32ull * v[2] < 31ull * v[3];
}

/* One atomic add an element whose bin k lies in [lo, lo + span) (every bin:
 * lo = 0, span = the bins), into C counters (the int64 result, or 32-bit
 * scratch counters) or, weighted, into the double sums; `mode` (NULL, or
 * hist_global_locality's counts) may widen the first pass to every bin.
 * WINDOW false: one pass over every bin, without the window's values in
 * the loop (float64 data: ptxas spills 76 bytes with them, 8 without). */
template <class T, bool W, class C, bool WINDOW>
__global__ void __launch_bounds__(GS_HIST_GLOBAL_THREADS)
    hist_global_kernel(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, const void *__restrict__ w,
                       int64_t ws, int wdt, C *out, int64_t lo, int64_t span, const unsigned *mode,
                       bool runs)
{
    /* the sampled input is local (runs: with short runs, the partition's verdict): the first pass (the one from
     * bin 0: passes <= bins) counts every element, the rest return */
    if (WINDOW && mode && (runs ? part_one_pass(mode) : locally_counted(mode))) {
        if (lo != 0)
            return;
        span = b.nbins;
    }
    if (WINDOW && span == 0) /* (the partition's one pass, for a local sample alone (runs): not local) */
        return;
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
 * half the tested stretches are local (locally_counted).  v[2] and v[3]: the
 * tested stretches' pairs of neighbours in one bin, and all their pairs
 * (part_one_pass). */
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
    int esum = (v0 && v1 && k0 == k1) + (vp && v0 && prev == k0);
    int64_t lo = v0 ? k0 : INT64_MAX, hi = v0 ? k0 : -1;
    if (v1)
        lo = lo < k1 ? lo : k1, hi = hi > k1 ? hi : k1;
    int nsum = near, psum = pairs;
    for (int o = 16; o > 0; o >>= 1) {
        nsum += __shfl_xor_sync(0xffffffffu, nsum, o);
        esum += __shfl_xor_sync(0xffffffffu, esum, o);
        psum += __shfl_xor_sync(0xffffffffu, psum, o);
        const int64_t l2 = __shfl_xor_sync(0xffffffffu, lo, o), h2 = __shfl_xor_sync(0xffffffffu, hi, o);
        lo = lo < l2 ? lo : l2, hi = hi > h2 ? hi : h2;
    }
    if (lane == 0 && psum >= 32) { /* (a stretch mostly outside the bins says nothing) */
        atomicAdd(v + 1, 1u);
        if (hi - lo < 4096 || 2 * nsum > psum)
            atomicAdd(v, 1u);
        atomicAdd(v + 2, (unsigned)esum);
        atomicAdd(v + 3, (unsigned)psum);
    }
}

/* out[k] += c[k]: the 32-bit counts into the int64 result. */
__global__ void __launch_bounds__(256) hist_global_widen(const unsigned *__restrict__ c, int64_t nb,
                                                         unsigned long long *out)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nb; k += (int64_t)gridDim.x * blockDim.x)
        out[k] += c[k];
}

/* ---- The partition: counts on 65,536 to 16M bins in shared memory (issue 14)
 *
 * One L2 atomic an element bounds the passes above: about 95 G adds a second
 * on the H200 (64M values on 1M bins: ~705 us) whatever the counters' width.
 * The partition turns them into shared-memory adds, in two kernels over
 * 16-bit scratch (probe benchmarks/probes/bins_partition.cu):
 *
 *   rank   a block takes tiles of GS_HIST_PART_TILE elements, bins them, and
 *          splits each bin k into a digit k >> lb and its low lb bits; it
 *          ranks every element within its digit with a shared atomic (one a
 *          warp where the warp's 32 elements share a digit: sorted data, one
 *          value) and writes the tile's low bits as uint16 grouped by digit,
 *          with the tile's D + 1 digit offsets.  Its digit counts, summed
 *          over its tiles, and the number of its tiles each digit has
 *          elements in, go to D global totals once a block.
 *   count  the grid's blocks split among the digits by those totals (about
 *          the same number of elements each); a block counts its digit's low
 *          bits of every G-th tile in 2^lb shared counters, groups of lanes
 *          (sized to the digit's segments) reading a segment in 16-byte
 *          vectors, 8 equal values one add, and adds its counters to the
 *          int64 counts -- with a plain add where the digit has this block
 *          alone (G = 1: its bins are no other block's).
 *
 * Traffic: the input once, 2 bytes an element written and read, the offsets
 * (D + 1 words a tile), and at most (blocks x 2^lb) adds into the result.
 * The probe, H200, 64M int64 values (bins_partition_H200_r216.txt): 1M
 * uniform bins 712 -> 308 us, 16M 3,168 -> 514, 1M skewed (u^4) 4,423 -> 341;
 * the package (graph replay with the edges, histogram_manybins_H200.md r222 /
 * _H100.md r223): 1M uniform 715 -> 418 us (H100 839 -> 435), skewed 4,373
 * -> 426, 16M uniform 1,080 -> 776 (the L2 passes before).  A local input
 * with short runs (part_one_pass, the sampler's verdict) keeps the one pass,
 * whose adds hit L2 (hist_global_locality).  lb: the digit bits (10-14,
 * 2^lb x 4 bytes of counters a block), D = bins >> lb digits, at most
 * GS_HIST_PART_THREADS (one thread a digit finds a block's digit). */
#ifndef GS_HIST_PART_THREADS
#define GS_HIST_PART_THREADS 1024
#endif
/* The rank kernel's blocks: threads, and the blocks an SM it is compiled for
 * (64 registers, no spills).  Two blocks of 512 against one of 1024, every
 * other choice the same (r219, H200, part_sweep_H200_r219_r222_H100_r223.txt): 64M
 * int64 on 1M uniform bins 472 -> 431 us, 128K bins 443 -> 419, 16M bins
 * 763 -> 767; one block's loads overlap the other's scan and scatter. */
#ifndef GS_HIST_PART_RANK_THREADS
#define GS_HIST_PART_RANK_THREADS 512
#endif
#ifndef GS_HIST_PART_RANK_BLOCKS
#define GS_HIST_PART_RANK_BLOCKS 2
#endif
#ifndef GS_HIST_PART_PER
#define GS_HIST_PART_PER 16 /* elements a thread of the rank kernel, loaded before any is binned */
#endif
#define GS_HIST_PART_TILE (GS_HIST_PART_RANK_THREADS * GS_HIST_PART_PER)
#ifndef GS_HIST_PART_MIN_BINS
#define GS_HIST_PART_MIN_BINS 65536
#endif
#ifndef GS_HIST_PART_MIN_N
#define GS_HIST_PART_MIN_N (1 << 22)
#endif
/* The count kernel's blocks: at most the resident ones, and few enough that
 * each takes GS_HIST_PART_FLUSH elements a shared counter -- a block adds all
 * 2^lb of them to the result (global atomics), so that (blocks x 2^lb) stays
 * an eighth of the elements' adds.  r218 (H200, 4M int64 on 1M bins, every
 * resident block): 80 us against the one pass's 56, the 264 blocks' 4.3M
 * flushing adds a third of it. */
#ifndef GS_HIST_PART_FLUSH
#define GS_HIST_PART_FLUSH 8
#endif
#define GS_HIST_PART_MAX_LB 14

template <class T>
__global__ void __launch_bounds__(GS_HIST_PART_RANK_THREADS, GS_HIST_PART_RANK_BLOCKS)
    hist_part_rank(gs_binner b, const T *__restrict__ x, int64_t n, int64_t xs, int lb, int D,
                   uint16_t *__restrict__ low, uint32_t *__restrict__ offs, unsigned long long *tot,
                   unsigned *nt, const unsigned *mode)
{
    if (part_one_pass(mode)) /* (the one pass counts) */
        return;
    extern __shared__ uint32_t part_sm[];
    /* the tile's digit counts, then offsets; the block's totals, and its tiles where the digit has elements */
    uint32_t *cnt = part_sm, *btot = part_sm + (D + 1), *bnt = btot + D;
    uint16_t *stage = (uint16_t *)(part_sm + ((3 * D + 1 + 3) & ~3));
    __shared__ gs_smem_bins sb;
    gs_bins_prepare(b, sb);
    for (int d = threadIdx.x; d < D; d += GS_HIST_PART_RANK_THREADS)
        btot[d] = bnt[d] = 0;
    const unsigned lane = threadIdx.x & 31, mask = (1u << lb) - 1;
    const int64_t tiles = (n + GS_HIST_PART_TILE - 1) / GS_HIST_PART_TILE;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t base = t * GS_HIST_PART_TILE;
        for (int d = threadIdx.x; d <= D; d += GS_HIST_PART_RANK_THREADS)
            cnt[d] = 0;
        __syncthreads();
        uint32_t key[GS_HIST_PART_PER]; /* digit << 16 | low bits; ~0: no bin (outside the bins, or past n) */
        {
            T v[GS_HIST_PART_PER];
#pragma unroll
            for (int k = 0; k < GS_HIST_PART_PER; k++) {
                const int64_t i = base + k * GS_HIST_PART_RANK_THREADS + threadIdx.x;
                v[k] = i < n ? x[i * xs] : T();
            }
#pragma unroll
            for (int k = 0; k < GS_HIST_PART_PER; k++) {
                const int64_t i = base + k * GS_HIST_PART_RANK_THREADS + threadIdx.x;
                const int64_t bin = i < n ? gs_dbin(b, sb, v[k]) : -1;
                key[k] = bin >= 0 ? (uint32_t)(bin >> lb) << 16 | ((uint32_t)bin & mask) : ~0u;
            }
        }
        uint32_t r[GS_HIST_PART_PER];
#pragma unroll
        for (int k = 0; k < GS_HIST_PART_PER; k++) { /* the rank within the digit */
            const uint32_t dg = key[k] >> 16, d0 = __shfl_sync(0xffffffffu, dg, 0);
            if (__all_sync(0xffffffffu, dg == d0)) { /* one digit (or none) for the warp: one add */
                uint32_t at = 0;
                if (lane == 0 && d0 != 0xffffu)
                    at = atomicAdd(cnt + d0, 32u);
                r[k] = __shfl_sync(0xffffffffu, at, 0) + lane;
            } else {
                r[k] = dg != 0xffffu ? atomicAdd(cnt + dg, 1u) : 0;
            }
        }
        __syncthreads();
        if (threadIdx.x < 32) { /* the exclusive scan of the D counts, by one warp */
            uint32_t carry = 0;
            for (int d0 = 0; d0 < D; d0 += 32) {
                const int d = d0 + (int)lane;
                const uint32_t c0 = d < D ? cnt[d] : 0, s = gpusync::warp_inclusive_scan(c0);
                if (d < D) {
                    cnt[d] = carry + s - c0;
                    btot[d] += c0;
                    bnt[d] += c0 != 0;
                }
                carry += __shfl_sync(0xffffffffu, s, 31);
            }
            if (lane == 0)
                cnt[D] = carry;
        }
        __syncthreads();
        for (int d = threadIdx.x; d <= D; d += GS_HIST_PART_RANK_THREADS)
            offs[t * (D + 1) + d] = cnt[d];
#pragma unroll
        for (int k = 0; k < GS_HIST_PART_PER; k++)
            if (key[k] != ~0u)
                stage[cnt[key[k] >> 16] + r[k]] = (uint16_t)key[k];
        __syncthreads();
        const int total = (int)cnt[D]; /* the tile's elements in bins, staged in [0, total) */
        const uint32_t *s32 = (const uint32_t *)stage;
        uint32_t *l32 = (uint32_t *)(low + base); /* (the tile starts 4-byte aligned: its size is even) */
        for (int j = threadIdx.x; j < total / 2; j += GS_HIST_PART_RANK_THREADS)
            l32[j] = s32[j];
        if ((total & 1) && threadIdx.x == 0)
            low[base + total - 1] = stage[total - 1];
        for (int j = total + threadIdx.x; j < ((total + 7) & ~7); j += GS_HIST_PART_RANK_THREADS)
            low[base + j] = 0; /* (the count kernel's last vector reads them, masked: defined for initcheck) */
        __syncthreads();
    }
    for (int d = threadIdx.x; d < D; d += GS_HIST_PART_RANK_THREADS)
        if (btot[d]) {
            atomicAdd(tot + d, (unsigned long long)btot[d]);
            atomicAdd(nt + d, bnt[d]);
        }
}

/* The count: `blocks` of the grid take the digits' elements, block j of
 * digit d's G blocks its tiles j, j + G, ...; the grid's other blocks (it
 * has blocks + D: each digit rounds its share up) return. */
__global__ void __launch_bounds__(GS_HIST_PART_THREADS, 2)
    hist_part_count(const uint16_t *__restrict__ low, const uint32_t *__restrict__ offs, int64_t tiles, int lb,
                    int D, const unsigned long long *__restrict__ tot, const unsigned *__restrict__ nt, int blocks,
                    unsigned long long *out,
                    int64_t nbins, const unsigned *mode)
{
    static_assert(GS_HIST_PART_TILE % 8 == 0 && GS_HIST_PART_THREADS <= 1024, "16-byte vectors; one warp's scan");
    if (part_one_pass(mode))
        return;
    extern __shared__ uint32_t part_sm[];
    uint32_t *h = part_sm;
    __shared__ int my_d, my_j, my_g;
    __shared__ unsigned long long scratch[33];
    const int lane = threadIdx.x & 31;
    { /* this block's digit: thread d holds digit d's total; the digits' total (the share a block), then the
       * scan of the digits' block counts finds where blockIdx.x falls */
        const unsigned long long td = (int)threadIdx.x < D ? tot[threadIdx.x] : 0;
        unsigned long long all, blocks_all;
        if (threadIdx.x == 0)
            my_d = -1; /* (the scans' barriers order it before the digit's thread sets it) */
        gpusync::block_exclusive_scan(td, scratch, &all);
        const unsigned long long per = (all + blocks - 1) / blocks;
        const unsigned long long g = per ? (td + per - 1) / per : 0;
        const int first = (int)gpusync::block_exclusive_scan(g, scratch, &blocks_all);
        if (g > 0 && (int)blockIdx.x >= first && (int)blockIdx.x < first + (int)g)
            my_d = threadIdx.x, my_j = (int)blockIdx.x - first, my_g = (int)g;
    }
    __syncthreads();
    const int d = my_d, j = my_j, G = my_g;
    if (d < 0)
        return;
    const int nh = 1 << lb;
    for (int k = threadIdx.x; k < nh; k += GS_HIST_PART_THREADS)
        h[k] = 0;
    __syncthreads();
    /* lanes a segment: the digit's mean segment where it has any (its elements over the tiles that hold them:
     * sorted input puts a digit in a few long segments) over 16 values a lane, up to a warp */
    int GS = 1;
    while (GS < 32 && (unsigned long long)GS * 16 * nt[d] < tot[d])
        GS *= 2;
    const int sub = lane % GS, group = threadIdx.x / GS, groups = GS_HIST_PART_THREADS / GS;
    for (int64_t t = j + (int64_t)G * group; t < tiles; t += (int64_t)G * groups) {
        const uint32_t s = __ldg(offs + t * (D + 1) + d), e = __ldg(offs + t * (D + 1) + d + 1);
        const uint16_t *seg = low + t * GS_HIST_PART_TILE;
        for (uint32_t a = (s & ~7u) + 8u * sub; a < e; a += 16u * GS) { /* two vectors in flight a lane */
            uint4 v[2];
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const uint32_t at = a + 8u * GS * u;
                v[u] = at < e ? __ldcs((const uint4 *)(seg + at)) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const uint32_t at = a + 8u * GS * u;
                const uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
                if (at >= s && at + 8 <= e && w[0] == w[1] && w[1] == w[2] && w[2] == w[3] &&
                    (w[0] >> 16) == (w[0] & 0xffffu)) { /* 8 values of one bin (runs, one value): one add */
                    atomicAdd_block(h + (w[0] & 0xffffu), 8u);
                    continue;
                }
#pragma unroll
                for (int q = 0; q < 8; q++) /* (a vector's values outside the segment are skipped) */
                    if (at + q >= s && at + q < e)
                        atomicAdd_block(h + ((w[q >> 1] >> ((q & 1) * 16)) & 0xffffu), 1u);
            }
        }
    }
    __syncthreads();
    const int64_t first = (int64_t)d << lb;
    for (int k = threadIdx.x; k < nh; k += GS_HIST_PART_THREADS)
        if (h[k] && first + k < nbins) {
            if (G == 1)
                out[first + k] += h[k]; /* (the digit's bins are this block's alone) */
            else
                atomicAdd(out + first + k, (unsigned long long)h[k]);
        }
}

/* The partition's digit bits for this call, or 0 where it does not apply:
 * unweighted counts on GS_HIST_PART_MIN_BINS to GS_HIST_PART_THREADS << 14
 * bins, at least GS_HIST_PART_MIN_N elements and as many as the bins, fewer
 * than 2^32 (the 32-bit shared counts).  lb: about 64 digits, 10 to 14 bits
 * (at most 1,024 digits; 0 where 2^lb counters need more shared memory than a
 * block has); GPUSYNC_HIST_PART forces it, on fewer elements too (0: never). */
static int part_bits(const gs_hist_launch *l)
{
    const int64_t nb = l->binner.nbins;
    int set = 0;
    const int forced = (int)gs_env_number(GS_ENV_HIST_PART, -1, &set);
    const bool force = set && forced > 0;
    if ((set && forced == 0) || l->w || nb < GS_HIST_PART_MIN_BINS ||
        nb > ((int64_t)GS_HIST_PART_THREADS << GS_HIST_PART_MAX_LB) || (l->n < GS_HIST_PART_MIN_N && !force) ||
        l->n < nb || l->n >= ((int64_t)1 << 32))
        return 0;
    int lb = 0;
    while (((int64_t)1 << lb) < nb)
        lb++;
    lb -= 6;
    if (force)
        lb = forced;
    /* the widest the count kernel's counters (and its static shared memory, < 1 KiB) fit a block: 14 on sm_90,
     * 13 where a block takes 64 KiB (sm_75) */
    int most = GS_HIST_PART_MAX_LB;
    while (most >= 10 && ((int64_t)4 << most) + 1024 > l->dev->shared_memory_per_block_optin)
        most--;
    lb = lb < 10 ? 10 : lb > most ? most : lb;
    while (((nb + ((int64_t)1 << lb) - 1) >> lb) > GS_HIST_PART_THREADS) /* (a forced width: the least that fits) */
        lb++;
    return lb <= most ? lb : 0;
}

static size_t round16(size_t b) { return (b + 15) / 16 * 16; }

/* The locality sampler into `mode` (zeroed before), for the partition and the passes alike. */
template <class T> static cudaError_t sample_locality(const gs_hist_launch *l, unsigned *mode)
{
    hist_global_locality<T><<<GS_HIST_GLOBAL_SAMPLES / 8, 256, 0, l->stream>>>(l->binner, (const T *)l->x, l->n,
                                                                               l->xstride, mode);
    return cudaGetLastError();
}

/* The sampler's first `k` words, read back for the debug line alone: a wait, outside a capture (false there,
 * or when the read fails). */
static bool read_sample(const gs_hist_launch *l, const unsigned *mode, unsigned *v, int k)
{
    return mode && !gs_cuda_maybe_capturing(l->stream) &&
           cudaMemcpyAsync(v, mode, sizeof(unsigned) * k, cudaMemcpyDeviceToHost, l->stream) == cudaSuccess &&
           cudaStreamSynchronize(l->stream) == cudaSuccess;
}

/* The partition's launches (the plan of part_bits); *ran false (nothing
 * launched, the error cleared) where its scratch does not fit outside a
 * capture, for the caller's other plans. */
template <class T> static gs_status part_launch(const gs_hist_launch *l, int lb, bool *ran)
{
    const int64_t nb = l->binner.nbins, n = l->n, tiles = (n + GS_HIST_PART_TILE - 1) / GS_HIST_PART_TILE;
    const int D = (int)((nb + ((int64_t)1 << lb) - 1) >> lb);
    /* the scratch: the sampler's words, the D totals and tile counts, the offsets, the low bits (+ a vector's
     * overrun) */
    const size_t at_tot = 16, at_nt = at_tot + round16((size_t)D * 8), at_offs = at_nt + round16((size_t)D * 4),
                 at_low = at_offs + round16((size_t)tiles * (D + 1) * 4), bytes = at_low + round16((size_t)n * 2) + 16;
    void *scratch = NULL;
    gs_status st = GS_OK;
    const cudaError_t e = gs_malloc_async(&scratch, bytes, l->stream);
    if (e != cudaSuccess) {
        if (gs_cuda_maybe_capturing(l->stream))
            GS_CUDA_CHECK(e); /* (a failed call has broken the capture: no fallback) */
        cudaGetLastError();
        *ran = false;
        return GS_OK;
    }
    *ran = true;
    char *sc = (char *)scratch;
    unsigned *mode = (unsigned *)sc;
    unsigned long long *tot = (unsigned long long *)(sc + at_tot);
    unsigned *nt = (unsigned *)(sc + at_nt);
    uint32_t *offs = (uint32_t *)(sc + at_offs);
    uint16_t *low = (uint16_t *)(sc + at_low);
    const size_t smem1 = ((size_t)((3 * D + 1 + 3) & ~3)) * 4 + GS_HIST_PART_TILE * 2, smem2 = (size_t)4 << lb;
    int64_t r1 = 0, r2 = 0, most = n / ((int64_t)GS_HIST_PART_FLUSH << lb);
    GS_GOTO(gs_cuda_allow_smem((const void *)hist_part_count, l->dev));
    GS_GOTO(gs_cuda_allow_smem((const void *)hist_part_rank<T>, l->dev));
    GS_GOTO(gs_cuda_resident_blocks((const void *)hist_part_rank<T>, GS_HIST_PART_RANK_THREADS, smem1, l->dev, &r1));
    GS_GOTO(gs_cuda_resident_blocks((const void *)hist_part_count, GS_HIST_PART_THREADS, smem2, l->dev, &r2));
    r2 = r2 < most ? r2 : most > 1 ? most : 1;
    GS_CUDA_GOTO(cudaMemsetAsync(sc, 0, at_offs, l->stream));
    GS_CUDA_GOTO(sample_locality<T>(l, mode));
    { /* a local sample: the one pass (the kernels below return); else it returns */
        int64_t resident = 0;
        const void *one = (const void *)hist_global_kernel<T, false, unsigned long long, true>;
        GS_GOTO(gs_cuda_resident_blocks(one, GS_HIST_GLOBAL_THREADS, 0, l->dev, &resident));
        hist_global_kernel<T, false, unsigned long long, true>
            <<<(unsigned)gs_hist_grid(l, resident, GS_HIST_GLOBAL_THREADS), GS_HIST_GLOBAL_THREADS, 0, l->stream>>>(
                l->binner, (const T *)l->x, n, l->xstride, NULL, 0, 0, (unsigned long long *)l->out, 0, 0, mode,
                true);
        GS_CUDA_GOTO(cudaGetLastError());
    }
    hist_part_rank<T><<<(unsigned)(tiles < r1 ? tiles : r1), GS_HIST_PART_RANK_THREADS, smem1, l->stream>>>(
        l->binner, (const T *)l->x, n, l->xstride, lb, D, low, offs, tot, nt, mode);
    GS_CUDA_GOTO(cudaGetLastError());
    hist_part_count<<<(unsigned)(r2 + D), GS_HIST_PART_THREADS, smem2, l->stream>>>(
        low, offs, tiles, lb, D, tot, nt, (int)r2, (unsigned long long *)l->out, nb, mode);
    GS_CUDA_GOTO(cudaGetLastError());
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0) {
        unsigned v[4] = {0, 0, 0, 0};
        char verdict[160] = "";
        if (read_sample(l, mode, v, 4))
            snprintf(verdict, sizeof verdict, "; sampled: %u of %u stretches local, %u of %u pairs in one bin, %s",
                     v[0], v[1], v[2], v[3],
                     part_one_pass(v) ? "one pass of global atomics counts every element" : "the partition counts");
        fprintf(stderr, "[gpusync] histogram: a partition into %d digits of %d bits, counted in shared memory "
                "(%lld bins)%s\n", D, lb, (long long)nb, verdict);
    }
fail:
    gs_free_async(scratch, l->stream, &st);
    return st;
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
    if (const int lb = part_bits(l)) {
        bool ran = false; /* (false: no room for its scratch; the passes below) */
        const gs_status ps = part_launch<T>(l, lb, &ran);
        if (ran || ps != GS_OK)
            return ps;
    }
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
                           int64_t, int64_t, const unsigned *, bool);
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
        if (mode)
            GS_CUDA_GOTO(sample_locality<T>(l, mode));
        const int np = passes ? passes : 1;
        for (int p = 0; p < np; p++) { /* pass p: the bins [p nb / np, (p + 1) nb / np) */
            const int64_t lo = p * nb / np, hi = (p + 1) * nb / np;
            if (c)
                hist_global_kernel<T, false, unsigned, true><<<(unsigned)grid, threads, 0, l->stream>>>(
                    l->binner, (const T *)l->x, l->n, l->xstride, NULL, 0, 0, c, lo, hi - lo, mode, false);
            else
                k64<<<(unsigned)grid, threads, 0, l->stream>>>(
                    l->binner, (const T *)l->x, l->n, l->xstride, l->w, l->wstride, l->wdtype,
                    (unsigned long long *)l->out, lo, hi - lo, mode, false);
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
        unsigned v[2] = {0, 0};
        char verdict[160] = "";
        if (read_sample(l, mode, v, 2))
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
