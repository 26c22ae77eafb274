/* Shape and view operations. Dimensions are 0-based and may be negative (counted from the end);
   functions returning a tensor return a new reference, or NULL with an error naming the op. */
#ifndef LT_SHAPE_H
#define LT_SHAPE_H

#include "core/tensor.h"

/* sizes may contain one -1 (inferred). view fails when the strides do not allow it. */
lt_tensor_t *lt_view(lt_tensor_t *x, int ndim, const int64_t *sizes);
/* a view when possible, else a copy */
lt_tensor_t *lt_reshape(lt_tensor_t *x, int ndim, const int64_t *sizes);
lt_tensor_t *lt_permute(lt_tensor_t *x, int ndim, const int64_t *dims);
lt_tensor_t *lt_transpose(lt_tensor_t *x, int64_t d0, int64_t d1);
/* 2-D transpose; 0-D and 1-D returned as they are (a new alias) */
lt_tensor_t *lt_t(lt_tensor_t *x);
/* all size-1 dims */
lt_tensor_t *lt_squeeze(lt_tensor_t *x);
lt_tensor_t *lt_squeeze_dim(lt_tensor_t *x, int64_t dim);
lt_tensor_t *lt_unsqueeze(lt_tensor_t *x, int64_t dim); /* dim in [-(n+1), n] */
/* sizes may hold -1 (keep); new leading dims allowed; a view with stride 0 */
lt_tensor_t *lt_expand(lt_tensor_t *x, int ndim, const int64_t *sizes);
lt_tensor_t *lt_flatten(lt_tensor_t *x, int64_t start, int64_t end);
lt_tensor_t *lt_narrow(lt_tensor_t *x, int64_t dim, int64_t start, int64_t length); /* start 0-based */
lt_tensor_t *lt_select(lt_tensor_t *x, int64_t dim, int64_t index);                  /* index 0-based, may be negative */
/* a[dim] from start to stop (exclusive) with step > 0, clamped as Python slices */
lt_tensor_t *lt_slice(lt_tensor_t *x, int64_t dim, int64_t start, int64_t stop, int64_t step);
/* A view of x's storage with the given sizes, strides (>= 0) and storage offset (in elements,
   0-based), checked against the storage's size; not recorded by autograd (lua/torch/shapes.lua
   records it). The elements needed, 1 + sum((size - 1) * stride) (0 for an empty view). */
lt_tensor_t *lt_as_strided(lt_tensor_t *x, int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset);
int64_t lt_strided_extent(const char *op, int ndim, const int64_t *sizes, const int64_t *strides);
/* x:resize_(sizes): x gets the sizes, contiguous strides and its storage offset; when they need
   more elements than the storage holds, x moves to a larger storage holding the old elements
   first (other tensors on the old storage keep it: PyTorch's grow the shared storage). Memory
   from outside the allocator (from_blob) cannot grow. Autograd is the caller's (PyTorch refuses tensors that require grad). */
int lt_resize_(lt_tensor_t *x, int ndim, const int64_t *sizes);
lt_tensor_t *lt_cat(int n, lt_tensor_t *const *xs, int64_t dim);
lt_tensor_t *lt_stack(int n, lt_tensor_t *const *xs, int64_t dim);
/* split into pieces of split_size along dim (the last may be smaller): *n_out pieces in *out
   (an array the caller frees with free(), each element a new reference) */
int lt_split(lt_tensor_t *x, int64_t split_size, int64_t dim, lt_tensor_t ***out, int *n_out);
int lt_split_sizes(lt_tensor_t *x, int n, const int64_t *sizes, int64_t dim, lt_tensor_t ***out, int *n_out);
int lt_chunk(lt_tensor_t *x, int64_t chunks, int64_t dim, lt_tensor_t ***out, int *n_out);

#endif
