/* Batch and layer normalisation: checks, outputs, per-channel bookkeeping (statistics, running
   statistics, the affine coefficients, in double) and the CPU loops (kernels/cpu/normalization.c). */
#include "core/autocast.h"
#include "core/normalization.h"
#include "core/cuda.h"

#include "core/autograd.h"
#include "core/elementwise.h"
#include "kernels/cpu/normalization.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int check_input(const char *op, const lt_tensor_t *x) {
  const lt_backend_i *b = lt_backend((lt_devtype)x->device.type);
  if (!b || !b->host_accessible) {
    char dev[32];
    return lt_error("%s: not supported on device %s by this build", op, lt_device_format(x->device, dev, sizeof dev));
  }
  if (!lt_dtype_is_floating(x->dtype))
    return lt_error("%s: expected a floating point input (float32, float64, float16 or bfloat16), got %s", op,
                    lt_dtype_name(x->dtype));
  return LT_OK;
}

/* check_input, letting CUDA tensors through (core/cuda_nn.c) */
static int check_input_any(const char *op, const lt_tensor_t *x) {
  if (x->device.type == LT_CUDA && !lt_dtype_is_floating(x->dtype))
    return lt_error("%s: expected a floating point input (float32, float64, float16 or bfloat16), got %s", op,
                    lt_dtype_name(x->dtype));
  return x->device.type == LT_CUDA ? LT_OK : check_input(op, x);
}

static bool same_shape(const lt_tensor_t *a, int ndim, const int64_t *sizes) {
  return a->ndim == ndim && memcmp(a->sizes, sizes, sizeof(int64_t) * (size_t)ndim) == 0;
}

/* a parameter of shape (ndim, sizes) and floating dtype, or NULL */
static int check_param(const char *op, const char *name, const lt_tensor_t *t, int ndim, const int64_t *sizes,
                       const char *what) {
  if (!t) return LT_OK;
  if (!same_shape(t, ndim, sizes)) {
    char a[128], b[128];
    return lt_error("%s: expected %s of shape %s (%s), got %s", op, name, lt_shape_str(ndim, sizes, a, sizeof a),
                    what, lt_shape_str(t->ndim, t->sizes, b, sizeof b));
  }
  if (!lt_dtype_is_floating(t->dtype))
    return lt_error("%s: expected %s of a floating point dtype, got %s", op, name, lt_dtype_name(t->dtype));
  return LT_OK;
}

static lt_tensor_t *contiguous_as(lt_tensor_t *t, lt_dtype dt) {
  return t->dtype == dt ? lt_contiguous(t) : lt_convert(t, dt, t->device);
}

/* the dtype statistics are kept in (and float16/bfloat16 are computed in) */
static lt_dtype compute_dtype(lt_dtype dt) { return dt == LT_FLOAT64 ? LT_FLOAT64 : LT_FLOAT32; }

/* t's values (any floating dtype and layout) as doubles */
static void load_doubles(const lt_tensor_t *t, double *out) {
  if (lt_is_contiguous(t) && t->dtype == LT_FLOAT64) {
    memcpy(out, lt_data(t), sizeof(double) * (size_t)t->numel);
  } else if (lt_is_contiguous(t) && t->dtype == LT_FLOAT32) {
    const float *p = lt_data(t);
    for (int64_t i = 0; i < t->numel; i++) out[i] = p[i];
  } else {
    for (int64_t i = 0; i < t->numel; i++) out[i] = lt_get_double(t, i);
  }
}

/* t = v in place (a running statistic): its version is bumped */
static int store_doubles(lt_tensor_t *t, const double *v) {
  if (lt_is_contiguous(t) && (t->dtype == LT_FLOAT64 || t->dtype == LT_FLOAT32)) {
    if (t->dtype == LT_FLOAT64) {
      memcpy(lt_data(t), v, sizeof(double) * (size_t)t->numel);
    } else {
      float *p = lt_data(t);
      for (int64_t i = 0; i < t->numel; i++) p[i] = (float)v[i];
    }
    lt_bump_version(t);
    return LT_OK;
  }
  lt_tensor_t *tmp = lt_empty(t->ndim, t->sizes, LT_FLOAT64, t->device);
  if (!tmp) return LT_ERR;
  memcpy(lt_data(tmp), v, sizeof(double) * (size_t)t->numel);
  bool prev = lt_set_grad_enabled(false);
  int rc = lt_copy_(t, tmp);
  lt_set_grad_enabled(prev);
  lt_release(tmp);
  return rc;
}

/* a new tensor of shape (ndim, sizes) and dtype dt holding the doubles v */
static lt_tensor_t *from_doubles(const double *v, int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev) {
  lt_tensor_t *t = lt_empty(ndim, sizes, LT_FLOAT64, dev);
  if (!t) return NULL;
  memcpy(lt_data(t), v, sizeof(double) * (size_t)t->numel);
  if (dt == LT_FLOAT64) return t;
  lt_tensor_t *c = lt_convert(t, dt, dev);
  lt_release(t);
  return c;
}

static int check_grad_shape(const char *op, const lt_tensor_t *g, const lt_tensor_t *x) {
  if (same_shape(g, x->ndim, x->sizes)) return LT_OK;
  char a[128], b[128];
  return lt_error("%s: the gradient's shape %s differs from the input's %s", op, lt_shape_str(g->ndim, g->sizes, a, sizeof a),
                  lt_shape_str(x->ndim, x->sizes, b, sizeof b));
}

/* ---- batch norm ---- */

lt_tensor_t *lt_batch_norm(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                           lt_tensor_t *running_var, bool training, double momentum, double eps) {
  lt_tensor_t *in[3] = {x, w, b};
  if (lt_ag_needed_n(3, in)) return lt_ag_batch_norm(x, w, b, running_mean, running_var, training, momentum, eps);
  return lt_batch_norm_stats(x, w, b, running_mean, running_var, training, momentum, eps, NULL, NULL);
}

lt_tensor_t *lt_batch_norm_stats(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                                 lt_tensor_t *running_var, bool training, double momentum, double eps,
                                 lt_tensor_t **save_mean, lt_tensor_t **save_invstd) {
  const char *op = "batch_norm";
  char sh[128];
  if (save_mean) *save_mean = NULL;
  if (save_invstd) *save_invstd = NULL;
  if (check_input_any(op, x)) return NULL;
  if (x->ndim < 2) {
    lt_error("%s: expected an input of 2 or more dimensions [N, C, ...], got shape %s", op,
             lt_shape_str(x->ndim, x->sizes, sh, sizeof sh));
    return NULL;
  }
  const lt_tensor_t *all[5] = {x, w, b, running_mean, running_var};
  if (lt_check_same_device(op, 5, all)) return NULL;
  int64_t N = x->sizes[0], C = x->sizes[1], S = 1;
  for (int d = 2; d < x->ndim; d++) S *= x->sizes[d];
  int64_t M = N * S;
  const char *what = "one value per channel";
  if (check_param(op, "weight", w, 1, &C, what) || check_param(op, "bias", b, 1, &C, what) ||
      check_param(op, "running_mean", running_mean, 1, &C, what) ||
      check_param(op, "running_var", running_var, 1, &C, what))
    return NULL;
  if (training && M == 1) {
    lt_error("%s: expected more than 1 value per channel when training, got input size %s", op,
             lt_shape_str(x->ndim, x->sizes, sh, sizeof sh));
    return NULL;
  }
  if (!training && (!running_mean || !running_var)) {
    lt_error("%s: running_mean and running_var must be given in evaluation mode (training = false)", op);
    return NULL;
  }
  if (x->device.type == LT_CUDA)
    return lt_cuda_batch_norm(op, x, w, b, running_mean, running_var, training, momentum, eps,
                              compute_dtype(x->dtype), save_mean, save_invstd);
  double *buf = malloc(sizeof(double) * 5 * (size_t)(C > 0 ? C : 1));
  if (!buf) {
    lt_error("%s: out of memory (%lld channels)", op, (long long)C);
    return NULL;
  }
  double *mean = buf, *var = buf + C, *invstd = buf + 2 * C, *scale = buf + 3 * C, *shift = buf + 4 * C;
  lt_tensor_t *xc = lt_contiguous(x), *y = NULL;
  if (!xc) goto done;
  if (training) {
    if (M > 0) {
      lt_cpu_batch_norm_stats(x->dtype, lt_data(xc), N, C, S, mean, var);
    } else {
      for (int64_t c = 0; c < C; c++) mean[c] = var[c] = NAN;
    }
    /* no batch, no update: there is nothing to average in */
    if (M > 1 && running_mean) {
      load_doubles(running_mean, scale);
      for (int64_t c = 0; c < C; c++) scale[c] = (1 - momentum) * scale[c] + momentum * mean[c];
      if (store_doubles(running_mean, scale) != LT_OK) goto done;
    }
    if (M > 1 && running_var) {
      load_doubles(running_var, scale);
      double unbias = (double)M / (double)(M - 1);
      for (int64_t c = 0; c < C; c++) scale[c] = (1 - momentum) * scale[c] + momentum * var[c] * unbias;
      if (store_doubles(running_var, scale) != LT_OK) goto done;
    }
  } else {
    load_doubles(running_mean, mean);
    load_doubles(running_var, var);
  }
  for (int64_t c = 0; c < C; c++) invstd[c] = 1.0 / sqrt(var[c] + eps);
  if (w) load_doubles(w, scale);
  else for (int64_t c = 0; c < C; c++) scale[c] = 1;
  if (b) load_doubles(b, shift);
  else for (int64_t c = 0; c < C; c++) shift[c] = 0;
  for (int64_t c = 0; c < C; c++) {
    scale[c] *= invstd[c];
    shift[c] -= mean[c] * scale[c];
  }
  y = lt_empty(x->ndim, x->sizes, x->dtype, x->device);
  if (!y) goto done;
  if (x->numel > 0) lt_cpu_batch_norm_apply(x->dtype, lt_data(xc), lt_data(y), N, C, S, scale, shift);
  if (save_mean) {
    lt_dtype sdt = compute_dtype(x->dtype);
    *save_mean = from_doubles(mean, 1, &C, sdt, x->device);
    *save_invstd = *save_mean ? from_doubles(invstd, 1, &C, sdt, x->device) : NULL;
    if (!*save_invstd) {
      lt_release(*save_mean);
      *save_mean = NULL;
      lt_release(y);
      y = NULL;
    }
  }
done:
  lt_release(xc);
  free(buf);
  return y;
}

int lt_batch_norm_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *mean, lt_tensor_t *invstd,
                           bool training, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx, lt_tensor_t **gw,
                           lt_tensor_t **gb) {
  const char *op = "batch_norm_backward";
  if (gx) *gx = NULL;
  if (gw) *gw = NULL;
  if (gb) *gb = NULL;
  LT_TRY(check_input_any(op, x));
  if (x->ndim < 2) return lt_error("%s: expected an input of 2 or more dimensions", op);
  const lt_tensor_t *all[5] = {g, x, w, mean, invstd};
  LT_TRY(lt_check_same_device(op, 5, all));
  LT_TRY(check_grad_shape(op, g, x));
  int64_t N = x->sizes[0], C = x->sizes[1], S = 1;
  for (int d = 2; d < x->ndim; d++) S *= x->sizes[d];
  const char *what = "one value per channel";
  LT_TRY(check_param(op, "weight", w, 1, &C, what));
  LT_TRY(check_param(op, "mean", mean, 1, &C, what));
  LT_TRY(check_param(op, "invstd", invstd, 1, &C, what));
  if (x->device.type == LT_CUDA)
    return lt_cuda_batch_norm_backward(op, g, x, w, mean, invstd, training, gw_dt, gb_dt, gx, gw, gb);
  double *buf = malloc(sizeof(double) * 5 * (size_t)(C > 0 ? C : 1));
  if (!buf) return lt_error("%s: out of memory (%lld channels)", op, (long long)C);
  double *md = buf, *isd = buf + C, *wd = buf + 2 * C, *gwd = buf + 3 * C, *gbd = buf + 4 * C;
  load_doubles(mean, md);
  load_doubles(invstd, isd);
  if (w) load_doubles(w, wd);
  int rc = LT_ERR;
  lt_tensor_t *gc = contiguous_as(g, x->dtype), *xc = gc ? lt_contiguous(x) : NULL;
  lt_tensor_t *gxt = xc && gx ? lt_empty(x->ndim, x->sizes, x->dtype, x->device) : NULL;
  if (!xc || (gx && !gxt)) goto done;
  if (x->numel > 0) {
    lt_cpu_batch_norm_backward(x->dtype, lt_data(xc), lt_data(gc), gxt ? lt_data(gxt) : NULL, N, C, S, md, isd,
                               w ? wd : NULL, training, gwd, gbd);
  } else {
    for (int64_t c = 0; c < C; c++) gwd[c] = gbd[c] = 0;
  }
  if (gw && !(*gw = from_doubles(gwd, 1, &C, gw_dt, x->device))) goto done;
  if (gb && !(*gb = from_doubles(gbd, 1, &C, gb_dt, x->device))) goto done;
  if (gx) { *gx = gxt; gxt = NULL; }
  rc = LT_OK;
done:
  if (rc != LT_OK) {
    if (gw) { lt_release(*gw); *gw = NULL; }
    if (gb) { lt_release(*gb); *gb = NULL; }
  }
  lt_release(gxt);
  lt_release(gc);
  lt_release(xc);
  free(buf);
  return rc;
}

/* ---- layer norm ---- */

lt_tensor_t *lt_layer_norm(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps) {
  LT_AUTOCAST3(LT_AC_FP32_CUDA, x, w, b, lt_layer_norm(x, n_dims, w, b, eps))
  lt_tensor_t *in[3] = {x, w, b};
  if (lt_ag_needed_n(3, in)) return lt_ag_layer_norm(x, n_dims, w, b, eps);
  return lt_layer_norm_stats(x, n_dims, w, b, eps, NULL, NULL);
}

/* rows and row length of x normalised over its last n_dims dims */
static int layer_geometry(const char *op, const lt_tensor_t *x, int n_dims, int64_t *M, int64_t *N) {
  if (n_dims < 1 || n_dims > x->ndim) {
    char sh[128];
    return lt_error("%s: cannot normalise over the last %d dimensions of an input of shape %s", op, n_dims,
                    lt_shape_str(x->ndim, x->sizes, sh, sizeof sh));
  }
  *M = *N = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d < x->ndim - n_dims) *M *= x->sizes[d];
    else *N *= x->sizes[d];
  }
  return LT_OK;
}

lt_tensor_t *lt_layer_norm_stats(lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *b, double eps,
                                 lt_tensor_t **mean, lt_tensor_t **rstd) {
  const char *op = "layer_norm";
  if (mean) *mean = NULL;
  if (rstd) *rstd = NULL;
  int64_t M, N;
  if (check_input_any(op, x) || layer_geometry(op, x, n_dims, &M, &N)) return NULL;
  const lt_tensor_t *all[3] = {x, w, b};
  if (lt_check_same_device(op, 3, all)) return NULL;
  const int64_t *shape = x->sizes + x->ndim - n_dims;
  const char *what = "normalized_shape";
  if (check_param(op, "weight", w, n_dims, shape, what) || check_param(op, "bias", b, n_dims, shape, what))
    return NULL;
  lt_dtype ct = compute_dtype(x->dtype);
  lt_tensor_t *xc = lt_contiguous(x);
  lt_tensor_t *wc = xc && w ? contiguous_as(w, ct) : NULL, *bc = xc && b ? contiguous_as(b, ct) : NULL;
  lt_tensor_t *y = NULL, *mt = NULL, *rt = NULL;
  if (!xc || (w && !wc) || (b && !bc)) goto done;
  y = lt_empty(x->ndim, x->sizes, x->dtype, x->device);
  mt = y ? lt_empty(1, &M, ct, x->device) : NULL;
  rt = mt ? lt_empty(1, &M, ct, x->device) : NULL;
  if (!rt) {
    lt_release(y);
    y = NULL;
    goto done;
  }
  if (x->device.type == LT_CUDA) {
    if (lt_cuda_layer_norm(op, xc, y, M, N, wc, bc, eps, mt, rt) != LT_OK) {
      lt_release(y);
      y = NULL;
      goto done;
    }
  } else {
    lt_cpu_layer_norm(x->dtype, lt_data(xc), lt_data(y), M, N, wc ? lt_data(wc) : NULL, bc ? lt_data(bc) : NULL, eps,
                      lt_data(mt), lt_data(rt));
  }
  if (mean) { *mean = mt; mt = NULL; }
  if (rstd) { *rstd = rt; rt = NULL; }
done:
  lt_release(xc);
  lt_release(wc);
  lt_release(bc);
  lt_release(mt);
  lt_release(rt);
  return y;
}

int lt_layer_norm_backward(lt_tensor_t *g, lt_tensor_t *x, int n_dims, lt_tensor_t *w, lt_tensor_t *mean,
                           lt_tensor_t *rstd, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx, lt_tensor_t **gw,
                           lt_tensor_t **gb) {
  const char *op = "layer_norm_backward";
  if (gx) *gx = NULL;
  if (gw) *gw = NULL;
  if (gb) *gb = NULL;
  int64_t M, N;
  LT_TRY(check_input_any(op, x));
  LT_TRY(layer_geometry(op, x, n_dims, &M, &N));
  const lt_tensor_t *all[5] = {g, x, w, mean, rstd};
  LT_TRY(lt_check_same_device(op, 5, all));
  LT_TRY(check_grad_shape(op, g, x));
  const int64_t *shape = x->sizes + x->ndim - n_dims;
  LT_TRY(check_param(op, "weight", w, n_dims, shape, "normalized_shape"));
  LT_TRY(check_param(op, "mean", mean, 1, &M, "one value per row"));
  LT_TRY(check_param(op, "rstd", rstd, 1, &M, "one value per row"));
  lt_dtype ct = compute_dtype(x->dtype);
  int rc = LT_ERR;
  lt_tensor_t *gc = contiguous_as(g, x->dtype), *xc = lt_contiguous(x);
  lt_tensor_t *wc = w ? contiguous_as(w, ct) : NULL;
  lt_tensor_t *mc = contiguous_as(mean, ct), *rc_ = contiguous_as(rstd, ct);
  lt_tensor_t *gxt = NULL, *gwt = NULL, *gbt = NULL;
  if (!gc || !xc || (w && !wc) || !mc || !rc_) goto done;
  if (gx && !(gxt = lt_empty(x->ndim, x->sizes, x->dtype, x->device))) goto done;
  if (gw && !(gwt = lt_empty(n_dims, shape, LT_FLOAT64, x->device))) goto done;
  if (gb && !(gbt = lt_empty(n_dims, shape, LT_FLOAT64, x->device))) goto done;
  if (x->device.type == LT_CUDA) {
    if (lt_cuda_layer_norm_backward(op, xc, gc, mc, rc_, wc, M, N, gxt, gwt, gbt) != LT_OK) goto done;
  } else {
    lt_cpu_layer_norm_backward(x->dtype, lt_data(xc), lt_data(gc), lt_data(mc), lt_data(rc_), wc ? lt_data(wc) : NULL,
                               M, N, gxt ? lt_data(gxt) : NULL, gwt ? lt_data(gwt) : NULL, gbt ? lt_data(gbt) : NULL);
  }
  if (gwt && gw_dt != LT_FLOAT64) {
    lt_tensor_t *c = lt_convert(gwt, gw_dt, x->device);
    lt_release(gwt);
    if (!(gwt = c)) goto done;
  }
  if (gbt && gb_dt != LT_FLOAT64) {
    lt_tensor_t *c = lt_convert(gbt, gb_dt, x->device);
    lt_release(gbt);
    if (!(gbt = c)) goto done;
  }
  if (gx) { *gx = gxt; gxt = NULL; }
  if (gw) { *gw = gwt; gwt = NULL; }
  if (gb) { *gb = gbt; gbt = NULL; }
  rc = LT_OK;
done:
  lt_release(gc);
  lt_release(xc);
  lt_release(wc);
  lt_release(mc);
  lt_release(rc_);
  lt_release(gxt);
  lt_release(gwt);
  lt_release(gbt);
  return rc;
}
