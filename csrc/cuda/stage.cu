/*
 * Host <-> device copies of pageable NumPy memory at pinned-memory speed.
 *
 * cudaMemcpy from pageable memory goes through the driver's own small pinned
 * bounce buffer, one piece at a time (about 6 GB/s on the H200's host,
 * against 54 GB/s from pinned memory).  Here the copy is cut into DMA units
 * that flow through a ring of GS_STAGE_SLOTS pinned slots, one unit per
 * slot, and each unit into GS_STAGE_SPLIT pieces that host threads copy:
 *
 *   host -> device: a crew of host threads memcpys pieces, in order, into
 *   free slots; the calling thread (which copies pieces of the unit it waits
 *   for too) enqueues a unit's DMA on the caller's stream the moment its
 *   pieces are in, and frees a slot when its DMA's
 *   event has fired.  The first DMA starts after one piece-time, and the copy
 *   engine then never waits while the crew keeps ahead of it.  (Units are
 *   larger than pieces because one cudaMemcpyAsync + cudaEventRecord costs
 *   the caller several microseconds: a 128 KiB DMA would be API-bound.)
 *
 *   device -> host: the caller enqueues the units' DMAs into free slots and
 *   marks a unit landed when its event fires; the crew copies the landed
 *   units out (one thread per unit: the destination is usually fresh memory
 *   whose pages fault in as they are written) and so frees their slots.
 *
 * Sources or destinations that are already pinned (cudaHostAlloc'd or
 * registered) are copied directly.
 *
 * Only the calling thread makes CUDA calls; the crew only memcpys and spins
 * on the job's atomics.  The pool (per device) and the crew are created on
 * first use and kept (pinned allocations and thread creation cost more than
 * a small copy takes); after a job the crew spins a little before it sleeps,
 * so back-to-back calls do not pay for waking it.  One staged copy runs at a
 * time.  Copies under GS_STAGE_MIN_BYTES go straight through cudaMemcpyAsync.
 *
 * Tuning knobs (environment, read per call; for measurements):
 * GPUSYNC_NO_STAGING=1, GPUSYNC_STAGE_THREADS, GPUSYNC_STAGE_UNITS (units
 * per copy), GPUSYNC_STAGE_UNIT_KB (the smallest unit), GPUSYNC_STAGE_SPLIT
 * (pieces per unit), GPUSYNC_STAGE_NT=1 (streaming stores instead of memcpy),
 * GPUSYNC_STAGE_SPIN_US (the crew's spin before sleeping).
 */
#include "stage.cuh"

#include <atomic>
#include <new>
#include <stdint.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

namespace {

#define NSLOT GS_STAGE_SLOTS

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

inline int64_t now_ns()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A staging knob through the environment table (csrc/common/env.c holds its
 * range): its value, or dflt when unset or invalid. */
long env_long(gs_env_var v, long dflt) { return (long)gs_env_number(v, (double)dflt, NULL); }

/* memcpy, or with non-temporal (streaming) stores when `nt`
 * (GPUSYNC_STAGE_NT=1).  A plain memcpy first reads every destination line
 * into the cache (read for ownership); streaming stores skip that read but
 * also leave the pinned slot out of the last-level cache, where the DMA
 * would otherwise find it.  Measured on the H200's host (scripts/host_probe.py,
 * twice each): streaming stores took the 5.7 MB text histogram from 0.27 to
 * 0.23-0.25 ms but the 256 MB bincount from 6.0 to 6.6 ms and the 64 M
 * cumsum from 28.9 to 31.3 ms, so they are off by default.  The sfence
 * makes the stores visible before the piece is flagged as copied. */
void stream_copy(char *dst, const char *src, size_t len, bool nt)
{
#if defined(__x86_64__)
    if (nt && len >= 4096) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head, src += head, len -= head;
        for (size_t i = 0, n = len / 64; i < n; i++, dst += 64, src += 64) {
            const __m128i a = _mm_loadu_si128((const __m128i *)src), b = _mm_loadu_si128((const __m128i *)src + 1),
                          c = _mm_loadu_si128((const __m128i *)src + 2), d = _mm_loadu_si128((const __m128i *)src + 3);
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)dst + 1, b);
            _mm_stream_si128((__m128i *)dst + 2, c);
            _mm_stream_si128((__m128i *)dst + 3, d);
        }
        memcpy(dst, src, len & 63);
        _mm_sfence();
        return;
    }
#endif
    (void)nt;
    memcpy(dst, src, len);
}

struct pool {
    pthread_mutex_t lock;
    bool ready;
    char *slot[NSLOT];      /* GS_STAGE_CHUNK bytes each, pinned */
    cudaEvent_t ev[NSLOT];  /* the last DMA that used the slot */
    bool pending[NSLOT];    /* ev[] recorded and not yet seen complete */
};

pool pools[GS_MAX_DEVICES];
pthread_once_t pools_once = PTHREAD_ONCE_INIT;

void init_pools()
{
    for (int d = 0; d < GS_MAX_DEVICES; d++)
        pthread_mutex_init(&pools[d].lock, NULL);
}

/* One staged copy, shared by the caller and the crew.  Unit u is bytes
 * [u * unit, ...) of the host buffer and lives in slot u % NSLOT; piece p
 * is bytes [p * piece, ...), in unit p / split.  A worker takes pieces in
 * order (next) and may copy piece p once p < ready: h2d, its slot is free;
 * d2h, its unit's DMA has landed. */
struct job {
    char *host;
    char *const *slot;
    size_t bytes, piece, unit;
    int64_t npieces, nunits, split;
    bool to_device, nt;
    std::atomic<int64_t> next, ready;
    std::atomic<unsigned char> *copied; /* per piece */
    std::atomic<bool> abort;
};

size_t part_len(size_t bytes, size_t size, int64_t i)
{
    const size_t o = (size_t)i * size;
    return bytes - o < size ? bytes - o : size;
}

void work(job *j)
{
    for (;;) {
        const int64_t p = j->next.fetch_add(1, std::memory_order_relaxed);
        if (p >= j->npieces)
            return;
        while (p >= j->ready.load(std::memory_order_acquire)) {
            if (j->abort.load(std::memory_order_relaxed))
                return;
            cpu_relax();
        }
        const int64_t u = p / j->split;
        char *h = j->host + (size_t)p * j->piece, *s = j->slot[u % NSLOT] + (size_t)(p - u * j->split) * j->piece;
        if (j->to_device)
            stream_copy(s, h, part_len(j->bytes, j->piece, p), j->nt);
        else
            stream_copy(h, s, part_len(j->bytes, j->piece, p), j->nt);
        j->copied[p].store(1, std::memory_order_release);
    }
}

/* The crew: persistent threads that run the current job. */
struct workers {
    pthread_mutex_t m;
    pthread_cond_t more, idle;
    job *current;
    unsigned long gen;  /* bumped per job */
    int started, active;
    int cap; /* workers 0 .. cap-1 take the current job (the caller's request, else all) */
    std::atomic<unsigned long> posted; /* gen, readable without the mutex */
    std::atomic<long> spin_ns;
};
workers crew = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0,
                {0}, {0}};
pthread_mutex_t crew_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */

void *worker_main(void *arg)
{
    const int me = (int)(intptr_t)arg; /* this worker's index in the crew */
    unsigned long seen = 0;
    pthread_mutex_lock(&crew.m);
    for (;;) {
        if (crew.current == NULL || crew.gen == seen) {
            /* spin a while for the next job before sleeping on the condvar */
            pthread_mutex_unlock(&crew.m);
            const int64_t until = now_ns() + crew.spin_ns.load(std::memory_order_relaxed);
            while (crew.posted.load(std::memory_order_acquire) == seen && now_ns() < until)
                cpu_relax();
            pthread_mutex_lock(&crew.m);
            while (crew.current == NULL || crew.gen == seen)
                pthread_cond_wait(&crew.more, &crew.m);
        }
        seen = crew.gen;
        job *j = crew.current;
        if (me >= crew.cap) { /* not asked for this job (a capped crew): sleep until the next one, no spin */
            while (crew.current == NULL || crew.gen == seen)
                pthread_cond_wait(&crew.more, &crew.m);
            continue;
        }
        crew.active++;
        pthread_mutex_unlock(&crew.m);
        work(j);
        pthread_mutex_lock(&crew.m);
        if (--crew.active == 0)
            pthread_cond_signal(&crew.idle);
    }
    return NULL;
}

/* Start the crew on j (taking crew_lock); the number of workers, 0 when no
 * thread could be started. */
int crew_begin(job *j)
{
    pthread_mutex_lock(&crew_lock);
    pthread_mutex_lock(&crew.m);
    static long ncpu = 0; /* sysconf reads /sys: once, under the crew's lock */
    if (ncpu == 0) {
        const long c = sysconf(_SC_NPROCESSORS_ONLN);
        ncpu = c > 1 ? c : 2;
    }
    const long want = env_long(GS_ENV_STAGE_THREADS, GS_STAGE_THREADS < ncpu - 1 ? GS_STAGE_THREADS : ncpu - 1);
    crew.spin_ns.store(env_long(GS_ENV_STAGE_SPIN_US, GS_STAGE_SPIN_US) * 1000,
                       std::memory_order_relaxed);
    while (crew.started < want) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        const int ok = pthread_create(&th, &at, worker_main, (void *)(intptr_t)crew.started) == 0;
        pthread_attr_destroy(&at);
        if (!ok)
            break;
        crew.started++;
    }
    const int req = gs_stage_requested_threads();
    crew.cap = req > 0 && req < crew.started ? req : crew.started;
    crew.current = j;
    crew.gen++;
    crew.posted.store(crew.gen, std::memory_order_release);
    pthread_cond_broadcast(&crew.more);
    const int n = crew.cap;
    pthread_mutex_unlock(&crew.m);
    return n;
}

/* Take the job back from the crew: no worker touches it after this returns. */
void crew_end()
{
    pthread_mutex_lock(&crew.m);
    crew.current = NULL;
    while (crew.active > 0)
        pthread_cond_wait(&crew.idle, &crew.m);
    pthread_mutex_unlock(&crew.m);
    pthread_mutex_unlock(&crew_lock);
}

/* The current device's pool, locked (release with pthread_mutex_unlock). */
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
        for (int i = 0; i < NSLOT && e == cudaSuccess; i++) {
            if (!p->ev[i])
                e = cudaEventCreateWithFlags(&p->ev[i], cudaEventDisableTiming);
            if (e == cudaSuccess && !p->slot[i])
                e = cudaMallocHost((void **)&p->slot[i], GS_STAGE_CHUNK);
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

/* Unit (DMA) and piece (memcpy) sizes: a GS_STAGE_UNITS-th of the copy per unit
 * -- small enough that the first DMA starts early, large enough that the
 * DMA outlasts the API calls that issue it -- at most a slot; pieces a
 * GS_STAGE_SPLIT-th of a unit, so the whole crew fills one. */
void sizes_for(size_t bytes, bool to_device, size_t *unit, size_t *piece)
{
    const size_t min_unit = (size_t)env_long(GS_ENV_STAGE_UNIT_KB, (long)(GS_STAGE_MIN_UNIT >> 10)) << 10;
    /* device -> host writes fresh (usually never touched) NumPy memory: one
     * thread per unit, so threads do not fault pages in the same 2 MiB page
     * table (or huge page) at once */
    const size_t split = to_device ? (size_t)env_long(GS_ENV_STAGE_SPLIT, GS_STAGE_SPLIT)
                                   : (size_t)env_long(GS_ENV_STAGE_D2H_SPLIT, 1);
    size_t u = bytes / (size_t)env_long(GS_ENV_STAGE_UNITS, GS_STAGE_UNITS);
    u = u < min_unit ? min_unit : u;
    u = u > GS_STAGE_CHUNK ? GS_STAGE_CHUNK : u;
    size_t p = (u / split + 4095) & ~(size_t)4095;
    *piece = p;
    *unit = p * split > GS_STAGE_CHUNK ? (GS_STAGE_CHUNK / p) * p : p * split;
}

/* Memory the copy engine can read or write directly. */
bool is_pinned(const void *p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/* Is slot i free of DMAs (polls its event; never waits)? */
bool slot_free(pool *p, int i, gs_status *st)
{
    if (!p->pending[i])
        return true;
    const cudaError_t e = cudaEventQuery(p->ev[i]);
    if (e == cudaErrorNotReady)
        return false;
    if (e != cudaSuccess) {
        *st = gs_cuda_fail(e, "staging DMA", __FILE__, __LINE__);
        return false;
    }
    p->pending[i] = false;
    return true;
}

/* A stuck copy engine or crew must not hang the caller: `since` is the
 * last progress (so a slow, loaded machine that still moves never trips it).
 * Also the staging loops' interrupt check. */
gs_status check_time(int64_t since)
{
    if (gs_interrupt_poll()) /* Ctrl-C: the callers drain and give up */
        return gs_interrupted();
    if (now_ns() - since > (int64_t)GS_STAGE_TIMEOUT_S * 1000000000)
        return gs_fail(GS_ERR_DEADLOCK, "staged copy made no progress for %d s", GS_STAGE_TIMEOUT_S);
    return GS_OK;
}

struct job_guard { /* per-call piece flags */
    std::atomic<unsigned char> *flags = NULL;
    ~job_guard() { delete[] flags; }
};

/* Set up j for a staged copy of `bytes` with the pool's slots. */
bool init_job(job *j, pool *p, char *host, size_t bytes, bool to_device, job_guard *flags)
{
    sizes_for(bytes, to_device, &j->unit, &j->piece);
    j->host = host;
    j->slot = p->slot;
    j->bytes = bytes;
    j->split = (int64_t)(j->unit / j->piece);
    j->npieces = (int64_t)((bytes + j->piece - 1) / j->piece);
    j->nunits = (int64_t)((bytes + j->unit - 1) / j->unit);
    j->to_device = to_device;
    j->nt = env_long(GS_ENV_STAGE_NT, 0) != 0;
    j->next.store(0);
    j->ready.store(0);
    j->abort.store(false);
    flags->flags = new (std::nothrow) std::atomic<unsigned char>[j->npieces]();
    j->copied = flags->flags;
    return flags->flags != NULL;
}

/* The caller's share while it waits for unit u: copy one of u's pieces
 * that no worker has taken yet (false when there is none). */
bool copy_one_of(job *j, int64_t u)
{
    int64_t p = j->next.load(std::memory_order_relaxed);
    const int64_t end = (u + 1) * j->split < j->npieces ? (u + 1) * j->split : j->npieces;
    if (p < u * j->split || p >= end || p >= j->ready.load(std::memory_order_acquire) ||
        !j->next.compare_exchange_strong(p, p + 1, std::memory_order_relaxed))
        return false;
    stream_copy(j->slot[u % NSLOT] + (size_t)(p - u * j->split) * j->piece, j->host + (size_t)p * j->piece,
                part_len(j->bytes, j->piece, p), j->nt);
    j->copied[p].store(1, std::memory_order_release);
    return true;
}

/* Have all pieces of unit u been copied (by the crew)? */
bool unit_copied(const job *j, int64_t u)
{
    const int64_t end = (u + 1) * j->split < j->npieces ? (u + 1) * j->split : j->npieces;
    for (int64_t q = u * j->split; q < end; q++)
        if (!j->copied[q].load(std::memory_order_acquire))
            return false;
    return true;
}

} // namespace

/* How a copy of `bytes` to or from pageable `host` goes: directly (*direct:
 * small, staging off, or pinned memory), or through the ring, with the pool
 * locked and the job set up (the caller unlocks). */
static gs_status begin_copy(void *host, size_t bytes, bool h2d, pool **p, job *j, job_guard *flags, bool *direct)
{
    *direct = bytes < GS_STAGE_MIN_BYTES || gs_env_number(GS_ENV_NO_STAGING, 0, NULL) != 0 || is_pinned(host);
    if (*direct)
        return GS_OK;
    gs_status st = lock_pool(p);
    if (st != GS_OK)
        return st;
    if (!init_job(j, *p, (char *)host, bytes, h2d, flags)) {
        pthread_mutex_unlock(&(*p)->lock);
        return gs_fail(GS_ERR_NO_MEMORY, "staging flags for %zu bytes", bytes);
    }
    return GS_OK;
}

/* No crew could start: drop the job and unlock; the caller copies directly. */
static void drop_job(job *j, pool *p)
{
    j->abort.store(true);
    crew_end();
    pthread_mutex_unlock(&p->lock);
}

gs_status gs_cuda_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    pool *p = NULL;
    job_guard flags;
    job j;
    bool direct;
    gs_status st = begin_copy((void *)src, bytes, true, &p, &j, &flags, &direct);
    if (st != GS_OK)
        return st;
    if (direct) {
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        return GS_OK;
    }
    const int64_t n = j.nunits;
    /* ready: units whose slot is free -- the unit NSLOT before it has had its
     * DMA enqueued and completed (the slot's event) */
    int64_t ready = 0, enq = 0;
    auto advance = [&]() {
        while (ready < n && ready < enq + NSLOT && slot_free(p, (int)(ready % NSLOT), &st))
            ready++;
        j.ready.store(ready * j.split, std::memory_order_release);
    };
    advance();
    const int workers = st == GS_OK ? crew_begin(&j) : 0;
    if (workers == 0 && st == GS_OK) { /* no crew: the driver's own staging */
        drop_job(&j, p);
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        return GS_OK;
    }
    for (int64_t since = now_ns(); enq < n && st == GS_OK; enq++, since = now_ns()) {
        while (!unit_copied(&j, enq)) {
            advance();
            if (st != GS_OK || (st = check_time(since)) != GS_OK)
                goto fail;
            if (!copy_one_of(&j, enq))
                cpu_relax();
        }
        const int i = (int)(enq % NSLOT);
        GS_CUDA_GOTO(cudaMemcpyAsync((char *)dst + (size_t)enq * j.unit, p->slot[i], part_len(bytes, j.unit, enq),
                                     cudaMemcpyHostToDevice, s));
        GS_CUDA_GOTO(cudaEventRecord(p->ev[i], s));
        p->pending[i] = true;
        advance();
    }
fail:
    if (workers) {
        if (st != GS_OK)
            j.abort.store(true);
        crew_end();
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

gs_status gs_cuda_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    pool *p = NULL;
    job_guard flags;
    job j;
    bool direct;
    gs_status st = begin_copy(dst, bytes, false, &p, &j, &flags, &direct);
    if (st != GS_OK)
        return st;
    if (direct || crew_begin(&j) == 0) { /* no crew: the driver's own staging */
        if (!direct)
            drop_job(&j, p);
        GS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
        return gs_cuda_wait_stream(s);
    }
    /* enq: units' DMAs enqueued (unit e goes into its slot once unit
     * e - NSLOT has been copied out); landed: DMAs seen complete, in order;
     * done: units copied out, in order */
    const int64_t n = j.nunits;
    int64_t enq = 0, landed = 0, done = 0, since = now_ns();
    while (done < n) {
        while (enq < n && (enq < NSLOT || enq - NSLOT < done)) {
            const int i = (int)(enq % NSLOT);
            if (p->pending[i]) /* an earlier call's DMA on another stream may still read it */
                GS_CUDA_GOTO(cudaStreamWaitEvent(s, p->ev[i], 0));
            GS_CUDA_GOTO(cudaMemcpyAsync(p->slot[i], (const char *)src + (size_t)enq * j.unit,
                                         part_len(bytes, j.unit, enq), cudaMemcpyDeviceToHost, s));
            GS_CUDA_GOTO(cudaEventRecord(p->ev[i], s));
            p->pending[i] = true;
            enq++;
        }
        while (landed < enq && slot_free(p, (int)(landed % NSLOT), &st))
            landed++;
        if (st != GS_OK)
            goto fail;
        j.ready.store(landed * j.split, std::memory_order_release);
        const int64_t before = done;
        while (done < landed && unit_copied(&j, done))
            done++;
        if (done > before)
            since = now_ns();
        if (done < n) {
            if ((st = check_time(since)) != GS_OK)
                goto fail;
            cpu_relax();
        }
    }
fail:
    if (st != GS_OK)
        j.abort.store(true);
    crew_end();
    if (st != GS_OK)
        cudaStreamSynchronize(s); /* no DMA may land in a slot after we give it up */
    pthread_mutex_unlock(&p->lock);
    return st;
}
