/* Autograd of the reductions and scans. The output's gradient is put back in the input's shape
   (reduced dims re-inserted, then expanded) and multiplied by each op's local derivative. */
#include "core/factory.h"
#include "core/grad.h"
#include "core/index.h"
#include "core/reduce.h"
#include "core/shape.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  lt_ag_reduce_kind kind;
  bool mask[LT_MAX_DIM]; /* reduced dims of the input */
  bool keepdim;
  int64_t count;         /* elements per reduced group */
  int64_t correction;
  double p;
  int64_t dim;           /* max/min along dim, scans */
} reduce_ctx_t;

static const char *const kind_names[] = {"sum", "mean", "prod", "logsumexp", "var", "std", "norm",
                                         "amax", "amin", "max", "min", "cumsum", "cumprod", "logcumsumexp",
                                         "cummax", "cummin"};

/* g (the output's shape) as a view of the input's shape */
static lt_tensor_t *unreduce(lt_tensor_t *g, const lt_meta_t *in, const reduce_ctx_t *c) {
  int64_t kshape[LT_MAX_DIM];
  for (int d = 0; d < in->ndim; d++) kshape[d] = c->mask[d] ? 1 : in->sizes[d];
  lt_tensor_t *k = lt_reshape(g, in->ndim, kshape);
  if (!k) return NULL;
  lt_tensor_t *e = lt_expand(k, in->ndim, in->sizes);
  lt_release(k);
  return e;
}

static int reduced_dims(const reduce_ctx_t *c, int ndim, int64_t *dims) {
  int n = 0;
  for (int d = 0; d < ndim; d++)
    if (c->mask[d]) dims[n++] = d;
  return n;
}

/* rows [R, L] of x (float64): the reduced dims moved last; perm records the order */
static lt_tensor_t *as_rows(lt_tensor_t *x, const reduce_ctx_t *c, int64_t *perm, int64_t *R, int64_t *L) {
  int np = 0;
  *R = 1;
  *L = 1;
  for (int d = 0; d < x->ndim; d++)
    if (!c->mask[d]) { perm[np++] = d; *R *= x->sizes[d]; }
  for (int d = 0; d < x->ndim; d++)
    if (c->mask[d]) { perm[np++] = d; *L *= x->sizes[d]; }
  lt_tensor_t *p = lt_permute(x, x->ndim, perm);
  lt_tensor_t *r = p ? lt_convert(p, LT_FLOAT64, lt_device(LT_CPU, 0)) : NULL;
  lt_release(p);
  return r;
}

/* the inverse of as_rows: rows back to x's layout (a new contiguous tensor) */
static lt_tensor_t *from_rows(lt_tensor_t *rows, const lt_tensor_t *x, const int64_t *perm) {
  int64_t psizes[LT_MAX_DIM], inv[LT_MAX_DIM];
  for (int d = 0; d < x->ndim; d++) { psizes[d] = x->sizes[perm[d]]; inv[perm[d]] = d; }
  lt_tensor_t *v = lt_view(rows, x->ndim, psizes);
  lt_tensor_t *b = v ? lt_permute(v, x->ndim, inv) : NULL;
  lt_release(v);
  return b;
}

/* gradient of prod (cumprod when scan) along rows, exact with zeros: products of the others from
   prefix and suffix products */
static lt_tensor_t *prod_like_grad(lt_tensor_t *x, lt_tensor_t *g_e, const reduce_ctx_t *c, bool scan) {
  int64_t perm[LT_MAX_DIM], R, L, R2, L2;
  lt_tensor_t *xr = as_rows(x, c, perm, &R, &L), *gr = as_rows(g_e, c, perm, &R2, &L2);
  lt_tensor_t *out = xr ? lt_empty(xr->ndim, xr->sizes, LT_FLOAT64, lt_device(LT_CPU, 0)) : NULL;
  double *pre = malloc(sizeof(double) * (size_t)(L + 1));
  if (xr && gr && out && pre) {
    const double *xv = lt_data(xr), *gv = lt_data(gr);
    double *ov = lt_data(out);
    for (int64_t r = 0; r < R; r++) {
      const double *xa = xv + r * L, *ga = gv + r * L;
      double *oa = ov + r * L;
      pre[0] = 1;
      for (int64_t i = 0; i < L; i++) pre[i + 1] = pre[i] * xa[i];
      if (!scan) {
        double suf = 1;
        for (int64_t i = L - 1; i >= 0; i--) { oa[i] = ga[i] * pre[i] * suf; suf *= xa[i]; }
      } else { /* d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i */
        for (int64_t i = 0; i < L; i++) {
          double acc = 0, p = pre[i];
          for (int64_t j = i; j < L; j++) {
            if (j > i) p *= xa[j];
            acc += ga[j] * p;
          }
          oa[i] = acc;
        }
      }
    }
  }
  free(pre);
  lt_tensor_t *res = out && pre ? from_rows(out, x, perm) : NULL;
  if (!pre && out) lt_error("prod: backward out of memory");
  lt_release(xr);
  lt_release(gr);
  lt_release(out);
  return res;
}

/* op(t), t consumed */
static lt_tensor_t *un_log(lt_tensor_t *t) {
  lt_tensor_t *r = t ? lt_unary(LT_UNARY_log, t, NULL) : NULL;
  lt_release(t);
  return r;
}
static lt_tensor_t *un_exp(lt_tensor_t *t) {
  lt_tensor_t *r = t ? lt_unary(LT_UNARY_exp, t, NULL) : NULL;
  lt_release(t);
  return r;
}

/* ---- prod under create_graph ----
   The product of the others, as the exclusive prefix times the exclusive suffix products along the
   reduced elements (recorded cumprods, exact with zeros, as PyTorch's prod_safe_zeros_backward). */
/* [1, r_1, r_1 r_2, ...] along the last dim of r; from the end when reverse (recorded ops) */
static lt_tensor_t *excl_cumprod(lt_tensor_t *r, bool reverse) {
  int d = r->ndim - 1;
  int64_t L = r->sizes[d], one[LT_MAX_DIM];
  if (L == 0) return lt_retained(r); /* none to multiply: empty as r */
  for (int i = 0; i < d; i++) one[i] = r->sizes[i];
  one[d] = 1;
  lt_tensor_t *idx = reverse ? lt_arange((double)L - 1, -1, -1, LT_INT64, r->device) : NULL;
  lt_tensor_t *s = !reverse ? lt_retained(r) : idx ? lt_index_select(r, d, idx) : NULL;
  lt_tensor_t *cp = s ? lt_cumprod(s, d, LT_DTYPE_INVALID) : NULL;
  lt_tensor_t *parts[2] = {lt_full(r->ndim, one, lt_F(1), r->dtype, r->device), cp ? lt_narrow(cp, d, 0, L - 1) : NULL};
  lt_tensor_t *e = parts[0] && parts[1] ? lt_cat(2, parts, d) : NULL;
  lt_tensor_t *res = !e ? NULL : reverse ? lt_index_select(e, d, idx) : lt_retained(e);
  lt_release(idx), lt_release(s), lt_release(cp), lt_release(parts[0]), lt_release(parts[1]), lt_release(e);
  return res;
}

static lt_tensor_t *prod_graph_grad(lt_tensor_t *x, lt_tensor_t *g_e, const reduce_ctx_t *c) {
  if (x->ndim == 0) return lt_retained(g_e);
  int64_t perm[LT_MAX_DIM], inv[LT_MAX_DIM], psizes[LT_MAX_DIM], L = 1;
  int np = 0, kept = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!c->mask[d]) perm[np++] = d, kept++;
  for (int d = 0; d < x->ndim; d++)
    if (c->mask[d]) perm[np++] = d, L *= x->sizes[d];
  for (int d = 0; d < x->ndim; d++) psizes[d] = x->sizes[perm[d]], inv[perm[d]] = d;
  int64_t rsizes[LT_MAX_DIM];
  memcpy(rsizes, psizes, sizeof(int64_t) * (size_t)kept);
  rsizes[kept] = L;
  lt_tensor_t *xp = lt_permute(x, x->ndim, perm);
  lt_tensor_t *xr = xp ? lt_reshape(xp, kept + 1, rsizes) : NULL;
  lt_tensor_t *o = xr ? lt_opcc(LT_BINARY_mul, excl_cumprod(xr, false), excl_cumprod(xr, true)) : NULL;
  lt_tensor_t *op = o ? lt_reshape(o, x->ndim, psizes) : NULL;
  lt_tensor_t *ob = op ? lt_permute(op, x->ndim, inv) : NULL;
  lt_release(xp), lt_release(xr), lt_release(o), lt_release(op);
  return lt_opc(LT_BINARY_mul, ob, lt_T(g_e));
}

/* ---- cumprod under create_graph (as PyTorch's cumprod_backward in grad mode) ----
   Without zeros: revcumsum(g y) / x, y = cumprod(x) recorded. With zeros, element by element along
   dim: gx_k = sum_{j >= k} g_j prod_{m <= j, m != k} x_m = sum(g[k:] * prod(x[:k]) [1, cumprod(x[k+1:])])
   (L steps of recorded ops). Both differentiable again, to any order. */
static lt_tensor_t *rev_cumsum(lt_tensor_t *v, int64_t dim) { /* v consumed: sum_{j >= i} v_j */
  lt_tensor_t *tot = v ? lt_sum(v, 1, &dim, true, LT_DTYPE_INVALID) : NULL, *cs = v ? lt_cumsum(v, dim, LT_DTYPE_INVALID) : NULL;
  lt_tensor_t *r = lt_opcc(LT_BINARY_add, lt_opcc(LT_BINARY_sub, tot, cs), lt_retained(v));
  lt_release(v);
  return r;
}

/* gx_k of the formula above (keepdim along dim) */
static lt_tensor_t *cumprod_grad_at(lt_tensor_t *x, lt_tensor_t *g, int64_t dim, int64_t k) {
  int64_t L = x->sizes[dim], one[LT_MAX_DIM];
  memcpy(one, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
  one[dim] = 1;
  lt_tensor_t *parts[2] = {lt_full(x->ndim, one, lt_F(1), x->dtype, x->device), NULL};
  if (parts[0] && k < L - 1) {
    lt_tensor_t *after = lt_narrow(x, dim, k + 1, L - k - 1);
    parts[1] = after ? lt_cumprod(after, dim, LT_DTYPE_INVALID) : NULL;
    lt_release(after);
  }
  lt_tensor_t *om = k < L - 1 ? (parts[0] && parts[1] ? lt_cat(2, parts, dim) : NULL) : lt_retained(parts[0]);
  lt_release(parts[0]), lt_release(parts[1]);
  if (om && k > 0) {
    lt_tensor_t *before = lt_narrow(x, dim, 0, k);
    lt_tensor_t *pre = before ? lt_prod(before, 1, &dim, true, LT_DTYPE_INVALID) : NULL;
    lt_release(before);
    om = lt_opcc(LT_BINARY_mul, om, pre);
  }
  lt_tensor_t *gk = lt_narrow(g, dim, k, L - k);
  lt_tensor_t *t = om && gk ? lt_opcc(LT_BINARY_mul, om, lt_retained(gk)) : NULL;
  lt_release(gk);
  if (!t) lt_release(om);
  lt_tensor_t *r = t ? lt_sum(t, 1, &dim, true, LT_DTYPE_INVALID) : NULL;
  lt_release(t);
  return r;
}

static lt_tensor_t *cumprod_graph_grad(lt_tensor_t *x, lt_tensor_t *g, int64_t dim) {
  if (x->ndim == 0 || x->sizes[dim] <= 1) return lt_retained(g);
  lt_tensor_t *zero = lt_compare(LT_COMPARE_eq, lt_T(x), lt_F(0), NULL);
  lt_tensor_t *any = zero ? lt_any(zero, 0, NULL, false) : NULL;
  lt_operand_t v;
  bool zeros = any && lt_item(any, &v) == LT_OK && (v.kind == LT_OPERAND_FLOAT ? v.f != 0 : v.i != 0);
  bool failed = !any;
  lt_release(zero), lt_release(any);
  if (failed) return NULL;
  if (!zeros) {
    lt_tensor_t *y = lt_cumprod(x, dim, LT_DTYPE_INVALID);
    return lt_opc(LT_BINARY_div, rev_cumsum(lt_opc(LT_BINARY_mul, y, lt_T(g)), dim), lt_T(x));
  }
  int64_t L = x->sizes[dim];
  lt_tensor_t **parts = calloc((size_t)L, sizeof *parts);
  if (!parts) { lt_error("cumprod: backward out of memory"); return NULL; }
  bool ok = true;
  for (int64_t k = 0; k < L && ok; k++) ok = (parts[k] = cumprod_grad_at(x, g, dim, k)) != NULL;
  lt_tensor_t *r = ok ? lt_cat((int)L, parts, dim) : NULL;
  for (int64_t k = 0; k < L; k++) lt_release(parts[k]);
  free(parts);
  return r;
}

/* ---- logcumsumexp under create_graph (PyTorch's formula) ----
   gx = exp(x) revcumsum(g exp(-y)), in log space for each sign of g: exp(x + rlcse(log g+ - y)) -
   exp(x + rlcse(log g- - y)), rlcse the logcumsumexp from the end, log 0 the lowest double. */
static lt_tensor_t *rev_logcumsumexp(lt_tensor_t *t, int64_t dim) { /* t consumed */
  lt_tensor_t *idx = t ? lt_arange((double)t->sizes[dim] - 1, -1, -1, LT_INT64, t->device) : NULL;
  lt_tensor_t *f = idx ? lt_index_select(t, dim, idx) : NULL;
  lt_tensor_t *l = f ? lt_logcumsumexp(f, dim) : NULL;
  lt_tensor_t *r = l ? lt_index_select(l, dim, idx) : NULL;
  lt_release(t), lt_release(idx), lt_release(f), lt_release(l);
  return r;
}

static lt_tensor_t *logcumsumexp_graph_grad(lt_tensor_t *x, lt_tensor_t *y, lt_tensor_t *g, int64_t dim) {
  if (x->ndim == 0) return lt_retained(g);
  lt_tensor_t *la = un_log(lt_unary(LT_UNARY_abs, g, NULL)), *out[2] = {NULL, NULL};
  for (int k = 0; k < 2 && la; k++) {
    lt_tensor_t *m = lt_compare(k == 0 ? LT_COMPARE_gt : LT_COMPARE_lt, lt_T(g), lt_F(0), NULL);
    lt_tensor_t *lg = m ? lt_where(m, lt_T(la), lt_F(-DBL_MAX)) : NULL;
    lt_release(m);
    lt_tensor_t *r = rev_logcumsumexp(lg ? lt_opc(LT_BINARY_sub, lg, lt_T(y)) : NULL, dim);
    out[k] = r ? un_exp(lt_opc(LT_BINARY_add, r, lt_T(x))) : NULL;
  }
  lt_release(la);
  return lt_opcc(LT_BINARY_sub, out[0], out[1]);
}

/* exp(a - b) for a <= b, 1 where they are equal (two infinities of one sign too) */
static double exp_diff(double a, double b) { return a == b ? 1.0 : exp(a - b); }

/* gradient of logcumsumexp along rows: g_x[j] = sum over i >= j of g[i] exp(x[j] - y[i]), as
   t[j] = sum over i >= j of g[i] exp(y[j] - y[i]) (every factor <= 1: y grows along the row) from
   t[j] = g[j] + exp(y[j] - y[j+1]) t[j+1], then g_x[j] = exp(x[j] - y[j]) t[j]. An element of -inf
   gets 0 (PyTorch's formula gives NaN where the running value is still -inf); +inf and NaN
   propagate. */
static lt_tensor_t *logcumsumexp_grad(lt_tensor_t *x, lt_tensor_t *y, lt_tensor_t *g, const reduce_ctx_t *c) {
  int64_t perm[LT_MAX_DIM], R, L, R2, L2, R3, L3;
  lt_tensor_t *xr = as_rows(x, c, perm, &R, &L), *yr = as_rows(y, c, perm, &R2, &L2), *gr = as_rows(g, c, perm, &R3, &L3);
  lt_tensor_t *out = xr && yr && gr ? lt_empty(xr->ndim, xr->sizes, LT_FLOAT64, lt_device(LT_CPU, 0)) : NULL;
  lt_tensor_t *res = NULL;
  if (out) {
    const double *xv = lt_data(xr), *yv = lt_data(yr), *gv = lt_data(gr);
    double *ov = lt_data(out);
    for (int64_t r = 0; r < R; r++) {
      const double *xa = xv + r * L, *ya = yv + r * L, *ga = gv + r * L;
      double *oa = ov + r * L, t = 0;
      for (int64_t j = L - 1; j >= 0; j--) {
        t = j == L - 1 ? ga[j] : ga[j] + exp_diff(ya[j], ya[j + 1]) * t;
        oa[j] = xa[j] == -INFINITY ? 0.0 : exp_diff(xa[j], ya[j]) * t;
      }
    }
    res = from_rows(out, x, perm);
  }
  lt_release(xr);
  lt_release(yr);
  lt_release(gr);
  lt_release(out);
  return res;
}

/* g * (x == y) / count of ties: extremes share the gradient evenly */
static lt_tensor_t *extreme_grad(lt_tensor_t *g_e, lt_tensor_t *x, lt_tensor_t *y_e, const reduce_ctx_t *c) {
  int64_t dims[LT_MAX_DIM];
  int nd = reduced_dims(c, x->ndim, dims);
  lt_tensor_t *m = lt_compare(LT_COMPARE_eq, lt_T(x), lt_T(y_e), NULL);
  lt_tensor_t *mf = m ? lt_convert(m, g_e->dtype, g_e->device) : NULL;
  lt_release(m);
  lt_tensor_t *cnt = mf ? lt_sum(mf, nd, dims, true, LT_DTYPE_INVALID) : NULL;
  return lt_opcc(LT_BINARY_div, lt_opc(LT_BINARY_mul, mf, lt_T(g_e)), cnt);
}

/* graph: the backward under create_graph (made of recorded ops) */
static lt_tensor_t *reduce_grad(lt_node_t *n, lt_tensor_t *g, bool graph) {
  const reduce_ctx_t *c = n->ctx;
  const lt_meta_t *in = &n->in[0].meta;
  if (c->kind == LT_AG_CUMSUM) { /* reverse running sum: total - cumsum + g */
    lt_tensor_t *tot = lt_sum(g, 1, &c->dim, true, LT_DTYPE_INVALID), *cs = lt_cumsum(g, c->dim, LT_DTYPE_INVALID);
    return lt_opc(LT_BINARY_add, lt_opcc(LT_BINARY_sub, tot, cs), lt_T(g));
  }
  if (c->kind == LT_AG_CUMPROD) {
    lt_tensor_t *x = lt_node_saved(n, 0);
    return !x ? NULL : graph ? cumprod_graph_grad(x, g, c->dim) : prod_like_grad(x, g, c, true);
  }
  if (c->kind == LT_AG_LOGCUMSUMEXP) {
    lt_tensor_t *x = lt_node_saved(n, 0), *y = x ? lt_node_saved(n, 1) : NULL;
    return !y ? NULL : graph ? logcumsumexp_graph_grad(x, y, g, c->dim) : logcumsumexp_grad(x, y, g, c);
  }
  if (c->kind == LT_AG_CUMMAX || c->kind == LT_AG_CUMMIN) { /* g added at the running extremes */
    if (in->ndim == 0) return lt_retained(g);
    lt_tensor_t *idx = lt_node_saved(n, 1), *z = idx ? lt_zeros_meta(in) : NULL;
    lt_tensor_t *r = z ? lt_scatter_add(z, c->dim, idx, g, NULL) : NULL;
    lt_release(z);
    return r;
  }
  if (c->kind == LT_AG_MAX || c->kind == LT_AG_MIN) { /* values along dim: to the chosen index */
    lt_tensor_t *idx = lt_node_saved(n, 1);
    if (!idx) return NULL;
    lt_tensor_t *gk = c->keepdim ? lt_retained(g) : lt_unsqueeze(g, c->dim);
    lt_tensor_t *ik = c->keepdim ? lt_retained(idx) : lt_unsqueeze(idx, c->dim);
    lt_tensor_t *z = lt_zeros_meta(in);
    lt_tensor_t *r = z && gk && ik ? lt_scatter(z, c->dim, ik, lt_T(gk), NULL) : NULL;
    lt_release(z);
    lt_release(gk);
    lt_release(ik);
    return r;
  }
  lt_tensor_t *g_e = unreduce(g, in, c);
  if (!g_e) return NULL;
  lt_tensor_t *x = NULL, *y_e = NULL, *r = NULL;
  if (n->saved[0].t && !(x = lt_node_saved(n, 0))) goto done;
  if (n->saved[1].t) {
    lt_tensor_t *y = lt_node_saved(n, 1);
    if (!y || !(y_e = unreduce(y, in, c))) goto done;
  }
  int64_t dims[LT_MAX_DIM];
  int nd = reduced_dims(c, in->ndim, dims);
  switch (c->kind) {
    case LT_AG_SUM: r = lt_retained(g_e); break;
    case LT_AG_MEAN: r = lt_op(LT_BINARY_div, lt_T(g_e), lt_F((double)c->count)); break;
    case LT_AG_PROD: r = graph ? prod_graph_grad(x, g_e, c) : prod_like_grad(x, g_e, c, false); break;
    case LT_AG_LOGSUMEXP: {
      lt_tensor_t *d = lt_op(LT_BINARY_sub, lt_T(x), lt_T(y_e));
      lt_tensor_t *e = d ? lt_unary(LT_UNARY_exp, d, NULL) : NULL;
      lt_release(d);
      r = lt_opc(LT_BINARY_mul, e, lt_T(g_e));
      break;
    }
    case LT_AG_VAR:
    case LT_AG_STD: {
      lt_tensor_t *mean = lt_mean(x, nd, dims, true, LT_DTYPE_INVALID);
      lt_tensor_t *dev = mean ? lt_op(LT_BINARY_sub, lt_T(x), lt_T(mean)) : NULL;
      lt_release(mean);
      double div = (double)(c->count - c->correction);
      if (c->kind == LT_AG_VAR) r = lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, dev, lt_T(g_e)), lt_F(2 / div));
      else r = lt_opc(LT_BINARY_div, lt_opc(LT_BINARY_mul, dev, lt_T(g_e)), lt_T(y_e)),
           r = lt_opc(LT_BINARY_div, r, lt_F(div));
      break;
    }
    case LT_AG_NORM: {
      double p = c->p;
      if (p == 0) { r = lt_op(LT_BINARY_mul, lt_T(g_e), lt_F(0)); break; }
      lt_tensor_t *sg = lt_unary(LT_UNARY_sign, x, NULL);
      if (p == 1) { r = lt_opc(LT_BINARY_mul, sg, lt_T(g_e)); break; }
      lt_tensor_t *ax = lt_unary(LT_UNARY_abs, x, NULL);
      if (isinf(p)) { /* the extremes share it */
        lt_tensor_t *share = ax ? extreme_grad(g_e, ax, y_e, c) : NULL;
        r = lt_opcc(LT_BINARY_mul, share, sg);
        lt_release(ax);
        break;
      }
      /* g * sign(x) |x|^(p-1) / y^(p-1); 0 where y == 0 */
      lt_tensor_t *num = lt_opcc(LT_BINARY_mul, sg, lt_opc(LT_BINARY_pow, ax, lt_F(p - 1)));
      lt_tensor_t *den = lt_op(LT_BINARY_pow, lt_T(y_e), lt_F(p - 1));
      lt_tensor_t *q = lt_opc(LT_BINARY_mul, lt_opcc(LT_BINARY_div, num, den), lt_T(g_e));
      lt_tensor_t *z = lt_compare(LT_COMPARE_eq, lt_T(y_e), lt_F(0), NULL);
      r = q && z ? lt_where(z, lt_F(0), lt_T(q)) : NULL;
      lt_release(q);
      lt_release(z);
      break;
    }
    case LT_AG_AMAX:
    case LT_AG_AMIN: r = extreme_grad(g_e, x, y_e, c); break;
    default: lt_error("reduction backward: unknown op"); break;
  }
done:
  lt_release(g_e);
  lt_release(y_e);
  return r;
}

static int reduce_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  gi[0] = reduce_grad(n, go[0], false);
  return gi[0] ? LT_OK : LT_ERR;
}

static int reduce_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  gi[0] = reduce_grad(n, go[0], true);
  return gi[0] ? LT_OK : LT_ERR;
}

static lt_tensor_t *run_raw(lt_ag_reduce_kind kind, lt_tensor_t *x, int ndims, const int64_t *dims,
                            bool keepdim, lt_dtype dtype, double p, lt_tensor_t **indices) {
  int64_t corr = (int64_t)p;
  switch (kind) {
    case LT_AG_SUM: return lt_sum(x, ndims, dims, keepdim, dtype);
    case LT_AG_MEAN: return lt_mean(x, ndims, dims, keepdim, dtype);
    case LT_AG_PROD: return lt_prod(x, ndims, dims, keepdim, dtype);
    case LT_AG_LOGSUMEXP: return lt_logsumexp(x, ndims, dims, keepdim);
    case LT_AG_VAR: return lt_var(x, ndims, dims, corr, keepdim);
    case LT_AG_STD: return lt_std(x, ndims, dims, corr, keepdim);
    case LT_AG_NORM: return lt_norm(x, p, ndims, dims, keepdim);
    case LT_AG_AMAX: return ndims < 0 ? lt_max_all(x) : lt_amax(x, ndims, dims, keepdim);
    case LT_AG_AMIN: return ndims < 0 ? lt_min_all(x) : lt_amin(x, ndims, dims, keepdim);
    case LT_AG_MAX:
    case LT_AG_MIN: {
      lt_tensor_t *v = NULL;
      int rc = (kind == LT_AG_MAX ? lt_max_dim : lt_min_dim)(x, dims[0], keepdim, &v, indices);
      return rc == LT_OK ? v : NULL;
    }
    case LT_AG_CUMSUM: return lt_cumsum(x, dims[0], dtype);
    case LT_AG_CUMPROD: return lt_cumprod(x, dims[0], dtype);
    case LT_AG_LOGCUMSUMEXP: return lt_logcumsumexp(x, dims[0]);
    case LT_AG_CUMMAX:
    case LT_AG_CUMMIN: {
      lt_tensor_t *v = NULL;
      int rc = (kind == LT_AG_CUMMAX ? lt_cummax : lt_cummin)(x, dims[0], &v, indices);
      return rc == LT_OK ? v : NULL;
    }
  }
  return NULL;
}

lt_tensor_t *lt_ag_reduce(lt_ag_reduce_kind kind, lt_tensor_t *x, int ndims, const int64_t *dims,
                          bool keepdim, lt_dtype dtype, double p, lt_tensor_t **indices) {
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *o = run_raw(kind, x, ndims, dims, keepdim, dtype, p, indices);
  lt_set_grad_enabled(prev);
  if (!o || !lt_dtype_is_floating(o->dtype)) return o;
  lt_node_t *n = lt_record(lt_ag_node_name(kind_names[kind]), reduce_bw, 1, &x, o, sizeof(reduce_ctx_t));
  if (!n) goto fail;
  reduce_ctx_t *c = n->ctx;
  c->kind = kind;
  n->backward_graph = reduce_graph_bw;
  c->keepdim = keepdim;
  c->p = p;
  c->correction = (int64_t)p;
  c->count = 1;
  bool with_indices = kind == LT_AG_MAX || kind == LT_AG_MIN || kind == LT_AG_CUMMAX || kind == LT_AG_CUMMIN;
  bool scan_or_dim = with_indices || kind == LT_AG_CUMSUM || kind == LT_AG_CUMPROD || kind == LT_AG_LOGCUMSUMEXP;
  if (scan_or_dim) {
    int d;
    if (lt_wrap_dim(kind_names[kind], dims[0], x->ndim, &d) != LT_OK) goto fail;
    c->dim = x->ndim ? d : 0;
    if (x->ndim) c->mask[d] = true;
  } else {
    for (int d = 0; d < x->ndim; d++) c->mask[d] = ndims <= 0;
    for (int i = 0; i < ndims; i++) {
      int d;
      if (lt_wrap_dim(kind_names[kind], dims[i], x->ndim, &d) != LT_OK) goto fail;
      if (x->ndim) c->mask[d] = true;
    }
  }
  for (int d = 0; d < x->ndim; d++)
    if (c->mask[d]) c->count *= x->sizes[d];
  bool save_x = kind != LT_AG_SUM && kind != LT_AG_MEAN && kind != LT_AG_CUMSUM && !with_indices;
  bool save_y = kind == LT_AG_LOGSUMEXP || kind == LT_AG_STD || kind == LT_AG_NORM || kind == LT_AG_AMAX ||
                kind == LT_AG_AMIN || kind == LT_AG_LOGCUMSUMEXP;
  if (save_x && lt_node_save(n, 0, x) != LT_OK) goto fail;
  if (save_y && lt_node_save(n, 1, o) != LT_OK) goto fail;
  if (with_indices) { /* a copy: callers may renumber the indices in place */
    lt_tensor_t *ic = lt_clone(*indices);
    int rc = ic ? lt_node_save(n, 1, ic) : LT_ERR;
    lt_release(ic);
    if (rc != LT_OK) goto fail;
  }
  return o;
fail:
  lt_release(o);
  if (indices && (kind == LT_AG_MAX || kind == LT_AG_MIN || kind == LT_AG_CUMMAX || kind == LT_AG_CUMMIN)) {
    lt_release(*indices);
    *indices = NULL;
  }
  return NULL;
}
