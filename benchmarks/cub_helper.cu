// CUB / cuBLAS peers for the benchmarks: cub::DeviceHistogram::HistogramEven,
// DeviceReduce::Sum, DeviceScan::InclusiveSum and cublas{S,D}dot,
// on device pointers handed over from Python (ctypes), timed with CUDA events
// (median of `reps` runs after a warm-up).  Built by the benchmark with nvcc:
//   nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -shared cub_helper.cu -o libcubhelper.so -lcublas
#include <cub/cub.cuh>
#include <algorithm>
#include <vector>

template <class T, class L>
static double time_hist(const T *d, long long n, int bins, L lo, L hi, long long *host_out, int reps)
{
    int *hist = nullptr;
    void *tmp = nullptr;
    size_t tb = 0;
    if (cudaMalloc(&hist, sizeof(int) * bins) != cudaSuccess) return -1;
    cub::DeviceHistogram::HistogramEven(nullptr, tb, d, hist, bins + 1, lo, hi, (int)n);
    if (cudaMalloc(&tmp, tb) != cudaSuccess) return -1;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int r = -1; r < reps; r++) {
        cudaEventRecord(a);
        cub::DeviceHistogram::HistogramEven(tmp, tb, d, hist, bins + 1, lo, hi, (int)n);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r >= 0) t.push_back(ms);
    }
    std::vector<int> h(bins);
    cudaMemcpy(h.data(), hist, sizeof(int) * bins, cudaMemcpyDeviceToHost);
    for (int i = 0; i < bins; i++) host_out[i] = h[i];
    cudaFree(tmp);
    cudaFree(hist);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (cudaGetLastError() != cudaSuccess) return -1;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

extern "C" double cub_hist_u8(const unsigned char *d, long long n, int bins, int lo, int hi, long long *out, int reps)
{
    return time_hist(d, n, bins, lo, hi, out, reps);
}
extern "C" double cub_hist_f32(const float *d, long long n, int bins, float lo, float hi, long long *out, int reps)
{
    return time_hist(d, n, bins, lo, hi, out, reps);
}
extern "C" double cub_hist_f64(const double *d, long long n, int bins, double lo, double hi, long long *out, int reps)
{
    return time_hist(d, n, bins, lo, hi, out, reps);
}
extern "C" double cub_hist_i32(const int *d, long long n, int bins, int lo, int hi, long long *out, int reps)
{
    return time_hist(d, n, bins, lo, hi, out, reps);
}

// ---- reductions and scans: (a, b or NULL, n, host result, reps) -> median ms ----
#include <cublas_v2.h>

/* 0: events around one call on the default stream; N > 0: N calls captured
 * in one CUDA graph on a stream of its own, replayed, ms per call (device
 * time without the host's launch gaps: what the sweeps compare). */
static int g_graph_inner = 0;
extern "C" void set_graph_inner(int inner) { g_graph_inner = inner; }

template <class F> static double time_reps(F &&f, int reps)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    const int inner = g_graph_inner;
    cudaStream_t st = 0;
    cudaGraphExec_t exec = nullptr;
    if (inner > 0) {
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
        f(st); /* warm-up outside the capture (first-call set-up) */
        cudaStreamSynchronize(st);
        cudaGraph_t g;
        cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
        for (int i = 0; i < inner; i++)
            f(st);
        if (cudaStreamEndCapture(st, &g) != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess)
            return -1;
        cudaGraphDestroy(g);
    }
    for (int r = -1; r < reps; r++) {
        cudaEventRecord(a, st);
        if (exec)
            cudaGraphLaunch(exec, st);
        else
            f(st);
        cudaEventRecord(b, st);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r >= 0) t.push_back(inner > 0 ? ms / inner : ms);
    }
    if (exec) {
        cudaGraphExecDestroy(exec);
        cudaStreamDestroy(st);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (cudaGetLastError() != cudaSuccess) return -1;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <class T, class R> static double cub_sum(const T *d, long long n, R *host, int reps)
{
    R *out = nullptr;
    void *tmp = nullptr;
    size_t tb = 0;
    cub::DeviceReduce::Sum(nullptr, tb, d, out, n);
    if (cudaMalloc(&out, sizeof(R)) != cudaSuccess || cudaMalloc(&tmp, tb) != cudaSuccess) return -1;
    double ms = time_reps([&](cudaStream_t st) { cub::DeviceReduce::Sum(tmp, tb, d, out, n, st); }, reps);
    cudaMemcpy(host, out, sizeof(R), cudaMemcpyDeviceToHost);
    cudaFree(tmp);
    cudaFree(out);
    return ms;
}

extern "C" double cub_sum_f32(const float *a, const void *, long long n, float *host, int reps)
{
    return cub_sum(a, n, host, reps);
}
extern "C" double cub_sum_i32(const int *a, const void *, long long n, int *host, int reps)
{
    return cub_sum(a, n, host, reps);
}
extern "C" double cub_sum_f64(const double *a, const void *, long long n, double *host, int reps)
{
    return cub_sum(a, n, host, reps);
}
extern "C" double cub_sum_i64(const long long *a, const void *, long long n, long long *host, int reps)
{
    return cub_sum(a, n, host, reps);
}

template <class T, class O = T> static double cub_scan(const T *d, long long n, O *host_last, int reps)
{
    O *out = nullptr;
    void *tmp = nullptr;
    size_t tb = 0;
    cub::DeviceScan::InclusiveSum(nullptr, tb, d, out, n);
    if (cudaMalloc(&out, sizeof(O) * n) != cudaSuccess || cudaMalloc(&tmp, tb) != cudaSuccess) return -1;
    double ms = time_reps([&](cudaStream_t st) { cub::DeviceScan::InclusiveSum(tmp, tb, d, out, n, st); }, reps);
    cudaMemcpy(host_last, out + n - 1, sizeof(O), cudaMemcpyDeviceToHost);
    cudaFree(tmp);
    cudaFree(out);
    return ms;
}
extern "C" double cub_scan_f32(const float *a, const void *, long long n, float *host, int reps)
{
    return cub_scan(a, n, host, reps);
}
extern "C" double cub_scan_i32(const int *a, const void *, long long n, int *host, int reps)
{
    return cub_scan(a, n, host, reps);
}
/* int32 in, int64 out: NumPy's cumsum dtype */
extern "C" double cub_scan_i32_i64(const int *a, const void *, long long n, long long *host, int reps)
{
    return cub_scan(a, n, host, reps);
}

template <class T, class Dot> static double cublas_dot(Dot dot, const T *a, const T *b, long long n, T *host, int reps)
{
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
    T *out;
    cudaMalloc(&out, sizeof(T));
    cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
    double ms = time_reps([&](cudaStream_t st) { cublasSetStream(h, st); dot(h, n, a, 1, b, 1, out); }, reps);
    cudaMemcpy(host, out, sizeof(T), cudaMemcpyDeviceToHost);
    cudaFree(out);
    cublasDestroy(h);
    return ms;
}
extern "C" double cublas_sdot(const float *a, const float *b, long long n, float *host, int reps)
{
    return cublas_dot(cublasSdot_64, a, b, n, host, reps);
}
extern "C" double cublas_ddot(const double *a, const double *b, long long n, double *host, int reps)
{
    return cublas_dot(cublasDdot_64, a, b, n, host, reps);
}
