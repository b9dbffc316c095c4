/*
 * gpusync/mutex.cuh -- a spin-lock mutex for CUDA kernels, with the fences
 * that make it correct and a time-out that makes it safe.
 *
 *   #include <gpusync/mutex.cuh>
 *   __device__ int lock;           // 0 = free, 1 = held; zero it before use
 *   __device__ double total;
 *   ...
 *   if (gpusync::mutex_lock(&lock, &error)) {   // false after a time-out
 *       total += block_sum;                      // the protected update
 *       gpusync::mutex_unlock(&lock);
 *   }
 *
 * Taking the lock is a compare-and-swap 0 -> 1; releasing it an exchange
 * back to 0.  The fences are the point (seed 001):
 *   - after taking it, __threadfence() keeps our reads of the protected data
 *     from being satisfied before we held the lock (acquire);
 *   - before releasing it, __threadfence() makes our writes visible to every
 *     thread before the lock looks free (release).  Without it the next
 *     holder can take the lock and still read the old value of `total`:
 *     the store and the exchange go to different addresses and may become
 *     visible in either order.
 * For a lock word and data in shared memory, use the _block variants: the
 * fences then only need to order within the block.
 *
 * Every wait is bounded: a thread that has not taken the lock after
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

/* A relaxed read that is never cached in a register across iterations. */
__device__ __forceinline__ int load_relaxed(const int *p) { return *(const volatile int *)p; }

namespace detail {
/* Wait until *m looks free, then try to take it; false after the time-out. */
__device__ __forceinline__ bool spin_take(int *m, int *error, unsigned long long timeout_ns)
{
    unsigned long long start = 0;
    unsigned backoff = 32;
    for (;;) {
        if (load_relaxed(m) == 0 && atomicCAS(m, 0, 1) == 0)
            return true;
        if (error && load_relaxed(error))
            return false; /* someone else already failed: leave */
        const unsigned long long now = globaltimer_ns();
        if (start == 0)
            start = now;
        else if (now - start > timeout_ns) {
            if (error)
                atomicExch(error, 1);
            return false;
        }
        __nanosleep(backoff); /* test-and-test-and-set with back-off: less traffic at the lock */
        if (backoff < 1024)
            backoff *= 2;
    }
}
} // namespace detail

/* Take a lock word in global memory (visible grid-wide). */
__device__ __forceinline__ bool mutex_lock(int *m, int *error = nullptr,
                                           unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    if (!detail::spin_take(m, error, timeout_ns))
        return false;
    __threadfence(); /* acquire: no read of protected data moves above this */
    return true;
}

/* One attempt, no waiting. */
__device__ __forceinline__ bool mutex_try_lock(int *m)
{
    if (atomicCAS(m, 0, 1) != 0)
        return false;
    __threadfence();
    return true;
}

__device__ __forceinline__ void mutex_unlock(int *m)
{
    __threadfence(); /* release: protected writes are visible before the lock is free */
    atomicExch(m, 0);
}

/* The same for a lock word and data in shared memory (one block). */
__device__ __forceinline__ bool mutex_lock_block(int *m, int *error = nullptr,
                                                 unsigned long long timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS)
{
    if (!detail::spin_take(m, error, timeout_ns))
        return false;
    __threadfence_block();
    return true;
}

__device__ __forceinline__ void mutex_unlock_block(int *m)
{
    __threadfence_block();
    atomicExch(m, 0);
}

} // namespace gpusync
#endif /* GPUSYNC_MUTEX_CUH */
