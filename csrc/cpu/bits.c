/* packbits and count_nonzero (CPU backend): threads over whole output bytes
 * (8 elements each), the same predicate as csrc/cuda/bits.cu. */
#include "binning.h" /* gs_half_to_float */
#include "parallel.h"

#include <stdatomic.h>
#include <string.h>

typedef struct {
    const void *x;
    int64_t n, stride;
    gs_dtype dt;
    int has_thr, little;
    double thr;
    uint8_t *out;
    _Atomic int64_t count;
} bctx;

static int pred(const bctx *c, int64_t i)
{
    const int64_t k = i * c->stride;
    double v;
    switch (c->dt) {
    case GS_BOOL:
    case GS_UINT8: v = ((const uint8_t *)c->x)[k]; break;
    case GS_INT8: v = ((const int8_t *)c->x)[k]; break;
    case GS_INT16: v = ((const int16_t *)c->x)[k]; break;
    case GS_UINT16: v = ((const uint16_t *)c->x)[k]; break;
    case GS_INT32: v = ((const int32_t *)c->x)[k]; break;
    case GS_UINT32: v = ((const uint32_t *)c->x)[k]; break;
    case GS_INT64:
        if (!c->has_thr)
            return ((const int64_t *)c->x)[k] != 0;
        v = (double)((const int64_t *)c->x)[k];
        break;
    case GS_UINT64:
        if (!c->has_thr)
            return ((const uint64_t *)c->x)[k] != 0;
        v = (double)((const uint64_t *)c->x)[k];
        break;
    case GS_FLOAT16:
        if (!c->has_thr)
            return (((const uint16_t *)c->x)[k] & 0x7fffu) != 0;
        v = gs_half_to_float(((const uint16_t *)c->x)[k]);
        break;
    case GS_FLOAT32: v = ((const float *)c->x)[k]; break;
    default: v = ((const double *)c->x)[k]; break;
    }
    return c->has_thr ? v > c->thr : v != 0;
}

static void slice(void *ctx, int tid, int64_t b0, int64_t b1)
{
    (void)tid;
    bctx *c = (bctx *)ctx;
    int64_t cnt = 0;
    for (int64_t b = b0; b < b1; b++) {
        unsigned byte = 0;
        const int64_t e0 = b * 8, e1 = e0 + 8 < c->n ? e0 + 8 : c->n;
        for (int64_t i = e0; i < e1; i++) {
            const unsigned p = (unsigned)pred(c, i);
            cnt += p;
            byte |= p << (c->little ? (int)(i - e0) : 7 - (int)(i - e0));
        }
        if (c->out)
            c->out[b] = (uint8_t)byte;
    }
    atomic_fetch_add(&c->count, cnt);
}

static gs_status run(const gs_array *a, const double *thr, int little, gs_array *out, int count)
{
    const int64_t need = count ? 1 : (a->length + 7) / 8;
    if (a->device != GS_HOST || out->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "the cpu backend takes host arrays");
    if (out->length != need || out->stride != 1 || out->dtype != (count ? GS_INT64 : GS_UINT8))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "out must be %lld contiguous %s", (long long)need,
                       count ? "int64" : "uint8");
    bctx c;
    memset(&c, 0, sizeof c);
    c.x = a->data;
    c.n = a->length;
    c.stride = a->stride;
    c.dt = a->dtype;
    c.has_thr = thr != NULL;
    c.thr = thr ? *thr : 0;
    c.little = little;
    c.out = count ? NULL : (uint8_t *)out->data;
    atomic_init(&c.count, 0);
    const int64_t bytes = (a->length + 7) / 8;
    if (bytes > 0)
        gs_cpu_parallel_for(bytes, gs_cpu_threads_for(a->length), slice, &c);
    if (count)
        *(int64_t *)out->data = atomic_load(&c.count);
    return GS_OK;
}

gs_status gs_cpu_packbits(const gs_array *a, const double *thr, int little, gs_array *out, void *stream)
{
    (void)stream;
    return run(a, thr, little, out, 0);
}

gs_status gs_cpu_count_nonzero(const gs_array *a, const double *thr, gs_array *out, void *stream)
{
    (void)stream;
    return run(a, thr, 0, out, 1);
}
