/* x[key] and x[key] = value with a tensor key, in PyTorch's manner for one index tensor: a bool
   mask over the leading dims, or integer rows of dim 0. Built on the index and shape ops. */
#include "core/elementwise.h"
#include "core/index.h"
#include "core/shape.h"

#include <string.h>

/* The rows of x selected by key as a 1-D int64 tensor of 0-based row numbers into the view of x
   whose first dimension merges the key's dims (*merged, a new reference). */
static lt_tensor_t *selected_rows(const char *op, lt_tensor_t *x, lt_tensor_t *key, lt_tensor_t **merged,
                                  bool need_view) {
  *merged = NULL;
  if (key->dtype != LT_BOOL) {
    if (key->dtype != LT_INT64) {
      lt_error("%s: an index tensor must be int64 (or a bool mask), got %s", op, lt_dtype_name(key->dtype));
      return NULL;
    }
    if (x->ndim == 0) {
      lt_error("%s: a 0-dim tensor cannot be indexed by a tensor of indices", op);
      return NULL;
    }
    int64_t n = -1;
    lt_tensor_t *flat = lt_reshape(key, 1, &n);
    if (!flat) return NULL;
    lt_retain(x);
    *merged = x;
    return flat;
  }
  int k = key->ndim;
  if (k > x->ndim || memcmp(key->sizes, x->sizes, sizeof(int64_t) * (size_t)k) != 0) {
    char a[256], b[256];
    lt_error("%s: the mask of shape %s does not match the indexed tensor's shape %s", op,
             lt_shape_str(key->ndim, key->sizes, a, sizeof a), lt_shape_str(x->ndim, x->sizes, b, sizeof b));
    return NULL;
  }
  int64_t sizes[LT_MAX_DIM];
  sizes[0] = lt_numel_of(k, x->sizes);
  memcpy(sizes + 1, x->sizes + k, sizeof(int64_t) * (size_t)(x->ndim - k));
  *merged = need_view ? lt_view(x, x->ndim - k + 1, sizes) : lt_reshape(x, x->ndim - k + 1, sizes);
  if (!*merged) {
    if (need_view)
      lt_error("%s: assigning through a mask needs the masked dims of the tensor to be mergeable "
               "(make it contiguous first)", op);
    return NULL;
  }
  int64_t n = -1;
  lt_tensor_t *mflat = lt_reshape(key, 1, &n);
  lt_tensor_t *nz = mflat ? lt_nonzero(mflat) : NULL;
  lt_release(mflat);
  if (!nz) { lt_release(*merged); *merged = NULL; return NULL; }
  lt_tensor_t *rows = lt_reshape(nz, 1, &n);
  lt_release(nz);
  if (!rows) { lt_release(*merged); *merged = NULL; }
  return rows;
}

lt_tensor_t *lt_index_get(lt_tensor_t *x, lt_tensor_t *key) {
  lt_tensor_t *merged;
  lt_tensor_t *rows = selected_rows("index", x, key, &merged, false);
  if (!rows) return NULL;
  lt_tensor_t *r = lt_index_select(merged, 0, rows);
  lt_release(rows);
  lt_release(merged);
  if (!r || key->dtype == LT_BOOL || key->ndim == 1) return r;
  /* integer keys of any shape: key.shape + x.shape[1:] */
  int64_t sizes[LT_MAX_DIM];
  int nd = key->ndim + x->ndim - 1;
  if (nd > LT_MAX_DIM) { lt_release(r); lt_error("index: the result would have more than %d dimensions", LT_MAX_DIM); return NULL; }
  memcpy(sizes, key->sizes, sizeof(int64_t) * (size_t)key->ndim);
  memcpy(sizes + key->ndim, x->sizes + 1, sizeof(int64_t) * (size_t)(x->ndim - 1));
  lt_tensor_t *v = lt_view(r, nd, sizes);
  lt_release(r);
  return v;
}

int lt_index_put_(lt_tensor_t *x, lt_tensor_t *key, lt_operand_t value) {
  bool is_number = value.kind != LT_OPERAND_TENSOR || value.t->ndim == 0;
  if (key->dtype == LT_BOOL && is_number) { /* a mask and one value: masked_fill_ on any layout */
    if (key->ndim > x->ndim || memcmp(key->sizes, x->sizes, sizeof(int64_t) * (size_t)key->ndim) != 0) {
      char a[256], b[256];
      return lt_error("index assignment: the mask of shape %s does not match the tensor's shape %s",
                      lt_shape_str(key->ndim, key->sizes, a, sizeof a), lt_shape_str(x->ndim, x->sizes, b, sizeof b));
    }
    int64_t sizes[LT_MAX_DIM];
    memcpy(sizes, key->sizes, sizeof(int64_t) * (size_t)key->ndim);
    for (int d = key->ndim; d < x->ndim; d++) sizes[d] = 1;
    lt_tensor_t *m = lt_view(key, x->ndim, sizes);
    lt_tensor_t *r = m ? lt_masked_fill(x, m, value, x) : NULL;
    lt_release(m);
    if (!r) return LT_ERR;
    lt_release(r);
    return LT_OK;
  }
  lt_tensor_t *merged;
  lt_tensor_t *rows = selected_rows("index assignment", x, key, &merged, true);
  if (!rows) return LT_ERR;
  int rc;
  if (is_number) {
    rc = lt_index_fill_(merged, 0, rows, value);
  } else {
    /* rows get the value broadcast to [n, rest...], scattered in place along dim 0 by the row
       numbers spread over that shape (a repeated row takes one of its values, as in PyTorch) */
    int64_t sizes[LT_MAX_DIM], spread[LT_MAX_DIM];
    sizes[0] = spread[0] = rows->sizes[0];
    memcpy(sizes + 1, merged->sizes + 1, sizeof(int64_t) * (size_t)(merged->ndim - 1));
    for (int d = 1; d < merged->ndim; d++) spread[d] = 1;
    lt_tensor_t *v = lt_expand(value.t, merged->ndim, sizes);
    lt_tensor_t *vc = v ? lt_convert(v, merged->dtype, merged->device) : NULL;
    lt_tensor_t *col = lt_view(rows, merged->ndim, spread);
    lt_tensor_t *at = col ? lt_expand(col, merged->ndim, sizes) : NULL;
    lt_tensor_t *r = vc && at ? lt_scatter(merged, 0, at, lt_tensor_operand(vc), merged) : NULL;
    rc = r ? LT_OK : LT_ERR;
    lt_release(r);
    lt_release(at);
    lt_release(col);
    lt_release(vc);
    lt_release(v);
  }
  lt_release(rows);
  lt_release(merged);
  return rc;
}
