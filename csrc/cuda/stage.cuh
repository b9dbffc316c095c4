/*
 * stage.cuh -- host arrays through device memory: the pinned-ring copies
 * (stage.cu) and the one staging loop of the element-wise entry points.
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_STAGE_CUH
#define GPUSYNC_CUDA_STAGE_CUH

#include "runtime.cuh"

/* Pageable host memory <-> device at pinned-memory speed (stage.cu): host
 * threads copy through a ring of pinned buffers while the DMA runs.  h2d is
 * ordered after earlier work on s and before later work on s, and returns
 * once `src` has been read; d2h returns when `dst` holds the data. */
gs_status gs_cuda_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s);
gs_status gs_cuda_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s);

/* One array of a call whose arrays are all on the device or all on the host
 * (gs_cuda_staged).  For the step: `ptr` is the chunk's first element on the
 * device and `stride` its stride in elements; both stay 0 for an absent
 * array (a == NULL). */
struct gs_staged {
    const gs_array *a;
    int out;        /* 1: written by the step (host: copied back after each chunk) */
    void *ptr = NULL;
    int64_t stride = 0;
    void *buf = NULL; /* host case: the chunk's device buffer */
    explicit gs_staged(const gs_array *array, int written = 0) : a(array), out(written) {}
};

/* The staging loop of every element-wise entry point (stage.cu's copies).
 * Device arrays: step(0, n) once on the arrays themselves.  Host arrays:
 * device buffers of `chunk` elements each; for every chunk, the inputs are
 * copied in (gs_cuda_h2d), step(off, cnt) runs, and the outputs are copied
 * back (gs_cuda_d2h); the buffers are freed on `s` at the end.  The kind of
 * the first array decides.  n == 0: no step.  step returns gs_status. */
template <class F>
gs_status gs_cuda_staged(gs_staged *arr, int narr, int64_t n, int64_t chunk, cudaStream_t s, F &&step)
{
    gs_status st = GS_OK;
    if (arr[0].a->device != GS_HOST) {
        for (int k = 0; k < narr; k++)
            if (arr[k].a) {
                arr[k].ptr = arr[k].a->data;
                arr[k].stride = arr[k].a->stride;
            }
        return n > 0 ? step((int64_t)0, n) : GS_OK;
    }
    if (chunk > n)
        chunk = n;
    for (int k = 0; k < narr && chunk > 0; k++)
        if (arr[k].a) {
            GS_CUDA_GOTO(gs_malloc_async(&arr[k].buf, (size_t)chunk * gs_dtype_size(arr[k].a->dtype), s));
            arr[k].ptr = arr[k].buf;
            arr[k].stride = 1;
        }
    for (int64_t off = 0; off < n; off += chunk) {
        const int64_t cnt = n - off < chunk ? n - off : chunk;
        for (int k = 0; k < narr; k++)
            if (arr[k].a && !arr[k].out) {
                const size_t es = gs_dtype_size(arr[k].a->dtype);
                GS_GOTO(gs_cuda_h2d(arr[k].buf, (const char *)arr[k].a->data + off * es, (size_t)cnt * es, s));
            }
        GS_GOTO(step(off, cnt));
        for (int k = 0; k < narr; k++)
            if (arr[k].a && arr[k].out) {
                const size_t es = gs_dtype_size(arr[k].a->dtype);
                GS_GOTO(gs_cuda_d2h((char *)arr[k].a->data + off * es, arr[k].buf, (size_t)cnt * es, s));
            }
    }
fail:
    for (int k = 0; k < narr; k++)
        if (arr[k].buf) {
            cudaFreeAsync(arr[k].buf, s);
            arr[k].buf = NULL;
        }
    return st;
}

#endif /* GPUSYNC_CUDA_STAGE_CUH */
