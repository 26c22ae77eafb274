/* Sorting along a dimension (core/sort.h): the CPU loop of kernels/cpu/sort.c on host tensors;
   a CUDA tensor's values come to the host and its order goes back (correct, not fast, as the
   indexing ops' CUDA path in core/index.c). */
#include "core/sort.h"

#include "core/device.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/iter.h"
#include "kernels/cpu/sort.h"

lt_tensor_t *lt_topk(lt_tensor_t *x, int64_t k, int64_t dim, bool largest, int64_t base, lt_tensor_t **values) {
  if (values) *values = NULL;
  if (!x) return NULL;
  int nd = x->ndim, d = 0;
  if (lt_wrap_dim("sort", dim, nd, &d) != LT_OK) return NULL;
  dim = d;
  int64_t n = nd ? x->sizes[dim] : 1;
  if (k < 0 || k > n) {
    lt_error("topk: k (%lld) is out of range for a dimension of size %lld", (long long)k, (long long)n);
    return NULL;
  }
  if (x->device.type != LT_CPU) {
    const lt_backend_i *b = lt_backend((lt_devtype)x->device.type);
    if (!b || !b->host_accessible) {
      lt_tensor_t *hx = lt_convert(x, x->dtype, lt_device(LT_CPU, 0)), *hv = NULL;
      lt_tensor_t *r = hx ? lt_topk(hx, k, dim, largest, base, values ? &hv : NULL) : NULL;
      lt_release(hx);
      lt_tensor_t *di = r ? lt_convert(r, LT_INT64, x->device) : NULL;
      lt_tensor_t *dv = di && hv ? lt_convert(hv, x->dtype, x->device) : NULL;
      lt_release(r);
      lt_release(hv);
      if (values && !dv) {
        lt_release(di);
        return NULL;
      }
      if (values) *values = dv;
      return di;
    }
  }
  int64_t shape[LT_MAX_DIM];
  for (int i = 0; i < nd; i++) shape[i] = i == dim ? k : x->sizes[i];
  lt_tensor_t *out = lt_empty(nd, shape, LT_INT64, x->device);
  lt_tensor_t *vals = out && values ? lt_empty(nd, shape, x->dtype, x->device) : NULL;
  if (!out || (values && !vals)) {
    lt_release(out);
    return NULL;
  }
  if (!lt_cpu_topk(lt_data(x), x->dtype, nd, x->sizes, x->strides, (int)dim, k, largest, base, lt_data(out),
                   vals ? lt_data(vals) : NULL, lt_num_threads())) {
    lt_release(out);
    lt_release(vals);
    lt_error("sort: out of memory for a slice of %lld elements", (long long)n);
    return NULL;
  }
  if (values) *values = vals;
  return out;
}

lt_tensor_t *lt_argsort(lt_tensor_t *x, int64_t dim, bool descending, int64_t base) {
  if (!x) return NULL;
  int d = 0;
  if (lt_wrap_dim("sort", dim, x->ndim, &d) != LT_OK) return NULL;
  return lt_topk(x, x->ndim ? x->sizes[d] : 1, d, descending, base, NULL);
}
