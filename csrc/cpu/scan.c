/* cumsum (CPU backend): the three GPU strategies on CPU threads.  Every
 * thread takes one slice, sums it (read 1), learns the sum of the slices
 * before it, and scans its slice onto that (read 2, write).  How it learns:
 *   lookback  publishes its sum with a release flag, adds its predecessors'
 *             published sums or inclusive prefixes (acquire), publishes its
 *             own inclusive prefix -- no thread waits for a later one;
 *   barrier   all threads meet at a counter barrier, then each adds the sums
 *             before it;
 *   relaunch  the threads are joined; the caller scans the sums; a second
 *             team scans the slices (the CPU's "kernel boundary").
 * Floating inputs accumulate in double, each output rounded once; integers
 * and bool in wrapping uint64. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in spin.h */
#include "../common/convert.h"
#include "gpusync/tuning.h"
#include "parallel.h"
#include "spin.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { EMPTY = 0, AGGREGATE = 1, PREFIX = 2 };

typedef struct {
    const void *a;
    void *out;
    gs_dtype dt, odt;
    int is_float, nthreads, phase;
    gs_strategy strategy;
    int64_t n;
    uint64_t *sum, *incl; /* per slice: double bits or integer sums */
    atomic_uint *flag;
    atomic_uint arrived;
    atomic_int error;
    atomic_int nonfinite; /* a float slice's running prefix overflowed (or met inf / NaN): the sequential redo */
    int64_t *lo;          /* per slice: its start, and its running prefix at its end (bits): where a redo begins */
    uint64_t *end;
    unsigned char *bad;   /* per slice: its running prefix ended non-finite */
    int64_t timeout;
} sctx;

/* One pass over a[lo, hi): with out == NULL return the sum (bits); else
 * scan onto `carry` and write. */
#define FLOAT_PASS(T, CONV)                                                                                   \
    do {                                                                                                      \
        const T *pa = (const T *)c->a;                                                                        \
        double s = 0;                                                                                         \
        memcpy(&s, &carry, 8);                                                                                \
        if (!write) { /* a slice's sum, only a carry for later slices: four chains */                         \
            double s1 = 0, s2 = 0, s3 = 0;                                                                    \
            s = 0;                                                                                            \
            int64_t i = lo;                                                                                   \
            for (; i + 4 <= hi; i += 4) {                                                                     \
                s += (double)CONV(pa[i]);                                                                     \
                s1 += (double)CONV(pa[i + 1]);                                                                \
                s2 += (double)CONV(pa[i + 2]);                                                                \
                s3 += (double)CONV(pa[i + 3]);                                                                \
            }                                                                                                 \
            for (; i < hi; i++)                                                                               \
                s += (double)CONV(pa[i]);                                                                     \
            s = (s + s1) + (s2 + s3);                                                                         \
        } else if (c->odt == GS_FLOAT16) {                                                                    \
            uint16_t *po = (uint16_t *)c->out;                                                                \
            for (int64_t i = lo; i < hi; i++) {                                                               \
                s += (double)CONV(pa[i]);                                                                     \
                po[i] = gs_double_to_half(s);                                                                 \
            }                                                                                                 \
        } else if (c->odt == GS_FLOAT32) {                                                                    \
            float *po = (float *)c->out;                                                                      \
            for (int64_t i = lo; i < hi; i++) {                                                               \
                s += (double)CONV(pa[i]);                                                                     \
                po[i] = (float)s;                                                                             \
            }                                                                                                 \
        } else {                                                                                              \
            double *po = (double *)c->out;                                                                    \
            for (int64_t i = lo; i < hi; i++) {                                                               \
                s += (double)CONV(pa[i]);                                                                     \
                po[i] = s;                                                                                    \
            }                                                                                                 \
        }                                                                                                     \
        memcpy(&r, &s, 8);                                                                                    \
    } while (0)
#define INT_PASS(T, CONV)                                                                                     \
    do {                                                                                                      \
        const T *pa = (const T *)c->a;                                                                        \
        uint64_t s = write ? carry : 0, *po = (uint64_t *)c->out;                                             \
        if (write)                                                                                            \
            for (int64_t i = lo; i < hi; i++)                                                                 \
                po[i] = s += (uint64_t)CONV(pa[i]);                                                           \
        else                                                                                                  \
            for (int64_t i = lo; i < hi; i++)                                                                 \
                s += (uint64_t)CONV(pa[i]);                                                                   \
        r = s;                                                                                                \
    } while (0)
#define ID(x) (x)
#define NZ(x) ((x) != 0)
#define SEXT(x) ((int64_t)(x))

static uint64_t pass(const sctx *c, int64_t lo, int64_t hi, uint64_t carry, int write)
{
    uint64_t r = 0;
    switch (c->dt) {
    case GS_FLOAT16: FLOAT_PASS(uint16_t, gs_half_to_float); break;
    case GS_FLOAT32: FLOAT_PASS(float, ID); break;
    case GS_FLOAT64: FLOAT_PASS(double, ID); break;
    case GS_BOOL: INT_PASS(uint8_t, NZ); break;
    case GS_INT8: INT_PASS(int8_t, SEXT); break;
    case GS_UINT8: INT_PASS(uint8_t, ID); break;
    case GS_INT16: INT_PASS(int16_t, SEXT); break;
    case GS_UINT16: INT_PASS(uint16_t, ID); break;
    case GS_INT32: INT_PASS(int32_t, SEXT); break;
    case GS_UINT32: INT_PASS(uint32_t, ID); break;
    default: INT_PASS(uint64_t, ID); break;
    }
    return r;
}

static uint64_t add(const sctx *c, uint64_t x, uint64_t y)
{
    if (!c->is_float)
        return x + y;
    double a, b;
    memcpy(&a, &x, 8);
    memcpy(&b, &y, 8);
    a += b;
    memcpy(&x, &a, 8);
    return x;
}

/* The write pass of a slice; a float prefix that ends non-finite is noted: once a running prefix is inf or
 * NaN it stays so, so this catches every slice whose output left the finite range. */
static void write_pass(sctx *c, int tid, int64_t lo, int64_t hi, uint64_t carry)
{
    const uint64_t last = pass(c, lo, hi, carry, 1);
    double v;
    memcpy(&v, &last, 8);
    c->lo[tid] = lo;
    c->end[tid] = last;
    if (c->is_float && !isfinite(v)) {
        c->bad[tid] = 1;
        atomic_store_explicit(&c->nonfinite, 1, memory_order_relaxed);
    }
}

static void slice(void *ctx, int tid, int64_t lo, int64_t hi)
{
    sctx *c = (sctx *)ctx;
    if (c->phase == 2) { /* relaunch, second team: c->sum holds the exclusive prefixes */
        write_pass(c, tid, lo, hi, c->sum[tid]);
        return;
    }
    if (c->nthreads == 1 && c->strategy != GS_STRATEGY_RELAUNCH) { /* one slice: no sum to pass on */
        pass(c, lo, hi, 0, 1);
        return;
    }
    const uint64_t mine = pass(c, lo, hi, 0, 0);
    uint64_t before = 0;
    unsigned seen;
    switch (c->strategy) {
    case GS_STRATEGY_RELAUNCH: c->sum[tid] = mine; return;
    case GS_STRATEGY_BARRIER:
        c->sum[tid] = mine;
        atomic_fetch_add_explicit(&c->arrived, 1, memory_order_release);
        if (!gs_spin_wait(&c->arrived, (unsigned)c->nthreads, &c->error, c->timeout))
            return;
        for (int i = 0; i < tid; i++)
            before = add(c, before, c->sum[i]);
        break;
    default: /* lookback */
        if (tid > 0) {
            c->sum[tid] = mine;
            atomic_store_explicit(&c->flag[tid], AGGREGATE, memory_order_release);
            for (int i = tid - 1; i >= 0; i--) {
                if (!(seen = gs_spin_wait(&c->flag[i], 0, &c->error, c->timeout)))
                    return;
                before = add(c, before, seen == PREFIX ? c->incl[i] : c->sum[i]);
                if (seen == PREFIX)
                    break;
            }
        }
        c->incl[tid] = add(c, before, mine);
        atomic_store_explicit(&c->flag[tid], PREFIX, memory_order_release);
    }
    write_pass(c, tid, lo, hi, before);
}

gs_status gs_cpu_cumsum(const gs_array *a, gs_array *out, gs_strategy strategy, void *stream, gs_strategy *used)
{
    (void)stream;
    gs_status st = gs_scan_resolve(&strategy, a->dtype, out->dtype);
    if (st != GS_OK)
        return st;
    *used = strategy;
    if (a->device != GS_HOST || out->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "the cpu backend takes host arrays");
    if (out->length != a->length || (a->length > 1 && (a->stride != 1 || out->stride != 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "cumsum: a and out must be contiguous and of one length");
    if (a->length == 0)
        return GS_OK;
    sctx c;
    memset(&c, 0, sizeof c);
    c.a = a->data;
    c.out = out->data;
    c.dt = a->dtype;
    c.odt = out->dtype;
    c.is_float = gs_dtype_is_float(a->dtype);
    c.strategy = strategy;
    c.n = a->length;
    c.timeout = gs_spin_timeout_ns();
    c.nthreads = gs_cpu_threads_for_cost(c.n, GS_CPU_NS_SCAN_BYTE * (double)gs_dtype_size(c.dt));
    atomic_init(&c.arrived, 0);
    atomic_init(&c.error, 0);
    atomic_init(&c.nonfinite, 0);
    const size_t nt = (size_t)c.nthreads;
    c.sum = (uint64_t *)calloc(nt, 8);
    c.incl = (uint64_t *)calloc(nt, 8);
    c.flag = (atomic_uint *)calloc(nt, sizeof(atomic_uint));
    c.lo = (int64_t *)calloc(nt, sizeof(int64_t));
    c.end = (uint64_t *)calloc(nt, 8);
    c.bad = (unsigned char *)calloc(nt, 1);
    if (!c.sum || !c.incl || !c.flag || !c.lo || !c.end || !c.bad) {
        st = gs_fail(GS_ERR_NO_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < nt; i++)
        atomic_init(&c.flag[i], EMPTY);
    st = gs_cpu_parallel_for(c.n, c.nthreads, slice, &c);
    if (st == GS_OK && strategy == GS_STRATEGY_RELAUNCH) {
        uint64_t run = 0;
        for (size_t i = 0; i < nt; i++) { /* the slices' exclusive prefixes */
            const uint64_t s = c.sum[i];
            c.sum[i] = run;
            run = add(&c, run, s);
        }
        c.phase = 2;
        st = gs_cpu_parallel_for(c.n, c.nthreads, slice, &c);
    }
    if (st == GS_OK && atomic_load(&c.error))
        st = gs_fail(GS_ERR_DEADLOCK, "cumsum (%s): a thread waited more than %.0f ms for another",
                     gs_strategy_name(strategy), gs_spin_timeout_ns() / 1e6);
    /* Overflow rescue: slices' sums taken in four chains and added slice to slice are another order of
     * additions than NumPy's one running prefix, and where that prefix overflows the two part (-inf
     * against NaN or a finite value).  From the first slice whose prefix ended non-finite, the scan is
     * redone in NumPy's order on the calling thread, onto the running prefix the slice before it ended
     * with (finite: the slices before it differ from NumPy's order in roundings only; the carry the
     * bad slice started from may itself be the chains' NaN).  An inf in the last slice redoes that
     * slice alone. */
    if (st == GS_OK && c.is_float && c.nthreads > 1 && atomic_load(&c.nonfinite))
        for (size_t t = 0; t < nt; t++)
            if (c.bad[t]) {
                pass(&c, c.lo[t], c.n, t > 0 ? c.end[t - 1] : 0, 1);
                break;
            }
done:
    free(c.sum);
    free(c.incl);
    free((void *)c.flag);
    free(c.lo);
    free(c.end);
    free(c.bad);
    return st;
}
