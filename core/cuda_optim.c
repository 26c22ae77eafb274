/* Fused optimizer steps on CUDA tensors (kernels/cuda/optim.cu): core/optim.c checks the tensors
   and computes the step's scalars once, as for the CPU, then calls these instead of the CPU loops.
   Without CUDA=1 they are stubs that refuse. */
#include "core/cuda.h"

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/optim.h"

int lt_cuda_sgd(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *buf, const void *args, bool has_wd,
                bool has_mom, bool first, bool nesterov) {
  int dev = p->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_sgd((int)p->dtype, lt_data(p), lt_data(g), buf ? lt_data(buf) : NULL, p->numel, args, has_wd,
                         has_mom, first, nesterov, (void *)lt_cuda_current_stream(dev));
  return lt_cuda_after_launch(dev, rc, op, (int)p->dtype);
}

int lt_cuda_adam(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *exp_avg, lt_tensor_t *exp_avg_sq,
                 lt_tensor_t *max_exp_avg_sq, const void *args, bool has_wd, bool amsgrad, bool lerp_lo) {
  int dev = p->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_adam((int)p->dtype, lt_data(p), lt_data(g), lt_data(exp_avg), lt_data(exp_avg_sq),
                          max_exp_avg_sq ? lt_data(max_exp_avg_sq) : NULL, p->numel, args, has_wd, amsgrad, lerp_lo,
                          (void *)lt_cuda_current_stream(dev));
  return lt_cuda_after_launch(dev, rc, op, (int)p->dtype);
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_sgd(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *buf, const void *args, bool has_wd,
                bool has_mom, bool first, bool nesterov) {
  (void)p; (void)g; (void)buf; (void)args; (void)has_wd; (void)has_mom; (void)first; (void)nesterov;
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}

int lt_cuda_adam(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *exp_avg, lt_tensor_t *exp_avg_sq,
                 lt_tensor_t *max_exp_avg_sq, const void *args, bool has_wd, bool amsgrad, bool lerp_lo) {
  (void)p; (void)g; (void)exp_avg; (void)exp_avg_sq; (void)max_exp_avg_sq; (void)args; (void)has_wd; (void)amsgrad;
  (void)lerp_lo;
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}

#endif
