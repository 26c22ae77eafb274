/* The CUDA reduction kernels' launcher (kernels/cuda/reduce.cu), callable from C. The geometry is
   core/reduce.c's: kept (output) dimensions and reduced dimensions, input strides in bytes, output
   strides in elements; the kernels know nothing of tensors. A scan (cumsum, cumprod, logcumsumexp,
   cummax, cummin) is a reduction over one dim that writes its result after every element. Returns the launches' cudaError_t as an
   int (0 on success), or -1 when (op, input dtype) has no kernel. */
#ifndef LT_CUDA_REDUCE_H
#define LT_CUDA_REDUCE_H

#include "kernels/reduce.h"

#include <stdint.h>

#define LT_CUDA_RED_MAXDIM 16

typedef struct {
  int op;                                     /* lt_reduce_op */
  int in_dtype, out_dtype;                    /* lt_dtype numbering */
  const char *in;                             /* device pointer to the input's first element */
  int nout;
  int64_t out_size[LT_CUDA_RED_MAXDIM];
  int64_t out_in_stride[LT_CUDA_RED_MAXDIM];  /* input bytes */
  int64_t out_stride[LT_CUDA_RED_MAXDIM];     /* output elements (values and indices alike) */
  int nred;                                   /* arg reductions: at most one */
  int64_t red_size[LT_CUDA_RED_MAXDIM];
  int64_t red_stride[LT_CUDA_RED_MAXDIM];     /* input bytes */
  char *out;                                  /* values, or NULL */
  int64_t *idx;                               /* arg reductions: indices, or NULL */
  lt_reduce_params_t params;
  int64_t numel_out, count;                   /* outputs; elements reduced into each */
  int scan;                                   /* a scan along the one reduced dim: every running */
  int64_t scan_out_stride;                    /* result, at this output element stride from the first */
} lt_cuda_reduce_plan_t;

#ifdef __cplusplus
extern "C" {
#endif

/* How many bytes of device scratch the launch needs (0: none); the caller allocates them. */
int64_t lt_cuda_k_reduce_scratch(const lt_cuda_reduce_plan_t *plan, int sm_count);
int lt_cuda_k_reduce(const lt_cuda_reduce_plan_t *plan, void *scratch, int sm_count, void *stream);

#ifdef __cplusplus
}
#endif

#endif
