/*
 * guess.cuh -- the equal-width guess of a value's bin and the fraction
 * window that makes it exact without reading an edge, shared by
 * histogramdd (histdd.cu) and the privatized binned statistics
 * (binstat_priv.cu).
 *
 * t = (v - lo) * scale (one rounded subtraction, one rounded product),
 * k = floor(t) and fr = t - k.  The host computes t at every edge e[k] with
 * the very same operations (gs_guess_window) and finds a window (mlo, mhi)
 * with mlo >= max |t(e[k]) - k|, mhi <= 1 - mlo.  Since t is non-decreasing
 * in v, mlo < fr < mhi means t(e[k]) < t < t(e[k + 1]), i.e.
 * e[k] <= v < e[k + 1]: the bin is k, decided without an edge.  A value
 * outside the window (near an edge, out of range, NaN) is binned the usual
 * way (the guess's two edges, else a search).
 */
#pragma once

#include <math.h>
#include <stdint.h>

/* k = floor(t) for 0 <= t < 2^23 (float) / 2^52 (double), else k < 0 or
 * k >= 2^23 / 2^52 (NaN, +-inf included); *fr = t - k exactly. */
__device__ __forceinline__ int gs_guess_floor_frac(float t, float *fr)
{
    const float u = __fadd_rd(t, 8388608.0f);
    *fr = __fsub_rn(t, __fsub_rn(u, 8388608.0f));
    return __float_as_int(u) - 0x4B000000;
}
__device__ __forceinline__ int64_t gs_guess_floor_frac(double t, double *fr)
{
    const double u = __dadd_rd(t, 4503599627370496.0);
    *fr = __dsub_rn(t, __dsub_rn(u, 4503599627370496.0));
    return __double_as_longlong(u) - 0x4330000000000000ll;
}
/* t, each operation rounded on its own (no contraction: the host's window
 * assumes exactly these roundings) */
__device__ __forceinline__ float gs_guess_t(float v, float lo, float scale)
{
    return __fmul_rn(__fsub_rn(v, lo), scale);
}
__device__ __forceinline__ double gs_guess_t(double v, double lo, double scale)
{
    return __dmul_rn(__dsub_rn(v, lo), scale);
}

namespace gs_guess_detail {
inline float next_toward(float x, float to) { return nextafterf(x, to); }
inline double next_toward(double x, double to) { return nextafter(x, to); }
/* an edge as E: float32 edges rounded up (a float32 x >= e exactly when x >=
 * e rounded up to a float32; for edges that are float32 values it is the
 * edge itself) */
inline float edge_as(double e, float)
{
    float f = (float)e;
    if ((double)f < e)
        f = nextafterf(f, INFINITY);
    return f;
}
inline double edge_as(double e, double) { return e; }

/* g = {lo, scale, mlo, mhi} in E for m edges e: t computed at every edge as
 * the kernel computes it (one rounded subtraction, one rounded product: no
 * contraction on the host either -- t is stored through a volatile, since a
 * host compiler that contracts a * b - c into an FMA, as GCC does in C++
 * where FMA exists, must not skip the product's rounding), mlo the largest
 * |t(e[k]) - k| rounded up and above 0 (a t on an integer is checked against
 * the edges), mhi = 1 - mlo rounded down.  A window of 0.25 or more (uneven
 * edges), or a NaN, accepts nothing: mlo = 2, mhi = -1. */
template <class E> void window_of(const double *e, int64_t m, double scale, E *g)
{
    const E lo = edge_as(e[0], E()), sc = (E)scale;
    double worst = 0;
    for (int64_t k = 0; k < m && worst < 0.25; k++) {
        const E diff = edge_as(e[k], E()) - lo;
        const volatile E t = diff * sc; /* rounded here: the host compiler may not fuse it with "- k" below */
        const double dev = fabs((double)t - (double)k);
        worst = dev > worst ? dev : (dev == dev ? worst : 1.0); /* NaN: no window */
    }
    g[0] = lo, g[1] = sc;
    if (!(worst < 0.25)) {
        g[2] = (E)2, g[3] = (E)-1;
        return;
    }
    E lo_w = (E)worst;
    if ((double)lo_w < worst || lo_w == 0)
        lo_w = next_toward(lo_w, (E)1);
    E hi_w = (E)(1.0 - (double)lo_w);
    if ((double)hi_w > 1.0 - (double)lo_w)
        hi_w = next_toward(hi_w, (E)0);
    g[2] = lo_w, g[3] = hi_w;
}
} // namespace gs_guess_detail

/* The window of m edges e (m >= 2) for the type a kernel bins in: gd
 * (float64: lo, scale, mlo, mhi) and / or gf (float32; the edges rounded up,
 * as a float32 x is compared with them); either may be NULL (each costs a
 * pass over the edges: ~1.4 us of host time a call for two 257-edge
 * dimensions, r70). */
inline void gs_guess_window(const double *e, int64_t m, double scale, double *gd, float *gf)
{
    if (gd)
        gs_guess_detail::window_of<double>(e, m, scale, gd);
    if (gf)
        gs_guess_detail::window_of<float>(e, m, scale, gf);
}
