/* Elementwise ops on CUDA tensors: the core's checks, type promotion and output allocation have
   run (core/elementwise.c); this brings the operands to the kernels' form (a device pointer with its
   geometry over the output's elements -- contiguous, strided or broadcast --, or a scalar passed by
   value) and launches the kernel of kernels/cuda/. Without CUDA=1 it is a stub that refuses. */
#include "core/cuda.h"
#include "core/elementwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/elementwise.h"

_Static_assert(LT_FLOAT32 == 0 && LT_FLOAT64 == 1 && LT_FLOAT16 == 2 && LT_BFLOAT16 == 3 && LT_INT64 == 4 &&
                   LT_INT32 == 5 && LT_INT16 == 6 && LT_INT8 == 7 && LT_UINT8 == 8 && LT_BOOL == 9,
               "the dtype numbers kernels/cuda/elementwise.cu uses");

static bool same_shape(const lt_tensor_t *a, const lt_tensor_t *b) {
  return a->ndim == b->ndim && memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* in's geometry over out's elements (kernels/cuda/ew_geo.h): false when the kernels cannot read it
   in place */
static bool geometry(const lt_tensor_t *out, const lt_tensor_t *in, lt_cuda_ew_geo_t *g) {
  return lt_cuda_ew_geometry(out->ndim, out->sizes, out->numel, in->ndim, in->sizes, in->strides, g);
}

/* Operand k as a device pointer (*ptr) read through *geo, or a scalar (*ptr NULL, *bits): an input
   the kernels cannot read in place is first copied to a contiguous tensor of out's shape (*tmp). */
static int prepare_input(const lt_tensor_t *out, const lt_tensor_t *in, void *scalar, const void **ptr,
                         uint64_t *bits, lt_tensor_t **tmp, lt_cuda_ew_geo_t *geo) {
  *ptr = NULL;
  *bits = 0;
  *tmp = NULL;
  memset(geo, 0, sizeof *geo);
  if (!in) {
    memcpy(bits, scalar, 8);
    return LT_OK;
  }
  if (in->device.type != LT_CUDA) { /* a 0-dim CPU tensor joins as a number */
    memcpy(bits, lt_data(in), lt_elsize(in));
    return LT_OK;
  }
  if (same_shape(in, out) && lt_is_contiguous(in)) {
    *ptr = lt_data(in);
    return LT_OK;
  }
  if (geometry(out, in, geo)) {
    *ptr = lt_data(in);
    return LT_OK;
  }
  memset(geo, 0, sizeof *geo);
  *tmp = lt_empty(out->ndim, out->sizes, in->dtype, out->device);
  if (!*tmp) return LT_ERR;
  LT_TRY(lt_copy_(*tmp, in));
  *ptr = lt_data(*tmp);
  return LT_OK;
}

/* The launch on a contiguous output. */
static int launch(const char *name, const lt_ew_desc_t *d, lt_tensor_t *out, int nin,
                  const lt_tensor_t *const *ins, void *const *scalar) {
  int dev = out->device.index;
  const void *p[3] = {NULL, NULL, NULL};
  uint64_t bits[3] = {0, 0, 0};
  lt_tensor_t *tmp[3] = {NULL, NULL, NULL};
  lt_cuda_ew_geo_t geo[3];
  int rc = LT_OK;
  bool strided = false;
  for (int k = 0; k < nin && rc == LT_OK; k++) {
    rc = prepare_input(out, ins[k], scalar ? scalar[k] : NULL, &p[k], &bits[k], &tmp[k], &geo[k]);
    strided = strided || geo[k].nd > 0;
  }
  const lt_cuda_ew_geo_t *g = strided ? geo : NULL;
  if (rc == LT_OK) rc = lt_cuda_use(dev);
  int e = 0;
  int64_t n = out->numel;
  void *st = lt_cuda_current_stream(dev);
  void *o = lt_data(out);
  if (rc == LT_OK) {
    switch (d->kind) {
      case LT_EW_UNARY: e = lt_cuda_k_unary(st, d->op, d->dtype, o, p[0], g, n); break;
      case LT_EW_BINARY:
        e = lt_cuda_k_binary(st, d->op, d->dtype, o, p[0], p[1], bits[0], bits[1], d->alpha, d->ialpha, g, n);
        break;
      case LT_EW_COMPARE: e = lt_cuda_k_compare(st, d->op, d->dtype, o, p[0], p[1], bits[0], bits[1], g, n); break;
      case LT_EW_UNARY_GRAD: e = lt_cuda_k_unary_grad(st, d->op, d->dtype, o, p[0], p[1], p[2], g, n); break;
      case LT_EW_WHERE:
        e = lt_cuda_k_where(st, (int)lt_dtype_size(d->dtype), o, p[0], p[1], p[2], bits[1], bits[2], g, n);
        break;
      case LT_EW_FILL: e = lt_cuda_k_fill(st, (int)lt_dtype_size(d->dtype), o, bits[0], n); break;
    }
    rc = lt_cuda_after_launch(dev, e, name, d->dtype);
  }
  for (int k = 0; k < 3; k++) lt_release(tmp[k]);
  return rc;
}

int lt_cuda_elementwise(const char *name, const lt_ew_desc_t *d, lt_tensor_t *out, int nin,
                        const lt_tensor_t *const *ins, void *const *scalar) {
  if (out->numel == 0) return LT_OK;
  if (lt_is_contiguous(out)) return launch(name, d, out, nin, ins, scalar);
  /* a strided output (an in-place op on a view): computed contiguous, then copied into place */
  lt_tensor_t *tmp = lt_empty(out->ndim, out->sizes, out->dtype, out->device);
  if (!tmp) return LT_ERR;
  int rc = launch(name, d, tmp, nin, ins, scalar);
  if (rc == LT_OK) rc = lt_copy_(out, tmp);
  lt_release(tmp);
  return rc;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_elementwise(const char *name, const lt_ew_desc_t *d, lt_tensor_t *out, int nin,
                        const lt_tensor_t *const *ins, void *const *scalar) {
  (void)d; (void)out; (void)nin; (void)ins; (void)scalar;
  return lt_error("%s: CUDA is not available: %s", name, lt_cuda_unavailable_reason());
}

#endif
