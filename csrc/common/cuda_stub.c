/* Linked instead of csrc/cuda/ when the package is built without nvcc:
 * the CUDA backend exists but reports that it cannot run. */
#include "gpusync/gpusync.h"

static int stub_available(void)
{
    gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)");
    return 0;
}
static int stub_device_count(void) { return 0; }
static int stub_pointer_device(const void *p)
{
    (void)p;
    return GS_HOST;
}
static gs_status stub_device_info(int ordinal, gs_device_info *info)
{
    (void)ordinal;
    (void)info;
    return gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)");
}
static gs_status stub_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *b, gs_array *out,
                                gs_strategy s, void *stream, gs_strategy *used)
{
    (void)x, (void)w, (void)b, (void)out, (void)s, (void)stream, (void)used;
    return gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)");
}
static gs_status stub_minmax(const gs_array *x, void *out2, void *stream)
{
    (void)x, (void)out2, (void)stream;
    return gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)");
}
static gs_status stub_uniform_edges(const gs_hist_bins *b, gs_array *out, void *stream)
{
    (void)b, (void)out, (void)stream;
    return gs_fail(GS_ERR_NO_CUDA, "gpusync was built without CUDA (no nvcc at build time)");
}

static const gs_backend_ops stub_ops = {
    "cuda", stub_available, stub_device_count, stub_device_info, stub_pointer_device, stub_histogram, stub_minmax, stub_uniform_edges,
};

const gs_backend_ops *gs_cuda_backend(void) { return &stub_ops; }
