/* packbits and count_nonzero (CPU backend): threads over whole output bytes
 * (8 elements each), the same predicate as csrc/cuda/bits.cu. */
#include "binning.h" /* gs_half_to_float */
#include "gpusync/tuning.h"
#include "parallel.h"

#include <stdatomic.h>
#ifdef __SSE2__
#include <emmintrin.h> /* baseline x86-64 */
#endif
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#include <immintrin.h>
#define GS_BITS_AVX2 1
#endif

typedef struct {
    const void *x;
    int64_t n, stride;
    gs_dtype dt;
    int has_thr, little;
    double thr;
    int kmin; /* uint8/bool with a threshold: x > thr  <=>  x >= kmin (0..256) */
    uint8_t *out;
    _Atomic int64_t count;
} bctx;

/* 64 bits (bit k: element k) -> output bytes out[b .. b + 8), in `little`
 * or big order within each byte. */
static inline void put_bits64(uint8_t *out, int64_t b, uint64_t m, int little)
{
    if (!little) { /* reverse the bits of every byte */
        m = ((m >> 1) & 0x5555555555555555ULL) | ((m & 0x5555555555555555ULL) << 1);
        m = ((m >> 2) & 0x3333333333333333ULL) | ((m & 0x3333333333333333ULL) << 2);
        m = ((m >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((m & 0x0f0f0f0f0f0f0f0fULL) << 4);
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(out + b, &m, 8); /* byte q of m is output byte b + q */
#else
    for (int q = 0; q < 8; q++)
        out[b + q] = (uint8_t)(m >> (8 * q));
#endif
}

#ifdef __SSE2__
/* 64 bytes -> output bytes out[b .. b + 8): bit k of the 64 set iff byte k
 * is nonzero, in `little` or big order within each output byte. */
static inline void put_mask64(uint8_t *out, int64_t b, const uint8_t *bytes, int little)
{
    const __m128i z = _mm_setzero_si128();
    uint64_t m = 0;
    for (int q = 0; q < 4; q++)
        m |= (uint64_t)(uint16_t)~_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(bytes + 16 * q)), z))
             << (16 * q);
    put_bits64(out, b, m, little);
}
#define GS_BITS_MASK64 1
#endif

/* Contiguous input, 64 elements a step: their predicates as bytes (a loop
 * the compiler vectorizes), then put_mask64 -- one store of 8 output bytes,
 * where one shift and one or per element ran before. */
#ifdef GS_BITS_MASK64
#define BITS_BY64(T, PRED)                                                                                    \
    do {                                                                                                      \
        if (s == 1)                                                                                           \
            for (; b * 8 + 64 <= e1; b += 8) {                                                                \
                uint8_t t_[64];                                                                               \
                for (int k = 0; k < 64; k++)                                                                  \
                    t_[k] = (uint8_t)(PRED(p[b * 8 + k]));                                                    \
                put_mask64(c->out, b, t_, c->little);                                                         \
            }                                                                                                 \
    } while (0)
#else
#define BITS_BY64(T, PRED) ((void)0)
#endif
/* Elements [e0, e1) of one dtype: their count of true predicates, and (when
 * c->out) the bytes they pack into.  One loop per dtype and predicate, the
 * contiguous count loop the one the compiler vectorizes. */
#define BITS(T, PRED)                                                                                         \
    do {                                                                                                      \
        const T *p = (const T *)c->x;                                                                         \
        const int64_t s = c->stride;                                                                          \
        if (!c->out) {                                                                                        \
            if (s == 1)                                                                                       \
                for (int64_t i = e0; i < e1; i += 4096) { /* 32-bit lanes: 4096 predicates fit */             \
                    const int64_t m = e1 - i < 4096 ? e1 - i : 4096;                                          \
                    uint32_t blk = 0;                                                                         \
                    for (int64_t k = 0; k < m; k++)                                                           \
                        blk += (uint32_t)(PRED(p[i + k]));                                                    \
                    cnt += blk;                                                                               \
                }                                                                                             \
            else                                                                                              \
                for (int64_t i = e0; i < e1; i += 4096) { /* the same blocks: the compiler gathers */         \
                    const int64_t m = e1 - i < 4096 ? e1 - i : 4096;                                          \
                    const T *q = p + i * s;                                                                   \
                    uint32_t blk = 0;                                                                         \
                    for (int64_t k = 0; k < m; k++)                                                           \
                        blk += (uint32_t)(PRED(q[k * s]));                                                    \
                    cnt += blk;                                                                               \
                }                                                                                             \
            break;                                                                                            \
        }                                                                                                     \
        int64_t b = e0 / 8;                                                                                   \
        BITS_BY64(T, PRED);                                                                                   \
        for (; b * 8 < e1; b++) {                                                                             \
            const int64_t lo = b * 8, hi = lo + 8 < c->n ? lo + 8 : c->n;                                     \
            unsigned byte = 0;                                                                                \
            if (hi - lo == 8 && s == 1) {                                                                     \
                for (int k = 0; k < 8; k++)                                                                   \
                    byte |= (unsigned)(PRED(p[lo + k])) << (c->little ? k : 7 - k);                           \
            } else {                                                                                          \
                for (int64_t i = lo; i < hi; i++)                                                             \
                    byte |= (unsigned)(PRED(p[i * s])) << (c->little ? (int)(i - lo) : 7 - (int)(i - lo));    \
            }                                                                                                 \
            c->out[b] = (uint8_t)byte;                                                                        \
        }                                                                                                     \
    } while (0)
#define NZ(v) ((v) != 0)
#define GT(v) ((double)(v) > thr)
#define HALF_NZ(v) (((v)&0x7fffu) != 0)
#define HALF_GT(v) ((double)gs_half_to_float(v) > thr)

#ifdef GS_BITS_AVX2
/* 64 bytes at a time into 8 output bytes with AVX2, from output byte b while
 * a whole 64 fit before element e1; returns the next b.  Bit k of the 64:
 * byte k nonzero (ge 0) or byte k >= kmin (ge 1; 0 < kmin < 256).  Big bit
 * order reverses each 8-byte group's bytes first (one shuffle), so the mask
 * comes out in output order: the SSE2 loop's bit reversal of the mask made
 * big order 3.4x slower than little (1M uint8: 52 against 15 us, 2-core
 * host). */
__attribute__((target("avx2"))) static int64_t pack64_avx2(const uint8_t *p, uint8_t *out, int64_t b, int64_t e1,
                                                             int little, int ge, int kmin)
{
    const __m256i rev = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                         15, 14, 13, 12, 11, 10, 9, 8);
    const __m256i z = _mm256_setzero_si256(), kv = _mm256_set1_epi8((char)kmin);
    for (; b * 8 + 64 <= e1; b += 8) {
        __m256i v[2] = {_mm256_loadu_si256((const __m256i *)(p + b * 8)),
                        _mm256_loadu_si256((const __m256i *)(p + b * 8 + 32))};
        uint64_t m = 0;
        for (int h = 0; h < 2; h++) {
            const __m256i x = little ? v[h] : _mm256_shuffle_epi8(v[h], rev);
            const uint32_t bits = ge ? (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(x, kv), x))
                                     : ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, z));
            m |= (uint64_t)bits << (32 * h);
        }
        memcpy(out + b, &m, 8); /* x86-64 is little-endian: byte k of m is output byte b + k */
    }
    return b;
}

#endif

/* Unsigned bytes >= c->kmin (a threshold on uint8/bool: x > t is x >= floor(t) + 1,
 * exact for every t; kmin 0: all, 256: none), 64 at a time: max(x, k) == x. */
static void pack_bytes_ge(bctx *c, int64_t e0, int64_t e1)
{
    const uint8_t *p = (const uint8_t *)c->x;
    const int k = c->kmin;
    int64_t b = e0 / 8;
#ifdef GS_BITS_AVX2
    if (k > 0 && k < 256 && (gs_cpu_features() & GS_CPU_AVX2))
        b = pack64_avx2(p, c->out, b, e1, c->little, 1, k);
#endif
#ifdef __SSE2__
    if (k > 0 && k < 256) {
        uint8_t *out = c->out;
        const int little = c->little;
        const __m128i kv = _mm_set1_epi8((char)k);
        for (; b * 8 + 64 <= e1; b += 8) {
            uint64_t m = 0;
            for (int q = 0; q < 4; q++) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(p + b * 8 + 16 * q));
                m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, kv), v)) << (16 * q);
            }
            put_bits64(out, b, m, little);
        }
    }
#endif
    for (; b * 8 < e1; b++) { /* the rest, and the last, partial byte */
        unsigned byte = 0;
        const int64_t end = b * 8 + 8 < e1 ? b * 8 + 8 : e1;
        for (int64_t i = b * 8; i < end; i++)
            byte |= (unsigned)(p[i] >= k) << (c->little ? (int)(i - b * 8) : 7 - (int)(i - b * 8));
        c->out[b] = (uint8_t)byte;
    }
}

/* Bytes != 0 of 8 one-byte elements to 8 bits at once: the high bit of each
 * byte of nz is set iff the byte is nonzero; the multiply gathers those bits
 * into the top byte in element order (little) or reversed (big). */
static void pack_bytes(bctx *c, int64_t e0, int64_t e1)
{
    const uint8_t *p = (const uint8_t *)c->x;
    if (c->has_thr) {
        pack_bytes_ge(c, e0, e1);
        return;
    }
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7fULL, ones = 0x0101010101010101ULL;
    const uint64_t magic = c->little ? 0x0102040810204080ULL : 0x8040201008040201ULL;
    int64_t b = e0 / 8;
#ifdef GS_BITS_AVX2
    if (gs_cpu_features() & GS_CPU_AVX2)
        b = pack64_avx2(p, c->out, b, e1, c->little, 0, 0);
#endif
#ifdef __SSE2__
    for (; b * 8 + 64 <= e1; b += 8) /* 64 elements -> 64 bits: bit k set iff byte k is nonzero */
        put_mask64(c->out, b, p + b * 8, c->little);
#endif
    for (; b * 8 + 8 <= e1; b++) {
        uint64_t x;
        memcpy(&x, p + b * 8, 8);
        const uint64_t nz = ((((x & lo7) + lo7) | x) >> 7) & ones;
        c->out[b] = (uint8_t)((nz * magic) >> 56);
    }
    if (b * 8 < e1) { /* the last, partial byte */
        unsigned byte = 0;
        for (int64_t i = b * 8; i < e1; i++)
            byte |= (unsigned)(p[i] != 0) << (c->little ? (int)(i - b * 8) : 7 - (int)(i - b * 8));
        c->out[b] = (uint8_t)byte;
    }
}

#ifdef GS_BITS_AVX2
/* Zero bytes of p[0, n) counted 128 at a time: four independent 32-byte
 * lanes of byte counters (one psubb chain each, at most 255 rounds between
 * two horizontal sums); returns the elements done (a multiple of 128). */
__attribute__((target("avx2"))) static int64_t zeros_avx2(const uint8_t *p, int64_t n, int64_t *zeros)
{
    const __m256i z = _mm256_setzero_si256();
    int64_t i = 0, zs = 0;
    while (i + 128 <= n) {
        __m256i a0 = z, a1 = z, a2 = z, a3 = z;
        const int64_t stop = i + 128 * 255 < n ? i + 128 * 255 : n;
        for (; i + 128 <= stop; i += 128) {
            a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i)), z));
            a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 32)), z));
            a2 = _mm256_sub_epi8(a2, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 64)), z));
            a3 = _mm256_sub_epi8(a3, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + i + 96)), z));
        }
        /* byte counters <= 255: their sums of 8 (psadbw) in 64-bit lanes */
        const __m256i s = _mm256_add_epi64(_mm256_add_epi64(_mm256_sad_epu8(a0, z), _mm256_sad_epu8(a1, z)),
                                           _mm256_add_epi64(_mm256_sad_epu8(a2, z), _mm256_sad_epu8(a3, z)));
        int64_t q[4];
        _mm256_storeu_si256((__m256i *)q, s);
        zs += q[0] + q[1] + q[2] + q[3];
    }
    *zeros = zs;
    return i;
}
#endif

#ifdef __SSE2__
/* Nonzero bytes of p[0, n): zero bytes counted 16 at a time in byte lanes
 * (at most 255 rounds between two horizontal sums, psadbw). */
static int64_t count_bytes_sse2(const uint8_t *p, int64_t n)
{
    const __m128i z = _mm_setzero_si128();
    int64_t zeros = 0, i = 0;
#ifdef GS_BITS_AVX2
    if (gs_cpu_features() & GS_CPU_AVX2)
        i = zeros_avx2(p, n, &zeros);
#endif
    while (i + 16 <= n) {
        __m128i acc = z;
        const int64_t stop = i + 16 * 255 < n ? i + 16 * 255 : n;
        for (; i + 16 <= stop; i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), z));
        const __m128i s = _mm_sad_epu8(acc, z);
        zeros += _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
    }
    for (; i < n; i++)
        zeros += p[i] == 0;
    return n - zeros;
}
#endif

GS_CLONES static int64_t piece(const bctx *c, int64_t e0, int64_t e1)
{
    if (c->out && c->stride == 1 && (c->dt == GS_UINT8 || c->dt == GS_BOOL || (!c->has_thr && c->dt == GS_INT8))) {
        pack_bytes((bctx *)c, e0, e1);
        return 0;
    }
#ifdef __SSE2__
    if (!c->out && !c->has_thr && c->stride == 1 && gs_dtype_size(c->dt) == 1)
        return count_bytes_sse2((const uint8_t *)c->x + e0, e1 - e0);
#endif
    int64_t cnt = 0;
    const double thr = c->thr;
    const int t = c->has_thr;
    switch (c->dt) {
    case GS_BOOL:
    case GS_UINT8: if (t) BITS(uint8_t, GT); else BITS(uint8_t, NZ); break;
    case GS_INT8: if (t) BITS(int8_t, GT); else BITS(int8_t, NZ); break;
    case GS_INT16: if (t) BITS(int16_t, GT); else BITS(int16_t, NZ); break;
    case GS_UINT16: if (t) BITS(uint16_t, GT); else BITS(uint16_t, NZ); break;
    case GS_INT32: if (t) BITS(int32_t, GT); else BITS(int32_t, NZ); break;
    case GS_UINT32: if (t) BITS(uint32_t, GT); else BITS(uint32_t, NZ); break;
    case GS_INT64: if (t) BITS(int64_t, GT); else BITS(int64_t, NZ); break;
    case GS_UINT64: if (t) BITS(uint64_t, GT); else BITS(uint64_t, NZ); break;
    case GS_FLOAT16: if (t) BITS(uint16_t, HALF_GT); else BITS(uint16_t, HALF_NZ); break;
    case GS_FLOAT32: if (t) BITS(float, GT); else BITS(float, NZ); break;
    default: if (t) BITS(double, GT); else BITS(double, NZ); break;
    }
    return cnt;
}

/* A thread's whole output bytes [b0, b1), in pieces of GS_CPU_CHUNK
 * elements with an interrupt check between them. */
static void slice(void *ctx, int tid, int64_t b0, int64_t b1)
{
    bctx *c = (bctx *)ctx;
    const int64_t end = b1 * 8 < c->n ? b1 * 8 : c->n;
    int64_t cnt = 0;
    for (int64_t e = b0 * 8; e < end; e += GS_CPU_CHUNK) {
        if (gs_cpu_stop(tid))
            break;
        cnt += piece(c, e, end - e < GS_CPU_CHUNK ? end : e + GS_CPU_CHUNK);
    }
    atomic_fetch_add(&c->count, cnt);
}

static gs_status run(const gs_array *a, const double *thr, int little, gs_array *out, int count)
{
    const int64_t need = count ? 1 : (a->length + 7) / 8;
    if (a->device != GS_HOST || out->device != GS_HOST)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "the cpu backend takes host arrays");
    if (out->length != need || out->stride != 1 || out->dtype != (count ? GS_INT64 : GS_UINT8))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "out must be %lld contiguous %s", (long long)need,
                       count ? "int64" : "uint8");
    bctx c;
    memset(&c, 0, sizeof c);
    c.x = a->data;
    c.n = a->length;
    c.stride = a->stride;
    c.dt = a->dtype;
    c.has_thr = thr != NULL;
    c.thr = thr ? *thr : 0;
    /* x > t for a byte x in 0..255: x >= floor(t) + 1, clamped (NaN: nothing is greater) */
    c.kmin = !c.has_thr || c.thr != c.thr ? 256 : c.thr < 0 ? 0 : c.thr >= 255 ? 256 : (int)c.thr + 1;
    if (!c.has_thr)
        c.kmin = 1; /* (unused without a threshold) */
    c.little = little;
    c.out = count ? NULL : (uint8_t *)out->data;
    atomic_init(&c.count, 0);
    const int64_t bytes = (a->length + 7) / 8;
    gs_status st = GS_OK;
    if (bytes > 0) {
        const double per = GS_CPU_NS_PER_BYTE * (double)gs_dtype_size(a->dtype) + (count ? 0 : GS_CPU_NS_PER_BYTE);
        st = gs_cpu_parallel_for(bytes, gs_cpu_threads_for_cost(a->length, per), slice, &c);
    }
    if (count && st == GS_OK)
        *(int64_t *)out->data = atomic_load(&c.count);
    return st;
}

gs_status gs_cpu_packbits(const gs_array *a, const double *thr, int little, gs_array *out, void *stream)
{
    (void)stream;
    return run(a, thr, little, out, 0);
}

gs_status gs_cpu_count_nonzero(const gs_array *a, const double *thr, gs_array *out, void *stream)
{
    (void)stream;
    return run(a, thr, 0, out, 1);
}
