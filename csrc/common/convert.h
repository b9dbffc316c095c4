/*
 * convert.h -- element <-> accumulator conversions shared by the CPU backend
 * (C11) and the CUDA kernels, so both backends round identically.
 *
 * Reductions accumulate floating inputs in double and integer/bool inputs in
 * uint64_t (two's-complement wrap-around, which is NumPy's overflow
 * behaviour once the result is cast back to the result dtype).
 */
#ifndef GPUSYNC_CONVERT_H
#define GPUSYNC_CONVERT_H

#include "binning.h" /* GS_HD, gs_half_to_float */

#include <stdint.h>
#include <string.h>

/* Round a double to the nearest float16 (ties to even), once: no double
 * rounding through float. */
GS_HD uint16_t gs_double_to_half(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    const uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    const uint64_t au = u & 0x7fffffffffffffffull;
    if (au >= 0x7ff0000000000000ull) /* inf or NaN */
        return (uint16_t)(sign | (au > 0x7ff0000000000000ull ? 0x7e00u : 0x7c00u));
    const int e = (int)(au >> 52) - 1023;
    if (e >= 16)
        return (uint16_t)(sign | 0x7c00u);
    if (e < -25)
        return sign;
    const uint64_t m = (au & 0xfffffffffffffull) | 0x10000000000000ull; /* value = m * 2^(e-52) */
    const int shift = e >= -14 ? 42 : 28 - e;                           /* normal: 10 bits kept */
    uint64_t r = m >> shift;
    const uint64_t rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (r & 1)))
        r++;
    uint32_t h = e >= -14 ? (uint32_t)((e + 14) << 10) + (uint32_t)r : (uint32_t)r; /* carries into the exponent */
    if (h > 0x7c00u)
        h = 0x7c00u;
    return (uint16_t)(sign | h);
}

GS_HD int gs_dtype_is_float(int dt) { return dt == GS_FLOAT16 || dt == GS_FLOAT32 || dt == GS_FLOAT64; }

/* Element i of an integer or bool array of dtype dt, as int64 (uint64: its
 * bits). */
GS_HD int64_t gs_int_at(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case GS_BOOL:
    case GS_UINT8: return ((const uint8_t *)p)[i];
    case GS_INT8: return ((const int8_t *)p)[i];
    case GS_INT16: return ((const int16_t *)p)[i];
    case GS_UINT16: return ((const uint16_t *)p)[i];
    case GS_INT32: return ((const int32_t *)p)[i];
    case GS_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

/* Store an accumulator as one element of dtype dt: fa for floating results,
 * ia (wrapped to the dtype's width) for integers, ia != 0 for bool. */
GS_HD void gs_store_acc(void *out, int dt, double fa, uint64_t ia)
{
    switch (dt) {
    case GS_BOOL: *(uint8_t *)out = ia != 0; break;
    case GS_INT8:
    case GS_UINT8: *(uint8_t *)out = (uint8_t)ia; break;
    case GS_INT16:
    case GS_UINT16: *(uint16_t *)out = (uint16_t)ia; break;
    case GS_INT32:
    case GS_UINT32: *(uint32_t *)out = (uint32_t)ia; break;
    case GS_INT64:
    case GS_UINT64: *(uint64_t *)out = ia; break;
    case GS_FLOAT16: *(uint16_t *)out = gs_double_to_half(fa); break;
    case GS_FLOAT32: *(float *)out = (float)fa; break;
    default: *(double *)out = fa; break;
    }
}

#endif /* GPUSYNC_CONVERT_H */
