/*
 * kernel_refs.cuh -- the occupancy registry: each file's representative kernels,
 * collected by occupancy.cu for gs.occupancy() and gs.kernels().
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_KERNEL_REFS_CUH
#define GPUSYNC_CUDA_KERNEL_REFS_CUH

#include <stddef.h>

/* A representative instantiation of a gpusync kernel, for gs.occupancy():
 * its launch shape as the library launches it (u8 input and 256 bins for
 * histograms, float32 for reductions, 100 bins for binned_statistic). */
struct gs_kernel_ref {
    const char *name; /* "op:strategy" */
    const void *func;
    int threads;
    size_t smem; /* dynamic shared memory */
};
/* Each file appends its kernels to refs and returns how many it added. */
int gs_hist_global_refs(gs_kernel_ref *refs);
int gs_hist_shared_refs(gs_kernel_ref *refs);
int gs_hist_small_refs(gs_kernel_ref *refs); /* hist_small.cu: the shared strategy's fast paths */
int gs_hist_warp_refs(gs_kernel_ref *refs);
int gs_hist_cluster_refs(gs_kernel_ref *refs);
int gs_reduce_refs(gs_kernel_ref *refs);
int gs_binstat_refs(gs_kernel_ref *refs);
int gs_bits_refs(gs_kernel_ref *refs);
int gs_scan_refs(gs_kernel_ref *refs);

#endif /* GPUSYNC_CUDA_KERNEL_REFS_CUH */
