/*
 * reduce_axis (CUDA backend): segmented sum, count of nonzero and cumsum
 * over a strided (outer, len, inner) view -- NumPy's axis reductions and
 * scans without a transpose (issue 15).
 *
 *   red_rows   inner == 1 (the axis is the innermost non-unit axis): a
 *              group of G threads per row (G = 32, a warp, for short rows;
 *              G = 256, a block, for long ones), 16-byte loads when the
 *              axis is contiguous (a scalar head up to the first 16-byte
 *              boundary, a scalar tail), 4 loads in flight per thread, warp
 *              shuffles and a shared-memory step per block.  When the rows
 *              cannot fill the GPU, the axis is split into parts (grid.y).
 *   red_cols   inner > 1: a block is CW column threads x NR = 256 / CW row
 *              groups; a thread owns V adjacent columns (one 4..16-byte
 *              load per row when the inner axis is contiguous and aligned)
 *              and rows g, g + NR, ...: a warp reads whole rows (coalesced).
 *              The NR groups are added in group order in shared memory.
 *              Parts along the axis (grid.y) fill the GPU when the columns
 *              are few.
 *   parts      partial sums [part][outer * inner] in the accumulator type,
 *              added in part order by a finishing kernel: deterministic.
 *   scan_rows  inner == 1: a group of G threads per row scans tiles of
 *              G x R x V elements (thread t holds the V-vectors t, t + G,
 *              ... of the tile: coalesced 16-byte loads and stores), one
 *              warp scan per vector slot, a shared step across warps, a
 *              running carry; the next tile is loaded while this one is
 *              scanned.
 *   scan_cols  inner > 1: CW column threads x NR row groups as in red_cols
 *              (CW = 64 where those blocks still fill the GPU); a tile is
 *              NR x U rows, group g scans its U rows serially (U = 8: eight
 *              16-byte loads in flight a thread), the group totals are
 *              combined in shared memory (in group order) and the running
 *              carry moves down the columns: the data is read and written
 *              once, coalesced.  Columns too few to fill the GPU split the
 *              axis into parts: red_cols sums every part first, and each
 *              part's scan starts from the totals before it (read twice).
 *
 * Every partition depends only on the shapes and the device, and every sum
 * is added in a fixed order: results are deterministic.  Floating inputs
 * accumulate in double (starting from -0.0, NumPy's sum of {-0.0}),
 * integers and bool in wrapping uint64; each result is rounded once to the
 * output dtype (gs_store_acc, convert.h, as on the CPU engine).
 */
#include "elements.cuh"
#include "stage.cuh"
#include "../common/convert.h"

#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

namespace {

constexpr int THREADS = 256;
constexpr int SCAN_MINB = 4; /* scan_rows: 64 registers, 4 blocks of 256 per SM */
/* scan_cols: up to 128 registers, 2 blocks of 256 per SM, and a tile of 8
 * rows per thread group with 16-byte columns (COLS_U): 8 loads in flight a
 * thread.  r100 (H200, (4096, 65536) float32 along axis 0, back to back):
 * 4 rows x 64 registers (28 bytes spilled) 0.727 ms, 8 rows x 128 registers
 * 0.578 ms (0.566 with 64 column threads, below); prefetching 2-6 tiles
 * ahead instead of 1 was slower in every case.  r101, the same run against
 * the kernel before (ms): (4096, 65536) 0.816 -> 0.558, (16384, 16384)
 * 1.135 -> 0.668, (1000, 200000) 0.567 -> 0.430, (2000, 3, 40000) 0.743 ->
 * 0.508; float64 (4096, 32768) 0.564 -> 0.555. */
constexpr int COLS_MINB = 2;
constexpr int COLS_U = 8;
/* scan_cols splits the axis into parts when its blocks fill at most 1 /
 * SPLIT_FILL of the resident slots, each part SPLIT_TILES tiles at least.
 * r101 (H200, float32 along axis 0, split forced off / on, ms): (16384,
 * 16384) 128 blocks of 264 slots 0.688 / 0.838 (one pass: no split);
 * (32768, 8192) 64 blocks 1.277 / 0.835; (65536, 4096) 2.548 / 0.859;
 * (262144, 1024) 10.12 / 0.899; (4194304, 64) 115.7 / 1.330. */
constexpr int SPLIT_FILL = 4;
constexpr int SPLIT_TILES = 8;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ unsigned long long nz(gs_bool8 x) { return x.v != 0; }
__device__ __forceinline__ unsigned long long nz(gs_f16 x) { return (x.bits & 0x7fffu) != 0; }
template <class T> __device__ __forceinline__ unsigned long long nz(T x) { return x != T(0); }

template <class T, bool COUNT> struct elem {
    using A = typename std::conditional<COUNT, unsigned long long, acc_of<T>>::type;
    static __device__ __forceinline__ A get(T x)
    {
        if constexpr (COUNT)
            return nz(x);
        else
            return cv(x);
    }
    static __device__ __forceinline__ A zero(int64_t len)
    {
        if constexpr (std::is_same<A, double>::value)
            return len > 0 ? -0.0 : 0.0; /* -0.0 + x == x: NumPy's sum of {-0.0} is -0.0 */
        else
            return 0;
    }
};

/* V elements of T loaded or stored as one 1..16-byte access. */
template <int B> struct raw_of;
template <> struct raw_of<16> { using t = uint4; };
template <> struct raw_of<8> { using t = uint2; };
template <> struct raw_of<4> { using t = unsigned; };
template <> struct raw_of<2> { using t = unsigned short; };
template <> struct raw_of<1> { using t = unsigned char; };
template <class T, int V> union vec {
    typename raw_of<sizeof(T) * V>::t raw;
    T e[V];
};
template <class T, int V> __device__ __forceinline__ vec<T, V> vload(const T *p)
{
    vec<T, V> v;
    v.raw = *(const typename raw_of<sizeof(T) * V>::t *)p;
    return v;
}

/* Elements per 16-byte load along a contiguous row; columns per thread in
 * red_cols / scan_cols (at most 4 accumulators per thread). */
template <class T> constexpr int row_vec() { return 16 / (int)sizeof(T); }
constexpr int NARROW_G = 8; /* threads a row for narrow rows (red_rows; 2..8-byte elements: V <= 8) */
template <class T> constexpr int col_vec() { return 16 / (int)sizeof(T) < 4 ? 16 / (int)sizeof(T) : 4; }

/* Output dtypes the scans store directly (out dtype == input dtype). */
template <class T> constexpr bool direct_ok()
{
    return std::is_same<T, float>::value || std::is_same<T, double>::value || std::is_same<T, int32_t>::value ||
           std::is_same<T, uint32_t>::value || std::is_same<T, int64_t>::value || std::is_same<T, uint64_t>::value;
}
template <class T, class A> __device__ __forceinline__ T to_out(A v)
{
    if constexpr (std::is_floating_point<T>::value)
        return (T)v;
    else {
        unsigned long long u = (unsigned long long)v; /* wraps to T's width: NumPy's modular sums */
        T y;
        memcpy(&y, &u, sizeof y);
        return y;
    }
}

struct ax_args {
    const char *a;
    int64_t outer, len, inner, s0, s1, s2; /* strides in elements */
    int odt;
    size_t osz;
    char *out;
    int64_t kparts;
    void *part;     /* kparts > 1: [part][outer * inner] accumulators */
    int cw;         /* red_cols / scan_cols: column threads per block (1..THREADS, a power of two) */
    int64_t chunks; /* red_cols / scan_cols: blocks per o; red_rows / scan_rows: > 0: the rows of the axis a
                     * part covers (the scan's parts of whole tiles), else the parts split it evenly */
    int64_t kred;   /* scan_cols with parts: red_cols parts per scan part (their totals in part) */
    int same_dtype; /* out has a's dtype (host side: the scans' direct stores) */
};

__device__ __forceinline__ void store(const ax_args &r, int64_t j, double f)
{
    gs_store_acc(r.out + (size_t)j * r.osz, r.odt, f, 0);
}
__device__ __forceinline__ void store(const ax_args &r, int64_t j, unsigned long long u)
{
    gs_store_acc(r.out + (size_t)j * r.osz, r.odt, 0.0, u);
}

/* The rows [k0, k1) of the axis that part `part` of kparts covers (red_rows, scan_rows: r.chunks). */
__device__ __forceinline__ void part_range(const ax_args &r, int64_t part, int64_t &k0, int64_t &k1)
{
    if (r.chunks > 0) {
        k0 = part * r.chunks;
        k1 = k0 + r.chunks < r.len ? k0 + r.chunks : r.len;
    } else {
        k0 = r.len * part / r.kparts;
        k1 = r.len * (part + 1) / r.kparts;
    }
}

__device__ __forceinline__ void prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/* The sum of each group of W lanes (W = 32: the warp) in the group's first lane. */
template <int W = 32, class A> __device__ __forceinline__ A warp_sum(A v)
{
#pragma unroll
    for (int d = W / 2; d > 0; d >>= 1)
        v += __shfl_down_sync(FULL, v, d);
    return v;
}

template <class A> __device__ __forceinline__ A warp_incl_scan(A v, int lane)
{
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        A y = __shfl_up_sync(FULL, v, d);
        if (lane >= d)
            v += y;
    }
    return v;
}

/* ---- sum / count_nonzero over rows (inner == 1) -------------------------------------------------------- */

/* Group g of G threads reduces row o = blockIdx.x * (THREADS / G) + g over
 * part blockIdx.y; VEC: the axis is contiguous (s1 == 1). */
template <class T, bool COUNT, int G, bool VEC> __global__ void __launch_bounds__(THREADS) red_rows(ax_args r)
{
    using E = elem<T, COUNT>;
    using A = typename E::A;
    constexpr int V = row_vec<T>();
    static_assert(!VEC || G >= V, "the scalar head (< V elements) is one element a thread");
    __shared__ A warps[THREADS / 32];
    const int t = threadIdx.x % G, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t o = (int64_t)blockIdx.x * (THREADS / G) + threadIdx.x / G;
    const int64_t part = blockIdx.y;
    int64_t k0, k1;
    part_range(r, part, k0, k1);
    const A zero = E::zero(r.len);
    A s0 = zero, s1 = zero, s2 = zero, s3 = zero;
    if (o < r.outer) {
        const T *row = (const T *)r.a + o * r.s0;
        bool vec_done = false;
        if (VEC) {
            const T *p = row + k0;
            int64_t n = k1 - k0;
            if ((uintptr_t)p % sizeof(T) == 0) {
                int64_t head = (int64_t)(((16 - ((uintptr_t)p & 15)) & 15) / sizeof(T));
                head = head < n ? head : n;
                if (t < head) /* head < V <= 16 <= G */
                    s0 += E::get(p[t]);
                p += head;
                n -= head;
                const int64_t nv = n / V;
                int64_t j = t;
                for (; j + 3 * G < nv; j += 4 * G) { /* four 16-byte loads in flight */
                    const vec<T, V> x0 = vload<T, V>(p + j * V), x1 = vload<T, V>(p + (j + G) * V),
                                    x2 = vload<T, V>(p + (j + 2 * G) * V), x3 = vload<T, V>(p + (j + 3 * G) * V);
#pragma unroll
                    for (int e = 0; e < V; e++) {
                        s0 += E::get(x0.e[e]);
                        s1 += E::get(x1.e[e]);
                        s2 += E::get(x2.e[e]);
                        s3 += E::get(x3.e[e]);
                    }
                }
                for (; j < nv; j += G) {
                    const vec<T, V> x0 = vload<T, V>(p + j * V);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        s1 += E::get(x0.e[e]);
                }
                for (int64_t q = nv * V + t; q < n; q += G)
                    s2 += E::get(p[q]);
                vec_done = true;
            }
        }
        if (!vec_done) {
            int64_t k = k0 + t;
            for (; k + 3 * G < k1; k += 4 * G) { /* four independent loads in flight */
                s0 += E::get(row[k * r.s1]);
                s1 += E::get(row[(k + G) * r.s1]);
                s2 += E::get(row[(k + 2 * G) * r.s1]);
                s3 += E::get(row[(k + 3 * G) * r.s1]);
            }
            for (; k < k1; k += G)
                s0 += E::get(row[k * r.s1]);
        }
    }
    A v = warp_sum<(G < 32 ? G : 32)>((s0 + s1) + (s2 + s3));
    if (G > 32) {
        if (lane == 0)
            warps[w] = v;
        __syncthreads();
        if (w != 0)
            return;
        v = lane < THREADS / 32 ? warps[lane] : zero;
        v = warp_sum(v);
    }
    if (t == 0 && o < r.outer) {
        if (r.kparts > 1)
            ((A *)r.part)[part * r.outer + o] = v;
        else
            store(r, o, v);
    }
}

/* ---- sum / count_nonzero over columns (inner > 1) ------------------------------------------------------ */

/* Block blockIdx.x = o * chunks + c, part blockIdx.y; thread (ct, g) =
 * (threadIdx.x % cw, threadIdx.x / cw) owns columns (c * cw + ct) * V ..
 * + V - 1 (V > 1: contiguous, aligned, inner % V == 0) and rows k0 + g,
 * k0 + g + nr, ... of the part. */
template <class T, bool COUNT, int V> __global__ void __launch_bounds__(THREADS) red_cols(ax_args r)
{
    using E = elem<T, COUNT>;
    using A = typename E::A;
    /* accumulators per column: 4 chains for scalar columns; 2 per 16-byte column (r103, H200, same run
     * against 1: (4096, 65536) float32 0.280 -> 0.250 ms, (1000, 200000) 0.234 -> 0.194, float64 (4096,
     * 32768) 0.272 -> 0.257; 8 rows in flight instead of 4 measured no faster, r102) */
    constexpr int NA = V == 1 ? 4 : 2;
    __shared__ A sh[THREADS * V];
    const int cw = r.cw, nr = THREADS / cw;
    const int ct = threadIdx.x % cw, g = threadIdx.x / cw;
    const int64_t o = blockIdx.x / r.chunks, c = blockIdx.x % r.chunks;
    const int64_t i0 = (c * cw + ct) * V;
    const int64_t part = blockIdx.y;
    const int64_t k0 = r.len * part / r.kparts, k1 = r.len * (part + 1) / r.kparts;
    const A zero = E::zero(r.len);
    A s[NA][V];
#pragma unroll
    for (int u = 0; u < NA; u++)
#pragma unroll
        for (int e = 0; e < V; e++)
            s[u][e] = zero;
    if (i0 < r.inner) {
        const T *col = (const T *)r.a + o * r.s0 + i0 * r.s2;
        int64_t k = k0 + g;
        for (; k + 3 * nr < k1; k += 4 * nr) { /* four rows in flight */
            vec<T, V> x[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                if (V > 1)
                    x[u] = vload<T, V>(col + (k + u * nr) * r.s1);
                else
                    x[u].e[0] = col[(k + u * nr) * r.s1];
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int e = 0; e < V; e++)
                    s[u % NA][e] += E::get(x[u].e[e]);
        }
        for (; k < k1; k += nr) {
            vec<T, V> x;
            if (V > 1)
                x = vload<T, V>(col + k * r.s1);
            else
                x.e[0] = col[k * r.s1];
#pragma unroll
            for (int e = 0; e < V; e++)
                s[0][e] += E::get(x.e[e]);
        }
    }
    A tot[V];
#pragma unroll
    for (int e = 0; e < V; e++) {
        tot[e] = s[0][e];
#pragma unroll
        for (int u = 1; u < NA; u++)
            tot[e] += s[u][e];
    }
    if (nr > 1) {
#pragma unroll
        for (int e = 0; e < V; e++)
            sh[threadIdx.x * V + e] = tot[e];
        __syncthreads();
        if (g != 0)
            return;
#pragma unroll
        for (int e = 0; e < V; e++)
            for (int q = 1; q < nr; q++)
                tot[e] += sh[(q * cw + ct) * V + e];
    }
    if (i0 >= r.inner)
        return;
    const int64_t n = r.outer * r.inner;
#pragma unroll
    for (int e = 0; e < V; e++) {
        const int64_t j = o * r.inner + i0 + e;
        if (r.kparts > 1)
            ((A *)r.part)[part * n + j] = tot[e];
        else
            store(r, j, tot[e]);
    }
}

/* out[j] = the parts of j added in part order. */
template <class A> __global__ void finish_kernel(ax_args r)
{
    const int64_t n = r.outer * r.inner;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x) {
        A s = std::is_same<A, double>::value ? (A)-0.0 : (A)0;
        for (int64_t p = 0; p < r.kparts; p++)
            s += ((const A *)r.part)[p * n + j];
        store(r, j, s);
    }
}

/* The same with a warp an output, for many parts (FINISH_WARP_PARTS and up): lane l adds parts l, l + 32, ...
 * in order, then the warp's fixed tree -- an order fixed by the part count, as the thread-an-output kernel's.
 * One thread walking 1,056 parts (a column sum of (156250, 64) float64: the axis in 1,056 parts) waited on
 * each few loads in turn: ~75 us of a 92 us call against torch's 80 (r272, H200). */
constexpr int64_t FINISH_WARP_PARTS = 32;
template <class A> __global__ void finish_warp_kernel(ax_args r)
{
    const int64_t n = r.outer * r.inner;
    const int lane = threadIdx.x & 31;
    const int64_t w0 = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t j = w0; j < n; j += nw) {
        A s = std::is_same<A, double>::value ? (A)-0.0 : (A)0;
        for (int64_t p = lane; p < r.kparts; p += 32)
            s += ((const A *)r.part)[p * n + j];
        s = warp_sum(s);
        if (lane == 0)
            store(r, j, s);
    }
}

/* ---- cumsum along rows (inner == 1) -------------------------------------------------------------------- */

/* Group g of G threads scans row o = blockIdx.x * (THREADS / G) + g in
 * tiles of G x R x V elements; element (q, t, e) of a tile (vector slot q,
 * thread t, lane e of the vector) sits at tile + (q * G + t) * V + e.  V > 1:
 * the row is contiguous and 16-byte aligned, as is the output row; DIRECT:
 * out has the input's dtype (stored as T, vectors when V > 1). */
template <class T, int V, int R, int G, bool DIRECT, bool PARTS = false>
__global__ void __launch_bounds__(THREADS, SCAN_MINB) scan_rows(ax_args r)
{
    using E = elem<T, false>;
    using A = typename E::A;
    constexpr int NW = G / 32; /* warps per row */
    constexpr int TILE = G * R * V;
    static_assert(NW == 1 || NW * R <= 32, "one warp scans the warp totals of a tile");
    __shared__ A wtot[NW > 1 ? NW : 1][R];     /* NW > 1: warp x's total of slot q */
    __shared__ A wpre[NW > 1 ? NW : 1][R];     /* ... the totals of the warps before x */
    __shared__ A qbase[R];                     /* carry + the totals of the slots before q */
    const int t = threadIdx.x % G, lane = threadIdx.x & 31, wg = t >> 5;
    const int64_t o = (int64_t)blockIdx.x * (THREADS / G) + threadIdx.x / G;
    if (NW == 1 && o >= r.outer)
        return; /* a whole warp: no block-wide barrier when NW == 1 */
    const int64_t len = r.len, s1 = r.s1;
    const T *row = (const T *)r.a + o * r.s0;
    T *orow = (T *)r.out + o * len; /* DIRECT only */
    const int64_t obase = o * len;
    const A zero = E::zero(len); /* -0.0 for floats: prefixes of -0.0 stay -0.0, as in NumPy */
    int64_t pk0 = 0, pk1 = len; /* PARTS: this block's part of the axis (whole tiles) */
    if constexpr (PARTS)
        part_range(r, blockIdx.y, pk0, pk1);
    const int64_t k0 = pk0, k1 = pk1;
    T cur[R][V];
    auto load = [&](T(&b)[R][V], int64_t t0) {
        if (V > 1 && t0 + TILE <= k1) { /* a whole tile: 16-byte loads at constant offsets */
            const T *p = row + t0 + t * V;
#pragma unroll
            for (int q = 0; q < R; q++) {
                const vec<T, V> x = vload<T, V>(p + q * G * V);
#pragma unroll
                for (int e = 0; e < V; e++)
                    b[q][e] = x.e[e];
            }
        } else {
#pragma unroll
            for (int q = 0; q < R; q++)
#pragma unroll
                for (int e = 0; e < V; e++) {
                    const int64_t k = t0 + ((int64_t)q * G + t) * V + e;
                    b[q][e] = k < k1 ? row[k * s1] : T{};
                }
        }
    };
    A carry = zero; /* NW == 1: every lane; NW > 1: warp 0 */
    if constexpr (PARTS) {
        if (o < r.outer) /* the totals of the parts before this one (red_rows), in part order */
            for (int64_t q = 0; q < (int64_t)blockIdx.y; q++)
                carry += ((const A *)r.part)[q * r.outer + o];
    }
    for (int64_t t0 = k0; t0 < k1; t0 += TILE) {
        load(cur, t0);
        if (V > 1 && t0 + 2 * TILE <= k1) /* the next tile on its way to L2 while this one is scanned */
#pragma unroll
            for (int q = 0; q < R; q++)
                prefetch_l2(row + t0 + TILE + t * V + q * G * V);
        A incl[R];
#pragma unroll
        for (int q = 0; q < R; q++) {
            A s = zero;
#pragma unroll
            for (int e = 0; e < V; e++)
                s += E::get(cur[q][e]);
            incl[q] = warp_incl_scan(s, lane);
        }
        if (NW > 1) {
            if (lane == 31)
#pragma unroll
                for (int q = 0; q < R; q++)
                    wtot[wg][q] = incl[q];
            __syncthreads();
            if (wg == 0) { /* lane q * NW + x: a scan over the warps x of slot q */
                const int q = lane / NW, x = lane % NW;
                const bool in = lane < NW * R;
                A inc = in ? wtot[x][q] : zero;
#pragma unroll
                for (int d = 1; d < NW; d <<= 1) {
                    A y = __shfl_up_sync(FULL, inc, d);
                    if (x >= d)
                        inc += y;
                }
                A ex = __shfl_up_sync(FULL, inc, 1);
                if (x == 0)
                    ex = zero;
                if (in)
                    wpre[x][q] = ex;
#pragma unroll
                for (int qq = 0; qq < R; qq++) {
                    const A tot = __shfl_sync(FULL, inc, qq * NW + NW - 1);
                    if (lane == 0)
                        qbase[qq] = carry;
                    carry += tot;
                }
            }
            __syncthreads(); /* wtot is free again; wpre and qbase are read before the next tile's first barrier */
        }
        const bool whole = V > 1 && t0 + TILE <= k1;
#pragma unroll
        for (int q = 0; q < R; q++) {
            A excl = __shfl_up_sync(FULL, incl[q], 1); /* exclusive: no subtraction, so no rounding */
            if (lane == 0)
                excl = zero;
            A run;
            if (NW > 1) {
                run = (qbase[q] + wpre[wg][q]) + excl;
            } else {
                run = carry + excl;
                carry += __shfl_sync(FULL, incl[q], 31);
            }
            if (DIRECT && whole) {
                vec<T, V> y;
#pragma unroll
                for (int e = 0; e < V; e++) {
                    run += E::get(cur[q][e]);
                    y.e[e] = to_out<T>(run);
                }
                *(typename raw_of<sizeof(T) * V>::t *)(orow + t0 + t * V + q * G * V) = y.raw;
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) {
                    run += E::get(cur[q][e]);
                    const int64_t k = t0 + ((int64_t)q * G + t) * V + e;
                    if (k < k1) {
                        if (DIRECT)
                            orow[k] = to_out<T>(run);
                        else
                            store(r, obase + k, run);
                    }
                }
            }
        }
    }
}

/* ---- cumsum along a strided axis (inner > 1) ----------------------------------------------------------- */

/* Blocks and threads as in red_cols; a tile is nr x U rows, group g scans
 * rows t0 + g * U .. + U - 1 of its V columns.  V > 1: the columns are
 * contiguous, aligned, inner % V == 0. */
template <class T, int V, int U, bool DIRECT> __global__ void __launch_bounds__(THREADS, COLS_MINB) scan_cols(ax_args r)
{
    using E = elem<T, false>;
    using A = typename E::A;
    __shared__ A sh[THREADS * V];
    const int cw = r.cw, nr = THREADS / cw;
    const int ct = threadIdx.x % cw, g = threadIdx.x / cw;
    const int64_t o = blockIdx.x / r.chunks, c = blockIdx.x % r.chunks;
    const int64_t i0 = (c * cw + ct) * V;
    const bool live = i0 < r.inner;
    const int64_t part = blockIdx.y;
    /* rows [k0, k1) of the axis: the whole axis, or part `part` of kparts (their totals in r.part) */
    const int64_t k0 = r.len * part / r.kparts, k1 = r.len * (part + 1) / r.kparts;
    const int64_t len = r.len, tr = (int64_t)nr * U, s1 = r.s1, inner = r.inner;
    /* this thread's first row of the tile at t0 = 0, in and out */
    const T *col = (const T *)r.a + o * r.s0 + i0 * r.s2 + (int64_t)g * U * s1;
    const int64_t obase = o * len * inner + i0 + (int64_t)g * U * inner;
    const A zero = E::zero(len);
    T cur[U][V];
    auto load = [&](T(&b)[U][V], int64_t t0) {
        const T *p = col + t0 * s1;
        const int64_t k = t0 + (int64_t)g * U;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (live && k + u < k1) {
                if (V > 1) {
                    const vec<T, V> x = vload<T, V>(p + u * s1);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        b[u][e] = x.e[e];
                } else {
                    b[u][0] = p[u * s1];
                }
            } else {
#pragma unroll
                for (int e = 0; e < V; e++)
                    b[u][e] = T{};
            }
        }
    };
    A carry[V];
#pragma unroll
    for (int e = 0; e < V; e++)
        carry[e] = zero;
    if (part > 0 && live) { /* the totals of the rows before this part (kred sums a part), in order */
        const A *tot = (const A *)r.part + o * inner + i0;
        const int64_t n = r.outer * inner;
        for (int64_t q = 0; q < part * r.kred; q++)
#pragma unroll
            for (int e = 0; e < V; e++)
                carry[e] += tot[q * n + e];
    }
    for (int64_t t0 = k0; t0 < k1; t0 += tr) {
        load(cur, t0);
        if (live && t0 + 2 * tr <= k1) /* the next tile on its way to L2 while this one is scanned */
#pragma unroll
            for (int u = 0; u < U; u++)
                prefetch_l2(col + (t0 + tr + u) * s1);
        A pre[V];
#pragma unroll
        for (int e = 0; e < V; e++) {
            A s = zero;
#pragma unroll
            for (int u = 0; u < U; u++)
                s += E::get(cur[u][e]);
            pre[e] = s; /* this group's total, for now */
        }
        if (nr > 1) {
#pragma unroll
            for (int e = 0; e < V; e++)
                sh[threadIdx.x * V + e] = pre[e];
            __syncthreads();
#pragma unroll
            for (int e = 0; e < V; e++) { /* every group adds the group totals in the same order */
                A acc = carry[e];
#pragma unroll 1
                for (int q = 0; q < nr; q++) {
                    if (q == g)
                        pre[e] = acc;
                    acc += sh[(q * cw + ct) * V + e];
                }
                carry[e] = acc;
            }
            __syncthreads(); /* sh is rewritten by the next tile */
        } else {
#pragma unroll
            for (int e = 0; e < V; e++) {
                const A s = pre[e];
                pre[e] = carry[e];
                carry[e] += s;
            }
        }
        if (live) {
            const int64_t k = t0 + (int64_t)g * U;
            const int64_t ob = obase + t0 * inner;
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (k + u >= k1)
                    break;
                if (DIRECT && V > 1) {
                    vec<T, V> y;
#pragma unroll
                    for (int e = 0; e < V; e++) {
                        pre[e] += E::get(cur[u][e]);
                        y.e[e] = to_out<T>(pre[e]);
                    }
                    *(typename raw_of<sizeof(T) * V>::t *)((T *)r.out + ob + u * inner) = y.raw;
                } else {
#pragma unroll
                    for (int e = 0; e < V; e++) {
                        pre[e] += E::get(cur[u][e]);
                        if (DIRECT)
                            ((T *)r.out)[ob + u * inner + e] = to_out<T>(pre[e]);
                        else
                            store(r, ob + u * inner + e, pre[e]);
                    }
                }
            }
        }
    }
}

/* ---- launches ------------------------------------------------------------------------------------------ */

int64_t pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* Column threads per block: a warp's worth (whole rows per load) when the
 * columns allow, fewer for narrow views so the rest of the block splits
 * the rows. */
void plan_cols(ax_args &r, int v, int top)
{
    const int64_t threads = (r.inner + v - 1) / v;
    const int64_t cw = pow2_at_least(threads);
    r.cw = (int)(cw < top ? cw : top);
    r.chunks = (threads + r.cw - 1) / r.cw;
}

/* Parts along the axis for `blocks` blocks per part: the fewest that fill
 * the resident slots in whole waves (within 10 %), else the best fill. */
int64_t choose_parts(int64_t blocks, int64_t resident, int64_t cap)
{
    cap = cap < 65535 ? cap : 65535;
    int64_t top = 4 * resident / blocks + 1;
    top = top < cap ? top : cap;
    int64_t best = 1;
    double best_cost = 1e300;
    for (int64_t p = 1; p <= top; p++) {
        const int64_t n = blocks * p, waves = (n + resident - 1) / resident;
        const double cost = (double)(waves * resident) / (double)n; /* slots held / slots used */
        if (cost <= 1.1)
            return p;
        if (cost < best_cost)
            best = p, best_cost = cost;
    }
    return best;
}

/* The columns kernels' vector width applies: contiguous, aligned columns,
 * inner a multiple of V; for scans also an aligned output. */
bool cols_vec_ok(const ax_args &r, size_t es, int v, bool scan)
{
    if (v <= 1 || r.s2 != 1 || r.inner % v != 0 || r.s1 % v != 0 || (r.outer > 1 && r.s0 % v != 0))
        return false;
    if ((uintptr_t)r.a % (es * v) != 0)
        return false;
    return !scan || (uintptr_t)r.out % (r.osz * v) == 0;
}

/* scan_rows kernel k over `parts` parts of whole tiles: red_rows sums each part of each row, then every part
 * is scanned from the totals before it. */
template <class T>
gs_status scan_rows_parts(ax_args &r, const void *k, int64_t blocks, int64_t parts, int64_t tile, cudaStream_t s)
{
    const int64_t per = (r.len + parts - 1) / parts;
    r.chunks = (per + tile - 1) / tile * tile; /* the rows of a part: whole tiles */
    r.kparts = (r.len + r.chunks - 1) / r.chunks;
    const void *rk = r.s1 == 1 ? (const void *)red_rows<T, false, THREADS, true>
                               : (const void *)red_rows<T, false, THREADS, false>;
    void *args[] = {&r};
    void *d_part = NULL;
    gs_status st = GS_OK;
    GS_CUDA_CHECK(gs_malloc_async(&d_part, (size_t)(r.kparts * r.outer) * 8, s));
    r.part = d_part;
    GS_CUDA_GOTO(cudaLaunchKernel(rk, dim3((unsigned)blocks, (unsigned)r.kparts), dim3(THREADS), args, 0, s));
    GS_CUDA_GOTO(cudaLaunchKernel(k, dim3((unsigned)blocks, (unsigned)r.kparts), dim3(THREADS), args, 0, s));
fail:
    gs_free_async(d_part, s, &st);
    return st;
}

template <class T> gs_status launch_scan(ax_args &r, const gs_device_info *dev, cudaStream_t s)
{
    (void)dev;
    const size_t es = sizeof(T);
    const bool direct = direct_ok<T>() && r.same_dtype;
    void *args[] = {&r};
    if (r.inner == 1) {
        constexpr int V = row_vec<T>() < 4 ? row_vec<T>() : 4; /* 16 bytes for 4- and 8-byte types */
        constexpr int R = sizeof(T) == 8 ? 4 : 16 / V;
        /* vectors: contiguous 16-byte-aligned rows in and out (and a direct store) */
        const bool vec_ok = V > 1 && direct && r.s1 == 1 && sizeof(T) * V == 16 && (uintptr_t)r.a % 16 == 0 &&
                            (r.outer == 1 || (r.s0 * (int64_t)es) % 16 == 0) && (uintptr_t)r.out % 16 == 0 &&
                            (r.len * (int64_t)es) % 16 == 0;
        const bool wide = r.len > 32 * 16; /* a block per row; else a warp per row */
        const int rows_per_block = wide ? 1 : THREADS / 32;
        const int64_t blocks = (r.outer + rows_per_block - 1) / rows_per_block;
        if (blocks > 0x7fffffff)
            return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: %lld rows", (long long)r.outer);
        const void *k, *kp = NULL; /* kp: the wide kernel with parts */
        int64_t tile = wide ? THREADS * 4 : 32 * 8; /* elements a group scans a tile */
        if constexpr (direct_ok<T>() && V > 1) {
            if (vec_ok) {
                k = wide ? (const void *)scan_rows<T, V, R, THREADS, true> : (const void *)scan_rows<T, V, R, 32, true>;
                kp = (const void *)scan_rows<T, V, R, THREADS, true, true>;
                tile = (wide ? THREADS : 32) * R * V;
            } else if (direct) {
                k = wide ? (const void *)scan_rows<T, 1, 4, THREADS, true> : (const void *)scan_rows<T, 1, 8, 32, true>;
                kp = (const void *)scan_rows<T, 1, 4, THREADS, true, true>;
            } else {
                k = wide ? (const void *)scan_rows<T, 1, 4, THREADS, false> : (const void *)scan_rows<T, 1, 8, 32, false>;
                kp = (const void *)scan_rows<T, 1, 4, THREADS, false, true>;
            }
        } else {
            (void)vec_ok;
            k = wide ? (const void *)scan_rows<T, 1, 4, THREADS, false> : (const void *)scan_rows<T, 1, 8, 32, false>;
            kp = (const void *)scan_rows<T, 1, 4, THREADS, false, true>;
        }
        /* Few long rows (a block a row, the blocks at most a quarter of the resident slots): the axis splits
         * into parts of whole tiles as in scan_cols -- red_rows sums every part, then each part's scan starts
         * from the totals of the parts before it. */
        int64_t parts = 1;
        if (wide) {
            int64_t resident;
            gs_status st = gs_cuda_resident_blocks(kp, THREADS, 0, dev, &resident); /* remembered by the runtime */
            if (st != GS_OK)
                return st;
            if (blocks * SPLIT_FILL <= resident && r.len >= 2 * SPLIT_TILES * tile)
                parts = choose_parts(blocks, resident, r.len / (SPLIT_TILES * tile));
        }
        if (parts <= 1) {
            GS_CUDA_CHECK(cudaLaunchKernel(k, dim3((unsigned)blocks), dim3(THREADS), args, 0, s));
            return GS_OK;
        }
        return scan_rows_parts<T>(r, kp, blocks, parts, tile, s);
    }
    constexpr int CV = col_vec<T>();
    const bool vec_ok = direct && cols_vec_ok(r, es, CV, true);
    const int v = vec_ok ? CV : 1;
    const void *k;
    if constexpr (direct_ok<T>() && CV > 1) {
        if (vec_ok)
            k = (const void *)scan_cols<T, CV, COLS_U, true>;
        else if (direct)
            k = (const void *)scan_cols<T, 1, 8, true>;
        else
            k = (const void *)scan_cols<T, 1, 8, false>;
    } else {
        (void)vec_ok;
        k = (const void *)scan_cols<T, 1, 8, false>;
    }
    int64_t resident;
    gs_status st = gs_cuda_resident_blocks(k, THREADS, 0, dev, &resident); /* remembered by the runtime */
    if (st != GS_OK)
        return st;
    /* 64 column threads (a block reads 1 KiB of a row of 16-byte columns) where those blocks still fill 90 %
     * of the resident slots, else 32 (r100, H200, 8-row tiles: (4096, 65536) float32 0.566 ms against
     * 0.578, float64 (4096, 32768) 0.552 against 0.664; (16384, 16384) float32: 64 blocks of 64 columns
     * 1.01 ms against 128 blocks of 32 columns 0.68) */
    plan_cols(r, v, 64);
    if (r.cw == 64 && (double)(r.outer * r.chunks) < 0.9 * (double)resident)
        plan_cols(r, v, 32);
    const int64_t blocks = r.outer * r.chunks;
    if (blocks > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: grid of %lld blocks", (long long)blocks);
    const int64_t tile_rows = (int64_t)(THREADS / r.cw) * (vec_ok ? COLS_U : 8);
    /* Few columns: one pass leaves slots empty and every column a long serial chain (r100: (65536, 4096)
     * float32, 32 blocks, 5.06 ms).  Then the axis splits into parts: red_cols sums each part (kred parts
     * of its own per scan part, enough to fill its slots), and each scan block starts from the totals of
     * the parts before its own -- the input read twice, the output written once, every block busy. */
    int64_t parts = 1, kred = 1;
    if (blocks * SPLIT_FILL <= resident && r.len >= 2 * SPLIT_TILES * tile_rows)
        parts = choose_parts(blocks, resident, r.len / (SPLIT_TILES * tile_rows));
    void *d_part = NULL;
    const int scan_cw = r.cw;
    const int64_t scan_chunks = r.chunks;
    if (parts > 1) {
        constexpr int RV = col_vec<T>();
        const bool rvec = cols_vec_ok(r, es, RV, false);
        plan_cols(r, rvec ? RV : 1, 32);
        const void *rk = rvec ? (const void *)red_cols<T, false, RV> : (const void *)red_cols<T, false, 1>;
        int64_t rres;
        st = gs_cuda_resident_blocks(rk, THREADS, 0, dev, &rres);
        if (st != GS_OK)
            return st;
        const int64_t rblocks = r.outer * r.chunks * parts;
        kred = choose_parts(rblocks, rres, r.len / (parts * (THREADS / r.cw) * 16));
        kred = kred < 1 ? 1 : kred;
        r.kparts = parts * kred;
        if (r.kparts > 65535)
            r.kparts = parts, kred = 1;
        GS_CUDA_CHECK(gs_malloc_async(&d_part, (size_t)(r.kparts * r.outer * r.inner) * 8, s));
        r.part = d_part;
        GS_CUDA_GOTO(cudaLaunchKernel(rk, dim3((unsigned)(r.outer * r.chunks), (unsigned)r.kparts), dim3(THREADS),
                                      args, 0, s));
    }
    r.cw = scan_cw, r.chunks = scan_chunks, r.kparts = parts, r.kred = kred;
    GS_CUDA_GOTO(cudaLaunchKernel(k, dim3((unsigned)blocks, (unsigned)parts), dim3(THREADS), args, 0, s));
fail:
    gs_free_async(d_part, s, &st);
    return st;
}

/* red_rows of G threads a row: count or sum, contiguous rows (v) or strided. */
template <class T, int G> const void *rows_kernel(bool count, bool v)
{
    return count ? (v ? (const void *)red_rows<T, true, G, true> : (const void *)red_rows<T, true, G, false>)
                 : (v ? (const void *)red_rows<T, false, G, true> : (const void *)red_rows<T, false, G, false>);
}

template <class T> gs_status launch(ax_args &r, int op, const gs_device_info *dev, cudaStream_t s)
{
    if (op == GS_AXIS_CUMSUM)
        return launch_scan<T>(r, dev, s);
    const size_t es = sizeof(T);
    const int64_t cells = r.outer * r.inner;
    const bool count = op == GS_AXIS_COUNT_NONZERO;
    const void *k;
    int64_t blocks, len_min; /* len_min: the fewest elements per part along the axis */
    if (r.inner == 1) {
        const bool wide = r.len > 2048;
        /* Rows of at most 64 16-byte vectors (2..8-byte elements): 8 threads a row, four rows a warp -- up to
         * four vectors a thread in flight instead of one or two, and a quarter of the blocks.  A warp a row
         * read 156,250 rows of 64 float64 in 73.7 us against CuPy's 47.9 (r272, H200; 18 us of reading). */
        const bool narrow = !wide && sizeof(T) >= 2 && r.len * (int64_t)es <= 64 * 16;
        const bool v = r.s1 == 1;
        if (wide)
            k = rows_kernel<T, THREADS>(count, v);
        else
            k = rows_kernel<T, 32>(count, v);
        if constexpr (sizeof(T) >= 2)
            if (narrow)
                k = rows_kernel<T, NARROW_G>(count, v);
        const int g = wide ? THREADS : narrow ? NARROW_G : 32;
        blocks = (r.outer + THREADS / g - 1) / (THREADS / g);
        len_min = (int64_t)g * 16 * 4;
    } else {
        constexpr int CV = col_vec<T>();
        const bool vec_ok = cols_vec_ok(r, es, CV, false);
        plan_cols(r, vec_ok ? CV : 1, 32);
        if (vec_ok)
            k = count ? (const void *)red_cols<T, true, CV> : (const void *)red_cols<T, false, CV>;
        else
            k = count ? (const void *)red_cols<T, true, 1> : (const void *)red_cols<T, false, 1>;
        blocks = r.outer * r.chunks;
        len_min = (int64_t)(THREADS / r.cw) * 16;
    }
    if (blocks > 0x7fffffff)
        return gs_fail(GS_ERR_OVERFLOW, "reduce_axis: grid of %lld blocks", (long long)blocks);
    /* split the axis when the blocks cannot fill the GPU (one wave at most) */
    r.kparts = 1;
    int64_t resident;
    gs_status st = gs_cuda_resident_blocks(k, THREADS, 0, dev, &resident); /* remembered by the runtime */
    if (st != GS_OK)
        return st;
    if (blocks < 2 * resident && r.len >= 2 * len_min)
        r.kparts = choose_parts(blocks, resident, r.len / len_min);
    void *d_part = NULL;
    if (r.kparts > 1) {
        GS_CUDA_CHECK(gs_malloc_async(&d_part, (size_t)(r.kparts * cells) * 8, s));
        r.part = d_part;
    }
    void *args[] = {&r};
    GS_CUDA_GOTO(cudaLaunchKernel(k, dim3((unsigned)blocks, (unsigned)r.kparts), dim3(THREADS), args, 0, s));
    if (r.kparts > 1) {
        const bool warps = r.kparts >= FINISH_WARP_PARTS;
        int64_t g = (cells * (warps ? 32 : 1) + THREADS - 1) / THREADS;
        g = g < 65535 ? g : 65535;
        const bool dbl = std::is_same<typename elem<T, false>::A, double>::value && !count;
        const void *fk = warps ? (dbl ? (const void *)finish_warp_kernel<double>
                                      : (const void *)finish_warp_kernel<unsigned long long>)
                               : (dbl ? (const void *)finish_kernel<double>
                                      : (const void *)finish_kernel<unsigned long long>);
        GS_CUDA_GOTO(cudaLaunchKernel(fk, dim3((unsigned)g), dim3(THREADS), args, 0, s));
    }
fail:
    gs_free_async(d_part, s, &st);
    return st;
}

gs_status launch_dtype(gs_dtype dt, ax_args &r, int op, const gs_device_info *dev, cudaStream_t s)
{
    return gs_dtype_switch(dt, [&](auto t) { return launch<GS_TYPE(t)>(r, op, dev, s); });
}

} // namespace
extern "C" gs_status gs_cuda_reduce_axis(const gs_array *a, const int64_t shape[3], const int64_t strides[3], int op,
                                         gs_array *out, void *stream)
{
    int64_t nout;
    gs_status st = gs_axis_check(a, shape, op, out, &nout);
    if (st != GS_OK)
        return st;
    const int64_t total = shape[0] * shape[1] * shape[2];
    const int on_host = a->device == GS_HOST;
    const bool c_contiguous = (strides[2] == 1 || shape[2] == 1) && (strides[1] == shape[2] || shape[1] == 1) &&
                              (strides[0] == shape[1] * shape[2] || shape[0] == 1);
    if (on_host && total > 0 && !c_contiguous)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "reduce_axis: a host view must be C-contiguous to be staged");
    if (nout == 0)
        return GS_OK;
    gs_cuda_call call(a->device, stream);
    st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const size_t es = gs_dtype_size(a->dtype), osz = gs_dtype_size(out->dtype);
    void *d_a = NULL, *d_out = NULL;
    ax_args r;
    memset(&r, 0, sizeof r);
    r.outer = shape[0], r.len = shape[1], r.inner = shape[2];
    r.s0 = strides[0], r.s1 = strides[1], r.s2 = strides[2];
    r.odt = out->dtype;
    r.osz = osz;
    r.kparts = 1;
    r.same_dtype = out->dtype == a->dtype;
    r.a = (const char *)a->data;
    r.out = (char *)out->data;
    if (on_host) { /* stage the C-contiguous block and the result */
        if (total > 0) {
            GS_CUDA_GOTO(gs_malloc_async(&d_a, (size_t)total * es, s));
            GS_GOTO(gs_cuda_h2d(d_a, a->data, (size_t)total * es, s));
        }
        GS_CUDA_GOTO(gs_malloc_async(&d_out, (size_t)nout * osz, s));
        r.a = (const char *)d_a;
        r.out = (char *)d_out;
    }
    st = launch_dtype(a->dtype, r, op, dev, s);
    if (st != GS_OK)
        goto fail;
    GS_CUDA_GOTO(cudaGetLastError());
    if (on_host)
        GS_GOTO(gs_cuda_d2h(out->data, d_out, (size_t)nout * osz, s));
fail:
    if (d_a)
        cudaFreeAsync(d_a, s);
    if (d_out)
        cudaFreeAsync(d_out, s);
    return st;
}
