/*
 * binning.h -- value -> bin index, shared by the CPU backend (C11) and the
 * CUDA kernels, so that both backends bin every value identically.
 *
 * The rules are NumPy's (numpy/lib/_histograms_impl.py): bin k holds
 * e[k] <= x < e[k+1], the last bin is closed, values outside [e[0], e[n]] and
 * NaN are dropped.  For equal-width bins NumPy estimates k from
 * (x - e[0]) * n / (e[n] - e[0]) and then corrects it by one step using the
 * edges; we do the same with edges recomputed from a formula that the Python
 * layer verified to reproduce np.linspace's edges bit for bit.
 *
 * Floating-point here must not be contracted into FMAs: the device side uses
 * the _rn intrinsics, the host side is compiled with -ffp-contract=off.
 */
#ifndef GPUSYNC_BINNING_H
#define GPUSYNC_BINNING_H

#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GS_HD __host__ __device__ __forceinline__
#else
#define GS_HD static inline
#endif

/* Replicas (a power of two <= GS_HIST_MAX_REPLICAS) of a shared-memory
 * histogram of nbins 32-bit counters (64-bit sums when weighted) that fit one
 * block; 0 when not even one copy fits in `smem_optin` bytes. */
#ifdef __cplusplus
extern "C"
#endif
    int
    gs_hist_replicas(int64_t nbins, int weighted, int64_t smem_optin);

/* Strategy `cluster` (sm_90+): the smallest power-of-two cluster of at most
 * GS_HIST_CLUSTER_MAX blocks whose blocks' power-of-two slices of the bins
 * (*sshift: log2 of a slice) hold nbins counters (64-bit sums when weighted)
 * in smem_optin bytes each; 0 when even the largest cluster cannot (the one
 * rule of auto, hist.cu's check and hist_cluster.cu's launch). */
#ifdef __cplusplus
extern "C"
#endif
    int
    gs_hist_cluster_shape(int64_t nbins, int weighted, int64_t smem_optin, int *sshift);

/* Nonzero when an unweighted histogram of nbins fits one block as 16-bit
 * halves of 32-bit shared words (strategy `shared` where 32-bit counters do
 * not fit: csrc/cuda/hist_halves.cu). */
#ifdef __cplusplus
extern "C"
#endif
    int
    gs_hist_halves_fit(int64_t nbins, int weighted, int64_t smem_optin);
/* The most bins the 16-bit halves hold in smem_optin bytes. */
#ifdef __cplusplus
extern "C"
#endif
    int64_t
    gs_hist_halves_max(int64_t smem_optin);

/* Everything a kernel needs to bin a value, passed by value (1.1 KB). */
typedef struct gs_binner {
    int32_t kind;
    int32_t closed_top;
    int32_t arith_f32;
    int32_t edges_f32;
    int64_t nbins;
    int64_t offset;
    double start, step, stop, scale, lo, margin;
    /* float copies for the float path; half_f = 0.5 - margin less 2^-23 (the rounding of this float and of
     * the estimate's distance to k + 0.5: an estimate f within half_f of k + 0.5 lies in bin k) */
    float lo_f, stop_f, scale_f, half_f;
    /* the float path's one-instruction estimate fmaf(x, scale_f, off_f), off_f = -lo * scale:
     * its error margin (the margin plus the rounding of off_f and of x * scale_f, kept 4x wide) as
     * half_fma_f; fma_f: that margin stays small enough (|lo * scale| <= 4 nbins) to use it */
    float off_f, half_fma_f;
    int32_t fma_f;
    const double *edges; /* GS_BINS_EDGES: memory the executing side can read */
    int32_t lut[256];
} gs_binner;

/* One rounding step, never fused: the device's round-to-nearest intrinsic,
 * or the plain C operation (the CPU build has -ffp-contract=off). */
#ifdef __CUDA_ARCH__
#define GS_RN(intrinsic, a, op, b) intrinsic(a, b)
#else
#define GS_RN(intrinsic, a, op, b) ((a) op (b))
#endif
GS_HD float gs_fmul(float a, float b) { return GS_RN(__fmul_rn, a, *, b); }
GS_HD float gs_fadd(float a, float b) { return GS_RN(__fadd_rn, a, +, b); }
GS_HD double gs_dmul(double a, double b) { return GS_RN(__dmul_rn, a, *, b); }
GS_HD double gs_dadd(double a, double b) { return GS_RN(__dadd_rn, a, +, b); }
#undef GS_RN

/* A GS_BINS_UNIFORM description's edge formula alone (40 bytes: what a
 * device function kept out of line takes by value -- a reference to the
 * 1.1 KB binner made every kernel that could call one copy the binner to
 * its stack). */
typedef struct gs_uniform {
    int64_t nbins;
    double start, step, stop;
    int32_t arith_f32, edges_f32;
} gs_uniform;

GS_HD gs_uniform gs_uniform_of(const gs_binner *b)
{
    gs_uniform u = {b->nbins, b->start, b->step, b->stop, b->arith_f32, b->edges_f32};
    return u;
}

/* Edge k of a GS_BINS_UNIFORM description, exactly as np.linspace made it. */
GS_HD double gs_formula_edge(const gs_uniform *u, int64_t k)
{
    if (k >= u->nbins)
        return u->stop;
    if (u->arith_f32)
        return (double)gs_fadd(gs_fmul((float)k, (float)u->step), (float)u->start);
    double e = gs_dadd(gs_dmul((double)k, u->step), u->start);
    return u->edges_f32 ? (double)(float)e : e;
}
GS_HD double gs_uniform_edge(const gs_binner *b, int64_t k)
{
    const gs_uniform u = gs_uniform_of(b);
    return gs_formula_edge(&u, k);
}
/* The formula of a GS_BINS_UNIFORM description, without building a binner. */
GS_HD gs_uniform gs_uniform_of_bins(const gs_hist_bins *bins)
{
    gs_uniform u = {bins->nbins, bins->start, bins->step, bins->stop, bins->arith_f32, bins->edges_f32};
    return u;
}
/* edges[k * stride] = edge k, float32 when e32: the one store of formula
 * edges (ops->uniform_edges, and ops->histogram's `edges` on both engines). */
GS_HD void gs_formula_edge_put(const gs_uniform *u, void *edges, int e32, int64_t stride, int64_t k)
{
    const double e = gs_formula_edge(u, k);
    if (e32)
        ((float *)edges)[k * stride] = (float)e;
    else
        ((double *)edges)[k * stride] = e;
}

GS_HD void gs_binner_init(gs_binner *b, const gs_hist_bins *bins, const double *edges)
{
    memset(b, 0, sizeof *b);
    b->kind = (int32_t)bins->kind;
    b->closed_top = bins->closed_top;
    b->arith_f32 = bins->arith_f32;
    b->edges_f32 = bins->edges_f32;
    b->nbins = bins->nbins;
    b->offset = bins->offset;
    b->start = bins->start;
    b->step = bins->step;
    b->stop = bins->stop;
    b->scale = bins->scale;
    b->edges = edges;
    if (bins->kind == GS_BINS_LUT)
        memcpy(b->lut, bins->lut, sizeof b->lut);
    b->lo = bins->kind == GS_BINS_UNIFORM ? gs_uniform_edge(b, 0) : 0.0;
    b->margin = bins->margin < 0.5 ? bins->margin : 0.5;
    b->lo_f = (float)b->lo;
    b->stop_f = (float)b->stop;
    b->scale_f = (float)b->scale;
    b->half_f = (float)(0.5 - b->margin - 0x1p-23); /* (< 0 for a margin of 0.5: nothing accepted) */
    {
        const double ls = -b->lo * b->scale, als = ls < 0 ? -ls : ls;
        b->off_f = (float)ls;
        /* fmaf(x, scale_f, off_f) is within (nbins + |ls|) * 2^-23 of (x - lo) * scale for x in range:
         * the existing margin covers the nbins part 8x over; add |ls| * 2^-21 (4x) */
        const double m = b->margin + als * 0x1p-21;
        b->half_fma_f = (float)(0.5 - (m < 0.5 ? m : 0.5) - 0x1p-23);
        b->fma_f = bins->kind == GS_BINS_UNIFORM && als <= 4.0 * (double)b->nbins && m < 0.25;
    }
}

/* IEEE half -> float, exact (host and device alike). */
GS_HD float gs_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* GS_BINS_DIRECT: integer values (as 64-bit two's complement). */
GS_HD int64_t gs_bin_direct(const gs_binner *b, uint64_t x)
{
    uint64_t d = x - (uint64_t)b->offset;
    if (d < (uint64_t)b->nbins)
        return (int64_t)d;
    return (b->closed_top && d == (uint64_t)b->nbins) ? b->nbins - 1 : -1;
}

/* 8-bit inputs whose bins are the byte values themselves: byte v counts in
 * bin v (unit bins from 0, at least 256 of them) -- the kernels' identity
 * case, no table. */
GS_HD int gs_bins_are_bytes(const gs_binner *b)
{
    return b->kind == GS_BINS_DIRECT && b->offset == 0 && b->nbins >= 256;
}

/* 8-bit inputs: the LUT, or DIRECT on the raw byte. */
GS_HD int64_t gs_bin_byte(const gs_binner *b, uint8_t v)
{
    return b->kind == GS_BINS_LUT ? b->lut[v] : gs_bin_direct(b, v);
}

/* The bin of x (lo <= x <= stop) from an estimate k in [0, n-1]: k itself
 * or its neighbour when the estimate is off by one (the common case near an
 * edge), else a binary search over the formula's edges -- at most
 * 2 + log2(n) edge evaluations whatever the estimate, so a bad scale (edges
 * too close for it to be finite) costs time, never a runaway loop. */
GS_HD int64_t gs_formula_correct(const gs_uniform *u, double x, int64_t k)
{
    const int64_t n = u->nbins;
    int64_t lo, hi; /* e(lo) <= x < e(hi), or x == e(n) with hi == n */
    if (x < gs_formula_edge(u, k)) {
        if (k > 0 && x >= gs_formula_edge(u, k - 1))
            return k - 1;
        lo = 0;
        hi = k;
    } else {
        if (k >= n - 1 || x < gs_formula_edge(u, k + 1))
            return k;
        lo = k + 1;
        hi = n;
    }
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (gs_formula_edge(u, mid) <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo < n ? lo : n - 1;
}
GS_HD int64_t gs_uniform_correct(const gs_binner *b, double x, int64_t k)
{
    const gs_uniform u = gs_uniform_of(b);
    return gs_formula_correct(&u, x, k);
}

/* GS_BINS_UNIFORM and GS_BINS_EDGES on a value converted to double. */
GS_HD int64_t gs_bin_real(const gs_binner *b, double x)
{
    const int64_t n = b->nbins;
    if (b->kind == GS_BINS_UNIFORM) {
        if (!(x >= b->lo && x <= b->stop))
            return -1; /* outside, or NaN */
        const double f = (x - b->lo) * b->scale;
        /* f is in [0, n] up to rounding when the scale is finite; clamp it
         * before converting (a NaN or infinite f must not reach the cast) */
        int64_t k = f >= 0.0 ? (f < (double)n ? (int64_t)f : n - 1) : 0;
        const double fr = f - (double)k;
        if (fr > b->margin && fr < 1.0 - b->margin)
            return k; /* far from every edge (see gs_hist_bins.margin) */
        return gs_uniform_correct(b, x, k);
    }
    const double *e = b->edges;
    if (!(x >= e[0]))
        return -1;
    if (x >= e[n])
        return x == e[n] ? n - 1 : -1;
    int64_t lo = 0, hi = n; /* e[lo] <= x < e[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* GS_BINS_EDGES_INT: 64-bit integers against integer edges of the same
 * signedness, compared exactly (binary search; the rules of GS_BINS_EDGES). */
#define GS_BIN_INT_SEARCH(NAME, T)                                                                            \
    GS_HD int64_t NAME(const gs_binner *b, T x)                                                               \
    {                                                                                                         \
        const T *e = (const T *)(const void *)b->edges;                                                      \
        const int64_t n = b->nbins;                                                                           \
        if (x < e[0])                                                                                         \
            return -1;                                                                                        \
        if (x >= e[n])                                                                                        \
            return x == e[n] ? n - 1 : -1;                                                                    \
        int64_t lo = 0, hi = n; /* e[lo] <= x < e[hi] */                                                    \
        while (hi - lo > 1) {                                                                                 \
            const int64_t mid = lo + (hi - lo) / 2;                                                           \
            if (e[mid] <= x)                                                                                  \
                lo = mid;                                                                                     \
            else                                                                                              \
                hi = mid;                                                                                     \
        }                                                                                                     \
        return lo;                                                                                            \
    }
GS_BIN_INT_SEARCH(gs_bin_i64, int64_t)
GS_BIN_INT_SEARCH(gs_bin_u64, uint64_t)
#undef GS_BIN_INT_SEARCH

/* Bin of element i of an array of dtype `dt` (host or device pointer `p`).
 * The 8-bit dtypes use the LUT or DIRECT on the raw byte. */
GS_HD int64_t gs_bin_of(const gs_binner *b, const void *p, int dt, int64_t i)
{
    switch (dt) {
    case GS_BOOL:
    case GS_INT8:
    case GS_UINT8:
        return gs_bin_byte(b, ((const uint8_t *)p)[i]);
    case GS_INT16: {
        int16_t v = ((const int16_t *)p)[i];
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, (uint64_t)(int64_t)v) : gs_bin_real(b, (double)v);
    }
    case GS_UINT16: {
        uint16_t v = ((const uint16_t *)p)[i];
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, v) : gs_bin_real(b, (double)v);
    }
    case GS_INT32: {
        int32_t v = ((const int32_t *)p)[i];
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, (uint64_t)(int64_t)v) : gs_bin_real(b, (double)v);
    }
    case GS_UINT32: {
        uint32_t v = ((const uint32_t *)p)[i];
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, v) : gs_bin_real(b, (double)v);
    }
    case GS_INT64: {
        int64_t v = ((const int64_t *)p)[i];
        if (b->kind == GS_BINS_EDGES_INT)
            return gs_bin_i64(b, v);
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, (uint64_t)v) : gs_bin_real(b, (double)v);
    }
    case GS_UINT64: {
        uint64_t v = ((const uint64_t *)p)[i];
        if (b->kind == GS_BINS_EDGES_INT)
            return gs_bin_u64(b, v);
        return b->kind == GS_BINS_DIRECT ? gs_bin_direct(b, v) : gs_bin_real(b, (double)v);
    }
    case GS_FLOAT16:
        return gs_bin_real(b, (double)gs_half_to_float(((const uint16_t *)p)[i]));
    case GS_FLOAT32:
        return gs_bin_real(b, (double)((const float *)p)[i]);
    default:
        return gs_bin_real(b, ((const double *)p)[i]);
    }
}

/* A weight as double (weights are float32 or float64; the Python layer
 * converts other dtypes first). */
GS_HD double gs_weight_of(const void *w, int dt, int64_t i)
{
    return dt == GS_FLOAT32 ? (double)((const float *)w)[i] : ((const double *)w)[i];
}

#endif /* GPUSYNC_BINNING_H */
