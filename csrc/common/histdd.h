/*
 * histdd.h -- numpy.histogramdd's bin of one value, shared by the CPU engine
 * (csrc/cpu/histdd.c) and the CUDA kernel (csrc/cuda/histdd.cu) so both
 * bin every value exactly as NumPy does (issue 15).
 */
#ifndef GPUSYNC_HISTDD_H
#define GPUSYNC_HISTDD_H

#include "binning.h" /* GS_HD, gs_half_to_float */

#include <stdint.h>

/* numpy.histogramdd for one dimension with m >= 2 non-decreasing edges e:
 * c = the number of edges <= v (searchsorted 'right'), less one when v
 * equals the last edge; the value is counted in bin c - 1 when 1 <= c <= m
 * - 1.  Returns that bin, or -1 (below, above, NaN).  `scale` ((m - 1) /
 * (e[m-1] - e[0]), or 0) only guesses the bin -- the guess is checked
 * against the edges, and a binary search (at most log2(m) steps) decides
 * otherwise -- so any edges give NumPy's bin. */
GS_HD int64_t gs_histdd_bin(const double *e, int64_t m, double scale, double v)
{
    if (!(v >= e[0]) || v > e[m - 1])
        return -1;
    if (v == e[m - 1])
        return m - 2;
    if (scale > 0) { /* e[0] <= v < e[m - 1] */
        const double t = (v - e[0]) * scale;
        int64_t b = t < (double)(m - 2) ? (int64_t)t : m - 2;
        if (e[b] <= v && v < e[b + 1])
            return b;
        if (b + 2 < m && e[b + 1] <= v && v < e[b + 2])
            return b + 1;
        if (b > 0 && e[b - 1] <= v && v < e[b])
            return b - 1;
    }
    int64_t lo = 0, hi = m - 1; /* e[lo] <= v < e[hi] */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (e[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The guess's scale for m edges (0 when they span nothing finite). */
static inline double gs_histdd_scale(const double *e, int64_t m)
{
    const double span = e[m - 1] - e[0];
    const double s = (double)(m - 1) / span;
    return span > 0 && s > 0 && s < 1e300 ? s : 0.0;
}

#endif /* GPUSYNC_HISTDD_H */
