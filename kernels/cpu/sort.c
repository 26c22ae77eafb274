/* The CPU sort along a dimension (kernels/cpu/sort.h): each slice's keys are copied out with their
   positions and sorted by (key, position), which makes qsort's order stable; slices of up to
   ISORT_N by insertion. */
#include "kernels/cpu/sort.h"

#include "core/iter.h"
#include "kernels/half.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

typedef struct {
  union {
    double d;
    int64_t i;
  } k;
  int64_t pos;
} item_t;

static inline int by_pos(const item_t *a, const item_t *b) { return (a->pos > b->pos) - (a->pos < b->pos); }

/* NaN is the largest key */
static inline int cmp_d_asc(const void *pa, const void *pb) {
  const item_t *a = pa, *b = pb;
  bool na = isnan(a->k.d), nb = isnan(b->k.d);
  if (na || nb) return na && nb ? by_pos(a, b) : (na ? 1 : -1);
  if (a->k.d != b->k.d) return a->k.d < b->k.d ? -1 : 1;
  return by_pos(a, b);
}
static inline int cmp_d_desc(const void *pa, const void *pb) {
  const item_t *a = pa, *b = pb;
  bool na = isnan(a->k.d), nb = isnan(b->k.d);
  if (na || nb) return na && nb ? by_pos(a, b) : (na ? -1 : 1);
  if (a->k.d != b->k.d) return a->k.d > b->k.d ? -1 : 1;
  return by_pos(a, b);
}
static inline int cmp_i_asc(const void *pa, const void *pb) {
  const item_t *a = pa, *b = pb;
  if (a->k.i != b->k.i) return a->k.i < b->k.i ? -1 : 1;
  return by_pos(a, b);
}
static inline int cmp_i_desc(const void *pa, const void *pb) {
  const item_t *a = pa, *b = pb;
  if (a->k.i != b->k.i) return a->k.i > b->k.i ? -1 : 1;
  return by_pos(a, b);
}

/* Slices of at most ISORT_N elements are sorted by insertion: qsort (glibc's merge sort) spends
   more on its moves and calls than on the comparisons (256 rows of 10 on one core: 44 us, 20
   this way, PyTorch 20). Insertion is stable and the keys tie-break by position anyway: the same
   order. */
#define ISORT_N 32
#define ISORT(name, cmp)                                                                           \
  static void name(item_t *b, int64_t n) {                                                         \
    for (int64_t i = 1; i < n; i++) {                                                              \
      item_t v = b[i];                                                                             \
      int64_t j = i;                                                                               \
      while (j > 0 && cmp(&b[j - 1], &v) > 0) {                                                    \
        b[j] = b[j - 1];                                                                           \
        j--;                                                                                       \
      }                                                                                            \
      b[j] = v;                                                                                    \
    }                                                                                              \
  }
ISORT(isort_d_asc, cmp_d_asc)
ISORT(isort_d_desc, cmp_d_desc)
ISORT(isort_i_asc, cmp_i_asc)
ISORT(isort_i_desc, cmp_i_desc)

/* element at byte address p as a key */
static void load(item_t *it, const char *p, lt_dtype dt) {
  switch (dt) {
  case LT_FLOAT32: it->k.d = *(const float *)p; break;
  case LT_FLOAT64: it->k.d = *(const double *)p; break;
  case LT_FLOAT16: it->k.d = lt_half_to_float(*(const lt_half *)p); break;
  case LT_BFLOAT16: it->k.d = lt_bf16_to_float(*(const lt_bfloat16 *)p); break;
  case LT_INT64: it->k.i = *(const int64_t *)p; break;
  case LT_INT32: it->k.i = *(const int32_t *)p; break;
  case LT_INT16: it->k.i = *(const int16_t *)p; break;
  case LT_INT8: it->k.i = *(const int8_t *)p; break;
  case LT_UINT8: it->k.i = *(const uint8_t *)p; break;
  default: it->k.i = *(const bool *)p; break;
  }
}

bool lt_cpu_argsort(const void *x, lt_dtype dt, int ndim, const int64_t *sizes, const int64_t *strides, int dim,
                    bool descending, int64_t *out, int nt) {
  int64_t n = ndim ? sizes[dim] : 1, numel = 1;
  for (int d = 0; d < ndim; d++) numel *= sizes[d];
  if (numel == 0) return true;
  int64_t slices = numel / n, es = (int64_t)lt_dtype_size(dt);
  /* out is contiguous: its stride along dim, in elements */
  int64_t ostride = 1;
  for (int d = ndim - 1; d > dim; d--) ostride *= sizes[d];
  bool floating = lt_dtype_is_floating(dt);
  int (*cmp)(const void *, const void *) =
      floating ? (descending ? cmp_d_desc : cmp_d_asc) : (descending ? cmp_i_desc : cmp_i_asc);
  void (*isort)(item_t *, int64_t) =
      floating ? (descending ? isort_d_desc : isort_d_asc) : (descending ? isort_i_desc : isort_i_asc);
  bool ok = true;
  /* a thread sorts at least 16384 elements (core/iter.h: each thread's work worth its wake-up) */
  nt = slices * n < 32768 ? 1 : lt_threads_for((double)slices * (double)n, 16384, nt);
#pragma omp parallel num_threads(lt_team_size()) if (nt > 1) reduction(&& : ok)
  {
    item_t *buf = malloc(sizeof(item_t) * (size_t)n);
    if (!buf) ok = false;
#pragma omp for schedule(static)
    for (int64_t s = 0; s < slices; s++) {
      if (!buf) continue;
      /* s over the dims other than dim, row-major: the slice's first element in x and in out */
      int64_t r = s, xoff = 0, ooff = 0, ostep = 1;
      for (int d = ndim - 1; d >= 0; d--) {
        if (d == dim) {
          ostep *= sizes[d];
          continue;
        }
        int64_t k = r % sizes[d];
        r /= sizes[d];
        xoff += k * strides[d];
        ooff += k * ostep;
        ostep *= sizes[d];
      }
      const char *base = (const char *)x + xoff * es;
      int64_t xs = ndim ? strides[dim] * es : 0;
      for (int64_t j = 0; j < n; j++) {
        load(&buf[j], base + j * xs, dt);
        buf[j].pos = j;
      }
      if (n > ISORT_N) qsort(buf, (size_t)n, sizeof(item_t), cmp);
      else isort(buf, n);
      for (int64_t j = 0; j < n; j++) out[ooff + j * ostride] = buf[j].pos;
    }
    free(buf);
  }
  return ok;
}
