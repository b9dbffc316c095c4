// Probe (issue 14: 65,536 to 16M bins at >= 2x the best of CUB and torch.bincount): a partition that turns the
// L2's atomics into shared-memory ones, against the one-pass global atomics the package takes for counts that fit
// the L2 (hist_global.cu; 1M bins of 64M int64: ~705 us on the H200, the L2's ~95 G adds a second).
//
//   pass 1  each block reads tiles of TILE int64 values, ranks every value within its digit (v >> LOWBITS) with a
//           shared atomic, and writes the tile's low LOWBITS bits back as uint16, grouped by digit, with the
//           tile's digit offsets (D + 1 words): 8 bytes read and 2 written a value.
//   pass 2  block (d, j) counts digit d's low bits of tiles j, j + G, ... in 2^LOWBITS shared counters (128 KiB)
//           and adds them to the int64 counts (G x nbins global adds in all, on distinct counters).
//
// Traffic: 8 + 2 + 2 bytes a value and the offsets, against the one pass's 8 bytes and one L2 atomic a value.
// v1 (r215): 15-bit digits, G blocks a digit, a warp a segment 2 bytes a lane.  v2 (written after r215, not yet
// run): 14-bit digits (64 KiB of counters, two blocks an SM), the blocks split by the digits' totals that pass 1
// adds up, groups of lanes sized to the mean segment reading 16-byte vectors.
// Timed with CUDA events (median of 7), counts checked against the one pass.  Standalone: nvcc -O3 -arch=sm_90
// -o /tmp/bp benchmarks/probes/bins_partition.cu && /tmp/bp
#include "probe_check.cuh"

#include <cstdint>

constexpr int LOWBITS = 15, LOWBINS = 1 << LOWBITS;
constexpr int T1 = 1024, PER = 16, TILE = T1 * PER; // pass 1: a tile of 16,384 values a block at a time
constexpr int T2 = 1024;                              // pass 2

__device__ __forceinline__ uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// dist 0: uniform over [0, nbins); 1: skewed, nbins * u^4 (a quarter of the values in the lowest 1/256 of bins)
__global__ void fill(int64_t *x, int64_t n, int64_t nbins, int dist)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t r = mix((uint64_t)i);
        if (dist == 0) {
            x[i] = (int64_t)(r % (uint64_t)nbins);
        } else {
            const double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
            const int64_t k = (int64_t)(u * u * u * u * (double)nbins);
            x[i] = k < nbins ? k : nbins - 1;
        }
    }
}

__global__ void read_all(const int4 *x, int64_t n16, unsigned *sink)
{
    unsigned s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n16; i += (int64_t)gridDim.x * blockDim.x) {
        const int4 v = __ldcs(x + i);
        s ^= (unsigned)(v.x ^ v.y ^ v.z ^ v.w);
    }
    if (s == 0x9e3779b9u)
        *sink = s;
}

__global__ void onepass(const int64_t *__restrict__ x, int64_t n, unsigned long long *c)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(c + __ldcs(x + i), 1ull);
}

// pass 1: shared memory = D + 1 digit counters, then the tile's uint16 low bits grouped by digit; with gtot, the
// tile's digit counts added to D global totals too (v2's work split)
template <int LB>
__global__ void __launch_bounds__(T1, 1) part1(const int64_t *__restrict__ x, int64_t n, int D,
                                               uint16_t *__restrict__ low, uint32_t *__restrict__ offs,
                                               unsigned long long *gtot)
{
    extern __shared__ uint32_t sm[];
    uint32_t *cnt = sm;
    uint16_t *stage = (uint16_t *)(sm + ((D + 1 + 3) & ~3));
    const int64_t tiles = (n + TILE - 1) / TILE;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t base = t * TILE;
        for (int d = threadIdx.x; d <= D; d += T1)
            cnt[d] = 0;
        __syncthreads();
        uint32_t key[PER]; // digit << 16 | low bits (~0: past n)
        {
            int64_t v[PER];
#pragma unroll
            for (int k = 0; k < PER; k++) {
                const int64_t i = base + k * T1 + threadIdx.x;
                v[k] = i < n ? __ldcs(x + i) : -1;
            }
#pragma unroll
            for (int k = 0; k < PER; k++)
                key[k] = v[k] >= 0 ? (uint32_t)(v[k] >> LB) << 16 | (uint32_t)(v[k] & ((1 << LB) - 1)) : ~0u;
        }
        uint32_t r[PER];
#pragma unroll
        for (int k = 0; k < PER; k++)
            r[k] = key[k] != ~0u ? atomicAdd(cnt + (key[k] >> 16), 1u) : 0;
        __syncthreads();
        if (threadIdx.x < 32) { // exclusive scan of the D counts by one warp
            uint32_t carry = 0;
            for (int d0 = 0; d0 < D; d0 += 32) {
                const int d = d0 + threadIdx.x;
                const uint32_t c0 = d < D ? cnt[d] : 0;
                uint32_t s = c0;
                for (int off = 1; off < 32; off <<= 1) {
                    const uint32_t o = __shfl_up_sync(0xffffffffu, s, off);
                    if ((int)threadIdx.x >= off)
                        s += o;
                }
                if (d < D)
                    cnt[d] = carry + s - c0;
                carry += __shfl_sync(0xffffffffu, s, 31);
            }
            if (threadIdx.x == 0)
                cnt[D] = carry;
        }
        __syncthreads();
        for (int d = threadIdx.x; d <= D; d += T1) {
            offs[t * (D + 1) + d] = cnt[d];
            if (gtot && d < D) {
                const uint32_t c = cnt[d + 1] - cnt[d];
                if (c)
                    atomicAdd(gtot + d, (unsigned long long)c);
            }
        }
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (key[k] != ~0u)
                stage[cnt[key[k] >> 16] + r[k]] = (uint16_t)key[k];
        __syncthreads();
        const int total = (int)(n - base < TILE ? n - base : TILE);
        const uint32_t *s32 = (const uint32_t *)stage;
        uint32_t *l32 = (uint32_t *)(low + base);
        for (int j = threadIdx.x; j < total / 2; j += T1) // (TILE even: the tile starts 4-byte aligned)
            l32[j] = s32[j];
        if ((total & 1) && threadIdx.x == 0)
            low[base + total - 1] = stage[total - 1];
        __syncthreads();
    }
}

// pass 2 (v1): block (d, j) of D x G; a warp takes one tile's segment of digit d at a time, 2 bytes a lane
__global__ void __launch_bounds__(T2, 1) part2(const uint16_t *__restrict__ low, const uint32_t *__restrict__ offs,
                                                int64_t tiles, int D, int G, unsigned long long *c, int64_t nbins)
{
    extern __shared__ uint32_t h[];
    const int d = blockIdx.x / G, j = blockIdx.x % G;
    for (int b = threadIdx.x; b < LOWBINS; b += T2)
        h[b] = 0;
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = T2 / 32;
    for (int64_t t = j + (int64_t)G * warp; t < tiles; t += (int64_t)G * warps) {
        const uint32_t s = __ldg(offs + t * (D + 1) + d), e = __ldg(offs + t * (D + 1) + d + 1);
        const uint16_t *seg = low + t * TILE;
        for (uint32_t q = s + lane; q < e; q += 32)
            atomicAdd_block(h + __ldcs(seg + q), 1u);
    }
    __syncthreads();
    const int64_t first = (int64_t)d << LOWBITS;
    for (int b = threadIdx.x; b < LOWBINS; b += T2)
        if (h[b] && first + b < nbins)
            atomicAdd(c + first + b, (unsigned long long)h[b]);
}

// pass 2 (v2): 2^LB shared counters (LB 14: 64 KiB, two blocks of 1024 an SM); groups of GS lanes take one tile's
// segment each (GS from the digit's mean segment, its total / tiles values), reading it in 16-byte vectors (the tile starts 16-byte
// aligned; a vector's values outside the segment are skipped), two vectors in flight a lane.  The work is split by
// the digits' totals from pass 1: digit d gets ceil(total_d / per) of the grid's blocks (per = n / B0), which take
// its tiles in turn; blocks past the last digit's exit (D <= T2: a thread a digit finds the block's digit).
template <int LB>
__global__ void __launch_bounds__(T2, 2)
    part2v(const uint16_t *__restrict__ low, const uint32_t *__restrict__ offs, int64_t tiles, int D,
           const unsigned long long *__restrict__ gtot, unsigned long long per, unsigned long long *c, int64_t nbins)
{
    static_assert(LB <= 16 && TILE % 8 == 0 && T2 / 32 <= 32, "uint16 low bits, 16-byte vectors, one warp's scan");
    extern __shared__ uint32_t h[];
    __shared__ int my_d, my_j, my_g, wsum[T2 / 32];
    { // this block's digit: thread d holds digit d's blocks, a block-wide inclusive scan finds where blockIdx.x falls
        if (threadIdx.x == 0)
            my_d = -1;
        const int g = (int)threadIdx.x < D ? (int)((gtot[threadIdx.x] + per - 1) / per) : 0;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        int incl = g;
        for (int off = 1; off < 32; off <<= 1) {
            const int o = __shfl_up_sync(0xffffffffu, incl, off);
            if (lane >= off)
                incl += o;
        }
        if (lane == 31)
            wsum[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            int w = lane < T2 / 32 ? wsum[lane] : 0;
            for (int off = 1; off < 32; off <<= 1) {
                const int o = __shfl_up_sync(0xffffffffu, w, off);
                if (lane >= off)
                    w += o;
            }
            if (lane < T2 / 32)
                wsum[lane] = w;
        }
        __syncthreads();
        const int first = incl - g + (warp ? wsum[warp - 1] : 0);
        if (g > 0 && (int)blockIdx.x >= first && (int)blockIdx.x < first + g) {
            my_d = threadIdx.x;
            my_j = (int)blockIdx.x - first;
            my_g = g;
        }
    }
    __syncthreads();
    const int d = my_d, j = my_j, G = my_g;
    if (d < 0)
        return;
    for (int b = threadIdx.x; b < (1 << LB); b += T2)
        h[b] = 0;
    __syncthreads();
    int GS = 1; // lanes a segment: from this digit's mean segment (review44b: not the mean over all digits)
    while (GS < 32 && (unsigned long long)GS * 16 * (unsigned long long)tiles < gtot[d])
        GS *= 2;
    const int lane = threadIdx.x & 31, sub = lane % GS;
    const int group = threadIdx.x / GS, groups = T2 / GS;
    for (int64_t t = j + (int64_t)G * group; t < tiles; t += (int64_t)G * groups) {
        const uint32_t s = __ldg(offs + t * (D + 1) + d), e = __ldg(offs + t * (D + 1) + d + 1);
        const uint16_t *seg = low + t * TILE;
        for (uint32_t a = (s & ~7u) + 8u * sub; a < e; a += 16u * GS) {
            uint4 v[2];
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const uint32_t at = a + 8u * GS * u;
                v[u] = at < e ? __ldcs((const uint4 *)(seg + at)) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const uint32_t at = a + 8u * GS * u;
                const uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                for (int q = 0; q < 8; q++) {
                    const uint32_t i = at + q;
                    if (i >= s && i < e)
                        atomicAdd_block(h + ((w[q >> 1] >> ((q & 1) * 16)) & 0xffffu), 1u);
                }
            }
        }
    }
    __syncthreads();
    const int64_t first = (int64_t)d << LB;
    for (int b = threadIdx.x; b < (1 << LB); b += T2)
        if (h[b] && first + b < nbins)
            atomicAdd(c + first + b, (unsigned long long)h[b]);
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    printf("%s, %d SMs, L2 %d MB\n", p.name, sms, p.l2CacheSize >> 20);
    const int64_t n = 64ll << 20;
    int64_t *x;
    uint16_t *low;
    uint32_t *offs;
    unsigned long long *c1, *c2;
    unsigned *sink;
    const int64_t tiles = (n + TILE - 1) / TILE, maxbins = 16ll << 20, maxD = maxbins >> 14;
    unsigned long long *gtot;
    CK(cudaMalloc(&x, n * 8));
    CK(cudaMalloc(&low, n * 2 + 16)); // (v2's last vector may pass n by up to 7 values)
    CK(cudaMalloc(&offs, tiles * (maxD + 1) * 4));
    CK(cudaMalloc(&gtot, maxD * 8));
    CK(cudaMalloc(&c1, maxbins * 8));
    CK(cudaMalloc(&c2, maxbins * 8));
    CK(cudaMalloc(&sink, 4));
    CK(cudaFuncSetAttribute(part2, cudaFuncAttributeMaxDynamicSharedMemorySize, LOWBINS * 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto timed = [&](auto &&f) {
        std::vector<float> ts;
        for (int r = 0; r < 7; r++) {
            CK(cudaEventRecord(e0));
            f();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            ts.push_back(ms * 1000);
        }
        CK(cudaGetLastError());
        return median(ts);
    };
    auto check = [&](int64_t nbins) {
        std::vector<unsigned long long> h1(nbins), h2(nbins);
        CK(cudaMemcpy(h1.data(), c1, nbins * 8, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(h2.data(), c2, nbins * 8, cudaMemcpyDeviceToHost));
        unsigned long long tot = 0;
        for (auto v : h2)
            tot += v;
        return h1 == h2 && tot == (unsigned long long)n;
    };
    fill<<<sms * 8, 512>>>(x, n, 1ll << 20, 0);
    const float rd = timed([&] { read_all<<<sms * 8, 512>>>((const int4 *)x, n * 8 / 16, sink); });
    printf("read of %lld int64: %.1f us (%.0f GB/s)\n", (long long)n, rd, n * 8 / rd / 1e3);
    printf("| dist | bins | version | one pass us | partition us | pass 1 | pass 2 (with its memset) | x one pass | check |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|---|\n");
    const int g1 = (int)std::min<int64_t>(tiles, sms);
    for (int dist = 0; dist < 2; dist++)
        for (int64_t nbins : {1ll << 20, 4ll << 20, 16ll << 20}) {
            fill<<<sms * 8, 512>>>(x, n, nbins, dist);
            const float t1 = timed([&] {
                CK(cudaMemsetAsync(c1, 0, nbins * 8));
                onepass<<<sms * 8, 512>>>(x, n, c1);
            });
            { // v1: 15-bit digits, G blocks a digit, a warp a segment
                const int D = (int)((nbins + LOWBINS - 1) >> LOWBITS);
                const size_t sm1 = (size_t)((D + 1 + 3) & ~3) * 4 + TILE * 2;
                CK(cudaFuncSetAttribute(part1<LOWBITS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm1));
                const float tp1 = timed([&] { part1<LOWBITS><<<g1, T1, sm1>>>(x, n, D, low, offs, nullptr); });
                const int G = std::max(1, (2 * sms + D - 1) / D);
                const float tp2 = timed([&] {
                    CK(cudaMemsetAsync(c2, 0, nbins * 8));
                    part2<<<D * G, T2, LOWBINS * 4>>>(low, offs, tiles, D, G, c2, nbins);
                });
                const float tall = timed([&] {
                    CK(cudaMemsetAsync(c2, 0, nbins * 8));
                    part1<LOWBITS><<<g1, T1, sm1>>>(x, n, D, low, offs, nullptr);
                    part2<<<D * G, T2, LOWBINS * 4>>>(low, offs, tiles, D, G, c2, nbins);
                });
                printf("| %s | %lld | v1 (G %d) | %.1f | %.1f | %.1f | %.1f | %.2fx | %s |\n",
                       dist ? "skewed u^4" : "uniform", (long long)nbins, G, t1, tall, tp1, tp2, t1 / tall,
                       check(nbins) ? "ok" : "WRONG");
                fflush(stdout);
            }
            { // v2: 14-bit digits, blocks by the digits' totals, groups of GS lanes a segment, 16-byte loads
                constexpr int LB = 14;
                const int D = (int)((nbins + (1 << LB) - 1) >> LB);
                const size_t sm1 = (size_t)((D + 1 + 3) & ~3) * 4 + TILE * 2;
                CK(cudaFuncSetAttribute(part1<LB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm1));
                if (D > T2) {
                    fprintf(stderr, "v2 takes at most %d digits\n", T2);
                    exit(1);
                }
                auto k2 = part2v<LB>;
                CK(cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, (1 << LB) * 4));
                const int B0 = 4 * sms; // two blocks an SM, two rounds
                const unsigned long long per = (unsigned long long)((n + B0 - 1) / B0);
                const float tp1 = timed([&] {
                    CK(cudaMemsetAsync(gtot, 0, D * 8));
                    part1<LB><<<g1, T1, sm1>>>(x, n, D, low, offs, gtot);
                });
                const float tp2 = timed([&] {
                    CK(cudaMemsetAsync(c2, 0, nbins * 8));
                    k2<<<B0 + D, T2, (1 << LB) * 4>>>(low, offs, tiles, D, gtot, per, c2, nbins);
                });
                const float tall = timed([&] {
                    CK(cudaMemsetAsync(c2, 0, nbins * 8));
                    CK(cudaMemsetAsync(gtot, 0, D * 8));
                    part1<LB><<<g1, T1, sm1>>>(x, n, D, low, offs, gtot);
                    k2<<<B0 + D, T2, (1 << LB) * 4>>>(low, offs, tiles, D, gtot, per, c2, nbins);
                });
                printf("| %s | %lld | v2 | %.1f | %.1f | %.1f | %.1f | %.2fx | %s |\n",
                       dist ? "skewed u^4" : "uniform", (long long)nbins, t1, tall, tp1, tp2, t1 / tall,
                       check(nbins) ? "ok" : "WRONG");
                fflush(stdout);
            }
        }
    return 0;
}
