/*
 * histogramdd (CUDA backend): numpy.histogramdd's counts in one fused
 * kernel (issue 15).  Each thread takes points grid-stride; for each
 * dimension it loads the coordinate, bins it exactly as NumPy does
 * (gs_histdd_bin: a guess from the equal-width formula checked against the
 * edges, else a binary search -- csrc/common/histdd.h), and adds one to the
 * point's C-order linear bin:
 *
 *   shared   every block keeps a private copy of all bins in shared memory
 *            (uint32 counts, or float64 weight sums) next to the edges, and
 *            adds its non-zero bins to the result at the end; used when the
 *            bins (and edges) fit in a block's opt-in shared memory;
 *   cluster  (sm_90+) when the bins do not fit one block: a thread-block
 *            cluster of C blocks holds them, each block a power-of-two slice
 *            in its shared memory, and every block adds to any bin through
 *            distributed shared memory (cluster.map_shared_rank);
 *   global   otherwise: one global atomic per counted point.
 *
 * Edges live in shared memory when there are at most EDGES_SMEM of them.
 * Grids are bounded so that no block counts 2^32 points (32-bit shared
 * counters cannot wrap).
 */
#include "elements.cuh"
#include "stage.cuh"
#include "../common/histdd.h"

#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <string.h>
#include <type_traits>

namespace cg = cooperative_groups;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GS_HISTDD_NO_CLUSTERS 1 /* the cluster kernel's body is only compiled for sm_90+ */
#endif

namespace {

constexpr int THREADS = 512;          /* the privatized and global kernels */
constexpr int CLUSTER_THREADS = 1024; /* the cluster kernel: one block of a big slice per SM, so all its threads */
constexpr int64_t EDGES_SMEM = 4096;

struct dd_args {
    const char *coord[GS_HISTDD_MAX_DIMS];
    int64_t cstride[GS_HISTDD_MAX_DIMS]; /* elements */
    int64_t nedges[GS_HISTDD_MAX_DIMS], eoff[GS_HISTDD_MAX_DIMS], bstride[GS_HISTDD_MAX_DIMS];
    double scale[GS_HISTDD_MAX_DIMS];
    const double *edges; /* device, all dimensions */
    const double *w;
    int64_t wstride, n, nbins, nedges_total;
    int ndim, edges_in_smem;
    int out_f64; /* unweighted counts written as float64 (exact below 2^53: what NumPy returns) */
    void *out;   /* int64 counts or float64 sums / counts */
};

__device__ __forceinline__ double to_d(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ double to_d(gs_f16 x) { return (double)__half2float(__ushort_as_half(x.bits)); }
template <class T> __device__ __forceinline__ double to_d(T x) { return (double)x; }

/* U consecutive coordinates of group g (U > 1: one 16-byte load; the
 * launch checked contiguity and alignment), or coordinate g (U == 1). */
template <class T, int U> struct loader {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, T *x)
    {
        x[0] = ((const T *)r.coord[d])[g * r.cstride[d]];
    }
};
template <> struct loader<float, 4> {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, float *x)
    {
        const float4 q = __ldg((const float4 *)r.coord[d] + g);
        x[0] = q.x, x[1] = q.y, x[2] = q.z, x[3] = q.w;
    }
};
template <> struct loader<double, 2> {
    static __device__ __forceinline__ void get(const dd_args &r, int d, int64_t g, double *x)
    {
        const double2 q = __ldg((const double2 *)r.coord[d] + g);
        x[0] = q.x, x[1] = q.y;
    }
};

/* The linear bins of the U points of group g (-1: a coordinate is dropped).
 * All dimensions' loads of a group are issued before their binning. */
template <class T, int U> __device__ __forceinline__ void linear_bins(const dd_args &r, const double *edges, int64_t g,
                                                                      int64_t *at)
{
#pragma unroll
    for (int j = 0; j < U; j++)
        at[j] = 0;
    for (int d = 0; d < r.ndim; d++) {
        T x[U];
        loader<T, U>::get(r, d, g, x);
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t b = gs_histdd_bin(edges + r.eoff[d], r.nedges[d], r.scale[d], to_d(x[j]));
            at[j] = (at[j] < 0 || b < 0) ? -1 : at[j] + b * r.bstride[d];
        }
    }
}

/* Where a counted point goes. */
enum { TO_SHARED, TO_GLOBAL };

template <bool WEIGHTED, int DEST> __device__ __forceinline__ void add_point(const dd_args &r, void *bins, int64_t at,
                                                                              int64_t i)
{
    if (DEST == TO_SHARED) {
        if (WEIGHTED)
            atomicAdd((double *)bins + at, r.w[i * r.wstride]);
        else
            atomicAdd((unsigned *)bins + at, 1u);
    } else {
        if (WEIGHTED)
            atomicAdd((double *)r.out + at, r.w[i * r.wstride]);
        else if (r.out_f64)
            atomicAdd((double *)r.out + at, 1.0);
        else
            atomicAdd((unsigned long long *)r.out + at, 1ull);
    }
}

/* Every point of [0, n) once over the grid: groups of U, then the n % U
 * last points one per thread. */
template <class T, int U, bool WEIGHTED, int DEST>
__device__ __forceinline__ void count_points(const dd_args &r, const double *edges, void *bins)
{
    const int64_t groups = r.n / U, step = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t g = tid; g < groups; g += step) {
        int64_t at[U];
        linear_bins<T, U>(r, edges, g, at);
#pragma unroll
        for (int j = 0; j < U; j++)
            if (at[j] >= 0)
                add_point<WEIGHTED, DEST>(r, bins, at[j], g * U + j);
    }
    if (U > 1 && tid < r.n - groups * U) {
        const int64_t i = groups * U + tid;
        int64_t at;
        linear_bins<T, 1>(r, edges, i, &at);
        if (at >= 0)
            add_point<WEIGHTED, DEST>(r, bins, at, i);
    }
}

/* A block's (or a cluster slice's) partial bin k added to the result. */
template <bool WEIGHTED> __device__ __forceinline__ void flush(const dd_args &r, int64_t k, const void *bins, int64_t j)
{
    if (WEIGHTED) {
        const double v = ((const double *)bins)[j];
        if (v != 0.0)
            atomicAdd((double *)r.out + k, v);
    } else {
        const unsigned v = ((const unsigned *)bins)[j];
        if (!v)
            return;
        if (r.out_f64)
            atomicAdd((double *)r.out + k, (double)v);
        else
            atomicAdd((unsigned long long *)r.out + k, (unsigned long long)v);
    }
}

template <class T, int U, bool WEIGHTED, bool SHARED> __global__ void __launch_bounds__(THREADS) histdd_kernel(dd_args r)
{
    extern __shared__ double smem[];
    double *s_edges = smem;
    char *s_bins = (char *)(smem + (r.edges_in_smem ? r.nedges_total : 0));
    if (r.edges_in_smem)
        for (int64_t k = threadIdx.x; k < r.nedges_total; k += blockDim.x)
            s_edges[k] = r.edges[k];
    if (SHARED) {
        for (int64_t k = threadIdx.x; k < r.nbins; k += blockDim.x) {
            if (WEIGHTED)
                ((double *)s_bins)[k] = 0.0;
            else
                ((unsigned *)s_bins)[k] = 0u;
        }
    }
    __syncthreads();
    const double *edges = r.edges_in_smem ? s_edges : r.edges;
    count_points<T, U, WEIGHTED, SHARED ? TO_SHARED : TO_GLOBAL>(r, edges, s_bins);
    if (SHARED) {
        __syncthreads();
        for (int64_t k = threadIdx.x; k < r.nbins; k += blockDim.x)
            flush<WEIGHTED>(r, k, s_bins, k);
    }
}

/* Block r of a cluster keeps bins [r << sshift, (r + 1) << sshift); the
 * first cluster.sync() publishes the zeroed slices, the second makes every
 * block's adds visible before the slices are flushed. */
template <class T, int U, bool WEIGHTED>
__global__ void __launch_bounds__(CLUSTER_THREADS) histdd_cluster_kernel(dd_args r, int sshift)
{
#ifndef GS_HISTDD_NO_CLUSTERS
    using S = typename std::conditional<WEIGHTED, double, unsigned>::type;
    extern __shared__ double smem[];
    const int64_t slice = (int64_t)1 << sshift;
    S *h = (S *)smem;
    double *s_edges = smem + (slice * sizeof(S) + 7) / 8;
    cg::cluster_group cl = cg::this_cluster();
    for (int64_t k = threadIdx.x; k < slice; k += blockDim.x)
        h[k] = 0;
    if (r.edges_in_smem)
        for (int64_t k = threadIdx.x; k < r.nedges_total; k += blockDim.x)
            s_edges[k] = r.edges[k];
    cl.sync();
    const double *edges = r.edges_in_smem ? s_edges : r.edges;
    const int64_t groups = r.n / U, step = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    auto add = [&](int64_t at, int64_t i) {
        S *dst = cl.map_shared_rank(h, (unsigned)(at >> sshift));
        if (WEIGHTED)
            atomicAdd((double *)dst + (at & (slice - 1)), r.w[i * r.wstride]);
        else
            atomicAdd((unsigned *)dst + (at & (slice - 1)), 1u);
    };
    for (int64_t g = tid; g < groups; g += step) {
        int64_t at[U];
        linear_bins<T, U>(r, edges, g, at);
#pragma unroll
        for (int j = 0; j < U; j++)
            if (at[j] >= 0)
                add(at[j], g * U + j);
    }
    if (U > 1 && tid < r.n - groups * U) { /* the n % U last points */
        const int64_t i = groups * U + tid;
        int64_t at;
        linear_bins<T, 1>(r, edges, i, &at);
        if (at >= 0)
            add(at, i);
    }
    cl.sync();
    const int64_t first = (int64_t)cl.block_rank() << sshift;
    for (int64_t k = threadIdx.x; k < slice && first + k < r.nbins; k += blockDim.x)
        flush<WEIGHTED>(r, first + k, h, k);
#endif
}

/* The smallest cluster size tried (a power of two up to GS_HIST_CLUSTER_MAX):
 * 2, or GPUSYNC_HISTDD_CLUSTER (a tuning knob; docs/environment.md). */
int cluster_floor()
{
    const int c = (int)gs_env_number(GS_ENV_HISTDD_CLUSTER, 2.0, NULL);
    int p = 2;
    while (p < c && p < GS_HIST_CLUSTER_MAX)
        p *= 2;
    return p;
}

/* The cluster launch, or GS_ERR_UNSUPPORTED_DEVICE when no cluster shape
 * fits (the caller then counts with global atomics). */
template <class T, int U, bool WEIGHTED>
gs_status launch_cluster(dd_args &r, size_t ebytes, const gs_device_info *dev, cudaStream_t s)
{
    if (dev->major < 9 || !dev->cluster_launch)
        return GS_ERR_UNSUPPORTED_DEVICE;
    const int64_t cell = WEIGHTED ? 8 : 4, room = dev->shared_memory_per_block_optin - (int64_t)ebytes - 16;
    int csize = 0, sshift = 0;
    for (int c = cluster_floor(); c <= GS_HIST_CLUSTER_MAX && !csize; c *= 2) {
        int sh = 0;
        while (((int64_t)1 << sh) * c < r.nbins)
            sh++;
        if (((int64_t)1 << sh) * cell <= room)
            csize = c, sshift = sh;
    }
    if (!csize)
        return GS_ERR_UNSUPPORTED_DEVICE;
    auto kern = histdd_cluster_kernel<T, U, WEIGHTED>;
    gs_status st = gs_cuda_allow_smem((const void *)kern, dev);
    if (st != GS_OK)
        return st;
    const size_t smem = (((size_t)1 << sshift) * (size_t)cell + 7) / 8 * 8 + ebytes;
    gs_cluster_config cc((unsigned)csize, CLUSTER_THREADS, smem, s);
    cudaLaunchConfig_t &cfg = cc.cfg;
    int clusters = 0;
    GS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, (void *)kern, &cfg));
    if (clusters < 1)
        return GS_ERR_UNSUPPORTED_DEVICE;
    const int64_t work = (r.n + CLUSTER_THREADS * 8 - 1) / (CLUSTER_THREADS * 8);
    int64_t grid = (int64_t)clusters * csize < work ? (int64_t)clusters * csize : work;
    const int64_t min_grid = ((r.n >> 31) + 1) * csize; /* < 2^31 points per cluster: 32-bit counters */
    if (grid < min_grid)
        grid = min_grid;
    grid = (grid + csize - 1) / csize * csize;
    if (grid > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "histogramdd: grid of %lld blocks", (long long)grid);
    cfg.gridDim = dim3((unsigned)grid);
    GS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, r, sshift));
    return GS_OK;
}

template <class T, int U, bool WEIGHTED, bool SHARED>
gs_status launch3(dd_args &r, size_t smem, const gs_device_info *dev, cudaStream_t s)
{
    const void *k = (const void *)histdd_kernel<T, U, WEIGHTED, SHARED>;
    gs_status st = gs_cuda_allow_smem(k, dev);
    if (st != GS_OK)
        return st;
    int64_t resident;
    st = gs_cuda_resident_blocks(k, THREADS, smem, dev, &resident);
    if (st != GS_OK)
        return st;
    if (resident < 1)
        resident = 1;
    const int64_t work = (r.n + THREADS * 8 - 1) / (THREADS * 8);
    int64_t grid = resident < work ? resident : (work > 0 ? work : 1);
    const int64_t min_blocks = (r.n >> 31) + 1; /* < 2^31 points per block: 32-bit counters */
    if (grid < min_blocks)
        grid = min_blocks;
    if (grid > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "histogramdd: grid of %lld blocks", (long long)grid);
    void *args[] = {&r};
    GS_CUDA_CHECK(cudaLaunchKernel(k, dim3((unsigned)grid), dim3(THREADS), args, smem, s));
    return GS_OK;
}

template <class T, int U> gs_status launch(dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    const size_t ebytes = r.edges_in_smem ? (size_t)r.nedges_total * 8 : 0;
    const size_t cell = r.w ? 8 : 4;
    const size_t smem = ebytes + (size_t)r.nbins * cell;
    const bool shared = smem <= (size_t)dev->shared_memory_per_block_optin;
    if (!shared) { /* the bins spread over a cluster's shared memory, else global atomics */
        gs_status st = r.w ? launch_cluster<T, U, true>(r, ebytes, dev, s) : launch_cluster<T, U, false>(r, ebytes, dev, s);
        if (st != GS_ERR_UNSUPPORTED_DEVICE)
            return st;
    }
    if (r.w)
        return shared ? launch3<T, U, true, true>(r, smem, dev, s) : launch3<T, U, true, false>(r, ebytes, dev, s);
    return shared ? launch3<T, U, false, true>(r, smem, dev, s) : launch3<T, U, false, false>(r, ebytes, dev, s);
}

/* float32 / float64 coordinates that are contiguous and 16-byte aligned:
 * 16-byte loads (4 / 2 points a load). */
bool vectorizable(const dd_args &r)
{
    for (int d = 0; d < r.ndim; d++)
        if (r.cstride[d] != 1 || ((uintptr_t)r.coord[d] & 15) != 0)
            return false;
    return true;
}

gs_status launch_dtype(gs_dtype dt, dd_args &r, const gs_device_info *dev, cudaStream_t s)
{
    switch (dt) {
    case GS_BOOL: return launch<gs_bool8, 1>(r, dev, s);
    case GS_INT8: return launch<int8_t, 1>(r, dev, s);
    case GS_UINT8: return launch<uint8_t, 1>(r, dev, s);
    case GS_INT16: return launch<int16_t, 1>(r, dev, s);
    case GS_UINT16: return launch<uint16_t, 1>(r, dev, s);
    case GS_INT32: return launch<int32_t, 1>(r, dev, s);
    case GS_UINT32: return launch<uint32_t, 1>(r, dev, s);
    case GS_INT64: return launch<int64_t, 1>(r, dev, s);
    case GS_UINT64: return launch<uint64_t, 1>(r, dev, s);
    case GS_FLOAT16: return launch<gs_f16, 1>(r, dev, s);
    case GS_FLOAT32: return vectorizable(r) ? launch<float, 4>(r, dev, s) : launch<float, 1>(r, dev, s);
    case GS_FLOAT64: return vectorizable(r) ? launch<double, 2>(r, dev, s) : launch<double, 1>(r, dev, s);
    default: return gs_fail(GS_ERR_TYPE, "histogramdd: unsupported dtype %d", (int)dt);
    }
}

} // namespace

extern "C" gs_status gs_cuda_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                         const gs_array *weights, gs_array *out, void *stream)
{
    if (ndim < 1 || ndim > GS_HISTDD_MAX_DIMS)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: %d dimensions (1 to %d are supported)", ndim,
                       GS_HISTDD_MAX_DIMS);
    const int device = coords[0].device, on_host = device == GS_HOST;
    const int64_t n = coords[0].length;
    dd_args r;
    memset(&r, 0, sizeof r);
    r.ndim = ndim;
    r.n = n;
    int64_t nbins = 1, etotal = 0;
    for (int d = 0; d < ndim; d++) {
        if (coords[d].length != n || coords[d].device != device || coords[d].dtype != coords[0].dtype)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: coordinates must have one length, dtype and device");
        if (on_host && coords[d].stride != 1 && n > 1)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: host coordinates must be contiguous");
        if (nedges[d] < 2)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: dimension %d has %lld edges", d,
                           (long long)nedges[d]);
        if (nbins > INT64_MAX / (nedges[d] - 1))
            return gs_fail(GS_ERR_OVERFLOW, "histogramdd: too many bins");
        r.nedges[d] = nedges[d];
        r.eoff[d] = etotal;
        r.scale[d] = gs_histdd_scale(edges + etotal, nedges[d]);
        r.cstride[d] = on_host ? 1 : coords[d].stride;
        etotal += nedges[d];
        nbins *= nedges[d] - 1;
    }
    for (int d = ndim - 1; d >= 0; d--) /* C order */
        r.bstride[d] = d == ndim - 1 ? 1 : r.bstride[d + 1] * (nedges[d + 1] - 1);
    r.nbins = nbins;
    r.nedges_total = etotal;
    r.edges_in_smem = etotal <= EDGES_SMEM;
    r.out_f64 = !weights && out->dtype == GS_FLOAT64;
    /* unweighted device counts may be float64 (NumPy's result type: no cast afterwards; exact below 2^53) */
    if (out->device != device || out->length != nbins || (nbins > 1 && out->stride != 1) ||
        !(out->dtype == GS_FLOAT64 || (!weights && out->dtype == GS_INT64)) ||
        (on_host && !weights && out->dtype != GS_INT64))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: out must be %lld contiguous %s next to the coordinates",
                       (long long)nbins, weights ? "float64" : "int64 (float64 on the device)");
    if (weights && (weights->dtype != GS_FLOAT64 || weights->length != n || weights->device != device ||
                    (on_host && weights->stride != 1 && n > 1)))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "histogramdd: weights must be %lld float64 next to the coordinates",
                       (long long)n);
    gs_cuda_call call(device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const size_t es = gs_dtype_size(coords[0].dtype);
    void *d_edges = NULL, *d_out = NULL, *d_w = NULL;
    void *d_coord[GS_HISTDD_MAX_DIMS] = {NULL};
    GS_CUDA_GOTO(gs_malloc_async(&d_edges, (size_t)etotal * 8, s));
    GS_CUDA_GOTO(cudaMemcpyAsync(d_edges, edges, (size_t)etotal * 8, cudaMemcpyHostToDevice, s));
    r.edges = (const double *)d_edges;
    if (on_host) { /* stage coordinates, weights and the result */
        for (int d = 0; d < ndim && n > 0; d++) {
            GS_CUDA_GOTO(gs_malloc_async(&d_coord[d], (size_t)n * es, s));
            GS_GOTO(gs_cuda_h2d(d_coord[d], coords[d].data, (size_t)n * es, s));
        }
        if (weights && n > 0) {
            GS_CUDA_GOTO(gs_malloc_async(&d_w, (size_t)n * 8, s));
            GS_GOTO(gs_cuda_h2d(d_w, weights->data, (size_t)n * 8, s));
        }
        GS_CUDA_GOTO(gs_malloc_async(&d_out, (size_t)nbins * 8, s));
    }
    for (int d = 0; d < ndim; d++)
        r.coord[d] = on_host ? (const char *)d_coord[d] : (const char *)coords[d].data;
    r.w = weights ? (on_host ? (const double *)d_w : (const double *)weights->data) : NULL;
    r.wstride = weights ? (on_host ? 1 : weights->stride) : 0;
    r.out = on_host ? d_out : out->data;
    GS_CUDA_GOTO(cudaMemsetAsync(r.out, 0, (size_t)nbins * 8, s));
    if (n > 0) {
        st = launch_dtype(coords[0].dtype, r, dev, s);
        if (st != GS_OK)
            goto fail;
    }
    /* (the pageable edges were read when cudaMemcpyAsync returned: device arrays need no wait) */
    if (on_host)
        GS_GOTO(gs_cuda_d2h(out->data, d_out, (size_t)nbins * 8, s));
fail:
    for (int d = 0; d < ndim; d++)
        if (d_coord[d])
            cudaFreeAsync(d_coord[d], s);
    if (d_w)
        cudaFreeAsync(d_w, s);
    if (d_out)
        cudaFreeAsync(d_out, s);
    if (d_edges)
        cudaFreeAsync(d_edges, s);
    return st;
}
