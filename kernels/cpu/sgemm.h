/* The float32 matrix product of our own, for CPUs with AVX-512 (see sgemm.c).

   Debian's OpenBLAS runs whichever kernels OPENBLAS_CORETYPE names, and a user's (or a machine's)
   setting is never overridden: with Haswell's AVX2 kernels it reaches about 45% of this machine's
   AVX-512 peak. This product does not depend on that choice: packed panels and an 8 x 48 register
   micro-kernel, in the style of BLIS and GotoBLAS. core/blas.c calls it for float32 products where
   the CPU has AVX-512F (checked at run time; this file is compiled for AVX-512 whatever -march says,
   so nothing here may run on a CPU without it). */
#ifndef LT_CPU_SGEMM_H
#define LT_CPU_SGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C = alpha * op(A) @ op(B) + beta * C, row-major; op(A) is M x K (A is K x M when transA), op(B)
   is K x N (B is N x K when transB), C is M x N. beta == 0 means C is not read (it may hold NaN);
   alpha == 0 or K == 0 means A and B are not read. Splits the product over up to nt threads
   (OpenMP; the caller decides nt). Needs AVX-512F. Returns 0, or -1 when the packing buffers could
   not be allocated (C is then untouched). Thread-safe: each thread packs into a set of buffers
   taken from a process-wide stack and given back (kept for later products). */
/* The depth of a slice of the product: with K at most this, beta 1 and alpha 1, each element of
   C becomes C + (the product's sum), rounded once: the same bits as the product computed with
   beta 0 and added to C after. */
#define LT_SGEMM_KC 256
int lt_sgemm_avx512(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                    const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                    int64_t ldc, int nt);
/* C = alpha * op(A) @ op(B) + bias, bias (N floats) added to every row (C is not read): a Linear
   layer's forward without copying the bias into C first. The same bits as that copy followed by
   lt_sgemm_avx512 with beta 1. */
int lt_sgemm_avx512_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb,
                         const float *bias, float *C, int64_t ldc, int nt);

/* The packing buffers of the matrix-product kernels (this and bgemm.c): a set is taken for one
   product by each thread that runs a part of it and given back after; sets are kept for later
   products (no fresh memory, so no page faults, in a training loop). take: room for na and nb
   floats (32-bit words), or NULL when out of memory. */
typedef struct lt_gemm_buffers {
  float *a, *b;
  size_t na, nb;
  struct lt_gemm_buffers *next;
} lt_gemm_buffers_t;
lt_gemm_buffers_t *lt_gemm_take_buffers(size_t na, size_t nb);
void lt_gemm_give_buffers(lt_gemm_buffers_t *bf);

#endif
