/*
 * binned_statistic (CUDA backend): per-bin state that one atomic cannot
 * update, guarded by per-bin mutexes (seed 001 ex 4.5).
 *
 * A bin's state is (n, a, b, nan, lock):
 *   count      n                      one atomicAdd, no lock
 *   sum        a = sum                one atomicAdd, no lock
 *   mean       n, a = sum             two words: under the bin's lock
 *   std, var   n, a = mean, b = M2    Welford's update under the lock
 *   min, max   n, a = extreme, nan    compare-and-set of a value plus flags
 *
 * shared: each block keeps every bin's state and lock in shared memory
 *         (mutex_lock_block), then merges it into the global state under
 *         the global per-bin locks (Chan et al.'s parallel Welford merge);
 * global: every element takes the global lock of its bin.
 * A last kernel turns the states into SciPy's results.  Every lock wait is
 * bounded; a time-out sets the error flag, which the host reads.
 */
#include "kernel_refs.cuh"
#include "stage.cuh"
#include "gpusync/mutex.cuh"
#include "gpusync/reduce.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The lock-free privatized strategy (csrc/cuda/binstat_priv.cu). */
extern "C" int gs_cuda_binstat_priv_fits(int ndim, const int64_t *nedges, int statistic, gs_dtype dtype,
                                         const gs_device_info *dev);
extern "C" gs_status gs_cuda_binstat_priv(const gs_array *coords, int ndim, const double *edges,
                                          const int64_t *nedges, const double *tops, const gs_array *values,
                                          int statistic, gs_array *result, gs_array *binnumber,
                                          gs_array *nonfinite, const gs_device_info *dev, void *stream);

namespace {

struct bin_state {
    unsigned long long n;
    double a, b;
    int nan;
    int lock;
};

struct binstat_args {
    const void *x, *v;
    int64_t n, sx, sv;
    const double *edges; /* device, nbins + 1 */
    int nbins;
    double top;
    int stat;
    int replicas;       /* shared strategy: copies of the bins per block */
    int64_t *binnumber; /* or NULL */
    bin_state *g;       /* global state, nbins */
    int *error;
    unsigned long long timeout_ns;
};

/* SciPy's bin number: np.digitize(x, edges), then x in [e[n], top] moved to
 * bin n.  0 below, 1..n inside, n + 1 above or NaN. */
__device__ __forceinline__ int bin_number(const double *e, int nb, double top, double x)
{
    if (x != x)
        return nb + 1;
    int lo = 0, hi = nb + 1; /* first edge > x */
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (e[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo == nb + 1 && x <= top) ? nb : lo;
}

/* The update of one value; the caller holds the bin's lock when needed. */
__device__ __forceinline__ void update_locked(volatile bin_state *s, int stat, double v)
{
    switch (stat) {
    case GS_STAT_MEAN:
        s->n = s->n + 1;
        s->a = s->a + v;
        break;
    case GS_STAT_STD:
    case GS_STAT_VAR: {
        const unsigned long long n = s->n + 1;
        const double d = v - s->a, mean = s->a + d / (double)n;
        s->n = n;
        s->a = mean;
        s->b = s->b + d * (v - mean);
        break;
    }
    default: { /* min, max */
        if (v != v) {
            s->nan = 1;
        } else {
            const double cur = s->a;
            if (s->n == 0 || (stat == GS_STAT_MIN ? v < cur : v > cur))
                s->a = v;
            s->n = s->n + 1;
        }
    }
    }
}

/* Add one value to a bin in shared (BLOCK) or global memory. */
template <bool BLOCK> __device__ __forceinline__ void add_value(bin_state *s, int stat, double v, int *error,
                                                               unsigned long long timeout)
{
    if (stat == GS_STAT_COUNT) {
        atomicAdd(&s->n, 1ull);
    } else if (stat == GS_STAT_SUM) {
        atomicAdd(&s->a, v);
    } else if (BLOCK ? gpusync::mutex_lock_block(&s->lock, error, timeout)
                     : gpusync::mutex_lock(&s->lock, error, timeout)) {
        update_locked(s, stat, v);
        if (BLOCK)
            gpusync::mutex_unlock_block(&s->lock);
        else
            gpusync::mutex_unlock(&s->lock);
    }
}

/* Fold state s into d (plain memory: the caller owns d). */
__device__ __forceinline__ void combine(bin_state &d, const bin_state &s, int stat)
{
    const unsigned long long n = d.n + s.n;
    switch (stat) {
    case GS_STAT_COUNT: break;
    case GS_STAT_SUM:
    case GS_STAT_MEAN: d.a += s.a; break;
    case GS_STAT_STD:
    case GS_STAT_VAR:
        if (d.n == 0) {
            d.a = s.a;
            d.b = s.b;
        } else if (s.n > 0) { /* Chan et al.: combine (n, mean, M2) pairs */
            const double delta = s.a - d.a;
            d.b += s.b + delta * delta * ((double)d.n * (double)s.n / (double)n);
            d.a += delta * ((double)s.n / (double)n);
        }
        break;
    default:
        if (s.n > 0 && (d.n == 0 || (stat == GS_STAT_MIN ? s.a < d.a : s.a > d.a)))
            d.a = s.a;
    }
    d.n = n;
    d.nan |= s.nan;
}

/* Merge a block's state of one bin into the global state. */
__device__ __forceinline__ void merge(bin_state *g, const bin_state &s, int stat, int *error,
                                      unsigned long long timeout)
{
    if (stat == GS_STAT_COUNT) {
        if (s.n)
            atomicAdd(&g->n, s.n);
        return;
    }
    if (stat == GS_STAT_SUM) {
        if (s.a != 0.0 || s.a != s.a) /* nonzero or NaN */
            atomicAdd(&g->a, s.a);
        return;
    }
    if ((s.n == 0 && !s.nan) || !gpusync::mutex_lock(&g->lock, error, timeout))
        return;
    volatile bin_state *v = g;
    bin_state d;
    d.n = v->n;
    d.a = v->a;
    d.b = v->b;
    d.nan = v->nan;
    combine(d, s, stat);
    v->n = d.n;
    v->a = d.a;
    v->b = d.b;
    v->nan = d.nan;
    gpusync::mutex_unlock(&g->lock);
}

template <class T> __device__ __forceinline__ double ld(const void *p, int64_t i) { return (double)__ldg((const T *)p + i); }

/* Every bin's state in shared memory, `replicas` copies (warp w updates
 * copy w % replicas, so fewer warps contend for one bin's lock). */
template <class T> __global__ void __launch_bounds__(GS_BINSTAT_THREADS) binstat_shared_kernel(binstat_args r)
{
    extern __shared__ double smem_d[];
    double *e = smem_d;                                                       /* nbins + 1 edges */
    bin_state *st = reinterpret_cast<bin_state *>(e + ((r.nbins + 2) & ~1)); /* 16-byte aligned */
    const int nst = r.nbins * r.replicas;
    for (int i = threadIdx.x; i <= r.nbins; i += blockDim.x)
        e[i] = r.edges[i];
    for (int i = threadIdx.x; i < nst; i += blockDim.x)
        st[i] = bin_state{0, 0.0, 0.0, 0, 0};
    __syncthreads();
    bin_state *mine = st + (int)((threadIdx.x >> 5) % r.replicas) * r.nbins;
    const int lane = threadIdx.x & 31;
    const int64_t nth = (int64_t)gridDim.x * blockDim.x;
    /* warp-uniform trips, so the whole warp meets in __match_any_sync */
    for (int64_t base = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31); base < r.n; base += nth) {
        const int64_t i = base + lane;
        const bool ok = i < r.n;
        const int k = ok ? bin_number(e, r.nbins, r.top, ld<T>(r.x, i * r.sx)) : 0;
        if (ok && r.binnumber)
            r.binnumber[i] = k;
        const bool in = ok && k >= 1 && k <= r.nbins;
        const double v = in && r.stat != GS_STAT_COUNT ? ld<T>(r.v, i * r.sv) : 0.0;
        /* lanes with the same bin take its lock in turns (rank 0, 1, ...):
         * no lane of this warp ever spins on a lock its own warp holds */
        const unsigned peers = __match_any_sync(0xffffffffu, in ? k : -1 - lane);
        const int rank = __popc(peers & ((1u << lane) - 1));
        const int rounds = gpusync::warp_reduce(in ? rank + 1 : 0, gpusync::op_max());
        for (int round = 0; round < rounds; round++) {
            if (in && rank == round)
                add_value<true>(&mine[k - 1], r.stat, v, r.error, r.timeout_ns);
            __syncwarp();
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < r.nbins; i += blockDim.x) {
        bin_state acc = st[i];
        for (int c = 1; c < r.replicas; c++)
            combine(acc, st[c * r.nbins + i], r.stat);
        merge(&r.g[i], acc, r.stat, r.error, r.timeout_ns);
    }
}

template <class T> __global__ void __launch_bounds__(GS_BINSTAT_THREADS) binstat_global_kernel(binstat_args r)
{
    const int64_t nth = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < r.n; i += nth) {
        const int k = bin_number(r.edges, r.nbins, r.top, ld<T>(r.x, i * r.sx));
        if (r.binnumber)
            r.binnumber[i] = k;
        if (k >= 1 && k <= r.nbins)
            add_value<false>(&r.g[k - 1], r.stat, r.stat == GS_STAT_COUNT ? 0.0 : ld<T>(r.v, i * r.sv), r.error,
                             r.timeout_ns);
    }
}

__global__ void binstat_result_kernel(const bin_state *g, int nbins, int stat, double *out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nbins)
        return;
    const bin_state s = g[i];
    const double n = (double)s.n, nan = __longlong_as_double(0x7ff8000000000000ll);
    double r;
    switch (stat) {
    case GS_STAT_COUNT: r = n; break;
    case GS_STAT_SUM: r = s.a; break;
    case GS_STAT_MEAN: r = s.n ? s.a / n : nan; break;
    case GS_STAT_STD: r = s.n ? sqrt(s.b / n) : nan; break;
    case GS_STAT_VAR: r = s.n ? s.b / n : nan; break;
    case GS_STAT_MIN: r = s.n ? s.a : nan; break;         /* SciPy's min skips NaN */
    default: r = (s.nan || !s.n) ? nan : s.a; break;      /* ...its max does not */
    }
    out[i] = r;
}

size_t shared_bytes(int nbins, int replicas)
{
    return (size_t)((nbins + 2) & ~1) * 8 + (size_t)nbins * replicas * sizeof(bin_state);
}

/* Copies of the bins one block keeps: a power of two up to one per warp
 * within GS_BINSTAT_SMEM_BUDGET; 0 when not even one fits. */
int replicas_for(int64_t nbins, int64_t optin)
{
    if (nbins > GS_BINSTAT_SMEM_BINS)
        return 0;
    int r = GS_BINSTAT_THREADS / 32;
    while (r > 1 && (int64_t)shared_bytes((int)nbins, r) > GS_BINSTAT_SMEM_BUDGET)
        r /= 2;
    return (int64_t)shared_bytes((int)nbins, r) <= optin ? r : 0;
}

} // namespace

extern "C" gs_status gs_cuda_binned_statistic(const gs_array *x, const gs_array *values, const double *edges,
                                              int64_t nbins, double top, int statistic, gs_array *result,
                                              gs_array *binnumber, gs_array *nonfinite, gs_strategy strategy,
                                              void *stream, gs_strategy *used)
{
    const int on_host = x->device == GS_HOST;
    if (statistic < 0 || statistic >= GS_STAT_KINDS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown statistic %d", statistic);
    if (nbins < 1 || nbins > 0x3fffffff)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "nbins must be in 1..2^30");
    if (values->length != x->length || values->dtype != x->dtype ||
        (x->dtype != GS_FLOAT32 && x->dtype != GS_FLOAT64))
        return gs_fail(GS_ERR_TYPE, "x and values must have one length and one dtype, float32 or float64");
    if (values->device != x->device || result->device != x->device || (binnumber && binnumber->device != x->device))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "all arrays must be on the host or all on device %d", x->device);
    if (result->length != nbins || result->stride != 1 || result->dtype != GS_FLOAT64 ||
        (binnumber && (binnumber->length != x->length || binnumber->stride != 1 || binnumber->dtype != GS_INT64)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "result must be nbins float64, binnumber n int64, both contiguous");
    if (on_host && (x->stride != 1 || values->stride != 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "host inputs must be contiguous");

    gs_cuda_call call(x->device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const int ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const int64_t nedges1 = nbins + 1;
    if (strategy == GS_STRATEGY_PRIVATIZED ||
        (strategy == GS_STRATEGY_AUTO && gs_cuda_binstat_priv_fits(1, &nedges1, statistic, x->dtype, dev))) {
        *used = GS_STRATEGY_PRIVATIZED;
        return gs_cuda_binstat_priv(x, 1, edges, &nedges1, &top, values, statistic, result, binnumber, nonfinite, dev,
                                    stream);
    }
    const int replicas = replicas_for(nbins, dev->shared_memory_per_block_optin);
    const size_t smem = shared_bytes((int)nbins, replicas > 0 ? replicas : 1);
    const int fits = replicas > 0;
    if (strategy == GS_STRATEGY_AUTO)
        strategy = fits ? GS_STRATEGY_SHARED : GS_STRATEGY_GLOBAL;
    if (strategy != GS_STRATEGY_SHARED && strategy != GS_STRATEGY_GLOBAL)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic strategies are 'privatized', 'shared', 'global' and 'auto'; got '%s'",
                       gs_strategy_name(strategy));
    if (strategy == GS_STRATEGY_SHARED && !fits)
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "strategy 'shared' keeps at most %d bins per block; got %lld (use 'global' or 'auto')",
                       GS_BINSTAT_SMEM_BINS, (long long)nbins);
    *used = strategy;
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] binned_statistic n=%lld nbins=%lld stat=%d strategy=%s device=%d\n",
                (long long)x->length, (long long)nbins, statistic, gs_strategy_name(strategy), ord);

    bin_state *g = NULL;
    double *d_edges = NULL, *d_res = NULL;
    int *d_err = NULL;
    binstat_args r;
    memset(&r, 0, sizeof r);
    const void *kernel = strategy == GS_STRATEGY_SHARED
                             ? (x->dtype == GS_FLOAT32 ? (const void *)binstat_shared_kernel<float>
                                                       : (const void *)binstat_shared_kernel<double>)
                             : (x->dtype == GS_FLOAT32 ? (const void *)binstat_global_kernel<float>
                                                       : (const void *)binstat_global_kernel<double>);
    const size_t dyn = strategy == GS_STRATEGY_SHARED ? smem : 0;
    int64_t resident = 0;
    if (dyn > 48 * 1024 && (st = gs_cuda_allow_smem(kernel, dev)) != GS_OK)
        return st;
    st = gs_cuda_resident_blocks(kernel, GS_BINSTAT_THREADS, dyn, dev, &resident);
    if (st != GS_OK)
        return st;

    GS_CUDA_GOTO(gs_malloc_async((void **)&g, (size_t)nbins * sizeof(bin_state) + 16, s));
    d_err = (int *)((char *)g + (size_t)nbins * sizeof(bin_state));
    GS_CUDA_GOTO(cudaMemsetAsync(g, 0, (size_t)nbins * sizeof(bin_state) + 16, s));
    r.edges = (const double *)gs_cuda_constants(edges, (size_t)(nbins + 1) * 8, ord, s);
    if (!r.edges) {
        GS_CUDA_GOTO(gs_malloc_async((void **)&d_edges, (size_t)(nbins + 1) * 8, s));
        GS_CUDA_GOTO(cudaMemcpyAsync(d_edges, edges, (size_t)(nbins + 1) * 8, cudaMemcpyHostToDevice, s));
        r.edges = d_edges;
    }
    if (on_host)
        GS_CUDA_GOTO(gs_malloc_async((void **)&d_res, (size_t)nbins * 8, s));
    r.nbins = (int)nbins;
    r.top = top;
    r.stat = statistic;
    r.replicas = replicas > 0 ? replicas : 1;
    r.g = g;
    r.error = d_err;
    r.timeout_ns = (unsigned long long)gs_spin_timeout_ns();
    {
        /* host input, statistic 'count': the values are never read (x stands in) */
        gs_staged arr[3] = {gs_staged(x), gs_staged(on_host && statistic == GS_STAT_COUNT ? NULL : values),
                            gs_staged(binnumber, 1)};
        GS_GOTO(gs_cuda_staged(arr, 3, x->length, GS_STAGE_BYTES / (int64_t)gs_dtype_size(x->dtype), s,
                               [&](int64_t, int64_t cnt) {
                                   r.x = arr[0].ptr;
                                   r.sx = arr[0].stride;
                                   r.v = arr[1].ptr ? arr[1].ptr : arr[0].ptr;
                                   r.sv = arr[1].ptr ? arr[1].stride : arr[0].stride;
                                   r.binnumber = (int64_t *)arr[2].ptr;
                                   r.n = cnt;
                                   const int64_t work = (cnt + GS_BINSTAT_THREADS - 1) / GS_BINSTAT_THREADS;
                                   const int64_t grid = resident < work ? resident : work;
                                   void *args[] = {&r};
                                   GS_CUDA_CHECK(cudaLaunchKernel(kernel, dim3((unsigned)grid),
                                                                  dim3(GS_BINSTAT_THREADS), args, dyn, s));
                                   return GS_OK;
                               }));
    }
    binstat_result_kernel<<<(unsigned)((nbins + 255) / 256), 256, 0, s>>>(g, (int)nbins, statistic,
                                                                          on_host ? d_res : (double *)result->data);
    GS_CUDA_GOTO(cudaGetLastError());
    if (on_host)
        GS_CUDA_GOTO(cudaMemcpyAsync(result->data, d_res, (size_t)nbins * 8, cudaMemcpyDeviceToHost, s));
    st = gs_cuda_check_deadlock(d_err, s, "binned_statistic", -1, "a thread", "a bin's lock");
fail:
    if (d_res)
        cudaFreeAsync(d_res, s);
    if (d_edges)
        cudaFreeAsync(d_edges, s);
    if (g)
        cudaFreeAsync(g, s);
    if (st != GS_OK)
        cudaStreamSynchronize(s);
    return st;
}

int gs_binstat_refs(gs_kernel_ref *r)
{
    r[0] = {"binned_statistic:shared", (const void *)binstat_shared_kernel<double>, GS_BINSTAT_THREADS,
            shared_bytes(100, replicas_for(100, 1 << 30))};
    r[1] = {"binned_statistic:global", (const void *)binstat_global_kernel<double>, GS_BINSTAT_THREADS, 0};
    return 2;
}
