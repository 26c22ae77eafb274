/* Batch normalisation and layer normalisation (torch.nn.functional.batch_norm / layer_norm), forward
   and backward. Floating inputs; float16 and bfloat16 inputs are computed in float32 and their saved
   statistics are float32. Parameters (weight, bias, running statistics) may be NULL where optional. */
#ifndef LT_NORMALIZATION_H
#define LT_NORMALIZATION_H

#include "core/tensor.h"

#include <stdbool.h>

/* x: [N, C, ...] (C the second dimension); w, b, running_mean, running_var: [C] or NULL.
   training: statistics of this batch over every dimension but C (biased variance to normalise);
   running statistics, when given, are updated in place: r = (1 - momentum) r + momentum s (s the
   unbiased variance for running_var). Otherwise the running statistics (required) are used.
   Records NativeBatchNormBackward0 when x, w or b requires grad. */
lt_tensor_t *lt_batch_norm(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                           lt_tensor_t *running_var, bool training, double momentum, double eps);
/* The same, also returning the statistics used (mean and 1 / sqrt(var + eps), [C], float32 for
   float16/bfloat16 inputs, else x's dtype) for the backward. */
lt_tensor_t *lt_batch_norm_stats(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                                 lt_tensor_t *running_var, bool training, double momentum, double eps,
                                 lt_tensor_t **save_mean, lt_tensor_t **save_invstd);
/* Gradients from the output's gradient g: gx (x's dtype), gw (dtype gw_dt) and gb (dtype gb_dt),
   each computed only where its pointer is not NULL. training says whether mean and invstd were the
   batch's own statistics (they depend on x) or the running ones (an affine map of x). */
int lt_batch_norm_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *mean, lt_tensor_t *invstd,
                           bool training, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx, lt_tensor_t **gw,
                           lt_tensor_t **gb);

/* x normalised over its last n_dims dimensions (biased variance); w, b: of those dimensions' shape,
   or NULL. Records NativeLayerNormBackward0 when x, w or b requires grad. */
lt_tensor_t *lt_layer_norm(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps);
/* The same, also returning the per-row mean and 1 / sqrt(var + eps) ([rows], float32 for
   float16/bfloat16 inputs, else x's dtype). */
lt_tensor_t *lt_layer_norm_stats(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps,
                                 lt_tensor_t **mean, lt_tensor_t **rstd);
/* Gradients as for batch norm: gx, gw (dtype gw_dt), gb (dtype gb_dt) where not NULL. */
int lt_layer_norm_backward(lt_tensor_t *g, lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *mean,
                           lt_tensor_t *rstd, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx, lt_tensor_t **gw,
                           lt_tensor_t **gb);

/* internal: the autograd recording (core/grad_norm.c) */
lt_tensor_t *lt_ag_batch_norm(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                              lt_tensor_t *running_var, bool training, double momentum, double eps);
lt_tensor_t *lt_ag_layer_norm(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps);

#endif
