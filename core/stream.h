/* Streams and events, for every device type. A stream is (device, id): id 0 is the device's
   default stream, ids 1..LT_STREAM_POOL come from a per-device pool created on first use and
   handed out round-robin (as PyTorch's stream pool: streams are never destroyed, so a stream value
   stays valid wherever it is copied). The current stream is per thread and per device. An event
   is an object owned by its creator; the backend holds its handle, created at the first record.
   On the CPU streams are synchronous and an event records the host clock. */
#ifndef LT_STREAM_H
#define LT_STREAM_H

#include "core/device.h"

#include <stdbool.h>
#include <stdint.h>

#define LT_STREAM_POOL 32

typedef struct {
  lt_device_t device; /* index resolved */
  int id;             /* 0: the default stream */
} lt_stream_t;

typedef struct lt_event {
  lt_device_t device; /* index -1 until the first record fixes it (torch.cuda.Event()) */
  bool enable_timing;
  bool recorded;
  void *handle;       /* the backend's, NULL until the first record */
} lt_event_t;

/* A stream from the pool of device d (index -1: the current device); errors name the op. */
int lt_stream_new(lt_device_t d, lt_stream_t *out);
int lt_stream_current(lt_device_t d, lt_stream_t *out);
int lt_stream_default(lt_device_t d, lt_stream_t *out);
/* Make s the current stream of its device for this thread (the device itself stays). */
int lt_stream_set_current(lt_stream_t s);
/* The current stream id of a resolved device on this thread, without checks (the allocator). */
int lt_stream_current_id(lt_device_t d);
/* The backend handle of a stream (NULL for a default stream or a CPU stream). */
void *lt_stream_handle(lt_stream_t s);

static inline bool lt_stream_eq(lt_stream_t a, lt_stream_t b) {
  return lt_device_eq(a.device, b.device) && a.id == b.id;
}

int lt_stream_synchronize(lt_stream_t s);
int lt_stream_query(lt_stream_t s, bool *done);
/* s waits (on the device, not the host) for the work queued on `other` so far / for event e. */
int lt_stream_wait_stream(lt_stream_t s, lt_stream_t other);
int lt_stream_wait_event(lt_stream_t s, lt_event_t *e);

/* An event for device d (index -1 allowed for the current device of the type, resolved at the
   first record). NULL with an error on failure. */
lt_event_t *lt_event_new(lt_device_t d, bool enable_timing);
void lt_event_free(lt_event_t *e);
int lt_event_record(lt_event_t *e, lt_stream_t s);
int lt_event_synchronize(lt_event_t *e);
int lt_event_query(lt_event_t *e, bool *done);
/* Milliseconds from a to b; errors as PyTorch's when a side was not recorded or timing is off. */
int lt_event_elapsed_ms(lt_event_t *a, lt_event_t *b, double *ms);

/* Test hook for the CPU devices: while held, a CPU stream's query() is false and events recorded
   on it stay pending (query() false, synchronize() an error rather than a hang); releasing it
   completes them. Lets a spec watch the allocator's deferred frees on a CPU stream. */
int lt_cpu_stream_hold(lt_stream_t s, bool hold);

/* The CPU backend's stream and event entry points (core/device.c registers them). */
int lt_cpu_stream_create(int index, void **h);
int lt_cpu_stream_synchronize(int index, void *h);
int lt_cpu_stream_query(int index, void *h, bool *done);
int lt_cpu_stream_wait_event(int index, void *h, void *ev);
int lt_cpu_event_create(int index, bool timing, void **ev);
void lt_cpu_event_destroy(int index, void *ev);
int lt_cpu_event_record(int index, void *ev, void *stream);
int lt_cpu_event_synchronize(int index, void *ev);
int lt_cpu_event_query(int index, void *ev, bool *done);
int lt_cpu_event_elapsed_ms(int index, void *a, void *b, double *ms);

/* The CUDA backend's (core/cuda_stream.c; only referenced by the CUDA build's backend). */
int lt_cuda_stream_create(int index, void **h);
int lt_cuda_stream_synchronize(int index, void *h);
int lt_cuda_stream_query(int index, void *h, bool *done);
int lt_cuda_stream_wait_event(int index, void *h, void *ev);
int lt_cuda_event_create(int index, bool timing, void **ev);
void lt_cuda_event_destroy(int index, void *ev);
int lt_cuda_event_record(int index, void *ev, void *stream);
int lt_cuda_event_synchronize(int index, void *ev);
int lt_cuda_event_query(int index, void *ev, bool *done);
int lt_cuda_event_elapsed_ms(int index, void *a, void *b, double *ms);

/* x:to(dev, {non_blocking = true}): the binding sets this around the conversion so that the copy
   (core/cuda_copy.c) sees it; returns the previous value. Per thread. */
bool lt_copy_set_non_blocking(bool nb);

#endif
