/* Softmax and log-softmax: checks, the output, and the CPU loops (kernels/cpu/softmax.c) over the
   input seen as [outer, n, inner] around the dimension. */
#include "core/autocast.h"
#include "core/softmax.h"

#include "core/autograd.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "kernels/cpu/softmax.h"

#include <string.h>

static int check_input(const char *op, const lt_tensor_t *x) {
  const lt_backend_i *b = lt_backend((lt_devtype)x->device.type);
  if (x->device.type != LT_CUDA && (!b || !b->host_accessible)) { /* CUDA: core/cuda_nn.c */
    char dev[32];
    return lt_error("%s: not supported on device %s by this build", op, lt_device_format(x->device, dev, sizeof dev));
  }
  if (!lt_dtype_is_floating(x->dtype))
    return lt_error("%s: expected a floating point input (float32, float64, float16 or bfloat16), got %s", op,
                    lt_dtype_name(x->dtype));
  return LT_OK;
}

static void geometry(const lt_tensor_t *x, int d, int64_t *outer, int64_t *n, int64_t *inner) {
  *outer = *inner = *n = 1;
  if (x->ndim == 0) return;
  for (int k = 0; k < d; k++) *outer *= x->sizes[k];
  *n = x->sizes[d];
  for (int k = d + 1; k < x->ndim; k++) *inner *= x->sizes[k];
}

lt_tensor_t *lt_softmax(lt_tensor_t *x, int64_t dim, bool log) {
  LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_softmax(x, dim, log))
  if (lt_ag_needed(x, NULL)) return lt_ag_softmax(x, dim, log);
  const char *op = log ? "log_softmax" : "softmax";
  int d;
  if (check_input(op, x) || lt_wrap_dim(op, dim, x->ndim, &d)) return NULL;
  lt_tensor_t *xc = lt_contiguous(x);
  lt_tensor_t *y = xc ? lt_empty(x->ndim, x->sizes, x->dtype, x->device) : NULL;
  if (y) {
    int64_t outer, n, inner;
    geometry(x, d, &outer, &n, &inner);
    if (x->device.type == LT_CUDA) {
      if (lt_cuda_softmax(op, xc, y, outer, n, inner, log) != LT_OK) {
        lt_release(y);
        y = NULL;
      }
    } else {
      lt_cpu_softmax(x->dtype, lt_data(xc), lt_data(y), outer, n, inner, log);
    }
  }
  lt_release(xc);
  return y;
}

/* t as a contiguous tensor of dtype dt (t itself, retained, when it already is one) */
static lt_tensor_t *contiguous_as(lt_tensor_t *t, lt_dtype dt) {
  return t->dtype == dt ? lt_contiguous(t) : lt_convert(t, dt, t->device);
}

lt_tensor_t *lt_softmax_backward(lt_tensor_t *g, lt_tensor_t *y, int64_t dim, bool log) {
  const char *op = log ? "log_softmax_backward" : "softmax_backward";
  int d;
  if (check_input(op, y) || lt_wrap_dim(op, dim, y->ndim, &d)) return NULL;
  const lt_tensor_t *both[2] = {g, y};
  if (lt_check_same_device(op, 2, both)) return NULL;
  if (g->ndim != y->ndim || memcmp(g->sizes, y->sizes, sizeof(int64_t) * (size_t)y->ndim) != 0) {
    char a[128], b[128];
    lt_error("%s: the gradient's shape %s differs from the output's %s", op, lt_shape_str(g->ndim, g->sizes, a, sizeof a),
             lt_shape_str(y->ndim, y->sizes, b, sizeof b));
    return NULL;
  }
  lt_tensor_t *gc = contiguous_as(g, y->dtype), *yc = gc ? lt_contiguous(y) : NULL;
  lt_tensor_t *gx = yc ? lt_empty(y->ndim, y->sizes, y->dtype, y->device) : NULL;
  if (gx) {
    int64_t outer, n, inner;
    geometry(y, d, &outer, &n, &inner);
    if (y->device.type == LT_CUDA) {
      if (lt_cuda_softmax_backward(op, gc, yc, gx, outer, n, inner, log) != LT_OK) {
        lt_release(gx);
        gx = NULL;
      }
    } else {
      lt_cpu_softmax_backward(y->dtype, lt_data(gc), lt_data(yc), lt_data(gx), outer, n, inner, log);
    }
  }
  lt_release(gc);
  lt_release(yc);
  return gx;
}
