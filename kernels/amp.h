/* GradScaler's math, shared by the CPU and CUDA backends: unscaling a gradient while watching for
   non-finite values, and the dynamic scale update (PyTorch's AmpKernels.cu). */
#ifndef LT_KERNELS_AMP_H
#define LT_KERNELS_AMP_H

#include "lt_kernel.h"

/* g * inv, noting in *bad a gradient that is inf or NaN (a NaN fails every comparison, and an inf
   fails the bound: g - g is NaN for both) */
LT_HD float lt_amp_unscale(float g, float inv, int *bad) {
  if (!(g - g == 0.0f)) *bad = 1;
  return g * inv;
}
LT_HD double lt_amp_unscale_f64(double g, double inv, int *bad) {
  if (!(g - g == 0.0)) *bad = 1;
  return g * inv;
}

/* One update of the scale and growth tracker after a step: found_inf != 0 backs off and resets the
   tracker; growth_interval clean steps in a row grow the scale (when the result stays finite). */
LT_HD void lt_amp_update_scale(float *scale, int32_t *tracker, float found_inf, double growth, double backoff,
                               int64_t interval) {
  if (found_inf != 0.0f) {
    *scale = (float)((double)*scale * backoff);
    *tracker = 0;
    return;
  }
  int64_t t = (int64_t)*tracker + 1;
  if (t >= interval) {
    float s = (float)((double)*scale * growth);
    if (s - s == 0.0f) *scale = s;
    t = 0;
  }
  *tracker = (int32_t)t;
}

#endif
