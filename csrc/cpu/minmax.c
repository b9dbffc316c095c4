/* minmax (CPU backend): the smallest and largest element of a host array in
 * its own dtype, on the pool's threads (bincount's length, a histogram's
 * autodetected range).  Integers, bool and float32 / float64; a NaN anywhere
 * makes both NaN, as numpy.min / numpy.max give.  One loop per dtype, the
 * contiguous one written as the select the compiler vectorizes (minps /
 * pminsq ...), the NaN test an or-reduction beside it. */
#include "gpusync/tuning.h"
#include "parallel.h"

#include <math.h>
#include <string.h>

#define MM_MAX_THREADS 256

typedef struct {
    const void *x;
    int64_t n, stride;
    gs_dtype dt;
    unsigned char part[MM_MAX_THREADS][16]; /* each thread's (min, max) in the dtype */
    int has[MM_MAX_THREADS], nan[MM_MAX_THREADS];
} mmctx;

/* The contiguous loop of one dtype: the select the compiler vectorizes. */
#define MM_CONTIG(T)                                                                                          \
    GS_CLONES static void contig_##T(const T *p, int64_t e0, int64_t e1, T *plo, T *phi, int *pnan)           \
    {                                                                                                         \
        T lo = *plo, hi = *phi;                                                                               \
        int isnan_ = 0;                                                                                       \
        for (int64_t i = e0; i < e1; i++) {                                                                   \
            const T v = p[i];                                                                                 \
            lo = v < lo ? v : lo;                                                                             \
            hi = v > hi ? v : hi;                                                                             \
            isnan_ |= v != v;                                                                                 \
        }                                                                                                     \
        *plo = lo, *phi = hi, *pnan |= isnan_;                                                                \
    }
MM_CONTIG(uint8_t)
MM_CONTIG(int8_t)
MM_CONTIG(int16_t)
MM_CONTIG(uint16_t)
MM_CONTIG(int32_t)
MM_CONTIG(uint32_t)
MM_CONTIG(int64_t)
MM_CONTIG(uint64_t)
MM_CONTIG(float)
MM_CONTIG(double)

#define MM_LOOP(T)                                                                                            \
    do {                                                                                                      \
        const T *p = (const T *)c->x;                                                                         \
        const int64_t s = c->stride;                                                                          \
        T lo = p[b * s], hi = lo;                                                                             \
        int isnan_ = 0;                                                                                       \
        for (int64_t e = b; e < end; e += GS_CPU_CHUNK) {                                                     \
            if (gs_cpu_stop(tid))                                                                             \
                break;                                                                                        \
            const int64_t stop = end - e < GS_CPU_CHUNK ? end : e + GS_CPU_CHUNK;                             \
            if (s == 1)                                                                                       \
                contig_##T(p, e, stop, &lo, &hi, &isnan_);                                                    \
            else                                                                                              \
                for (int64_t i = e; i < stop; i++) {                                                          \
                    const T v = p[i * s];                                                                     \
                    lo = v < lo ? v : lo;                                                                     \
                    hi = v > hi ? v : hi;                                                                     \
                    isnan_ |= v != v;                                                                         \
                }                                                                                             \
        }                                                                                                     \
        memcpy(c->part[tid], &lo, sizeof lo);                                                                 \
        memcpy(c->part[tid] + sizeof lo, &hi, sizeof hi);                                                     \
        c->nan[tid] = isnan_;                                                                                 \
    } while (0)

static void slice(void *ctx, int tid, int64_t b, int64_t end)
{
    mmctx *c = (mmctx *)ctx;
    if (b >= end)
        return;
    c->has[tid] = 1;
    switch (c->dt) {
    case GS_BOOL:
    case GS_UINT8: MM_LOOP(uint8_t); break;
    case GS_INT8: MM_LOOP(int8_t); break;
    case GS_INT16: MM_LOOP(int16_t); break;
    case GS_UINT16: MM_LOOP(uint16_t); break;
    case GS_INT32: MM_LOOP(int32_t); break;
    case GS_UINT32: MM_LOOP(uint32_t); break;
    case GS_INT64: MM_LOOP(int64_t); break;
    case GS_UINT64: MM_LOOP(uint64_t); break;
    case GS_FLOAT32: MM_LOOP(float); break;
    default: MM_LOOP(double); break;
    }
}

/* The threads' partials into out (lo, hi); floats: a NaN anywhere makes both NaN. */
#define MM_MERGE(T, FLOATING)                                                                                 \
    do {                                                                                                      \
        T lo = 0, hi = 0;                                                                                     \
        int first = 1, isnan_ = 0;                                                                            \
        for (int t = 0; t < nthreads; t++) {                                                                  \
            if (!c->has[t])                                                                                   \
                continue;                                                                                     \
            T a, z;                                                                                           \
            memcpy(&a, c->part[t], sizeof a);                                                                 \
            memcpy(&z, c->part[t] + sizeof a, sizeof z);                                                      \
            isnan_ |= c->nan[t] | (a != a);                                                                   \
            lo = first || a < lo ? a : lo;                                                                    \
            hi = first || z > hi ? z : hi;                                                                    \
            first = 0;                                                                                        \
        }                                                                                                     \
        FLOATING(isnan_, lo, hi);                                                                             \
        memcpy(out2, &lo, sizeof lo);                                                                         \
        memcpy((unsigned char *)out2 + sizeof lo, &hi, sizeof hi);                                            \
    } while (0)
#define MM_EXACT(isnan_, lo, hi) (void)(isnan_)
#define MM_NAN(isnan_, lo, hi)                                                                                \
    if (isnan_)                                                                                               \
    lo = hi = NAN

gs_status gs_cpu_minmax(const gs_array *x, void *out2, void *stream)
{
    (void)stream;
    if (x->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "the cpu backend takes host arrays");
    if (x->length < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "zero-size array to reduction operation minimum which has no identity");
    switch (x->dtype) {
    case GS_BOOL: case GS_UINT8: case GS_INT8: case GS_INT16: case GS_UINT16: case GS_INT32: case GS_UINT32:
    case GS_INT64: case GS_UINT64: case GS_FLOAT32: case GS_FLOAT64: break;
    default: return gs_fail(GS_ERR_INVALID_ARGUMENT, "minmax on the cpu backend: %s is NumPy's", gs_dtype_name(x->dtype));
    }
    mmctx ctx, *c = &ctx; /* 6 KiB of partials */
    memset(c->has, 0, sizeof c->has);
    c->x = x->data;
    c->n = x->length;
    c->stride = x->stride;
    c->dt = x->dtype;
    int nthreads = gs_cpu_threads_for_cost(x->length, GS_CPU_NS_PER_BYTE * (double)gs_dtype_size(x->dtype));
    if (nthreads > MM_MAX_THREADS)
        nthreads = MM_MAX_THREADS;
    const gs_status st = gs_cpu_parallel_for(x->length, nthreads, slice, c);
    if (st != GS_OK)
        return st;
    switch (x->dtype) {
    case GS_BOOL:
    case GS_UINT8: MM_MERGE(uint8_t, MM_EXACT); break;
    case GS_INT8: MM_MERGE(int8_t, MM_EXACT); break;
    case GS_INT16: MM_MERGE(int16_t, MM_EXACT); break;
    case GS_UINT16: MM_MERGE(uint16_t, MM_EXACT); break;
    case GS_INT32: MM_MERGE(int32_t, MM_EXACT); break;
    case GS_UINT32: MM_MERGE(uint32_t, MM_EXACT); break;
    case GS_INT64: MM_MERGE(int64_t, MM_EXACT); break;
    case GS_UINT64: MM_MERGE(uint64_t, MM_EXACT); break;
    case GS_FLOAT32: MM_MERGE(float, MM_NAN); break;
    default: MM_MERGE(double, MM_NAN); break;
    }
    return GS_OK;
}
