/* 2-D pooling (torch.nn.functional's max_pool2d, avg_pool2d, adaptive_avg_pool2d), forward and
   backward. Inputs are (N, C, H, W) or unbatched (C, H, W), any strides; float32 and float64
   natively, float16 and bfloat16 computed in float32 and rounded back. Sizes and rules are
   PyTorch's: out = (H + 2*pad - dil*(k - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1, and
   with ceil_mode the last window must start inside the input or its left padding. */
#ifndef LT_POOL_H
#define LT_POOL_H

#include "core/tensor.h"

#include <stdbool.h>

/* out and indices (int64, out's shape): the 1-based flat position (ih*W + iw + 1) of each
   window's maximum within its H x W input plane. */
int lt_max_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                  const int64_t dilation[2], bool ceil_mode, lt_tensor_t **out, lt_tensor_t **indices);
/* x's gradient: g scattered to the positions in indices (x gives the shape and dtype) */
lt_tensor_t *lt_max_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *indices);

/* divisor_override 0: none */
lt_tensor_t *lt_avg_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2],
                           const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                           int64_t divisor_override);
lt_tensor_t *lt_avg_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x, const int64_t kernel[2],
                                    const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                                    bool count_include_pad, int64_t divisor_override);

/* windows [floor(i*H/oh), ceil((i+1)*H/oh)) */
lt_tensor_t *lt_adaptive_avg_pool2d(lt_tensor_t *x, const int64_t size[2]);
lt_tensor_t *lt_adaptive_avg_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x);

/* ---- internal: the autograd recording (core/grad_conv.c) ----
   The results (consumed on failure) were computed with grad mode off; these record the node. */
int lt_ag_max_pool2d(lt_tensor_t *x, lt_tensor_t *out, lt_tensor_t *indices);
lt_tensor_t *lt_ag_avg_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2],
                              const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                              int64_t divisor_override, lt_tensor_t *out);
lt_tensor_t *lt_ag_adaptive_avg_pool2d(lt_tensor_t *x, lt_tensor_t *out);

#endif
