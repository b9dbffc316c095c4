// red_width.cu -- global-atomic histograms of many bins (the `global` strategy
// of hist_global.cu: one atomic add an element into counts in L2) with 64-bit
// counters (the int64 result itself) against 32-bit counters (a scratch of
// nbins words, then one widening pass into the int64 result).  A probe behind
// a tuning decision (issue 14: 65,536 to 16M bins at >= 2x torch.bincount);
// not part of the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/red_width benchmarks/probes/red_width.cu
//   /tmp/red_width [Mvalues]           (default 64)
//
// Per bin count and distribution: us per call (median of 9 replays of a CUDA
// graph of 5 calls: memset, count, and for 32-bit the widening pass), the
// counts of both checked equal.
#include "probe_check.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>


template <class C>
__global__ void __launch_bounds__(256) count_kernel(const longlong2 *__restrict__ x, int64_t npairs, int64_t lo,
                                                    int64_t nb, C *out)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < npairs; i += 2 * stride) {
        longlong2 v0 = __ldcs(x + i), v1 = make_longlong2(-1, -1);
        if (i + stride < npairs)
            v1 = __ldcs(x + i + stride);
        const long long vs[4] = {v0.x, v0.y, v1.x, v1.y};
#pragma unroll
        for (int k = 0; k < 4; k++)
            if ((unsigned long long)(vs[k] - lo) < (unsigned long long)nb)
                atomicAdd(out + vs[k], (C)1);
    }
}

__global__ void widen_kernel(const unsigned *__restrict__ c, int64_t nb, unsigned long long *out)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = c[i];
}

int main(int argc, char **argv)
{
    const int64_t n = (argc > 1 ? atoll(argv[1]) : 64) << 20;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs, L2 %d MiB; %lld values (int64)\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20,
           (long long)n);
    long long *x;
    unsigned long long *o64, *w64;
    unsigned *o32;
    const int64_t maxnb = 64 << 20;
    CK(cudaMalloc(&x, n * 8));
    CK(cudaMalloc(&o64, maxnb * 8));
    CK(cudaMalloc(&w64, maxnb * 8));
    CK(cudaMalloc(&o32, maxnb * 4));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int bpsm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bpsm, count_kernel<unsigned>, 256, 0));
    const int grid = bpsm * p.multiProcessorCount;
    std::vector<long long> h(n);
    for (int64_t nb : {1LL << 20, 4LL << 20, 16LL << 20, 64LL << 20}) {
        for (int dist = 0; dist < 2; dist++) {
            uint64_t r = 0x9E3779B97F4A7C15ull;
            for (int64_t i = 0; i < n; i++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                // 0: uniform; 1: runs of 64 equal values at hashed bins (a clustered input, not sorted)
                h[i] = dist == 0 ? (long long)(r % nb) : (long long)(((i / 64) * 2654435761ull) % nb);
            }
            CK(cudaMemcpy(x, h.data(), n * 8, cudaMemcpyHostToDevice));
            float best[5] = {0, 0, 0, 0, 0};
            for (int v = 0; v < 5; v++) {
                best[v] = graph_us(s, 5, [&](cudaStream_t s) {
                    if (v == 0) {
                        CK(cudaMemsetAsync(o64, 0, nb * 8, s));
                        count_kernel<unsigned long long><<<grid, 256, 0, s>>>((const longlong2 *)x, n / 2, 0, nb, o64);
                    } else {
                        CK(cudaMemsetAsync(o32, 0, nb * 4, s));
                        for (int q = 0; q < v; q++) { /* pass q: the bins [q nb / v, (q + 1) nb / v) */
                            const int64_t lo = q * nb / v, hi = (q + 1) * nb / v;
                            count_kernel<unsigned><<<grid, 256, 0, s>>>((const longlong2 *)x, n / 2, lo, hi - lo, o32);
                        }
                        widen_kernel<<<p.multiProcessorCount * 8, 256, 0, s>>>(o32, nb, w64);
                    }
                });
            }
            std::vector<unsigned long long> a64(nb), b64(nb);
            CK(cudaMemcpy(a64.data(), o64, nb * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(b64.data(), w64, nb * 8, cudaMemcpyDeviceToHost));
            const bool same = a64 == b64;
            printf("bins %9lld %-8s 64-bit %8.1f us   32-bit + widen, 1/2/3/4 passes %8.1f %8.1f %8.1f %8.1f us   %s\n",
                   (long long)nb, dist ? "runs64" : "uniform", best[0], best[1], best[2], best[3], best[4],
                   same ? "same" : "DIFFER");
        }
    }
    return 0;
}
