/*
 * internal.cuh -- what the CUDA backend's files share: error handling, the
 * cached device facts, the device guard, and the element loop every
 * histogram kernel uses.  Not installed; user-facing device primitives live
 * in csrc/include/gpusync/*.cuh.
 */
#ifndef GPUSYNC_CUDA_INTERNAL_CUH
#define GPUSYNC_CUDA_INTERNAL_CUH

#include "../common/binning.h"
#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"

#include <cuda_runtime.h>
#include <type_traits>
#include <stdint.h>

/* Turn a CUDA error into a gs_status with the CUDA text and the location. */
gs_status gs_cuda_fail(cudaError_t err, const char *what, const char *file, int line);

#define GS_CUDA_CHECK(call)                                                                                   \
    do {                                                                                                      \
        cudaError_t gs_err_ = (call);                                                                         \
        if (gs_err_ != cudaSuccess)                                                                           \
            return gs_cuda_fail(gs_err_, #call, __FILE__, __LINE__);                                          \
    } while (0)

/* Same, but jump to `fail:` after recording the status in `st` (for calls
 * that own resources to release). */
#define GS_CUDA_GOTO(call)                                                                                    \
    do {                                                                                                      \
        cudaError_t gs_err_ = (call);                                                                         \
        if (gs_err_ != cudaSuccess) {                                                                         \
            st = gs_cuda_fail(gs_err_, #call, __FILE__, __LINE__);                                            \
            goto fail;                                                                                        \
        }                                                                                                     \
    } while (0)

/* Cached per-device facts (filled once per device, thread-safe). */
gs_status gs_cuda_device(int ordinal, const gs_device_info **info);

/* Makes `ordinal` current for the lifetime of a call and restores the
 * caller's device afterwards. */
struct gs_device_guard {
    int prev;
    cudaError_t err;
    explicit gs_device_guard(int ordinal) : prev(-1), err(cudaGetDevice(&prev))
    {
        if (err == cudaSuccess && prev != ordinal)
            err = cudaSetDevice(ordinal);
    }
    ~gs_device_guard()
    {
        int cur;
        if (prev >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev)
            cudaSetDevice(prev);
    }
};

/* Launch shape of one strategy, computed by the dispatcher. */
struct gs_hist_launch {
    gs_binner binner;     /* edges: device pointer when kind == EDGES */
    const void *x;        /* device pointer */
    int64_t n, xstride;   /* elements, stride in elements */
    int xdtype;
    const void *w;        /* device pointer or NULL */
    int64_t wstride;
    int wdtype;
    void *out;            /* int64 counts (unsigned long long atomics) or double sums */
    cudaStream_t stream;
    const gs_device_info *dev;
};

gs_status gs_hist_global_launch(const gs_hist_launch *l);
gs_status gs_hist_shared_launch(const gs_hist_launch *l);
gs_status gs_hist_warp_launch(const gs_hist_launch *l);
gs_status gs_hist_cluster_launch(const gs_hist_launch *l);
/* Largest number of bins the cluster strategy can hold on this device. */
int64_t gs_hist_cluster_max_bins(const gs_device_info *dev, int weighted);

/* Blocks for a grid-stride kernel: at most `resident` (what fits on the GPU
 * at once), no more than the work needs, and enough that no block sees more
 * than GS_HIST_MAX_ELEMS_PER_BLOCK elements (32-bit shared counters). */
int64_t gs_hist_grid(const gs_hist_launch *l, int64_t resident, int threads);

/* ---------------------------------------------------------------------- */
/* Device side                                                             */

/* Storage tag for float16 (bits only; converted exactly to float). */
struct gs_f16 {
    uint16_t bits;
};

/* Bin of one value: 8-bit inputs use the LUT (in shared memory, `lut`) or
 * DIRECT on the raw byte; wider integers DIRECT or the real-valued rules. */
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const int32_t *lut, uint8_t v)
{
    return b.kind == GS_BINS_LUT ? (int64_t)lut[v] : gs_bin_direct(&b, v);
}
#define GS_INT_BIN(T, WIDEN)                                                                                  \
    __device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const int32_t *, T v)                     \
    {                                                                                                         \
        return b.kind == GS_BINS_DIRECT ? gs_bin_direct(&b, (uint64_t)(WIDEN)v) : gs_bin_real(&b, (double)v);  \
    }
GS_INT_BIN(int16_t, int64_t)
GS_INT_BIN(uint16_t, uint64_t)
GS_INT_BIN(int32_t, int64_t)
GS_INT_BIN(uint32_t, uint64_t)
GS_INT_BIN(int64_t, int64_t)
GS_INT_BIN(uint64_t, uint64_t)
#undef GS_INT_BIN
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const int32_t *, gs_f16 v)
{
    return gs_bin_real(&b, (double)gs_half_to_float(v.bits));
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const int32_t *, float v)
{
    return gs_bin_real(&b, (double)v);
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const int32_t *, double v)
{
    return gs_bin_real(&b, v);
}

/* Copy the LUT (8-bit inputs) into shared memory; every kernel calls this
 * first, and it ends with __syncthreads(). */
__device__ __forceinline__ void gs_load_lut(const gs_binner &b, int32_t *lut)
{
    if (b.kind == GS_BINS_LUT)
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            lut[i] = b.lut[i];
    __syncthreads();
}

/*
 * Visit every element this thread owns in a grid-stride pass:
 * f(value, index, valid).  The trip count is the same for all 32 lanes of a
 * warp (invalid lanes get valid == false and a zero value), so f may use
 * warp-wide *_sync intrinsics with the full mask.  Contiguous inputs are read
 * with 16-byte vector loads, GS_HIST_VEC_UNROLL of them in flight per thread;
 * a misaligned head and the tail are read element by element.
 */
template <class T, class F>
__device__ __forceinline__ void gs_for_each(const T *__restrict__ x, int64_t n, int64_t stride, F &&f)
{
    constexpr int V = 16 / sizeof(T);
    constexpr int U = GS_HIST_VEC_UNROLL;
    const int lane = threadIdx.x & 31;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * blockDim.x;
    const int64_t warp0 = tid - lane;
    if (stride != 1) {
        for (int64_t base = warp0; base < n; base += nth) {
            const int64_t i = base + lane;
            const bool ok = i < n;
            f(ok ? x[i * stride] : T(), i, ok);
        }
        return;
    }
    int64_t head = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / sizeof(T));
    if (head > n)
        head = n;
    for (int64_t base = warp0; base < head; base += nth) {
        const int64_t i = base + lane;
        const bool ok = i < head;
        f(ok ? x[i] : T(), i, ok);
    }
    const int4 *xv = reinterpret_cast<const int4 *>(x + head);
    const int64_t nv = (n - head) / V;
    union vec {
        int4 v;
        T e[V];
    };
    for (int64_t base = warp0; base < nv; base += (int64_t)U * nth) {
        vec r[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + lane + (int64_t)u * nth;
            if (j < nv)
                r[u].v = __ldcs(xv + j); /* streamed once: evict-first */
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + lane + (int64_t)u * nth;
            const bool ok = j < nv;
            if (__any_sync(0xffffffffu, ok)) {
#pragma unroll
                for (int e = 0; e < V; e++)
                    f(ok ? r[u].e[e] : T(), head + j * V + e, ok);
            }
        }
    }
    const int64_t done = head + nv * V;
    for (int64_t base = done + warp0; base < n; base += nth) {
        const int64_t i = base + lane;
        const bool ok = i < n;
        f(ok ? x[i] : T(), i, ok);
    }
}

/* A weight as double (float32 or float64 storage). */
__device__ __forceinline__ double gs_dweight(const void *w, int dt, int64_t i)
{
    return dt == GS_FLOAT32 ? (double)__ldg((const float *)w + i) : __ldg((const double *)w + i);
}

/* Instantiate `LAUNCH<T>(l)` for the input dtype of l (8-bit dtypes share
 * uint8_t).  Used by every strategy's launcher. */
#define GS_DISPATCH_DTYPE(dt, LAUNCH, l)                                                                      \
    switch (dt) {                                                                                             \
    case GS_BOOL:                                                                                             \
    case GS_INT8:                                                                                             \
    case GS_UINT8: return LAUNCH<uint8_t>(l);                                                                 \
    case GS_INT16: return LAUNCH<int16_t>(l);                                                                 \
    case GS_UINT16: return LAUNCH<uint16_t>(l);                                                               \
    case GS_INT32: return LAUNCH<int32_t>(l);                                                                 \
    case GS_UINT32: return LAUNCH<uint32_t>(l);                                                               \
    case GS_INT64: return LAUNCH<int64_t>(l);                                                                 \
    case GS_UINT64: return LAUNCH<uint64_t>(l);                                                               \
    case GS_FLOAT16: return LAUNCH<gs_f16>(l);                                                                \
    case GS_FLOAT32: return LAUNCH<float>(l);                                                                 \
    case GS_FLOAT64: return LAUNCH<double>(l);                                                                \
    default: return gs_fail(GS_ERR_TYPE, "unsupported input dtype %d", (int)(dt));                             \
    }

#endif /* GPUSYNC_CUDA_INTERNAL_CUH */
