/* Autograd of softmax, log-softmax, batch norm, layer norm and the NLL loss: each op runs with grad
   mode off and records one node whose backward calls the op's fused backward (core/softmax.c,
   core/normalization.c, core/loss.c). Under create_graph each runs a backward_graph version made of
   recorded ops (batch norm and layer norm recompute their statistics from x, with its history). */
#include "core/autograd.h"
#include "core/factory.h"
#include "core/grad.h"
#include "core/reduce.h"
#include "core/shape.h"
#include "core/loss.h"
#include "core/normalization.h"
#include "core/softmax.h"

/* ---- softmax, log_softmax: y saved ---- */
typedef struct {
  int64_t dim;
  bool log;
} softmax_ctx_t;

static int softmax_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const softmax_ctx_t *c = n->ctx;
  lt_tensor_t *y = lt_node_saved(n, 0);
  if (!y) return LT_ERR;
  gi[0] = lt_softmax_backward(go[0], y, c->dim, c->log);
  return gi[0] ? LT_OK : LT_ERR;
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g), as recorded ops */
static int softmax_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const softmax_ctx_t *c = n->ctx;
  lt_tensor_t *y = lt_node_saved(n, 0), *g = go[0];
  if (!y) return LT_ERR;
  if (c->log) {
    lt_tensor_t *s = lt_sum(g, 1, &c->dim, true, LT_DTYPE_INVALID), *e = lt_unary(LT_UNARY_exp, y, NULL);
    gi[0] = lt_opcc(LT_BINARY_sub, lt_retained(g), lt_opcc(LT_BINARY_mul, e, s));
  } else {
    lt_tensor_t *gy = lt_op(LT_BINARY_mul, lt_T(g), lt_T(y));
    lt_tensor_t *s = gy ? lt_sum(gy, 1, &c->dim, true, LT_DTYPE_INVALID) : NULL;
    lt_release(gy);
    gi[0] = lt_opc(LT_BINARY_mul, lt_opcc(LT_BINARY_sub, lt_retained(g), s), lt_T(y));
  }
  return gi[0] ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_softmax(lt_tensor_t *x, int64_t dim, bool log) {
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *y = lt_softmax(x, dim, log);
  lt_set_grad_enabled(prev);
  if (!y) return NULL;
  lt_node_t *n = lt_record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", softmax_bw, 1, &x, y,
                           sizeof(softmax_ctx_t));
  if (!n || lt_node_save(n, 0, y) != LT_OK) {
    lt_release(y);
    return NULL;
  }
  n->backward_graph = softmax_graph_bw;
  softmax_ctx_t *c = n->ctx;
  c->dim = dim;
  c->log = log;
  return y;
}

/* ---- batch norm, layer norm: x, w, mean, invstd saved ---- */
static lt_tensor_t *un_rsqrt(lt_tensor_t *t) { /* t consumed */
  lt_tensor_t *r = t ? lt_unary(LT_UNARY_rsqrt, t, NULL) : NULL;
  lt_release(t);
  return r;
}

typedef struct {
  bool training; /* batch norm */
  int n_dims;    /* layer norm */
  double eps;
} norm_ctx_t;

/* the saved tensors (slot 1, w, may be absent) */
static int norm_saved(lt_node_t *n, lt_tensor_t **x, lt_tensor_t **w, lt_tensor_t **m, lt_tensor_t **s) {
  *x = lt_node_saved(n, 0);
  *w = n->saved[1].t ? lt_node_saved(n, 1) : NULL;
  *m = *x ? lt_node_saved(n, 2) : NULL;
  *s = *m ? lt_node_saved(n, 3) : NULL;
  return *s && (*w || !n->saved[1].t) ? LT_OK : LT_ERR;
}

static int batch_norm_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const norm_ctx_t *c = n->ctx;
  lt_tensor_t *x, *w, *m, *s;
  LT_TRY(norm_saved(n, &x, &w, &m, &s));
  return lt_batch_norm_backward(go[0], x, w, m, s, c->training, n->in[1].meta.dtype, n->in[2].meta.dtype,
                                lt_node_needs(n, 0) ? &gi[0] : NULL, lt_node_needs(n, 1) ? &gi[1] : NULL,
                                lt_node_needs(n, 2) ? &gi[2] : NULL);
}

static int layer_norm_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const norm_ctx_t *c = n->ctx;
  lt_tensor_t *x, *w, *m, *s;
  LT_TRY(norm_saved(n, &x, &w, &m, &s));
  return lt_layer_norm_backward(go[0], x, c->n_dims, w, m, s, n->in[1].meta.dtype, n->in[2].meta.dtype,
                                lt_node_needs(n, 0) ? &gi[0] : NULL, lt_node_needs(n, 1) ? &gi[1] : NULL,
                                lt_node_needs(n, 2) ? &gi[2] : NULL);
}

/* ---- batch norm and layer norm under create_graph ----
   Over the nd dims `dims` of x: xhat = (x - mean) rstd, y = xhat w + b. With gh = g w:
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)) for the batch's own statistics (they depend on x),
   gh rstd for fixed ones (m, s: the saved running statistics, in shape); gw = sum(g xhat), gb = sum(g),
   summed over dims when sum_params (batch norm), else left for the engine to sum to w's shape. */
static lt_tensor_t *mean_kd(lt_tensor_t *t, int nd, const int64_t *dims) { /* t consumed */
  lt_tensor_t *r = t ? lt_mean(t, nd, dims, true, LT_DTYPE_INVALID) : NULL;
  lt_release(t);
  return r;
}

static int norm_graph(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *m, lt_tensor_t *s, double eps,
                      int nd, const int64_t *dims, bool sum_params, const bool need[3], lt_tensor_t **gi) {
  lt_tensor_t *mu, *rstd;
  if (!m) {
    mu = lt_mean(x, nd, dims, true, LT_DTYPE_INVALID);
    rstd = un_rsqrt(lt_opc(LT_BINARY_add, lt_var(x, nd, dims, 0, true), lt_F(eps)));
  } else {
    mu = lt_retained(m);
    rstd = lt_retained(s);
  }
  lt_tensor_t *xhat = mu && rstd ? lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_sub, lt_T(x), lt_T(mu)), lt_T(rstd)) : NULL;
  lt_release(mu);
  int rc = xhat ? LT_OK : LT_ERR;
  if (rc == LT_OK && need[0]) {
    lt_tensor_t *gh = w ? lt_op(LT_BINARY_mul, lt_T(g), lt_T(w)) : lt_retained(g);
    if (gh && !m) {
      lt_tensor_t *a = mean_kd(lt_retained(gh), nd, dims);
      lt_tensor_t *b = lt_opcc(LT_BINARY_mul, mean_kd(lt_op(LT_BINARY_mul, lt_T(gh), lt_T(xhat)), nd, dims), lt_retained(xhat));
      gh = lt_opcc(LT_BINARY_sub, lt_opcc(LT_BINARY_sub, gh, a), b);
    }
    if (!(gi[0] = lt_opc(LT_BINARY_mul, gh, lt_T(rstd)))) rc = LT_ERR;
  }
  if (rc == LT_OK && need[1]) {
    lt_tensor_t *gw = lt_op(LT_BINARY_mul, lt_T(g), lt_T(xhat));
    gi[1] = sum_params && gw ? lt_sum(gw, nd, dims, false, LT_DTYPE_INVALID) : lt_retained(gw);
    lt_release(gw);
    if (!gi[1]) rc = LT_ERR;
  }
  if (rc == LT_OK && need[2] && !(gi[2] = sum_params ? lt_sum(g, nd, dims, false, LT_DTYPE_INVALID) : lt_retained(g)))
    rc = LT_ERR;
  lt_release(xhat);
  lt_release(rstd);
  return rc;
}

/* t (consumed, [C]) as [1, C, 1, ...] for an x of ndim dims */
static lt_tensor_t *per_channel(lt_tensor_t *t, int ndim) {
  if (!t) return NULL;
  int64_t sh[LT_MAX_DIM];
  for (int i = 0; i < ndim; i++) sh[i] = i == 1 ? t->numel : 1;
  lt_tensor_t *r = lt_reshape(t, ndim, sh);
  lt_release(t);
  return r;
}

static int batch_norm_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const norm_ctx_t *c = n->ctx;
  lt_tensor_t *x, *w, *m, *s;
  LT_TRY(norm_saved(n, &x, &w, &m, &s));
  int64_t dims[LT_MAX_DIM];
  int nd = 0;
  for (int i = 0; i < x->ndim; i++)
    if (i != 1) dims[nd++] = i;
  lt_tensor_t *wc = w ? per_channel(lt_retained(w), x->ndim) : NULL;
  lt_tensor_t *mc = c->training ? NULL : per_channel(lt_retained(m), x->ndim);
  lt_tensor_t *sc = c->training ? NULL : per_channel(lt_retained(s), x->ndim);
  bool need[3] = {lt_node_needs(n, 0), lt_node_needs(n, 1), lt_node_needs(n, 2)};
  int rc = (w && !wc) || (!c->training && !(mc && sc)) ? LT_ERR
           : norm_graph(go[0], x, wc, mc, sc, c->eps, nd, dims, true, need, gi);
  lt_release(wc), lt_release(mc), lt_release(sc);
  return rc;
}

static int layer_norm_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const norm_ctx_t *c = n->ctx;
  lt_tensor_t *x, *w, *m, *s;
  LT_TRY(norm_saved(n, &x, &w, &m, &s));
  int64_t dims[LT_MAX_DIM];
  for (int i = 0; i < c->n_dims; i++) dims[i] = x->ndim - c->n_dims + i;
  bool need[3] = {lt_node_needs(n, 0), lt_node_needs(n, 1), lt_node_needs(n, 2)};
  return norm_graph(go[0], x, w, NULL, NULL, c->eps, c->n_dims, dims, false, need, gi);
}

/* record y's node and save x, w and the statistics (consumed) */
static lt_tensor_t *record_norm(const char *name, lt_backward_fn fn, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b,
                                lt_tensor_t *y, lt_tensor_t *m, lt_tensor_t *s, norm_ctx_t ctx) {
  lt_tensor_t *in[3] = {x, w, b};
  lt_node_t *n = y ? lt_record(name, fn, 3, in, y, sizeof(norm_ctx_t)) : NULL;
  bool ok = n && lt_node_save(n, 0, x) == LT_OK && (!w || lt_node_save(n, 1, w) == LT_OK) &&
            lt_node_save(n, 2, m) == LT_OK && lt_node_save(n, 3, s) == LT_OK;
  lt_release(m);
  lt_release(s);
  if (!ok) {
    lt_release(y);
    return NULL;
  }
  *(norm_ctx_t *)n->ctx = ctx;
  n->backward_graph = fn == batch_norm_bw ? batch_norm_graph_bw : layer_norm_graph_bw;
  return y;
}

lt_tensor_t *lt_ag_batch_norm(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                              lt_tensor_t *running_var, bool training, double momentum, double eps) {
  lt_tensor_t *m = NULL, *s = NULL;
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *y = lt_batch_norm_stats(x, w, b, running_mean, running_var, training, momentum, eps, &m, &s);
  lt_set_grad_enabled(prev);
  norm_ctx_t ctx = {.training = training, .eps = eps};
  return record_norm("NativeBatchNormBackward0", batch_norm_bw, x, w, b, y, m, s, ctx);
}

lt_tensor_t *lt_ag_layer_norm(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps) {
  lt_tensor_t *m = NULL, *s = NULL;
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *y = lt_layer_norm_stats(x, n_dims, w, b, eps, &m, &s);
  lt_set_grad_enabled(prev);
  norm_ctx_t ctx = {.n_dims = n_dims, .eps = eps};
  return record_norm("NativeLayerNormBackward0", layer_norm_bw, x, w, b, y, m, s, ctx);
}

/* ---- nll_loss: target and weight saved ---- */
typedef struct {
  const char *op;
  bool has_ignore;
  int64_t ignore_index;
  lt_reduction reduction;
  double total_weight;
} nll_ctx_t;

static int nll_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const nll_ctx_t *c = n->ctx;
  lt_tensor_t *t = lt_node_saved(n, 0);
  if (!t) return LT_ERR;
  lt_tensor_t *w = NULL;
  if (n->saved[1].t && !(w = lt_node_saved(n, 1))) return LT_ERR;
  const lt_meta_t *m = &n->in[0].meta;
  gi[0] = lt_nll_loss_backward(c->op, go[0], m->ndim, m->sizes, m->dtype, t, w, c->has_ignore, c->ignore_index,
                               c->reduction, c->total_weight);
  return gi[0] ? LT_OK : LT_ERR;
}

/* the gradient is linear in g and does not depend on logp: g (one per sample, put on the class
   dim) times the gradient of a loss of gradient 1, a recorded product */
static int nll_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const nll_ctx_t *c = n->ctx;
  lt_tensor_t *t = lt_node_saved(n, 0);
  if (!t) return LT_ERR;
  lt_tensor_t *w = NULL;
  if (n->saved[1].t && !(w = lt_node_saved(n, 1))) return LT_ERR;
  const lt_meta_t *m = &n->in[0].meta;
  lt_tensor_t *g = go[0], *one = lt_full(g->ndim, g->sizes, lt_F(1), g->dtype, g->device);
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *k = one ? lt_nll_loss_backward(c->op, one, m->ndim, m->sizes, m->dtype, t, w, c->has_ignore,
                                              c->ignore_index, c->reduction, c->total_weight) : NULL;
  lt_set_grad_enabled(prev);
  lt_release(one);
  lt_tensor_t *gk = g->ndim > 0 && g->ndim < m->ndim ? lt_unsqueeze(g, 1) : lt_retained(g);
  gi[0] = k ? lt_opcc(LT_BINARY_mul, k, gk) : (lt_release(gk), NULL);
  return gi[0] ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_nll_loss(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                            bool has_ignore, int64_t ignore_index, lt_reduction reduction) {
  double total = 0;
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *y = lt_nll_loss_total(op, logp, target, weight, has_ignore, ignore_index, reduction, &total);
  lt_set_grad_enabled(prev);
  if (!y) return NULL;
  lt_node_t *n = lt_record("NllLossBackward0", nll_bw, 1, &logp, y, sizeof(nll_ctx_t));
  if (!n || lt_node_save(n, 0, target) != LT_OK || (weight && lt_node_save(n, 1, weight) != LT_OK)) {
    lt_release(y);
    return NULL;
  }
  n->backward_graph = nll_graph_bw;
  nll_ctx_t *c = n->ctx;
  c->op = op;
  c->has_ignore = has_ignore;
  c->ignore_index = ignore_index;
  c->reduction = reduction;
  c->total_weight = total;
  return y;
}
