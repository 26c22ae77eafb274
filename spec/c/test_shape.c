/* Tests of core/shape.c (views, reshape, permutations, expand, narrow/select/slice, cat, stack,
   split, chunk) against references computed with plain loops, on contiguous and non-contiguous
   inputs and several dtypes, plus one or more bad calls per op checking the error text.

   Build (from the repository root):
     gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fopenmp -I. spec/c/test_shape.c \
         core/tensor.c core/device.c core/allocator.c core/error.c core/dtype.c core/iter.c \
         core/elementwise.c core/shape.c core/index.c kernels/cpu/elementwise.c kernels/cpu/index.c \
         -ldl -lm -lpthread -o /tmp/test_shape
   Output: a line per failed check, then "N passed, N failed"; exit status 1 on any failure. */
#include "core/elementwise.h"
#include "core/shape.h"
#include "core/tensor.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/c/tensor_check.h"



#define NSZ(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))









/* y's values equal exp[0..numel) in row-major order */
static bool values_are(const lt_tensor_t *y, const double *exp) {
  if (!y) return false;
  for (int64_t i = 0; i < y->numel; i++)
    if (lt_get_double(y, i) != exp[i]) return false;
  return true;
}




static bool shares(const lt_tensor_t *a, const lt_tensor_t *b) { return a && b && a->storage == b->storage; }

/* ---- view / reshape ---- */
static void test_view(void) {
  lt_tensor_t *x = make(LT_FLOAT32, 3, SZ(2, 3, 4));
  lt_tensor_t *v = lt_view(x, 2, SZ(6, 4));
  check(shape_is(v, 2, SZ(6, 4)) && shares(v, x), "view [6,4]: shape %s", shp(v));
  double exp[24];
  for (int i = 0; i < 24; i++) exp[i] = val(LT_FLOAT32, i);
  check(values_are(v, exp), "view [6,4] values");
  /* writing through the view changes the base */
  ((float *)lt_data(v))[5] = 123.0f;
  check(lt_get_double(x, 5) == 123.0, "write through view reaches base");
  ((float *)lt_data(v))[5] = (float)val(LT_FLOAT32, 5);
  lt_release(v);

  v = lt_view(x, 3, SZ(-1, 2, 3));
  check(shape_is(v, 3, SZ(4, 2, 3)) && values_are(v, exp), "view with -1: %s", shp(v));
  lt_release(v);
  v = lt_view(x, 1, SZ(-1));
  check(shape_is(v, 1, SZ(24)) && v->strides[0] == 1, "view [-1]");
  lt_release(v);
  v = lt_view(x, 5, SZ(1, 2, 1, 12, 1));
  check(shape_is(v, 5, SZ(1, 2, 1, 12, 1)) && values_are(v, exp), "view with size-1 dims");
  lt_release(v);

  expect_fail(lt_view(x, 2, SZ(5, 5)), "view: shape '[5, 5]' is invalid for input of size 24", "view size mismatch");
  {
    lt_tensor_t *six = make(LT_FLOAT32, 2, SZ(2, 3));
    expect_fail(lt_view(six, 2, SZ(2, 5)), "view: shape '[2, 5]' is invalid for input of size 6", "view [2,5] of 6");
    expect_fail(lt_view(six, 2, SZ(-1, -1)), "only one dimension can be inferred", "view two -1");
    expect_fail(lt_view(six, 2, SZ(-1, 4)), "view: shape '[-1, 4]' is invalid for input of size 6", "view -1 not dividing");
    expect_fail(lt_view(six, 2, SZ(-3, 2)), "view: invalid shape dimension -3", "view negative size");
    lt_release(six);
  }

  /* transposed: [4,3] with strides (1,4); its view as [12] is impossible */
  lt_tensor_t *b = make(LT_FLOAT64, 2, SZ(3, 4));
  lt_tensor_t *tt = lt_t(b);
  expect_fail(lt_view(tt, 1, SZ(12)),
              "view: view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use reshape instead.",
              "view of transposed");
  /* but splitting a dimension is possible */
  v = lt_view(tt, 3, SZ(2, 2, 3));
  check(shape_is(v, 3, SZ(2, 2, 3)) && shares(v, b) && v->strides[0] == 2 && v->strides[1] == 1 &&
            v->strides[2] == 4, "view splitting a transposed dim: strides %lld %lld %lld",
        v ? (long long)v->strides[0] : 0LL, v ? (long long)v->strides[1] : 0LL, v ? (long long)v->strides[2] : 0LL);
  if (v) {
    bool ok = true;
    int64_t idx[3] = {0, 0, 0};
    do { /* v[a,b,c] = tt[a*2+b, c] = b[c, a*2+b] */
      int64_t bi[2] = {idx[2], idx[0] * 2 + idx[1]};
      ok = ok && at(v, idx) == at(b, bi);
    } while (next_idx(3, v->sizes, idx));
    check(ok, "view of transposed: values");
  }
  lt_release(v);

  /* reshape: a copy for the transposed, a view for the contiguous */
  lt_tensor_t *r = lt_reshape(tt, 1, SZ(12));
  check(shape_is(r, 1, SZ(12)) && !shares(r, b), "reshape of transposed copies");
  if (r) {
    bool ok = true;
    for (int64_t i = 0; i < 12; i++) { /* tt row-major: tt[i/3, i%3] = b[i%3, i/3] */
      int64_t bi[2] = {i % 3, i / 3};
      ok = ok && lt_get_double(r, i) == at(b, bi);
    }
    check(ok, "reshape of transposed: values");
  }
  lt_release(r);
  r = lt_reshape(b, 2, SZ(-1, 6));
  check(shape_is(r, 2, SZ(2, 6)) && shares(r, b), "reshape of contiguous is a view");
  lt_release(r);
  expect_fail(lt_reshape(b, 1, SZ(13)), "reshape: shape '[13]' is invalid for input of size 12", "reshape mismatch");

  /* expanded: [3,1] -> [3,4] (stride 0) */
  lt_tensor_t *col = make(LT_INT32, 2, SZ(3, 1));
  lt_tensor_t *e = lt_expand(col, 2, SZ(3, 4));
  v = lt_view(e, 3, SZ(3, 2, 2));
  check(shape_is(v, 3, SZ(3, 2, 2)) && v->strides[1] == 0 && v->strides[2] == 0, "view of expanded");
  lt_release(v);
  expect_fail(lt_view(e, 1, SZ(12)), "Use reshape instead", "view of expanded flattening");
  r = lt_reshape(e, 1, SZ(12));
  if (r) {
    bool ok = true;
    for (int64_t i = 0; i < 12; i++) ok = ok && lt_get_double(r, i) == val(LT_INT32, i / 4);
    check(ok && r->dtype == LT_INT32, "reshape of expanded: values");
  } else check(false, "reshape of expanded: %s", lt_last_error());
  lt_release(r);

  /* 0-dim and empty */
  lt_tensor_t *s = make(LT_FLOAT32, 0, NULL);
  v = lt_view(s, 2, SZ(1, 1));
  check(shape_is(v, 2, SZ(1, 1)), "view of 0-dim as [1,1]");
  lt_tensor_t *v0 = v ? lt_view(v, 0, NULL) : NULL;
  check(v0 && v0->ndim == 0 && v0->numel == 1, "view back to 0-dim");
  lt_release(v0);
  lt_release(v);
  lt_tensor_t *z = lt_empty(2, SZ(0, 3), LT_FLOAT32, CPU0);
  v = lt_view(z, 2, SZ(3, 0));
  check(shape_is(v, 2, SZ(3, 0)), "view of empty");
  lt_release(v);
  expect_fail(lt_view(z, 2, SZ(-1, 0)), "ambiguous", "view of empty with -1");
  lt_release(z);
  lt_release(s);
  lt_release(e);
  lt_release(col);
  lt_release(tt);
  lt_release(b);
  lt_release(x);
}

/* ---- permute / transpose / t ---- */
static void test_permute(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    lt_tensor_t *x = make(dt, 3, SZ(2, 3, 4));
    lt_tensor_t *p = lt_permute(x, 3, SZ(2, 0, -2));
    bool ok = shape_is(p, 3, SZ(4, 2, 3)) && shares(p, x);
    if (ok) {
      int64_t idx[3] = {0, 0, 0};
      do {
        int64_t xi[3] = {idx[1], idx[2], idx[0]};
        ok = ok && at(p, idx) == at(x, xi);
      } while (next_idx(3, p->sizes, idx));
    }
    check(ok, "permute (%s)", lt_dtype_name(dt));
    /* contiguous copy of the permuted */
    lt_tensor_t *c = p ? lt_contiguous(p) : NULL;
    ok = c && lt_is_contiguous(c) && !shares(c, x);
    if (ok) {
      int64_t idx[3] = {0, 0, 0};
      do {
        int64_t xi[3] = {idx[1], idx[2], idx[0]};
        ok = ok && at(c, idx) == at(x, xi);
      } while (next_idx(3, c->sizes, idx));
    }
    check(ok, "contiguous(permute) (%s)", lt_dtype_name(dt));
    lt_release(c);
    lt_release(p);
    lt_release(x);
  }
  lt_tensor_t *x = make(LT_FLOAT32, 3, SZ(2, 3, 4));
  expect_fail(lt_permute(x, 3, SZ(0, 0, 1)), "permute", "permute duplicate");
  expect_fail(lt_permute(x, 3, SZ(0, 0, 1)), "duplicate dims are not allowed", "permute duplicate text");
  expect_fail(lt_permute(x, 2, SZ(0, 1)), "input.dim() = 3 is not equal to len(dims) = 2", "permute length");
  expect_fail(lt_permute(x, 3, SZ(0, 1, 3)), "permute: dimension out of range", "permute out of range");

  lt_tensor_t *tr = lt_transpose(x, 0, -1);
  bool ok = shape_is(tr, 3, SZ(4, 3, 2)) && tr->strides[0] == 1 && tr->strides[2] == 12;
  if (ok) {
    int64_t idx[3] = {0, 0, 0};
    do {
      int64_t xi[3] = {idx[2], idx[1], idx[0]};
      ok = ok && at(tr, idx) == at(x, xi);
    } while (next_idx(3, tr->sizes, idx));
  }
  check(ok, "transpose(0, -1)");
  lt_release(tr);
  expect_fail(lt_transpose(x, 0, 3), "transpose: dimension out of range (expected to be in range of [-3, 3], but got 4)", "transpose range");
  expect_fail(lt_t(x), "t() expects a tensor with <= 2 dimensions, but self is 3D", "t of 3-D");

  lt_tensor_t *m = make(LT_INT64, 2, SZ(2, 5));
  lt_tensor_t *mt = lt_t(m);
  ok = shape_is(mt, 2, SZ(5, 2)) && shares(mt, m);
  for (int64_t i = 0; ok && i < 5; i++)
    for (int64_t j = 0; j < 2; j++) {
      int64_t a[2] = {i, j}, b[2] = {j, i};
      ok = ok && at(mt, a) == at(m, b);
    }
  check(ok, "t of 2-D");
  lt_tensor_t *mtt = mt ? lt_t(mt) : NULL;
  check(shape_is(mtt, 2, SZ(2, 5)) && lt_is_contiguous(mtt), "t(t(m)) is m's geometry");
  lt_release(mtt);
  lt_release(mt);
  lt_tensor_t *v1 = make(LT_FLOAT32, 1, SZ(3));
  lt_tensor_t *v1t = lt_t(v1);
  check(shape_is(v1t, 1, SZ(3)) && v1t != v1 && shares(v1t, v1), "t of 1-D is a new alias");
  lt_release(v1t);
  lt_release(v1);
  lt_tensor_t *s = make(LT_FLOAT32, 0, NULL);
  lt_tensor_t *st = lt_t(s);
  check(st && st->ndim == 0, "t of 0-dim");
  lt_release(st);
  st = lt_transpose(s, 0, -1);
  check(st && st->ndim == 0, "transpose of 0-dim with dims 0, -1");
  lt_release(st);
  lt_release(s);
  lt_release(m);
  lt_release(x);
}

/* ---- squeeze / unsqueeze / expand / flatten ---- */
static void test_squeeze_expand(void) {
  lt_tensor_t *x = make(LT_FLOAT32, 4, SZ(1, 3, 1, 2));
  lt_tensor_t *s = lt_squeeze(x);
  double exp[6];
  for (int i = 0; i < 6; i++) exp[i] = val(LT_FLOAT32, i);
  check(shape_is(s, 2, SZ(3, 2)) && shares(s, x) && values_are(s, exp), "squeeze all: %s", shp(s));
  lt_release(s);
  s = lt_squeeze_dim(x, 2);
  check(shape_is(s, 3, SZ(1, 3, 2)) && values_are(s, exp), "squeeze(2)");
  lt_release(s);
  s = lt_squeeze_dim(x, -3);
  check(shape_is(s, 4, SZ(1, 3, 1, 2)), "squeeze of a non-1 dim leaves the shape");
  lt_release(s);
  expect_fail(lt_squeeze_dim(x, 4), "squeeze: dimension out of range", "squeeze range");

  lt_tensor_t *y = make(LT_FLOAT64, 2, SZ(3, 2));
  lt_tensor_t *u = lt_unsqueeze(y, 0);
  check(shape_is(u, 3, SZ(1, 3, 2)) && values_are(u, exp), "unsqueeze(0)");
  lt_release(u);
  u = lt_unsqueeze(y, 2);
  check(shape_is(u, 3, SZ(3, 2, 1)) && values_are(u, exp), "unsqueeze(2) (end)");
  lt_release(u);
  u = lt_unsqueeze(y, -1);
  check(shape_is(u, 3, SZ(3, 2, 1)), "unsqueeze(-1)");
  lt_release(u);
  u = lt_unsqueeze(y, -2);
  check(shape_is(u, 3, SZ(3, 1, 2)) && values_are(u, exp), "unsqueeze(-2)");
  lt_release(u);
  expect_fail(lt_unsqueeze(y, 3), "unsqueeze: dimension out of range (expected to be in range of [-3, 3], but got 4)", "unsqueeze range");
  lt_tensor_t *sc = make(LT_FLOAT32, 0, NULL);
  u = lt_unsqueeze(sc, 0);
  check(shape_is(u, 1, SZ(1)), "unsqueeze of 0-dim");
  lt_release(u);

  /* expand */
  lt_tensor_t *c = make(LT_INT16, 2, SZ(3, 1));
  lt_tensor_t *e = lt_expand(c, 3, SZ(2, 3, 4));
  bool ok = shape_is(e, 3, SZ(2, 3, 4)) && shares(e, c) && e->strides[2] == 0 && e->strides[0] == 0;
  if (ok) {
    int64_t idx[3] = {0, 0, 0};
    do ok = ok && at(e, idx) == val(LT_INT16, idx[1]);
    while (next_idx(3, e->sizes, idx));
  }
  check(ok, "expand [3,1] -> [2,3,4]");
  lt_release(e);
  e = lt_expand(c, 2, SZ(-1, 5));
  check(shape_is(e, 2, SZ(3, 5)), "expand with -1");
  lt_release(e);
  e = lt_expand(sc, 2, SZ(2, 2));
  check(shape_is(e, 2, SZ(2, 2)) && e->strides[0] == 0 && e->strides[1] == 0 &&
            lt_get_double(e, 3) == val(LT_FLOAT32, 0), "expand of 0-dim");
  lt_release(e);
  lt_tensor_t *m = make(LT_FLOAT32, 2, SZ(2, 3));
  expect_fail(lt_expand(m, 2, SZ(2, 4)),
              "expand: the expanded size of the tensor (4) must match the existing size (3) at "
              "non-singleton dimension 2. Target sizes: [2, 4]. Tensor sizes: [2, 3]", "expand mismatch");
  expect_fail(lt_expand(m, 1, SZ(3)), "expand: the number of sizes provided (1) must be greater or equal", "expand too few sizes");
  expect_fail(lt_expand(m, 3, SZ(-1, 2, 3)), "isn't allowed in a leading, non-existing dimension 1", "expand -1 leading");
  /* expand of a transposed tensor keeps its strides */
  lt_tensor_t *mt = lt_t(m); /* [3,2] */
  e = lt_expand(mt, 3, SZ(2, 3, 2));
  ok = shape_is(e, 3, SZ(2, 3, 2));
  for (int64_t a = 0; ok && a < 2; a++)
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 2; j++) {
        int64_t ei[3] = {a, i, j}, mi[2] = {j, i};
        ok = ok && at(e, ei) == at(m, mi);
      }
  check(ok, "expand of transposed");
  lt_release(e);

  /* flatten */
  lt_tensor_t *x3 = make(LT_UINT8, 3, SZ(2, 3, 4));
  double e24[24];
  for (int i = 0; i < 24; i++) e24[i] = val(LT_UINT8, i);
  lt_tensor_t *f = lt_flatten(x3, 1, 2);
  check(shape_is(f, 2, SZ(2, 12)) && shares(f, x3) && values_are(f, e24), "flatten(1, 2)");
  lt_release(f);
  f = lt_flatten(x3, 0, -1);
  check(shape_is(f, 1, SZ(24)) && values_are(f, e24), "flatten(0, -1)");
  lt_release(f);
  f = lt_flatten(x3, 1, 1);
  check(shape_is(f, 3, SZ(2, 3, 4)), "flatten(1, 1) unchanged");
  lt_release(f);
  lt_tensor_t *p = lt_permute(x3, 3, SZ(2, 1, 0)); /* [4,3,2] non-contiguous */
  f = lt_flatten(p, 0, 1);
  ok = shape_is(f, 2, SZ(12, 2)) && !shares(f, x3);
  for (int64_t i = 0; ok && i < 12; i++)
    for (int64_t j = 0; j < 2; j++) {
      int64_t fi[2] = {i, j}, xi[3] = {j, i % 3, i / 3};
      ok = ok && at(f, fi) == at(x3, xi);
    }
  check(ok, "flatten of permuted copies correctly");
  lt_release(f);
  f = lt_flatten(sc, 0, -1);
  check(shape_is(f, 1, SZ(1)), "flatten of 0-dim is [1]");
  lt_release(f);
  expect_fail(lt_flatten(x3, 2, 1), "flatten", "flatten start > end");
  expect_fail(lt_flatten(x3, 2, 1), "start_dim cannot come after end_dim", "flatten start > end text");
  expect_fail(lt_flatten(x3, 0, 5), "flatten: dimension out of range", "flatten range");

  lt_release(p);
  lt_release(x3);
  lt_release(mt);
  lt_release(m);
  lt_release(c);
  lt_release(sc);
  lt_release(y);
  lt_release(x);
}

/* ---- narrow / select / slice ---- */
static void test_narrow_select_slice(void) {
  lt_tensor_t *x = make(LT_FLOAT32, 2, SZ(4, 5));
  lt_tensor_t *n = lt_narrow(x, 1, 1, 3);
  bool ok = shape_is(n, 2, SZ(4, 3)) && shares(n, x);
  for (int64_t i = 0; ok && i < 4; i++)
    for (int64_t j = 0; j < 3; j++) {
      int64_t a[2] = {i, j}, b[2] = {i, j + 1};
      ok = ok && at(n, a) == at(x, b);
    }
  check(ok, "narrow(1, 1, 3)");
  /* write through the narrow view */
  if (n) {
    lt_tensor_t *row = lt_select(n, 0, 2);
    if (row) lt_fill_(row, lt_float_operand(-7));
    lt_release(row);
    int64_t b[2] = {2, 2};
    check(at(x, b) == -7, "fill through narrow+select reaches base");
  }
  lt_release(n);
  n = lt_narrow(x, 0, -2, 2);
  check(shape_is(n, 2, SZ(2, 5)) && n->offset == 10, "narrow with negative start");
  lt_release(n);
  n = lt_narrow(x, 0, 4, 0);
  check(shape_is(n, 2, SZ(0, 5)), "narrow at the end with length 0");
  lt_release(n);
  expect_fail(lt_narrow(x, 0, 2, 3), "narrow: start (3) + length (3) exceeds dimension size (4).", "narrow too long");
  expect_fail(lt_narrow(x, 0, 7, 1), "narrow: start 8 out of range for dimension 1 of size 4", "narrow start");
  expect_fail(lt_narrow(x, 0, 0, -1), "narrow: length must be non-negative", "narrow negative length");
  expect_fail(lt_narrow(x, 2, 0, 1), "narrow: dimension out of range", "narrow dim");

  lt_tensor_t *s = lt_select(x, 1, 3);
  ok = shape_is(s, 1, SZ(4)) && shares(s, x);
  for (int64_t i = 0; ok && i < 4; i++) {
    int64_t b[2] = {i, 3}, a[1] = {i};
    ok = ok && at(s, a) == at(x, b);
  }
  check(ok, "select(1, 3)");
  lt_release(s);
  s = lt_select(x, 0, -1);
  ok = shape_is(s, 1, SZ(5));
  for (int64_t j = 0; ok && j < 5; j++) {
    int64_t b[2] = {3, j}, a[1] = {j};
    ok = ok && at(s, a) == at(x, b);
  }
  check(ok, "select(0, -1) is the last row");
  lt_release(s);
  lt_tensor_t *v = make(LT_INT64, 1, SZ(3));
  s = lt_select(v, 0, 2);
  check(s && s->ndim == 0 && lt_get_double(s, 0) == val(LT_INT64, 2), "select of 1-D is 0-dim");
  lt_release(s);
  expect_fail(lt_select(v, 0, 4), "select: index 5 out of range for tensor of size [3] at dimension 1", "select range");
  expect_fail(lt_select(v, 0, -4), "select: index -4 out of range for tensor of size [3] at dimension 1", "select negative range");
  lt_tensor_t *sc = make(LT_FLOAT32, 0, NULL);
  expect_fail(lt_select(sc, 0, 0), "select() cannot be applied to a 0-dim tensor", "select 0-dim");
  expect_fail(lt_narrow(sc, 0, 0, 1), "narrow() cannot be applied to a 0-dim tensor", "narrow 0-dim");

  /* slices on a 1-D of 10, compared with Python's results */
  lt_tensor_t *r = make(LT_INT32, 1, SZ(10));
  struct { int64_t start, stop, step; int n; int64_t exp[10]; } cases[] = {
      {0, 10, 1, 10, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {2, 8, 3, 2, {2, 5}},
      {2, 9, 3, 3, {2, 5, 8}},
      {-3, INT64_MAX, 1, 3, {7, 8, 9}},
      {-100, 3, 2, 2, {0, 2}},
      {5, 2, 1, 0, {0}},
      {8, 100, 1, 2, {8, 9}},
      {12, 20, 1, 0, {0}},
      {0, -1, 4, 3, {0, 4, 8}},
      {-5, -2, 1, 3, {5, 6, 7}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    lt_tensor_t *sl = lt_slice(r, 0, cases[k].start, cases[k].stop, cases[k].step);
    ok = sl && sl->ndim == 1 && sl->sizes[0] == cases[k].n && shares(sl, r);
    for (int i = 0; ok && i < cases[k].n; i++) ok = lt_get_double(sl, i) == val(LT_INT32, cases[k].exp[i]);
    check(ok, "slice(%lld, %lld, %lld): %s", (long long)cases[k].start, (long long)cases[k].stop,
          (long long)cases[k].step, shp(sl));
    lt_release(sl);
  }
  /* slice of a transposed 2-D along its second dim */
  lt_tensor_t *xt = lt_t(x); /* [5,4] */
  lt_tensor_t *sl = lt_slice(xt, 1, 1, 4, 2);
  ok = shape_is(sl, 2, SZ(5, 2));
  for (int64_t i = 0; ok && i < 5; i++)
    for (int64_t j = 0; j < 2; j++) {
      int64_t a[2] = {i, j}, b[2] = {1 + 2 * j, i};
      ok = ok && at(sl, a) == at(x, b);
    }
  check(ok, "slice of transposed");
  lt_release(sl);
  expect_fail(lt_slice(r, 0, 0, 5, 0), "slice step must be positive", "slice step 0");
  expect_fail(lt_slice(r, 1, 0, 5, 1), "slice: dimension out of range", "slice dim");
  lt_release(xt);
  lt_release(r);
  lt_release(sc);
  lt_release(v);
  lt_release(x);
}

/* ---- cat / stack ---- */
static void test_cat_stack(void) {
  for (int di = 0; di < NDT; di++) {
    lt_dtype dt = all_dtypes[di];
    lt_tensor_t *a = make(dt, 2, SZ(2, 3));
    lt_tensor_t *b0 = make(dt, 2, SZ(3, 4));
    lt_tensor_t *b = lt_t(b0); /* [4,3] non-contiguous */
    lt_tensor_t *c = make(dt, 2, SZ(1, 3));
    lt_tensor_t *ce = lt_expand(c, 2, SZ(3, 3)); /* stride 0 */
    lt_tensor_t *xs[3] = {a, b, ce};
    lt_tensor_t *r = lt_cat(3, xs, 0);
    bool ok = shape_is(r, 2, SZ(9, 3)) && r->dtype == dt;
    for (int64_t i = 0; ok && i < 9; i++)
      for (int64_t j = 0; j < 3; j++) {
        int64_t ri[2] = {i, j};
        double e;
        if (i < 2) { int64_t q[2] = {i, j}; e = at(a, q); }
        else if (i < 6) { int64_t q[2] = {j, i - 2}; e = at(b0, q); }
        else { int64_t q[2] = {0, j}; e = at(c, q); }
        ok = ok && at(r, ri) == e;
      }
    check(ok, "cat dim 0 (%s)", lt_dtype_name(dt));
    lt_release(r);
    /* along dim 1 (given as -1) */
    lt_tensor_t *d = make(dt, 2, SZ(2, 2));
    lt_tensor_t *ys[2] = {a, d};
    r = lt_cat(2, ys, -1);
    ok = shape_is(r, 2, SZ(2, 5));
    for (int64_t i = 0; ok && i < 2; i++)
      for (int64_t j = 0; j < 5; j++) {
        int64_t ri[2] = {i, j}, q[2] = {i, j < 3 ? j : j - 3};
        ok = ok && at(r, ri) == (j < 3 ? at(a, q) : at(d, q));
      }
    check(ok, "cat dim -1 (%s)", lt_dtype_name(dt));
    lt_release(r);
    /* stack */
    lt_tensor_t *a2 = lt_t(b0 ? b0 : a); /* [4,3] */
    lt_tensor_t *b2 = make(dt, 2, SZ(4, 3));
    lt_tensor_t *zs[2] = {a2, b2};
    for (int64_t sd = -3; sd <= 2; sd++) {
      r = lt_stack(2, zs, sd);
      int dd = (int)(sd < 0 ? sd + 3 : sd);
      int64_t exp_shape[3], k = 0;
      for (int q = 0; q < 3; q++) exp_shape[q] = q == dd ? 2 : (k++ == 0 ? 4 : 3);
      ok = shape_is(r, 3, exp_shape);
      if (ok) {
        int64_t idx[3] = {0, 0, 0};
        do {
          int64_t which = idx[dd], rest[2], kk = 0;
          for (int q = 0; q < 3; q++) if (q != dd) rest[kk++] = idx[q];
          ok = ok && at(r, idx) == at(which ? b2 : a2, rest);
        } while (next_idx(3, r->sizes, idx));
      }
      check(ok, "stack dim %lld (%s): %s", (long long)sd, lt_dtype_name(dt), shp(r));
      lt_release(r);
    }
    lt_release(a2);
    lt_release(b2);
    lt_release(d);
    lt_release(ce);
    lt_release(c);
    lt_release(b);
    lt_release(b0);
    lt_release(a);
  }

  /* promotion, legacy empty tensors, errors */
  lt_tensor_t *i32 = make(LT_INT32, 2, SZ(2, 2));
  lt_tensor_t *f16 = make(LT_FLOAT16, 2, SZ(1, 2));
  lt_tensor_t *u8 = make(LT_UINT8, 2, SZ(1, 2));
  lt_tensor_t *legacy = lt_empty(1, SZ(0), LT_FLOAT64, CPU0);
  lt_tensor_t *xs[4] = {i32, legacy, f16, u8};
  lt_tensor_t *r = lt_cat(4, xs, 0);
  /* promote(int32, float64, float16, uint8) = float64 */
  bool ok = shape_is(r, 2, SZ(4, 2)) && r->dtype == LT_FLOAT64;
  double exp[8] = {val(LT_INT32, 0), val(LT_INT32, 1), val(LT_INT32, 2), val(LT_INT32, 3),
                   val(LT_FLOAT16, 0), val(LT_FLOAT16, 1), val(LT_UINT8, 0), val(LT_UINT8, 1)};
  check(ok && values_are(r, exp), "cat promotes and skips legacy empty: %s %s", shp(r),
        r ? lt_dtype_name(r->dtype) : "");
  lt_release(r);
  lt_tensor_t *ys[2] = {i32, f16};
  r = lt_cat(2, ys, 0);
  check(r && r->dtype == LT_FLOAT16, "cat int32 + float16 -> float16");
  lt_release(r);
  lt_tensor_t *only[2] = {legacy, legacy};
  r = lt_cat(2, only, 0);
  check(shape_is(r, 1, SZ(0)), "cat of legacy empties");
  lt_release(r);
  lt_tensor_t *e2 = lt_empty(2, SZ(0, 2), LT_INT32, CPU0);
  lt_tensor_t *ws[2] = {i32, e2};
  r = lt_cat(2, ws, 0);
  check(shape_is(r, 2, SZ(2, 2)), "cat with a [0,2] tensor");
  lt_release(r);

  lt_tensor_t *v3 = make(LT_INT32, 1, SZ(3));
  lt_tensor_t *bad1[2] = {i32, v3};
  expect_fail(lt_cat(2, bad1, 0), "cat: Tensors must have same number of dimensions: got 2 and 1", "cat ndim");
  lt_tensor_t *m23 = make(LT_INT32, 2, SZ(2, 3));
  lt_tensor_t *bad2[2] = {i32, m23};
  expect_fail(lt_cat(2, bad2, 0),
              "cat: Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 2 in the list.",
              "cat sizes");
  expect_fail(lt_cat(0, bad2, 0), "cat: expected a non-empty list of Tensors", "cat empty list");
  expect_fail(lt_cat(2, bad2, 2), "cat: dimension out of range", "cat dim");
  lt_tensor_t *sc = make(LT_FLOAT32, 0, NULL);
  lt_tensor_t *bad3[2] = {i32, sc};
  expect_fail(lt_cat(2, bad3, 0), "cat: zero-dimensional tensor (at position 2) cannot be concatenated", "cat 0-dim");
  lt_tensor_t *other = lt_empty(2, SZ(1, 2), LT_INT32, lt_device(LT_CPU, 1));
  if (other) {
    lt_tensor_t *bad4[2] = {i32, other};
    expect_fail(lt_cat(2, bad4, 0), "cat: expected all tensors to be on the same device", "cat devices");
    lt_release(other);
  } else {
    check(false, "cpu:1 not available: %s", lt_last_error());
  }
  expect_fail(lt_stack(2, bad2, 0), "stack: expects each tensor to be equal size, but got [2, 2] at entry 1 and [2, 3] at entry 2", "stack sizes");
  expect_fail(lt_stack(2, ys, 3), "stack: dimension out of range", "stack dim");
  expect_fail(lt_stack(0, ys, 0), "stack", "stack empty");
  /* stack of 0-dim tensors */
  lt_tensor_t *ss[2] = {sc, sc};
  r = lt_stack(2, ss, 0);
  check(shape_is(r, 1, SZ(2)) && lt_get_double(r, 1) == val(LT_FLOAT32, 0), "stack of 0-dim");
  lt_release(r);

  lt_release(sc);
  lt_release(m23);
  lt_release(v3);
  lt_release(e2);
  lt_release(legacy);
  lt_release(u8);
  lt_release(f16);
  lt_release(i32);
}

/* ---- split / chunk ---- */
static void free_pieces(lt_tensor_t **p, int n) {
  for (int i = 0; i < n; i++) lt_release(p[i]);
  free(p);
}

/* pieces along dim 0 of a [N, 2] tensor, each with the expected row count and rows */
static bool pieces_ok(lt_tensor_t *x, lt_tensor_t **p, int n, const int64_t *rows, int nexp) {
  if (n != nexp) return false;
  int64_t r0 = 0;
  for (int i = 0; i < n; i++) {
    if (!shape_is(p[i], 2, SZ(rows[i], 2)) || !shares(p[i], x)) return false;
    for (int64_t r = 0; r < rows[i]; r++)
      for (int64_t j = 0; j < 2; j++) {
        int64_t a[2] = {r, j}, b[2] = {r0 + r, j};
        if (at(p[i], a) != at(x, b)) return false;
      }
    r0 += rows[i];
  }
  return true;
}

static void test_split_chunk(void) {
  lt_tensor_t *x = make(LT_BFLOAT16, 2, SZ(7, 2));
  lt_tensor_t **p = NULL;
  int n = 0;
  int rc = lt_split(x, 3, 0, &p, &n);
  check(rc == LT_OK && pieces_ok(x, p, n, SZ(3, 3, 1), 3), "split 7 by 3");
  free_pieces(p, n);
  rc = lt_split(x, 7, 0, &p, &n);
  check(rc == LT_OK && pieces_ok(x, p, n, SZ(7), 1), "split 7 by 7");
  free_pieces(p, n);
  rc = lt_split(x, 10, 0, &p, &n);
  check(rc == LT_OK && pieces_ok(x, p, n, SZ(7), 1), "split 7 by 10");
  free_pieces(p, n);
  rc = lt_split(x, 1, -1, &p, &n);
  check(rc == LT_OK && n == 2 && shape_is(p[0], 2, SZ(7, 1)) && shape_is(p[1], 2, SZ(7, 1)) &&
            lt_get_double(p[1], 3) == val(LT_BFLOAT16, 7), "split along dim -1");
  free_pieces(p, n);
  expect_rc_fail(lt_split(x, -1, 0, &p, &n), "split expects split_size be non-negative", "split negative");
  expect_rc_fail(lt_split(x, 0, 0, &p, &n), "split_size can only be 0 if dimension size is 0", "split 0");
  expect_rc_fail(lt_split(x, 2, 2, &p, &n), "split: dimension out of range", "split dim");
  lt_tensor_t *z = lt_empty(2, SZ(0, 2), LT_FLOAT32, CPU0);
  rc = lt_split(z, 0, 0, &p, &n);
  check(rc == LT_OK && n == 1 && shape_is(p[0], 2, SZ(0, 2)), "split of empty by 0");
  free_pieces(p, n);

  rc = lt_split_sizes(x, 3, SZ(2, 0, 5), 0, &p, &n);
  check(rc == LT_OK && pieces_ok(x, p, n, SZ(2, 0, 5), 3), "split_sizes 2,0,5");
  free_pieces(p, n);
  expect_rc_fail(lt_split_sizes(x, 2, SZ(3, 3), 0, &p, &n),
                 "split_with_sizes: expects split_sizes to sum exactly to 7 (input tensor's size at dimension 1), but got split_sizes=[3, 3]",
                 "split_sizes sum");
  expect_rc_fail(lt_split_sizes(x, 2, SZ(8, -1), 0, &p, &n), "non-negative", "split_sizes negative");

  rc = lt_chunk(x, 3, 0, &p, &n);
  check(rc == LT_OK && pieces_ok(x, p, n, SZ(3, 3, 1), 3), "chunk 7 into 3");
  free_pieces(p, n);
  lt_tensor_t *six = make(LT_INT8, 2, SZ(6, 2));
  rc = lt_chunk(six, 4, 0, &p, &n); /* ceil(6/4) = 2: 3 chunks */
  check(rc == LT_OK && pieces_ok(six, p, n, SZ(2, 2, 2), 3), "chunk 6 into 4 gives 3");
  free_pieces(p, n);
  rc = lt_chunk(six, 10, 0, &p, &n);
  check(rc == LT_OK && pieces_ok(six, p, n, SZ(1, 1, 1, 1, 1, 1), 6), "chunk 6 into 10 gives 6");
  free_pieces(p, n);
  rc = lt_chunk(z, 3, 0, &p, &n);
  check(rc == LT_OK && n == 3 && shape_is(p[0], 2, SZ(0, 2)) && shape_is(p[2], 2, SZ(0, 2)),
        "chunk of empty gives `chunks` empties");
  free_pieces(p, n);
  expect_rc_fail(lt_chunk(six, 0, 0, &p, &n), "chunk expects `chunks` to be greater than 0, got: 0", "chunk 0");
  expect_rc_fail(lt_chunk(six, 2, 5, &p, &n), "chunk: dimension out of range", "chunk dim");
  lt_tensor_t *sc = make(LT_FLOAT32, 0, NULL);
  expect_rc_fail(lt_chunk(sc, 2, 0, &p, &n), "chunk expects at least a 1-dimensional tensor", "chunk 0-dim");
  expect_rc_fail(lt_split(sc, 2, 0, &p, &n), "split expects at least a 1-dimensional tensor", "split 0-dim");
  /* pieces of a transposed tensor are views of it */
  lt_tensor_t *xt = lt_t(x); /* [2,7] */
  rc = lt_chunk(xt, 2, 1, &p, &n);
  bool ok = rc == LT_OK && n == 2 && shape_is(p[0], 2, SZ(2, 4)) && shape_is(p[1], 2, SZ(2, 3));
  for (int64_t i = 0; ok && i < 2; i++)
    for (int64_t j = 0; j < 3; j++) {
      int64_t a[2] = {i, j}, b[2] = {4 + j, i};
      ok = ok && at(p[1], a) == at(x, b);
    }
  check(ok, "chunk of transposed");
  free_pieces(p, n);
  lt_release(xt);
  lt_release(sc);
  lt_release(six);
  lt_release(z);
  lt_release(x);
}

int main(void) {
  if (lt_cpu_set_device_count(2) != LT_OK) printf("note: could not make 2 CPU devices: %s\n", lt_last_error());
  test_view();
  test_permute();
  test_squeeze_expand();
  test_narrow_select_slice();
  test_cat_stack();
  test_split_chunk();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
