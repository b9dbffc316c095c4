/*
 * unpackbits (CUDA backend, issue 15): np.unpackbits of a flat uint8 array.
 * One thread per input byte (grid-stride), its 8 output bytes written as one
 * 8-byte store when out is 8-byte aligned.  Host arrays are staged.
 */
#include "stage.cuh"

#include <string.h>

namespace {

__global__ void unpack_kernel(const uint8_t *a, int64_t n, int64_t stride, int little, uint8_t *out)
{
    const bool aligned = ((uintptr_t)out & 7) == 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const unsigned v = a[i * stride];
        unsigned long long w = 0;
#pragma unroll
        for (int k = 0; k < 8; k++)
            w |= (unsigned long long)((v >> (little ? k : 7 - k)) & 1u) << (8 * k); /* byte k of the word */
        if (aligned) {
            reinterpret_cast<unsigned long long *>(out)[i] = w;
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++)
                out[8 * i + k] = (uint8_t)(w >> (8 * k));
        }
    }
}

} // namespace

extern "C" gs_status gs_cuda_unpackbits(const gs_array *a, int little, gs_array *out, void *stream)
{
    if (a->dtype != GS_UINT8 && a->dtype != GS_BOOL)
        return gs_fail(GS_ERR_TYPE, "Expected an input array of unsigned byte data type");
    const int on_host = a->device == GS_HOST;
    if (out->device != a->device || out->dtype != GS_UINT8 || out->length != 8 * a->length ||
        (out->length > 1 && out->stride != 1) || (on_host && a->stride != 1 && a->length > 1))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unpackbits: out must be %lld contiguous uint8 next to a "
                                                "(host a contiguous)", (long long)(8 * a->length));
    const int64_t n = a->length;
    if (n == 0)
        return GS_OK;
    gs_cuda_call call(a->device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    uint8_t *d_a = NULL, *d_out = NULL;
    if (on_host) {
        GS_CUDA_GOTO(gs_malloc_async(&d_a, (size_t)n, s));
        GS_CUDA_GOTO(gs_malloc_async(&d_out, (size_t)n * 8, s));
        GS_GOTO(gs_cuda_h2d(d_a, a->data, (size_t)n, s));
    }
    {
        const int threads = 256;
        int64_t grid = (n + threads - 1) / threads;
        const int64_t cap = (int64_t)dev->multiprocessors * 32;
        grid = grid < cap ? grid : cap;
        unpack_kernel<<<(unsigned)grid, threads, 0, s>>>(on_host ? d_a : (const uint8_t *)a->data, n,
                                                         on_host ? 1 : a->stride, little,
                                                         on_host ? d_out : (uint8_t *)out->data);
        GS_CUDA_GOTO(cudaGetLastError());
    }
    if (on_host)
        GS_GOTO(gs_cuda_d2h(out->data, d_out, (size_t)n * 8, s));
fail:
    if (d_a)
        cudaFreeAsync(d_a, s);
    if (d_out)
        cudaFreeAsync(d_out, s);
    return st;
}
