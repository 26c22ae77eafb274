/* The CUDA 2-D pooling kernels' launcher (kernels/cuda/pool.cu), callable from C: max, average and
   adaptive average pooling, forward and backward, over `planes` contiguous planes (geometry of
   kernels/cpu/pool.h, the CPU loops' semantics: max indices are 1-based flat positions in the
   input plane, a NaN wins (the last one), ties go to the first). kind: LT_CUDA_POOL_* below; in /
   out are x / y for a forward and gy / gx for a backward (gx overwritten); idx (int64) is written
   by the max forward and read by its backward. dtype 0 float32, 1 float64; returns the launches'
   cudaError_t as an int, or -1 for another dtype or kind. */
#ifndef LT_CUDA_POOL_H
#define LT_CUDA_POOL_H

#include "kernels/cpu/pool.h" /* lt_pool_geom_t */

#include <stdbool.h>
#include <stdint.h>

enum {
  LT_CUDA_POOL_MAX,
  LT_CUDA_POOL_MAX_BACKWARD,
  LT_CUDA_POOL_AVG,
  LT_CUDA_POOL_AVG_BACKWARD,
  LT_CUDA_POOL_ADAPTIVE,
  LT_CUDA_POOL_ADAPTIVE_BACKWARD
};

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_pool2d(int kind, int dtype, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                     int64_t divisor, const void *in, void *out, int64_t *idx, void *stream);

#ifdef __cplusplus
}
#endif

#endif
