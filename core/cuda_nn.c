/* Softmax, log-softmax, the negative log-likelihood loss, layer and batch norm and 2-D pooling on
   CUDA tensors (kernels/cuda/nn.cu, pool.cu): core/softmax.c, core/loss.c, core/normalization.c
   and core/pool.c check the arguments, make the operands contiguous and allocate the outputs as
   for the CPU (batch norm does its own, with float64 per-channel buffers on the device), then call
   these instead of the CPU loops. The only transfers to the host are the target check's verdict
   (so that a bad class index is an error naming the op, as on the CPU) and, when autograd asks for
   it, the loss's total weight. Without CUDA=1 they are stubs. */
#include "core/cuda.h"
#include "core/autograd.h"    /* lt_set_grad_enabled */
#include "core/elementwise.h" /* lt_contiguous, lt_convert, lt_copy_ */

#include <stdint.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/rnn.h"

static void *stream_of(int dev) { return (void *)lt_cuda_current_stream(dev); }

int lt_cuda_softmax(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t outer, int64_t n, int64_t inner,
                    bool log) {
  int dev = y->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_softmax((int)x->dtype, lt_data(x), lt_data(y), outer, n, inner, log, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  lt_bump_version(y);
  return LT_OK;
}

int lt_cuda_softmax_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *y, lt_tensor_t *gx,
                             int64_t outer, int64_t n, int64_t inner, bool log) {
  int dev = gx->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_softmax_backward((int)y->dtype, lt_data(g), lt_data(y), lt_data(gx), outer, n, inner, log,
                                      stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)y->dtype));
  lt_bump_version(gx);
  return LT_OK;
}

int lt_cuda_nll_check_targets(const char *op, const lt_tensor_t *target, int64_t C, bool has_ignore,
                              int64_t ignore_index) {
  int dev = target->device.index;
  int64_t one = 1;
  lt_tensor_t *bad = lt_empty(1, &one, LT_INT64, target->device);
  if (!bad) return LT_ERR;
  int rc = lt_cuda_use(dev);
  if (rc == LT_OK) {
    int e = lt_cuda_k_nll_check((int)target->dtype, lt_data(target), target->numel, C, has_ignore, ignore_index,
                                (int64_t *)lt_data(bad), stream_of(dev));
    rc = lt_cuda_after_launch(dev, e, op, (int)target->dtype);
  }
  int64_t pos = INT64_MAX, value = 0;
  if (rc == LT_OK) {
    /* ordered after the check on the thread's stream; waits for it */
    cudaError_t e = cudaMemcpyAsync(&pos, lt_data(bad), sizeof pos, cudaMemcpyDeviceToHost, lt_cuda_current_stream(dev));
    if (e == cudaSuccess) e = cudaStreamSynchronize(lt_cuda_current_stream(dev));
    rc = lt_cuda_report(e, "cudaMemcpyAsync(&pos, bad, 8, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
  }
  if (rc == LT_OK && pos != INT64_MAX) {
    size_t es = lt_elsize(target);
    int32_t v32 = 0;
    cudaError_t e = cudaMemcpy(target->dtype == LT_INT32 ? (void *)&v32 : (void *)&value,
                               (const char *)lt_data(target) + pos * (int64_t)es, es, cudaMemcpyDeviceToHost);
    rc = lt_cuda_report(e, "cudaMemcpy(&value, target + pos, es, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
    if (target->dtype == LT_INT32) value = v32;
    if (rc == LT_OK)
      rc = lt_error("%s: target %lld is out of bounds for %lld classes (targets are 1-based class indices, 1 to %lld)",
                    op, (long long)value, (long long)C, (long long)C);
  }
  lt_release(bad);
  return rc;
}

int lt_cuda_nll_loss(const char *op, const lt_tensor_t *logp, const lt_tensor_t *target, const lt_tensor_t *w,
                     int64_t N, int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, lt_tensor_t *out,
                     bool none, bool mean, double *total_weight) {
  int dev = out->device.index;
  int64_t two = 2;
  lt_tensor_t *acc = none ? NULL : lt_empty(1, &two, LT_FLOAT64, out->device);
  if (!none && !acc) return LT_ERR;
  int rc = lt_cuda_use(dev);
  if (rc == LT_OK) {
    int e = lt_cuda_k_nll_forward((int)logp->dtype, lt_data(logp), (int)target->dtype, lt_data(target),
                                  w ? (const double *)lt_data(w) : NULL, N, C, S, has_ignore, ignore_index,
                                  none ? lt_data(out) : NULL, mean, none ? NULL : lt_data(out),
                                  acc ? (double *)lt_data(acc) : NULL, stream_of(dev));
    rc = lt_cuda_after_launch(dev, e, op, (int)logp->dtype);
  }
  if (rc == LT_OK && total_weight) {
    *total_weight = 0;
    if (acc) { /* autograd keeps the total weight for the mean's gradient: one wait */
      double h[2] = {0, 0};
      cudaError_t e = cudaMemcpyAsync(h, lt_data(acc), sizeof h, cudaMemcpyDeviceToHost, lt_cuda_current_stream(dev));
      if (e == cudaSuccess) e = cudaStreamSynchronize(lt_cuda_current_stream(dev));
      rc = lt_cuda_report(e, "cudaMemcpyAsync(h, acc, 16, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
      *total_weight = h[1];
    }
  }
  lt_release(acc);
  if (rc == LT_OK) lt_bump_version(out);
  return rc;
}

int lt_cuda_nll_loss_backward(const char *op, lt_tensor_t *glogp, const lt_tensor_t *g, bool per_elem, double scale,
                              const lt_tensor_t *target, const lt_tensor_t *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index) {
  int dev = glogp->device.index;
  LT_TRY(lt_cuda_use(dev));
  int e = lt_cuda_k_nll_backward((int)glogp->dtype, lt_data(glogp), lt_data(g), per_elem, scale, (int)target->dtype,
                                 lt_data(target), w ? (const double *)lt_data(w) : NULL, N, C, S, has_ignore,
                                 ignore_index, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, e, op, (int)glogp->dtype));
  lt_bump_version(glogp);
  return LT_OK;
}

int lt_cuda_layer_norm(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t M, int64_t N, const lt_tensor_t *w,
                       const lt_tensor_t *b, double eps, lt_tensor_t *mean, lt_tensor_t *rstd) {
  int dev = y->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_layer_norm((int)x->dtype, lt_data(x), lt_data(y), M, N, w ? lt_data(w) : NULL,
                                b ? lt_data(b) : NULL, eps, lt_data(mean), lt_data(rstd), stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  lt_bump_version(y);
  lt_bump_version(mean);
  lt_bump_version(rstd);
  return LT_OK;
}

int lt_cuda_layer_norm_backward(const char *op, const lt_tensor_t *x, const lt_tensor_t *g, const lt_tensor_t *mean,
                                const lt_tensor_t *rstd, const lt_tensor_t *w, int64_t M, int64_t N, lt_tensor_t *gx,
                                lt_tensor_t *gw, lt_tensor_t *gb) {
  int dev = x->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_layer_norm_backward((int)x->dtype, lt_data(x), lt_data(g), lt_data(mean), lt_data(rstd),
                                         w ? lt_data(w) : NULL, M, N, gx ? lt_data(gx) : NULL,
                                         gw ? (double *)lt_data(gw) : NULL, gb ? (double *)lt_data(gb) : NULL,
                                         stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  if (gx) lt_bump_version(gx);
  if (gw) lt_bump_version(gw);
  if (gb) lt_bump_version(gb);
  return LT_OK;
}

int lt_cuda_pool2d(const char *op, int kind, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                   int64_t divisor, const lt_tensor_t *in, lt_tensor_t *out, lt_tensor_t *idx) {
  const lt_tensor_t *ts[3] = {in, out, idx};
  LT_TRY(lt_check_same_device(op, idx ? 3 : 2, ts));
  if (in->dtype != out->dtype || (in->dtype != LT_FLOAT32 && in->dtype != LT_FLOAT64) || !lt_is_contiguous(in) ||
      !lt_is_contiguous(out) || (idx && (idx->dtype != LT_INT64 || !lt_is_contiguous(idx))))
    return lt_error("%s: internal error: expected contiguous float32 or float64 operands (int64 indices)", op);
  int dev = out->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_pool2d(kind, in->dtype == LT_FLOAT64, g, planes, count_include_pad, divisor, lt_data(in),
                            lt_data(out), idx ? (int64_t *)lt_data(idx) : NULL, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)in->dtype));
  lt_bump_version(out);
  if (idx && kind == LT_CUDA_POOL_MAX) lt_bump_version(idx);
  return LT_OK;
}

/* ---- batch norm: per-channel work in float64 device buffers ---- */

/* t as a contiguous float64 tensor (t itself, retained, when it already is one); NULL for NULL
   without an error (check t before when it is required) */
static lt_tensor_t *as_f64(lt_tensor_t *t) {
  if (!t) return NULL;
  return t->dtype == LT_FLOAT64 ? lt_contiguous(t) : lt_convert(t, LT_FLOAT64, t->device);
}

/* the C doubles of st at element off, as a tensor of dtype dt */
static lt_tensor_t *st_part(lt_tensor_t *st, int64_t off, int64_t C, lt_dtype dt) {
  int64_t one = 1;
  lt_tensor_t *v = lt_view_geometry(st, 1, &C, &one, st->offset + off);
  if (!v || dt == LT_FLOAT64) return v;
  lt_tensor_t *c = lt_convert(v, dt, v->device);
  lt_release(v);
  return c;
}

lt_tensor_t *lt_cuda_batch_norm(const char *op, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                                lt_tensor_t *running_var, bool training, double momentum, double eps,
                                lt_dtype stats_dtype, lt_tensor_t **save_mean, lt_tensor_t **save_invstd) {
  int64_t N = x->sizes[0], C = x->sizes[1], S = 1;
  for (int d = 2; d < x->ndim; d++) S *= x->sizes[d];
  bool update = training && N * S > 1;
  lt_tensor_t *rm = update ? as_f64(running_mean) : NULL, *rv = update ? as_f64(running_var) : NULL;
  lt_tensor_t *em = training ? NULL : as_f64(running_mean), *ev = training ? NULL : as_f64(running_var);
  lt_tensor_t *xc = lt_contiguous(x), *wd = as_f64(w), *bd = as_f64(b);
  int64_t n5 = 5 * C;
  lt_tensor_t *st = lt_empty(1, &n5, LT_FLOAT64, x->device);
  lt_tensor_t *y = lt_empty(x->ndim, x->sizes, x->dtype, x->device);
  int dev = x->device.index;
  bool ok = xc && st && y && (!w || wd) && (!b || bd) && (!update || !running_mean || rm) &&
            (!update || !running_var || rv) && (training || (em && ev)) && lt_cuda_use(dev) == LT_OK;
  if (ok) {
    int e = lt_cuda_k_batch_norm((int)x->dtype, lt_data(xc), lt_data(y), N, C, S, training,
                                 em ? lt_data(em) : NULL, ev ? lt_data(ev) : NULL, rm ? lt_data(rm) : NULL,
                                 rv ? lt_data(rv) : NULL, momentum, wd ? lt_data(wd) : NULL, bd ? lt_data(bd) : NULL,
                                 eps, lt_data(st), stream_of(dev));
    ok = lt_cuda_after_launch(dev, e, op, (int)x->dtype) == LT_OK;
  }
  /* running statistics updated in a float64 copy go back into the caller's tensors */
  lt_tensor_t *run[2] = {running_mean, running_var}, *upd[2] = {rm, rv};
  for (int k = 0; k < 2 && ok; k++) {
    if (!upd[k]) continue;
    if (upd[k]->storage == run[k]->storage) {
      lt_bump_version(run[k]);
    } else {
      bool prev = lt_set_grad_enabled(false);
      ok = lt_copy_(run[k], upd[k]) == LT_OK;
      lt_set_grad_enabled(prev);
    }
  }
  if (ok && save_mean) {
    *save_mean = st_part(st, 0, C, stats_dtype);
    *save_invstd = *save_mean ? st_part(st, 2 * C, C, stats_dtype) : NULL;
    if (!*save_invstd) {
      lt_release(*save_mean);
      *save_mean = NULL;
      ok = false;
    }
  }
  if (ok) lt_bump_version(y);
  lt_release(rm), lt_release(rv), lt_release(em), lt_release(ev), lt_release(xc), lt_release(wd), lt_release(bd);
  lt_release(st);
  if (!ok) {
    lt_release(y);
    return NULL;
  }
  return y;
}

int lt_cuda_batch_norm_backward(const char *op, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *mean,
                                lt_tensor_t *invstd, bool training, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx,
                                lt_tensor_t **gw, lt_tensor_t **gb) {
  int64_t N = x->sizes[0], C = x->sizes[1], S = 1;
  for (int d = 2; d < x->ndim; d++) S *= x->sizes[d];
  lt_tensor_t *gc = g->dtype == x->dtype ? lt_contiguous(g) : lt_convert(g, x->dtype, g->device);
  lt_tensor_t *xc = lt_contiguous(x), *md = as_f64(mean), *isd = as_f64(invstd), *wd = as_f64(w);
  int64_t two = 2 * C;
  lt_tensor_t *red = lt_empty(1, &two, LT_FLOAT64, x->device);
  lt_tensor_t *gxt = gx ? lt_empty(x->ndim, x->sizes, x->dtype, x->device) : NULL;
  lt_tensor_t *gwt = gw ? lt_empty(1, &C, LT_FLOAT64, x->device) : NULL;
  lt_tensor_t *gbt = gb ? lt_empty(1, &C, LT_FLOAT64, x->device) : NULL;
  int dev = x->device.index;
  bool ok = gc && xc && md && isd && (!w || wd) && red && (!gx || gxt) && (!gw || gwt) && (!gb || gbt) &&
            lt_cuda_use(dev) == LT_OK;
  if (ok) {
    int e = lt_cuda_k_batch_norm_backward((int)x->dtype, lt_data(xc), lt_data(gc), gxt ? lt_data(gxt) : NULL, N, C, S,
                                          lt_data(md), lt_data(isd), wd ? lt_data(wd) : NULL, training, lt_data(red),
                                          gwt ? lt_data(gwt) : NULL, gbt ? lt_data(gbt) : NULL, stream_of(dev));
    ok = lt_cuda_after_launch(dev, e, op, (int)x->dtype) == LT_OK;
  }
  /* float64 gradients of the weight and bias as the dtypes asked for */
  lt_tensor_t **outs[2] = {&gwt, &gbt};
  lt_dtype dts[2] = {gw_dt, gb_dt};
  for (int k = 0; k < 2 && ok; k++) {
    if (!*outs[k] || dts[k] == LT_FLOAT64) continue;
    lt_tensor_t *c = lt_convert(*outs[k], dts[k], x->device);
    lt_release(*outs[k]);
    *outs[k] = c;
    ok = c != NULL;
  }
  lt_release(gc), lt_release(xc), lt_release(md), lt_release(isd), lt_release(wd), lt_release(red);
  if (!ok) {
    lt_release(gxt), lt_release(gwt), lt_release(gbt);
    return LT_ERR;
  }
  if (gx) *gx = gxt;
  if (gw) *gw = gwt;
  if (gb) *gb = gbt;
  return LT_OK;
}

int lt_cuda_lstm_cell(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, lt_tensor_t *h, lt_tensor_t *c2,
                      int64_t N, int64_t H) {
  int dev = h->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_lstm_cell((int)g->dtype, lt_data(g), lt_data(c), lt_data(h), lt_data(c2), N, H, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)g->dtype));
  lt_bump_version(h);
  lt_bump_version(c2);
  return LT_OK;
}

int lt_cuda_lstm_cell_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, const lt_tensor_t *dh,
                               const lt_tensor_t *dc2, lt_tensor_t *dg, lt_tensor_t *dc, int64_t N, int64_t H) {
  int dev = dg->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_lstm_cell_backward((int)g->dtype, lt_data(g), lt_data(c), dh ? lt_data(dh) : NULL,
                                        dc2 ? lt_data(dc2) : NULL, lt_data(dg), lt_data(dc), N, H, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)g->dtype));
  lt_bump_version(dg);
  lt_bump_version(dc);
  return LT_OK;
}

#else /* ---- a build without CUDA ---- */

static int unavailable(const char *op) {
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}

int lt_cuda_softmax(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t outer, int64_t n, int64_t inner,
                    bool log) {
  (void)x; (void)y; (void)outer; (void)n; (void)inner; (void)log;
  return unavailable(op);
}

int lt_cuda_softmax_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *y, lt_tensor_t *gx,
                             int64_t outer, int64_t n, int64_t inner, bool log) {
  (void)g; (void)y; (void)gx; (void)outer; (void)n; (void)inner; (void)log;
  return unavailable(op);
}

int lt_cuda_nll_check_targets(const char *op, const lt_tensor_t *target, int64_t C, bool has_ignore,
                              int64_t ignore_index) {
  (void)target; (void)C; (void)has_ignore; (void)ignore_index;
  return unavailable(op);
}

int lt_cuda_nll_loss(const char *op, const lt_tensor_t *logp, const lt_tensor_t *target, const lt_tensor_t *w,
                     int64_t N, int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, lt_tensor_t *out,
                     bool none, bool mean, double *total_weight) {
  (void)logp; (void)target; (void)w; (void)N; (void)C; (void)S; (void)has_ignore; (void)ignore_index; (void)out;
  (void)none; (void)mean; (void)total_weight;
  return unavailable(op);
}

int lt_cuda_nll_loss_backward(const char *op, lt_tensor_t *glogp, const lt_tensor_t *g, bool per_elem, double scale,
                              const lt_tensor_t *target, const lt_tensor_t *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index) {
  (void)glogp; (void)g; (void)per_elem; (void)scale; (void)target; (void)w; (void)N; (void)C; (void)S;
  (void)has_ignore; (void)ignore_index;
  return unavailable(op);
}

int lt_cuda_layer_norm(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t M, int64_t N, const lt_tensor_t *w,
                       const lt_tensor_t *b, double eps, lt_tensor_t *mean, lt_tensor_t *rstd) {
  (void)x; (void)y; (void)M; (void)N; (void)w; (void)b; (void)eps; (void)mean; (void)rstd;
  return unavailable(op);
}

int lt_cuda_layer_norm_backward(const char *op, const lt_tensor_t *x, const lt_tensor_t *g, const lt_tensor_t *mean,
                                const lt_tensor_t *rstd, const lt_tensor_t *w, int64_t M, int64_t N, lt_tensor_t *gx,
                                lt_tensor_t *gw, lt_tensor_t *gb) {
  (void)x; (void)g; (void)mean; (void)rstd; (void)w; (void)M; (void)N; (void)gx; (void)gw; (void)gb;
  return unavailable(op);
}

int lt_cuda_lstm_cell(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, lt_tensor_t *h, lt_tensor_t *c2,
                      int64_t N, int64_t H) {
  (void)g; (void)c; (void)h; (void)c2; (void)N; (void)H;
  return unavailable(op);
}

int lt_cuda_lstm_cell_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, const lt_tensor_t *dh,
                               const lt_tensor_t *dc2, lt_tensor_t *dg, lt_tensor_t *dc, int64_t N, int64_t H) {
  (void)g; (void)c; (void)dh; (void)dc2; (void)dg; (void)dc; (void)N; (void)H;
  return unavailable(op);
}

int lt_cuda_pool2d(const char *op, int kind, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                   int64_t divisor, const lt_tensor_t *in, lt_tensor_t *out, lt_tensor_t *idx) {
  (void)kind; (void)g; (void)planes; (void)count_include_pad; (void)divisor; (void)in; (void)out; (void)idx;
  return unavailable(op);
}

lt_tensor_t *lt_cuda_batch_norm(const char *op, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                                lt_tensor_t *running_var, bool training, double momentum, double eps,
                                lt_dtype stats_dtype, lt_tensor_t **save_mean, lt_tensor_t **save_invstd) {
  (void)x; (void)w; (void)b; (void)running_mean; (void)running_var; (void)training; (void)momentum; (void)eps;
  (void)stats_dtype; (void)save_mean; (void)save_invstd;
  unavailable(op);
  return NULL;
}

int lt_cuda_batch_norm_backward(const char *op, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *mean,
                                lt_tensor_t *invstd, bool training, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx,
                                lt_tensor_t **gw, lt_tensor_t **gb) {
  (void)g; (void)x; (void)w; (void)mean; (void)invstd; (void)training; (void)gw_dt; (void)gb_dt; (void)gx; (void)gw;
  (void)gb;
  return unavailable(op);
}

#endif
