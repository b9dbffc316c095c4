#define _GNU_SOURCE
#include "parallel.h"
#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define GS_CPU_MAX_THREADS 256

typedef struct {
    gs_range_fn fn;
    void *ctx;
    int tid;
    int64_t begin, end;
} slice_job;

static void *run_slice(void *arg)
{
    slice_job *j = (slice_job *)arg;
    j->fn(j->ctx, j->tid, j->begin, j->end);
    return NULL;
}

int gs_cpu_threads_for(int64_t n)
{
    const int requested = gs_cpu_requested_threads(n); /* the dispatcher chose (1: the caller alone) */
    if (requested)
        return requested > GS_CPU_MAX_THREADS ? GS_CPU_MAX_THREADS : requested;
    if (n < GS_CPU_PARALLEL_MIN)
        return 1;
    long t = (long)gs_env_number(GS_ENV_NUM_THREADS, 0, NULL);
    if (t <= 0)
        t = sysconf(_SC_NPROCESSORS_ONLN);
    if (t < 1)
        t = 1;
    if (t > GS_CPU_MAX_THREADS)
        t = GS_CPU_MAX_THREADS;
    if (t > n / (GS_CPU_PARALLEL_MIN / 4))
        t = n / (GS_CPU_PARALLEL_MIN / 4) > 0 ? n / (GS_CPU_PARALLEL_MIN / 4) : 1;
    return (int)t;
}

int gs_cpu_parallel_for(int64_t n, int nthreads, gs_range_fn fn, void *ctx)
{
    if (nthreads <= 1 || n <= 1) {
        fn(ctx, 0, 0, n);
        return 0;
    }
    slice_job jobs[GS_CPU_MAX_THREADS];
    pthread_t th[GS_CPU_MAX_THREADS];
    int started[GS_CPU_MAX_THREADS] = {0};
    int rc = 0;
    for (int t = 0; t < nthreads; t++) {
        jobs[t] = (slice_job){fn, ctx, t, n * t / nthreads, n * (t + 1) / nthreads};
        if (t > 0)
            started[t] = pthread_create(&th[t], NULL, run_slice, &jobs[t]) == 0;
    }
    run_slice(&jobs[0]);
    for (int t = 1; t < nthreads; t++) {
        if (started[t]) {
            pthread_join(th[t], NULL);
        } else { /* could not start: do its slice here */
            run_slice(&jobs[t]);
            rc = -1;
        }
    }
    return rc;
}
