/* unpackbits (CPU backend): np.unpackbits of a flat uint8 array; threads
 * over slices of input bytes, each byte written as 8 bytes of 0 / 1 in one
 * 64-bit store from a 256-entry table. */
#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"
#include "parallel.h"

#include <string.h>

typedef struct {
    const uint8_t *a;
    int64_t stride;
    uint8_t *out;
    uint64_t table[256];
} uctx;

static void unpack_slice(void *vc, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const uctx *c = (const uctx *)vc;
    for (int64_t i = begin; i < end; i++)
        memcpy(c->out + 8 * i, &c->table[c->a[i * c->stride]], 8);
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
    uctx local;
    memset(&local, 0, sizeof local);
    for (int v = 0; v < 256; v++) {
        uint8_t b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (uint8_t)((v >> (little ? k : 7 - k)) & 1);
        memcpy(&local.table[v], b, 8);
    }
    local.a = (const uint8_t *)a->data;
    local.stride = a->stride;
    local.out = (uint8_t *)out->data;
    const gs_status st = gs_cpu_parallel_for(a->length, gs_cpu_threads_for_cost(a->length, GS_CPU_NS_PER_BYTE * 9.0),
                                             unpack_slice, &local);
    return st == GS_ERR_INTERRUPTED ? st : GS_OK; /* GS_ERR_NO_MEMORY for threads: the slices ran on the caller */
}
