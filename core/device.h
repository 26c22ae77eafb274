/* Devices: a device type registers a backend (a struct of function pointers, `_i`), and a device is
   (type, index). The CPU backend always exists and offers virtual devices cpu:0..N-1. */
#ifndef LT_DEVICE_H
#define LT_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { LT_CPU = 0, LT_CUDA = 1, LT_NDEVTYPES } lt_devtype;

/* index is -1 for "the current device of this type" (a device string without an index). */
typedef struct {
  int16_t type;
  int16_t index;
} lt_device_t;

#define LT_DEVICE_MAX 64 /* devices per type */

static inline lt_device_t lt_device(lt_devtype type, int index) {
  lt_device_t d = {(int16_t)type, (int16_t)index};
  return d;
}
static inline bool lt_device_eq(lt_device_t a, lt_device_t b) {
  return a.type == b.type && a.index == b.index;
}

/* The backend of a device type: memory and synchronisation. NULL members are optional. */
typedef struct lt_backend_i {
  const char *name;                         /* "cpu", "cuda" */
  int (*device_count)(void);                /* devices present (0 when no driver/hardware) */
  int (*raw_alloc)(int index, size_t n, void **out); /* LT_OK or LT_ERR (out of memory) */
  void (*raw_free)(int index, void *p);
  size_t alignment;                         /* of raw_alloc's blocks */
  size_t cache_limit;                       /* cached free bytes kept per device; 0 = no limit */
  /* the allocator's policy (core/allocator.h): carve segments into blocks, split and merge them,
     as PyTorch's CUDA caching allocator (true), or reuse whole blocks of one size class (false) */
  bool split_segments;
  int (*synchronize)(int index);            /* wait for all work queued on the device */
  bool host_accessible;                     /* its memory can be read by the CPU directly */
  const char *(*unavailable)(void);         /* why device_count() is 0 ("no CUDA driver (...)") */
  int64_t (*total_memory)(int index);       /* bytes of the device (out-of-memory messages); -1 unknown */
  int64_t (*available_memory_i)(int index); /* bytes free for new allocations now; -1 unknown (NULL: none) */
  /* streams and events (core/stream.h): handles are the backend's; a NULL stream handle is the
     device's default stream */
  int (*stream_create)(int index, void **h);
  int (*stream_synchronize)(int index, void *h);
  int (*stream_query)(int index, void *h, bool *done);
  int (*stream_wait_event)(int index, void *h, void *ev);
  int (*event_create)(int index, bool timing, void **ev);
  void (*event_destroy)(int index, void *ev);
  int (*event_record)(int index, void *ev, void *stream);
  int (*event_synchronize)(int index, void *ev);
  int (*event_query)(int index, void *ev, bool *done);
  int (*event_elapsed_ms)(int index, void *a, void *b, double *ms);
} lt_backend_i;

/* A backend compiled in (CUDA) registers itself before first use. */
void lt_register_backend(lt_devtype type, const lt_backend_i *be);
/* The backend of a type, or NULL when this build does not have it. */
const lt_backend_i *lt_backend(lt_devtype type);
const char *lt_devtype_name(lt_devtype type);
/* "cpu, cuda": the types this build has (for error messages). */
const char *lt_devtypes_available(void);

/* Parse "cpu", "cpu:1", "cuda", "cuda:0"; errors name the string. Only the syntax and the type
   are checked; lt_device_check checks that the device exists. */
int lt_device_parse(const char *s, lt_device_t *out);
/* "cpu:0" or "cuda" (no index when index is -1); returns buf. */
char *lt_device_format(lt_device_t d, char *buf, size_t n);
/* The number of devices of a type present now (0 for a type this build lacks). */
int lt_device_count(lt_devtype type);
/* Resolve a missing index to the current device of the type, and check the device exists. */
int lt_device_resolve(lt_device_t d, lt_device_t *out);

/* Virtual CPU devices: LUTORCH_CPU_DEVICES at start, or this call before any CPU memory is used. */
int lt_cpu_set_device_count(int n);
int lt_cpu_device_count(void);

/* The current device of a type (per thread); CPU's is cpu:0 unless set. */
int lt_current_device(lt_devtype type);
int lt_set_current_device(lt_device_t d);

#endif
