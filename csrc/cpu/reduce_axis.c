/* reduce_axis (CPU backend): segmented sum, count of nonzero and cumsum
 * over a strided (outer, len, inner) view -- NumPy's axis reductions and
 * scans without a transpose.
 *
 * Work items are (o, a chunk of CHUNK consecutive i) pairs: a thread walks
 * k along the axis and adds row k's chunk into CHUNK accumulators, so the
 * inner loop runs along the contiguous direction (the compiler vectorises
 * it for contiguous inner) and every row is read once.  When there are too
 * few items for the threads (a few long rows), the axis is split into parts
 * whose partial sums are added in part order afterwards (deterministic: the
 * split depends on the shape and the thread count only).  Floating inputs
 * accumulate in double, integers and bool in wrapping uint64 (as `reduce`). */
#include "../common/convert.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 2048 /* accumulators per work item: 8-16 KB of each row read contiguously */
#define AXIS_PARTS 64 /* work items the parts of few long lines make (4 for each of 16 threads) */

typedef struct {
    const char *a;
    int64_t outer, len, inner, s0, s1, s2; /* strides in elements */
    gs_dtype dt, odt;
    int op, is_float;
    int64_t nchunks, kparts;
    char *out;
    size_t osz;
    double *fpart; /* kparts > 1: [item][part][CHUNK] partials */
    uint64_t *ipart;
} actx;

#define ID(x) (x)
#define NZ(x) ((x) != 0)
#define NZH(x) (((x) & 0x7fffu) != 0)
#define SEXT(x) ((uint64_t)(int64_t)(x))

/* acc[j] += CONV(row[j]) for j < w: the contiguous inner loop, with restrict
 * pointers so the vectorizer needs no overlap check, inlined into run_items'
 * AVX-512 / AVX2 clones (GS_CLONES).  Before, the loop was baseline SSE2 (16-
 * byte vectors, no clone).  Session 32, c-kernels, one thread, median of 15,
 * old / new builds alternating (benchmarks/results/cpu_axis_ab_c-kernels.txt,
 * ms, two rounds and an earlier pair): float32 sums along axis 0 of
 * (16, 1048576) 10.1-10.4 -> 7.0-7.6, (4096, 4096) 8.3-9.1 -> 6.7-7.3, int32
 * (64, 262144) 8.2-9.2 -> 6.8-8.4; (1048576, 16) 4.2-5.3 -> 4.5-4.8 (16-wide
 * rows).  NumPy's float32 sum along axis 0 (float32 accumulation) stays ~2.5x
 * faster on one thread there; 8-32 KiB stretches per row visit
 * (CHUNK) and software prefetch of the next row measured no better. */
#define DEF_ADDV(NAME, T, ACC, CONV)                                                                          \
    static inline __attribute__((always_inline)) void NAME(ACC *restrict acc, const T *restrict row, int w)   \
    {                                                                                                         \
        for (int j = 0; j < w; j++)                                                                           \
            acc[j] += (ACC)CONV(row[j]);                                                                      \
    }
DEF_ADDV(addv_nz8, uint8_t, uint64_t, NZ)
DEF_ADDV(addv_nz16, uint16_t, uint64_t, NZ)
DEF_ADDV(addv_nzh, uint16_t, uint64_t, NZH)
DEF_ADDV(addv_nz32, uint32_t, uint64_t, NZ)
DEF_ADDV(addv_nzf, float, uint64_t, NZ)
DEF_ADDV(addv_nzd, double, uint64_t, NZ)
DEF_ADDV(addv_nz64, uint64_t, uint64_t, NZ)
DEF_ADDV(addv_i8, int8_t, uint64_t, SEXT)
DEF_ADDV(addv_u8, uint8_t, uint64_t, ID)
DEF_ADDV(addv_i16, int16_t, uint64_t, SEXT)
DEF_ADDV(addv_u16, uint16_t, uint64_t, ID)
DEF_ADDV(addv_i32, int32_t, uint64_t, SEXT)
DEF_ADDV(addv_u32, uint32_t, uint64_t, ID)
DEF_ADDV(addv_u64, uint64_t, uint64_t, ID)
DEF_ADDV(addv_h, uint16_t, double, gs_half_to_float)
DEF_ADDV(addv_f, float, double, ID)
DEF_ADDV(addv_d, double, double, ID)

/* acc[j] += CONV(a[o, k, i0 + j]) for k in [k0, k1), j < w; a scan also
 * stores every prefix into out.  ADDV: DEF_ADDV's loop of (T, ACC, CONV). */
#define ADD_ROWS(T, ACC, CONV, ADDV)                                                                          \
    do {                                                                                                      \
        const T *base = (const T *)c->a + o * c->s0 + i0 * c->s2;                                             \
        ACC *acc = (ACC *)accp;                                                                               \
        if (w == 1 && c->op != GS_AXIS_CUMSUM) { /* one long segment: 4 chains */                          \
            ACC s[4] = {(ACC)-0.0, (ACC)-0.0, (ACC)-0.0, (ACC)-0.0}; /* -0.0 stays for integers: 0 */          \
            int64_t k = k0;                                                                                   \
            for (; k + 4 <= k1; k += 4)                                                                       \
                for (int u = 0; u < 4; u++)                                                                   \
                    s[u] += (ACC)CONV(base[(k + u) * c->s1]);                                                 \
            for (; k < k1; k++)                                                                               \
                s[0] += (ACC)CONV(base[k * c->s1]);                                                           \
            acc[0] += (s[0] + s[1]) + (s[2] + s[3]);                                                          \
        } else if (c->inner == 1 && (c->osz == 8 || c->odt == GS_FLOAT32)) { /* a row's scan */             \
            ACC s = acc[0];                                                                                   \
            char *po = c->out + (size_t)o * (size_t)c->len * c->osz;                                          \
            if (c->odt == GS_FLOAT32)                                                                         \
                for (int64_t k = k0; k < k1; k++) {                                                           \
                    s += (ACC)CONV(base[k * c->s1]);                                                          \
                    ((float *)po)[k] = (float)s;                                                              \
                }                                                                                             \
            else /* float64 from double, int64 / uint64 from uint64: the accumulator's own bits */            \
                for (int64_t k = k0; k < k1; k++) {                                                           \
                    s += (ACC)CONV(base[k * c->s1]);                                                          \
                    memcpy(po + (size_t)k * 8, &s, 8);                                                        \
                }                                                                                             \
            acc[0] = s;                                                                                       \
        } else if (c->s2 == 1 && c->op == GS_AXIS_CUMSUM && c->osz == 8 && sizeof(ACC) == 8 &&               \
                   (!c->is_float || c->odt == GS_FLOAT64)) { /* a scan down rows, 8-byte results: stored here */\
            char *dst = c->out + (size_t)((o * c->len + k0) * c->inner + i0) * 8;                             \
            const size_t dstep = (size_t)c->inner * 8;                                                        \
            for (int64_t k = k0; k < k1; k++, dst += dstep) {                                                 \
                const T *row = base + k * c->s1;                                                              \
                for (int j = 0; j < w; j++) {                                                                 \
                    acc[j] += (ACC)CONV(row[j]);                                                              \
                    memcpy(dst + (size_t)j * 8, &acc[j], 8); /* the accumulator's own bits */                \
                }                                                                                             \
            }                                                                                                 \
        } else if (c->s2 == 1) {                                                                              \
            for (int64_t k = k0; k < k1; k++) {                                                               \
                ADDV(acc, base + k * c->s1, w);                                                               \
                if (c->op == GS_AXIS_CUMSUM)                                                                  \
                    store_row(c, o, k, i0, w, accp);                                                          \
            }                                                                                                 \
        } else {                                                                                              \
            for (int64_t k = k0; k < k1; k++) {                                                               \
                const T *row = base + k * c->s1;                                                              \
                for (int j = 0; j < w; j++)                                                                   \
                    acc[j] += (ACC)CONV(row[j * c->s2]);                                                      \
                if (c->op == GS_AXIS_CUMSUM)                                                                  \
                    store_row(c, o, k, i0, w, accp);                                                          \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void store_row(const actx *c, int64_t o, int64_t k, int64_t i0, int w, const void *accp)
{
    char *dst = c->out + (size_t)(((o * c->len + k) * c->inner + i0)) * c->osz;
    if (c->is_float) {
        const double *acc = (const double *)accp;
        if (c->odt == GS_FLOAT64)
            memcpy(dst, acc, (size_t)w * 8);
        else if (c->odt == GS_FLOAT32)
            for (int j = 0; j < w; j++)
                ((float *)dst)[j] = (float)acc[j];
        else
            for (int j = 0; j < w; j++)
                gs_store_acc(dst + (size_t)j * c->osz, c->odt, acc[j], 0);
    } else {
        const uint64_t *acc = (const uint64_t *)accp;
        if (c->osz == 8)
            memcpy(dst, acc, (size_t)w * 8);
        else
            for (int j = 0; j < w; j++)
                gs_store_acc(dst + (size_t)j * c->osz, c->odt, 0, acc[j]);
    }
}

static inline __attribute__((always_inline)) void add_rows(const actx *c, int64_t o, int64_t i0, int w, int64_t k0, int64_t k1, void *accp)
{
    if (c->op == GS_AXIS_COUNT_NONZERO) {
        switch (c->dt) {
        case GS_BOOL:
        case GS_INT8:
        case GS_UINT8: ADD_ROWS(uint8_t, uint64_t, NZ, addv_nz8); break;
        case GS_INT16:
        case GS_UINT16: ADD_ROWS(uint16_t, uint64_t, NZ, addv_nz16); break;
        case GS_FLOAT16: ADD_ROWS(uint16_t, uint64_t, NZH, addv_nzh); break;
        case GS_INT32:
        case GS_UINT32: ADD_ROWS(uint32_t, uint64_t, NZ, addv_nz32); break;
        case GS_FLOAT32: ADD_ROWS(float, uint64_t, NZ, addv_nzf); break;
        case GS_FLOAT64: ADD_ROWS(double, uint64_t, NZ, addv_nzd); break;
        default: ADD_ROWS(uint64_t, uint64_t, NZ, addv_nz64); break;
        }
        return;
    }
    switch (c->dt) {
    case GS_BOOL: ADD_ROWS(uint8_t, uint64_t, NZ, addv_nz8); break;
    case GS_INT8: ADD_ROWS(int8_t, uint64_t, SEXT, addv_i8); break;
    case GS_UINT8: ADD_ROWS(uint8_t, uint64_t, ID, addv_u8); break;
    case GS_INT16: ADD_ROWS(int16_t, uint64_t, SEXT, addv_i16); break;
    case GS_UINT16: ADD_ROWS(uint16_t, uint64_t, ID, addv_u16); break;
    case GS_INT32: ADD_ROWS(int32_t, uint64_t, SEXT, addv_i32); break;
    case GS_UINT32: ADD_ROWS(uint32_t, uint64_t, ID, addv_u32); break;
    case GS_INT64:
    case GS_UINT64: ADD_ROWS(uint64_t, uint64_t, ID, addv_u64); break;
    case GS_FLOAT16: ADD_ROWS(uint16_t, double, gs_half_to_float, addv_h); break;
    case GS_FLOAT32: ADD_ROWS(float, double, ID, addv_f); break;
    default: ADD_ROWS(double, double, ID, addv_d); break;
    }
}

GS_CLONES static void run_items(void *vc, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const actx *c = (const actx *)vc;
    union {
        double f[CHUNK];
        uint64_t u[CHUNK];
    } acc;
    for (int64_t it = begin; it < end; it++) {
        const int64_t item = it / c->kparts, part = it % c->kparts;
        const int64_t o = item / c->nchunks, i0 = (item % c->nchunks) * CHUNK;
        const int w = (int)(c->inner - i0 < CHUNK ? c->inner - i0 : CHUNK);
        const int64_t k0 = c->len * part / c->kparts, k1 = c->len * (part + 1) / c->kparts;
        /* only the w accumulators this item uses (a short row must not pay for CHUNK) */
        if (c->is_float && c->len > 0) /* -0.0 + x == x for every x: NumPy's sum of {-0.0} is -0.0 */
            for (int j = 0; j < w; j++)
                acc.f[j] = -0.0;
        else
            memset(&acc, 0, (size_t)w * sizeof acc.u[0]);
        add_rows(c, o, i0, w, k0, k1, &acc);
        if (c->op == GS_AXIS_CUMSUM)
            continue;
        if (c->kparts > 1) {
            size_t at = (size_t)it * CHUNK;
            if (c->is_float)
                memcpy(c->fpart + at, acc.f, (size_t)w * 8);
            else
                memcpy(c->ipart + at, acc.u, (size_t)w * 8);
            continue;
        }
        char *dst = c->out + (size_t)(o * c->inner + i0) * c->osz;
        if (c->is_float && c->odt == GS_FLOAT32) /* the common results in loops the compiler vectorizes */
            for (int j = 0; j < w; j++)
                ((float *)dst)[j] = (float)acc.f[j];
        else if (c->osz == 8 && (c->is_float ? c->odt == GS_FLOAT64 : c->odt != GS_FLOAT64))
            memcpy(dst, &acc, (size_t)w * 8); /* float64 from double, int64 / uint64 from uint64: the same bits */
        else
            for (int j = 0; j < w; j++)
                gs_store_acc(dst + (size_t)j * c->osz, c->odt, acc.f[j], acc.u[j]);
    }
}

gs_status gs_cpu_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                             gs_array *out, void *stream)
{
    (void)stream;
    if (a->device != GS_HOST || out->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: the CPU backend takes host arrays");
    int64_t nout;
    gs_status st = gs_axis_check(a, shape, op, out, &nout);
    if (st != GS_OK)
        return st;
    actx c = {0};
    c.a = (const char *)a->data;
    c.outer = shape[0], c.len = shape[1], c.inner = shape[2];
    c.s0 = strides[0], c.s1 = strides[1], c.s2 = strides[2];
    c.dt = a->dtype, c.odt = out->dtype, c.op = op;
    c.is_float = op != GS_AXIS_COUNT_NONZERO && gs_dtype_is_float(a->dtype);
    c.out = (char *)out->data;
    c.osz = gs_dtype_size(out->dtype);
    if (c.outer == 0 || c.inner == 0)
        return GS_OK;
    c.nchunks = (c.inner + CHUNK - 1) / CHUNK;
    const int64_t items = c.outer * c.nchunks;
    const int64_t total = c.outer * c.len * c.inner;
    const double ns = (op == GS_AXIS_CUMSUM ? GS_CPU_NS_SCAN_BYTE : GS_CPU_NS_PER_BYTE) * (double)gs_dtype_size(a->dtype);
    const int nthreads = gs_cpu_threads_for_cost(total, ns);
    /* Few long lines: each line's axis split into parts summed apart, then added in order.  The split
     * depends on the shape alone, never on the threads this call got, so that a float result has the same
     * bits on any thread count (the docs' fixed order; a split by the threads gave 3 different last bits
     * on 1, 2 and 7 threads); AXIS_PARTS work items keep 16 threads busy 4 times over. */
    c.kparts = 1;
    if (op != GS_AXIS_CUMSUM && items < AXIS_PARTS && c.len >= 8192) {
        int64_t want = (AXIS_PARTS + items - 1) / items, cap = c.len / 4096;
        c.kparts = want < cap ? want : cap;
    }
    if (c.kparts > 1) {
        size_t cells = (size_t)(items * c.kparts) * CHUNK;
        void *p = calloc(cells, 8);
        if (!p)
            return gs_fail(GS_ERR_NO_MEMORY, "reduce_axis: %zu bytes of partials", cells * 8);
        if (c.is_float)
            c.fpart = (double *)p;
        else
            c.ipart = (uint64_t *)p;
    }
    st = gs_cpu_parallel_for(items * c.kparts, nthreads, run_items, &c);
    if (st == GS_ERR_INTERRUPTED) { /* the pool stopped: no result */
        free(c.is_float ? (void *)c.fpart : (void *)c.ipart);
        return st;
    }
    if (c.kparts > 1) { /* add the parts in order */
        for (int64_t item = 0; item < items; item++) {
            const int64_t o = item / c.nchunks, i0 = (item % c.nchunks) * CHUNK;
            const int w = (int)(c.inner - i0 < CHUNK ? c.inner - i0 : CHUNK);
            char *dst = c.out + (size_t)(o * c.inner + i0) * c.osz;
            for (int j = 0; j < w; j++) {
                double f = -0.0;
                uint64_t u = 0;
                for (int64_t part = 0; part < c.kparts; part++) {
                    size_t at = (size_t)(item * c.kparts + part) * CHUNK + (size_t)j;
                    if (c.is_float)
                        f += c.fpart[at];
                    else
                        u += c.ipart[at];
                }
                gs_store_acc(dst + (size_t)j * c.osz, c.odt, f, u);
            }
        }
        free(c.is_float ? (void *)c.fpart : (void *)c.ipart);
    }
    return GS_OK;
}
