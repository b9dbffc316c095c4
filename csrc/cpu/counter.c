/* Seed 001's counter experiments on CPU threads, and the lock time-out test
 * hook (the CPU twins of csrc/cuda/demos.cu).  `blocks x threads`
 * increments are spread over the machine's threads. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in spin.h */
#include "gpusync/gpusync.h"
#include "parallel.h"
#include "spin.h"

#include <stdatomic.h>
#include <string.h>

typedef struct {
    int kind;
    _Atomic int64_t count;
    atomic_int lock, error;
} cctx;

static void slice(void *ctx, int tid, int64_t lo, int64_t hi)
{
    (void)tid;
    cctx *c = (cctx *)ctx;
    for (int64_t i = lo; i < hi; i++) {
        if (c->kind == 0) { /* load, add, store: two relaxed accesses other threads interleave with */
            const int64_t v = atomic_load_explicit(&c->count, memory_order_relaxed);
            atomic_store_explicit(&c->count, v + 1, memory_order_relaxed);
        } else if (c->kind == 1) {
            atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
        } else if (gs_spin_lock(&c->lock, &c->error, gs_spin_timeout_ns())) {
            const int64_t v = atomic_load_explicit(&c->count, memory_order_relaxed);
            atomic_store_explicit(&c->count, v + 1, memory_order_relaxed);
            gs_spin_unlock(&c->lock);
        }
    }
}

gs_status gs_cpu_counter(int kind, int64_t blocks, int threads, int64_t *value, double *ms)
{
    if (kind < 0 || kind > 2)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "counter kind must be 0 (race), 1 (atomic) or 2 (mutex)");
    if (blocks < 1 || threads < 1 || blocks > INT64_MAX / threads)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "blocks and threads must be positive");
    cctx c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    atomic_init(&c.count, 0);
    atomic_init(&c.lock, 0);
    atomic_init(&c.error, 0);
    const int64_t n = blocks * threads;
    const int nth = gs_cpu_max_threads(); /* always race with several threads */
    const int64_t t0 = gs_now_ns();
    const gs_status st = gs_cpu_parallel_for(n, nth, slice, &c);
    *ms = (gs_now_ns() - t0) / 1e6;
    *value = atomic_load(&c.count);
    if (st != GS_OK)
        return st;
    if (atomic_load(&c.error))
        return gs_fail(GS_ERR_DEADLOCK, "mutex counter: a thread waited more than %.0f ms for the lock",
                       gs_spin_timeout_ns() / 1e6);
    return GS_OK;
}

gs_status gs_cpu_test_deadlock(int64_t timeout_ns)
{
    atomic_int lock, error;
    atomic_init(&lock, 1); /* held, and never released */
    atomic_init(&error, 0);
    if (gs_spin_lock(&lock, &error, timeout_ns))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "test: a lock that is never released was taken");
    return gs_fail(GS_ERR_DEADLOCK, "test: the lock was never released; gave up after %.0f ms", timeout_ns / 1e6);
}
