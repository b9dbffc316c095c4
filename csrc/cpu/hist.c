/*
 * CPU backend: histogram / bincount on POSIX threads.
 *
 * Strategies, mirroring the CUDA ones where they mean something on CPU threads:
 *   shared  each thread counts into a private histogram; the private copies
 *           are summed at the end (privatization, seed 001 ex 4.4);
 *   global  every thread updates one shared histogram of C11 atomics
 *           (relaxed order: counting needs atomicity, not ordering);
 *   warp    like global, but a run of equal bins in a thread's slice is
 *           merged first and added with one atomic (the CPU analogue of
 *           warp aggregation: fewer atomics on skewed data);
 *   cluster needs thread-block clusters: rejected.
 * 8-bit inputs are first counted per raw byte value (four interleaved
 * sub-counters break the store-to-load chain on repeated values) and then
 * folded through the bin mapping, which makes them a single fast pass.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include "binning.h"
#include "edge_index.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const gs_binner *b;
    const gs_edge_index *ix; /* GS_BINS_EDGES / GS_BINS_EDGES_INT on non-8-bit input: the edge index; else NULL */
    const gs_array *x, *w;
    int weighted;
    gs_strategy strategy;
    /* shared: per-thread private histograms; global/warp: shared atomics */
    void *priv;
    int64_t nbins, pstride; /* pstride: bins, rounded up to whole cache lines */
    _Atomic uint64_t *acount;
    _Atomic double *asum;
} hist_job;

static void atomic_add_double(_Atomic double *p, double v)
{
    double old = atomic_load_explicit(p, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(p, &old, old + v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* Pieces of 8-bit input from this many elements on are tallied per byte value
 * (byte_pass) and folded through the map; shorter ones go byte by byte
 * (2-core host: 100 bytes 2.3 -> 1.0 us; the tallies' fixed cost ~1 us). */
#define HIST_BYTE_TALLY_MIN 1024

static int is_8bit(gs_dtype dt) { return dt == GS_BOOL || dt == GS_INT8 || dt == GS_UINT8; }

/* 8-bit input: count (or sum weights) per raw byte value into agg[256]. */
static void byte_pass(const gs_array *x, const gs_array *w, int64_t begin, int64_t end, uint64_t *cnt, double *sum)
{
    const uint8_t *p = (const uint8_t *)x->data;
    const int64_t s = x->stride;
    if (w) {
        for (int64_t i = begin; i < end; i++)
            sum[p[i * s]] += gs_weight_of(w->data, w->dtype, i * w->stride);
        return;
    }
    uint64_t c[4][256];
    memset(c, 0, sizeof c);
    int64_t i = begin;
    if (s == 1) {
        for (; i + 4 <= end; i += 4) {
            c[0][p[i]]++;
            c[1][p[i + 1]]++;
            c[2][p[i + 2]]++;
            c[3][p[i + 3]]++;
        }
    }
    for (; i < end; i++)
        c[0][p[i * s]]++;
    for (int v = 0; v < 256; v++)
        cnt[v] += c[0][v] + c[1][v] + c[2][v] + c[3][v];
}

/* Private counts of integers on DIRECT bins (bincount): a loop per dtype,
 * without the per-element dtype and mode tests of gs_bin_of. */
#define DIRECT_LOOP(T, WIDEN)                                                                                 \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        for (int64_t i = begin; i < end; i++) {                                                               \
            const uint64_t d = (uint64_t)(WIDEN)p[i * s] - off;                                               \
            if (d < nb)                                                                                       \
                h[d]++;                                                                                       \
            else if (closed && d == nb)                                                                       \
                h[nb - 1]++;                                                                                  \
        }                                                                                                     \
    } while (0)

/* The same with float32 / float64 weights (bincount(x, weights)): float64
 * sums in element order, NumPy's order on one thread. */
#define DIRECT_LOOP_W(T, WIDEN, WT)                                                                           \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        const WT *q = (const WT *)w->data;                                                                    \
        const int64_t ws = w->stride;                                                                         \
        for (int64_t i = begin; i < end; i++) {                                                               \
            const uint64_t d = (uint64_t)(WIDEN)p[i * s] - off;                                               \
            if (d < nb)                                                                                       \
                wsum[d] += (double)q[i * ws];                                                                 \
            else if (closed && d == nb)                                                                       \
                wsum[nb - 1] += (double)q[i * ws];                                                            \
        }                                                                                                     \
    } while (0)
#define DIRECT_W(T, WIDEN)                                                                                    \
    do {                                                                                                      \
        if (w->dtype == GS_FLOAT32)                                                                           \
            DIRECT_LOOP_W(T, WIDEN, float);                                                                   \
        else                                                                                                  \
            DIRECT_LOOP_W(T, WIDEN, double);                                                                  \
    } while (0)

#define ID(v) (v)

/* Weighted private sums of integers on DIRECT bins; 0 where it does not apply. */
static int direct_slice_w(const gs_binner *b, const gs_array *x, const gs_array *w, double *wsum, int64_t begin,
                          int64_t end)
{
    const uint64_t off = (uint64_t)b->offset, nb = (uint64_t)b->nbins;
    const int closed = b->closed_top;
    const int64_t s = x->stride;
    if (w->dtype != GS_FLOAT32 && w->dtype != GS_FLOAT64)
        return 0;
    switch (x->dtype) {
    case GS_INT16: DIRECT_W(int16_t, int64_t); return 1;
    case GS_UINT16: DIRECT_W(uint16_t, uint64_t); return 1;
    case GS_INT32: DIRECT_W(int32_t, int64_t); return 1;
    case GS_UINT32: DIRECT_W(uint32_t, uint64_t); return 1;
    case GS_INT64: DIRECT_W(int64_t, int64_t); return 1;
    case GS_UINT64: DIRECT_W(uint64_t, uint64_t); return 1;
    default: return 0;
    }
}

static int direct_slice(const gs_binner *b, const gs_array *x, uint64_t *h, int64_t begin, int64_t end)
{
    const uint64_t off = (uint64_t)b->offset, nb = (uint64_t)b->nbins;
    const int closed = b->closed_top;
    const int64_t s = x->stride;
    switch (x->dtype) {
    case GS_INT16: DIRECT_LOOP(int16_t, int64_t); return 1;
    case GS_UINT16: DIRECT_LOOP(uint16_t, uint64_t); return 1;
    case GS_INT32: DIRECT_LOOP(int32_t, int64_t); return 1;
    case GS_UINT32: DIRECT_LOOP(uint32_t, uint64_t); return 1;
    case GS_INT64: DIRECT_LOOP(int64_t, int64_t); return 1;
    case GS_UINT64: DIRECT_LOOP(uint64_t, uint64_t); return 1;
    default: return 0;
    }
}

/* Private counts (or weight sums) of non-8-bit values on UNIFORM or EDGES
 * bins: one loop per dtype, the conversion and gs_bin_real inlined. */
#define REAL_LOOP(T, CONV)                                                                                    \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        if (wsum) {                                                                                           \
            for (int64_t i = begin; i < end; i++) {                                                           \
                const int64_t k = gs_bin_real(b, (double)CONV(p[i * s]));                                     \
                if (k >= 0)                                                                                   \
                    wsum[k] += gs_weight_of(w->data, w->dtype, i * w->stride);                                \
            }                                                                                                 \
        } else {                                                                                              \
            for (int64_t i = begin; i < end; i++) {                                                           \
                const int64_t k = gs_bin_real(b, (double)CONV(p[i * s]));                                     \
                if (k >= 0)                                                                                   \
                    h[k]++;                                                                                   \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

/* The same on GS_BINS_EDGES through the edge index (edge_index.h: a guess
 * table and a branchless correction, or a branchless binary search) instead
 * of gs_bin_real's branchy binary search (23 ns an element for 51 cubic
 * edges on the 2-core CI box; ~3 ns now). */
#define EDGES_LOOP(T, CONV, BIN)                                                                              \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        if (wsum) {                                                                                           \
            for (int64_t i = begin; i < end; i++) {                                                           \
                const int64_t k = BIN(ix, (double)CONV(p[i * s]));                                            \
                if (k >= 0)                                                                                   \
                    wsum[k] += gs_weight_of(w->data, w->dtype, i * w->stride);                                \
            }                                                                                                 \
        } else {                                                                                              \
            for (int64_t i = begin; i < end; i++) {                                                           \
                const int64_t k = BIN(ix, (double)CONV(p[i * s]));                                            \
                if (k >= 0)                                                                                   \
                    h[k]++;                                                                                   \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)
/* One loop per dtype for the index's mode BIN (edge_index.h GS_EIDX_UNSWITCH: the mode tested here, not per
 * element). */
#define EDGES_DTYPES(BIN)                                                                                     \
    switch (x->dtype) {                                                                                       \
    case GS_FLOAT64: EDGES_LOOP(double, ID, BIN); return 1;                                                   \
    case GS_FLOAT32: EDGES_LOOP(float, ID, BIN); return 1;                                                    \
    case GS_FLOAT16: EDGES_LOOP(uint16_t, gs_half_to_float, BIN); return 1;                                   \
    case GS_INT16: EDGES_LOOP(int16_t, ID, BIN); return 1;                                                    \
    case GS_UINT16: EDGES_LOOP(uint16_t, ID, BIN); return 1;                                                  \
    case GS_INT32: EDGES_LOOP(int32_t, ID, BIN); return 1;                                                    \
    case GS_UINT32: EDGES_LOOP(uint32_t, ID, BIN); return 1;                                                  \
    case GS_INT64: EDGES_LOOP(int64_t, ID, BIN); return 1;                                                    \
    case GS_UINT64: EDGES_LOOP(uint64_t, ID, BIN); return 1;                                                  \
    default: return 0;                                                                                        \
    }
/* 64-bit integers against integer edges of their signedness (GS_BINS_EDGES_INT). */
#define EDGES_INT_LOOP(T, BIN)                                                                                \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        for (int64_t i = begin; i < end; i++) {                                                               \
            const int64_t k = BIN(ix, p[i * s]);                                                              \
            if (k < 0)                                                                                        \
                continue;                                                                                     \
            if (wsum)                                                                                         \
                wsum[k] += gs_weight_of(w->data, w->dtype, i * w->stride);                                    \
            else                                                                                              \
                h[k]++;                                                                                       \
        }                                                                                                     \
    } while (0)

/* Private counts or sums on edge-array bins; 0 where it does not apply (8-bit input: the byte map). */
static int edges_slice(const gs_edge_index *ixp, const gs_array *x, const gs_array *w, uint64_t *h, double *wsum,
                       int64_t begin, int64_t end)
{
    const int64_t s = x->stride;
    if (!ixp)
        return 0;
    /* a local copy: the counts' stores (uint64, double) may alias the index's fields as the compiler sees them */
    const gs_edge_index local = *ixp, *ix = &local;
    if (ix->ei) {
        if (x->dtype == GS_INT64)
            EDGES_INT_LOOP(int64_t, gs_eidx_bin_i64);
        else if (x->dtype == GS_UINT64)
            EDGES_INT_LOOP(uint64_t, gs_eidx_bin_u64);
        else
            return 0;
        return 1;
    }
    GS_EIDX_UNSWITCH(ix, EDGES_DTYPES);
    return 0;
}

/* Element i's bin: gs_bin_of, or the edge index where the job has one (the
 * loops of the global and warp strategies and of the dtypes the slices above
 * do not take). */
static int64_t job_bin(const hist_job *j, int64_t i)
{
    const gs_array *x = j->x;
    const int64_t at = i * x->stride;
    if (j->ix && j->ix->ei && x->dtype == GS_INT64)
        return gs_eidx_bin_i64(j->ix, ((const int64_t *)x->data)[at]);
    if (j->ix && j->ix->ei && x->dtype == GS_UINT64)
        return gs_eidx_bin_u64(j->ix, ((const uint64_t *)x->data)[at]);
    if (j->ix && !j->ix->ei) {
        switch (x->dtype) {
        case GS_FLOAT64: return gs_eidx_bin(j->ix, ((const double *)x->data)[at]);
        case GS_FLOAT32: return gs_eidx_bin(j->ix, (double)((const float *)x->data)[at]);
        case GS_FLOAT16: return gs_eidx_bin(j->ix, (double)gs_half_to_float(((const uint16_t *)x->data)[at]));
        case GS_INT16: return gs_eidx_bin(j->ix, (double)((const int16_t *)x->data)[at]);
        case GS_UINT16: return gs_eidx_bin(j->ix, (double)((const uint16_t *)x->data)[at]);
        case GS_INT32: return gs_eidx_bin(j->ix, (double)((const int32_t *)x->data)[at]);
        case GS_UINT32: return gs_eidx_bin(j->ix, (double)((const uint32_t *)x->data)[at]);
        case GS_INT64: return gs_eidx_bin(j->ix, (double)((const int64_t *)x->data)[at]);
        case GS_UINT64: return gs_eidx_bin(j->ix, (double)((const uint64_t *)x->data)[at]);
        default: break;
        }
    }
    return gs_bin_of(j->b, x->data, x->dtype, at);
}

/* Contiguous float64 / float32 on UNIFORM bins, unweighted: the bins of a
 * block of HB elements are estimated in a loop the compiler vectorizes (the
 * same formula as gs_bin_real's fast path); an element within the margin of
 * an edge is marked -2 and binned exactly by gs_bin_real, one outside (or
 * NaN) -1; then a scalar loop counts. */
#define HB 64
/* no-trapping-math lets the compiler turn the selects into blends (no FP
 * flag is read anywhere).  Baseline SSE2: gcc 12 leaves an AVX2 clone of
 * this loop (target_clones or target("avx2")) scalar. */
#define ESTIMATE(NAME, T, ATTR)                                                                               \
    __attribute__((optimize("no-trapping-math"))) ATTR static void NAME(const T *restrict p, int m,           \
                                                                        const gs_binner *b, int32_t *restrict idx) \
    {                                                                                                         \
        const double lo = b->lo, stop = b->stop, scale = b->scale, m0 = b->margin, m1 = 1.0 - b->margin;      \
        const double nb = (double)b->nbins;                                                                   \
        for (int j = 0; j < m; j++) {                                                                         \
            const double v = (double)p[j];                                                                    \
            const int in = (v >= lo) & (v <= stop);                                                           \
            const double f0 = (v - lo) * scale; /* computed always: a select, not a branch */                \
            const double f = in ? f0 : 0.0;                                                                   \
            const int32_t k = (int32_t)f;                                                                     \
            const double fr = f - (double)k;                                                                  \
            const int fast = (fr > m0) & (fr < m1) & (f < nb);                                                \
            idx[j] = in ? (fast ? k : -2) : -1;                                                               \
        }                                                                                                     \
    }
ESTIMATE(estimate_f64, double, )
ESTIMATE(estimate_f32, float, )

/* The estimate and the count in one loop, W elements an instruction, picked
 * at run time where the CPU has AVX2 (W = 4) or AVX-512 F + VL (W = 8): gcc
 * 12 leaves the loop above scalar in every wider clone ("control flow in
 * loop"), and at baseline SSE2 it was half of a one-thread float64 histogram.
 * Every step is the scalar loop's, in its order and rounding: ordered
 * compares (NaN out), (v - lo) * scale unfused, the estimate zeroed outside,
 * truncation to int32, the fraction against the margin.  A group whose W
 * elements are all inside and far from every edge adds its W bins with no
 * branch per element; any other group goes element by element (gs_bin_real).
 * Fusing the two loops (no index block written and read back, one branch per
 * group instead of two per element) measured 3.0 -> 1.1-1.4 ns an element on
 * a 2-core AVX2 host against estimate + count (2.1-2.3 with the AVX2 estimate
 * alone; benchmarks/probes/host_hist.py, results/host_hist_H100_r236.txt for the AVX-512 host). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GS_HIST_SIMD 1
/* The second table of the fused loops (uint64 counts on the stack: 32 KiB).  H200 host (Xeon, AVX-512),
 * one thread, 100 bins (benchmarks/probes/host_hist_tables.c, r237, results/host_hist_sub_H200_r237.txt): one value
 * 2.5-2.8 -> 1.5-1.8 ns an element, sorted 2.3-3.0 -> 1.4-2.0, uniform 1.55-1.98 -> 1.42-1.92; four or eight
 * tables gained nothing more. */
#define HIST_PAIR_MAX_BINS 4096
/* the W elements of a group that is not all fast, one by one */
#define COUNT_GROUP_SLOW(W)                                                                                \
    for (int q = 0; q < (W); q++)                                                                             \
        if (inm >> q & 1) {                                                                                   \
            const int64_t kk = (okm >> q & 1) ? (int64_t)ks[q] : gs_bin_real(b, (double)p[j + q]);             \
            if (kk >= 0)                                                                                      \
                (q & 1 ? h1 : h)[kk]++;                                                                       \
        }
#define COUNT_TAIL()                                                                                          \
    for (; j < m; j++) {                                                                                      \
        const int64_t kk = gs_bin_real(b, (double)p[j]);                                                      \
        if (kk >= 0)                                                                                          \
            h[kk]++;                                                                                          \
    }

#define COUNT256(NAME, T, LOAD4)                                                                              \
    __attribute__((target("avx2"))) static void NAME(const T *restrict p, int64_t m, const gs_binner *b,      \
                                                     uint64_t *h, uint64_t *h1)                                \
    {                                                                                                         \
        const __m256d lo = _mm256_set1_pd(b->lo), stop = _mm256_set1_pd(b->stop);                            \
        const __m256d scale = _mm256_set1_pd(b->scale), nb = _mm256_set1_pd((double)b->nbins);                \
        const __m256d m0 = _mm256_set1_pd(b->margin), m1 = _mm256_set1_pd(1.0 - b->margin);                   \
        int64_t j = 0;                                                                                        \
        for (; j + 4 <= m; j += 4) {                                                                          \
            const __m256d v = LOAD4(p + j);                                                                   \
            const __m256d in = _mm256_and_pd(_mm256_cmp_pd(v, lo, _CMP_GE_OQ), _mm256_cmp_pd(v, stop, _CMP_LE_OQ)); \
            const __m256d f = _mm256_and_pd(in, _mm256_mul_pd(_mm256_sub_pd(v, lo), scale));                  \
            const __m128i k = _mm256_cvttpd_epi32(f);                                                         \
            const __m256d fr = _mm256_sub_pd(f, _mm256_cvtepi32_pd(k));                                       \
            const __m256d fast = _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(fr, m0, _CMP_GT_OQ),               \
                                                             _mm256_cmp_pd(fr, m1, _CMP_LT_OQ)),              \
                                               _mm256_cmp_pd(f, nb, _CMP_LT_OQ));                             \
            const int okm = _mm256_movemask_pd(_mm256_and_pd(in, fast));                                      \
            int32_t ks[4];                                                                                    \
            _mm_storeu_si128((__m128i *)ks, k);                                                               \
            if (okm == 15) {                                                                                  \
                h[ks[0]]++, h1[ks[1]]++, h[ks[2]]++, h1[ks[3]]++;                                             \
            } else {                                                                                          \
                const int inm = _mm256_movemask_pd(in);                                                       \
                COUNT_GROUP_SLOW(4)                                                                           \
            }                                                                                                 \
        }                                                                                                     \
        COUNT_TAIL()                                                                                          \
    }
#define LOAD4_F64(q) _mm256_loadu_pd(q)
#define LOAD4_F32(q) _mm256_cvtps_pd(_mm_loadu_ps(q))
COUNT256(count_f64_avx2, double, LOAD4_F64)
COUNT256(count_f32_avx2, float, LOAD4_F32)

#define COUNT512(NAME, T, LOAD8)                                                                              \
    __attribute__((target("avx512f,avx512vl"))) static void NAME(const T *restrict p, int64_t m,              \
                                                                 const gs_binner *b, uint64_t *h, uint64_t *h1) \
    {                                                                                                         \
        const __m512d lo = _mm512_set1_pd(b->lo), stop = _mm512_set1_pd(b->stop);                            \
        const __m512d scale = _mm512_set1_pd(b->scale), nb = _mm512_set1_pd((double)b->nbins);                \
        const __m512d m0 = _mm512_set1_pd(b->margin), m1 = _mm512_set1_pd(1.0 - b->margin);                   \
        int64_t j = 0;                                                                                        \
        for (; j + 8 <= m; j += 8) {                                                                          \
            const __m512d v = LOAD8(p + j);                                                                   \
            const __mmask8 in = _mm512_cmp_pd_mask(v, lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(v, stop, _CMP_LE_OQ); \
            const __m512d f = _mm512_maskz_mov_pd(in, _mm512_mul_pd(_mm512_sub_pd(v, lo), scale));            \
            const __m256i k = _mm512_cvttpd_epi32(f);                                                         \
            const __m512d fr = _mm512_sub_pd(f, _mm512_cvtepi32_pd(k));                                       \
            const __mmask8 fast = _mm512_cmp_pd_mask(fr, m0, _CMP_GT_OQ) & _mm512_cmp_pd_mask(fr, m1, _CMP_LT_OQ) & \
                                  _mm512_cmp_pd_mask(f, nb, _CMP_LT_OQ);                                      \
            const int okm = in & fast, inm = in;                                                              \
            int32_t ks[8];                                                                                    \
            _mm256_storeu_si256((__m256i *)ks, k);                                                            \
            if (okm == 255) {                                                                                 \
                h[ks[0]]++, h1[ks[1]]++, h[ks[2]]++, h1[ks[3]]++;                                             \
                h[ks[4]]++, h1[ks[5]]++, h[ks[6]]++, h1[ks[7]]++;                                             \
            } else {                                                                                          \
                COUNT_GROUP_SLOW(8)                                                                        \
            }                                                                                                 \
        }                                                                                                     \
        COUNT_TAIL()                                                                                          \
    }
#define LOAD8_F64(q) _mm512_loadu_pd(q)
#define LOAD8_F32(q) _mm512_cvtps_pd(_mm256_loadu_ps(q))
COUNT512(count_f64_avx512, double, LOAD8_F64)
COUNT512(count_f32_avx512, float, LOAD8_F32)
#endif

#define UNIFORM_BLOCKED(T, EST)                                                                               \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        int32_t idx[HB];                                                                                      \
        for (int64_t i = begin; i < end; i += HB) {                                                           \
            const int m = end - i < HB ? (int)(end - i) : HB;                                                 \
            EST(p + i, m, b, idx);                                                                            \
            for (int j = 0; j < m; j++) {                                                                     \
                int64_t k = idx[j];                                                                           \
                if (k == -2)                                                                                  \
                    k = gs_bin_real(b, (double)p[i + j]);                                                     \
                if (k >= 0)                                                                                   \
                    h[k]++;                                                                                   \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

static int real_slice(const gs_binner *b, const gs_array *x, const gs_array *w, uint64_t *h, double *wsum,
                      int64_t begin, int64_t end)
{
    const int64_t s = x->stride;
    if (b->kind != GS_BINS_UNIFORM && b->kind != GS_BINS_EDGES)
        return 0; /* DIRECT, and EDGES_INT (exact 64-bit integer search): edges_slice or gs_bin_of's loop */
    if (!wsum && s == 1 && b->kind == GS_BINS_UNIFORM && b->nbins < INT32_MAX) {
#ifdef GS_HIST_SIMD
        /* estimate and count fused: AVX-512 or AVX2 where the CPU has it */
        const int f = gs_cpu_features();
        if ((f & (GS_CPU_AVX512 | GS_CPU_AVX2)) && (x->dtype == GS_FLOAT64 || x->dtype == GS_FLOAT32)) {
            const int wide = (f & GS_CPU_AVX512) != 0;
            /* the odd lanes of a group count into a second table where the bins are few enough (a run
             * of equal values no longer chains every increment on the one before) */
            uint64_t pair[HIST_PAIR_MAX_BINS], *h1 = h;
            if (b->nbins <= HIST_PAIR_MAX_BINS && end - begin >= 8 * b->nbins) {
                h1 = pair;
                memset(pair, 0, (size_t)b->nbins * sizeof *pair);
            }
            if (x->dtype == GS_FLOAT64)
                (wide ? count_f64_avx512 : count_f64_avx2)((const double *)x->data + begin, end - begin, b, h, h1);
            else
                (wide ? count_f32_avx512 : count_f32_avx2)((const float *)x->data + begin, end - begin, b, h, h1);
            if (h1 != h)
                for (int64_t k = 0; k < b->nbins; k++)
                    h[k] += pair[k];
            return 1;
        }
#endif
        /* baseline: the estimate of one block of HB elements, then the count */
        if (x->dtype == GS_FLOAT64) {
            UNIFORM_BLOCKED(double, estimate_f64);
            return 1;
        }
        if (x->dtype == GS_FLOAT32) {
            UNIFORM_BLOCKED(float, estimate_f32);
            return 1;
        }
    }
    switch (x->dtype) {
    case GS_FLOAT64: REAL_LOOP(double, ID); return 1;
    case GS_FLOAT32: REAL_LOOP(float, ID); return 1;
    case GS_FLOAT16: REAL_LOOP(uint16_t, gs_half_to_float); return 1;
    case GS_INT16: REAL_LOOP(int16_t, ID); return 1;
    case GS_UINT16: REAL_LOOP(uint16_t, ID); return 1;
    case GS_INT32: REAL_LOOP(int32_t, ID); return 1;
    case GS_UINT32: REAL_LOOP(uint32_t, ID); return 1;
    case GS_INT64: REAL_LOOP(int64_t, ID); return 1;
    case GS_UINT64: REAL_LOOP(uint64_t, ID); return 1;
    default: return 0;
    }
}

/* One piece [begin, end) of a thread's slice. */
static void hist_piece(hist_job *j, int tid, int64_t begin, int64_t end)
{
    const gs_binner *b = j->b;
    const gs_array *x = j->x, *w = j->w;

    /* 8-bit input, a short piece: each byte through the byte map into the
     * thread's bins (the tallies below cost ~1 us to clear and fold) */
    if (is_8bit(x->dtype) && !w && j->strategy == GS_STRATEGY_SHARED && end - begin < HIST_BYTE_TALLY_MIN) {
        uint64_t *h = (uint64_t *)j->priv + tid * j->pstride;
        const uint8_t *p = (const uint8_t *)x->data;
        const int64_t s = x->stride;
        for (int64_t i = begin; i < end; i++) {
            const int64_t k = gs_bin_byte(b, p[i * s]);
            if (k >= 0)
                h[k]++;
        }
        return;
    }
    /* fold per-byte aggregates through the mapping; a piece shorter than the
     * 256 byte values bins element by element below (no 4 KiB of tallies) */
    if (is_8bit(x->dtype) && end - begin >= 256) {
        uint64_t cnt[256] = {0};
        double sum[256] = {0};
        byte_pass(x, w, begin, end, cnt, sum);
        for (int v = 0; v < 256; v++) {
            int64_t k = gs_bin_byte(b, (uint8_t)v);
            if (k < 0 || (w ? sum[v] == 0.0 : cnt[v] == 0))
                continue;
            if (j->strategy == GS_STRATEGY_SHARED) {
                if (w)
                    ((double *)j->priv)[tid * j->pstride + k] += sum[v];
                else
                    ((uint64_t *)j->priv)[tid * j->pstride + k] += cnt[v];
            } else if (w) {
                atomic_add_double(&j->asum[k], sum[v]);
            } else {
                atomic_fetch_add_explicit(&j->acount[k], cnt[v], memory_order_relaxed);
            }
        }
        return;
    }

    if (j->strategy == GS_STRATEGY_SHARED && b->kind == GS_BINS_DIRECT &&
        (w ? direct_slice_w(b, x, w, (double *)j->priv + tid * j->pstride, begin, end)
           : direct_slice(b, x, (uint64_t *)j->priv + tid * j->pstride, begin, end)))
        return;
    if (j->strategy == GS_STRATEGY_SHARED &&
        (j->ix ? edges_slice(j->ix, x, w, w ? NULL : (uint64_t *)j->priv + tid * j->pstride,
                             w ? (double *)j->priv + tid * j->pstride : NULL, begin, end)
               : real_slice(b, x, w, w ? NULL : (uint64_t *)j->priv + tid * j->pstride,
                            w ? (double *)j->priv + tid * j->pstride : NULL, begin, end)))
        return;
    if (j->strategy == GS_STRATEGY_SHARED) {
        if (w) {
            double *h = (double *)j->priv + tid * j->pstride;
            for (int64_t i = begin; i < end; i++) {
                int64_t k = job_bin(j, i);
                if (k >= 0)
                    h[k] += gs_weight_of(w->data, w->dtype, i * w->stride);
            }
        } else {
            uint64_t *h = (uint64_t *)j->priv + tid * j->pstride;
            for (int64_t i = begin; i < end; i++) {
                int64_t k = job_bin(j, i);
                if (k >= 0)
                    h[k]++;
            }
        }
        return;
    }

    const int aggregate = j->strategy == GS_STRATEGY_WARP;
    int64_t run_bin = -1;
    uint64_t run_n = 0;
    double run_w = 0.0;
    for (int64_t i = begin; i < end; i++) {
        int64_t k = job_bin(j, i);
        if (k < 0)
            continue;
        double wi = w ? gs_weight_of(w->data, w->dtype, i * w->stride) : 0.0;
        if (aggregate && k == run_bin) {
            run_n++;
            run_w += wi;
            continue;
        }
        if (run_bin >= 0) {
            if (w)
                atomic_add_double(&j->asum[run_bin], run_w);
            else
                atomic_fetch_add_explicit(&j->acount[run_bin], run_n, memory_order_relaxed);
        }
        run_bin = k;
        run_n = 1;
        run_w = wi;
    }
    if (run_bin >= 0) {
        if (w)
            atomic_add_double(&j->asum[run_bin], run_w);
        else
            atomic_fetch_add_explicit(&j->acount[run_bin], run_n, memory_order_relaxed);
    }
}

/* A thread's slice, in pieces of GS_CPU_CHUNK with an interrupt check
 * between them. */
static void hist_slice(void *ctx, int tid, int64_t begin, int64_t end)
{
    hist_job *j = (hist_job *)ctx;
    /* a binary search over many edges costs ~20x a uniform bin: smaller pieces */
    const int64_t chunk =
        j->b->kind == GS_BINS_EDGES || j->b->kind == GS_BINS_EDGES_INT ? GS_CPU_CHUNK / 16 : GS_CPU_CHUNK;
    for (int64_t p = begin; p < end; p += chunk) {
        if (gs_cpu_stop(tid))
            return;
        hist_piece(j, tid, p, end - p < chunk ? end : p + chunk);
    }
}

static void zero_slice(void *ctx, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    memset((char *)ctx + begin * 8, 0, (size_t)(end - begin) * 8);
}

/* Zero the nb 8-byte bins of a result the count then fills in place: on the threads the zeroing pays for (the
 * dispatcher's request where it made one -- its model prices the zeroing too, gpusync/_costmodel.py), so that
 * a call of few elements into many bins (bincount of 1000 values below 10^6) costs the bins at the pool's
 * write bandwidth rather than one thread's.  Fresh pages would not need it, but the result comes from the
 * heap and is not fresh: calloc clears it with the same memset, and a page fault costs ~2 us a page here
 * (1000 counts into an untouched 8 MB mapping: 1.95 ms against 0.17 ms for memset and count). */
static gs_status zero_result(void *out, int64_t nb)
{
    const int t = nb > 1 ? gs_cpu_threads_for_cost(nb, GS_CPU_NS_ZERO_BIN) : 1;
    if (t > 1) { /* (GS_ERR_NO_MEMORY: no threads started, their slices ran here) */
        const gs_status st = gs_cpu_parallel_for(nb, t, zero_slice, out);
        return st == GS_ERR_INTERRUPTED ? st : GS_OK;
    }
    memset(out, 0, (size_t)nb * 8);
    return GS_OK;
}

gs_status gs_cpu_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *bins, gs_array *out,
                           gs_array *edges, gs_strategy strategy, void *stream, gs_strategy *used)
{
    (void)stream;
    const int64_t nb = bins->nbins;
    const int weighted = w != NULL;
    const gs_status est = gs_hist_bins_check(bins, x, out, edges);
    if (est != GS_OK)
        return est;
    if (edges)
        gs_hist_edges_fill_host(bins, edges);
    if (strategy == GS_STRATEGY_CLUSTER)
        return gs_fail(GS_ERR_UNSUPPORTED_DEVICE,
                       "strategy 'cluster' needs thread-block clusters (a CUDA GPU of compute capability >= 9.0); "
                       "the cpu backend has none");
    const int asked_auto = strategy == GS_STRATEGY_AUTO;
    if (strategy == GS_STRATEGY_AUTO) {
        gs_hist_shape shape = {x->length, nb, weighted, (int)gs_dtype_size(x->dtype), 0, 0, 0};
        strategy = gs_hist_auto_strategy(&shape);
    }

    int nthreads = gs_cpu_threads_for_cost(x->length, is_8bit(x->dtype) && !weighted ? GS_CPU_NS_HIST_BYTE
                                                                                       : GS_CPU_NS_HIST);
    /* private copies cost nthreads * nb to clear and merge: no more threads
     * than keep that below the input's own work */
    while (strategy == GS_STRATEGY_SHARED && nthreads > 1 && (double)nthreads * nb > (double)x->length)
        nthreads--;
    if (strategy == GS_STRATEGY_SHARED && nthreads > 1 && (double)nthreads * nb * 8 > 2e9)
        nthreads = 1; /* private copies would not fit: count on one thread */
    /* auto past GS_CPU_PRIVATE_MAX_BINS picks global, whose table of atomics costs two passes over the bins
     * (cleared, then copied out): with fewer elements than two tables of bins -- the rule above, which leaves
     * shared one thread there -- one thread counts straight into the result instead */
    if (asked_auto && nthreads > 1 && (double)x->length < 2.0 * (double)nb)
        nthreads = 1;

    /* one thread counting into a contiguous result of its accumulator's type (int64 counts, float64 sums):
     * count there -- no private copy or table to allocate, clear, merge and free, which cost the bins, not
     * the elements: 1000 float64-weighted values into 10^6 bins (bincount) 1.35 -> 0.2 ms on the 2-core CI
     * box.  The sums are the same bits (one thread adds in element order from 0 either way). */
    const int in_place = nthreads == 1 && out->stride == 1 && out->dtype == (weighted ? GS_FLOAT64 : GS_INT64) &&
                         (asked_auto || strategy == GS_STRATEGY_SHARED);
    if (in_place)
        strategy = GS_STRATEGY_SHARED; /* one thread's private histogram: the result itself */
    *used = strategy;

    gs_binner b;
    gs_binner_init(&b, bins, bins->edges);
    /* edge arrays: the edge index (edge_index.h), its guess table built here once for all threads when the
     * elements each thread bins pay for it (8-bit input bins through the byte map instead) */
    gs_edge_index ix;
    const gs_edge_index *ixp = NULL;
    if (!is_8bit(x->dtype) && bins->kind == GS_BINS_EDGES) {
        gs_eidx_init(&ix, bins->edges, nb, (double)x->length / nthreads);
        ixp = &ix;
    } else if (bins->kind == GS_BINS_EDGES_INT && (x->dtype == GS_INT64 || x->dtype == GS_UINT64)) {
        gs_eidx_init_int(&ix, bins->edges, x->dtype == GS_INT64, nb, (double)x->length / nthreads);
        ixp = &ix;
    }
    hist_job job = {&b, ixp, x, w, weighted, strategy, NULL, nb, (nb + 7) / 8 * 8, NULL, NULL};
    const size_t bytes = (size_t)nb * 8;
    gs_status st = GS_OK;

    if (in_place) {
        job.priv = out->data;
        job.pstride = nb;
        st = zero_result(out->data, nb);
        if (st == GS_OK)
            st = gs_cpu_parallel_for(x->length, 1, hist_slice, &job);
        if (ixp)
            gs_eidx_free(&ix);
        return st;
    }
    if (strategy == GS_STRATEGY_SHARED) {
        /* each thread's copy on whole cache lines of its own */
        const size_t pbytes = (size_t)nthreads * (size_t)job.pstride * 8;
        if (posix_memalign(&job.priv, 64, pbytes > 0 ? pbytes : 64) != 0)
            job.priv = NULL;
        if (job.priv)
            memset(job.priv, 0, pbytes);
    } else if (weighted) {
        job.asum = (_Atomic double *)malloc(bytes > 0 ? bytes : 1);
        if (job.asum)
            for (int64_t k = 0; k < nb; k++)
                atomic_init(&job.asum[k], 0.0);
    } else {
        job.acount = (_Atomic uint64_t *)malloc(bytes > 0 ? bytes : 1);
        if (job.acount)
            for (int64_t k = 0; k < nb; k++)
                atomic_init(&job.acount[k], 0);
    }
    if (!job.priv && !job.asum && !job.acount) {
        if (ixp)
            gs_eidx_free(&ix);
        if (strategy == GS_STRATEGY_SHARED)
            return gs_fail(GS_ERR_NO_MEMORY, "cannot allocate %d private histograms of %lld bins", nthreads,
                           (long long)nb);
        return gs_fail(GS_ERR_NO_MEMORY, "cannot allocate %lld bins", (long long)nb);
    }

    st = gs_cpu_parallel_for(x->length, nthreads, hist_slice, &job);

    if (weighted) {
        double *o = (double *)out->data;
        for (int64_t k = 0; k < nb; k++) {
            double s = 0.0;
            if (job.priv)
                for (int t = 0; t < nthreads; t++)
                    s += ((double *)job.priv)[t * job.pstride + k];
            else
                s = atomic_load_explicit(&job.asum[k], memory_order_relaxed);
            o[k * out->stride] = s;
        }
    } else {
        int64_t *o = (int64_t *)out->data;
        for (int64_t k = 0; k < nb; k++) {
            uint64_t s = 0;
            if (job.priv)
                for (int t = 0; t < nthreads; t++)
                    s += ((uint64_t *)job.priv)[t * job.pstride + k];
            else
                s = atomic_load_explicit(&job.acount[k], memory_order_relaxed);
            o[k * out->stride] = (int64_t)s;
        }
    }
    free(job.priv);
    free((void *)job.asum);
    free((void *)job.acount);
    if (ixp)
        gs_eidx_free(&ix);
    return st;
}
