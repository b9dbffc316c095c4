/* The CPU engine's parallel-for: a persistent thread pool (csrc/cpu/parallel.c).
 *
 * Threads are created once, on the first call that wants them, and park on a
 * futex between jobs.  A job runs fn as `nthreads` tasks, task t on slice t of
 * [0, n) with thread id t; the caller and the woken workers claim the tasks,
 * so a worker the OS runs late leaves its task to the others (a thread may run
 * several tasks, one after the other).  Tasks that wait for each other (the
 * grid / barrier strategies) still each get a thread of their own: a thread
 * blocked in one task cannot claim another, so the waiting tasks are claimed
 * by the other threads woken for the job (a job of T tasks always wakes T - 1
 * workers: the pool must never wake fewer).  When the pool is held by another
 * caller (several Python threads), the later caller runs on threads of its own
 * for that call.  The pool is rebuilt in a forked child. */
#ifndef GPUSYNC_CPU_PARALLEL_H
#define GPUSYNC_CPU_PARALLEL_H
#include "gpusync/gpusync.h"

#include <stdint.h>

typedef void (*gs_range_fn)(void *ctx, int tid, int64_t begin, int64_t end);

#define GS_CPU_MAX_THREADS 256 /* the pool's threads, and the tasks of one job */

/* GS_OK; GS_ERR_INTERRUPTED when an interrupt came during the job (every
 * thread has stopped by then: the slices check gs_cpu_stop between chunks);
 * GS_ERR_NO_MEMORY when threads could not be started (their slices then ran
 * on the caller, after the others). */
gs_status gs_cpu_parallel_for(int64_t n, int nthreads, gs_range_fn fn, void *ctx);
/* The same with [0, n) cut into ntasks slices (at least nthreads, at most GS_CPU_MAX_THREADS and n) that
 * nthreads threads claim: thread w starts at slice w x (ntasks / nthreads) and goes on to the slices no
 * other thread has claimed -- a thread that starts late or is descheduled leaves its later slices to the
 * others.  fn sees the slice's index as `tid` (0 .. ntasks - 1); nthreads <= 1 calls fn(ctx, 0, 0, n). */
gs_status gs_cpu_parallel_tasks(int64_t n, int nthreads, int ntasks, gs_range_fn fn, void *ctx);

/* Declared in gpusync.h (the engine choice reads them too):
 * gs_cpu_threads_for_cost(n, ns_per_item): the dispatcher's request for the
 *   calling thread (gs_cpu_requested_threads) when it made one; else the
 *   thread count t minimising
 *   n*ns_per_item/t + handoff(t), handoff(t) the measured cost of waking t-1
 *   pool threads and waiting for them; 1 (the calling thread alone, no
 *   hand-off) when threads would not pay.  At most gs_cpu_max_threads().
 * gs_cpu_max_threads(): GPUSYNC_NUM_THREADS, or the online CPUs (at most 64).
 * gs_cpu_handoff_ns(nthreads): the hand-off of a job on nthreads threads --
 *   waking nthreads-1 parked pool threads and seeing them finish an empty
 *   slice; 0 for one thread.  Measured once when the pool starts (the best of
 *   a few empty jobs; the first call pays it), linear in the threads between
 *   the two counts measured. */

/* gs_cpu_threads_for_cost with a cost that each thread beyond the first
 * adds (a private copy of the result to zero and merge, say): t minimises
 * n*ns_per_item/t + handoff(t) + (t-1)*ns_per_extra_thread.  The
 * dispatcher's request still wins. */
int gs_cpu_threads_for_cost_extra(int64_t n, double ns_per_item, double ns_per_extra_thread);

/* Between two chunks of a slice: nonzero when the job should stop (an
 * interrupt).  The calling thread, whichever task it runs, asks the binding's hook (a pending
 * SIGINT) once the job has run GS_INTERRUPT_POLL_MS / 5; the others read the
 * process-wide flag (one relaxed load). */
int gs_cpu_stop(int tid);

/* Instruction sets the hand-written kernels pick at run time (the build
 * stays baseline x86-64), asked of the CPU once: GS_CPU_AVX2, GS_CPU_AVX512
 * (F and VL), GS_CPU_FMA, GS_CPU_F16C (AVX and the half <-> float
 * conversions: reduce.c's float16 sum and dot).  0 off x86-64.
 * GPUSYNC_CPU_SIMD caps the answer (avx2, none), so that tests run every
 * variant on one CPU; it is read when a job starts (gs_cpu_parallel_for), so
 * ask only inside a job. */
enum { GS_CPU_AVX2 = 1, GS_CPU_AVX512 = 2, GS_CPU_FMA = 4 /* AVX2 and FMA */, GS_CPU_F16C = 8 };
int gs_cpu_features(void);

/* AVX-512 and AVX2 clones of a hot loop beside the baseline one, the widest
 * the CPU has picked at run time (the build itself stays baseline x86-64).
 * H100 host (Xeon, 16 cores): `gs.dot` of 1M float32 0.040-0.056 ->
 * 0.032-0.034 ms with the AVX-512 clone and the vector fold (reduce.c). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* GS_CLONES with an FMA clone where the CPU has it (x86-64-v3: AVX2 + FMA;
 * AVX-512F has FMA too), and GS_FUSED_MULADD: multiply-adds fused in the
 * clones that have FMA -- for a loop whose fused multiply-add rounds exactly
 * as the multiply and the add (reduce.c's float32 dot). */
#define GS_CLONES_FMA __attribute__((target_clones("avx512f", "arch=x86-64-v3", "avx2", "default")))
#define GS_FUSED_MULADD __attribute__((optimize("fp-contract=fast")))
#else
#define GS_CLONES
#define GS_CLONES_FMA
#define GS_FUSED_MULADD
#endif
#endif
