/*
 * A kernel of your own built on gpusync's device headers: a mutex-guarded
 * (non-atomic) update and seed 000's lock-free grid barrier, every spin
 * bounded by a time-out.  Compile it with nvcc:
 *
 *   nvcc -arch=sm_90 -I "$(python -c 'import gpusync; print(gpusync.include_dir())')" -c user_kernel.cu
 *
 * or load the same source with cupy.RawKernel(src, "user_kernel",
 * options=("-I" + gpusync.include_dir(),)) -- tests/test_headers.py does both.
 * Launch at most the co-resident number of blocks (one per SM is always
 * safe), with lock, total, arrival, release, error and bad zeroed, data
 * holding 2 x gridDim.x words.
 */
#include <gpusync/barrier.cuh>
#include <gpusync/mutex.cuh>
#include <gpusync/reduce.cuh>

extern "C" __global__ void user_kernel(int *lock, double *total, unsigned *arrival, unsigned *release, int *error,
                                       unsigned *data, unsigned long long *bad, int rounds)
{
    /* 1. every block adds (its index + 1) x (the block's thread count) to a
     *    double under a spin lock: a plain read-modify-write, made safe by
     *    the lock's acquire / release fences */
    __shared__ double scratch[32];
    const double mine = gpusync::block_sum(1.0, scratch) * (blockIdx.x + 1);
    if (threadIdx.x == 0 && gpusync::mutex_lock(lock, error)) {
        volatile double *t = total;
        *t = *t + mine;
        gpusync::mutex_unlock(lock);
    }
    /* 2. rounds of lock-free grid barriers: after each, every block must see
     *    the value another block wrote before it */
    unsigned round = 0;
    for (int r = 0; r < rounds; r++) {
        unsigned *buf = data + (r & 1) * gridDim.x;
        if (threadIdx.x == 0)
            buf[blockIdx.x] = 7u * r + blockIdx.x;
        if (!gpusync::barrier_lockfree(arrival, release, round, error))
            return; /* timed out: *error is set, leave */
        if (threadIdx.x == 0) {
            const unsigned other = (blockIdx.x + 1 + r) % gridDim.x;
            if (buf[other] != 7u * r + other)
                atomicAdd(bad, 1ull);
        }
    }
}
