/* The caching allocator, written once for every backend. Two policies, chosen per device by its
   backend (lt_backend_i.split_segments) and switchable at run time (lt_memory_set_split):
   - class: requests rounded to size classes, a freed block reused whole for its class (the CPU's
     default: the cheapest on the hot path);
   - split: PyTorch's CUDACachingAllocator: segments from the device carved into blocks, best-fit
     reuse, splitting and merging (CUDA's).
   On out-of-memory the cache is freed and the request retried once. */
#ifndef LT_ALLOCATOR_H
#define LT_ALLOCATOR_H

#include "core/device.h"
#include "core/stream.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lt_block lt_block_t;

/* A block of at least n bytes on device d (index resolved). NULL with an error on failure; the
   error names the device and the requested, allocated and reserved bytes. n == 0 is allowed. */
lt_block_t *lt_alloc(lt_device_t d, size_t n);
void lt_free(lt_block_t *b);
void *lt_block_ptr(const lt_block_t *b);
size_t lt_block_size(const lt_block_t *b);

/* One statistic as PyTorch's Stat: the current value, its peak, and the sums of its increases
   (allocated) and decreases (freed). */
typedef struct {
  int64_t current, peak, allocated, freed;
} lt_stat_t;

/* PyTorch's StatType: every block, the small pool's (rounded sizes up to 1 MiB), the large's */
enum { LT_STAT_ALL, LT_STAT_SMALL_POOL, LT_STAT_LARGE_POOL, LT_NSTATPOOLS };
/* The families of memory_stats, as PyTorch: "allocation" is a block handed out and not yet freed;
   "active" also counts a freed block still waiting for the streams that used it (record_stream);
   an "inactive split" block is a free block that is part of a split segment (split policy only);
   a "segment" is a device allocation. */
enum {
  LT_STAT_ALLOCATION, LT_STAT_SEGMENT, LT_STAT_ACTIVE, LT_STAT_INACTIVE_SPLIT,
  LT_STAT_ALLOCATED_BYTES, LT_STAT_RESERVED_BYTES, LT_STAT_ACTIVE_BYTES, LT_STAT_INACTIVE_SPLIT_BYTES,
  LT_NSTATS
};
/* memory_stats' family names, in the order above ("allocation", ..., "inactive_split_bytes") */
extern const char *const lt_stat_names[LT_NSTATS];

typedef struct {
  lt_stat_t stat[LT_NSTATS][LT_NSTATPOOLS];
  int64_t num_alloc_retries, num_ooms;
  /* the same numbers of stat[..][LT_STAT_ALL] under short names */
  int64_t allocated, max_allocated;   /* bytes in blocks handed out */
  int64_t reserved, max_reserved;     /* bytes held from the device (in use + cached) */
  int64_t allocations, max_allocations; /* blocks handed out */
  int64_t active_blocks, max_active_blocks;
  int64_t active_bytes, max_active_bytes;
  int64_t inactive_split, max_inactive_split;
  int64_t inactive_split_bytes, max_inactive_split_bytes;
  int64_t segments, max_segments;     /* device allocations held */
  int64_t num_allocs, num_frees;      /* blocks handed out / returned, since start */
  int64_t num_device_allocs, num_device_frees;
  int64_t total_allocated_bytes, total_freed_bytes; /* cumulative */
} lt_memory_stats_t;

int lt_memory_stats(lt_device_t d, lt_memory_stats_t *out);
int lt_memory_reset_peak(lt_device_t d);
/* t's block was used on stream s (x:record_stream(s)): at its free the block is reused only after
   the work queued on s by then has completed. A no-op for s the allocating stream, or memory the
   allocator does not own. */
struct lt_tensor;
int lt_record_stream(struct lt_tensor *t, lt_stream_t s);
/* Freed blocks still waiting for the events of streams that used them (-1 with an error). */
int lt_memory_pending_blocks(lt_device_t d);
/* Return every cached free block to the device (split policy: every segment entirely free). */
int lt_memory_empty_cache(lt_device_t d);
/* Choose d's policy: split (true) or class (false); *was gets the previous one (may be NULL).
   Allowed at any time: the old policy's cache is given back, and its live blocks go back to the
   device (class) or their segments (split) when freed. */
int lt_memory_set_split(lt_device_t d, bool split, bool *was);

/* Bytes obtained from lt_alloc less the bytes given back with lt_free since the last call (per
   thread; negative when more was given back), on the devices the host can read (device false: the
   CPU's) or on the others (true: CUDA's): the Lua binding feeds this to the garbage collector so
   that loops making temporaries stay flat in memory. A kernel's work buffer, taken and given back
   within the op, adds nothing. */
int64_t lt_alloc_take_pressure(bool device);
/* Bytes in blocks handed out, over every device the host can read (device false) or every other. */
size_t lt_alloc_live_bytes(bool device);

#endif
