/* 2-D pooling: PyTorch's argument checks and output sizes, then the plane loops of
   kernels/cpu/pool.c (or for CUDA tensors core/cuda_nn.c's kernels) on contiguous data in the
   compute dtype (see pool.h). */
#include "core/pool.h"
#include "core/autograd.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "core/settings.h"
#include "kernels/cpu/pool.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  lt_pool_geom_t g;
  int64_t N, C, planes;
  bool batched;
} pool_plan_t;

/* Larger parameters could overflow the size arithmetic; no real pooling comes near. */
#define LT_POOL_ARG_MAX ((int64_t)1 << 31)

static inline int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* PyTorch's pooling_output_shape */
static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t out = floordiv(in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  /* the last window must start inside the input or its left padding */
  if (ceil_mode && (out - 1) * s >= in + pad) out--;
  return out;
}

/* x: a floating, non-empty 3-D or 4-D tensor; fills the plane counts and H, W */
static int check_input(const char *op, const lt_tensor_t *x, pool_plan_t *p) {
  char s[256];
  if (x->device.type != LT_CUDA) LT_TRY(lt_check_host(op, x)); /* CUDA: core/cuda_nn.c */
  if (x->ndim != 3 && x->ndim != 4)
    return lt_error("%s: expected a 3-D (unbatched) or 4-D (batched) input, but got input of size %s", op,
                    lt_shape_str(x->ndim, x->sizes, s, sizeof s));
  if (!lt_dtype_is_floating(x->dtype))
    return lt_error("%s: expected a floating point input, got %s", op, lt_dtype_name(x->dtype));
  int o = x->ndim - 3;
  for (int d = o; d < x->ndim; d++)
    if (x->sizes[d] == 0)
      return lt_error("%s: expected an input with non-zero channels, height and width, but got input of size %s",
                      op, lt_shape_str(x->ndim, x->sizes, s, sizeof s));
  memset(p, 0, sizeof *p);
  p->batched = x->ndim == 4;
  p->N = p->batched ? x->sizes[0] : 1;
  p->C = x->sizes[o];
  p->planes = p->N * p->C;
  p->g.H = x->sizes[o + 1];
  p->g.W = x->sizes[o + 2];
  return LT_OK;
}

static int check_window(const char *op, const lt_tensor_t *x, const int64_t k[2], const int64_t s[2],
                        const int64_t pad[2], const int64_t d[2], bool ceil_mode, bool is_max, pool_plan_t *p) {
  LT_TRY(check_input(op, x, p));
  if (k[0] <= 0 || k[1] <= 0)
    return lt_error("%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                    (long long)k[0], (long long)k[1]);
  if (s[0] <= 0 || s[1] <= 0)
    return lt_error("%s: stride should be greater than zero, but got dH: %lld dW: %lld", op, (long long)s[0],
                    (long long)s[1]);
  if (d[0] <= 0 || d[1] <= 0)
    return lt_error("%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", op,
                    (long long)d[0], (long long)d[1]);
  for (int i = 0; i < 2; i++) {
    if (k[i] > LT_POOL_ARG_MAX || s[i] > LT_POOL_ARG_MAX || d[i] > LT_POOL_ARG_MAX)
      return lt_error("%s: kernel size, stride and dilation must be at most %lld", op, (long long)LT_POOL_ARG_MAX);
    if (pad[i] < 0) return lt_error("%s: padding must be non-negative, but got pad=%lld", op, (long long)pad[i]);
    if (pad[i] > k[i] / 2) {
      if (is_max)
        return lt_error("%s: pad should be at most half of effective kernel size, but got pad=%lld, "
                        "kernel_size=%lld and dilation=%lld", op, (long long)pad[i], (long long)k[i],
                        (long long)d[i]);
      return lt_error("%s: pad should be at most half of kernel size, but got pad=%lld and kernel_size=%lld", op,
                      (long long)pad[i], (long long)k[i]);
    }
  }
  lt_pool_geom_t *g = &p->g;
  g->kh = k[0], g->kw = k[1], g->sh = s[0], g->sw = s[1], g->ph = pad[0], g->pw = pad[1];
  g->dh = d[0], g->dw = d[1];
  g->OH = pooled_size(g->H, k[0], pad[0], s[0], d[0], ceil_mode);
  g->OW = pooled_size(g->W, k[1], pad[1], s[1], d[1], ceil_mode);
  if (g->OH < 1 || g->OW < 1)
    return lt_error("%s: given input size (%lldx%lldx%lld), calculated output size (%lldx%lldx%lld) is too small",
                    op, (long long)p->C, (long long)g->H, (long long)g->W, (long long)p->C, (long long)g->OH,
                    (long long)g->OW);
  return LT_OK;
}

/* the output's shape: x's with the last two sizes OH, OW */
static int out_shape(const lt_tensor_t *x, const pool_plan_t *p, int64_t *sizes) {
  memcpy(sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
  sizes[x->ndim - 2] = p->g.OH;
  sizes[x->ndim - 1] = p->g.OW;
  return x->ndim;
}

static lt_dtype compute_dtype(lt_dtype dt) { return lt_dtype_is_low_precision(dt) ? LT_FLOAT32 : dt; }

static lt_tensor_t *operand(lt_tensor_t *t, lt_dtype ct) {
  return t->dtype == ct ? lt_contiguous(t) : lt_convert(t, ct, t->device);
}

/* r (consumed, compute dtype) as dtype dt */
static lt_tensor_t *finish(lt_tensor_t *r, lt_dtype dt) {
  if (!r || r->dtype == dt) return r;
  lt_tensor_t *o = lt_convert(r, dt, r->device);
  lt_release(r);
  return o;
}

/* g must have the output's shape */
static int check_grad(const char *op, const lt_tensor_t *g, const lt_tensor_t *x, int nd, const int64_t *sizes) {
  const lt_tensor_t *ts[2] = {g, x};
  if (g->device.type != LT_CUDA) LT_TRY(lt_check_host(op, g));
  LT_TRY(lt_check_same_device(op, 2, ts));
  if (!lt_dtype_is_floating(g->dtype))
    return lt_error("%s: expected a floating point gradient, got %s", op, lt_dtype_name(g->dtype));
  if (g->ndim != nd || memcmp(g->sizes, sizes, sizeof(int64_t) * (size_t)nd) != 0) {
    char a[256], b[256];
    return lt_error("%s: expected a gradient of size %s, got %s", op, lt_shape_str(nd, sizes, a, sizeof a),
                    lt_shape_str(g->ndim, g->sizes, b, sizeof b));
  }
  return LT_OK;
}

/* ---- max ---- */

int lt_max_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                  const int64_t dilation[2], bool ceil_mode, lt_tensor_t **out, lt_tensor_t **indices) {
  *out = *indices = NULL;
  if (lt_ag_needed(x, NULL)) {
    bool prev = lt_set_grad_enabled(false);
    int rc = lt_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out, indices);
    lt_set_grad_enabled(prev);
    if (rc != LT_OK) return LT_ERR;
    if (lt_ag_max_pool2d(x, *out, *indices) != LT_OK) { *out = *indices = NULL; return LT_ERR; }
    return LT_OK;
  }
  pool_plan_t p;
  LT_TRY(check_window("max_pool2d", x, kernel, stride, padding, dilation, ceil_mode, true, &p));
  lt_dtype ct = compute_dtype(x->dtype);
  int64_t sizes[4];
  int nd = out_shape(x, &p, sizes);
  lt_tensor_t *xc = operand(x, ct), *y = lt_empty(nd, sizes, ct, x->device);
  lt_tensor_t *idx = lt_empty(nd, sizes, LT_INT64, x->device);
  bool ok = xc && y && idx;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_cuda_pool2d("max_pool2d", LT_CUDA_POOL_MAX, &p.g, p.planes, false, 0, xc, y, idx) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64) lt_max_pool2d_f64(&p.g, p.planes, lt_data(xc), lt_data(y), lt_data(idx));
    else lt_max_pool2d_f32(&p.g, p.planes, lt_data(xc), lt_data(y), lt_data(idx));
  }
  lt_release(xc);
  if (ok) y = finish(y, x->dtype);
  if (!ok || !y) { lt_release(y); lt_release(idx); return LT_ERR; }
  *out = y;
  *indices = idx;
  return LT_OK;
}

lt_tensor_t *lt_max_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *indices) {
  const char *op = "max_pool2d_backward";
  pool_plan_t p;
  if (check_input(op, x, &p) != LT_OK) return NULL;
  if (indices->dtype != LT_INT64 || indices->ndim != x->ndim ||
      memcmp(indices->sizes, x->sizes, sizeof(int64_t) * (size_t)(x->ndim - 2)) != 0) {
    char a[256];
    lt_error("%s: expected int64 indices with the input's batch and channel sizes, got %s indices of size %s",
             op, lt_dtype_name(indices->dtype), lt_shape_str(indices->ndim, indices->sizes, a, sizeof a));
    return NULL;
  }
  const lt_tensor_t *ts[2] = {indices, x};
  if ((g->device.type != LT_CUDA && lt_check_host(op, g) != LT_OK) || lt_check_same_device(op, 2, ts) != LT_OK)
    return NULL;
  if (check_grad(op, g, x, indices->ndim, indices->sizes) != LT_OK) return NULL;
  p.g.OH = indices->sizes[x->ndim - 2];
  p.g.OW = indices->sizes[x->ndim - 1];
  lt_dtype ct = compute_dtype(x->dtype);
  lt_tensor_t *gc = operand(g, ct), *ic = lt_contiguous(indices), *gx = lt_empty(x->ndim, x->sizes, ct, x->device);
  bool ok = gc && ic && gx;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_alert_not_deterministic("max_pool2d_backward_cuda") == LT_OK &&
         lt_cuda_pool2d(op, LT_CUDA_POOL_MAX_BACKWARD, &p.g, p.planes, false, 0, gc, gx, ic) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64) lt_max_pool2d_backward_f64(&p.g, p.planes, lt_data(gc), lt_data(ic), lt_data(gx));
    else lt_max_pool2d_backward_f32(&p.g, p.planes, lt_data(gc), lt_data(ic), lt_data(gx));
  }
  lt_release(gc), lt_release(ic);
  if (!ok) { lt_release(gx); return NULL; }
  return finish(gx, x->dtype);
}

/* ---- average ---- */

static const int64_t ONE[2] = {1, 1};

lt_tensor_t *lt_avg_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2],
                           const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                           int64_t divisor_override) {
  if (lt_ag_needed(x, NULL)) {
    bool prev = lt_set_grad_enabled(false);
    lt_tensor_t *o = lt_avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
    lt_set_grad_enabled(prev);
    return lt_ag_avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, o);
  }
  pool_plan_t p;
  if (check_window("avg_pool2d", x, kernel, stride, padding, ONE, ceil_mode, false, &p) != LT_OK) return NULL;
  lt_dtype ct = compute_dtype(x->dtype);
  int64_t sizes[4];
  int nd = out_shape(x, &p, sizes);
  lt_tensor_t *xc = operand(x, ct), *y = lt_empty(nd, sizes, ct, x->device);
  bool ok = xc && y;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_cuda_pool2d("avg_pool2d", LT_CUDA_POOL_AVG, &p.g, p.planes, count_include_pad, divisor_override, xc, y,
                        NULL) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64)
      lt_avg_pool2d_f64(&p.g, p.planes, count_include_pad, divisor_override, lt_data(xc), lt_data(y));
    else
      lt_avg_pool2d_f32(&p.g, p.planes, count_include_pad, divisor_override, lt_data(xc), lt_data(y));
  }
  lt_release(xc);
  if (!ok) { lt_release(y); return NULL; }
  return finish(y, x->dtype);
}

lt_tensor_t *lt_avg_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x, const int64_t kernel[2],
                                    const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                                    bool count_include_pad, int64_t divisor_override) {
  const char *op = "avg_pool2d_backward";
  pool_plan_t p;
  if (check_window(op, x, kernel, stride, padding, ONE, ceil_mode, false, &p) != LT_OK) return NULL;
  int64_t sizes[4];
  int nd = out_shape(x, &p, sizes);
  if (check_grad(op, g, x, nd, sizes) != LT_OK) return NULL;
  lt_dtype ct = compute_dtype(x->dtype);
  lt_tensor_t *gc = operand(g, ct), *gx = lt_empty(x->ndim, x->sizes, ct, x->device);
  bool ok = gc && gx;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_alert_not_deterministic("avg_pool2d_backward_cuda") == LT_OK &&
         lt_cuda_pool2d(op, LT_CUDA_POOL_AVG_BACKWARD, &p.g, p.planes, count_include_pad, divisor_override, gc, gx,
                        NULL) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64)
      lt_avg_pool2d_backward_f64(&p.g, p.planes, count_include_pad, divisor_override, lt_data(gc), lt_data(gx));
    else
      lt_avg_pool2d_backward_f32(&p.g, p.planes, count_include_pad, divisor_override, lt_data(gc), lt_data(gx));
  }
  lt_release(gc);
  if (!ok) { lt_release(gx); return NULL; }
  return finish(gx, x->dtype);
}

/* ---- adaptive average ---- */

lt_tensor_t *lt_adaptive_avg_pool2d(lt_tensor_t *x, const int64_t size[2]) {
  if (lt_ag_needed(x, NULL)) {
    bool prev = lt_set_grad_enabled(false);
    lt_tensor_t *o = lt_adaptive_avg_pool2d(x, size);
    lt_set_grad_enabled(prev);
    return lt_ag_adaptive_avg_pool2d(x, o);
  }
  const char *op = "adaptive_avg_pool2d";
  pool_plan_t p;
  if (check_input(op, x, &p) != LT_OK) return NULL;
  if (size[0] > LT_POOL_ARG_MAX || size[1] > LT_POOL_ARG_MAX) {
    lt_error("%s: output_size must be at most %lld, but got (%lld, %lld)", op, (long long)LT_POOL_ARG_MAX,
             (long long)size[0], (long long)size[1]);
    return NULL;
  }
  if (size[0] < 0 || size[1] < 0) {
    lt_error("%s: elements of output_size must be greater than or equal to 0, but got (%lld, %lld)", op,
             (long long)size[0], (long long)size[1]);
    return NULL;
  }
  p.g.OH = size[0];
  p.g.OW = size[1];
  lt_dtype ct = compute_dtype(x->dtype);
  int64_t sizes[4];
  int nd = out_shape(x, &p, sizes);
  lt_tensor_t *xc = operand(x, ct), *y = lt_empty(nd, sizes, ct, x->device);
  bool ok = xc && y;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_cuda_pool2d(op, LT_CUDA_POOL_ADAPTIVE, &p.g, p.planes, false, 0, xc, y, NULL) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64) lt_adaptive_avg_pool2d_f64(&p.g, p.planes, lt_data(xc), lt_data(y));
    else lt_adaptive_avg_pool2d_f32(&p.g, p.planes, lt_data(xc), lt_data(y));
  }
  lt_release(xc);
  if (!ok) { lt_release(y); return NULL; }
  return finish(y, x->dtype);
}

lt_tensor_t *lt_adaptive_avg_pool2d_backward(lt_tensor_t *g, lt_tensor_t *x) {
  const char *op = "adaptive_avg_pool2d_backward";
  pool_plan_t p;
  if (check_input(op, x, &p) != LT_OK) return NULL;
  if (g->ndim != x->ndim || memcmp(g->sizes, x->sizes, sizeof(int64_t) * (size_t)(x->ndim - 2)) != 0) {
    char a[256], b[256];
    lt_error("%s: expected a gradient with the input's batch and channel sizes (input %s), got %s", op,
             lt_shape_str(x->ndim, x->sizes, a, sizeof a), lt_shape_str(g->ndim, g->sizes, b, sizeof b));
    return NULL;
  }
  p.g.OH = g->sizes[g->ndim - 2];
  p.g.OW = g->sizes[g->ndim - 1];
  if (check_grad(op, g, x, g->ndim, g->sizes) != LT_OK) return NULL;
  lt_dtype ct = compute_dtype(x->dtype);
  lt_tensor_t *gc = operand(g, ct), *gx = lt_empty(x->ndim, x->sizes, ct, x->device);
  bool ok = gc && gx;
  if (ok && x->device.type == LT_CUDA) {
    ok = lt_alert_not_deterministic("adaptive_avg_pool2d_backward_cuda") == LT_OK &&
         lt_cuda_pool2d(op, LT_CUDA_POOL_ADAPTIVE_BACKWARD, &p.g, p.planes, false, 0, gc, gx, NULL) == LT_OK;
  } else if (ok) {
    if (ct == LT_FLOAT64) lt_adaptive_avg_pool2d_backward_f64(&p.g, p.planes, lt_data(gc), lt_data(gx));
    else lt_adaptive_avg_pool2d_backward_f32(&p.g, p.planes, lt_data(gc), lt_data(gx));
  }
  lt_release(gc);
  if (!ok) { lt_release(gx); return NULL; }
  return finish(gx, x->dtype);
}
