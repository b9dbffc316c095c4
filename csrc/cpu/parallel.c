/*
 * The CPU engine's persistent thread pool (see parallel.h).
 *
 * A job is `nthreads` tasks: task t is slice t of [0, n) and runs as thread
 * id t (the callers' per-thread partials stay indexed by it, and the results
 * do not depend on which thread ran which task).  Each task has a claim word
 * (the sequence number of the last job that claimed it); the caller claims
 * task 0 first and worker w task w + 1 -- the same slice of the same input
 * on the same thread call after call, so a repeated call finds its slice in
 * that core's own cache (16 threads reading a 16 MB input held in their L2s
 * instead of all of it through L3) -- then every thread claims what is left,
 * so a worker that the OS has not scheduled yet -- another library's threads
 * still spinning on every core after its own call, say -- holds up nothing:
 * the threads that run take its task.  A worker that wakes after the job
 * finds nothing to claim (every task's word already holds the job's number).
 *
 * Worker w owns one slot: a `go` word the caller bumps to hand it the current
 * job, and a `sleeping` word it raises before it parks on a futex, so that
 * the caller makes the wake-up system call only for a parked worker.  A
 * worker that finished a job spins GS_CPU_POOL_SPIN_US on its word first:
 * back-to-back calls then hand off without a system call.  Finished tasks
 * count up `done`; a worker that finishes the last one wakes the caller,
 * which waits in slices of GS_INTERRUPT_POLL_MS / 5 and asks the binding for
 * a pending SIGINT between them (gs_interrupt_poll) once the job has run
 * that long.
 *
 * One caller at a time holds the pool (`busy`); a second, concurrent caller
 * runs its job on threads of its own (created for that call), so every job
 * still gets all its threads at once and no caller waits for another.
 */
#define _GNU_SOURCE
#include "parallel.h"
#include "gpusync/tuning.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void futex_wait(atomic_uint *w, unsigned seen, int64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
    syscall(SYS_futex, (void *)w, FUTEX_WAIT_PRIVATE, seen, timeout_ns > 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake(atomic_uint *w, int n) { syscall(SYS_futex, (void *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0); }

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct {
    _Alignas(64) atomic_uint go;
    atomic_uint sleeping;
    unsigned seen0; /* `go` when the worker was created (jobs may come before it runs) */
} slot;

static struct {
    atomic_int busy;  /* a caller holds the pool */
    int nworkers;     /* started (slots 0..nworkers-1) */
    gs_range_fn fn;   /* the current job, written before `job` publishes it; read after a claim */
    void *ctx;
    int64_t n;
    _Atomic int per; /* tasks a thread of the current job (worker w starts at task (w + 1) x per) */
    _Atomic int64_t last_end; /* now_ns() when the last pool job ended: its workers spin until + SPIN_US */
    _Alignas(64) _Atomic uint64_t job;   /* the current job: sequence number << 16 | tasks */
    _Alignas(64) atomic_uint done;       /* tasks of the current job finished */
    struct {
        _Alignas(64) _Atomic uint64_t job; /* the last job that claimed this task (a line each: claims do not contend) */
    } claimed[GS_CPU_MAX_THREADS];
    slot slots[GS_CPU_MAX_THREADS];
} pool;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static double handoff_lo = -1, handoff_hi = 0; /* ns: 2 threads, handoff_at threads */
static int handoff_at = 2;
static uint64_t job_seq; /* the pool holder's (the job word keeps 48 bits: 2^48 jobs) */
static _Thread_local int64_t job_start;
static _Thread_local int is_caller; /* this thread called gs_cpu_parallel_for (it polls for interrupts) */
/* GPUSYNC_CPU_SIMD's choice, read from the environment by gs_cpu_parallel_for on the calling thread
 * (every kernel that asks gs_cpu_features runs inside a job): no helper reads the environment, which
 * would race with another Python thread's os.environ write */
static _Atomic int simd_cap = 0;
static _Thread_local int last_threads = 1;

int gs_cpu_last_threads(void) { return last_threads; }

static void run_slice(gs_range_fn fn, void *ctx, int64_t n, int nthreads, int tid)
{
    fn(ctx, tid, n * tid / nthreads, n * (tid + 1) / nthreads);
}

/* Claim tasks of the published job and run them until none is left (`one`:
 * at most one): task `own` first (this thread's slice of the last call too),
 * then the others from there on.  A task is claimed by moving its word from
 * an earlier job's number to this job's; the job's fields are read after a
 * successful claim: the job cannot end -- and the next one overwrite them --
 * before that task is done.  A thread with a stale snapshot of `job` fails
 * every claim: each task of that job already holds its number. */
static void run_tasks(unsigned own, int one)
{
    const uint64_t j = atomic_load_explicit(&pool.job, memory_order_acquire);
    const uint64_t seq = j >> 16;
    const unsigned tasks = (unsigned)(j & 0xffffu);
    for (unsigned k = 0; k < tasks; k++) {
        const unsigned t = (own + k) % tasks;
        uint64_t w = atomic_load_explicit(&pool.claimed[t].job, memory_order_relaxed);
        if (w >= seq || !atomic_compare_exchange_strong_explicit(&pool.claimed[t].job, &w, seq, memory_order_acq_rel,
                                                                 memory_order_relaxed))
            continue; /* (a failed CAS: another thread took it) */
        run_slice(pool.fn, pool.ctx, pool.n, (int)tasks, (int)t);
        if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_acq_rel) + 1 == tasks && !is_caller)
            futex_wake(&pool.done, 1);
        if (one)
            return;
    }
}

static void *worker(void *arg)
{
    const int w = (int)(intptr_t)arg;
    slot *s = &pool.slots[w];
    unsigned seen = s->seen0;
    for (;;) {
        const int64_t t0 = now_ns();
        for (unsigned spins = 1; atomic_load_explicit(&s->go, memory_order_acquire) == seen; spins++) {
            if (spins & 63) {
                cpu_relax();
                continue;
            }
            if (now_ns() - t0 < (int64_t)GS_CPU_POOL_SPIN_US * 1000)
                continue;
            atomic_store(&s->sleeping, 1); /* seq_cst: pairs with the caller's bump of go */
            if (atomic_load(&s->go) == seen)
                futex_wait(&s->go, seen, 0);
            atomic_store(&s->sleeping, 0);
        }
        seen = atomic_load_explicit(&s->go, memory_order_acquire);
        run_tasks((unsigned)(w + 1) * (unsigned)atomic_load_explicit(&pool.per, memory_order_relaxed), 0);
    }
    return NULL;
}

/* A forked child has none of the parent's threads: start over. */
static void after_fork_child(void)
{
    atomic_store(&pool.busy, 0);
    pool.nworkers = 0;
    atomic_store(&pool.job, 0);
    atomic_store(&pool.done, 0);
    for (int i = 0; i < GS_CPU_MAX_THREADS; i++)
        atomic_store(&pool.claimed[i].job, 0);
    for (int i = 0; i < GS_CPU_MAX_THREADS; i++) {
        atomic_store(&pool.slots[i].go, 0);
        atomic_store(&pool.slots[i].sleeping, 0);
    }
}

static void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Caller holds `busy`.  Start workers up to `want` (thread ids 1..want). */
static int grow(int want)
{
    pthread_once(&once, register_fork);
    while (pool.nworkers < want) {
        pthread_attr_t a;
        pthread_t th;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pool.slots[pool.nworkers].seen0 = atomic_load(&pool.slots[pool.nworkers].go);
        const int rc = pthread_create(&th, &a, worker, (void *)(intptr_t)pool.nworkers);
        pthread_attr_destroy(&a);
        if (rc != 0)
            return 0;
        pool.nworkers++;
    }
    return 1;
}

int gs_cpu_stop(int tid)
{
    (void)tid; /* the caller may run any task: it is the thread that asks the binding */
    if (!is_caller)
        return gs_interrupt_requested();
    if (job_start <= 0) { /* the job's second check starts its clock (a check per chunk): a short job reads none */
        job_start = job_start < 0 ? now_ns() : -1;
        return gs_interrupt_requested();
    }
    if (now_ns() - job_start < (int64_t)GS_INTERRUPT_POLL_MS * 1000000 / 5)
        return gs_interrupt_requested();
    return gs_interrupt_poll();
}

/* The caller, no task left to claim: wait for the tasks the workers hold,
 * asking for interrupts between slices of the wait (they stop at their next
 * chunk). */
static void wait_workers(unsigned tasks)
{
    const int64_t t0 = now_ns();
    unsigned d;
    while ((d = atomic_load_explicit(&pool.done, memory_order_acquire)) != tasks) {
        if (now_ns() - t0 < (int64_t)GS_CPU_POOL_SPIN_US * 1000) {
            cpu_relax();
            continue;
        }
        futex_wait(&pool.done, d, (int64_t)GS_INTERRUPT_POLL_MS * 1000000 / 5);
        gs_cpu_stop(0);
    }
}

/* The pool is busy (another caller) or cannot grow: threads for this call. */
typedef struct {
    gs_range_fn fn;
    void *ctx;
    int64_t n;
    int ntasks, nthreads, tid;
} own_job;

/* Thread tid's slices: tid, tid + nthreads, ... (of ntasks) */
static void own_slices(const own_job *j)
{
    for (int t = j->tid; t < j->ntasks; t += j->nthreads)
        run_slice(j->fn, j->ctx, j->n, j->ntasks, t);
}

static void *own_slice(void *arg)
{
    own_slices((own_job *)arg);
    return NULL;
}

static int run_own_threads(int64_t n, int nthreads, int ntasks, gs_range_fn fn, void *ctx)
{
    own_job jobs[GS_CPU_MAX_THREADS];
    pthread_t th[GS_CPU_MAX_THREADS];
    int started[GS_CPU_MAX_THREADS] = {0};
    int rc = 0;
    for (int t = 1; t < nthreads; t++) {
        jobs[t] = (own_job){fn, ctx, n, ntasks, nthreads, t};
        started[t] = pthread_create(&th[t], NULL, own_slice, &jobs[t]) == 0;
    }
    jobs[0] = (own_job){fn, ctx, n, ntasks, nthreads, 0};
    own_slices(&jobs[0]);
    for (int t = 1; t < nthreads; t++) {
        if (started[t]) {
            pthread_join(th[t], NULL);
        } else { /* could not start: do its slices here */
            own_slices(&jobs[t]);
            rc = -1;
        }
    }
    return rc;
}

/* `one`: the caller runs one task and leaves the rest to the workers (the
 * hand-off measurement: what waking them costs). */
static void run_pool(int64_t n, int nthreads, int ntasks, gs_range_fn fn, void *ctx, int one)
{
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    atomic_store_explicit(&pool.per, ntasks / nthreads, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    job_seq++;
    atomic_store_explicit(&pool.job, job_seq << 16 | (uint64_t)ntasks, memory_order_release);
    for (int w = 0; w < nthreads - 1; w++) {
        slot *s = &pool.slots[w];
        atomic_fetch_add(&s->go, 1); /* seq_cst: pairs with the worker's `sleeping` */
        if (atomic_load(&s->sleeping))
            futex_wake(&s->go, 1);
    }
    run_tasks(0, one);
    wait_workers((unsigned)ntasks);
    atomic_store_explicit(&pool.last_end, now_ns(), memory_order_relaxed);
}

int gs_cpu_pool_warm(void)
{
    /* the workers spin GS_CPU_POOL_SPIN_US after their slice; a margin of a
     * quarter of it for the time between this answer and the next job */
    return pool.nworkers > 0 && !atomic_load_explicit(&pool.busy, memory_order_relaxed) &&
           now_ns() - atomic_load_explicit(&pool.last_end, memory_order_relaxed) <
               (int64_t)GS_CPU_POOL_SPIN_US * 750;
}

static void noop(void *ctx, int tid, int64_t b, int64_t e) { (void)ctx, (void)tid, (void)b, (void)e; }

/* Caller holds `busy`, workers started: the best of a few empty jobs, each
 * after the workers have parked (the cold hand-off a call meets). */
static double measure(int nthreads)
{
    double best = 1e18;
    for (int rep = 0; rep < 5; rep++) {
        const struct timespec nap = {0, (long)GS_CPU_POOL_SPIN_US * 2000 + 50000};
        nanosleep(&nap, NULL);
        const int64_t t0 = now_ns();
        run_pool(nthreads, nthreads, nthreads, noop, NULL, 1);
        const double dt = (double)(now_ns() - t0);
        best = dt < best ? dt : best;
    }
    return best;
}

static void calibrate_locked(int most)
{
    if (handoff_lo >= 0 && handoff_at >= most)
        return;
    if (!grow(most - 1))
        return;
    handoff_lo = measure(2);
    handoff_hi = most > 2 ? measure(most) : handoff_lo;
    handoff_at = most;
}

/* The online CPUs, asked once: glibc's sysconf(_SC_NPROCESSORS_ONLN) reads
 * /sys on every call (about 10 us, more than a small reduction costs). */
static int online_cpus(void)
{
    static _Atomic int n;
    int v = atomic_load_explicit(&n, memory_order_relaxed);
    if (v == 0) {
        const long c = sysconf(_SC_NPROCESSORS_ONLN);
        v = c < 1 ? 1 : c > 64 ? 64 : (int)c;
        atomic_store_explicit(&n, v, memory_order_relaxed);
    }
    return v;
}

int gs_cpu_max_threads(void)
{
    int set = 0;
    double t = gs_env_number(GS_ENV_NUM_THREADS, 0, &set);
    if (!set)
        t = (double)online_cpus();
    if (t < 1)
        t = 1;
    if (t > GS_CPU_MAX_THREADS)
        t = GS_CPU_MAX_THREADS;
    return (int)t;
}

double gs_cpu_handoff_ns(int nthreads)
{
    if (nthreads <= 1)
        return 0;
    if (handoff_lo < 0 || handoff_at < nthreads) {
        /* measure with the pool to ourselves; a busy pool means another
         * call runs: use the safe default until the next time */
        if (!atomic_exchange(&pool.busy, 1)) {
            calibrate_locked(nthreads > gs_cpu_max_threads() ? nthreads : gs_cpu_max_threads());
            atomic_store(&pool.busy, 0);
        }
        if (handoff_lo < 0)
            return GS_CPU_HANDOFF_DEFAULT_NS * (nthreads - 1);
    }
    if (handoff_at <= 2)
        return handoff_lo;
    const double f = (double)(nthreads - 2) / (handoff_at - 2);
    return handoff_lo + f * (handoff_hi - handoff_lo); /* linear in the threads woken */
}

int gs_cpu_threads_for_cost_extra(int64_t n, double ns_per_item, double ns_per_extra_thread)
{
    const int requested = gs_cpu_requested_threads(n); /* the dispatcher chose (1: the caller alone) */
    if (requested)
        return requested > GS_CPU_MAX_THREADS ? GS_CPU_MAX_THREADS : requested;
    const double work = (double)n * ns_per_item;
    int most = gs_cpu_max_threads();
    if (most > n)
        most = n > 1 ? (int)n : 1;
    /* below the cheapest hand-off there is, no thread can pay: do not even
     * start the pool */
    if (most <= 1 || work < 2 * GS_CPU_HANDOFF_MIN_NS + ns_per_extra_thread)
        return 1;
    int best_t = 1;
    double best = work;
    for (int t = 2; t <= most; t++) {
        const double extra = ns_per_extra_thread * (t - 1);
        if (extra >= best) /* grows with t: no larger t can win */
            break;
        const double c = work / t + gs_cpu_handoff_ns(t) + extra;
        if (c < best) {
            best = c;
            best_t = t;
        }
    }
    return best_t;
}

int gs_cpu_threads_for_cost(int64_t n, double ns_per_item) { return gs_cpu_threads_for_cost_extra(n, ns_per_item, 0); }

gs_status gs_cpu_parallel_for(int64_t n, int nthreads, gs_range_fn fn, void *ctx)
{
    return gs_cpu_parallel_tasks(n, nthreads, nthreads, fn, ctx);
}

gs_status gs_cpu_parallel_tasks(int64_t n, int nthreads, int ntasks, gs_range_fn fn, void *ctx)
{
    job_start = 0; /* read by gs_cpu_stop */
    atomic_store_explicit(&simd_cap, gs_env_choice(GS_ENV_CPU_SIMD), memory_order_relaxed);
    const int was_caller = is_caller; /* (a nested call leaves the outer caller polling) */
    is_caller = 1;
    if (nthreads > GS_CPU_MAX_THREADS)
        nthreads = GS_CPU_MAX_THREADS;
    if (ntasks > GS_CPU_MAX_THREADS) /* (a claim word each) */
        ntasks = GS_CPU_MAX_THREADS;
    if ((int64_t)ntasks > n)
        ntasks = (int)n;
    if (ntasks < nthreads)
        ntasks = nthreads;
    int rc = 0;
    last_threads = nthreads > 1 && n > 1 ? nthreads : 1;
    if (nthreads <= 1 || n <= 1) {
        fn(ctx, 0, 0, n);
    } else if (!atomic_exchange(&pool.busy, 1)) {
        if (grow(nthreads - 1)) {
            run_pool(n, nthreads, ntasks, fn, ctx, 0);
            atomic_store(&pool.busy, 0);
        } else {
            atomic_store(&pool.busy, 0);
            rc = run_own_threads(n, nthreads, ntasks, fn, ctx);
        }
    } else {
        rc = run_own_threads(n, nthreads, ntasks, fn, ctx);
    }
    is_caller = was_caller;
    if (gs_interrupt_requested())
        return gs_interrupted();
    return rc == 0 ? GS_OK : gs_fail(GS_ERR_NO_MEMORY, "could not start CPU threads");
}

int gs_cpu_features(void)
{
    static _Atomic int f = -1; /* threads racing to ask store the same answer */
    int v = atomic_load_explicit(&f, memory_order_relaxed);
    if (v < 0) {
        v = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (__builtin_cpu_supports("avx2"))
            v |= GS_CPU_AVX2 | (__builtin_cpu_supports("fma") ? GS_CPU_FMA : 0);
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
            v |= GS_CPU_AVX512;
        unsigned eax, ebx, ecx, edx; /* F16C: CPUID.1:ECX bit 29 (clang's __builtin_cpu_supports has no "f16c") */
        if (__builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx >> 29 & 1))
            v |= GS_CPU_F16C;
#endif
        atomic_store_explicit(&f, v, memory_order_relaxed);
    }
    switch (atomic_load_explicit(&simd_cap, memory_order_relaxed)) { /* GPUSYNC_CPU_SIMD caps it (tests) */
    case 1: return v;                                            /* avx512: what the CPU has */
    case 2: return v & (GS_CPU_AVX2 | GS_CPU_FMA | GS_CPU_F16C); /* avx2 */
    case 3: return 0;                                            /* none: baseline x86-64 */
    default: return v;                                           /* auto, unset */
    }
}
