/* Sorting: the order of a tensor's elements along a dimension. */
#ifndef LT_SORT_H
#define LT_SORT_H

#include "core/tensor.h"

#include <stdbool.h>

/* The permutation that sorts each slice of x along dim (0-based; x of any dtype and layout): an
   int64 tensor of x's shape and device holding 0-based positions along dim, stable, NaN last
   ascending and first descending (PyTorch's order). A 0-dim x gives a 0-dim 0. CUDA tensors are
   sorted on the host. New reference, or NULL with an error. */
lt_tensor_t *lt_argsort(lt_tensor_t *x, int64_t dim, bool descending);

#endif
