/* Copies that touch CUDA memory, and pinned host memory. A copy of one dtype between contiguous
   tensors of one shape is one cudaMemcpy; every other copy (dtype conversion, broadcasting, strided
   views) is staged through host memory, where the CPU's conversion loops do the work: slower, but
   the CPU never reads device memory, and the results are the CPU's to the bit. cudaMemcpy on the
   legacy default stream orders the copy after the kernels queued before it and, towards the host,
   returns when the data has arrived: PyTorch's synchronisation for blocking copies. */
#include "core/cuda.h"
#include "core/elementwise.h"

#include <stdlib.h>
#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"

#include <pthread.h>

/* The elements of t's storage that its view covers: [lo, hi], in elements. */
static void view_span(const lt_tensor_t *t, int64_t *lo, int64_t *hi) {
  *lo = *hi = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] <= 1) continue;
    int64_t ext = (t->sizes[d] - 1) * t->strides[d];
    if (ext < 0) *lo += ext;
    else *hi += ext;
  }
}

static void free_ctx(void *ctx, void *data) { (void)data; free(ctx); }

/* A host copy of the part of a CUDA tensor's storage that its view covers, viewed with the same
   geometry (a non-empty tensor). */
static lt_tensor_t *host_mirror(const lt_tensor_t *t, int64_t *lo_out, int64_t *nbytes_out) {
  int64_t lo, hi;
  view_span(t, &lo, &hi);
  size_t es = lt_elsize(t);
  int64_t nbytes = (hi - lo + 1) * (int64_t)es;
  char *buf = malloc((size_t)nbytes);
  if (!buf) { lt_error("copy_: out of host memory staging %lld bytes", (long long)nbytes); return NULL; }
  int dev = t->device.index;
  const char *src = (const char *)t->storage->data + lo * (int64_t)es;
  cudaError_t rc = cudaMemcpy(buf, src, (size_t)nbytes, cudaMemcpyDeviceToHost);
  if (lt_cuda_report(rc, "cudaMemcpy(buf, src, nbytes, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev) != LT_OK) {
    free(buf);
    return NULL;
  }
  lt_tensor_t *v = lt_from_blob(buf + (t->offset - lo) * (int64_t)es, t->ndim, t->sizes, t->strides, t->dtype,
                                lt_device(LT_CPU, 0), free_ctx, buf);
  if (!v) { free(buf); return NULL; }
  *lo_out = lo;
  *nbytes_out = nbytes;
  return v;
}

static bool same_shape(const lt_tensor_t *a, const lt_tensor_t *b) {
  return a->ndim == b->ndim && memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

int lt_cuda_copy_(lt_tensor_t *dst, const lt_tensor_t *src) {
  bool dh = dst->device.type != LT_CUDA, sh = src->device.type != LT_CUDA;
  int dev = dh ? src->device.index : dst->device.index;
  LT_TRY(lt_cuda_use(dev));
  if (dst->numel == 0) return LT_OK;
  size_t es = lt_elsize(dst);
  if (dst->dtype == src->dtype && same_shape(dst, src) && lt_is_contiguous(dst) && lt_is_contiguous(src)) {
    LT_CUDA_CHECK(dev, cudaMemcpy(lt_data(dst), lt_data(src), (size_t)dst->numel * es, cudaMemcpyDefault));
    lt_bump_version(dst);
    return LT_OK;
  }
  int64_t lo = 0, nbytes = 0;
  lt_tensor_t *hs;
  if (sh) {
    hs = (lt_tensor_t *)src;
    lt_retain(hs);
  } else if (!(hs = host_mirror(src, &lo, &nbytes))) {
    return LT_ERR;
  }
  int rc = LT_OK;
  if (dh) {
    rc = lt_copy_(dst, hs);
  } else if (lt_is_contiguous(dst)) {
    lt_tensor_t *tmp = lt_empty(dst->ndim, dst->sizes, dst->dtype, lt_device(LT_CPU, 0));
    rc = tmp ? lt_copy_(tmp, hs) : LT_ERR;
    if (rc == LT_OK) {
      cudaError_t e = cudaMemcpy(lt_data(dst), lt_data(tmp), (size_t)dst->numel * es, cudaMemcpyHostToDevice);
      rc = lt_cuda_report(e, "cudaMemcpy(lt_data(dst), lt_data(tmp), n, cudaMemcpyHostToDevice)", __FILE__, __LINE__, dev);
    }
    lt_release(tmp);
  } else {
    /* a strided destination: its span comes to the host, is written there, and goes back whole
       (the elements between the view's own are written back unchanged) */
    lt_tensor_t *hd = host_mirror(dst, &lo, &nbytes);
    rc = hd ? lt_copy_(hd, hs) : LT_ERR;
    if (rc == LT_OK) {
      char *base = (char *)dst->storage->data + lo * (int64_t)es;
      const char *from = (const char *)lt_data(hd) - (dst->offset - lo) * (int64_t)es;
      cudaError_t e = cudaMemcpy(base, from, (size_t)nbytes, cudaMemcpyHostToDevice);
      rc = lt_cuda_report(e, "cudaMemcpy(base, from, nbytes, cudaMemcpyHostToDevice)", __FILE__, __LINE__, dev);
    }
    lt_release(hd);
  }
  lt_release(hs);
  if (rc == LT_OK && !dh) lt_bump_version(dst);
  return rc;
}

/* ---- pinned host memory: blocks of a power-of-two size, kept for reuse (cudaHostAlloc and
   cudaFreeHost are slow and synchronise the device) ---- */
#define PIN_CLASSES 48
#define PIN_CACHE_LIMIT ((size_t)1 << 30)
typedef struct pin_block { struct pin_block *next; void *ptr; size_t size; } pin_block_t;
static pin_block_t *pin_free[PIN_CLASSES];
static pin_block_t *pin_used;
static size_t pin_cached;
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;

static int pin_class(size_t n, size_t *size) {
  int c = 12; /* 4 KiB at least */
  while (((size_t)1 << c) < n && c < PIN_CLASSES - 1) c++;
  *size = (size_t)1 << c;
  return c;
}

void *lt_cuda_host_alloc(size_t n) {
  size_t size;
  int c = pin_class(n, &size);
  if (size < n) { lt_error("pin_memory: %zu bytes is too large", n); return NULL; }
  if (lt_cuda_device_count() == 0) {
    lt_error("pin_memory: CUDA is not available: %s", lt_cuda_unavailable_reason());
    return NULL;
  }
  pthread_mutex_lock(&pin_lock);
  pin_block_t *b = pin_free[c];
  if (b) {
    pin_free[c] = b->next;
    pin_cached -= b->size;
  } else {
    b = malloc(sizeof *b);
    void *p = NULL;
    cudaError_t rc = b ? cudaHostAlloc(&p, size, cudaHostAllocPortable) : cudaSuccess;
    if (!b || rc != cudaSuccess) {
      if (!b) lt_error("pin_memory: out of host memory");
      else lt_cuda_report(rc, "cudaHostAlloc(&p, size, cudaHostAllocPortable)", __FILE__, __LINE__,
                          lt_current_device(LT_CUDA));
      free(b);
      pthread_mutex_unlock(&pin_lock);
      return NULL;
    }
    b->ptr = p;
    b->size = size;
  }
  b->next = pin_used;
  pin_used = b;
  pthread_mutex_unlock(&pin_lock);
  return b->ptr;
}

void lt_cuda_host_free(void *p) {
  if (!p) return;
  pthread_mutex_lock(&pin_lock);
  pin_block_t **link = &pin_used;
  while (*link && (*link)->ptr != p) link = &(*link)->next;
  pin_block_t *b = *link;
  if (b) {
    *link = b->next;
    if (pin_cached + b->size <= PIN_CACHE_LIMIT) {
      size_t size;
      int c = pin_class(b->size, &size);
      b->next = pin_free[c];
      pin_free[c] = b;
      pin_cached += b->size;
      b = NULL;
    }
  }
  pthread_mutex_unlock(&pin_lock);
  if (b) {
    cudaFreeHost(b->ptr);
    free(b);
  }
}

bool lt_cuda_is_pinned(const void *p) {
  if (!p || lt_cuda_device_count() == 0) return false;
  bool found = false;
  pthread_mutex_lock(&pin_lock);
  for (pin_block_t *b = pin_used; b && !found; b = b->next)
    found = (const char *)p >= (const char *)b->ptr && (const char *)p < (const char *)b->ptr + b->size;
  pthread_mutex_unlock(&pin_lock);
  return found;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_copy_(lt_tensor_t *dst, const lt_tensor_t *src) {
  (void)dst; (void)src;
  return lt_error("copy_: CUDA is not available: %s", lt_cuda_unavailable_reason());
}
void *lt_cuda_host_alloc(size_t n) {
  (void)n;
  lt_error("pin_memory: CUDA is not available: %s", lt_cuda_unavailable_reason());
  return NULL;
}
void lt_cuda_host_free(void *p) { (void)p; }
bool lt_cuda_is_pinned(const void *p) { (void)p; return false; }

#endif

static void unpin(void *ctx, void *data) { (void)data; lt_cuda_host_free(ctx); }

lt_tensor_t *lt_pin_memory(const lt_tensor_t *t) {
  if (t->device.type != LT_CPU) {
    char buf[32];
    lt_error("pin_memory: cannot pin '%s' memory: only CPU tensors can be pinned",
             lt_device_format(t->device, buf, sizeof buf));
    return NULL;
  }
  size_t n = (size_t)t->numel * lt_elsize(t);
  void *p = lt_cuda_host_alloc(n);
  if (!p) return NULL;
  lt_tensor_t *r = lt_from_blob(p, t->ndim, t->sizes, NULL, t->dtype, t->device, unpin, p);
  if (!r) { lt_cuda_host_free(p); return NULL; }
  if (t->numel && lt_copy_(r, t) != LT_OK) { lt_release(r); return NULL; }
  return r;
}

bool lt_is_pinned(const lt_tensor_t *t) {
  return t->device.type == LT_CPU && t->numel > 0 && lt_cuda_is_pinned(lt_data(t));
}
