/* Autograd of the shape and view ops. Ops that keep the row-major order of elements (view,
   reshape, flatten, squeeze, unsqueeze) reshape the gradient back; permutations permute it back;
   expand leaves the summing to the engine; slicing ops give the engine the gradient of their part,
   which shape_scatter adds into that part of the input's gradient. */
#include "core/factory.h"
#include "core/grad.h"
#include "core/shape.h"

#include <stdlib.h>
#include <string.h>

typedef enum { SH_RESHAPE, SH_PERMUTE, SH_EXPAND, SH_NARROW, SH_SELECT, SH_SLICE, SH_CAT, SH_STACK } shape_kind;

typedef struct {
  shape_kind kind;
  int64_t dim, a, b, c; /* narrow: start, length; select: index; slice: start, stop, step */
  int n;
  int64_t perm[LT_MAX_DIM];
} shape_ctx_t;

/* the view of z (input-shaped) that the forward op took */
static lt_tensor_t *same_view(const shape_ctx_t *c, lt_tensor_t *z) {
  switch (c->kind) {
    case SH_NARROW: return lt_narrow(z, c->dim, c->a, c->b);
    case SH_SELECT: return lt_select(z, c->dim, c->a);
    default: return lt_slice(z, c->dim, c->a, c->b, c->c);
  }
}

static int shape_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const shape_ctx_t *c = n->ctx;
  const lt_meta_t *in = &n->in[0].meta;
  lt_tensor_t *g = go[0];
  switch (c->kind) {
    case SH_RESHAPE: gi[0] = lt_reshape(g, in->ndim, in->sizes); break;
    case SH_PERMUTE: {
      int64_t inv[LT_MAX_DIM];
      for (int d = 0; d < in->ndim; d++) inv[c->perm[d]] = d;
      gi[0] = lt_permute(g, in->ndim, inv);
      break;
    }
    case SH_EXPAND: gi[0] = lt_retained(g); break;
    case SH_NARROW:
    case SH_SELECT:
    case SH_SLICE: /* the view's gradient: shape_scatter puts it in place (the engine calls it) */
      if (!lt_node_needs(n, 0)) return LT_OK;
      gi[0] = lt_retained(g);
      break;
    case SH_CAT: {
      int64_t off = 0;
      for (int i = 0; i < n->n_in; i++) {
        int64_t len = n->in[i].meta.sizes[c->dim];
        if (n->in[i].meta.ndim != g->ndim) continue; /* a legacy empty [0] input, skipped by cat */
        if (lt_node_needs(n, i) && !(gi[i] = lt_narrow(g, c->dim, off, len))) return LT_ERR;
        off += len;
      }
      return LT_OK;
    }
    case SH_STACK:
      for (int i = 0; i < n->n_in; i++)
        if (lt_node_needs(n, i) && !(gi[i] = lt_select(g, c->dim, i))) return LT_ERR;
      return LT_OK;
  }
  return gi[0] ? LT_OK : LT_ERR;
}

/* n->scatter of the slicing views: *slot (the input's gradient so far, or NULL) += g in the part the
   view took. The slot is written in place where the engine alone holds it (contiguous: no element
   twice); otherwise, or when empty, it becomes a new tensor. */
static int shape_scatter(lt_node_t *n, lt_tensor_t **slot, lt_tensor_t *g) {
  lt_tensor_t *s = *slot;
  bool own = s && lt_ag_owns(s) && s->dtype == g->dtype && lt_device_eq(s->device, g->device);
  bool fresh = !s;
  if (!own) {
    lt_tensor_t *z = s ? lt_convert(s, g->dtype, g->device) : lt_zeros_meta(&n->in[0].meta); /* new, contiguous */
    if (!z) { lt_release(g); return LT_ERR; }
    lt_release(s);
    *slot = s = z;
  }
  lt_tensor_t *v = same_view(n->ctx, s);
  int rc = LT_ERR;
  if (v && fresh) rc = lt_copy_(v, g);
  else if (v) {
    lt_tensor_t *r = lt_binary(LT_BINARY_add, lt_tensor_operand(v), lt_tensor_operand(g), 1, v);
    rc = r ? LT_OK : LT_ERR;
    lt_release(r);
  }
  lt_release(v);
  lt_release(g);
  return rc;
}

/* backward_graph of the slicing views (narrow, select, slice with step 1): the whole input's
   gradient, the view's gradient between zeros, from recorded ops */
static int shape_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  if (!lt_node_needs(n, 0)) return LT_OK;
  const shape_ctx_t *c = n->ctx;
  const lt_meta_t *in = &n->in[0].meta;
  int d;
  LT_TRY(lt_wrap_dim("backward", c->dim, in->ndim, &d));
  int64_t size = in->sizes[d], st = c->a;
  if (c->kind == SH_SLICE) st = st < 0 ? (st < -size ? 0 : st + size) : st > size ? size : st;
  else if (st < 0) st += size;
  lt_tensor_t *g = c->kind == SH_SELECT ? lt_unsqueeze(go[0], d) : lt_retained(go[0]);
  if (!g) return LT_ERR;
  int64_t len = g->sizes[d], sizes[LT_MAX_DIM];
  lt_tensor_t *parts[3] = {NULL, g, NULL};
  memcpy(sizes, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
  sizes[d] = st;
  if (st > 0) parts[0] = lt_full(g->ndim, sizes, lt_F(0), g->dtype, g->device);
  sizes[d] = size - st - len;
  if (sizes[d] > 0) parts[2] = lt_full(g->ndim, sizes, lt_F(0), g->dtype, g->device);
  lt_tensor_t *list[3];
  int k = 0;
  for (int i = 0; i < 3; i++)
    if (parts[i]) list[k++] = parts[i];
  bool ok = (st <= 0 || parts[0]) && (size - st - len <= 0 || parts[2]);
  gi[0] = ok ? lt_cat(k, list, d) : NULL;
  for (int i = 0; i < 3; i++) lt_release(parts[i]);
  return gi[0] ? LT_OK : LT_ERR;
}

static lt_tensor_t *record_view(const char *name, lt_tensor_t *x, lt_tensor_t *o, const shape_ctx_t *c) {
  if (!o) return NULL;
  lt_node_t *n = lt_record(name, shape_bw, 1, &x, o, sizeof *c);
  if (!n) { lt_release(o); return NULL; }
  memcpy(n->ctx, c, sizeof *c);
  if (c->kind == SH_NARROW || c->kind == SH_SELECT || c->kind == SH_SLICE) {
    n->scatter = shape_scatter;
    if (c->kind != SH_SLICE || c->c == 1) n->backward_graph = shape_graph_bw;
  } else {
    n->backward_graph = shape_bw; /* made of recorded ops */
  }
  if (o->storage == x->storage) lt_node_mark_view(o);
  return o;
}

#define RAW(expr)                            \
  bool prev_ = lt_set_grad_enabled(false);   \
  lt_tensor_t *o = (expr);                   \
  lt_set_grad_enabled(prev_)

lt_tensor_t *lt_ag_view_result(const char *name, lt_tensor_t *x, lt_tensor_t *o) {
  shape_ctx_t c = {.kind = SH_RESHAPE};
  return record_view(name, x, o, &c);
}

lt_tensor_t *lt_ag_permute(lt_tensor_t *x, int ndim, const int64_t *dims) {
  RAW(lt_permute(x, ndim, dims));
  if (!o) return NULL; /* the dims were refused: they index nothing below */
  shape_ctx_t c = {.kind = SH_PERMUTE};
  for (int d = 0; d < ndim; d++) c.perm[d] = dims[d] < 0 ? dims[d] + ndim : dims[d];
  return record_view("PermuteBackward0", x, o, &c);
}

lt_tensor_t *lt_ag_transpose(lt_tensor_t *x, int64_t d0, int64_t d1) {
  RAW(lt_transpose(x, d0, d1));
  if (!o) return NULL; /* a dim out of range would index perm out of its bounds */
  shape_ctx_t c = {.kind = SH_PERMUTE};
  int n = x->ndim, a = (int)(d0 < 0 ? d0 + n : d0), b = (int)(d1 < 0 ? d1 + n : d1);
  for (int d = 0; d < n; d++) c.perm[d] = d;
  if (n > 0) { c.perm[a] = b; c.perm[b] = a; }
  return record_view("TransposeBackward0", x, o, &c);
}

lt_tensor_t *lt_ag_expand(lt_tensor_t *x, int ndim, const int64_t *sizes) {
  RAW(lt_expand(x, ndim, sizes));
  shape_ctx_t c = {.kind = SH_EXPAND};
  return record_view("ExpandBackward0", x, o, &c);
}

lt_tensor_t *lt_ag_narrow(lt_tensor_t *x, int64_t dim, int64_t start, int64_t length) {
  RAW(lt_narrow(x, dim, start, length));
  shape_ctx_t c = {.kind = SH_NARROW, .dim = dim, .a = start, .b = length};
  return record_view("NarrowBackward0", x, o, &c);
}

lt_tensor_t *lt_ag_select(lt_tensor_t *x, int64_t dim, int64_t index) {
  RAW(lt_select(x, dim, index));
  shape_ctx_t c = {.kind = SH_SELECT, .dim = dim, .a = index};
  return record_view("SelectBackward0", x, o, &c);
}

lt_tensor_t *lt_ag_slice(lt_tensor_t *x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
  RAW(lt_slice(x, dim, start, stop, step));
  shape_ctx_t c = {.kind = SH_SLICE, .dim = dim, .a = start, .b = stop, .c = step};
  return record_view("SliceBackward0", x, o, &c);
}

static lt_tensor_t *record_multi_in(const char *name, int n, lt_tensor_t *const *xs, lt_tensor_t *o,
                                    shape_kind kind, int64_t dim) {
  if (!o) return NULL;
  int d;
  if (lt_wrap_dim(name, dim, o->ndim, &d) != LT_OK) { lt_release(o); return NULL; }
  lt_node_t *node = lt_record(name, shape_bw, n, xs, o, sizeof(shape_ctx_t));
  if (!node) { lt_release(o); return NULL; }
  node->backward_graph = shape_bw;
  shape_ctx_t *c = node->ctx;
  c->kind = kind;
  c->dim = d;
  return o;
}

lt_tensor_t *lt_ag_cat(int n, lt_tensor_t *const *xs, int64_t dim) {
  RAW(lt_cat(n, xs, dim));
  return record_multi_in("CatBackward0", n, xs, o, SH_CAT, dim);
}

lt_tensor_t *lt_ag_stack(int n, lt_tensor_t *const *xs, int64_t dim) {
  RAW(lt_stack(n, xs, dim));
  return record_multi_in("StackBackward0", n, xs, o, SH_STACK, dim);
}
