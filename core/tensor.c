/* Tensors and storages: creation, views, reference counts, geometry helpers. */
#include "core/tensor.h"
#include "core/autocast.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor and storage headers are recycled through per-thread free lists: an op makes one of each,
   and malloc/free pairs were a fifth of the cost of a small op. A list's array is allocated by
   its thread's first put (a thread's static TLS is zeroed at its start: 64 KiB there cost the
   interpreter's start-up 16 page faults). */
#define FREELIST_MAX 4096 /* the collector frees thousands of tensors at a time (a step per MiB of them) */
typedef struct freelist { void **items; int n; } freelist_t;
static _Thread_local freelist_t tensor_fl, storage_fl;

static void *fl_get(freelist_t *fl, size_t size) { return fl->n ? fl->items[--fl->n] : malloc(size); }

/* Any thread that keeps headers (OpenMP's workers run replicas and backward nodes, and are ended by
   omp_pause_resource) frees them when it exits, through a key's destructor. */
static pthread_key_t fl_key;
static pthread_once_t fl_once = PTHREAD_ONCE_INIT;
static bool fl_key_ok;
static _Thread_local bool fl_registered;
static void fl_thread_end(void *v) {
  (void)v;
  lt_thread_exit();
}
static void fl_key_init(void) { fl_key_ok = pthread_key_create(&fl_key, fl_thread_end) == 0; }

static void fl_put(freelist_t *fl, void *p) {
  if (fl->n >= FREELIST_MAX || (!fl->items && !(fl->items = malloc(sizeof(void *) * FREELIST_MAX)))) {
    free(p);
    return;
  }
  if (!fl_registered) {
    fl_registered = true;
    pthread_once(&fl_once, fl_key_init);
    if (fl_key_ok) pthread_setspecific(fl_key, (void *)1);
  }
  fl->items[fl->n++] = p;
}

void lt_thread_exit(void) {
  lt_autocast_clear_cache(); /* a thread ending inside an autocast region: its cached casts */
  while (tensor_fl.n) free(tensor_fl.items[--tensor_fl.n]);
  while (storage_fl.n) free(storage_fl.items[--storage_fl.n]);
  free(tensor_fl.items);
  free(storage_fl.items);
  tensor_fl.items = storage_fl.items = NULL;
}

static lt_storage_t *storage_new(size_t nbytes, lt_device_t dev) {
  lt_storage_t *s = fl_get(&storage_fl, sizeof *s);
  if (!s) { lt_error("out of memory (tensor storage header)"); return NULL; }
  lt_block_t *b = lt_alloc(dev, nbytes);
  if (!b) { fl_put(&storage_fl, s); return NULL; }
  atomic_init(&s->refcount, 1);
  s->data = lt_block_ptr(b);
  s->nbytes = nbytes;
  s->device = dev;
  s->block = b;
  s->release = NULL;
  s->release_ctx = NULL;
  atomic_init(&s->version, 0);
  s->inference = lt_inference_mode;
  return s;
}

static void storage_release(lt_storage_t *s) {
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
  if (s->block) lt_free(s->block);
  else if (s->release) s->release(s->release_ctx, s->data);
  fl_put(&storage_fl, s);
}

static lt_tensor_t *tensor_shell(lt_storage_t *s, lt_dtype dt, int ndim, const int64_t *sizes,
                                 const int64_t *strides, int64_t offset) {
  lt_tensor_t *t = fl_get(&tensor_fl, sizeof *t);
  if (!t) { lt_error("out of memory (tensor header)"); return NULL; }
  atomic_init(&t->refcount, 1);
  t->ndim = ndim;
  t->dtype = dt;
  t->device = s->device;
  t->storage = s;
  t->offset = offset;
  t->numel = lt_numel_of(ndim, sizes);
  if (ndim) {
    memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
  }
  t->requires_grad = false;
  t->grad = NULL;
  t->autograd = NULL;
  return t;
}

int64_t lt_numel_of(int ndim, const int64_t *sizes) {
  for (int i = 0; i < ndim; i++)
    if (sizes[i] == 0) return 0; /* before any product: [2^62, 33, 0] has 0 elements, no overflow */
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(n, sizes[i], &n)) return INT64_MAX; /* no such tensor can be made */
  return n;
}

void lt_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    if (__builtin_mul_overflow(s, sizes[i] > 1 ? sizes[i] : 1, &s)) s = INT64_MAX; /* as lt_numel_of */
  }
}

lt_tensor_t *lt_empty(int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev) {
  if (ndim < 0 || ndim > LT_MAX_DIM) {
    lt_error("tensors have at most %d dimensions, got %d", LT_MAX_DIM, ndim);
    return NULL;
  }
  /* the product of the non-zero sizes is bounded too: the strides are made from it even when a
     zero size makes the tensor empty */
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0) {
      lt_error("negative dimension %lld in size", (long long)sizes[i]);
      return NULL;
    }
    if (sizes[i] && nonzero > INT64_MAX / 16 / sizes[i]) {
      lt_error("size is too large");
      return NULL;
    }
    if (sizes[i]) nonzero *= sizes[i];
    n *= sizes[i];
  }
  lt_device_t r = dev;
  if (!(dev.type == LT_CPU && dev.index == 0) && lt_device_resolve(dev, &r) != LT_OK) return NULL;
  lt_storage_t *s = storage_new((size_t)n * lt_dtype_size(dt), r);
  if (!s) return NULL;
  int64_t strides[LT_MAX_DIM];
  lt_contiguous_strides(ndim, sizes, strides);
  lt_tensor_t *t = tensor_shell(s, dt, ndim, sizes, strides, 0);
  if (!t) storage_release(s);
  return t;
}

lt_tensor_t *lt_empty_like(const lt_tensor_t *t) { return lt_empty(t->ndim, t->sizes, t->dtype, t->device); }

lt_tensor_t *lt_empty_as_contiguous(const lt_tensor_t *t) {
  lt_storage_t *s = storage_new((size_t)t->numel * lt_dtype_size(t->dtype), t->device);
  if (!s) return NULL;
  int64_t strides[LT_MAX_DIM]; /* lt_empty's (t's may differ where a size is 1) */
  lt_contiguous_strides(t->ndim, t->sizes, strides);
  lt_tensor_t *o = tensor_shell(s, t->dtype, t->ndim, t->sizes, strides, 0);
  if (!o) storage_release(s);
  return o;
}

lt_tensor_t *lt_from_blob(void *data, int ndim, const int64_t *sizes, const int64_t *strides,
                          lt_dtype dt, lt_device_t dev, void (*release)(void *, void *), void *ctx) {
  if (ndim < 0 || ndim > LT_MAX_DIM) {
    lt_error("tensors have at most %d dimensions, got %d", LT_MAX_DIM, ndim);
    return NULL;
  }
  lt_device_t r;
  if (lt_device_resolve(dev, &r) != LT_OK) return NULL;
  lt_storage_t *s = fl_get(&storage_fl, sizeof *s);
  if (!s) { lt_error("out of memory (tensor storage header)"); return NULL; }
  int64_t cs[LT_MAX_DIM];
  if (!strides) { lt_contiguous_strides(ndim, sizes, cs); strides = cs; }
  int64_t extent = 0; /* largest element offset + 1 */
  int64_t n = lt_numel_of(ndim, sizes);
  if (n > 0) {
    extent = 1;
    for (int i = 0; i < ndim; i++) extent += (sizes[i] - 1) * strides[i];
  }
  atomic_init(&s->refcount, 1);
  s->data = data;
  s->nbytes = (size_t)extent * lt_dtype_size(dt);
  s->device = r;
  s->block = NULL;
  s->release = release;
  s->release_ctx = ctx;
  atomic_init(&s->version, 0);
  s->inference = lt_inference_mode;
  lt_tensor_t *t = tensor_shell(s, dt, ndim, sizes, strides, 0);
  if (!t) fl_put(&storage_fl, s);
  return t;
}

lt_tensor_t *lt_view_geometry(const lt_tensor_t *t, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset) {
  if (ndim < 0 || ndim > LT_MAX_DIM) {
    lt_error("tensors have at most %d dimensions, got %d", LT_MAX_DIM, ndim);
    return NULL;
  }
  /* the number of elements: an expanded view's sizes (stride 0) can multiply past 2^63 */
  int64_t n = 1;
  bool empty = false, over = false;
  for (int i = 0; i < ndim; i++) empty |= sizes[i] == 0;
  for (int i = 0; i < ndim && !empty; i++) over |= __builtin_mul_overflow(n, sizes[i], &n);
  if (empty) n = 0;
  if (over) {
    char b[512];
    lt_error("view: a view of size %s would have more than 2^63 elements", lt_shape_str(ndim, sizes, b, sizeof b));
    return NULL;
  }
  /* check the view stays inside the storage (a reach past 2^63 is outside too) */
  if (n > 0) {
    int64_t lo = offset, hi = offset, step;
    for (int i = 0; i < ndim && !over; i++) {
      over = __builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
             __builtin_add_overflow(strides[i] >= 0 ? hi : lo, step, strides[i] >= 0 ? &hi : &lo);
    }
    int64_t cap = (int64_t)(t->storage->nbytes / lt_dtype_size(t->dtype));
    if (over || lo < 0 || hi >= cap) {
      lt_error("view: the view is outside its storage (offset %lld, storage of %lld elements)",
               (long long)offset, (long long)cap);
      return NULL;
    }
  }
  atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
  lt_tensor_t *v = tensor_shell(t->storage, t->dtype, ndim, sizes, strides, offset);
  if (!v) storage_release(t->storage);
  return v;
}

static void release_parent(void *ctx, void *data) {
  (void)data;
  storage_release(ctx);
}

lt_tensor_t *lt_retag_device(const lt_tensor_t *t, lt_device_t dev) {
  for (int i = 0; i < t->ndim; i++)
    if (t->strides[i] < 0) {
      lt_error("retag_device: a view with negative strides");
      return NULL;
    }
  atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
  lt_tensor_t *v = lt_from_blob(lt_data(t), t->ndim, t->sizes, t->strides, t->dtype, dev, release_parent, t->storage);
  if (!v) storage_release(t->storage);
  return v;
}

_Thread_local bool lt_inference_mode;

int lt_inference_write_error(const char *op) {
  return lt_error("%s: Inplace update to inference tensor outside InferenceMode is not allowed. You can make "
                  "a clone to get a normal tensor before doing inplace update. See "
                  "https://github.com/pytorch/rfcs/pull/17 for more details.", op);
}

lt_tensor_t *lt_alias(const lt_tensor_t *t) {
  return lt_view_geometry(t, t->ndim, t->sizes, t->strides, t->offset);
}

/* core/autograd.c frees a tensor's autograd state */
void lt_autograd_meta_free(lt_tensor_t *t);

void lt_release(lt_tensor_t *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1) return;
  if (t->grad) lt_release(t->grad);
  if (t->autograd) lt_autograd_meta_free(t);
  storage_release(t->storage);
  fl_put(&tensor_fl, t);
}

int lt_set_(lt_tensor_t *t, lt_tensor_t *src) {
  if (t == src) return LT_OK;
  atomic_fetch_add_explicit(&src->storage->refcount, 1, memory_order_relaxed);
  storage_release(t->storage);
  t->storage = src->storage;
  t->dtype = src->dtype;
  t->device = src->device;
  t->offset = src->offset;
  t->ndim = src->ndim;
  t->numel = src->numel;
  memcpy(t->sizes, src->sizes, sizeof t->sizes);
  memcpy(t->strides, src->strides, sizeof t->strides);
  return LT_OK;
}

bool lt_is_contiguous(const lt_tensor_t *t) {
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->sizes[i] == 1) continue;
    if (t->strides[i] != s) return false;
    s *= t->sizes[i];
  }
  return true;
}

int lt_wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
  int n = ndim > 0 ? ndim : 1; /* a 0-dim tensor accepts dim 0 / -1 as PyTorch does */
  if (dim < -n || dim >= n)
    return lt_error("%s: dimension out of range (expected to be in range of [-%d, %d], but got %lld)",
                    op, n, n, (long long)(dim >= 0 ? dim + 1 : dim));
  *out = (int)(dim < 0 ? dim + n : dim);
  return LT_OK;
}

char *lt_shape_str(int ndim, const int64_t *sizes, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)sizes[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

int lt_check_same_device(const char *op, int n, const lt_tensor_t *const *ts) {
  const lt_tensor_t *first = NULL;
  for (int i = 0; i < n; i++) {
    const lt_tensor_t *t = ts[i];
    if (!t) continue;
    if (!first) { first = t; continue; }
    if (!lt_device_eq(t->device, first->device)) {
      /* a 0-dim CPU tensor may join another device, as a number would */
      if (t->ndim == 0 && t->device.type == LT_CPU) continue;
      if (first->ndim == 0 && first->device.type == LT_CPU) { first = t; continue; }
      char a[32], b[32];
      return lt_error("%s: expected all tensors to be on the same device, but found at least two "
                      "devices, %s and %s", op, lt_device_format(first->device, a, sizeof a),
                      lt_device_format(t->device, b, sizeof b));
    }
  }
  return LT_OK;
}

int lt_check_dtype_floating(const char *op, const lt_tensor_t *t) {
  if (!lt_dtype_is_floating(t->dtype))
    return lt_error("%s: expected a floating point tensor, got %s", op, lt_dtype_name(t->dtype));
  return LT_OK;
}

int lt_check_host(const char *op, const lt_tensor_t *t) {
  if (!t || t->device.type == LT_CPU) return LT_OK;
  const lt_backend_i *b = lt_backend((lt_devtype)t->device.type);
  if (b && b->host_accessible) return LT_OK;
  return lt_error("%s: not implemented for %s tensors yet", op, t->device.type == LT_CUDA ? "CUDA" : lt_devtype_name((lt_devtype)t->device.type));
}
