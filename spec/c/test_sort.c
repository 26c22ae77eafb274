/* Tests of kernels/cpu/sort.c's parts that the Lua specs cannot reach on purpose: the heapsort
   that introsort falls back to past its depth limit (only an adversarial input gets there), the
   quicksort at every depth, the selection of the first k, and the order-preserving keys, against
   references computed here (libc's qsort of the same items; float comparisons).

   The file includes kernels/cpu/sort.c itself, for its static functions.
   Run: build/test/test_sort [-v]
   Output: a line per failed check, then "N passed, N failed"; the exit status is 1 on failure. */
#define lt_cpu_topk sort_under_test_topk
#include "kernels/cpu/sort.c"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>

static int passed, failed, verbose;

static bool check(bool ok, const char *fmt, ...) {
  if (ok) passed++;
  else failed++;
  if (!ok || verbose) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s", ok ? "ok     " : "FAILED ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
  }
  return ok;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_u128(const void *a, const void *b) {
  u128 x = *(const u128 *)a, y = *(const u128 *)b;
  return (x > y) - (x < y);
}

enum { RANDOM, ASCENDING, DESCENDING, FEW, ORGAN, NPATTERN };
static const char *const pattern_names[] = {"random", "ascending", "descending", "few values", "organ pipe"};

/* n distinct items (key << 32 | position, as the kernel makes them) of a pattern */
static uint64_t key_of(int pattern, int64_t i, int64_t n) {
  switch (pattern) {
  case RANDOM: return next() >> 32;
  case ASCENDING: return (uint64_t)i;
  case DESCENDING: return (uint64_t)(n - i);
  case FEW: return next() % 3;
  default: return (uint64_t)(i < n / 2 ? i : n - i);
  }
}

static void test_sorts(void) {
  static const int64_t sizes[] = {0, 1, 2, 3, 31, 32, 33, 34, 100, 1000, 4097};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    uint64_t *a = malloc(sizeof *a * (size_t)(n + 1)), *ref = malloc(sizeof *a * (size_t)(n + 1));
    u128 *w = malloc(sizeof *w * (size_t)(n + 1)), *wref = malloc(sizeof *w * (size_t)(n + 1));
    for (int p = 0; p < NPATTERN; p++) {
      for (int64_t i = 0; i < n; i++) ref[i] = key_of(p, i, n) << 32 | (uint64_t)i;
      for (int64_t i = 0; i < n; i++) wref[i] = (u128)(ref[i] >> 32) << 64 | (u128)(next() >> 20) << 20 | (u128)i;
      /* the quicksort at depth limits 0 (heapsort at once), 1, 3 and the kernel's; the heapsort alone */
      for (int depth = -1; depth <= 4; depth++) {
        int dl = depth == 4 ? 64 : depth;
        memcpy(a, ref, sizeof *a * (size_t)n);
        memcpy(w, wref, sizeof *w * (size_t)n);
        if (dl < 0) {
          hsort_64(a, n);
          hsort_128(w, n);
        } else {
          qsort_64(a, n, dl);
          qsort_128(w, n, dl);
        }
        uint64_t *r = malloc(sizeof *r * (size_t)(n + 1));
        u128 *wr = malloc(sizeof *wr * (size_t)(n + 1));
        memcpy(r, ref, sizeof *r * (size_t)n);
        memcpy(wr, wref, sizeof *wr * (size_t)n);
        qsort(r, (size_t)n, sizeof *r, cmp_u64);
        qsort(wr, (size_t)n, sizeof *wr, cmp_u128);
        check(memcmp(a, r, sizeof *a * (size_t)n) == 0, "%s n=%lld %s: 64-bit items in order",
              dl < 0 ? "heapsort" : "quicksort", (long long)n, pattern_names[p]);
        check(memcmp(w, wr, sizeof *w * (size_t)n) == 0, "%s n=%lld %s depth %d: 128-bit items in order",
              dl < 0 ? "heapsort" : "quicksort", (long long)n, pattern_names[p], dl);
        /* the first k: selected (k <= 32), sorted (k > 32) or by insertion (n <= 32) */
        if (depth == 4) {
          static const int64_t ks[] = {1, 2, 5, 31, 32, 33, 64};
          for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            int64_t k = ks[ki];
            if (k > n) continue;
            memcpy(a, ref, sizeof *a * (size_t)n);
            memcpy(w, wref, sizeof *w * (size_t)n);
            first_64(a, n, k);
            first_128(w, n, k);
            check(memcmp(a, r, sizeof *a * (size_t)k) == 0 && memcmp(w, wr, sizeof *w * (size_t)k) == 0,
                  "first %lld of n=%lld %s", (long long)k, (long long)n, pattern_names[p]);
          }
        }
        free(r);
        free(wr);
      }
    }
    free(a);
    free(ref);
    free(w);
    free(wref);
  }
}

/* the keys order as the values do: every 4099th float and the special ones, in both directions */
static void test_keys(void) {
  float specials[] = {-INFINITY, -FLT_MAX, -1.0f, -FLT_MIN, -1e-45f, -0.0f, 0.0f, 1e-45f, FLT_MIN, 1.0f, FLT_MAX,
                      INFINITY};
  int ns = (int)(sizeof specials / sizeof specials[0]);
  int bad = 0;
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++) {
      uint32_t ki = key_f32(specials[i]), kj = key_f32(specials[j]);
      if ((specials[i] < specials[j]) != (ki < kj) || (specials[i] == specials[j]) != (ki == kj)) bad++;
    }
  check(bad == 0, "float keys order the special values (-0 == +0): %d pairs wrong", bad);
  bad = 0;
  uint32_t prev_bits = 0;
  bool have = false;
  for (uint64_t b = 0; b <= UINT32_MAX; b += 4099) {
    uint32_t bits = (uint32_t)b;
    float f;
    memcpy(&f, &bits, sizeof f);
    if (f != f) {
      if (key_f32(f) != UINT32_MAX) bad++; /* every NaN, either sign, the largest */
      continue;
    }
    if (have) {
      float g;
      memcpy(&g, &prev_bits, sizeof g);
      for (int s = 0; s < 2; s++) {
        float x = s ? -f : f, y = s ? -g : g;
        if ((x < y) != (key_f32(x) < key_f32(y)) || (x == y) != (key_f32(x) == key_f32(y))) bad++;
        if (!(key_f32(x) < UINT32_MAX)) bad++;
      }
    }
    prev_bits = bits;
    have = true;
  }
  check(bad == 0, "float keys order a sweep of floats and put NaN of either sign last: %d wrong", bad);
  bad = 0;
  double dspecials[] = {-INFINITY, -DBL_MAX, -1.0, -DBL_MIN, -5e-324, -0.0, 0.0, 5e-324, DBL_MIN, 1.0, DBL_MAX,
                        INFINITY};
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++) {
      double x = dspecials[i], y = dspecials[j];
      if ((x < y) != (key_f64(x) < key_f64(y)) || (x == y) != (key_f64(x) == key_f64(y))) bad++;
    }
  if (key_f64(NAN) != UINT64_MAX || key_f64(-NAN) != UINT64_MAX) bad++;
  check(bad == 0, "double keys order the special values and NaN of either sign last: %d wrong", bad);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-v") == 0) verbose = 1;
  test_sorts();
  test_keys();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
