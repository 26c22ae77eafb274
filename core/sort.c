/* Sorting along a dimension (core/sort.h): the CPU loop of kernels/cpu/sort.c on host tensors;
   a CUDA tensor's values come to the host and its order goes back (correct, not fast, as the
   indexing ops' CUDA path in core/index.c). */
#include "core/sort.h"

#include "core/device.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/iter.h"
#include "kernels/cpu/sort.h"

lt_tensor_t *lt_argsort(lt_tensor_t *x, int64_t dim, bool descending) {
  if (!x) return NULL;
  int nd = x->ndim, d = 0;
  if (lt_wrap_dim("sort", dim, nd, &d) != LT_OK) return NULL;
  dim = d;
  if (x->device.type != LT_CPU) {
    const lt_backend_i *b = lt_backend((lt_devtype)x->device.type);
    if (!b || !b->host_accessible) {
      lt_tensor_t *hx = lt_convert(x, x->dtype, lt_device(LT_CPU, 0));
      lt_tensor_t *r = hx ? lt_argsort(hx, dim, descending) : NULL;
      lt_release(hx);
      lt_tensor_t *d = r ? lt_convert(r, LT_INT64, x->device) : NULL;
      lt_release(r);
      return d;
    }
  }
  lt_tensor_t *out = lt_empty(nd, x->sizes, LT_INT64, x->device);
  if (!out) return NULL;
  if (!lt_cpu_argsort(lt_data(x), x->dtype, nd, x->sizes, x->strides, (int)dim, descending, lt_data(out),
                      lt_num_threads())) {
    lt_release(out);
    lt_error("sort: out of memory for a slice of %lld elements", (long long)(nd ? x->sizes[dim] : 1));
    return NULL;
  }
  return out;
}
