/* CPU backend: the gs_backend_ops table and its small entry points. */
#include "binning.h"

#include <math.h>
#include <string.h>

gs_status gs_cpu_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *bins, gs_array *out,
                           gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cpu_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy, int deterministic,
                        void *stream, gs_strategy *used);
gs_status gs_cpu_binned_statistic(const gs_array *x, const gs_array *values, const double *edges, int64_t nbins,
                                  double top, int statistic, gs_array *result, gs_array *binnumber,
                                  gs_strategy strategy, void *stream, gs_strategy *used);
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
static int cpu_device_count(void) { return 0; }
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

#define MINMAX_LOOP(T, LESS)                                                                                  \
    do {                                                                                                      \
        const T *p = (const T *)x->data;                                                                      \
        T lo = p[0], hi = p[0];                                                                               \
        for (int64_t i = 1; i < x->length; i++) {                                                             \
            T v = p[i * x->stride];                                                                           \
            if (LESS(v, lo))                                                                                  \
                lo = v;                                                                                       \
            if (LESS(hi, v))                                                                                  \
                hi = v;                                                                                       \
        }                                                                                                     \
        memcpy(out2, &lo, sizeof lo);                                                                         \
        memcpy((char *)out2 + sizeof lo, &hi, sizeof hi);                                                     \
    } while (0)
#define INT_LESS(a, b) ((a) < (b))
/* NaN wins, as in NumPy's min/max: once an extreme is NaN it stays NaN. */
#define NAN_LESS(a, b) ((a) < (b) || ((a) != (a) && (b) == (b)))

static gs_status cpu_minmax(const gs_array *x, void *out2, void *stream)
{
    (void)stream;
    if (x->length <= 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "zero-size array has no minimum or maximum");
    switch (x->dtype) {
    case GS_BOOL:
    case GS_UINT8: MINMAX_LOOP(uint8_t, INT_LESS); break;
    case GS_INT8: MINMAX_LOOP(int8_t, INT_LESS); break;
    case GS_INT16: MINMAX_LOOP(int16_t, INT_LESS); break;
    case GS_UINT16: MINMAX_LOOP(uint16_t, INT_LESS); break;
    case GS_INT32: MINMAX_LOOP(int32_t, INT_LESS); break;
    case GS_UINT32: MINMAX_LOOP(uint32_t, INT_LESS); break;
    case GS_INT64: MINMAX_LOOP(int64_t, INT_LESS); break;
    case GS_UINT64: MINMAX_LOOP(uint64_t, INT_LESS); break;
    case GS_FLOAT32: MINMAX_LOOP(float, NAN_LESS); break;
    case GS_FLOAT64: MINMAX_LOOP(double, NAN_LESS); break;
    default: return gs_fail(GS_ERR_TYPE, "minmax: unsupported dtype");
    }
    return GS_OK;
}

static gs_status cpu_uniform_edges(const gs_hist_bins *bins, gs_array *out, void *stream)
{
    (void)stream;
    gs_binner b;
    gs_binner_init(&b, bins, NULL);
    for (int64_t k = 0; k <= bins->nbins; k++) {
        double e = gs_uniform_edge(&b, k);
        if (out->dtype == GS_FLOAT32)
            ((float *)out->data)[k * out->stride] = (float)e;
        else
            ((double *)out->data)[k * out->stride] = e;
    }
    return GS_OK;
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
                             const gs_array *weights, gs_array *out, void *stream);

gs_status gs_cpu_unpackbits(const gs_array *a, int little, gs_array *out, void *stream);

static const gs_backend_ops cpu_ops = {
    "cpu",
    cpu_available,
    cpu_device_count,
    cpu_device_info,
    cpu_pointer_device,
    gs_cpu_histogram,
    cpu_minmax,
    cpu_uniform_edges,
    gs_cpu_reduce,
    gs_cpu_binned_statistic,
    gs_cpu_counter,
    gs_cpu_test_deadlock,
    gs_cpu_packbits,
    gs_cpu_count_nonzero,
    cpu_kernel_names,
    cpu_occupancy,
    cpu_divergence,
    cpu_self_test,
    gs_cpu_barrier_benchmark,
    gs_cpu_cumsum,
    cpu_stream_wait,
    cpu_empty_cache,
    .reduce_axis = gs_cpu_reduce_axis, /* issue 15 */
    .histogramdd = gs_cpu_histogramdd, /* issue 15 */
    .unpackbits = gs_cpu_unpackbits,   /* issue 15 */
};

const gs_backend_ops *gs_cpu_backend(void) { return &cpu_ops; }
