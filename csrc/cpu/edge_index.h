/*
 * edge_index.h -- the CPU engine's bin of a value against an array of
 * non-decreasing edges e[0..n] (n bins): histogram (hist.c, GS_BINS_EDGES and
 * GS_BINS_EDGES_INT), binned_statistic (binstat.c, binstat_dd.c) and
 * histogramdd (histdd.c) share this one mechanism.  CPU only: the CUDA
 * kernels keep binning.h / histdd.h.
 *
 * The rule is NumPy's (searchsorted): for e[0] <= x < e[n] the bin is the
 * number of inner edges e[1..n-1] that are <= x -- bin k holds
 * e[k] <= x < e[k+1], an empty bin between equal edges never gets a value;
 * x == e[n] is in the last bin; below, above and NaN in none.
 *
 * Why: the per-element binary search it replaces (a branch a level,
 * mispredicted about every other level on data that is not sorted) cost
 * ~23 ns an element for 51 cubic edges on the 2-core CI box (30001 normal
 * float64 values: 0.68 ms a call, NumPy's sort-and-searchsorted 0.25 ms).
 *
 * How: a guess table over `cells` cells of [e[0], e[n]].  A cell function
 * cell(x), monotone non-decreasing in x, and first[c] = the number of inner
 * edges whose cell is below c, built with that same function: for x in cell
 * c every inner edge of a lower cell is <= x and every inner edge of a higher
 * cell is > x (monotonicity), so x's bin is in [first[c], first[c + 1]]
 * whatever the rounding -- the table decides the speed, never the answer.
 * Where at most one edge shares x's cell (most cells: a few cells a bin), one
 * comparison decides, without a branch; more edges in the cell take a
 * branchless binary search over those edges alone, never more levels than
 * the search over all of them.  Without the table (inputs too short to pay
 * for it, unsorted or NaN edges), a branchless binary search over all edges.
 *
 * Two cell functions, the one whose cells crowd fewer edges together is
 * built (ties: the linear one):
 *   linear  trunc((x - e[0]) * scale), clamped to the last cell: equal-width
 *           cells (a subtraction and a multiplication by a positive constant,
 *           each correctly rounded, then truncation: monotone);
 *   key     (key(x) - key(e[0])) >> shift on the order-preserving integer key
 *           of the double's bits: cells of equal relative width, for edges
 *           spaced by ratios (np.logspace, np.geomspace), which crowd into
 *           the first few linear cells (201 log-spaced edges over 10^-3 ..
 *           10^3, lognormal data: ~15 ns an element on 800 linear cells,
 *           ~3 on key cells).  -0.0 is keyed as +0.0 (they compare equal).
 * 64-bit integers against integer edges (GS_BINS_EDGES_INT) use the key
 * cells on the integers themselves (x - e[0] in exact unsigned arithmetic).
 *
 * Near-equal-width edges (the equal-width formula names the bin of at least
 * 3/4 of the bins' midpoints: np.linspace edges that a float32 rounding or
 * a nudge kept off the formula, histogramdd's and histogram2d's integer
 * bins) need no table: the formula's guess b is checked against e[b] and
 * e[b + 1] (false for NaN and the outside too), and only a miss takes the
 * full rule -- the fast path histogramdd and binned_statistic had (2.6-2.8 ns
 * a value against 3.5 through the table, 51 and 101 equal edges; e[b] <= x <
 * e[b + 1] means b inner edges are <= x for sorted edges: the rule's bin).
 *
 * Which of these is used is a cost argument (gs_eidx_init): the levels of
 * search each element saves, times the elements a thread bins, against the
 * pass over the edges (the uniformity check) and the table's construction,
 * with the constants below. */
#ifndef GPUSYNC_CPU_EDGE_INDEX_H
#define GPUSYNC_CPU_EDGE_INDEX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The cost constants (ns), 2-core CI box (AMD EPYC, Zen 3, 2.45 GHz, shared:
 * +-30 % run to run), one thread, 30001 float64 values, the loop of hist.c:
 * the branchless search over all edges 8.2-12 ns for 51 edges (6 levels),
 * 15-16 ns for 1001 (10 levels): ~1.5 ns a level; a lookup through the table
 * 2.5-3.3 ns (the cell, two table loads, one edge); building the table ~6 ns
 * an edge (the sortedness check, the crowding of both cell functions, the
 * fill: 1001 edges 5.8 us) and ~0.2 ns a cell.  The lookup is rounded up: the
 * table is built a little late rather than early (a wrong choice near the
 * break-even costs a few microseconds either way). */
#define GS_EIDX_NS_LEVEL 1.5
#define GS_EIDX_NS_LOOKUP 3.5
#define GS_EIDX_NS_GUESS 2.5 /* the checked equal-width guess (2.6-2.8 ns, 51 and 101 equal edges) */
#define GS_EIDX_NS_EDGE 6.0
#define GS_EIDX_NS_CELL 0.2
/* Cells a bin at least: with 1 a cell, a quarter of the values of 51 cubic
 * edges met several edges in their cell (8 ns an element), with 4 2 %, 8 or
 * more 1 % and less (2.3-2.5 ns).  More cells (doubling) only while the table
 * stays within half of a 32 KiB L1 (GS_EIDX_MAX_FINE_CELLS int32 entries:
 * larger tables measured slower, 1001 edges 3.7 ns on 4004 cells, 4.4 on
 * 32032) and their construction costs at most 1/8 of what the table saves. */
#define GS_EIDX_CELLS_PER_BIN 4
#define GS_EIDX_MAX_FINE_CELLS 4096

typedef struct gs_edge_index {
    int64_t nbins;
    const double *e;  /* GS_BINS_EDGES: nbins + 1 doubles */
    const void *ei;   /* GS_BINS_EDGES_INT: nbins + 1 int64 or uint64 */
    double lo, hi;    /* e[0], e[nbins] (doubles) */
    double scale;     /* linear cells: cells / (hi - lo) */
    uint64_t ulo;     /* key cells: the key of e[0] (integer edges: its bits) */
    int shift;        /* key cells: log2 of a cell's width in keys */
    int keyed;        /* doubles on key cells (else linear) */
    int guess;        /* near-equal-width edges: the checked guess first (no table) */
    double gscale;    /* guess: nbins / (hi - lo) */
    double gtop;      /* guess: nbins - 1 */
    int64_t cells;    /* 0: no table (binary search over all edges) */
    int32_t *first;   /* cells + 1 entries: the inner edges in the cells below c */
} gs_edge_index;

/* ceil(log2(nbins)): the levels of an element's search over all edges. */
static inline int gs_eidx_levels(int64_t nbins)
{
    int levels = 0;
    while (((int64_t)1 << levels) < nbins)
        levels++;
    return levels;
}

/* The table's cells for nbins bins when each thread bins `per_thread`
 * elements (the table is built once, on the calling thread, before the
 * threads start); 0 when the search over all edges costs less. */
static inline int64_t gs_eidx_cells(int64_t nbins, double per_thread)
{
    if (nbins < 2 || nbins >= INT32_MAX / (4 * GS_EIDX_CELLS_PER_BIN))
        return 0;
    const double saved = per_thread * (GS_EIDX_NS_LEVEL * gs_eidx_levels(nbins) - GS_EIDX_NS_LOOKUP);
    int64_t cells = GS_EIDX_CELLS_PER_BIN * nbins;
    if (saved <= GS_EIDX_NS_EDGE * (double)nbins + GS_EIDX_NS_CELL * (double)cells)
        return 0;
    while (2 * cells <= GS_EIDX_MAX_FINE_CELLS && GS_EIDX_NS_CELL * (double)(2 * cells) <= saved / 8)
        cells *= 2;
    return cells;
}

/* The number of p[0..m) (m >= 1, sorted) that are <= x: a branchless binary
 * search (the halving is a conditional move; only the trip count, ceil(log2
 * m), is a branch, the same for every x of one range). */
#define GS_EIDX_COUNT_LE(NAME, T)                                                                             \
    static inline int64_t NAME(const T *p, int64_t m, T x)                                                    \
    {                                                                                                         \
        const T *base = p;                                                                                    \
        while (m > 1) {                                                                                       \
            const int64_t half = m >> 1;                                                                      \
            base = base[half] <= x ? base + half : base;                                                      \
            m -= half;                                                                                        \
        }                                                                                                     \
        return (int64_t)(base - p) + (int64_t)(*base <= x);                                                   \
    }
GS_EIDX_COUNT_LE(gs_eidx_count_le, double)
GS_EIDX_COUNT_LE(gs_eidx_count_le_i64, int64_t)
GS_EIDX_COUNT_LE(gs_eidx_count_le_u64, uint64_t)
#undef GS_EIDX_COUNT_LE

/* The order-preserving key of a double that is not NaN: its bits with the
 * sign bit set (positive) or all bits flipped (negative); -0.0 as +0.0. */
static inline uint64_t gs_eidx_key(double x)
{
    const double z = x + 0.0; /* -0.0 + 0.0 = +0.0 (round to nearest); every other x unchanged */
    uint64_t b;
    memcpy(&b, &z, sizeof b);
    return b ^ ((uint64_t)((int64_t)b >> 63) | 0x8000000000000000u);
}

/* The cells of x, lo <= x <= hi (the table's construction and its lookups
 * call these same functions: the same roundings). */
static inline int64_t gs_eidx_cell_linear(const gs_edge_index *ix, double x)
{
    /* 0 <= f <= cells (+ rounding) for lo <= x <= hi: the conversion is safe, the clamp a conditional move */
    const int64_t c = (int64_t)((x - ix->lo) * ix->scale);
    return c < ix->cells ? c : ix->cells - 1;
}
static inline int64_t gs_eidx_cell_key(const gs_edge_index *ix, uint64_t key)
{
    return (int64_t)((key - ix->ulo) >> ix->shift);
}
static inline int64_t gs_eidx_cell(const gs_edge_index *ix, double x)
{
    return ix->keyed ? gs_eidx_cell_key(ix, gs_eidx_key(x)) : gs_eidx_cell_linear(ix, x);
}

/* The shift that cuts a span of keys into at most `want` cells. */
static inline int gs_eidx_shift(uint64_t span, int64_t want)
{
    int shift = 0;
    while (shift < 63 && (span >> shift) >= (uint64_t)want)
        shift++;
    return shift;
}

/* first[0..cells] from the cells of the inner edges, CELL_OF(k) for edge k
 * (non-decreasing in k: sorted edges, a monotone function): first[c] = k - 1
 * for the cells c past edge k - 1's cell up to edge k's.  Each entry is
 * written once, in order (a count of the edges a cell and a prefix sum over
 * zeroed memory took ~1.5 ns a cell, its store-to-load chain included). */
#define GS_EIDX_FILL(first, cells, nbins, CELL_OF)                                                            \
    do {                                                                                                      \
        int64_t c_ = 0;                                                                                       \
        for (int64_t k_ = 1; k_ < (nbins); k_++) {                                                            \
            const int64_t ck_ = CELL_OF(k_);                                                                  \
            while (c_ <= ck_)                                                                                 \
                (first)[c_++] = (int32_t)(k_ - 1);                                                            \
        }                                                                                                     \
        while (c_ <= (cells))                                                                                 \
            (first)[c_++] = (int32_t)((nbins) - 1);                                                           \
    } while (0)

/* Inner edges that share their cell with the inner edge before them: the
 * values of such a cell need the search over its edges. */
#define GS_EIDX_CROWD(out, nbins, CELL_OF)                                                                    \
    do {                                                                                                      \
        int64_t prev_ = -1;                                                                                   \
        (out) = 0;                                                                                            \
        for (int64_t k_ = 1; k_ < (nbins); k_++) {                                                            \
            const int64_t ck_ = CELL_OF(k_);                                                                  \
            (out) += ck_ == prev_;                                                                            \
            prev_ = ck_;                                                                                      \
        }                                                                                                     \
    } while (0)

/* Set up ix for nbins bins on double edges e (nbins + 1) with a table of
 * about `cells` cells (0: none).  Without memory for the table, or sorted
 * edges (NaN, out of order: the search over all edges then answers as it
 * can, within the bins), the index searches all edges.  Release with
 * gs_eidx_free. */
static inline void gs_eidx_build(gs_edge_index *ix, const double *e, int64_t nbins, int64_t cells)
{
    memset(ix, 0, sizeof *ix);
    ix->nbins = nbins;
    ix->e = e;
    ix->lo = e[0];
    ix->hi = e[nbins];
    if (cells < 1 || nbins < 2)
        return;
    for (int64_t k = 1; k <= nbins; k++)
        if (!(e[k] >= e[k - 1]))
            return;
    /* key cells: always possible (the keys of sorted doubles, infinities too, are sorted) */
    gs_edge_index kx = *ix;
    kx.keyed = 1;
    kx.ulo = gs_eidx_key(e[0]);
    kx.shift = gs_eidx_shift(gs_eidx_key(e[nbins]) - kx.ulo, cells);
    kx.cells = (int64_t)((gs_eidx_key(e[nbins]) - kx.ulo) >> kx.shift) + 1;
    int64_t crowd_key, crowd_lin = INT64_MAX;
#define GS_EIDX_KEY_CELL(k) gs_eidx_cell(&kx, e[k])
    GS_EIDX_CROWD(crowd_key, nbins, GS_EIDX_KEY_CELL);
#undef GS_EIDX_KEY_CELL
    /* linear cells: a finite positive scale (no infinite edge, no span that overflows, outer edges apart) */
    const double span = ix->hi - ix->lo, scale = (double)cells / span;
    gs_edge_index lx = *ix;
    if (span > 0 && span < 1e308 && scale > 0 && scale < 1e300) {
        lx.scale = scale;
        lx.cells = cells;
#define GS_EIDX_LIN_CELL(k) gs_eidx_cell(&lx, e[k])
        GS_EIDX_CROWD(crowd_lin, nbins, GS_EIDX_LIN_CELL);
#undef GS_EIDX_LIN_CELL
    }
    const gs_edge_index *pick = crowd_lin <= crowd_key ? &lx : &kx;
    int32_t *first = (int32_t *)malloc(((size_t)pick->cells + 1) * sizeof *first);
    if (!first)
        return;
    *ix = *pick;
#define GS_EIDX_CELL_OF_EDGE(k) gs_eidx_cell(ix, e[k])
    GS_EIDX_FILL(first, ix->cells, nbins, GS_EIDX_CELL_OF_EDGE);
#undef GS_EIDX_CELL_OF_EDGE
    ix->first = first;
}

/* Whether the checked equal-width guess names the bin of at least 3/4 of the
 * bins' midpoints (empty bins aside) on sorted edges of a finite span; sets
 * the guess's scale. */
static inline int gs_eidx_near_uniform(gs_edge_index *ix)
{
    const double *e = ix->e;
    const int64_t n = ix->nbins;
    const double span = ix->hi - ix->lo, gscale = (double)n / span, gtop = (double)(n - 1);
    if (!(span > 0 && span < 1e308 && gscale > 0 && gscale < 1e300))
        return 0;
    int64_t hit = 0, bins = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!(e[k + 1] >= e[k]))
            return 0; /* (NaN, out of order) */
        if (e[k + 1] == e[k])
            continue;
        const double t = (e[k] + 0.5 * (e[k + 1] - e[k]) - ix->lo) * gscale;
        hit += (t < gtop ? (int64_t)t : n - 1) == k;
        bins++;
    }
    ix->gscale = gscale;
    ix->gtop = gtop;
    return bins > 0 && 4 * hit >= 3 * bins;
}

/* Set up ix for `per_thread` elements a thread: the checked guess for
 * near-equal-width edges, else the table, where they pay for their pass over
 * the edges; else the search over all edges. */
static inline void gs_eidx_init(gs_edge_index *ix, const double *e, int64_t nbins, double per_thread)
{
    gs_eidx_build(ix, e, nbins, 0);
    if (nbins >= 2 &&
        per_thread * (GS_EIDX_NS_LEVEL * gs_eidx_levels(nbins) - GS_EIDX_NS_GUESS) > GS_EIDX_NS_EDGE * nbins &&
        gs_eidx_near_uniform(ix)) {
        ix->guess = 1;
        return;
    }
    gs_eidx_build(ix, e, nbins, gs_eidx_cells(nbins, per_thread));
}

/* The same for GS_BINS_EDGES_INT: nbins + 1 int64 (is_signed) or uint64
 * edges, non-decreasing in that type; key cells on x - e[0]. */
static inline void gs_eidx_init_int(gs_edge_index *ix, const void *e, int is_signed, int64_t nbins,
                                    double per_thread)
{
    memset(ix, 0, sizeof *ix);
    ix->nbins = nbins;
    ix->ei = e;
    const uint64_t *u = (const uint64_t *)e;
    const int64_t want = gs_eidx_cells(nbins, per_thread);
    if (want == 0)
        return;
    for (int64_t k = 1; k <= nbins; k++)
        if (is_signed ? ((const int64_t *)e)[k] < ((const int64_t *)e)[k - 1] : u[k] < u[k - 1])
            return;
    ix->ulo = u[0];
    const uint64_t span = u[nbins] - u[0]; /* e[n] - e[0] >= 0, exact in either signedness */
    ix->shift = gs_eidx_shift(span, want);
    const int64_t cells = (int64_t)(span >> ix->shift) + 1;
    int32_t *first = (int32_t *)malloc(((size_t)cells + 1) * sizeof *first);
    if (!first)
        return;
    ix->cells = cells;
#define GS_EIDX_CELL_OF_EDGE(k) gs_eidx_cell_key(ix, u[k])
    GS_EIDX_FILL(first, cells, nbins, GS_EIDX_CELL_OF_EDGE);
#undef GS_EIDX_CELL_OF_EDGE
    ix->first = first;
}

static inline void gs_eidx_free(gs_edge_index *ix)
{
    free(ix->first);
    ix->first = NULL;
    ix->cells = 0;
}

/* The bin of x, e[0] <= x < e[n] (the caller has sent NaN, the outside and
 * the last edge elsewhere). */
static inline __attribute__((always_inline)) int64_t gs_eidx_inner(const gs_edge_index *ix, double x)
{
    const double *e = ix->e;
    if (ix->guess) {
        const double t = (x - ix->lo) * ix->gscale; /* >= 0 */
        const int64_t b = t < ix->gtop ? (int64_t)t : ix->nbins - 1;
        if (__builtin_expect(e[b] <= x && x < e[b + 1], 1))
            return b;
    }
    if (!ix->cells)
        return gs_eidx_count_le(e, ix->nbins, x) - 1; /* e[0] <= x: at least 1 */
    const int64_t c = gs_eidx_cell(ix, x);
    const int64_t a = ix->first[c], m = ix->first[c + 1] - a; /* the bin is in [a, a + m] */
    if (__builtin_expect(m > 1, 0))
        return a - 1 + gs_eidx_count_le(e + a, m + 1, x); /* e[a] <= x: at least 1 */
    return a + (int64_t)(e[a + 1] <= x); /* m <= 1: e[a + 1] (a < n) decides */
}

/* Histogram's rule on a double: the bin, or -1 (below, above, NaN).  Always
 * inlined: used in several places (the guess's miss among them), gcc made it
 * a call per element (30001 values on 51 cubic edges: 7 ns an element, not 3). */
#define GS_EIDX_INLINE static inline __attribute__((always_inline))
GS_EIDX_INLINE int64_t gs_eidx_bin_rule(const gs_edge_index *ix, double x)
{
    if (!(x >= ix->lo && x < ix->hi))
        return x == ix->hi ? ix->nbins - 1 : -1;
    return gs_eidx_inner(ix, x);
}
/* (a guess's miss: out of the loop, as histogramdd's slow path was -- inlined, the rule's search cost
 * 0.6 ns a coordinate on equal-width edges that never reach it) */
__attribute__((noinline, cold)) static int64_t gs_eidx_bin_miss(const gs_edge_index *ix, double x)
{
    return gs_eidx_bin_rule(ix, x);
}
/* ix->guess: the checked guess (it also fails for NaN and the outside: the range test only after a miss) */
GS_EIDX_INLINE int64_t gs_eidx_bin_guessed(const gs_edge_index *ix, double x)
{
    double t = (x - ix->lo) * ix->gscale;
    t = t > 0 ? t : 0; /* (NaN: 0) */
    t = t < ix->gtop ? t : ix->gtop;
    const int64_t b = (int64_t)t;
    if (__builtin_expect(ix->e[b] <= x && x < ix->e[b + 1], 1))
        return b;
    return gs_eidx_bin_miss(ix, x);
}
GS_EIDX_INLINE int64_t gs_eidx_bin(const gs_edge_index *ix, double x)
{
    return ix->guess ? gs_eidx_bin_guessed(ix, x) : gs_eidx_bin_rule(ix, x);
}
/* BODY(BIN): a loop over elements that bins x with BIN(ix, x), instantiated for each mode of the index,
 * which is tested once, outside the loop (gcc kept the test inside: 0.4 ns of 2.7 a coordinate on
 * equal-width edges). */
#define GS_EIDX_UNSWITCH(ix, BODY)                                                                            \
    do {                                                                                                      \
        if ((ix)->guess) {                                                                                    \
            BODY(gs_eidx_bin_guessed);                                                                        \
        } else {                                                                                              \
            BODY(gs_eidx_bin_rule);                                                                           \
        }                                                                                                     \
    } while (0)

/* Histogram's rule on 64-bit integers against integer edges of the same signedness. */
#define GS_EIDX_BIN_INT(NAME, T, COUNT)                                                                       \
    static inline int64_t NAME(const gs_edge_index *ix, T x)                                                  \
    {                                                                                                         \
        const T *e = (const T *)ix->ei;                                                                       \
        const int64_t n = ix->nbins;                                                                          \
        if (x < e[0] || x >= e[n])                                                                            \
            return x == e[n] ? n - 1 : -1;                                                                    \
        if (!ix->cells)                                                                                       \
            return COUNT(e, n, x) - 1;                                                                        \
        const int64_t c = gs_eidx_cell_key(ix, (uint64_t)x);                                                  \
        const int64_t a = ix->first[c], m = ix->first[c + 1] - a;                                             \
        if (__builtin_expect(m > 1, 0))                                                                       \
            return a - 1 + COUNT(e + a, m + 1, x);                                                            \
        return a + (int64_t)(e[a + 1] <= x);                                                                  \
    }
GS_EIDX_BIN_INT(gs_eidx_bin_i64, int64_t, gs_eidx_count_le_i64)
GS_EIDX_BIN_INT(gs_eidx_bin_u64, uint64_t, gs_eidx_count_le_u64)
#undef GS_EIDX_BIN_INT

#endif /* GPUSYNC_CPU_EDGE_INDEX_H */
