/* binned_statistic (CPU backend).  shared: the points are cut into P parts
 * fixed by the points, the bins and the process's thread limit (parts_for),
 * each part has a private state per bin (no locks), and the parts are merged
 * bin by bin in part order (the parallel Welford merge) -- the same sums in the
 * same order whichever threads run them, run after run (they merged under the
 * bins' locks in whatever order the threads finished before, so the last bits
 * of sums and means changed from run to run); global: every value takes its
 * bin's lock, the seed's technique (its order is the threads').  The same rules as
 * csrc/cuda/binstat.cu. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in spin.h */
#include "binning.h"
#include "edge_index.h"
#include "parallel.h"
#include "spin.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t n;
    double a, b;
    int nan;
} bstate;

typedef struct {
    const void *x, *v;
    int64_t sx, sv;
    int f32;
    int64_t nb;
    double top;
    double e0, enb; /* e[0], e[nb]: in registers (a bin's state may alias the edges) */
    gs_edge_index ix; /* the edges' index (edge_index.h, shared with histogram and histogramdd) */
    int stat;
    int64_t *binnumber;
    bstate *g;     /* global: the result's states; shared: the parts' (part p's bins at p * nb) */
    int64_t n, parts;
    atomic_int *locks, error;
    atomic_int nonfinite; /* bit 0: x holds a NaN, bit 1: an inf (the report of csrc/cuda/binstat_priv.cu) */
    int shared;
    int64_t timeout;
} bctx;

/* SciPy's bin number of x: the count of edges <= x (0 below, NaN nb + 1), a
 * value at or past the last edge in bin nb when x <= top.  Between the outer
 * edges, 1 + the edge index's bin (edge_index.h: a guess table and one or a
 * few branchless comparisons where the elements pay for the table, else a
 * branchless binary search) -- it was the equal-width guess, its two
 * neighbours, then a branchy binary search: ~23 ns an element on 51 cubic
 * edges, ~3 now. */
static inline int64_t bin_number(const bctx *c, double x)
{
    const int64_t nb = c->nb;
    if (x != x)
        return nb + 1;
    if (x < c->e0)
        return 0;
    if (x >= c->enb)
        return x <= c->top ? nb : nb + 1;
    return 1 + gs_eidx_inner(&c->ix, x);
}

/* The report's bits of an x that fell outside the bins (NaN: bin nb + 1; -inf: 0; +inf: nb + 1). */
static inline int nonfinite_bits(double x)
{
    return x != x ? 1 : (x - x != 0.0 ? 2 : 0);
}

static inline void update(bstate *s, int stat, double v)
{
    switch (stat) {
    case GS_STAT_COUNT: s->n++; break;
    case GS_STAT_SUM:
    case GS_STAT_MEAN:
        s->n++;
        s->a += v;
        break;
    case GS_STAT_STD:
    case GS_STAT_VAR: {
        s->n++;
        const double d = v - s->a;
        s->a += d / (double)s->n;
        s->b += d * (v - s->a);
        break;
    }
    default:
        if (v != v) {
            s->nan = 1;
        } else {
            if (s->n == 0 || (stat == GS_STAT_MIN ? v < s->a : v > s->a))
                s->a = v;
            s->n++;
        }
    }
}

static void merge(bstate *g, const bstate *s, int stat)
{
    if (s->n == 0 && !s->nan)
        return;
    const uint64_t n = g->n + s->n;
    if (stat == GS_STAT_SUM || stat == GS_STAT_MEAN) {
        g->a += s->a;
    } else if (stat == GS_STAT_STD || stat == GS_STAT_VAR) {
        if (g->n == 0) {
            g->a = s->a;
            g->b = s->b;
        } else if (s->n > 0) {
            const double delta = s->a - g->a;
            g->b += s->b + delta * delta * ((double)g->n * (double)s->n / (double)n);
            g->a += delta * ((double)s->n / (double)n);
        }
    } else if (stat != GS_STAT_COUNT && s->n > 0 && (g->n == 0 || (stat == GS_STAT_MIN ? s->a < g->a : s->a > g->a))) {
        g->a = s->a;
    }
    g->n = n;
    g->nan |= s->nan;
}

/* A thread's private states, one loop per (x dtype, statistic): the
 * context's fields and the outer edges in locals.  A store into a bin's
 * state may alias the edges and the context as the compiler sees it, so the
 * general loop reloaded every field an element and kept update's switch
 * inside: 10^7 counts on two threads 41.7 -> 27.7 ms, means 54.9 -> 33.3,
 * maxima 74.2 -> 45.0 (this VM, the C call alone; a histogram of the same
 * bins, 8.6 ms, bins by vectorized arithmetic).  Two passes a block (bin
 * numbers, then states) measured the same. */
#define BS_PRIVATE_LOOP(TX, UPDATE)                                                                           \
    do {                                                                                                      \
        const TX *px = (const TX *)cv.x, *pv = (const TX *)cv.v;                                              \
        for (int64_t i = b; i < end; i++) {                                                                   \
            const double xi = (double)px[i * sx];                                                             \
            const int64_t k = bin_number(&cv, xi);                                                            \
            if (bn)                                                                                           \
                bn[i] = k;                                                                                    \
            if (k < 1 || k > nb) {                                                                            \
                bad |= nonfinite_bits(xi);                                                                    \
                continue;                                                                                     \
            }                                                                                                 \
            const double v = (double)pv[i * sv];                                                              \
            bstate *st = &mine[k - 1];                                                                        \
            UPDATE;                                                                                           \
        }                                                                                                     \
    } while (0)
#define BS_PRIVATE(TX)                                                                                        \
    do {                                                                                                      \
        switch (cv.stat) {                                                                                    \
        case GS_STAT_COUNT: BS_PRIVATE_LOOP(TX, ((void)v, st->n++)); break;                                   \
        case GS_STAT_SUM:                                                                                     \
        case GS_STAT_MEAN: BS_PRIVATE_LOOP(TX, (st->n++, st->a += v)); break;                                 \
        default: BS_PRIVATE_LOOP(TX, update(st, cv.stat, v)); break;                                          \
        }                                                                                                     \
    } while (0)

/* Points lo .. hi - 1 into `mine` (shared: a part's private states) or, when NULL, each under its bin's lock
 * into c->g (global).  false after an interrupt. */
static bool run_range(bctx *c, int tid, int64_t lo, int64_t hi, bstate *mine)
{
    bctx cv; /* the read-only fields (error and the locks through c: other threads write error) */
    memcpy(&cv, c, offsetof(bctx, locks));
    const int64_t sx = cv.sx, sv = cv.sv, nb = cv.nb;
    int64_t *const bn = cv.binnumber;
    int bad = 0; /* the report's bits of this range */
    for (int64_t b = lo; b < hi; b += GS_CPU_CHUNK / 16) {
        if (gs_cpu_stop(tid))
            return false; /* an interrupt: the caller discards the result */
        const int64_t end = hi - b < GS_CPU_CHUNK / 16 ? hi : b + GS_CPU_CHUNK / 16;
        if (mine) {
            if (cv.f32)
                BS_PRIVATE(float);
            else
                BS_PRIVATE(double);
            continue;
        }
        for (int64_t i = b; i < end; i++) { /* global: every value under its bin's lock */
            const double x = cv.f32 ? (double)((const float *)cv.x)[i * sx] : ((const double *)cv.x)[i * sx];
            const int64_t k = bin_number(&cv, x);
            if (bn)
                bn[i] = k;
            if (k < 1 || k > nb) {
                bad |= nonfinite_bits(x);
                continue;
            }
            const double v = cv.f32 ? (double)((const float *)cv.v)[i * sv] : ((const double *)cv.v)[i * sv];
            if (gs_spin_lock(&c->locks[k - 1], &c->error, c->timeout)) {
                update(&c->g[k - 1], cv.stat, v);
                gs_spin_unlock(&c->locks[k - 1]);
            }
        }
    }
    if (bad)
        atomic_fetch_or(&c->nonfinite, bad);
    return true;
}

static void global_slice(void *ctx, int tid, int64_t lo, int64_t hi) { run_range((bctx *)ctx, tid, lo, hi, NULL); }

/* Point p * (n / P) + min(p, n % P): the first point of part p (no overflow for any n). */
static inline int64_t part_start(int64_t n, int64_t parts, int64_t p)
{
    return p * (n / parts) + (p < n % parts ? p : n % parts);
}

/* shared: parts plo .. phi - 1, each into its own states. */
static void part_slice(void *ctx, int tid, int64_t plo, int64_t phi)
{
    bctx *c = (bctx *)ctx;
    for (int64_t p = plo; p < phi; p++)
        if (!run_range(c, tid, part_start(c->n, c->parts, p), part_start(c->n, c->parts, p + 1), c->g + p * c->nb))
            return;
}

/* shared: bins lo .. hi - 1 of parts 1 .. P - 1 merged into part 0's, in part order. */
static void merge_slice(void *ctx, int tid, int64_t lo, int64_t hi)
{
    (void)tid;
    bctx *c = (bctx *)ctx;
    for (int64_t k = lo; k < hi; k++)
        for (int64_t p = 1; p < c->parts; p++)
            merge(&c->g[k], &c->g[p * c->nb + k], c->stat);
}

/* The number of parts of the shared strategy: the threads this process may use (gs_cpu_max_threads:
 * GPUSYNC_NUM_THREADS or the cores); at most one part per 4 x nbins points (a part's states cost about as
 * much to clear and merge as nbins points: at most a quarter of the points' work, also where the engine runs
 * fewer threads than parts -- one part per nbins points took 3.5-5x the old time under a limit of 64 on one
 * thread, review50) and per GS_CPU_BINSTAT_MIN_PART points; at most GS_CPU_BINSTAT_PARTS parts and
 * GS_CPU_BINSTAT_CELLS states in all.  Never the threads a call runs on: the merge order, hence the rounding
 * of sums, means and variances, is the same for every call on these points and bins in this process and in
 * the next one with the same settings (the engine's thread choice depends on measured hand-off costs). */
static int64_t parts_for(int64_t n, int64_t nbins)
{
    int64_t p = gs_cpu_max_threads();
    if (p > n / (4 * nbins))
        p = n / (4 * nbins);
    if (p > n / GS_CPU_BINSTAT_MIN_PART)
        p = n / GS_CPU_BINSTAT_MIN_PART;
    if (p > GS_CPU_BINSTAT_PARTS)
        p = GS_CPU_BINSTAT_PARTS;
    if (p > GS_CPU_BINSTAT_CELLS / nbins)
        p = GS_CPU_BINSTAT_CELLS / nbins;
    return p < 1 ? 1 : p;
}

gs_status gs_cpu_binned_statistic(const gs_array *x, const gs_array *values, const double *edges, int64_t nbins,
                                  double top, int statistic, gs_array *result, gs_array *binnumber,
                                  gs_array *nonfinite, gs_strategy strategy, void *stream, gs_strategy *used)
{
    (void)stream;
    /* nonfinite (optional): one int32 on the host, set to the report's bits -- SciPy's check that x is finite
     * (bins a number) from the binning itself, where it cost a min / max pass over x before */
    if (nonfinite && (nonfinite->device != GS_HOST || nonfinite->dtype != GS_INT32 || nonfinite->length < 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic: nonfinite must be one int32 on the host");
    if (statistic < 0 || statistic >= GS_STAT_KINDS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown statistic %d", statistic);
    if (nbins < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "nbins must be at least 1");
    if (values->length != x->length || values->dtype != x->dtype ||
        (x->dtype != GS_FLOAT32 && x->dtype != GS_FLOAT64))
        return gs_fail(GS_ERR_TYPE, "x and values must have one length and one dtype, float32 or float64");
    if (result->length != nbins || result->dtype != GS_FLOAT64 || result->stride != 1 ||
        (binnumber && (binnumber->length != x->length || binnumber->dtype != GS_INT64 || binnumber->stride != 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "result must be nbins float64, binnumber n int64, both contiguous");
    if (strategy == GS_STRATEGY_AUTO)
        strategy = nbins <= GS_CPU_PRIVATE_MAX_BINS ? GS_STRATEGY_SHARED : GS_STRATEGY_GLOBAL;
    if (strategy != GS_STRATEGY_SHARED && strategy != GS_STRATEGY_GLOBAL)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic strategies are 'shared', 'global' and 'auto'; got '%s'",
                       gs_strategy_name(strategy));
    *used = strategy;
    bctx c;
    memset(&c, 0, sizeof c);
    c.x = x->data;
    c.v = values->data;
    c.sx = x->stride;
    c.sv = values->stride;
    c.f32 = x->dtype == GS_FLOAT32;
    c.nb = nbins;
    c.top = top;
    c.e0 = edges[0];
    c.enb = edges[nbins];
    c.stat = statistic;
    c.binnumber = binnumber ? (int64_t *)binnumber->data : NULL;
    c.shared = strategy == GS_STRATEGY_SHARED;
    c.timeout = gs_spin_timeout_ns();
    atomic_init(&c.error, 0);
    atomic_init(&c.nonfinite, 0);
    c.n = x->length;
    c.parts = c.shared ? parts_for(x->length, nbins) : 1;
    c.g = calloc((size_t)(nbins * c.parts), sizeof(bstate));
    c.locks = c.shared ? NULL : calloc((size_t)nbins, sizeof(atomic_int));
    if (!c.g || (!c.shared && !c.locks)) {
        free(c.g);
        free(c.locks);
        return gs_fail(GS_ERR_NO_MEMORY, "out of host memory for %lld bins", (long long)(nbins * c.parts));
    }
    gs_status st = GS_OK;
    if (x->length > 0) {
        int nthreads = gs_cpu_threads_for_cost(x->length, GS_CPU_NS_HIST);
        /* the index's table, built here for every thread when the points a thread bins pay for it */
        const int64_t busy = c.shared && nthreads > c.parts ? c.parts : nthreads;
        gs_eidx_init(&c.ix, edges, nbins, (double)x->length / (double)busy);
        if (!c.shared) {
            st = gs_cpu_parallel_for(x->length, nthreads, global_slice, &c);
        } else {
            if (nthreads > c.parts)
                nthreads = (int)c.parts;
            st = gs_cpu_parallel_for(c.parts, nthreads, part_slice, &c);
            if (st == GS_OK && c.parts > 1) {
                /* at most the parts' threads; on the caller alone without a job (the plan's thread count is the
                 * last job's: the parts') */
                int mt = gs_cpu_threads_for_cost(nbins * c.parts, GS_CPU_NS_HIST);
                if (mt > nthreads)
                    mt = nthreads;
                if (mt > 1 && nbins > 1)
                    st = gs_cpu_parallel_for(nbins, mt, merge_slice, &c);
                else
                    merge_slice(&c, 0, 0, nbins);
            }
        }
    }
    gs_eidx_free(&c.ix);
    double *out = (double *)result->data;
    for (int64_t k = 0; k < nbins; k++) {
        const bstate *s = &c.g[k];
        const double n = (double)s->n;
        switch (statistic) {
        case GS_STAT_COUNT: out[k] = n; break;
        case GS_STAT_SUM: out[k] = s->a; break;
        case GS_STAT_MEAN: out[k] = s->n ? s->a / n : NAN; break;
        case GS_STAT_STD: out[k] = s->n ? sqrt(s->b / n) : NAN; break;
        case GS_STAT_VAR: out[k] = s->n ? s->b / n : NAN; break;
        case GS_STAT_MIN: out[k] = s->n ? s->a : NAN; break;
        default: out[k] = (s->nan || !s->n) ? NAN : s->a; break;
        }
    }
    free(c.g);
    free(c.locks);
    if (nonfinite)
        *(int32_t *)nonfinite->data = atomic_load(&c.nonfinite);
    const int err = atomic_load(&c.error);
    if (st != GS_OK)
        return st;
    if (err)
        return gs_fail(GS_ERR_DEADLOCK, "binned_statistic: a thread waited more than %.0f ms for a bin's lock",
                       gs_spin_timeout_ns() / 1e6);
    return GS_OK;
}
