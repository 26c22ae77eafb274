/* The negative log-likelihood loss (torch.nn.functional.nll_loss, and cross_entropy's second half),
   forward and backward. Class targets are 1-BASED, as users write them in Lua: target holds values
   1..C (int64 or int32) and ignore_index is compared with them as stored. */
#ifndef LT_LOSS_H
#define LT_LOSS_H

#include "core/tensor.h"

#include <stdbool.h>

typedef enum { LT_REDUCTION_NONE = 0, LT_REDUCTION_MEAN = 1, LT_REDUCTION_SUM = 2 } lt_reduction;

/* op: the name errors use ("nll_loss", "cross_entropy"; a string that outlives the result).
   logp: [N, C], [C] or [N, C, d1, ...]; target: [N], [] or [N, d1, ...]; weight: [C] or NULL.
   none: the losses in target's shape; mean: sum(w[t] l) / sum(w[t]) over kept elements (NaN when
   none is kept); sum: their sum. Records NllLossBackward0 when logp requires grad. */
lt_tensor_t *lt_nll_loss(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                         bool has_ignore, int64_t ignore_index, lt_reduction reduction);
/* The same, also giving the total weight of the kept elements (mean's divisor). */
lt_tensor_t *lt_nll_loss_total(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                               bool has_ignore, int64_t ignore_index, lt_reduction reduction, double *total_weight);
/* The gradient with respect to logp (shape (ndim, sizes), dtype dt) from the loss's gradient g. */
lt_tensor_t *lt_nll_loss_backward(const char *op, lt_tensor_t *g, int ndim, const int64_t *sizes, lt_dtype dt,
                                  lt_tensor_t *target, lt_tensor_t *weight, bool has_ignore, int64_t ignore_index,
                                  lt_reduction reduction, double total_weight);

/* internal: the autograd recording (core/grad_norm.c) */
lt_tensor_t *lt_ag_nll_loss(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                            bool has_ignore, int64_t ignore_index, lt_reduction reduction);

#endif
