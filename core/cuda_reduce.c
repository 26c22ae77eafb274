/* Reductions of CUDA tensors (kernels/cuda/reduce.cu): core/reduce.c has checked the arguments,
   chosen the dtypes and allocated the outputs; this describes the geometry to the kernels and
   allocates their scratch. Without CUDA=1 it is a stub that refuses. */
#include "core/cuda.h"

#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/reduce.h"

_Static_assert(LT_MAX_DIM <= LT_CUDA_RED_MAXDIM, "the CUDA reduction plan holds every dimension");

/* multiprocessors of a device, cached (the launch geometry's target) */
static int sm_count(int dev) {
  static _Atomic int cache[64];
  if (dev < 0 || dev >= 64) return 0;
  int n = cache[dev];
  if (n > 0) return n;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0; /* the kernels assume a medium GPU */
  }
  cache[dev] = n;
  return n;
}

int lt_cuda_reduce(const char *name, lt_reduce_op op, const lt_tensor_t *x, const bool *mask, bool keepdim,
                   lt_tensor_t *values, lt_tensor_t *indices, lt_reduce_params_t prm) {
  const lt_tensor_t *ref = values ? values : indices;
  const lt_tensor_t *ts[3] = {x, ref, indices ? indices : ref};
  LT_TRY(lt_check_same_device(name, 3, ts));
  if (x->device.type != LT_CUDA) return lt_error("%s: expected a CUDA tensor", name);
  lt_cuda_reduce_plan_t pl;
  memset(&pl, 0, sizeof pl);
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
  if (values && indices && memcmp(values->strides, indices->strides, sizeof(int64_t) * (size_t)values->ndim) != 0)
    return lt_error("%s: values and indices must have one layout", name);
  pl.op = (int)op;
  pl.in_dtype = (int)x->dtype;
  pl.out_dtype = values ? (int)values->dtype : (int)LT_INT64;
  pl.in = (const char *)lt_data(x);
  pl.out = values ? (char *)lt_data(values) : NULL;
  pl.idx = indices ? (int64_t *)lt_data(indices) : NULL;
  prm.n = count;
  pl.params = prm;
  pl.count = count;
  pl.numel_out = ref->numel;
  if (pl.numel_out == 0) return LT_OK;
  int dev = x->device.index;
  LT_TRY(lt_cuda_use(dev));
  int sms = sm_count(dev);
  int64_t bytes = lt_cuda_k_reduce_scratch(&pl, sms);
  lt_tensor_t *scratch = NULL;
  if (bytes > 0 && !(scratch = lt_empty(1, &bytes, LT_UINT8, x->device))) return LT_ERR;
  int rc = lt_cuda_k_reduce(&pl, scratch ? lt_data(scratch) : NULL, sms, (void *)lt_cuda_current_stream(dev));
  /* the scratch goes back to the allocator's cache; work queued on this stream after the release
     is ordered after the kernels that read it */
  lt_release(scratch);
  LT_TRY(lt_cuda_after_launch(dev, rc, name, (int)x->dtype));
  if (values) lt_bump_version(values);
  if (indices) lt_bump_version(indices);
  return LT_OK;
}

int lt_cuda_scan(const char *name, lt_reduce_op op, const lt_tensor_t *x, int d, lt_tensor_t *out, lt_tensor_t *idx) {
  const lt_tensor_t *ts[3] = {x, out, idx ? idx : out};
  LT_TRY(lt_check_same_device(name, 3, ts));
  if (x->device.type != LT_CUDA) return lt_error("%s: expected a CUDA tensor", name);
  lt_cuda_reduce_plan_t pl;
  memset(&pl, 0, sizeof pl);
  int64_t es = (int64_t)lt_elsize(x);
  for (int k = 0; k < x->ndim; k++) {
    if (k == d) continue;
    pl.out_size[pl.nout] = x->sizes[k];
    pl.out_in_stride[pl.nout] = x->strides[k] * es;
    pl.out_stride[pl.nout] = out->strides[k];
    pl.nout++;
  }
  pl.nred = 1;
  pl.red_size[0] = x->ndim ? x->sizes[d] : 1;
  pl.red_stride[0] = x->ndim ? x->strides[d] * es : 0;
  pl.scan = 1;
  pl.scan_out_stride = x->ndim ? out->strides[d] : 0;
  pl.op = (int)op;
  pl.in_dtype = (int)x->dtype;
  pl.out_dtype = (int)out->dtype;
  pl.in = (const char *)lt_data(x);
  pl.out = (char *)lt_data(out);
  pl.idx = idx ? (int64_t *)lt_data(idx) : NULL;
  pl.count = pl.red_size[0];
  pl.numel_out = pl.count ? out->numel / pl.count : 0;
  if (out->numel == 0) return LT_OK;
  int dev = x->device.index;
  LT_TRY(lt_cuda_use(dev));
  int sms = sm_count(dev);
  int64_t bytes = lt_cuda_k_reduce_scratch(&pl, sms); /* few long lines: scanned in chunks */
  lt_tensor_t *scratch = NULL;
  if (bytes > 0 && !(scratch = lt_empty(1, &bytes, LT_UINT8, x->device))) return LT_ERR;
  int rc = lt_cuda_k_reduce(&pl, scratch ? lt_data(scratch) : NULL, sms, (void *)lt_cuda_current_stream(dev));
  lt_release(scratch); /* back to the cache; later work on this stream is ordered after the kernels */
  LT_TRY(lt_cuda_after_launch(dev, rc, name, (int)x->dtype));
  lt_bump_version(out);
  if (idx) lt_bump_version(idx);
  return LT_OK;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_reduce(const char *name, lt_reduce_op op, const lt_tensor_t *x, const bool *mask, bool keepdim,
                   lt_tensor_t *values, lt_tensor_t *indices, lt_reduce_params_t prm) {
  (void)op; (void)x; (void)mask; (void)keepdim; (void)values; (void)indices; (void)prm;
  return lt_error("%s: CUDA is not available: %s", name, lt_cuda_unavailable_reason());
}

int lt_cuda_scan(const char *name, lt_reduce_op op, const lt_tensor_t *x, int d, lt_tensor_t *out, lt_tensor_t *idx) {
  (void)op; (void)x; (void)d; (void)out; (void)idx;
  return lt_error("%s: CUDA is not available: %s", name, lt_cuda_unavailable_reason());
}

#endif
