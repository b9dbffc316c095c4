/* Status messages, names and the auto-strategy predicate shared by both backends. */
#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"
#include "binning.h"
#include "convert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char gs_errmsg[1024];

const char *gs_last_error(void) { return gs_errmsg; }

gs_status gs_fail(gs_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gs_errmsg, sizeof gs_errmsg, fmt, ap);
    va_end(ap);
    return status;
}

static const char *const strategy_names[GS_STRATEGY_COUNT] = {
    "auto",     "global",   "shared",   "warp", "cluster",  "atomic",   "mutex",       "two-pass", "threadfence",
    "grid",     "lookback", "barrier",  "relaunch", "lock", "lockfree", "cooperative", "sense",
    "flat",     "privatized",
};

static const char *const dtype_names[GS_DTYPE_COUNT] = {
    [GS_BOOL] = "bool",       [GS_INT8] = "int8",       [GS_UINT8] = "uint8",     [GS_INT16] = "int16",
    [GS_UINT16] = "uint16",   [GS_INT32] = "int32",     [GS_UINT32] = "uint32",   [GS_INT64] = "int64",
    [GS_UINT64] = "uint64",   [GS_FLOAT16] = "float16", [GS_FLOAT32] = "float32", [GS_FLOAT64] = "float64",
};
static const char *const bins_kind_names[] = {
    [GS_BINS_DIRECT] = "direct", [GS_BINS_LUT] = "lut", [GS_BINS_UNIFORM] = "uniform", [GS_BINS_EDGES] = "edges",
    [GS_BINS_EDGES_INT] = "edges_int",
};
static const char *const statistic_names[GS_STAT_KINDS] = {
    [GS_STAT_COUNT] = "count", [GS_STAT_SUM] = "sum", [GS_STAT_MEAN] = "mean", [GS_STAT_STD] = "std",
    [GS_STAT_VAR] = "var",     [GS_STAT_MIN] = "min", [GS_STAT_MAX] = "max",
};

static const char *const counter_kind_names[] = {
    [GS_COUNTER_RACE] = "race", [GS_COUNTER_ATOMIC] = "atomic", [GS_COUNTER_MUTEX] = "mutex"};
const char *gs_counter_kind_name(int code)
{
    return code >= 0 && code < (int)(sizeof counter_kind_names / sizeof *counter_kind_names) ? counter_kind_names[code]
                                                                                              : NULL;
}

const char *gs_dtype_name(int code)
{
    return code >= 0 && code < GS_DTYPE_COUNT ? dtype_names[code] : NULL;
}
const char *gs_bins_kind_name(int code)
{
    return code >= 0 && code < (int)(sizeof bins_kind_names / sizeof *bins_kind_names) ? bins_kind_names[code]
                                                                                          : NULL;
}
const char *gs_statistic_name(int code) { return code >= 0 && code < GS_STAT_KINDS ? statistic_names[code] : NULL; }

const char *gs_strategy_name(gs_strategy s)
{
    return (s >= 0 && s < GS_STRATEGY_COUNT) ? strategy_names[s] : "?";
}

gs_strategy gs_strategy_from_name(const char *name)
{
    for (int s = 0; s < GS_STRATEGY_COUNT; s++)
        if (strcmp(name, strategy_names[s]) == 0)
            return (gs_strategy)s;
    return GS_STRATEGY_COUNT;
}

gs_status gs_axis_check(const gs_array *a, const int64_t shape[3], int op, const gs_array *out, int64_t *nout)
{
    if (op < GS_AXIS_SUM || op > GS_AXIS_CUMSUM)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: unknown operation %d", op);
    if (shape[0] < 0 || shape[1] < 0 || shape[2] < 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: negative extent");
    if (out->device != a->device)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: a and out must both be on the host or on device %d",
                       a->device);
    if (out->length > 1 && out->stride != 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: out must be contiguous");
    *nout = shape[0] * shape[2] * (op == GS_AXIS_CUMSUM ? shape[1] : 1);
    if (out->length != *nout)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: out has %lld elements, expected %lld",
                       (long long)out->length, (long long)*nout);
    const int fa = gs_dtype_is_float(a->dtype), fo = gs_dtype_is_float(out->dtype);
    if (op == GS_AXIS_COUNT_NONZERO ? out->dtype != GS_INT64 : fa != fo)
        return gs_fail(GS_ERR_TYPE, "reduce_axis: out dtype %d does not fit input dtype %d", (int)out->dtype,
                       (int)a->dtype);
    return GS_OK;
}

size_t gs_dtype_size(gs_dtype dt)
{
    static const size_t sizes[GS_DTYPE_COUNT] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8};
    return (dt >= 0 && dt < GS_DTYPE_COUNT) ? sizes[dt] : 0;
}

int gs_hist_replicas(int64_t nbins, int weighted, int64_t smem_optin)
{
    int64_t counter = weighted ? 8 : 4;
    int r = GS_HIST_MAX_REPLICAS;
    while (r > 1 && nbins * r * counter > GS_HIST_SMEM_BUDGET)
        r /= 2;
    /* one copy may still fit when it takes a whole SM's opt-in budget
     * (less the 1 KB lookup table every histogram kernel keeps) */
    return nbins * r * counter <= smem_optin - GS_HIST_STATIC_SMEM ? r : 0;
}

int gs_hist_cluster_shape(int64_t nbins, int weighted, int64_t smem_optin, int *sshift)
{
    const int64_t counter = weighted ? 8 : 4, room = smem_optin - GS_HIST_STATIC_SMEM;
    for (int c = 1; c <= GS_HIST_CLUSTER_MAX; c *= 2) {
        int s = 0;
        while (((int64_t)1 << s) * c < nbins)
            s++;
        if (((int64_t)1 << s) * counter <= room) {
            *sshift = s;
            return c;
        }
    }
    return 0;
}

int gs_hist_halves_fit(int64_t nbins, int weighted, int64_t smem_optin)
{
    return !weighted && nbins > 0 && nbins <= gs_hist_halves_max(smem_optin);
}

int64_t gs_hist_halves_max(int64_t smem_optin)
{
    /* the kernel's static shared memory (its bin tables: GS_HIST_STATIC_SMEM, 6,176 bytes as ptxas lays them
     * out) rounded up to 16 bytes; the halves in whole 16-byte units of 8 */
    const int64_t room = smem_optin - (GS_HIST_STATIC_SMEM + 15) / 16 * 16;
    return room > 0 ? room / 16 * 8 : 0;
}

int gs_bincount_first_takes(gs_dtype dt)
{
    return dt == GS_INT16 || dt == GS_UINT16 || dt == GS_INT32 || dt == GS_UINT32 || dt == GS_INT64;
}

gs_status gs_bincount_first_check(const gs_array *x, const gs_array *out, int host)
{
    if (!gs_bincount_first_takes(x->dtype))
        return gs_fail(GS_ERR_TYPE, "bincount_first: x must be int16, uint16, int32, uint32 or int64");
    const int placed = host ? x->device == GS_HOST && out->device == GS_HOST
                            : x->device != GS_HOST && out->device == x->device;
    if (!placed || out->dtype != GS_INT64 || out->stride != 1 || out->length < 1 ||
        out->length > GS_BINCOUNT_FIRST_BINS || x->length < 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "bincount_first: x and out (1 to %d contiguous int64) %s",
                       GS_BINCOUNT_FIRST_BINS, host ? "on the host" : "on one device");
    return GS_OK;
}

int gs_bincount_min_to_max(int64_t lo, int64_t hi)
{
    /* 2 (hi - lo + 1) <= hi + 1, i.e. 2 lo > hi, without overflow */
    return lo >= 0 && lo <= hi && hi >= GS_BINCOUNT_FIRST_BINS && lo > hi - lo;
}

int gs_hist_bins_have_formula(const gs_hist_bins *bins)
{
    if (bins->kind == GS_BINS_UNIFORM)
        return 1;
    return (bins->kind == GS_BINS_DIRECT || bins->kind == GS_BINS_LUT) && bins->step > 0 && bins->stop > bins->start &&
           isfinite(bins->start) && isfinite(bins->stop);
}

gs_status gs_hist_bins_check(const gs_hist_bins *bins, const gs_array *x, const gs_array *out, const gs_array *edges)
{
    if (gs_dtype_size(x->dtype) == 1 && bins->kind != GS_BINS_DIRECT && bins->kind != GS_BINS_LUT)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "bins: 8-bit inputs are binned by their raw byte: a direct "
                                                "description or a lookup table (lut), not '%s'",
                       gs_bins_kind_name(bins->kind));
    if (bins->kind == GS_BINS_LUT) { /* (its bins index the results: none past them) */
        if (!bins->lut || gs_dtype_size(x->dtype) != 1)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "bins: a lookup table (lut) bins 8-bit inputs only, and needs "
                                                    "its 256 entries");
        for (int v = 0; v < 256; v++)
            if (bins->lut[v] < -1 || bins->lut[v] >= bins->nbins)
                return gs_fail(GS_ERR_INVALID_ARGUMENT,
                               "bins: lut[%d] = %d; every entry must be a bin (0 .. nbins - 1 = %lld) or -1",
                               v, (int)bins->lut[v], (long long)bins->nbins - 1);
    }
    if (!edges)
        return GS_OK;
    if (!gs_hist_bins_have_formula(bins))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "edges: only an equal-width (uniform) description, or a direct / "
                                                "lut one carrying its edges' formula (step > 0), has a formula");
    if (edges->length != bins->nbins + 1 || edges->device != out->device ||
        (edges->dtype != GS_FLOAT32 && edges->dtype != GS_FLOAT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "edges must hold nbins + 1 float32 or float64 elements where out is");
    return GS_OK;
}

void gs_hist_edges_fill_host(const gs_hist_bins *bins, gs_array *edges)
{
    const gs_uniform u = gs_uniform_of_bins(bins);
    for (int64_t k = 0; k <= bins->nbins; k++)
        gs_formula_edge_put(&u, edges->data, edges->dtype == GS_FLOAT32, edges->stride, k);
}

gs_strategy gs_hist_auto_strategy(const gs_hist_shape *s)
{
    if (s->cc_major == 0) /* CPU threads */
        return s->nbins <= GS_CPU_PRIVATE_MAX_BINS ? GS_STRATEGY_SHARED : GS_STRATEGY_GLOBAL;
    int r = gs_hist_replicas(s->nbins, s->weighted, s->smem_per_block_optin);
    if (r >= (s->weighted ? GS_HIST_AUTO_MIN_REPLICAS_WEIGHTED : GS_HIST_AUTO_MIN_REPLICAS))
        return GS_STRATEGY_SHARED;
    if (r >= 1)
        return GS_STRATEGY_WARP;
    /* 16-bit shared halves: one pass at shared-atomic speed (65,536 bins on
     * sm_90); the cluster's distributed-shared-memory atomics measured 13%
     * of read there */
    if (gs_hist_halves_fit(s->nbins, s->weighted, s->smem_per_block_optin))
        return GS_STRATEGY_SHARED;
    /* a cluster, for weighted sums that one holds.  Not for counts: the
     * halves hold twice what a block's power-of-two slice of 32-bit counters
     * does, so counts past them need a cluster of 4 or more blocks, and 4
     * lost to global atomics (100,000 float32 bins, 128M: cluster 1,892 /
     * global 1,506 us on the H200, r187; 1,889 / 1,683 us on the H100, r188;
     * a cluster of 2 won on 65,536 bins, 832 / 1,457 us, where the halves
     * take them anyway).  Weighted sums: not measured against global. */
    int sshift;
    if (s->cc_major >= 9 && s->weighted && gs_hist_cluster_shape(s->nbins, 1, s->smem_per_block_optin, &sshift))
        return GS_STRATEGY_CLUSTER;
    return GS_STRATEGY_GLOBAL;
}

gs_status gs_reduce_resolve(gs_strategy *s, int deterministic, int is_float, int has_warps, int *tiles)
{
    if (*s == GS_STRATEGY_AUTO)
        *s = has_warps ? GS_STRATEGY_THREADFENCE : GS_STRATEGY_TWO_PASS;
    switch (*s) {
    case GS_STRATEGY_WARP:
        if (!has_warps)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "strategy 'warp' needs the cuda backend (CPU threads have no warps)");
        /* fall through */
    case GS_STRATEGY_ATOMIC:
    case GS_STRATEGY_MUTEX:
        if (deterministic && is_float)
            return gs_fail(GS_ERR_INVALID_ARGUMENT,
                           "strategy '%s' adds floating-point results in arrival order, so it cannot be "
                           "deterministic; use 'two-pass', 'threadfence', 'grid' or 'auto'",
                           gs_strategy_name(*s));
        *tiles = 0;
        return GS_OK;
    case GS_STRATEGY_TWO_PASS:
    case GS_STRATEGY_THREADFENCE:
    case GS_STRATEGY_GRID: *tiles = deterministic != 0; return GS_OK;
    default:
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "strategy '%s' is not a reduction strategy (atomic, mutex, two-pass, threadfence, grid, warp, auto)",
                       gs_strategy_name(*s));
    }
}

gs_dtype gs_cumsum_dtype(gs_dtype in)
{
    switch (in) {
    case GS_UINT8:
    case GS_UINT16:
    case GS_UINT32:
    case GS_UINT64: return GS_UINT64;
    case GS_FLOAT16:
    case GS_FLOAT32:
    case GS_FLOAT64: return in;
    default: return GS_INT64;
    }
}

gs_status gs_scan_resolve(gs_strategy *s, gs_dtype in, gs_dtype out)
{
    if (*s == GS_STRATEGY_AUTO)
        *s = GS_STRATEGY_LOOKBACK;
    if (*s != GS_STRATEGY_LOOKBACK && *s != GS_STRATEGY_BARRIER && *s != GS_STRATEGY_RELAUNCH)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "strategy '%s' is not a cumsum strategy (lookback, barrier, relaunch, auto)",
                       gs_strategy_name(*s));
    if ((int)in < 0 || in >= GS_DTYPE_COUNT)
        return gs_fail(GS_ERR_TYPE, "unsupported input dtype %d", (int)in);
    if (out != gs_cumsum_dtype(in))
        return gs_fail(GS_ERR_TYPE, "cumsum: out must have NumPy's result dtype for this input");
    return GS_OK;
}
