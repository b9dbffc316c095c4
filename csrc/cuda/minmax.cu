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

/* This block's share of x (blocks blockIdx.x of gridDim.x): its (min, max) to part[2 blockIdx.x ..]. */
template <class T>
__device__ __forceinline__ void minmax_block(const T *x, int64_t n, int64_t s, typename mm_traits<T>::key *part)
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

template <class T>
__global__ void __launch_bounds__(MM_THREADS) minmax_partial(const T *x, int64_t n, int64_t s, typename mm_traits<T>::key *part)
{
    minmax_block<T>(x, n, s, part);
}

/* Up to MM_MANY arrays of one dtype at once (minmax_many): array blockIdx.y. */
#define MM_MANY 16
struct mm_many_args {
    const void *x[MM_MANY];
    int64_t n[MM_MANY], s[MM_MANY];
};

template <class T>
__global__ void __launch_bounds__(MM_THREADS) minmax_partial_many(mm_many_args a, typename mm_traits<T>::key *part)
{
    const int k = blockIdx.y;
    minmax_block<T>((const T *)a.x[k], a.n[k], a.s[k], part + 2 * (int64_t)gridDim.x * k);
}

/* The (min, max) of nparts partial pairs at part, written to part[0], part[1]. */
template <class T> __device__ __forceinline__ void minmax_reduce(typename mm_traits<T>::key *part, int nparts)
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

template <class T> __global__ void __launch_bounds__(MM_THREADS) minmax_final(typename mm_traits<T>::key *part, int nparts)
{
    minmax_reduce<T>(part, nparts);
}

/* Block k reduces array k's nparts partial pairs. */
template <class T>
__global__ void __launch_bounds__(MM_THREADS) minmax_final_many(typename mm_traits<T>::key *part, int nparts)
{
    minmax_reduce<T>(part + 2 * (int64_t)nparts * blockIdx.x, nparts);
}

struct mm_args {
    const gs_array *x;
    void *out2;
    cudaStream_t s;
    int sms;
};

/* A (min, max) key pair as two elements of T at out2 (float16: the float key
 * is exact; converted back to half bits). */
template <class T> static void keys_to_elements(const typename mm_traits<T>::key *host, void *out2)
{
    using K = typename mm_traits<T>::key;
    if (sizeof(K) == sizeof(T)) {
        memcpy(out2, host, 2 * sizeof(K));
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
            memcpy((char *)out2 + 2 * i, &h, 2);
        }
    }
}

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
    keys_to_elements<T>(host, a->out2);
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

/* minmax of k arrays of one dtype: one partial launch over all, one final
 * launch, one copy, one synchronization. */
template <class T> static gs_status minmax_many_launch(const gs_array *xs, int k, void *out, cudaStream_t s, int sms)
{
    using K = typename mm_traits<T>::key;
    mm_many_args a;
    memset(&a, 0, sizeof a);
    int64_t nmax = 0;
    for (int i = 0; i < k; i++) {
        a.x[i] = xs[i].data;
        a.n[i] = xs[i].length;
        a.s[i] = xs[i].stride;
        nmax = xs[i].length > nmax ? xs[i].length : nmax;
    }
    int64_t blocks = (nmax + MM_THREADS - 1) / MM_THREADS;
    const int64_t cap = ((int64_t)sms * 4 + k - 1) / k; /* about 4 blocks per SM over all arrays */
    if (blocks > cap)
        blocks = cap;
    if (blocks > MM_MAX_BLOCKS)
        blocks = MM_MAX_BLOCKS;
    if (blocks < 1)
        blocks = 1;
    K *part = NULL, host[2 * MM_MANY];
    gs_status st = GS_OK;
    GS_CUDA_GOTO(gs_malloc_async((void **)&part, sizeof(K) * 2 * (size_t)blocks * (size_t)k, s));
    minmax_partial_many<T><<<dim3((unsigned)blocks, (unsigned)k), MM_THREADS, 0, s>>>(a, part);
    GS_CUDA_GOTO(cudaGetLastError());
    minmax_final_many<T><<<(unsigned)k, MM_THREADS, 0, s>>>(part, (int)blocks);
    GS_CUDA_GOTO(cudaGetLastError());
    /* array i's pair sits at part[2 blocks i]: one strided copy of all pairs */
    GS_CUDA_GOTO(cudaMemcpy2DAsync(host, 2 * sizeof(K), part, 2 * sizeof(K) * (size_t)blocks, 2 * sizeof(K),
                                   (size_t)k, cudaMemcpyDeviceToHost, s));
    if ((st = gs_cuda_wait_stream(s)) != GS_OK)
        goto fail;
    for (int i = 0; i < k; i++)
        keys_to_elements<T>(host + 2 * i, (char *)out + 2 * (size_t)i * gs_dtype_size(xs[0].dtype));
fail:
    if (part)
        cudaFreeAsync(part, s);
    return st;
}

extern "C" gs_status gs_cuda_minmax_many(const gs_array *xs, int k, void *out, void *stream)
{
    if (k < 1 || k > MM_MANY)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "minmax_many: 1 to %d arrays; got %d", MM_MANY, k);
    for (int i = 0; i < k; i++) {
        if (xs[i].length <= 0)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "zero-size array has no minimum or maximum");
        if (xs[i].device == GS_HOST || xs[i].device != xs[0].device || xs[i].dtype != xs[0].dtype)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "minmax_many: device arrays of one dtype and device");
    }
    gs_cuda_call call(xs[0].device, stream);
    if (call.status != GS_OK)
        return call.status;
    const int sms = call.dev->multiprocessors;
    return gs_dtype_switch(xs[0].dtype, [&](auto t) {
        return minmax_many_launch<gs_bool_as_u8<GS_TYPE(t)>>(xs, k, out, call.stream, sms);
    });
}
