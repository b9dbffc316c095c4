/*
 * Host <-> device copies of pageable NumPy memory at pinned-memory speed.
 *
 * cudaMemcpy from pageable memory goes through the driver's own small pinned
 * bounce buffer, one chunk at a time (about 7 GB/s on an H200 host, against
 * 55 GB/s from pinned memory).  Here the copy is split over up to
 * GS_STAGE_THREADS host threads; each owns a slot -- two pinned buffers of
 * GS_STAGE_CHUNK bytes, a CUDA stream and two events -- and walks its part of
 * the array: while the DMA of one buffer is in flight it memcpys the next
 * piece into the other.  The caller's stream then waits for every slot's
 * stream (events), so kernels enqueued after gs_cuda_h2d see the data;
 * d2h runs the same pipeline the other way and returns when the host has
 * every byte.
 *
 * Slots are allocated on first use per device and kept (pinned allocations
 * cost milliseconds); a mutex per device hands them to one call at a time,
 * so concurrent calls from several Python threads take turns on the PCIe
 * link instead of racing for the buffers.  Copies below GS_STAGE_MIN_BYTES
 * use one cudaMemcpyAsync.
 */
#include "internal.cuh"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

struct slot {
    char *buf[2];
    cudaStream_t stream;
    cudaEvent_t done[2]; /* buffer i free again (its DMA finished) */
    cudaEvent_t joined;  /* h2d: this slot's last copy, for the caller's stream to wait on */
    bool used[2];
};

struct pool {
    pthread_mutex_t lock;
    bool ready;
    slot slots[GS_STAGE_THREADS];
};

pool pools[GS_MAX_DEVICES];
pthread_mutex_t pools_init = PTHREAD_MUTEX_INITIALIZER;
bool pools_made = false;

struct job {
    slot *sl;
    int device;
    bool to_device;
    char *dev;        /* device side of this job's part */
    char *host;       /* host side */
    size_t bytes, piece;
    cudaEvent_t after; /* d2h: the caller's stream reached the copy */
    cudaError_t err;
};

void *run_job(void *arg)
{
    job *j = (job *)arg;
    slot *sl = j->sl;
    j->err = cudaSetDevice(j->device);
    if (j->err != cudaSuccess)
        return NULL;
    if (j->to_device) {
        for (size_t off = 0, k = 0; off < j->bytes; off += j->piece, k++) {
            const int b = (int)(k & 1);
            const size_t len = j->bytes - off < j->piece ? j->bytes - off : j->piece;
            if (sl->used[b] && (j->err = cudaEventSynchronize(sl->done[b])) != cudaSuccess)
                return NULL;
            memcpy(sl->buf[b], j->host + off, len); /* overlaps the other buffer's DMA */
            if ((j->err = cudaMemcpyAsync(j->dev + off, sl->buf[b], len, cudaMemcpyHostToDevice, sl->stream)) !=
                    cudaSuccess ||
                (j->err = cudaEventRecord(sl->done[b], sl->stream)) != cudaSuccess)
                return NULL;
            sl->used[b] = true;
        }
        return NULL;
    }
    /* device -> host: DMA piece k + 1 while copying piece k out of pinned memory */
    if ((j->err = cudaStreamWaitEvent(sl->stream, j->after, 0)) != cudaSuccess)
        return NULL;
    const size_t pieces = (j->bytes + j->piece - 1) / j->piece;
    for (size_t k = 0; k <= pieces; k++) {
        if (k < pieces) { /* enqueue piece k into buffer k & 1 (free: piece k - 2 was copied out) */
            const size_t off = k * j->piece, len = j->bytes - off < j->piece ? j->bytes - off : j->piece;
            const int b = (int)(k & 1);
            if ((j->err = cudaMemcpyAsync(sl->buf[b], j->dev + off, len, cudaMemcpyDeviceToHost, sl->stream)) !=
                    cudaSuccess ||
                (j->err = cudaEventRecord(sl->done[b], sl->stream)) != cudaSuccess)
                return NULL;
            sl->used[b] = true;
        }
        if (k > 0) { /* piece k - 1 has arrived: copy it out */
            const size_t off = (k - 1) * j->piece,
                         len = j->bytes - off < j->piece ? j->bytes - off : j->piece;
            const int b = (int)((k - 1) & 1);
            if ((j->err = cudaEventSynchronize(sl->done[b])) != cudaSuccess)
                return NULL;
            memcpy(j->host + off, sl->buf[b], len);
        }
    }
    return NULL;
}

/* Host threads that run the jobs, started once and kept: creating 15 threads
 * per call would cost more than a small copy takes.  One call at a time
 * (staging_lock); the caller takes jobs too, so a pool that could not start
 * every thread still finishes. */
struct workers {
    pthread_mutex_t m;
    pthread_cond_t more, finished;
    job *jobs;
    int njobs, next, done, started;
};
workers crew = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};
pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;

void *worker_main(void *)
{
    pthread_mutex_lock(&crew.m);
    for (;;) {
        while (crew.next >= crew.njobs)
            pthread_cond_wait(&crew.more, &crew.m);
        job *j = &crew.jobs[crew.next++];
        pthread_mutex_unlock(&crew.m);
        run_job(j);
        pthread_mutex_lock(&crew.m);
        if (++crew.done == crew.njobs)
            pthread_cond_signal(&crew.finished);
    }
    return NULL;
}

/* Run jobs[0..n) on the crew and the calling thread; returns when all are done. */
void run_all(job *jobs, int n)
{
    pthread_mutex_lock(&crew.m);
    while (crew.started < GS_STAGE_THREADS - 1) { /* the caller is the last worker */
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        const int ok = pthread_create(&th, &at, worker_main, NULL) == 0;
        pthread_attr_destroy(&at);
        if (!ok)
            break;
        crew.started++;
    }
    crew.jobs = jobs;
    crew.njobs = n;
    crew.next = 0;
    crew.done = 0;
    pthread_cond_broadcast(&crew.more);
    while (crew.next < crew.njobs) { /* take jobs too */
        job *j = &crew.jobs[crew.next++];
        pthread_mutex_unlock(&crew.m);
        run_job(j);
        pthread_mutex_lock(&crew.m);
        crew.done++;
    }
    while (crew.done < crew.njobs)
        pthread_cond_wait(&crew.finished, &crew.m);
    crew.njobs = 0; /* idle until the next call */
    crew.next = 0;
    pthread_mutex_unlock(&crew.m);
}

gs_status get_pool(int device, pool **out)
{
    pthread_mutex_lock(&pools_init);
    if (!pools_made) {
        for (int d = 0; d < GS_MAX_DEVICES; d++)
            pthread_mutex_init(&pools[d].lock, NULL);
        pools_made = true;
    }
    pthread_mutex_unlock(&pools_init);
    if (device < 0 || device >= GS_MAX_DEVICES)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "device %d out of range", device);
    pool *p = &pools[device];
    pthread_mutex_lock(&p->lock); /* held until release_pool() */
    if (!p->ready) {
        memset(p->slots, 0, sizeof p->slots);
        for (int i = 0; i < GS_STAGE_THREADS; i++) {
            slot *sl = &p->slots[i];
            cudaError_t e = cudaSuccess;
            for (int b = 0; b < 2 && e == cudaSuccess; b++) {
                e = cudaMallocHost((void **)&sl->buf[b], GS_STAGE_CHUNK);
                if (e == cudaSuccess)
                    e = cudaEventCreateWithFlags(&sl->done[b], cudaEventDisableTiming);
            }
            if (e == cudaSuccess)
                e = cudaEventCreateWithFlags(&sl->joined, cudaEventDisableTiming);
            if (e == cudaSuccess)
                e = cudaStreamCreateWithFlags(&sl->stream, cudaStreamNonBlocking);
            if (e != cudaSuccess) {
                pthread_mutex_unlock(&p->lock);
                return gs_cuda_fail(e, "pinned staging buffers", __FILE__, __LINE__);
            }
        }
        p->ready = true;
    }
    *out = p;
    return GS_OK;
}

/* Both directions: split into parts of whole chunks over the slots' threads. */
gs_status staged_copy(char *dev, char *host, size_t bytes, bool to_device, cudaStream_t s)
{
    int device;
    GS_CUDA_CHECK(cudaGetDevice(&device));
    pool *p;
    gs_status st = get_pool(device, &p);
    if (st != GS_OK)
        return st;
    /* pieces: at most a buffer, at least GS_STAGE_MIN_PIECE, small enough that
     * every thread gets two (a 5.7 MB input still uses all the threads) */
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    const size_t maxt = GS_STAGE_THREADS < ncpu ? GS_STAGE_THREADS : (size_t)ncpu;
    size_t piece = bytes / (2 * maxt);
    piece = piece > GS_STAGE_CHUNK ? GS_STAGE_CHUNK : piece < GS_STAGE_MIN_PIECE ? GS_STAGE_MIN_PIECE : piece;
    piece = (piece + 4095) & ~(size_t)4095;
    if (piece > GS_STAGE_CHUNK)
        piece = GS_STAGE_CHUNK;
    const size_t chunks = (bytes + piece - 1) / piece;
    const int nt = (int)(chunks < maxt ? chunks : maxt);
    job jobs[GS_STAGE_THREADS];
    /* Both directions start after the work already on s: d2h reads what it
     * wrote, h2d may overwrite a buffer it still reads. */
    cudaEvent_t after = NULL;
    cudaError_t e = cudaEventCreateWithFlags(&after, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventRecord(after, s);
    for (int t = 0; t < nt && e == cudaSuccess && to_device; t++)
        e = cudaStreamWaitEvent(p->slots[t].stream, after, 0);
    if (e != cudaSuccess) {
        if (after)
            cudaEventDestroy(after);
        pthread_mutex_unlock(&p->lock);
        return gs_cuda_fail(e, "cudaEventRecord", __FILE__, __LINE__);
    }
    for (int t = 0; t < nt; t++) {
        const size_t c0 = chunks * t / nt, c1 = chunks * (t + 1) / nt;
        const size_t off = c0 * piece, end = c1 * piece < bytes ? c1 * piece : bytes;
        jobs[t] = {&p->slots[t], device, to_device, dev + off, host + off, end - off, piece, after, cudaSuccess};
    }
    pthread_mutex_lock(&staging_lock); /* one staged copy at a time drives the crew */
    run_all(jobs, nt);
    pthread_mutex_unlock(&staging_lock);
    cudaError_t err = cudaSuccess;
    for (int t = 0; t < nt && err == cudaSuccess; t++) {
        err = jobs[t].err;
        if (err == cudaSuccess && to_device) { /* kernels on s wait for every part */
            err = cudaEventRecord(p->slots[t].joined, p->slots[t].stream);
            if (err == cudaSuccess)
                err = cudaStreamWaitEvent(s, p->slots[t].joined, 0);
        }
    }
    cudaSetDevice(device); /* a job run on this thread set it already; keep it so */
    cudaEventDestroy(after);
    pthread_mutex_unlock(&p->lock);
    return err == cudaSuccess ? GS_OK : gs_cuda_fail(err, to_device ? "staged copy to the device" :
                                                                      "staged copy to the host", __FILE__, __LINE__);
}

} // namespace

gs_status gs_cuda_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    if (bytes < GS_STAGE_MIN_BYTES || getenv("GPUSYNC_NO_STAGING")) {
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        return GS_OK;
    }
    return staged_copy((char *)dst, (char *)src, bytes, true, s);
}

gs_status gs_cuda_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    if (bytes < GS_STAGE_MIN_BYTES || getenv("GPUSYNC_NO_STAGING")) {
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
        GS_CUDA_CHECK(cudaStreamSynchronize(s));
        return GS_OK;
    }
    return staged_copy((char *)src, (char *)dst, bytes, false, s);
}
