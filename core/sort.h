/* Sorting: the order of a tensor's elements along a dimension. */
#ifndef LT_SORT_H
#define LT_SORT_H

#include "core/tensor.h"

#include <stdbool.h>

/* The permutation that sorts each slice of x along dim (0-based; x of any dtype and layout): an
   int64 tensor of x's shape and device holding the positions along dim plus base (0 or 1), stable, NaN last
   ascending and first descending (PyTorch's order). A 0-dim x gives a 0-dim base. CUDA tensors are
   sorted on the host. New reference, or NULL with an error. */
lt_tensor_t *lt_argsort(lt_tensor_t *x, int64_t dim, bool descending, int64_t base);

/* The first k of that order (largest: descending) along dim, as positions plus base (0 or 1): an
   int64 tensor of x's shape with k along dim; with values, *values gets the elements themselves
   (x's dtype, same shape; a new reference, no autograd history). New reference, or NULL with an
   error (k out of [0, size]). */
lt_tensor_t *lt_topk(lt_tensor_t *x, int64_t k, int64_t dim, bool largest, int64_t base, lt_tensor_t **values);

#endif
