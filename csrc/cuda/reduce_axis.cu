/*
 * reduce_axis (CUDA backend): segmented sum, count of nonzero and cumsum
 * over a strided (outer, len, inner) view -- NumPy's axis reductions and
 * scans without a transpose (issue 15).
 *
 *   rows     inner == 1 (the axis is the innermost non-unit axis): one
 *            block per row, its threads strided along the row (coalesced
 *            when the axis is contiguous), 4 loads in flight per thread,
 *            warp shuffles and a shared-memory step per block.  Few long
 *            rows are split along the axis into parts (grid.y).
 *   columns  inner > 1: each thread owns one i of one o and walks k, so a
 *            warp reads 32 neighbouring elements of a row (coalesced when
 *            strides[2] == 1); when outer * inner threads cannot fill the
 *            GPU, the axis is split into parts (grid.y).
 *   parts    partial sums [part][outer * inner] in the accumulator type,
 *            added in part order by a finishing kernel: deterministic.
 *   scan     rows: one block per row scans tiles of 256 x 8 elements (per-
 *            thread serial scan, warp shuffle scan of the thread totals,
 *            shared scan of the warp totals) carrying the running total;
 *            columns: each thread scans its column serially (coalesced).
 *
 * Floating inputs accumulate in double (starting from -0.0, NumPy's sum of
 * {-0.0}), integers and bool in wrapping uint64; results stored once with
 * gs_store_acc (convert.h), as on the CPU engine.
 */
#include "elements.cuh"
#include "stage.cuh"
#include "../common/convert.h"

#include <cuda_fp16.h>
#include <string.h>
#include <type_traits>

namespace {

constexpr int THREADS = 256;
constexpr int SCAN_ITEMS = 8;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ unsigned long long nz(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ unsigned long long nz(gs_f16 x) { return (x.bits & 0x7fffu) != 0; }
template <class T> __device__ __forceinline__ unsigned long long nz(T x) { return x != T(0); }

template <class T, bool COUNT> struct elem {
    using A = typename std::conditional<COUNT, unsigned long long, acc_of<T>>::type;
    static __device__ __forceinline__ A get(const T *p)
    {
        if constexpr (COUNT)
            return nz(*p);
        else
            return cv(*p);
    }
    static __device__ __forceinline__ A zero(int64_t len)
    {
        if constexpr (std::is_same<A, double>::value)
            return len > 0 ? -0.0 : 0.0; /* -0.0 + x == x: NumPy's sum of {-0.0} is -0.0 */
        else
            return 0;
    }
};

struct ax_args {
    const char *a;
    int64_t outer, len, inner, s0, s1, s2; /* strides in elements */
    int odt;
    size_t osz;
    char *out;
    int64_t kparts;
    void *part; /* kparts > 1: [part][outer * inner] accumulators */
};

__device__ __forceinline__ void store(const ax_args &r, int64_t j, double f)
{
    gs_store_acc(r.out + (size_t)j * r.osz, r.odt, f, 0);
}
__device__ __forceinline__ void store(const ax_args &r, int64_t j, unsigned long long u)
{
    gs_store_acc(r.out + (size_t)j * r.osz, r.odt, 0.0, u);
}

template <class A> __device__ __forceinline__ A warp_sum(A v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_down_sync(FULL, v, d);
    return v;
}

/* One block per (row o = blockIdx.x, part blockIdx.y). */
template <class T, bool COUNT> __global__ void __launch_bounds__(THREADS) rows_kernel(ax_args r)
{
    using E = elem<T, COUNT>;
    using A = typename E::A;
    __shared__ A warps[THREADS / 32];
    const int64_t o = blockIdx.x, part = blockIdx.y;
    const int64_t k0 = r.len * part / r.kparts, k1 = r.len * (part + 1) / r.kparts;
    const T *row = (const T *)r.a + o * r.s0;
    A s[4] = {E::zero(r.len), E::zero(r.len), E::zero(r.len), E::zero(r.len)};
    int64_t k = k0 + threadIdx.x;
    for (; k + 3 * THREADS < k1; k += 4 * THREADS) { /* four independent loads in flight */
#pragma unroll
        for (int u = 0; u < 4; u++)
            s[u] += E::get(row + (k + u * THREADS) * r.s1);
    }
    for (; k < k1; k += THREADS)
        s[0] += E::get(row + k * r.s1);
    A v = warp_sum((s[0] + s[1]) + (s[2] + s[3]));
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0)
        warps[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < THREADS / 32 ? warps[lane] : E::zero(r.len);
        v = warp_sum(v);
        if (lane == 0) {
            if (r.kparts > 1)
                ((A *)r.part)[part * r.outer + o] = v;
            else
                store(r, o, v);
        }
    }
}

/* Thread (o, i) of block (blockIdx.x = o * ichunks + i / THREADS, part
 * blockIdx.y) walks k; CUMSUM stores every prefix (kparts == 1). */
template <class T, bool COUNT, bool SCAN> __global__ void __launch_bounds__(THREADS) cols_kernel(ax_args r)
{
    using E = elem<T, COUNT>;
    using A = typename E::A;
    const int64_t ichunks = (r.inner + THREADS - 1) / THREADS;
    const int64_t o = blockIdx.x / ichunks, i = (blockIdx.x % ichunks) * THREADS + threadIdx.x;
    if (i >= r.inner)
        return;
    const int64_t part = blockIdx.y;
    const int64_t k0 = r.len * part / r.kparts, k1 = r.len * (part + 1) / r.kparts;
    const T *col = (const T *)r.a + o * r.s0 + i * r.s2;
    A s = E::zero(r.len);
    if (SCAN) {
        const int64_t base = o * r.len * r.inner + i;
        for (int64_t k = k0; k < k1; k++) {
            s += E::get(col + k * r.s1);
            store(r, base + k * r.inner, s);
        }
        return;
    }
    A t[4] = {E::zero(r.len), E::zero(r.len), E::zero(r.len), E::zero(r.len)};
    int64_t k = k0;
    for (; k + 4 <= k1; k += 4) {
#pragma unroll
        for (int u = 0; u < 4; u++)
            t[u] += E::get(col + (k + u) * r.s1);
    }
    for (; k < k1; k++)
        t[0] += E::get(col + k * r.s1);
    s = (t[0] + t[1]) + (t[2] + t[3]);
    if (r.kparts > 1)
        ((A *)r.part)[part * r.outer * r.inner + o * r.inner + i] = s;
    else
        store(r, o * r.inner + i, s);
}

/* out[j] = the parts of j added in part order. */
template <class A> __global__ void finish_kernel(ax_args r)
{
    const int64_t n = r.outer * r.inner;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x) {
        A s = std::is_same<A, double>::value ? (A)-0.0 : (A)0;
        for (int64_t p = 0; p < r.kparts; p++)
            s += ((const A *)r.part)[p * n + j];
        store(r, j, s);
    }
}

/* One block per row: tiles of THREADS * SCAN_ITEMS, a running carry. */
template <class T> __global__ void __launch_bounds__(THREADS) scan_rows_kernel(ax_args r)
{
    using E = elem<T, false>;
    using A = typename E::A;
    __shared__ A warps[THREADS / 32];
    __shared__ A carry_s;
    const int64_t o = blockIdx.x;
    const T *row = (const T *)r.a + o * r.s0;
    const int64_t obase = o * r.len;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const A zero = E::zero(r.len); /* -0.0 for floats: prefixes of -0.0 stay -0.0, as in NumPy */
    A carry = zero;
    for (int64_t t = 0; t < r.len; t += THREADS * SCAN_ITEMS) {
        const int64_t first = t + (int64_t)threadIdx.x * SCAN_ITEMS;
        A x[SCAN_ITEMS];
        A run = zero;
#pragma unroll
        for (int j = 0; j < SCAN_ITEMS; j++) {
            x[j] = first + j < r.len ? E::get(row + (first + j) * r.s1) : zero;
            run += x[j];
            x[j] = run; /* inclusive within the thread */
        }
        A incl = run; /* warp inclusive scan of the thread totals */
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            A y = __shfl_up_sync(FULL, incl, d);
            if (lane >= d)
                incl += y;
        }
        if (lane == 31)
            warps[w] = incl;
        __syncthreads();
        A excl = __shfl_up_sync(FULL, incl, 1); /* exclusive: no subtraction, so no rounding */
        if (lane == 0)
            excl = zero;
        if (w == 0) {
            A v = lane < THREADS / 32 ? warps[lane] : zero;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                A y = __shfl_up_sync(FULL, v, d);
                if (lane >= d)
                    v += y;
            }
            if (lane < THREADS / 32)
                warps[lane] = v; /* inclusive over warps */
            if (lane == THREADS / 32 - 1)
                carry_s = v;
        }
        __syncthreads();
        const A before = (carry + (w > 0 ? warps[w - 1] : zero)) + excl;
#pragma unroll
        for (int j = 0; j < SCAN_ITEMS; j++)
            if (first + j < r.len)
                store(r, obase + first + j, before + x[j]);
        carry += carry_s;
        __syncthreads(); /* warps[] and carry_s are rewritten by the next tile */
    }
}

template <class T> gs_status launch(ax_args &r, int op, const gs_device_info *dev, cudaStream_t s)
{
    const int64_t cells = r.outer * r.inner;
    if (op == GS_AXIS_CUMSUM) {
        if (r.inner == 1) {
            if (r.outer > 0x7fffffff)
                return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: %lld rows", (long long)r.outer);
            void *args[] = {&r};
            GS_CUDA_CHECK(cudaLaunchKernel((const void *)scan_rows_kernel<T>, dim3((unsigned)r.outer), dim3(THREADS),
                                           args, 0, s));
            return GS_OK;
        }
        const int64_t ichunks = (r.inner + THREADS - 1) / THREADS;
        if (r.outer * ichunks > 0x7fffffff)
            return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: grid of %lld blocks", (long long)(r.outer * ichunks));
        void *args[] = {&r};
        GS_CUDA_CHECK(cudaLaunchKernel((const void *)cols_kernel<T, false, true>, dim3((unsigned)(r.outer * ichunks)),
                                       dim3(THREADS), args, 0, s));
        return GS_OK;
    }
    const bool count = op == GS_AXIS_COUNT_NONZERO;
    const int64_t want_threads = (int64_t)dev->multiprocessors * dev->max_threads_per_multiprocessor * 2;
    const void *k;
    int64_t blocks;
    if (r.inner == 1) {
        k = count ? (const void *)rows_kernel<T, true> : (const void *)rows_kernel<T, false>;
        blocks = r.outer;
    } else {
        k = count ? (const void *)cols_kernel<T, true, false> : (const void *)cols_kernel<T, false, false>;
        blocks = r.outer * ((r.inner + THREADS - 1) / THREADS);
    }
    if (blocks > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: grid of %lld blocks", (long long)blocks);
    /* split the axis when the blocks cannot fill the GPU and the rows are long */
    r.kparts = 1;
    const int64_t have = blocks * THREADS;
    if (have < want_threads && r.len >= 1024) {
        int64_t p = (want_threads + have - 1) / have, cap = r.len / 256;
        p = p < cap ? p : cap;
        r.kparts = p < 65535 ? p : 65535;
    }
    void *d_part = NULL;
    gs_status st = GS_OK;
    if (r.kparts > 1) {
        GS_CUDA_CHECK(gs_malloc_async(&d_part, (size_t)(r.kparts * cells) * 8, s));
        r.part = d_part;
    }
    void *args[] = {&r};
    GS_CUDA_GOTO(cudaLaunchKernel(k, dim3((unsigned)blocks, (unsigned)r.kparts), dim3(THREADS), args, 0, s));
    if (r.kparts > 1) {
        int64_t g = (cells + THREADS - 1) / THREADS;
        g = g < 65535 ? g : 65535;
        const void *fk = (std::is_same<typename elem<T, false>::A, double>::value && !count)
                             ? (const void *)finish_kernel<double>
                             : (const void *)finish_kernel<unsigned long long>;
        GS_CUDA_GOTO(cudaLaunchKernel(fk, dim3((unsigned)g), dim3(THREADS), args, 0, s));
    }
fail:
    if (d_part) {
        cudaError_t e = cudaFreeAsync(d_part, s);
        if (e != cudaSuccess && st == GS_OK)
            st = gs_cuda_fail(e, "cudaFreeAsync", __FILE__, __LINE__);
    }
    return st;
}

gs_status launch_dtype(gs_dtype dt, ax_args &r, int op, const gs_device_info *dev, cudaStream_t s)
{
    return gs_dtype_switch(dt, [&](auto t) { return launch<GS_TYPE(t)>(r, op, dev, s); });
}

} // namespace

extern "C" gs_status gs_cuda_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                                         gs_array *out, void *stream)
{
    int64_t nout;
    gs_status st = gs_axis_check(a, shape, op, out, &nout);
    if (st != GS_OK)
        return st;
    const int64_t total = shape[0] * shape[1] * shape[2];
    const int on_host = a->device == GS_HOST;
    const bool c_contiguous = (strides[2] == 1 || shape[2] == 1) && (strides[1] == shape[2] || shape[1] == 1) &&
                              (strides[0] == shape[1] * shape[2] || shape[0] == 1);
    if (on_host && total > 0 && !c_contiguous)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: a host view must be C-contiguous to be staged");
    if (nout == 0)
        return GS_OK;
    gs_cuda_call call(a->device, stream);
    st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const size_t es = gs_dtype_size(a->dtype), osz = gs_dtype_size(out->dtype);
    void *d_a = NULL, *d_out = NULL;
    ax_args r;
    memset(&r, 0, sizeof r);
    r.outer = shape[0], r.len = shape[1], r.inner = shape[2];
    r.s0 = strides[0], r.s1 = strides[1], r.s2 = strides[2];
    r.odt = out->dtype;
    r.osz = osz;
    r.kparts = 1;
    r.a = (const char *)a->data;
    r.out = (char *)out->data;
    if (on_host) { /* stage the C-contiguous block and the result */
        if (total > 0) {
            GS_CUDA_GOTO(gs_malloc_async(&d_a, (size_t)total * es, s));
            GS_GOTO(gs_cuda_h2d(d_a, a->data, (size_t)total * es, s));
        }
        GS_CUDA_GOTO(gs_malloc_async(&d_out, (size_t)nout * osz, s));
        r.a = (const char *)d_a;
        r.out = (char *)d_out;
    }
    st = launch_dtype(a->dtype, r, op, dev, s);
    if (st != GS_OK)
        goto fail;
    GS_CUDA_GOTO(cudaGetLastError());
    if (on_host)
        GS_GOTO(gs_cuda_d2h(out->data, d_out, (size_t)nout * osz, s));
fail:
    if (d_a)
        cudaFreeAsync(d_a, s);
    if (d_out)
        cudaFreeAsync(d_out, s);
    return st;
}
