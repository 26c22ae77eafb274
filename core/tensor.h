/* The tensor: a strided view (sizes, strides, offset in elements) of a refcounted storage. */
#ifndef LT_TENSOR_H
#define LT_TENSOR_H

#include "core/allocator.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LT_MAX_DIM 16

typedef struct lt_storage {
  atomic_int refcount;
  void *data;
  size_t nbytes;
  lt_device_t device;  /* index always resolved */
  lt_block_t *block;   /* from the caching allocator; NULL for external memory */
  void (*release)(void *ctx, void *data); /* external memory: called when the storage dies */
  void *release_ctx;
  atomic_uint version; /* bumped by every in-place write (autograd checks saved tensors) */
  bool inference;      /* made in inference mode: its tensors are inference tensors */
} lt_storage_t;

struct lt_autograd_meta; /* autograd's per-tensor state */

typedef struct lt_tensor {
  atomic_int refcount;
  int ndim;
  lt_dtype dtype;
  lt_device_t device;  /* == storage->device */
  lt_storage_t *storage;
  int64_t offset;      /* in elements */
  int64_t numel;
  int64_t sizes[LT_MAX_DIM];
  int64_t strides[LT_MAX_DIM]; /* in elements */
  bool requires_grad;
  struct lt_tensor *grad;
  struct lt_autograd_meta *autograd;
} lt_tensor_t;

/* --- life cycle --- */
/* A new contiguous tensor; its memory is uninitialised. NULL + error on failure. */
lt_tensor_t *lt_empty(int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev);
lt_tensor_t *lt_empty_like(const lt_tensor_t *t);
/* A new contiguous tensor of contiguous t's sizes, dtype and (resolved) device, without checking
   them again (the small-op fast paths). */
lt_tensor_t *lt_empty_as_contiguous(const lt_tensor_t *t);
/* A tensor over caller memory: release(ctx, data) runs when the last view of it dies. */
lt_tensor_t *lt_from_blob(void *data, int ndim, const int64_t *sizes, const int64_t *strides,
                          lt_dtype dt, lt_device_t dev, void (*release)(void *, void *), void *ctx);
/* A new view of t's storage with the given geometry (checked against the storage size). */
lt_tensor_t *lt_view_geometry(const lt_tensor_t *t, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset);
/* A new tensor object sharing t's storage and geometry (an alias; used by detach). */
lt_tensor_t *lt_alias(const lt_tensor_t *t);
/* t's elements under another device's name, sharing its memory (a storage over the parent's, which
   it keeps alive): only for devices whose memory is the same, the CPU devices. Writes through one
   are not seen by the other's version counter. */
lt_tensor_t *lt_retag_device(const lt_tensor_t *t, lt_device_t dev);

/* t takes src's storage, geometry, dtype and device (a parameter moved in place). */
int lt_set_(lt_tensor_t *t, lt_tensor_t *src);

static inline void lt_retain(lt_tensor_t *t) { atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed); }
void lt_release(lt_tensor_t *t); /* NULL is allowed */
/* Frees the calling thread's cached tensor and storage headers: call it before a thread that made
   or freed tensors ends (DataLoader workers do), else they leak. */
void lt_thread_exit(void);

/* --- geometry --- */
static inline size_t lt_elsize(const lt_tensor_t *t) { return lt_dtype_size(t->dtype); }
static inline void *lt_data(const lt_tensor_t *t) {
  return (char *)t->storage->data + t->offset * (int64_t)lt_dtype_size(t->dtype);
}
bool lt_is_contiguous(const lt_tensor_t *t);
/* the product of the sizes: 0 when one is 0, INT64_MAX when it overflows (no storage holds it) */
int64_t lt_numel_of(int ndim, const int64_t *sizes);
/* row-major strides for sizes (sizes of 0 and 1 count as 1); a stride that overflows is INT64_MAX */
void lt_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);
/* Wrap a (possibly negative, 0-based) dimension for a tensor of ndim dims; error names op. */
int lt_wrap_dim(const char *op, int64_t dim, int ndim, int *out);
/* "[2, 3]" into buf; returns buf. */
char *lt_shape_str(int ndim, const int64_t *sizes, char *buf, size_t n);
/* Mark an in-place write (version counter). */
static inline void lt_bump_version(lt_tensor_t *t) { atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed); }

/* --- inference mode (torch.inference_mode), per thread --- */
extern _Thread_local bool lt_inference_mode;
static inline bool lt_is_inference(const lt_tensor_t *t) { return t->storage->inference; }
int lt_inference_write_error(const char *op);
/* An in-place write to t (NULL passes): refused for an inference tensor outside inference mode. */
static inline int lt_check_write(const char *op, const lt_tensor_t *t) {
  return t && t->storage->inference && !lt_inference_mode ? lt_inference_write_error(op) : LT_OK;
}

/* --- checks shared by ops --- */
/* All non-NULL tensors on one device; else "op: expected all tensors to be on the same device, but
   found at least two devices, cpu:1 and cpu:0". 0-dim CPU tensors may join another device. */
int lt_check_same_device(const char *op, int n, const lt_tensor_t *const *ts);
int lt_check_dtype_floating(const char *op, const lt_tensor_t *t);
/* The guard where CPU kernels are launched: t (NULL is allowed) in memory the CPU can read; else
   "op: not implemented for CUDA tensors yet" (the CPU must never dereference a device pointer). */
int lt_check_host(const char *op, const lt_tensor_t *t);

#endif
