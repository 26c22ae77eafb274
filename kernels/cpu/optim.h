/* CPU loops of the fused optimizer steps over contiguous arrays (the math is in kernels/optim.h):
   float32 and float64 parameters with state of their type; float16 (_h) and bfloat16 (_b)
   parameters and gradients with float32 state, computed in float32. They thread above a size
   threshold. */
#ifndef LT_CPU_OPTIM_H
#define LT_CPU_OPTIM_H

#include "kernels/half.h"
#include "kernels/optim.h"

#include <stdbool.h>
#include <stdint.h>

/* p[i], buf[i] updated in place from g[i]; buf is NULL when !has_mom. */
void lt_cpu_sgd_f(float *p, const float *g, float *buf, int64_t n, const lt_sgd_args_f *a,
                  bool has_wd, bool has_mom, bool first, bool nesterov);
void lt_cpu_sgd_d(double *p, const double *g, double *buf, int64_t n, const lt_sgd_args_d *a,
                  bool has_wd, bool has_mom, bool first, bool nesterov);
/* p, m, v (and vmax when amsgrad, else NULL) updated in place from g; lerp_lo: |1 - beta1| < 0.5
   (which of lerp's two forms PyTorch uses). */
void lt_cpu_sgd_h(lt_half *p, const lt_half *g, float *buf, int64_t n, const lt_sgd_args_f *a,
                  bool has_wd, bool has_mom, bool first, bool nesterov);
void lt_cpu_sgd_b(lt_bfloat16 *p, const lt_bfloat16 *g, float *buf, int64_t n, const lt_sgd_args_f *a,
                  bool has_wd, bool has_mom, bool first, bool nesterov);
void lt_cpu_adam_f(float *p, const float *g, float *m, float *v, float *vmax, int64_t n,
                   const lt_adam_args_f *a, bool has_wd, bool amsgrad, bool lerp_lo);
void lt_cpu_adam_d(double *p, const double *g, double *m, double *v, double *vmax, int64_t n,
                   const lt_adam_args_d *a, bool has_wd, bool amsgrad, bool lerp_lo);
void lt_cpu_adam_h(lt_half *p, const lt_half *g, float *m, float *v, float *vmax, int64_t n,
                   const lt_adam_args_f *a, bool has_wd, bool amsgrad, bool lerp_lo);
void lt_cpu_adam_b(lt_bfloat16 *p, const lt_bfloat16 *g, float *m, float *v, float *vmax, int64_t n,
                   const lt_adam_args_f *a, bool has_wd, bool amsgrad, bool lerp_lo);

#endif
