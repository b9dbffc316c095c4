/* histogramdd (CPU backend): numpy.histogramdd's counts with per-thread
 * privatized bins.  Every thread bins its slice of the points into its own
 * copy of the histogram (int64 counts or float64 weight sums); the copies
 * are then added bin by bin in thread order, so the result does not depend
 * on timing.  When one copy per thread would not fit in
 * GS_HISTDD_PRIVATE_BYTES, fewer threads run. */
#include "../common/histdd.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

#define GS_HISTDD_PRIVATE_BYTES ((size_t)1 << 30)

typedef struct {
    const gs_array *coords;
    int ndim;
    const double *edges[GS_HISTDD_MAX_DIMS];
    int64_t nedges[GS_HISTDD_MAX_DIMS], stride[GS_HISTDD_MAX_DIMS];
    double scale[GS_HISTDD_MAX_DIMS];
    const double *w;
    int64_t wstride, nbins;
    char *priv; /* [thread][nbins] of 8-byte cells */
} hctx;

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

static void count_slice(void *vc, int tid, int64_t begin, int64_t end)
{
    const hctx *c = (const hctx *)vc;
    char *mine = c->priv + (size_t)tid * (size_t)c->nbins * 8;
    for (int64_t i = begin; i < end; i++) {
        int64_t at = 0;
        int d = 0;
        for (; d < c->ndim; d++) {
            const int64_t b = gs_histdd_bin(c->edges[d], c->nedges[d], c->scale[d], load(&c->coords[d], i));
            if (b < 0)
                break;
            at += b * c->stride[d];
        }
        if (d < c->ndim)
            continue;
        if (c->w)
            ((double *)mine)[at] += c->w[i * c->wstride];
        else
            ((int64_t *)mine)[at] += 1;
    }
}

typedef struct {
    const hctx *c;
    int nthreads;
    char *out;
} mctx;

static void merge_slice(void *vm, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const mctx *m = (const mctx *)vm;
    const size_t nb = (size_t)m->c->nbins;
    for (int64_t j = begin; j < end; j++) {
        if (m->c->w) {
            double s = 0;
            for (int t = 0; t < m->nthreads; t++)
                s += ((const double *)m->c->priv)[(size_t)t * nb + (size_t)j];
            ((double *)m->out)[j] = s;
        } else {
            int64_t s = 0;
            for (int t = 0; t < m->nthreads; t++)
                s += ((const int64_t *)m->c->priv)[(size_t)t * nb + (size_t)j];
            ((int64_t *)m->out)[j] = s;
        }
    }
}

gs_status gs_cpu_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                             const gs_array *weights, gs_array *out, void *stream)
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
        c.edges[d] = edges + off;
        c.nedges[d] = nedges[d];
        c.scale[d] = gs_histdd_scale(c.edges[d], nedges[d]);
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
    if (out->device != GS_HOST || out->length != nbins || (nbins > 1 && out->stride != 1) ||
        out->dtype != (weights ? GS_FLOAT64 : GS_INT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: out must be %lld contiguous %s on the host",
                       (long long)nbins, weights ? "float64" : "int64");
    if (weights) {
        if (weights->dtype != GS_FLOAT64 || weights->length != n || weights->device != GS_HOST)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: weights must be %lld float64 on the host",
                           (long long)n);
        c.w = (const double *)weights->data;
        c.wstride = weights->stride;
    }
    int nthreads = gs_cpu_threads_for_cost(n, GS_CPU_NS_HIST * ndim);
    while (nthreads > 1 && (size_t)nbins * 8 * (size_t)nthreads > GS_HISTDD_PRIVATE_BYTES)
        nthreads--;
    c.priv = (char *)calloc((size_t)nbins * (size_t)nthreads, 8);
    if (!c.priv)
        return gs_fail(GS_ERR_NO_MEMORY, "histogramdd: %lld private bins", (long long)(nbins * nthreads));
    gs_status rs = gs_cpu_parallel_for(n, nthreads, count_slice, &c);
    if (rs != GS_ERR_INTERRUPTED) {
        mctx m = {&c, nthreads, (char *)out->data};
        rs = gs_cpu_parallel_for(nbins, gs_cpu_threads_for_cost(nbins, GS_CPU_NS_PER_BYTE * 8.0 * nthreads),
                                 merge_slice, &m);
    }
    free(c.priv);
    return rs == GS_ERR_INTERRUPTED ? rs : GS_OK; /* GS_ERR_NO_MEMORY for threads: the slices ran on the caller */
}
