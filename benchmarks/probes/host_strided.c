/* One thread's strided float64 dot (x[::s] . y[::s]) under the loop shapes
 * tried for csrc/cpu/reduce.c's PW_STRIDED: ns an element, best of many
 * passes, for inputs from the L1 / L2 out to memory.
 *
 *   gcc -std=c11 -O3 -fwrapv -ffp-contract=off benchmarks/probes/host_strided.c -o /tmp/hst && /tmp/hst [stride]
 *
 * Variants: loop4 (the engine's strided loop before: four scalar accumulators,
 * a sequential chain each, pieces combined pairwise above it); vec4 (PW_STRIDED:
 * PAIRWISE's blocks, the 32 accumulators as eight vectors of four filled from
 * strided loads, the pointer steps hidden from gcc -- the bits of the
 * contiguous kernel); vec4_plain (the same without hiding the steps); pw32
 * (PAIRWISE's own loop over a runtime stride: 32 accumulators in memory, every
 * index multiplied); groups8 (a block as four groups of eight scalar
 * accumulators: the same bits, lines visited out of order); acc8 (eight
 * scalar accumulators in 256-term blocks under the binary counter: pairwise,
 * not the contiguous bits).  Local AMD EPYC (2-core VM, noisy +-20 %), stride
 * 2, 10^4 / 10^5 / 10^7: loop4 0.36-0.56 / 0.42-0.62 / 2.3-3.8, vec4
 * 0.41-0.51 / 0.43-0.56 / 2.2-3.2, pw32 0.66-0.72 / 0.70-0.74 / 2.7-3.5,
 * groups8 0.53-0.67 / 0.65-0.75 / 2.8-3.3, acc8 0.44-0.45 / 0.46-0.57 / 2.4-3.0. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PW_ACC 32
#define PW_BLOCK 256
typedef double d4 __attribute__((vector_size(32)));
#define FOLD(r)                                                                                               \
    do {                                                                                                      \
        d4 v_[8];                                                                                             \
        memcpy(v_, r, sizeof v_);                                                                             \
        for (int j = 0; j < 4; j++)                                                                           \
            v_[j] += v_[j + 4];                                                                               \
        v_[0] += v_[2], v_[1] += v_[3];                                                                       \
        v_[0] += v_[1];                                                                                       \
        r[0] = (v_[0][0] + v_[0][2]) + (v_[0][1] + v_[0][3]);                                                 \
    } while (0)
#define PUSH(stack, depth, k, v)                                                                              \
    do {                                                                                                      \
        (stack)[(depth)++] = (v);                                                                             \
        for (uint64_t m_ = (uint64_t)(k) + 1; !(m_ & 1); m_ >>= 1, (depth)--)                                 \
            (stack)[(depth) - 2] += (stack)[(depth) - 1];                                                     \
    } while (0)
#define DRAIN(stack, depth, s)                                                                                \
    do {                                                                                                      \
        while ((depth) > 0)                                                                                   \
            (s) += (stack)[--(depth)];                                                                        \
    } while (0)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif
#define NOVEC __attribute__((optimize("no-tree-vectorize")))
#define OPAQUE(p) __asm__("" : "+r"(p))
#define NOOP(p) ((void)0)
#define TAIL(s)                                                                                               \
    for (; i < n; i++)                                                                                        \
    s += a[i * sa] * b[i * sb]
typedef double (*kernel)(const double *, const double *, int64_t, int64_t, int64_t);

__attribute__((noinline)) static double loop4(const double *a, const double *b, int64_t n, int64_t sa, int64_t sb)
{
    double r0 = 0, r1 = 0, r2 = 0, r3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        r0 += a[i * sa] * b[i * sb];
        r1 += a[(i + 1) * sa] * b[(i + 1) * sb];
        r2 += a[(i + 2) * sa] * b[(i + 2) * sb];
        r3 += a[(i + 3) * sa] * b[(i + 3) * sb];
    }
    TAIL(r0);
    return (r0 + r1) + (r2 + r3);
}

#define VEC4(NAME, HIDE)                                                                                      \
    CLONES __attribute__((noinline)) static double NAME(const double *a, const double *b, int64_t n, int64_t sa, \
                                                        int64_t sb)                                           \
    {                                                                                                         \
        double stack[64], s = 0;                                                                              \
        int depth = 0;                                                                                        \
        uint64_t blk = 0;                                                                                     \
        int64_t i = 0;                                                                                        \
        for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {                                                     \
            d4 r[8] = {{0}};                                                                                  \
            const double *pa = a + i * sa, *pb = b + i * sb;                                                  \
            for (int t = 0; t < PW_BLOCK; t += PW_ACC)                                                        \
                for (int q = 0; q < 8; q++) {                                                                 \
                    const d4 x_ = {pa[0], pa[sa], pa[2 * sa], pa[3 * sa]};                                    \
                    pa += 4 * sa;                                                                             \
                    HIDE(pa);                                                                                 \
                    const d4 y_ = {pb[0], pb[sb], pb[2 * sb], pb[3 * sb]};                                    \
                    pb += 4 * sb;                                                                             \
                    HIDE(pb);                                                                                 \
                    r[q] += x_ * y_;                                                                          \
                }                                                                                             \
            double acc[32];                                                                                   \
            memcpy(acc, r, sizeof acc);                                                                       \
            FOLD(acc);                                                                                        \
            PUSH(stack, depth, blk, acc[0]);                                                                  \
        }                                                                                                     \
        TAIL(s);                                                                                              \
        DRAIN(stack, depth, s);                                                                               \
        return s;                                                                                             \
    }
VEC4(vec4, OPAQUE)
VEC4(vec4_plain, NOOP)

__attribute__((noinline)) static double pw32(const double *a, const double *b, int64_t n, int64_t sa, int64_t sb)
{
    double stack[64], s = 0;
    int depth = 0;
    uint64_t blk = 0;
    int64_t i = 0;
    for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {
        double r[32] = {0};
        for (int t = 0; t < PW_BLOCK; t += PW_ACC)
            for (int j = 0; j < PW_ACC; j++)
                r[j] += a[(i + t + j) * sa] * b[(i + t + j) * sb];
        FOLD(r);
        PUSH(stack, depth, blk, r[0]);
    }
    TAIL(s);
    DRAIN(stack, depth, s);
    return s;
}

NOVEC __attribute__((noinline)) static double groups8(const double *a, const double *b, int64_t n, int64_t sa,
                                                      int64_t sb)
{
    double stack[64], s = 0;
    int depth = 0;
    uint64_t blk = 0;
    int64_t i = 0;
    for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {
        double r[32];
        for (int g = 0; g < 32; g += 8) {
            double q[8] = {0};
            const double *pa = a + (i + g) * sa, *pb = b + (i + g) * sb;
            for (int t = 0; t < 8; t++, pa += 32 * sa, pb += 32 * sb)
                for (int j = 0; j < 8; j++)
                    q[j] += pa[j * sa] * pb[j * sb];
            memcpy(r + g, q, sizeof q);
        }
        FOLD(r);
        PUSH(stack, depth, blk, r[0]);
    }
    TAIL(s);
    DRAIN(stack, depth, s);
    return s;
}

NOVEC __attribute__((noinline)) static double acc8(const double *a, const double *b, int64_t n, int64_t sa,
                                                   int64_t sb)
{
    double stack[64], s = 0;
    int depth = 0;
    uint64_t blk = 0;
    int64_t i = 0;
    const double *pa = a, *pb = b;
    for (; i + PW_BLOCK <= n; i += PW_BLOCK, blk++) {
        double r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0, r5 = 0, r6 = 0, r7 = 0;
        for (int t = 0; t < PW_BLOCK; t += 8, pa += 8 * sa, pb += 8 * sb) {
            r0 += pa[0] * pb[0], r1 += pa[sa] * pb[sb], r2 += pa[2 * sa] * pb[2 * sb];
            r3 += pa[3 * sa] * pb[3 * sb], r4 += pa[4 * sa] * pb[4 * sb], r5 += pa[5 * sa] * pb[5 * sb];
            r6 += pa[6 * sa] * pb[6 * sb], r7 += pa[7 * sa] * pb[7 * sb];
        }
        PUSH(stack, depth, blk, ((r0 + r4) + (r2 + r6)) + ((r1 + r5) + (r3 + r7)));
    }
    TAIL(s);
    DRAIN(stack, depth, s);
    return s;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const int64_t st = argc > 1 ? atoll(argv[1]) : 2, ast = st < 0 ? -st : st > 0 ? st : 1;
    static const int64_t sizes[] = {10000, 100000, 1000000, 10000000};
    static const struct { const char *name; kernel fn; } ks[] = {
        {"loop4", loop4}, {"vec4", vec4}, {"vec4_plain", vec4_plain}, {"pw32", pw32}, {"groups8", groups8},
        {"acc8", acc8}};
    for (int k = 0; k < 4; k++) {
        const int64_t n = sizes[k], len = n * ast;
        double *X = malloc((size_t)len * 8), *Y = malloc((size_t)len * 8);
        if (!X || !Y)
            return 1;
        for (int64_t i = 0; i < len; i++)
            X[i] = (double)(i % 1000) * 0.001, Y[i] = (double)(i % 777) * 0.01;
        const double *x = st < 0 ? X + len - 1 : X, *y = st < 0 ? Y + len - 1 : Y;
        printf("n=%lld stride %lld:", (long long)n, (long long)st);
        double check = 0;
        for (size_t f = 0; f < sizeof ks / sizeof ks[0]; f++) {
            double best = 1e30;
            const int reps = (int)(30000000 / n) + 3;
            for (int r = 0; r < reps; r++) {
                const double t0 = now();
                check += ks[f].fn(x, y, n, st, st);
                const double dt = now() - t0;
                best = dt < best ? dt : best;
            }
            printf("  %s %.3f", ks[f].name, best / (double)n * 1e9);
        }
        printf(" ns/el (checksum %g)\n", check);
        free(X);
        free(Y);
    }
    return 0;
}
