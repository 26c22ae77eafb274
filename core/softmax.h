/* Softmax and log-softmax along one dimension (torch.softmax, torch.log_softmax), and their
   backward. Floating inputs only; float16 and bfloat16 are computed in float32 and stored in the
   input's dtype. Dimensions are the core's (0-based, negative from the end). */
#ifndef LT_SOFTMAX_H
#define LT_SOFTMAX_H

#include "core/tensor.h"

#include <stdbool.h>

/* y = softmax(x, dim), or log_softmax when log: a new contiguous tensor of x's shape and dtype.
   Records SoftmaxBackward0 / LogSoftmaxBackward0 when x requires grad. */
lt_tensor_t *lt_softmax(lt_tensor_t *x, int64_t dim, bool log);
/* The input's gradient from the output's gradient g and the output y (same shape). */
lt_tensor_t *lt_softmax_backward(lt_tensor_t *g, lt_tensor_t *y, int64_t dim, bool log);

/* internal: the autograd recording (core/grad_norm.c) */
lt_tensor_t *lt_ag_softmax(lt_tensor_t *x, int64_t dim, bool log);

#endif
