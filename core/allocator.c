/* The caching allocator. Requests are rounded up to a size class (512 bytes at least, then four
   classes per power of two) and a freed block goes to its device's free list for its class, to be
   handed out again without asking the device. A device allocation that fails frees that device's
   cache and is retried once. Statistics are kept per device as PyTorch keeps them.
   Streams: a block belongs to the stream that was current on its device when it was allocated,
   and a cached block is handed out only for allocations on that stream (work queued on one stream
   is ordered, so the next user cannot overtake the last). A block used on other streams
   (lt_record_stream) is not cached at its free: an event is recorded on each of those streams and
   the block waits on the pool's pending list until all have completed. */
#include "core/allocator.h"
#include "core/error.h"
#include "core/stream.h"
#include "core/tensor.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCLASSES 256
#define MIN_BLOCK 512

struct lt_block {
  void *ptr;
  size_t size;       /* the class size */
  lt_device_t device;
  int cls;
  int stream;        /* id of the allocating stream on `device` */
  int nuses;         /* other streams that used it (lt_record_stream) */
  lt_stream_t *uses;
  lt_event_t **events; /* pending: one per use, recorded at free time */
  struct lt_block *next;
};

/* A small spin lock: the critical sections are a few list and counter updates (a device
   allocation on a cache miss is the long one), and an uncontended pthread mutex cost more than
   the rest of an allocation. */
typedef struct { atomic_flag f; } spin_t;
static inline void spin_lock(spin_t *l) {
  for (int i = 0; atomic_flag_test_and_set_explicit(&l->f, memory_order_acquire); i++)
    if (i > 64) sched_yield();
}
static inline void spin_unlock(spin_t *l) { atomic_flag_clear_explicit(&l->f, memory_order_release); }

typedef struct {
  spin_t lock;
  lt_block_t *free_list[NCLASSES];
  lt_block_t *pending;  /* freed, waiting for the events of the streams that used them */
  size_t cached_bytes;
  lt_memory_stats_t stats;
} device_pool_t;

static device_pool_t pools[LT_NDEVTYPES][LT_DEVICE_MAX];
static _Thread_local size_t pressure;


/* Size class of n: its index and rounded size. */
static int size_class(size_t n, size_t *rounded) {
  if (n <= MIN_BLOCK) { *rounded = MIN_BLOCK; return 0; }
  int e = 63 - __builtin_clzll((unsigned long long)n); /* 2^e <= n < 2^(e+1) */
  size_t step = (size_t)1 << (e - 2);
  size_t r = (n + step - 1) & ~(step - 1);
  *rounded = r;
  /* classes for e >= 9: 4 per power of two; r in (2^e, 2^(e+1)] */
  int sub = (int)((r >> (e - 2)) - 4); /* 1..4 */
  int cls = 4 * (e - 9) + sub;
  return cls < NCLASSES ? cls : NCLASSES - 1;
}

static void update_peak(int64_t cur, int64_t *peak) { if (cur > *peak) *peak = cur; }

static char *fmt_bytes(int64_t b, char *buf, size_t n) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; u++; }
  if (u == 0) snprintf(buf, n, "%lld B", (long long)b);
  else snprintf(buf, n, "%.2f %s", v, units[u]);
  return buf;
}

/* Give every cached block of a pool back to the device; the pool's lock is held. */
static void release_cache_locked(const lt_backend_i *be, device_pool_t *p, int index) {
  for (int c = 0; c < NCLASSES; c++) {
    lt_block_t *b = p->free_list[c];
    while (b) {
      lt_block_t *next = b->next;
      be->raw_free(index, b->ptr);
      p->stats.reserved -= (int64_t)b->size;
      p->stats.segments--;
      p->stats.num_device_frees++;
      free(b);
      b = next;
    }
    p->free_list[c] = NULL;
  }
  p->cached_bytes = 0;
}

static void clear_uses(lt_block_t *b) {
  if (b->events)
    for (int i = 0; i < b->nuses; i++) lt_event_free(b->events[i]);
  free(b->events);
  free(b->uses);
  b->events = NULL;
  b->uses = NULL;
  b->nuses = 0;
}

/* Move pending blocks whose events have all completed to the free lists; the lock is held (the
   queries are cheap: cudaEventQuery, or a flag on the CPU). */
static void process_pending_locked(device_pool_t *p) {
  lt_block_t **link = &p->pending;
  while (*link) {
    lt_block_t *b = *link;
    bool all = true;
    for (int i = 0; i < b->nuses && all; i++) {
      bool done = true;
      if (lt_event_query(b->events[i], &done) != LT_OK) done = true; /* a failed query: nothing to wait for */
      all = done;
    }
    if (!all) { link = &b->next; continue; }
    *link = b->next;
    clear_uses(b);
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached_bytes += b->size;
  }
}

static int64_t total_memory(const lt_backend_i *be, int index) {
  return be->total_memory ? be->total_memory(index) : -1;
}

lt_block_t *lt_alloc(lt_device_t d, size_t n) {
  const lt_backend_i *be = lt_backend((lt_devtype)d.type);
  if (!be || d.index < 0 || d.index >= LT_DEVICE_MAX) {
    lt_error("alloc: invalid device");
    return NULL;
  }
  size_t rounded;
  int cls = size_class(n, &rounded);
  if (rounded < n) { /* overflow */
    lt_error("out of memory: cannot allocate %zu bytes", n);
    return NULL;
  }
  device_pool_t *p = &pools[d.type][d.index];
  int stream = lt_stream_current_id(d);
  spin_lock(&p->lock);
  if (p->pending) process_pending_locked(p);
  lt_block_t *b = NULL;
  /* a block of this size on this stream (the last class holds every larger size) */
  lt_block_t **link = &p->free_list[cls];
  while (*link && ((*link)->size != rounded || (*link)->stream != stream)) link = &(*link)->next;
  if (*link) {
    b = *link;
    *link = b->next;
    p->cached_bytes -= b->size;
  } else {
    b = malloc(sizeof *b);
    void *ptr = NULL;
    if (b && be->raw_alloc(d.index, rounded, &ptr) != LT_OK) {
      p->stats.num_alloc_retries++;
      release_cache_locked(be, p, d.index);
      if (be->raw_alloc(d.index, rounded, &ptr) != LT_OK) ptr = NULL;
    }
    if (!b || !ptr) {
      char r1[32], r2[32], r3[32], r4[32], dev[16];
      int64_t total = total_memory(be, d.index);
      p->stats.num_ooms++;
      lt_error("out of memory on %s: tried to allocate %s (%zu bytes); %s (%lld bytes) allocated, %s (%lld bytes) "
               "reserved, %s (%lld bytes) total memory of the device",
               lt_device_format(d, dev, sizeof dev), fmt_bytes((int64_t)n, r1, sizeof r1), n,
               fmt_bytes(p->stats.allocated, r2, sizeof r2), (long long)p->stats.allocated,
               fmt_bytes(p->stats.reserved, r3, sizeof r3), (long long)p->stats.reserved,
               total >= 0 ? fmt_bytes(total, r4, sizeof r4) : "unknown", (long long)total);
      spin_unlock(&p->lock);
      free(b);
      return NULL;
    }
    b->ptr = ptr;
    b->size = rounded;
    b->device = d;
    b->cls = cls;
    b->stream = stream;
    b->nuses = 0;
    b->uses = NULL;
    b->events = NULL;
    p->stats.reserved += (int64_t)rounded;
    update_peak(p->stats.reserved, &p->stats.max_reserved);
    p->stats.segments++;
    update_peak(p->stats.segments, &p->stats.max_segments);
    p->stats.num_device_allocs++;
  }
  b->next = NULL;
  p->stats.allocated += (int64_t)b->size;
  update_peak(p->stats.allocated, &p->stats.max_allocated);
  p->stats.active_blocks++;
  update_peak(p->stats.active_blocks, &p->stats.max_active_blocks);
  p->stats.num_allocs++;
  p->stats.total_allocated_bytes += (int64_t)b->size;
  spin_unlock(&p->lock);
  pressure += b->size;
  return b;
}

void lt_free(lt_block_t *b) {
  if (!b) return;
  const lt_backend_i *be = lt_backend((lt_devtype)b->device.type);
  device_pool_t *p = &pools[b->device.type][b->device.index];
  /* used on other streams: an event on each, recorded now (outside the lock: on CUDA a record is
     a driver call), and the block waits until they complete */
  bool deferred = false;
  if (b->nuses > 0) {
    b->events = calloc((size_t)b->nuses, sizeof *b->events);
    deferred = b->events != NULL;
    for (int i = 0; i < b->nuses && deferred; i++) {
      b->events[i] = lt_event_new(b->uses[i].device, false);
      if (!b->events[i] || lt_event_record(b->events[i], b->uses[i]) != LT_OK) deferred = false;
    }
    if (!deferred) {
      /* no event to wait on: wait for the device instead, so that reuse stays safe */
      if (be->synchronize) (void)be->synchronize(b->device.index);
      clear_uses(b);
    }
  }
  spin_lock(&p->lock);
  p->stats.allocated -= (int64_t)b->size;
  p->stats.active_blocks--;
  p->stats.num_frees++;
  p->stats.total_freed_bytes += (int64_t)b->size;
  if (deferred) {
    b->next = p->pending;
    p->pending = b;
  } else if (be->cache_limit && p->cached_bytes + b->size > be->cache_limit) {
    be->raw_free(b->device.index, b->ptr);
    p->stats.reserved -= (int64_t)b->size;
    p->stats.segments--;
    p->stats.num_device_frees++;
    free(b);
  } else {
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached_bytes += b->size;
  }
  spin_unlock(&p->lock);
}

static device_pool_t *pool_of(const char *op, lt_device_t d) {
  lt_device_t r;
  if (lt_device_resolve(d, &r) != LT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    lt_error("%s: %s", op, msg);
    return NULL;
  }
  return &pools[r.type][r.index];
}

int lt_record_stream(lt_tensor_t *t, lt_stream_t s) {
  char a[32], c[32];
  if (t->device.type != s.device.type)
    return lt_error("record_stream: the tensor is on %s but the stream is on %s",
                    lt_device_format(t->device, a, sizeof a), lt_device_format(s.device, c, sizeof c));
  lt_block_t *b = t->storage->block;
  if (!b) return LT_OK; /* memory the allocator does not own: nothing to defer */
  if (lt_device_eq(s.device, b->device) && s.id == b->stream) return LT_OK;
  device_pool_t *p = &pools[b->device.type][b->device.index];
  spin_lock(&p->lock);
  int rc = LT_OK;
  bool seen = false;
  for (int i = 0; i < b->nuses && !seen; i++) seen = lt_stream_eq(b->uses[i], s);
  if (!seen) {
    lt_stream_t *u = realloc(b->uses, sizeof *u * (size_t)(b->nuses + 1));
    if (u) {
      b->uses = u;
      b->uses[b->nuses++] = s;
    } else {
      rc = LT_ERR;
    }
  }
  spin_unlock(&p->lock);
  return rc == LT_OK ? LT_OK : lt_error("record_stream: out of host memory");
}

int lt_memory_pending_blocks(lt_device_t d) {
  device_pool_t *p = pool_of("memory.pending", d);
  if (!p) return -1;
  int n = 0;
  spin_lock(&p->lock);
  process_pending_locked(p);
  for (lt_block_t *b = p->pending; b; b = b->next) n++;
  spin_unlock(&p->lock);
  return n;
}

void *lt_block_ptr(const lt_block_t *b) { return b->ptr; }
size_t lt_block_size(const lt_block_t *b) { return b->size; }


int lt_memory_stats(lt_device_t d, lt_memory_stats_t *out) {
  device_pool_t *p = pool_of("memory.stats", d);
  if (!p) return LT_ERR;
  spin_lock(&p->lock);
  *out = p->stats;
  spin_unlock(&p->lock);
  return LT_OK;
}

int lt_memory_reset_peak(lt_device_t d) {
  device_pool_t *p = pool_of("memory.reset_peak", d);
  if (!p) return LT_ERR;
  spin_lock(&p->lock);
  p->stats.max_allocated = p->stats.allocated;
  p->stats.max_reserved = p->stats.reserved;
  p->stats.max_active_blocks = p->stats.active_blocks;
  p->stats.max_segments = p->stats.segments;
  spin_unlock(&p->lock);
  return LT_OK;
}

int lt_memory_empty_cache(lt_device_t d) {
  device_pool_t *p = pool_of("memory.empty_cache", d);
  if (!p) return LT_ERR;
  lt_device_t r;
  lt_device_resolve(d, &r);
  const lt_backend_i *be = lt_backend((lt_devtype)r.type);
  if (be->synchronize) LT_TRY(be->synchronize(r.index));
  spin_lock(&p->lock);
  process_pending_locked(p); /* after the synchronize, a CUDA device's events have all completed */
  release_cache_locked(be, p, r.index);
  spin_unlock(&p->lock);
  return LT_OK;
}

size_t lt_alloc_live_bytes(void) {
  int64_t sum = 0;
  for (int t = 0; t < LT_NDEVTYPES; t++)
    for (int i = 0; i < LT_DEVICE_MAX; i++) {
      device_pool_t *p = &pools[t][i];
      spin_lock(&p->lock);
      sum += p->stats.allocated;
      spin_unlock(&p->lock);
    }
  return sum > 0 ? (size_t)sum : 0;
}

size_t lt_alloc_take_pressure(void) {
  size_t p = pressure;
  pressure = 0;
  return p;
}
