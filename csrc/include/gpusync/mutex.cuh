/*
 * gpusync/mutex.cuh -- a spin-lock mutex for CUDA kernels, with the fences
 * that make it correct and a time-out that makes it safe.
 *
 *   #include <gpusync/mutex.cuh>
 *   __device__ int lock;           // zero it before first use (even = free, odd = held)
 *   __device__ double total;
 *   ...
 *   if (gpusync::mutex_lock(&lock, &error)) {   // false after a time-out
 *       total += block_sum;                      // the protected update
 *       gpusync::mutex_unlock(&lock);
 *   }
 *
 * Taking the lock is a compare-and-swap from an even value g to g + 1;
 * releasing it an exchange to g + 2 (the word counts hand-overs, which lets
 * waiters tell a busy lock from a stuck one).  The fences are the point
 * (seed 001):
 *   - after taking it, an acquire fence (fence.acq_rel.gpu) keeps our reads
 *     of the protected data from being satisfied before we held the lock;
 *   - before releasing it, a release fence makes our writes visible to every
 *     thread before the lock looks free.  Without it the next
 *     holder can take the lock and still read the old value of `total`:
 *     the store and the exchange go to different addresses and may become
 *     visible in either order.
 * For a lock word and data in shared memory, use the _block variants: the
 * fences then only need to order within the block.
 *
 * Every wait is bounded: a thread that sees the lock word unchanged for
 * `timeout_ns` (measured with %globaltimer) gives up, sets *error to 1 (when
 * error is not NULL) and returns false, so a lost release shows up as an
 * error instead of a hung GPU.  Threads also give up at once when *error is
 * already set by someone else, so a whole grid drains quickly.
 *
 * Independent thread scheduling (sm_70 and newer): any number of lanes of one
 * warp may wait on the lock at the same time; the scheduler lets the holder
 * run to its unlock.  Code for older GPUs must let only one lane per warp
 * contend.  No intrinsic here relies on lanes running in lock-step.
 *
 * The header is self-contained (no host headers), so it also compiles under
 * NVRTC (cupy.RawKernel) with gpusync.include_dir() on the include path.
 */
#ifndef GPUSYNC_MUTEX_CUH
#define GPUSYNC_MUTEX_CUH

#ifndef GPUSYNC_SPIN_TIMEOUT_NS
#define GPUSYNC_SPIN_TIMEOUT_NS 1000000000ull /* 1 s */
#endif

namespace gpusync {

/* Nanoseconds from the GPU's global timer (same clock on every SM). */
__device__ __forceinline__ unsigned long long globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Acquire-release fences at GPU and block scope (PTX fence.acq_rel): what
 * a lock needs, and cheaper than __threadfence()'s sequentially consistent
 * fence. */
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_acq_rel_block() { asm volatile("fence.acq_rel.cta;" ::: "memory"); }

/* A relaxed read that is never cached in a register across iterations. */
__device__ __forceinline__ int load_relaxed(const int *p) { return *(const volatile int *)p; }

/* Gaps longer than this between two looks at the clock mean the waiter
 * itself was not running (the GPU time-sliced to another context, a
 * debugger): they do not count toward a time-out, which measures time the
 * waiter watched without progress. */
#ifndef GPUSYNC_SPIN_GAP_NS
#define GPUSYNC_SPIN_GAP_NS 1000000ull /* 1 ms */
#endif

namespace detail {
/* The lock word counts hand-overs: even = free, odd = held.  Taking it is a
 * compare-and-swap g -> g + 1 (g even); releasing it an exchange to g + 2.
 * Waiters therefore see progress: the time-out fires only when the word
 * has not changed for timeout_ns -- one holder that never lets go -- and
 * not when a busy lock merely keeps passing to other threads first. */
__device__ __forceinline__ bool spin_take(int *m, int *error, unsigned long long timeout_ns)
{
    int seen = load_relaxed(m);
    for (int i = 0; i < 64; i++) { /* short critical sections: plain spinning hands over fastest */
        if (!(seen & 1) && atomicCAS(m, seen, seen + 1) == seen)
            return true;
        seen = load_relaxed(m);
    }
    unsigned long long start = globaltimer_ns(), last = start;
    unsigned backoff = 16;
    for (;;) {
        if (!(seen & 1) && atomicCAS(m, seen, seen + 1) == seen)
            return true;
        if (error && load_relaxed(error))
            return false; /* someone else already failed: leave */
        __nanosleep(backoff);
        if (backoff < 256)
            backoff *= 2;
        const int now_seen = load_relaxed(m);
        const unsigned long long now = globaltimer_ns();
        if (now - last > GPUSYNC_SPIN_GAP_NS) /* we were not running: not the holder's fault */
            start += now - last;
        last = now;
        if (now_seen != seen) { /* the lock moved: not stuck */
            seen = now_seen;
            start = now;
        } else if (now - start > timeout_ns) {
            if (error)
                atomicExch(error, 1);
            return false;
        }
    }
}

/* The holder is the only writer of an odd word: read it, hand over. */
__device__ __forceinline__ void give_back(int *m) { atomicExch(m, load_relaxed(m) + 1); }
} // namespace detail

/* Take a lock word in global memory (visible grid-wide). */
__device__ __forceinline__ bool mutex_lock(int *m, int *error = nullptr,
                                           unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    if (!detail::spin_take(m, error, timeout_ns))
        return false;
    fence_acq_rel_gpu(); /* acquire: no read of protected data moves above this */
    return true;
}

/* One attempt, no waiting. */
__device__ __forceinline__ bool mutex_try_lock(int *m)
{
    const int seen = load_relaxed(m);
    if ((seen & 1) || atomicCAS(m, seen, seen + 1) != seen)
        return false;
    fence_acq_rel_gpu();
    return true;
}

__device__ __forceinline__ void mutex_unlock(int *m)
{
    fence_acq_rel_gpu(); /* release: protected writes are visible before the lock is free */
    detail::give_back(m);
}

/* The same for a lock word and data in shared memory (one block). */
__device__ __forceinline__ bool mutex_lock_block(int *m, int *error = nullptr,
                                                 unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    if (!detail::spin_take(m, error, timeout_ns))
        return false;
    fence_acq_rel_block();
    return true;
}

__device__ __forceinline__ void mutex_unlock_block(int *m)
{
    fence_acq_rel_block();
    detail::give_back(m);
}

} // namespace gpusync
#endif /* GPUSYNC_MUTEX_CUH */
