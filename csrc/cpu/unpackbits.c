/* unpackbits (CPU backend): np.unpackbits of a flat uint8 array; threads
 * over slices of input bytes, each byte written as 8 bytes of 0 / 1 in one
 * 64-bit store from a 256-entry table. */
#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <pthread.h>
#include <string.h>

typedef struct {
    const uint8_t *a;
    int64_t stride;
    uint8_t *out;
    const uint64_t *table; /* byte -> its 8 output bytes */
    int little;
} uctx;

/* Both bit orders' tables, built once (building one per call was most of a
 * small call: 256 x 8 stores, about 1 us). */
static uint64_t tables[2][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (int little = 0; little < 2; little++)
        for (int v = 0; v < 256; v++) {
            uint8_t b[8];
            for (int k = 0; k < 8; k++)
                b[k] = (uint8_t)((v >> (little ? k : 7 - k)) & 1);
            memcpy(&tables[little][v], b, 8);
        }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 4 input bytes -> 32 output bytes a step: each byte copied to 8 lanes
 * (broadcast + in-lane byte shuffle), its bit of each lane tested against
 * the lane's mask; returns the input bytes done. */
__attribute__((target("avx2"))) static int64_t unpack_avx2(const uint8_t *a, uint8_t *out, int64_t begin, int64_t end,
                                                           int little)
{
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                            3, 3, 3, 3, 3, 3);
    const __m256i bits = little ? _mm256_set1_epi64x(0x8040201008040201LL) : _mm256_set1_epi64x(0x0102040810204080LL);
    const __m256i one = _mm256_set1_epi8(1);
    int64_t i = begin;
    for (; i + 4 <= end; i += 4) {
        int32_t w;
        memcpy(&w, a + i, 4);
        const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(w), spread);
        const __m256i hit = _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
        _mm256_storeu_si256((__m256i *)(out + 8 * i), _mm256_and_si256(hit, one));
    }
    return i;
}
#endif

static void unpack_slice(void *vc, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const uctx *c = (const uctx *)vc;
    /* locals: the byte stores through out may alias *c, which would make every iteration reload it */
    const uint8_t *a = c->a;
    const uint64_t *table = c->table;
    uint8_t *out = c->out;
    const int64_t s = c->stride;
    if (s == 1) {
        int64_t i = begin;
#if defined(__x86_64__) && defined(__GNUC__)
        if (gs_cpu_features() & GS_CPU_AVX2)
            i = unpack_avx2(a, out, begin, end, c->little);
#endif
        for (; i < end; i++)
            memcpy(out + 8 * i, &table[a[i]], 8);
    } else {
        for (int64_t i = begin; i < end; i++)
            memcpy(out + 8 * i, &table[a[i * s]], 8);
    }
}

gs_status gs_cpu_unpackbits(const gs_array *a, int little, gs_array *out, void *stream)
{
    (void)stream;
    if (a->dtype != GS_UINT8 && a->dtype != GS_BOOL)
        return gs_fail(GS_ERR_TYPE, "Expected an input array of unsigned byte data type");
    if (a->device != GS_HOST || out->device != GS_HOST || out->dtype != GS_UINT8 || out->length != 8 * a->length ||
        (out->length > 1 && out->stride != 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unpackbits: out must be %lld contiguous uint8 on the host",
                       (long long)(8 * a->length));
    pthread_once(&tables_once, build_tables);
    uctx local;
    memset(&local, 0, sizeof local);
    local.little = little != 0;
    local.table = tables[local.little];
    local.a = (const uint8_t *)a->data;
    local.stride = a->stride;
    local.out = (uint8_t *)out->data;
    const gs_status st = gs_cpu_parallel_for(a->length, gs_cpu_threads_for_cost(a->length, GS_CPU_NS_PER_BYTE * 9.0),
                                             unpack_slice, &local);
    return st == GS_ERR_INTERRUPTED ? st : GS_OK; /* GS_ERR_NO_MEMORY for threads: the slices ran on the caller */
}
