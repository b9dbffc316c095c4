// u8_pipe.cu -- where the 8-bit 256-bin histogram's time above the read goes
// at 32-256 MiB, and whether loading the next vectors before counting the
// current ones (register double-buffering) hides it.  A probe behind a tuning
// decision (issue 14: 256 bins at >= 95 % of read from 256 MiB, >= 90 % at
// 32 MiB); not part of the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/u8_pipe benchmarks/probes/u8_pipe.cu
//   /tmp/u8_pipe [MiB ...]          (default 32 64 256 1024)
//
// The first kernel is hist_smem.cu's generic byte path (R = 32 replicas laid out [bin][R],
// lane l adds to copy l % 32, block-scoped shared atomics, one global merge a
// block).  Variants:
//   load-then-count   the package's loop: U loads, then the U vectors' atomics
//   pipelined         the next trip's U loads issued before this trip's atomics
//   read only         the same loop with the atomics replaced by an xor (the
//                     loads' own time in this shape)
//   atomics only      no loads: each thread counts bytes made from its index
//                     (the shared atomics' own time: one ATOMS a byte)
// us per call: median of 7 replays of a CUDA graph of `calls` calls, each a
// memset of the 256 counts and the kernel; counts checked against the host's.
// At 32 MiB the read reference itself moves with what the L2 holds between
// replays (5.1-8.9 us in r202-r205): compare the variants of one run there.
#include "probe_check.cuh"
#include "u8_common.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

enum { FULL = 0, READ_ONLY = 1, ATOM_ONLY = 2, EMPTY = 3 };
enum { MERGE_ATOMIC = 0, MERGE_NONE = 1 };

__device__ __forceinline__ void count16(unsigned *mine, const int4 &v)
{
    const unsigned w[4] = {(unsigned)v.x, (unsigned)v.y, (unsigned)v.z, (unsigned)v.w};
#pragma unroll
    for (int q = 0; q < 4; q++)
#pragma unroll
        for (int b = 0; b < 4; b++)
            atomicAdd_block(mine + (((w[q] >> (8 * b)) & 0xffu) << 5), 1u);
}

template <int THREADS, int BPS, int U, bool PIPE, int MODE, int MERGE>
__global__ void __launch_bounds__(THREADS, BPS) hist_u8(const uint8_t *__restrict__ x, int64_t n,
                                                        unsigned long long *out)
{
    __shared__ unsigned h[256 * 32];
    for (int i = threadIdx.x; i < 256 * 32; i += THREADS)
        h[i] = 0;
    __syncthreads();
    unsigned *mine = h + (threadIdx.x & 31);
    const int64_t nv = n / 16;
    const int4 *xv = reinterpret_cast<const int4 *>(x);
    const int64_t tid = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * THREADS;
    unsigned sink = 0;
    auto load = [&](int4 *r, int64_t base) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + (int64_t)u * nth;
            if constexpr (MODE == ATOM_ONLY) {
                const unsigned s = (unsigned)j * 2654435761u;
                r[u] = make_int4((int)s, (int)(s * 747796405u), (int)(s ^ 0x9e3779b9u), (int)(s * 3u));
            } else {
                r[u] = j < nv ? __ldcs(xv + j) : make_int4(0, 0, 0, 0);
            }
        }
    };
    auto count = [&](const int4 *r, int64_t base) {
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + (int64_t)u * nth < nv) {
                if constexpr (MODE == READ_ONLY)
                    sink ^= (unsigned)(r[u].x ^ r[u].y ^ r[u].z ^ r[u].w);
                else
                    count16(mine, r[u]);
            }
    };
    int4 cur[U];
    if constexpr (MODE == EMPTY) {
    } else if constexpr (PIPE) {
        load(cur, tid);
        for (int64_t base = tid; base < nv; base += (int64_t)U * nth) {
            int4 nxt[U];
            load(nxt, base + (int64_t)U * nth);
            count(cur, base);
#pragma unroll
            for (int u = 0; u < U; u++)
                cur[u] = nxt[u];
        }
    } else {
        for (int64_t base = tid; base < nv; base += (int64_t)U * nth) {
            load(cur, base);
            count(cur, base);
        }
    }
    for (int64_t i = nv * 16 + tid; i < n; i += nth)
        atomicAdd_block(mine + ((unsigned)x[i] << 5), 1u);
    __syncthreads();
    if (MODE == READ_ONLY && sink == 0x12345678u)
        h[0] = sink;
    /* 4 threads a bin, as gs_hist_merge_each */
    if (MERGE == MERGE_NONE) {
        if (h[threadIdx.x] == 0xffffffffu) /* never: keeps the counting */
            out[threadIdx.x & 255] = 1;
        return;
    }
    for (int s = threadIdx.x; s < 256 * 4; s += THREADS) {
        const int k = s >> 2, p = s & 3;
        unsigned acc = 0;
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc += h[(k << 5) + ((p * 8 + j + k) & 31)];
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (p == 0 && acc)
            atomicAdd(out + k, (unsigned long long)acc);
    }
}

/* One PRMT a byte: bins of 64 words, [bin][64]; lane l of an even warp adds
 * to word l of the bin, of an odd warp to word 32 + l (64 replicas, a warp's
 * 32 updates in 32 banks).  __byte_perm puts the byte into bits 8-15 and
 * (lane << 2) | (warp & 1) << 7 into bits 0-7: the counter's byte offset in
 * one instruction, the shared atomic's whole address with the table's base. */
template <int THREADS, int BPS, int U, int MODE>
__global__ void __launch_bounds__(THREADS, BPS) hist_u8_prmt(const uint8_t *__restrict__ x, int64_t n,
                                                             unsigned long long *out)
{
    extern __shared__ __align__(16) unsigned hh[];
    for (int i = threadIdx.x; i < 256 * 64; i += THREADS)
        hh[i] = 0;
    __syncthreads();
    const unsigned L = ((threadIdx.x & 31u) << 2) | (((threadIdx.x >> 5) & 1u) << 7);
    char *const base = (char *)hh;
    const int64_t nv = n / 16;
    const int4 *xv = reinterpret_cast<const int4 *>(x);
    const int64_t tid = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * THREADS;
    for (int64_t b0 = tid; b0 < nv; b0 += (int64_t)U * nth) {
        int4 r[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = b0 + (int64_t)u * nth;
            if constexpr (MODE == ATOM_ONLY) {
                const unsigned s = (unsigned)j * 2654435761u;
                r[u] = make_int4((int)s, (int)(s * 747796405u), (int)(s ^ 0x9e3779b9u), (int)(s * 3u));
            } else {
                r[u] = j < nv ? __ldcs(xv + j) : make_int4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            if (b0 + (int64_t)u * nth < nv) {
                const unsigned w[4] = {(unsigned)r[u].x, (unsigned)r[u].y, (unsigned)r[u].z, (unsigned)r[u].w};
#pragma unroll
                for (int q = 0; q < 4; q++)
#pragma unroll
                    for (int b = 0; b < 4; b++)
                        atomicAdd_block((unsigned *)(base + __byte_perm(w[q], L, 0x5504u | (b << 4))), 1u);
            }
    }
    for (int64_t i = nv * 16 + tid; i < n; i += nth)
        atomicAdd_block((unsigned *)(base + (((unsigned)x[i] << 8) | L)), 1u);
    __syncthreads();
    /* 4 threads a bin, 16 of the 64 words each */
    for (int s = threadIdx.x; s < 256 * 4; s += THREADS) {
        const int k = s >> 2, p = s & 3;
        unsigned acc = 0;
#pragma unroll
        for (int j = 0; j < 16; j++)
            acc += hh[(k << 6) + ((p * 16 + j + k) & 63)];
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (p == 0 && acc)
            atomicAdd(out + k, (unsigned long long)acc);
    }
}

struct Variant {
    const char *name;
    void (*launch)(const uint8_t *, int64_t, unsigned long long *, cudaStream_t, int sms);
    int mode;
};

template <int THREADS, int BPS, int U, bool PIPE, int MODE, int MERGE = MERGE_ATOMIC, bool MEMSET = true>
static void launch(const uint8_t *x, int64_t n, unsigned long long *out, cudaStream_t s, int sms)
{
    auto k = hist_u8<THREADS, BPS, U, PIPE, MODE, MERGE>;
    int resident = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, THREADS, 0));
    const int64_t per_block = (int64_t)THREADS * 16 * U;
    int64_t grid = std::min<int64_t>((int64_t)resident * sms, (n + per_block - 1) / per_block);
    grid = std::max<int64_t>(grid, 1);
    if (MEMSET)
        CK(cudaMemsetAsync(out, 0, 256 * sizeof(unsigned long long), s));
    k<<<(unsigned)grid, THREADS, 0, s>>>(x, n, out);
}


template <int THREADS, int BPS, int U, int MODE>
static void launch_prmt(const uint8_t *x, int64_t n, unsigned long long *out, cudaStream_t s, int sms)
{
    auto k = hist_u8_prmt<THREADS, BPS, U, MODE>;
    const size_t smem = 256 * 64 * 4;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int resident = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, THREADS, smem));
    const int64_t per_block = (int64_t)THREADS * 16 * U;
    int64_t grid = std::min<int64_t>((int64_t)resident * sms, (n + per_block - 1) / per_block);
    grid = std::max<int64_t>(grid, 1);
    CK(cudaMemsetAsync(out, 0, 256 * sizeof(unsigned long long), s));
    k<<<(unsigned)grid, THREADS, smem, s>>>(x, n, out);
}

#define V(T, B, U, P, M) {#T "x" #B " U" #U " " #P " " #M, launch<T, B, U, P, M>, M}
#define W(T, B, M, G, Z) {#T "x" #B " U2 " #M " " #G " memset=" #Z, launch<T, B, 2, false, M, G, Z>, M == FULL && G == MERGE_ATOMIC && Z ? FULL : EMPTY}
#define P(T, B, U, M) {"prmt " #T "x" #B " U" #U " " #M, launch_prmt<T, B, U, M>, M}
static const Variant variants[] = {
    V(1024, 2, 2, false, FULL), // hist_smem.cu's generic kernel (the 8-bit shape before its byte kernel)
    P(1024, 2, 2, FULL), P(1024, 2, 4, FULL), P(1024, 1, 4, FULL), P(512, 3, 4, FULL), P(1024, 2, 2, ATOM_ONLY),
    V(1024, 2, 2, true, FULL),  V(1024, 2, 1, true, FULL),
    V(1024, 2, 2, false, READ_ONLY),
    V(1024, 2, 2, false, ATOM_ONLY),
    W(1024, 2, FULL, MERGE_ATOMIC, false), W(1024, 2, FULL, MERGE_NONE, false),
    W(1024, 2, ATOM_ONLY, MERGE_ATOMIC, false), W(1024, 2, ATOM_ONLY, MERGE_NONE, false),
    W(1024, 2, EMPTY, MERGE_ATOMIC, true), W(1024, 2, EMPTY, MERGE_ATOMIC, false), W(1024, 2, EMPTY, MERGE_NONE, false),
    W(1024, 1, FULL, MERGE_ATOMIC, true), W(512, 2, FULL, MERGE_ATOMIC, true),
};



int main(int argc, char **argv)
{
    std::vector<int64_t> mib;
    for (int i = 1; i < argc; i++)
        mib.push_back(atoll(argv[i]));
    if (mib.empty())
        mib = {32, 64, 256, 1024};
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    int clk = 0;
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    printf("%s, %d SMs, %d MHz\n", p.name, p.multiProcessorCount, clk / 1000);
    const int64_t maxn = *std::max_element(mib.begin(), mib.end()) << 20;
    uint8_t *x;
    unsigned long long *out;
    unsigned *sink;
    CK(cudaMalloc(&x, maxn + 16));
    CK(cudaMalloc(&out, 256 * sizeof(unsigned long long)));
    CK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int nvar = (int)(sizeof variants / sizeof variants[0]);
    for (const char *dist : {"uniform", "one"}) {
        std::vector<uint8_t> h(maxn);
        fill(h, dist);
        CK(cudaMemcpy(x, h.data(), maxn, cudaMemcpyHostToDevice));
        for (int64_t m : mib) {
            const int64_t n = (m << 20) - 5; // not a multiple of 16: the tail runs too
            std::vector<unsigned long long> ref(256, 0), got(256);
            for (int64_t i = 0; i < n; i++)
                ref[h[i]]++;
            const int calls = m >= 1024 ? 5 : m >= 256 ? 10 : 20;
            const float read = graph_us(s, calls, [&](cudaStream_t t) {
                read_all<<<2 * p.multiProcessorCount, 1024, 0, t>>>((const int4 *)x, n / 16, sink);
            });
            const double atoms = n / (16.0 * p.multiProcessorCount * clk * 1e3) * 1e6;
            printf("%-8s %5lld MiB  read %8.1f us (%6.0f GB/s); one ATOMS a byte at 16 lanes a clock: %.1f us\n", dist,
                   (long long)m, read, n / read / 1e3, atoms);
            for (int v = 0; v < nvar; v++) {
                const float us = graph_us(s, calls, [&](cudaStream_t t) { variants[v].launch(x, n, out, t, p.multiProcessorCount); });
                CK(cudaMemcpy(got.data(), out, sizeof(unsigned long long) * 256, cudaMemcpyDeviceToHost));
                const bool ok = variants[v].mode != FULL || got == ref;
                printf("  %-32s %8.1f us  %5.1f%% of read%s\n", variants[v].name, us, 100.0 * read / us,
                       ok ? "" : "  WRONG COUNTS");
            }
            fflush(stdout);
        }
    }
    return 0;
}
