/* Helpers shared by the C tests of tensor ops: a check counter, tensors of known values, shapes,
   coordinates, and expected errors. Each test program includes it once. */
#ifndef LT_SPEC_TENSOR_CHECK_H
#define LT_SPEC_TENSOR_CHECK_H

#include "core/elementwise.h"
#include "core/tensor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CPU0 lt_device(LT_CPU, 0)
#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static const lt_dtype all_dtypes[] = {LT_FLOAT32, LT_FLOAT64, LT_FLOAT16, LT_BFLOAT16, LT_INT64,
                                      LT_INT32,   LT_INT16,   LT_INT8,    LT_UINT8,    LT_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

static inline void check(bool ok, const char *fmt, ...) LT_PRINTF(2, 3);
static inline void check(bool ok, const char *fmt, ...) {
  if (ok) { passed++; return; }
  failed++;
  va_list ap;
  va_start(ap, fmt);
  printf("FAILED - ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

/* value of element i for dtype dt: exactly representable in every dtype */
static inline double val(lt_dtype dt, int64_t i) {
  if (dt == LT_BOOL) return (double)(i % 3 == 0);
  return (double)((i * 7) % 50);
}

/* a tensor of dtype dt and the given shape holding val(dt, i) in row-major order */
static inline lt_tensor_t *make(lt_dtype dt, int nd, const int64_t *sizes) {
  lt_tensor_t *t = lt_empty(nd, sizes, LT_FLOAT64, CPU0);
  double *p = lt_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = val(dt, i);
  lt_tensor_t *r = lt_convert(t, dt, CPU0);
  lt_release(t);
  return r;
}

static inline bool shape_is(const lt_tensor_t *t, int nd, const int64_t *sizes) {
  return t && t->ndim == nd && memcmp(t->sizes, sizes, sizeof(int64_t) * (size_t)nd) == 0;
}

static inline const char *shp(const lt_tensor_t *t) {
  static char buf[4][128];
  static int k;
  k = (k + 1) % 4;
  if (!t) return "(null)";
  return lt_shape_str(t->ndim, t->sizes, buf[k], sizeof buf[k]);
}

/* row-major linear index of coordinates in a shape */
static inline int64_t lin(int nd, const int64_t *sizes, const int64_t *idx) {
  int64_t l = 0;
  for (int k = 0; k < nd; k++) l = l * sizes[k] + idx[k];
  return l;
}

/* next coordinates in row-major order; false after the last */
static inline bool next_idx(int nd, const int64_t *sizes, int64_t *idx) {
  for (int k = nd - 1; k >= 0; k--) {
    if (++idx[k] < sizes[k]) return true;
    idx[k] = 0;
  }
  return false;
}

static inline double at(const lt_tensor_t *t, const int64_t *idx) { return lt_get_double(t, lin(t->ndim, t->sizes, idx)); }

static inline bool err_has(const char *needle) { return strstr(lt_last_error(), needle) != NULL; }

/* r must be NULL (released otherwise) with an error containing needle */
static inline void expect_fail(lt_tensor_t *r, const char *needle, const char *what) {
  check(!r && err_has(needle), "%s: expected an error containing \"%s\", got %s \"%s\"", what,
        needle, r ? "a result" : "error", r ? "" : lt_last_error());
  lt_release(r);
  lt_clear_error();
}

static inline void expect_rc_fail(int rc, const char *needle, const char *what) {
  check(rc != LT_OK && err_has(needle), "%s: expected an error containing \"%s\", got %s \"%s\"",
        what, needle, rc == LT_OK ? "success" : "error", rc == LT_OK ? "" : lt_last_error());
  lt_clear_error();
}

#endif
