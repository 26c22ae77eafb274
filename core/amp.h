/* GradScaler's C passes: unscale gradients in place while finding inf/NaN, and update the scale. */
#ifndef LT_AMP_H
#define LT_AMP_H

#include "core/tensor.h"

/* Multiplies each of the n gradients (NULL entries skipped) in place by inv_scale (a one-element
   float32 tensor) and sets found_inf (a one-element float32 tensor) to 1 when any of them holds an
   inf or NaN, in one pass over each gradient. */
int lt_amp_unscale_(int n, lt_tensor_t *const *grads, const lt_tensor_t *inv_scale, lt_tensor_t *found_inf);
/* scale (float32, one element) and growth_tracker (int32, one element) updated in place from
   found_inf (float32, one element: the sum over optimizers and devices). */
int lt_amp_update_scale_(lt_tensor_t *scale, lt_tensor_t *growth_tracker, const lt_tensor_t *found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval);

#endif
