/* Reductions and scans: argument checks, result dtypes and shapes, then the device's loops
   (kernels/cpu/reduce.c, or for CUDA tensors core/cuda_reduce.c; scans are host-only) over a
   description of the kept and reduced dimensions. */
#include "core/autocast.h"
#include "core/reduce.h"
#include "core/grad.h"

#include "core/cuda.h"
#include "core/elementwise.h"
#include "kernels/cpu/reduce.h"

#include <math.h>
#include <string.h>

/* ---- checks and shapes ---- */

/* the reductions run on the host and on CUDA devices (core/cuda_reduce.c); scans only on the host */
static int check_host_only(const char *op, const lt_tensor_t *x) {
  const lt_backend_i *b = lt_backend((lt_devtype)x->device.type);
  if (!b || !b->host_accessible) {
    char dev[32];
    return lt_error("%s: not supported on device %s by this build", op,
                    lt_device_format(x->device, dev, sizeof dev));
  }
  return LT_OK;
}

static int check_host(const char *op, const lt_tensor_t *x) {
  if (x->device.type == LT_CUDA) return LT_OK;
  return check_host_only(op, x);
}

static int check_dtype_arg(const char *op, lt_dtype dt) {
  if (dt != LT_DTYPE_INVALID && (unsigned)dt >= LT_NDTYPES)
    return lt_error("%s: invalid dtype (%d)", op, (int)dt);
  return LT_OK;
}

/* mask[d] for each dimension to reduce; ndims == 0: all of them */
static int parse_dims(const char *op, const lt_tensor_t *x, int ndims, const int64_t *dims, bool *mask) {
  int nd = x->ndim;
  bool seen[LT_MAX_DIM];
  for (int d = 0; d < LT_MAX_DIM; d++) mask[d] = seen[d] = false;
  if (ndims < 0) return lt_error("%s: invalid number of dims (%d)", op, ndims);
  if (ndims == 0) {
    for (int d = 0; d < nd; d++) mask[d] = true;
    return LT_OK;
  }
  if (!dims) return lt_error("%s: missing list of dims", op);
  for (int i = 0; i < ndims; i++) {
    int d;
    LT_TRY(lt_wrap_dim(op, dims[i], nd, &d));
    if (seen[d]) return lt_error("%s: dim %d appears multiple times in the list of dims", op, d + 1);
    seen[d] = true;
    if (nd > 0) mask[d] = true;
  }
  return LT_OK;
}

/* max, min, argmax... have no value for an empty reduction */
static int check_nonempty(const char *op, const lt_tensor_t *x, const bool *mask) {
  for (int d = 0; d < x->ndim; d++)
    if (mask[d] && x->sizes[d] == 0)
      return lt_error("%s: Expected reduction dim %d to have non-zero size.", op, d + 1);
  return LT_OK;
}

static int out_shape(const lt_tensor_t *x, const bool *mask, bool keepdim, int64_t *shape) {
  int n = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (!mask[d]) shape[n++] = x->sizes[d];
    else if (keepdim) shape[n++] = 1;
  }
  return n;
}

/* Reduce x over mask into values (may be NULL) and indices (arg reductions; may be NULL), both
   contiguous tensors of the reduced shape (keepdim says whether reduced dims are in it). */
static int run_reduce(const char *op, lt_reduce_op rop, const lt_tensor_t *x, const bool *mask, bool keepdim,
                      lt_tensor_t *values, lt_tensor_t *indices, lt_reduce_params_t prm) {
  if (x->device.type == LT_CUDA) return lt_cuda_reduce(op, rop, x, mask, keepdim, values, indices, prm);
  /* logsumexp over the last dimension of short contiguous rows (a classifier's logits) */
  if (rop == LT_REDUCE_logsumexp && values && x->ndim > 0 && mask[x->ndim - 1] && lt_is_contiguous(x) &&
      values->dtype == x->dtype && lt_is_contiguous(values)) {
    int64_t n = x->sizes[x->ndim - 1], rows = n ? x->numel / n : 0;
    bool last_only = true;
    for (int d = 0; d < x->ndim - 1; d++) last_only = last_only && !mask[d];
    if (last_only && rows >= 16 && lt_cpu_logsumexp_short(x->dtype, lt_data(x), lt_data(values), rows, n))
      return LT_OK;
  }
  lt_reduce_plan_t pl;
  memset(&pl, 0, sizeof pl);
  const lt_tensor_t *ref = values ? values : indices;
  int64_t es = (int64_t)lt_elsize(x), count = 1;
  int od = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (mask[d]) {
      pl.red_size[pl.nred] = x->sizes[d];
      pl.red_stride[pl.nred] = x->strides[d] * es;
      pl.nred++;
      count *= x->sizes[d];
      if (keepdim) od++;
    } else {
      pl.out_size[pl.nout] = x->sizes[d];
      pl.out_in_stride[pl.nout] = x->strides[d] * es;
      pl.out_stride[pl.nout] = ref->strides[od];
      pl.nout++;
      od++;
    }
  }
  pl.op = rop;
  pl.in_dtype = x->dtype;
  pl.in = lt_data(x);
  pl.out = values ? lt_data(values) : NULL;
  pl.out_dtype = values ? values->dtype : LT_INT64;
  pl.idx = indices ? lt_data(indices) : NULL;
  prm.n = count;
  pl.params = prm;
  lt_cpu_reduce(&pl);
  return LT_OK;
}

/* a new tensor holding the reduction of x over mask, of dtype odt */
static lt_tensor_t *reduce_values(const char *op, lt_reduce_op rop, const lt_tensor_t *x, const bool *mask,
                                  bool keepdim, lt_dtype odt, lt_reduce_params_t prm) {
  int64_t shape[LT_MAX_DIM];
  int n = out_shape(x, mask, keepdim, shape);
  lt_tensor_t *out = lt_empty(n, shape, odt, x->device);
  if (!out) return NULL;
  if (run_reduce(op, rop, x, mask, keepdim, out, NULL, prm) != LT_OK) {
    lt_release(out);
    return NULL;
  }
  return out;
}

/* Does summing x's elements converted to dt give what summing them in x's own domain and storing
   as dt gives? (integers wrap alike; widening a floating type is exact) */
static bool conversion_needed(lt_dtype from, lt_dtype to) {
  if (from == to) return false;
  if (!lt_dtype_is_floating(from) && lt_dtype_is_integral(to)) return false;
  if (lt_dtype_is_floating(from) && lt_dtype_is_floating(to)) {
    if (to == LT_FLOAT64) return false;
    if (to == LT_FLOAT32 && from != LT_FLOAT64) return false;
  }
  return true;
}

/* x itself (retained) or x converted to dt */
static lt_tensor_t *as_dtype(lt_tensor_t *x, lt_dtype dt) {
  if (!conversion_needed(x->dtype, dt)) {
    lt_retain(x);
    return x;
  }
  return lt_convert(x, dt, x->device);
}

static const lt_reduce_params_t no_params = {0, 0, 0, 0};

/* ---- sum, prod, mean ---- */
static lt_tensor_t *sum_like(const char *op, lt_reduce_op rop, lt_tensor_t *x, int ndims,
                             const int64_t *dims, bool keepdim, lt_dtype dtype) {
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || check_dtype_arg(op, dtype) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  lt_dtype odt = dtype != LT_DTYPE_INVALID ? dtype : lt_dtype_is_floating(x->dtype) ? x->dtype : LT_INT64;
  lt_tensor_t *src = as_dtype(x, odt);
  if (!src) return NULL;
  lt_tensor_t *out = reduce_values(op, rop, src, mask, keepdim, odt, no_params);
  lt_release(src);
  return out;
}

lt_tensor_t *lt_sum(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype) {
  if (dtype == LT_DTYPE_INVALID) { LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_sum(x, ndims, dims, keepdim, dtype)) }
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_SUM, x, ndims, dims, keepdim, dtype, 0, NULL);
  return sum_like("sum()", LT_REDUCE_sum, x, ndims, dims, keepdim, dtype);
}

lt_tensor_t *lt_prod(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype) {
  if (dtype == LT_DTYPE_INVALID) { LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_prod(x, ndims, dims, keepdim, dtype)) }
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_PROD, x, ndims, dims, keepdim, dtype, 0, NULL);
  return sum_like("prod()", LT_REDUCE_prod, x, ndims, dims, keepdim, dtype);
}

lt_tensor_t *lt_mean(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_MEAN, x, ndims, dims, keepdim, dtype, 0, NULL);
  const char *op = "mean()";
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || check_dtype_arg(op, dtype) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  if (dtype != LT_DTYPE_INVALID && !lt_dtype_is_floating(dtype)) {
    lt_error("mean(): could not infer output dtype. Optional dtype must be either a floating point "
             "or complex dtype. Got: %s", lt_dtype_name(dtype));
    return NULL;
  }
  if (dtype == LT_DTYPE_INVALID && !lt_dtype_is_floating(x->dtype)) {
    lt_error("mean(): could not infer output dtype. Input dtype must be either a floating point or "
             "complex dtype. Got: %s", lt_dtype_name(x->dtype));
    return NULL;
  }
  lt_dtype odt = dtype != LT_DTYPE_INVALID ? dtype : x->dtype;
  lt_tensor_t *src = as_dtype(x, odt);
  if (!src) return NULL;
  lt_tensor_t *out = reduce_values(op, LT_REDUCE_mean, src, mask, keepdim, odt, no_params);
  lt_release(src);
  return out;
}

/* ---- logsumexp, var, std, norm ---- */
lt_tensor_t *lt_logsumexp(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_LOGSUMEXP, x, ndims, dims, keepdim, LT_DTYPE_INVALID, 0, NULL);
  const char *op = "logsumexp()";
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  lt_dtype odt = lt_dtype_is_floating(x->dtype) ? x->dtype : lt_default_float();
  lt_tensor_t *src = as_dtype(x, odt);
  if (!src) return NULL;
  lt_tensor_t *out = reduce_values(op, LT_REDUCE_logsumexp, src, mask, keepdim, odt, no_params);
  lt_release(src);
  return out;
}

static lt_tensor_t *var_like(const char *op, lt_reduce_op rop, lt_tensor_t *x, int ndims,
                             const int64_t *dims, int64_t correction, bool keepdim) {
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  if (!lt_dtype_is_floating(x->dtype)) {
    lt_error("%s: std and var only support floating point and complex dtypes, got %s", op,
             lt_dtype_name(x->dtype));
    return NULL;
  }
  lt_reduce_params_t prm = {0, correction, 0, 0};
  return reduce_values(op, rop, x, mask, keepdim, x->dtype, prm);
}

lt_tensor_t *lt_var(lt_tensor_t *x, int ndims, const int64_t *dims, int64_t correction, bool keepdim) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_VAR, x, ndims, dims, keepdim, LT_DTYPE_INVALID, (double)correction, NULL);
  return var_like("var()", LT_REDUCE_var, x, ndims, dims, correction, keepdim);
}

lt_tensor_t *lt_std(lt_tensor_t *x, int ndims, const int64_t *dims, int64_t correction, bool keepdim) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_STD, x, ndims, dims, keepdim, LT_DTYPE_INVALID, (double)correction, NULL);
  return var_like("std()", LT_REDUCE_std, x, ndims, dims, correction, keepdim);
}

lt_tensor_t *lt_norm(lt_tensor_t *x, double p, int ndims, const int64_t *dims, bool keepdim) {
  LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_norm(x, p, ndims, dims, keepdim))
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_NORM, x, ndims, dims, keepdim, LT_DTYPE_INVALID, p, NULL);
  const char *op = "norm()";
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  if (!lt_dtype_is_floating(x->dtype)) {
    lt_error("norm(): input dtype should be either floating point or complex. Got %s instead.",
             lt_dtype_name(x->dtype));
    return NULL;
  }
  lt_reduce_op rop;
  if (p == 0) rop = LT_REDUCE_norm0;
  else if (p == 1) rop = LT_REDUCE_norm1;
  else if (p == 2) rop = LT_REDUCE_norm2;
  else if (p == INFINITY) rop = LT_REDUCE_norminf;
  else if (p == -INFINITY) rop = LT_REDUCE_normninf;
  else rop = LT_REDUCE_normp;
  if (p < 0 || p == INFINITY) { /* no identity: an empty reduction has no value */
    for (int d = 0; d < x->ndim; d++)
      if (mask[d] && x->sizes[d] == 0) {
        lt_error("norm(): cannot compute the %g norm on an empty dimension (dim %d) because the "
                 "operation does not have an identity", p, d + 1);
        return NULL;
      }
  }
  lt_reduce_params_t prm = {0, 0, p, 1.0 / p};
  return reduce_values(op, rop, x, mask, keepdim, x->dtype, prm);
}

/* ---- amax, amin, any, all ---- */
static lt_tensor_t *extreme(const char *op, lt_reduce_op rop, lt_tensor_t *x, int ndims,
                            const int64_t *dims, bool keepdim) {
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, ndims, dims, mask) || check_nonempty(op, x, mask)) return NULL;
  return reduce_values(op, rop, x, mask, keepdim, x->dtype, no_params);
}

lt_tensor_t *lt_amax(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_AMAX, x, ndims, dims, keepdim, LT_DTYPE_INVALID, 0, NULL);
  return extreme("amax()", LT_REDUCE_amax, x, ndims, dims, keepdim);
}

lt_tensor_t *lt_amin(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_AMIN, x, ndims, dims, keepdim, LT_DTYPE_INVALID, 0, NULL);
  return extreme("amin()", LT_REDUCE_amin, x, ndims, dims, keepdim);
}

static lt_tensor_t *extreme_all(const char *op, lt_reduce_op rop, lt_tensor_t *x) {
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, 0, NULL, mask)) return NULL;
  if (x->numel == 0) {
    lt_error("%s: Expected reduction dim to be specified for input.numel() == 0. Specify the "
             "reduction dim with the 'dim' argument.", op);
    return NULL;
  }
  return reduce_values(op, rop, x, mask, false, x->dtype, no_params);
}

lt_tensor_t *lt_max_all(lt_tensor_t *x) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_AMAX, x, -1, NULL, false, LT_DTYPE_INVALID, 0, NULL);
  return extreme_all("max()", LT_REDUCE_amax, x);
}
lt_tensor_t *lt_min_all(lt_tensor_t *x) {
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_AMIN, x, -1, NULL, false, LT_DTYPE_INVALID, 0, NULL);
  return extreme_all("min()", LT_REDUCE_amin, x);
}

static lt_tensor_t *logical(const char *op, lt_reduce_op rop, lt_tensor_t *x, int ndims,
                            const int64_t *dims, bool keepdim) {
  bool mask[LT_MAX_DIM];
  if (check_host(op, x) || parse_dims(op, x, ndims, dims, mask)) return NULL;
  return reduce_values(op, rop, x, mask, keepdim, LT_BOOL, no_params);
}

lt_tensor_t *lt_any(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim) {
  return logical("any()", LT_REDUCE_any, x, ndims, dims, keepdim);
}

lt_tensor_t *lt_all(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim) {
  return logical("all()", LT_REDUCE_all, x, ndims, dims, keepdim);
}

/* ---- max / min along a dim, argmax, argmin ---- */
static int extreme_dim(const char *op, lt_reduce_op rop, lt_tensor_t *x, int64_t dim, bool keepdim,
                       lt_tensor_t **values, lt_tensor_t **indices) {
  bool mask[LT_MAX_DIM];
  int d;
  if (values) *values = NULL;
  if (indices) *indices = NULL;
  LT_TRY(check_host(op, x));
  LT_TRY(lt_wrap_dim(op, dim, x->ndim, &d));
  for (int k = 0; k < LT_MAX_DIM; k++) mask[k] = false;
  if (x->ndim > 0) mask[d] = true;
  LT_TRY(check_nonempty(op, x, mask));
  int64_t shape[LT_MAX_DIM];
  int n = out_shape(x, mask, keepdim, shape);
  lt_tensor_t *v = NULL, *i = lt_empty(n, shape, LT_INT64, x->device);
  if (!i) return LT_ERR;
  if (values) {
    v = lt_empty(n, shape, x->dtype, x->device);
    if (!v) { lt_release(i); return LT_ERR; }
  }
  if (run_reduce(op, rop, x, mask, keepdim, v, i, no_params) != LT_OK) {
    lt_release(v);
    lt_release(i);
    return LT_ERR;
  }
  if (values) *values = v;
  if (indices) *indices = i;
  else lt_release(i);
  return LT_OK;
}

int lt_max_dim(lt_tensor_t *x, int64_t dim, bool keepdim, lt_tensor_t **values, lt_tensor_t **indices) {
  if (lt_ag_needed(x, NULL))
    return (*values = lt_ag_reduce(LT_AG_MAX, x, 1, &dim, keepdim, LT_DTYPE_INVALID, 0, indices)) ? LT_OK : LT_ERR;
  return extreme_dim("max()", LT_REDUCE_argmax, x, dim, keepdim, values, indices);
}

int lt_min_dim(lt_tensor_t *x, int64_t dim, bool keepdim, lt_tensor_t **values, lt_tensor_t **indices) {
  if (lt_ag_needed(x, NULL))
    return (*values = lt_ag_reduce(LT_AG_MIN, x, 1, &dim, keepdim, LT_DTYPE_INVALID, 0, indices)) ? LT_OK : LT_ERR;
  return extreme_dim("min()", LT_REDUCE_argmin, x, dim, keepdim, values, indices);
}

static lt_tensor_t *arg_extreme(const char *op, lt_reduce_op rop, lt_tensor_t *x, bool has_dim,
                                int64_t dim, bool keepdim) {
  lt_tensor_t *idx = NULL;
  if (has_dim) {
    if (extreme_dim(op, rop, x, dim, keepdim, NULL, &idx) != LT_OK) return NULL;
    return idx;
  }
  if (check_host(op, x)) return NULL;
  if (x->numel == 0) {
    lt_error("%s: Expected reduction dim to be specified for input.numel() == 0.", op);
    return NULL;
  }
  /* the index into the flattened tensor: reduce a contiguous 1-D view */
  int64_t shape[LT_MAX_DIM];
  for (int d = 0; d < x->ndim; d++) shape[d] = 1;
  idx = lt_empty(keepdim ? x->ndim : 0, shape, LT_INT64, x->device);
  if (!idx) return NULL;
  lt_tensor_t *c = lt_contiguous(x);
  if (!c) { lt_release(idx); return NULL; }
  int64_t n = c->numel, one = 1;
  lt_tensor_t *flat = lt_view_geometry(c, 1, &n, &one, c->offset);
  lt_release(c);
  if (!flat) { lt_release(idx); return NULL; }
  bool mask[LT_MAX_DIM] = {true};
  int rc = run_reduce(op, rop, flat, mask, false, NULL, idx, no_params);
  lt_release(flat);
  if (rc != LT_OK) {
    lt_release(idx);
    return NULL;
  }
  return idx;
}

lt_tensor_t *lt_argmax(lt_tensor_t *x, bool has_dim, int64_t dim, bool keepdim) {
  return arg_extreme("argmax()", LT_REDUCE_argmax, x, has_dim, dim, keepdim);
}

lt_tensor_t *lt_argmin(lt_tensor_t *x, bool has_dim, int64_t dim, bool keepdim) {
  return arg_extreme("argmin()", LT_REDUCE_argmin, x, has_dim, dim, keepdim);
}

/* ---- cumsum, cumprod, logcumsumexp, cummax, cummin ---- */
/* The running results of rop along dim in dtype (LT_DTYPE_INVALID: x's if floating, else int64);
   indices (cummax, cummin; else NULL) receives the 0-based positions of the running extremes. */
static lt_tensor_t *scan(const char *op, lt_reduce_op rop, lt_tensor_t *x, int64_t dim, lt_dtype dtype,
                         lt_tensor_t **indices) {
  int d;
  bool cuda = x->device.type == LT_CUDA;
  if ((!cuda && check_host_only(op, x)) || check_dtype_arg(op, dtype) || lt_wrap_dim(op, dim, x->ndim, &d))
    return NULL;
  lt_dtype odt = dtype != LT_DTYPE_INVALID ? dtype : lt_dtype_is_floating(x->dtype) ? x->dtype : LT_INT64;
  lt_tensor_t *out = lt_empty(x->ndim, x->sizes, odt, x->device), *idx = NULL;
  if (!out) return NULL;
  if (indices && !(idx = lt_empty(x->ndim, x->sizes, LT_INT64, x->device))) { lt_release(out); return NULL; }
  if (indices) *indices = idx; /* out and idx: contiguous, one shape, so one set of strides */
  if (out->numel == 0) return out;
  lt_tensor_t *src = as_dtype(x, odt);
  if (!src) goto fail;
  if (cuda) { /* kernels/cuda/reduce.cu: a thread a line, the same math as the CPU's */
    int rc = lt_cuda_scan(op, rop, src, d, out, idx);
    lt_release(src);
    if (rc != LT_OK) goto fail;
    return out;
  }
  lt_scan_plan_t sp;
  memset(&sp, 0, sizeof sp);
  int64_t es = (int64_t)lt_elsize(src);
  sp.op = rop;
  sp.in_dtype = src->dtype;
  sp.out_dtype = odt;
  sp.in = lt_data(src);
  sp.out = lt_data(out);
  sp.idx = idx ? lt_data(idx) : NULL;
  sp.len = src->ndim ? src->sizes[d] : 1;
  sp.in_dstride = src->ndim ? src->strides[d] * es : 0;
  sp.out_dstride = src->ndim ? out->strides[d] : 0;
  for (int k = 0; k < src->ndim; k++) {
    if (k == d) continue;
    sp.size[sp.nother] = src->sizes[k];
    sp.in_stride[sp.nother] = src->strides[k] * es;
    sp.out_stride[sp.nother] = out->strides[k];
    sp.nother++;
  }
  int rc = lt_cpu_scan(&sp);
  lt_release(src);
  if (rc != LT_OK) {
    lt_error("%s: out of memory (scan buffer)", op);
    goto fail;
  }
  return out;
fail:
  lt_release(out);
  if (indices) { lt_release(idx); *indices = NULL; }
  return NULL;
}

lt_tensor_t *lt_cumsum(lt_tensor_t *x, int64_t dim, lt_dtype dtype) {
  if (dtype == LT_DTYPE_INVALID) { LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_cumsum(x, dim, dtype)) }
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_CUMSUM, x, 1, &dim, false, dtype, 0, NULL);
  return scan("cumsum()", LT_REDUCE_sum, x, dim, dtype, NULL);
}

lt_tensor_t *lt_cumprod(lt_tensor_t *x, int64_t dim, lt_dtype dtype) {
  if (dtype == LT_DTYPE_INVALID) { LT_AUTOCAST1(LT_AC_FP32_CUDA, x, lt_cumprod(x, dim, dtype)) }
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_CUMPROD, x, 1, &dim, false, dtype, 0, NULL);
  return scan("cumprod()", LT_REDUCE_prod, x, dim, dtype, NULL);
}

lt_tensor_t *lt_logcumsumexp(lt_tensor_t *x, int64_t dim) {
  if (lt_check_dtype_floating("logcumsumexp()", x)) return NULL;
  if (lt_ag_needed(x, NULL)) return lt_ag_reduce(LT_AG_LOGCUMSUMEXP, x, 1, &dim, false, LT_DTYPE_INVALID, 0, NULL);
  return scan("logcumsumexp()", LT_REDUCE_logsumexp, x, dim, x->dtype, NULL);
}

static int cumulative_extreme(const char *op, lt_reduce_op rop, lt_tensor_t *x, int64_t dim, lt_tensor_t **values,
                              lt_tensor_t **indices) {
  *values = NULL;
  *indices = NULL;
  *values = scan(op, rop, x, dim, x->dtype, indices);
  return *values ? LT_OK : LT_ERR;
}

int lt_cummax(lt_tensor_t *x, int64_t dim, lt_tensor_t **values, lt_tensor_t **indices) {
  if (lt_ag_needed(x, NULL))
    return (*values = lt_ag_reduce(LT_AG_CUMMAX, x, 1, &dim, false, LT_DTYPE_INVALID, 0, indices)) ? LT_OK : LT_ERR;
  return cumulative_extreme("cummax()", LT_REDUCE_cummax, x, dim, values, indices);
}

int lt_cummin(lt_tensor_t *x, int64_t dim, lt_tensor_t **values, lt_tensor_t **indices) {
  if (lt_ag_needed(x, NULL))
    return (*values = lt_ag_reduce(LT_AG_CUMMIN, x, 1, &dim, false, LT_DTYPE_INVALID, 0, indices)) ? LT_OK : LT_ERR;
  return cumulative_extreme("cummin()", LT_REDUCE_cummin, x, dim, values, indices);
}
