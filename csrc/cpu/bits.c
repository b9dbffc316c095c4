/* packbits and count_nonzero (CPU backend): threads over whole output bytes
 * (8 elements each), the same predicate as csrc/cuda/bits.cu. */
#include "binning.h" /* gs_half_to_float */
#include "gpusync/tuning.h"
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

/* Elements [e0, e1) of one dtype: their count of true predicates, and (when
 * c->out) the bytes they pack into.  One loop per dtype and predicate, the
 * contiguous count loop the one the compiler vectorizes. */
#define BITS(T, PRED)                                                                                         \
    do {                                                                                                      \
        const T *p = (const T *)c->x;                                                                         \
        const int64_t s = c->stride;                                                                          \
        if (!c->out) {                                                                                        \
            if (s == 1)                                                                                       \
                for (int64_t i = e0; i < e1; i++)                                                             \
                    cnt += (int64_t)(PRED(p[i]));                                                             \
            else                                                                                              \
                for (int64_t i = e0; i < e1; i++)                                                             \
                    cnt += (int64_t)(PRED(p[i * s]));                                                         \
            break;                                                                                            \
        }                                                                                                     \
        for (int64_t b = e0 / 8; b * 8 < e1; b++) {                                                           \
            const int64_t lo = b * 8, hi = lo + 8 < c->n ? lo + 8 : c->n;                                     \
            unsigned byte = 0;                                                                                \
            if (hi - lo == 8 && s == 1) {                                                                     \
                for (int k = 0; k < 8; k++)                                                                   \
                    byte |= (unsigned)(PRED(p[lo + k])) << (c->little ? k : 7 - k);                           \
            } else {                                                                                          \
                for (int64_t i = lo; i < hi; i++)                                                             \
                    byte |= (unsigned)(PRED(p[i * s])) << (c->little ? (int)(i - lo) : 7 - (int)(i - lo));    \
            }                                                                                                 \
            c->out[b] = (uint8_t)byte;                                                                        \
        }                                                                                                     \
    } while (0)
#define NZ(v) ((v) != 0)
#define GT(v) ((double)(v) > thr)
#define HALF_NZ(v) (((v)&0x7fffu) != 0)
#define HALF_GT(v) ((double)gs_half_to_float(v) > thr)

static int64_t piece(const bctx *c, int64_t e0, int64_t e1)
{
    int64_t cnt = 0;
    const double thr = c->thr;
    const int t = c->has_thr;
    switch (c->dt) {
    case GS_BOOL:
    case GS_UINT8: if (t) BITS(uint8_t, GT); else BITS(uint8_t, NZ); break;
    case GS_INT8: if (t) BITS(int8_t, GT); else BITS(int8_t, NZ); break;
    case GS_INT16: if (t) BITS(int16_t, GT); else BITS(int16_t, NZ); break;
    case GS_UINT16: if (t) BITS(uint16_t, GT); else BITS(uint16_t, NZ); break;
    case GS_INT32: if (t) BITS(int32_t, GT); else BITS(int32_t, NZ); break;
    case GS_UINT32: if (t) BITS(uint32_t, GT); else BITS(uint32_t, NZ); break;
    case GS_INT64: if (t) BITS(int64_t, GT); else BITS(int64_t, NZ); break;
    case GS_UINT64: if (t) BITS(uint64_t, GT); else BITS(uint64_t, NZ); break;
    case GS_FLOAT16: if (t) BITS(uint16_t, HALF_GT); else BITS(uint16_t, HALF_NZ); break;
    case GS_FLOAT32: if (t) BITS(float, GT); else BITS(float, NZ); break;
    default: if (t) BITS(double, GT); else BITS(double, NZ); break;
    }
    return cnt;
}

/* A thread's whole output bytes [b0, b1), in pieces of GS_CPU_CHUNK
 * elements with an interrupt check between them. */
static void slice(void *ctx, int tid, int64_t b0, int64_t b1)
{
    bctx *c = (bctx *)ctx;
    const int64_t end = b1 * 8 < c->n ? b1 * 8 : c->n;
    int64_t cnt = 0;
    for (int64_t e = b0 * 8; e < end; e += GS_CPU_CHUNK) {
        if (gs_cpu_stop(tid))
            break;
        cnt += piece(c, e, end - e < GS_CPU_CHUNK ? end : e + GS_CPU_CHUNK);
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
    gs_status st = GS_OK;
    if (bytes > 0) {
        const double per = GS_CPU_NS_PER_BYTE * (double)gs_dtype_size(a->dtype) + (count ? 0 : GS_CPU_NS_PER_BYTE);
        st = gs_cpu_parallel_for(bytes, gs_cpu_threads_for_cost(a->length, per), slice, &c);
    }
    if (count && st == GS_OK)
        *(int64_t *)out->data = atomic_load(&c.count);
    return st;
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
