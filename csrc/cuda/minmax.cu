/*
 * Min/max of a device array (needed when `range` or bincount's length must be
 * read from the data: a documented host synchronization).
 *
 * Min/max runs in two launches: every block reduces its share and writes one
 * partial pair; a single block reduces the partials.  The order is fixed,
 * the result exact.  NaN propagates (NumPy's min/max).
 */
#include "../common/binning.h"
#include "elements.cuh"
#include "runtime.cuh"

#define MM_THREADS 512
#define MM_MAX_BLOCKS 1024
#define MM_UNROLL 4

template <class T> struct mm_traits {
    using key = T;
    __device__ static key load(const T *p, int64_t i) { return p[i]; }
    __device__ static bool less(key a, key b) { return a < b; }
};
template <> struct mm_traits<gs_f16> {
    using key = float;
    __device__ static key load(const gs_f16 *p, int64_t i) { return gs_half_to_float(p[i].bits); }
    __device__ static bool less(key a, key b) { return a < b || (a != a && b == b); }
};
template <> struct mm_traits<float> {
    using key = float;
    __device__ static key load(const float *p, int64_t i) { return p[i]; }
    __device__ static bool less(key a, key b) { return a < b || (a != a && b == b); }
};
template <> struct mm_traits<double> {
    using key = double;
    __device__ static key load(const double *p, int64_t i) { return p[i]; }
    __device__ static bool less(key a, key b) { return a < b || (a != a && b == b); }
};

/* Warp reduction of (lo, hi) pairs; the result is valid in lane 0. */
template <class K, class Tr> __device__ __forceinline__ void warp_minmax(K &lo, K &hi)
{
    for (int o = 16; o > 0; o >>= 1) {
        K a = __shfl_down_sync(0xffffffffu, lo, o), b = __shfl_down_sync(0xffffffffu, hi, o);
        if (Tr::less(a, lo))
            lo = a;
        if (Tr::less(hi, b))
            hi = b;
    }
}

/* Block reduction of (lo, hi) pairs; the result is valid in thread 0. */
template <class K, class Tr> __device__ void block_minmax(K &lo, K &hi)
{
    __shared__ K slo[MM_THREADS / 32], shi[MM_THREADS / 32];
    warp_minmax<K, Tr>(lo, hi);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        slo[warp] = lo;
        shi[warp] = hi;
    }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x >> 5;
        lo = slo[lane < nw ? lane : 0];
        hi = shi[lane < nw ? lane : 0];
        warp_minmax<K, Tr>(lo, hi);
    }
}

template <class T>
__global__ void __launch_bounds__(MM_THREADS) minmax_partial(const T *x, int64_t n, int64_t s, typename mm_traits<T>::key *part)
{
    using Tr = mm_traits<T>;
    using K = typename Tr::key;
    K lo = Tr::load(x, 0), hi = lo;
    auto see = [&](K v) {
        if (Tr::less(v, lo))
            lo = v;
        if (Tr::less(hi, v))
            hi = v;
    };
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nth = (int64_t)gridDim.x * blockDim.x;
    int64_t done = 0;
    if (s == 1) { /* contiguous: 16-byte loads, MM_UNROLL in flight per thread (issue 14: bincount's max) */
        constexpr int V = 16 / sizeof(T);
        int64_t head = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / sizeof(T));
        if (head > n)
            head = n;
        if (tid < head)
            see(Tr::load(x, tid));
        const int4 *xv = reinterpret_cast<const int4 *>(x + head);
        const int64_t nv = (n - head) / V;
        for (int64_t j0 = tid; j0 < nv; j0 += MM_UNROLL * nth) {
            gs_vec<T> r[MM_UNROLL];
#pragma unroll
            for (int u = 0; u < MM_UNROLL; u++)
                if (j0 + u * nth < nv)
                    r[u].v = __ldg(xv + j0 + u * nth);
#pragma unroll
            for (int u = 0; u < MM_UNROLL; u++)
                if (j0 + u * nth < nv)
#pragma unroll
                    for (int e = 0; e < V; e++)
                        see(Tr::load(r[u].e, e));
        }
        done = head + nv * V;
    }
    for (int64_t i = done + tid; i < n; i += nth)
        see(Tr::load(x, i * s));
    block_minmax<K, Tr>(lo, hi);
    if (threadIdx.x == 0) {
        part[2 * blockIdx.x] = lo;
        part[2 * blockIdx.x + 1] = hi;
    }
}

template <class T> __global__ void __launch_bounds__(MM_THREADS) minmax_final(typename mm_traits<T>::key *part, int nparts)
{
    using Tr = mm_traits<T>;
    using K = typename Tr::key;
    K lo = part[0], hi = part[1];
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) {
        if (Tr::less(part[2 * i], lo))
            lo = part[2 * i];
        if (Tr::less(hi, part[2 * i + 1]))
            hi = part[2 * i + 1];
    }
    block_minmax<K, Tr>(lo, hi);
    if (threadIdx.x == 0) {
        part[0] = lo;
        part[1] = hi;
    }
}

struct mm_args {
    const gs_array *x;
    void *out2;
    cudaStream_t s;
    int sms;
};

template <class T> static gs_status minmax_launch(const mm_args *a)
{
    using K = typename mm_traits<T>::key;
    const int64_t n = a->x->length;
    int64_t blocks = (n + MM_THREADS - 1) / MM_THREADS;
    if (blocks > MM_MAX_BLOCKS)
        blocks = MM_MAX_BLOCKS;
    if (blocks > (int64_t)a->sms * 4)
        blocks = (int64_t)a->sms * 4;
    K *part = NULL, host[2];
    gs_status st = GS_OK;
    GS_CUDA_GOTO(gs_malloc_async((void **)&part, sizeof(K) * 2 * blocks, a->s));
    minmax_partial<T><<<(unsigned)blocks, MM_THREADS, 0, a->s>>>((const T *)a->x->data, n, a->x->stride, part);
    GS_CUDA_GOTO(cudaGetLastError());
    minmax_final<T><<<1, MM_THREADS, 0, a->s>>>(part, (int)blocks);
    GS_CUDA_GOTO(cudaGetLastError());
    GS_CUDA_GOTO(cudaMemcpyAsync(host, part, sizeof host, cudaMemcpyDeviceToHost, a->s));
    if ((st = gs_cuda_wait_stream(a->s)) != GS_OK)
        goto fail;
    if (sizeof(K) == sizeof(T)) {
        memcpy(a->out2, host, sizeof host);
    } else { /* float16: the float key is exact; convert back to half bits */
        for (int i = 0; i < 2; i++) {
            float f = (float)host[i];
            uint32_t b;
            memcpy(&b, &f, 4);
            /* exact for values that came from halves: re-pack sign/exponent/mantissa */
            uint16_t sign = (uint16_t)((b >> 16) & 0x8000u), h;
            int e = (int)((b >> 23) & 0xff) - 127 + 15;
            uint32_t m = b & 0x7fffffu;
            if (((b >> 23) & 0xff) == 0xff)
                h = (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
            else if (f == 0.0f)
                h = sign;
            else if (e >= 1)
                h = (uint16_t)(sign | (e << 10) | (m >> 13));
            else /* subnormal half */
                h = (uint16_t)(sign | ((m | 0x800000u) >> (14 - e)));
            memcpy((char *)a->out2 + 2 * i, &h, 2);
        }
    }
fail:
    if (part)
        cudaFreeAsync(part, a->s);
    return st;
}

extern "C" gs_status gs_cuda_minmax(const gs_array *x, void *out2, void *stream)
{
    if (x->length <= 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "zero-size array has no minimum or maximum");
    if (x->device == GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "minmax: the CUDA backend needs a device array");
    gs_cuda_call call(x->device, stream);
    if (call.status != GS_OK)
        return call.status;
    mm_args a{}; /* named fields: a new field cannot shift the others */
    a.x = x;
    a.out2 = out2;
    a.s = call.stream;
    a.sms = call.dev->multiprocessors;
    return gs_dtype_switch(x->dtype, [&](auto t) { return minmax_launch<gs_bool_as_u8<GS_TYPE(t)>>(&a); });
}
