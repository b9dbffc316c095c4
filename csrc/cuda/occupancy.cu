/*
 * gs.occupancy (CUDA backend): resource partitioning of gpusync's own kernels
 * (seed 002).  For a kernel as the library launches it: registers and shared
 * memory per block, how many blocks each SM resource allows (threads, the
 * blocks-per-SM limit, registers, shared memory), the active blocks and
 * warps the occupancy API reports, the limiting resource, and the block size
 * cudaOccupancyMaxPotentialBlockSize suggests.
 */
#include "kernel_refs.cuh"
#include "runtime.cuh"

#include <stdio.h>
#include <string.h>

#define GS_MAX_REFS 64

static int all_refs(gs_kernel_ref *r)
{
    int n = 0;
    n += gs_hist_global_refs(r + n);
    n += gs_hist_shared_refs(r + n);
    n += gs_hist_small_refs(r + n);
    n += gs_hist_warp_refs(r + n);
    n += gs_hist_cluster_refs(r + n);
    n += gs_reduce_refs(r + n);
    n += gs_binstat_refs(r + n);
    n += gs_bits_refs(r + n);
    n += gs_scan_refs(r + n);
    return n;
}

extern "C" gs_status gs_cuda_kernel_names(char *buf, size_t len)
{
    gs_kernel_ref refs[GS_MAX_REFS];
    const int n = all_refs(refs);
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? "," : "", refs[i].name);
    return used < len ? GS_OK : gs_fail(GS_ERR_INVALID_ARGUMENT, "buffer too small");
}

extern "C" gs_status gs_cuda_occupancy(const char *name, int block_size, gs_occupancy *o)
{
    gs_kernel_ref refs[GS_MAX_REFS];
    const int n = all_refs(refs);
    const gs_kernel_ref *k = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(refs[i].name, name) == 0)
            k = &refs[i];
    if (!k)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "unknown kernel '%s'", name);
    gs_cuda_call call(GS_HOST, NULL);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const int ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    cudaFuncAttributes a;
    GS_CUDA_CHECK(cudaFuncGetAttributes(&a, k->func));
    const int threads = block_size > 0 ? block_size : k->threads;
    if (threads > a.maxThreadsPerBlock || threads % 32)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "%s: block_size must be a multiple of 32 up to %d (its launch bound)",
                       name, a.maxThreadsPerBlock);
    if (k->smem > 48 * 1024 && (st = gs_cuda_allow_smem(k->func, dev)) != GS_OK)
        return st;
    int active = 0, max_blocks = 0, regs_sm = 0, reserved = 0, min_grid = 0, best = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, k->func, threads, k->smem));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, ord));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, ord));
    if (cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, ord) != cudaSuccess) {
        cudaGetLastError();
        reserved = 0;
    }
    GS_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best, k->func, k->smem, 0));

    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    const int warps = threads / 32, max_warps = dev->max_threads_per_multiprocessor / 32;
    o->block_size = threads;
    o->registers = a.numRegs;
    o->static_smem = (int64_t)a.sharedSizeBytes;
    o->dynamic_smem = (int64_t)k->smem;
    o->active_blocks_per_sm = active;
    o->active_warps_per_sm = active * warps;
    o->max_warps_per_sm = max_warps;
    o->occupancy = (double)(active * warps) / max_warps;
    /* blocks per SM each resource allows (registers: allocated per warp in
     * units of 256) */
    const int regs_per_warp = ((a.numRegs * 32 + 255) / 256) * 256;
    const int64_t smem_block = o->static_smem + o->dynamic_smem + reserved;
    o->limit_threads = max_warps / warps;
    o->limit_blocks = max_blocks;
    o->limit_registers = regs_per_warp ? regs_sm / (regs_per_warp * warps) : max_blocks;
    o->limit_smem = smem_block ? (int)(dev->shared_memory_per_multiprocessor / smem_block) : max_blocks;
    const int lims[4] = {o->limit_threads, o->limit_blocks, o->limit_registers, o->limit_smem};
    const char *names[4] = {"threads", "blocks per SM", "registers", "shared memory"};
    int w = 0;
    for (int i = 1; i < 4; i++)
        if (lims[i] < lims[w])
            w = i;
    snprintf(o->limiter, sizeof o->limiter, "%s", names[w]);
    o->suggested_block_size = best;
    o->suggested_min_grid = min_grid;
    return GS_OK;
}
