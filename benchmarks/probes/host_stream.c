/* Host read bandwidth of a sum / dot loop on t threads (each its contiguous
 * slice, as the CPU engine splits a job) under software-prefetch variants:
 * what limits the engine's streaming ops at 16 threads (H200 host: ~100 GB/s
 * where torch's threaded dot read 143 GB/s, results/sizes_host_big_H200_r245.md).
 *
 *   gcc -O3 -march=native -pthread benchmarks/probes/host_stream.c -o /tmp/hs && /tmp/hs [n_doubles]
 *
 * Variants: none (the hardware prefetchers alone); engine (two lines of each
 * stream 2 KB ahead per 2 KB block, prefetcht1: csrc/cpu/reduce.c's PAIRWISE);
 * every line D bytes ahead with prefetcht0 / prefetcht1 / prefetchnta. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef double d8 __attribute__((vector_size(64)));
static double *A, *B;
static int64_t N;
static int T, VAR, DOT;
static double partial[256], t_start[256], t_end[256];
static pthread_barrier_t bar;
static double checksum;

static const struct { const char *name; int dist, hint; } variants[] = {
    {"none", 0, -1},          {"engine", 2048, 9},       {"t0 1KB", 1024, 3},  {"t0 4KB", 4096, 3},
    {"t0 16KB", 16384, 3},    {"t1 4KB", 4096, 2},      {"t1 16KB", 16384, 2}, {"nta 4KB", 4096, 0},
};
#define NV (int)(sizeof variants / sizeof variants[0])

#define PF(p, h)                                                                                              \
    do {                                                                                                      \
        if ((h) == 3) __builtin_prefetch((p), 0, 3);                                                          \
        else if ((h) == 2) __builtin_prefetch((p), 0, 2);                                                     \
        else __builtin_prefetch((p), 0, 0);                                                                   \
    } while (0)

static double run_slice(const double *a, const double *b, int64_t n, int var)
{
    d8 r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0};
    const int dist = variants[var].dist, hint = variants[var].hint;
    int64_t i = 0;
    for (; i + 256 <= n; i += 256) { /* 2 KB a block of each stream */
        if (hint == 9) {
            __builtin_prefetch((const char *)(a + i) + 2048, 0, 2);
            __builtin_prefetch((const char *)(a + i) + 2048 + 64, 0, 2);
            if (b) {
                __builtin_prefetch((const char *)(b + i) + 2048, 0, 2);
                __builtin_prefetch((const char *)(b + i) + 2048 + 64, 0, 2);
            }
        } else if (hint >= 0) {
            for (int l = 0; l < 32; l++) {
                PF((const char *)(a + i) + dist + 64 * l, hint);
                if (b)
                    PF((const char *)(b + i) + dist + 64 * l, hint);
            }
        }
        for (int k = 0; k < 256; k += 32) {
            d8 x0, x1, x2, x3;
            memcpy(&x0, a + i + k, 64), memcpy(&x1, a + i + k + 8, 64), memcpy(&x2, a + i + k + 16, 64),
                memcpy(&x3, a + i + k + 24, 64);
            if (b) {
                d8 y0, y1, y2, y3;
                memcpy(&y0, b + i + k, 64), memcpy(&y1, b + i + k + 8, 64), memcpy(&y2, b + i + k + 16, 64),
                    memcpy(&y3, b + i + k + 24, 64);
                r0 += x0 * y0, r1 += x1 * y1, r2 += x2 * y2, r3 += x3 * y3;
            } else {
                r0 += x0, r1 += x1, r2 += x2, r3 += x3;
            }
        }
    }
    d8 r = r0 + r1 + r2 + r3;
    double s = 0;
    for (int k = 0; k < 8; k++)
        s += r[k];
    for (; i < n; i++)
        s += b ? a[i] * b[i] : a[i];
    return s;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    const int64_t lo = N * t / T, hi = N * (t + 1) / T;
    pthread_barrier_wait(&bar);
    t_start[t] = now();
    partial[t] = run_slice(A + lo, DOT ? B + lo : NULL, hi - lo, VAR);
    t_end[t] = now();
    return NULL;
}

/* one timed pass of T threads (created per pass; a barrier starts them
 * together): from the first thread's start to the last one's end */
static double pass(void)
{
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, T);
    for (int t = 0; t < T; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    double t0 = t_start[0], t1 = t_end[0];
    for (int t = 1; t < T; t++)
        t0 = t_start[t] < t0 ? t_start[t] : t0, t1 = t_end[t] > t1 ? t_end[t] : t1;
    const double dt = t1 - t0;
    double s = 0;
    for (int t = 0; t < T; t++)
        s += partial[t];
    checksum += s;
    pthread_barrier_destroy(&bar);
    return dt;
}

int main(int argc, char **argv)
{
    N = argc > 1 ? atoll(argv[1]) : 100000000;
    A = aligned_alloc(64, (size_t)N * 8 + 64), B = aligned_alloc(64, (size_t)N * 8 + 64);
    for (int64_t i = 0; i < N; i++) /* touched by one thread, as a NumPy array is */
        A[i] = 1.0 / (double)(i + 1), B[i] = (double)(i & 7);
    const int counts[] = {1, 8, 16};
    printf("GB/s (best of 5 passes), %lld doubles a stream\n%-8s %-5s", (long long)N, "variant", "op");
    for (int c = 0; c < 3; c++)
        printf(" %6d thr", counts[c]);
    printf("\n");
    for (DOT = 0; DOT <= 1; DOT++)
        for (VAR = 0; VAR < NV; VAR++) {
            printf("%-8s %-5s", variants[VAR].name, DOT ? "dot" : "sum");
            for (int c = 0; c < 3; c++) {
                T = counts[c];
                double best = 1e9;
                for (int r = 0; r < 5; r++) {
                    const double dt = pass();
                    best = dt < best ? dt : best;
                }
                printf(" %10.1f", (double)N * 8 * (DOT ? 2 : 1) / best / 1e9);
            }
            printf("\n");
            fflush(stdout);
        }
    printf("(checksum %g)\n", checksum);
    return 0;
}
