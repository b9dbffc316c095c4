/*
 * gpusync/barrier.cuh -- inter-block (grid-wide) barriers for CUDA kernels.
 *
 * A grid barrier is only safe when every block of the grid is resident on the
 * GPU at once: a block that waits for one that has not started yet waits
 * forever.  Launch such kernels with at most the co-resident maximum
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs) -- gpusync's own
 * launchers refuse more -- and zero the barrier's words before the launch.
 *
 * Every wait is bounded: after `timeout_ns` (%globaltimer) without the
 * barrier opening, the waiting thread sets *error and the barrier returns
 * false in every thread of its block; once *error is set, all blocks leave
 * their waits at once.  The caller should then stop (return) -- the grid
 * drains instead of hanging.
 *
 *   lock      seed 000's barrier: one thread per block adds 1 to a counter and
 *             spins until it reaches a goal that grows by gridDim.x every
 *             round (no reset between rounds), with the fences the article
 *             leaves out (release before arriving, acquire after leaving).
 *   lockfree  seed 000's arrival/release arrays, fixed: arrival[b] = round
 *             (a value, not `= 0`), block 0's threads check every block's
 *             arrival (any grid size, striding over the block), then write
 *             every release[b]; each block waits on its own release word.
 *   sense     ours: a two-level combining tree with a generation word.
 *             Blocks arrive on one of ceil(G / 8) group counters (8 blocks
 *             each, separate cache lines); the last of a group arrives at the
 *             root; the last at the root publishes the round in the
 *             generation word, which every block polls.  Arrival contention
 *             is spread over the groups instead of one address.
 *   flat      ours: lock's one monotone counter with the fences folded into
 *             the atomics -- one red.release.gpu arrival per block, one
 *             thread per block polling with ld.acquire.gpu (no nanosleep,
 *             the %globaltimer time-out checked every 16 polls).  Also in a
 *             split-phase form: barrier_flat_arrive(), work that does not
 *             read the other blocks' data, barrier_flat_wait() -- the work
 *             hides the barrier's latency.
 *   cluster   ours, sm_90+: two levels.  The hardware cluster barrier
 *             (barrier.cluster arrive.release / wait.acquire, every thread of
 *             the cluster) gathers each thread-block cluster; its first block's
 *             thread 0 then does flat's arrival and poll on the global counter
 *             for the whole cluster (one arrival and one poller per cluster of
 *             up to 16 blocks instead of one per block), and a second cluster
 *             barrier hands the result to the cluster.  Launch with a cluster
 *             dimension (cudaLaunchKernelEx) and at most
 *             cudaOccupancyMaxActiveClusters clusters.
 * (The sixth, cooperative groups' this_grid().sync(), needs no words.)
 *
 * A kernel may also go on from the rounds of an earlier launch on the same
 * words (counters are monotone, never reset): start `goal` at rounds x
 * gridDim.x (lock, flat; cluster: x the clusters) and `round` at rounds
 * (lockfree, sense) -- what csrc/cuda/barrier.cu's benchmark does.
 *
 * Self-contained (no host headers): compiles under NVRTC too.
 */
#ifndef GPUSYNC_BARRIER_CUH
#define GPUSYNC_BARRIER_CUH

#include "mutex.cuh" /* globaltimer_ns, fences, load_relaxed */

namespace gpusync {

/* Words of the lock and sense barriers (zero before the launch).  Each on
 * its own 128-byte line. */
struct grid_barrier_words {
    unsigned count;  /* lock: arrivals so far */
    unsigned pad0[31];
    unsigned root;   /* sense: groups arrived so far */
    unsigned pad1[31];
    unsigned generation; /* sense: the last round that opened */
    unsigned pad2[31];
};

/* Group counters of the sense barrier: 32 unsigned (one line) per group. */
#define GPUSYNC_SENSE_GROUP 8
#define GPUSYNC_SENSE_STRIDE 32

namespace detail {
__device__ __forceinline__ unsigned load_volatile_u(const unsigned *p) { return *(const volatile unsigned *)p; }

/* Spin until ready() or error; false after the time-out (sets *error).
 * SLEEP_NS > 0: __nanosleep(SLEEP_NS) between two looks (fewer polls of a
 * word every block polls, against up to ~2 x SLEEP_NS later detection). */
template <unsigned SLEEP_NS = 0, class Ready>
__device__ __forceinline__ bool wait_until(Ready ready, int *error, unsigned long long timeout_ns)
{
    if (ready())
        return true;
    unsigned long long start = globaltimer_ns(), last = start;
    for (unsigned spins = 0;; spins++) {
        if (SLEEP_NS)
            __nanosleep(SLEEP_NS);
        if (ready())
            return true;
        if ((spins & 15) == 15) {
            if (load_relaxed(error))
                return false;
            const unsigned long long now = globaltimer_ns();
            if (now - last > GPUSYNC_SPIN_GAP_NS) /* we were not running (time-sliced): does not count */
                start += now - last;
            last = now;
            if (now - start > timeout_ns) {
                atomicExch(error, 1);
                return false;
            }
        }
    }
}
} // namespace detail

/* Seed 000's lock-based barrier.  `goal` is a per-block register starting
 * at 0 (every thread of the block keeps the same value). */
__device__ __forceinline__ bool barrier_lock(unsigned *count, unsigned &goal, int *error,
                                             unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    goal += gridDim.x;
    __syncthreads(); /* the whole block has finished the round */
    bool ok = true;
    if (threadIdx.x == 0) {
        fence_acq_rel_gpu(); /* release: the block's writes before our arrival */
        atomicAdd(count, 1u);
        const unsigned g = goal;
        ok = detail::wait_until([&] { return (int)(detail::load_volatile_u(count) - g) >= 0; }, error, timeout_ns);
        fence_acq_rel_gpu(); /* acquire: the others' writes before ours are read */
    }
    return !__syncthreads_or(!ok);
}

namespace detail {
__device__ __forceinline__ void red_release_add(unsigned *p, unsigned v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned atom_release_add(unsigned *p, unsigned v)
{
    unsigned old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ __forceinline__ unsigned load_acquire_u(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned load_relaxed_gpu_u(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* How the flat counter is polled (the tuning knob GPUSYNC_BARRIER_POLL of
 * barrier_benchmark; benchmarks/results/barrier_<GPU>.md has the sweep):
 *   0  ld.acquire.gpu, back to back
 *   1  ld.relaxed.gpu, back to back, one fence.acq_rel.gpu once it opened
 *   2  ld.acquire.gpu with __nanosleep(32) between polls
 *   3  the arrival returns the count (atom.release.gpu): the last arriver
 *      does not poll; the others poll as 0
 *   4  ld.acquire.gpu with __nanosleep(128) between polls */
#define GPUSYNC_FLAT_POLLS 5
#ifndef GPUSYNC_FLAT_POLL
#define GPUSYNC_FLAT_POLL 0 /* the default of barrier_flat / barrier_cluster */
#endif

template <int POLL>
__device__ __forceinline__ bool flat_poll(const unsigned *count, unsigned goal, int *error,
                                          unsigned long long timeout_ns)
{
    if (POLL == 1) {
        if (!wait_until([&] { return (int)(load_relaxed_gpu_u(count) - goal) >= 0; }, error, timeout_ns))
            return false;
        fence_acq_rel_gpu(); /* acquire: what the others released before arriving */
        return true;
    }
    if (POLL == 2)
        return wait_until<32>([&] { return (int)(load_acquire_u(count) - goal) >= 0; }, error, timeout_ns);
    if (POLL == 4)
        return wait_until<128>([&] { return (int)(load_acquire_u(count) - goal) >= 0; }, error, timeout_ns);
    return wait_until([&] { return (int)(load_acquire_u(count) - goal) >= 0; }, error, timeout_ns);
}

/* Thread 0's arrival and wait (the caller gathered its block or cluster
 * first): one release add on the counter, then polls until it reaches goal. */
template <int POLL>
__device__ __forceinline__ bool flat_arrive_and_poll(unsigned *count, unsigned goal, int *error,
                                                     unsigned long long timeout_ns)
{
    if (POLL == 3) {
        if ((int)(atom_release_add(count, 1u) + 1u - goal) >= 0) {
            fence_acq_rel_gpu(); /* the last arriver: acquire the others' releases (their adds came first) */
            return true;
        }
        return flat_poll<0>(count, goal, error, timeout_ns);
    }
    red_release_add(count, 1u);
    return flat_poll<POLL>(count, goal, error, timeout_ns);
}
} // namespace detail

/* flat, split phase.  `goal` is a per-block register starting at 0 (every
 * thread keeps the same value); `count` starts at 0 before the launch and is
 * never reset (wrap-safe comparison).  arrive: the whole block has finished
 * the writes the others will read (__syncthreads), then thread 0 adds 1 with
 * release semantics at GPU scope.  Between arrive and wait the block may do
 * anything that neither reads what the others wrote before the barrier nor
 * writes what they read after it. */
__device__ __forceinline__ void barrier_flat_arrive(unsigned *count, unsigned &goal)
{
    goal += gridDim.x;
    __syncthreads();
    if (threadIdx.x == 0)
        detail::red_release_add(count, 1u);
}

/* wait: thread 0 polls with acquire loads until every block has arrived;
 * the block's __syncthreads_or passes the acquire on and spreads a time-out. */
__device__ __forceinline__ bool barrier_flat_wait(const unsigned *count, unsigned goal, int *error,
                                                  unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    bool ok = true;
    if (threadIdx.x == 0)
        ok = detail::flat_poll<GPUSYNC_FLAT_POLL == 3 ? 0 : GPUSYNC_FLAT_POLL>(count, goal, error, timeout_ns);
    return !__syncthreads_or(!ok);
}

/* flat in one call; POLL picks the poll loop (see detail::flat_poll). */
template <int POLL = GPUSYNC_FLAT_POLL>
__device__ __forceinline__ bool barrier_flat(unsigned *count, unsigned &goal, int *error,
                                             unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    goal += gridDim.x;
    __syncthreads();
    bool ok = true;
    if (threadIdx.x == 0)
        ok = detail::flat_arrive_and_poll<POLL>(count, goal, error, timeout_ns);
    return !__syncthreads_or(!ok);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900 /* (the host pass sees the declarations) */
namespace detail {
__device__ __forceinline__ unsigned cluster_ctarank()
{
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_nctarank()
{
    unsigned r;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned grid_nclusters()
{
    unsigned x, y, z;
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(x));
    asm("mov.u32 %0, %%nclusterid.y;" : "=r"(y));
    asm("mov.u32 %0, %%nclusterid.z;" : "=r"(z));
    return x * y * z;
}
/* .aligned: every thread of the warp executes the same instruction */
__device__ __forceinline__ void cluster_arrive_release() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait_acquire() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
/* *p = v in the shared memory of cluster block `rank` (p: this block's copy) */
__device__ __forceinline__ void store_shared_cluster(int *p, unsigned rank, int v)
{
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(remote), "r"(v) : "memory");
}
} // namespace detail

/* cluster (sm_90+, launched with a cluster dimension).  `goal` is a per-block
 * register starting at 0; `count` starts at 0 and is never reset; `fail`
 * points to a __shared__ int the block set to 0 before its first call.
 *   1. __syncthreads, then every thread of the cluster: barrier.cluster.arrive
 *      (.release in warp 0, whose thread 0 now holds the block's writes; .relaxed
 *      elsewhere: a fence per block, not per warp) and wait.acquire -- the
 *      cluster's writes are ordered before what its leader does next;
 *   2. the leader (cluster rank 0, thread 0): red.release.gpu +1 on count (its
 *      release is cumulative: it covers the cluster's writes it acquired in 1),
 *      then polls count up to goal with ld.acquire.gpu;
 *   3. every thread: a second cluster barrier; the leader's arrive releases
 *      what its poll acquired, every thread's wait acquires it.
 * A time-out (the leader gave up in 2) is written into every block's `fail`
 * through distributed shared memory before step 3, so every thread of the
 * cluster returns false together; nothing extra runs when it opens. */
template <int POLL = GPUSYNC_FLAT_POLL>
__device__ __forceinline__ bool barrier_cluster(unsigned *count, unsigned &goal, int *fail, int *error,
                                                unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    goal += detail::grid_nclusters();
    /* the block's writes are thread 0's to release (bar.sync orders them
     * before its arrive): one fence per block, not one per warp */
    __syncthreads();
    if (threadIdx.x < 32)
        detail::cluster_arrive_release();
    else
        detail::cluster_arrive_relaxed();
    detail::cluster_wait_acquire();
    const bool leader_warp = detail::cluster_ctarank() == 0 && threadIdx.x < 32;
    if (leader_warp) {
        if (threadIdx.x == 0 && !detail::flat_arrive_and_poll<POLL>(count, goal, error, timeout_ns)) {
            const unsigned n = detail::cluster_nctarank();
            for (unsigned r = 0; r < n; r++)
                detail::store_shared_cluster(fail, r, 1);
        }
        __syncwarp();
        detail::cluster_arrive_release(); /* the leader's acquire, passed on */
    } else {
        detail::cluster_arrive_relaxed(); /* nothing new to release (step 1 did) */
    }
    detail::cluster_wait_acquire();
    return *(volatile int *)fail == 0;
}
#endif /* __CUDA_ARCH__ >= 900 */

/* Seed 000's lock-free barrier.  arrival and release hold gridDim.x words;
 * `round` is a per-block register starting at 0. */
__device__ __forceinline__ bool barrier_lockfree(unsigned *arrival, unsigned *release, unsigned &round, int *error,
                                                 unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    const unsigned r = ++round;
    __syncthreads();
    if (threadIdx.x == 0) {
        fence_acq_rel_gpu();
        *(volatile unsigned *)&arrival[blockIdx.x] = r;
    }
    bool ok = true;
    if (blockIdx.x == 0) { /* the checker: its threads watch every block's arrival */
        for (unsigned i = threadIdx.x; i < gridDim.x && ok; i += blockDim.x)
            ok = detail::wait_until([&] { return detail::load_volatile_u(&arrival[i]) == r; }, error, timeout_ns);
        ok = !__syncthreads_or(!ok);
        if (ok) {
            fence_acq_rel_gpu();
            for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x)
                *(volatile unsigned *)&release[i] = r;
        }
    }
    if (threadIdx.x == 0 && ok) {
        ok = detail::wait_until([&] { return detail::load_volatile_u(&release[blockIdx.x]) == r; }, error,
                                timeout_ns);
        fence_acq_rel_gpu();
    }
    return !__syncthreads_or(!ok);
}

/* Ours: hierarchical arrival, one generation word.  groups holds
 * ceil(gridDim.x / GPUSYNC_SENSE_GROUP) * GPUSYNC_SENSE_STRIDE words;
 * `round` is a per-block register starting at 0. */
__device__ __forceinline__ bool barrier_sense(grid_barrier_words *w, unsigned *groups, unsigned &round, int *error,
                                              unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    const unsigned r = ++round;
    __syncthreads();
    bool ok = true;
    if (threadIdx.x == 0) {
        const unsigned g = blockIdx.x / GPUSYNC_SENSE_GROUP, ngroups = (gridDim.x + GPUSYNC_SENSE_GROUP - 1) /
                                                                       GPUSYNC_SENSE_GROUP;
        const unsigned gsize = min((unsigned)GPUSYNC_SENSE_GROUP, gridDim.x - g * GPUSYNC_SENSE_GROUP);
        fence_acq_rel_gpu(); /* release */
        const unsigned old = atomicAdd(&groups[g * GPUSYNC_SENSE_STRIDE], 1u);
        if (old + 1 == r * gsize) { /* last of the group this round */
            const unsigned o2 = atomicAdd(&w->root, 1u);
            if (o2 + 1 == r * ngroups) { /* last of all: open the round */
                fence_acq_rel_gpu();
                atomicExch(&w->generation, r);
            }
        }
        ok = detail::wait_until([&] { return (int)(detail::load_volatile_u(&w->generation) - r) >= 0; }, error,
                                timeout_ns);
        fence_acq_rel_gpu(); /* acquire */
    }
    return !__syncthreads_or(!ok);
}

} // namespace gpusync
#endif /* GPUSYNC_BARRIER_CUH */
