/*
 * elements.cuh -- the grid-stride element loop with vector loads (gs_for_each)
 * and the dtype switch that instantiates a launcher per input type.
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_ELEMENTS_CUH
#define GPUSYNC_CUDA_ELEMENTS_CUH

#include "dtypes.cuh"
#include "runtime.cuh"

/*
 * Visit every element this thread owns in a grid-stride pass.  The trip
 * count is the same for all 32 lanes of a warp (invalid lanes get
 * ok == false and a zero value), so callbacks may use warp-wide *_sync
 * intrinsics with the full mask.  Contiguous inputs are read with 16-byte
 * vector loads, GS_HIST_VEC_UNROLL of them in flight per thread: fvec(vec,
 * first_index, ok) gets each whole vector; fone(value, index, ok) gets the
 * elements of a misaligned head, the tail, and strided inputs.
 */
template <class T> union gs_vec {
    int4 v;
    T e[16 / sizeof(T)];
};


template <class T, class F1, class FV>
__device__ __forceinline__ void gs_for_each_vec(const T *__restrict__ x, int64_t n, int64_t stride, F1 &&fone,
                                                FV &&fvec)
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
            fone(ok ? x[i * stride] : T(), i, ok);
        }
        return;
    }
    int64_t head = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / sizeof(T));
    if (head > n)
        head = n;
    for (int64_t base = warp0; base < head; base += nth) {
        const int64_t i = base + lane;
        const bool ok = i < head;
        fone(ok ? x[i] : T(), i, ok);
    }
    const int4 *xv = reinterpret_cast<const int4 *>(x + head);
    const int64_t nv = (n - head) / V;
    for (int64_t base = warp0; base < nv; base += (int64_t)U * nth) {
        gs_vec<T> r[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + lane + (int64_t)u * nth;
            r[u].v = j < nv ? __ldcs(xv + j) : make_int4(0, 0, 0, 0); /* streamed once: evict-first */
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + lane + (int64_t)u * nth;
            const bool ok = j < nv;
            if (__any_sync(0xffffffffu, ok))
                fvec(r[u], head + j * V, ok);
        }
    }
    const int64_t done = head + nv * V;
    for (int64_t base = done + warp0; base < n; base += nth) {
        const int64_t i = base + lane;
        const bool ok = i < n;
        fone(ok ? x[i] : T(), i, ok);
    }
}

/* The same, element by element: f(value, index, ok). */
template <class T, class F>
__device__ __forceinline__ void gs_for_each(const T *__restrict__ x, int64_t n, int64_t stride, F &&f)
{
    gs_for_each_vec(x, n, stride, f, [&](const gs_vec<T> &r, int64_t i0, bool ok) {
#pragma unroll
        for (int e = 0; e < 16 / (int)sizeof(T); e++)
            f(r.e[e], i0 + e, ok);
    });
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

#endif /* GPUSYNC_CUDA_ELEMENTS_CUH */
