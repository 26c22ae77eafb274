/* Fused optimizer steps: each updates a parameter and its state in place in one pass (PyTorch's
   SGD, Adam and AdamW rules, kernels/optim.h). They write the data directly, with no autograd
   recording (an optimizer step is a no_grad update of leaves), and bump the version of each tensor
   written. Contiguous CPU parameters: float32 and float64 ones with state of their dtype, float16
   and bfloat16 ones with float32 state, computed in float32 (the parameter is rounded once per
   step). The Lua optimizers take their tensor-op path for anything else. */
#ifndef LT_OPTIM_H
#define LT_OPTIM_H

#include "core/tensor.h"

#include <stdbool.h>

/* The dtypes the fused steps take, and the dtype of a parameter's state. */
static inline bool lt_optim_fusable_dtype(lt_dtype dt) {
  return dt == LT_FLOAT32 || dt == LT_FLOAT64 || dt == LT_FLOAT16 || dt == LT_BFLOAT16;
}
static inline lt_dtype lt_optim_state_dtype(lt_dtype dt) {
  return dt == LT_FLOAT16 || dt == LT_BFLOAT16 ? LT_FLOAT32 : dt;
}

typedef struct {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
} lt_sgd_opts_t;

typedef struct {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled; /* AdamW: p *= 1 - lr * weight_decay; else Adam: grad += weight_decay * p */
  bool maximize;
} lt_adam_opts_t;

/* One SGD step of p from grad. momentum_buf: NULL when momentum is 0, else a tensor like p; when
   first is true it is (re)initialised to the gradient (PyTorch clones the gradient into the buffer
   at the first step), else updated. p, momentum_buf: contiguous; grad: any strides. */
int lt_sgd_step(lt_tensor_t *p, lt_tensor_t *grad, lt_tensor_t *momentum_buf, bool first,
                const lt_sgd_opts_t *o);

/* One Adam/AdamW step; step is the step count including this one (1 at the first step).
   max_exp_avg_sq: NULL unless amsgrad. State tensors: like p, contiguous. */
int lt_adam_step(lt_tensor_t *p, lt_tensor_t *grad, lt_tensor_t *exp_avg, lt_tensor_t *exp_avg_sq,
                 lt_tensor_t *max_exp_avg_sq, double step, const lt_adam_opts_t *o);

#endif
