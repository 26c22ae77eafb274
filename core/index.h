/* Indexing operations. Index VALUES stored in index tensors are 0-based in the core; the Lua
   binding converts the user's 1-based indices (API.md) before calling and after returning
   (argmax etc.). Functions returning a tensor return a new reference or NULL with an error. */
#ifndef LT_INDEX_H
#define LT_INDEX_H

#include "core/elementwise.h"
#include "core/tensor.h"

lt_tensor_t *lt_index_select(lt_tensor_t *x, int64_t dim, lt_tensor_t *index); /* index: 1-D int64/int32 */
lt_tensor_t *lt_masked_select(lt_tensor_t *x, lt_tensor_t *mask);              /* 1-D result, mask broadcast */
lt_tensor_t *lt_masked_fill(lt_tensor_t *x, lt_tensor_t *mask, lt_operand_t value, lt_tensor_t *out);
lt_tensor_t *lt_gather(lt_tensor_t *x, int64_t dim, lt_tensor_t *index);
/* out = x with out[index] = src along dim (src a tensor or a number); in-place when out == x */
lt_tensor_t *lt_scatter(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t src, lt_tensor_t *out);
lt_tensor_t *lt_scatter_add(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, lt_tensor_t *out);
/* x[dim][index[i]] += / = src rows (index_add_, index_copy_, index_fill_) */
int lt_index_add_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, double alpha);
int lt_index_fill_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t value);
/* rows where mask is true, as 0-based int64 coordinates [n, ndim] */
lt_tensor_t *lt_nonzero(lt_tensor_t *x);

/* ---- x[key] and x[key] = value with a tensor key (core/advanced_index.c) ----
   A bool key of k dims masks x's first k dims (its shape must equal theirs): the result has the
   selected rows, [n, rest...]. An integer key (0-based int64 values) selects rows of dim 0:
   the result has shape key.shape + x.shape[1:]. value is a number or a tensor broadcast to the
   selected rows. */
lt_tensor_t *lt_index_get(lt_tensor_t *x, lt_tensor_t *key);
int lt_index_put_(lt_tensor_t *x, lt_tensor_t *key, lt_operand_t value);

/* ---- x[key] = value with a basic key (numbers, ranges, '...', newaxis) ----
   The key as the steps that take its view of x, each applied to the view made so far (dims
   0-based): select index `start` (negative from the end), slice start:stop:step (step >= 1,
   bounds checked by the caller), or a new dim of size 1 at dim. */
typedef enum { LT_KEY_SELECT, LT_KEY_SLICE, LT_KEY_NEWAXIS } lt_key_kind;
typedef struct {
  lt_key_kind kind;
  int dim;
  int64_t start, stop, step;
} lt_key_step_t;
#define LT_KEY_MAX_STEPS (2 * LT_MAX_DIM)
/* the view of x that the steps take (recorded by autograd as the view ops it is made of) */
lt_tensor_t *lt_key_view(lt_tensor_t *x, int n, const lt_key_step_t *steps);
/* x[key] = value (a tensor broadcast to the view, or a number), written into the view; when
   autograd records it, one node on x (PyTorch's CopySlices: x's gradient is g with the view's
   elements zero, value's the view's part of g), with no pass over the rest of x */
int lt_key_assign_(lt_tensor_t *x, int n, const lt_key_step_t *steps, lt_operand_t value);

#endif
