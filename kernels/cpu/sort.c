/* The CPU sort and top-k along a dimension (kernels/cpu/sort.h).

   Each element of a slice becomes one unsigned integer item, its sort key above its position:
   (key32 << 32 | pos) for the types whose key fits 32 bits, (key64 << 64 | pos) as an unsigned
   __int128 for float64 and int64. The key is order-preserving: an integer's bits with the sign bit
   flipped; a float's bits flipped whole when negative and with the sign bit set otherwise, after
   -0 becomes +0 (they compare equal) and every NaN the largest key; descending, the key's
   complement. Positions break ties upwards, so the plain order of the items is the stable order
   (NaN last ascending, first descending, equal values in place, as PyTorch's), compared as integers
   without a branch on NaN or a call through a comparator (against a comparator that tested NaN and
   then the positions: x:sort(2) of 256 x 10 on one core 26 -> 13 us, of 64 x 1000 3.2 -> 1.9 ms).

   Slices of up to ISORT_N elements sort by insertion, longer ones by introsort (quicksort with the
   median of three, heapsort past a depth of 2 log2 n, insertion below ISORT_N). The first k of a
   longer slice, k at most ISORT_N, are selected: the first k sorted, then each later item that
   beats the k-th inserted among them, O(n) on most inputs and O(n k) at worst. */
#include "kernels/cpu/sort.h"

#include "core/iter.h"
#include "kernels/half.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

#define ISORT_N 32

/* ---- keys ---- */

static inline uint32_t key_f32(float f) {
  if (f != f) return UINT32_MAX;
  if (f == 0) f = 0; /* -0 as +0 */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u & 0x80000000u ? ~u : u | 0x80000000u;
}
static inline uint64_t key_f64(double d) {
  if (d != d) return UINT64_MAX;
  if (d == 0) d = 0;
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u & 0x8000000000000000u ? ~u : u | 0x8000000000000000u;
}

/* ---- sorting arrays of T by value (every item distinct) ---- */

#define SORTS(T, sfx)                                                                              \
  static void isort_##sfx(T *b, int64_t n) {                                                       \
    for (int64_t i = 1; i < n; i++) {                                                              \
      T v = b[i];                                                                                  \
      int64_t j = i;                                                                               \
      for (; j > 0 && b[j - 1] > v; j--) b[j] = b[j - 1];                                          \
      b[j] = v;                                                                                    \
    }                                                                                              \
  }                                                                                                \
  static void sift_##sfx(T *b, int64_t i, int64_t n) {                                             \
    T v = b[i];                                                                                    \
    for (int64_t c; (c = 2 * i + 1) < n; i = c) {                                                  \
      if (c + 1 < n && b[c + 1] > b[c]) c++;                                                       \
      if (!(b[c] > v)) break;                                                                      \
      b[i] = b[c];                                                                                 \
    }                                                                                              \
    b[i] = v;                                                                                      \
  }                                                                                                \
  static void hsort_##sfx(T *b, int64_t n) {                                                       \
    for (int64_t i = n / 2 - 1; i >= 0; i--) sift_##sfx(b, i, n);                                  \
    for (int64_t e = n - 1; e > 0; e--) {                                                          \
      T t = b[0];                                                                                  \
      b[0] = b[e];                                                                                 \
      b[e] = t;                                                                                    \
      sift_##sfx(b, 0, e);                                                                         \
    }                                                                                              \
  }                                                                                                \
  static void qsort_##sfx(T *b, int64_t n, int depth) {                                            \
    while (n > ISORT_N) {                                                                          \
      if (depth-- == 0) {                                                                          \
        hsort_##sfx(b, n);                                                                         \
        return;                                                                                    \
      }                                                                                            \
      /* the median of the first, middle and last as the pivot, moved to the front */              \
      T *m = b + n / 2, *z = b + n - 1, t;                                                         \
      if (*m < *b) t = *m, *m = *b, *b = t;                                                        \
      if (*z < *m) {                                                                               \
        t = *z, *z = *m, *m = t;                                                                   \
        if (*m < *b) t = *m, *m = *b, *b = t;                                                      \
      }                                                                                            \
      t = *b, *b = *m, *m = t;                                                                     \
      T p = b[0];                                                                                  \
      int64_t i = 0, j = n;                                                                        \
      for (;;) { /* b[1..n-1]; the last is >= p, a sentinel for i */                              \
        while (b[++i] < p) {}                                                                      \
        while (b[--j] > p) {}                                                                      \
        if (i >= j) break;                                                                         \
        t = b[i], b[i] = b[j], b[j] = t;                                                           \
      }                                                                                            \
      b[0] = b[j], b[j] = p;                                                                       \
      /* the smaller side by recursion, the larger by the loop */                                  \
      if (j < n - j - 1) {                                                                         \
        qsort_##sfx(b, j, depth);                                                                  \
        b += j + 1, n -= j + 1;                                                                    \
      } else {                                                                                     \
        qsort_##sfx(b + j + 1, n - j - 1, depth);                                                  \
        n = j;                                                                                     \
      }                                                                                            \
    }                                                                                              \
    isort_##sfx(b, n);                                                                             \
  }                                                                                                \
  /* b[0..k) the k smallest of b[0..n), in order */                                                \
  static void first_##sfx(T *b, int64_t n, int64_t k) {                                            \
    if (k == 0) return;                                                                            \
    if (n <= ISORT_N) {                                                                            \
      isort_##sfx(b, n);                                                                           \
      return;                                                                                      \
    }                                                                                              \
    if (k > ISORT_N) {                                                                             \
      int depth = 0;                                                                               \
      for (int64_t m = n; m > 1; m >>= 1) depth += 2;                                              \
      qsort_##sfx(b, n, depth);                                                                    \
      return;                                                                                      \
    }                                                                                              \
    isort_##sfx(b, k);                                                                             \
    for (int64_t i = k; i < n; i++) {                                                              \
      T v = b[i];                                                                                  \
      if (!(v < b[k - 1])) continue;                                                               \
      int64_t j = k - 1;                                                                           \
      for (; j > 0 && b[j - 1] > v; j--) b[j] = b[j - 1];                                          \
      b[j] = v;                                                                                    \
    }                                                                                              \
  }
SORTS(uint64_t, 64)
SORTS(u128, 128)

/* ---- loading a slice's items ---- */

/* the key of the element at p of a type whose key fits 32 bits */
static inline uint32_t key32(const char *p, lt_dtype dt) {
  switch (dt) {
  case LT_FLOAT32: return key_f32(*(const float *)p);
  case LT_FLOAT16: return key_f32(lt_half_to_float(*(const lt_half *)p));
  case LT_BFLOAT16: return key_f32(lt_bf16_to_float(*(const lt_bfloat16 *)p));
  case LT_INT32: return (uint32_t)*(const int32_t *)p ^ 0x80000000u;
  case LT_INT16: return (uint32_t)(int32_t)*(const int16_t *)p ^ 0x80000000u;
  case LT_INT8: return (uint32_t)(int32_t)*(const int8_t *)p ^ 0x80000000u;
  case LT_UINT8: return *(const uint8_t *)p;
  default: return *(const bool *)p;
  }
}

/* the n items of the slice at base (byte stride xs), keys complemented when descending; one loop
   a dtype (the switch outside it) */
static void load64(uint64_t *b, const char *base, int64_t xs, int64_t n, lt_dtype dt, bool desc) {
  uint32_t flip = desc ? UINT32_MAX : 0;
#define L32(DT)                                                                                    \
  case DT:                                                                                         \
    for (int64_t j = 0; j < n; j++) b[j] = (uint64_t)(key32(base + j * xs, DT) ^ flip) << 32 | (uint64_t)j; \
    break;
  switch (dt) {
    L32(LT_FLOAT32) L32(LT_FLOAT16) L32(LT_BFLOAT16) L32(LT_INT32) L32(LT_INT16) L32(LT_INT8) L32(LT_UINT8)
  default:
    for (int64_t j = 0; j < n; j++) b[j] = (uint64_t)(key32(base + j * xs, LT_BOOL) ^ flip) << 32 | (uint64_t)j;
  }
#undef L32
}

static void load128(u128 *b, const char *base, int64_t xs, int64_t n, lt_dtype dt, bool desc) {
  uint64_t flip = desc ? UINT64_MAX : 0;
  for (int64_t j = 0; j < n; j++) {
    const char *p = base + j * xs;
    uint64_t key = dt == LT_FLOAT64 ? key_f64(*(const double *)p)
                   : dt == LT_INT64 ? (uint64_t)*(const int64_t *)p ^ 0x8000000000000000u
                                    : key32(p, dt); /* a slice of 2^32 elements or more */
    b[j] = (u128)(key ^ flip) << 64 | (u128)j;
  }
}

/* the k chosen elements' positions (plus base) and values out of the sorted items b; es: the
   element size (typed copies: a call to memcpy an element cost a tenth of a short row's time) */
#define EMIT(b, POS)                                                                               \
  for (int64_t j = 0; j < k; j++) out[ooff + j * ostride] = POS(b[j]) + base;                     \
  if (vb) switch (es) {                                                                            \
    case 1: for (int64_t j = 0; j < k; j++) vb[ooff + j * ostride] = xb[POS(b[j]) * xs]; break;    \
    case 2: EMIT_T(uint16_t, b, POS) break;                                                        \
    case 4: EMIT_T(uint32_t, b, POS) break;                                                        \
    default: EMIT_T(uint64_t, b, POS) break;                                                       \
    }
#define EMIT_T(T, b, POS)                                                                          \
  for (int64_t j = 0; j < k; j++) {                                                                \
    T v;                                                                                           \
    memcpy(&v, xb + POS(b[j]) * xs, sizeof v);                                                     \
    ((T *)(void *)vb)[ooff + j * ostride] = v;                                                     \
  }
#define POS64(it) ((int64_t)(uint32_t)(it))
#define POS128(it) ((int64_t)(uint64_t)(it))

bool lt_cpu_topk(const void *x, lt_dtype dt, int ndim, const int64_t *sizes, const int64_t *strides, int dim,
                 int64_t k, bool descending, int64_t base, int64_t *out, void *values, int nt) {
  int64_t n = ndim ? sizes[dim] : 1, numel = 1;
  for (int d = 0; d < ndim; d++) numel *= sizes[d];
  if (numel == 0 || k == 0) return true;
  int64_t slices = numel / n, es = (int64_t)lt_dtype_size(dt);
  /* out and values are contiguous, of x's shape with k along dim: their strides, in elements */
  int64_t ost[LT_MAX_DIM > 0 ? LT_MAX_DIM : 1], step = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    ost[d] = step;
    step *= d == dim ? k : sizes[d];
  }
  int64_t ostride = ndim ? ost[dim] : 1, xs = ndim ? strides[dim] * es : 0;
  bool wide = es == 8 || n > (int64_t)UINT32_MAX;
  size_t item = wide ? sizeof(u128) : sizeof(uint64_t);
  bool ok = true;
  /* a thread sorts at least 16384 elements (core/iter.h: each thread's work worth its wake-up) */
  nt = slices * n < 32768 ? 1 : lt_threads_for((double)slices * (double)n, 16384, nt);
#pragma omp parallel num_threads(lt_team_size()) if (nt > 1) reduction(&& : ok)
  {
    int t = omp_get_thread_num(), T = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
    int64_t s0 = t < T ? slices * t / T : 0, s1 = t < T ? slices * (t + 1) / T : 0;
    void *buf = s1 > s0 ? aligned_alloc(16, (item * (size_t)n + 15) & ~(size_t)15) : NULL;
    if (s1 > s0 && !buf) ok = false;
    /* the coordinates of slice s0 over the dims other than dim (row-major), then counted up */
    int64_t c[LT_MAX_DIM > 0 ? LT_MAX_DIM : 1] = {0}, xoff = 0, ooff = 0;
    for (int64_t r = s0, d = ndim - 1; d >= 0; d--) {
      if (d == dim) continue;
      c[d] = r % sizes[d];
      r /= sizes[d];
      xoff += c[d] * strides[d];
      ooff += c[d] * ost[d];
    }
    for (int64_t s = s0; buf && s < s1; s++) {
      const char *xb = (const char *)x + xoff * es;
      char *vb = values;
      if (wide) {
        u128 *b = buf;
        load128(b, xb, xs, n, dt, descending);
        first_128(b, n, k);
        EMIT(b, POS128)
      } else {
        uint64_t *b = buf;
        load64(b, xb, xs, n, dt, descending);
        first_64(b, n, k);
        EMIT(b, POS64)
      }
      for (int d = ndim - 1; d >= 0; d--) { /* the next slice */
        if (d == dim) continue;
        xoff += strides[d];
        ooff += ost[d];
        if (++c[d] < sizes[d]) break;
        xoff -= c[d] * strides[d];
        ooff -= c[d] * ost[d];
        c[d] = 0;
      }
    }
    free(buf);
  }
  return ok;
}
