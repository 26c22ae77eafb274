/* Autograd of the indexing ops: gradients go back to the rows or elements that were read, and are
   zero where values were overwritten. x[key] and x[key] = v are built from these ops and recorded
   through them. */
#include "core/factory.h"
#include "core/grad.h"
#include "core/index.h"
#include "core/iter.h"
#include "core/reduce.h"
#include "core/shape.h"

#include <string.h>

typedef enum { IX_SELECT, IX_GATHER, IX_SCATTER, IX_SCATTER_ADD, IX_MASKED_FILL, IX_MASKED_SELECT, IX_INDEX_ADD, IX_INDEX_FILL } ix_kind;

typedef struct {
  ix_kind kind;
  int64_t dim;
  double alpha;
} ix_ctx_t;

/* zeros of input 0's meta with g added at index along dim (index_add_ or scatter_add) */
static lt_tensor_t *zeros_plus(lt_node_t *n, lt_tensor_t *g, lt_tensor_t *index, bool rows) {
  lt_tensor_t *z = lt_zeros_meta(&n->in[0].meta);
  if (!z) return NULL;
  const ix_ctx_t *c = n->ctx;
  lt_tensor_t *gc = g->dtype == z->dtype ? lt_retained(g) : lt_convert(g, z->dtype, z->device);
  int rc = LT_ERR;
  if (gc && rows) rc = lt_index_add_(z, c->dim, index, gc, 1);
  else if (gc) {
    lt_tensor_t *r = lt_scatter_add(z, c->dim, index, gc, z);
    rc = r ? LT_OK : LT_ERR;
    lt_release(r);
  }
  lt_release(gc);
  if (rc != LT_OK) { lt_release(z); return NULL; }
  return z;
}

static int ix_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const ix_ctx_t *c = n->ctx;
  lt_tensor_t *g = go[0], *aux = n->saved[0].t ? lt_node_saved(n, 0) : NULL;
  if (n->saved[0].t && !aux) return LT_ERR;
  bool need0 = lt_node_needs(n, 0), need1 = n->n_in > 1 && lt_node_needs(n, 1);
  switch (c->kind) {
    case IX_SELECT: gi[0] = zeros_plus(n, g, aux, true); break;
    case IX_GATHER: gi[0] = zeros_plus(n, g, aux, false); break;
    case IX_SCATTER:
    case IX_SCATTER_ADD:
      if (need0)
        gi[0] = c->kind == IX_SCATTER_ADD ? lt_retained(g) : lt_scatter(g, c->dim, aux, lt_F(0), NULL);
      if (need1 && !(gi[1] = lt_gather(g, c->dim, aux))) return LT_ERR;
      break;
    case IX_MASKED_FILL: /* x: g where the mask is not set; the value: the sum of g where it is */
      if (need0) gi[0] = lt_masked_fill(g, aux, lt_F(0), NULL);
      if (need1) {
        lt_tensor_t *w = lt_where(aux, lt_T(g), lt_F(0));
        gi[1] = w ? lt_sum(w, 0, NULL, false, LT_DTYPE_INVALID) : NULL;
        lt_release(w);
        if (!gi[1]) return LT_ERR;
      }
      break;
    case IX_MASKED_SELECT: { /* zeros of the broadcast shape, the values put back where the mask is true */
      const lt_meta_t *m = &n->in[0].meta;
      int nd;
      int64_t shape[LT_MAX_DIM];
      LT_TRY(lt_broadcast_shapes("masked_select", m->ndim, m->sizes, aux->ndim, aux->sizes, &nd, shape));
      lt_tensor_t *z = lt_full(nd, shape, lt_F(0), g->dtype, g->device);
      lt_tensor_t *mk = lt_expand(aux, nd, shape);
      lt_tensor_t *mc = mk ? lt_contiguous(mk) : NULL;
      int rc = z && mc ? lt_index_put_(z, mc, lt_T(g)) : LT_ERR;
      lt_release(mk);
      lt_release(mc);
      if (rc != LT_OK) { lt_release(z); return LT_ERR; }
      gi[0] = z;
      break;
    }
    case IX_INDEX_ADD:
      if (need0) gi[0] = lt_retained(g);
      if (need1) {
        lt_tensor_t *s = lt_index_select(g, c->dim, aux);
        gi[1] = c->alpha == 1 || !s ? s : lt_opc(LT_BINARY_mul, s, lt_F(c->alpha));
        if (!gi[1]) return LT_ERR;
      }
      break;
    case IX_INDEX_FILL: {
      lt_tensor_t *r = lt_clone(g);
      if (!r || lt_index_fill_(r, c->dim, aux, lt_F(0)) != LT_OK) { lt_release(r); return LT_ERR; }
      gi[0] = r;
      break;
    }
  }
  return (need0 && !gi[0]) ? LT_ERR : LT_OK;
}

/* masked_select under create_graph: g added (a recorded scatter_add) at the flat positions where
   the mask, broadcast to the input's shape, is true, in zeros of that shape */
static int masked_select_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *mask = lt_node_saved(n, 0), *g = go[0];
  if (!mask) return LT_ERR;
  const lt_meta_t *m = &n->in[0].meta;
  int nd;
  int64_t shape[LT_MAX_DIM], numel = 1, n1 = -1;
  LT_TRY(lt_broadcast_shapes("masked_select", m->ndim, m->sizes, mask->ndim, mask->sizes, &nd, shape));
  for (int i = 0; i < nd; i++) numel *= shape[i];
  lt_tensor_t *mk = lt_expand(mask, nd, shape);
  lt_tensor_t *flat = mk ? lt_reshape(mk, 1, &numel) : NULL;
  lt_tensor_t *pos = flat ? lt_nonzero(flat) : NULL; /* [k, 1], 0-based */
  lt_tensor_t *idx = pos ? lt_reshape(pos, 1, &n1) : NULL;
  lt_tensor_t *z = lt_full(1, &numel, lt_F(0), g->dtype, g->device);
  lt_tensor_t *r = idx && z ? lt_scatter_add(z, 0, idx, g, NULL) : NULL;
  gi[0] = r ? lt_reshape(r, nd, shape) : NULL;
  lt_release(mk), lt_release(flat), lt_release(pos), lt_release(idx), lt_release(z), lt_release(r);
  return gi[0] ? LT_OK : LT_ERR;
}

static const char *const ix_names[] = {"IndexSelectBackward0", "GatherBackward0", "ScatterBackward0",
                                       "ScatterAddBackward0", "MaskedFillBackward0", "MaskedSelectBackward0",
                                       "IndexAddBackward0", "IndexFillBackward0"};

/* record o (consumed) made from inputs x (and src) by kind; aux (index or mask) is saved */
static lt_tensor_t *record_ix(ix_kind kind, lt_tensor_t *x, lt_tensor_t *src, lt_tensor_t *aux, int64_t dim,
                              double alpha, lt_tensor_t *o) {
  if (!o) return NULL;
  if (!lt_dtype_is_floating(o->dtype)) return o;
  lt_tensor_t *in[2] = {x, src};
  /* PyTorch's name for masked_fill with a value tensor */
  const char *name = kind == IX_MASKED_FILL && src ? "MaskedFillBackward1" : ix_names[kind];
  lt_node_t *n = lt_record(name, ix_bw, src ? 2 : 1, in, o, sizeof(ix_ctx_t));
  if (!n) { lt_release(o); return NULL; }
  /* made of recorded ops (masked_select's index_put_ is not) */
  n->backward_graph = kind == IX_MASKED_SELECT ? masked_select_graph_bw : ix_bw;
  ix_ctx_t *c = n->ctx;
  c->kind = kind;
  c->alpha = alpha;
  int d;
  if (kind != IX_MASKED_FILL && kind != IX_MASKED_SELECT && lt_wrap_dim(ix_names[kind], dim, x->ndim, &d) == LT_OK)
    c->dim = d; /* the op accepted dim, so this cannot fail */
  if (aux && lt_node_save(n, 0, aux) != LT_OK) { lt_release(o); return NULL; }
  return o;
}

#define RAW(expr)                              \
  bool prev_ = lt_set_grad_enabled(false);     \
  lt_tensor_t *o = (expr);                     \
  lt_set_grad_enabled(prev_)

lt_tensor_t *lt_ag_index_select(lt_tensor_t *x, int64_t dim, lt_tensor_t *index) {
  RAW(lt_index_select(x, dim, index));
  return record_ix(IX_SELECT, x, NULL, index, dim, 1, o);
}

lt_tensor_t *lt_ag_gather(lt_tensor_t *x, int64_t dim, lt_tensor_t *index) {
  RAW(lt_gather(x, dim, index));
  return record_ix(IX_GATHER, x, NULL, index, dim, 1, o);
}

lt_tensor_t *lt_ag_masked_select(lt_tensor_t *x, lt_tensor_t *mask) {
  RAW(lt_masked_select(x, mask));
  return record_ix(IX_MASKED_SELECT, x, NULL, mask, 0, 1, o);
}

static lt_tensor_t *refuse_out(const char *op) {
  lt_error("%s: functions with out=... arguments don't support automatic differentiation, but one of "
           "the arguments requires grad.", op);
  return NULL;
}

/* a 0-dim value tensor is an input of the node (its gradient: the sum of the gradient where the
   mask is set) */
lt_tensor_t *lt_ag_masked_fill(lt_tensor_t *x, lt_tensor_t *mask, lt_operand_t value, lt_tensor_t *out) {
  if (out) {
    if (out != x) return refuse_out("masked_fill");
    lt_tensor_t *copy;
    if (lt_ag_inplace_begin("masked_fill_", x, &copy) != LT_OK) return NULL;
    return lt_ag_inplace_end(x, copy, lt_masked_fill(copy, mask, value, NULL));
  }
  RAW(lt_masked_fill(x, mask, value, NULL));
  return record_ix(IX_MASKED_FILL, x, value.kind == LT_OPERAND_TENSOR ? value.t : NULL, mask, 0, 1, o);
}

lt_tensor_t *lt_ag_scatter(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t src, lt_tensor_t *out,
                           bool add) {
  const char *op = add ? "scatter_add" : "scatter";
  if (out) {
    if (out != x) return refuse_out(op);
    lt_tensor_t *copy;
    if (lt_ag_inplace_begin(op, x, &copy) != LT_OK) return NULL;
    lt_tensor_t *r = add ? lt_scatter_add(copy, dim, index, src.t, NULL) : lt_scatter(copy, dim, index, src, NULL);
    return lt_ag_inplace_end(x, copy, r);
  }
  RAW(add ? lt_scatter_add(x, dim, index, src.t, NULL) : lt_scatter(x, dim, index, src, NULL));
  return record_ix(add ? IX_SCATTER_ADD : IX_SCATTER, x, src.kind == LT_OPERAND_TENSOR ? src.t : NULL, index,
                   dim, 1, o);
}

/* index_add_ and index_fill_ in place: out of place on a copy, then written back */
int lt_ag_index_add_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, double alpha, bool fill,
                     lt_operand_t value) {
  const char *op = fill ? "index_fill_" : "index_add_";
  if (fill && value.kind == LT_OPERAND_TENSOR && value.t->requires_grad)
    return lt_error("index_fill_: a value tensor that requires grad is not supported");
  lt_tensor_t *copy;
  LT_TRY(lt_ag_inplace_begin(op, x, &copy));
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *r = lt_clone(copy);
  int rc = !r ? LT_ERR : fill ? lt_index_fill_(r, dim, index, value) : lt_index_add_(r, dim, index, src, alpha);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK) { lt_release(r); lt_release(copy); return LT_ERR; }
  r = record_ix(fill ? IX_INDEX_FILL : IX_INDEX_ADD, copy, fill ? NULL : src, index, dim, alpha, r);
  lt_tensor_t *d = lt_ag_inplace_end(x, copy, r);
  if (!d) return LT_ERR;
  lt_release(d);
  return LT_OK;
}

/* ---- x[key] = value with a basic key: PyTorch's CopySlices ---- */
typedef struct {
  int n;
  lt_key_step_t steps[LT_KEY_MAX_STEPS];
} key_ctx_t;

/* g with the key's view zero: under create_graph g times a mask (ones, zeros there: a recorded
   product), else a copy of g cleared there */
static lt_tensor_t *outside_view(const key_ctx_t *c, lt_tensor_t *g) {
  bool graph = lt_grad_enabled();
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *r = graph ? lt_full(g->ndim, g->sizes, lt_F(1), g->dtype, g->device) : lt_clone(g);
  lt_tensor_t *v = r ? lt_key_view(r, c->n, c->steps) : NULL;
  int rc = v ? lt_fill_(v, lt_F(0)) : LT_ERR;
  lt_release(v);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK) { lt_release(r); return NULL; }
  return graph ? lt_opc(LT_BINARY_mul, r, lt_T(g)) : r;
}

/* x: g outside the view; value: the view's part of g (a copy: the engine may add into it), which
   the engine sums to value's shape. Made of recorded ops under create_graph. */
static int key_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const key_ctx_t *c = n->ctx;
  if (lt_node_needs(n, 0) && !(gi[0] = outside_view(c, go[0]))) return LT_ERR;
  if (n->n_in > 1 && lt_node_needs(n, 1)) {
    lt_tensor_t *v = lt_key_view(go[0], c->n, c->steps);
    gi[1] = v ? lt_clone(v) : NULL;
    lt_release(v);
    if (!gi[1]) return LT_ERR;
  }
  return LT_OK;
}

int lt_key_assign_(lt_tensor_t *x, int n, const lt_key_step_t *steps, lt_operand_t value) {
  if (n > LT_KEY_MAX_STEPS) return lt_error("index assignment: a key of more than %d steps", LT_KEY_MAX_STEPS);
  lt_tensor_t *src = value.kind == LT_OPERAND_TENSOR ? value.t : NULL;
  bool record = lt_ag_needed(x, src);
  if (record) LT_TRY(lt_ag_check_inplace("index assignment", x));
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *v = lt_key_view(x, n, steps);
  int rc = !v ? LT_ERR : src ? lt_copy_(v, src) : lt_fill_(v, value);
  lt_release(v);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK || !record || !lt_dtype_is_floating(x->dtype)) return rc;
  /* x's history so far becomes the node's input, and x its output */
  lt_tensor_t *in[2] = {x, src};
  lt_node_t *node = lt_record("CopySlices", key_bw, src ? 2 : 1, in, x, sizeof(key_ctx_t));
  if (!node) return LT_ERR;
  key_ctx_t *c = node->ctx;
  c->n = n;
  memcpy(c->steps, steps, sizeof *steps * (size_t)n);
  node->backward_graph = key_bw;
  return LT_OK;
}
