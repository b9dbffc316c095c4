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

/* 1 when taken, 0 after waiting timeout_ns (or at once when *error is set). */
static inline int gs_spin_lock(atomic_int *l, atomic_int *error, int64_t timeout_ns)
{
    int64_t start = 0;
    for (unsigned spins = 1;; spins++) {
        int expected = 0;
        if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(l, &expected, 1, memory_order_acquire, memory_order_relaxed))
            return 1;
        if ((spins & 63) == 0) {
            if (error && atomic_load_explicit(error, memory_order_relaxed))
                return 0;
            const int64_t now = gs_now_ns();
            if (start == 0)
                start = now;
            else if (now - start > timeout_ns) {
                if (error)
                    atomic_store(error, 1);
                return 0;
            }
            sched_yield();
        }
    }
}

static inline void gs_spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

#endif
