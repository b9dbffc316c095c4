/*
 * Host <-> device copies of pageable NumPy memory at pinned-memory speed.
 *
 * cudaMemcpy from pageable memory goes through the driver's own small pinned
 * bounce buffer, one piece at a time (about 6 GB/s on the H200's host,
 * against 54 GB/s from pinned memory).  Here the copy goes through two
 * halves of a pinned pool, in rounds: a crew of host threads memcpys round r
 * into one half (all threads at once, one piece each) while the DMAs of round
 * r - 1 -- enqueued by the calling thread on the caller's stream, so kernels
 * after them are ordered -- drain the other half.  Device -> host runs the
 * same pipeline the other way: the DMAs of round r + 1 are in flight while
 * the crew copies round r out.  Only the calling thread makes CUDA calls.
 *
 * The pool (per device) and the crew are created on first use and kept:
 * pinned allocations and thread creation cost more than a small copy takes.
 * One staged copy runs at a time (the pool's lock); copies under
 * GS_STAGE_MIN_BYTES go straight through cudaMemcpyAsync.
 */
#include "internal.cuh"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

#define NB GS_STAGE_THREADS /* buffers per half: one piece per thread per round */

struct pool {
    pthread_mutex_t lock;
    bool ready;
    char *buf[2][NB];     /* GS_STAGE_CHUNK bytes each */
    cudaEvent_t done[2];  /* the last DMAs of that half */
    bool used[2];
};

pool pools[GS_MAX_DEVICES];
pthread_once_t pools_once = PTHREAD_ONCE_INIT;

void init_pools()
{
    for (int d = 0; d < GS_MAX_DEVICES; d++)
        pthread_mutex_init(&pools[d].lock, NULL);
}

/* One memcpy of the crew. */
struct job {
    void *dst;
    const void *src;
    size_t len;
};

/* The crew: GS_STAGE_THREADS - 1 threads plus the caller, started once.  The
 * caller takes jobs too, so a crew that could not start every thread still
 * finishes. */
struct workers {
    pthread_mutex_t m;
    pthread_cond_t more, finished;
    job *jobs;
    int njobs, next, done, started;
};
workers crew = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};

void *worker_main(void *)
{
    pthread_mutex_lock(&crew.m);
    for (;;) {
        while (crew.next >= crew.njobs)
            pthread_cond_wait(&crew.more, &crew.m);
        job *j = &crew.jobs[crew.next++];
        pthread_mutex_unlock(&crew.m);
        memcpy(j->dst, j->src, j->len);
        pthread_mutex_lock(&crew.m);
        if (++crew.done == crew.njobs)
            pthread_cond_signal(&crew.finished);
    }
    return NULL;
}

/* Run jobs[0..n) on the crew and the calling thread; returns when all are
 * done.  Callers hold a pool lock, and the crew serves one call at a time. */
pthread_mutex_t crew_lock = PTHREAD_MUTEX_INITIALIZER;
void run_all(job *jobs, int n)
{
    pthread_mutex_lock(&crew_lock);
    pthread_mutex_lock(&crew.m);
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    const int want = (GS_STAGE_THREADS < ncpu ? GS_STAGE_THREADS : (int)ncpu) - 1;
    while (crew.started < want) {
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
    while (crew.next < crew.njobs) {
        job *j = &crew.jobs[crew.next++];
        pthread_mutex_unlock(&crew.m);
        memcpy(j->dst, j->src, j->len);
        pthread_mutex_lock(&crew.m);
        crew.done++;
    }
    while (crew.done < crew.njobs)
        pthread_cond_wait(&crew.finished, &crew.m);
    crew.njobs = crew.next = crew.done = 0;
    pthread_mutex_unlock(&crew.m);
    pthread_mutex_unlock(&crew_lock);
}

/* The current device's pool, locked (release with unlock_pool). */
gs_status lock_pool(pool **out)
{
    int device;
    GS_CUDA_CHECK(cudaGetDevice(&device));
    if (device < 0 || device >= GS_MAX_DEVICES)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "device %d out of range", device);
    pthread_once(&pools_once, init_pools);
    pool *p = &pools[device];
    pthread_mutex_lock(&p->lock);
    if (!p->ready) {
        cudaError_t e = cudaSuccess;
        for (int h = 0; h < 2 && e == cudaSuccess; h++) {
            e = cudaEventCreateWithFlags(&p->done[h], cudaEventDisableTiming);
            for (int i = 0; i < NB && e == cudaSuccess; i++)
                e = cudaMallocHost((void **)&p->buf[h][i], GS_STAGE_CHUNK);
        }
        if (e != cudaSuccess) { /* keep what was allocated; the next call retries the rest */
            pthread_mutex_unlock(&p->lock);
            return gs_cuda_fail(e, "pinned staging buffers", __FILE__, __LINE__);
        }
        p->ready = true;
    }
    *out = p;
    return GS_OK;
}

/* Piece size: at most a buffer; for small copies small enough that every
 * thread of the crew gets one, but not below GS_STAGE_MIN_PIECE. */
size_t piece_for(size_t bytes)
{
    size_t piece = (bytes + NB - 1) / NB;
    piece = piece < GS_STAGE_MIN_PIECE ? GS_STAGE_MIN_PIECE : piece;
    piece = (piece + 4095) & ~(size_t)4095;
    return piece > GS_STAGE_CHUNK ? GS_STAGE_CHUNK : piece;
}

/* Round r covers [r * NB * piece, ...): its pieces, as jobs and DMAs. */
int round_jobs(pool *p, int h, char *host, size_t bytes, size_t piece, size_t off, bool to_device, job *jobs)
{
    int n = 0;
    for (; n < NB && off + n * piece < bytes; n++) {
        const size_t o = off + n * piece, len = bytes - o < piece ? bytes - o : piece;
        jobs[n] = to_device ? job{p->buf[h][n], host + o, len} : job{host + o, p->buf[h][n], len};
    }
    return n;
}

} // namespace

gs_status gs_cuda_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    if (bytes < GS_STAGE_MIN_BYTES || getenv("GPUSYNC_NO_STAGING")) {
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        return GS_OK;
    }
    pool *p;
    gs_status st = lock_pool(&p);
    if (st != GS_OK)
        return st;
    const size_t piece = piece_for(bytes), per_round = piece * NB;
    job jobs[NB];
    for (size_t off = 0, r = 0; off < bytes; off += per_round, r++) {
        const int h = (int)(r & 1);
        if (p->used[h]) /* the DMAs that read this half two rounds ago */
            GS_CUDA_GOTO(cudaEventSynchronize(p->done[h]));
        const int n = round_jobs(p, h, (char *)src, bytes, piece, off, true, jobs);
        run_all(jobs, n); /* overlaps the other half's DMAs */
        for (int i = 0; i < n; i++)
            GS_CUDA_GOTO(cudaMemcpyAsync((char *)dst + off + i * piece, p->buf[h][i], jobs[i].len,
                                         cudaMemcpyHostToDevice, s));
        GS_CUDA_GOTO(cudaEventRecord(p->done[h], s));
        p->used[h] = true;
    }
fail:
    pthread_mutex_unlock(&p->lock);
    return st;
}

gs_status gs_cuda_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    if (bytes < GS_STAGE_MIN_BYTES || getenv("GPUSYNC_NO_STAGING")) {
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
        GS_CUDA_CHECK(cudaStreamSynchronize(s));
        return GS_OK;
    }
    pool *p;
    gs_status st = lock_pool(&p);
    if (st != GS_OK)
        return st;
    const size_t piece = piece_for(bytes), per_round = piece * NB;
    const size_t rounds = (bytes + per_round - 1) / per_round;
    job jobs[NB];
    /* enqueue round r's DMAs into half r & 1 (after whatever last read it) */
    auto issue = [&](size_t r) -> gs_status {
        const int h = (int)(r & 1);
        if (p->used[h])
            GS_CUDA_CHECK(cudaStreamWaitEvent(s, p->done[h], 0));
        const size_t off = r * per_round;
        for (int i = 0; i < NB && off + i * piece < bytes; i++) {
            const size_t o = off + i * piece, len = bytes - o < piece ? bytes - o : piece;
            GS_CUDA_CHECK(cudaMemcpyAsync(p->buf[h][i], (const char *)src + o, len, cudaMemcpyDeviceToHost, s));
        }
        GS_CUDA_CHECK(cudaEventRecord(p->done[h], s));
        p->used[h] = true;
        return GS_OK;
    };
    if ((st = issue(0)) != GS_OK)
        goto fail;
    for (size_t r = 0; r < rounds; r++) {
        if (r + 1 < rounds && (st = issue(r + 1)) != GS_OK) /* in flight while round r is copied out */
            goto fail;
        const int h = (int)(r & 1);
        GS_CUDA_GOTO(cudaEventSynchronize(p->done[h]));
        run_all(jobs, round_jobs(p, h, (char *)dst, bytes, piece, r * per_round, false, jobs));
    }
fail:
    pthread_mutex_unlock(&p->lock);
    return st;
}
