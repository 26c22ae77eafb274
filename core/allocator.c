/* The caching allocator, one for every device type; the backend picks the policy of its devices
   (lt_backend_i.split_segments) and lt_memory_set_split changes it per device at run time.
   Class policy (the CPU's default): requests are rounded up to a size class (512 bytes at least,
   then four classes per power of two), each block is a device allocation of its own, and a freed
   block goes to its device's free list for its class, to be handed out again whole.
   Split policy (CUDA's): PyTorch's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp, see
   the reference notes on PyTorch, pytorch_semantics.md section 3): device allocations (segments) are
   carved into blocks; a request takes the smallest free block of its pool and stream that fits
   (best fit), split when the rest is large enough; a freed block merges with its free neighbours;
   empty_cache gives back the segments entirely free.
   Either way, a device allocation that fails frees the device's cache and is retried once, and
   statistics are kept per device as PyTorch keeps them.
   Streams: a block belongs to the stream that was current on its device when it was allocated (a
   segment's blocks all belong to its stream), and a cached block is handed out only for
   allocations on that stream (work queued on one stream is ordered, so the next user cannot
   overtake the last). A block used on other streams (lt_record_stream) is not cached at its free:
   an event is recorded on each of those streams and the block waits on the pool's pending list
   until all have completed. */
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

/* The split policy's constants, PyTorch's (CUDACachingAllocator.cpp; pytorch_semantics.md 3) */
#define K_MIN_BLOCK ((size_t)512)            /* kMinBlockSize: requests round up to a multiple */
#define K_SMALL_SIZE ((size_t)1 << 20)       /* kSmallSize: the largest small-pool request */
#define K_SMALL_BUFFER ((size_t)2 << 20)     /* kSmallBuffer: a small-pool segment */
#define K_MIN_LARGE_ALLOC ((size_t)10 << 20) /* kMinLargeAlloc: below it, a kLargeBuffer segment */
#define K_LARGE_BUFFER ((size_t)20 << 20)    /* kLargeBuffer */
#define K_ROUND_LARGE ((size_t)2 << 20)      /* kRoundLarge: larger segments round up to it */

enum { MODE_UNSET = 0, MODE_CLASS, MODE_SPLIT };

struct lt_block {
  void *ptr;
  size_t size;       /* class policy: the class size; split policy: the block's bytes */
  lt_device_t device;
  int cls;
  int stream;        /* id of the allocating stream on `device` */
  int nuses;         /* other streams that used it (lt_record_stream) */
  lt_stream_t *uses;
  lt_event_t **events; /* pending: one per use, recorded at free time */
  struct lt_block *next; /* class free list, pending list, or the spare structs */
  /* split policy */
  bool in_segment;   /* made by the split policy: a piece of a segment */
  bool is_free;      /* in its pool's free set */
  bool small;        /* of the small pool */
  struct lt_block *seg_prev, *seg_next; /* neighbours in its segment, in address order */
};

/* A pool's free blocks ordered by (stream, size, address), as PyTorch's BlockComparator: the best
   fit for (stream, n) is the first block not below (stream, n, 0). A sorted array: a lookup is a
   binary search, an insert or removal one memmove of pointers, cheaper than a tree's nodes for the
   few hundred free blocks a pool holds. `cap` is kept at least the pool's block count, free or
   not, so that a free (which cannot fail) never needs to grow it. */
typedef struct {
  lt_block_t **v;
  int n, cap, nblocks;
} free_set_t;

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
  int mode;             /* MODE_*: set from the backend at the first allocation */
  lt_block_t *free_list[NCLASSES]; /* class policy */
  free_set_t sets[2];   /* split policy: the small pool, the large pool */
  lt_block_t *spare;    /* block structs to reuse (a split needs one, a merge gives one back) */
  lt_block_t *pending;  /* freed, waiting for the events of the streams that used them */
  size_t cached_bytes;
  lt_stat_t stat[LT_NSTATS][LT_NSTATPOOLS];
  int64_t pend_blocks[2], pend_bytes[2]; /* the pending blocks of the small and large pools */
  int64_t num_alloc_retries, num_ooms;
} device_pool_t;

static device_pool_t pools[LT_NDEVTYPES][LT_DEVICE_MAX];
static _Thread_local int64_t pressure, device_pressure; /* host-accessible devices', the others' */


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

const char *const lt_stat_names[LT_NSTATS] = {
    "allocation", "segment", "active", "inactive_split",
    "allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes"};

/* A statistic goes up or down by v >= 0 in the block's pool (PyTorch's update_stat on the
   StatTypes {AGGREGATE, the pool}). Only the pools' numbers are kept, and "all"'s peak: its
   current, allocated and freed are the pools' sums (lt_memory_stats), which halves the writes on
   the hot path. The direction is known at each call: no branch on it. */
static inline void stat_inc(device_pool_t *p, int kind, bool small, int64_t v) {
  lt_stat_t *k = p->stat[kind], *s = &k[LT_STAT_SMALL_POOL + !small];
  s->current += v;
  s->allocated += v;
  if (s->current > s->peak) s->peak = s->current;
  int64_t all = k[LT_STAT_SMALL_POOL].current + k[LT_STAT_LARGE_POOL].current;
  if (all > k[LT_STAT_ALL].peak) k[LT_STAT_ALL].peak = all;
}
static inline void stat_dec(device_pool_t *p, int kind, bool small, int64_t v) {
  lt_stat_t *s = &p->stat[kind][LT_STAT_SMALL_POOL + !small];
  s->current -= v;
  s->freed += v;
}

/* "active" is "allocation" plus the pending blocks (freed, waiting for the streams that used
   them), and "active_bytes" likewise: derived in lt_memory_stats, not counted on the hot path. Only
   their peaks need care, above allocation's while blocks are pending: checked at each allocation
   made then. */
static void active_peaks(device_pool_t *p) {
  lt_stat_t *al = p->stat[LT_STAT_ALLOCATION], *ab = p->stat[LT_STAT_ALLOCATED_BYTES];
  lt_stat_t *ac = p->stat[LT_STAT_ACTIVE], *acb = p->stat[LT_STAT_ACTIVE_BYTES];
  int64_t all = 0, all_bytes = 0;
  for (int k = 0; k < 2; k++) {
    int j = LT_STAT_SMALL_POOL + k;
    int64_t n = al[j].current + p->pend_blocks[k], bytes = ab[j].current + p->pend_bytes[k];
    if (n > ac[j].peak) ac[j].peak = n;
    if (bytes > acb[j].peak) acb[j].peak = bytes;
    all += n;
    all_bytes += bytes;
  }
  if (all > ac[LT_STAT_ALL].peak) ac[LT_STAT_ALL].peak = all;
  if (all_bytes > acb[LT_STAT_ALL].peak) acb[LT_STAT_ALL].peak = all_bytes;
}

static char *fmt_bytes(int64_t b, char *buf, size_t n) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; u++; }
  if (u == 0) snprintf(buf, n, "%lld B", (long long)b);
  else snprintf(buf, n, "%.2f %s", v, units[u]);
  return buf;
}

/* ---- the split policy's free sets ---- */
static inline int key_cmp(int stream, size_t size, uintptr_t ptr, const lt_block_t *b) {
  if (stream != b->stream) return stream < b->stream ? -1 : 1;
  if (size != b->size) return size < b->size ? -1 : 1;
  uintptr_t q = (uintptr_t)b->ptr;
  return ptr < q ? -1 : ptr > q;
}

/* the index of the first block not below the key */
static int set_lower(const free_set_t *s, int stream, size_t size, uintptr_t ptr) {
  int lo = 0, hi = s->n;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (key_cmp(stream, size, ptr, s->v[mid]) > 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int set_reserve(free_set_t *s, int n) {
  if (n <= s->cap) return LT_OK;
  int cap = s->cap ? s->cap : 64;
  while (cap < n) cap *= 2;
  lt_block_t **v = realloc(s->v, sizeof *v * (size_t)cap);
  if (!v) return LT_ERR;
  s->v = v;
  s->cap = cap;
  return LT_OK;
}

static inline bool is_split(const lt_block_t *b) { return b->seg_prev || b->seg_next; }

/* Into / out of the free set, keeping the cached and inactive-split statistics. */
static void free_add(device_pool_t *p, lt_block_t *b) {
  free_set_t *s = &p->sets[!b->small];
  int i = set_lower(s, b->stream, b->size, (uintptr_t)b->ptr);
  memmove(&s->v[i + 1], &s->v[i], sizeof *s->v * (size_t)(s->n - i));
  s->v[i] = b;
  s->n++;
  b->is_free = true;
  p->cached_bytes += b->size;
  if (is_split(b)) {
    stat_inc(p, LT_STAT_INACTIVE_SPLIT, b->small, 1);
    stat_inc(p, LT_STAT_INACTIVE_SPLIT_BYTES, b->small, (int64_t)b->size);
  }
}

/* Out of the free set: the block at index i of its set. */
static void free_del_at(device_pool_t *p, free_set_t *s, int i) {
  lt_block_t *b = s->v[i];
  memmove(&s->v[i], &s->v[i + 1], sizeof *s->v * (size_t)(s->n - i - 1));
  s->n--;
  b->is_free = false;
  p->cached_bytes -= b->size;
  if (is_split(b)) {
    stat_dec(p, LT_STAT_INACTIVE_SPLIT, b->small, 1);
    stat_dec(p, LT_STAT_INACTIVE_SPLIT_BYTES, b->small, (int64_t)b->size);
  }
}

static void free_del(device_pool_t *p, lt_block_t *b) {
  free_set_t *s = &p->sets[!b->small];
  free_del_at(p, s, set_lower(s, b->stream, b->size, (uintptr_t)b->ptr));
}

static lt_block_t *new_block(device_pool_t *p) {
  lt_block_t *b = p->spare;
  if (b) p->spare = b->next;
  else if (!(b = malloc(sizeof *b))) return NULL;
  memset(b, 0, sizeof *b);
  return b;
}

static void recycle(device_pool_t *p, lt_block_t *b) {
  b->next = p->spare;
  p->spare = b;
}

/* Give a segment (a block that is its whole segment, out of the free set) back to the device. */
static void release_segment(device_pool_t *p, const lt_backend_i *be, lt_block_t *b) {
  be->raw_free(b->device.index, b->ptr);
  stat_dec(p, LT_STAT_RESERVED_BYTES, b->small, (int64_t)b->size);
  stat_dec(p, LT_STAT_SEGMENT, b->small, 1);
  p->sets[!b->small].nblocks--;
  recycle(p, b);
}

/* Give back every segment entirely free (after merging, a single free block); the lock is held. */
static void release_free_segments_locked(device_pool_t *p, const lt_backend_i *be) {
  for (int k = 0; k < 2; k++) {
    free_set_t *s = &p->sets[k];
    int j = 0;
    for (int i = 0; i < s->n; i++) {
      lt_block_t *b = s->v[i];
      if (is_split(b)) { s->v[j++] = b; continue; }
      b->is_free = false;
      p->cached_bytes -= b->size;
      release_segment(p, be, b);
    }
    s->n = j;
  }
}

/* Give every cached class-policy block of a pool back to the device; the lock is held. */
static void release_class_cache_locked(const lt_backend_i *be, device_pool_t *p, int index) {
  for (int c = 0; c < NCLASSES; c++) {
    lt_block_t *b = p->free_list[c];
    while (b) {
      lt_block_t *next = b->next;
      be->raw_free(index, b->ptr);
      stat_dec(p, LT_STAT_RESERVED_BYTES, b->small, (int64_t)b->size);
      stat_dec(p, LT_STAT_SEGMENT, b->small, 1);
      p->cached_bytes -= b->size;
      free(b);
      b = next;
    }
    p->free_list[c] = NULL;
  }
}

static void release_cache_locked(const lt_backend_i *be, device_pool_t *p, int index) {
  release_class_cache_locked(be, p, index);
  release_free_segments_locked(p, be);
}

/* A split-policy block back to its segment: merged with its free neighbours (one segment holds
   one stream's blocks, so they are the same stream's), then cached, or the segment given back
   when it is entirely free and not to be cached. The lock is held. */
static void split_free_locked(device_pool_t *p, const lt_backend_i *be, lt_block_t *b) {
  free_set_t *s = &p->sets[!b->small];
  lt_block_t *q = b->seg_prev;
  if (q && q->is_free) {
    free_del(p, q);
    q->size += b->size;
    q->seg_next = b->seg_next;
    if (b->seg_next) b->seg_next->seg_prev = q;
    recycle(p, b);
    s->nblocks--;
    b = q;
  }
  q = b->seg_next;
  if (q && q->is_free) {
    free_del(p, q);
    b->size += q->size;
    b->seg_next = q->seg_next;
    if (q->seg_next) q->seg_next->seg_prev = b;
    recycle(p, q);
    s->nblocks--;
  }
  if (!is_split(b) && (p->mode != MODE_SPLIT || (be->cache_limit && p->cached_bytes + b->size > be->cache_limit))) {
    release_segment(p, be, b);
    return;
  }
  free_add(p, b);
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

/* A block no longer in use by any stream: cached, or given back to the device. */
static void free_block_locked(device_pool_t *p, const lt_backend_i *be, lt_block_t *b) {
  if (b->in_segment) {
    split_free_locked(p, be, b);
  } else if (p->mode != MODE_CLASS || (be->cache_limit && p->cached_bytes + b->size > be->cache_limit)) {
    be->raw_free(b->device.index, b->ptr);
    stat_dec(p, LT_STAT_RESERVED_BYTES, b->small, (int64_t)b->size);
    stat_dec(p, LT_STAT_SEGMENT, b->small, 1);
    free(b);
  } else {
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached_bytes += b->size;
  }
}

/* Cache the pending blocks whose events have all completed; the lock is held (the queries are
   cheap: cudaEventQuery, or a flag on the CPU). */
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
    p->pend_blocks[!b->small]--;
    p->pend_bytes[!b->small] -= (int64_t)b->size;
    free_block_locked(p, lt_backend((lt_devtype)b->device.type), b);
  }
}

static int64_t total_memory(const lt_backend_i *be, int index) {
  return be->total_memory ? be->total_memory(index) : -1;
}

/* The out-of-memory error (PyTorch's numbers: requested, allocated, reserved, total); the lock is
   held. */
static void oom_locked(device_pool_t *p, const lt_backend_i *be, lt_device_t d, size_t n) {
  char r1[32], r2[32], r3[32], r4[32], dev[16];
  int64_t total = total_memory(be, d.index);
  lt_stat_t *ab = p->stat[LT_STAT_ALLOCATED_BYTES], *rb = p->stat[LT_STAT_RESERVED_BYTES];
  int64_t allocated = ab[LT_STAT_SMALL_POOL].current + ab[LT_STAT_LARGE_POOL].current;
  int64_t reserved = rb[LT_STAT_SMALL_POOL].current + rb[LT_STAT_LARGE_POOL].current;
  p->num_ooms++;
  char avail_s[80] = "", r5[32];
  int64_t avail = be->available_memory_i ? be->available_memory_i(d.index) : -1;
  if (avail >= 0)
    snprintf(avail_s, sizeof avail_s, ", of which %s (%lld bytes) available", fmt_bytes(avail, r5, sizeof r5),
             (long long)avail);
  lt_error("out of memory on %s: tried to allocate %s (%zu bytes); %s (%lld bytes) allocated, %s (%lld bytes) "
           "reserved, %s (%lld bytes) total memory of the device%s",
           lt_device_format(d, dev, sizeof dev), fmt_bytes((int64_t)n, r1, sizeof r1), n,
           fmt_bytes(allocated, r2, sizeof r2), (long long)allocated,
           fmt_bytes(reserved, r3, sizeof r3), (long long)reserved,
           total >= 0 ? fmt_bytes(total, r4, sizeof r4) : "unknown", (long long)total, avail_s);
}

/* A device allocation; when the device is out of memory, the cache is given back and the
   allocation retried once (PyTorch frees the cached unsplit blocks, then retries). */
static void *raw_alloc_retry_locked(device_pool_t *p, const lt_backend_i *be, int index, size_t n) {
  void *ptr = NULL;
  if (be->raw_alloc(index, n, &ptr) == LT_OK) return ptr;
  p->num_alloc_retries++;
  release_cache_locked(be, p, index);
  if (be->raw_alloc(index, n, &ptr) == LT_OK) return ptr;
  return NULL;
}

static void count_segment(device_pool_t *p, size_t size, bool small) {
  stat_inc(p, LT_STAT_RESERVED_BYTES, small, (int64_t)size);
  stat_inc(p, LT_STAT_SEGMENT, small, 1);
}

/* The split policy's allocation (PyTorch's malloc: get_free_block, alloc_block, maybe split);
   NULL with the error set. The lock is held. */
static lt_block_t *split_alloc_locked(device_pool_t *p, const lt_backend_i *be, lt_device_t d, size_t n,
                                      int stream) {
  /* round_size: max(512, ceil(n / 512) * 512) */
  size_t size = n <= K_MIN_BLOCK ? K_MIN_BLOCK : (n + K_MIN_BLOCK - 1) & ~(K_MIN_BLOCK - 1);
  if (size < n) { oom_locked(p, be, d, n); return NULL; }
  /* get_pool: the small pool for rounded sizes up to kSmallSize */
  bool small = size <= K_SMALL_SIZE;
  free_set_t *s = &p->sets[!small];
  lt_block_t *b = NULL;
  int i = set_lower(s, stream, size, 0);
  if (i < s->n && s->v[i]->stream == stream) { /* best fit: the smallest of this stream that fits */
    b = s->v[i];
    free_del_at(p, s, i);
  } else {
    /* get_allocation_size: kSmallBuffer for the small pool, kLargeBuffer below kMinLargeAlloc,
       else the size rounded up to kRoundLarge */
    size_t seg = small ? K_SMALL_BUFFER
               : size < K_MIN_LARGE_ALLOC ? K_LARGE_BUFFER
               : (size + K_ROUND_LARGE - 1) & ~(K_ROUND_LARGE - 1);
    if (seg < size) { oom_locked(p, be, d, n); return NULL; }
    /* room in the free set for the segment's block and a split's rest, before anything can fail */
    if (set_reserve(s, s->nblocks + 2) != LT_OK || !(b = new_block(p))) {
      lt_error("out of host memory: the allocator's bookkeeping for %zu bytes on a device", n);
      return NULL;
    }
    void *ptr = raw_alloc_retry_locked(p, be, d.index, seg);
    if (!ptr) {
      recycle(p, b);
      oom_locked(p, be, d, n);
      return NULL;
    }
    b->ptr = ptr;
    b->size = seg;
    b->device = d;
    b->stream = stream;
    b->in_segment = true;
    b->small = small;
    s->nblocks++;
    count_segment(p, seg, small);
  }
  /* should_split: the small pool splits a rest of at least kMinBlockSize, the large pool one above
     kSmallSize (no max_split_size here) */
  size_t rest = b->size - size;
  lt_block_t *r;
  if ((small ? rest >= K_MIN_BLOCK : rest > K_SMALL_SIZE) && set_reserve(s, s->nblocks + 1) == LT_OK &&
      (r = new_block(p))) {
    /* without a struct for the rest (host memory short) the block is handed out whole */
    r->ptr = (char *)b->ptr + size;
    r->size = rest;
    r->device = b->device;
    r->stream = b->stream;
    r->in_segment = true;
    r->small = small;
    r->seg_prev = b;
    r->seg_next = b->seg_next;
    if (b->seg_next) b->seg_next->seg_prev = r;
    b->seg_next = r;
    b->size = size;
    s->nblocks++;
    free_add(p, r);
  }
  return b;
}

lt_block_t *lt_alloc(lt_device_t d, size_t n) {
  const lt_backend_i *be = lt_backend((lt_devtype)d.type);
  if (!be || d.index < 0 || d.index >= LT_DEVICE_MAX) {
    lt_error("alloc: invalid device");
    return NULL;
  }
  device_pool_t *p = &pools[d.type][d.index];
  int stream = lt_stream_current_id(d);
  spin_lock(&p->lock);
  if (p->pending) process_pending_locked(p);
  lt_block_t *b = NULL;
  if (__builtin_expect(p->mode != MODE_CLASS, 0)) {
    if (p->mode == MODE_UNSET) p->mode = be->split_segments ? MODE_SPLIT : MODE_CLASS;
    if (p->mode == MODE_SPLIT) {
      b = split_alloc_locked(p, be, d, n, stream);
      if (!b) {
        spin_unlock(&p->lock);
        return NULL;
      }
      goto done;
    }
  }
  size_t rounded;
  int cls = size_class(n, &rounded);
  if (rounded < n) { /* overflow */
    spin_unlock(&p->lock);
    lt_error("out of memory: cannot allocate %zu bytes", n);
    return NULL;
  }
  /* a block of this size on this stream (the last class holds every larger size) */
  lt_block_t **link = &p->free_list[cls];
  while (*link && ((*link)->size != rounded || (*link)->stream != stream)) link = &(*link)->next;
  if (*link) {
    b = *link;
    *link = b->next;
    p->cached_bytes -= b->size;
  } else {
    b = malloc(sizeof *b);
    void *ptr = b ? raw_alloc_retry_locked(p, be, d.index, rounded) : NULL;
    if (!ptr) {
      oom_locked(p, be, d, n);
      spin_unlock(&p->lock);
      free(b);
      return NULL;
    }
    memset(b, 0, sizeof *b);
    b->ptr = ptr;
    b->size = rounded;
    b->device = d;
    b->cls = cls;
    b->stream = stream;
    b->small = rounded <= K_SMALL_SIZE; /* PyTorch's pools, for the statistics */
    count_segment(p, rounded, b->small);
  }
  b->next = NULL;
done:;
  stat_inc(p, LT_STAT_ALLOCATED_BYTES, b->small, (int64_t)b->size);
  stat_inc(p, LT_STAT_ALLOCATION, b->small, 1);
  if (__builtin_expect(p->pending != NULL, 0)) active_peaks(p);
  spin_unlock(&p->lock);
  if (be->host_accessible) pressure += (int64_t)b->size;
  else device_pressure += (int64_t)b->size;
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
  if (be->host_accessible) pressure -= (int64_t)b->size;
  else device_pressure -= (int64_t)b->size;
  spin_lock(&p->lock);
  stat_dec(p, LT_STAT_ALLOCATED_BYTES, b->small, (int64_t)b->size);
  stat_dec(p, LT_STAT_ALLOCATION, b->small, 1);
  if (deferred) {
    /* still active (PyTorch's free_block runs when the events complete) */
    b->next = p->pending;
    p->pending = b;
    p->pend_blocks[!b->small]++;
    p->pend_bytes[!b->small] += (int64_t)b->size;
  } else {
    free_block_locked(p, be, b);
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
  memcpy(out->stat, p->stat, sizeof out->stat);
  int64_t pend[2][2] = {{p->pend_blocks[0], p->pend_bytes[0]}, {p->pend_blocks[1], p->pend_bytes[1]}};
  out->num_alloc_retries = p->num_alloc_retries;
  out->num_ooms = p->num_ooms;
  spin_unlock(&p->lock);
  /* active = allocation + pending; its peak is at least allocation's */
  for (int bytes = 0; bytes < 2; bytes++) {
    lt_stat_t *al = out->stat[bytes ? LT_STAT_ALLOCATED_BYTES : LT_STAT_ALLOCATION];
    lt_stat_t *ac = out->stat[bytes ? LT_STAT_ACTIVE_BYTES : LT_STAT_ACTIVE];
    for (int k = 0; k < 2; k++) {
      int j = LT_STAT_SMALL_POOL + k;
      ac[j].current = al[j].current + pend[k][bytes];
      ac[j].allocated = al[j].allocated;
      ac[j].freed = al[j].freed - pend[k][bytes];
      if (al[j].peak > ac[j].peak) ac[j].peak = al[j].peak;
    }
    if (al[LT_STAT_ALL].peak > ac[LT_STAT_ALL].peak) ac[LT_STAT_ALL].peak = al[LT_STAT_ALL].peak;
  }
  for (int k = 0; k < LT_NSTATS; k++) {
    lt_stat_t *a = &out->stat[k][LT_STAT_ALL], *sm = &out->stat[k][LT_STAT_SMALL_POOL],
              *lg = &out->stat[k][LT_STAT_LARGE_POOL];
    a->current = sm->current + lg->current;
    a->allocated = sm->allocated + lg->allocated;
    a->freed = sm->freed + lg->freed;
  }
#define ALL(k) (out->stat[LT_STAT_##k][LT_STAT_ALL])
  out->allocated = ALL(ALLOCATED_BYTES).current;
  out->max_allocated = ALL(ALLOCATED_BYTES).peak;
  out->total_allocated_bytes = ALL(ALLOCATED_BYTES).allocated;
  out->total_freed_bytes = ALL(ALLOCATED_BYTES).freed;
  out->reserved = ALL(RESERVED_BYTES).current;
  out->max_reserved = ALL(RESERVED_BYTES).peak;
  out->allocations = ALL(ALLOCATION).current;
  out->max_allocations = ALL(ALLOCATION).peak;
  out->num_allocs = ALL(ALLOCATION).allocated;
  out->num_frees = ALL(ALLOCATION).freed;
  out->active_blocks = ALL(ACTIVE).current;
  out->max_active_blocks = ALL(ACTIVE).peak;
  out->active_bytes = ALL(ACTIVE_BYTES).current;
  out->max_active_bytes = ALL(ACTIVE_BYTES).peak;
  out->inactive_split = ALL(INACTIVE_SPLIT).current;
  out->max_inactive_split = ALL(INACTIVE_SPLIT).peak;
  out->inactive_split_bytes = ALL(INACTIVE_SPLIT_BYTES).current;
  out->max_inactive_split_bytes = ALL(INACTIVE_SPLIT_BYTES).peak;
  out->segments = ALL(SEGMENT).current;
  out->max_segments = ALL(SEGMENT).peak;
  out->num_device_allocs = ALL(SEGMENT).allocated;
  out->num_device_frees = ALL(SEGMENT).freed;
#undef ALL
  return LT_OK;
}

int lt_memory_reset_peak(lt_device_t d) {
  device_pool_t *p = pool_of("memory.reset_peak", d);
  if (!p) return LT_ERR;
  spin_lock(&p->lock);
  for (int k = 0; k < LT_NSTATS; k++) {
    lt_stat_t *st = p->stat[k];
    st[LT_STAT_SMALL_POOL].peak = st[LT_STAT_SMALL_POOL].current;
    st[LT_STAT_LARGE_POOL].peak = st[LT_STAT_LARGE_POOL].current;
    st[LT_STAT_ALL].peak = st[LT_STAT_SMALL_POOL].current + st[LT_STAT_LARGE_POOL].current;
  }
  /* active's: allocation's plus the pending blocks (their current values) */
  for (int bytes = 0; bytes < 2; bytes++) {
    lt_stat_t *al = p->stat[bytes ? LT_STAT_ALLOCATED_BYTES : LT_STAT_ALLOCATION];
    lt_stat_t *ac = p->stat[bytes ? LT_STAT_ACTIVE_BYTES : LT_STAT_ACTIVE];
    const int64_t *pend = bytes ? p->pend_bytes : p->pend_blocks;
    ac[LT_STAT_SMALL_POOL].peak = al[LT_STAT_SMALL_POOL].current + pend[0];
    ac[LT_STAT_LARGE_POOL].peak = al[LT_STAT_LARGE_POOL].current + pend[1];
    ac[LT_STAT_ALL].peak = ac[LT_STAT_SMALL_POOL].peak + ac[LT_STAT_LARGE_POOL].peak;
  }
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

int lt_memory_set_split(lt_device_t d, bool split, bool *was) {
  device_pool_t *p = pool_of("memory.set_policy", d);
  if (!p) return LT_ERR;
  lt_device_t r;
  lt_device_resolve(d, &r);
  const lt_backend_i *be = lt_backend((lt_devtype)r.type);
  spin_lock(&p->lock);
  if (p->mode == MODE_UNSET) p->mode = be->split_segments ? MODE_SPLIT : MODE_CLASS;
  if (was) *was = p->mode == MODE_SPLIT;
  int mode = split ? MODE_SPLIT : MODE_CLASS;
  if (mode != p->mode) {
    /* the old policy's cache is never searched again: give it back now */
    p->mode = mode;
    release_cache_locked(be, p, r.index);
  }
  spin_unlock(&p->lock);
  return LT_OK;
}

size_t lt_alloc_live_bytes(bool device) {
  int64_t sum = 0;
  for (int t = 0; t < LT_NDEVTYPES; t++) {
    const lt_backend_i *be = lt_backend((lt_devtype)t);
    if (!be || be->host_accessible == device) continue;
    for (int i = 0; i < LT_DEVICE_MAX; i++) {
      device_pool_t *p = &pools[t][i];
      spin_lock(&p->lock);
      sum += p->stat[LT_STAT_ALLOCATED_BYTES][LT_STAT_SMALL_POOL].current +
             p->stat[LT_STAT_ALLOCATED_BYTES][LT_STAT_LARGE_POOL].current;
      spin_unlock(&p->lock);
    }
  }
  return sum > 0 ? (size_t)sum : 0;
}

int64_t lt_alloc_take_pressure(bool device) {
  int64_t *q = device ? &device_pressure : &pressure, p = *q;
  *q = 0;
  return p;
}
