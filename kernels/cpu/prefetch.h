/* Asking for cache lines ahead of writing them (prefetchw where the target has it; a plain
   prefetch elsewhere).

   A loop that reads and then writes lines another core also holds (a parameter that DataParallel's
   replicas read on every core) makes each store wait for the other copy's invalidation, and stores
   complete in order: one line at a time. Asking for the lines to write a block ahead fetches them
   exclusive, many at once. The optimizers' steps (kernels/cpu/optim.c) do; measured on the
   project's 2-core machine, SGD's step of the MLP's weights right after a DataParallel backward
   0.30-0.32 -> 0.19-0.25 ms, Adam's 0.40-0.43 -> 0.24-0.25 (bench/RESULTS.md). The in-place
   elementwise ops do not: blocked so, `a:add_(b)` on 1000 floats in cache took 20% longer. */
#ifndef LT_KERNELS_CPU_PREFETCH_H
#define LT_KERNELS_CPU_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

/* the lines of elements [from, min(from + count, e)) of base, elements of `size` bytes */
static inline void lt_prefetch_for_write(const void *base, int64_t from, int64_t e, int64_t count,
                                         size_t size) {
  const char *p = (const char *)base;
  int64_t to = e - from > count ? from + count : e;
  int64_t step = (int64_t)(64 / size);
  for (int64_t i = from; i < to; i += step) __builtin_prefetch(p + i * (int64_t)size, 1, 3);
}

#endif
