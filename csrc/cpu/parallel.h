/* A minimal parallel-for over index ranges on POSIX threads (CPU backend). */
#ifndef GPUSYNC_CPU_PARALLEL_H
#define GPUSYNC_CPU_PARALLEL_H
#include <stdint.h>

/* fn(ctx, tid, begin, end) runs on `nthreads` threads over equal slices of
 * [0, n).  Thread 0 is the caller.  Returns 0, or -1 when a thread could not
 * be started (the work then still completes on the threads that did start). */
typedef void (*gs_range_fn)(void *ctx, int tid, int64_t begin, int64_t end);
int gs_cpu_parallel_for(int64_t n, int nthreads, gs_range_fn fn, void *ctx);

/* Threads to use for n elements: 1 below GS_CPU_PARALLEL_MIN, else the
 * number of online CPUs (or GPUSYNC_NUM_THREADS when set). */
int gs_cpu_threads_for(int64_t n);
#endif
