/* histogramdd (CPU backend): numpy.histogramdd's counts.
 *
 * Thread 0 counts straight into the caller's output; every other thread
 * counts its slice of the points into a private copy of all the bins
 * (32-bit counts when its slice has fewer than 2^32 points, else 64-bit;
 * float64 weight sums), zeroed by the thread that uses it.  The copies are
 * then added to the output bin by bin in thread order (out = p0 + p1 + ...,
 * the same sums whatever the timing), on the count's threads when the merge
 * is worth a hand-off.  One thread: no copy and no merge at all.
 *
 * The thread count weighs the per-point work against the copies: t threads
 * cost n * ns_point / t + handoff(t) + (t - 1) * nbins * GS_HISTDD_NS_CELL
 * (gs_cpu_threads_for_cost_extra), so many bins and few points count on the
 * calling thread alone.  The copies together stay within
 * GS_HISTDD_PRIVATE_BYTES (fewer threads run otherwise).
 *
 * Each slice is binned in chunks of HD_CHUNK points: one pass per dimension
 * turns its coordinates into the C-order linear bin (a loop per coordinate
 * dtype through the dimension's edge index, edge_index.h -- the mechanism of
 * histogram's and binned_statistic's edge arrays, NumPy's rule of
 * gs_histdd_bin: the equal-width guess checked against the two edges around
 * it for near-equal-width edges, as before, else a guess table and one or a
 * few branchless comparisons, or a branchless binary search; a missed guess
 * took a branchy binary search, ~30 ns a coordinate on 51 cubic edges, ~2.5
 * now), then one pass counts the chunk's bins. */
#include "../common/histdd.h"
#include "edge_index.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

#define GS_HISTDD_PRIVATE_BYTES ((size_t)1 << 30)

/* The thread choice's constants (ns), measured on the 2-core CI box (AMD
 * EPYC, Zen 3 at 2.45 GHz, 1 MiB L2 per core, 32 MiB L3) through
 * _core.histogramdd with _core.cpu_threads(1 or 2), best of 7, 2026-11-24:
 *   a point and its coordinates: 2^20 uniform float64 points in [0, 1) on
 *     one thread, 256 / 256^2 / 32^3 / 16^4 bins: 2.04 / 4.72 / 6.47 / 8.43
 *     ns a point for 1 / 2 / 3 / 4 dimensions (float32 within 5 %): a least-
 *     squares line of 2.09 ns a coordinate + 0.19 ns a point;
 *   a cell of a private copy: 64 points in 1-D, 2^16 .. 2^22 bins, 2
 *     threads less 1 thread, the slope in the bins (the copy zeroed in its
 *     thread, added to the float64 output on both): 0.17-0.21 ns a cell up to
 *     2^20 bins (the copies in the cores' caches), 0.73 ns at 2^22 (16 MiB
 *     of copy and 32 MiB of output: memory).
 * Rounded down for the points (threads are tried early, as GS_CPU_NS_HIST
 * is) and up for the cells (the thread choice charges each copy's zeroing
 * and merge in full, as if the merge ran on one thread). */
#define GS_HISTDD_NS_COORD 2.0
#define GS_HISTDD_NS_POINT 0.2
#define GS_HISTDD_NS_CELL 0.5

/* Points binned per pass (the chunk's linear bins stay in L1). */
#define HD_CHUNK 256

enum { CELL_U32, CELL_I64, CELL_F64 };

typedef struct {
    const gs_array *coords;
    int ndim;
    int64_t nedges[GS_HISTDD_MAX_DIMS], stride[GS_HISTDD_MAX_DIMS];
    gs_edge_index ix[GS_HISTDD_MAX_DIMS]; /* each dimension's edges */
    const double *w;
    int64_t wstride, nbins;
    int nthreads;
    int out_cell;  /* CELL_I64 or CELL_F64 (counts or weight sums) */
    int priv_cell; /* the copies' cells: CELL_U32, CELL_I64 or CELL_F64 */
    void *out;
    char *priv;     /* threads 1..nthreads-1: [thread - 1][pstride] cells */
    size_t pstride; /* bytes of one copy (whole cache lines) */
} hctx;

static size_t cell_bytes(int cell) { return cell == CELL_U32 ? 4 : 8; }

static double load(const gs_array *a, int64_t i)
{
    const char *p = (const char *)a->data;
    const int64_t k = i * a->stride;
    switch (a->dtype) {
    case GS_BOOL: return ((const uint8_t *)p)[k] != 0;
    case GS_INT8: return ((const int8_t *)p)[k];
    case GS_UINT8: return ((const uint8_t *)p)[k];
    case GS_INT16: return ((const int16_t *)p)[k];
    case GS_UINT16: return ((const uint16_t *)p)[k];
    case GS_INT32: return ((const int32_t *)p)[k];
    case GS_UINT32: return ((const uint32_t *)p)[k];
    case GS_INT64: return (double)((const int64_t *)p)[k];
    case GS_UINT64: return (double)((const uint64_t *)p)[k];
    case GS_FLOAT16: return gs_half_to_float(((const uint16_t *)p)[k]);
    case GS_FLOAT32: return ((const float *)p)[k];
    default: return ((const double *)p)[k];
    }
}

/* Dimension d's bin of v folded into the point's linear bin `at` (-1: the
 * point is dropped): NumPy's bin (gs_histdd_bin's rule) from the index's
 * BIN (one of its modes, edge_index.h GS_EIDX_UNSWITCH). */
static inline int64_t fold(int64_t b, int64_t at, int64_t st) { return (at | b) < 0 ? -1 : at + b * st; }
#define FOLD(BIN, at, v) fold(BIN(ix, (v)), (at), st)
#define FOLD_FIRST(BIN)                                                                                       \
    for (int k = 0; k < len; k++, p += s)                                                                     \
        at[k] = FOLD(BIN, (int64_t)0, (double)*p);
#define FOLD_MORE(BIN)                                                                                        \
    for (int k = 0; k < len; k++, p += s)                                                                     \
        at[k] = FOLD(BIN, at[k], (double)*p);
#define BIN_LOOP(T)                                                                                           \
    do {                                                                                                      \
        const T *p = (const T *)a->data + i0 * s;                                                             \
        if (first)                                                                                            \
            GS_EIDX_UNSWITCH(ix, FOLD_FIRST);                                                                 \
        else                                                                                                  \
            GS_EIDX_UNSWITCH(ix, FOLD_MORE);                                                                  \
    } while (0)

/* at[0..len) of points i0.. : dimension d's bin folded in (first: set). */
static void bin_dim(const hctx *c, int d, int64_t i0, int len, int64_t *at, int first)
{
    const gs_array *a = &c->coords[d];
    const int64_t s = a->stride, st = c->stride[d];
    const gs_edge_index local = c->ix[d], *ix = &local; /* (the bins' stores must not reload it) */
    switch (a->dtype) {
    case GS_FLOAT64: BIN_LOOP(double); return;
    case GS_FLOAT32: BIN_LOOP(float); return;
    default:
        for (int k = 0; k < len; k++)
            at[k] = FOLD(gs_eidx_bin, first ? 0 : at[k], load(a, i0 + k));
    }
}

/* Count the chunk's points into `cells` (of kind `cell`). */
static void count_chunk(const hctx *c, int cell, void *cells, int64_t i0, int len, const int64_t *at)
{
    if (c->w) {
        double *h = (double *)cells;
        const double *w = c->w + i0 * c->wstride;
        for (int k = 0; k < len; k++)
            if (at[k] >= 0)
                h[at[k]] += w[k * c->wstride];
        return;
    }
    switch (cell) {
    case CELL_U32:
        for (int k = 0; k < len; k++)
            if (at[k] >= 0)
                ((uint32_t *)cells)[at[k]]++;
        return;
    case CELL_I64:
        for (int k = 0; k < len; k++)
            if (at[k] >= 0)
                ((int64_t *)cells)[at[k]]++;
        return;
    default: /* float64 counts: exact below 2^53 */
        for (int k = 0; k < len; k++)
            if (at[k] >= 0)
                ((double *)cells)[at[k]] += 1.0;
    }
}

static void count_slice(void *vc, int tid, int64_t begin, int64_t end)
{
    const hctx *c = (const hctx *)vc;
    const int cell = tid == 0 ? c->out_cell : c->priv_cell;
    void *cells = tid == 0 ? c->out : (void *)(c->priv + (size_t)(tid - 1) * c->pstride);
    memset(cells, 0, (size_t)c->nbins * cell_bytes(cell)); /* here: the cells sit in this thread's cache */
    int64_t at[HD_CHUNK];
    int64_t next_poll = begin + GS_CPU_CHUNK;
    for (int64_t i = begin; i < end; i += HD_CHUNK) {
        const int len = end - i < HD_CHUNK ? (int)(end - i) : HD_CHUNK;
        for (int d = 0; d < c->ndim; d++)
            bin_dim(c, d, i, len, at, d == 0);
        count_chunk(c, cell, cells, i, len, at);
        if (i + len >= next_poll) {
            if (gs_cpu_stop(tid))
                return;
            next_poll += GS_CPU_CHUNK;
        }
    }
}

/* out[j] += copy[j] for every copy in thread order, bins [begin, end) in
 * blocks that stay in L1 across the copies. */
#define MERGE_LOOP(TO, TP)                                                                                    \
    do {                                                                                                      \
        TO *o = (TO *)c->out;                                                                                 \
        for (int64_t b0 = begin; b0 < end; b0 += 2048) {                                                      \
            const int64_t b1 = end - b0 < 2048 ? end : b0 + 2048;                                             \
            for (int t = 1; t < c->nthreads; t++) {                                                           \
                const TP *p = (const TP *)(c->priv + (size_t)(t - 1) * c->pstride);                           \
                for (int64_t j = b0; j < b1; j++)                                                             \
                    o[j] += (TO)p[j];                                                                         \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

static void merge_slice(void *vc, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const hctx *c = (const hctx *)vc;
    if (c->out_cell == CELL_I64) {
        if (c->priv_cell == CELL_U32)
            MERGE_LOOP(int64_t, uint32_t);
        else
            MERGE_LOOP(int64_t, int64_t);
    } else if (c->priv_cell == CELL_U32) {
        MERGE_LOOP(double, uint32_t);
    } else if (c->priv_cell == CELL_I64) {
        MERGE_LOOP(double, int64_t);
    } else {
        MERGE_LOOP(double, double);
    }
}

gs_status gs_cpu_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                             const gs_array *weights, gs_array *out, gs_array *edges_out, void *stream)
{
    (void)stream;
    if (ndim < 1 || ndim > GS_HISTDD_MAX_DIMS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: %d dimensions (1 to %d are supported)", ndim,
                       GS_HISTDD_MAX_DIMS);
    hctx c;
    memset(&c, 0, sizeof c);
    c.coords = coords;
    c.ndim = ndim;
    const int64_t n = coords[0].length;
    int64_t nbins = 1, off = 0;
    for (int d = 0; d < ndim; d++) {
        if (coords[d].length != n || coords[d].device != GS_HOST || coords[d].dtype != coords[0].dtype)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: coordinates must be host arrays of one length "
                                                    "and dtype");
        if (nedges[d] < 2)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: dimension %d has %lld edges", d,
                           (long long)nedges[d]);
        c.nedges[d] = nedges[d];
        off += nedges[d];
        if (nbins > INT64_MAX / (nedges[d] - 1))
            return gs_fail(GS_ERR_OVERFLOW, "histogramdd: too many bins");
        nbins *= nedges[d] - 1;
    }
    int64_t st = 1; /* C order */
    for (int d = ndim - 1; d >= 0; d--) {
        c.stride[d] = st;
        st *= nedges[d] - 1;
    }
    c.nbins = nbins;
    /* unweighted counts: int64, or float64 (NumPy's result type: no cast afterwards; exact below 2^53) */
    if (out->device != GS_HOST || out->length != nbins || (nbins > 1 && out->stride != 1) ||
        !(out->dtype == GS_FLOAT64 || (!weights && out->dtype == GS_INT64)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: out must be %lld contiguous %s on the host",
                       (long long)nbins, weights ? "float64" : "int64 or float64");
    if (!weights && out->dtype == GS_FLOAT64 && n > ((int64_t)1 << 53))
        return gs_fail(GS_ERR_OVERFLOW, "histogramdd: float64 counts of more than 2^53 points");
    if (weights) {
        if (weights->dtype != GS_FLOAT64 || weights->length != n || weights->device != GS_HOST)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: weights must be %lld float64 on the host",
                           (long long)n);
        c.w = (const double *)weights->data;
        c.wstride = weights->stride;
    }
    if (edges_out) {
        if (edges_out->device != GS_HOST || edges_out->length != off || edges_out->stride != 1 ||
            edges_out->dtype != GS_FLOAT64)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: edges_out must be %lld contiguous float64 on the "
                                                    "host", (long long)off);
        memcpy(edges_out->data, edges, (size_t)off * sizeof(double));
    }
    c.out = out->data;
    c.out_cell = out->dtype == GS_INT64 ? CELL_I64 : CELL_F64;
    int nthreads = n > 1 ? gs_cpu_threads_for_cost_extra(n, GS_HISTDD_NS_POINT + GS_HISTDD_NS_COORD * ndim,
                                                          (double)nbins * GS_HISTDD_NS_CELL)
                         : 1;
    for (;; nthreads--) {
        /* a slice of fewer than 2^32 points counts in 32-bit cells (unweighted) */
        c.priv_cell = weights ? CELL_F64 : n / nthreads + 1 < ((int64_t)1 << 32) ? CELL_U32 : CELL_I64;
        c.pstride = ((size_t)nbins * cell_bytes(c.priv_cell) + 63) & ~(size_t)63;
        if (nthreads == 1 || c.pstride * (size_t)(nthreads - 1) <= GS_HISTDD_PRIVATE_BYTES)
            break;
    }
    c.nthreads = nthreads;
    if (nthreads > 1) {
        c.priv = (char *)malloc(c.pstride * (size_t)(nthreads - 1)); /* zeroed by each thread */
        if (!c.priv)
            return gs_fail(GS_ERR_NO_MEMORY, "histogramdd: %lld private bins", (long long)(nbins * (nthreads - 1)));
    }
    /* each dimension's index, its table built here for all threads where the points a thread bins pay for it */
    for (int64_t d = 0, at = 0; d < ndim; at += nedges[d], d++)
        gs_eidx_init(&c.ix[d], edges + at, nedges[d] - 1, (double)n / nthreads);
    gs_status rs = gs_cpu_parallel_for(n, nthreads, count_slice, &c);
    if (rs != GS_ERR_INTERRUPTED && nthreads > 1) {
        /* on the count's threads (still spinning: a warm hand-off) when that
         * saves more than the hand-off, else here (the plan's threads stay
         * the count's either way) */
        const double work = (double)(nthreads - 1) * (double)nbins * GS_HISTDD_NS_CELL;
        if (work - work / nthreads > 2 * GS_CPU_HANDOFF_MIN_NS)
            rs = gs_cpu_parallel_for(nbins, nthreads, merge_slice, &c);
        else
            merge_slice(&c, 0, 0, nbins);
    }
    free(c.priv);
    for (int d = 0; d < ndim; d++)
        gs_eidx_free(&c.ix[d]);
    return rs == GS_ERR_INTERRUPTED ? rs : GS_OK; /* GS_ERR_NO_MEMORY for threads: the slices ran on the caller */
}
