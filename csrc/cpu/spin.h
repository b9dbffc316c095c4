/* A bounded spin lock for the CPU backend (C11 atomics): acquire on taking,
 * release on giving back -- the CPU twin of gpusync/mutex.cuh. */
#ifndef GPUSYNC_CPU_SPIN_H
#define GPUSYNC_CPU_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline int64_t gs_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The word counts hand-overs: even = free, odd = held (as in mutex.cuh).
 * 1 when taken; 0 when the word stayed unchanged for timeout_ns (one
 * holder never let go) or at once when *error is set. */
static inline int gs_spin_lock(atomic_int *l, atomic_int *error, int64_t timeout_ns)
{
    int64_t start = 0;
    int seen = atomic_load_explicit(l, memory_order_relaxed), mark = 0;
    for (unsigned spins = 1;; spins++) {
        if (!(seen & 1) &&
            atomic_compare_exchange_weak_explicit(l, &seen, seen + 1, memory_order_acquire, memory_order_relaxed))
            return 1;
        if ((spins & 63) == 0) {
            if (error && atomic_load_explicit(error, memory_order_relaxed))
                return 0;
            const int64_t now = gs_now_ns();
            const int cur = atomic_load_explicit(l, memory_order_relaxed);
            if (start == 0 || cur != mark) { /* first check, or the lock moved on */
                start = now;
                mark = cur;
            } else if (now - start > timeout_ns) {
                if (error)
                    atomic_store(error, 1);
                return 0;
            }
            sched_yield();
        }
        seen = atomic_load_explicit(l, memory_order_relaxed);
    }
}

/* A bounded wait: until *p (acquire) is at least `goal` -- or, with goal 0,
 * nonzero.  Returns the value seen, or 0 after *p stayed unchanged for
 * timeout_ns (arrivals are progress: a slow machine never trips it while
 * threads still arrive) or at once when *error is set (then sets *error). */
static inline unsigned gs_spin_wait(atomic_uint *p, unsigned goal, atomic_int *error, int64_t timeout_ns)
{
    int64_t start = 0;
    unsigned mark = 0;
    for (unsigned spins = 1;; spins++) {
        const unsigned v = atomic_load_explicit(p, memory_order_acquire);
        if (goal ? v >= goal : v != 0)
            return v;
        if ((spins & 255) == 0) {
            if (atomic_load_explicit(error, memory_order_relaxed))
                return 0;
            const int64_t now = gs_now_ns();
            if (!start || v != mark) { /* first check, or more arrived: progress */
                start = now;
                mark = v;
            } else if (now - start > timeout_ns) {
                atomic_store(error, 1);
                return 0;
            }
            sched_yield();
        }
    }
}

static inline void gs_spin_unlock(atomic_int *l)
{
    atomic_store_explicit(l, atomic_load_explicit(l, memory_order_relaxed) + 1, memory_order_release);
}

#endif
