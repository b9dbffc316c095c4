// u8_common.cuh -- what the 8-bit histogram probes (u8_shapes.cu, u8_pipe.cu)
// share: the read ceiling kernel they time against, and the host fill of each
// byte distribution.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

// The ceiling: every byte read once (4 16-byte loads in flight a thread), one word out per block.
__global__ void __launch_bounds__(1024, 2) read_all(const int4 *__restrict__ x, int64_t nv, unsigned *out)
{
    const int64_t tid = (int64_t)blockIdx.x * 1024 + threadIdx.x, nth = (int64_t)gridDim.x * 1024;
    unsigned acc = 0;
    for (int64_t base = tid; base < nv; base += 4 * nth) {
        int4 r[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t j = base + u * nth;
            r[u] = j < nv ? __ldcs(x + j) : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            acc ^= (unsigned)(r[u].x ^ r[u].y ^ r[u].z ^ r[u].w);
    }
    if (acc == 0x12345678u)
        out[blockIdx.x] = acc;
}

// h filled with the distribution `dist`: uniform, text, one (a single value) or sorted runs of 4096.
static inline void fill(std::vector<uint8_t> &h, const char *dist)
{
    uint64_t st = 88172645463325252ull;
    auto rnd = [&]() { st ^= st << 13, st ^= st >> 7, st ^= st << 17; return st; };
    const size_t n = h.size();
    if (!strcmp(dist, "uniform")) {
        for (size_t i = 0; i < n; i++)
            h[i] = (uint8_t)(rnd() >> 24);
    } else if (!strcmp(dist, "text")) { // letters and spaces, English-like frequencies
        static const char pool[] = "eeeeeeeeeeeetttttttttaaaaaaaaoooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrdddllluuccmmwwffggyyppbbvk      "
                                   "         .,\n";
        for (size_t i = 0; i < n; i++)
            h[i] = (uint8_t)pool[rnd() % (sizeof pool - 1)];
    } else if (!strcmp(dist, "one")) {
        memset(h.data(), 7, n);
    } else { // sorted runs of 4096
        for (size_t i = 0; i < n; i++)
            h[i] = (uint8_t)((i >> 12) & 0xff);
    }
}
