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

#include <cuda_fp16.h>
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

/* Same for a gs_status-returning call. */
#define GS_GOTO(call)                                                                                         \
    do {                                                                                                      \
        st = (call);                                                                                          \
        if (st != GS_OK)                                                                                      \
            goto fail;                                                                                        \
    } while (0)

#define GS_MAX_DEVICES 64

/* Stream-ordered scratch memory from gpusync's own pool on the current
 * device (runtime.cu).  The pool keeps up to GS_POOL_KEEP_BYTES (or
 * GPUSYNC_POOL_KEEP_MB) of freed memory across synchronizations -- the
 * device's default pool would give it all back at every sync and map it
 * again on the next call -- and gs_cuda_empty_cache() trims it.  Free with
 * cudaFreeAsync. */
cudaError_t gs_cuda_pool_alloc(void **p, size_t bytes, cudaStream_t s);
template <typename T> inline cudaError_t gs_malloc_async(T **p, size_t bytes, cudaStream_t s)
{
    return gs_cuda_pool_alloc((void **)p, bytes, s);
}

/* Pageable host memory <-> device at pinned-memory speed (stage.cu): host
 * threads copy through a ring of pinned buffers while the DMA runs.  h2d is
 * ordered after earlier work on s and before later work on s, and returns
 * once `src` has been read; d2h returns when `dst` holds the data. */
gs_status gs_cuda_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s);
gs_status gs_cuda_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s);

/* One array of a call whose arrays are all on the device or all on the host
 * (gs_cuda_staged).  For the step: `ptr` is the chunk's first element on the
 * device and `stride` its stride in elements; both stay 0 for an absent
 * array (a == NULL). */
struct gs_staged {
    const gs_array *a;
    int out;        /* 1: written by the step (host: copied back after each chunk) */
    void *ptr = NULL;
    int64_t stride = 0;
    void *buf = NULL; /* host case: the chunk's device buffer */
    explicit gs_staged(const gs_array *array, int written = 0) : a(array), out(written) {}
};

/* The staging loop of every element-wise entry point (stage.cu's copies).
 * Device arrays: step(0, n) once on the arrays themselves.  Host arrays:
 * device buffers of `chunk` elements each; for every chunk, the inputs are
 * copied in (gs_cuda_h2d), step(off, cnt) runs, and the outputs are copied
 * back (gs_cuda_d2h); the buffers are freed on `s` at the end.  The kind of
 * the first array decides.  n == 0: no step.  step returns gs_status. */
template <class F>
gs_status gs_cuda_staged(gs_staged *arr, int narr, int64_t n, int64_t chunk, cudaStream_t s, F &&step)
{
    gs_status st = GS_OK;
    if (arr[0].a->device != GS_HOST) {
        for (int k = 0; k < narr; k++)
            if (arr[k].a) {
                arr[k].ptr = arr[k].a->data;
                arr[k].stride = arr[k].a->stride;
            }
        return n > 0 ? step((int64_t)0, n) : GS_OK;
    }
    if (chunk > n)
        chunk = n;
    for (int k = 0; k < narr && chunk > 0; k++)
        if (arr[k].a) {
            GS_CUDA_GOTO(gs_malloc_async(&arr[k].buf, (size_t)chunk * gs_dtype_size(arr[k].a->dtype), s));
            arr[k].ptr = arr[k].buf;
            arr[k].stride = 1;
        }
    for (int64_t off = 0; off < n; off += chunk) {
        const int64_t cnt = n - off < chunk ? n - off : chunk;
        for (int k = 0; k < narr; k++)
            if (arr[k].a && !arr[k].out) {
                const size_t es = gs_dtype_size(arr[k].a->dtype);
                GS_GOTO(gs_cuda_h2d(arr[k].buf, (const char *)arr[k].a->data + off * es, (size_t)cnt * es, s));
            }
        GS_GOTO(step(off, cnt));
        for (int k = 0; k < narr; k++)
            if (arr[k].a && arr[k].out) {
                const size_t es = gs_dtype_size(arr[k].a->dtype);
                GS_GOTO(gs_cuda_d2h((char *)arr[k].a->data + off * es, arr[k].buf, (size_t)cnt * es, s));
            }
    }
fail:
    for (int k = 0; k < narr; k++)
        if (arr[k].buf) {
            cudaFreeAsync(arr[k].buf, s);
            arr[k].buf = NULL;
        }
    return st;
}

/* Cached per-device facts (filled once per device, thread-safe). */
gs_status gs_cuda_device(int ordinal, const gs_device_info **info);

/* Makes `ordinal` current for the lifetime of a call and restores the
 * caller's device afterwards. */
struct gs_device_guard {
    int prev = -1;
    cudaError_t err = cudaSuccess;
    gs_device_guard() {}
    explicit gs_device_guard(int ordinal) { enter(ordinal); }
    cudaError_t enter(int ordinal)
    {
        err = cudaGetDevice(&prev);
        if (err != cudaSuccess)
            prev = -1;
        else if (prev != ordinal)
            err = cudaSetDevice(ordinal);
        return err;
    }
    ~gs_device_guard()
    {
        int cur;
        if (prev >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev)
            cudaSetDevice(prev);
    }
    gs_device_guard(const gs_device_guard &) = delete;
    gs_device_guard &operator=(const gs_device_guard &) = delete;
};

/* The device a call runs on: the arrays' device, or the current one for
 * host arrays (staged through it). */
gs_status gs_cuda_call_device(int array_device, int *ordinal, const gs_device_info **info);

/* The preamble of every entry point (runtime.cu): the call's device (see
 * gs_cuda_call_device) made current until the object goes out of scope, its
 * cached facts, and the caller's stream.  Check `status` first:
 *     gs_cuda_call call(a->device, stream);
 *     gs_status st = call.status;
 *     if (st != GS_OK)
 *         return st;
 *     const gs_device_info *dev = call.dev;
 *     cudaStream_t s = call.stream;                                       */
struct gs_cuda_call {
    int ordinal = -1;
    const gs_device_info *dev = NULL;
    cudaStream_t stream;
    gs_status status;
    gs_device_guard guard;
    gs_cuda_call(int array_device, void *stream);
};

/* The deadlock-flag epilogue of the kernels that spin with a time-out: read
 * the int flag such a kernel raises when it gives up, after the stream's work
 * (the stream is synchronized).  Raised: GS_ERR_DEADLOCK, "<op> (<strategy>):
 * <waiter> waited more than <T> ms for <awaited>" (no "(<strategy>)" when
 * strategy < 0).  gs_spin_deadlock is the message alone, for a flag read
 * with other data. */
gs_status gs_cuda_check_deadlock(const int *d_flag, cudaStream_t s, const char *op, int strategy, const char *waiter,
                                 const char *awaited);
gs_status gs_spin_deadlock(const char *op, int strategy, const char *waiter, const char *awaited);

/* Blocks of `kernel` (with `threads` threads and `smem` dynamic shared
 * bytes) that fit on the whole device at once. */
gs_status gs_cuda_resident_blocks(const void *kernel, int threads, size_t smem, const gs_device_info *dev,
                                  int64_t *blocks);

/* Let `kernel` take as much dynamic shared memory as the device allows a
 * block (the opt-in maximum less its static shared memory).  Always the same
 * value, so calls from several host threads cannot race: setting the size
 * each call needs instead would let one thread shrink it under another's
 * launch. */
gs_status gs_cuda_allow_smem(const void *kernel, const gs_device_info *dev);

/* Read a device int (an error flag) after the stream's work: the stream is
 * synchronized. */
gs_status gs_cuda_read_flag(const int *d_flag, cudaStream_t s, int *flag);

/* ---- Interrupts on the GPU (one mechanism; see docs/environment.md and
 * gpusync.h's interrupt section).
 * Every host wait for device work goes through gs_cuda_wait_stream /
 * gs_cuda_wait_event: they poll cudaStreamQuery / cudaEventQuery (busy for
 * the first GS_WAIT_SPIN_US, then in naps of at most GS_WAIT_NAP_US) and
 * call gs_interrupt_poll() between polls.  On an interrupt they raise the
 * process-wide device cancel word -- one int of mapped, portable pinned host
 * memory that every device can read -- and keep waiting: the work must drain
 * before its buffers are freed.  Kernels that can run without bound (the
 * barrier benchmark's rounds, the mutex counter demo) read the cancel word
 * through gs_cuda_cancel_word() every few rounds / blocks and stop; other
 * kernels are bounded by their data and finish.  When the work has drained,
 * the word is lowered and the wait returns GS_ERR_INTERRUPTED (the binding
 * raises KeyboardInterrupt and the next call starts clean). */
#define GS_WAIT_SPIN_US 5000
#define GS_WAIT_NAP_US 100
gs_status gs_cuda_wait_stream(cudaStream_t s);
gs_status gs_cuda_wait_event(cudaEvent_t e);
/* The device address of the cancel word (NULL if it could not be made:
 * kernels then never see a cancel, and waits still end when work drains). */
const int *gs_cuda_cancel_word(void);
/* Kernel side: has the host asked to stop?  (A PCIe read: call it rarely.) */
__device__ __forceinline__ bool gs_cancel_requested(const int *cancel)
{
    return cancel != NULL && *(const volatile int *)cancel != 0;
}

/* A representative instantiation of a gpusync kernel, for gs.occupancy():
 * its launch shape as the library launches it (u8 input and 256 bins for
 * histograms, float32 for reductions, 100 bins for binned_statistic). */
struct gs_kernel_ref {
    const char *name; /* "op:strategy" */
    const void *func;
    int threads;
    size_t smem; /* dynamic shared memory */
};
/* Each file appends its kernels to refs and returns how many it added. */
int gs_hist_global_refs(gs_kernel_ref *refs);
int gs_hist_shared_refs(gs_kernel_ref *refs);
int gs_hist_warp_refs(gs_kernel_ref *refs);
int gs_hist_cluster_refs(gs_kernel_ref *refs);
int gs_reduce_refs(gs_kernel_ref *refs);
int gs_binstat_refs(gs_kernel_ref *refs);
int gs_bits_refs(gs_kernel_ref *refs);
int gs_scan_refs(gs_kernel_ref *refs);

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

/* Element -> accumulator of sum, dot and cumsum: double for floating
 * inputs, wrapping uint64 for integers and bool (NumPy's modular sums);
 * gs_bool8 is bool's storage tag (converts as x != 0). */
struct gs_bool8 {
    uint8_t v;
};

__device__ __forceinline__ unsigned long long cv(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ unsigned long long cv(int8_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint8_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int16_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint16_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int32_t x) { return (unsigned long long)(long long)x; }
__device__ __forceinline__ unsigned long long cv(uint32_t x) { return x; }
__device__ __forceinline__ unsigned long long cv(int64_t x) { return (unsigned long long)x; }
__device__ __forceinline__ unsigned long long cv(uint64_t x) { return x; }
__device__ __forceinline__ double cv(gs_f16 x) { return (double)__half2float(__ushort_as_half(x.bits)); }
__device__ __forceinline__ double cv(float x) { return (double)x; }
__device__ __forceinline__ double cv(double x) { return x; }

template <class T> using acc_of = decltype(cv(T()));

/*
 * Per-block bin tables in shared memory, filled once at kernel start by
 * gs_bins_prepare(): the 8-bit lookup table, or the edges (as double and as
 * float) when there are at most GS_HIST_SMEM_EDGES of them.  Equal-width
 * edges are computed from the verified formula, so no edge array ever has to
 * be copied from the host for them.
 */
struct gs_smem_bins {
    union {
        int32_t lut[256];
        double e[GS_HIST_SMEM_EDGES];
    };
    float ef[GS_HIST_SMEM_EDGES];
};

__device__ __forceinline__ bool gs_edges_in_smem(const gs_binner &b)
{
    return (b.kind == GS_BINS_UNIFORM || b.kind == GS_BINS_EDGES) && b.nbins < GS_HIST_SMEM_EDGES;
}

/* Ends with __syncthreads(). */
__device__ __forceinline__ void gs_bins_prepare(const gs_binner &b, gs_smem_bins &s)
{
    if (b.kind == GS_BINS_LUT) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            s.lut[i] = b.lut[i];
    } else if (gs_edges_in_smem(b)) {
        for (int i = threadIdx.x; i <= b.nbins; i += blockDim.x) {
            const double e = b.kind == GS_BINS_UNIFORM ? gs_uniform_edge(&b, i) : b.edges[i];
            s.e[i] = e;
            s.ef[i] = (float)e; /* exact whenever edges_f32 (only then used) */
        }
    }
    __syncthreads();
}

/* Correct an estimate k of x's bin with the edges e[0..n] (e[0] <= x <= e[n]):
 * the result is the k with e[k] <= x < e[k+1], or n - 1 for x == e[n].
 * Taken only near an edge (rarely), so kept out of line: the hot loops stay
 * small and within their register budget. */
template <class E>
__device__ __noinline__ int gs_correct(const E *e, int n, E x, int k)
{
    k = k < 0 ? 0 : (k > n - 1 ? n - 1 : k);
    int lo, hi; /* e[lo] <= x < e[hi] (or x == e[n], hi == n) */
    if (x < e[k]) {
        if (k > 0 && x >= e[k - 1])
            return k - 1;
        lo = 0;
        hi = k;
    } else {
        if (k >= n - 1 || x < e[k + 1])
            return k;
        lo = k + 1;
        hi = n;
    }
    while (hi - lo > 1) { /* a bad estimate: binary search, log2(n) steps */
        const int mid = lo + ((hi - lo) >> 1);
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo < n ? lo : n - 1;
}

/* Equal-width bins: estimate f = (x - e(0)) * scale.  Farther than `margin`
 * from an integer, floor(f) is the bin (the host bounded the estimate's
 * error and the edges' offsets from their ideal positions); near an integer
 * (rare) the edges in shared memory settle it.  floor() by adding 2^23
 * (2^52) rounding down: no conversion instruction on the common path. */
__device__ __forceinline__ int64_t gs_bin_uniform_f(const gs_binner &b, const gs_smem_bins &s, float x)
{
    const int n = (int)b.nbins;
    /* fast path without a range test: x below e(0) gives k < 0, above e(n)
     * k >= n, NaN fails every comparison -- all go to the checked path */
    const float f = (x - b.lo_f) * b.scale_f;
    const float t = __fadd_rd(f, 8388608.0f);
    const int k = __float_as_int(t) - 0x4B000000;
    const float fr = f - (t - 8388608.0f);
    if ((unsigned)k < (unsigned)n && fr > b.margin_f && fr < 1.0f - b.margin_f)
        return k;
    if (!(x >= b.lo_f && x <= b.stop_f))
        return -1;
    return gs_correct(s.ef, n, x, k);
}
__device__ __forceinline__ int64_t gs_bin_uniform_d(const gs_binner &b, const gs_smem_bins &s, double x)
{
    const int n = (int)b.nbins;
    if (!(x >= b.lo && x <= b.stop))
        return -1;
    const double f = (x - b.lo) * b.scale;
    const double t = __dadd_rd(f, 4503599627370496.0);
    const int k = (int)(__double_as_longlong(t) - 0x4330000000000000ll);
    const double fr = f - (t - 4503599627370496.0);
    if (fr > b.margin && fr < 1.0 - b.margin && k < n)
        return k;
    return gs_correct(s.e, n, x, k);
}
template <class E> __device__ __forceinline__ int64_t gs_bin_search(const E *e, int n, E x)
{
    if (!(x >= e[0]))
        return -1;
    if (x >= e[n])
        return x == e[n] ? n - 1 : -1;
    int lo = 0, hi = n;
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* A value whose conversion to float is exact (ints <= 16 bits, halves,
 * floats): compare in float when the edges are float32. */
__device__ __forceinline__ int64_t gs_bin_real_smem(const gs_binner &b, const gs_smem_bins &s, float xf, bool f_exact)
{
    if (!gs_edges_in_smem(b))
        return gs_bin_real(&b, (double)xf);
    if (f_exact && b.edges_f32)
        return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_f(b, s, xf) : gs_bin_search(s.ef, (int)b.nbins, xf);
    return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_d(b, s, (double)xf)
                                     : gs_bin_search(s.e, (int)b.nbins, (double)xf);
}
__device__ __forceinline__ int64_t gs_bin_real_smem_d(const gs_binner &b, const gs_smem_bins &s, double x)
{
    if (!gs_edges_in_smem(b))
        return gs_bin_real(&b, x);
    return b.kind == GS_BINS_UNIFORM ? gs_bin_uniform_d(b, s, x) : gs_bin_search(s.e, (int)b.nbins, x);
}

/* Bin of one value.  8-bit inputs: LUT or DIRECT on the raw byte; wider
 * integers: DIRECT or the real-valued rules; floats: real-valued rules. */
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, uint8_t v)
{
    return b.kind == GS_BINS_LUT ? (int64_t)s.lut[v] : gs_bin_direct(&b, v); /* LUT from shared memory */
}
#define GS_INT_BIN(T, WIDEN, REAL)                                                                            \
    __device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, T v)               \
    {                                                                                                         \
        return b.kind == GS_BINS_DIRECT ? gs_bin_direct(&b, (uint64_t)(WIDEN)v) : REAL;                      \
    }
GS_INT_BIN(int16_t, int64_t, gs_bin_real_smem(b, s, (float)v, true))
GS_INT_BIN(uint16_t, uint64_t, gs_bin_real_smem(b, s, (float)v, true))
GS_INT_BIN(int32_t, int64_t, gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(uint32_t, uint64_t, gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(int64_t, int64_t, b.kind == GS_BINS_EDGES_INT ? gs_bin_i64(&b, v) : gs_bin_real_smem_d(b, s, (double)v))
GS_INT_BIN(uint64_t, uint64_t, b.kind == GS_BINS_EDGES_INT ? gs_bin_u64(&b, v) : gs_bin_real_smem_d(b, s, (double)v))
#undef GS_INT_BIN
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, gs_f16 v)
{
    return gs_bin_real_smem(b, s, gs_half_to_float(v.bits), true);
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, float v)
{
    return gs_bin_real_smem(b, s, v, true);
}
__device__ __forceinline__ int64_t gs_dbin(const gs_binner &b, const gs_smem_bins &s, double v)
{
    return gs_bin_real_smem_d(b, s, v);
}

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
