/* Register helpers shared by the matrix-product kernels (kernels/cpu/sgemm.c, bgemm.c). Include
   it where AVX-512 code is being compiled (those files' target pragmas): nothing here may run on a
   CPU without it. */
#ifndef LT_CPU_GEMM_SIMD_H
#define LT_CPU_GEMM_SIMD_H

#include <immintrin.h>
#include <stdint.h>

/* the first n of 16 lanes (none for n <= 0, all for n >= 16) */
static inline __mmask16 lt_lanes16(int n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* dst[q * dstride + i] = src[i * sstride + q] for i, q in 0..7, on 32-bit words (floats, or pairs
   of bf16 values) */
static inline void lt_transpose8x8(const void *src_, int64_t sstride, void *dst_, int64_t dstride) {
  const float *src = src_;
  float *dst = dst_;
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * sstride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int q = 0; q < 4; q++) {
    _mm256_storeu_ps(dst + q * dstride, _mm256_permute2f128_ps(u[q], u[q + 4], 0x20));
    _mm256_storeu_ps(dst + (q + 4) * dstride, _mm256_permute2f128_ps(u[q], u[q + 4], 0x31));
  }
}

#endif
