/* Matrix products: shape and dtype checks, batch broadcasting, then the device's gemm. */
#include "core/linalg.h"
#include "core/autocast.h"
#include "core/grad.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "core/iter.h"
#include "core/shape.h"
#include "kernels/cpu/matmul.h"

#include <stdio.h>
#include <string.h>

static int check_pair(const char *op, const lt_tensor_t *a, const lt_tensor_t *b) {
  const lt_tensor_t *ts[2] = {a, b};
  LT_TRY(lt_check_same_device(op, 2, ts));
  if (a->dtype != b->dtype)
    return lt_error("%s: expected both operands to have the same dtype, but got %s and %s", op,
                    lt_dtype_name(a->dtype), lt_dtype_name(b->dtype));
  if (a->dtype == LT_BOOL) return lt_error("%s: not supported for bool tensors", op);
  return LT_OK;
}

/* c is n values along a row with a unit stride (a bias: shape (n) or (1, n)), added to every row */
static bool is_bias_row(const lt_tensor_t *c, int64_t n) {
  if (c->ndim == 1) return c->sizes[0] == n && (n == 1 || c->strides[0] == 1);
  return c->ndim == 2 && c->sizes[0] == 1 && c->sizes[1] == n && (n == 1 || c->strides[1] == 1);
}

/* the CPU product's error, named for op, and out released */
static lt_tensor_t *gemm_failed(const char *op, lt_tensor_t *out) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", lt_last_error());
  lt_error("%s: %s", op, strncmp(msg, "matmul: ", 8) == 0 ? msg + 8 : msg);
  lt_release(out);
  return NULL;
}

/* out[batch, m, n] (new, contiguous) = a[batch?, m, k] @ b[batch?, k, n]; batch strides given */
static lt_tensor_t *gemm(const char *op, int nd, const int64_t *out_sizes, int64_t batch, int64_t m,
                         int64_t n, int64_t k, const lt_tensor_t *a, int64_t sab, int64_t sar,
                         int64_t sac, const lt_tensor_t *b, int64_t sbb, int64_t sbr, int64_t sbc,
                         const lt_tensor_t *c, double beta, double alpha) {
  bool cuda = a->device.type == LT_CUDA;
  if (!cuda && lt_check_host(op, a) != LT_OK) return NULL;
  lt_tensor_t *out = lt_empty(nd, out_sizes, a->dtype, a->device);
  if (!out) return NULL;
  if (c && beta == 1 && !cuda && batch == 1 && is_bias_row(c, n)) { /* a Linear layer's forward */
    int rc = lt_cpu_gemm_bias(a->dtype, m, n, k, alpha, lt_data(a), sar, sac, lt_data(b), sbr, sbc,
                              lt_data(c), lt_data(out));
    if (rc == LT_OK) return out;
    if (rc != 1) return gemm_failed(op, out);
  }
  if (c && beta != 0) {
    if (lt_copy_(out, c) != LT_OK) { lt_release(out); return NULL; }
  } else beta = 0;
  if (cuda) {
    if (lt_cuda_gemm(op, batch, m, n, k, alpha, a, sab, sar, sac, b, sbb, sbr, sbc, beta, out) != LT_OK) {
      lt_release(out);
      return NULL;
    }
    return out;
  }
  if (lt_cpu_gemm(a->dtype, batch, m, n, k, alpha, lt_data(a), sab, sar, sac, lt_data(b), sbb, sbr, sbc,
                  beta, lt_data(out), m * n, n, 1) != LT_OK)
    return gemm_failed(op, out);
  return out;
}

static lt_tensor_t *mm_impl(const char *op, lt_tensor_t *a, lt_tensor_t *b, lt_tensor_t *c, double beta, double alpha) {
  if (check_pair(op, a, b) != LT_OK) return NULL;
  if (a->ndim != 2 || b->ndim != 2) {
    lt_error("%s: expected 2-D matrices, got %d-D and %d-D", op, a->ndim, b->ndim);
    return NULL;
  }
  if (a->sizes[1] != b->sizes[0]) {
    lt_error("%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
             (long long)a->sizes[0], (long long)a->sizes[1], (long long)b->sizes[0], (long long)b->sizes[1]);
    return NULL;
  }
  int64_t sizes[2] = {a->sizes[0], b->sizes[1]};
  if (c) {
    const lt_tensor_t *ts[2] = {a, c};
    if (lt_check_same_device(op, 2, ts) != LT_OK) return NULL;
    if (c->dtype != a->dtype) {
      lt_error("%s: expected self and the matrices to have the same dtype, but got %s and %s", op,
               lt_dtype_name(c->dtype), lt_dtype_name(a->dtype));
      return NULL;
    }
    int nd;
    int64_t sh[LT_MAX_DIM];
    if (lt_broadcast_shapes(op, c->ndim, c->sizes, 2, sizes, &nd, sh) != LT_OK) return NULL;
    if (nd != 2 || sh[0] != sizes[0] || sh[1] != sizes[1]) {
      char x[128], y[128];
      lt_error("%s: self of shape %s cannot be broadcast to the product's shape %s", op,
               lt_shape_str(c->ndim, c->sizes, x, sizeof x), lt_shape_str(2, sizes, y, sizeof y));
      return NULL;
    }
  }
  return gemm(op, 2, sizes, 1, a->sizes[0], b->sizes[1], a->sizes[1], a, 0, a->strides[0], a->strides[1], b,
              0, b->strides[0], b->strides[1], c, beta, alpha);
}

lt_tensor_t *lt_mm(lt_tensor_t *a, lt_tensor_t *b) {
  LT_AUTOCAST2(LT_AC_LOWER, a, b, lt_mm(a, b))
  LT_AG_LINALG("MmBackward0", (lt_tensor_t *)NULL, a, b, 0, 1, lt_mm(a, b))
  return mm_impl("mm", a, b, NULL, 0, 1);
}

lt_tensor_t *lt_addmm(lt_tensor_t *c, lt_tensor_t *a, lt_tensor_t *b, double beta, double alpha) {
  LT_AUTOCAST3(LT_AC_LOWER, c, a, b, lt_addmm(c, a, b, beta, alpha))
  LT_AG_LINALG("AddmmBackward0", c, a, b, beta, alpha, lt_addmm(c, a, b, beta, alpha))
  return mm_impl("addmm", a, b, c, beta, alpha);
}

lt_tensor_t *lt_bmm(lt_tensor_t *a, lt_tensor_t *b) {
  LT_AUTOCAST2(LT_AC_LOWER, a, b, lt_bmm(a, b))
  LT_AG_LINALG("BmmBackward0", (lt_tensor_t *)NULL, a, b, 0, 1, lt_bmm(a, b))
  if (check_pair("bmm", a, b) != LT_OK) return NULL;
  if (a->ndim != 3 || b->ndim != 3) {
    lt_error("bmm: expected 3-D tensors, got %d-D and %d-D", a->ndim, b->ndim);
    return NULL;
  }
  if (a->sizes[0] != b->sizes[0] || a->sizes[2] != b->sizes[1]) {
    char x[128], y[128];
    lt_error("bmm: shapes %s and %s cannot be multiplied (batch sizes must match and the inner sizes agree)",
             lt_shape_str(3, a->sizes, x, sizeof x), lt_shape_str(3, b->sizes, y, sizeof y));
    return NULL;
  }
  int64_t sizes[3] = {a->sizes[0], a->sizes[1], b->sizes[2]};
  return gemm("bmm", 3, sizes, a->sizes[0], a->sizes[1], b->sizes[2], a->sizes[2], a, a->strides[0],
              a->strides[1], a->strides[2], b, b->strides[0], b->strides[1], b->strides[2], NULL, 0, 1);
}

static lt_tensor_t *mv_impl(const char *op, lt_tensor_t *a, lt_tensor_t *v) {
  if (check_pair(op, a, v) != LT_OK) return NULL;
  if (a->ndim != 2 || v->ndim != 1) {
    lt_error("%s: expected a 2-D matrix and a 1-D vector, got %d-D and %d-D", op, a->ndim, v->ndim);
    return NULL;
  }
  if (a->sizes[1] != v->sizes[0]) {
    lt_error("%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)", op, (long long)a->sizes[0],
             (long long)a->sizes[0], (long long)a->sizes[1], (long long)v->sizes[0]);
    return NULL;
  }
  int64_t sizes[1] = {a->sizes[0]};
  return gemm(op, 1, sizes, 1, a->sizes[0], 1, a->sizes[1], a, 0, a->strides[0], a->strides[1], v, 0,
              v->strides[0], 1, NULL, 0, 1);
}

static lt_tensor_t *dot_impl(const char *op, lt_tensor_t *a, lt_tensor_t *b) {
  if (check_pair(op, a, b) != LT_OK) return NULL;
  if (a->ndim != 1 || b->ndim != 1) {
    lt_error("%s: 1D tensors expected, but got %dD and %dD tensors", op, a->ndim, b->ndim);
    return NULL;
  }
  if (a->sizes[0] != b->sizes[0]) {
    lt_error("%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of elements",
             op, (long long)a->sizes[0], (long long)b->sizes[0]);
    return NULL;
  }
  return gemm(op, 0, NULL, 1, 1, 1, a->sizes[0], a, 0, 0, a->strides[0], b, 0, b->strides[0], 1, NULL, 0, 1);
}

lt_tensor_t *lt_mv(lt_tensor_t *a, lt_tensor_t *v) {
  LT_AUTOCAST2(LT_AC_LOWER_CUDA, a, v, lt_mv(a, v))
  LT_AG_LINALG("MvBackward0", (lt_tensor_t *)NULL, a, v, 0, 1, lt_mv(a, v))
  return mv_impl("mv", a, v);
}
lt_tensor_t *lt_dot(lt_tensor_t *a, lt_tensor_t *b) {
  LT_AUTOCAST2(LT_AC_PROMOTE_CUDA, a, b, lt_dot(a, b))
  LT_AG_LINALG("DotBackward0", (lt_tensor_t *)NULL, a, b, 0, 1, lt_dot(a, b))
  return dot_impl("dot", a, b);
}

/* Collapse the batch dims [0, nb) of t into one stride, if they allow it. */
static bool batch_stride(const lt_tensor_t *t, int nb, int64_t *stride) {
  int64_t s = 0, expect = -1;
  for (int d = nb - 1; d >= 0; d--) {
    if (t->sizes[d] == 1) continue;
    if (expect < 0) { s = t->strides[d]; expect = s * t->sizes[d]; continue; }
    if (t->strides[d] != expect) return false;
    expect = t->strides[d] * t->sizes[d];
  }
  *stride = s;
  return true;
}

lt_tensor_t *lt_matmul(lt_tensor_t *a, lt_tensor_t *b) {
  LT_AUTOCAST2(LT_AC_LOWER, a, b, lt_matmul(a, b))
  LT_AG_LINALG("MmBackward0", (lt_tensor_t *)NULL, a, b, 0, 1, lt_matmul(a, b))
  if (check_pair("matmul", a, b) != LT_OK) return NULL;
  int na = a->ndim, nb = b->ndim;
  if (na == 0 || nb == 0) {
    lt_error("matmul: both arguments need at least 1 dimension, but got %dD and %dD", na, nb);
    return NULL;
  }
  if (na == 1 && nb == 1) return dot_impl("matmul", a, b);
  if (na == 2 && nb == 1) return mv_impl("matmul", a, b);
  if (na == 2 && nb == 2) return mm_impl("matmul", a, b, NULL, 0, 1);
  /* general case: a [..., n, k] (1-D a is [1, k]), b [..., k, p] (1-D b is [k, 1]) */
  int64_t n = na == 1 ? 1 : a->sizes[na - 2], ka = a->sizes[na - 1];
  int64_t kb = nb == 1 ? b->sizes[0] : b->sizes[nb - 2], p = nb == 1 ? 1 : b->sizes[nb - 1];
  if (ka != kb) {
    char x[256], y[256];
    lt_error("matmul: shapes %s and %s cannot be multiplied (%lld != %lld)", lt_shape_str(na, a->sizes, x, sizeof x),
             lt_shape_str(nb, b->sizes, y, sizeof y), (long long)ka, (long long)kb);
    return NULL;
  }
  int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0;
  int nbatch;
  int64_t bshape[LT_MAX_DIM];
  if (lt_broadcast_shapes("matmul", ba, a->sizes, bb, b->sizes, &nbatch, bshape) != LT_OK) return NULL;
  int64_t batch = lt_numel_of(nbatch, bshape);
  /* expanded views of a and b to [batch dims..., rows, cols] */
  int64_t esz[LT_MAX_DIM];
  memcpy(esz, bshape, sizeof(int64_t) * (size_t)nbatch);
  lt_tensor_t *ea, *eb;
  {
    lt_tensor_t *a2 = na == 1 ? lt_unsqueeze(a, 0) : (lt_retain(a), a);
    if (!a2) return NULL;
    esz[nbatch] = n;
    esz[nbatch + 1] = ka;
    ea = lt_expand(a2, nbatch + 2, esz);
    lt_release(a2);
    if (!ea) return NULL;
    lt_tensor_t *b2 = nb == 1 ? lt_unsqueeze(b, 1) : (lt_retain(b), b);
    if (!b2) { lt_release(ea); return NULL; }
    esz[nbatch] = kb;
    esz[nbatch + 1] = p;
    eb = lt_expand(b2, nbatch + 2, esz);
    lt_release(b2);
    if (!eb) { lt_release(ea); return NULL; }
  }
  /* batch strides, copying an operand whose batch dims do not collapse */
  int64_t sab = 0, sbb = 0;
  if (!batch_stride(ea, nbatch, &sab)) {
    lt_tensor_t *c = lt_clone(ea);
    lt_release(ea);
    if (!(ea = c)) { lt_release(eb); return NULL; }
    batch_stride(ea, nbatch, &sab);
  }
  if (!batch_stride(eb, nbatch, &sbb)) {
    lt_tensor_t *c = lt_clone(eb);
    lt_release(eb);
    if (!(eb = c)) { lt_release(ea); return NULL; }
    batch_stride(eb, nbatch, &sbb);
  }
  int64_t osz[LT_MAX_DIM];
  int ond = 0;
  memcpy(osz, bshape, sizeof(int64_t) * (size_t)nbatch);
  ond = nbatch;
  if (na > 1) osz[ond++] = n;
  if (nb > 1) osz[ond++] = p;
  lt_tensor_t *out = gemm("matmul", ond, osz, batch, n, p, ka, ea, sab, ea->strides[nbatch], ea->strides[nbatch + 1],
                          eb, sbb, eb->strides[nbatch], eb->strides[nbatch + 1], NULL, 0, 1);
  lt_release(ea);
  lt_release(eb);
  return out;
}
