/* CUDA backend: errors, device facts, and the gs_backend_ops table. */
#include "runtime.cuh"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

gs_status gs_cuda_fail(cudaError_t err, const char *what, const char *file, int line)
{
    cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    const char *base = strrchr(file, '/');
    gs_status st = (err == cudaErrorMemoryAllocation) ? GS_ERR_NO_MEMORY
                   : (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) ? GS_ERR_NO_CUDA
                   : (err == cudaErrorCooperativeLaunchTooLarge) ? GS_ERR_NO_COOPERATIVE
                                                                  : GS_ERR_CUDA;
    return gs_fail(st, "%s: %s (%s at %s:%d)", cudaGetErrorName(err), cudaGetErrorString(err), what,
                   base ? base + 1 : file, line);
}

static gs_device_info g_devices[GS_MAX_DEVICES];
static int g_device_ready[GS_MAX_DEVICES];
static pthread_mutex_t g_device_lock = PTHREAD_MUTEX_INITIALIZER;

static gs_status query_device(int d, gs_device_info *info)
{
    cudaDeviceProp p;
    GS_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->ordinal = d;
    info->major = p.major;
    info->minor = p.minor;
    info->multiprocessors = p.multiProcessorCount;
    info->warp_size = p.warpSize;
    info->max_threads_per_block = p.maxThreadsPerBlock;
    info->max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    info->shared_memory_per_block = (int64_t)p.sharedMemPerBlock;
    info->shared_memory_per_block_optin = (int64_t)p.sharedMemPerBlockOptin;
    info->shared_memory_per_multiprocessor = (int64_t)p.sharedMemPerMultiprocessor;
    info->l2_cache_bytes = p.l2CacheSize;
    info->total_memory_bytes = (int64_t)p.totalGlobalMem;
    int v = 0;
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, d));
    info->memory_clock_khz = v;
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, d));
    info->memory_bus_width_bits = v;
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, d));
    info->clock_khz = v;
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, d));
    info->cooperative_launch = v;
    info->cluster_launch = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClusterLaunch, d) == cudaSuccess)
        info->cluster_launch = v;
    else
        cudaGetLastError();
    return GS_OK;
}

gs_status gs_cuda_device(int ordinal, const gs_device_info **info)
{
    if (ordinal < 0 || ordinal >= GS_MAX_DEVICES)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "no CUDA device %d", ordinal);
    gs_status st = GS_OK;
    pthread_mutex_lock(&g_device_lock);
    if (!g_device_ready[ordinal]) {
        st = query_device(ordinal, &g_devices[ordinal]);
        g_device_ready[ordinal] = st == GS_OK;
    }
    pthread_mutex_unlock(&g_device_lock);
    *info = &g_devices[ordinal];
    return st;
}

static cudaMemPool_t g_pools[GS_MAX_DEVICES];
static bool g_pool_failed[GS_MAX_DEVICES];
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* gpusync's pool on `device`, created on first use; NULL when the device
 * has no memory pools (then the default allocator is used). */
static cudaMemPool_t pool_of(int device)
{
    pthread_mutex_lock(&g_pool_lock);
    if (!g_pools[device] && !g_pool_failed[device]) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        cudaMemPool_t pool;
        if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
            uint64_t keep = (uint64_t)gs_env_number(GS_ENV_POOL_KEEP_MB, (double)(GS_POOL_KEEP_BYTES >> 20), NULL)
                            << 20;
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
            g_pools[device] = pool;
        } else {
            cudaGetLastError();
            g_pool_failed[device] = true;
        }
    }
    cudaMemPool_t pool = g_pools[device];
    pthread_mutex_unlock(&g_pool_lock);
    return pool;
}

cudaError_t gs_cuda_pool_alloc(void **p, size_t bytes, cudaStream_t s)
{
    int device;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return e;
    cudaMemPool_t pool = device < GS_MAX_DEVICES ? pool_of(device) : NULL;
    return pool ? cudaMallocFromPoolAsync(p, bytes, pool, s) : cudaMallocAsync(p, bytes, s);
}

/* ---- Read-only tables kept on the device (gs_cuda_constants).
 * A call that uploads a small table per launch pays an allocation, a
 * pageable copy and a free before its kernel starts: ~4.5 us of host time
 * (r87 on the H200 host, .run/apiprobe.py: cudaMallocAsync + cudaFreeAsync
 * 1.0 us, a pageable 4 KiB cudaMemcpyAsync 3.5 us), 2 % of a 230 us
 * histogram2d.  A repeated call -- the same bins and range, a notebook's
 * loop -- finds its table here instead.  Entries are keyed by (device,
 * content) and uploaded once on a private non-blocking stream that is then
 * synchronized (the copy has landed before any stream can read it, and the
 * upload waits for no one else's work).  They are never freed: a kernel on
 * any stream, or a captured CUDA graph, may hold one's address for as long
 * as it likes, and all of them together are at most CONST_CACHE x
 * CONST_MAX_BYTES (4 MiB) a device.  A full cache, or a stream being
 * captured (an upload would break the capture), answers NULL and the
 * caller uploads per call. */
enum { CONST_CACHE = 64 };
static const size_t CONST_MAX_BYTES = (size_t)64 << 10;
struct const_entry {
    int ordinal;
    size_t bytes;
    void *host; /* the content's copy, compared on lookup */
    void *dev;
};
static const_entry g_const[CONST_CACHE];
static int g_nconst;
static cudaStream_t g_const_stream[GS_MAX_DEVICES];
static pthread_mutex_t g_const_lock = PTHREAD_MUTEX_INITIALIZER;

/* The upload: NULL on any failure (its error cleared). */
static void *const_upload(const void *host, size_t bytes, int ordinal)
{
    if (ordinal < 0 || ordinal >= GS_MAX_DEVICES)
        return NULL;
    if (!g_const_stream[ordinal] && cudaStreamCreateWithFlags(&g_const_stream[ordinal], cudaStreamNonBlocking) != cudaSuccess) {
        g_const_stream[ordinal] = NULL;
        cudaGetLastError();
        return NULL;
    }
    void *d = NULL;
    if (cudaMalloc(&d, bytes) == cudaSuccess &&
        cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, g_const_stream[ordinal]) == cudaSuccess &&
        cudaStreamSynchronize(g_const_stream[ordinal]) == cudaSuccess)
        return d;
    cudaGetLastError(); /* out of memory: the caller uploads per call */
    if (d)
        cudaFree(d);
    return NULL;
}

bool gs_cuda_maybe_capturing(cudaStream_t s)
{
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &capture) != cudaSuccess) {
        cudaGetLastError(); /* (the query's own error: not left for the next check) */
        return true;
    }
    return capture != cudaStreamCaptureStatusNone;
}

const void *gs_cuda_constants(const void *host, size_t bytes, int ordinal, cudaStream_t stream)
{
    if (bytes == 0 || bytes > CONST_MAX_BYTES)
        return NULL;
    const void *found = NULL;
    pthread_mutex_lock(&g_const_lock);
    for (int i = 0; i < g_nconst && !found; i++)
        if (g_const[i].ordinal == ordinal && g_const[i].bytes == bytes && memcmp(g_const[i].host, host, bytes) == 0)
            found = g_const[i].dev;
    /* (a failed query -- e.g. another thread captures in global mode: no upload now; the launch reports a bad
     * stream) */
    if (!found && g_nconst < CONST_CACHE && !gs_cuda_maybe_capturing(stream)) {
        void *copy = malloc(bytes);
        void *d = copy ? const_upload(host, bytes, ordinal) : NULL;
        if (d) {
            memcpy(copy, host, bytes);
            g_const[g_nconst++] = const_entry{ordinal, bytes, copy, d};
            found = d;
        } else {
            free(copy);
        }
    }
    pthread_mutex_unlock(&g_const_lock);
    return found;
}

/* ---- The calling thread's scratch buffers (gs_cuda_scratch).
 * One buffer per (device, stream handle) a thread uses, at most
 * SCRATCH_SLOTS of them; a use never waits on another stream's work (a wait
 * across streams would tie them: a sum on stream B queued behind a kernel on
 * A that waits for work queued on B after it would never run, review36 #1).
 * The same handle's use waits on its own slot's event -- free on a live
 * stream, and it keeps a handle that a destroyed stream's successor reuses
 * ordered after the old stream's last use.  A full table frees a slot whose
 * event has completed (queried in relaxed capture mode), else the caller
 * takes its per-call workspace. */
namespace {
enum { SCRATCH_SLOTS = 8 };
struct scratch_slot {
    int ordinal; /* -1: free */
    cudaStream_t stream;
    void *p;
    size_t bytes;
    cudaEvent_t done; /* recorded after each use */
};
cudaStream_t g_scratch_free_stream[GS_MAX_DEVICES]; /* non-blocking: frees at thread exit, no host wait */
pthread_mutex_t g_scratch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Relaxed stream-capture mode on this thread for a scope: the calls below
 * (event queries, stream creation, frees) do not invalidate another
 * thread's capture in global mode. */
struct relaxed_capture {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    relaxed_capture() { cudaThreadExchangeStreamCaptureMode(&mode); }
    ~relaxed_capture() { cudaThreadExchangeStreamCaptureMode(&mode); }
};

/* Release a slot's buffer and event without a host wait: the free and the
 * event's destruction are ordered after its last use on a private
 * non-blocking stream (never the legacy stream: a use of it invalidates any
 * capture of a blocking stream, review36 #2). */
void slot_release(scratch_slot &x)
{
    if (x.ordinal < 0)
        return;
    gs_device_guard g(x.ordinal);
    cudaStream_t fs = g_scratch_free_stream[x.ordinal];
    if (x.p && fs && (!x.done || cudaStreamWaitEvent(fs, x.done, 0) == cudaSuccess))
        cudaFreeAsync(x.p, fs);
    /* (no free stream or no wait: the buffer is left, not freed under work that may still run) */
    if (x.done)
        cudaEventDestroy(x.done); /* (allowed with a wait pending) */
    cudaGetLastError(); /* (at process exit the runtime may be gone) */
    x = scratch_slot{-1, NULL, NULL, 0, NULL};
}

struct thread_scratch {
    scratch_slot slot[SCRATCH_SLOTS];
    thread_scratch()
    {
        for (auto &x : slot)
            x = scratch_slot{-1, NULL, NULL, 0, NULL};
    }
    ~thread_scratch()
    {
        relaxed_capture r;
        for (auto &x : slot)
            slot_release(x);
    }
    scratch_slot *find(int ordinal, cudaStream_t s)
    {
        for (auto &x : slot)
            if (x.ordinal == ordinal && x.stream == s)
                return &x;
        return NULL;
    }
};
thread_local thread_scratch t_scratch;

/* A free slot for (ordinal, s), its event made; NULL when none can be had. */
scratch_slot *slot_take(thread_scratch &t, int ordinal, cudaStream_t s)
{
    relaxed_capture r;
    scratch_slot *x = NULL;
    for (auto &y : t.slot)
        if (y.ordinal < 0) {
            x = &y;
            break;
        }
    for (int k = 0; !x && k < SCRATCH_SLOTS; k++) { /* a slot whose last use has completed */
        scratch_slot &y = t.slot[k];
        if (!y.done || cudaEventQuery(y.done) == cudaSuccess) {
            slot_release(y);
            x = &y;
        }
        cudaGetLastError(); /* (cudaErrorNotReady) */
    }
    if (!x)
        return NULL;
    pthread_mutex_lock(&g_scratch_lock);
    if (!g_scratch_free_stream[ordinal] &&
        cudaStreamCreateWithFlags(&g_scratch_free_stream[ordinal], cudaStreamNonBlocking) != cudaSuccess)
        g_scratch_free_stream[ordinal] = NULL;
    const bool have_free = g_scratch_free_stream[ordinal] != NULL;
    pthread_mutex_unlock(&g_scratch_lock);
    cudaEvent_t e = NULL;
    if (!have_free || cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    *x = scratch_slot{ordinal, s, NULL, 0, e};
    return x;
}
} // namespace

void *gs_cuda_scratch(int ordinal, cudaStream_t s, size_t bytes)
{
    if (ordinal < 0 || ordinal >= GS_MAX_DEVICES || bytes > GS_SCRATCH_MAX_BYTES || bytes < GS_SCRATCH_DATA)
        return NULL;
    if (gs_cuda_maybe_capturing(s)) /* (a failed query: the legacy stream while a blocking stream is captured; the
                                       * caller's path reports it) */
        return NULL;
    thread_scratch &t = t_scratch;
    scratch_slot *x = t.find(ordinal, s);
    if (!x && !(x = slot_take(t, ordinal, s)))
        return NULL;
    if (cudaStreamWaitEvent(s, x->done, 0) != cudaSuccess) { /* this handle's previous use (a no-op on a live stream) */
        cudaGetLastError();
        x->p = NULL; /* (forgotten, not freed: e.g. after a device reset every handle is stale) */
        x->done = NULL;
        x->ordinal = -1;
        return NULL;
    }
    if (x->bytes < bytes) {
        if (x->p && cudaFreeAsync(x->p, s) != cudaSuccess) /* ordered after its last use by the wait above */
            cudaGetLastError();
        x->p = NULL;
        x->bytes = 0;
        void *p = NULL;
        if (gs_cuda_pool_alloc(&p, bytes, s) != cudaSuccess ||
            cudaMemsetAsync(p, 0, GS_SCRATCH_DATA, s) != cudaSuccess) {
            cudaGetLastError();
            if (p && cudaFreeAsync(p, s) != cudaSuccess)
                cudaGetLastError();
            return NULL;
        }
        x->p = p;
        x->bytes = bytes;
    }
    return x->p;
}

void gs_cuda_scratch_done(int ordinal, cudaStream_t s)
{
    scratch_slot *x = t_scratch.find(ordinal, s);
    if (x && cudaEventRecord(x->done, s) != cudaSuccess) {
        /* no record: a later use could not be ordered after this one -- free the buffer after this use (on s)
         * and let the next use start afresh */
        cudaGetLastError();
        if (x->p && cudaFreeAsync(x->p, s) != cudaSuccess)
            cudaGetLastError();
        x->p = NULL;
        x->bytes = 0;
    }
}

static gs_status cuda_empty_cache(void)
{
    pthread_mutex_lock(&g_pool_lock);
    cudaError_t e = cudaSuccess;
    for (int d = 0; d < GS_MAX_DEVICES && e == cudaSuccess; d++)
        if (g_pools[d]) {
            gs_device_guard g(d);
            e = g.err;
            if (e == cudaSuccess)
                e = cudaDeviceSynchronize(); /* frees still in flight return to the pool first */
            if (e == cudaSuccess)
                e = cudaMemPoolTrimTo(g_pools[d], 0);
        }
    pthread_mutex_unlock(&g_pool_lock);
    if (e != cudaSuccess)
        return gs_cuda_fail(e, "releasing gpusync's cached device memory", __FILE__, __LINE__);
    return GS_OK;
}

gs_status gs_cuda_call_device(int array_device, int *ordinal, const gs_device_info **info)
{
    int d = array_device;
    if (d == GS_HOST)
        GS_CUDA_CHECK(cudaGetDevice(&d));
    *ordinal = d;
    return gs_cuda_device(d, info);
}

gs_cuda_call::gs_cuda_call(int array_device, void *s) : stream((cudaStream_t)s)
{
    status = gs_cuda_call_device(array_device, &ordinal, &dev);
    if (status == GS_OK && guard.enter(ordinal) != cudaSuccess)
        status = gs_cuda_fail(guard.err, "cudaSetDevice", __FILE__, __LINE__);
}

gs_status gs_spin_deadlock(const char *op, int strategy, const char *waiter, const char *awaited)
{
    if (strategy < 0)
        return gs_fail(GS_ERR_DEADLOCK, "%s: %s waited more than %.0f ms for %s", op, waiter,
                       gs_spin_timeout_ns() / 1e6, awaited);
    return gs_fail(GS_ERR_DEADLOCK, "%s (%s): %s waited more than %.0f ms for %s", op,
                   gs_strategy_name((gs_strategy)strategy), waiter, gs_spin_timeout_ns() / 1e6, awaited);
}

gs_status gs_cuda_check_deadlock(const int *d_flag, cudaStream_t s, const char *op, int strategy, const char *waiter,
                                 const char *awaited)
{
    int flag = 0;
    gs_status st = gs_cuda_read_flag(d_flag, s, &flag);
    if (st == GS_OK && flag)
        st = gs_spin_deadlock(op, strategy, waiter, awaited);
    return st;
}

/* The runtime's answers for a kernel of a loaded module do not change: the
 * occupancy per (kernel, device, threads, shared bytes) and the opt-in
 * shared memory already granted per (kernel, device) are remembered, so a
 * launch does not pay their host calls again (per-call cost, issue 13). */
struct occ_entry {
    const void *k;
    int ordinal, threads;
    size_t smem;
    int per_sm; /* -1: the smem attribute entry of (k, ordinal) */
};
enum { OCC_CACHE = 512 };
static occ_entry g_occ[OCC_CACHE];
static int g_nocc;
static pthread_mutex_t g_occ_lock = PTHREAD_MUTEX_INITIALIZER;

static int occ_find(const void *k, int ordinal, int threads, size_t smem)
{
    int v = 0;
    pthread_mutex_lock(&g_occ_lock);
    for (int i = 0; i < g_nocc && !v; i++)
        if (g_occ[i].k == k && g_occ[i].ordinal == ordinal && g_occ[i].threads == threads && g_occ[i].smem == smem)
            v = g_occ[i].per_sm;
    pthread_mutex_unlock(&g_occ_lock);
    return v;
}
static void occ_keep(const void *k, int ordinal, int threads, size_t smem, int v)
{
    pthread_mutex_lock(&g_occ_lock);
    if (g_nocc < OCC_CACHE) /* full: answers are asked again (correct, only slower) */
        g_occ[g_nocc++] = occ_entry{k, ordinal, threads, smem, v};
    pthread_mutex_unlock(&g_occ_lock);
}

void gs_free_async(void *p, cudaStream_t s, gs_status *st)
{
    if (!p)
        return;
    const cudaError_t e = cudaFreeAsync(p, s);
    if (e != cudaSuccess && *st == GS_OK)
        *st = gs_cuda_fail(e, "cudaFreeAsync", __FILE__, __LINE__);
}

gs_status gs_cuda_resident_blocks(const void *kernel, int threads, size_t smem, const gs_device_info *dev,
                                  int64_t *blocks)
{
    int per_sm = occ_find(kernel, dev->ordinal, threads, smem);
    if (per_sm == 0) {
        GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
        if (per_sm < 1)
            return gs_fail(GS_ERR_INVALID_ARGUMENT, "a block of %d threads with %zu bytes of shared memory does not "
                           "fit one multiprocessor of %s", threads, smem, dev->name);
        occ_keep(kernel, dev->ordinal, threads, smem, per_sm);
    }
    *blocks = (int64_t)per_sm * dev->multiprocessors;
    return GS_OK;
}

gs_status gs_cuda_allow_smem(const void *kernel, const gs_device_info *dev)
{
    if (occ_find(kernel, dev->ordinal, 0, 0) == -1)
        return GS_OK;
    cudaFuncAttributes fa;
    GS_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    GS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)(dev->shared_memory_per_block_optin - (int64_t)fa.sharedSizeBytes)));
    occ_keep(kernel, dev->ordinal, 0, 0, -1);
    return GS_OK;
}

gs_status gs_cuda_read_flag(const int *d_flag, cudaStream_t s, int *flag)
{
    GS_CUDA_CHECK(cudaMemcpyAsync(flag, d_flag, sizeof(int), cudaMemcpyDeviceToHost, s));
    return gs_cuda_wait_stream(s);
}

/* ---- the cancel word and the interruptible waits (internal.cuh) */
static int *g_cancel_host;
static const int *g_cancel_dev;
static pthread_once_t g_cancel_once = PTHREAD_ONCE_INIT;

static void make_cancel_word(void)
{
    int *h = NULL;
    void *d = NULL;
    if (cudaHostAlloc((void **)&h, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess ||
        cudaHostGetDevicePointer(&d, h, 0) != cudaSuccess) {
        cudaGetLastError(); /* no cancel word: kernels run to their own end */
        if (h)
            cudaFreeHost(h);
        return;
    }
    *(volatile int *)h = 0;
    g_cancel_host = h;
    g_cancel_dev = (const int *)d;
}

const int *gs_cuda_cancel_word(void)
{
    pthread_once(&g_cancel_once, make_cancel_word);
    return g_cancel_dev;
}

static void set_cancel(int v)
{
    pthread_once(&g_cancel_once, make_cancel_word);
    if (g_cancel_host) {
        __atomic_store_n(g_cancel_host, v, __ATOMIC_SEQ_CST);
    }
}

/* Wait for query() to stop answering cudaErrorNotReady, polling for
 * interrupts; see internal.cuh. */
template <class Query> static gs_status wait_for(Query query, const char *what)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool cancelled = false;
    for (;;) {
        const cudaError_t e = query();
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady) {
            if (cancelled)
                set_cancel(0);
            return gs_cuda_fail(e, what, __FILE__, __LINE__);
        }
        if (!cancelled && gs_interrupt_poll()) {
            cancelled = true;
            set_cancel(1);
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        const int64_t us = (int64_t)(t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000;
        if (us > GS_WAIT_SPIN_US) { /* naps of 1/64 of the wait so far: <= 1.6 % late */
            const struct timespec nap = {0, (long)(us / 64 < GS_WAIT_NAP_US ? us / 64 : GS_WAIT_NAP_US) * 1000};
            nanosleep(&nap, NULL);
        } else {
            sched_yield();
        }
    }
    if (cancelled || gs_interrupt_requested()) {
        set_cancel(0);
        return gs_interrupted();
    }
    return GS_OK;
}

gs_status gs_cuda_wait_stream(cudaStream_t s)
{
    return wait_for([s] { return cudaStreamQuery(s); }, "waiting for the stream");
}

gs_status gs_cuda_wait_event(cudaEvent_t ev)
{
    return wait_for([ev] { return cudaEventQuery(ev); }, "waiting for an event");
}

static int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

static int cuda_available(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        gs_cuda_fail(err, "cudaGetDeviceCount", __FILE__, __LINE__);
        return 0;
    }
    if (n == 0) {
        gs_fail(GS_ERR_NO_CUDA, "no CUDA device found");
        return 0;
    }
    return 1;
}

static gs_status cuda_device_info(int ordinal, gs_device_info *out)
{
    if (ordinal < 0 || ordinal >= cuda_device_count())
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "no CUDA device %d (this machine has %d)", ordinal,
                       cuda_device_count());
    const gs_device_info *info;
    gs_status st = gs_cuda_device(ordinal, &info);
    if (st == GS_OK)
        *out = *info;
    return st;
}

static int cuda_pointer_device(const void *p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return GS_HOST;
    }
    return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) ? a.device : GS_HOST;
}

static gs_status cuda_stream_wait(int device, void *consumer, void *producer)
{
    if (consumer == producer)
        return GS_OK;
    gs_device_guard g(device);
    GS_CUDA_CHECK(g.err);
    /* one event per call: a shared one could be re-recorded by another
     * thread between our record and our wait */
    cudaEvent_t ev;
    GS_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(ev, (cudaStream_t)producer);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent((cudaStream_t)consumer, ev, 0);
    cudaEventDestroy(ev); /* released once the wait has been satisfied */
    if (e != cudaSuccess)
        return gs_cuda_fail(e, "ordering the call's stream after the array's stream", __FILE__, __LINE__);
    return GS_OK;
}

extern "C" {
gs_status gs_cuda_histogram(const gs_array *x, const gs_array *w, const gs_hist_bins *bins, gs_array *out,
                            gs_array *edges, gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cuda_minmax(const gs_array *x, void *out2, void *stream);
gs_status gs_cuda_uniform_edges(const gs_hist_bins *bins, gs_array *out, void *stream);
gs_status gs_cuda_bincount_first(const gs_array *x, gs_array *out, int64_t *top, int64_t *bottom, int *negative,
                                 void *stream);
gs_status gs_cuda_reduce(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy,
                         int deterministic, void *stream, gs_strategy *used);
gs_status gs_cuda_binned_statistic(const gs_array *x, const gs_array *values, const double *edges, int64_t nbins,
                                   double top, int statistic, gs_array *result, gs_array *binnumber,
                                   gs_array *nonfinite, gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cuda_packbits(const gs_array *a, const double *thr, int little, gs_array *out, void *stream);
gs_status gs_cuda_count_nonzero(const gs_array *a, const double *thr, gs_array *out, void *stream);
gs_status gs_cuda_kernel_names(char *buf, size_t len);
gs_status gs_cuda_occupancy(const char *name, int block_size, gs_occupancy *out);
gs_status gs_cuda_barrier_benchmark(gs_strategy s, int64_t blocks, int threads, int64_t rounds, int skip_block,
                                    gs_barrier_result *res);
gs_status gs_cuda_cumsum(const gs_array *a, gs_array *out, gs_strategy strategy, void *stream, gs_strategy *used);
gs_status gs_cuda_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                              gs_array *out, void *stream);
gs_status gs_cuda_histogramdd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                              const gs_array *weights, gs_array *out, gs_array *edges_out, void *stream);
gs_status gs_cuda_unpackbits(const gs_array *a, int little, gs_array *out, void *stream);
gs_status gs_cuda_minmax_many(const gs_array *xs, int k, void *out, void *stream);
gs_status gs_cuda_binned_statistic_dd(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                      const double *tops, const gs_array *values, int statistic, gs_array *result,
                                      gs_array *binnumber, gs_array *nonfinite, void *stream);
}

static const gs_backend_ops cuda_ops = {
    .name = "cuda",
    .available = cuda_available,
    .device_info = cuda_device_info,
    .pointer_device = cuda_pointer_device,
    .histogram = gs_cuda_histogram,
    .minmax = gs_cuda_minmax,
    .uniform_edges = gs_cuda_uniform_edges,
    .bincount_first = gs_cuda_bincount_first,
    .reduce = gs_cuda_reduce,
    .binned_statistic = gs_cuda_binned_statistic,
    .packbits = gs_cuda_packbits,
    .count_nonzero = gs_cuda_count_nonzero,
    .kernel_names = gs_cuda_kernel_names,
    .occupancy = gs_cuda_occupancy,
    .barrier_benchmark = gs_cuda_barrier_benchmark,
    .cumsum = gs_cuda_cumsum,
    .stream_wait = cuda_stream_wait,
    .empty_cache = cuda_empty_cache,
    .reduce_axis = gs_cuda_reduce_axis, /* issue 15 */
    .histogramdd = gs_cuda_histogramdd, /* issue 15 */
    .unpackbits = gs_cuda_unpackbits,   /* issue 15 */
    .binned_statistic_dd = gs_cuda_binned_statistic_dd, /* issues 14, 15: csrc/cuda/binstat_priv.cu */
    .minmax_many = gs_cuda_minmax_many,                 /* issues 14, 15: csrc/cuda/minmax.cu */
};

extern "C" const gs_backend_ops *gs_cuda_backend(void) { return &cuda_ops; }
