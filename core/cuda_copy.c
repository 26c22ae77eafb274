/* Copies that touch CUDA memory, and pinned host memory. A copy of one dtype between contiguous
   tensors of one shape is one cudaMemcpy; on one device, a strided or broadcast copy is the
   strided-copy kernel and a conversion the cast kernel (on operands made contiguous by it); every
   other copy (between devices or with the host, strided or converting) is staged through host
   memory, where the CPU's conversion loops do the work: slower, but
   the CPU never reads device memory, and the results are the CPU's to the bit.
   Synchronisation is PyTorch's (Copy.cu): a copy is queued on the current stream of the CUDA
   device, after the work queued there before it; a host<->device copy then waits for that stream,
   unless it was asked for with non_blocking and the host side is pinned, in which case the host
   goes on at once and an event recorded after the copy keeps the pinned block from being reused
   until the copy has read it. A device<->device copy runs on the source device's current stream,
   which first waits for the destination's current stream, and the destination's stream then
   waits for it; the host does not wait. */
#include "core/cuda.h"
#include "core/elementwise.h"
#include "core/stream.h"

#include <stdlib.h>
#include <string.h>

/* x:to(dev, {non_blocking = true}) in progress on this thread (lt_copy_set_non_blocking) */
static _Thread_local bool copy_non_blocking;

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/cast.h"

#include <pthread.h>

static void host_record(const void *p, int dev);

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
  cudaStream_t st = lt_cuda_current_stream(dev);
  cudaError_t rc = cudaMemcpyAsync(buf, src, (size_t)nbytes, cudaMemcpyDeviceToHost, st);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(st);
  if (lt_cuda_report(rc, "cudaMemcpyAsync(buf, src, nbytes, cudaMemcpyDeviceToHost, stream)", __FILE__, __LINE__, dev) != LT_OK) {
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

/* device -> device on the source device's current stream, ordered after the destination's
   current stream and before its later work; the host does not wait */
static int copy_d2d(lt_tensor_t *dst, const lt_tensor_t *src, size_t nbytes) {
  int sd = src->device.index, dd = dst->device.index;
  lt_stream_t ss, ds;
  LT_TRY(lt_stream_current(src->device, &ss));
  LT_TRY(lt_stream_current(dst->device, &ds));
  if (sd != dd) LT_TRY(lt_stream_wait_stream(ss, ds));
  LT_TRY(lt_cuda_use(sd));
  LT_CUDA_CHECK(sd, cudaMemcpyAsync(lt_data(dst), lt_data(src), nbytes, cudaMemcpyDefault,
                                    (cudaStream_t)lt_stream_handle(ss)));
  if (sd != dd) LT_TRY(lt_stream_wait_stream(ds, ss));
  return LT_OK;
}

/* host <-> device of one contiguous block on the device's current stream */
static int copy_hd(lt_tensor_t *dst, const lt_tensor_t *src, size_t nbytes, bool to_device, int dev) {
  cudaStream_t st = lt_cuda_current_stream(dev);
  const void *host = to_device ? lt_data(src) : lt_data(dst);
  LT_CUDA_CHECK(dev, cudaMemcpyAsync(lt_data(dst), lt_data(src), nbytes,
                                     to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, st));
  if (copy_non_blocking && lt_cuda_is_pinned(host)) {
    host_record(host, dev);
    return LT_OK;
  }
  LT_CUDA_CHECK(dev, cudaStreamSynchronize(st));
  return LT_OK;
}

/* dst = src (broadcast to dst's shape) of one dtype on one device: the strided-copy kernel over
   dst's dims, with adjacent dims merged where both tensors step through them as one */
static int copy_strided_d2d(lt_tensor_t *dst, const lt_tensor_t *src, int dev) {
  lt_cuda_strided_t g;
  memset(&g, 0, sizeof g);
  int shift = dst->ndim - src->ndim; /* src's dims align with dst's last ones (lt_copy_ checked) */
  g.n = dst->numel;
  for (int d = 0; d < dst->ndim; d++) {
    int64_t sz = dst->sizes[d];
    if (sz == 1) continue; /* a dim of one element moves nothing */
    int sd = d - shift;
    int64_t ss = sd >= 0 && src->sizes[sd] != 1 ? src->strides[sd] : 0;
    int64_t ds = dst->strides[d];
    if (g.nd > 0 && g.dst_stride[g.nd - 1] == ds * sz && g.src_stride[g.nd - 1] == ss * sz) {
      g.sizes[g.nd - 1] *= sz; /* the previous dim steps over this one whole, in both */
      g.dst_stride[g.nd - 1] = ds;
      g.src_stride[g.nd - 1] = ss;
      continue;
    }
    if (g.nd == LT_CUDA_COPY_MAXDIM) return lt_error("copy_: more than %d dims", LT_CUDA_COPY_MAXDIM);
    g.sizes[g.nd] = sz;
    g.dst_stride[g.nd] = ds;
    g.src_stride[g.nd] = ss;
    g.nd++;
  }
  int rc = lt_cuda_k_strided_copy((int)lt_elsize(dst), lt_data(dst), lt_data(src), &g,
                                  (void *)lt_cuda_current_stream(dev));
  return lt_cuda_after_launch(dev, rc, "copy_", (int)dst->dtype);
}

int lt_cuda_copy_(lt_tensor_t *dst, const lt_tensor_t *src) {
  bool dh = dst->device.type != LT_CUDA, sh = src->device.type != LT_CUDA;
  int dev = dh ? src->device.index : dst->device.index;
  LT_TRY(lt_cuda_use(dev));
  if (dst->numel == 0) return LT_OK;
  size_t es = lt_elsize(dst);
  if (dst->dtype == src->dtype && same_shape(dst, src) && lt_is_contiguous(dst) && lt_is_contiguous(src)) {
    size_t nbytes = (size_t)dst->numel * es;
    if (!dh && !sh) LT_TRY(copy_d2d(dst, src, nbytes));
    else LT_TRY(copy_hd(dst, src, nbytes, sh, dev));
    lt_bump_version(dst);
    return LT_OK;
  }
  if (!dh && !sh && dst->device.index == src->device.index && dst->dtype == src->dtype) {
    /* a strided or broadcast copy on one device: a kernel, nothing through the host */
    LT_TRY(copy_strided_d2d(dst, src, dev));
    lt_bump_version(dst);
    return LT_OK;
  }
  if (!dh && !sh && dst->device.index == src->device.index && dst->dtype != src->dtype) {
    /* a conversion on one device: the cast kernel, on operands made contiguous first (a strided or
       broadcast operand goes through the same-dtype copy below) */
    lt_tensor_t *s = NULL, *d = NULL;
    int rc = LT_OK;
    if (same_shape(dst, src) && lt_is_contiguous(src)) {
      s = (lt_tensor_t *)src;
      lt_retain(s);
    } else {
      s = lt_empty(dst->ndim, dst->sizes, src->dtype, dst->device);
      rc = s ? lt_copy_(s, src) : LT_ERR;
    }
    if (rc == LT_OK) {
      if (lt_is_contiguous(dst)) {
        rc = lt_cuda_cast(dst, s);
      } else {
        d = lt_empty(dst->ndim, dst->sizes, dst->dtype, dst->device);
        rc = d ? lt_cuda_cast(d, s) : LT_ERR;
        if (rc == LT_OK) rc = lt_copy_(dst, d);
      }
    }
    lt_release(s);
    lt_release(d);
    if (rc == LT_OK) lt_bump_version(dst);
    return rc;
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
      /* tmp is pageable and dies here: the copy is waited for whatever non_blocking says */
      cudaStream_t st = lt_cuda_current_stream(dev);
      cudaError_t e = cudaMemcpyAsync(lt_data(dst), lt_data(tmp), (size_t)dst->numel * es, cudaMemcpyHostToDevice, st);
      if (e == cudaSuccess) e = cudaStreamSynchronize(st);
      rc = lt_cuda_report(e, "cudaMemcpyAsync(lt_data(dst), lt_data(tmp), n, cudaMemcpyHostToDevice, stream)", __FILE__, __LINE__, dev);
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
      cudaStream_t st = lt_cuda_current_stream(dev);
      cudaError_t e = cudaMemcpyAsync(base, from, (size_t)nbytes, cudaMemcpyHostToDevice, st);
      if (e == cudaSuccess) e = cudaStreamSynchronize(st);
      rc = lt_cuda_report(e, "cudaMemcpyAsync(base, from, nbytes, cudaMemcpyHostToDevice, stream)", __FILE__, __LINE__, dev);
    }
    lt_release(hd);
  }
  lt_release(hs);
  if (rc == LT_OK && !dh) lt_bump_version(dst);
  return rc;
}

/* ---- pinned host memory: blocks of a power-of-two size, kept for reuse (cudaHostAlloc and
   cudaFreeHost are slow and synchronise the device). A block read or written by non_blocking
   copies carries an event per copy; freed, it waits on pin_pending until they have completed. */
#define PIN_CLASSES 48
#define PIN_CACHE_LIMIT ((size_t)1 << 30)
typedef struct pin_block {
  struct pin_block *next;
  void *ptr;
  size_t size;
  int nevents;
  lt_event_t **events;
} pin_block_t;
static pin_block_t *pin_free[PIN_CLASSES];
static pin_block_t *pin_used;
static pin_block_t *pin_pending;
static size_t pin_cached;
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;

static int pin_class(size_t n, size_t *size) {
  int c = 12; /* 4 KiB at least */
  while (((size_t)1 << c) < n && c < PIN_CLASSES - 1) c++;
  *size = (size_t)1 << c;
  return c;
}

static void pin_clear_events(pin_block_t *b) {
  for (int i = 0; i < b->nevents; i++) lt_event_free(b->events[i]);
  free(b->events);
  b->events = NULL;
  b->nevents = 0;
}

/* a non_blocking copy on dev's current stream reads or writes the pinned memory at p */
static void host_record(const void *p, int dev) {
  lt_event_t *e = lt_event_new(lt_device(LT_CUDA, dev), false);
  lt_stream_t s;
  if (!e || lt_stream_current(lt_device(LT_CUDA, dev), &s) != LT_OK || lt_event_record(e, s) != LT_OK) {
    /* no event: wait for the copy here rather than risk an early reuse */
    lt_event_free(e);
    if (cudaStreamSynchronize(lt_cuda_current_stream(dev)) != cudaSuccess) (void)cudaGetLastError();
    return;
  }
  pthread_mutex_lock(&pin_lock);
  pin_block_t *b = pin_used;
  while (b && !((const char *)p >= (const char *)b->ptr && (const char *)p < (const char *)b->ptr + b->size)) b = b->next;
  lt_event_t **ev = b ? realloc(b->events, sizeof *ev * (size_t)(b->nevents + 1)) : NULL;
  if (ev) {
    b->events = ev;
    b->events[b->nevents++] = e;
    e = NULL;
  }
  pthread_mutex_unlock(&pin_lock);
  if (e) { /* not a block of ours, or no memory for the record */
    (void)lt_event_synchronize(e);
    lt_event_free(e);
  }
}

/* pending blocks whose copies have all completed go back to the free lists; the lock is held */
static void pin_process_pending_locked(void) {
  pin_block_t **link = &pin_pending;
  while (*link) {
    pin_block_t *b = *link;
    bool all = true;
    for (int i = 0; i < b->nevents && all; i++) {
      bool done = true;
      if (lt_event_query(b->events[i], &done) != LT_OK) done = true;
      all = done;
    }
    if (!all) { link = &b->next; continue; }
    *link = b->next;
    pin_clear_events(b);
    size_t size;
    int c = pin_class(b->size, &size);
    b->next = pin_free[c];
    pin_free[c] = b;
    pin_cached += b->size;
  }
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
  if (pin_pending) pin_process_pending_locked();
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
    b->nevents = 0;
    b->events = NULL;
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
    if (b->nevents > 0) { /* copies may still be reading it */
      b->next = pin_pending;
      pin_pending = b;
      b = NULL;
    } else if (pin_cached + b->size <= PIN_CACHE_LIMIT) {
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

bool lt_copy_set_non_blocking(bool nb) {
  bool prev = copy_non_blocking;
  copy_non_blocking = nb;
  return prev;
}

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
