// binstat_acc.cu -- what the per-point accumulation of a float64 binned
// statistic costs, and whether another way of doing it is cheaper.  A probe
// behind a tuning decision (issue 14: binned_statistic std / mean at >= 50 %
// of read; the privatized kernel in csrc/cuda/binstat_priv.cu); not part of
// the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/binstat_acc benchmarks/probes/binstat_acc.cu
//   /tmp/binstat_acc [Mpoints] [bins]     (defaults 32, 1000)
//
// Every variant reads x and v (float64, 16-byte loads), bins x on equal-width
// bins, writes SciPy's int64 bin number (streaming stores, as the package
// does) and accumulates a bin's partials in shared memory; the partials are
// merged into float64 / uint64 global ones at the end.  Variants:
//   none        no accumulation: the traffic's roof
//   count       n (32-bit atomicAdd)
//   sum         s1 (float64 atomicAdd: a compare-and-swap loop on sm_90)
//   mean        n, s1
//   std         n, s1, s2                          (the package's way)
//   std-nocnt   s1, s2                             (what n costs)
//   mean-cas    n, s1 by a hand-written CAS loop
//   std-cas2    n, then s1 and s2 by one interleaved pair of CAS loops
//   *-warp      a copy of the partials per warp, 128-thread blocks:
//               __match_any_sync finds the lanes of a warp that share a
//               bin; a lane alone in its bin updates its warp's copy with
//               plain loads and stores, lanes that share one use atomics
// The lane-copy variants use 512-thread blocks, two an SM, R copies of the
// partials (lane l updates copy l % R; R the largest power of two whose
// copies fit half an SM's shared memory), as the package does.
// Each line: us per call (median of 7 replays of a CUDA graph of 5 calls),
// % of the read of x and v (a read-only kernel's time in the same run), and a check of
// the counts (exact) and sums (relative) against a host reference.
#include "probe_check.cuh"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

enum { V_NONE, V_COUNT, V_SUM, V_MEAN, V_STD, V_STD_NOCNT, V_MEAN_CAS, V_STD_CAS2, V_MEAN_WARP, V_STD_WARP, V_NV };
static const char *NAMES[V_NV] = {"none",      "count",    "sum",       "mean",      "std",
                                  "std-nocnt", "mean-cas", "std-cas2", "mean-warp", "std-warp"};
constexpr unsigned FULL = 0xffffffffu;

__host__ __device__ constexpr bool has_cnt(int V) { return V != V_NONE && V != V_SUM && V != V_STD_NOCNT; }
__host__ __device__ constexpr bool has_s1(int V) { return V != V_NONE && V != V_COUNT; }
__host__ __device__ constexpr bool has_s2(int V)
{
    return V == V_STD || V == V_STD_NOCNT || V == V_STD_CAS2 || V == V_STD_WARP;
}
__host__ __device__ constexpr bool by_warp(int V) { return V == V_MEAN_WARP || V == V_STD_WARP; }
__host__ __device__ constexpr int threads_of(int V) { return by_warp(V) ? 128 : 512; }

struct args {
    const double2 *x, *v;
    longlong2 *bn;
    int64_t npairs;
    double lo, scale;
    int nb, reps; /* bins, copies of the partials a block */
    unsigned long long *gcnt;
    double *gs1, *gs2;
};

/* bytes of one copy of the partials: s1, s2 (float64), n (uint32) */
static size_t copy_bytes(int V, int nb)
{
    return (size_t)nb * ((has_s1(V) ? 8 : 0) + (has_s2(V) ? 8 : 0) + (has_cnt(V) ? 4 : 0));
}

__device__ __forceinline__ void cas_add(double *p, double a)
{
    unsigned long long *q = (unsigned long long *)p;
    unsigned long long o = *(volatile unsigned long long *)q, r;
    while ((r = atomicCAS(q, o, (unsigned long long)__double_as_longlong(__longlong_as_double((long long)o) + a))) !=
           o)
        o = r;
}

/* two CAS loops interleaved: both compare-and-swaps in flight each pass */
__device__ __forceinline__ void cas_add2(double *p, double a, double *q, double b)
{
    unsigned long long *pp = (unsigned long long *)p, *qq = (unsigned long long *)q;
    unsigned long long op = *(volatile unsigned long long *)pp, oq = *(volatile unsigned long long *)qq;
    bool dp = false, dq = false;
    do {
        unsigned long long rp = op, rq = oq;
        if (!dp)
            rp = atomicCAS(pp, op, (unsigned long long)__double_as_longlong(__longlong_as_double((long long)op) + a));
        if (!dq)
            rq = atomicCAS(qq, oq, (unsigned long long)__double_as_longlong(__longlong_as_double((long long)oq) + b));
        dp = dp || rp == op;
        dq = dq || rq == oq;
        op = rp;
        oq = rq;
    } while (!(dp && dq));
}

template <int V> __global__ void __launch_bounds__(threads_of(V)) kern(args a)
{
    extern __shared__ __align__(16) unsigned char sm[];
    const int R = a.reps, cells = a.nb * R;
    double *s1 = (double *)sm;
    double *s2 = s1 + (has_s1(V) ? cells : 0);
    unsigned *cnt = (unsigned *)(s2 + (has_s2(V) ? cells : 0));
    for (int i = threadIdx.x; i < cells; i += blockDim.x) {
        if (has_s1(V))
            s1[i] = 0;
        if (has_s2(V))
            s2[i] = 0;
        if (has_cnt(V))
            cnt[i] = 0;
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.npairs; i += stride) {
        const double2 x = __ldg(a.x + i), v = __ldg(a.v + i);
        const double xs[2] = {x.x, x.y}, vs[2] = {v.x, v.y};
        int k[2];
        long long f[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const double t = (xs[j] - a.lo) * a.scale;
            const bool in = t >= 0 && t < a.nb;
            k[j] = in ? (int)t : -1;
            f[j] = in ? k[j] + 1 : (t < 0 ? 0 : a.nb + 1);
        }
        __stcs(a.bn + i, make_longlong2(f[0], f[1]));
#pragma unroll
        for (int j = 0; j < (V == V_NONE ? 0 : 2); j++) {
            if (by_warp(V)) {
                /* this warp's copy: cells k + warp * nb */
                const int c = k[j] + warp * a.nb;
                const unsigned peers = __match_any_sync(FULL, k[j]);
                if (k[j] >= 0) {
                    if (peers == (1u << lane)) {
                        s1[c] += vs[j];
                        if (has_s2(V))
                            s2[c] += vs[j] * vs[j];
                        cnt[c] += 1;
                    } else {
                        atomicAdd(s1 + c, vs[j]);
                        if (has_s2(V))
                            atomicAdd(s2 + c, vs[j] * vs[j]);
                        atomicAdd(cnt + c, 1u);
                    }
                }
                __syncwarp();
                continue;
            }
            if (k[j] < 0)
                continue;
            const int c = k[j] * R + (lane & (R - 1));
            if (has_cnt(V))
                atomicAdd(cnt + c, 1u);
            if (V == V_MEAN_CAS)
                cas_add(s1 + c, vs[j]);
            else if (V == V_STD_CAS2)
                cas_add2(s1 + c, vs[j], s2 + c, vs[j] * vs[j]);
            else {
                if (has_s1(V))
                    atomicAdd(s1 + c, vs[j]);
                if (has_s2(V))
                    atomicAdd(s2 + c, vs[j] * vs[j]);
            }
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < (V == V_NONE ? 0 : a.nb); b += blockDim.x) {
        double t1 = 0, t2 = 0;
        unsigned tn = 0;
        for (int r = 0; r < R; r++) {
            const int c = by_warp(V) ? b + r * a.nb : b * R + r;
            if (has_s1(V))
                t1 += s1[c];
            if (has_s2(V))
                t2 += s2[c];
            if (has_cnt(V))
                tn += cnt[c];
        }
        if (has_cnt(V) && tn)
            atomicAdd(a.gcnt + b, (unsigned long long)tn);
        if (has_s1(V) && t1 != 0)
            atomicAdd(a.gs1 + b, t1);
        if (has_s2(V) && t2 != 0)
            atomicAdd(a.gs2 + b, t2);
    }
}

/* the read ceiling: x and v read with 16-byte loads, one word written a block */
__global__ void __launch_bounds__(512) read_kernel(const double2 *__restrict__ x, const double2 *__restrict__ v,
                                                   int64_t npairs, double *sink)
{
    double t = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < npairs; i += (int64_t)gridDim.x * blockDim.x) {
        const double2 a = __ldg(x + i), b = __ldg(v + i);
        t += a.x + a.y + b.x + b.y;
    }
    if (t == 12345.678) /* never: keeps the loads */
        sink[0] = t;
}

template <int V> static void launch(cudaStream_t s, args a, int sms, size_t smem_total)
{
    const int T = threads_of(V);
    CK(cudaFuncSetAttribute(kern<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_total));
    int bps = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kern<V>, T, smem_total));
    kern<V><<<sms * (bps > 0 ? bps : 1), T, smem_total, s>>>(a);
    CK(cudaGetLastError());
}

typedef void (*launcher)(cudaStream_t, args, int, size_t);
static const launcher LAUNCH[V_NV] = {launch<V_NONE>,      launch<V_COUNT>,    launch<V_SUM>,
                                      launch<V_MEAN>,      launch<V_STD>,      launch<V_STD_NOCNT>,
                                      launch<V_MEAN_CAS>,  launch<V_STD_CAS2>, launch<V_MEAN_WARP>,
                                      launch<V_STD_WARP>};

int main(int argc, char **argv)
{
    const int64_t n = (argc > 1 ? atoll(argv[1]) : 32) << 20;
    const int nb = argc > 2 ? atoi(argv[2]) : 1000;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    const size_t smem_sm = p.sharedMemPerMultiprocessor;
    printf("%s, %d SMs, %zu KiB shared an SM; %lld points, %d bins\n", p.name, sms, smem_sm / 1024, (long long)n, nb);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int dist = 0; dist < 2; dist++) {
        /* 0: x uniform on [0, 1); 1: x = u^4 (a quarter of the points in the first 0.4 % of the range) */
        std::vector<double> hx(n), hv(n);
        std::mt19937_64 g(42 + dist);
        std::uniform_real_distribution<double> U(0.0, 1.0);
        std::normal_distribution<double> N(3.0, 2.0);
        for (int64_t i = 0; i < n; i++) {
            const double u = U(g);
            hx[i] = dist ? u * u * u * u : u;
            hv[i] = N(g);
        }
        const double lo = 0.0, scale = nb / 1.0;
        std::vector<unsigned long long> rc(nb, 0);
        std::vector<double> r1(nb, 0), r2(nb, 0);
        for (int64_t i = 0; i < n; i++) {
            const double t = (hx[i] - lo) * scale;
            if (t >= 0 && t < nb) {
                const int k = (int)t;
                rc[k]++;
                r1[k] += hv[i];
                r2[k] += hv[i] * hv[i];
            }
        }
        double *dx, *dv, *dc, *g1, *g2;
        long long *bn;
        unsigned long long *gc;
        CK(cudaMalloc(&dx, n * 8));
        CK(cudaMalloc(&dv, n * 8));
        CK(cudaMalloc(&dc, 64));
        CK(cudaMalloc(&bn, n * 8));
        CK(cudaMalloc(&gc, nb * 8));
        CK(cudaMalloc(&g1, nb * 8));
        CK(cudaMalloc(&g2, nb * 8));
        CK(cudaMemcpy(dx, hx.data(), n * 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dv, hv.data(), n * 8, cudaMemcpyHostToDevice));
        const float read_us = graph_us(s, 5, [&](cudaStream_t st) {
            read_kernel<<<sms * 4, 512, 0, st>>>((const double2 *)dx, (const double2 *)dv, n / 2, dc);
        });
        printf("\n== x %s; read of x and v: %.1f us (%.0f GB/s)\n", dist ? "u^4 (skewed)" : "uniform", read_us,
               16.0 * n / (read_us * 1e3));
        for (int V = 0; V < V_NV; V++) {
            const int T = V == V_MEAN_WARP || V == V_STD_WARP ? 128 : 512;
            const size_t one = copy_bytes(V, nb);
            int R;
            if (V == V_MEAN_WARP || V == V_STD_WARP)
                R = T / 32;
            else {
                R = 1;
                while (one && (size_t)(2 * R) * one <= smem_sm / 2 - 1024 && R < 32)
                    R *= 2;
            }
            const size_t smem = one * R + 16;
            args a = {(const double2 *)dx, (const double2 *)dv, (longlong2 *)bn, n / 2, lo, scale, nb, R, gc, g1, g2};
            const float us = graph_us(s, 5, [&](cudaStream_t st) {
                CK(cudaMemsetAsync(gc, 0, nb * 8, st));
                CK(cudaMemsetAsync(g1, 0, nb * 8, st));
                CK(cudaMemsetAsync(g2, 0, nb * 8, st));
                LAUNCH[V](st, a, sms, smem);
            });
            /* the check: one more call, then the partials against the host's */
            CK(cudaMemsetAsync(gc, 0, nb * 8, s));
            CK(cudaMemsetAsync(g1, 0, nb * 8, s));
            CK(cudaMemsetAsync(g2, 0, nb * 8, s));
            LAUNCH[V](s, a, sms, smem);
            CK(cudaStreamSynchronize(s));
            std::vector<unsigned long long> c(nb);
            std::vector<double> h1(nb), h2(nb);
            CK(cudaMemcpy(c.data(), gc, nb * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(h1.data(), g1, nb * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(h2.data(), g2, nb * 8, cudaMemcpyDeviceToHost));
            bool ok = true;
            double worst = 0;
            for (int b = 0; b < nb; b++) {
                if (has_cnt(V) && c[b] != rc[b])
                    ok = false;
                if (has_s1(V))
                    worst = std::max(worst, std::fabs(h1[b] - r1[b]) / (std::fabs(r1[b]) + 1e-300 + 1e-12 * rc[b]));
                if (has_s2(V))
                    worst = std::max(worst, std::fabs(h2[b] - r2[b]) / (std::fabs(r2[b]) + 1e-300));
            }
            ok = ok && worst < 1e-9;
            printf("%-10s R=%-2d %4d thr  %8.1f us  %5.1f %% of read  %s (worst rel %.1e)\n", NAMES[V], R, T, us,
                   100.0 * read_us / us, ok ? "ok" : "WRONG", worst);
        }
        CK(cudaFree(dx));
        CK(cudaFree(dv));
        CK(cudaFree(dc));
        CK(cudaFree(bn));
        CK(cudaFree(gc));
        CK(cudaFree(g1));
        CK(cudaFree(g2));
    }
    return 0;
}
