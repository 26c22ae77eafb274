/* 2-D convolution (torch.nn.functional.conv2d) as im2col + GEMM, forward and backward.

   x is (N, C_in, H, W) or unbatched (C_in, H, W) (the result is then unbatched too); w is
   (C_out, C_in/groups, kH, kW); b is (C_out) or NULL. Any strides; float32 and float64 natively,
   float16 and bfloat16 computed in float32 and rounded back. PyTorch's output size:
   (H + 2*pad - dil*(k - 1) - 1) / stride + 1. */
#ifndef LT_CONV_H
#define LT_CONV_H

#include "core/tensor.h"

#include <stdbool.h>

lt_tensor_t *lt_conv2d(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, const int64_t stride[2],
                       const int64_t padding[2], const int64_t dilation[2], int64_t groups);

/* Gradients for x, w and b (where need[i]) from the output's gradient g; the others are left NULL.
   gx has x's shape and dtype, gw w's, gb (C_out) w's dtype. b is not needed: its gradient is the sum
   of g. */
int lt_conv2d_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, const int64_t stride[2],
                       const int64_t padding[2], const int64_t dilation[2], int64_t groups,
                       const bool need[3], lt_tensor_t **gx, lt_tensor_t **gw, lt_tensor_t **gb);

/* ---- internal: the autograd recording (core/grad_conv.c) ----
   o (consumed) is lt_conv2d's result for these arguments, computed with grad mode off. */
lt_tensor_t *lt_ag_conv2d(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, const int64_t stride[2],
                          const int64_t padding[2], const int64_t dilation[2], int64_t groups,
                          lt_tensor_t *o);

#endif
