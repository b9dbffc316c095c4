// barrier_tree.cu -- two grid-barrier designs against cooperative groups'
// this_grid().sync() and barrier.cuh's flat, in bare and verified loops.  A
// probe behind a tuning decision (issue 14: the best gpusync barrier at
// <= 0.9x grid.sync at one block per SM and at the co-resident maximum);
// not part of the package.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icsrc/include -o /tmp/barrier_tree benchmarks/probes/barrier_tree.cu
//   /tmp/barrier_tree [rounds] [replica]   (default 20000)
//
// The designs:
//   flat<P>      barrier.cuh's flat (P: its poll mode 0 or 3), the reference.
//   pipe<K,D>    flat's one red.release.gpu arrival, then one thread keeps K
//                relaxed polls of the counter in flight, issued D clocks
//                apart (the next poll leaves while the last one travels: the
//                opening is seen up to (K-1)/K of a round trip sooner), and
//                one fence.acq_rel.gpu once it opened.
//   tree<G>      arrivals on groups of G blocks (a counter a 128-byte line),
//                the last of a group on the root counter; the last at the
//                root writes one release word a group (a line each, a lane
//                of its warp a word), and each block polls its group's word:
//                no line sees more than max(G, groups) arrivals or G pollers.
//
// Per design and grid (1, 2, 4 blocks per SM and the co-resident maximum at
// 256 threads): us per barrier, best of 3 launches of `rounds` rounds, bare
// (no store, no reads), verified (each block stores its value of the round and
// 4 lanes read another block's after the barrier; stale reads must be 0) and
// store alone; cooperative and plain launches.  Then the package's benchmark
// loop replicated with parts switched off (pkern: what its cancel check cost),
// and the counter's placement on different lines (`replica` as the second
// argument runs the replica rows alone).  Results:
// benchmarks/results/barrier_designs_H200_r254_r259.txt.
#include "probe_check.cuh"
#include "gpusync/barrier.cuh"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace cg = cooperative_groups;
using namespace gpusync;

#define LINE 32 /* unsigned words a 128-byte line */

struct args {
    unsigned *data;   /* 2 x blocks */
    unsigned *count;  /* flat, pipe */
    unsigned *groups; /* tree: a line a group */
    unsigned *root;
    unsigned *flags; /* tree: a line a group */
    int *error;
    unsigned long long *stale;
    long long rounds;
    int verify;
    unsigned G;
};

__device__ __forceinline__ unsigned value_of(long long round, unsigned block)
{
    return (unsigned)round * 2654435761u + block * 40503u + 1u;
}

#define ld_relaxed detail::load_relaxed_gpu_u /* barrier.cuh's */
__device__ __forceinline__ void st_release(unsigned *p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned atom_acq_rel_add(unsigned *p, unsigned v)
{
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ __forceinline__ void spin_clocks(unsigned d)
{
    const long long t = clock64();
    while (clock64() - t < d) {
    }
}

/* K relaxed polls in flight, D clocks apart; true once count reached goal (acquired), false on time-out. */
template <int K, int D> __device__ __forceinline__ bool pipe_poll(const unsigned *count, unsigned goal, int *error)
{
    unsigned v[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        v[k] = ld_relaxed(count);
        if (k + 1 < K && D)
            spin_clocks(D);
    }
    const unsigned long long start = globaltimer_ns();
    for (unsigned spins = 0;; spins++) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            if ((int)(v[k] - goal) >= 0) {
                fence_acq_rel_gpu();
                return true;
            }
            v[k] = ld_relaxed(count);
        }
        if ((spins & 15) == 15) {
            if (*(volatile int *)error)
                return false;
            if (globaltimer_ns() - start > 2000000000ull) {
                atomicExch(error, 1);
                return false;
            }
        }
    }
}

template <int K, int D> __device__ __forceinline__ bool barrier_pipe(unsigned *count, unsigned &goal, int *error)
{
    goal += gridDim.x;
    __syncthreads();
    bool ok = true;
    if (threadIdx.x == 0) {
        detail::red_release_add(count, 1u);
        ok = pipe_poll<K, D>(count, goal, error);
    }
    return !__syncthreads_or(!ok);
}

__device__ __forceinline__ bool barrier_tree(const args &a, unsigned &round)
{
    const unsigned r = ++round, G = a.G;
    __syncthreads();
    bool ok = true;
    if (threadIdx.x < 32) {
        const unsigned lane = threadIdx.x, g = blockIdx.x / G, ngroups = (gridDim.x + G - 1) / G;
        const unsigned gsize = min(G, gridDim.x - g * G);
        int last = 0;
        if (lane == 0) {
            const unsigned old = detail::atom_release_add(&a.groups[g * LINE], 1u);
            if (old + 1 == r * gsize) { /* the group's last: acquire the group, release it on to the root */
                fence_acq_rel_gpu();
                last = atom_acq_rel_add(a.root, 1u) + 1 == r * ngroups;
            }
        }
        last = __shfl_sync(0xffffffffu, last, 0);
        if (last) { /* the root's last (lane 0 acquired everything): open every group */
            __syncwarp();
            for (unsigned h = lane; h < ngroups; h += 32)
                st_release(&a.flags[h * LINE], r);
        } else if (lane == 0) {
            ok = detail::wait_until([&] { return (int)(detail::load_acquire_u(&a.flags[g * LINE]) - r) >= 0; },
                                    a.error, 2000000000ull);
        }
    }
    return !__syncthreads_or(!ok);
}

/* split<C>: flat over C counters (block b arrives on counter b % C, a line each, with the returning
 * atom.release); every block polls all C counters (relaxed loads issued together, one fence once all
 * reached their goals).  Each line sees 1/C of the arrivals and the pollers' loads. */
template <int C> __device__ __forceinline__ bool barrier_split(unsigned *count, unsigned &round, int *error)
{
    const unsigned r = ++round, nb = gridDim.x;
    __syncthreads();
    bool ok = true;
    if (threadIdx.x == 0) {
        const unsigned mine = blockIdx.x % C;
        const unsigned old = detail::atom_release_add(&count[mine * LINE], 1u);
        bool done[C];
#pragma unroll
        for (int c = 0; c < C; c++)
            done[c] = false;
        done[mine] = old + 1 == r * (nb / C + (mine < nb % C));
        const unsigned long long start = globaltimer_ns();
        for (unsigned spins = 0;; spins++) {
            unsigned v[C];
#pragma unroll
            for (int c = 0; c < C; c++)
                if (!done[c])
                    v[c] = ld_relaxed(&count[c * LINE]);
            bool all = true;
#pragma unroll
            for (int c = 0; c < C; c++) {
                if (!done[c])
                    done[c] = (int)(v[c] - r * (nb / C + ((unsigned)c < nb % C))) >= 0;
                all = all && done[c];
            }
            if (all)
                break;
            if ((spins & 15) == 15) {
                if (*(volatile int *)error) {
                    ok = false;
                    break;
                }
                if (globaltimer_ns() - start > 2000000000ull) {
                    atomicExch(error, 1);
                    ok = false;
                    break;
                }
            }
        }
        fence_acq_rel_gpu();
    }
    return !__syncthreads_or(!ok);
}

enum { COOP, FLAT0, FLAT3, PIPE, TREE, SPLIT2, SPLIT4 };

template <int KIND, int K = 2, int D = 0> __global__ void __launch_bounds__(256) kern(args a)
{
    const unsigned nb = gridDim.x, b = blockIdx.x;
    unsigned goal = 0, round = 0, seen = 0, want = 0;
    unsigned other = (b + 1 + threadIdx.x) % nb;
    bool pending = false;
    unsigned long long stale = 0;
    for (long long r = 0; r < a.rounds; r++) {
        unsigned *buf = a.data + (r & 1) * nb;
        if ((a.verify & 3) && threadIdx.x == 0) /* 1: store and reads, 2: the store alone */
            buf[b] = value_of(r, b);
        bool ok = true;
        if (KIND == COOP)
            cg::this_grid().sync();
        else if (KIND == FLAT0)
            ok = barrier_flat<0>(a.count, goal, a.error);
        else if (KIND == FLAT3)
            ok = barrier_flat<3>(a.count, goal, a.error);
        else if (KIND == PIPE)
            ok = barrier_pipe<K, D>(a.count, goal, a.error);
        else
            ok = KIND == SPLIT2 ? barrier_split<2>(a.count, round, a.error)
               : KIND == SPLIT4 ? barrier_split<4>(a.count, round, a.error)
                                : barrier_tree(a, round);
        if (!ok)
            return;
        if ((a.verify & 1) && threadIdx.x < 4) {
            stale += pending && seen != want;
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


/* The package's benchmark loop (csrc/cuda/barrier.cu barrier_kernel, flat), with parts switched off by MASK:
 * bit 0 the skipped-block test and the cluster's shared `fail` word, bit 1 the cancel / stop check every
 * CANCEL_EVERY rounds, bit 2 the time-out passed at run time (else the header's constant). */
struct pargs {
    unsigned *data, *count;
    int *error, *stop;
    const int *cancel;
    unsigned long long *stale;
    long long rounds;
    int skip_block, verify;
    unsigned long long timeout_ns;
};
#define CANCEL_EVERY 1024
template <int MASK> __global__ void pkern(pargs a)
{
    __shared__ int fail;
    const unsigned nb = gridDim.x, b = blockIdx.x;
    if ((MASK & 1) && a.skip_block >= 0 && (int)b == a.skip_block)
        return;
    if ((MASK & 1) && threadIdx.x == 0)
        fail = 0;
    unsigned goal = 0;
    unsigned long long stale = 0;
    unsigned other = (unsigned)((b + 1 + threadIdx.x) % nb);
    unsigned seen = 0, want = 0;
    bool pending = false;
    for (long long r = 0; r < a.rounds; r++) {
        unsigned *buf = a.data + (r & 1) * nb;
        const bool check = (MASK & 2) && (r & (CANCEL_EVERY - 1)) == 0;
        int *stop = a.stop + ((r / CANCEL_EVERY) & 1);
        if (threadIdx.x == 0) {
            buf[b] = value_of(r, b);
            if (check && b == 0)
                *(volatile int *)stop = a.cancel != NULL && *(const volatile int *)a.cancel != 0;
        }
        bool ok = barrier_flat<3>(a.count, goal, a.error, (MASK & 4) ? a.timeout_ns : GPUSYNC_SPIN_TIMEOUT_NS);
        if (!ok)
            return;
        if (check && *(volatile int *)stop)
            break;
        if (a.verify && threadIdx.x < 4) {
            stale += pending && seen != want;
            seen = buf[other];
            want = value_of(r, other);
            pending = true;
            other = other + 1 == nb ? 0 : other + 1;
        }
    }
    stale += pending && seen != want;
    if (stale)
        atomicAdd(a.stale, stale);
    if ((MASK & 1) && fail == 12345)
        a.stale[1] = 1;
}

static void replica(int sms, long long rounds)
{
    printf("\npackage replica (flat, poll 3, %d blocks, verified): us per barrier, best of 3\n", sms);
    int *cancel_h, *cancel_d;
    CK(cudaHostAlloc(&cancel_h, 4, cudaHostAllocMapped));
    *cancel_h = 0;
    CK(cudaHostGetDevicePointer(&cancel_d, cancel_h, 0));
    const void *ks[] = {(const void *)pkern<7>, (const void *)pkern<6>, (const void *)pkern<5>, (const void *)pkern<3>,
                        (const void *)pkern<0>};
    const char *names[] = {"all", "no skip/fail", "no stop check", "constant timeout", "none"};
    for (int layout = 0; layout < 2; layout++)
        for (int stream_kind = 0; stream_kind < 2; stream_kind++) {
            printf("  %s layout, %s stream:", layout ? "probe" : "package", stream_kind ? "non-blocking" : "legacy");
            for (int v = 0; v < 5; v++) {
                float best = 1e30f;
                for (int rep = 0; rep < 3; rep++) {
                    const size_t words = 128 + 2 * (size_t)sms * 4 + 4096;
                    char *mem;
                    CK(cudaMalloc(&mem, words * 4));
                    cudaStream_t sm = 0;
                    if (stream_kind)
                        CK(cudaStreamCreateWithFlags(&sm, cudaStreamNonBlocking));
                    CK(cudaMemsetAsync(mem, 0, words * 4, sm));
                    pargs a;
                    if (!layout) { /* count at 0, error 384 (own line), stale + stop 512, data 640 */
                        a.count = (unsigned *)mem;
                        a.error = (int *)(mem + 384);
                        a.stale = (unsigned long long *)(mem + 512);
                        a.stop = (int *)(mem + 528);
                        a.data = (unsigned *)(mem + 640);
                    } else { /* data first, the words far after */
                        a.data = (unsigned *)mem;
                        a.count = (unsigned *)(mem + 4 * (2 * sms + 32 * 8)) ;
                        a.count = (unsigned *)(((uintptr_t)a.count + 127) & ~(uintptr_t)127);
                        a.error = (int *)((char *)a.count + 4096);
                        a.stale = (unsigned long long *)((char *)a.count + 8192);
                        a.stop = (int *)((char *)a.count + 8192 + 64);
                    }
                    a.cancel = cancel_d;
                    a.rounds = rounds;
                    a.skip_block = -1;
                    a.verify = 1;
                    a.timeout_ns = GPUSYNC_SPIN_TIMEOUT_NS;
                    cudaEvent_t e0, e1;
                    CK(cudaEventCreate(&e0));
                    CK(cudaEventCreate(&e1));
                    void *p[] = {&a};
                    CK(cudaEventRecord(e0, sm));
                    CK(cudaLaunchKernel(ks[v], dim3(sms), dim3(256), p, 0, sm));
                    CK(cudaEventRecord(e1, sm));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    best = std::min(best, ms * 1e3f / rounds);
                    unsigned long long st[2];
                    CK(cudaMemcpy(st, a.stale, 16, cudaMemcpyDeviceToHost));
                    if (st[0])
                        printf(" STALE");
                    CK(cudaEventDestroy(e0));
                    CK(cudaEventDestroy(e1));
                    if (sm)
                        CK(cudaStreamDestroy(sm));
                    CK(cudaFree(mem));
                }
                printf(" | %s %.3f", names[v], best);
            }
            printf("\n");
            fflush(stdout);
        }
}

struct design {
    std::string name;
    const void *k;
    unsigned G;
};

int main(int argc, char **argv)
{
    const long long rounds = argc > 1 ? atoll(argv[1]) : 20000;
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    std::vector<design> ds = {
        {"coop", (const void *)kern<COOP>, 0},
        {"flat0", (const void *)kern<FLAT0>, 0},
        {"flat3", (const void *)kern<FLAT3>, 0},
        {"pipe2 d200", (const void *)kern<PIPE, 2, 200>, 0},
        {"pipe2 d400", (const void *)kern<PIPE, 2, 400>, 0},
        {"tree 16", (const void *)kern<TREE>, 16},
        {"tree 32", (const void *)kern<TREE>, 32},
        {"tree 64", (const void *)kern<TREE>, 64},
        {"split 2", (const void *)kern<SPLIT2>, 0},
        {"split 4", (const void *)kern<SPLIT4>, 0},
    };
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, (const void *)kern<COOP>, 256, 0));
    std::vector<int> grids = {sms, 2 * sms, 4 * sms, per * sms};
    const int maxb = per * sms, ngroups_max = maxb;
    unsigned *mem;
    const size_t words = 2 * (size_t)maxb + 8 * LINE + (size_t)ngroups_max * LINE * 2;
    CK(cudaMalloc(&mem, words * 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("# %s, %d SMs, co-resident max %d blocks of 256; us per barrier, best of 3 x %lld rounds\n", prop.name,
           sms, maxb, rounds);
    const char *modes[3] = {"bare", "verified", "store"};
    const bool only_replica = argc > 2;
    for (int launch = 0; launch < (only_replica ? 0 : 2); launch++) {
    printf("\n%s launch; bare: no store, no reads; verified: the round's store and 4 reads a block; store: the store alone\n",
           launch ? "plain (cudaLaunchKernel)" : "cooperative");
    printf("%-12s", "design");
    for (int nb : grids)
        for (int m = 0; m < 3; m++)
            printf(" | %5d %8s", nb, modes[m]);
    printf("\n");
    for (const design &d : ds) {
        if (launch && (d.name == "coop" || d.name.rfind("pipe", 0) == 0 || d.name.rfind("tree", 0) == 0))
            continue;
        printf("%-12s", d.name.c_str());
        for (int nb : grids) {
            for (int verify = 0; verify < 3; verify++) {
                float best = 1e30f;
                unsigned long long stale_total = 0;
                int err_total = 0;
                for (int rep = 0; rep < 3; rep++) {
                    CK(cudaMemset(mem, 0, words * 4));
                    args a;
                    a.data = mem;
                    a.count = mem + 2 * maxb + LINE; /* own line (data ends before; pad) */
                    a.root = a.count + LINE;
                    a.groups = a.root + LINE;
                    a.flags = a.groups + (size_t)ngroups_max * LINE;
                    a.error = (int *)(a.flags + (size_t)ngroups_max * LINE);
                    a.stale = (unsigned long long *)(a.flags + (size_t)ngroups_max * LINE + 32);
                    a.rounds = rounds;
                    a.verify = verify;
                    a.G = d.G;
                    void *p[] = {&a};
                    CK(cudaEventRecord(e0));
                    if (launch)
                        CK(cudaLaunchKernel(d.k, dim3(nb), dim3(256), p, 0, 0));
                    else
                        CK(cudaLaunchCooperativeKernel(d.k, dim3(nb), dim3(256), p, 0, 0));
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    best = std::min(best, ms * 1e3f / rounds);
                    unsigned long long st;
                    int er;
                    CK(cudaMemcpy(&st, a.stale, 8, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(&er, a.error, 4, cudaMemcpyDeviceToHost));
                    stale_total += st;
                    err_total += er;
                }
                printf(" | %14.3f%s", best, err_total ? " TIMEOUT" : stale_total ? " STALE" : "");
            }
        }
        printf("\n");
        fflush(stdout);
    }
    }
    replica(sms, rounds);
    replica(maxb, rounds);
    /* Placement: flat3 / flat0 / coop at 1 block per SM and the co-resident maximum, verified, with the
     * counter on different lines of the allocation (L2 slice); and the package benchmark's layout (counter
     * at byte 0, error / stale at byte 384, the blocks' values from byte 408: sharing error's line). */
    printf("\nplacement (verified, cooperative launch): us per barrier, best of 3\n");
    const int offs[] = {0, 1, 2, 3, 5, 8, 13, 32, 64, 100, -1};
    for (int di = 0; di < (only_replica ? 0 : 3); di++) {
        const design &d = ds[di];
        for (int nb : {sms, maxb}) {
            printf("%-6s %5d:", d.name.c_str(), nb);
            for (int off : offs) {
                float best = 1e30f;
                unsigned long long stale_total = 0;
                for (int rep = 0; rep < 3; rep++) {
                    CK(cudaMemset(mem, 0, words * 4));
                    args a;
                    if (off >= 0) {
                        a.data = mem;
                        a.count = mem + 2 * maxb + LINE + off * LINE;
                        a.error = (int *)(mem + 2 * maxb + LINE + 128 * LINE);
                        a.stale = (unsigned long long *)(mem + 2 * maxb + LINE + 130 * LINE);
                    } else { /* the package's layout */
                        a.count = mem;
                        a.error = (int *)(mem + 96);
                        a.stale = (unsigned long long *)(mem + 98);
                        a.data = mem + 102;
                    }
                    a.groups = a.root = a.flags = nullptr;
                    a.rounds = rounds;
                    a.verify = 1;
                    a.G = 0;
                    void *p[] = {&a};
                    CK(cudaEventRecord(e0));
                    CK(cudaLaunchCooperativeKernel(d.k, dim3(nb), dim3(256), p, 0, 0));
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    best = std::min(best, ms * 1e3f / rounds);
                    unsigned long long st;
                    CK(cudaMemcpy(&st, a.stale, 8, cudaMemcpyDeviceToHost));
                    stale_total += st;
                }
                printf(" %s%d %.3f%s", off < 0 ? "pkg" : "L", off < 0 ? 0 : off, best, stale_total ? " STALE" : "");
            }
            printf("\n");
            fflush(stdout);
        }
    }
    return 0;
}
