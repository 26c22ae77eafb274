/* The bfloat16 matrix product on the CPU's own bf16 dot products (AVX512_BF16), in the layout of
   kernels/cpu/sgemm.c: see bgemm.c. */
#ifndef LT_CPU_BGEMM_H
#define LT_CPU_BGEMM_H

#include <stdbool.h>
#include <stdint.h>

/* True where the CPU runs AVX512_BF16 (and the AVX-512 subsets this needs), checked once. */
bool lt_bgemm_supported(void);

/* C = alpha * op(A) @ op(B) + beta * C on bfloat16 matrices (raw 16-bit values), row-major, with
   lt_sgemm_avx512's conventions (op(A) is M x K, A is K x M when transA; ...; beta == 0: C not
   read). Products and sums are float32 over the whole of K, each result rounded to bfloat16 once
   (nearest even); denormal inputs count as zero (the instruction's rule, as oneDNN's). Needs
   lt_bgemm_supported(). Returns 0, or -1 when out of memory for the packing buffers (C
   untouched). */
int lt_bgemm_avx512bf16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                        const uint16_t *A, int64_t lda, const uint16_t *B, int64_t ldb, float beta,
                        uint16_t *C, int64_t ldc, int nt);

#endif
