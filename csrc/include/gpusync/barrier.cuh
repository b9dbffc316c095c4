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
 * (The fifth, cooperative groups' this_grid().sync(), needs no words.)
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

/* Spin until ready() or error; false after the time-out (sets *error). */
template <class Ready>
__device__ __forceinline__ bool wait_until(Ready ready, int *error, unsigned long long timeout_ns)
{
    if (ready())
        return true;
    unsigned long long start = globaltimer_ns(), last = start;
    for (unsigned spins = 0;; spins++) {
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
__device__ __forceinline__ unsigned load_acquire_u(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
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
        ok = detail::wait_until([&] { return (int)(detail::load_acquire_u(count) - goal) >= 0; }, error, timeout_ns);
    return !__syncthreads_or(!ok);
}

__device__ __forceinline__ bool barrier_flat(unsigned *count, unsigned &goal, int *error,
                                             unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    barrier_flat_arrive(count, goal);
    return barrier_flat_wait(count, goal, error, timeout_ns);
}

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
