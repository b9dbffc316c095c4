/*
 * Teaching demos (CUDA backend): seed 001's counter experiments, seed 002's
 * branch-divergence experiment, and the mutex time-out test hook.
 *
 * Counters:  Every thread of blocks x threads adds 1 to one counter:
 *   race    load, add, store with no synchronization: updates are lost
 *   atomic  atomicAdd
 *   mutex   the increment under gpusync::mutex_lock / mutex_unlock, every
 *           thread contending (safe under independent thread scheduling)
 */
#include "../common/demos.h"
#include "runtime.cuh"
#include "gpusync/mutex.cuh"
#include "gpusync/reduce.cuh"

namespace {

struct counter_ws {
    unsigned long long count;
    unsigned long long done; /* worker blocks finished (mutex kernel's watchdog) */
    int lock;
    int error;
};

__global__ void race_kernel(counter_ws *w)
{
    volatile unsigned long long *c = &w->count;
    *c = *c + 1; /* read-modify-write that other threads interleave with */
}

__global__ void atomic_kernel(counter_ws *w) { atomicAdd(&w->count, 1ull); }

/* Interrupts: block 0 is a watchdog.  Its thread 0 polls the host's cancel
 * word (mapped pinned memory, a PCIe read every ~20 us) until every worker
 * block has finished, and raises the error word to 2 when Ctrl-C asks; the
 * threads waiting for the lock see the error word in mutex_lock's slow path
 * and leave, and blocks that start later leave at once.  (Letting worker
 * blocks read the cancel word on entry is not enough: new blocks start only
 * when resident ones finish, and a resident block finishes only when the
 * last of its threads has had the lock -- 11.7 s after Ctrl-C on the H200.)
 * The loop ends when the workers are done, on an error (a lock time-out),
 * or on cancel: bounded by the workers' own bounded waits. */
__global__ void mutex_kernel(counter_ws *w, const int *cancel, unsigned long long timeout_ns,
                             unsigned long long workers)
{
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            while (atomicAdd(&w->done, 0ull) < workers && !gpusync::load_relaxed(&w->error)) {
                if (gs_cancel_requested(cancel)) {
                    atomicExch(&w->error, 2);
                    break;
                }
                __nanosleep(20000);
            }
        }
        return;
    }
    __shared__ int leave;
    if (threadIdx.x == 0)
        leave = gpusync::load_relaxed(&w->error);
    __syncthreads();
    if (!leave && gpusync::mutex_lock(&w->lock, &w->error, timeout_ns)) {
        volatile unsigned long long *c = &w->count;
        *c = *c + 1;
        gpusync::mutex_unlock(&w->lock);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(&w->done, 1ull);
}

/* Seed 002: a branch on tid % 2 splits every warp (both paths run, one
 * after the other, with half the lanes masked off); on (tid / 32) % 2 whole
 * warps take one path.  With one assignment per path the compiler turns the
 * branch into predicated instructions and the split costs nothing; with a
 * loop of `iters` steps (trip count known only at run time) it cannot. */
__global__ void div_simple_lane(float *out, int iters)
{
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a = 0.f, b = 0.f;
    if (tid % 2 == 0)
        a = 100.f;
    else
        b = 200.f;
    out[tid] = a + b + (float)iters;
}
__global__ void div_simple_warp(float *out, int iters)
{
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a = 0.f, b = 0.f;
    if ((tid / warpSize) % 2 == 0)
        a = 100.f;
    else
        b = 200.f;
    out[tid] = a + b + (float)iters;
}
template <bool BY_WARP> __global__ void div_loop(float *out, int iters)
{
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a = (float)(tid & 7);
    if ((BY_WARP ? (tid / warpSize) % 2 : tid % 2) == 0) {
        for (int i = 0; i < iters; i++)
            a = a * 1.0001f + 0.5f;
    } else {
        for (int i = 0; i < iters; i++)
            a = a * 0.9999f - 0.25f;
    }
    out[tid] = a;
}

/* Both warp reductions of reduce.cuh after lane-dependent divergent work
 * (lane l spins l * 37 steps first), so the lanes reach them at different
 * times: out[2 w] = shuffle butterfly, out[2 w + 1] = shared-memory
 * butterfly of warp w, each lane's value being lane + 1 + 1000 w. */
__global__ void warp_reduce_test(int *out)
{
    __shared__ int buf[1024];
    const int lane = threadIdx.x & 31, w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned spin = lane;
    for (int i = 0; i < lane * 37; i++)
        spin = spin * 1664525u + 1013904223u;
    const int v = lane + 1 + 1000 * w + (spin == 0xdeadbeefu); /* keeps the loop */
    const int a = gpusync::warp_sum(v);
    const int b = gpusync::warp_reduce_smem(v, buf + (threadIdx.x & ~31));
    if (lane == 5) { /* any lane: both butterflies leave the result in every lane */
        out[2 * w] = a;
        out[2 * w + 1] = b;
    }
}

/* The lock is held (set to 1 by the host) and nobody releases it. */
__global__ void stuck_kernel(counter_ws *w, unsigned long long timeout_ns)
{
    if (gpusync::mutex_lock(&w->lock, &w->error, timeout_ns))
        gpusync::mutex_unlock(&w->lock);
}

} // namespace

extern "C" gs_status gs_cuda_counter(int kind, int64_t blocks, int threads, int64_t *value, double *ms)
{
    if (kind < 0 || kind > 2)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "counter kind must be 0 (race), 1 (atomic) or 2 (mutex)");
    gs_cuda_call call(GS_HOST, NULL);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    if (blocks < 1 || blocks > 0x7ffffffe || threads < 1 || threads > dev->max_threads_per_block)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "blocks must be in 1..2^31-2 and threads in 1..%d",
                       dev->max_threads_per_block);
    counter_ws *w = NULL, h;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float t = 0;
    const unsigned long long timeout = (unsigned long long)gs_spin_timeout_ns();
    GS_CUDA_GOTO(cudaMalloc((void **)&w, sizeof *w));
    GS_CUDA_GOTO(cudaMemset(w, 0, sizeof *w));
    GS_CUDA_GOTO(cudaEventCreate(&e0));
    GS_CUDA_GOTO(cudaEventCreate(&e1));
    GS_CUDA_GOTO(cudaEventRecord(e0, 0));
    if (kind == 0)
        race_kernel<<<(unsigned)blocks, threads>>>(w);
    else if (kind == 1)
        atomic_kernel<<<(unsigned)blocks, threads>>>(w);
    else
        mutex_kernel<<<(unsigned)blocks + 1u, threads>>>(w, gs_cuda_cancel_word(), timeout,
                                                          (unsigned long long)blocks);
    GS_CUDA_GOTO(cudaGetLastError());
    GS_CUDA_GOTO(cudaEventRecord(e1, 0));
    if ((st = gs_cuda_wait_event(e1)) != GS_OK)
        goto fail;
    GS_CUDA_GOTO(cudaEventElapsedTime(&t, e0, e1));
    GS_CUDA_GOTO(cudaMemcpy(&h, w, sizeof h, cudaMemcpyDeviceToHost));
    *value = (int64_t)h.count;
    *ms = t;
    if (h.error)
        st = gs_spin_deadlock("mutex counter", -1, "a thread", "the lock");
fail:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (w)
        cudaFree(w);
    return st;
}

extern "C" gs_status gs_cuda_divergence(int kind, int64_t n, int block, int iters, double *ms)
{
    if (kind < 0 || kind > 3 || block < 32 || block > 1024 || block % 32 || n < block || iters < 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "divergence: kind 0..3, block a multiple of 32 up to 1024, n >= block");
    gs_cuda_call call(GS_HOST, NULL);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    const int64_t blocks = n / block;
    if (blocks > 0x7fffffff)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "divergence: too many blocks");
    float *out = NULL, t = 0, best = 1e30f;
    cudaEvent_t e0 = NULL, e1 = NULL;
    void (*k)(float *, int) = kind == 0 ? div_simple_lane : kind == 1 ? div_simple_warp
                            : kind == 2 ? div_loop<false> : div_loop<true>;
    GS_CUDA_GOTO(cudaMalloc((void **)&out, (size_t)blocks * block * sizeof(float)));
    GS_CUDA_GOTO(cudaEventCreate(&e0));
    GS_CUDA_GOTO(cudaEventCreate(&e1));
    for (int rep = 0; rep < 6; rep++) { /* best of 5 after a warm-up */
        GS_CUDA_GOTO(cudaEventRecord(e0, 0));
        k<<<(unsigned)blocks, block>>>(out, iters);
        GS_CUDA_GOTO(cudaGetLastError());
        GS_CUDA_GOTO(cudaEventRecord(e1, 0));
        if ((st = gs_cuda_wait_event(e1)) != GS_OK)
            goto fail;
        GS_CUDA_GOTO(cudaEventElapsedTime(&t, e0, e1));
        if (rep > 0 && t < best)
            best = t;
    }
    *ms = best;
fail:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (out)
        cudaFree(out);
    return st;
}

extern "C" gs_status gs_cuda_self_test(int which, int64_t *bad)
{
    if (which != 0)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "self test %d does not exist", which);
    const int blocks = 64, threads = 256, warps = blocks * threads / 32;
    int *d = NULL, h[2 * 512];
    gs_status st = GS_OK;
    GS_CUDA_GOTO(cudaMalloc((void **)&d, sizeof h));
    warp_reduce_test<<<blocks, threads>>>(d);
    GS_CUDA_GOTO(cudaGetLastError());
    GS_CUDA_GOTO(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    *bad = 0;
    for (int w = 0; w < warps; w++) {
        const int expect = 528 + 32 * 1000 * w; /* 1 + ... + 32, plus 32 x 1000 w */
        *bad += (h[2 * w] != expect) + (h[2 * w + 1] != expect);
    }
fail:
    if (d)
        cudaFree(d);
    return st;
}

extern "C" gs_status gs_cuda_test_deadlock(int64_t timeout_ns)
{
    gs_cuda_call call(GS_HOST, NULL);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    counter_ws *w = NULL, h;
    counter_ws init = {};
    init.lock = 1; /* lock already held (by name: the struct has grown fields before) */
    GS_CUDA_GOTO(cudaMalloc((void **)&w, sizeof *w));
    GS_CUDA_GOTO(cudaMemcpy(w, &init, sizeof init, cudaMemcpyHostToDevice));
    stuck_kernel<<<2, 64>>>(w, (unsigned long long)timeout_ns);
    GS_CUDA_GOTO(cudaGetLastError());
    GS_CUDA_GOTO(cudaMemcpy(&h, w, sizeof h, cudaMemcpyDeviceToHost));
    st = h.error ? gs_fail(GS_ERR_DEADLOCK, "test: the lock was never released; gave up after %.0f ms",
                           timeout_ns / 1e6)
                 : gs_fail(GS_ERR_CUDA, "test: a lock that is never released was taken");
fail:
    if (w)
        cudaFree(w);
    return st;
}

static const gs_demo_ops cuda_demos = {
    .name = "cuda",
    .counter = gs_cuda_counter,
    .test_deadlock = gs_cuda_test_deadlock,
    .divergence = gs_cuda_divergence,
    .self_test = gs_cuda_self_test,
};

extern "C" const gs_demo_ops *gs_cuda_demos(void) { return &cuda_demos; }
