/*
 * gpusync.h -- the plain C API that both backends implement.
 *
 * Only C types cross this seam: 64-bit sizes, enums, a stream as void*.
 * The CUDA backend (csrc/cuda/) and the CPU backend (csrc/cpu/) each export a
 * gs_backend_ops table; the Python binding (csrc/python/) picks one per call.
 * A build without CUDA links csrc/nocuda/cuda_stub.c, whose table answers
 * GS_ERR_NO_CUDA to everything.
 *
 * Every call returns a gs_status.  On failure a message for this thread is
 * kept and returned by gs_last_error() until the next failure.
 */
#ifndef GPUSYNC_H
#define GPUSYNC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gs_status {
    GS_OK = 0,
    GS_ERR_INVALID_ARGUMENT = 1, /* a bad value: ValueError */
    GS_ERR_TYPE = 2,             /* a bad kind of argument (dtype): TypeError */
    GS_ERR_NO_MEMORY = 3,        /* host or device allocation failed: MemoryError */
    GS_ERR_NO_CUDA = 4,          /* built without CUDA, or no driver / device */
    GS_ERR_UNSUPPORTED_DEVICE = 5, /* the strategy needs a newer GPU (e.g. clusters: sm_90) */
    GS_ERR_OVERFLOW = 6,         /* a count or size would overflow its type */
    GS_ERR_DEADLOCK = 7,         /* a bounded spin loop timed out */
    GS_ERR_NO_COOPERATIVE = 8,   /* cooperative launch unavailable or grid not co-resident */
    GS_ERR_CUDA = 9,             /* any other CUDA runtime error; message has its text */
    GS_ERR_INTERRUPTED = 10      /* stopped by an interrupt (SIGINT): KeyboardInterrupt */
} gs_status;

typedef enum gs_dtype {
    GS_BOOL = 0,
    GS_INT8,
    GS_UINT8,
    GS_INT16,
    GS_UINT16,
    GS_INT32,
    GS_UINT32,
    GS_INT64,
    GS_UINT64,
    GS_FLOAT16,
    GS_FLOAT32,
    GS_FLOAT64,
    GS_DTYPE_COUNT
} gs_dtype;

/* Where an array lives: GS_HOST, or a CUDA device ordinal >= 0. */
#define GS_HOST (-1)

/* A 1-D strided view.  stride is in elements and may be negative or zero
 * only when length <= 1.  data must be aligned to the element size. */
typedef struct gs_array {
    void *data;
    int64_t length;
    int64_t stride;
    gs_dtype dtype;
    int device;
} gs_array;

typedef enum gs_strategy {
    GS_STRATEGY_AUTO = 0,
    GS_STRATEGY_GLOBAL,  /* one global atomic per element (seed 001 ex 4.3) */
    GS_STRATEGY_SHARED,  /* per-block privatized histogram in shared memory (ex 4.4) */
    GS_STRATEGY_WARP,    /* warp-aggregated updates via __match_any_sync */
    GS_STRATEGY_CLUSTER, /* histogram spread over a thread-block cluster's DSMEM (sm_90+) */
    /* reductions (sum, dot): how the blocks' results are combined */
    GS_STRATEGY_ATOMIC,      /* each block atomically adds its result */
    GS_STRATEGY_MUTEX,       /* each block adds its result under a spin lock (seed 001 ex 4.6) */
    GS_STRATEGY_TWO_PASS,    /* partials to global memory, a second kernel finishes */
    GS_STRATEGY_THREADFENCE, /* partials, __threadfence, atomic ticket: the last block finishes */
    GS_STRATEGY_GRID,        /* one launch, finished after a grid barrier */
    /* scans (cumsum) */
    GS_STRATEGY_LOOKBACK, /* single pass, decoupled look-back */
    GS_STRATEGY_BARRIER,  /* one persistent kernel with grid barriers */
    GS_STRATEGY_RELAUNCH, /* kernel boundaries as the barrier */
    /* grid barriers (barrier_benchmark) */
    GS_STRATEGY_LOCK,        /* seed 000's counter barrier */
    GS_STRATEGY_LOCKFREE,    /* seed 000's arrival/release arrays */
    GS_STRATEGY_COOPERATIVE, /* cooperative groups grid.sync() */
    GS_STRATEGY_SENSE,       /* ours: hierarchical sense-reversing */
    GS_STRATEGY_FLAT,        /* ours: one monotone counter, red.release arrivals, ld.acquire polls */
    /* binned statistics */
    GS_STRATEGY_PRIVATIZED, /* lock-free per-block shared-memory partials, merged with global atomics */
    GS_STRATEGY_COUNT
} gs_strategy;

/* How a value becomes a bin index. */
typedef enum gs_bins_kind {
    /* bin = x - offset for offset <= x < offset + nbins; when closed_top,
     * x == offset + nbins also lands in the last bin (NumPy's closed last
     * bin for integer data on unit-width integer edges).  Integer inputs. */
    GS_BINS_DIRECT = 0,
    /* 8-bit inputs: lut[raw byte] is the bin, or -1 to drop the value. */
    GS_BINS_LUT = 1,
    /* Equal-width bins whose edges obey a formula that reproduces NumPy's
     * np.linspace edges bit for bit (the caller verified it):
     *   e(k) = cast_edge(arith(start + k * step)) for k < nbins, e(nbins) = stop
     * where arith is float32 arithmetic when arith_f32 else float64, and
     * cast_edge rounds to float32 when edges_f32.  A value x (converted to
     * double) is kept when e(0) <= x <= e(nbins); its bin is estimated as
     * (x - e(0)) * scale and corrected by comparing with e(k), e(k+1), as
     * NumPy does, so the result depends only on the edges. */
    GS_BINS_UNIFORM = 2,
    /* Sorted edges (nbins + 1 doubles, non-decreasing): bin k holds
     * edges[k] <= x < edges[k+1], the last bin is closed, NaN is dropped. */
    GS_BINS_EDGES = 3,
    /* 64-bit integer inputs against integer edges, compared exactly (NumPy
     * compares them in int64 / uint64): `edges` holds nbins + 1 8-byte
     * entries that are the int64 edges (int64 input) or uint64 edges (uint64
     * input), non-decreasing; the rules are GS_BINS_EDGES'. */
    GS_BINS_EDGES_INT = 4
} gs_bins_kind;

typedef struct gs_hist_bins {
    gs_bins_kind kind;
    int64_t nbins;
    /* GS_BINS_DIRECT */
    int64_t offset;
    int closed_top;
    /* GS_BINS_LUT: 256 entries, host memory */
    const int32_t *lut;
    /* GS_BINS_UNIFORM (and the edges' formula a GS_BINS_DIRECT / LUT
     * description may carry for ops->histogram's `edges`: step > 0, else 0,
     * see gs_hist_bins_have_formula).  margin: a bound, in bins, on how far the estimate
     * (x - e(0)) * scale (in float32 or float64) can be from an edge's true
     * position; an estimate farther than margin from an integer needs no
     * correction.  0.5 (or more) makes every estimate go through the edges. */
    double start, step, stop, scale, margin;
    int arith_f32, edges_f32;
    /* GS_BINS_EDGES (doubles), GS_BINS_EDGES_INT (int64/uint64 bits):
     * nbins + 1 entries, host memory */
    const double *edges;
} gs_hist_bins;

typedef struct gs_device_info {
    char name[256];
    int ordinal;
    int major, minor;
    int multiprocessors;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_multiprocessor;
    int64_t shared_memory_per_block;
    int64_t shared_memory_per_block_optin;
    int64_t shared_memory_per_multiprocessor;
    int64_t l2_cache_bytes;
    int64_t total_memory_bytes;
    int memory_clock_khz;
    int memory_bus_width_bits;
    int clock_khz;
    int cooperative_launch;
    int cluster_launch;
} gs_device_info;

/* gs.occupancy(): resource partitioning of one of gpusync's kernels. */
typedef struct gs_occupancy {
    char name[64];
    int block_size, registers;
    int64_t static_smem, dynamic_smem;
    int active_blocks_per_sm, active_warps_per_sm, max_warps_per_sm;
    double occupancy;
    /* blocks per SM that each resource alone allows */
    int limit_threads, limit_blocks, limit_registers, limit_smem;
    char limiter[32];
    int suggested_block_size, suggested_min_grid;
} gs_occupancy;

/* barrier_benchmark()'s result. */
typedef struct gs_barrier_result {
    int64_t blocks, max_blocks, rounds;
    int threads;
    int cluster;                 /* cluster: blocks per thread-block cluster; else 0 */
    double us_per_barrier;       /* persistent kernel (relaunch: launches in a stream) */
    double us_per_barrier_graph; /* relaunch: launches replayed from a CUDA graph; else 0 */
    int64_t stale;               /* checks that read another block's old value: must be 0 */
    int64_t launches;            /* kernel launches that ran the rounds (persistent kernels: the host's chunks,
                                    sized to about 0.1 s each; relaunch: one a round); CPU threads: 1 */
    gs_strategy used;            /* the strategy that ran (auto resolved) */
    char note[192];              /* why auto fell back to relaunch (cluster to flat), or "" */
} gs_barrier_result;

typedef struct gs_backend_ops {
    const char *name;

    /* Nonzero when the backend can run here (a driver and a device for CUDA);
     * otherwise a reason is left in gs_last_error(). */
    int (*available)(void);
    gs_status (*device_info)(int ordinal, gs_device_info *info);
    /* The device that owns a pointer, or GS_HOST for host or unknown memory. */
    int (*pointer_device)(const void *p);

    /* Zero `out` (nbins elements, int64 counts without weights, float64 sums
     * with weights) and accumulate the histogram of `x` into it.
     * x, weights and out live on the same device (or all on the host; the
     * CUDA backend stages host arrays through device memory).  x must not
     * overlap out.  `strategy` is resolved (auto -> a concrete one) and the
     * one used is written to *used.  Work is enqueued on `stream`; the call
     * returns without waiting when every array is on the device.
     * edges: NULL, or nbins + 1 float32 / float64 elements where out lives,
     * filled with the edges of a description that has their formula
     * (gs_hist_bins_have_formula; CUDA: by the kernel that zeroes the counts
     * or the one that stores them, no launch of its own). */
    gs_status (*histogram)(const gs_array *x, const gs_array *weights, const gs_hist_bins *bins,
                           gs_array *out, gs_array *edges, gs_strategy strategy, void *stream, gs_strategy *used);

    /* Min and max of x (NaN propagates, as in NumPy) written to out2[0], out2[1]
     * as two host elements of x's dtype.  Synchronizes with the stream. */
    gs_status (*minmax)(const gs_array *x, void *out2, void *stream);

    /* Fill out (float32 or float64, nbins + 1 elements, same device as the
     * work) with the edges of a GS_BINS_UNIFORM description.  Asynchronous. */
    gs_status (*uniform_edges)(const gs_hist_bins *bins, gs_array *out, void *stream);

    /* bincount's first count of integers x (16- or 32-bit, or int64:
     * gs_bincount_first_takes): out (1 <= nbins <=
     * GS_BINCOUNT_FIRST_BINS contiguous int64 where x is) gets the counts of x == 0 .. nbins - 1
     * (other values are not counted), *top the largest x and *bottom the
     * smallest (both -1 when x is empty), *negative whether some x < 0
     * (then both are -1).  *bottom may also be -1 (not known) where every x
     * is at least nbins: the CUDA engine finds the smallest x of 16-bit data
     * among the counted values alone.  When 0 <= *top < nbins the counts are
     * NumPy's bincount, from one read of x; otherwise a count of the values
     * *bottom .. *top (or 0 .. *top) follows.  Synchronizes. */
    gs_status (*bincount_first)(const gs_array *x, gs_array *out, int64_t *top, int64_t *bottom, int *negative,
                                void *stream);

    /* Sum of a (b == NULL) or dot product of a and b (same length, same
     * dtype), written to out (one element of out->dtype, on a's device or
     * host).  Floating inputs accumulate in float64; integer and bool inputs
     * in uint64 that wraps, so the result cast to out->dtype is NumPy's
     * (integers modulo 2^bits; bool out is "any nonzero").  With
     * `deterministic` the result is bit-identical across runs and across
     * the strategies that support it (two-pass, threadfence, grid: fixed
     * tiles, fixed order); the others are then GS_ERR_INVALID_ARGUMENT for
     * floating inputs.  Strategies that spin (mutex, grid) wait for the
     * stream to check their time-out flag; the others return at once for
     * device arrays. */
    gs_status (*reduce)(const gs_array *a, const gs_array *b, gs_array *out, gs_strategy strategy,
                        int deterministic, void *stream, gs_strategy *used);

    /* scipy.stats.binned_statistic for one statistic: x and values (float32
     * or float64, same length and device), nbins + 1 increasing edges (host
     * memory); a value x lands in bin k (0-based) when edges[k] <= x <
     * edges[k+1], or in the last bin when edges[nbins] <= x <= top.
     * result: nbins float64; binnumber: NULL or n int64 (SciPy's numbering:
     * 0 below, 1..nbins, nbins + 1 above or NaN).  nonfinite: NULL or one
     * int32 on x's device, which a strategy that bins x in one pass (CUDA's
     * "privatized") sets to bit 0 when x holds a NaN, bit 1 when it holds
     * +-inf, else 0 (SciPy's check that x is finite, without a second read);
     * other strategies leave it as it is (*used tells which ran).
     * Synchronizes. */
    gs_status (*binned_statistic)(const gs_array *x, const gs_array *values, const double *edges, int64_t nbins,
                                  double top, int statistic, gs_array *result, gs_array *binnumber,
                                  gs_array *nonfinite, gs_strategy strategy, void *stream, gs_strategy *used);

    /* np.packbits(a != 0) -- or of a > *threshold when threshold is not NULL
     * (compared as double; the caller rounds it to a's precision) -- into out
     * (ceil(n / 8) uint8), bitorder little when `little`.  Asynchronous for
     * device arrays. */
    gs_status (*packbits)(const gs_array *a, const double *threshold, int little, gs_array *out, void *stream);
    /* The number of a != 0 (or a > *threshold) into out (one int64). */
    gs_status (*count_nonzero)(const gs_array *a, const double *threshold, gs_array *out, void *stream);

    /* gpusync's kernels by "op:strategy" name (comma-separated), and one's
     * occupancy with block_size threads (0: as gpusync launches it). */
    gs_status (*kernel_names)(char *buf, size_t len);
    gs_status (*occupancy)(const char *name, int block_size, gs_occupancy *out);

    /* `rounds` grid barriers of `strategy` (lock, lockfree, sense,
     * cooperative, relaunch) in one persistent kernel of `blocks` (0: one per
     * SM) x `threads`, each round verified.  More blocks than can be
     * co-resident is GS_ERR_NO_COOPERATIVE naming the maximum; a time-out is
     * GS_ERR_DEADLOCK.  auto runs cooperative when the device can launch it
     * and the grid fits, else falls back to relaunch and says why in
     * out->note (CPU: sense).  skip_block >= 0 (a test hook) makes that block never
     * arrive.  The CPU backend runs the lock, lockfree and sense algorithms
     * on `blocks` threads.  Synchronizes. */
    gs_status (*barrier_benchmark)(gs_strategy strategy, int64_t blocks, int threads, int64_t rounds, int skip_block,
                                   gs_barrier_result *out);

    /* np.cumsum of a into out (same length and device, contiguous, dtype
     * gs_cumsum_dtype(a->dtype)).  Floating inputs accumulate in float64 and
     * every output is rounded once; integers and bool in uint64 that wraps
     * (NumPy's int64 / uint64 results).  Strategies: lookback (single pass,
     * decoupled look-back), barrier (one persistent kernel with a grid
     * barrier; on CPU threads, a spin barrier), relaunch (kernel boundaries;
     * on CPU, thread joins).  a and out must not overlap.  CPU backend: a
     * time-out is GS_ERR_DEADLOCK; returns when out is written.  CUDA
     * backend: barrier reads its time-out flag back (synchronizes with the
     * stream; a time-out is GS_ERR_DEADLOCK); lookback and relaunch return
     * once the kernels are enqueued (out is written when the stream gets
     * there) -- a look-back that times out sums the input before its tile
     * itself, so the output is always complete. */
    gs_status (*cumsum)(const gs_array *a, gs_array *out, gs_strategy strategy, void *stream, gs_strategy *used);

    /* Order `consumer` after the work enqueued so far on `producer` (both
     * streams of `device`): an event recorded on producer, waited on by
     * consumer; nothing waits on the host.  Same stream: nothing to do.  The
     * CPU backend has no streams: GS_OK. */
    gs_status (*stream_wait)(int device, void *consumer, void *producer);

    /* Give the device memory the backend keeps cached for scratch (freed
     * blocks of its memory pools) back to the driver, after waiting for the
     * work that still uses it.  CPU: nothing cached, GS_OK. */
    gs_status (*empty_cache)(void);

    /* ---- appended for issue 15 (N-D reductions and scans) ---- */
    /* Segmented reduction or scan over a strided 3-D view of a: element
     * (o, k, i), o < shape[0], k < shape[1] (the axis), i < shape[2], sits
     * at a->data + o*strides[0] + k*strides[1] + i*strides[2] elements
     * (strides may be negative or zero; a->length and a->stride are not
     * used).  op GS_AXIS_SUM: out[o*shape[2] + i] = the sum over k,
     * accumulated like `reduce` (double for floating a, wrapping uint64 for
     * integers and bool) and stored as out->dtype, which must be floating
     * when a is and integer or bool when a is not; GS_AXIS_COUNT_NONZERO:
     * the number of k with a != 0, out int64; GS_AXIS_CUMSUM: out[(o*shape[1]
     * + k)*shape[2] + i] = the inclusive prefix sum over k (rounded once per
     * element).  out is contiguous on a's device (host arrays on the CUDA
     * backend: a's view must be C-contiguous, strides {shape[1]*shape[2],
     * shape[2], 1}, so it stages as one block).  Asynchronous for device
     * arrays. */
    gs_status (*reduce_axis)(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                             gs_array *out, void *stream);

    /* numpy.histogramdd's counting: coords are ndim (1..GS_HISTDD_MAX_DIMS)
     * 1-D views of n elements, all of one dtype, on one device (host arrays
     * on the CUDA backend: contiguous, staged); edges (host memory) holds
     * dimension d's nedges[d] >= 2 non-decreasing edges after the earlier
     * dimensions' ones.  A value v (compared as double) has c = the number
     * of edges <= v, less one when v equals the last edge; it is counted
     * when 1 <= c <= nedges[d] - 1, in bin c - 1 (NaN and values outside
     * are dropped).  out (prod(nedges[d] - 1) elements, C order, contiguous,
     * on the coords' device) is zeroed and gets the counts -- int64, or
     * float64 (NumPy's result type, exact below 2^53 points) -- or with
     * weights (float64, n elements) float64 sums.  edges_out, when not
     * NULL (float64, all the edges' count, contiguous, next to out, not
     * overlapping it), gets a copy of edges: the caller's edge arrays
     * written with the counts (device arrays: by the count kernel, no
     * launch of their own, or a device copy when n is 0; host arrays: a
     * memcpy before the call returns).  Asynchronous for device arrays. */
    gs_status (*histogramdd)(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                             const gs_array *weights, gs_array *out, gs_array *edges_out, void *stream);

    /* np.unpackbits of the n uint8 of a into out (8 n uint8 of 0 / 1, same
     * device, contiguous), bit order little when `little`.  Asynchronous
     * for device arrays. */
    gs_status (*unpackbits)(const gs_array *a, int little, gs_array *out, void *stream);

    /* scipy.stats.binned_statistic_dd for one statistic in one fused pass
     * (issues 14, 15; NULL where the backend has none): coords are ndim
     * 1-D views of n elements of the values' dtype (float32 or float64),
     * all on one device; edges (host memory) holds dimension d's nedges[d]
     * increasing edges after the earlier dimensions' ones; tops[d] is the
     * largest x SciPy puts into the last bin of dimension d.  result:
     * prod(nedges[d] - 1) float64, C order, the inner bins; binnumber: NULL
     * or n int64, SciPy's flat bin numbers (one outlier bin on each side of
     * every dimension).  nonfinite: NULL or one int32 on the coordinates'
     * device (CUDA; the CPU backend leaves it untouched), set to bit 2d when
     * dimension d holds a NaN and bit 2d + 1 when it holds +-inf, else 0.
     * Asynchronous for device arrays. */
    gs_status (*binned_statistic_dd)(const gs_array *coords, int ndim, const double *edges, const int64_t *nedges,
                                     const double *tops, const gs_array *values, int statistic, gs_array *result,
                                     gs_array *binnumber, gs_array *nonfinite, void *stream);

    /* minmax of k device arrays of one dtype and device (histogramdd and
     * binned_statistic_dd read every dimension's range): out gets 2 k host
     * elements of that dtype, (min, max) of each array in turn.  One
     * synchronization with the stream (k <= 16). */
    gs_status (*minmax_many)(const gs_array *xs, int k, void *out, void *stream);
} gs_backend_ops;

#define GS_HISTDD_MAX_DIMS 32

/* reduce_axis's operations. */
enum { GS_AXIS_SUM = 0, GS_AXIS_COUNT_NONZERO = 1, GS_AXIS_CUMSUM = 2 };
/* The checks every backend's reduce_axis makes first (op, extents, out's
 * layout, length and dtype; common.c); the outputs' count in *nout. */
gs_status gs_axis_check(const gs_array *a, const int64_t shape[3], int op, const gs_array *out, int64_t *nout);

/* The counter demo's kinds (gs_backend_ops.counter). */
enum { GS_COUNTER_RACE = 0, GS_COUNTER_ATOMIC = 1, GS_COUNTER_MUTEX = 2 };

/* binned_statistic's statistics (scipy.stats.binned_statistic's names; var
 * is std squared).  Exported to Python as _core.STATISTICS (name -> code). */
enum {
    GS_STAT_COUNT = 0,
    GS_STAT_SUM,
    GS_STAT_MEAN,
    GS_STAT_STD,
    GS_STAT_VAR,
    GS_STAT_MIN,
    GS_STAT_MAX,
    GS_STAT_KINDS
};

/* How long a device or CPU spin loop may see no progress before it gives up
 * (GS_ERR_DEADLOCK): GPUSYNC_SPIN_TIMEOUT_MS (see docs/environment.md), at
 * least GS_SPIN_TIMEOUT_MIN_MS; 1000 ms by default. */
int64_t gs_spin_timeout_ns(void);
#define GS_SPIN_TIMEOUT_MIN_MS 10.0

/* ---- Environment: every GPUSYNC_* variable in one table (csrc/common/env.c),
 * each parsed and checked against its range in one place.  An invalid value
 * warns once (naming the variable) and the default is used.  Values are read
 * at use, so a changed value takes effect at the next call (benchmark sweeps
 * rely on it); the parse is redone only when the text changed. */
typedef enum gs_env_var {
    GS_ENV_BACKEND = 0,     /* string: cpu | cuda */
    GS_ENV_SPIN_TIMEOUT_MS, /* float */
    GS_ENV_NUM_THREADS,
    GS_ENV_DEBUG,
    GS_ENV_POOL_KEEP_MB,
    GS_ENV_HIST_GRID,
    GS_ENV_HIST_REPLICAS,
    GS_ENV_REDUCE_GRID,
    GS_ENV_NO_STAGING,
    GS_ENV_STAGE_THREADS,
    GS_ENV_STAGE_SPIN_US,
    GS_ENV_STAGE_UNIT_KB,
    GS_ENV_STAGE_SPLIT,
    GS_ENV_STAGE_D2H_SPLIT,
    GS_ENV_STAGE_UNITS,
    GS_ENV_STAGE_NT,
    GS_ENV_REDUCE_SMALL_BYTES,
    GS_ENV_BARRIER_VERIFY,
    GS_ENV_ENGINE,    /* choice: auto | caller | cpu | cuda | cpu+cuda (the dispatcher) */
    GS_ENV_CALIBRATE, /* choice: auto | off */
    GS_ENV_HIST_SMALL,
    GS_ENV_HIST_U8_CFG,
    GS_ENV_BITS_SIMD,
    GS_ENV_HISTDD_CLUSTER,
    GS_ENV_BARRIER_POLL,
    GS_ENV_BARRIER_CLUSTER,
    GS_ENV_HIST_REAL_CFG,
    GS_ENV_SCAN_FALLBACK,
    GS_ENV_HISTDD_COUNTER,
    GS_ENV_HISTDD_RING,
    GS_ENV_BITS_LOADS,
    GS_ENV_HISTDD_FLUSH,
    GS_ENV_SCAN_DELAY_NS,
    GS_ENV_HIST_ONE_LAUNCH,
    GS_ENV_HIST_GLOBAL_L2,
    GS_ENV_BINSTAT_WINDOW,
    GS_ENV_HIST_BYTES,
    GS_ENV_HIST_PART,
    GS_ENV_CPU_SIMD, /* choice: auto | avx512 | avx2 | none (the CPU engine's run-time kernels) */
    GS_ENV_CPU_TASKS,
    GS_ENV_HIST_BYTES_STREAM,
    GS_ENV_COUNT
} gs_env_var;

typedef struct gs_env_info {
    const char *name;    /* "GPUSYNC_..." */
    const char *type;    /* "int", "float", "flag" or "choice" */
    const char *fallback; /* the default, as text ("" = unset: the built-in choice) */
    double lo, hi;       /* valid range (int, float) */
    const char *choices; /* choice: the valid values, '|'-separated */
    const char *meaning;
} gs_env_info;

const gs_env_info *gs_env_table(void);
/* The variable's value: set and valid -> its value; else `dflt` (an invalid
 * value warns once).  *set (may be NULL) says whether a valid value was set. */
double gs_env_number(gs_env_var v, double dflt, int *set);
/* choice variables: the index of the value in `choices`, or -1 (unset or invalid). */
int gs_env_choice(gs_env_var v);
/* The next pending warning about an environment variable (cleared as it is
 * taken): 1 and the text in buf, or 0 when none.  The binding turns these
 * into Python RuntimeWarnings after each call. */
int gs_env_take_warning(char *buf, size_t len);

/* ---- Interrupts (csrc/common/interrupt.c): one flag both engines poll.
 * The binding installs a poll hook that checks for a pending signal
 * (PyErr_CheckSignals under the GIL); long waits call gs_interrupt_poll()
 * from the calling thread at least every GS_INTERRUPT_POLL_MS, which runs the
 * hook (rate-limited) and raises the process-wide flag when it fires.  Worker
 * threads (the CPU pool) and the CUDA wait loops read the flag with
 * gs_interrupt_requested() (one relaxed atomic load).  A call that stops for
 * it returns GS_ERR_INTERRUPTED after its work is drained; the binding
 * clears the flag (gs_interrupt_clear) when it raises KeyboardInterrupt. */
#define GS_INTERRUPT_POLL_MS 50
typedef int (*gs_interrupt_hook)(void);
void gs_set_interrupt_hook(gs_interrupt_hook hook);
void gs_request_interrupt(void);   /* raise the flag (async-signal-safe) */
int gs_interrupt_requested(void);  /* the flag, any thread, cheap */
int gs_interrupt_poll(void);       /* calling thread: run the hook when due; then the flag */
void gs_interrupt_clear(void);
gs_status gs_interrupted(void); /* gs_fail(GS_ERR_INTERRUPTED, ...) */

const gs_backend_ops *gs_cpu_backend(void);
/* The CPU engine's thread pool as the engine choice sees it (csrc/cpu/
 * parallel.c, parallel.h): the threads worth using for n items of
 * ns_per_item each (1: the calling thread alone), the measured hand-off of a
 * job on nthreads threads, and the most threads a job may use. */
int gs_cpu_threads_for_cost(int64_t n, double ns_per_item);
double gs_cpu_handoff_ns(int nthreads);
int gs_cpu_max_threads(void);
/* Nonzero while the pool is free and its workers still spin after the last
 * job: a job handed off now wakes no parked thread (the warm hand-off). */
int gs_cpu_pool_warm(void);
/* The CPU engine's thread count for the calling thread's following calls,
 * chosen by the Python dispatcher's cost model: 1 runs on the calling thread
 * alone (no hand-off), k > 1 on k pool threads, 0 the engine's own choice. */
void gs_cpu_request_threads(int nthreads);
/* The request for n items (capped by GPUSYNC_NUM_THREADS and n), or 0 when
 * none: the engine's thread-count choice asks this first (csrc/cpu/request.c). */
int gs_cpu_requested_threads(int64_t n);
/* The threads the calling thread's last CPU-engine job ran on (1: itself alone). */
int gs_cpu_last_threads(void);
/* The staging crew's workers for the calling thread's host <-> device copies
 * (0: the crew's size, GPUSYNC_STAGE_THREADS or one fewer than the CPUs):
 * the dispatcher's request when the CPU pool runs beside them. */
void gs_stage_request_threads(int nthreads);
int gs_stage_requested_threads(void);
const gs_backend_ops *gs_cuda_backend(void);

/* Which strategy `auto` picks: a pure function of the problem's shape and the
 * device, kept apart so that tests can check it without a GPU.  Thresholds
 * live in csrc/include/gpusync/tuning.h with the measurements behind them. */
typedef struct gs_hist_shape {
    int64_t n;            /* elements */
    int64_t nbins;
    int weighted;
    int elem_bytes;       /* input element size */
    int cc_major;         /* 0 for the CPU backend */
    int64_t smem_per_block_optin;
    int64_t smem_per_sm;
} gs_hist_shape;
gs_strategy gs_hist_auto_strategy(const gs_hist_shape *shape);

/* Whether bincount counts its values lo .. hi (lo >= 0) alone -- hi - lo + 1
 * unit bins from lo into that stretch of zeroed counts -- rather than 0 .. hi:
 * where they are at most half of 0 .. hi and hi is at least
 * GS_BINCOUNT_FIRST_BINS (identifiers far from 0; a few thousand bins save
 * nothing worth the zeroing).  Every path that would count 0 .. max asks
 * this one rule (8-bit data, and 16-bit host data under strategy auto,
 * count every value their dtype holds in one pass instead). */
int gs_bincount_min_to_max(int64_t lo, int64_t hi);

/* The integer dtypes ops->bincount_first counts: int16, uint16, int32,
 * uint32 and int64 (not uint64: a value past int64 has no int64 top; NumPy 2
 * reads it as negative).  _core.BINCOUNT_FIRST_DTYPES names them. */
int gs_bincount_first_takes(gs_dtype dt);
/* ops->bincount_first's argument checks, one copy for both engines: x of
 * those dtypes; out 1 .. GS_BINCOUNT_FIRST_BINS contiguous int64; both on
 * the host (`host`) or on one device.  GS_OK, or the failure set. */
gs_status gs_bincount_first_check(const gs_array *x, const gs_array *out, int host);

/* The checks of ops->histogram's bins and `edges`, one copy for both
 * engines: 8-bit x takes a GS_BINS_DIRECT or GS_BINS_LUT description (the
 * raw byte's bin), a GS_BINS_LUT description bins 8-bit x alone and every
 * entry is a bin (0 .. nbins - 1) or -1; `edges` (NULL passes): a
 * description with a formula (gs_hist_bins_have_formula), nbins + 1 float32 /
 * float64 elements where `out` lives. */
gs_status gs_hist_bins_check(const gs_hist_bins *bins, const gs_array *x, const gs_array *out,
                             const gs_array *edges);
/* Whether the description's start / step / stop / arith_f32 / edges_f32
 * give its edges (gs_formula_edge): every GS_BINS_UNIFORM one, and a
 * GS_BINS_DIRECT or GS_BINS_LUT one that carries them (step > 0, finite
 * start < stop) -- unit bins of integers, or byte bins, whose edges NumPy
 * made with np.linspace; their binning ignores the formula. */
int gs_hist_bins_have_formula(const gs_hist_bins *bins);
/* Fill host `edges` (checked) with the description's edges. */
void gs_hist_edges_fill_host(const gs_hist_bins *bins, gs_array *edges);

/* sum/dot: resolve auto (threadfence with warps, two-pass on CPU threads),
 * check that `s` is a reduction strategy this backend has and that it can be
 * deterministic for this input; *tiles says whether to use the fixed-tile
 * (deterministic) scheme. */
gs_status gs_reduce_resolve(gs_strategy *s, int deterministic, int is_float, int has_warps, int *tiles);

/* cumsum's result dtype (NumPy's): bool and signed integers -> int64,
 * unsigned -> uint64, floats keep theirs. */
gs_dtype gs_cumsum_dtype(gs_dtype in);
/* cumsum: resolve auto (lookback), check the strategy and out's dtype. */
gs_status gs_scan_resolve(gs_strategy *s, gs_dtype in, gs_dtype out);

const char *gs_strategy_name(gs_strategy s);
/* NumPy's names of the gs_dtype codes, of gs_bins_kind and of the GS_STAT_*
 * codes ("float32", "uniform", "mean"); NULL past the last.  The binding
 * exports them as _core.DTYPES, BINS_KINDS, STATISTICS (name -> code), and
 * the strategies as _core.STRATEGIES: the one copy Python reads. */
const char *gs_dtype_name(int code);
const char *gs_bins_kind_name(int code);
const char *gs_statistic_name(int code);
const char *gs_counter_kind_name(int code); /* _core.COUNTER_KINDS */
/* GS_STRATEGY_COUNT when the name is unknown. */
gs_strategy gs_strategy_from_name(const char *name);
size_t gs_dtype_size(gs_dtype dt);

/* The message of this thread's last failure ("" if none). */
const char *gs_last_error(void);
/* Record a failure; returns `status` so callers can `return gs_fail(...)`. */
gs_status gs_fail(gs_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* GPUSYNC_H */
