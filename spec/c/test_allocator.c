/* C unit tests of the caching allocator's split policy (core/allocator.c): a long random sequence
   of allocations and frees on two streams of a CPU device, checked after every step against a
   model kept here (live blocks never overlap and keep their bytes, the statistics are the sums of
   the live blocks, every free block merges back), and the rounding and splitting rules on fixed
   cases. Prints one line per failed check and ends with `N passed, N failed`. */
#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "core/stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                         \
  do {                                           \
    if (cond) passed++;                          \
    else {                                       \
      failed++;                                  \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                       \
      printf("\n");                              \
    }                                            \
  } while (0)

#define MiB ((size_t)1 << 20)

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) { /* xorshift64 */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* PyTorch's round_size, written out independently */
static size_t rounded(size_t n) { return n <= 512 ? 512 : ((n + 511) / 512) * 512; }

typedef struct {
  lt_block_t *b;
  size_t n;
  unsigned char tag;
} live_t;

static int by_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)lt_block_ptr(((const live_t *)x)->b), b = (uintptr_t)lt_block_ptr(((const live_t *)y)->b);
  return a < b ? -1 : a > b;
}

static void stamp(live_t *l) {
  unsigned char *p = lt_block_ptr(l->b);
  size_t sz = lt_block_size(l->b);
  p[0] = l->tag;
  p[sz / 2] = (unsigned char)(l->tag ^ 0x5a);
  p[sz - 1] = (unsigned char)(0xff - l->tag);
}

static bool intact(const live_t *l) {
  const unsigned char *p = lt_block_ptr(l->b);
  size_t sz = lt_block_size(l->b);
  unsigned char mid = (unsigned char)(l->tag ^ 0x5a), last = (unsigned char)(0xff - l->tag);
  return p[0] == l->tag && p[sz / 2] == mid && p[sz - 1] == last;
}

static void test_random(lt_device_t d) {
  enum { OPS = 4000, MAXLIVE = 200 };
  static live_t live[MAXLIVE];
  int nlive = 0, bad_size = 0, bad_stat = 0, bad_pool = 0, bad_overlap = 0, bad_bytes = 0;
  lt_stream_t side;
  CHECK(lt_stream_new(d, &side) == LT_OK, "a side stream");
  lt_stream_t def;
  lt_stream_default(d, &def);
  lt_memory_stats_t s0, s;
  lt_memory_stats(d, &s0);
  for (int op = 0; op < OPS; op++) {
    uint64_t r = next_rand();
    if (nlive < MAXLIVE && (nlive == 0 || r % 100 < 55)) {
      /* mostly small, some medium, a few large (up to 12 MiB) */
      uint64_t k = next_rand() % 100;
      size_t n = k < 70 ? next_rand() % 8192 : k < 95 ? next_rand() % (2 * MiB) : next_rand() % (12 * MiB);
      lt_stream_set_current(next_rand() % 3 == 0 ? side : def);
      lt_block_t *b = lt_alloc(d, n);
      lt_stream_set_current(def);
      if (!b) {
        CHECK(false, "alloc %zu: %s", n, lt_last_error());
        continue;
      }
      size_t sz = lt_block_size(b), want = rounded(n);
      /* a small block is exactly its rounded size (a small rest is always split); a large one
         keeps a rest of at most 1 MiB unsplit */
      if (want <= MiB ? sz != want : (sz < want || sz - want > MiB)) bad_size++;
      live[nlive] = (live_t){b, n, (unsigned char)(next_rand() & 0xff)};
      stamp(&live[nlive]);
      nlive++;
    } else {
      int i = (int)(r % (uint64_t)nlive);
      if (!intact(&live[i])) bad_bytes++;
      lt_free(live[i].b);
      live[i] = live[--nlive];
    }
    /* the model: sums of the live blocks; no two overlap; every byte stamped is still there */
    int64_t sum = 0;
    for (int i = 0; i < nlive; i++) sum += (int64_t)lt_block_size(live[i].b);
    lt_memory_stats(d, &s);
    if (s.allocated - s0.allocated != sum || s.allocations - s0.allocations != nlive ||
        s.active_blocks - s0.active_blocks != nlive ||
        s.reserved - s0.reserved < sum + (s.inactive_split_bytes - s0.inactive_split_bytes))
      bad_stat++;
    for (int k = 0; k < LT_NSTATS; k++) {
      const lt_stat_t *a = s.stat[k];
      if (a[LT_STAT_ALL].current != a[LT_STAT_SMALL_POOL].current + a[LT_STAT_LARGE_POOL].current ||
          a[LT_STAT_ALL].allocated - a[LT_STAT_ALL].freed != a[LT_STAT_ALL].current - s0.stat[k][LT_STAT_ALL].current +
                                                                   s0.stat[k][LT_STAT_ALL].allocated - s0.stat[k][LT_STAT_ALL].freed ||
          a[LT_STAT_ALL].peak < a[LT_STAT_ALL].current)
        bad_pool++;
    }
    qsort(live, (size_t)nlive, sizeof *live, by_ptr);
    for (int i = 0; i + 1 < nlive; i++)
      if ((uintptr_t)lt_block_ptr(live[i].b) + lt_block_size(live[i].b) > (uintptr_t)lt_block_ptr(live[i + 1].b))
        bad_overlap++;
    for (int i = 0; i < nlive; i++)
      if (!intact(&live[i])) bad_bytes++;
  }
  CHECK(bad_size == 0, "block sizes follow the rounding and split rules (%d wrong)", bad_size);
  CHECK(bad_stat == 0, "statistics match the live blocks after every step (%d wrong)", bad_stat);
  CHECK(bad_pool == 0, "all = small pool + large pool, current = allocated - freed, peak >= current (%d wrong)",
        bad_pool);
  CHECK(bad_overlap == 0, "live blocks never overlap (%d overlaps)", bad_overlap);
  CHECK(bad_bytes == 0, "live blocks keep their bytes (%d corrupted)", bad_bytes);
  while (nlive > 0) lt_free(live[--nlive].b);
  lt_memory_stats(d, &s);
  CHECK(s.allocated == s0.allocated && s.active_blocks == s0.active_blocks, "everything freed");
  /* every free block merged back into whole segments: nothing split is left */
  CHECK(s.inactive_split == s0.inactive_split && s.inactive_split_bytes == s0.inactive_split_bytes,
        "all blocks merged (%lld split blocks left)", (long long)(s.inactive_split - s0.inactive_split));
  CHECK(s.max_segments > s0.segments + 2, "several segments were used (%lld)", (long long)s.max_segments);
  lt_memory_empty_cache(d);
  lt_memory_stats(d, &s);
  CHECK(s.reserved == s0.reserved && s.segments == s0.segments, "empty_cache gives every segment back");
  CHECK(s.num_device_allocs - s0.num_device_allocs == s.num_device_frees - s0.num_device_frees,
        "as many segments given back as taken");
}

static void test_rules(lt_device_t d) {
  lt_memory_stats_t s0, s;
  lt_memory_empty_cache(d);
  lt_memory_stats(d, &s0);
  /* sizes just around the pool and segment boundaries: (request, block size, segment size) */
  struct { size_t n, block, segment; } cases[] = {
      {1, 512, 2 * MiB},
      {MiB, MiB, 2 * MiB},                       /* the largest small request */
      {MiB + 1, MiB + 512, 20 * MiB},            /* large, below kMinLargeAlloc: 20 MiB, split */
      {10 * MiB - 512, 10 * MiB - 512, 20 * MiB},
      {10 * MiB, 10 * MiB, 10 * MiB},            /* at kMinLargeAlloc: rounded to 2 MiB */
      {11 * MiB + 1, 12 * MiB, 12 * MiB},        /* the rest, 512 KiB - 512, is not split */
      {19 * MiB + 512 * 1024, 20 * MiB, 20 * MiB}, /* the reference's 19.5 MiB example */
      {21 * MiB, 21 * MiB + MiB, 22 * MiB},      /* 1 MiB of rest: not above kSmallSize */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lt_block_t *b = lt_alloc(d, cases[i].n);
    lt_memory_stats(d, &s);
    CHECK(b && lt_block_size(b) == cases[i].block, "%zu bytes: a block of %zu, got %zu", cases[i].n,
          cases[i].block, b ? lt_block_size(b) : 0);
    CHECK(s.reserved - s0.reserved == (int64_t)cases[i].segment, "%zu bytes: a segment of %zu, got %lld",
          cases[i].n, cases[i].segment, (long long)(s.reserved - s0.reserved));
    lt_free(b);
    lt_memory_empty_cache(d);
  }
  CHECK(lt_alloc(d, SIZE_MAX - 100) == NULL && strstr(lt_last_error(), "out of memory"),
        "a size that overflows the rounding fails cleanly: %s", lt_last_error());
}

int main(void) {
  lt_cpu_set_device_count(2);
  lt_device_t d = lt_device(LT_CPU, 1);
  bool was = true;
  CHECK(lt_memory_set_split(d, true, &was) == LT_OK && !was, "the CPU's default policy is class");
  test_rules(d);
  test_random(d);
  CHECK(lt_memory_set_split(lt_device(LT_CPU, 9), true, NULL) == LT_ERR &&
            strstr(lt_last_error(), "memory.set_policy"),
        "an absent device is an error: %s", lt_last_error());
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
