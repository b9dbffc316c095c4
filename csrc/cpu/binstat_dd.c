/* binned_statistic_dd's fused statistic (CPU backend, ops->binned_statistic_dd):
 * one thread, SciPy's own arithmetic in SciPy's order -- sums in element
 * order as np.bincount adds them, std as the two-pass sum of (v - mean)^2,
 * min / max as its stable sort picks them (min: the first of equal values,
 * NaN skipped; max: the last of equal values, NaN if the bin holds one) --
 * so results equal SciPy's bit for bit.  The Python layer routes host
 * inputs through the per-dimension path on the CPU pool; this is the
 * reference the CUDA kernel (csrc/cuda/binstat_priv.cu) is checked against
 * and what the contract's "every backend fills every slot" asks. */
#include "edge_index.h"
#include "gpusync/gpusync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SciPy's bin of x in one dimension: 0 below, 1..nb, nb + 1 above or NaN --
 * between the outer edges 1 + the edge index's bin (edge_index.h, the
 * mechanism of every CPU edge array). */
static int64_t dd_bin(const gs_edge_index *ix, double top, double x)
{
    const int64_t nb = ix->nbins;
    if (x != x)
        return nb + 1;
    if (x < ix->lo)
        return 0;
    if (x >= ix->hi)
        return x <= top ? nb : nb + 1;
    return 1 + gs_eidx_inner(ix, x);
}

static double dd_ld(const gs_array *a, int64_t i)
{
    return a->dtype == GS_FLOAT32 ? (double)((const float *)a->data)[i * a->stride]
                                  : ((const double *)a->data)[i * a->stride];
}

gs_status gs_cpu_binned_statistic_dd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                     const double *tops, const gs_array *values, int statistic, gs_array *result,
                                     gs_array *binnumber, gs_array *nonfinite, void *stream)
{
    (void)stream, (void)nonfinite; /* (no one-pass report here: the caller checks x itself) */
    if (statistic < 0 || statistic >= GS_STAT_KINDS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown statistic %d", statistic);
    if (ndim < 1 || ndim > GS_HISTDD_MAX_DIMS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: %d dimensions (1 to %d)", ndim,
                       GS_HISTDD_MAX_DIMS);
    const int64_t n = coords[0].length;
    if (values->dtype != GS_FLOAT32 && values->dtype != GS_FLOAT64)
        return gs_fail(GS_ERR_TYPE, "binned_statistic_dd: values must be float32 or float64");
    for (int d = 0; d < ndim; d++)
        if (coords[d].length != n || coords[d].dtype != values->dtype || coords[d].device != GS_HOST)
            return gs_fail(GS_ERR_INVALID_ARGUMENT,
                           "binned_statistic_dd: coordinates must be host arrays of the values' length and dtype");
    if (values->length != n || values->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: values must match the coordinates");
    int64_t nb = 1, eoff[GS_HISTDD_MAX_DIMS], istride[GS_HISTDD_MAX_DIMS], fstride[GS_HISTDD_MAX_DIMS];
    int64_t ne = 0;
    for (int d = 0; d < ndim; d++) {
        if (nedges[d] < 2 || nb > INT64_MAX / 4 / (nedges[d] - 1))
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: bad edges or too many bins");
        eoff[d] = ne;
        ne += nedges[d];
        nb *= nedges[d] - 1;
    }
    for (int64_t d = ndim - 1, fs = 1, is = 1; d >= 0; d--) {
        fstride[d] = fs;
        istride[d] = is;
        fs *= nedges[d] + 1;
        is *= nedges[d] - 1;
    }
    if (result->device != GS_HOST || result->length != nb || result->dtype != GS_FLOAT64 ||
        (binnumber && (binnumber->device != GS_HOST || binnumber->length != n || binnumber->dtype != GS_INT64)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: result must be %lld float64, binnumber n "
                       "int64, on the host", (long long)nb);
    uint64_t *cnt = (uint64_t *)calloc((size_t)nb, sizeof *cnt);
    double *acc = (double *)calloc((size_t)nb, sizeof *acc);
    unsigned char *flag = (unsigned char *)calloc((size_t)nb, 1); /* min/max: has a value; | 2: saw NaN */
    int64_t *inner = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *inner);
    if (!cnt || !acc || !flag || !inner) {
        free(cnt), free(acc), free(flag), free(inner);
        return gs_fail(GS_ERR_NO_MEMORY, "binned_statistic_dd: %lld bins", (long long)nb);
    }
    gs_edge_index ix[GS_HISTDD_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
        gs_eidx_init(&ix[d], edges + eoff[d], nedges[d] - 1, (double)n); /* (one thread) */
    for (int64_t i = 0; i < n; i++) {
        int64_t flat = 0, in = 0;
        for (int d = 0; d < ndim; d++) {
            const int64_t m = nedges[d] - 1;
            const int64_t b = dd_bin(&ix[d], tops[d], dd_ld(&coords[d], i));
            flat += b * fstride[d];
            in = (in >= 0 && b >= 1 && b <= m) ? in + (b - 1) * istride[d] : -1;
        }
        inner[i] = in;
        if (binnumber)
            ((int64_t *)binnumber->data)[i * binnumber->stride] = flat;
        if (in < 0)
            continue;
        cnt[in]++;
        if (statistic == GS_STAT_COUNT)
            continue;
        const double v = dd_ld(values, i);
        if (statistic == GS_STAT_MIN) {
            if (v == v && (!(flag[in] & 1) || v < acc[in]))
                acc[in] = v, flag[in] |= 1;
        } else if (statistic == GS_STAT_MAX) {
            if (v != v)
                flag[in] |= 2;
            else if (!(flag[in] & 1) || v >= acc[in])
                acc[in] = v, flag[in] |= 1;
        } else {
            acc[in] += v;
        }
    }
    for (int d = 0; d < ndim; d++)
        gs_eidx_free(&ix[d]);
    double *out = (double *)result->data;
    const double nan = NAN;
    if (statistic == GS_STAT_STD || statistic == GS_STAT_VAR) { /* SciPy: sum of (v - mean)^2 */
        double *m2 = (double *)calloc((size_t)nb, sizeof *m2);
        if (!m2) {
            free(cnt), free(acc), free(flag), free(inner);
            return gs_fail(GS_ERR_NO_MEMORY, "binned_statistic_dd: %lld bins", (long long)nb);
        }
        for (int64_t i = 0; i < n; i++) {
            const int64_t in = inner[i];
            if (in >= 0) {
                const double dv = dd_ld(values, i) - acc[in] / (double)cnt[in];
                m2[in] += dv * dv;
            }
        }
        for (int64_t k = 0; k < nb; k++) {
            const double var = m2[k] / (double)cnt[k];
            out[k * result->stride] = cnt[k] ? (statistic == GS_STAT_VAR ? var : sqrt(var)) : nan;
        }
        free(m2);
    } else {
        for (int64_t k = 0; k < nb; k++) {
            double r;
            switch (statistic) {
            case GS_STAT_COUNT: r = (double)cnt[k]; break;
            case GS_STAT_SUM: r = acc[k]; break;
            case GS_STAT_MEAN: r = cnt[k] ? acc[k] / (double)cnt[k] : nan; break;
            case GS_STAT_MIN: r = (flag[k] & 1) ? acc[k] : nan; break;
            default: r = ((flag[k] & 1) && !(flag[k] & 2)) ? acc[k] : nan; break;
            }
            out[k * result->stride] = r;
        }
    }
    free(cnt), free(acc), free(flag), free(inner);
    return GS_OK;
}
