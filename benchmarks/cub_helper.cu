// CUB peer for benchmarks/histogram.py: cub::DeviceHistogram::HistogramEven
// on device pointers handed over from Python (ctypes), timed with CUDA events
// (median of `reps` runs after a warm-up).  Built by the benchmark with nvcc:
//   nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -shared cub_helper.cu -o libcubhelper.so
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
extern "C" double cub_hist_i32(const int *d, long long n, int bins, int lo, int hi, long long *out, int reps)
{
    return time_hist(d, n, bins, lo, hi, out, reps);
}
