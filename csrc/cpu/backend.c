/* CPU backend: the gs_backend_ops table and its small entry points; the demo table. */
#include "binning.h"
#include "convert.h"
#include "demos.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

gs_status gs_cpu_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *bins, gs_array *out,
                           gs_array *edges, gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cpu_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy, int deterministic,
                        void *stream, gs_strategy *used);
gs_status gs_cpu_binned_statistic(const gs_array *x, const gs_array *values, const double *edges, int64_t nbins,
                                  double top, int statistic, gs_array *result, gs_array *binnumber,
                                  gs_array *nonfinite, gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cpu_counter(int kind, int64_t blocks, int threads, int64_t *value, double *ms);
gs_status gs_cpu_test_deadlock(int64_t timeout_ns);
gs_status gs_cpu_packbits(const gs_array *a, const double *thr, int little, gs_array *out, void *stream);
gs_status gs_cpu_count_nonzero(const gs_array *a, const double *thr, gs_array *out, void *stream);

static gs_status cpu_kernel_names(char *buf, size_t len)
{
    (void)buf, (void)len;
    return gs_fail(GS_ERR_NO_CUDA, "occupancy describes CUDA kernels: it needs the cuda backend");
}
static gs_status cpu_occupancy(const char *name, int block, gs_occupancy *o)
{
    (void)name, (void)block, (void)o;
    return gs_fail(GS_ERR_NO_CUDA, "occupancy describes CUDA kernels: it needs the cuda backend");
}
static gs_status cpu_divergence(int kind, int64_t n, int block, int iters, double *ms)
{
    (void)kind, (void)n, (void)block, (void)iters, (void)ms;
    return gs_fail(GS_ERR_NO_CUDA, "the divergence demo runs warps: it needs the cuda backend");
}

static int cpu_available(void) { return 1; }
static int cpu_pointer_device(const void *p)
{
    (void)p;
    return GS_HOST;
}

static gs_status cpu_device_info(int ordinal, gs_device_info *info)
{
    (void)info;
    return gs_fail(GS_ERR_NO_CUDA, "the cpu backend has no device %d", ordinal);
}

gs_status gs_cpu_minmax(const gs_array *x, void *out2, void *stream); /* minmax.c */

/* minmax_many and uniform_edges serve device inputs (the host path uses
 * NumPy): the CPU backend never gets them. */
static gs_status cpu_minmax_many(const gs_array *xs, int k, void *out, void *stream)
{
    (void)xs, (void)k, (void)out, (void)stream;
    return gs_fail(GS_ERR_INVALID_ARGUMENT, "minmax of host arrays is NumPy's: the cpu backend has none");
}

/* bincount's first count (ops->bincount_first) on the calling thread: the
 * CUDA backend's contract, for device inputs; host bincounts take the C fast
 * path or the general one. */
static gs_status cpu_bincount_first(const gs_array *x, gs_array *out, int64_t *top, int64_t *bottom, int *negative,
                                    void *stream)
{
    (void)stream;
    const gs_dtype dt = x->dtype;
    const gs_status st = gs_bincount_first_check(x, out, 1);
    if (st != GS_OK)
        return st;
    int64_t *h = (int64_t *)out->data, hi = -1, lo = INT64_MAX;
    const int64_t nb = out->length;
    int neg = 0;
    memset(h, 0, (size_t)nb * sizeof *h);
    for (int64_t i = 0; i < x->length; i++) {
        const int64_t v = gs_int_at(x->data, dt, i * x->stride);
        neg |= v < 0;
        hi = v > hi ? v : hi;
        lo = v < lo ? v : lo;
        if (v >= 0 && v < nb)
            h[v]++;
    }
    *negative = neg;
    *top = neg ? -1 : hi;
    *bottom = neg || x->length == 0 ? -1 : lo;
    return GS_OK;
}

static gs_status cpu_uniform_edges(const gs_hist_bins *bins, gs_array *out, void *stream)
{
    (void)bins, (void)out, (void)stream;
    return gs_fail(GS_ERR_INVALID_ARGUMENT, "uniform_edges of host arrays is NumPy's: the cpu backend has none");
}

static gs_status cpu_self_test(int which, int64_t *bad)
{
    (void)which, (void)bad;
    return gs_fail(GS_ERR_NO_CUDA, "the self tests exercise CUDA kernels");
}

gs_status gs_cpu_barrier_benchmark(gs_strategy s, int64_t blocks, int threads, int64_t rounds, int skip_block,
                                   gs_barrier_result *res);
gs_status gs_cpu_cumsum(const gs_array *a, gs_array *out, gs_strategy strategy, void *stream, gs_strategy *used);

static gs_status cpu_stream_wait(int device, void *consumer, void *producer)
{
    (void)device, (void)consumer, (void)producer;
    return GS_OK; /* CPU work is synchronous: nothing to order */
}

static gs_status cpu_empty_cache(void) { return GS_OK; }

gs_status gs_cpu_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                             gs_array *out, void *stream);
gs_status gs_cpu_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                             const gs_array *weights, gs_array *out, gs_array *edges_out, void *stream);

gs_status gs_cpu_unpackbits(const gs_array *a, int little, gs_array *out, void *stream);
gs_status gs_cpu_binned_statistic_dd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                     const double *tops, const gs_array *values, int statistic, gs_array *result,
                                     gs_array *binnumber, gs_array *nonfinite, void *stream);

static const gs_backend_ops cpu_ops = {
    .name = "cpu",
    .available = cpu_available,
    .device_info = cpu_device_info,
    .pointer_device = cpu_pointer_device,
    .histogram = gs_cpu_histogram,
    .minmax = gs_cpu_minmax,
    .uniform_edges = cpu_uniform_edges,
    .bincount_first = cpu_bincount_first,
    .reduce = gs_cpu_reduce,
    .binned_statistic = gs_cpu_binned_statistic,
    .packbits = gs_cpu_packbits,
    .count_nonzero = gs_cpu_count_nonzero,
    .kernel_names = cpu_kernel_names,
    .occupancy = cpu_occupancy,
    .barrier_benchmark = gs_cpu_barrier_benchmark,
    .cumsum = gs_cpu_cumsum,
    .stream_wait = cpu_stream_wait,
    .empty_cache = cpu_empty_cache,
    .reduce_axis = gs_cpu_reduce_axis, /* issue 15 */
    .histogramdd = gs_cpu_histogramdd, /* issue 15 */
    .unpackbits = gs_cpu_unpackbits,   /* issue 15 */
    .binned_statistic_dd = gs_cpu_binned_statistic_dd, /* issues 14, 15: csrc/cpu/binstat_dd.c */
    .minmax_many = cpu_minmax_many,
};

const gs_backend_ops *gs_cpu_backend(void) { return &cpu_ops; }

static const gs_demo_ops cpu_demos = {
    .name = "cpu",
    .counter = gs_cpu_counter,
    .test_deadlock = gs_cpu_test_deadlock,
    .divergence = cpu_divergence,
    .self_test = cpu_self_test,
};

const gs_demo_ops *gs_cpu_demos(void) { return &cpu_demos; }
