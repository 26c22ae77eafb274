/* The CPU batched matrix product. */
#ifndef LT_CPU_MATMUL_H
#define LT_CPU_MATMUL_H

#include "dtype.h"

#include <stdint.h>

/* out[b] = beta*out[b] + alpha * A[b] @ B[b] for b in 0..batch-1, where A[b] is m x k, B[b] is
   k x n and out[b] is m x n. Every operand is a base pointer and element strides (batch, row, col);
   strides are >= 0, and 0 broadcasts (a batch stride of 0 shares one matrix across the batch). out
   must not overlap itself or the inputs. dtype is the same for all three. beta == 0 means out is
   not read (it may hold NaN); k == 0 gives out = beta*out (zeros when beta == 0).

   float32 and float64 go through BLAS (core/blas.h), float16 and bfloat16 through float32 BLAS on
   converted copies (accumulation in float32, results rounded to nearest even); the integer types
   use loops that accumulate in 64 bits and wrap on store as C casts do; alpha and beta must then be
   integers. bool is not supported. Returns LT_OK, or LT_ERR with a message starting "matmul: ".
   Thread-safe; products run in parallel (OpenBLAS's threads, or OpenMP over a batch of small
   products). */
int lt_cpu_gemm(lt_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                const void *A, int64_t sAb, int64_t sAr, int64_t sAc,
                const void *B, int64_t sBb, int64_t sBr, int64_t sBc,
                double beta, void *out, int64_t sOb, int64_t sOr, int64_t sOc);

/* out (m x n, contiguous) = alpha * A @ B + bias, the n values of bias (contiguous) added to every
   row: a Linear layer's forward without a pass copying the bias into out first. Only float32
   operands BLAS can read as they are; returns 1 without touching out for anything else (the
   caller then copies the bias and calls lt_cpu_gemm with beta 1, which gives the same bits). */
int lt_cpu_gemm_bias(lt_dtype dt, int64_t m, int64_t n, int64_t k, double alpha, const void *A,
                     int64_t sAr, int64_t sAc, const void *B, int64_t sBr, int64_t sBc,
                     const void *bias, void *out);

#endif
