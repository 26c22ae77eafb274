/* float16 and bfloat16 as opaque 16-bit storage, with round-to-nearest-even conversions shared by
   the CPU and CUDA kernels. Arithmetic is done in float32. */
#ifndef LT_HALF_H
#define LT_HALF_H

#include "lt_kernel.h"

#include <string.h>

typedef struct { uint16_t bits; } lt_half;
typedef struct { uint16_t bits; } lt_bfloat16;

LT_HD uint32_t lt_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
LT_HD float lt_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* IEEE binary16 -> binary32, exact (subnormals, infinities and NaN included). */
LT_HD float lt_half_to_float(lt_half h) {
  uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return lt_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf or NaN */
  if (exp == 0) {
    if (man == 0) return lt_bits_f32(sign);
    /* subnormal: man * 2^-24 */
    float f = (float)man * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  return lt_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* binary32 -> binary16 with round-to-nearest-even; overflow gives inf, NaN stays NaN. */
LT_HD lt_half lt_float_to_half(float f) {
  uint32_t u = lt_f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t absu = u & 0x7fffffffu;
  lt_half h;
  if (absu >= 0x7f800000u) { /* inf or NaN */
    h.bits = (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u | ((absu >> 13) & 0x3ffu) : 0u));
    return h;
  }
  if (absu >= 0x477ff000u) { /* rounds to >= 65520: overflow */
    h.bits = (uint16_t)(sign | 0x7c00u);
    return h;
  }
  if (absu < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
    /* value = absf; result man = round(absf / 2^-24), ties to even */
    uint32_t e = absu >> 23;
    if (e < 102) { h.bits = (uint16_t)sign; return h; } /* < 2^-25: rounds to zero */
    uint32_t m = (absu & 0x7fffffu) | 0x800000u; /* 24-bit significand, value m * 2^(e-150) */
    uint32_t shift = 126 - e; /* result = m >> (shift) scaled to 2^-24 units: 150-e-24 = 126-e */
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    h.bits = (uint16_t)(sign | r);
    return h;
  }
  /* normal: rebias exponent 127 -> 15, round 23-bit mantissa to 10 bits, ties to even */
  uint32_t r = absu - 0x38000000u; /* exponent - 112 in place */
  uint32_t lsb = (r >> 13) & 1u;
  r += 0xfffu + lsb;
  h.bits = (uint16_t)(sign | (r >> 13));
  return h;
}

LT_HD float lt_bf16_to_float(lt_bfloat16 b) { return lt_bits_f32((uint32_t)b.bits << 16); }

/* binary32 -> bfloat16 with round-to-nearest-even; NaN stays a (quiet) NaN. */
LT_HD lt_bfloat16 lt_float_to_bf16(float f) {
  uint32_t u = lt_f32_bits(f);
  lt_bfloat16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u) { b.bits = (uint16_t)((u >> 16) | 0x40u); return b; }
  u += 0x7fffu + ((u >> 16) & 1u);
  b.bits = (uint16_t)(u >> 16);
  return b;
}

#endif
