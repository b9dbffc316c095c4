/*
 * runtime.cuh -- what runtime.cu provides every CUDA file: CUDA errors as
 * gs_status (GS_CUDA_CHECK / GS_CUDA_GOTO / GS_GOTO), the scratch pool, the
 * cached device facts, the device guard and the entry-point preamble
 * (gs_cuda_call), the deadlock-flag epilogue, occupancy queries, and the
 * interruptible waits with the device cancel word.
 * Not installed; user-facing device primitives live in csrc/include/gpusync/.
 */
#ifndef GPUSYNC_CUDA_RUNTIME_CUH
#define GPUSYNC_CUDA_RUNTIME_CUH

#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Turn a CUDA error into a gs_status with the CUDA text and the location. */
gs_status gs_cuda_fail(cudaError_t err, const char *what, const char *file, int line);

#define GS_CUDA_CHECK(call)                                                                                   \
    do {                                                                                                      \
        cudaError_t gs_err_ = (call);                                                                         \
        if (gs_err_ != cudaSuccess)                                                                           \
            return gs_cuda_fail(gs_err_, #call, __FILE__, __LINE__);                                          \
    } while (0)

/* Same, but jump to `fail:` after recording the status in `st` (for calls
 * that own resources to release). */
#define GS_CUDA_GOTO(call)                                                                                    \
    do {                                                                                                      \
        cudaError_t gs_err_ = (call);                                                                         \
        if (gs_err_ != cudaSuccess) {                                                                         \
            st = gs_cuda_fail(gs_err_, #call, __FILE__, __LINE__);                                            \
            goto fail;                                                                                        \
        }                                                                                                     \
    } while (0)

/* Same for a gs_status-returning call. */
#define GS_GOTO(call)                                                                                         \
    do {                                                                                                      \
        st = (call);                                                                                          \
        if (st != GS_OK)                                                                                      \
            goto fail;                                                                                        \
    } while (0)

#define GS_MAX_DEVICES 64

/* Stream-ordered scratch memory from gpusync's own pool on the current
 * device (runtime.cu).  The pool keeps up to GS_POOL_KEEP_BYTES (or
 * GPUSYNC_POOL_KEEP_MB) of freed memory across synchronizations -- the
 * device's default pool would give it all back at every sync and map it
 * again on the next call -- and gs_cuda_empty_cache() trims it.  Free with
 * cudaFreeAsync. */
cudaError_t gs_cuda_pool_alloc(void **p, size_t bytes, cudaStream_t s);
template <typename T> inline cudaError_t gs_malloc_async(T **p, size_t bytes, cudaStream_t s)
{
    return gs_cuda_pool_alloc((void **)p, bytes, s);
}
/* cudaFreeAsync(p, s) for p from gs_malloc_async (NULL: nothing); a failure
 * becomes *st unless *st already holds an earlier error. */
void gs_free_async(void *p, cudaStream_t s, gs_status *st);

/* Cached per-device facts (filled once per device, thread-safe). */
gs_status gs_cuda_device(int ordinal, const gs_device_info **info);

/* Makes `ordinal` current for the lifetime of a call and restores the
 * caller's device afterwards. */
struct gs_device_guard {
    int prev = -1;
    cudaError_t err = cudaSuccess;
    gs_device_guard() {}
    explicit gs_device_guard(int ordinal) { enter(ordinal); }
    cudaError_t enter(int ordinal)
    {
        err = cudaGetDevice(&prev);
        if (err != cudaSuccess)
            prev = -1;
        else if (prev != ordinal)
            err = cudaSetDevice(ordinal);
        return err;
    }
    ~gs_device_guard()
    {
        int cur;
        if (prev >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev)
            cudaSetDevice(prev);
    }
    gs_device_guard(const gs_device_guard &) = delete;
    gs_device_guard &operator=(const gs_device_guard &) = delete;
};

/* The device a call runs on: the arrays' device, or the current one for
 * host arrays (staged through it). */
gs_status gs_cuda_call_device(int array_device, int *ordinal, const gs_device_info **info);

/* The preamble of every entry point (runtime.cu): the call's device (see
 * gs_cuda_call_device) made current until the object goes out of scope, its
 * cached facts, and the caller's stream.  Check `status` first:
 *     gs_cuda_call call(a->device, stream);
 *     gs_status st = call.status;
 *     if (st != GS_OK)
 *         return st;
 *     const gs_device_info *dev = call.dev;
 *     cudaStream_t s = call.stream;                                       */
struct gs_cuda_call {
    int ordinal = -1;
    const gs_device_info *dev = NULL;
    cudaStream_t stream;
    gs_status status;
    gs_device_guard guard;
    gs_cuda_call(int array_device, void *stream);
};

/* The deadlock-flag epilogue of the kernels that spin with a time-out: read
 * the int flag such a kernel raises when it gives up, after the stream's work
 * (the stream is synchronized).  Raised: GS_ERR_DEADLOCK, "<op> (<strategy>):
 * <waiter> waited more than <T> ms for <awaited>" (no "(<strategy>)" when
 * strategy < 0).  gs_spin_deadlock is the message alone, for a flag read
 * with other data. */
gs_status gs_cuda_check_deadlock(const int *d_flag, cudaStream_t s, const char *op, int strategy, const char *waiter,
                                 const char *awaited);
gs_status gs_spin_deadlock(const char *op, int strategy, const char *waiter, const char *awaited);

/* A launch configuration in clusters of `csize` blocks (sm_90+) of `threads`
 * threads and `smem` dynamic shared bytes on `s`; the grid starts as one
 * cluster (set cfg.gridDim before the launch).  Launch with
 * cudaLaunchKernelEx(&c.cfg, ...). */
struct gs_cluster_config {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    gs_cluster_config(unsigned csize, unsigned threads, size_t smem, cudaStream_t s)
    {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = csize;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(csize);
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    gs_cluster_config(const gs_cluster_config &) = delete; /* cfg.attrs points into the object */
    gs_cluster_config &operator=(const gs_cluster_config &) = delete;
};

/* Blocks of `kernel` (with `threads` threads and `smem` dynamic shared
 * bytes) that fit on the whole device at once. */
gs_status gs_cuda_resident_blocks(const void *kernel, int threads, size_t smem, const gs_device_info *dev,
                                  int64_t *blocks);

/* Let `kernel` take as much dynamic shared memory as the device allows a
 * block (the opt-in maximum less its static shared memory).  Always the same
 * value, so calls from several host threads cannot race: setting the size
 * each call needs instead would let one thread shrink it under another's
 * launch. */
gs_status gs_cuda_allow_smem(const void *kernel, const gs_device_info *dev);

/* Whether `s` is being captured into a graph -- or the query itself failed
 * (its error cleared): either way no work that a capture cannot take (an
 * upload or a read back with a host wait, a thread's kept buffer, a fallback
 * after a failed call) may run on it now. */
bool gs_cuda_maybe_capturing(cudaStream_t s);

/* A device copy of a small read-only table (a histogram's edges) with
 * `bytes` of the given host content on the current device (`ordinal`), kept
 * for the process's life for later calls with the same content; NULL when
 * the table is too large, the cache is full or `stream` is being captured
 * (the caller then uploads per call).  The copy is complete before this
 * returns: any stream may read it at once. */
const void *gs_cuda_constants(const void *host, size_t bytes, int ordinal, cudaStream_t stream);

/* A scratch buffer the calling thread keeps for stream `s` on device
 * `ordinal` (current), for kernels that would otherwise allocate and free a
 * workspace every call (a sum's partials: the allocation, free and second
 * launch of two-pass took ~4 us of host time a call on the H200 host, r148).
 * Its first GS_SCRATCH_DATA bytes (the header and the accumulators below) are
 * zero the first time it is handed out, and the caller's kernels must leave
 * them zero.  `bytes` is at least GS_SCRATCH_DATA.
 * One buffer per stream handle (at most 8 a thread; one whose last use has
 * completed is freed for a new stream): a use waits only on the previous
 * use of its own handle (through an event, so a destroyed stream's reused
 * handle is safe too) and never ties two streams together.  Call
 * gs_cuda_scratch_done() after the launches whenever this returned a buffer,
 * on failure too (it records that event).  NULL (no error pending) while `s`
 * is being captured (a graph must not keep a thread's buffer), when no slot
 * or memory can be had, or when `bytes` exceeds GS_SCRATCH_MAX_BYTES: the
 * caller takes its per-call workspace.  Freed when the thread exits, without
 * a host wait (stream-ordered after the last use, in relaxed capture mode);
 * gs.empty_cache() leaves them. */
#define GS_SCRATCH_MAX_BYTES ((size_t)1 << 20)

/* The layout every user of a scratch buffer keeps (one buffer serves a
 * thread's sums and histograms on one stream, one use after the other):
 *   [0, GS_SCRATCH_ACC)   a header: the 32-bit word at GS_SCRATCH_TICKET is
 *                         the blocks-done ticket of a last-block kernel; the
 *                         other words only the sums' kernels touch;
 *   [GS_SCRATCH_ACC, GS_SCRATCH_DATA)  GS_SCRATCH_ACC_WORDS 64-bit
 *                         accumulators that a last-block kernel's blocks add
 *                         into and its last block reads and zeroes again (a
 *                         histogram's counts or sums: no zeroing kernel);
 *   [GS_SCRATCH_DATA, ..) a use's own data, not kept.
 * The header and the accumulators are zero whenever no use is running. */
#define GS_SCRATCH_TICKET 8
#define GS_SCRATCH_ACC 64
#define GS_SCRATCH_ACC_WORDS 8192
#define GS_SCRATCH_DATA (GS_SCRATCH_ACC + GS_SCRATCH_ACC_WORDS * 8)
void *gs_cuda_scratch(int ordinal, cudaStream_t s, size_t bytes);
void gs_cuda_scratch_done(int ordinal, cudaStream_t s);

/* Read a device int (an error flag) after the stream's work: the stream is
 * synchronized. */
gs_status gs_cuda_read_flag(const int *d_flag, cudaStream_t s, int *flag);

/* ---- Interrupts on the GPU (one mechanism; see docs/environment.md and
 * gpusync.h's interrupt section).
 * Every host wait for device work goes through gs_cuda_wait_stream /
 * gs_cuda_wait_event: they poll cudaStreamQuery / cudaEventQuery (busy for
 * the first GS_WAIT_SPIN_US, then in naps of at most GS_WAIT_NAP_US) and
 * call gs_interrupt_poll() between polls.  On an interrupt they raise the
 * process-wide device cancel word -- one int of mapped, portable pinned host
 * memory that every device can read -- and keep waiting: the work must drain
 * before its buffers are freed.  Kernels that can run without bound read the
 * cancel word through gs_cuda_cancel_word() (the mutex counter demo, every
 * few blocks) or are cut into bounded launches with the interrupt looked for
 * between them (the barrier benchmark: at most 2^16 rounds a launch); other
 * kernels are bounded by their data and finish.  When the work has drained,
 * the word is lowered and the wait returns GS_ERR_INTERRUPTED (the binding
 * raises KeyboardInterrupt and the next call starts clean). */
#define GS_WAIT_SPIN_US 5000
#define GS_WAIT_NAP_US 100
gs_status gs_cuda_wait_stream(cudaStream_t s);
gs_status gs_cuda_wait_event(cudaEvent_t e);
/* The device address of the cancel word (NULL if it could not be made:
 * kernels then never see a cancel, and waits still end when work drains). */
const int *gs_cuda_cancel_word(void);
/* Kernel side: has the host asked to stop?  (A PCIe read: call it rarely.) */
__device__ __forceinline__ bool gs_cancel_requested(const int *cancel)
{
    return cancel != NULL && *(const volatile int *)cancel != 0;
}

/* Programmatic dependent launch (sm_90): a kernel lets the next one on the
 * stream start launching now (gs_pdl_launch_dependents); the next one, if
 * launched by gs_launch_pdl, runs alongside it and waits for its completion
 * (and its memory) in gs_pdl_wait before it touches what this one wrote.
 * Both are no-ops below sm_90 and where the kernel was launched without the
 * attribute; work before the first kernel on the stream is complete either
 * way (the first kernel only started after it). */
__device__ __forceinline__ void gs_pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void gs_pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
/* kern<<<grid, block, smem, s>>>(args...) as a programmatic dependent of the
 * kernel before it on s (where the device has it: sm_90).  The kernel must
 * call gs_pdl_wait before it reads or writes anything the kernel before it
 * writes.  (A build without sm_90 code run on an sm_90 device compiles the
 * wait and the trigger away: the dependent then starts when the kernel
 * before it has exited, with no formal guarantee that its writes are seen;
 * the package's builds include sm_90, GPUSYNC_CUDA_ARCHS builds may not --
 * review29, item 5.) */
template <class... K, class... A>
inline gs_status gs_launch_pdl(void (*kern)(K...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                               const gs_device_info *dev, A &&...args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = dev->major >= 9;
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    GS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, static_cast<A &&>(args)...));
    return GS_OK;
}

#endif /* GPUSYNC_CUDA_RUNTIME_CUH */
