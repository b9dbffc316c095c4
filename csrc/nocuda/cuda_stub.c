/* Linked instead of csrc/cuda/ when the package is built without nvcc:
 * the CUDA backend exists but reports that it cannot run. */
#include "gpusync/gpusync.h"
#include "../common/demos.h"

#define NO_CUDA gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)")

static int stub_available(void)
{
    NO_CUDA;
    return 0;
}
static int stub_pointer_device(const void *p)
{
    (void)p;
    return GS_HOST;
}
static gs_status stub_device_info(int ordinal, gs_device_info *info)
{
    (void)ordinal, (void)info;
    return NO_CUDA;
}
static gs_status stub_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *b, gs_array *out,
                                gs_array *edges, gs_strategy s, void *stream, gs_strategy *used)
{
    (void)x, (void)w, (void)b, (void)out, (void)edges, (void)s, (void)stream, (void)used;
    return NO_CUDA;
}
static gs_status stub_minmax(const gs_array *x, void *out2, void *stream)
{
    (void)x, (void)out2, (void)stream;
    return NO_CUDA;
}
static gs_status stub_minmax_many(const gs_array *xs, int k, void *out, void *stream)
{
    (void)xs, (void)k, (void)out, (void)stream;
    return NO_CUDA;
}
static gs_status stub_uniform_edges(const gs_hist_bins *b, gs_array *out, void *stream)
{
    (void)b, (void)out, (void)stream;
    return NO_CUDA;
}
static gs_status stub_bincount_first(const gs_array *x, gs_array *out, int64_t *top, int64_t *bottom, int *negative,
                                     void *stream)
{
    (void)x, (void)out, (void)top, (void)bottom, (void)negative, (void)stream;
    return NO_CUDA;
}
static gs_status stub_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy s, int det,
                             void *stream, gs_strategy *used)
{
    (void)a, (void)b, (void)out, (void)s, (void)det, (void)stream, (void)used;
    return NO_CUDA;
}
static gs_status stub_binned_statistic(const gs_array *x, const gs_array *v, const double *e, int64_t nb, double top,
                                       int stat, gs_array *res, gs_array *bn, gs_array *nf, gs_strategy s,
                                       void *stream, gs_strategy *used)
{
    (void)x, (void)v, (void)e, (void)nb, (void)top, (void)stat, (void)res, (void)bn, (void)nf, (void)s, (void)stream,
        (void)used;
    return NO_CUDA;
}
static gs_status stub_counter(int kind, int64_t blocks, int threads, int64_t *value, double *ms)
{
    (void)kind, (void)blocks, (void)threads, (void)value, (void)ms;
    return NO_CUDA;
}
static gs_status stub_test_deadlock(int64_t timeout_ns)
{
    (void)timeout_ns;
    return NO_CUDA;
}

static gs_status stub_packbits(const gs_array *a, const double *t, int little, gs_array *out, void *stream)
{
    (void)a, (void)t, (void)little, (void)out, (void)stream;
    return NO_CUDA;
}
static gs_status stub_count_nonzero(const gs_array *a, const double *t, gs_array *out, void *stream)
{
    (void)a, (void)t, (void)out, (void)stream;
    return NO_CUDA;
}
static gs_status stub_kernel_names(char *buf, size_t len)
{
    (void)buf, (void)len;
    return NO_CUDA;
}
static gs_status stub_occupancy(const char *name, int block, gs_occupancy *o)
{
    (void)name, (void)block, (void)o;
    return NO_CUDA;
}
static gs_status stub_divergence(int kind, int64_t n, int block, int iters, double *ms)
{
    (void)kind, (void)n, (void)block, (void)iters, (void)ms;
    return NO_CUDA;
}

static gs_status stub_self_test(int which, int64_t *bad)
{
    (void)which, (void)bad;
    return NO_CUDA;
}

static gs_status stub_barrier_benchmark(gs_strategy s, int64_t b, int t, int64_t r, int skip, gs_barrier_result *o)
{
    (void)s, (void)b, (void)t, (void)r, (void)skip, (void)o;
    return NO_CUDA;
}

static gs_status stub_cumsum(const gs_array *a, gs_array *out, gs_strategy s, void *stream, gs_strategy *used)
{
    (void)a, (void)out, (void)s, (void)stream, (void)used;
    return NO_CUDA;
}

static gs_status stub_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                                  gs_array *out, void *stream)
{
    (void)a, (void)shape, (void)strides, (void)op, (void)out, (void)stream;
    return NO_CUDA;
}

static gs_status stub_histogramdd(const gs_array *c, int ndim, const double *e, const int64_t *ne, const gs_array *w,
                                  gs_array *out, gs_array *eout, void *stream)
{
    (void)c, (void)ndim, (void)e, (void)ne, (void)w, (void)out, (void)eout, (void)stream;
    return NO_CUDA;
}

static gs_status stub_unpackbits(const gs_array *a, int little, gs_array *out, void *stream)
{
    (void)a, (void)little, (void)out, (void)stream;
    return NO_CUDA;
}

static gs_status stub_stream_wait(int device, void *consumer, void *producer)
{
    (void)device, (void)consumer, (void)producer;
    return gs_fail(GS_ERR_NO_CUDA, "a device array or stream= needs the cuda backend, and gpusync was built "
                                   "without CUDA (no nvcc at build time): rebuild with nvcc on PATH or CUDA_HOME set");
}
static gs_status stub_empty_cache(void) { return GS_OK; /* nothing cached */ }
static gs_status stub_binned_statistic_dd(const gs_array *c, int nd, const double *e, const int64_t *ne,
                                          const double *tops, const gs_array *v, int stat, gs_array *res,
                                          gs_array *bn, gs_array *nf, void *stream)
{
    (void)c, (void)nd, (void)e, (void)ne, (void)tops, (void)v, (void)stat, (void)res, (void)bn, (void)nf, (void)stream;
    return NO_CUDA;
}

static const gs_backend_ops stub_ops = {
    .name = "cuda",
    .available = stub_available,
    .device_info = stub_device_info,
    .pointer_device = stub_pointer_device,
    .histogram = stub_histogram,
    .minmax = stub_minmax,
    .uniform_edges = stub_uniform_edges,
    .bincount_first = stub_bincount_first,
    .reduce = stub_reduce,
    .binned_statistic = stub_binned_statistic,
    .packbits = stub_packbits,
    .count_nonzero = stub_count_nonzero,
    .kernel_names = stub_kernel_names,
    .occupancy = stub_occupancy,
    .barrier_benchmark = stub_barrier_benchmark,
    .cumsum = stub_cumsum,
    .stream_wait = stub_stream_wait,
    .empty_cache = stub_empty_cache,
    .reduce_axis = stub_reduce_axis, /* issue 15 */
    .histogramdd = stub_histogramdd, /* issue 15 */
    .unpackbits = stub_unpackbits,   /* issue 15 */
    .binned_statistic_dd = stub_binned_statistic_dd, /* issues 14, 15 */
    .minmax_many = stub_minmax_many,
};

const gs_backend_ops *gs_cuda_backend(void) { return &stub_ops; }

static const gs_demo_ops stub_demos = {
    .name = "cuda",
    .counter = stub_counter,
    .test_deadlock = stub_test_deadlock,
    .divergence = stub_divergence,
    .self_test = stub_self_test,
};

const gs_demo_ops *gs_cuda_demos(void) { return &stub_demos; }
