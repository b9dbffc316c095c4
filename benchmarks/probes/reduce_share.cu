// reduce_share.cu -- how the blocks of a device sum share the input, against CUB's DeviceReduce::Sum.
// A probe behind a tuning decision (issue 14: sums >= 1.0x CUB at every size; the package's 4-byte sums sat
// at 0.98-0.995x CUB from 3e7 to 1e9 elements on the H200), not part of the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/reduce_share benchmarks/probes/reduce_share.cu
//   /tmp/reduce_share [reps]
//
// Kernels (256 threads, 16-byte loads, U in flight a thread (4 unless the row says U8 / U16), float64 accumulation, a pairwise tree over
// each load round of float32 as reduce.cu, one float64 atomic a block into a zeroed result):
//   stride  -- the package's way: tiles of 256 x U vectors, block b takes tiles b, b + grid, ... (grid: the
//              co-resident blocks, 8 an SM)
//   even    -- each block one contiguous share of the vectors (CUB's even share), grid = k blocks an SM
// and CUB's DeviceReduce::Sum (float for float32, as CUB adds them).  Each row: us per call, the median
// of `reps` replays of a CUDA graph of 10 calls (memset + kernel; CUB: its two kernels), the rows of one
// size interleaved; ratio = CUB / row (>1: faster than CUB); the sums checked against a float64 host sum.
#include "probe_check.cuh"

#include <cub/cub.cuh>

#include <cmath>
#include <cstdint>

constexpr int THREADS = 256;

template <class T> struct vec;
template <> struct vec<float> {
    static constexpr int V = 4;
    __device__ static double tree(int4 q)
    {
        const float4 f = *reinterpret_cast<float4 *>(&q);
        return ((double)f.x + (double)f.y) + ((double)f.z + (double)f.w);
    }
};
template <> struct vec<double> {
    static constexpr int V = 2;
    __device__ static double tree(int4 q)
    {
        const double2 f = *reinterpret_cast<double2 *>(&q);
        return f.x + f.y;
    }
};

template <int U> __device__ __forceinline__ double add_round(const int4 *__restrict__ v, int64_t j, int64_t step,
                                                             int64_t hi, double (*tree)(int4))
{
    int4 r[U];
#pragma unroll
    for (int u = 0; u < U; u++)
        r[u] = j + u * step < hi ? __ldg(v + j + u * step) : make_int4(0, 0, 0, 0);
    double t[U];
#pragma unroll
    for (int u = 0; u < U; u++)
        t[u] = tree(r[u]);
#pragma unroll
    for (int w = 1; w < U; w *= 2)
#pragma unroll
        for (int u = 0; u + w < U; u += 2 * w)
            t[u] += t[u + w];
    return t[0];
}

__device__ __forceinline__ void finish(double s, double *out)
{
    __shared__ double part[THREADS / 32];
    for (int o = 16; o; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double b = 0;
        for (int w = 0; w < THREADS / 32; w++)
            b += part[w];
        atomicAdd(out, b);
    }
}

template <class T, int U> __global__ void __launch_bounds__(THREADS) stride_kernel(const int4 *v, int64_t nv, double *out)
{
    double s = 0;
    const int64_t tile = (int64_t)THREADS * U;
    for (int64_t lo = (int64_t)blockIdx.x * tile; lo < nv; lo += (int64_t)gridDim.x * tile)
        s += add_round<U>(v, lo + threadIdx.x, THREADS, nv, vec<T>::tree);
    finish(s, out);
}

template <class T, int U> __global__ void __launch_bounds__(THREADS) even_kernel(const int4 *v, int64_t nv, double *out)
{
    const int64_t lo = nv * blockIdx.x / gridDim.x, hi = nv * (blockIdx.x + 1) / gridDim.x;
    double s = 0;
    for (int64_t j = lo + threadIdx.x; j < hi; j += (int64_t)THREADS * U)
        s += add_round<U>(v, j, THREADS, hi, vec<T>::tree);
    finish(s, out);
}

struct row {
    const char *name;
    int kind; /* 0 stride, 1 even, 2 cub */
    int per_sm;
    int u; /* 16-byte loads in flight a thread (stride rows) */
    std::vector<float> t;
    double sum;
};

template <class T> void run_size(int64_t n, int reps, int sms)
{
    const int64_t nv = n / vec<T>::V; /* n a multiple of V */
    T *d;
    double *out;
    T *cub_out;
    CK(cudaMalloc(&d, n * sizeof(T)));
    CK(cudaMalloc(&out, sizeof(double)));
    CK(cudaMalloc(&cub_out, sizeof(T)));
    {
        std::vector<T> h(1 << 20);
        for (size_t i = 0; i < h.size(); i++)
            h[i] = (T)((i * 2654435761u >> 8) % 1000) / (T)1000;
        for (int64_t at = 0; at < n; at += (int64_t)h.size())
            CK(cudaMemcpy(d + at, h.data(), std::min<int64_t>(h.size(), n - at) * sizeof(T), cudaMemcpyHostToDevice));
    }
    double ref = 0;
    {
        std::vector<T> h(1 << 20);
        for (size_t i = 0; i < h.size(); i++)
            h[i] = (T)((i * 2654435761u >> 8) % 1000) / (T)1000;
        for (int64_t i = 0; i < n; i++)
            ref += (double)h[i & ((1 << 20) - 1)];
    }
    void *tmp = nullptr;
    size_t tb = 0;
    cub::DeviceReduce::Sum(nullptr, tb, d, cub_out, (int64_t)n);
    CK(cudaMalloc(&tmp, tb));
    std::vector<row> rows = {{"stride 8/SM", 0, 8, 4, {}, 0},    {"stride U8 8/SM", 0, 8, 8, {}, 0},
                             {"stride U8 4/SM", 0, 4, 8, {}, 0}, {"stride U16 4/SM", 0, 4, 16, {}, 0},
                             {"even 4/SM", 1, 4, 4, {}, 0},      {"cub", 2, 0, 0, {}, 0}};
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    std::vector<cudaGraphExec_t> ex(rows.size());
    for (size_t k = 0; k < rows.size(); k++) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int c = 0; c < 10; c++) {
            if (rows[k].kind == 2)
                cub::DeviceReduce::Sum(tmp, tb, d, cub_out, (int64_t)n, st);
            else {
                CK(cudaMemsetAsync(out, 0, sizeof(double), st));
                const int grid = sms * rows[k].per_sm;
                if (rows[k].kind == 0 && rows[k].u == 16)
                    stride_kernel<T, 16><<<grid, THREADS, 0, st>>>((const int4 *)d, nv, out);
                else if (rows[k].kind == 0 && rows[k].u == 8)
                    stride_kernel<T, 8><<<grid, THREADS, 0, st>>>((const int4 *)d, nv, out);
                else if (rows[k].kind == 0)
                    stride_kernel<T, 4><<<grid, THREADS, 0, st>>>((const int4 *)d, nv, out);
                else
                    even_kernel<T, 4><<<grid, THREADS, 0, st>>>((const int4 *)d, nv, out);
            }
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ex[k], g, 0));
        CK(cudaGraphDestroy(g));
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int r = -1; r < reps; r++)
        for (size_t k = 0; k < rows.size(); k++) {
            CK(cudaEventRecord(a, st));
            CK(cudaGraphLaunch(ex[k], st));
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (r >= 0)
                rows[k].t.push_back(ms * 1000.f / 10);
            if (r == reps - 1) {
                if (rows[k].kind == 2) {
                    T h;
                    CK(cudaMemcpy(&h, cub_out, sizeof(T), cudaMemcpyDeviceToHost));
                    rows[k].sum = h;
                } else
                    CK(cudaMemcpy(&rows[k].sum, out, sizeof(double), cudaMemcpyDeviceToHost));
            }
        }
    double cub_us = 0;
    for (auto &r : rows) {
        std::sort(r.t.begin(), r.t.end());
        if (r.kind == 2)
            cub_us = r.t[r.t.size() / 2];
    }
    for (auto &r : rows) {
        const double us = r.t[r.t.size() / 2];
        printf("%-8s n=%-11lld %-12s %9.2f us  %7.1f GB/s  cub/row %.3f  rel.err %.1e\n",
               sizeof(T) == 4 ? "float32" : "float64", (long long)n, r.name, us, n * sizeof(T) / us / 1e3,
               cub_us / us, std::abs(r.sum - ref) / ref);
    }
    fflush(stdout);
    for (auto e : ex)
        cudaGraphExecDestroy(e);
    cudaFree(tmp);
    cudaFree(d);
    cudaFree(out);
    cudaFree(cub_out);
    cudaStreamDestroy(st);
}

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 9;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    const int64_t sizes[] = {10000000, 31622776, 100000000, 316227764, 1000000000};
    for (int64_t n : sizes) {
        run_size<float>(n & ~(int64_t)3, reps, p.multiProcessorCount);
        if (n <= 316227764)
            run_size<double>(n & ~(int64_t)1, reps, p.multiProcessorCount);
    }
    return 0;
}
