/* Streams and events over the backends' entry points (core/stream.h), and the CPU backend's
   streams and events: synchronous streams (work runs inline on the calling thread) and events
   that record CLOCK_MONOTONIC, plus the hold hook that lets specs keep a CPU event pending. */
#include "core/stream.h"
#include "core/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  pthread_mutex_t lock;
  bool made[LT_STREAM_POOL + 1];
  void *h[LT_STREAM_POOL + 1];
  atomic_uint next;
} stream_pool_t;

static stream_pool_t pools[LT_NDEVTYPES][LT_DEVICE_MAX];
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;
static _Thread_local uint8_t current_id[LT_NDEVTYPES][LT_DEVICE_MAX];

static void pools_init(void) {
  for (int t = 0; t < LT_NDEVTYPES; t++)
    for (int i = 0; i < LT_DEVICE_MAX; i++) pthread_mutex_init(&pools[t][i].lock, NULL);
}

/* resolve d for op: the error names the op */
static int resolve(const char *op, lt_device_t d, lt_device_t *out) {
  if (lt_device_resolve(d, out) != LT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    return lt_error("%s: %s", op, msg);
  }
  return LT_OK;
}

static const lt_backend_i *backend_of(lt_device_t d) { return lt_backend((lt_devtype)d.type); }

int lt_stream_new(lt_device_t d, lt_stream_t *out) {
  lt_device_t r;
  LT_TRY(resolve("Stream", d, &r));
  const lt_backend_i *be = backend_of(r);
  if (!be->stream_create) return lt_error("Stream: the %s backend has no streams", be->name);
  pthread_once(&pools_once, pools_init);
  stream_pool_t *p = &pools[r.type][r.index];
  int id = (int)(atomic_fetch_add(&p->next, 1) % LT_STREAM_POOL) + 1;
  pthread_mutex_lock(&p->lock);
  int rc = LT_OK;
  if (!p->made[id]) {
    rc = be->stream_create(r.index, &p->h[id]);
    if (rc == LT_OK) p->made[id] = true;
  }
  pthread_mutex_unlock(&p->lock);
  if (rc != LT_OK) return LT_ERR;
  out->device = r;
  out->id = id;
  return LT_OK;
}

int lt_stream_current(lt_device_t d, lt_stream_t *out) {
  lt_device_t r;
  LT_TRY(resolve("current_stream", d, &r));
  out->device = r;
  out->id = current_id[r.type][r.index];
  return LT_OK;
}

int lt_stream_default(lt_device_t d, lt_stream_t *out) {
  lt_device_t r;
  LT_TRY(resolve("default_stream", d, &r));
  out->device = r;
  out->id = 0;
  return LT_OK;
}

int lt_stream_set_current(lt_stream_t s) {
  if ((unsigned)s.device.type >= LT_NDEVTYPES || s.device.index < 0 || s.device.index >= LT_DEVICE_MAX ||
      s.id < 0 || s.id > LT_STREAM_POOL)
    return lt_error("stream: invalid stream");
  current_id[s.device.type][s.device.index] = (uint8_t)s.id;
  return LT_OK;
}

int lt_stream_current_id(lt_device_t d) {
  if ((unsigned)d.type >= LT_NDEVTYPES || d.index < 0 || d.index >= LT_DEVICE_MAX) return 0;
  return current_id[d.type][d.index];
}

void *lt_stream_handle(lt_stream_t s) {
  if (s.id <= 0 || s.id > LT_STREAM_POOL) return NULL;
  return pools[s.device.type][s.device.index].h[s.id];
}

int lt_stream_synchronize(lt_stream_t s) {
  const lt_backend_i *be = backend_of(s.device);
  return be->stream_synchronize(s.device.index, lt_stream_handle(s));
}

int lt_stream_query(lt_stream_t s, bool *done) {
  const lt_backend_i *be = backend_of(s.device);
  return be->stream_query(s.device.index, lt_stream_handle(s), done);
}

static char *fmt(lt_device_t d, char *buf) { return lt_device_format(d, buf, 32); }

int lt_stream_wait_event(lt_stream_t s, lt_event_t *e) {
  char a[32], b[32];
  if (e->device.type != s.device.type)
    return lt_error("wait_event: the event is for %s but the stream is on %s", fmt(e->device, a), fmt(s.device, b));
  if (!e->recorded) return LT_OK; /* as CUDA: waiting for an event never recorded is a no-op */
  /* a CUDA stream may wait for an event of another CUDA device; a CPU stream is synchronous and
     has nothing to wait for, whichever CPU device recorded the event */
  const lt_backend_i *be = backend_of(s.device);
  return be->stream_wait_event(s.device.index, lt_stream_handle(s), e->handle);
}

int lt_stream_wait_stream(lt_stream_t s, lt_stream_t other) {
  char a[32], b[32];
  if (s.device.type != other.device.type)
    return lt_error("wait_stream: a stream on %s cannot wait for a stream on %s", fmt(s.device, a),
                    fmt(other.device, b));
  if (lt_stream_eq(s, other)) return LT_OK;
  lt_event_t *e = lt_event_new(other.device, false);
  if (!e) return LT_ERR;
  int rc = lt_event_record(e, other);
  if (rc == LT_OK) rc = lt_stream_wait_event(s, e);
  lt_event_free(e);
  return rc;
}

lt_event_t *lt_event_new(lt_device_t d, bool enable_timing) {
  const lt_backend_i *be = lt_backend((lt_devtype)d.type);
  if (!be) {
    lt_error("Event: device type '%s' is not available in this build; available types: %s",
             lt_devtype_name((lt_devtype)d.type), lt_devtypes_available());
    return NULL;
  }
  lt_device_t r = d;
  if (d.index >= 0 && resolve("Event", d, &r) != LT_OK) return NULL;
  if (d.index < 0 && be->device_count() == 0 && resolve("Event", d, &r) != LT_OK) return NULL;
  lt_event_t *e = calloc(1, sizeof *e);
  if (!e) { lt_error("Event: out of host memory"); return NULL; }
  e->device = r;
  e->enable_timing = enable_timing;
  return e;
}

void lt_event_free(lt_event_t *e) {
  if (!e) return;
  if (e->handle) backend_of(e->device)->event_destroy(e->device.index, e->handle);
  free(e);
}

int lt_event_record(lt_event_t *e, lt_stream_t s) {
  char a[32], b[32];
  if (e->device.type != s.device.type || (e->device.index >= 0 && e->device.index != s.device.index))
    return lt_error("Event.record: the event is for %s but the stream is on %s", fmt(e->device, a), fmt(s.device, b));
  const lt_backend_i *be = backend_of(s.device);
  if (!e->handle) {
    LT_TRY(be->event_create(s.device.index, e->enable_timing, &e->handle));
    e->device = s.device;
  }
  LT_TRY(be->event_record(s.device.index, e->handle, lt_stream_handle(s)));
  e->recorded = true;
  return LT_OK;
}

int lt_event_synchronize(lt_event_t *e) {
  if (!e->recorded) return LT_OK;
  return backend_of(e->device)->event_synchronize(e->device.index, e->handle);
}

int lt_event_query(lt_event_t *e, bool *done) {
  if (!e->recorded) { *done = true; return LT_OK; }
  return backend_of(e->device)->event_query(e->device.index, e->handle, done);
}

int lt_event_elapsed_ms(lt_event_t *a, lt_event_t *b, double *ms) {
  char x[32], y[32];
  if (!a->enable_timing || !b->enable_timing)
    return lt_error("elapsed_time: Both events must be created with argument 'enable_timing=True'.");
  if (!a->recorded || !b->recorded)
    return lt_error("elapsed_time: Both events must be recorded before calculating elapsed time.");
  if (!lt_device_eq(a->device, b->device))
    return lt_error("elapsed_time: the events are on two devices, %s and %s", fmt(a->device, x), fmt(b->device, y));
  bool da, db;
  LT_TRY(lt_event_query(a, &da));
  LT_TRY(lt_event_query(b, &db));
  if (!da || !db) return lt_error("elapsed_time: both events must have completed (call synchronize() first)");
  return backend_of(a->device)->event_elapsed_ms(a->device.index, a->handle, b->handle, ms);
}

/* ---- the CPU backend's streams and events ---- */

typedef struct {
  atomic_bool held;
  atomic_uint_fast64_t holds;    /* generation of the current (or last) hold */
  atomic_uint_fast64_t released; /* the last generation released */
} cpu_stream_t;

typedef struct {
  double t;            /* seconds, CLOCK_MONOTONIC */
  cpu_stream_t *stream;
  uint64_t gen;        /* 0: complete when recorded; else complete once `released` reaches it */
} cpu_event_t;

static cpu_stream_t cpu_default[LT_DEVICE_MAX];

static cpu_stream_t *cpu_stream_of(int index, void *h) { return h ? h : &cpu_default[index]; }

int lt_cpu_stream_create(int index, void **h) {
  (void)index;
  cpu_stream_t *s = calloc(1, sizeof *s);
  if (!s) return lt_error("Stream: out of host memory");
  *h = s;
  return LT_OK;
}

int lt_cpu_stream_synchronize(int index, void *h) { (void)index; (void)h; return LT_OK; }

int lt_cpu_stream_query(int index, void *h, bool *done) {
  *done = !atomic_load(&cpu_stream_of(index, h)->held);
  return LT_OK;
}

int lt_cpu_stream_wait_event(int index, void *h, void *ev) { (void)index; (void)h; (void)ev; return LT_OK; }

int lt_cpu_event_create(int index, bool timing, void **ev) {
  (void)index; (void)timing;
  cpu_event_t *e = calloc(1, sizeof *e);
  if (!e) return lt_error("Event: out of host memory");
  *ev = e;
  return LT_OK;
}

void lt_cpu_event_destroy(int index, void *ev) { (void)index; free(ev); }

int lt_cpu_event_record(int index, void *ev, void *stream) {
  cpu_event_t *e = ev;
  cpu_stream_t *s = cpu_stream_of(index, stream);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  e->stream = s;
  e->gen = atomic_load(&s->held) ? atomic_load(&s->holds) : 0;
  return LT_OK;
}

static bool cpu_event_done(const cpu_event_t *e) {
  return e->gen == 0 || atomic_load(&e->stream->released) >= e->gen;
}

int lt_cpu_event_synchronize(int index, void *ev) {
  if (!cpu_event_done(ev))
    return lt_error("Event.synchronize: the event on cpu:%d is held pending by the test hook "
                    "(torch._stream_hold); waiting would never return", index);
  return LT_OK;
}

int lt_cpu_event_query(int index, void *ev, bool *done) {
  (void)index;
  *done = cpu_event_done(ev);
  return LT_OK;
}

int lt_cpu_event_elapsed_ms(int index, void *a, void *b, double *ms) {
  (void)index;
  *ms = 1000.0 * (((cpu_event_t *)b)->t - ((cpu_event_t *)a)->t);
  return LT_OK;
}

int lt_cpu_stream_hold(lt_stream_t s, bool hold) {
  if (s.device.type != LT_CPU) return lt_error("_stream_hold: only CPU streams can be held");
  cpu_stream_t *c = cpu_stream_of(s.device.index, lt_stream_handle(s));
  if (hold && !atomic_load(&c->held)) {
    atomic_fetch_add(&c->holds, 1);
    atomic_store(&c->held, true);
  } else if (!hold && atomic_load(&c->held)) {
    atomic_store(&c->released, atomic_load(&c->holds));
    atomic_store(&c->held, false);
  }
  return LT_OK;
}
