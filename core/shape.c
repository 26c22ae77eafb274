/* Shape and view operations, with PyTorch's rules. Views share the storage of their base (a new
   tensor object over the same storage, made by lt_view_geometry); cat and stack allocate. In error
   messages, dimensions and index values are shown as users see them: 1-based (a 0-based d is shown
   as d + 1; negative values as they were given). */
#include "core/shape.h"
#include "core/grad.h"

#include "core/elementwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* user-visible form of a 0-based index value */
static long long shown(int64_t i) { return (long long)(i >= 0 ? i + 1 : i); }

static int check_ndim(const char *op, int ndim) {
  if (ndim < 0 || ndim > LT_MAX_DIM)
    return lt_error("%s: tensors have at most %d dimensions, got %d", op, LT_MAX_DIM, ndim);
  return LT_OK;
}

/* ---- view / reshape ---- */

/* PyTorch's infer_size: one -1 is inferred; the product must be numel. */
static int infer_size(const char *op, int ndim, const int64_t *sizes, int64_t numel, int64_t *out) {
  int64_t prod = 1;
  int infer = -1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == -1) {
      if (infer >= 0) return lt_error("%s: only one dimension can be inferred", op);
      infer = i;
    } else if (sizes[i] >= 0) {
      if (sizes[i] != 0 && prod > INT64_MAX / sizes[i]) {
        char b[512];
        return lt_error("%s: shape '%s' is invalid for input of size %lld", op,
                        lt_shape_str(ndim, sizes, b, sizeof b), (long long)numel);
      }
      prod *= sizes[i];
    } else {
      return lt_error("%s: invalid shape dimension %lld", op, (long long)sizes[i]);
    }
    out[i] = sizes[i];
  }
  if (numel == prod || (infer >= 0 && prod > 0 && numel % prod == 0)) {
    if (infer >= 0) {
      if (prod == 0) {
        char b[512];
        return lt_error("%s: cannot reshape tensor of 0 elements into shape %s because the "
                        "unspecified dimension size -1 can be any value and is ambiguous",
                        op, lt_shape_str(ndim, sizes, b, sizeof b));
      }
      out[infer] = numel / prod;
    }
    return LT_OK;
  }
  char b[512];
  return lt_error("%s: shape '%s' is invalid for input of size %lld", op,
                  lt_shape_str(ndim, sizes, b, sizeof b), (long long)numel);
}

/* PyTorch's at::detail::computeStride: the strides of a view of (osize, ostride) with shape nsize,
   or false when no such view exists. */
static bool compute_stride(int ond, const int64_t *osize, const int64_t *ostride, int nnd,
                           const int64_t *nsize, int64_t *nstride) {
  if (ond == 0) {
    for (int i = 0; i < nnd; i++) nstride[i] = 1;
    return true;
  }
  int64_t numel = lt_numel_of(ond, osize);
  if (numel == 0 && ond == nnd && memcmp(osize, nsize, sizeof(int64_t) * (size_t)ond) == 0) {
    memcpy(nstride, ostride, sizeof(int64_t) * (size_t)ond);
    return true;
  }
  if (numel == 0) {
    for (int d = nnd - 1; d >= 0; d--) {
      if (d == nnd - 1) nstride[d] = 1;
      else nstride[d] = (nsize[d + 1] > 1 ? nsize[d + 1] : 1) * nstride[d + 1];
    }
    return true;
  }
  int view_d = nnd - 1;
  int64_t chunk_base_stride = ostride[ond - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int td = ond - 1; td >= 0; td--) {
    tensor_numel *= osize[td];
    if (td == 0 || (osize[td - 1] != 1 && ostride[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || nsize[view_d] == 1)) {
        nstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= nsize[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = ostride[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

lt_tensor_t *lt_view(lt_tensor_t *x, int ndim, const int64_t *sizes) {
  LT_AG_RESHAPE_LIKE("ViewBackward0", x, lt_view(x, ndim, sizes))
  if (check_ndim("view", ndim) != LT_OK) return NULL;
  int64_t shape[LT_MAX_DIM], strides[LT_MAX_DIM];
  if (infer_size("view", ndim, sizes, x->numel, shape) != LT_OK) return NULL;
  if (!compute_stride(x->ndim, x->sizes, x->strides, ndim, shape, strides)) {
    lt_error("view: view size is not compatible with input tensor's size and stride (at least one "
             "dimension spans across two contiguous subspaces). Use reshape instead.");
    return NULL;
  }
  return lt_view_geometry(x, ndim, shape, strides, x->offset);
}

int64_t lt_strided_extent(const char *op, int ndim, const int64_t *sizes, const int64_t *strides) {
  if (check_ndim(op, ndim) != LT_OK) return -1;
  int64_t extent = 1;
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] < 0) return lt_error("%s: sizes must be non-negative, got %lld in dimension %d", op, (long long)sizes[d], d + 1);
    if (strides[d] < 0)
      return lt_error("%s: strides must be non-negative, got %lld in dimension %d", op, (long long)strides[d], d + 1);
  }
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] == 0) return 0;
    int64_t span;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span) || __builtin_add_overflow(extent, span, &extent) ||
        __builtin_mul_overflow(numel, sizes[d], &numel))
      return lt_error("%s: sizes and strides reach past 2^63 elements", op);
  }
  return extent;
}

lt_tensor_t *lt_as_strided(lt_tensor_t *x, int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset) {
  int64_t extent = lt_strided_extent("as_strided", ndim, sizes, strides);
  if (extent < 0) return NULL;
  if (offset < 0) {
    lt_error("as_strided: storage_offset must be non-negative, got %lld", (long long)offset);
    return NULL;
  }
  int64_t cap = (int64_t)(x->storage->nbytes / lt_elsize(x)), end;
  if (extent > 0 && (__builtin_add_overflow(offset, extent, &end) || end > cap)) {
    char sb[128], tb[128];
    lt_error("as_strided: sizes %s, strides %s and storage offset %lld need a storage of %lld elements, but it "
             "holds %lld", lt_shape_str(ndim, sizes, sb, sizeof sb), lt_shape_str(ndim, strides, tb, sizeof tb),
             (long long)offset, (long long)(end < offset ? INT64_MAX : end), (long long)cap);
    return NULL;
  }
  return lt_view_geometry(x, ndim, sizes, strides, offset);
}

int lt_resize_(lt_tensor_t *x, int ndim, const int64_t *sizes) {
  LT_TRY(check_ndim("resize_", ndim));
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0) return lt_error("resize_: negative dimension %lld in size", (long long)sizes[i]);
    if (sizes[i] && nonzero > INT64_MAX / 16 / sizes[i]) return lt_error("resize_: size is too large");
    if (sizes[i]) nonzero *= sizes[i];
    n *= sizes[i];
  }
  size_t el = lt_elsize(x);
  lt_storage_t *s = x->storage;
  int64_t need = n ? x->offset + n : 0;
  if ((size_t)need * el > s->nbytes) {
    if (!s->block) return lt_error("resize_: Trying to resize storage that is not resizable");
    lt_tensor_t *fresh = lt_empty(1, &need, x->dtype, s->device);
    if (!fresh) return LT_ERR;
    /* the new elements are left as the allocation had them, except bools, which must hold 0 or 1
       (reading another byte as C's bool is undefined): they start false */
    if (x->dtype == LT_BOOL && lt_fill_(fresh, lt_int_operand(0)) != LT_OK) { lt_release(fresh); return LT_ERR; }
    int64_t cap = (int64_t)(s->nbytes / el), one = 1;
    if (cap > 0) {
      lt_tensor_t *old = lt_view_geometry(x, 1, &cap, &one, 0);
      lt_tensor_t *head = old ? lt_view_geometry(fresh, 1, &cap, &one, 0) : NULL;
      bool prev = lt_set_grad_enabled(false);
      int rc = head ? lt_copy_(head, old) : LT_ERR;
      lt_set_grad_enabled(prev);
      lt_release(old);
      lt_release(head);
      if (rc != LT_OK) { lt_release(fresh); return LT_ERR; }
    }
    /* x moves to the new storage (its offset kept); other tensors on the old one keep it, and
       with it the old memory, which views made for other devices may still read */
    int64_t offset = x->offset;
    lt_set_(x, fresh);
    x->offset = offset;
    lt_release(fresh);
  }
  x->ndim = ndim;
  x->numel = n;
  if (ndim) memcpy(x->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
  lt_contiguous_strides(ndim, x->sizes, x->strides);
  return LT_OK;
}

lt_tensor_t *lt_reshape(lt_tensor_t *x, int ndim, const int64_t *sizes) {
  LT_AG_RESHAPE_LIKE("ReshapeAliasBackward0", x, lt_reshape(x, ndim, sizes))
  if (check_ndim("reshape", ndim) != LT_OK) return NULL;
  int64_t shape[LT_MAX_DIM], strides[LT_MAX_DIM];
  if (infer_size("reshape", ndim, sizes, x->numel, shape) != LT_OK) return NULL;
  if (compute_stride(x->ndim, x->sizes, x->strides, ndim, shape, strides))
    return lt_view_geometry(x, ndim, shape, strides, x->offset);
  lt_tensor_t *c = lt_clone(x);
  if (!c) return NULL;
  lt_contiguous_strides(ndim, shape, strides);
  lt_tensor_t *v = lt_view_geometry(c, ndim, shape, strides, c->offset);
  lt_release(c);
  return v;
}

/* ---- permutations ---- */

lt_tensor_t *lt_permute(lt_tensor_t *x, int ndim, const int64_t *dims) {
  if (lt_ag_needed(x, NULL)) return lt_ag_permute(x, ndim, dims);
  if (ndim != x->ndim) {
    lt_error("permute: number of dimensions in the tensor input does not match the length of the "
             "desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d",
             x->ndim, ndim);
    return NULL;
  }
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  bool seen[LT_MAX_DIM] = {false};
  for (int i = 0; i < ndim; i++) {
    int d;
    if (lt_wrap_dim("permute", dims[i], ndim, &d) != LT_OK) return NULL;
    if (seen[d]) {
      lt_error("permute: duplicate dims are not allowed (dimension %d appears twice)", d + 1);
      return NULL;
    }
    seen[d] = true;
    sizes[i] = x->sizes[d];
    strides[i] = x->strides[d];
  }
  return lt_view_geometry(x, ndim, sizes, strides, x->offset);
}

lt_tensor_t *lt_transpose(lt_tensor_t *x, int64_t d0, int64_t d1) {
  if (lt_ag_needed(x, NULL)) return lt_ag_transpose(x, d0, d1);
  int a, b;
  if (lt_wrap_dim("transpose", d0, x->ndim, &a) != LT_OK ||
      lt_wrap_dim("transpose", d1, x->ndim, &b) != LT_OK)
    return NULL;
  if (x->ndim == 0) return lt_alias(x);
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  memcpy(sizes, x->sizes, sizeof sizes);
  memcpy(strides, x->strides, sizeof strides);
  sizes[a] = x->sizes[b];
  sizes[b] = x->sizes[a];
  strides[a] = x->strides[b];
  strides[b] = x->strides[a];
  return lt_view_geometry(x, x->ndim, sizes, strides, x->offset);
}

lt_tensor_t *lt_t(lt_tensor_t *x) {
  if (x->ndim < 2) LT_AG_RESHAPE_LIKE("TBackward0", x, lt_t(x))
  if (x->ndim > 2) {
    lt_error("t() expects a tensor with <= 2 dimensions, but self is %dD", x->ndim);
    return NULL;
  }
  if (x->ndim < 2) return lt_alias(x);
  return lt_transpose(x, 0, 1);
}

/* ---- squeeze / unsqueeze / expand / flatten ---- */

lt_tensor_t *lt_squeeze(lt_tensor_t *x) {
  LT_AG_RESHAPE_LIKE("SqueezeBackward0", x, lt_squeeze(x))
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  int n = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (x->sizes[i] == 1) continue;
    sizes[n] = x->sizes[i];
    strides[n] = x->strides[i];
    n++;
  }
  return lt_view_geometry(x, n, sizes, strides, x->offset);
}

lt_tensor_t *lt_squeeze_dim(lt_tensor_t *x, int64_t dim) {
  LT_AG_RESHAPE_LIKE("SqueezeBackward1", x, lt_squeeze_dim(x, dim))
  int d;
  if (lt_wrap_dim("squeeze", dim, x->ndim, &d) != LT_OK) return NULL;
  if (x->ndim == 0 || x->sizes[d] != 1) return lt_alias(x);
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  int n = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (i == d) continue;
    sizes[n] = x->sizes[i];
    strides[n] = x->strides[i];
    n++;
  }
  return lt_view_geometry(x, n, sizes, strides, x->offset);
}

lt_tensor_t *lt_unsqueeze(lt_tensor_t *x, int64_t dim) {
  LT_AG_RESHAPE_LIKE("UnsqueezeBackward0", x, lt_unsqueeze(x, dim))
  if (x->ndim + 1 > LT_MAX_DIM) {
    lt_error("unsqueeze: tensors have at most %d dimensions", LT_MAX_DIM);
    return NULL;
  }
  int d;
  if (lt_wrap_dim("unsqueeze", dim, x->ndim + 1, &d) != LT_OK) return NULL;
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  for (int i = 0, j = 0; i <= x->ndim; i++) {
    if (i == d) {
      sizes[i] = 1;
      strides[i] = d >= x->ndim ? 1 : x->sizes[d] * x->strides[d];
    } else {
      sizes[i] = x->sizes[j];
      strides[i] = x->strides[j];
      j++;
    }
  }
  return lt_view_geometry(x, x->ndim + 1, sizes, strides, x->offset);
}

lt_tensor_t *lt_expand(lt_tensor_t *x, int ndim, const int64_t *sizes) {
  if (lt_ag_needed(x, NULL)) return lt_ag_expand(x, ndim, sizes);
  if (check_ndim("expand", ndim) != LT_OK) return NULL;
  char a[512], b[512];
  if (ndim < x->ndim) {
    lt_error("expand: the number of sizes provided (%d) must be greater or equal to the number of "
             "dimensions in the tensor (%d)", ndim, x->ndim);
    return NULL;
  }
  int64_t es[LT_MAX_DIM], st[LT_MAX_DIM];
  for (int i = ndim - 1; i >= 0; i--) {
    int offset = ndim - 1 - i;
    int dim = x->ndim - 1 - offset;
    int64_t size = dim >= 0 ? x->sizes[dim] : 1;
    int64_t stride = dim >= 0 ? x->strides[dim] : (i + 1 < ndim ? es[i + 1] * st[i + 1] : 1);
    int64_t target = sizes[i];
    if (target == -1) {
      if (dim < 0) {
        lt_error("expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
                 "non-existing dimension %d", i + 1);
        return NULL;
      }
      target = size;
    }
    if (target < 0) {
      lt_error("expand: the expanded size of the tensor (%lld) must be non-negative at dimension "
               "%d. Target sizes: %s", (long long)target, i + 1, lt_shape_str(ndim, sizes, a, sizeof a));
      return NULL;
    }
    if (size != target) {
      if (size != 1) {
        lt_error("expand: the expanded size of the tensor (%lld) must match the existing size "
                 "(%lld) at non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s",
                 (long long)target, (long long)size, i + 1, lt_shape_str(ndim, sizes, a, sizeof a),
                 lt_shape_str(x->ndim, x->sizes, b, sizeof b));
        return NULL;
      }
      size = target;
      stride = 0;
    }
    es[i] = size;
    st[i] = stride;
  }
  return lt_view_geometry(x, ndim, es, st, x->offset);
}

lt_tensor_t *lt_flatten(lt_tensor_t *x, int64_t start, int64_t end) {
  LT_AG_RESHAPE_LIKE("FlattenBackward0", x, lt_flatten(x, start, end))
  int s, e;
  if (lt_wrap_dim("flatten", start, x->ndim, &s) != LT_OK ||
      lt_wrap_dim("flatten", end, x->ndim, &e) != LT_OK)
    return NULL;
  if (x->ndim == 0) {
    int64_t one = 1;
    return lt_reshape(x, 1, &one);
  }
  if (s > e) {
    lt_error("flatten: flatten() has invalid args: start_dim cannot come after end_dim");
    return NULL;
  }
  if (s == e) return lt_alias(x);
  int64_t sizes[LT_MAX_DIM];
  int n = 0;
  for (int i = 0; i < s; i++) sizes[n++] = x->sizes[i];
  int64_t p = 1;
  for (int i = s; i <= e; i++) p *= x->sizes[i];
  sizes[n++] = p;
  for (int i = e + 1; i < x->ndim; i++) sizes[n++] = x->sizes[i];
  return lt_reshape(x, n, sizes);
}

/* ---- narrow / select / slice ---- */

lt_tensor_t *lt_narrow(lt_tensor_t *x, int64_t dim, int64_t start, int64_t length) {
  if (lt_ag_needed(x, NULL)) return lt_ag_narrow(x, dim, start, length);
  if (x->ndim == 0) {
    lt_error("narrow() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  int d;
  if (lt_wrap_dim("narrow", dim, x->ndim, &d) != LT_OK) return NULL;
  int64_t size = x->sizes[d];
  int64_t st = start;
  if (st != size) {
    if (st < -size || st >= size) {
      lt_error("narrow: start %lld out of range for dimension %d of size %lld", shown(start), d + 1,
               (long long)size);
      return NULL;
    }
    if (st < 0) st += size;
  }
  if (length < 0) {
    lt_error("narrow: length must be non-negative, got %lld", (long long)length);
    return NULL;
  }
  if (st > size - length) {
    lt_error("narrow: start (%lld) + length (%lld) exceeds dimension size (%lld).", shown(start),
             (long long)length, (long long)size);
    return NULL;
  }
  int64_t sizes[LT_MAX_DIM];
  memcpy(sizes, x->sizes, sizeof sizes);
  sizes[d] = length;
  return lt_view_geometry(x, x->ndim, sizes, x->strides, x->offset + st * x->strides[d]);
}

lt_tensor_t *lt_select(lt_tensor_t *x, int64_t dim, int64_t index) {
  if (lt_ag_needed(x, NULL)) return lt_ag_select(x, dim, index);
  if (x->ndim == 0) {
    lt_error("select() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  int d;
  if (lt_wrap_dim("select", dim, x->ndim, &d) != LT_OK) return NULL;
  int64_t size = x->sizes[d];
  if (index < -size || index >= size) {
    char b[512];
    lt_error("select: index %lld out of range for tensor of size %s at dimension %d", shown(index),
             lt_shape_str(x->ndim, x->sizes, b, sizeof b), d + 1);
    return NULL;
  }
  int64_t i = index < 0 ? index + size : index;
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  int n = 0;
  for (int k = 0; k < x->ndim; k++) {
    if (k == d) continue;
    sizes[n] = x->sizes[k];
    strides[n] = x->strides[k];
    n++;
  }
  return lt_view_geometry(x, n, sizes, strides, x->offset + i * x->strides[d]);
}

lt_tensor_t *lt_slice(lt_tensor_t *x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
  if (lt_ag_needed(x, NULL)) return lt_ag_slice(x, dim, start, stop, step);
  if (x->ndim == 0) {
    lt_error("slice() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  int d;
  if (lt_wrap_dim("slice", dim, x->ndim, &d) != LT_OK) return NULL;
  if (step <= 0) {
    lt_error("slice: slice step must be positive, got %lld", (long long)step);
    return NULL;
  }
  int64_t size = x->sizes[d];
  if (start < 0) start = start < -size ? 0 : start + size;
  if (stop < 0) stop = stop < -size ? 0 : stop + size;
  if (start > size) start = size;
  if (stop < start) stop = start;
  else if (stop > size) stop = size;
  int64_t len = stop - start;
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  memcpy(sizes, x->sizes, sizeof sizes);
  memcpy(strides, x->strides, sizeof strides);
  sizes[d] = len / step + (len % step != 0);
  strides[d] = x->strides[d] * step;
  return lt_view_geometry(x, x->ndim, sizes, strides, x->offset + start * x->strides[d]);
}

/* ---- cat / stack ---- */

/* PyTorch's legacy rule: 1-D tensors with no elements are skipped by cat. */
static bool cat_skipped(const lt_tensor_t *t) { return t->ndim == 1 && t->sizes[0] == 0; }

lt_tensor_t *lt_cat(int n, lt_tensor_t *const *xs, int64_t dim) {
  if (lt_ag_needed_n(n, xs)) return lt_ag_cat(n, xs, dim);
  if (n <= 0 || !xs) {
    lt_error("cat: expected a non-empty list of Tensors");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!xs[i]) {
      lt_error("cat: expected a tensor at position %d", i + 1);
      return NULL;
    }
  if (lt_check_same_device("cat", n, (const lt_tensor_t *const *)xs) != LT_OK) return NULL;
  lt_dtype dt = xs[0]->dtype;
  for (int i = 1; i < n; i++) dt = lt_promote_types(dt, xs[i]->dtype);
  const lt_tensor_t *ref = NULL;
  for (int i = 0; i < n; i++) {
    if (xs[i]->ndim == 0) {
      lt_error("cat: zero-dimensional tensor (at position %d) cannot be concatenated", i + 1);
      return NULL;
    }
    if (!ref && !cat_skipped(xs[i])) ref = xs[i];
  }
  if (!ref) { /* only legacy empty tensors */
    int64_t zero = 0;
    return lt_empty(1, &zero, dt, xs[0]->device);
  }
  int d;
  if (lt_wrap_dim("cat", dim, ref->ndim, &d) != LT_OK) return NULL;
  int64_t sizes[LT_MAX_DIM];
  memcpy(sizes, ref->sizes, sizeof sizes);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const lt_tensor_t *t = xs[i];
    if (cat_skipped(t)) continue;
    if (t->ndim != ref->ndim) {
      lt_error("cat: Tensors must have same number of dimensions: got %d and %d", ref->ndim, t->ndim);
      return NULL;
    }
    for (int k = 0; k < t->ndim; k++) {
      if (k == d || t->sizes[k] == ref->sizes[k]) continue;
      lt_error("cat: Sizes of tensors must match except in dimension %d. Expected size %lld but got "
               "size %lld for tensor number %d in the list.", d + 1, (long long)ref->sizes[k],
               (long long)t->sizes[k], i + 1);
      return NULL;
    }
    total += t->sizes[d];
  }
  sizes[d] = total;
  lt_device_t dev = ref->device;
  for (int i = 0; i < n; i++) /* a 0-dim CPU tensor can't be here; prefer a non-CPU device */
    if (xs[i]->device.type != LT_CPU) { dev = xs[i]->device; break; }
  lt_tensor_t *out = lt_empty(ref->ndim, sizes, dt, dev);
  if (!out) return NULL;
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    const lt_tensor_t *t = xs[i];
    if (cat_skipped(t)) continue;
    int64_t len = t->sizes[d];
    if (len > 0) {
      lt_tensor_t *part = lt_narrow(out, d, off, len);
      int rc = part ? lt_copy_(part, t) : LT_ERR;
      lt_release(part);
      if (rc != LT_OK) { lt_release(out); return NULL; }
    }
    off += len;
  }
  return out;
}

lt_tensor_t *lt_stack(int n, lt_tensor_t *const *xs, int64_t dim) {
  if (lt_ag_needed_n(n, xs)) return lt_ag_stack(n, xs, dim);
  if (n <= 0 || !xs) {
    lt_error("stack: expects a non-empty TensorList");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!xs[i]) {
      lt_error("stack: expected a tensor at position %d", i + 1);
      return NULL;
    }
  const lt_tensor_t *x0 = xs[0];
  if (x0->ndim + 1 > LT_MAX_DIM) {
    lt_error("stack: tensors have at most %d dimensions", LT_MAX_DIM);
    return NULL;
  }
  int d;
  if (lt_wrap_dim("stack", dim, x0->ndim + 1, &d) != LT_OK) return NULL;
  if (lt_check_same_device("stack", n, (const lt_tensor_t *const *)xs) != LT_OK) return NULL;
  lt_dtype dt = x0->dtype;
  for (int i = 0; i < n; i++) {
    const lt_tensor_t *t = xs[i];
    if (t->ndim != x0->ndim || memcmp(t->sizes, x0->sizes, sizeof(int64_t) * (size_t)t->ndim) != 0) {
      char a[512], b[512];
      lt_error("stack: expects each tensor to be equal size, but got %s at entry 1 and %s at entry %d",
               lt_shape_str(x0->ndim, x0->sizes, a, sizeof a), lt_shape_str(t->ndim, t->sizes, b, sizeof b),
               i + 1);
      return NULL;
    }
    dt = lt_promote_types(dt, t->dtype);
  }
  int64_t sizes[LT_MAX_DIM];
  for (int i = 0, j = 0; i <= x0->ndim; i++) sizes[i] = i == d ? n : x0->sizes[j++];
  lt_device_t dev = x0->device;
  for (int i = 0; i < n; i++)
    if (xs[i]->device.type != LT_CPU) { dev = xs[i]->device; break; }
  lt_tensor_t *out = lt_empty(x0->ndim + 1, sizes, dt, dev);
  if (!out) return NULL;
  if (out->numel == 0) return out;
  for (int i = 0; i < n; i++) {
    lt_tensor_t *part = lt_select(out, d, i);
    int rc = part ? lt_copy_(part, xs[i]) : LT_ERR;
    lt_release(part);
    if (rc != LT_OK) { lt_release(out); return NULL; }
  }
  return out;
}

/* ---- split / chunk ---- */

static void free_pieces(lt_tensor_t **p, int n) {
  for (int i = 0; i < n; i++) lt_release(p[i]);
  free(p);
}

/* n narrow views of x along d with the given lengths (which sum to the size). */
static int make_pieces(const char *op, lt_tensor_t *x, int d, int n, const int64_t *lengths,
                       lt_tensor_t ***out, int *n_out) {
  lt_tensor_t **p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
  if (!p) return lt_error("%s: out of memory", op);
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    p[i] = lt_narrow(x, d, off, lengths[i]);
    if (!p[i]) { free_pieces(p, i); return LT_ERR; }
    off += lengths[i];
  }
  *out = p;
  *n_out = n;
  return LT_OK;
}

int lt_split(lt_tensor_t *x, int64_t split_size, int64_t dim, lt_tensor_t ***out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  if (x->ndim == 0) return lt_error("split: split expects at least a 1-dimensional tensor");
  int d;
  LT_TRY(lt_wrap_dim("split", dim, x->ndim, &d));
  int64_t size = x->sizes[d];
  if (split_size < 0)
    return lt_error("split: split expects split_size be non-negative, but got split_size=%lld",
                    (long long)split_size);
  if (split_size == 0 && size != 0)
    return lt_error("split: split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                    (long long)size);
  /* ceil(size / split_size), without the overflow of size + split_size - 1 */
  int64_t num = split_size == 0 ? 1 : size / split_size + (size % split_size != 0);
  if (num < 1) num = 1;
  if (num > (1 << 28)) return lt_error("split: too many pieces (%lld)", (long long)num);
  int64_t *len = malloc(sizeof(int64_t) * (size_t)num);
  if (!len) return lt_error("split: out of memory");
  for (int64_t i = 0; i < num; i++) len[i] = split_size;
  len[num - 1] = size - split_size * (num - 1);
  int rc = make_pieces("split", x, d, (int)num, len, out, n_out);
  free(len);
  return rc;
}

int lt_split_sizes(lt_tensor_t *x, int n, const int64_t *sizes, int64_t dim, lt_tensor_t ***out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  if (x->ndim == 0) return lt_error("split_with_sizes: expects at least a 1-dimensional tensor");
  int d;
  LT_TRY(lt_wrap_dim("split_with_sizes", dim, x->ndim, &d));
  if (n < 0) return lt_error("split_with_sizes: invalid number of sizes %d", n);
  int64_t sum = 0;
  bool neg = false, over = false; /* over: the sum passes INT64_MAX */
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) neg = true;
    else if (sizes[i] > INT64_MAX - sum) over = true;
    else sum += sizes[i];
  }
  char b[512];
  if (neg)
    return lt_error("split_with_sizes: expects split_sizes have only non-negative entries, but got "
                    "split_sizes=%s", lt_shape_str(n, sizes, b, sizeof b));
  if (over || sum != x->sizes[d])
    return lt_error("split_with_sizes: expects split_sizes to sum exactly to %lld (input tensor's "
                    "size at dimension %d), but got split_sizes=%s", (long long)x->sizes[d], d + 1,
                    lt_shape_str(n, sizes, b, sizeof b));
  return make_pieces("split_with_sizes", x, d, n, sizes, out, n_out);
}

int lt_chunk(lt_tensor_t *x, int64_t chunks, int64_t dim, lt_tensor_t ***out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  if (x->ndim == 0) return lt_error("chunk: chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0)
    return lt_error("chunk: chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
  int d;
  LT_TRY(lt_wrap_dim("chunk", dim, x->ndim, &d));
  int64_t size = x->sizes[d];
  int64_t split_size = size / chunks + (size % chunks != 0);
  if (split_size == 0 && size == 0) {
    /* as PyTorch: `chunks` empty pieces */
    if (chunks > (1 << 28)) return lt_error("chunk: too many chunks (%lld)", (long long)chunks);
    int64_t *len = calloc((size_t)chunks, sizeof(int64_t));
    if (!len) return lt_error("chunk: out of memory");
    int rc = make_pieces("chunk", x, d, (int)chunks, len, out, n_out);
    free(len);
    return rc;
  }
  if (lt_split(x, split_size, d, out, n_out) != LT_OK) {
    /* name chunk in the message */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    return lt_error("chunk: %s", strncmp(msg, "split: ", 7) == 0 ? msg + 7 : msg);
  }
  return LT_OK;
}
