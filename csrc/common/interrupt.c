/*
 * The one interrupt flag both engines poll (see gpusync.h).
 *
 * The calling thread runs the binding's hook (a pending SIGINT?) through
 * gs_interrupt_poll(), at most once per GS_INTERRUPT_POLL_MS / 5 so that a
 * tight wait loop does not take the GIL thousands of times a second; when it
 * fires, the process-wide flag goes up and every engine loop that reads
 * gs_interrupt_requested() -- CPU worker threads, the CUDA wait loops that
 * then raise the device's cancel word -- winds down.
 */
#define _POSIX_C_SOURCE 200809L
#include "gpusync/gpusync.h"

#include <stdatomic.h>
#include <time.h>

static atomic_int flag;
static _Atomic(gs_interrupt_hook) hook;
static _Thread_local int64_t next_poll_ns;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void gs_set_interrupt_hook(gs_interrupt_hook h) { atomic_store(&hook, h); }
void gs_request_interrupt(void) { atomic_store_explicit(&flag, 1, memory_order_relaxed); }
int gs_interrupt_requested(void) { return atomic_load_explicit(&flag, memory_order_relaxed); }
void gs_interrupt_clear(void) { atomic_store_explicit(&flag, 0, memory_order_relaxed); }

int gs_interrupt_poll(void)
{
    if (gs_interrupt_requested())
        return 1;
    const gs_interrupt_hook h = atomic_load(&hook);
    if (!h)
        return 0;
    const int64_t t = now_ns();
    if (t < next_poll_ns)
        return 0;
    next_poll_ns = t + (int64_t)GS_INTERRUPT_POLL_MS * 1000000 / 5;
    if (h()) {
        gs_request_interrupt();
        return 1;
    }
    return 0;
}

gs_status gs_interrupted(void) { return gs_fail(GS_ERR_INTERRUPTED, "interrupted"); }
