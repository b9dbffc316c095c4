/*
 * packbits and count_nonzero (CUDA backend): warp votes, written the way
 * seed 003 prescribes for independent thread scheduling.
 *
 * Every loop runs the same number of trips on all 32 lanes of a warp (lanes
 * past the end carry ok == false), so each vote is made by the whole warp.
 * The mask of a vote is never __activemask(): the in-range lanes are first
 * found with __ballot_sync(FULL, ok), and the predicate is then voted by
 * exactly those lanes with that mask.
 *
 *   scalar path (any stride, and the tail): one element per lane; the
 *     ballot of 32 predicates is 4 output bytes, written by lanes 0..3.
 *   vector path (contiguous, 16-byte aligned): each lane loads 16 bytes, V
 *     elements.  For V >= 8 a lane's predicates are whole output bytes, packed
 *     in registers; for V < 8 (32- and 64-bit types) the bytes straddle lanes,
 *     and V ballots -- ballot k holds predicate k of every lane -- are the
 *     transposition: byte j gathers its 8 bits from them.  packbits of 8-bit
 *     data into 16-byte-aligned output takes 8 warp-chunks a trip and writes
 *     their 512 output bytes as one 16-byte store a lane, staged in shared
 *     memory (__syncwarp orders the stage's writes and reads).
 * count_nonzero: the vector path adds each lane's own predicates (__popc of
 * its V bits) and the warp sums those lanes' counts by shuffles once, at the
 * end -- one ballot per element instead made a 1 GiB count of bytes 16
 * ballots per load and instruction-bound (70-72% of read on the H100, r48);
 * the scalar path adds __popc of its ballots (the same in every voting
 * lane).  One atomicAdd per warp at the end.
 */
#include "dtypes.cuh"
#include "elements.cuh"
#include "kernel_refs.cuh"
#include "stage.cuh"

#include <cuda_fp16.h>

namespace {

#define FULL 0xffffffffu

struct bits_args {
    const void *x;
    int64_t n, stride;
    int has_thr;
    double thr;
    int little;
    int simd; /* 8-bit data: SIMD byte compares (GPUSYNC_BITS_SIMD=0: per element, for before/after) */
    uint8_t *out;
    unsigned long long *count;
};

/* x != 0, or x > thr (thr already in x's precision for floats). */
template <class T> __device__ __forceinline__ bool pred(T v, const bits_args &r)
{
    return r.has_thr ? (double)v > r.thr : v != T(0);
}
template <> __device__ __forceinline__ bool pred<gs_f16>(gs_f16 v, const bits_args &r)
{
    return r.has_thr ? (double)__half2float(__ushort_as_half(v.bits)) > r.thr : (v.bits & 0x7fffu) != 0;
}

/* Bit m of an output byte for element m: bitorder big puts element 0 in bit 7. */
__device__ __forceinline__ unsigned place(unsigned bit, int m, int little) { return bit << (little ? m : 7 - m); }

/* 8-bit data: x > thr (or x != 0) as (x ^ flip) >= tb on the raw byte,
 * tb in [0, 256] (0: every byte, 256: none); flip = 0x80 in every byte maps
 * int8's order onto unsigned bytes. */
template <class T> __device__ __forceinline__ void byte_threshold(const bits_args &r, unsigned *tb, unsigned *flip)
{
    *tb = 1; /* x != 0 */
    *flip = 0;
    if (sizeof(T) != 1 || !r.has_thr)
        return;
    double t = r.thr;
    if (std::is_signed<T>::value) {
        t += 128.0;
        *flip = 0x80808080u;
    }
    if (!(t == t) || t >= 255.0)
        *tb = 256;
    else if (t < 0.0)
        *tb = 0;
    else
        *tb = (unsigned)floor(t) + 1u;
}

/* Bits 0..3: (byte k of w) >= tb, for tb in [0, 256]. */
__device__ __forceinline__ unsigned byte_preds(unsigned w, unsigned tb)
{
    unsigned hi; /* bit 8k + 7: byte k's predicate */
    if (tb == 1) /* nonzero bytes: the top bit of (low 7 bits + 0x7f) | byte */
        hi = (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
    else if (tb == 0)
        hi = 0x80808080u;
    else if (tb >= 256)
        hi = 0;
    else
        hi = __vcmpgeu4(w, tb * 0x01010101u) & 0x80808080u;
    /* gather bits 7, 15, 23, 31 into bits 0..3: byte k lands on bit 21 + k */
    return (((hi >> 7) * 0x00204081u) >> 21) & 0xfu;
}

/* Scalar path over elements [e0, n): one element per lane, ballots. */
template <class T, bool COUNT>
__device__ __forceinline__ unsigned long long scalar_part(const T *x, const bits_args &r, int64_t e0, int64_t warp,
                                                          int64_t nwarps, int lane)
{
    unsigned long long cnt = 0;
    for (int64_t base = e0 + warp * 32; base < r.n; base += nwarps * 32) { /* same trips for every lane */
        const int64_t i = base + lane;
        const bool ok = i < r.n;
        const unsigned in = __ballot_sync(FULL, ok); /* the in-range lanes: the mask of the vote */
        unsigned bits = 0;
        if (ok)
            bits = __ballot_sync(in, pred(x[i * r.stride], r));
        if (COUNT) {
            cnt += __popc(bits);
        } else if (ok && lane < 4 && (lane * 8) < (int)__popc(in)) { /* lanes 0..3 write a byte each */
            unsigned byte = 0;
            const unsigned b = bits >> (8 * lane);
#pragma unroll
            for (int m = 0; m < 8; m++)
                byte |= place((b >> m) & 1u, m, r.little);
            r.out[base / 8 + lane] = (uint8_t)byte;
        }
    }
    return cnt;
}

/* U: warp-chunks (16-byte loads per lane) in flight per trip. */
template <class T, bool COUNT, int U> __global__ void __launch_bounds__(256) bits_kernel(bits_args r)
{
    constexpr int V = 16 / sizeof(T);
    const T *x = (const T *)r.x;
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    unsigned long long cnt = 0, mine = 0; /* cnt: the warp's count in every lane; mine: this lane's */
    int64_t done = 0;
    if (r.stride == 1 && ((uintptr_t)x & 15) == 0) {
        const int64_t chunks = r.n / (32 * V); /* whole warp-chunks: 32 V elements, 4 V bytes */
        const int4 *xv = reinterpret_cast<const int4 *>(x);
        const bool aligned2 = r.out && ((uintptr_t)r.out & 1) == 0;
        /* 8-bit data: the predicate of 4 bytes at a time with SIMD byte
         * compares, x > t as (x ^ flip) >= tb (see byte_threshold) */
        unsigned tb = 1, flip = 0;
        if (V == 16)
            byte_threshold<T>(r, &tb, &flip);
        /* 8-bit data: a lane's 16 predicates (SIMD byte compares), bit k for byte k */
        auto preds16 = [&](const gs_vec<T> &v) {
            const unsigned w[4] = {(unsigned)v.v.x, (unsigned)v.v.y, (unsigned)v.v.z, (unsigned)v.v.w};
            unsigned p = 0;
#pragma unroll
            for (int q = 0; q < 4; q++)
                p |= byte_preds(w[q] ^ flip, tb) << (4 * q);
            return p;
        };
        /* ... as two output bytes, in the bit order asked (one bit reversal for big) */
        auto bytes16 = [&](unsigned p) { return r.little ? p : __byte_perm(__brev(p), 0, 0x4423); };
        int64_t c0 = 0; /* the first chunk the loop below takes */
        if constexpr (V == 16 && !COUNT) {
            /* packbits of 8-bit data into 16-byte-aligned output: 8 consecutive warp-chunks a trip (4 KiB in,
             * 8 loads in flight a lane), their 8 x 64 output bytes gathered in shared memory and written as one
             * 16-byte streaming store a lane (512 bytes a warp) instead of a 2-byte store a chunk.  r120 (H200,
             * .run/packprobe.py): kernels with packbits' traffic and no work, 1 GiB: 2-byte stores 307.9 us
             * (79.8 % of read), 16-byte stores through shared memory 292.4-298.6 us (82.3-84.0 %) */
            __shared__ __align__(16) uint16_t stage[256 / 32][8 * 32];
            if (r.simd && ((uintptr_t)r.out & 15) == 0) {
                uint16_t *mine16 = stage[threadIdx.x >> 5];
                const int64_t groups = chunks / 8;
                for (int64_t g = warp; g < groups; g += nwarps) { /* (the same trips for the warp's lanes) */
                    gs_vec<T> v[8];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        v[j].v = __ldcs(xv + (g * 8 + j) * 32 + lane);
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        mine16[j * 32 + lane] = (uint16_t)bytes16(preds16(v[j]));
                    __syncwarp();
                    __stcs(reinterpret_cast<int4 *>(r.out + g * 512) + lane, reinterpret_cast<const int4 *>(mine16)[lane]);
                    __syncwarp(); /* (the stage is rewritten next trip) */
                }
                c0 = groups * 8;
            }
        }
        auto chunk = [&](const gs_vec<T> &v, int64_t c) {
            unsigned p = 0; /* bit k: predicate of this lane's element k */
            if (V == 16 && r.simd) {
                p = preds16(v);
            } else {
#pragma unroll
                for (int k = 0; k < V; k++)
                    p |= (unsigned)pred(v.e[k], r) << k;
            }
            if (COUNT) { /* this lane's own count (summed over the warp at the end) */
                mine += (unsigned)__popc(p);
                return;
            }
            uint8_t *o = r.out + c * 4 * V;
            if (V == 16 && r.simd) { /* two whole bytes: bit order within each byte by one bit reversal */
                const unsigned word = bytes16(p);
                if (aligned2)
                    reinterpret_cast<uint16_t *>(o)[lane] = (uint16_t)word; /* two bytes in one store */
                else {
                    o[2 * lane] = (uint8_t)word;
                    o[2 * lane + 1] = (uint8_t)(word >> 8);
                }
            } else if (V >= 8) { /* this lane's elements are V / 8 whole bytes */
                unsigned word = 0;
#pragma unroll
                for (int h = 0; h < V / 8; h++) {
                    unsigned byte = 0;
#pragma unroll
                    for (int m = 0; m < 8; m++)
                        byte |= place((p >> (8 * h + m)) & 1u, m, r.little);
                    word |= byte << (8 * h);
                }
                if (V == 16 && aligned2)
                    reinterpret_cast<uint16_t *>(o)[lane] = (uint16_t)word; /* two bytes in one store */
                else
#pragma unroll
                    for (int h = 0; h < V / 8; h++)
                        o[lane * (V / 8) + h] = (uint8_t)(word >> (8 * h));
            } else { /* transpose with ballots: b[k] bit l = predicate k of lane l */
                unsigned b[V < 8 ? V : 1];
#pragma unroll
                for (int k = 0; k < V; k++)
                    b[k] = __ballot_sync(FULL, (p >> k) & 1u);
                if (lane < 4 * V) { /* byte lane: elements 8 lane .. 8 lane + 7 */
                    unsigned byte = 0;
#pragma unroll
                    for (int m = 0; m < 8; m++)
                        byte |= place((b[m % V] >> (lane * (8 / V) + m / V)) & 1u, m, r.little);
                    o[lane] = (uint8_t)byte;
                }
            }
        };
        /* U chunks per trip, every load issued before any is used (2: packbits
         * of bytes at 81% of read on the H200, bound by bytes in flight) */
        for (int64_t c = c0 + warp; c < chunks; c += U * nwarps) {
            gs_vec<T> v[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (c + u * nwarps < chunks) /* the same for every lane of the warp */
                    v[u].v = __ldcs(xv + (c + u * nwarps) * 32 + lane);
#pragma unroll
            for (int u = 0; u < U; u++)
                if (c + u * nwarps < chunks)
                    chunk(v[u], c + u * nwarps);
        }
        done = chunks * 32 * V;
    }
    cnt += scalar_part<T, COUNT>(x, r, done, warp, nwarps, lane);
    if (COUNT) { /* the lanes' own counts summed into every lane (every lane of the warp is here) */
#pragma unroll
        for (int d = 16; d > 0; d >>= 1)
            mine += __shfl_xor_sync(FULL, mine, d);
        cnt += mine;
    }
    if (COUNT && lane == 0 && cnt) /* lane 0 always voted: it holds the warp's total */
        atomicAdd(r.count, cnt);       /* one atomic per warp */
}

template <class T> gs_status launch(bits_args &r, bool count, const gs_device_info *dev, cudaStream_t s)
{
    /* 4 loads in flight measured no faster than 2 (H100, r48: packbits of bytes 84.2 / 84.3% of read at
     * 1 GiB, 77.1 / 81.4% at 32 MiB; benchmarks/results/bits_H100.md): 2 unless GPUSYNC_BITS_LOADS asks */
    const bool four = gs_env_number(GS_ENV_BITS_LOADS, 2, NULL) > 2;
    const void *k = count ? (four ? (const void *)bits_kernel<T, true, 4> : (const void *)bits_kernel<T, true, 2>)
                          : (four ? (const void *)bits_kernel<T, false, 4> : (const void *)bits_kernel<T, false, 2>);
    int64_t resident;
    gs_status st = gs_cuda_resident_blocks(k, 256, 0, dev, &resident);
    if (st != GS_OK)
        return st;
    const int64_t work = (r.n + 256 * 16 - 1) / (256 * 16);
    const int64_t grid = resident < work ? resident : (work > 0 ? work : 1);
    void *args[] = {&r};
    GS_CUDA_CHECK(cudaLaunchKernel(k, dim3((unsigned)grid), dim3(256), args, 0, s));
    return GS_OK;
}

} // namespace

static gs_status launch_dtype(gs_dtype dt, bits_args &r, bool count, const gs_device_info *dev, cudaStream_t s)
{
    return gs_dtype_switch(dt, [&](auto t) { return launch<gs_bool_as_u8<GS_TYPE(t)>>(r, count, dev, s); });
}

/* Device arrays in place; host arrays staged through device memory in
 * chunks (a multiple of 8 elements, so chunks own whole output bytes). */
static gs_status run_bits(const gs_array *a, const double *thr, int little, gs_array *out, int count, void *stream)
{
    const int on_host = a->device == GS_HOST;
    if (out->device != a->device)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "a and out must both be on the host or on device %d", a->device);
    if (on_host && a->stride != 1)
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "host inputs must be contiguous");
    const int64_t need = count ? 1 : (a->length + 7) / 8;
    if (out->length != need || out->stride != 1 || out->dtype != (count ? GS_INT64 : GS_UINT8))
        return gs_fail(GS_ERR_INVALID_ARGUMENT, "out must be %lld contiguous %s", (long long)need,
                       count ? "int64" : "uint8");
    gs_cuda_call call(a->device, stream);
    gs_status st = call.status;
    if (st != GS_OK)
        return st;
    const gs_device_info *dev = call.dev;
    cudaStream_t s = call.stream;
    const int64_t chunk = (GS_STAGE_BYTES / (int64_t)gs_dtype_size(a->dtype)) & ~(int64_t)7;
    void *d_out = on_host ? NULL : out->data;
    bits_args r;
    memset(&r, 0, sizeof r);
    r.has_thr = thr != NULL;
    r.thr = thr ? *thr : 0.0;
    r.little = little;
    r.simd = gs_env_number(GS_ENV_BITS_SIMD, 1, NULL) != 0;
    if (on_host)
        GS_CUDA_GOTO(gs_malloc_async(&d_out, count ? 8 : (size_t)need + 1, s));
    if (count)
        GS_CUDA_GOTO(cudaMemsetAsync(d_out, 0, 8, s));
    r.count = count ? (unsigned long long *)d_out : NULL;
    {
        gs_staged arr[1] = {gs_staged(a)};
        GS_GOTO(gs_cuda_staged(arr, 1, a->length, chunk, s, [&](int64_t off, int64_t cnt) {
            r.x = arr[0].ptr;
            r.n = cnt;
            r.stride = arr[0].stride;
            r.out = count ? NULL : (uint8_t *)d_out + off / 8;
            return launch_dtype(a->dtype, r, count, dev, s);
        }));
    }
    if (on_host) {
        GS_CUDA_GOTO(cudaMemcpyAsync(out->data, d_out, count ? 8 : (size_t)need, cudaMemcpyDeviceToHost, s));
        if ((st = gs_cuda_wait_stream(s)) != GS_OK)
            goto fail;
    }
fail:
    if (on_host && d_out)
        cudaFreeAsync(d_out, s);
    return st;
}

extern "C" gs_status gs_cuda_packbits(const gs_array *a, const double *thr, int little, gs_array *out, void *stream)
{
    return run_bits(a, thr, little, out, 0, stream);
}

extern "C" gs_status gs_cuda_count_nonzero(const gs_array *a, const double *thr, gs_array *out, void *stream)
{
    return run_bits(a, thr, 0, out, 1, stream);
}

int gs_bits_refs(gs_kernel_ref *r)
{
    r[0] = {"packbits", (const void *)bits_kernel<uint8_t, false, 2>, 256, 0};
    r[1] = {"count_nonzero", (const void *)bits_kernel<float, true, 2>, 256, 0};
    return 2;
}
