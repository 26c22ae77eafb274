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

#endif
