/* Tests of core/index.c and kernels/cpu/index.c (index_select, masked_select, masked_fill, gather,
   scatter, scatter_add, index_add_, index_fill_, nonzero) against references computed with plain
   loops, on contiguous, transposed, sliced and expanded inputs, every dtype, sizes large enough to
   take the threaded paths, and bad calls checking the error text.

   Build (from the repository root):
     gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fopenmp -I. spec/c/test_index.c \
         core/tensor.c core/device.c core/allocator.c core/error.c core/dtype.c core/iter.c \
         core/elementwise.c core/shape.c core/index.c kernels/cpu/elementwise.c kernels/cpu/index.c \
         -ldl -lm -lpthread -o /tmp/test_index
   Output: a line per failed check, then "N passed, N failed"; exit status 1 on any failure. */
#include "core/elementwise.h"
#include "core/index.h"
#include "core/iter.h"
#include "core/shape.h"
#include "core/tensor.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/c/tensor_check.h"





static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int64_t rand_below(int64_t n) { return (int64_t)(next_u64() % (uint64_t)n); }


static lt_tensor_t *from_doubles(lt_dtype dt, int nd, const int64_t *sizes, const double *v) {
  lt_tensor_t *t = lt_empty(nd, sizes, LT_FLOAT64, CPU0);
  double *p = lt_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = v[i];
  lt_tensor_t *r = lt_convert(t, dt, CPU0);
  lt_release(t);
  return r;
}


static lt_tensor_t *make_index(lt_dtype dt, int nd, const int64_t *sizes, const int64_t *v) {
  lt_tensor_t *t = lt_empty(nd, sizes, LT_INT64, CPU0);
  int64_t *p = lt_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = v[i];
  lt_tensor_t *r = lt_convert(t, dt, CPU0);
  lt_release(t);
  return r;
}




static int64_t iat(const lt_tensor_t *t, const int64_t *idx) { return lt_get_int(t, lin(t->ndim, t->sizes, idx)); }

/* all values of t in row-major order, as doubles (caller frees) */
static double *values(const lt_tensor_t *t) {
  double *v = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
  for (int64_t i = 0; i < t->numel; i++) v[i] = lt_get_double(t, i);
  return v;
}

static bool values_are(const lt_tensor_t *y, const double *exp) {
  if (!y) return false;
  for (int64_t i = 0; i < y->numel; i++) {
    double g = lt_get_double(y, i);
    if (!(g == exp[i] || (isnan(g) && isnan(exp[i])))) return false;
  }
  return true;
}

/* store a double into exp-style reference arrays of dtype dt (bool: != 0) */
static double as_dtype(lt_dtype dt, double v) {
  if (dt == LT_BOOL) return v != 0;
  return v;
}




static unsigned version(const lt_tensor_t *t) { return atomic_load(&t->storage->version); }

/* ---- index_select ---- */

/* reference: out[.., j, ..] = x[.., idx[j], ..] */
static bool index_select_ok(const lt_tensor_t *x, int d, const lt_tensor_t *index, const lt_tensor_t *out) {
  if (!out) return false;
  int64_t sizes[LT_MAX_DIM];
  memcpy(sizes, x->sizes, sizeof sizes);
  if (x->ndim > 0) sizes[d] = index->numel;
  if (!shape_is(out, x->ndim, sizes) || out->dtype != x->dtype) return false;
  if (out->numel == 0) return true;
  int64_t idx[LT_MAX_DIM] = {0};
  do {
    int64_t xi[LT_MAX_DIM];
    memcpy(xi, idx, sizeof xi);
    if (x->ndim > 0) xi[d] = lt_get_int(index, idx[d]);
    if (at(out, idx) != at(x, xi)) return false;
  } while (next_idx(out->ndim, out->sizes, idx));
  return true;
}

static void test_index_select(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    const char *dn = lt_dtype_name(dt);
    lt_tensor_t *x = make(dt, 2, SZ(5, 4));
    lt_tensor_t *i0 = make_index(LT_INT64, 1, SZ(3), SZ(4, 0, 4));
    lt_tensor_t *i1 = make_index(LT_INT32, 1, SZ(2), SZ(3, 1));
    lt_tensor_t *r = lt_index_select(x, 0, i0);
    check(index_select_ok(x, 0, i0, r), "index_select dim 0 (%s)", dn);
    lt_release(r);
    r = lt_index_select(x, -1, i1);
    check(index_select_ok(x, 1, i1, r), "index_select dim -1 int32 index (%s)", dn);
    lt_release(r);
    /* transposed input */
    lt_tensor_t *b = make(dt, 2, SZ(4, 5));
    lt_tensor_t *xt = lt_t(b);
    r = lt_index_select(xt, 0, i0);
    check(index_select_ok(xt, 0, i0, r), "index_select dim 0 of transposed (%s)", dn);
    lt_release(r);
    r = lt_index_select(xt, 1, i1);
    check(index_select_ok(xt, 1, i1, r), "index_select dim 1 of transposed (%s)", dn);
    lt_release(r);
    /* expanded input */
    lt_tensor_t *row = make(dt, 2, SZ(1, 4));
    lt_tensor_t *xe = lt_expand(row, 2, SZ(5, 4));
    r = lt_index_select(xe, 0, i0);
    check(index_select_ok(xe, 0, i0, r), "index_select of expanded (%s)", dn);
    lt_release(r);
    /* 3-D, middle dim, contiguous and permuted */
    lt_tensor_t *x3 = make(dt, 3, SZ(2, 3, 4));
    lt_tensor_t *i3 = make_index(LT_INT64, 1, SZ(4), SZ(2, 2, 0, 1));
    r = lt_index_select(x3, 1, i3);
    check(index_select_ok(x3, 1, i3, r), "index_select 3-D dim 1 (%s)", dn);
    lt_release(r);
    lt_tensor_t *x3p = lt_permute(x3, 3, SZ(2, 1, 0));
    r = lt_index_select(x3p, 1, i3);
    check(index_select_ok(x3p, 1, i3, r), "index_select 3-D permuted dim 1 (%s)", dn);
    lt_release(r);
    lt_release(x3p);
    lt_release(i3);
    lt_release(x3);
    lt_release(xe);
    lt_release(row);
    lt_release(xt);
    lt_release(b);
    lt_release(i1);
    lt_release(i0);
    lt_release(x);
  }
  /* a strided index, a 0-dim index, a 0-dim input, an empty index */
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(5, 3));
  lt_tensor_t *ib = make_index(LT_INT64, 1, SZ(6), SZ(4, 9, 1, 9, 3, 9));
  lt_tensor_t *is = lt_slice(ib, 0, 0, 6, 2); /* {4, 1, 3} */
  lt_tensor_t *r = lt_index_select(x, 0, is);
  check(index_select_ok(x, 0, is, r), "index_select with a strided index");
  lt_release(r);
  lt_tensor_t *i0d = make_index(LT_INT64, 0, NULL, SZ(2));
  r = lt_index_select(x, 1, i0d);
  check(shape_is(r, 2, SZ(5, 1)) && index_select_ok(x, 1, i0d, r), "index_select with a 0-dim index");
  lt_release(r);
  lt_tensor_t *sc = make(LT_FLOAT64, 0, NULL);
  lt_tensor_t *one = make_index(LT_INT64, 1, SZ(1), SZ(0));
  r = lt_index_select(sc, 0, one);
  check(r && r->ndim == 0 && lt_get_double(r, 0) == val(LT_FLOAT64, 0), "index_select of 0-dim");
  lt_release(r);
  lt_tensor_t *empty = lt_empty(1, SZ(0), LT_INT64, CPU0);
  r = lt_index_select(x, 0, empty);
  check(shape_is(r, 2, SZ(0, 3)), "index_select with an empty index");
  lt_release(r);

  /* large: the embedding lookup (threaded rows) and a threaded batch path */
  {
    lt_tensor_t *w = make(LT_FLOAT32, 2, SZ(1000, 64));
    int64_t *iv = malloc(sizeof(int64_t) * 5000);
    for (int i = 0; i < 5000; i++) iv[i] = rand_below(1000);
    lt_tensor_t *ix = make_index(LT_INT64, 1, SZ(5000), iv);
    r = lt_index_select(w, 0, ix);
    check(index_select_ok(w, 0, ix, r), "index_select large embedding lookup");
    lt_release(r);
    lt_tensor_t *wt = lt_t(w); /* [64, 1000] non-contiguous */
    r = lt_index_select(wt, 1, ix);
    check(index_select_ok(wt, 1, ix, r), "index_select large, transposed, dim 1");
    lt_release(r);
    lt_release(wt);
    lt_release(ix);
    free(iv);
    lt_release(w);
  }

  /* errors */
  lt_tensor_t *x32 = make(LT_FLOAT32, 2, SZ(3, 2));
  lt_tensor_t *bad = make_index(LT_INT64, 1, SZ(2), SZ(0, 6));
  expect_fail(lt_index_select(x32, 0, bad), "index_select: index 7 out of range for dimension 1 (of size 3)", "index_select range");
  lt_tensor_t *neg = make_index(LT_INT32, 1, SZ(1), SZ(-1));
  expect_fail(lt_index_select(x32, 1, neg), "index_select: index 0 out of range for dimension 2 (of size 2)", "index_select negative");
  lt_tensor_t *fidx = make(LT_FLOAT32, 1, SZ(2));
  expect_fail(lt_index_select(x32, 0, fidx), "index_select(): Expected dtype int32/int64 for index", "index_select dtype");
  lt_tensor_t *i2d = make_index(LT_INT64, 2, SZ(1, 1), SZ(0));
  expect_fail(lt_index_select(x32, 0, i2d), "index_select(): Index is supposed to be a vector", "index_select 2-D index");
  expect_fail(lt_index_select(x32, 2, one), "index_select: dimension out of range", "index_select dim");
  lt_tensor_t *two = make_index(LT_INT64, 1, SZ(2), SZ(0, 0));
  expect_fail(lt_index_select(sc, 0, two), "index_select(): Index to scalar can have only 1 value", "index_select scalar");
  lt_tensor_t *other = lt_empty(1, SZ(1), LT_INT64, lt_device(LT_CPU, 1));
  if (other) {
    int64_t zero = 0;
    memcpy(lt_data(other), &zero, 8);
    expect_fail(lt_index_select(x32, 0, other), "index_select: expected all tensors to be on the same device", "index_select devices");
    lt_release(other);
  }
  lt_release(two);
  lt_release(i2d);
  lt_release(fidx);
  lt_release(neg);
  lt_release(bad);
  lt_release(x32);
  lt_release(empty);
  lt_release(one);
  lt_release(sc);
  lt_release(i0d);
  lt_release(is);
  lt_release(ib);
  lt_release(x);
}

/* ---- masked_select / masked_fill ---- */

static void test_masked(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    const char *dn = lt_dtype_name(dt);
    lt_tensor_t *b = make(dt, 2, SZ(4, 3));
    lt_tensor_t *x = lt_t(b); /* [3,4] transposed */
    double mv[4] = {1, 0, 1, 1};
    lt_tensor_t *mask = from_doubles(LT_BOOL, 1, SZ(4), mv);
    lt_tensor_t *r = lt_masked_select(x, mask);
    double exp[12];
    int n = 0;
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 4; j++)
        if (mv[j]) { int64_t q[2] = {i, j}; exp[n++] = at(x, q); }
    check(shape_is(r, 1, (int64_t[]){n}) && r->dtype == dt && values_are(r, exp), "masked_select broadcast mask (%s)", dn);
    lt_release(r);
    /* the mask larger than x: both broadcast */
    double mv3[24];
    for (int i = 0; i < 24; i++) mv3[i] = (i * 5) % 7 < 3;
    lt_tensor_t *m3 = from_doubles(LT_BOOL, 3, SZ(2, 3, 4), mv3);
    r = lt_masked_select(x, m3);
    double exp3[24];
    n = 0;
    int64_t idx[3] = {0, 0, 0};
    do if (mv3[lin(3, SZ(2, 3, 4), idx)]) { int64_t q[2] = {idx[1], idx[2]}; exp3[n++] = at(x, q); }
    while (next_idx(3, SZ(2, 3, 4), idx));
    check(shape_is(r, 1, (int64_t[]){n}) && values_are(r, exp3), "masked_select mask broader than x (%s)", dn);
    lt_release(r);

    /* masked_fill out of place with a [3,1] mask, value 1 */
    double mc[3] = {0, 1, 1};
    lt_tensor_t *mcol = from_doubles(LT_BOOL, 2, SZ(3, 1), mc);
    double *before = values(x);
    r = lt_masked_fill(x, mcol, lt_int_operand(1), NULL);
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 4; j++) exp[i * 4 + j] = mc[i] ? 1 : before[i * 4 + j];
    check(shape_is(r, 2, SZ(3, 4)) && r->dtype == dt && values_are(r, exp) && values_are(x, before),
          "masked_fill out of place (%s)", dn);
    lt_release(r);
    /* in place on the transposed x */
    unsigned v0 = version(x);
    r = lt_masked_fill(x, mcol, lt_int_operand(1), x);
    check(r == x && values_are(x, exp) && version(x) > v0, "masked_fill_ in place (%s)", dn);
    lt_release(r);
    free(before);
    lt_release(mcol);
    lt_release(m3);
    lt_release(mask);
    lt_release(x);
    lt_release(b);
  }
  /* x broadcast by the mask (out of place), value tensors, int with a float value */
  lt_tensor_t *col = make(LT_INT32, 2, SZ(3, 1));
  double mv[12];
  for (int i = 0; i < 12; i++) mv[i] = i % 5 == 1;
  lt_tensor_t *mask = from_doubles(LT_BOOL, 2, SZ(3, 4), mv);
  lt_tensor_t *r = lt_masked_fill(col, mask, lt_float_operand(2.7), NULL);
  double exp[12];
  for (int i = 0; i < 12; i++) exp[i] = mv[i] ? 2 : val(LT_INT32, i / 4);
  check(shape_is(r, 2, SZ(3, 4)) && r->dtype == LT_INT32 && values_are(r, exp), "masked_fill broadcasting x, float value into int");
  lt_release(r);
  lt_tensor_t *vt = from_doubles(LT_FLOAT64, 0, NULL, (double[]){-3.5});
  lt_tensor_t *xf = make(LT_FLOAT16, 2, SZ(3, 4));
  r = lt_masked_fill(xf, mask, lt_tensor_operand(vt), NULL);
  for (int i = 0; i < 12; i++) exp[i] = mv[i] ? -3.5 : val(LT_FLOAT16, i);
  check(r && values_are(r, exp), "masked_fill with a 0-dim value tensor");
  lt_release(r);
  lt_tensor_t *xb = make(LT_BOOL, 2, SZ(3, 4));
  r = lt_masked_fill(xb, mask, lt_int_operand(5), NULL);
  for (int i = 0; i < 12; i++) exp[i] = mv[i] ? 1 : val(LT_BOOL, i);
  check(r && values_are(r, exp), "masked_fill bool");
  lt_release(r);
  /* out given (not x) */
  lt_tensor_t *o = lt_empty(2, SZ(3, 4), LT_FLOAT16, CPU0);
  r = lt_masked_fill(xf, mask, lt_tensor_operand(vt), o);
  for (int i = 0; i < 12; i++) exp[i] = mv[i] ? -3.5 : val(LT_FLOAT16, i);
  check(r == o && values_are(o, exp), "masked_fill into out");
  lt_release(r);
  lt_release(o);

  /* errors */
  lt_tensor_t *m8 = make(LT_UINT8, 2, SZ(3, 4));
  expect_fail(lt_masked_select(xf, m8), "masked_select: expected BoolTensor for mask", "masked_select uint8 mask");
  expect_fail(lt_masked_fill(xf, m8, lt_int_operand(0), NULL), "masked_fill: only supports boolean masks, but got mask with dtype uint8", "masked_fill uint8 mask");
  lt_tensor_t *m5 = from_doubles(LT_BOOL, 1, SZ(5), (double[]){1, 0, 1, 0, 1});
  expect_fail(lt_masked_select(xf, m5), "masked_select: the shapes [3, 4] and [5] cannot be broadcast", "masked_select shapes");
  lt_tensor_t *v1 = make(LT_FLOAT32, 1, SZ(1));
  expect_fail(lt_masked_fill(xf, mask, lt_tensor_operand(v1), NULL), "masked_fill: only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)", "masked_fill value dims");
  lt_tensor_t *m3 = make(LT_BOOL, 3, SZ(2, 3, 4));
  unsigned v0 = version(xf);
  expect_fail(lt_masked_fill(xf, m3, lt_int_operand(0), xf), "masked_fill_: the mask of shape [2, 3, 4] cannot be broadcast", "masked_fill_ mask broader than x");
  lt_tensor_t *xe = lt_expand(col, 2, SZ(3, 4));
  expect_fail(lt_masked_fill(xe, mask, lt_int_operand(0), xe), "masked_fill_: unsupported operation: more than one element", "masked_fill_ on expanded");
  check(version(xf) == v0, "failed masked_fill_ leaves the version");
  /* empty selections */
  lt_tensor_t *none = make(LT_BOOL, 2, SZ(3, 4));
  lt_fill_(none, lt_int_operand(0));
  r = lt_masked_select(xf, none);
  check(shape_is(r, 1, SZ(0)), "masked_select with nothing selected");
  lt_release(r);
  lt_release(none);
  lt_release(xe);
  lt_release(m3);
  lt_release(v1);
  lt_release(m5);
  lt_release(m8);
  lt_release(xb);
  lt_release(xf);
  lt_release(vt);
  lt_release(mask);
  lt_release(col);
}

/* ---- gather ---- */

static bool gather_ok(const lt_tensor_t *x, int d, const lt_tensor_t *index, const lt_tensor_t *out) {
  if (!out || !shape_is(out, index->ndim, index->sizes) || out->dtype != x->dtype) return false;
  if (out->numel == 0) return true;
  if (x->ndim == 0) return lt_get_double(out, 0) == lt_get_double(x, 0);
  int64_t idx[LT_MAX_DIM] = {0};
  do {
    int64_t xi[LT_MAX_DIM];
    memcpy(xi, idx, sizeof xi);
    xi[d] = iat(index, idx);
    if (at(out, idx) != at(x, xi)) return false;
  } while (next_idx(out->ndim, out->sizes, idx));
  return true;
}

static lt_tensor_t *random_index(int nd, const int64_t *sizes, int64_t bound) {
  int64_t n = 1;
  for (int k = 0; k < nd; k++) n *= sizes[k];
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = rand_below(bound);
  lt_tensor_t *t = make_index(LT_INT64, nd, sizes, v);
  free(v);
  return t;
}

static void test_gather(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    const char *dn = lt_dtype_name(dt);
    lt_tensor_t *x = make(dt, 2, SZ(3, 5));
    lt_tensor_t *i1 = random_index(2, SZ(3, 2), 5);
    lt_tensor_t *r = lt_gather(x, 1, i1);
    check(gather_ok(x, 1, i1, r), "gather dim 1 (%s)", dn);
    lt_release(r);
    lt_tensor_t *i0 = random_index(2, SZ(2, 5), 3);
    r = lt_gather(x, 0, i0);
    check(gather_ok(x, 0, i0, r), "gather dim 0 (%s)", dn);
    lt_release(r);
    lt_tensor_t *ism = random_index(2, SZ(2, 3), 5); /* smaller than x in dim 0 */
    r = lt_gather(x, -1, ism);
    check(gather_ok(x, 1, ism, r), "gather with a smaller index (%s)", dn);
    lt_release(r);
    /* transposed x and transposed index */
    lt_tensor_t *b = make(dt, 2, SZ(5, 3));
    lt_tensor_t *xt = lt_t(b);
    lt_tensor_t *ib = random_index(2, SZ(4, 3), 5);
    lt_tensor_t *it = lt_t(ib); /* [3,4] */
    r = lt_gather(xt, 1, it);
    check(gather_ok(xt, 1, it, r), "gather transposed x and index (%s)", dn);
    lt_release(r);
    /* expanded x */
    lt_tensor_t *row = make(dt, 2, SZ(1, 5));
    lt_tensor_t *xe = lt_expand(row, 2, SZ(3, 5));
    r = lt_gather(xe, 1, i1);
    check(gather_ok(xe, 1, i1, r), "gather of expanded (%s)", dn);
    lt_release(r);
    /* 3-D */
    lt_tensor_t *x3 = make(dt, 3, SZ(2, 4, 3));
    lt_tensor_t *i3 = random_index(3, SZ(2, 6, 2), 4);
    r = lt_gather(x3, 1, i3);
    check(gather_ok(x3, 1, i3, r), "gather 3-D dim 1 (%s)", dn);
    lt_release(r);
    lt_release(i3);
    lt_release(x3);
    lt_release(xe);
    lt_release(row);
    lt_release(it);
    lt_release(ib);
    lt_release(xt);
    lt_release(b);
    lt_release(ism);
    lt_release(i0);
    lt_release(i1);
    lt_release(x);
  }
  /* large (threads), along the last dim and the first */
  {
    lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(2000, 100));
    lt_tensor_t *i = random_index(2, SZ(2000, 50), 100);
    lt_tensor_t *r = lt_gather(x, 1, i);
    check(gather_ok(x, 1, i, r), "gather large, last dim");
    lt_release(r);
    lt_tensor_t *i0 = random_index(2, SZ(700, 100), 2000);
    r = lt_gather(x, 0, i0);
    check(gather_ok(x, 0, i0, r), "gather large, dim 0");
    lt_release(r);
    lt_release(i0);
    lt_release(i);
    lt_release(x);
  }
  /* 0-dim */
  lt_tensor_t *sc = make(LT_FLOAT32, 0, NULL);
  lt_tensor_t *z0 = make_index(LT_INT64, 0, NULL, SZ(0));
  lt_tensor_t *r = lt_gather(sc, 0, z0);
  check(r && r->ndim == 0 && gather_ok(sc, 0, z0, r), "gather of 0-dim");
  lt_release(r);
  /* errors */
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(3, 5));
  lt_tensor_t *i32 = make_index(LT_INT32, 2, SZ(1, 1), SZ(0));
  expect_fail(lt_gather(x, 1, i32), "gather(): Expected dtype int64 for index", "gather dtype");
  lt_tensor_t *i1d = make_index(LT_INT64, 1, SZ(2), SZ(0, 1));
  expect_fail(lt_gather(x, 1, i1d), "gather(): Index tensor must have the same number of dimensions as input tensor", "gather ndim");
  lt_tensor_t *ibig = random_index(2, SZ(4, 2), 5);
  expect_fail(lt_gather(x, 1, ibig), "gather(): Size does not match at dimension 1 expected index [4, 2] to be smaller than self [3, 5] apart for dimension 2", "gather sizes");
  lt_tensor_t *iout = make_index(LT_INT64, 2, SZ(1, 3), SZ(0, 5, 1));
  expect_fail(lt_gather(x, 1, iout), "gather(): index 6 is out of bounds for dimension 2 with size 5", "gather range");
  lt_tensor_t *ineg = make_index(LT_INT64, 2, SZ(1, 1), SZ(-1));
  expect_fail(lt_gather(x, 0, ineg), "gather(): index 0 is out of bounds for dimension 1 with size 3", "gather negative");
  expect_fail(lt_gather(x, 2, iout), "gather: dimension out of range", "gather dim");
  lt_release(ineg);
  lt_release(iout);
  lt_release(ibig);
  lt_release(i1d);
  lt_release(i32);
  lt_release(x);
  lt_release(z0);
  lt_release(sc);
}

/* ---- scatter / scatter_add ---- */

/* reference scatter into ref (a row-major copy of a tensor of shape xs): for every index position p,
   ref[p with p[d] = index[p]] = src[p] (or += when add; a value when src is NULL) */
static void scatter_ref(double *ref, int nd, const int64_t *xs, int d, const lt_tensor_t *index,
                        const lt_tensor_t *src, double value, bool add, lt_dtype dt) {
  if (index->numel == 0) return;
  int64_t idx[LT_MAX_DIM] = {0};
  do {
    int64_t xi[LT_MAX_DIM];
    memcpy(xi, idx, sizeof xi);
    xi[d] = iat(index, idx);
    double v = src ? at(src, idx) : value;
    int64_t l = lin(nd, xs, xi);
    ref[l] = add ? as_dtype(dt, ref[l] + v) : v;
  } while (next_idx(index->ndim, index->sizes, idx));
}

/* an index of shape (rows, cols) with distinct values below bound along dim d (rows when d = 0) */
static lt_tensor_t *unique_index(int64_t rows, int64_t cols, int d, int64_t bound) {
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(rows * cols));
  int64_t len = d == 0 ? rows : cols, other = d == 0 ? cols : rows;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)bound);
  for (int64_t o = 0; o < other; o++) {
    for (int64_t k = 0; k < bound; k++) perm[k] = k;
    for (int64_t k = bound - 1; k > 0; k--) {
      int64_t j = rand_below(k + 1), t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    for (int64_t k = 0; k < len; k++) {
      if (d == 0) v[k * cols + o] = perm[k];
      else v[o * cols + k] = perm[k];
    }
  }
  lt_tensor_t *t = make_index(LT_INT64, 2, SZ(rows, cols), v);
  free(perm);
  free(v);
  return t;
}

static void test_scatter(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    const char *dn = lt_dtype_name(dt);
    for (int d = 0; d < 2; d++) {
      lt_tensor_t *x = make(dt, 2, SZ(4, 5));
      lt_tensor_t *index = d == 0 ? unique_index(3, 5, 0, 4) : unique_index(4, 3, 1, 5);
      lt_tensor_t *sb = make(dt, 2, SZ(6, 5));
      lt_tensor_t *src = lt_t(sb); /* [5,6]: larger than the index, transposed */
      double *ref = values(x), *orig = values(x);
      scatter_ref(ref, 2, x->sizes, d, index, src, 0, false, dt);
      lt_tensor_t *r = lt_scatter(x, d, index, lt_tensor_operand(src), NULL);
      check(r && r != x && r->dtype == dt && values_are(r, ref) && values_are(x, orig),
            "scatter dim %d out of place (%s)", d, dn);
      lt_release(r);
      unsigned v0 = version(x);
      r = lt_scatter(x, d, index, lt_tensor_operand(src), x);
      check(r == x && values_are(x, ref) && version(x) > v0, "scatter_ dim %d in place (%s)", d, dn);
      lt_release(r);
      /* with a value */
      free(ref);
      ref = values(x);
      scatter_ref(ref, 2, x->sizes, d, index, NULL, 1, false, dt);
      r = lt_scatter(x, d, index, lt_int_operand(1), NULL);
      check(r && values_are(r, ref), "scatter value dim %d (%s)", d, dn);
      lt_release(r);
      /* scatter_add with repeated indices */
      lt_tensor_t *rep = random_index(2, SZ(3, 4), d == 0 ? 4 : 5);
      free(ref);
      ref = values(x);
      scatter_ref(ref, 2, x->sizes, d, rep, src, 0, true, dt);
      r = lt_scatter_add(x, d, rep, src, NULL);
      bool ok = r && r->dtype == dt;
      if (ok) {
        for (int64_t i = 0; i < 20; i++) {
          double g = lt_get_double(r, i), e = ref[i];
          if (dt == LT_INT8) e = (double)(int8_t)(int64_t)e;
          else if (dt == LT_UINT8) e = (double)(uint8_t)(int64_t)e;
          else if (dt == LT_FLOAT16 || dt == LT_BFLOAT16) {
            /* accumulations rounded at every step: compare loosely */
            if (fabs(g - e) > 0.02 * fabs(e) + 0.5) ok = false;
            continue;
          }
          if (g != e) ok = false;
        }
      }
      check(ok, "scatter_add dim %d (%s)", d, dn);
      lt_release(r);
      v0 = version(x);
      r = lt_scatter_add(x, d, rep, src, x);
      check(r == x && version(x) > v0, "scatter_add_ in place (%s)", dn);
      lt_release(r);
      lt_release(rep);
      free(orig);
      free(ref);
      lt_release(src);
      lt_release(sb);
      lt_release(index);
      lt_release(x);
    }
  }
  /* large scatter_add (threaded over the batch) with exact float64 sums */
  {
    lt_tensor_t *x = lt_empty(2, SZ(64, 1000), LT_FLOAT64, CPU0);
    lt_fill_(x, lt_int_operand(0));
    lt_tensor_t *index = random_index(2, SZ(64, 5000), 1000);
    lt_tensor_t *src = make(LT_FLOAT64, 2, SZ(64, 5000));
    double *ref = values(x);
    scatter_ref(ref, 2, x->sizes, 1, index, src, 0, true, LT_FLOAT64);
    lt_tensor_t *r = lt_scatter_add(x, 1, index, src, x);
    check(r == x && values_are(x, ref), "scatter_add_ large, dim 1");
    lt_release(r);
    free(ref);
    lt_tensor_t *y = lt_empty(2, SZ(100, 64), LT_FLOAT64, CPU0);
    lt_fill_(y, lt_int_operand(0));
    lt_tensor_t *i0 = random_index(2, SZ(4000, 64), 100);
    lt_tensor_t *s0 = make(LT_FLOAT64, 2, SZ(4000, 64));
    ref = values(y);
    scatter_ref(ref, 2, y->sizes, 0, i0, s0, 0, true, LT_FLOAT64);
    r = lt_scatter_add(y, 0, i0, s0, NULL);
    check(r && values_are(r, ref), "scatter_add large, dim 0");
    lt_release(r);
    free(ref);
    lt_release(s0);
    lt_release(i0);
    lt_release(y);
    lt_release(src);
    lt_release(index);
    lt_release(x);
  }
  /* errors; a failing in-place scatter leaves x unchanged */
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(3, 4));
  double *orig = values(x);
  lt_tensor_t *srcd = make(LT_FLOAT64, 2, SZ(3, 4));
  lt_tensor_t *srcf = make(LT_FLOAT32, 2, SZ(3, 4));
  lt_tensor_t *ok_idx = make_index(LT_INT64, 2, SZ(1, 2), SZ(0, 1));
  expect_fail(lt_scatter(x, 0, ok_idx, lt_tensor_operand(srcd), NULL), "scatter(): Expected self.dtype to be equal to src.dtype", "scatter dtype");
  lt_tensor_t *i32 = make_index(LT_INT32, 2, SZ(1, 2), SZ(0, 1));
  expect_fail(lt_scatter(x, 0, i32, lt_tensor_operand(srcf), x), "scatter_(): Expected dtype int64 for index", "scatter index dtype");
  lt_tensor_t *bad = make_index(LT_INT64, 2, SZ(1, 2), SZ(0, 3));
  expect_fail(lt_scatter(x, 0, bad, lt_tensor_operand(srcf), x), "scatter_(): index 4 is out of bounds for dimension 1 with size 3", "scatter range");
  check(values_are(x, orig), "failed scatter_ leaves x unchanged");
  lt_tensor_t *big = random_index(2, SZ(3, 5), 3);
  lt_tensor_t *src35 = make(LT_FLOAT32, 2, SZ(3, 5));
  expect_fail(lt_scatter_add(x, 0, big, src35, NULL), "scatter_add(): Expected index [3, 5] to be smaller than self [3, 4] apart from dimension 1", "scatter_add sizes");
  lt_tensor_t *small = make(LT_FLOAT32, 2, SZ(1, 1));
  expect_fail(lt_scatter(x, 0, ok_idx, lt_tensor_operand(small), NULL), "to be smaller size than src [1, 1]", "scatter src too small");
  lt_tensor_t *i1d = make_index(LT_INT64, 1, SZ(2), SZ(0, 1));
  expect_fail(lt_scatter(x, 0, i1d, lt_int_operand(0), NULL), "scatter(): Index tensor must have the same number of dimensions as self tensor", "scatter ndim");
  lt_tensor_t *xe = lt_expand(small, 2, SZ(3, 4));
  expect_fail(lt_scatter(xe, 0, ok_idx, lt_int_operand(0), xe), "scatter_: unsupported operation", "scatter_ on expanded");
  /* an empty index: the result is a copy */
  lt_tensor_t *e = lt_empty(2, SZ(0, 4), LT_INT64, CPU0);
  lt_tensor_t *r = lt_scatter(x, 0, e, lt_int_operand(5), NULL);
  check(r && r != x && values_are(r, orig), "scatter with an empty index");
  lt_release(r);
  lt_release(e);
  lt_release(xe);
  lt_release(i1d);
  lt_release(small);
  lt_release(src35);
  lt_release(big);
  lt_release(bad);
  lt_release(i32);
  lt_release(ok_idx);
  lt_release(srcf);
  lt_release(srcd);
  free(orig);
  lt_release(x);
}

/* ---- index_add_ / index_fill_ ---- */

static void index_add_ref(double *ref, const lt_tensor_t *x, int d, const lt_tensor_t *index,
                          const lt_tensor_t *src, double alpha, lt_dtype dt) {
  int64_t idx[LT_MAX_DIM] = {0};
  if (src->numel == 0) return;
  do {
    int64_t xi[LT_MAX_DIM];
    memcpy(xi, idx, sizeof xi);
    xi[d] = lt_get_int(index, idx[d]);
    int64_t l = lin(x->ndim, x->sizes, xi);
    ref[l] = as_dtype(dt, ref[l] + alpha * at(src, idx));
  } while (next_idx(src->ndim, src->sizes, idx));
}

static void test_index_add_fill(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    const char *dn = lt_dtype_name(dt);
    for (int d = 0; d < 2; d++) {
      /* x transposed (the batch path) or contiguous (d selects) */
      lt_tensor_t *xb = make(dt, 2, SZ(5, 4));
      lt_tensor_t *x = d == 0 ? lt_alias(xb) : lt_t(xb); /* [5,4] or [4,5] */
      lt_tensor_t *index = make_index(d == 0 ? LT_INT64 : LT_INT32, 1, SZ(3), SZ(0, 2, 0));
      int64_t ss[2] = {x->sizes[0], x->sizes[1]};
      ss[d] = 3;
      lt_tensor_t *src = make(dt, 2, ss);
      double alpha = dt == LT_BOOL ? 1 : 2;
      double *ref = values(x);
      index_add_ref(ref, x, d, index, src, alpha, dt);
      unsigned v0 = version(x);
      int rc = lt_index_add_(x, d, index, src, alpha);
      bool ok = rc == LT_OK && version(x) > v0;
      for (int64_t i = 0; ok && i < x->numel; i++) {
        double g = lt_get_double(x, i), e = ref[i];
        if (dt == LT_INT8) e = (double)(int8_t)(int64_t)e;
        else if (dt == LT_UINT8) e = (double)(uint8_t)(int64_t)e;
        if (g != e) ok = false;
      }
      check(ok, "index_add_ dim %d (%s)%s", d, dn, rc == LT_OK ? "" : lt_last_error());
      free(ref);
      /* index_fill_ */
      ref = values(x);
      lt_tensor_t *fi = make_index(LT_INT64, 1, SZ(2), SZ(3, 1));
      for (int64_t i = 0; i < x->sizes[0]; i++)
        for (int64_t j = 0; j < x->sizes[1]; j++)
          if ((d == 0 ? i : j) == 3 || (d == 0 ? i : j) == 1) ref[i * x->sizes[1] + j] = as_dtype(dt, 7);
      v0 = version(x);
      rc = lt_index_fill_(x, d - 2, fi, lt_int_operand(7));
      check(rc == LT_OK && values_are(x, ref) && version(x) > v0, "index_fill_ dim %d (%s)", d, dn);
      free(ref);
      lt_release(fi);
      lt_release(src);
      lt_release(index);
      lt_release(x);
      lt_release(xb);
    }
  }
  /* large index_add_ along dim 0 (rows) with float64 exact sums, and a 3-D middle dim */
  {
    lt_tensor_t *x = lt_empty(2, SZ(300, 200), LT_FLOAT64, CPU0);
    lt_fill_(x, lt_int_operand(1));
    int64_t *iv = malloc(sizeof(int64_t) * 1000);
    for (int i = 0; i < 1000; i++) iv[i] = rand_below(300);
    lt_tensor_t *index = make_index(LT_INT64, 1, SZ(1000), iv);
    free(iv);
    lt_tensor_t *src = make(LT_FLOAT64, 2, SZ(1000, 200));
    double *ref = values(x);
    index_add_ref(ref, x, 0, index, src, -1, LT_FLOAT64);
    check(lt_index_add_(x, 0, index, src, -1) == LT_OK && values_are(x, ref), "index_add_ large");
    free(ref);
    lt_release(src);
    lt_release(index);
    lt_release(x);
    lt_tensor_t *x3 = make(LT_FLOAT32, 3, SZ(2, 5, 3));
    lt_tensor_t *i3 = make_index(LT_INT64, 1, SZ(4), SZ(4, 4, 0, 2));
    lt_tensor_t *s3 = make(LT_FLOAT32, 3, SZ(2, 4, 3));
    ref = values(x3);
    index_add_ref(ref, x3, 1, i3, s3, 0.5, LT_FLOAT32);
    check(lt_index_add_(x3, 1, i3, s3, 0.5) == LT_OK && values_are(x3, ref), "index_add_ 3-D dim 1");
    free(ref);
    lt_release(s3);
    lt_release(i3);
    lt_release(x3);
  }
  /* a 0-dim value tensor for index_fill_ */
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(3, 4));
  lt_tensor_t *vt = from_doubles(LT_INT64, 0, NULL, (double[]){-2});
  lt_tensor_t *ix = make_index(LT_INT64, 0, NULL, SZ(2));
  double *ref = values(x);
  for (int j = 0; j < 4; j++) ref[2 * 4 + j] = -2;
  check(lt_index_fill_(x, 0, ix, lt_tensor_operand(vt)) == LT_OK && values_are(x, ref), "index_fill_ with a 0-dim value tensor and index");
  free(ref);

  /* errors */
  double *orig = values(x);
  lt_tensor_t *srcd = make(LT_FLOAT64, 2, SZ(2, 4));
  lt_tensor_t *srcf = make(LT_FLOAT32, 2, SZ(2, 4));
  lt_tensor_t *i2 = make_index(LT_INT64, 1, SZ(2), SZ(0, 1));
  expect_rc_fail(lt_index_add_(x, 0, i2, srcd, 1), "index_add_(): self (float32) and source (float64) must have the same scalar type", "index_add_ dtype");
  lt_tensor_t *i3 = make_index(LT_INT64, 1, SZ(3), SZ(0, 1, 2));
  expect_rc_fail(lt_index_add_(x, 0, i3, srcf, 1), "index_add_(): Number of indices (3) should be equal to source.size(dim) (2)", "index_add_ count");
  lt_tensor_t *bad = make_index(LT_INT64, 1, SZ(2), SZ(0, 3));
  expect_rc_fail(lt_index_add_(x, 0, bad, srcf, 1), "index_add_: index 4 out of range for dimension 1 (of size 3)", "index_add_ range");
  check(values_are(x, orig), "failed index_add_ leaves x unchanged");
  lt_tensor_t *s25 = make(LT_FLOAT32, 2, SZ(2, 5));
  expect_rc_fail(lt_index_add_(x, 0, i2, s25, 1), "index_add_(): source tensor shape must match self tensor shape", "index_add_ shape");
  lt_tensor_t *fi = make(LT_FLOAT32, 1, SZ(2));
  expect_rc_fail(lt_index_add_(x, 0, fi, srcf, 1), "index_add_(): Expected dtype int32/int64 for index", "index_add_ index dtype");
  lt_tensor_t *xi = make(LT_INT64, 2, SZ(3, 4));
  lt_tensor_t *si = make(LT_INT64, 2, SZ(2, 4));
  expect_rc_fail(lt_index_add_(xi, 0, i2, si, 1.5), "alpha must not be a floating point number", "index_add_ int alpha");
  lt_tensor_t *v1 = make(LT_FLOAT32, 1, SZ(2));
  expect_rc_fail(lt_index_fill_(x, 0, i2, lt_tensor_operand(v1)), "index_fill_: only supports a 0-dimensional value tensor", "index_fill_ value dims");
  lt_tensor_t *bad4 = make_index(LT_INT64, 1, SZ(2), SZ(0, 4));
  expect_rc_fail(lt_index_fill_(x, 1, bad4, lt_int_operand(0)), "index_fill_: index 5 out of range for dimension 2 (of size 4)", "index_fill_ range");
  lt_release(bad4);
  expect_rc_fail(lt_index_fill_(x, 2, i2, lt_int_operand(0)), "index_fill_: dimension out of range", "index_fill_ dim");
  check(values_are(x, orig), "failed index_fill_ leaves x unchanged");
  free(orig);
  lt_release(v1);
  lt_release(si);
  lt_release(xi);
  lt_release(fi);
  lt_release(s25);
  lt_release(bad);
  lt_release(i3);
  lt_release(i2);
  lt_release(srcf);
  lt_release(srcd);
  lt_release(ix);
  lt_release(vt);
  lt_release(x);
}

/* ---- nonzero ---- */

static bool nonzero_ok(const lt_tensor_t *x, const lt_tensor_t *r) {
  if (!r || r->dtype != LT_INT64 || r->ndim != 2 || r->sizes[1] != x->ndim) return false;
  int64_t n = 0;
  if (x->numel == 0) return r->sizes[0] == 0;
  int64_t idx[LT_MAX_DIM] = {0};
  do {
    double v = at(x, idx);
    if (v != 0 || isnan(v)) {
      if (n >= r->sizes[0]) return false;
      for (int k = 0; k < x->ndim; k++)
        if (lt_get_int(r, n * x->ndim + k) != idx[k]) return false;
      n++;
    }
  } while (next_idx(x->ndim, x->sizes, idx));
  return n == r->sizes[0];
}

static void test_nonzero(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = (i * 5) % 7 < 3 ? 0 : (dt == LT_BOOL ? 1 : (i % 4) + 1);
    lt_tensor_t *x = from_doubles(dt, 3, SZ(2, 3, 4), v);
    lt_tensor_t *r = lt_nonzero(x);
    check(nonzero_ok(x, r), "nonzero 3-D (%s)", lt_dtype_name(dt));
    lt_release(r);
    lt_tensor_t *p = lt_permute(x, 3, SZ(2, 0, 1));
    r = lt_nonzero(p);
    check(nonzero_ok(p, r), "nonzero permuted (%s)", lt_dtype_name(dt));
    lt_release(r);
    lt_release(p);
    lt_release(x);
  }
  double v[6] = {-0.0, NAN, 0, 1e-30, -2, 0};
  for (int k = 0; k < 4; k++) {
    lt_tensor_t *x = from_doubles(all_dtypes[k], 2, SZ(2, 3), v);
    lt_tensor_t *r = lt_nonzero(x);
    /* float16 flushes 1e-30 to 0 */
    int64_t exp_n = all_dtypes[k] == LT_FLOAT16 ? 2 : 3;
    check(r && r->sizes[0] == exp_n && nonzero_ok(x, r), "nonzero with -0.0 and NaN (%s)", lt_dtype_name(all_dtypes[k]));
    lt_release(r);
    lt_release(x);
  }
  lt_tensor_t *s0 = from_doubles(LT_INT32, 0, NULL, (double[]){0});
  lt_tensor_t *s5 = from_doubles(LT_INT32, 0, NULL, (double[]){5});
  lt_tensor_t *r = lt_nonzero(s0);
  check(shape_is(r, 2, SZ(0, 0)), "nonzero of 0-dim zero");
  lt_release(r);
  r = lt_nonzero(s5);
  check(shape_is(r, 2, SZ(1, 0)), "nonzero of 0-dim non-zero");
  lt_release(r);
  lt_tensor_t *e = lt_empty(2, SZ(0, 3), LT_FLOAT32, CPU0);
  r = lt_nonzero(e);
  check(shape_is(r, 2, SZ(0, 2)), "nonzero of empty");
  lt_release(r);
  /* expanded */
  lt_tensor_t *row = from_doubles(LT_FLOAT32, 2, SZ(1, 3), (double[]){0, 3, 0});
  lt_tensor_t *xe = lt_expand(row, 2, SZ(4, 3));
  r = lt_nonzero(xe);
  check(shape_is(r, 2, SZ(4, 2)) && nonzero_ok(xe, r), "nonzero of expanded");
  lt_release(r);
  lt_release(xe);
  lt_release(row);
  lt_release(e);
  lt_release(s5);
  lt_release(s0);
}

/* ---- tensors on two devices ---- */
static void test_devices(void) {
  lt_device_t d1 = lt_device(LT_CPU, 1);
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(3, 4));
  lt_tensor_t *x1 = lt_convert(x, LT_FLOAT32, d1);
  if (!x1) {
    check(false, "cpu:1 not available: %s", lt_last_error());
    lt_release(x);
    return;
  }
  lt_tensor_t *mask = make(LT_BOOL, 2, SZ(3, 4));
  lt_tensor_t *index = make_index(LT_INT64, 2, SZ(1, 4), SZ(0, 1, 2, 0));
  lt_tensor_t *i1 = make_index(LT_INT64, 1, SZ(2), SZ(0, 2));
  lt_tensor_t *src = make(LT_FLOAT32, 2, SZ(2, 4));
  const char *same = "expected all tensors to be on the same device";
  expect_fail(lt_masked_select(x1, mask), same, "masked_select devices");
  expect_fail(lt_masked_fill(x1, mask, lt_int_operand(0), NULL), same, "masked_fill devices");
  expect_fail(lt_gather(x1, 0, index), same, "gather devices");
  expect_fail(lt_scatter(x1, 0, index, lt_int_operand(0), x1), same, "scatter_ devices");
  expect_fail(lt_scatter_add(x, 0, index, x1, NULL), same, "scatter_add devices");
  expect_rc_fail(lt_index_add_(x1, 0, i1, src, 1), same, "index_add_ devices");
  expect_rc_fail(lt_index_fill_(x1, 0, i1, lt_int_operand(0)), same, "index_fill_ devices");
  /* results stay on the inputs' device; a 0-dim value tensor may live on another CPU device */
  lt_tensor_t *m1 = lt_convert(mask, LT_BOOL, d1);
  lt_tensor_t *v0 = from_doubles(LT_FLOAT32, 0, NULL, (double[]){4});
  lt_tensor_t *r = lt_masked_fill(x1, m1, lt_tensor_operand(v0), NULL);
  check(r && lt_device_eq(r->device, d1), "masked_fill on cpu:1 with a cpu:0 value");
  lt_release(r);
  r = lt_nonzero(x1);
  check(r && lt_device_eq(r->device, d1), "nonzero on cpu:1");
  lt_release(r);
  lt_release(v0);
  lt_release(m1);
  lt_release(src);
  lt_release(i1);
  lt_release(index);
  lt_release(mask);
  lt_release(x1);
  lt_release(x);
}

int main(void) {
  if (lt_cpu_set_device_count(2) != LT_OK) printf("note: could not make 2 CPU devices: %s\n", lt_last_error());
  test_index_select();
  test_masked();
  test_gather();
  test_scatter();
  test_index_add_fill();
  test_nonzero();
  test_devices();
  /* once more on one thread (the single-thread paths of the large cases) */
  lt_set_num_threads(1);
  test_index_select();
  test_gather();
  lt_set_num_threads(2);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
