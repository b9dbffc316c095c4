/* sum and dot (CPU backend): threads accumulate slices in double (floating
 * inputs) or wrapping uint64 (integers, bool) and combine them with C11
 * atomics, a spin lock, per-thread partials (two-pass), or partials plus an
 * acq_rel ticket whose last holder adds them (threadfence).  With
 * deterministic=True the partials are per fixed tile (GS_REDUCE_TILE), so
 * the result does not depend on the number of threads. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in spin.h */
#include "../common/convert.h"
#include "gpusync/tuning.h"
#include "parallel.h"
#include "spin.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *a, *b;
    int64_t sa, sb;
    gs_dtype dt;
    int is_float, det, nthreads;
    gs_strategy strategy;
    _Atomic uint64_t acc; /* double bits or the integer sum */
    atomic_int lock, error;
    atomic_uint ticket, arrived;
    double *fpart;
    uint64_t *ipart;
    int64_t nparts, n;
} rctx;

/* Strided integer input: the plain loop, four accumulators (exact modulo 2^64 in any order). */
#define LOOP(T, CONV_T, CONV)                                                                                 \
    do {                                                                                                      \
        const T *pa = (const T *)c->a, *pb = (const T *)c->b;                                                 \
        CONV_T r0 = 0, r1 = 0, r2 = 0, r3 = 0;                                                                \
        int64_t i = lo;                                                                                       \
        if (pb) {                                                                                             \
            for (; i + 4 <= hi; i += 4) {                                                                     \
                r0 += (CONV_T)CONV(pa[i * c->sa]) * (CONV_T)CONV(pb[i * c->sb]);                              \
                r1 += (CONV_T)CONV(pa[(i + 1) * c->sa]) * (CONV_T)CONV(pb[(i + 1) * c->sb]);                  \
                r2 += (CONV_T)CONV(pa[(i + 2) * c->sa]) * (CONV_T)CONV(pb[(i + 2) * c->sb]);                  \
                r3 += (CONV_T)CONV(pa[(i + 3) * c->sa]) * (CONV_T)CONV(pb[(i + 3) * c->sb]);                  \
            }                                                                                                 \
            for (; i < hi; i++)                                                                               \
                r0 += (CONV_T)CONV(pa[i * c->sa]) * (CONV_T)CONV(pb[i * c->sb]);                              \
        } else {                                                                                              \
            for (; i + 4 <= hi; i += 4) {                                                                     \
                r0 += (CONV_T)CONV(pa[i * c->sa]);                                                            \
                r1 += (CONV_T)CONV(pa[(i + 1) * c->sa]);                                                      \
                r2 += (CONV_T)CONV(pa[(i + 2) * c->sa]);                                                      \
                r3 += (CONV_T)CONV(pa[(i + 3) * c->sa]);                                                      \
            }                                                                                                 \
            for (; i < hi; i++)                                                                               \
                r0 += (CONV_T)CONV(pa[i * c->sa]);                                                            \
        }                                                                                                     \
        s = (r0 + r1) + (r2 + r3);                                                                            \
    } while (0)
#define ID(x) (x)
#define NZ(x) ((x) != 0)
#define SEXT(x) ((uint64_t)(int64_t)(x))

/* Contiguous floating input: pairwise summation in double (float32 too)
 * with NumPy's accuracy class -- blocks of PW_BLOCK elements, each summed
 * with PW_ACC accumulators (eight terms each, as NumPy's 128-element blocks
 * with sixteen accumulators), the block sums combined pairwise by a binary
 * counter (block k merges with the partials its trailing one-bits name: a
 * balanced tree over the blocks) -- in one loop without recursion or calls,
 * which the compiler vectorizes (AVX-512 / AVX2 clones are picked at run time
 * where the CPU has them; the build itself stays baseline x86-64).  The next lines
 * of both inputs are prefetched into L2 ahead of the hardware prefetcher, for
 * more bytes in flight per core when the input streams from memory. */
#define PW_ACC 32
#define PW_BLOCK (8 * PW_ACC)
/* Software prefetch of each block's lines, PW_PF_AHEAD bytes ahead: PW_PF_LINES
 * lines PW_PF_STEP bytes apart, of the one stream of a sum and, where
 * PW_PF_DOT, of both streams of a dot.  Data next to its measurement: each
 * can be set with -D for an A/B (benchmarks/probes/host_stream.c measures the
 * same loop's variants alone, results/host_stream_H100_r246.txt). */
#ifndef PW_PF_AHEAD
#define PW_PF_AHEAD 2048
#endif
#ifndef PW_PF_LINES
#define PW_PF_LINES 2
#endif
#ifndef PW_PF_STEP
#define PW_PF_STEP 64
#endif
#ifndef PW_PF_DOT
#define PW_PF_DOT 1
#endif
#define PW_PF(p, bytes)                                                                                       \
    do {                                                                                                      \
        for (int l_ = 0; l_ < PW_PF_LINES && l_ * PW_PF_STEP < (int)(bytes); l_++)                            \
            __builtin_prefetch((const char *)(p) + PW_PF_AHEAD + l_ * PW_PF_STEP, 0, 2);                      \
    } while (0)
/* r[j] += r[j + w] for w = 16, 8, 4, 2, 1: the accumulators' tree.  Its first
 * three levels are whole-vector adds of four accumulators each (GCC vector
 * types: the compiler kept the scalar form scalar, ~60 instructions a block,
 * a third of a block's time in cache); the arithmetic is the same, term for
 * term, so the sums are bit-identical to the scalar fold. */
typedef double gs_pw_d4 __attribute__((vector_size(32)));
#define PW_FOLD(r)                                                                                            \
    do {                                                                                                      \
        _Static_assert(PW_ACC == 32, "PW_FOLD folds 32 accumulators");                                        \
        gs_pw_d4 v_[8];                                                                                       \
        memcpy(v_, r, sizeof v_);                                                                             \
        for (int j = 0; j < 4; j++)                                                                           \
            v_[j] += v_[j + 4];                                                                               \
        v_[0] += v_[2], v_[1] += v_[3];                                                                       \
        v_[0] += v_[1];                                                                                       \
        r[0] = (v_[0][0] + v_[0][2]) + (v_[0][1] + v_[0][3]);                                                 \
    } while (0)
/* The binary counter of partial sums, the one copy: block (or piece) k's sum
 * merges with the partials its trailing one-bits name -- a balanced tree
 * over the blocks -- and PW_DRAIN adds what is left, top first, into s. */
#define PW_PUSH(stack, depth, k, v)                                                                           \
    do {                                                                                                      \
        (stack)[(depth)++] = (v);                                                                             \
        for (uint64_t m_ = (uint64_t)(k) + 1; !(m_ & 1); m_ >>= 1, (depth)--)                                 \
            (stack)[(depth) - 2] += (stack)[(depth) - 1];                                                     \
    } while (0)
#define PW_DRAIN(stack, depth, s)                                                                             \
    do {                                                                                                      \
        while ((depth) > 0)                                                                                   \
            (s) += (stack)[--(depth)];                                                                        \
    } while (0)
/* NAME(a, b, n): TERM(CV, k) is term k, CV the conversion to double. */
#define PAIRWISE(NAME, T, TERM, CV, ATTRS)                                                                    \
    ATTRS static double NAME(const T *a, const T *b, int64_t n)                                               \
    {                                                                                                         \
        (void)b;                                                                                              \
        double stack[64];                                                                                     \
        int depth = 0;                                                                                        \
        uint64_t blk = 0;                                                                                     \
        int64_t i = 0;                                                                                        \
        for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {                                                     \
            PW_PF(a + i, sizeof(T) * PW_BLOCK);                                                               \
            if (PW_PF_DOT && b != a) /* dot: the second stream too */                                         \
                PW_PF(b + i, sizeof(T) * PW_BLOCK);                                                           \
            double r[PW_ACC] = {0};                                                                           \
            for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                        \
                for (int j = 0; j < PW_ACC; j++)                                                              \
                    r[j] += TERM(CV, i + t + j);                                                              \
            PW_FOLD(r);                                                                                       \
            PW_PUSH(stack, depth, blk, r[0]);                                                                 \
        }                                                                                                     \
        double s = 0;                                                                                         \
        for (; i < n; i++)                                                                                    \
            s += TERM(CV, i);                                                                                 \
        PW_DRAIN(stack, depth, s);                                                                            \
        return s;                                                                                             \
    }
#define SUM_TERM(CV, k) CV(a[k])
#define DOT_TERM(CV, k) (CV(a[k]) * CV(b[k]))
#define PW_D(x) ((double)(x))
/* IEEE half bits -> double, exact: the software conversion (the SIMD kernels below use F16C's) */
#define PW_H(x) ((double)gs_half_to_float(x))
PAIRWISE(pw_sum_f32, float, SUM_TERM, PW_D, GS_CLONES)
PAIRWISE(pw_sum_f64, double, SUM_TERM, PW_D, GS_CLONES)
/* float32 products are exact in double (48 bits), so a fused multiply-add
 * rounds each term exactly as the multiply and the add did: the same bits,
 * one instruction less a term where the CPU has FMA (local AMD EPYC, AVX2 +
 * FMA: gs.dot of 10^4 float32 3.18 -> 2.11 us, 10^5 27.6 -> 19.3 us, 10^6
 * 137-210 -> 122-137 us; 4M, memory-bound, unchanged within noise) */
PAIRWISE(pw_dot_f32, float, DOT_TERM, PW_D, GS_CLONES_FMA GS_FUSED_MULADD)
PAIRWISE(pw_dot_f64, double, DOT_TERM, PW_D, GS_CLONES)
/* float16 without F16C (or GPUSYNC_CPU_SIMD=none): the same pairwise sums
 * with the software conversion (a branch per element: no clones, nothing to
 * vectorize) -- the bits of the F16C kernels below (products of halves are
 * exact in double too) */
PAIRWISE(pw_sum_f16, uint16_t, SUM_TERM, PW_H, )
PAIRWISE(pw_dot_f16, uint16_t, DOT_TERM, PW_H, )

/* Strided views (a[::k], a[::-k], a zero stride; the dot reads them in place,
 * no copy): PAIRWISE's sums -- each of the 32 accumulators takes the same
 * eight terms of a block in the same order, then the same fold and counter --
 * so a view sums to the bits of its contiguous copy, the copy the general path
 * made before (10^7 float64 x[::2] . y[::2], strategy "two-pass", local 2-core
 * host: 69-71 ms with the copy, 24-27 without; the 16-core Xeon host ran that
 * dot in 6.89 ms, NumPy 2.31).  The accumulators are eight vectors of four,
 * each filled from four strided loads.  One thread, local AMD EPYC (a shared
 * 2-core VM: +-20 % run to run), x[::2] . y[::2] float64, ns an element at
 * 10^4 / 10^5 / 10^7 (benchmarks/probes/host_strided.c): the old loop of four
 * scalar accumulators 0.36-0.56 / 0.42-0.62 / 2.3-3.8; this kernel 0.41-0.51 /
 * 0.43-0.56 / 2.2-3.2; PAIRWISE's own loop over a runtime stride (its 32
 * accumulators kept in memory, every index multiplied) 0.66-0.72 / 0.70-0.74 /
 * 2.7-3.5; four groups of eight scalar accumulators (a block's lines visited
 * out of order) 0.53-0.67 / 0.65-0.75 / 2.8-3.3; eight scalar accumulators in
 * 256-term blocks (pairwise, not the contiguous bits) 0.44-0.45 / 0.46-0.57 /
 * 2.4-3.0.  gs.dot (the calling thread), 10^4 / 10^5: 4.2-7.1 / 51-72 us
 * before, 4.8-7.6 / 49-76 us after.  On Intel the lane inserts (vmovhpd,
 * vinsertf128) go to port 5: an in-cache dot may pay there, one streaming from
 * memory not.  PW_OPAQUE hides the pointer steps from gcc, which otherwise
 * rewrote the lane addresses as offsets from the block's start (64 of them,
 * spilled to the stack; gs.dot of 10^4: 7.6 against 5.0 us).  No software
 * prefetch: the hardware prefetcher follows a constant stride, forward or
 * backward. */
#if defined(__GNUC__)
#define PW_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define PW_OPAQUE(p) ((void)0)
#endif
#define PW_LANES(CV, p, s) {CV((p)[0]), CV((p)[s]), CV((p)[2 * (s)]), CV((p)[3 * (s)])}
#define PW_STRIDED(NAME, T, CV, DOT)                                                                          \
    GS_CLONES static double NAME(const T *a, const T *b, int64_t n, int64_t sa, int64_t sb)                   \
    {                                                                                                         \
        double stack[64];                                                                                     \
        int depth = 0;                                                                                        \
        uint64_t blk = 0;                                                                                     \
        int64_t i = 0;                                                                                        \
        for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {                                                     \
            gs_pw_d4 r[PW_ACC / 4] = {{0}};                                                                   \
            const T *pa = a + i * sa, *pb = DOT ? b + i * sb : NULL;                                          \
            for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                        \
                for (int q = 0; q < PW_ACC / 4; q++) {                                                        \
                    const gs_pw_d4 x_ = PW_LANES(CV, pa, sa);                                                 \
                    pa += 4 * sa;                                                                             \
                    PW_OPAQUE(pa);                                                                            \
                    if (DOT) {                                                                                \
                        const gs_pw_d4 y_ = PW_LANES(CV, pb, sb);                                             \
                        pb += 4 * sb;                                                                         \
                        PW_OPAQUE(pb);                                                                        \
                        r[q] += x_ * y_;                                                                      \
                    } else {                                                                                  \
                        r[q] += x_;                                                                           \
                    }                                                                                         \
                }                                                                                             \
            double acc[PW_ACC];                                                                               \
            memcpy(acc, r, sizeof acc);                                                                       \
            PW_FOLD(acc);                                                                                     \
            PW_PUSH(stack, depth, blk, acc[0]);                                                               \
        }                                                                                                     \
        double s = 0;                                                                                         \
        for (; i < n; i++)                                                                                    \
            s += DOT ? CV(a[i * sa]) * CV(b[i * sb]) : CV(a[i * sa]);                                         \
        PW_DRAIN(stack, depth, s);                                                                            \
        return s;                                                                                             \
    }
PW_STRIDED(pw_ssum_f64, double, PW_D, 0)
PW_STRIDED(pw_sdot_f64, double, PW_D, 1)
PW_STRIDED(pw_ssum_f32, float, PW_D, 0)
PW_STRIDED(pw_sdot_f32, float, PW_D, 1)
PW_STRIDED(pw_ssum_f16, uint16_t, PW_H, 0)
PW_STRIDED(pw_sdot_f16, uint16_t, PW_H, 1)

/* The float32 and float16 blocks with intrinsics where the CPU has AVX-512 or
 * AVX2 + FMA (float16: and F16C): one kernel, PW_SIMD, over the element type
 * and its load-and-convert to double.  float32: each conversion reads its
 * eight (four) floats from memory itself (vcvtps2pd zmm, m256).  gcc's clones
 * of PAIRWISE load sixteen floats and split them with vextracti64x4 (one more
 * port-5 operation every eight terms on the port the conversions need: the
 * float32 dot is bound by the conversions, two a term, where float64 is bound
 * by memory), and __builtin_convertvector splits a conversion in two.
 * float16: vcvtph2ps reads eight (four) halves from memory into floats, exact
 * (subnormal halves come out normal floats, with MXCSR's DAZ set too on the
 * local AMD EPYC), and vcvtps2pd widens them.  The software conversion
 * (gs_half_to_float, a branch per element, into the old loop's four chains of
 * dependent double adds) ran gs.sum of 10^7 float16 at 5.90 ms on the 16-core
 * Xeon host (torch 0.114 ms); on the local AMD EPYC (2 cores, AVX2 + F16C)
 * gs.sum of 10^7 float16 12.4 -> 1.6 ms (float32 2.2 ms), of 10^5 0.20 ->
 * 0.021 ms, gs.dot of 10^7 29.4 -> 2.7 ms.  The arithmetic is PAIRWISE's term
 * for term -- the 32 accumulators, the fold, the counter of block sums, the
 * tail -- so the sums are bit-identical to the clones' and to the software
 * float16 kernels (NaN aside: which of two NaN inputs a dot returns, or a
 * NaN's payload, may differ); products of two floats or two halves are exact
 * in double, so the fused multiply-add rounds as PAIRWISE's multiply and add.
 * They prefetch as PAIRWISE does (PW_PF: two lines a block, each stream).
 * x . x (b == a, a squared norm) converts each term once: half the
 * conversions, the same bits. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PW_CVT512(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define PW_CVT256(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define PW_CVTH512(p) _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p))))
#define PW_CVTH256(p) _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(p))))
#define PW_SIMD(NAME, T, CV, TARGET, VD, W, ZERO, LOADCVT, FMA, ADD, STORE)                                   \
    __attribute__((target(TARGET))) static double NAME(const T *a, const T *b, int64_t n)                     \
    {                                                                                                         \
        enum { NV = PW_ACC / W };                                                                             \
        double stack[64];                                                                                     \
        int depth = 0;                                                                                        \
        uint64_t blk = 0;                                                                                     \
        int64_t i = 0;                                                                                        \
        for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {                                                     \
            PW_PF(a + i, sizeof(T) * PW_BLOCK);                                                               \
            VD r[NV];                                                                                         \
            for (int q = 0; q < NV; q++)                                                                      \
                r[q] = ZERO();                                                                                \
            if (b == a) { /* x . x: the same lines, one conversion a term */                                 \
                for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                    \
                    for (int q = 0; q < NV; q++) {                                                            \
                        const VD x_ = LOADCVT(a + i + t + W * q);                                             \
                        r[q] = FMA(x_, x_, r[q]);                                                             \
                    }                                                                                         \
            } else if (b) {                                                                                   \
                if (PW_PF_DOT)                                                                                \
                    PW_PF(b + i, sizeof(T) * PW_BLOCK);                                                       \
                for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                    \
                    for (int q = 0; q < NV; q++)                                                              \
                        r[q] = FMA(LOADCVT(a + i + t + W * q), LOADCVT(b + i + t + W * q), r[q]);             \
            } else {                                                                                          \
                for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                    \
                    for (int q = 0; q < NV; q++)                                                              \
                        r[q] = ADD(r[q], LOADCVT(a + i + t + W * q));                                         \
            }                                                                                                 \
            double acc[PW_ACC];                                                                               \
            for (int q = 0; q < NV; q++)                                                                      \
                STORE(acc + W * q, r[q]);                                                                     \
            PW_FOLD(acc);                                                                                     \
            PW_PUSH(stack, depth, blk, acc[0]);                                                               \
        }                                                                                                     \
        double s = 0;                                                                                         \
        for (; i < n; i++)                                                                                    \
            s += b ? CV(a[i]) * CV(b[i]) : CV(a[i]);                                                          \
        PW_DRAIN(stack, depth, s);                                                                            \
        return s;                                                                                             \
    }
#define PW_SIMD512(NAME, T, CV, TARGET, LOADCVT)                                                              \
    PW_SIMD(NAME, T, CV, TARGET, __m512d, 8, _mm512_setzero_pd, LOADCVT, _mm512_fmadd_pd, _mm512_add_pd,      \
            _mm512_storeu_pd)
#define PW_SIMD256(NAME, T, CV, TARGET, LOADCVT)                                                              \
    PW_SIMD(NAME, T, CV, TARGET, __m256d, 4, _mm256_setzero_pd, LOADCVT, _mm256_fmadd_pd, _mm256_add_pd,      \
            _mm256_storeu_pd)
PW_SIMD512(pw_f32_avx512, float, PW_D, "avx512f", PW_CVT512)
PW_SIMD256(pw_f32_avx2, float, PW_D, "avx2,fma", PW_CVT256)
PW_SIMD512(pw_f16_avx512, uint16_t, PW_H, "avx512f,f16c", PW_CVTH512)
PW_SIMD256(pw_f16_avx2, uint16_t, PW_H, "avx2,fma,f16c", PW_CVTH256)
#endif

/* Contiguous integers: one wrapping uint64 loop the compiler vectorizes. */
#define ILOOP(T, CONV)                                                                                        \
    do {                                                                                                      \
        const T *pa = (const T *)c->a + lo, *pb = c->b ? (const T *)c->b + lo : NULL;                         \
        const int64_t m = hi - lo;                                                                            \
        if (pb)                                                                                               \
            for (int64_t i = 0; i < m; i++)                                                                   \
                s += (uint64_t)CONV(pa[i]) * (uint64_t)CONV(pb[i]);                                           \
        else                                                                                                  \
            for (int64_t i = 0; i < m; i++)                                                                   \
                s += (uint64_t)CONV(pa[i]);                                                                   \
    } while (0)

/* One piece [lo, hi) of at most GS_CPU_CHUNK elements of a floating input:
 * the pairwise kernels, strided or contiguous -- the SIMD ones (PICK) where
 * the CPU has them (gs_cpu_features, which GPUSYNC_CPU_SIMD caps).  A sum
 * passes a as b: PAIRWISE's prefetch tells a dot by b != a. */
#define PW_PIECE(T, SUF, PICK)                                                                                \
    do {                                                                                                      \
        const T *a = (const T *)c->a + lo * c->sa, *b = c->b ? (const T *)c->b + lo * c->sb : NULL;           \
        if (!contig)                                                                                          \
            return b ? pw_sdot_##SUF(a, b, n, c->sa, c->sb) : pw_ssum_##SUF(a, NULL, n, c->sa, 0);            \
        PICK;                                                                                                 \
        return b ? pw_dot_##SUF(a, b, n) : pw_sum_##SUF(a, a, n);                                             \
    } while (0)
#if defined(__x86_64__) && defined(__GNUC__)
#define PW_PICK(K512, F512, K256, F256)                                                                       \
    do {                                                                                                      \
        const int f_ = gs_cpu_features();                                                                     \
        if ((f_ & (F512)) == (F512))                                                                          \
            return K512(a, b, n);                                                                             \
        if ((f_ & (F256)) == (F256))                                                                          \
            return K256(a, b, n);                                                                             \
    } while (0)
#else
#define PW_PICK(K512, F512, K256, F256) ((void)0)
#endif
static double piece_f(const rctx *c, int64_t lo, int64_t hi)
{
    const int64_t n = hi - lo;
    const int contig = c->sa == 1 && (!c->b || c->sb == 1);
    switch (c->dt) {
    case GS_FLOAT16:
        PW_PIECE(uint16_t, f16,
                 PW_PICK(pw_f16_avx512, GS_CPU_AVX512 | GS_CPU_F16C, pw_f16_avx2, GS_CPU_FMA | GS_CPU_F16C));
    case GS_FLOAT32: PW_PIECE(float, f32, PW_PICK(pw_f32_avx512, GS_CPU_AVX512, pw_f32_avx2, GS_CPU_FMA));
    default: PW_PIECE(double, f64, (void)0);
    }
}

GS_CLONES static uint64_t piece_i(const rctx *c, int64_t lo, int64_t hi)
{
    uint64_t s = 0;
    if (c->sa == 1 && (!c->b || c->sb == 1)) {
        switch (c->dt) {
        case GS_BOOL: ILOOP(uint8_t, NZ); break;
        case GS_INT8: ILOOP(int8_t, SEXT); break;
        case GS_UINT8: ILOOP(uint8_t, ID); break;
        case GS_INT16: ILOOP(int16_t, SEXT); break;
        case GS_UINT16: ILOOP(uint16_t, ID); break;
        case GS_INT32: ILOOP(int32_t, SEXT); break;
        case GS_UINT32: ILOOP(uint32_t, ID); break;
        default: ILOOP(uint64_t, ID); break;
        }
        return s;
    }
    switch (c->dt) {
    case GS_BOOL: LOOP(uint8_t, uint64_t, NZ); break;
    case GS_INT8: LOOP(int8_t, uint64_t, SEXT); break;
    case GS_UINT8: LOOP(uint8_t, uint64_t, ID); break;
    case GS_INT16: LOOP(int16_t, uint64_t, SEXT); break;
    case GS_UINT16: LOOP(uint16_t, uint64_t, ID); break;
    case GS_INT32: LOOP(int32_t, uint64_t, SEXT); break;
    case GS_UINT32: LOOP(uint32_t, uint64_t, ID); break;
    default: LOOP(uint64_t, uint64_t, ID); break;
    }
    return s;
}

/* [lo, hi) in pieces of GS_CPU_CHUNK, checking for an interrupt between
 * them; the pieces' float sums are combined pairwise too (a binary counter
 * of partial sums: piece k merges with the partials its trailing one-bits
 * name), so the whole range is summed pairwise. */
static double range_f(const rctx *c, int tid, int64_t lo, int64_t hi)
{
    double stack[64];
    int depth = 0;
    uint64_t k = 0;
    for (int64_t p = lo; p < hi; p += GS_CPU_CHUNK, k++) {
        if (gs_cpu_stop(tid))
            break;
        PW_PUSH(stack, depth, k, piece_f(c, p, hi - p < GS_CPU_CHUNK ? hi : p + GS_CPU_CHUNK));
    }
    double s = 0;
    PW_DRAIN(stack, depth, s);
    return s;
}

static uint64_t range_i(const rctx *c, int tid, int64_t lo, int64_t hi)
{
    uint64_t s = 0;
    for (int64_t p = lo; p < hi; p += GS_CPU_CHUNK) {
        if (gs_cpu_stop(tid))
            break;
        s += piece_i(c, p, hi - p < GS_CPU_CHUNK ? hi : p + GS_CPU_CHUNK);
    }
    return s;
}

static void acc_add(rctx *c, double f, uint64_t u)
{
    if (!c->is_float) {
        atomic_fetch_add(&c->acc, u);
        return;
    }
    uint64_t old = atomic_load(&c->acc), nw;
    do { /* double add as a compare-and-swap loop on its bits */
        double d;
        memcpy(&d, &old, 8);
        d += f;
        memcpy(&nw, &d, 8);
    } while (!atomic_compare_exchange_weak(&c->acc, &old, nw));
}

/* Add the partials in order (the last thread in, or the caller). */
static void finish(rctx *c)
{
    double f = 0;
    uint64_t u = 0;
    for (int64_t i = 0; i < c->nparts; i++) {
        if (c->is_float)
            f += c->fpart[i];
        else
            u += c->ipart[i];
    }
    acc_add(c, f, u);
}

static void slice(void *ctx, int tid, int64_t lo, int64_t hi)
{
    rctx *c = (rctx *)ctx;
    if (c->det) { /* lo, hi count tiles */
        for (int64_t t = lo; t < hi; t++) {
            const int64_t a = t * GS_REDUCE_TILE, b = a + GS_REDUCE_TILE < c->n ? a + GS_REDUCE_TILE : c->n;
            if (c->is_float)
                c->fpart[t] = range_f(c, tid, a, b);
            else
                c->ipart[t] = range_i(c, tid, a, b);
        }
    } else {
        const double f = c->is_float ? range_f(c, tid, lo, hi) : 0;
        const uint64_t u = c->is_float ? 0 : range_i(c, tid, lo, hi);
        switch (c->strategy) {
        case GS_STRATEGY_ATOMIC: acc_add(c, f, u); return;
        case GS_STRATEGY_MUTEX:
            if (gs_spin_lock(&c->lock, &c->error, gs_spin_timeout_ns())) {
                uint64_t v = atomic_load_explicit(&c->acc, memory_order_relaxed); /* plain read under the lock */
                if (c->is_float) {
                    double d;
                    memcpy(&d, &v, 8);
                    d += f;
                    memcpy(&v, &d, 8);
                } else {
                    v += u;
                }
                atomic_store_explicit(&c->acc, v, memory_order_relaxed);
                gs_spin_unlock(&c->lock);
            }
            return;
        default:
            if (c->is_float)
                c->fpart[tid] = f;
            else
                c->ipart[tid] = u;
        }
    }
    if (c->strategy == GS_STRATEGY_THREADFENCE &&
        atomic_fetch_add_explicit(&c->ticket, 1, memory_order_acq_rel) == (unsigned)c->nthreads - 1)
        finish(c); /* the last thread: every partial is visible (acq_rel ticket) */
    if (c->strategy == GS_STRATEGY_GRID) { /* every thread waits at a counter barrier; thread 0 finishes */
        atomic_fetch_add_explicit(&c->arrived, 1, memory_order_release);
        if (gs_spin_wait(&c->arrived, (unsigned)c->nthreads, &c->error, gs_spin_timeout_ns()) && tid == 0)
            finish(c);
    }
}

/* The memory an element of a view with this element stride costs, for the
 * thread count's cost: its own bytes contiguous, the stride's bytes up to a
 * whole line (a strided read moves whole lines: x[::2] of float64 reads 16
 * bytes an element, x[::8] 64).  Local AMD EPYC, one thread, a float64 dot of
 * 10^5: contiguous 23-27 us, x[::2] . y[::2] 49-65 us. */
static double line_bytes(int64_t stride, int isz)
{
    const double b = (double)(stride < 0 ? -stride : stride > 0 ? stride : 1) * isz;
    return b < 64 ? b : 64;
}

gs_status gs_cpu_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy, int deterministic,
                        void *stream, gs_strategy *used)
{
    (void)stream;
    if (b && (b->length != a->length || b->dtype != a->dtype))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "dot: a and b must have the same length and dtype");
    if (a->device != GS_HOST || (b && b->device != GS_HOST) || out->device != GS_HOST || out->length != 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "the cpu backend takes host arrays and one host output element");
    const int is_float = gs_dtype_is_float(a->dtype);
    int tiles = 0;
    const gs_status st = gs_reduce_resolve(&strategy, deterministic, is_float, 0, &tiles);
    if (st != GS_OK)
        return st;
    *used = strategy;
    rctx c;
    memset(&c, 0, sizeof c);
    c.a = a->data;
    c.b = b ? b->data : NULL;
    c.sa = a->stride;
    c.sb = b ? b->stride : 0;
    c.dt = a->dtype;
    c.is_float = is_float;
    c.n = a->length;
    c.strategy = strategy;
    c.det = tiles;
    atomic_init(&c.acc, 0);
    atomic_init(&c.lock, 0);
    atomic_init(&c.error, 0);
    atomic_init(&c.ticket, 0);
    atomic_init(&c.arrived, 0);
    const int64_t items = c.det ? (c.n + GS_REDUCE_TILE - 1) / GS_REDUCE_TILE : c.n;
    const int isz = gs_dtype_size(c.dt);
    c.nthreads =
        gs_cpu_threads_for_cost(c.n, GS_CPU_NS_PER_BYTE * (line_bytes(c.sa, isz) + (b ? line_bytes(c.sb, isz) : 0)));
    if (c.nthreads > items)
        c.nthreads = items > 0 ? (int)items : 1;
    /* two-pass: several slices a thread, claimed (a late or descheduled thread's later slices go to the
     * others); the strategies whose threads meet (grid's barrier, threadfence's ticket) keep one a thread */
    int ntasks = c.nthreads;
    if (!c.det && strategy == GS_STRATEGY_TWO_PASS && c.nthreads > 1) {
        const int64_t per = (int64_t)gs_env_number(GS_ENV_CPU_TASKS, GS_CPU_REDUCE_TASKS, NULL);
        const int64_t fit = items / ((int64_t)c.nthreads * GS_CPU_CHUNK); /* slices of GS_CPU_CHUNK at least */
        if (per > 1 && fit > 1) /* (gs_cpu_parallel_tasks caps the slices: partials past its count stay 0) */
            ntasks = (int)((per < fit ? per : fit) * c.nthreads);
    }
    c.nparts = c.det ? items : ntasks;
    void *parts = calloc((size_t)(c.nparts > 0 ? c.nparts : 1), 8);
    if (!parts)
        return gs_fail(GS_ERR_NO_MEMORY, "out of host memory for %lld partials", (long long)c.nparts);
    c.fpart = (double *)parts;
    c.ipart = (uint64_t *)parts;
    const gs_status run = items > 0 ? gs_cpu_parallel_tasks(items, c.nthreads, ntasks, slice, &c)
                                    : GS_OK;
    if (run != GS_OK) {
        free(parts);
        return run;
    }
    if (strategy == GS_STRATEGY_TWO_PASS)
        finish(&c);
    free(parts);
    if (atomic_load(&c.error))
        return gs_fail(GS_ERR_DEADLOCK, "sum/dot (%s): a thread waited more than %.0f ms for the others",
                       gs_strategy_name(strategy), gs_spin_timeout_ns() / 1e6);
    const uint64_t acc = atomic_load(&c.acc);
    double f;
    memcpy(&f, &acc, 8);
    gs_store_acc(out->data, out->dtype, f, acc);
    return GS_OK;
}
