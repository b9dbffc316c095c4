/*
 * barrier_benchmark (CUDA backend): `rounds` grid barriers in persistent
 * kernels of up to CHUNK rounds each, each round checked.  In round r every
 * block writes a value into buffer r % 2; after the barrier the first lanes of every block read other
 * blocks' values of round r and count the stale ones.  (Two buffers: round
 * r + 1 writes the other one, and round r + 2 -- which reuses this one --
 * starts only after every block has passed barrier r + 1, i.e. finished its
 * reads of round r.)
 *
 * The read of round r is compared after barrier r + 1 (its value was
 * bound before this block arrived there, so what it checks is unchanged),
 * and the partner index is kept in 32 bits: the check's own latency (a
 * load's round trip to L2 and a 64-bit division) no longer adds to every
 * round.  GPUSYNC_BARRIER_VERIFY=0 leaves the reads out, to measure the
 * barrier alone.
 *
 * The grid is refused (GS_ERR_NO_COOPERATIVE, a ValueError naming the
 * maximum) when it cannot be co-resident; `relaunch` measures the same rounds
 * as one kernel launch each, in a stream and replayed from a CUDA graph.
 * `cluster` (sm_90+) launches with a cluster dimension (cudaLaunchKernelEx)
 * of the largest power of two up to 16 that divides the grid and fits
 * (cudaOccupancyMaxActiveClusters; GPUSYNC_BARRIER_CLUSTER forces one); on
 * older GPUs it runs `flat` and says so in the note.  GPUSYNC_BARRIER_POLL
 * picks flat's and cluster's poll loop (barrier.cuh, detail::flat_poll).
 */
#include "runtime.cuh"
#include "gpusync/barrier.cuh"

#include <cooperative_groups.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

namespace cg = cooperative_groups;

namespace {

struct bench_args {
    unsigned *data; /* 2 x blocks */
    gpusync::grid_barrier_words *w;
    unsigned *arrival, *release, *groups;
    int *error;
    unsigned long long *stale;
    long long first, rounds; /* this launch's rounds: first .. first + rounds - 1 (see CHUNK) */
    int skip_block; /* test hook: this block (cluster: its cluster) never arrives (-1: none) */
    int csize;      /* cluster: blocks per cluster */
    int verify;     /* 0: no reads of the other blocks' values (GPUSYNC_BARRIER_VERIFY=0: the bare barrier's cost) */
    unsigned long long timeout_ns;
};

#define CHECKS 4 /* lanes per block that check another block's value */

/* Interrupts: the host launches the rounds in chunks (each launch goes on from the rounds before it: the
 * counters are monotone, and every block starts from the state `first` rounds leave) and looks for Ctrl-C
 * between them.  The chunks are sized by time: the first runs FIRST_CHUNK rounds, each later one the rounds
 * that CHUNK_MS take at the mean time a round of the chunks before it took (at least 1, at most CHUNK), so
 * that a wait is about CHUNK_MS whatever a round costs -- 1 us at 132 blocks or tens of us with thousands of
 * blocks, where a fixed 2^16 rounds ran for seconds.  The kernel itself reads no cancel word:
 * the check every 1024 rounds it used to make (block 0 copying the host's cancel word into a word every block
 * read after the barrier) cost 0.08 us a round at 132 blocks and 0.13 at 1056 on the H200, more than the
 * arithmetic explains, and as much to every strategy (r256, benchmarks/probes/barrier_tree.cu's replica rows). */
#define CHUNK (1LL << 16)
#define FIRST_CHUNK (1LL << 12)
#define CHUNK_MS 100.0

__device__ __forceinline__ unsigned value_of(long long round, unsigned block)
{
    return (unsigned)round * 2654435761u + block * 40503u + 1u;
}

template <int KIND, int POLL> __global__ void barrier_kernel(bench_args a)
{
    __shared__ int fail; /* cluster: the leader's time-out verdict (barrier.cuh) */
    const unsigned nb = gridDim.x, b = blockIdx.x;
    if (a.skip_block >= 0 && (KIND == GS_STRATEGY_CLUSTER ? b / (unsigned)a.csize == (unsigned)a.skip_block / a.csize
                                                          : (int)b == a.skip_block))
        return;
    if (threadIdx.x == 0)
        fail = 0; /* ordered before any remote write by the first cluster barrier */
    /* each strategy's per-block state after `first` rounds (lock, flat: goal grows by the blocks a round;
     * cluster: by the clusters; lockfree, sense: the round number) */
    unsigned goal = (unsigned)a.first * nb, round_no = (unsigned)a.first;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (KIND == GS_STRATEGY_CLUSTER)
        goal = (unsigned)a.first * gpusync::detail::grid_nclusters();
#endif
    unsigned long long stale = 0;
    unsigned other = (unsigned)((b + 1 + threadIdx.x) % nb); /* the block this lane checks, round 0 */
    unsigned seen = 0, want = 0;                             /* the previous round's read, compared late */
    bool pending = false;
    for (long long r = a.first; r < a.first + a.rounds; r++) {
        unsigned *buf = a.data + (r & 1) * nb;
        if (threadIdx.x == 0)
            buf[b] = value_of(r, b);
        bool ok = true;
        if (KIND == GS_STRATEGY_LOCK)
            ok = gpusync::barrier_lock(&a.w->count, goal, a.error, a.timeout_ns);
        else if (KIND == GS_STRATEGY_LOCKFREE)
            ok = gpusync::barrier_lockfree(a.arrival, a.release, round_no, a.error, a.timeout_ns);
        else if (KIND == GS_STRATEGY_SENSE)
            ok = gpusync::barrier_sense(a.w, a.groups, round_no, a.error, a.timeout_ns);
        else if (KIND == GS_STRATEGY_FLAT)
            ok = gpusync::barrier_flat<POLL>(&a.w->count, goal, a.error, a.timeout_ns);
        else if (KIND == GS_STRATEGY_CLUSTER) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
            __trap(); /* clusters need sm_90: the host runs flat there */
#else
            ok = gpusync::barrier_cluster<POLL>(&a.w->count, goal, &fail, a.error, a.timeout_ns);
#endif
        } else
            cg::this_grid().sync();
        if (!ok)
            return;
        if (a.verify && threadIdx.x < CHECKS) { /* plain loads: the barrier's acquire must make them current */
            stale += pending && seen != want;   /* round r - 1's read: bound before this block arrived at r */
            seen = buf[other];
            want = value_of(r, other);
            pending = true;
            other = other + 1 == nb ? 0 : other + 1;
        }
    }
    stale += pending && seen != want;
    if (stale)
        atomicAdd(a.stale, stale);
}

/* relaunch: one launch per round; the kernel boundary is the barrier. */
__global__ void relaunch_kernel(bench_args a, long long r)
{
    const unsigned nb = gridDim.x, b = blockIdx.x;
    if (threadIdx.x == 0)
        a.data[(r & 1) * nb + b] = value_of(r, b);
    if (r > 0 && threadIdx.x < CHECKS) { /* the previous round, written by the previous launch */
        const unsigned other = (unsigned)((b + 1 + threadIdx.x + (unsigned long long)r) % nb);
        if (a.data[((r - 1) & 1) * nb + other] != value_of(r - 1, other))
            atomicAdd(a.stale, 1ull);
    }
}

template <int KIND> const void *by_poll(int poll)
{
    switch (poll) {
    case 1: return (const void *)barrier_kernel<KIND, 1>;
    case 2: return (const void *)barrier_kernel<KIND, 2>;
    case 3: return (const void *)barrier_kernel<KIND, 3>;
    case 4: return (const void *)barrier_kernel<KIND, 4>;
    default: return (const void *)barrier_kernel<KIND, 0>;
    }
}

const void *kernel_for(gs_strategy s, int poll)
{
    switch (s) {
    case GS_STRATEGY_LOCK: return (const void *)barrier_kernel<GS_STRATEGY_LOCK, 0>;
    case GS_STRATEGY_LOCKFREE: return (const void *)barrier_kernel<GS_STRATEGY_LOCKFREE, 0>;
    case GS_STRATEGY_SENSE: return (const void *)barrier_kernel<GS_STRATEGY_SENSE, 0>;
    case GS_STRATEGY_FLAT: return by_poll<GS_STRATEGY_FLAT>(poll);
    case GS_STRATEGY_CLUSTER: return by_poll<GS_STRATEGY_CLUSTER>(poll);
    case GS_STRATEGY_COOPERATIVE: return (const void *)barrier_kernel<GS_STRATEGY_COOPERATIVE, 0>;
    default: return (const void *)relaunch_kernel;
    }
}

/* cluster: the co-resident maximum over the cluster sizes (*maxb) and the
 * cluster size for `blocks` (*csize; 0: none fits): the largest power of two
 * up to GS_BARRIER_CLUSTER_MAX that divides blocks with blocks / size
 * clusters co-resident -- or exactly `forced` (GPUSYNC_BARRIER_CLUSTER). */
gs_status cluster_shape(const void *k, int threads, int64_t blocks, int forced, cudaStream_t sm, int *csize,
                        int64_t *maxb)
{
    *csize = 0;
    *maxb = 0;
    GS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int cs = forced ? forced : GS_BARRIER_CLUSTER_MAX; cs >= 1; cs = forced ? 0 : cs / 2) {
        gs_cluster_config cc((unsigned)cs, (unsigned)threads, 0, sm);
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, k, &cc.cfg) != cudaSuccess) {
            (void)cudaGetLastError(); /* a size this device cannot launch: it fits nothing */
            n = 0;
        }
        const int64_t cap = (int64_t)n * cs;
        if (cap > *maxb)
            *maxb = cap;
        if (!*csize && blocks % cs == 0 && blocks <= cap)
            *csize = cs;
    }
    return GS_OK;
}

/* Each word the blocks share on its own 128-byte line, and the blocks' values from a line of their own.  In the
 * probe, `error` (read by every poller every 16 polls) on the line blocks 0..25 wrote their values to cost flat
 * 1.157 us a barrier at 132 blocks against 1.02-1.11 on a line of its own (H200, r254,
 * benchmarks/probes/barrier_tree.cu's placement rows); in this benchmark the layout alone measured within noise
 * (r255: 1.237 -> 1.230 us), the cancel check (CHUNK's comment) was the cost. */
struct ws_t {
    gpusync::grid_barrier_words w;
    alignas(128) int error;
    alignas(128) unsigned long long stale;
    alignas(128) char data[1]; /* (the values: 2 x blocks words from here) */
};

} // namespace

extern "C" gs_status gs_cuda_barrier_benchmark(gs_strategy s, int64_t blocks, int threads, int64_t rounds,
                                               int skip_block, gs_barrier_result *res)
{
    if (s != GS_STRATEGY_LOCK && s != GS_STRATEGY_LOCKFREE && s != GS_STRATEGY_SENSE && s != GS_STRATEGY_FLAT &&
        s != GS_STRATEGY_CLUSTER && s != GS_STRATEGY_COOPERATIVE && s != GS_STRATEGY_RELAUNCH &&
        s != GS_STRATEGY_AUTO)
        return gs_fail(GS_ERR_INVALID_ARGUMENT,
                       "barrier strategies are 'lock', 'lockfree', 'sense', 'flat', 'cluster', 'cooperative' and "
                       "'relaunch'; got '%s'",
                       gs_strategy_name(s));
    if (rounds < 1 || threads < 32 || threads > 1024 || threads % 32)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "rounds must be >= 1 and threads a multiple of 32 up to 1024");
    gs_cuda_call call(GS_HOST, NULL);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const int ord = call.ordinal;
    const gs_device_info *dev = call.dev;
    if (blocks <= 0)
        blocks = dev->multiprocessors;
    memset(res, 0, sizeof *res);
    int64_t maxb = 0;
    int csize = 1;
    /* More than one block per SM: more pollers than SMs share the counter's line with the arrivals, and the
     * returning arrival (3: the last arriver skips the poll) measured 0.98x grid.sync at 1056 blocks on the
     * H200 against 1.39x for 0; at one block per SM 0 measured 0.92x against 0.97x for 3 (r257, interleaved
     * rounds: benchmarks/probes/barrier_ab.py; benchmarks/results/barrier_H200.md, the [poll=N] rows). */
    const int poll = (int)gs_env_number(GS_ENV_BARRIER_POLL, blocks > dev->multiprocessors ? 3 : GPUSYNC_FLAT_POLL, NULL);
    const int forced = (int)gs_env_number(GS_ENV_BARRIER_CLUSTER, 0, NULL);
    if (s == GS_STRATEGY_CLUSTER && (dev->major < 9 || !dev->cluster_launch)) {
        s = GS_STRATEGY_FLAT;
        snprintf(res->note, sizeof res->note,
                 "cluster: %s has no thread-block clusters (sm_90+); ran flat", dev->name);
    }
    if (s == GS_STRATEGY_AUTO) { /* cooperative where it can run, else relaunch -- never refuse */
        st = gs_cuda_resident_blocks(kernel_for(GS_STRATEGY_COOPERATIVE, 0), threads, 0, dev, &maxb);
        if (st != GS_OK)
            return st;
        s = GS_STRATEGY_COOPERATIVE;
        if (!dev->cooperative_launch || blocks > maxb) {
            s = GS_STRATEGY_RELAUNCH;
            if (!dev->cooperative_launch)
                snprintf(res->note, sizeof res->note,
                         "auto: %s cannot launch cooperative kernels; fell back to relaunch", dev->name);
            else
                snprintf(res->note, sizeof res->note,
                         "auto: %lld blocks cannot be co-resident (at most %lld); fell back to relaunch",
                         (long long)blocks, (long long)maxb);
        }
    }
    const void *k = kernel_for(s, poll);
    if (s == GS_STRATEGY_CLUSTER)
        st = cluster_shape(k, threads, blocks, forced, 0, &csize, &maxb);
    else
        st = gs_cuda_resident_blocks(k, threads, 0, dev, &maxb);
    if (st != GS_OK)
        return st;
    res->used = s;
    res->blocks = blocks;
    res->threads = threads;
    res->max_blocks = maxb;
    res->rounds = rounds;
    if (s != GS_STRATEGY_RELAUNCH && blocks > maxb)
        return gs_fail(GS_ERR_NO_COOPERATIVE,
                       "a grid barrier needs every block resident at once: at most %lld blocks of %d threads fit "
                       "on %s (%d SMs); asked for %lld",
                       (long long)maxb, threads, dev->name, dev->multiprocessors, (long long)blocks);
    if (s == GS_STRATEGY_CLUSTER && !csize)
        return gs_fail(forced ? GS_ERR_INVALID_ARGUMENT : GS_ERR_NO_COOPERATIVE,
                       "strategy 'cluster': %lld blocks of %d threads cannot run as co-resident clusters of %s%d "
                       "blocks on %s",
                       (long long)blocks, threads, forced ? "" : "up to ", forced ? forced : GS_BARRIER_CLUSTER_MAX,
                       dev->name);
    if (s == GS_STRATEGY_COOPERATIVE && !dev->cooperative_launch)
        return gs_fail(GS_ERR_NO_COOPERATIVE, "device %d (%s) cannot launch cooperative kernels", ord, dev->name);
    if (blocks > 0x7fffffff)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "too many blocks");

    const int64_t ngroups = (blocks + GPUSYNC_SENSE_GROUP - 1) / GPUSYNC_SENSE_GROUP;
    const size_t words = offsetof(ws_t, data) + (size_t)blocks * 4 * 4 + (size_t)ngroups * GPUSYNC_SENSE_STRIDE * 4;
    char *mem = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t sm = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    float ms = 0;
    ws_t h;
    bench_args a;
    GS_CUDA_GOTO(cudaMalloc((void **)&mem, words));
    GS_CUDA_GOTO(cudaEventCreate(&e0));
    GS_CUDA_GOTO(cudaEventCreate(&e1));
    GS_CUDA_GOTO(cudaStreamCreateWithFlags(&sm, cudaStreamNonBlocking));
    /* on the launches' own stream: a non-blocking stream does not wait for the legacy default stream, and a
     * cudaMemset queued there behind other work (other processes, a busy GPU) zeroed the counters and the
     * values under a running barrier -- stale reads and time-outs in a parallel test run */
    GS_CUDA_GOTO(cudaMemsetAsync(mem, 0, words, sm));
    a.w = (gpusync::grid_barrier_words *)mem;
    a.verify = gs_env_number(GS_ENV_BARRIER_VERIFY, 1, NULL) != 0;
    a.error = &((ws_t *)mem)->error;
    a.stale = &((ws_t *)mem)->stale;
    a.data = (unsigned *)(mem + offsetof(ws_t, data));
    a.arrival = a.data + 2 * blocks;
    a.release = a.arrival + blocks;
    a.groups = a.release + blocks;
    a.first = 0;
    a.rounds = rounds;
    a.skip_block = skip_block;
    a.csize = csize;
    res->cluster = s == GS_STRATEGY_CLUSTER ? csize : 0;
    a.timeout_ns = (unsigned long long)gs_spin_timeout_ns();

    if (s == GS_STRATEGY_RELAUNCH) {
        GS_CUDA_GOTO(cudaEventRecord(e0, sm));
        for (long long r = 0; r < rounds; r++) {
            relaunch_kernel<<<(unsigned)blocks, threads, 0, sm>>>(a, r);
            res->launches++;
            if ((r & 1023) == 0 && gs_interrupt_poll()) /* launches are host work: stop them */
                break;
        }
        GS_CUDA_GOTO(cudaGetLastError());
        GS_CUDA_GOTO(cudaEventRecord(e1, sm));
        if ((st = gs_cuda_wait_event(e1)) != GS_OK)
            goto fail;
        GS_CUDA_GOTO(cudaEventElapsedTime(&ms, e0, e1));
        res->us_per_barrier = ms * 1000.0 / rounds;
        /* the same launches replayed from a graph of up to 100 of them */
        const long long per = rounds < 100 ? rounds : 100;
        GS_CUDA_GOTO(cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal));
        for (long long r = 0; r < per; r++)
            relaunch_kernel<<<(unsigned)blocks, threads, 0, sm>>>(a, r);
        GS_CUDA_GOTO(cudaStreamEndCapture(sm, &graph));
        GS_CUDA_GOTO(cudaGraphInstantiate(&exec, graph, 0));
        GS_CUDA_GOTO(cudaGraphLaunch(exec, sm)); /* warm-up */
        const long long reps = (rounds + per - 1) / per;
        GS_CUDA_GOTO(cudaEventRecord(e0, sm));
        for (long long i = 0; i < reps && !gs_interrupt_poll(); i++)
            GS_CUDA_GOTO(cudaGraphLaunch(exec, sm));
        GS_CUDA_GOTO(cudaEventRecord(e1, sm));
        if ((st = gs_cuda_wait_event(e1)) != GS_OK)
            goto fail;
        GS_CUDA_GOTO(cudaEventElapsedTime(&ms, e0, e1));
        res->us_per_barrier_graph = ms * 1000.0 / (reps * per);
    } else {
        void *args[] = {&a};
        double total_ms = 0;
        long long done = 0, chunk = FIRST_CHUNK;
        for (; done < rounds; done += a.rounds) { /* a wait, then Ctrl-C, between chunks */
            a.first = done;
            a.rounds = rounds - done < chunk ? rounds - done : chunk;
            GS_CUDA_GOTO(cudaEventRecord(e0, sm));
            if (s == GS_STRATEGY_COOPERATIVE)
                GS_CUDA_GOTO(cudaLaunchCooperativeKernel(k, dim3((unsigned)blocks), dim3(threads), args, 0, sm));
            else if (s == GS_STRATEGY_CLUSTER) {
                gs_cluster_config cc((unsigned)csize, (unsigned)threads, 0, sm);
                cc.cfg.gridDim = dim3((unsigned)blocks);
                GS_CUDA_GOTO(cudaLaunchKernelExC(&cc.cfg, k, args));
            } else
                GS_CUDA_GOTO(cudaLaunchKernel(k, dim3((unsigned)blocks), dim3(threads), args, 0, sm));
            GS_CUDA_GOTO(cudaEventRecord(e1, sm));
            if ((st = gs_cuda_wait_event(e1)) != GS_OK) /* (an interrupt: KeyboardInterrupt) */
                goto fail;
            GS_CUDA_GOTO(cudaEventElapsedTime(&ms, e0, e1));
            total_ms += ms;
            res->launches++;
            if (done + a.rounds < rounds) { /* a block that timed out ends the run (its error word is set) */
                int err = 0;
                GS_CUDA_GOTO(cudaMemcpyAsync(&err, &((ws_t *)mem)->error, sizeof err, cudaMemcpyDeviceToHost, sm));
                if ((st = gs_cuda_wait_stream(sm)) != GS_OK)
                    goto fail;
                if (err) {
                    done += a.rounds;
                    break;
                }
                const double per = total_ms / (double)(done + a.rounds); /* ms a round so far */
                const double want = per > 0 ? CHUNK_MS / per : (double)CHUNK;
                chunk = want >= (double)CHUNK ? CHUNK : want < 1 ? 1 : (long long)want;
            }
        }
        res->us_per_barrier = done > 0 ? total_ms * 1000.0 / (double)done : 0; /* the rounds that ran */
    }
    GS_CUDA_GOTO(cudaMemcpy(&h, mem, offsetof(ws_t, data), cudaMemcpyDeviceToHost)); /* (the words, not the values) */
    res->stale = (int64_t)h.stale;
    if (h.error)
        st = gs_spin_deadlock("grid barrier", s, "a block", "the others (a block never arrived)");
    if (gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0)
        fprintf(stderr, "[gpusync] barrier %s blocks=%lld threads=%d cluster=%d poll=%d rounds=%lld: %.3f us (graph "
                "%.3f us)%s%s\n",
                gs_strategy_name(s), (long long)blocks, threads, res->cluster, poll, (long long)rounds,
                res->us_per_barrier,
                res->us_per_barrier_graph, res->note[0] ? "; " : "", res->note);
fail:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (sm)
        cudaStreamDestroy(sm);
    if (mem)
        cudaFree(mem);
    return st;
}
