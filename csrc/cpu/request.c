/* The dispatcher's thread count for the CPU engine (gpusync/_dispatch.py's
 * cost model): set per calling thread before a call, read by the engine's
 * thread-count choice first (gs_cpu_threads_for). */
#include "gpusync/gpusync.h"

static _Thread_local int thread_request; /* 0: the engine's own choice */

void gs_cpu_request_threads(int nthreads) { thread_request = nthreads > 0 ? nthreads : 0; }

int gs_cpu_requested_threads(int64_t n)
{
    if (thread_request <= 0)
        return 0;
    int set = 0;
    const double cap = gs_env_number(GS_ENV_NUM_THREADS, 0, &set); /* the user's limit holds */
    int64_t t = thread_request;
    if (set && t > (int64_t)cap)
        t = (int64_t)cap;
    if (t > n)
        t = n > 0 ? n : 1;
    return (int)t;
}

/* The staging crew's workers for the calling thread's host <-> device copies
 * (csrc/cuda/stage.cu), requested by the dispatcher when the CPU engine runs
 * beside them (a cpu+cuda split: the crew and the pool then share the
 * cores); 0: the crew's own size. */
static _Thread_local int stage_request;

void gs_stage_request_threads(int nthreads) { stage_request = nthreads > 0 ? nthreads : 0; }

int gs_stage_requested_threads(void) { return stage_request; }
