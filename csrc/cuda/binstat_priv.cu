/*
 * binned_statistic, binned_statistic_2d and binned_statistic_dd (CUDA
 * backend), strategy "privatized": lock-free per-block partials in shared
 * memory (issues 14 and 15).  The mutex strategies ("shared", "global",
 * csrc/cuda/binstat.cu) stay as the seed's technique (seed 001 ex 4.5).
 *
 * Every element is binned per dimension exactly as SciPy does it
 * (np.digitize on the edges, and x in [e[n], top] moved into the last bin;
 * NaN above): an equal-width guess checked against the edges held in
 * shared memory, else a binary search.  Its flat bin number (SciPy's C-order
 * numbering with one outlier bin on each side of every dimension) is
 * written when asked; a point inside every dimension's edges adds its value
 * to its inner bin's partials:
 *
 *   count      uint32 n                               atomicAdd
 *   sum        float64 s1                             atomicAdd
 *   mean       n, s1                                  atomicAdd each
 *   std, var   n, s1 = sum v, s2 = sum v^2            atomicAdd each (float64)
 *   min, max   the float's bits as an ordered integer  atomicMin / atomicMax
 *
 * Each block keeps R copies of the partials (lane or warp w updates copy w %
 * R: copies_by_lane; R a power of two chosen so that two blocks fit an SM), loads 16 bytes per
 * coordinate / value array where they are contiguous and aligned, and adds
 * a warp's values with one atomic when all the points of its 32 lanes' group
 * fall into one bin (sorted data, one bin; one test a group: finish()).  At the end each block adds its non-empty
 * partials to float64 / uint64 global partials with global atomics (no
 * lock anywhere), and a last kernel forms SciPy's result.  The order of the
 * float64 additions varies from run to run (there is no `deterministic`
 * option for binned statistics): sum and mean are within the usual bound
 * of a float64 sum, |error| <= (m - 1) * 2^-53 * sum |v| for a bin of m
 * values (float32 values accumulate in float64).
 *
 * std / var from one pass of (n, s1, s2) lose accuracy when a bin's mean is
 * large against its spread.  The result kernel therefore checks each bin's
 * condition s2 / (s2 - s1^2 / n) (= 1 + mean^2 / var): when it exceeds
 * STD_COND (1024), or s2 overflowed while s1 did not, the bin is marked,
 * and a second pass -- launched always, it returns at once when no bin is
 * marked -- sums (v - mean)^2 for the marked bins only, SciPy's own
 * two-pass formula.  So every bin's variance is either SciPy's formula or a
 * one-pass value with relative error <= 1024 * (m + 2) * 2^-53.
 * A bin of one point always fails that check (its m2 is 0), and so do many
 * bins of two or three: the sparse tails of a normal x made every 32M-point
 * std call pay the second pass (r194, H200: 561 us on normal x against 356
 * on uniform x).  So when a block adds its partials of a bin to the global
 * ones and the bin's count so far (the count atomic's old value, plus the
 * block's) is at most SINGLES, each of the block's copies of that bin that
 * holds one point -- whose s1 is that point's value, exactly -- puts the
 * value into the bin's SINGLES slots.  A bin of at most SINGLES points thus
 * finds every point in its slots (each block saw a count so far no larger
 * than the bin's), and one that fails the check takes SciPy's two-pass
 * formula on them when all its points are single cells; only the others
 * are marked.  A bin fills at most SINGLES slots: the cost is bounded by
 * SINGLES * nbins atomics on distinct counters.
 *
 * Where the points outnumber the edges 256 to 1, on a device whose memory
 * feeds its SMs fast enough (window_pays), the host also computes each
 * dimension's guess window (guess.cuh): a point whose equal-width guess
 * falls inside it takes its bin without reading the two edges from shared
 * memory, whose pipe the partials' atomics share.
 *
 * min / max follow SciPy (its lexsort puts NaN last): min skips NaN (NaN
 * when a bin holds no other value), max is NaN when its bin holds a NaN.
 * The ordered encoding puts -0.0 below +0.0 (SciPy returns whichever zero
 * comes first; they compare equal).
 */
#include "guess.cuh"
#include "internal.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace {

#ifndef GS_BINSTAT_THREADS
#define GS_BINSTAT_THREADS 512
#endif
/* a block; BLOCKS_SM of them fill an SM's 1,024 threads.  1,024 (one block an SM, twice the copies: 2-D
 * 64 x 64 mean with 4 instead of 2) measured the same as 512 on every case of r79 (r80, H200, ncu: within
 * 1 %) */
constexpr int THREADS = GS_BINSTAT_THREADS;
constexpr int BLOCKS_SM = 1024 / THREADS;
constexpr int MAXD = 8;                 /* dimensions this path bins (more: the pipelined path) */
constexpr int64_t MAX_INNER = 1 << 20;  /* inner bins (far beyond what fits in shared memory) */
constexpr double STD_COND = 1024.0;
/* std / var: a bin of at most SINGLES points whose one-pass value is not
 * trusted takes SciPy's two-pass value from its slots of single points
 * when every point is there; else the second pass. */
constexpr int SINGLES = 16;
constexpr unsigned FULL = 0xffffffffu;

enum { K_COUNT, K_SUM, K_MEAN, K_STD, K_MIN, K_MAX };

int kind_of(int stat)
{
    switch (stat) {
    case GS_STAT_COUNT: return K_COUNT;
    case GS_STAT_SUM: return K_SUM;
    case GS_STAT_MEAN: return K_MEAN;
    case GS_STAT_STD:
    case GS_STAT_VAR: return K_STD;
    case GS_STAT_MIN: return K_MIN;
    default: return K_MAX;
    }
}

struct priv_args {
    const void *coord[MAXD];
    int64_t cstride[MAXD];
    int64_t fstride[MAXD]; /* flat (with outlier bins) C-order strides */
    int istride[MAXD];     /* inner C-order strides */
    int eoff[MAXD];        /* offset of the dimension's edges in the edge array */
    int nb[MAXD];          /* bins of the dimension */
    double scale[MAXD];    /* equal-width guess: nb / (e[nb] - e[0]), or 0 */
    double top[MAXD];      /* the largest x SciPy puts into the last bin */
    const void *v;
    int64_t vstride;
    int64_t n;
    int ndim, nedges, nbins, replicas;
    int64_t *binnumber; /* or NULL */
    const double *edges;
    /* global partials */
    unsigned long long *g_cnt;
    double *g_s1, *g_s2;
    unsigned long long *g_key;
    /* std / var refinement */
    double *g_mean, *g_m2;
    int *g_flag;
    int *g_nflag;
    /* NULL or one word: bit 2d set when dimension d holds a NaN, bit 2d + 1
     * when it holds +-inf (SciPy's check that x is finite, made in the pass) */
    unsigned *nonfinite;
    /* guess windows (guess.cuh: lo, scale, mlo, mhi a dimension) of the type
     * the kernel bins in; all zero: none (every point checks its edges) */
    double gwin[4 * MAXD];
    float gwin32[4 * MAXD];
    /* std / var of few points (NULL: off): a bin's values of its copies that
     * held one point, while its count so far was at most SINGLES (g_single,
     * SINGLES slots a bin; g_nsingle of them filled) */
    int *g_nsingle;
    double *g_single;
};

/* Whose copy of the partials a thread adds to.  By lane (copy lane % R,
 * the R copies of a bin side by side: cell k * R + c): lanes l and l' of a
 * warp share a bank only when l % R == l' % R, so an atomic instruction on
 * random bins takes fewer bank-conflict passes; by warp (copy warp % R, one
 * copy after the other: cell k + c * nbins): every lane of a warp may
 * collide, but the warps of a block never meet on one address.  Lanes
 * where the partials take float64 adds (sum, mean, std: a loop of
 * compare-and-swap on the shared word, where each pass counts); warps for
 * the 32-bit counts, min and max (native atomics).  Measured (r77, H200,
 * ncu at base clocks, 32M points, lanes against warps): 1-D float64 mean
 * 281 -> 243 us, float32 mean 247 -> 203, float32 std 374 -> 333, 2-D
 * float32 mean (2 copies) 281 -> 278; 1-D float64 count 141 -> 163, 2-D
 * count 175 -> 187 (benchmarks/results/binstat_copies_H200_r77.txt; r79 with the choice fixed per kind at compile time:
 * 1-D float64 mean 280 -> 242, float32 sum 221 -> 180, every other case within 3 %). */
__host__ __device__ constexpr bool copies_by_lane(int kind) { return kind == K_SUM || kind == K_MEAN || kind == K_STD; }
/* (Tried and not kept: mean's (s1, n) and std's (s1, s2) in one 16-byte cell a bin, one 128-bit
 * compare-and-swap loop a point (sm_90 ATOMS.CAS.128) instead of a float64 CAS loop each and a 32-bit count
 * add: r119, H200, mean float64 +19-24 % time, float32 +58-76 %, std no faster, 2-D mean +13 %;
 * benchmarks/results/binstat_pairs_ab_H200_r119.txt.) */

/* Shared layout of the partials (bytes), per kind, key width and number of
 * copies R: one array per partial of nbins x R cells (copy c of bin k at
 * cell k * R + c by lane, k + c * nbins by warp: copies_by_lane). */
struct layout {
    size_t s1, s2, key, cnt, copy; /* offsets of the arrays, and their total size (16-byte multiple) */
};

layout layout_for(int kind, int nbins, size_t keybytes, int reps)
{
    layout L = {.s1 = 0, .s2 = 0, .key = 0, .cnt = 0, .copy = 0};
    const size_t cells = (size_t)nbins * (size_t)reps;
    size_t at = 0;
    if (kind == K_SUM || kind == K_MEAN || kind == K_STD) {
        L.s1 = at;
        at += cells * 8;
    }
    if (kind == K_STD) {
        L.s2 = at;
        at += cells * 8;
    }
    if (kind == K_MIN || kind == K_MAX) {
        L.key = at;
        at += (cells * keybytes + 7) & ~(size_t)7;
    }
    if (kind == K_COUNT || kind == K_MEAN || kind == K_STD) {
        L.cnt = at;
        at += cells * 4;
    }
    L.copy = (at + 15) & ~(size_t)15;
    return L;
}

/* The edges in shared memory, in the coordinates' precision. */
__host__ __device__ __forceinline__ size_t edge_bytes(int nedges, size_t es)
{
    return ((size_t)nedges * es + 15) & ~(size_t)15;
}

template <class T> struct key_of;
template <> struct key_of<float> {
    typedef unsigned type;
};
template <> struct key_of<double> {
    typedef unsigned long long type;
};

/* A float's bits as an unsigned integer in the float's order (-0.0 just
 * below +0.0); NaN gives all ones (above +inf): for min it is the "no value"
 * sentinel (NaN skipped), for max it wins (NaN result). */
__device__ __forceinline__ unsigned enc(float f)
{
    if (f != f)
        return 0xffffffffu;
    const unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ unsigned long long enc(double f)
{
    if (f != f)
        return ~0ull;
    const unsigned long long u = (unsigned long long)__double_as_longlong(f);
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}
/* 32-bit key -> 64-bit key of the same value (sentinels kept). */
__device__ __forceinline__ unsigned long long widen(unsigned k)
{
    if (k == 0u)
        return 0ull;
    if (k == 0xffffffffu)
        return ~0ull;
    const unsigned u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return enc((double)__uint_as_float(u));
}
__device__ __forceinline__ unsigned long long widen(unsigned long long k) { return k; }
__device__ __forceinline__ double dec(unsigned long long k)
{
    const unsigned long long u = (k & 0x8000000000000000ull) ? (k & 0x7fffffffffffffffull) : ~k;
    return __longlong_as_double((long long)u);
}

/* One dimension's binning in the coordinates' precision T.  A float32 x is
 * compared with float32 edges -- each float64 edge rounded up, `top` rounded
 * down -- which decides every comparison exactly as float64 does (x >= e
 * holds for a float32 x exactly when x >= e rounded up to a float32; x <= top
 * when x <= top rounded down), without converting x. */
template <class T> __device__ __forceinline__ T round_up(double v);
template <> __device__ __forceinline__ float round_up<float>(double v) { return __double2float_ru(v); }
template <> __device__ __forceinline__ double round_up<double>(double v) { return v; }
template <class T> __device__ __forceinline__ T round_down(double v);
template <> __device__ __forceinline__ float round_down<float>(double v) { return __double2float_rd(v); }
template <> __device__ __forceinline__ double round_down<double>(double v) { return v; }

template <class T> struct dimp {
    const T *e;          /* the edges (e[0] .. e[nb]) */
    T lo, hi, scale, top; /* e[0], e[nb], the equal-width guess's nb / (e[nb] - e[0]) or 0, top */
    T wlo, whi;           /* the guess's window (guess.cuh); wlo >= whi: none */
    int nb;
};

template <class T> __device__ __forceinline__ const T *window_of(const priv_args &r);
template <> __device__ __forceinline__ const float *window_of<float>(const priv_args &r) { return r.gwin32; }
template <> __device__ __forceinline__ const double *window_of<double>(const priv_args &r) { return r.gwin; }

/* Dimension d's constants; e: every dimension's edges in precision T;
 * WIN: the host's window for T applies (the second pass bins float32
 * coordinates in float64: no window). */
template <class T, bool WIN = true> __device__ __forceinline__ dimp<T> dim_of(const priv_args &r, const T *e, int d)
{
    dimp<T> p;
    p.wlo = WIN ? window_of<T>(r)[4 * d + 2] : (T)2;
    p.whi = WIN ? window_of<T>(r)[4 * d + 3] : (T)-1;
    p.e = e + r.eoff[d];
    p.nb = r.nb[d];
    p.lo = p.e[0];
    p.hi = p.e[p.nb];
    /* (a float32 guess whose scale overflows would be inf * 0: no guess then) */
    p.scale = sizeof(T) == 4 && !(r.scale[d] < 1e30) ? (T)0 : (T)r.scale[d];
    p.top = round_down<T>(r.top[d]);
    return p;
}

/* The rare cases of sbin: x outside [e[0], e[nb]) (NaN / +-inf x set bit
 * 2d / 2d + 1 of `bad`), or an equal-width guess b that missed (a binary
 * search on the side the check leaves). */
template <class T> __device__ __forceinline__ int sbin_rare(const dimp<T> &p, T x, int b, unsigned &bad, int d)
{
    if (!(x >= p.lo)) {
        if (x != x) {
            bad |= 1u << (2 * d);
            return p.nb + 1;
        }
        if (isinf(x))
            bad |= 2u << (2 * d);
        return 0;
    }
    if (x >= p.hi) {
        if (isinf(x))
            bad |= 2u << (2 * d);
        return x <= p.top ? p.nb : p.nb + 1;
    }
    int lo, hi; /* e[lo] <= x < e[hi] */
    if (p.e[b] <= x) {
        lo = b + 1;
        hi = p.nb;
    } else {
        lo = 0;
        hi = b;
    }
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (p.e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo + 1;
}

/* SciPy's bin of x in one dimension: 0 below, 1..nb inside, nb + 1 above or
 * NaN (np.digitize, then [e[nb], top] into bin nb).  The common case: the
 * equal-width guess inside its window (guess.cuh: no edge read); then the
 * guess b, clamped, whose two edges e[b] <= x < e[b + 1] confirm it (x
 * outside [e[0], e[nb]) fails the check too); anything else takes
 * sbin_rare. */
template <class T> __device__ __forceinline__ int sbin(const dimp<T> &p, T x, unsigned &bad, int d)
{
    const T t = gs_guess_t(x, p.lo, p.scale);
    T fr;
    const auto k = gs_guess_floor_frac(t, &fr);
    if (fr > p.wlo && fr < p.whi && (uint64_t)(int64_t)k < (uint64_t)p.nb) /* inside the window: no edge read */
        return (int)k + 1;
    const int b = t > (T)0 ? (t < (T)(p.nb - 1) ? (int)t : p.nb - 1) : 0; /* (NaN t: 0) */
    if (p.e[b] <= x && x < p.e[b + 1])
        return b + 1;
    return sbin_rare(p, x, b, bad, d);
}

template <class T> __device__ __forceinline__ double wsum(double v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL, v, o);
    return v;
}

template <class K, bool MIN> __device__ __forceinline__ K wext(K k)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const K p = __shfl_xor_sync(FULL, k, o);
        k = MIN ? (p < k ? p : k) : (p > k ? p : k);
    }
    return k;
}

/* One value into cell k (< 0: none) of the partials: a bin's copy. */
template <class T, int KIND>
__device__ __forceinline__ void accum(char *copy, const layout &L, int k, double v)
{
    typedef typename key_of<T>::type K;
    double *s1 = (double *)(copy + L.s1);
    double *s2 = (double *)(copy + L.s2);
    K *key = (K *)(copy + L.key);
    unsigned *cnt = (unsigned *)(copy + L.cnt);
    if (k < 0)
        return;
    if (KIND == K_MIN)
        atomicMin(key + k, enc((T)v));
    else if (KIND == K_MAX)
        atomicMax(key + k, enc((T)v));
    else {
        if (KIND == K_COUNT || KIND == K_MEAN || KIND == K_STD)
            atomicAdd(cnt + k, 1u);
        if (KIND != K_COUNT)
            atomicAdd(s1 + k, v);
        if (KIND == K_STD)
            atomicAdd(s2 + k, v * v);
    }
}

template <class T, int VEC> struct vec_t;
template <> struct vec_t<float, 4> {
    typedef float4 type;
};
template <> struct vec_t<double, 2> {
    typedef double2 type;
};

/* The bin numbers are written once and never read back here: streaming
 * stores.  r111 (H200, .run/bsab.py, builds alternating, 1000 bins, range
 * given): 32M float64 mean 274.4 / 275.2 -> 272.6 / 273.0 us, sum 260.0 /
 * 262.3 -> 257.4 / 256.7, float32 max 206.3 / 206.7 -> 194.7 / 193.7, 4M
 * float64 3-10 % faster, nothing slower; evict-first loads of the points on
 * top measured no better (32M float64 mean 279.9 / 323.3). */
template <class V> __device__ __forceinline__ void st_numbers(V *p, V v) { __stcs(p, v); }
/* VEC consecutive elements from `first` (VEC > 1: contiguous and 16-byte
 * aligned; VEC == 1: any stride). */
template <class T, int VEC> __device__ __forceinline__ void load(const void *p, int64_t first, int64_t stride, T *out)
{
    if (VEC == 4) {
        const float4 q = __ldg((const float4 *)((const T *)p + first));
        out[0] = q.x;
        out[1] = q.y;
        out[2] = q.z;
        out[3] = q.w;
    } else if (VEC == 2) {
        const double2 q = __ldg((const double2 *)((const T *)p + first));
        out[0] = q.x;
        out[1] = q.y;
    } else {
        out[0] = __ldg((const T *)p + first * stride);
    }
}

/* The bin numbers and the partials of VEC points whose bins are known:
 * inner[j] (< 0: outside) and flat[j] (SciPy's number); vs: their values. */
template <class T, int KIND, int VEC>
__device__ __forceinline__ void finish(const priv_args &r, char *copy, const layout &L, int64_t first, bool ok,
                                       const int *inner, const int64_t *flat, const T *vs, int lane)
{
    /* (copy: the partials; a bin's cells are k * R + c, this lane's copy c = lane % R, the warp's for its one
     * aggregated add) */
    /* (copy: by lane, every copy's cells; by warp, this warp's copy already) */
    constexpr bool LANES = copies_by_lane(KIND);
    const int mine = LANES ? lane & (r.replicas - 1) : 0;
    if (ok && r.binnumber) {
        if (VEC == 4) {
            longlong2 *o = (longlong2 *)(r.binnumber + first);
            st_numbers(o, make_longlong2(flat[0], flat[1 % VEC]));
            st_numbers(o + 1, make_longlong2(flat[2 % VEC], flat[3 % VEC]));
        } else if (VEC == 2) {
            st_numbers((longlong2 *)(r.binnumber + first), make_longlong2(flat[0], flat[1 % VEC]));
        } else {
            st_numbers(r.binnumber + first, (int64_t)flat[0]);
        }
    }
    /* One warp-wide test a group (a shuffle and a vote for VEC points, where
     * a test per point spent a shuffle each on the shared-memory pipe that
     * the atomics saturate): when all 32 x VEC points fall into one bin (one
     * value, sorted runs) the warp adds them with one atomic, else each
     * point adds itself. */
    typedef typename key_of<T>::type K;
    bool same = true;
#pragma unroll
    for (int j = 1; j < VEC; j++)
        same = same && inner[j] == inner[0];
    const int k0 = __shfl_sync(FULL, inner[0], 0);
    if (__all_sync(FULL, same && inner[0] == k0)) {
        if (k0 < 0)
            return;
        char *const c = copy;
        const int cell = LANES ? k0 * r.replicas + ((threadIdx.x >> 5) & (r.replicas - 1)) : k0;
        if (KIND == K_MIN || KIND == K_MAX) {
            K e = enc(vs[0]);
#pragma unroll
            for (int j = 1; j < VEC; j++) {
                const K q = enc(vs[j]);
                e = KIND == K_MIN ? (q < e ? q : e) : (q > e ? q : e);
            }
            e = wext<K, KIND == K_MIN>(e);
            if (lane == 0) {
                if (KIND == K_MIN)
                    atomicMin((K *)(c + L.key) + cell, e);
                else
                    atomicMax((K *)(c + L.key) + cell, e);
            }
            return;
        }
        double a = 0, b = 0;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            a += (double)vs[j];
            b += (double)vs[j] * (double)vs[j];
        }
        if (KIND != K_COUNT)
            a = wsum<T>(a);
        if (KIND == K_STD)
            b = wsum<T>(b);
        if (lane == 0) {
            if (KIND == K_COUNT || KIND == K_MEAN || KIND == K_STD)
                atomicAdd((unsigned *)(c + L.cnt) + cell, 32u * VEC);
            if (KIND != K_COUNT)
                atomicAdd((double *)(c + L.s1) + cell, a);
            if (KIND == K_STD)
                atomicAdd((double *)(c + L.s2) + cell, b);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < VEC; j++)
        accum<T, KIND>(copy, L, inner[j] >= 0 ? (LANES ? inner[j] * r.replicas + mine : inner[j]) : -1,
                       (double)vs[j]);
}

/* VEC points from `first`, any number of dimensions (r.ndim), each
 * dimension loaded as it is binned. */
template <class T, int KIND, int VEC>
__device__ __forceinline__ void elements(const priv_args &r, const T *e, char *copy, const layout &L, int64_t first,
                                         bool ok, int lane, unsigned &bad)
{
    int inner[VEC];
    int64_t flat[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        inner[j] = ok ? 0 : -1;
        flat[j] = 0;
    }
    for (int d = 0; d < r.ndim; d++) {
        T xs[VEC];
        if (ok)
            load<T, VEC>(r.coord[d], first, r.cstride[d], xs);
        else
#pragma unroll
            for (int j = 0; j < VEC; j++)
                xs[j] = 0;
        const dimp<T> p = dim_of<T>(r, e, d);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const int b = sbin(p, xs[j], bad, d);
            flat[j] += (int64_t)b * r.fstride[d];
            inner[j] = (inner[j] >= 0 && b >= 1 && b <= p.nb) ? inner[j] + (b - 1) * r.istride[d] : -1;
        }
    }
    T vs[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        vs[j] = 0;
    if (KIND != K_COUNT && ok)
        load<T, VEC>(r.v, first, r.vstride, vs);
    finish<T, KIND, VEC>(r, copy, L, first, ok, inner, flat, vs, lane);
}

/* ND (compile-time) dimensions: every coordinate and the values of one
 * group of VEC points, loaded together (the next group's loads are issued
 * before this group is binned). */
template <class T, int KIND, int VEC, int ND> struct group {
    T x[ND][VEC];
    T v[VEC];
    __device__ __forceinline__ void fetch(const priv_args &r, int64_t first, bool ok)
    {
#pragma unroll
        for (int d = 0; d < ND; d++) {
            if (ok)
                load<T, VEC>(r.coord[d], first, 1, x[d]);
            else
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    x[d][j] = 0;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++)
            v[j] = 0;
        if (KIND != K_COUNT && ok)
            load<T, VEC>(r.v, first, 1, v);
    }
    __device__ __forceinline__ void bin(const priv_args &r, const dimp<T> *P, char *copy, const layout &L,
                                        int64_t first, bool ok, int lane, unsigned &bad) const
    {
        int inner[VEC];
        int64_t flat[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            inner[j] = ok ? 0 : -1;
            flat[j] = 0;
        }
#pragma unroll
        for (int d = 0; d < ND; d++) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const int b = sbin(P[d], x[d][j], bad, d);
                flat[j] += (int64_t)b * r.fstride[d];
                inner[j] = (inner[j] >= 0 && b >= 1 && b <= P[d].nb) ? inner[j] + (b - 1) * r.istride[d] : -1;
            }
        }
        finish<T, KIND, VEC>(r, copy, L, first, ok, inner, flat, v, lane);
    }
};

/* The kernel: partials of elements [0, n) in shared memory, merged into
 * the global partials with atomics.  ND > 0: that many dimensions, VEC > 1
 * (contiguous, aligned arrays), loads one group ahead; ND == 0: r.ndim
 * dimensions, any strides when VEC == 1. */
template <class T, int KIND, int VEC, int ND>
__global__ void __launch_bounds__(THREADS, BLOCKS_SM) priv_kernel(priv_args r, layout L)
{
    typedef typename key_of<T>::type K;
    extern __shared__ __align__(16) unsigned char smem[];
    T *e = (T *)smem;
    char *copies = (char *)smem + edge_bytes(r.nedges, sizeof(T));
    for (int i = threadIdx.x; i < r.nedges; i += blockDim.x)
        e[i] = round_up<T>(r.edges[i]);
    {
        const size_t words = L.copy / 4;
        unsigned *w = (unsigned *)copies;
        for (size_t i = threadIdx.x; i < words; i += blockDim.x)
            w[i] = 0u;
    }
    __syncthreads();
    if (KIND == K_MIN) { /* min's "no value" is all ones */
        for (int i = threadIdx.x; i < r.nbins * r.replicas; i += blockDim.x)
            ((K *)(copies + L.key))[i] = (K)~(K)0;
        __syncthreads();
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* by warp: this warp's copy (one partial array: the count, or min / max's key) */
    char *copy = copies_by_lane(KIND) ? copies
                                      : copies + (size_t)(warp & (r.replicas - 1)) * r.nbins *
                                                     (KIND == K_COUNT ? sizeof(unsigned) : sizeof(K));
    const int64_t nvec = r.n / VEC;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    unsigned bad = 0;
    /* warp-uniform trips: all 32 lanes reach every accum() together */
    int64_t base = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31);
    if (ND > 0) {
        constexpr int NG = ND > 0 ? ND : 1;
        dimp<T> P[NG];
#pragma unroll
        for (int d = 0; d < ND; d++)
            P[d] = dim_of<T>(r, e, d);
        group<T, KIND, VEC, NG> g;
        bool ok = base + lane < nvec;
        g.fetch(r, (base + lane) * VEC, ok);
        for (; base < nvec; base += step) {
            const int64_t i = base + lane;
            group<T, KIND, VEC, NG> next;
            const bool nok = i + step < nvec;
            next.fetch(r, (i + step) * VEC, nok);
            g.bin(r, P, copy, L, i * VEC, ok, lane, bad);
            g = next;
            ok = nok;
        }
    } else {
        for (; base < nvec; base += step) {
            const int64_t i = base + lane;
            elements<T, KIND, VEC>(r, e, copy, L, i * VEC, i < nvec, lane, bad);
        }
    }
    if (VEC > 1 && blockIdx.x == 0 && warp == 0) /* the last n % VEC elements, one warp */
        elements<T, KIND, 1>(r, e, copy, L, nvec * VEC + lane, nvec * VEC + lane < r.n, lane, bad);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        bad |= __shfl_xor_sync(FULL, bad, o);
    if (lane == 0 && bad && r.nonfinite)
        atomicOr(r.nonfinite, bad);
    __syncthreads();
    /* The block's partials to the global ones.  Copies by lane (cell k * R +
     * c): a warp reads 32 consecutive cells (32 / R bins: reading a bin's R
     * copies a thread at a time made every read an R-way bank conflict), its
     * segments of R lanes combine them with shuffles, and each segment's
     * first lane adds its bin.  Copies by warp (cell k + c * nbins): a
     * thread a bin reads its R copies. */
    const int R = r.replicas;
    constexpr bool by_lane = copies_by_lane(KIND);
    const int total = by_lane ? r.nbins * R : r.nbins;
    for (int i0 = warp * 32; i0 < total; i0 += blockDim.x) { /* (warp-uniform: every lane shuffles) */
        const int i = i0 + lane;
        const bool in = i < total;
        unsigned long long n = 0;
        double a = 0, b = 0;
        K key = KIND == K_MIN ? (K)~(K)0 : (K)0;
        auto take = [&](int cell) {
            if (KIND == K_COUNT || KIND == K_MEAN || KIND == K_STD)
                n += ((const unsigned *)(copies + L.cnt))[cell];
            if (KIND == K_SUM || KIND == K_MEAN || KIND == K_STD)
                a += ((const double *)(copies + L.s1))[cell];
            if (KIND == K_STD)
                b += ((const double *)(copies + L.s2))[cell];
            if (KIND == K_MIN || KIND == K_MAX) {
                const K q = ((const K *)(copies + L.key))[cell];
                key = KIND == K_MIN ? (q < key ? q : key) : (q > key ? q : key);
            }
        };
        if (in) {
            if (by_lane)
                take(i);
            else
                for (int c = 0; c < R; c++)
                    take(i + c * r.nbins);
        }
        const unsigned long long n_cell = n; /* (std: this copy's count and sum, kept for the single slots) */
        const double a_cell = a;
        for (int o = 1; by_lane && o < R; o <<= 1) {
            if (KIND == K_COUNT || KIND == K_MEAN || KIND == K_STD)
                n += __shfl_xor_sync(FULL, n, o);
            if (KIND == K_SUM || KIND == K_MEAN || KIND == K_STD)
                a += __shfl_xor_sync(FULL, a, o);
            if (KIND == K_STD)
                b += __shfl_xor_sync(FULL, b, o);
            if (KIND == K_MIN || KIND == K_MAX) {
                const K q = __shfl_xor_sync(FULL, key, o);
                key = KIND == K_MIN ? (q < key ? q : key) : (q > key ? q : key);
            }
        }
        const int k = by_lane ? i / R : i;
        unsigned long long before = 0; /* (std: the bin's count before this block's) */
        if (in && (!by_lane || (lane & (R - 1)) == 0)) { /* the bin's first lane adds the block's partials */
            if (KIND == K_MIN) {
                if (key != (K)~(K)0)
                    atomicMin(r.g_key + k, widen(key));
            } else if (KIND == K_MAX) {
                if (key != (K)0)
                    atomicMax(r.g_key + k, widen(key));
            } else if (KIND == K_SUM) {
                if (a != 0.0 || a != a)
                    atomicAdd(r.g_s1 + k, a);
            } else if (n) {
                before = atomicAdd(r.g_cnt + k, n);
                if (KIND != K_COUNT)
                    atomicAdd(r.g_s1 + k, a);
                if (KIND == K_STD)
                    atomicAdd(r.g_s2 + k, b);
            }
        }
        /* std's single slots (by lane: every lane of a bin's segment holds the block's totals n) */
        if (KIND == K_STD && r.g_single) {
            before = __shfl_sync(FULL, before, lane & ~(R - 1));
            if (in && n_cell == 1 && before + n <= (unsigned long long)SINGLES) {
                const int slot = atomicAdd(r.g_nsingle + k, 1);
                if (slot < SINGLES)
                    r.g_single[(size_t)k * SINGLES + slot] = a_cell;
            }
        }
    }
}

/* SciPy's two-pass variance of a bin's m values (mean, then the sum of
 * squared deviations; SciPy's sums run in index order, these in list
 * order). */
__device__ double two_pass_m2(const double *v, int m)
{
    double s = 0;
    for (int i = 0; i < m; i++)
        s += v[i];
    const double mean = s / (double)m;
    double q = 0;
    for (int i = 0; i < m; i++) {
        const double d = v[i] - mean;
        q += d * d;
    }
    return q;
}

/* SciPy's result per inner bin; std / var bins whose one-pass value is not
 * trusted are marked for refine_kernel. */
__global__ void result_kernel(priv_args r, int kind, int var, double *out)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= r.nbins)
        return;
    const double nan = __longlong_as_double(0x7ff8000000000000ll);
    const unsigned long long c = kind == K_SUM || kind >= K_MIN ? 0 : r.g_cnt[k];
    const double n = (double)c;
    double res;
    switch (kind) {
    case K_COUNT: res = n; break;
    case K_SUM: res = r.g_s1[k]; break;
    case K_MEAN: res = c ? r.g_s1[k] / n : nan; break;
    case K_STD: {
        if (!c) {
            res = nan;
            break;
        }
        const double s1 = r.g_s1[k], s2 = r.g_s2[k];
        const double m2 = s2 - s1 * (s1 / n);
        /* two-pass for this bin: an ill-conditioned one-pass value, or a sum of
         * squares that overflowed, or a sum that is +-inf (finite values that
         * overflowed: SciPy's inf; an infinite value: SciPy's NaN) */
        if (isinf(s1) || (isfinite(s1) && (!isfinite(s2) || !(m2 * STD_COND >= s2)))) {
            if (r.g_single && c <= (unsigned long long)SINGLES && (unsigned long long)r.g_nsingle[k] == c) {
                const double q = two_pass_m2(r.g_single + (size_t)k * SINGLES, (int)c); /* every point in a slot */
                res = var ? q / n : sqrt(q / n);
                break;
            }
            r.g_mean[k] = s1 / n;
            r.g_flag[k] = 1;
            atomicAdd(r.g_nflag, 1);
            res = nan;
            break;
        }
        res = var ? m2 / n : sqrt(m2 / n);
        break;
    }
    case K_MIN: {
        const unsigned long long q = r.g_key[k];
        res = q == ~0ull ? nan : dec(q);
        break;
    }
    default: {
        const unsigned long long q = r.g_key[k];
        res = (q == 0ull || q == ~0ull) ? nan : dec(q);
    }
    }
    out[k] = res;
}

/* Second pass for marked std / var bins: sum (v - mean)^2 (SciPy's formula).
 * Returns at once when no bin is marked. */
template <class T> __global__ void __launch_bounds__(256) refine_kernel(priv_args r)
{
    if (*(volatile int *)r.g_nflag == 0)
        return;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < r.n; i += step) {
        int inner = 0;
        unsigned bad = 0; /* (the first pass reported it) */
        for (int d = 0; d < r.ndim && inner >= 0; d++) {
            const double x = (double)__ldg((const T *)r.coord[d] + i * r.cstride[d]);
            const int b = sbin(dim_of<double, sizeof(T) == 8>(r, r.edges, d), x, bad, d);
            inner = (b >= 1 && b <= r.nb[d]) ? inner + (b - 1) * r.istride[d] : -1;
        }
        if (inner >= 0 && r.g_flag[inner]) {
            const double dv = (double)__ldg((const T *)r.v + i * r.vstride) - r.g_mean[inner];
            atomicAdd(r.g_m2 + inner, dv * dv);
        }
    }
}

__global__ void refine_result_kernel(priv_args r, int var, double *out)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= r.nbins || !r.g_flag[k])
        return;
    const double m2 = r.g_m2[k] / (double)r.g_cnt[k];
    out[k] = var ? m2 : sqrt(m2);
}

/* The kernel for 16-byte loads (vec) or any strides, with its dimensions
 * fixed at compile time for 1-D and 2-D. */
template <class T, int KIND> const void *pick(bool vec, int ndim)
{
    constexpr int V = 16 / sizeof(T);
    if (!vec)
        return (const void *)priv_kernel<T, KIND, 1, 0>;
    return ndim == 1 ? (const void *)priv_kernel<T, KIND, V, 1>
         : ndim == 2 ? (const void *)priv_kernel<T, KIND, V, 2>
                     : (const void *)priv_kernel<T, KIND, V, 0>;
}

const void *kernel_for(int kind, bool f32, bool vec, int ndim)
{
    switch (kind) {
    case K_COUNT: return f32 ? pick<float, K_COUNT>(vec, ndim) : pick<double, K_COUNT>(vec, ndim);
    case K_SUM: return f32 ? pick<float, K_SUM>(vec, ndim) : pick<double, K_SUM>(vec, ndim);
    case K_MEAN: return f32 ? pick<float, K_MEAN>(vec, ndim) : pick<double, K_MEAN>(vec, ndim);
    case K_STD: return f32 ? pick<float, K_STD>(vec, ndim) : pick<double, K_STD>(vec, ndim);
    case K_MIN: return f32 ? pick<float, K_MIN>(vec, ndim) : pick<double, K_MIN>(vec, ndim);
    default: return f32 ? pick<float, K_MAX>(vec, ndim) : pick<double, K_MAX>(vec, ndim);
    }
}


/* Copies of the partials per block: the largest power of two (up to one per
 * lane, or per warp: copies_by_lane) with which two blocks fit an SM, else 1
 * if one block fits; 0: the bins do not fit. */
int replicas_for(int kind, int nbins, int nedges, size_t keybytes, const gs_device_info *dev)
{
    const size_t eb = edge_bytes(nedges, keybytes); /* (edges in the coordinates' precision, as the keys) */
    const size_t optin = (size_t)dev->shared_memory_per_block_optin;
    const size_t half = (size_t)dev->shared_memory_per_multiprocessor / BLOCKS_SM - 1024;
    if (eb + layout_for(kind, nbins, keybytes, 1).copy > optin)
        return 0;
    int r = copies_by_lane(kind) ? 32 : THREADS / 32;
    while (r > 1 && eb + layout_for(kind, nbins, keybytes, r).copy > half)
        r /= 2;
    return r;
}

int64_t inner_bins(int ndim, const int64_t *nedges)
{
    int64_t nb = 1;
    for (int d = 0; d < ndim; d++) {
        if (nedges[d] < 2 || nedges[d] - 1 > MAX_INNER)
            return -1;
        nb *= nedges[d] - 1;
        if (nb > MAX_INNER)
            return -1;
    }
    return nb;
}

/* Whether the guess window (guess.cuh) pays on this device.  It trades two
 * shared-memory edge loads a point for a few more instructions and
 * registers: a gain where the points arrive fast enough for the shared-memory
 * pipe (the partials' atomics and the edge loads) to bound the kernel, a
 * small loss where the memory bounds it.  The rate is the DRAM bandwidth per
 * SM clock.  Measured (ncu kernel time, 32M float64 normal points, 1,000
 * bins, range given; benchmarks/results/binstat_ncu_*): H200, 18.8 bytes an
 * SM clock: std 297.6 -> 258.1 us, mean 220.6 -> 214.8, others within 1 %;
 * H100, 12.8: std 298.9 -> 309.6, max 280.5 -> 286.4, others within 2 %.
 * Devices not measured here (H100 NVL, GH200, B200: about 17-27 bytes an SM
 * clock) take the window by this rule, at worst the H100's few per cent; a
 * MIG slice reports fewer SMs with the whole memory's clock and width (the
 * ratio reads high).  GPUSYNC_BINSTAT_WINDOW=0 / 1 overrides it. */
#ifndef GS_BINSTAT_WINDOW_BYTES_PER_SM_CLOCK
#define GS_BINSTAT_WINDOW_BYTES_PER_SM_CLOCK 16.0
#endif
bool window_pays(const gs_device_info *dev)
{
    const double dram = 2.0 * dev->memory_clock_khz * 1e3 * (dev->memory_bus_width_bits / 8.0); /* (DDR) */
    const double sm_clocks = (double)dev->multiprocessors * dev->clock_khz * 1e3;
    return sm_clocks > 0 && dram / sm_clocks >= GS_BINSTAT_WINDOW_BYTES_PER_SM_CLOCK;
}

} // namespace

/* Whether the privatized path takes these bins (csrc/cuda/binstat.cu's
 * dispatch and binned_statistic_dd). */
extern "C" int gs_cuda_binstat_priv_fits(int ndim, const int64_t *nedges, int statistic, gs_dtype dtype,
                                         const gs_device_info *dev)
{
    if (ndim < 1 || ndim > MAXD || statistic < 0 || statistic >= GS_STAT_KINDS)
        return 0;
    const int64_t nb = inner_bins(ndim, nedges);
    if (nb < 1)
        return 0;
    int64_t ne = 0;
    for (int d = 0; d < ndim; d++)
        ne += nedges[d];
    if (ne > (1 << 16))
        return 0;
    return replicas_for(kind_of(statistic), (int)nb, (int)ne, dtype == GS_FLOAT32 ? 4 : 8, dev) > 0;
}

/* The privatized statistic.  coords: ndim arrays (float32 or float64, the
 * values' dtype, one length and device); edges: every dimension's edges one
 * after the other (host memory), nedges[d] of dimension d; tops[d]: the
 * largest x SciPy puts into dimension d's last bin.  result: the inner
 * bins (prod(nedges - 1)) float64, C order; binnumber: NULL or n int64,
 * SciPy's flat numbers (outlier bins included).  Returns without waiting
 * for device arrays. */
extern "C" gs_status gs_cuda_binstat_priv(const gs_array *coords, int ndim, const double *edges,
                                          const int64_t *nedges, const double *tops, const gs_array *values,
                                          int statistic, gs_array *result, gs_array *binnumber,
                                          gs_array *nonfinite, const gs_device_info *dev, void *stream)
{
    const int on_host = coords[0].device == GS_HOST;
    const int64_t n = coords[0].length;
    const int kind = kind_of(statistic);
    const bool f32 = values->dtype == GS_FLOAT32;
    const size_t es = f32 ? 4 : 8;
    const int64_t nb = inner_bins(ndim, nedges);
    if (ndim < 1 || ndim > MAXD || nb < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic: privatized path takes 1..%d dimensions and up to "
                       "%lld bins", MAXD, (long long)MAX_INNER);
    int64_t ne = 0;
    for (int d = 0; d < ndim; d++)
        ne += nedges[d];
    const int replicas = replicas_for(kind, (int)nb, (int)ne, f32 ? 4 : 8, dev);
    if (replicas < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "binned_statistic: strategy 'privatized' keeps every bin in a block's shared memory; %lld "
                       "bins do not fit (use 'global' or 'auto')", (long long)nb);
    const layout L = layout_for(kind, (int)nb, f32 ? 4 : 8, replicas);
    const size_t smem = edge_bytes((int)ne, es) + L.copy;
    cudaStream_t s = (cudaStream_t)stream;

    priv_args r;
    memset(&r, 0, sizeof r);
    r.ndim = ndim;
    r.nedges = (int)ne;
    r.nbins = (int)nb;
    r.replicas = replicas;
    if (nonfinite && (on_host || nonfinite->device != coords[0].device || nonfinite->dtype != GS_INT32 ||
                      nonfinite->length < 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "binned_statistic: nonfinite must be one int32 on the coordinates' device");
    r.nonfinite = nonfinite ? (unsigned *)nonfinite->data : NULL;
    {
        /* the guess windows where the points outnumber the edges 256 to 1 (each window is a host pass over its
         * edges: ~1.4 us for 514 edges) */
        const int wset = (int)gs_env_number(GS_ENV_BINSTAT_WINDOW, -1, NULL);
        const bool window = n >= 256 * ne && (wset < 0 ? window_pays(dev) : wset != 0);
        int64_t eo = 0;
        for (int d = 0; d < ndim; d++) {
            r.eoff[d] = (int)eo;
            r.nb[d] = (int)(nedges[d] - 1);
            r.top[d] = tops[d];
            const double *e = edges + eo;
            const double span = e[nedges[d] - 1] - e[0], sc = (double)(nedges[d] - 1) / span;
            r.scale[d] = span > 0 && sc > 0 && sc < 1e300 ? sc : 0.0;
            if (window)
                gs_guess_window(e, nedges[d], r.scale[d], f32 ? NULL : r.gwin + 4 * d, f32 ? r.gwin32 + 4 * d : NULL);
            eo += nedges[d];
        }
        int64_t fs = 1, is = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            r.fstride[d] = fs;
            r.istride[d] = (int)is;
            fs *= nedges[d] + 1;
            is *= nedges[d] - 1;
        }
    }
    /* device scratch, zeroed: edges | cnt | s1 | s2 | key | mean | m2 | flag | nflag (16 bytes) [| nsingle];
     * then [single] (std / var: SINGLES slots a bin) */
    const size_t nbz = (size_t)nb;
    const bool singles = kind == K_STD;
    const size_t zbytes = (size_t)ne * 8 + nbz * 8 * 6 + nbz * 4 + 16 + (singles ? nbz * 4 : 0);
    const size_t tail = (zbytes + 15) & ~(size_t)15;
    const size_t gbytes = singles ? tail + nbz * SINGLES * 8 : zbytes;
    char *g = NULL;
    void *d_x[MAXD] = {NULL};
    void *d_v = NULL, *d_res = NULL;
    int64_t *d_bn = NULL;
    gs_status st = GS_OK;
    const int64_t chunk = on_host ? GS_STAGE_BYTES / (int64_t)es : (n > 0 ? n : 1);
    const int64_t maxn = n < chunk ? n : chunk;
    GS_CUDA_GOTO(gs_malloc_async(&g, gbytes, s));
    GS_CUDA_GOTO(cudaMemsetAsync(g, 0, zbytes, s));
    if (r.nonfinite)
        GS_CUDA_GOTO(cudaMemsetAsync(r.nonfinite, 0, sizeof(unsigned), s));
    r.edges = (const double *)gs_cuda_constants(edges, (size_t)ne * 8, dev->ordinal, s);
    if (!r.edges) {
        GS_CUDA_GOTO(cudaMemcpyAsync(g, edges, (size_t)ne * 8, cudaMemcpyHostToDevice, s));
        r.edges = (const double *)g;
    }
    r.g_cnt = (unsigned long long *)(g + (size_t)ne * 8);
    r.g_s1 = (double *)(r.g_cnt + nbz);
    r.g_s2 = r.g_s1 + nbz;
    r.g_key = (unsigned long long *)(r.g_s2 + nbz);
    r.g_mean = (double *)(r.g_key + nbz);
    r.g_m2 = r.g_mean + nbz;
    r.g_flag = (int *)(r.g_m2 + nbz);
    r.g_nflag = r.g_flag + nbz;
    if (singles) {
        r.g_nsingle = (int *)((char *)r.g_nflag + 16);
        r.g_single = (double *)(g + tail);
    }
    if (kind == K_MIN)
        GS_CUDA_GOTO(cudaMemsetAsync(r.g_key, 0xff, nbz * 8, s));
    if (on_host) {
        GS_CUDA_GOTO(gs_malloc_async(&d_res, nbz * 8, s));
        if (maxn > 0) {
            for (int d = 0; d < ndim; d++)
                GS_CUDA_GOTO(gs_malloc_async(&d_x[d], (size_t)maxn * es, s));
            if (kind != K_COUNT)
                GS_CUDA_GOTO(gs_malloc_async(&d_v, (size_t)maxn * es, s));
            if (binnumber)
                GS_CUDA_GOTO(gs_malloc_async(&d_bn, (size_t)maxn * 8, s));
        }
    }
    for (int64_t off = 0; off < n; off += chunk) {
        const int64_t cnt = n - off < chunk ? n - off : chunk;
        if (on_host) {
            for (int d = 0; d < ndim; d++) {
                GS_GOTO(gs_cuda_h2d(d_x[d], (const char *)coords[d].data + off * es, (size_t)cnt * es, s));
                r.coord[d] = d_x[d];
                r.cstride[d] = 1;
            }
            if (d_v)
                GS_GOTO(gs_cuda_h2d(d_v, (const char *)values->data + off * es, (size_t)cnt * es, s));
            r.v = d_v ? d_v : d_x[0];
            r.vstride = 1;
            r.binnumber = d_bn;
        } else {
            for (int d = 0; d < ndim; d++) {
                r.coord[d] = (const char *)coords[d].data + off * coords[d].stride * (int64_t)es;
                r.cstride[d] = coords[d].stride;
            }
            r.v = kind == K_COUNT ? r.coord[0] : (const void *)((const char *)values->data + off * values->stride * (int64_t)es);
            r.vstride = kind == K_COUNT ? r.cstride[0] : values->stride;
            r.binnumber = binnumber ? (int64_t *)binnumber->data + off : NULL;
        }
        r.n = cnt;
        /* 16-byte loads when every array is contiguous and aligned */
        bool vec = ((uintptr_t)r.v & 15) == 0 && (r.vstride == 1 || kind == K_COUNT) &&
                   (!r.binnumber || ((uintptr_t)r.binnumber & 15) == 0);
        for (int d = 0; d < ndim; d++)
            vec = vec && r.cstride[d] == 1 && ((uintptr_t)r.coord[d] & 15) == 0;
        if (kind == K_COUNT)
            r.vstride = 1, r.v = r.coord[0];
        const void *kern = kernel_for(kind, f32, vec, ndim);
        GS_GOTO(gs_cuda_allow_smem(kern, dev));
        int64_t resident = 0;
        GS_GOTO(gs_cuda_resident_blocks(kern, THREADS, smem, dev, &resident));
        if (resident < 1)
            resident = 1;
        const int64_t per = (int64_t)THREADS * (vec ? (int64_t)(16 / es) : 1) * 4;
        int64_t grid = (cnt + per - 1) / per;
        if (grid > resident)
            grid = resident;
        const int64_t min_blocks = (cnt >> 31) + 1; /* < 2^31 elements per block: 32-bit shared counts */
        if (grid < min_blocks)
            grid = min_blocks;
        if (grid > 0x7fffffff)
            GS_GOTO(gs_fail(GS_ERR_OVERFLOW, "binned_statistic: grid of %lld blocks", (long long)grid));
        void *args[] = {&r, (void *)&L};
        GS_CUDA_GOTO(cudaLaunchKernel(kern, dim3((unsigned)grid), dim3(THREADS), args, smem, s));
        if (on_host && binnumber)
            GS_GOTO(gs_cuda_d2h((int64_t *)binnumber->data + off, d_bn, (size_t)cnt * 8, s));
    }
    {
        double *out = on_host ? (double *)d_res : (double *)result->data;
        const unsigned rb = (unsigned)((nb + 255) / 256);
        result_kernel<<<rb, 256, 0, s>>>(r, kind, statistic == GS_STAT_VAR, out);
        GS_CUDA_GOTO(cudaGetLastError());
        bool marked = true;
        if (kind == K_STD && n > 0 && on_host && n > chunk) {
            /* staging host input of several chunks again costs a PCIe pass over it: first one wait for the
             * number of marked bins (with the few-point slots, most calls mark none) */
            int nflag = 0;
            GS_CUDA_GOTO(cudaMemcpyAsync(&nflag, r.g_nflag, sizeof nflag, cudaMemcpyDeviceToHost, s));
            GS_GOTO(gs_cuda_wait_stream(s));
            marked = nflag != 0;
        }
        if (kind == K_STD && n > 0 && marked) {
            /* the second pass (it returns at once when no bin is marked);
             * host input of several chunks is staged again */
            for (int64_t off = 0; off < n; off += chunk) {
                const int64_t cnt = n - off < chunk ? n - off : chunk;
                if (on_host) {
                    if (n > chunk) { /* earlier chunks were overwritten: stage again */
                        for (int d = 0; d < ndim; d++)
                            GS_GOTO(gs_cuda_h2d(d_x[d], (const char *)coords[d].data + off * es,
                                                (size_t)cnt * es, s));
                        GS_GOTO(gs_cuda_h2d(d_v, (const char *)values->data + off * es, (size_t)cnt * es, s));
                    }
                } else {
                    for (int d = 0; d < ndim; d++)
                        r.coord[d] = (const char *)coords[d].data + off * coords[d].stride * (int64_t)es;
                    r.v = (const char *)values->data + off * values->stride * (int64_t)es;
                }
                r.n = cnt;
                const int64_t rg = (cnt + 255) / 256 < 4 * (int64_t)dev->multiprocessors
                                       ? (cnt + 255) / 256
                                       : 4 * (int64_t)dev->multiprocessors;
                if (f32)
                    refine_kernel<float><<<(unsigned)rg, 256, 0, s>>>(r);
                else
                    refine_kernel<double><<<(unsigned)rg, 256, 0, s>>>(r);
                GS_CUDA_GOTO(cudaGetLastError()); /* (the next chunk's h2d is ordered after it) */
            }
            refine_result_kernel<<<rb, 256, 0, s>>>(r, statistic == GS_STAT_VAR, out);
            GS_CUDA_GOTO(cudaGetLastError());
        }
        if (on_host)
            GS_GOTO(gs_cuda_d2h(result->data, d_res, nbz * 8, s));
    }
fail:
    for (int d = 0; d < ndim; d++)
        if (d_x[d])
            cudaFreeAsync(d_x[d], s);
    if (d_v)
        cudaFreeAsync(d_v, s);
    if (d_bn)
        cudaFreeAsync(d_bn, s);
    if (d_res)
        cudaFreeAsync(d_res, s);
    if (g)
        cudaFreeAsync(g, s);
    if (st != GS_OK)
        cudaStreamSynchronize(s);
    return st;
}

/* binned_statistic_dd's fused path (ops->binned_statistic_dd). */
extern "C" gs_status gs_cuda_binned_statistic_dd(const gs_array *coords, int ndim, const double *edges,
                                                 const int64_t *nedges, const double *tops, const gs_array *values,
                                                 int statistic, gs_array *result, gs_array *binnumber,
                                                 gs_array *nonfinite, void *stream)
{
    if (statistic < 0 || statistic >= GS_STAT_KINDS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown statistic %d", statistic);
    if (ndim < 1 || ndim > MAXD)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: %d dimensions (1 to %d here)", ndim, MAXD);
    const int device = coords[0].device;
    const int64_t n = coords[0].length;
    if (values->dtype != GS_FLOAT32 && values->dtype != GS_FLOAT64)
        return gs_fail(GS_ERR_TYPE, "binned_statistic_dd: values must be float32 or float64");
    for (int d = 0; d < ndim; d++)
        if (coords[d].length != n || coords[d].dtype != values->dtype || coords[d].device != device ||
            (device == GS_HOST && coords[d].stride != 1 && n > 1))
            return gs_fail(GS_ERR_INVALID_ARGUMENT,
                           "binned_statistic_dd: coordinates must have the values' length, dtype and device");
    if (values->length != n || values->device != device || (device == GS_HOST && values->stride != 1 && n > 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: values must match the coordinates");
    const int64_t nb = inner_bins(ndim, nedges);
    if (nb < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: bad edges or too many bins");
    if (result->device != device || result->length != nb || (nb > 1 && result->stride != 1) ||
        result->dtype != GS_FLOAT64 ||
        (binnumber && (binnumber->device != device || binnumber->length != n || (n > 1 && binnumber->stride != 1) ||
                       binnumber->dtype != GS_INT64)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "binned_statistic_dd: result must be %lld contiguous float64, "
                       "binnumber n contiguous int64, next to the coordinates", (long long)nb);
    gs_cuda_call call(device, stream);
    if (call.status != GS_OK)
        return call.status;
    const gs_device_info *dev = call.dev;
    if (!gs_cuda_binstat_priv_fits(ndim, nedges, statistic, values->dtype, dev))
        return gs_fail(GS_ERR_UNSUPPORTED_DEVICE,
                       "binned_statistic_dd: %lld bins do not fit a block's shared memory", (long long)nb);
    return gs_cuda_binstat_priv(coords, ndim, edges, nedges, tops, values, statistic, result, binnumber, nonfinite, dev,
                                stream);
}
