/*
 * elements.cuh -- the grid-stride element loop with vector loads (gs_for_each)
 * and the dtype switch that instantiates a launcher per input type.
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_ELEMENTS_CUH
#define GPUSYNC_CUDA_ELEMENTS_CUH

#include "dtypes.cuh"
#include "runtime.cuh"

#include <type_traits>

/* 16 bytes global -> shared without a register (cp.async, sm_80+; older
 * parts copy through a register: launches that rely on the asynchrony check
 * the device), grouped by commit, awaited until at most N groups are left
 * in flight.  Both addresses 16-byte aligned; a thread waits only for its
 * own copies (others' need a barrier after the wait). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
__device__ __forceinline__ void gs_cp_async16(void *dst, const void *src) { *(uint4 *)dst = __ldg((const uint4 *)src); }
__device__ __forceinline__ void gs_cp_async_commit() {}
template <int N> __device__ __forceinline__ void gs_cp_async_wait() {}
#else
__device__ __forceinline__ void gs_cp_async16(void *dst, const void *src)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(src) : "memory");
}
__device__ __forceinline__ void gs_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void gs_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

/*
 * Visit every element this thread owns in a grid-stride pass.  The trip
 * count is the same for all 32 lanes of a warp (invalid lanes get
 * ok == false and a zero value), so callbacks may use warp-wide *_sync
 * intrinsics with the full mask.  Contiguous inputs are read with 16-byte
 * vector loads, U of them in flight per thread: fvec(vec, first_index, ok)
 * gets each whole vector; fone(value, index, ok) gets the elements of a
 * misaligned head, the tail, and strided inputs.
 *
 * stream: evict-first loads (the input is read once and is larger than the
 * L2), else plain ones (an input that fits the L2 may stay there for the
 * next call).
 *
 * WARP = false: fvec is called for valid vectors only (ok == true), with no
 * warp vote per vector -- for callbacks without warp-wide intrinsics.  The
 * vote and the reconvergence around it cost the 8-bit histogram 7-9 % of
 * its time on the H200 (r63: 273.9 us for 1 GiB against 254.7 us for the
 * same loop without it).
 */
template <class T> union gs_vec {
    int4 v;
    T e[16 / sizeof(T)];
};


template <int U = GS_HIST_VEC_UNROLL, bool WARP = true, class T, class F1, class FV>
__device__ __forceinline__ void gs_for_each_vec(const T *__restrict__ x, int64_t n, int64_t stride, F1 &&fone,
                                                FV &&fvec, bool stream = true)
{
    constexpr int V = 16 / sizeof(T);
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
            r[u].v = j < nv ? (stream ? __ldcs(xv + j) : __ldg(xv + j)) : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + lane + (int64_t)u * nth;
            const bool ok = j < nv;
            if constexpr (WARP) {
                if (__any_sync(0xffffffffu, ok))
                    fvec(r[u], head + j * V, ok);
            } else if (ok) {
                fvec(r[u], head + j * V, true);
            }
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
template <bool WARP = true, class T, class F>
__device__ __forceinline__ void gs_for_each(const T *__restrict__ x, int64_t n, int64_t stride, F &&f)
{
    gs_for_each_vec<GS_HIST_VEC_UNROLL, WARP>(x, n, stride, f, [&](const gs_vec<T> &r, int64_t i0, bool ok) {
#pragma unroll
        for (int e = 0; e < 16 / (int)sizeof(T); e++)
            f(r.e[e], i0 + e, ok);
    });
}

/* The dtype switch, the one copy: f(gs_type<T>()) with T the device storage
 * type of dt (gs_bool8 for bool, gs_f16 for float16); the caller's lambda
 * maps the types it reads alike (gs_byte_as_u8, gs_bool_as_u8):
 *     return gs_dtype_switch(dt, [&](auto t) { return launch<GS_TYPE(t)>(r); });  */
template <class T> struct gs_type {
    typedef T type;
};
#define GS_TYPE(t) typename decltype(t)::type
/* bool and the 8-bit integers read as their raw byte */
template <class T> using gs_byte_as_u8 = typename std::conditional<sizeof(T) == 1, uint8_t, T>::type;
/* bool read as its byte */
template <class T>
using gs_bool_as_u8 = typename std::conditional<std::is_same<T, gs_bool8>::value, uint8_t, T>::type;

template <class F> inline gs_status gs_dtype_switch(gs_dtype dt, F &&f)
{
    switch (dt) {
    case GS_BOOL: return f(gs_type<gs_bool8>());
    case GS_INT8: return f(gs_type<int8_t>());
    case GS_UINT8: return f(gs_type<uint8_t>());
    case GS_INT16: return f(gs_type<int16_t>());
    case GS_UINT16: return f(gs_type<uint16_t>());
    case GS_INT32: return f(gs_type<int32_t>());
    case GS_UINT32: return f(gs_type<uint32_t>());
    case GS_INT64: return f(gs_type<int64_t>());
    case GS_UINT64: return f(gs_type<uint64_t>());
    case GS_FLOAT16: return f(gs_type<gs_f16>());
    case GS_FLOAT32: return f(gs_type<float>());
    case GS_FLOAT64: return f(gs_type<double>());
    default: return gs_fail(GS_ERR_TYPE, "unsupported input dtype %d", (int)dt);
    }
}

/* `return LAUNCH<T>(l);` for the input dtype of l, 8-bit dtypes as uint8_t
 * (every histogram strategy's launcher). */
#define GS_DISPATCH_DTYPE(dt, LAUNCH, l)                                                                      \
    return gs_dtype_switch((gs_dtype)(dt), [&](auto t_) { return LAUNCH<gs_byte_as_u8<GS_TYPE(t_)>>(l); });

#endif /* GPUSYNC_CUDA_ELEMENTS_CUH */
