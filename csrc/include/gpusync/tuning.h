/*
 * tuning.h -- every launch-shape and strategy threshold, in one place, with
 * the measurement behind it.  Numbers come from benchmarks/histogram.py on an
 * NVIDIA H200 (132 SMs, 227 KB opt-in shared memory per block); the results
 * are committed under benchmarks/results/.
 */
#ifndef GPUSYNC_TUNING_H
#define GPUSYNC_TUNING_H

/* Threads per block of the privatized (shared / warp / cluster) histogram
 * kernels.  1024 threads x 2 blocks = 2048 threads per SM, the occupancy that
 * keeps enough 16-byte loads in flight to reach the read ceiling. */
#define GS_HIST_BLOCK_THREADS 1024
/* Threads per block of the global-atomic kernel (no shared memory). */
#define GS_HIST_GLOBAL_THREADS 256
/* ...and the blocks per SM the shared kernel is compiled for (caps it at 32
 * registers; the float fast path otherwise takes 48, halving occupancy). */
#define GS_HIST_BLOCKS_PER_SM 2

/* Shared-memory bytes one block may use for its private copies of the
 * histogram.  Two 1024-thread blocks per SM must fit in the 228 KB of an
 * sm_90 SM, so ~100 KB per block.  The shared strategy keeps R replicas of
 * every bin (R a power of two, at most 32), laid out [bin][R], so that lane l
 * of a warp always updates replica l % R: with R = 32 every lane owns its
 * bank and no two lanes ever update the same word, whatever the data. */
#define GS_HIST_SMEM_BUDGET (100 * 1024)
#define GS_HIST_MAX_REPLICAS 32
/* Bin tables kept in shared memory by every histogram kernel: the 8-bit
 * lookup table, or up to GS_HIST_SMEM_EDGES edges (as double and float), so
 * that binning reads edges from shared memory, not from a formula or global
 * memory.  GS_HIST_STATIC_SMEM is what that costs per block. */
#define GS_HIST_SMEM_EDGES 513
#define GS_HIST_STATIC_SMEM (GS_HIST_SMEM_EDGES * 12 + 16)

/* Elements of 16-byte vector loads each thread issues before using any of
 * them (memory-level parallelism). */
#define GS_HIST_VEC_UNROLL 2

/* Contiguous 8-bit data past GS_HIST_U8_SMALL_MAX_BYTES, unweighted, any
 * bins: hist_smem.cu's byte kernel (the 256 raw bytes counted, each byte's
 * count added to its bin at the end), one block of this
 * many threads per SM, GS_HIST_BYTES_LOADS 16-byte loads in flight a thread,
 * 64 replicas of every bin addressed by one PRMT a byte.  H200, probe
 * benchmarks/probes/u8_pipe.cu, graph replay, uniform bytes (r205): 1 GiB
 * 255.2 -> 243.8 us, 256 MiB 68.6 -> 66.2, 32 MiB 14.1 -> 13.3 against the
 * generic kernel's 1024 x 2 blocks, 2 loads and 32 replicas; 1024 x 2 blocks
 * with 2 or 4 loads and 512 x 3 with 4 were slower or no faster. */
#define GS_HIST_BYTES_THREADS 1024
#define GS_HIST_BYTES_LOADS 4
#define GS_HIST_BYTES_REPLICAS 64

/* 8-bit data: the dedicated kernel of hist_small.cu (grid sized from the
 * work, 512 x 4 blocks per SM) up to this many bytes, the generic shared
 * kernel above.  H200, graph replay, uniform / one value: 1e6 bytes 6.3 / 6.0
 * us against 6.7 / 6.6; 3.16e6 7.7 / 7.0 against 7.7 / 7.4; 1e7 11.6 / 9.9
 * against 10.3 / 9.9; 1 GiB 82% against 91% of read.  Against the byte kernel
 * above (r209, u8_bins_H200_r209.txt): from 4 MiB up the byte kernel is as
 * fast or faster on 256 bins and on bins of one byte each (4 MiB 7.1-8.0 us
 * against 7.0-8.5), and, since its rows of one bin are summed in the warp
 * (gs_hist_merge_each; r212, u8_fold_H200_r212_H100_r213.txt), on bins of
 * 4 bytes each too (64 over (0, 256): 4 MiB 8.7 us against 9.2, 8 MiB 9.2
 * against 12.5; before the fold 12.7 and 13.4). */
#define GS_HIST_U8_SMALL_MAX_BYTES ((int64_t)3 << 20)

/* Per-block shared-memory counters are 32-bit; the launcher keeps the
 * elements one block (or one cluster) may see below this. */
#define GS_HIST_MAX_ELEMS_PER_BLOCK ((int64_t)1 << 31)

/* Thread-block clusters (sm_90): up to this many blocks share one histogram
 * through distributed shared memory; 8 is the portable maximum. */
#define GS_HIST_CLUSTER_MAX 8

/* bincount of 16-, 32-bit and int64 device integers (ops->bincount_first): the
 * first count takes the values 0 .. B - 1 and finds the largest value; when
 * that is below B the counts are NumPy's bincount from one read of the input,
 * else a count follows, of min .. max or of max + 1 bins (two reads, as the min/max pass and
 * the count took before: 317 us for 256M uint16 of 4,096 values against
 * 157 us for the count alone, histogram_manybins_H200.md).  Values above B
 * are only compared (an overflow bin that counted them made one-valued data
 * above it 26 % slower than the min/max pass, r141).  B: the largest power of
 * two whose counters fit GS_HIST_SMEM_BUDGET four times (4 replicas). */
#define GS_BINCOUNT_FIRST_BINS 4096

/* auto: the copies of the bins one block must hold for `shared` to beat the
 * warp-aggregated kernel (equal bins in a warp merged before a global atomic).
 * Counts (native 32-bit shared atomics) need one: H100 r179
 * (benchmarks/results/mid_bins_H100_r179.txt), 64M int32 on 16,384-49,152 unit
 * bins, shared against warp: uniform 0.19-0.28 against 0.64-0.65 ms, zipf
 * 0.21-0.50 / 0.43-0.51, normal 0.21-0.46 / 0.63-0.66, one value 0.18-0.28 /
 * 0.20-0.28, sorted 0.15-0.21 / 0.19-0.21 -- behind only at 49,152 sorted bins,
 * 0.42 / 0.38 (the rule was two copies before: warp ran on all of these).
 * Weighted sums keep two: a float64 add in shared memory is a
 * compare-and-swap loop, which one repeated value serializes. */
#define GS_HIST_AUTO_MIN_REPLICAS 1
#define GS_HIST_AUTO_MIN_REPLICAS_WEIGHTED 2

/* CPU engine thread pool (csrc/cpu/parallel.c).  A call uses t threads
 * when n * ns_per_item / t + handoff(t) is smallest (gs_cpu_threads_for_cost):
 * handoff(t) is measured when the pool starts (waking t-1 parked threads and
 * seeing them finish; gs_cpu_handoff_ns), ns_per_item is the op's one-thread
 * cost below.  So the calling thread works alone below the size where the
 * hand-off pays, whatever the machine.
 * A worker that finished a job spins this long before it parks on its futex
 * (back-to-back calls then hand off without a system call).  H200 host (16
 * cores, 2026-11-23, .run/diag.py): a 16-thread job handed to spinning
 * workers 3-4 us, to parked ones 45-164 us (median 105 us); the dispatcher
 * asks gs_cpu_pool_warm() which of the two a call meets.  200 us keeps a
 * loop of calls with Python between them on the warm side. */
#define GS_CPU_POOL_SPIN_US 200
/* The hand-off per woken thread assumed before the pool has measured it, and
 * the floor below which no hand-off exists (a futex wake-up and a cache-line
 * round trip; ~5 us measured on the 2-core CI box and on the H200 host). */
#define GS_CPU_HANDOFF_DEFAULT_NS 10000.0
#define GS_CPU_HANDOFF_MIN_NS 2000.0
/* One-thread cost per element (ns) of each CPU loop, from GPUSYNC_NUM_THREADS=1
 * runs on the 2-core CI box (AMD EPYC, shared): sum f64 10M 9.0 ms (0.11
 * ns/byte), count_nonzero u8 10M 0.47 ms, histogram f64 100 bins 1M 2.15 ms
 * (2.1 ns/element); the 8-bit histogram and cumsum figures are estimates
 * (one table increment per byte; two reads and a write).  Rounded down, so
 * that threads are tried early: a wrong guess costs at most one hand-off. */
#define GS_CPU_NS_PER_BYTE 0.08
#define GS_CPU_NS_HIST_BYTE 0.25   /* 8-bit histogram: one table increment per byte */
#define GS_CPU_NS_HIST 1.5         /* histogram / bincount / binned_statistic per element */
#define GS_CPU_NS_SCAN_BYTE 0.15   /* cumsum: two reads and one write per element */
/* Zeroing a histogram / bincount result that one thread then counts into in
 * place (csrc/cpu/hist.c zero_result), per 8-byte bin on one thread: 10^6
 * bins (8 MB) took 0.16 ms on the 2-core CI box and 0.34-0.37 ms on the H200
 * machine's 16-core Xeon host (memset of memory already mapped: glibc hands
 * the last call's freed block back), where torch zeroes the same on its 16
 * threads in 0.032 ms.  Rounded down, as the others. */
#define GS_CPU_NS_ZERO_BIN 0.15
/* Elements a CPU thread processes between two checks for an interrupt
 * (gs_cpu_stop): a few tens of microseconds of work. */
#define GS_CPU_CHUNK 65536
/* Slices a thread of the CPU engine's sum / dot (two-pass: a partial a slice,
 * added in slice order), claimed by the threads (gs_cpu_parallel_tasks), each
 * slice at least GS_CPU_CHUNK elements: GPUSYNC_CPU_TASKS overrides.  One a
 * thread left every call as slow as its slowest thread; r263 (H200 machine's
 * host, 16 threads, benchmarks/probes/host_tasks.py, shuffled rounds after
 * 0.3 s idle, medians ms, results/host_tasks_H200_r263.txt), 1 -> 4 a thread:
 * 10^8 float64 dot 17.3 -> 13.6 (rounds 12.3-18.4 -> 13.5-13.8; np.dot 17.3,
 * torch.dot 17.0), float64 sum 8.8 -> 7.1 (torch 9.8), float32 sum 4.7 -> 4.3
 * (torch 4.9); 3.16x10^7 dot 5.9 -> 4.5 (np.dot 5.4), sum 2.3 -> 1.7. */
#define GS_CPU_REDUCE_TASKS 4
/* CPU backend: private per-thread histograms above this many bins cost more
 * memory and merge time than atomics save; auto uses `global` beyond it. */
#define GS_CPU_PRIVATE_MAX_BINS (1 << 20)
/* binned_statistic's shared strategy on the CPU (csrc/cpu/binstat.c parts_for): the most parts the points are
 * cut into (each with private states, merged in part order) -- the threads it can use (gs_cpu_max_threads:
 * the cores, at most 64, unless GPUSYNC_NUM_THREADS asks for more); the fewest points a part (below ~25 us of binning a hand-off to another thread does not pay,
 * and small inputs stay one part: SciPy's one running sum, e.g. its inf where +-1e308 partial sums of two
 * parts would meet as NaN); and the most states of all parts together (32 bytes each: 256 MiB). */
#define GS_CPU_BINSTAT_PARTS 64
#define GS_CPU_BINSTAT_MIN_PART 16384
#define GS_CPU_BINSTAT_CELLS (1 << 23)

/* Reductions (sum, dot).  Threads per block of every reduction kernel, and
 * of the kernel or block that finishes the partials: fixed, because with
 * deterministic=True the order of additions depends only on it. */
#define GS_REDUCE_THREADS 256
/* The mutex strategy runs one block of this many threads per SM: every
 * block takes the lock once at the end, so fewer, bigger blocks mean fewer
 * serialized hand-overs (H200: 1056 blocks of 256 made mutex 10x slower
 * than atomic; see benchmarks/results/reduce.md). */
#define GS_REDUCE_MUTEX_THREADS 1024
/* 16-byte loads per array each thread issues before using them. */
#define GS_REDUCE_UNROLL 4
/* Partials each thread of the finishing block loads before adding them. */
#define GS_REDUCE_FINISH_LOADS 8
/* deterministic=True: the input is cut into tiles of this many elements,
 * each reduced in a fixed order to one partial, the partials in a fixed
 * order -- the same bits whatever the grid, strategy or device. */
#define GS_REDUCE_TILE 16384
/* Strategy auto on device inputs of at most this many bytes (both arrays
 * of a dot; H100, graph replay: 2.9 us for 10^4 float32 against 5.8 us for
 * memset + kernel): one block of GS_REDUCE_SMALL_THREADS threads, no
 * workspace, no memset, no second step -- launch latency dominates there.
 * GPUSYNC_REDUCE_SMALL_BYTES overrides (threshold sweeps).  With
 * deterministic=True the one-block path takes up to GS_REDUCE_SMALL_TILES
 * tiles (it adds them in the tile order of the multi-block path). */
#define GS_REDUCE_SMALL_BYTES (64 * 1024)
#define GS_REDUCE_SMALL_THREADS 1024
/* With thread-block clusters (sm_90 on): up to this many bytes go to one
 * cluster of ceil(bytes / GS_REDUCE_SMALL_BYTES) blocks, at most
 * GS_REDUCE_CLUSTER_MAX (the portable cluster size), still one launch with
 * no workspace. */
#define GS_REDUCE_CLUSTER_BYTES (64 * 1024) /* H100: a cluster launch costs more than a second kernel (4.5 against 3.7 us at 128-512 KB) */
#define GS_REDUCE_CLUSTER_MAX 8
#define GS_REDUCE_SMALL_TILES 1
/* Freed scratch memory gpusync's device pool keeps across synchronizations
 * (GPUSYNC_POOL_KEEP_MB overrides; gs.empty_cache() trims it): enough for
 * the staging chunks of a two-array call, so repeated calls do not map
 * device memory again. */
#define GS_POOL_KEEP_BYTES ((uint64_t)1 << 30)
/* Host inputs are staged through device memory in chunks of this many bytes
 * (a multiple of every tile's bytes). */
#define GS_STAGE_BYTES ((int64_t)256 << 20)
/* ... each through pinned memory (csrc/cuda/stage.cu): the copy is cut into
 * DMA units -- a GS_STAGE_UNITS-th of it, at least GS_STAGE_MIN_UNIT bytes, at most a
 * slot -- that flow through a ring of GS_STAGE_SLOTS pinned slots of
 * GS_STAGE_CHUNK bytes, each unit into GS_STAGE_SPLIT pieces copied by a
 * crew of up to GS_STAGE_THREADS host threads (one fewer than the CPUs)
 * while the copy engine drains the units already filled.  After a job the
 * crew spins GS_STAGE_SPIN_US microseconds before it sleeps.  Copies under
 * GS_STAGE_MIN_BYTES go straight through cudaMemcpyAsync; a copy that makes
 * no progress for GS_STAGE_TIMEOUT_S seconds fails.  Measured on the H200:
 * benchmarks/results/stage_sweep.md. */
#define GS_STAGE_SLOTS 32
#define GS_STAGE_THREADS 16
#define GS_STAGE_CHUNK ((size_t)2 << 20)
#define GS_STAGE_MIN_UNIT ((size_t)256 << 10)
#define GS_STAGE_UNITS 8
#define GS_STAGE_SPLIT 32
#define GS_STAGE_SPIN_US 100
#define GS_STAGE_TIMEOUT_S 10
#define GS_STAGE_MIN_BYTES ((size_t)256 << 10)

/* cumsum: threads per block of every scan kernel, and elements each thread
 * holds per tile (odd: scan.cu's exchange is then free of bank conflicts).
 * A thread's items stay in registers between the tile's reduction and its
 * scan, so the input is read once.  GS_SCAN_ITEMS4: outputs of at most 4
 * bytes (float32, float16); GS_SCAN_ITEMS: 8-byte outputs of narrower inputs
 * (int32 -> int64 ...; an 8-byte output takes twice the exchange);
 * GS_SCAN_ITEMS8: 8-byte inputs (twice the registers per item).
 * Measured (r85-r87, H200, 256M float32 / int32 -> int64, 128M float64,
 * events against CUB's DeviceScan in the same process, .run/scanab2.py;
 * benchmarks/results/cumsum_blocked_r85_r91.txt):
 *   the old row layout (256 x 16, 4 blocks/SM)  0.76x CUB (61 % of copy);
 *   128 x 21/15, 8 blocks/SM, no nap            0.89x; 256 x 21/15: 0.88x;
 *   128 x 25/15                                 0.93x (f32), 0.90x (i32);
 *   + the 1,000 ns nap below                    0.99-1.00x, 0.96x;
 *   128 x 29/23/19 + 1,000 ns nap               0.96-1.03x, 1.01-1.07x;
 *   the same with a 1,600 ns nap                1.04-1.05x, 1.09x
 *     (85 % of copy; float64 92 %); 600 ns: 1.00x, 1.05x;
 *   33/25/21 items (more spills)                0.95x, 1.06x.
 * Tiles numbered by blockIdx.x instead of the ticket: 0.86x (no nap).
 * The nap (r88, GPUSYNC_SCAN_DELAY_NS, CUDA graphs of 10 calls, device
 * time): 256M float32 657 / 644 / 639 / 638 us at 800 / 1,600 / 2,400 /
 * 3,200 ns (CUB 697-706 us), int32 -> int64 941 / 922 / 904 / 903 us;
 * H100 (r91): float32 803 / 789 / 789 / 883 us at 1,600 / 2,400 / 3,200 /
 * 4,800 ns (CUB 877 us), int32 -> int64 1174 / 1157 / 1158 / 1269 us: the
 * same optimum on both sm_90 parts, whose bandwidths differ by 1.4x. */
#ifndef GS_SCAN_THREADS
#define GS_SCAN_THREADS 128
#endif
#ifndef GS_SCAN_ITEMS4
#define GS_SCAN_ITEMS4 29
#endif
#ifndef GS_SCAN_ITEMS
#define GS_SCAN_ITEMS 23
#endif
#ifndef GS_SCAN_ITEMS8
#define GS_SCAN_ITEMS8 19
#endif
/* ... and at least this many blocks per SM (registers capped at 65536 /
 * (THREADS x this)): more tiles in flight hide the latency of each tile's
 * load -> scan -> look-back -> store. */
#ifndef GS_SCAN_MIN_BLOCKS
#define GS_SCAN_MIN_BLOCKS 8
#endif
/* lookback: a tile's nap (ns) between publishing its sum and its
 * look-back's first poll (GPUSYNC_SCAN_DELAY_NS overrides it): its
 * predecessors get that long to publish their prefixes, so the window is
 * read about once instead of polled while they still load. */
#ifndef GS_SCAN_DELAY_NS
#define GS_SCAN_DELAY_NS 2400
#endif
/* lookback: tiles numbered by an atomic ticket in the order blocks start
 * (1), or by blockIdx.x (0: what CUB does; relies on blocks starting in
 * index order, else a look-back waits for its time-out) */
#ifndef GS_SCAN_TICKET
#define GS_SCAN_TICKET 1
#endif
/* lookback, outputs as wide as the inputs and at most 4 bytes (float32,
 * float16): the tile kept in shared memory (cp.async in, scanned in place;
 * scan.cu's lookback_smem_kernel) with GS_SCAN_SMEM_ITEMS items a thread and
 * at least GS_SCAN_SMEM_BLOCKS blocks per SM, instead of in registers (0).
 * r92 (H200, graphs of 10 calls; cumsum_blocked_r85_r91.txt's sequel
 * cumsum_smem_r92_r93.txt), 256M float32: registers 29 items 631-632 us
 * (1.09x CUB); shared memory 31 items x 12 blocks 588 us (1.16-1.17x, 96 %
 * of copy), 29 x 14 blocks 609 us, 41 x 10 586 us, 45 x 8 591 us; float64
 * from shared memory (15 items x 12) 587 us against 580 us in registers. */
#ifndef GS_SCAN_SMEM
#define GS_SCAN_SMEM 1
#endif
#ifndef GS_SCAN_SMEM_ITEMS
#define GS_SCAN_SMEM_ITEMS 31
#endif
#ifndef GS_SCAN_SMEM_BLOCKS
#define GS_SCAN_SMEM_BLOCKS 12
#endif
/* loads and stores marked streamed (evict-first: read / written once; 0:
 * plain, measured 0.89x against 0.93x) */
#ifndef GS_SCAN_STREAMING
#define GS_SCAN_STREAMING 1
#endif

/* binned_statistic: threads per block, and the most bins whose state (40
 * bytes each: count, three doubles and a lock) one block keeps in shared
 * memory; more bins update global memory directly. */
#define GS_BINSTAT_THREADS 512
#define GS_BINSTAT_SMEM_BINS 2048
/* Shared bytes per block for the edges and the copies of the bins' state
 * (warp w updates copy w % R: up to one copy per warp, so that lanes of
 * different warps rarely wait for the same lock). */
#define GS_BINSTAT_SMEM_BUDGET (100 * 1024)

/* barrier_benchmark's cluster barrier: the largest cluster it takes (16 is
 * beyond the portable 8: cudaFuncAttributeNonPortableClusterSizeAllowed). */
#define GS_BARRIER_CLUSTER_MAX 16

#endif /* GPUSYNC_TUNING_H */
