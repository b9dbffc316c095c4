/* barrier_benchmark on CPU threads: the lock, lockfree, sense, flat and
 * cluster barriers of gpusync/barrier.cuh with C11 atomics, `blocks` threads,
 * every round verified the same way (write own value, barrier, read
 * others').  cluster's twin: groups of GROUP threads stand for the clusters;
 * the last of a group to arrive (the hardware barrier's role) makes the
 * group's one arrival on the counter, polls it, and opens the group's flag. */
#define _POSIX_C_SOURCE 200809L
#include "gpusync/gpusync.h"
#include "spin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GROUP 8

typedef struct {
    gs_strategy s;
    int nb, skip;
    int64_t rounds, timeout;
    _Atomic unsigned *data; /* 2 x nb */
    atomic_uint count, root, generation;
    atomic_uint *arrival, *release, *groups; /* groups: 16 apart (a cache line) */
    atomic_int error;
    _Atomic int64_t stale;
    atomic_int cancel;         /* set by the calling thread on Ctrl-C */
    _Atomic int64_t stop_round; /* the round after whose barrier every thread leaves (INT64_MAX: none) */
    atomic_int finished;       /* threads that left run() */
} cctx;

typedef struct {
    cctx *c;
    int b;
} job;

static unsigned value_of(int64_t r, unsigned b) { return (unsigned)r * 2654435761u + b * 40503u + 1u; }

/* Spin until *p reaches v (wrap-safe), or time out: timeout ns in which *p
 * did not change (the lock barrier's count moves with every arrival, so it
 * counts time without progress; the other words change once per round). */
static int wait_ge(atomic_uint *p, unsigned v, cctx *c, int equal)
{
    int64_t start = 0;
    unsigned mark = 0;
    for (unsigned spins = 1;; spins++) {
        const unsigned cur = atomic_load_explicit(p, memory_order_acquire);
        if (equal ? cur == v : (int)(cur - v) >= 0)
            return 1;
        if ((spins & 255) == 0) {
            if (atomic_load_explicit(&c->error, memory_order_relaxed))
                return 0;
            const int64_t now = gs_now_ns();
            if (!start || cur != mark) {
                start = now;
                mark = cur;
            }
            else if (now - start > c->timeout) {
                atomic_store(&c->error, 1);
                return 0;
            }
            sched_yield();
        }
    }
}

/* flat, split in its two phases (the CUDA form's twin): arrive releases
 * this thread's writes; wait acquires everyone's once all arrived. */
static void flat_arrive(cctx *c) { atomic_fetch_add_explicit(&c->count, 1, memory_order_release); }
static int flat_wait(cctx *c, unsigned r) { return wait_ge(&c->count, r * (unsigned)c->nb, c, 0); }

static int barrier(cctx *c, int b, unsigned r)
{
    if (c->s == GS_STRATEGY_FLAT) {
        flat_arrive(c);
        return flat_wait(c, r);
    }
    if (c->s == GS_STRATEGY_CLUSTER) {
        const unsigned g = (unsigned)b / GROUP, ngroups = (unsigned)(c->nb + GROUP - 1) / GROUP;
        const unsigned gsize = (unsigned)c->nb - g * GROUP < GROUP ? (unsigned)c->nb - g * GROUP : GROUP;
        if (atomic_fetch_add_explicit(&c->groups[g * 16], 1, memory_order_acq_rel) + 1 != r * gsize)
            return wait_ge(&c->arrival[g], r, c, 0); /* the group's flag (arrival[] is lockfree's) */
        atomic_fetch_add_explicit(&c->count, 1, memory_order_release);
        if (!wait_ge(&c->count, r * ngroups, c, 0))
            return 0;
        atomic_store_explicit(&c->arrival[g], r, memory_order_release);
        return 1;
    }
    if (c->s == GS_STRATEGY_LOCK) {
        atomic_fetch_add_explicit(&c->count, 1, memory_order_release);
        return wait_ge(&c->count, r * (unsigned)c->nb, c, 0);
    }
    if (c->s == GS_STRATEGY_LOCKFREE) {
        atomic_store_explicit(&c->arrival[b], r, memory_order_release);
        if (b == 0) {
            for (int i = 0; i < c->nb; i++)
                if (!wait_ge(&c->arrival[i], r, c, 1))
                    return 0;
            for (int i = 0; i < c->nb; i++)
                atomic_store_explicit(&c->release[i], r, memory_order_release);
        }
        return wait_ge(&c->release[b], r, c, 1);
    }
    const unsigned g = (unsigned)b / GROUP, ngroups = (unsigned)(c->nb + GROUP - 1) / GROUP;
    const unsigned gsize = (unsigned)c->nb - g * GROUP < GROUP ? (unsigned)c->nb - g * GROUP : GROUP;
    const unsigned old = atomic_fetch_add_explicit(&c->groups[g * 16], 1, memory_order_acq_rel);
    if (old + 1 == r * gsize && atomic_fetch_add_explicit(&c->root, 1, memory_order_acq_rel) + 1 == r * ngroups)
        atomic_store_explicit(&c->generation, r, memory_order_release);
    return wait_ge(&c->generation, r, c, 0);
}

static void *run(void *arg)
{
    job *j = (job *)arg;
    cctx *c = j->c;
    const int b = j->b;
    if (b == c->skip) { /* the test hook's missing block: it never arrives */
        atomic_fetch_add(&c->finished, 1);
        return NULL;
    }
    int64_t stale = 0;
    /* Ctrl-C: one thread (the first that runs) publishes the round to stop
     * after BEFORE it arrives at that round's barrier; every thread reads it
     * AFTER passing the barrier (the barrier's release/acquire orders the
     * two), so all leave after the same round and nobody waits for a thread
     * that has gone. */
    const int decider = c->skip == 0 ? 1 : 0;
    for (int64_t r = 0; r < c->rounds; r++) {
        _Atomic unsigned *buf = c->data + (r & 1) * c->nb;
        atomic_store_explicit(&buf[b], value_of(r, (unsigned)b), memory_order_relaxed);
        if (b == decider && (r & 255) == 0 && atomic_load_explicit(&c->cancel, memory_order_relaxed))
            atomic_store_explicit(&c->stop_round, r, memory_order_relaxed);
        if (!barrier(c, b, (unsigned)(r + 1)))
            break;
        const unsigned other = (unsigned)((b + 1 + r) % c->nb);
        stale += atomic_load_explicit(&buf[other], memory_order_relaxed) != value_of(r, other);
        if (atomic_load_explicit(&c->stop_round, memory_order_relaxed) <= r)
            break;
    }
    atomic_fetch_add(&c->stale, stale);
    atomic_fetch_add(&c->finished, 1);
    return NULL;
}

gs_status gs_cpu_barrier_benchmark(gs_strategy s, int64_t blocks, int threads, int64_t rounds, int skip_block,
                                   gs_barrier_result *res)
{
    (void)threads;
    if (s == GS_STRATEGY_AUTO)
        s = GS_STRATEGY_SENSE;
    if (s == GS_STRATEGY_COOPERATIVE || s == GS_STRATEGY_RELAUNCH)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "barrier strategy '%s' needs the cuda backend", gs_strategy_name(s));
    if (s != GS_STRATEGY_LOCK && s != GS_STRATEGY_LOCKFREE && s != GS_STRATEGY_SENSE && s != GS_STRATEGY_FLAT &&
        s != GS_STRATEGY_CLUSTER)
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "barrier strategies are 'lock', 'lockfree', 'sense', 'flat', 'cluster', 'cooperative' and "
                       "'relaunch'; got '%s'",
                       gs_strategy_name(s));
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    if (blocks <= 0)
        blocks = ncpu;
    if (rounds < 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "rounds must be >= 1");
    /* every thread must run at once, as every block must be resident */
    const int64_t maxb = ncpu * 4 < 256 ? ncpu * 4 : 256;
    memset(res, 0, sizeof *res);
    res->blocks = blocks;
    res->max_blocks = maxb;
    res->rounds = rounds;
    res->threads = 1;
    res->launches = 1;
    res->cluster = s == GS_STRATEGY_CLUSTER ? GROUP : 0;
    res->used = s;
    if (blocks > maxb)
        return gs_fail(GS_ERR_NO_COOPERATIVE, "the cpu backend runs at most %lld barrier threads here (%ld CPUs); "
                       "asked for %lld", (long long)maxb, ncpu, (long long)blocks);
    cctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.nb = (int)blocks;
    c.skip = skip_block;
    c.rounds = rounds;
    c.timeout = gs_spin_timeout_ns();
    atomic_store(&c.stop_round, INT64_MAX);
    c.data = calloc((size_t)blocks * 2, sizeof *c.data);
    c.arrival = calloc((size_t)blocks, sizeof *c.arrival);
    c.release = calloc((size_t)blocks, sizeof *c.release);
    c.groups = calloc((size_t)(blocks / GROUP + 1) * 16, sizeof *c.groups);
    pthread_t th[256];
    job jobs[256];
    int started[256] = {0};
    gs_status st = GS_OK;
    if (!c.data || !c.arrival || !c.release || !c.groups) {
        st = gs_fail(GS_ERR_NO_MEMORY, "out of host memory");
        goto done;
    }
    const int64_t t0 = gs_now_ns();
    for (int b = 0; b < c.nb; b++) {
        jobs[b] = (job){&c, b};
        started[b] = pthread_create(&th[b], NULL, run, &jobs[b]) == 0;
        if (!started[b]) /* the others will time out: report it */
            atomic_store(&c.error, 1);
    }
    int nstarted = 0, interrupted = 0;
    for (int b = 0; b < c.nb; b++)
        nstarted += started[b];
    /* wait in slices, asking for Ctrl-C (the GIL is released: the binding's
     * hook takes it to check signals); the threads then stop together */
    while (atomic_load(&c.finished) < nstarted) {
        if (!interrupted && gs_interrupt_poll()) {
            interrupted = 1;
            atomic_store(&c.cancel, 1);
        }
        struct timespec ts = {0, 1000000}; /* 1 ms */
        nanosleep(&ts, NULL);
    }
    for (int b = 0; b < c.nb; b++)
        if (started[b])
            pthread_join(th[b], NULL);
    if (interrupted && !atomic_load(&c.error)) {
        st = gs_interrupted();
        goto done;
    }
    res->us_per_barrier = (gs_now_ns() - t0) / 1e3 / (double)rounds;
    res->stale = atomic_load(&c.stale);
    if (atomic_load(&c.error))
        st = gs_fail(GS_ERR_DEADLOCK, "grid barrier '%s': a thread waited more than %.0f ms for the others",
                     gs_strategy_name(s), c.timeout / 1e6);
done:
    free((void *)c.data);
    free(c.arrival);
    free(c.release);
    free(c.groups);
    return st;
}
