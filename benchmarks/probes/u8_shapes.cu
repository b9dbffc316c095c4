// u8_shapes.cu -- the 8-bit 256-bin shared-memory histogram (hist_smem.cu's
// byte path: R replicas laid out [bin][R], lane l adds to copy l % R, block-
// scoped shared atomics, one global merge per block) in several launch shapes,
// against a plain read of the same bytes, on one GPU.  A probe behind a tuning
// decision (issue 14: 256 bins at >= 95 % of read from 256 MiB, >= 90 % at
// 32 MiB); not part of the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8_shapes benchmarks/probes/u8_shapes.cu
//   /tmp/u8_shapes [MiB ...]          (default 32 256 1024)
//
// Per size and distribution: us per call (median of 7 replays of a CUDA graph
// of 20 calls, each call a memset of the 256 counts and the kernel) and the
// % of the read kernel's time in the same run; every variant's counts are
// checked against the first variant's.
#include "probe_check.cuh"
#include "u8_common.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>


enum { LD_CS = 0, LD_NC = 1 };

template <int LD> __device__ __forceinline__ int4 load16(const int4 *p)
{
    if constexpr (LD == LD_CS)
        return __ldcs(p);
    else
        return __ldg(p);
}

template <int THREADS, int BPS, int U, int R, int LD>
__global__ void __launch_bounds__(THREADS, BPS) hist_u8(const uint8_t *__restrict__ x, int64_t n,
                                                        unsigned long long *out)
{
    __shared__ unsigned h[256 * R];
    for (int i = threadIdx.x; i < 256 * R; i += THREADS)
        h[i] = 0;
    __syncthreads();
    unsigned *mine = h + (threadIdx.x & (R - 1));
    constexpr int SH = R == 32 ? 5 : R == 16 ? 4 : R == 8 ? 3 : R == 4 ? 2 : R == 2 ? 1 : 0;
    const int64_t nv = n / 16;
    const int4 *xv = reinterpret_cast<const int4 *>(x);
    const int64_t tid = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * THREADS;
    for (int64_t base = tid; base < nv; base += (int64_t)U * nth) {
        int4 r[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + (int64_t)u * nth;
            r[u] = j < nv ? load16<LD>(xv + j) : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (base + (int64_t)u * nth < nv) {
                const unsigned w0 = (unsigned)r[u].x, w1 = (unsigned)r[u].y, w2 = (unsigned)r[u].z,
                               w3 = (unsigned)r[u].w;
#pragma unroll
                for (int b = 0; b < 4; b++)
                    atomicAdd_block(mine + (((w0 >> (8 * b)) & 0xffu) << SH), 1u);
#pragma unroll
                for (int b = 0; b < 4; b++)
                    atomicAdd_block(mine + (((w1 >> (8 * b)) & 0xffu) << SH), 1u);
#pragma unroll
                for (int b = 0; b < 4; b++)
                    atomicAdd_block(mine + (((w2 >> (8 * b)) & 0xffu) << SH), 1u);
#pragma unroll
                for (int b = 0; b < 4; b++)
                    atomicAdd_block(mine + (((w3 >> (8 * b)) & 0xffu) << SH), 1u);
            }
        }
    }
    for (int64_t i = nv * 16 + tid; i < n; i += nth)
        atomicAdd_block(mine + ((unsigned)x[i] << SH), 1u);
    __syncthreads();
    for (int k = threadIdx.x; k < 256; k += THREADS) {
        unsigned acc = 0;
#pragma unroll 1
        for (int r = 0; r < R; r++)
            acc += h[(k << SH) + ((r + k) & (R - 1))];
        if (acc)
            atomicAdd(out + k, (unsigned long long)acc);
    }
}


struct Variant {
    const char *name;
    void (*launch)(const uint8_t *, int64_t, unsigned long long *, cudaStream_t, int sms);
};

template <int THREADS, int BPS, int U, int R, int LD>
static void launch(const uint8_t *x, int64_t n, unsigned long long *out, cudaStream_t s, int sms)
{
    auto k = hist_u8<THREADS, BPS, U, R, LD>;
    int resident = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, THREADS, 0));
    const int64_t per_block = (int64_t)THREADS * 16 * U;
    int64_t grid = std::min<int64_t>((int64_t)resident * sms, (n + per_block - 1) / per_block);
    grid = std::max<int64_t>(grid, 1);
    CK(cudaMemsetAsync(out, 0, 256 * sizeof(unsigned long long), s));
    k<<<(unsigned)grid, THREADS, 0, s>>>(x, n, out);
}

#define V(T, B, U, R, LD) {#T "x" #B " U" #U " R" #R #LD, launch<T, B, U, R, LD>}
static const Variant variants[] = {
    V(1024, 2, 2, 32, LD_CS), // hist_smem.cu today
    V(512, 4, 2, 32, LD_CS),  V(1024, 2, 2, 32, LD_NC), V(1024, 1, 4, 32, LD_CS), V(512, 3, 4, 32, LD_CS),
    V(256, 6, 4, 32, LD_CS),  V(512, 2, 8, 32, LD_CS),  V(1024, 2, 2, 16, LD_CS), V(768, 2, 3, 32, LD_CS),
};

struct Ctx {
    const Variant *v;
    const uint8_t *x;
    int64_t n;
    unsigned long long *out;
    unsigned *sink;
    int sms;
};

static void run_variant(cudaStream_t s, void *p)
{
    Ctx *c = (Ctx *)p;
    c->v->launch(c->x, c->n, c->out, s, c->sms);
}

static void run_read(cudaStream_t s, void *p)
{
    Ctx *c = (Ctx *)p;
    read_all<<<2 * c->sms, 1024, 0, s>>>((const int4 *)c->x, c->n / 16, c->sink);
}


int main(int argc, char **argv)
{
    std::vector<int64_t> mib;
    for (int i = 1; i < argc; i++)
        mib.push_back(atoll(argv[i]));
    if (mib.empty())
        mib = {32, 256, 1024};
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs, %d KiB shared per SM\n", p.name, p.multiProcessorCount,
           (int)(p.sharedMemPerMultiprocessor >> 10));
    const int64_t maxn = *std::max_element(mib.begin(), mib.end()) << 20;
    uint8_t *x;
    unsigned long long *out;
    unsigned *sink;
    CK(cudaMalloc(&x, maxn + 16));
    CK(cudaMalloc(&out, 256 * sizeof(unsigned long long)));
    CK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int nv = (int)(sizeof variants / sizeof variants[0]);
    for (const char *dist : {"uniform", "text", "one", "runs"}) {
        std::vector<uint8_t> h(maxn);
        fill(h, dist);
        CK(cudaMemcpy(x, h.data(), maxn, cudaMemcpyHostToDevice));
        for (int64_t m : mib) {
            const int64_t n = (m << 20) - 5; // not a multiple of 16: the tail runs too
            Ctx c{nullptr, x, n, out, sink, p.multiProcessorCount};
            const int calls = m >= 1024 ? 5 : m >= 256 ? 10 : 20;
            const float read = graph_us(s, calls, [&](cudaStream_t t) { run_read(t, &c); });
            printf("%-8s %5lld MiB  read %8.1f us (%6.0f GB/s)\n", dist, (long long)m, read, n / read / 1e3);
            std::vector<unsigned long long> ref(256), got(256);
            for (int v = 0; v < nv; v++) {
                c.v = &variants[v];
                const float us = graph_us(s, calls, [&](cudaStream_t t) { run_variant(t, &c); });
                CK(cudaMemcpy(got.data(), out, sizeof(unsigned long long) * 256, cudaMemcpyDeviceToHost));
                unsigned long long tot = 0;
                for (auto g : got)
                    tot += g;
                if (v == 0)
                    ref = got;
                const bool ok = got == ref && tot == (unsigned long long)n;
                printf("  %-22s %8.1f us  %5.1f%% of read%s\n", variants[v].name, us, 100.0 * read / us,
                       ok ? "" : "  WRONG COUNTS");
            }
            fflush(stdout);
        }
    }
    return 0;
}
