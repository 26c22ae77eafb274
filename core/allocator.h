/* The caching allocator, written once for every backend: freed blocks are kept in size-binned
   pools per device and reused; on out-of-memory the cache is freed and the request retried once. */
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

typedef struct {
  int64_t allocated, max_allocated;   /* bytes in blocks handed out */
  int64_t reserved, max_reserved;     /* bytes held from the device (in use + cached) */
  int64_t active_blocks, max_active_blocks;
  int64_t segments, max_segments;     /* device allocations held */
  int64_t num_allocs, num_frees;      /* blocks handed out / returned, since start */
  int64_t num_device_allocs, num_device_frees;
  int64_t num_alloc_retries, num_ooms;
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
/* Return every cached free block to the device. */
int lt_memory_empty_cache(lt_device_t d);

/* Bytes newly obtained from lt_alloc since the last call (per thread): the Lua binding feeds this
   to the garbage collector so that loops making temporaries stay flat in memory. */
size_t lt_alloc_take_pressure(void);
/* Bytes in blocks handed out, over every device. */
size_t lt_alloc_live_bytes(void);

#endif
