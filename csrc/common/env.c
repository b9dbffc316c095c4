/*
 * Every GPUSYNC_* environment variable in one table: name, type, default,
 * valid range, meaning.  docs/environment.md is the user-facing copy of this
 * table (tests/test_env.py checks that every row is documented there).
 *
 * A value is parsed where it is used (gs_env_number / gs_env_choice), but
 * only when its text changed since the last parse, so benchmark sweeps that
 * set a variable between calls keep working, and a hot path pays a few loads
 * while the environment is unchanged (see `seen` below).  An invalid value
 * (not a number, outside the range, not one of the choices) gives one
 * warning naming the variable, queued for the binding to raise as a Python
 * RuntimeWarning, and the default is used.
 */
#include "gpusync/gpusync.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const gs_env_info table[GS_ENV_COUNT] = {
    [GS_ENV_BACKEND] = {.name = "GPUSYNC_BACKEND", .type = "choice", .fallback = "",
                        .choices = "cpu|cuda",
                        .meaning = "the backend to start on (default: cuda when it can run, else cpu); cuda where "
                                   "it cannot run warns once and uses cpu"},
    [GS_ENV_SPIN_TIMEOUT_MS] = {.name = "GPUSYNC_SPIN_TIMEOUT_MS", .type = "float", .fallback = "1000",
                                .lo = GS_SPIN_TIMEOUT_MIN_MS, .hi = 86400000.0,
                                .meaning = "how long a spin loop (mutex, grid barrier, look-back, CPU spin barrier) "
                                           "may see no progress before it raises DeadlockError (the GPU look-back "
                                           "of cumsum sums its prefix itself instead); smaller values are raised "
                                           "to the minimum with a warning"},
    [GS_ENV_NUM_THREADS] = {.name = "GPUSYNC_NUM_THREADS", .type = "int", .fallback = "",
                            .lo = 1, .hi = 256, .meaning = "CPU backend threads (default: the online CPUs, at most 256)"},
    [GS_ENV_DEBUG] = {.name = "GPUSYNC_DEBUG", .type = "flag", .fallback = "0", .lo = 0, .hi = 1,
                      .meaning = "1: print each call's plan (gs.last_plan()), each CUDA call's launch shape and the "
                                 "strategy auto chose on stderr"},
    [GS_ENV_POOL_KEEP_MB] = {.name = "GPUSYNC_POOL_KEEP_MB", .type = "int", .fallback = "1024", .lo = 0,
                             .hi = 1048576,
                             .meaning = "MiB of freed device scratch memory each device's pool keeps (read when "
                                        "the pool is made)"},
    [GS_ENV_HIST_GRID] = {.name = "GPUSYNC_HIST_GRID", .type = "int", .fallback = "", .lo = 1,
                          .hi = 2147483647.0, .meaning = "benchmarks: force the histogram kernels' block count"},
    [GS_ENV_HIST_REPLICAS] = {.name = "GPUSYNC_HIST_REPLICAS", .type = "int", .fallback = "", .lo = 1, .hi = 32,
                              .meaning = "tuning: cap the shared strategy's replicas per bin"},
    [GS_ENV_REDUCE_GRID] = {.name = "GPUSYNC_REDUCE_GRID", .type = "int", .fallback = "", .lo = 1,
                            .hi = 2147483647.0,
                            .meaning = "benchmarks: force sum/dot's block count (not for grid or deterministic)"},
    [GS_ENV_NO_STAGING] = {.name = "GPUSYNC_NO_STAGING", .type = "flag", .fallback = "0", .lo = 0, .hi = 1,
                           .meaning = "1: copy host inputs with plain cudaMemcpy instead of the staging crew"},
    [GS_ENV_STAGE_THREADS] = {.name = "GPUSYNC_STAGE_THREADS", .type = "int", .fallback = "", .lo = 1, .hi = 256,
                              .meaning = "host threads of the staging crew (default: 16, at most CPUs - 1)"},
    [GS_ENV_STAGE_SPIN_US] = {.name = "GPUSYNC_STAGE_SPIN_US", .type = "int", .fallback = "", .lo = 0,
                              .hi = 1000000, .meaning = "how long an idle crew thread spins before it sleeps"},
    [GS_ENV_STAGE_UNIT_KB] = {.name = "GPUSYNC_STAGE_UNIT_KB", .type = "int", .fallback = "", .lo = 4,
                              .hi = 2048, .meaning = "the smallest staging unit (one DMA) in KiB (at most the 2 MiB slot)"},
    [GS_ENV_STAGE_SPLIT] = {.name = "GPUSYNC_STAGE_SPLIT", .type = "int", .fallback = "", .lo = 1, .hi = 64,
                            .meaning = "host-to-device: crew pieces per staging unit"},
    [GS_ENV_STAGE_D2H_SPLIT] = {.name = "GPUSYNC_STAGE_D2H_SPLIT", .type = "int", .fallback = "1", .lo = 1,
                                .hi = 64, .meaning = "device-to-host: crew pieces per staging unit"},
    [GS_ENV_STAGE_UNITS] = {.name = "GPUSYNC_STAGE_UNITS", .type = "int", .fallback = "", .lo = 1, .hi = 1024,
                            .meaning = "units one copy is cut into (before the unit-size bounds)"},
    [GS_ENV_STAGE_NT] = {.name = "GPUSYNC_STAGE_NT", .type = "flag", .fallback = "0", .lo = 0, .hi = 1,
                         .meaning = "1: the crew copies with streaming (non-temporal) stores"},
    [GS_ENV_REDUCE_SMALL_BYTES] = {.name = "GPUSYNC_REDUCE_SMALL_BYTES", .type = "int", .fallback = "", .lo = 0,
                                   .hi = 2147483647.0,
                                   .meaning = "tuning: device sum/dot inputs of at most this many bytes run as one "
                                              "block (strategy auto)"},
    [GS_ENV_BARRIER_VERIFY] = {.name = "GPUSYNC_BARRIER_VERIFY", .type = "flag", .fallback = "1", .lo = 0, .hi = 1,
                               .meaning = "benchmarks: 0 leaves out barrier_benchmark's verifying reads (the bare "
                                          "barrier's cost)"},
    [GS_ENV_ENGINE] = {.name = "GPUSYNC_ENGINE", .type = "choice", .fallback = "auto",
                       .choices = "auto|caller|cpu|cuda|cpu+cuda",
                       .meaning = "force the engine of NumPy-input calls (docs/dispatch.md): the calling thread, "
                                  "the CPU pool, the GPU or both; auto: the cost model picks"},
    [GS_ENV_CALIBRATE] = {.name = "GPUSYNC_CALIBRATE", .type = "choice", .fallback = "auto", .choices = "auto|off",
                          .meaning = "off: no quick measurement of the machine constants on first need (defaults "
                                     "unless python -m gpusync calibrate cached them)"},
    [GS_ENV_HIST_SMALL] = {.name = "GPUSYNC_HIST_SMALL", .type = "int", .fallback = "1", .lo = 0, .hi = 2,
                           .meaning = "benchmarks: 0 turns off the fast paths of the shared histogram for 8-bit "
                                      "data, small-range integers and equal-width float bins, 2 takes the 8-bit "
                                      "kernel at every size (with 0, contiguous 8-bit data take the byte kernel at "
                                      "every size: GPUSYNC_HIST_BYTES)"},
    [GS_ENV_HIST_U8_CFG] = {.name = "GPUSYNC_HIST_U8_CFG", .type = "int", .fallback = "0", .lo = 0, .hi = 3,
                            .meaning = "tuning: launch shape of the 8-bit histogram kernel (hist_small.cu)"},
    [GS_ENV_BITS_SIMD] = {.name = "GPUSYNC_BITS_SIMD", .type = "flag", .fallback = "1", .lo = 0, .hi = 1,
                          .meaning = "benchmarks: 0 makes packbits/count_nonzero of bytes test each element "
                                     "instead of 4 bytes at a time"},
    [GS_ENV_HISTDD_CLUSTER] = {.name = "GPUSYNC_HISTDD_CLUSTER", .type = "int", .fallback = "2", .lo = 2, .hi = 16,
                               .meaning = "tuning: the smallest thread-block cluster histogram2d / histogramdd "
                                          "spread their bins over when they do not fit one block (a power of two)"},
    [GS_ENV_BARRIER_POLL] = {.name = "GPUSYNC_BARRIER_POLL", .type = "int", .fallback = "", .lo = 0, .hi = 4,
                             .meaning = "tuning: the poll loop of barrier_benchmark's flat and cluster barriers "
                                        "(barrier.cuh, detail::flat_poll)"},
    [GS_ENV_BARRIER_CLUSTER] = {.name = "GPUSYNC_BARRIER_CLUSTER", .type = "int", .fallback = "0", .lo = 0,
                                .hi = 16,
                                .meaning = "tuning: blocks per cluster of barrier_benchmark's cluster barrier (0: "
                                           "the largest power of two up to 16 that divides the grid and fits)"},
    [GS_ENV_HIST_REAL_CFG] = {.name = "GPUSYNC_HIST_REAL_CFG", .type = "int", .fallback = "0", .lo = 0, .hi = 2,
                              .meaning = "tuning: launch shape of the float32/float64 equal-width histogram "
                                         "kernel (hist_small.cu; 2: without the fused multiply-add estimate)"},
    [GS_ENV_SCAN_FALLBACK] = {.name = "GPUSYNC_SCAN_FALLBACK", .type = "flag", .fallback = "0", .lo = 0, .hi = 1,
                              .meaning = "tests: 1 makes every tile of cumsum's lookback strategy take the "
                                         "time-out's path (sum the input before it itself)"},
    [GS_ENV_HISTDD_COUNTER] = {.name = "GPUSYNC_HISTDD_COUNTER", .type = "int", .fallback = "0", .lo = 0, .hi = 32,
                               .meaning = "tuning: the shared-memory counter width of unweighted histogram2d / "
                                          "histogramdd (16 or 32 bits; 0: the one that keeps more threads per SM; 1, for tests: "
                                          "16 bits with the overflow recount forced, in histogram's 16-bit halves too)"},
    [GS_ENV_BITS_LOADS] = {.name = "GPUSYNC_BITS_LOADS", .type = "int", .fallback = "2", .lo = 2, .hi = 4,
                           .meaning = "tuning: 16-byte loads in flight per thread in packbits/count_nonzero's vector "
                                      "loop (2 or 4; 3 reads as 4)"},
    [GS_ENV_HISTDD_FLUSH] = {.name = "GPUSYNC_HISTDD_FLUSH", .type = "int", .fallback = "0", .lo = 0, .hi = 2,
                             .meaning = "tuning: how unweighted histogram2d / histogramdd blocks hand their shared "
                                        "counts to the result (0: by the cost rule in histdd.cu, 1: global atomics "
                                        "per bin, 2: a copy of the block's counters summed by a second kernel)"},
    [GS_ENV_SCAN_DELAY_NS] = {.name = "GPUSYNC_SCAN_DELAY_NS", .type = "int", .fallback = "-1", .lo = -1,
                              .hi = 100000,
                              .meaning = "tuning: the nap (ns) of cumsum's lookback tiles between publishing their "
                                         "sum and their look-back's first poll (-1: tuning.h's GS_SCAN_DELAY_NS)"},
    [GS_ENV_HIST_ONE_LAUNCH] = {.name = "GPUSYNC_HIST_ONE_LAUNCH", .type = "flag", .fallback = "1", .lo = 0,
                                .hi = 1,
                                .meaning = "tuning: 0 gives every device histogram of the shared strategy the "
                                           "zeroing kernel ahead of its count (1: one launch where the bins fit "
                                           "the scratch buffer's accumulators)"},
    [GS_ENV_HIST_GLOBAL_L2] = {.name = "GPUSYNC_HIST_GLOBAL_L2", .type = "flag", .fallback = "1", .lo = 0, .hi = 1,
                               .meaning = "tuning: 0 keeps every global-atomic histogram to one pass into its "
                                          "result (1: where the int64 counts would take more than half the L2 "
                                          "and the elements are at least as many as the bins -- and fewer than "
                                          "2^32 for counts -- 32-bit counters, or the float64 sums, in up to 8 "
                                          "passes over the input whose counters fit half the L2)"},
    [GS_ENV_HIST_PART] = {.name = "GPUSYNC_HIST_PART", .type = "int", .fallback = "-1", .lo = -1, .hi = 14,
                          .meaning = "tuning: unweighted device counts on 65,536 to 16M bins (the global strategy, "
                                     "hist_global.cu) -- -1: the partition into digits counted in shared memory where "
                                     "it applies, with about 64 digits; 0: never (global atomics); 1-14: the "
                                     "partition with digits of that many low bits (at least 10), from as many "
                                     "elements as bins"},
    [GS_ENV_HIST_BYTES] = {.name = "GPUSYNC_HIST_BYTES", .type = "flag", .fallback = "1", .lo = 0, .hi = 1,
                           .meaning = "benchmarks: 0 gives contiguous 8-bit data past the 8-bit kernel's size the "
                                      "generic shared kernel instead of the byte kernel (hist_smem.cu)"},
    [GS_ENV_BINSTAT_WINDOW] = {.name = "GPUSYNC_BINSTAT_WINDOW", .type = "int", .fallback = "-1", .lo = -1,
                               .hi = 1,
                               .meaning = "tuning: whether a point of the GPU's privatized binned statistics whose "
                                          "equal-width guess falls inside the window the host proved for the edges "
                                          "takes its bin without reading two edges (where the points outnumber "
                                          "the edges 256 to 1): 1 yes, 0 no, -1 by the device rule in "
                                          "binstat_priv.cu (yes where the memory feeds an SM at least 16 bytes a "
                                          "clock)"},
    [GS_ENV_HISTDD_RING] = {.name = "GPUSYNC_HISTDD_RING", .type = "flag", .fallback = "1", .lo = 0, .hi = 1,
                            .meaning = "tuning: 0 keeps unweighted histogram2d's 16-bit shared count from "
                                       "copying its coordinates ahead into a cp.async ring (one group ahead "
                                       "in registers instead)"},
    [GS_ENV_CPU_SIMD] = {.name = "GPUSYNC_CPU_SIMD", .type = "choice", .fallback = "auto",
                         .choices = "auto|avx512|avx2|none",
                         .meaning = "tests and benchmarks: the widest instruction set the CPU engine's run-time "
                                    "picked kernels may use (auto: what the CPU has; a wider one than the CPU "
                                    "has is the CPU's)"},
    [GS_ENV_HIST_BYTES_STREAM] = {.name = "GPUSYNC_HIST_BYTES_STREAM", .type = "int", .fallback = "-1", .lo = -1,
                                  .hi = 1,
                                  .meaning = "tuning: the byte kernel's loads (hist_smem.cu) -- -1: evict-first "
                                             "(streaming) where the input is larger than the L2, plain where it "
                                             "fits (a reused input stays there); 0: plain; 1: evict-first"},
    [GS_ENV_CPU_TASKS] = {.name = "GPUSYNC_CPU_TASKS", .type = "int", .fallback = "", .lo = 1, .hi = 64,
                          .meaning = "tuning: slices a thread of the CPU engine's sum / dot (default "
                                     "GS_CPU_REDUCE_TASKS; more: threads that finish early take the slices of "
                                     "one that started late or was descheduled)"},
};

const gs_env_info *gs_env_table(void) { return table; }

typedef struct {
    char raw[128]; /* the text last parsed ("" = unset) */
    int parsed;
    int valid;
    double value;
} env_cache;

static env_cache cache[GS_ENV_COUNT];
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static char pending[4][320];
static int npending;

static void warn_locked(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void warn_locked(const char *fmt, ...)
{
    if (npending == 4)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pending[npending], sizeof pending[0], fmt, ap);
    va_end(ap);
    __atomic_store_n(&npending, npending + 1, __ATOMIC_RELEASE);
}

int gs_env_take_warning(char *buf, size_t len)
{
    if (__atomic_load_n(&npending, __ATOMIC_ACQUIRE) == 0) /* every call asks: no lock when none */
        return 0;
    pthread_mutex_lock(&env_lock);
    int got = npending > 0;
    if (got) {
        snprintf(buf, len, "%s", pending[0]);
        memmove(pending[0], pending[1], sizeof pending[0] * (size_t)(npending - 1));
        __atomic_store_n(&npending, npending - 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&env_lock);
    return got;
}

/* `choice` variables: index in the '|'-list, -1 if absent. */
static int choice_index(const char *choices, const char *v)
{
    int i = 0;
    for (const char *p = choices;; i++) {
        const char *bar = strchr(p, '|');
        const size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (strlen(v) == n && strncmp(p, v, n) == 0)
            return i;
        if (!bar)
            return -1;
        p = bar + 1;
    }
}

/* Parse entry v's current text into its cache (under env_lock). */
static const env_cache *lookup_locked(gs_env_var v)
{
    const gs_env_info *e = &table[v];
    env_cache *c = &cache[v];
    const char *s = getenv(e->name);
    if (!s)
        s = "";
    if (c->parsed && strncmp(c->raw, s, sizeof c->raw) == 0)
        return c;
    snprintf(c->raw, sizeof c->raw, "%s", s);
    c->parsed = 1;
    c->valid = 0;
    /* trim blanks */
    char t[128];
    while (*s == ' ' || *s == '\t')
        s++;
    snprintf(t, sizeof t, "%s", s);
    for (size_t n = strlen(t); n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\n'); n--)
        t[n - 1] = 0;
    if (!t[0])
        return c;
    if (strcmp(e->type, "choice") == 0) {
        for (char *p = t; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        const int k = choice_index(e->choices, t);
        if (k < 0)
            warn_locked("%s=%s is not one of %s: ignored", e->name, c->raw, e->choices);
        c->valid = k >= 0;
        c->value = k;
        return c;
    }
    char *end;
    errno = 0;
    const double x = strtod(t, &end);
    const int is_int = strcmp(e->type, "float") != 0;
    if (end == t || *end || errno == ERANGE || !isfinite(x) || (is_int && x != floor(x))) {
        warn_locked("%s=%s is not %s: using the default%s%s", e->name, c->raw, is_int ? "an integer" : "a number",
                    e->fallback[0] ? " " : "", e->fallback);
        return c;
    }
    if (v == GS_ENV_SPIN_TIMEOUT_MS && x > 0 && x < e->lo) { /* clamp: documented minimum */
        warn_locked("%s=%s is below the minimum of %g ms (the time-out counts wall-clock time without progress, "
                    "and a loaded machine can stall a waiter that long): using %g ms",
                    e->name, c->raw, e->lo, e->lo);
        c->valid = 1;
        c->value = e->lo;
        return c;
    }
    if (x < e->lo || x > e->hi) {
        warn_locked("%s=%s is outside [%g, %g]: using the default%s%s", e->name, c->raw, e->lo, e->hi,
                    e->fallback[0] ? " " : "", e->fallback);
        return c;
    }
    c->valid = 1;
    c->value = x;
    return c;
}

/* Per-thread copies: a lookup whose text has not changed takes no lock (the
 * cost of the getenv it replaces: hot loops such as the CPU counter demo
 * read the spin time-out per lock). */
static _Thread_local env_cache mine[GS_ENV_COUNT];

/* The environment as this thread last scanned it.  getenv compares every
 * entry (1-3 ns each; a container's environment holds a hundred or more) and
 * the per-call fast path reads three variables, so a lookup first checks in a
 * few loads that no setenv / unsetenv ran since (os.environ's writes call
 * them): setenv of a name stores a new string in its slot (the old one is
 * never freed, so the pointer differs) or appends one (the count grows and
 * the last entry changes); unsetenv moves the entries after it down (the
 * count shrinks).  A replaced or cleared environ changes its address. */
extern char **environ;
static _Thread_local struct {
    char **base;                   /* environ when scanned (NULL: never) */
    size_t n;                      /* its entries */
    char *last;                    /* environ[n - 1] */
    unsigned gen;                  /* bumped at each scan; 0: none yet */
    int ours;                      /* entries of the table's names */
    size_t at[GS_ENV_COUNT];       /* their slots */
    const char *ptr[GS_ENV_COUNT]; /* and strings */
} seen;
static _Thread_local unsigned mine_gen[GS_ENV_COUNT]; /* the scan mine[v] was checked against */

static int seen_fresh(void)
{
    char **e = environ;
    if (!e || e != seen.base || (seen.n && e[seen.n - 1] != seen.last) || e[seen.n])
        return 0; /* same array: it held n + 1 slots, so e[n] is inside it */
    for (int i = 0; i < seen.ours; i++)
        if (e[seen.at[i]] != seen.ptr[i])
            return 0;
    return 1;
}

static void seen_scan(void)
{
    char **e = environ;
    size_t n = 0;
    seen.ours = 0;
    for (; e && e[n]; n++) {
        if (strncmp(e[n], "GPUSYNC_", 8) != 0)
            continue;
        for (int v = 0; v < GS_ENV_COUNT && seen.ours < GS_ENV_COUNT; v++) {
            const size_t len = strlen(table[v].name);
            if (strncmp(e[n], table[v].name, len) == 0 && e[n][len] == '=') {
                seen.at[seen.ours] = n;
                seen.ptr[seen.ours++] = e[n];
                break;
            }
        }
    }
    seen.base = e;
    seen.n = n;
    seen.last = n ? e[n - 1] : NULL;
    if (++seen.gen == 0)
        seen.gen = 1;
}

static const env_cache *lookup(gs_env_var v)
{
    env_cache *m = &mine[v];
    if (!seen_fresh())
        seen_scan();
    else if (m->parsed && mine_gen[v] == seen.gen)
        return m; /* the environment is as this thread last read it */
    const char *s = getenv(table[v].name);
    if (!(m->parsed && strncmp(m->raw, s ? s : "", sizeof m->raw) == 0)) {
        pthread_mutex_lock(&env_lock);
        *m = *lookup_locked(v);
        pthread_mutex_unlock(&env_lock);
    }
    mine_gen[v] = seen.gen;
    return m;
}

double gs_env_number(gs_env_var v, double dflt, int *set)
{
    const env_cache *c = lookup(v);
    const int ok = c->valid;
    const double x = c->value;
    if (set)
        *set = ok;
    return ok ? x : dflt;
}

int gs_env_choice(gs_env_var v)
{
    const env_cache *c = lookup(v);
    return c->valid ? (int)c->value : -1;
}

int64_t gs_spin_timeout_ns(void)
{
    return (int64_t)(gs_env_number(GS_ENV_SPIN_TIMEOUT_MS, 1000.0, NULL) * 1e6);
}
