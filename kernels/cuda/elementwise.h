/* The CUDA elementwise kernels' launchers (kernels/cuda/elementwise.cu), callable from C: they get
   device pointers, a count and the op; they know nothing of tensors. The output is contiguous;
   the inputs are of one dtype (any, lt_dtype numbering), an input pointer NULL is a scalar given by
   its storage bytes (sa, sb). `geo` is NULL when every input is contiguous over the output's
   elements, else an array with one geometry per input (in the order of the arguments). Each
   returns the launch's cudaError_t as an int (0 on success), or -1 when the op or dtype has no CUDA
   kernel. Work is queued on `stream` (a cudaStream_t; NULL is the legacy default stream) of the
   current device. */
#ifndef LT_CUDA_ELEMENTWISE_H
#define LT_CUDA_ELEMENTWISE_H

#include "kernels/cuda/ew_geo.h" /* lt_cuda_ew_geo_t */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_unary(void *stream, int op, int dtype, void *out, const void *x, const lt_cuda_ew_geo_t *geo, int64_t n);
/* alpha scales b in add and sub: alpha for the floating dtypes, ialpha for the integer ones */
int lt_cuda_k_binary(void *stream, int op, int dtype, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb,
                     double alpha, int64_t ialpha, const lt_cuda_ew_geo_t *geo, int64_t n);
/* out is bool */
int lt_cuda_k_compare(void *stream, int op, int dtype, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb,
                      const lt_cuda_ew_geo_t *geo, int64_t n);
/* out = d(op)/dx from g, x, y (x or y may be g when the formula does not read it) */
int lt_cuda_k_unary_grad(void *stream, int op, int dtype, void *out, const void *g, const void *x, const void *y,
                         const lt_cuda_ew_geo_t *geo, int64_t n);
/* out = cond ? a : b, elements of `size` bytes; cond is bool */
int lt_cuda_k_where(void *stream, int size, void *out, const void *cond, const void *a, const void *b, uint64_t sa,
                    uint64_t sb, const lt_cuda_ew_geo_t *geo, int64_t n);
/* out[i] = value (its storage bytes), elements of `size` bytes (1, 2, 4, 8) */
int lt_cuda_k_fill(void *stream, int size, void *out, uint64_t value, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
