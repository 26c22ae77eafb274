/* The CUDA fused optimizer steps' launchers (kernels/cuda/optim.cu), callable from C: device
   pointers to n contiguous elements, the parameter's dtype (lt_dtype numbering: float32, float64,
   float16, bfloat16; the state is float64 for float64 parameters, else float32), the step's
   scalars as kernels/optim.h's argument structs (lt_sgd_args_d / lt_adam_args_d for float64, the
   _f ones otherwise, in host memory) and a cudaStream_t as `stream`. Each returns the launch's
   cudaError_t as an int (0 on success), or -1 for a dtype without a kernel. */
#ifndef LT_CUDA_OPTIM_H
#define LT_CUDA_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_sgd(int dtype, void *p, const void *g, void *buf, int64_t n, const void *args, bool has_wd,
                  bool has_mom, bool first, bool nesterov, void *stream);
int lt_cuda_k_adam(int dtype, void *p, const void *g, void *exp_avg, void *exp_avg_sq, void *max_exp_avg_sq,
                   int64_t n, const void *args, bool has_wd, bool amsgrad, bool lerp_lo, void *stream);

#ifdef __cplusplus
}
#endif

#endif
