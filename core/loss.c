/* The negative log-likelihood loss: checks in PyTorch's order and words (with 1-based class numbers),
   the output, and the CPU loops (kernels/cpu/loss.c) over logp seen as [N, C, S]. */
#include "core/autocast.h"
#include "core/loss.h"

#include "core/autograd.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "kernels/cpu/loss.h"
#include "kernels/half.h"

#include <string.h>

typedef struct {
  int64_t N, C, S;
} nll_geo_t;

/* checks shared by the forward and the backward; logp given by its shape and dtype */
static int check_nll(const char *op, int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev,
                     const lt_tensor_t *target, const lt_tensor_t *weight, lt_reduction reduction, nll_geo_t *g) {
  char a[128], b[128];
  const lt_backend_i *be = lt_backend((lt_devtype)dev.type);
  if (dev.type != LT_CUDA && (!be || !be->host_accessible)) /* CUDA: core/cuda_nn.c */
    return lt_error("%s: not supported on device %s by this build", op, lt_device_format(dev, a, sizeof a));
  if (reduction != LT_REDUCTION_NONE && reduction != LT_REDUCTION_MEAN && reduction != LT_REDUCTION_SUM)
    return lt_error("%s: invalid reduction code %d (0 none, 1 mean, 2 sum)", op, (int)reduction);
  if (!lt_dtype_is_floating(dt))
    return lt_error("%s: expected a floating point input (float32, float64, float16 or bfloat16), got %s", op,
                    lt_dtype_name(dt));
  if (ndim < 1) return lt_error("%s: expected an input of 1 or more dimensions, got a 0-dim input", op);
  if (target->dtype != LT_INT64 && target->dtype != LT_INT32)
    return lt_error("%s: expected a target of class indices of dtype int64 or int32, got %s", op,
                    lt_dtype_name(target->dtype));
  g->N = 1;
  g->S = 1;
  if (ndim == 1) {
    g->C = sizes[0];
    if (target->ndim > 1 || target->numel != 1)
      return lt_error("%s: expected a 0-dim target (one class index) for an input of shape %s, got a target of "
                      "shape %s", op, lt_shape_str(ndim, sizes, a, sizeof a),
                      lt_shape_str(target->ndim, target->sizes, b, sizeof b));
  } else {
    g->N = sizes[0];
    g->C = sizes[1];
    for (int d = 2; d < ndim; d++) g->S *= sizes[d];
    if (target->ndim >= 1 && target->sizes[0] != sizes[0])
      return lt_error("%s: Expected input batch_size (%lld) to match target batch_size (%lld).", op,
                      (long long)sizes[0], (long long)target->sizes[0]);
    int64_t want[LT_MAX_DIM];
    want[0] = sizes[0];
    for (int d = 2; d < ndim; d++) want[d - 1] = sizes[d];
    if (target->ndim != ndim - 1 || memcmp(target->sizes, want, sizeof(int64_t) * (size_t)(ndim - 1)) != 0)
      return lt_error("%s: expected a target of shape %s (the input's shape without the class dimension), got %s",
                      op, lt_shape_str(ndim - 1, want, a, sizeof a),
                      lt_shape_str(target->ndim, target->sizes, b, sizeof b));
  }
  if (weight) {
    if (weight->numel != g->C || weight->ndim != 1)
      return lt_error("%s: weight tensor should be defined either for all %lld classes or no classes but got weight "
                      "tensor of shape: %s", op, (long long)g->C, lt_shape_str(weight->ndim, weight->sizes, a, sizeof a));
    if (!lt_dtype_is_floating(weight->dtype))
      return lt_error("%s: expected a weight of a floating point dtype, got %s", op, lt_dtype_name(weight->dtype));
  }
  return LT_OK;
}

/* the contiguous target, after checking that every class is in 1..C or ignored */
static lt_tensor_t *checked_target(const char *op, lt_tensor_t *target, const nll_geo_t *g, bool has_ignore,
                                   int64_t ignore_index) {
  lt_tensor_t *tc = lt_contiguous(target);
  if (!tc) return NULL;
  if (tc->device.type == LT_CUDA) {
    if (lt_cuda_nll_check_targets(op, tc, g->C, has_ignore, ignore_index) != LT_OK) {
      lt_release(tc);
      return NULL;
    }
    return tc;
  }
  int64_t bad = lt_cpu_nll_check_targets(tc->dtype, lt_data(tc), tc->numel, g->C, has_ignore, ignore_index);
  if (bad >= 0) {
    lt_error("%s: target %lld is out of bounds for %lld classes (targets are 1-based class indices, 1 to %lld)", op,
             (long long)lt_get_int(tc, bad), (long long)g->C, (long long)g->C);
    lt_release(tc);
    return NULL;
  }
  return tc;
}

static lt_tensor_t *weight_f64(lt_tensor_t *w) {
  return w->dtype == LT_FLOAT64 ? lt_contiguous(w) : lt_convert(w, LT_FLOAT64, w->device);
}

static void set_scalar(lt_tensor_t *t, double v) {
  void *p = lt_data(t);
  switch (t->dtype) {
  case LT_FLOAT64: *(double *)p = v; break;
  case LT_FLOAT16: *(lt_half *)p = lt_float_to_half((float)v); break;
  case LT_BFLOAT16: *(lt_bfloat16 *)p = lt_float_to_bf16((float)v); break;
  default: *(float *)p = (float)v; break;
  }
}

lt_tensor_t *lt_nll_loss(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                         bool has_ignore, int64_t ignore_index, lt_reduction reduction) {
  LT_AUTOCAST2(LT_AC_FP32, logp, weight, lt_nll_loss(op, logp, target, weight, has_ignore, ignore_index, reduction))
  if (lt_ag_needed(logp, NULL)) return lt_ag_nll_loss(op, logp, target, weight, has_ignore, ignore_index, reduction);
  return lt_nll_loss_total(op, logp, target, weight, has_ignore, ignore_index, reduction, NULL);
}

lt_tensor_t *lt_nll_loss_total(const char *op, lt_tensor_t *logp, lt_tensor_t *target, lt_tensor_t *weight,
                               bool has_ignore, int64_t ignore_index, lt_reduction reduction, double *total_weight) {
  nll_geo_t g;
  if (check_nll(op, logp->ndim, logp->sizes, logp->dtype, logp->device, target, weight, reduction, &g)) return NULL;
  const lt_tensor_t *all[3] = {logp, target, weight};
  if (lt_check_same_device(op, 3, all)) return NULL;
  lt_tensor_t *tc = checked_target(op, target, &g, has_ignore, ignore_index);
  lt_tensor_t *lc = tc ? lt_contiguous(logp) : NULL;
  lt_tensor_t *wd = lc && weight ? weight_f64(weight) : NULL;
  lt_tensor_t *out = NULL;
  if (!lc || (weight && !wd)) goto done;
  bool none = reduction == LT_REDUCTION_NONE;
  out = none ? lt_empty(target->ndim, target->sizes, logp->dtype, logp->device)
             : lt_empty(0, NULL, logp->dtype, logp->device);
  if (!out) goto done;
  if (logp->device.type == LT_CUDA) {
    if (lt_cuda_nll_loss(op, lc, tc, wd, g.N, g.C, g.S, has_ignore, ignore_index, out, none,
                         reduction == LT_REDUCTION_MEAN, total_weight) != LT_OK) {
      lt_release(out);
      out = NULL;
    }
    goto done;
  }
  double sum = 0, wsum = 0;
  lt_cpu_nll_loss(logp->dtype, lt_data(lc), tc->dtype, lt_data(tc), wd ? lt_data(wd) : NULL, g.N, g.C, g.S,
                  has_ignore, ignore_index, none ? lt_data(out) : NULL, &sum, &wsum);
  if (reduction == LT_REDUCTION_MEAN) set_scalar(out, sum / wsum); /* 0 / 0: NaN when all are ignored */
  else if (reduction == LT_REDUCTION_SUM) set_scalar(out, sum);
  if (total_weight) *total_weight = wsum;
done:
  lt_release(tc);
  lt_release(lc);
  lt_release(wd);
  return out;
}

lt_tensor_t *lt_nll_loss_backward(const char *op, lt_tensor_t *g, int ndim, const int64_t *sizes, lt_dtype dt,
                                  lt_tensor_t *target, lt_tensor_t *weight, bool has_ignore, int64_t ignore_index,
                                  lt_reduction reduction, double total_weight) {
  nll_geo_t geo;
  if (check_nll(op, ndim, sizes, dt, g->device, target, weight, reduction, &geo)) return NULL;
  const lt_tensor_t *all[3] = {g, target, weight};
  if (lt_check_same_device(op, 3, all)) return NULL;
  bool none = reduction == LT_REDUCTION_NONE;
  if (none ? (g->ndim != target->ndim || memcmp(g->sizes, target->sizes, sizeof(int64_t) * (size_t)g->ndim) != 0)
           : g->numel != 1) {
    char a[128];
    lt_error("%s: the gradient of the loss has shape %s, which is not the loss's shape", op,
             lt_shape_str(g->ndim, g->sizes, a, sizeof a));
    return NULL;
  }
  lt_tensor_t *tc = checked_target(op, target, &geo, has_ignore, ignore_index);
  lt_tensor_t *wd = tc && weight ? weight_f64(weight) : NULL;
  lt_tensor_t *gc = NULL, *gl = NULL;
  if (!tc || (weight && !wd)) goto done;
  double scale = 1;
  if (none) {
    gc = g->dtype == dt ? lt_contiguous(g) : lt_convert(g, dt, g->device);
    if (!gc) goto done;
  } else if (g->device.type == LT_CUDA) { /* the kernel reads g[0] on the device */
    if (reduction == LT_REDUCTION_MEAN) scale /= total_weight;
    gc = g->dtype == dt ? lt_contiguous(g) : lt_convert(g, dt, g->device);
    if (!gc) goto done;
  } else {
    scale = lt_get_double(g, 0);
    if (reduction == LT_REDUCTION_MEAN) scale /= total_weight;
  }
  gl = lt_empty(ndim, sizes, dt, g->device);
  if (!gl) goto done;
  if (g->device.type == LT_CUDA) {
    if (lt_cuda_nll_loss_backward(op, gl, gc, none, scale, tc, wd, geo.N, geo.C, geo.S, has_ignore, ignore_index) !=
        LT_OK) {
      lt_release(gl);
      gl = NULL;
    }
    goto done;
  }
  lt_cpu_nll_loss_backward(dt, lt_data(gl), gc ? lt_data(gc) : NULL, scale, tc->dtype, lt_data(tc),
                           wd ? lt_data(wd) : NULL, geo.N, geo.C, geo.S, has_ignore, ignore_index);
done:
  lt_release(tc);
  lt_release(wd);
  lt_release(gc);
  return gl;
}
