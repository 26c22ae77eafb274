/* Tests of core/reduce.c and kernels/cpu/reduce.c against references computed here with plain
   loops in long double / wrapping int64, over every dtype, contiguous and non-contiguous inputs
   (transposed, sliced, expanded with stride 0), several dims at once, keepdim both ways, NaN and
   empty cases, inputs large enough to take the threaded paths, and bad calls.

   Build (from the repository root):
     gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fopenmp -I. spec/c/test_reduce.c \
         core/reduce.c kernels/cpu/reduce.c core/tensor.c core/device.c core/allocator.c \
         core/error.c core/dtype.c core/iter.c core/elementwise.c kernels/cpu/elementwise.c \
         -lm -lpthread -o test_reduce
   Run: ./test_reduce [-v] [--suite NAME]   (-v prints every check and the time of each suite;
        otherwise only failures are printed)
   Output: a line per failed check, then "N passed, N failed"; the exit status is 1 on failure. */
#include "core/elementwise.h"
#include "core/iter.h"
#include "core/reduce.h"
#include "kernels/half.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const lt_dtype all_dtypes[] = {LT_FLOAT32, LT_FLOAT64, LT_FLOAT16, LT_BFLOAT16, LT_INT64,
                                      LT_INT32,   LT_INT16,   LT_INT8,    LT_UINT8,    LT_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))
static bool isf(lt_dtype dt) { return lt_dtype_is_floating(dt); }
static const lt_device_t CPU = {LT_CPU, 0};

/* ---- inputs ---- */
static uint64_t rng = 88172645463325252ull;
static double uniform(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

enum { CONTIG, TRANSPOSED, SLICED, EXPANDED, NLAYOUT };
static const char *const layout_names[] = {"contiguous", "transposed", "sliced", "expanded"};

/* A tensor of the given sizes and layout, values uniform in [lo, hi] (integers for integer
   dtypes, 0/1 for bool) */
static lt_tensor_t *make(lt_dtype dt, int nd, const int64_t *sizes, int layout, double lo, double hi) {
  int64_t bs[LT_MAX_DIM], st[LT_MAX_DIM], off = 0;
  for (int d = 0; d < nd; d++) bs[d] = sizes[d];
  if (layout == TRANSPOSED)
    for (int d = 0; d < nd; d++) bs[d] = sizes[nd - 1 - d];
  if (layout == SLICED && nd > 0) bs[nd - 1] = sizes[nd - 1] * 2 + 1;
  if (layout == EXPANDED && nd > 0) bs[0] = 1;
  lt_tensor_t *b = lt_empty(nd, bs, isf(dt) ? LT_FLOAT64 : LT_INT64, CPU);
  for (int64_t i = 0; i < b->numel; i++) {
    double u = lo + (hi - lo) * uniform();
    if (isf(dt)) ((double *)lt_data(b))[i] = u;
    else if (dt == LT_BOOL) ((int64_t *)lt_data(b))[i] = uniform() < 0.5;
    else ((int64_t *)lt_data(b))[i] = (int64_t)floor(u + 0.5);
  }
  lt_tensor_t *base = lt_convert(b, dt, CPU);
  lt_release(b);
  for (int d = 0; d < nd; d++) st[d] = base->strides[d];
  if (layout == TRANSPOSED)
    for (int d = 0; d < nd; d++) st[d] = base->strides[nd - 1 - d];
  if (layout == SLICED && nd > 0) { st[nd - 1] *= 2; off = 1; }
  if (layout == EXPANDED && nd > 0) st[0] = 0;
  lt_tensor_t *v = lt_view_geometry(base, nd, sizes, st, off);
  lt_release(base);
  return v;
}

/* a contiguous tensor from doubles */
static lt_tensor_t *from_doubles(lt_dtype dt, int nd, const int64_t *sizes, const double *v) {
  lt_tensor_t *b = lt_empty(nd, sizes, LT_FLOAT64, CPU);
  memcpy(lt_data(b), v, sizeof(double) * (size_t)b->numel);
  lt_tensor_t *t = lt_convert(b, dt, CPU);
  lt_release(b);
  return t;
}

/* ---- the reference: elements of each output, in row-major order ---- */
typedef struct {
  int64_t nout, nred;
  int ond;
  int64_t oshape[LT_MAX_DIM];
  double *v;    /* [nout][nred] */
  int64_t *iv;  /* integer dtypes: exact values */
} gathered_t;

static void mask_of(const lt_tensor_t *x, int ndims, const int64_t *dims, bool *mask) {
  for (int d = 0; d < LT_MAX_DIM; d++) mask[d] = ndims == 0 && d < x->ndim;
  for (int i = 0; i < ndims; i++) {
    int64_t d = dims[i] < 0 ? dims[i] + x->ndim : dims[i];
    if (x->ndim > 0) mask[d] = true;
  }
}

static void gather(const lt_tensor_t *x, const bool *mask, bool keepdim, gathered_t *g) {
  int nd = x->ndim;
  g->nout = 1;
  g->nred = 1;
  g->ond = 0;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) {
      g->nred *= x->sizes[d];
      if (keepdim) g->oshape[g->ond++] = 1;
    } else {
      g->nout *= x->sizes[d];
      g->oshape[g->ond++] = x->sizes[d];
    }
  }
  size_t n = (size_t)(g->nout * g->nred) + 1;
  g->v = calloc(n, sizeof(double));
  g->iv = calloc(n, sizeof(int64_t));
  int64_t *cnt = calloc((size_t)g->nout + 1, sizeof(int64_t));
  /* the values in row-major order, read through a contiguous float64 / int64 copy */
  lt_tensor_t *xd = lt_convert(x, LT_FLOAT64, CPU), *xi = isf(x->dtype) ? NULL : lt_convert(x, LT_INT64, CPU);
  const double *pd = lt_data(xd);
  const int64_t *pi = xi ? lt_data(xi) : NULL;
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t rem = i, o = 0, w = 1;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t id = rem % x->sizes[d];
      rem /= x->sizes[d];
      if (!mask[d]) { o += id * w; w *= x->sizes[d]; }
    }
    int64_t k = o * g->nred + cnt[o]++;
    g->v[k] = pd[i];
    g->iv[k] = pi ? pi[i] : 0;
  }
  lt_release(xd);
  lt_release(xi);
  free(cnt);
}

static void gfree(gathered_t *g) {
  free(g->v);
  free(g->iv);
}

typedef long double ld;

static double ref_sum(const double *v, int64_t n) { ld s = 0; for (int64_t i = 0; i < n; i++) s += v[i]; return (double)s; }
static double ref_abs_sum(const double *v, int64_t n) { ld s = 0; for (int64_t i = 0; i < n; i++) s += fabsl(v[i]); return (double)s; }
static int64_t ref_isum(const int64_t *v, int64_t n) { uint64_t s = 0; for (int64_t i = 0; i < n; i++) s += (uint64_t)v[i]; return (int64_t)s; }
static double ref_prod(const double *v, int64_t n) { ld s = 1; for (int64_t i = 0; i < n; i++) s *= v[i]; return (double)s; }
static int64_t ref_iprod(const int64_t *v, int64_t n) { uint64_t s = 1; for (int64_t i = 0; i < n; i++) s *= (uint64_t)v[i]; return (int64_t)s; }
static double ref_var(const double *v, int64_t n, int64_t corr) {
  ld m = 0, m2 = 0;
  for (int64_t i = 0; i < n; i++) m += v[i];
  m /= n;
  for (int64_t i = 0; i < n; i++) m2 += (v[i] - m) * (v[i] - m);
  ld div = (ld)n - corr;
  if (n == 0) m2 = 0;
  return (double)(m2 / (div > 0 ? div : 0));
}
static double ref_norm(const double *v, int64_t n, double p) {
  if (p == INFINITY || p == -INFINITY) {
    double r = p > 0 ? 0 : INFINITY;
    for (int64_t i = 0; i < n; i++) {
      double a = fabs(v[i]);
      if (a != a) return a;
      if (p > 0 ? a > r : a < r) r = a;
    }
    return r;
  }
  ld s = 0;
  for (int64_t i = 0; i < n; i++) s += p == 0 ? (v[i] != 0) : p == 1 ? fabs(v[i]) : p == 2 ? v[i] * v[i] : pow(fabs(v[i]), p);
  return p == 0 ? (double)s : pow((double)s, 1.0 / p);
}
static double ref_lse(const double *v, int64_t n) {
  double m = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] != v[i]) return v[i];
    if (v[i] > m) m = v[i];
  }
  double c = isfinite(m) ? m : 0;
  ld s = 0;
  for (int64_t i = 0; i < n; i++) s += exp(v[i] - c);
  return log((double)s) + c;
}
/* index of the first maximum (greater) / minimum, or of the first NaN */
static int64_t ref_arg(const double *v, int64_t n, bool greater) {
  int64_t b = 0;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] != v[i]) return i;
    if (greater ? v[i] > v[b] : v[i] < v[b]) b = i;
  }
  return b;
}
static int64_t ref_iarg(const int64_t *v, int64_t n, bool greater) {
  int64_t b = 0;
  for (int64_t i = 1; i < n; i++)
    if (greater ? v[i] > v[b] : v[i] < v[b]) b = i;
  return b;
}

/* the reference rounded to the output dtype, and the gap to the next value of that dtype */
static double round_to(lt_dtype dt, double v) {
  switch (dt) {
  case LT_FLOAT32: return (float)v;
  case LT_FLOAT16: return lt_half_to_float(lt_float_to_half((float)v));
  case LT_BFLOAT16: return lt_bf16_to_float(lt_float_to_bf16((float)v));
  default: return v;
  }
}
static double ulp_of(lt_dtype dt, double r) {
  r = fabs(r);
  if (!isfinite(r)) return 0;
  double u;
  switch (dt) {
  case LT_FLOAT32: u = nextafterf((float)r, INFINITY) - (float)r; break;
  case LT_FLOAT16: {
    lt_half h = lt_float_to_half((float)r), h2 = {(uint16_t)(h.bits + 1)};
    u = (double)lt_half_to_float(h2) - lt_half_to_float(h);
    break;
  }
  case LT_BFLOAT16: {
    lt_bfloat16 h = lt_float_to_bf16((float)r), h2 = {(uint16_t)(h.bits + 1)};
    u = (double)lt_bf16_to_float(h2) - lt_bf16_to_float(h);
    break;
  }
  default: u = nextafter(r, INFINITY) - r; break;
  }
  return isfinite(u) ? u : 0;
}

/* the relative error of computing in double (before the result is rounded to its dtype) */
#define REL 1e-12

static bool close_to(double got, double ref, double tol) {
  if (ref != ref) return got != got;
  if (isinf(ref)) return got == ref;
  return fabs(got - ref) <= tol;
}

static bool shape_is(const lt_tensor_t *t, int nd, const int64_t *shape) {
  if (!t || t->ndim != nd) return false;
  for (int d = 0; d < nd; d++)
    if (t->sizes[d] != shape[d]) return false;
  return true;
}

static bool error_names(const char *op) {
  const char *e = lt_last_error();
  return strncmp(e, op, strlen(op)) == 0;
}

/* compare a result against per-output reference values (doubles), within tol[o] */
static void expect_values(const char *what, const char *desc, lt_tensor_t *out, lt_dtype dt,
                          const gathered_t *g, const double *ref, const double *tol) {
  if (!check(out != NULL, "%s %s: returned a tensor (%s)", what, desc, out ? "" : lt_last_error())) return;
  check(out->dtype == dt, "%s %s: dtype %s (expected %s)", what, desc, lt_dtype_name(out->dtype), lt_dtype_name(dt));
  if (!check(shape_is(out, g->ond, g->oshape), "%s %s: shape", what, desc)) { lt_release(out); return; }
  int bad = 0;
  int64_t first = -1;
  for (int64_t o = 0; o < g->nout; o++) {
    double got = lt_get_double(out, o), r = round_to(dt, ref[o]);
    if (!close_to(got, r, tol[o] + ulp_of(dt, r))) { if (!bad++) first = o; }
  }
  if (!check(bad == 0, "%s %s: values (%d wrong)", what, desc, bad) && first >= 0)
    printf("        first wrong output %lld: got %.17g, expected %.17g (tol %.3g)\n", (long long)first,
           lt_get_double(out, first), ref[first], tol[first] + ulp_of(dt, round_to(dt, ref[first])));
  lt_release(out);
}

static void expect_ints(const char *what, const char *desc, lt_tensor_t *out, lt_dtype dt,
                        const gathered_t *g, const int64_t *ref) {
  if (!check(out != NULL, "%s %s: returned a tensor (%s)", what, desc, out ? "" : lt_last_error())) return;
  check(out->dtype == dt, "%s %s: dtype %s (expected %s)", what, desc, lt_dtype_name(out->dtype), lt_dtype_name(dt));
  if (!check(shape_is(out, g->ond, g->oshape), "%s %s: shape", what, desc)) { lt_release(out); return; }
  int bad = 0;
  int64_t first = -1;
  for (int64_t o = 0; o < g->nout; o++)
    if (lt_get_int(out, o) != ref[o]) { if (!bad++) first = o; }
  if (!check(bad == 0, "%s %s: values (%d wrong)", what, desc, bad) && first >= 0)
    printf("        first wrong output %lld: got %lld, expected %lld\n", (long long)first,
           (long long)lt_get_int(out, first), (long long)ref[first]);
  lt_release(out);
}

static void expect_error(const char *what, const char *desc, lt_tensor_t *out, const char *op) {
  check(out == NULL && error_names(op), "%s %s: an error naming %s (got %s: %s)", what, desc, op,
        out ? "a tensor" : "an error", lt_last_error());
  lt_release(out);
}

/* ---- every dims-list reduction of x over dims ---- */
/* light: fewer variants (large inputs) */
static void check_reductions(const char *xdesc, lt_tensor_t *x, int ndims, const int64_t *dims,
                             bool keepdim, bool do_prod, bool light) {
  char desc[256];
  int k = snprintf(desc, sizeof desc, "[%s %s, dims {", lt_dtype_name(x->dtype), xdesc);
  for (int i = 0; i < ndims; i++) k += snprintf(desc + k, sizeof desc - (size_t)k, i ? ",%lld" : "%lld", (long long)dims[i]);
  snprintf(desc + k, sizeof desc - (size_t)k, "}, keepdim %d]", keepdim);
  bool mask[LT_MAX_DIM];
  mask_of(x, ndims, dims, mask);
  gathered_t g;
  gather(x, mask, keepdim, &g);
  lt_dtype dt = x->dtype;
  bool fl = isf(dt);
  int64_t no = g.nout, nr = g.nred;
  double *ref = calloc((size_t)no + 1, sizeof(double)), *tol = calloc((size_t)no + 1, sizeof(double));
  int64_t *iref = calloc((size_t)no + 1, sizeof(int64_t));
  const lt_dtype DEF = LT_DTYPE_INVALID;

  /* sum */
  for (int64_t o = 0; o < no; o++) {
    const double *v = g.v + o * nr;
    ref[o] = ref_sum(v, nr);
    tol[o] = REL * fabs(ref[o]) + 1e-13 * ref_abs_sum(v, nr);
    iref[o] = ref_isum(g.iv + o * nr, nr);
  }
  if (fl) expect_values("sum", desc, lt_sum(x, ndims, dims, keepdim, DEF), dt, &g, ref, tol);
  else expect_ints("sum", desc, lt_sum(x, ndims, dims, keepdim, DEF), LT_INT64, &g, iref);
  /* sum with a dtype: float64 (exact inputs, reference as doubles) */
  if (light) {
  } else if (!fl) {
    for (int64_t o = 0; o < no; o++) { ref[o] = (double)iref[o]; tol[o] = 0; }
    expect_values("sum(dtype=float64)", desc, lt_sum(x, ndims, dims, keepdim, LT_FLOAT64), LT_FLOAT64, &g, ref, tol);
  } else {
    for (int64_t o = 0; o < no; o++) {
      ref[o] = ref_sum(g.v + o * nr, nr);
      tol[o] = 1e-12 * fabs(ref[o]) + 1e-13 * ref_abs_sum(g.v + o * nr, nr);
    }
    expect_values("sum(dtype=float64)", desc, lt_sum(x, ndims, dims, keepdim, LT_FLOAT64), LT_FLOAT64, &g, ref, tol);
  }

  /* prod */
  if (do_prod) {
    for (int64_t o = 0; o < no; o++) {
      ref[o] = ref_prod(g.v + o * nr, nr);
      tol[o] = REL * fabs(ref[o]);
      iref[o] = ref_iprod(g.iv + o * nr, nr);
    }
    if (fl) expect_values("prod", desc, lt_prod(x, ndims, dims, keepdim, DEF), dt, &g, ref, tol);
    else expect_ints("prod", desc, lt_prod(x, ndims, dims, keepdim, DEF), LT_INT64, &g, iref);
  }

  /* mean */
  for (int64_t o = 0; o < no; o++) {
    const double *v = g.v + o * nr;
    ref[o] = nr ? ref_sum(v, nr) / (double)nr : NAN;
    tol[o] = REL * fabs(ref[o]) + 1e-13 * (nr ? ref_abs_sum(v, nr) / (double)nr : 0);
  }
  if (fl) expect_values("mean", desc, lt_mean(x, ndims, dims, keepdim, DEF), dt, &g, ref, tol);
  else {
    expect_error("mean", desc, lt_mean(x, ndims, dims, keepdim, DEF), "mean()");
    check(strstr(lt_last_error(), lt_dtype_name(dt)) != NULL, "mean %s: the error names the dtype (%s)", desc, lt_last_error());
    expect_values("mean(dtype=float32)", desc, lt_mean(x, ndims, dims, keepdim, LT_FLOAT32), LT_FLOAT32, &g, ref, tol);
  }

  /* var, std */
  for (int64_t corr = light; corr <= 2 - light; corr++) {
    for (int s = 0; s < 2; s++) {
      for (int64_t o = 0; o < no; o++) {
        const double *v = g.v + o * nr;
        double var = ref_var(v, nr, corr);
        ref[o] = s ? sqrt(var) : var;
        ld sq = 0;
        for (int64_t i = 0; i < nr; i++) sq += (ld)v[i] * v[i];
        tol[o] = REL * fabs(ref[o]) + 1e-12 * (double)(s ? sqrtl(sq) : sq);
      }
      char d2[300];
      snprintf(d2, sizeof d2, "%s correction %lld", desc, (long long)corr);
      lt_tensor_t *r = (s ? lt_std : lt_var)(x, ndims, dims, corr, keepdim);
      if (fl) expect_values(s ? "std" : "var", d2, r, dt, &g, ref, tol);
      else expect_error(s ? "std" : "var", d2, r, s ? "std()" : "var()");
    }
  }

  /* norms */
  const double ps[] = {0, 1, 2, 3, 0.5, INFINITY, -INFINITY, -1.5};
  for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
    double p = ps[pi];
    if (light && p != 2 && p != INFINITY && p != 3) continue;
    char d2[300];
    snprintf(d2, sizeof d2, "%s p=%g", desc, p);
    lt_tensor_t *r = lt_norm(x, p, ndims, dims, keepdim);
    if (!fl) { expect_error("norm", d2, r, "norm()"); continue; }
    if ((p < 0 || p == INFINITY) && nr == 0 && no > 0) { expect_error("norm", d2, r, "norm()"); continue; }
    for (int64_t o = 0; o < no; o++) {
      ref[o] = ref_norm(g.v + o * nr, nr, p);
      tol[o] = REL * fabs(ref[o]);
    }
    expect_values("norm", d2, r, dt, &g, ref, tol);
  }

  /* logsumexp: integer inputs give float32; float inputs take their exponentials in float (as
     PyTorch), which costs a few 1e-8 absolute */
  for (int64_t o = 0; o < no; o++) {
    ref[o] = ref_lse(g.v + o * nr, nr);
    tol[o] = REL * (fabs(ref[o]) + 1) + (dt == LT_FLOAT64 ? 0 : 2e-7);
  }
  expect_values("logsumexp", desc, lt_logsumexp(x, ndims, dims, keepdim), fl ? dt : LT_FLOAT32, &g, ref, tol);

  /* amax, amin */
  for (int s = 0; s < 2; s++) {
    lt_tensor_t *r = (s ? lt_amin : lt_amax)(x, ndims, dims, keepdim);
    const char *name = s ? "amin" : "amax";
    if (nr == 0 && no > 0) {
      expect_error(name, desc, r, s ? "amin()" : "amax()");
      continue;
    }
    for (int64_t o = 0; o < no; o++) {
      ref[o] = fl ? g.v[o * nr + ref_arg(g.v + o * nr, nr, !s)] : 0;
      tol[o] = 0;
      iref[o] = fl ? 0 : g.iv[o * nr + ref_iarg(g.iv + o * nr, nr, !s)];
    }
    if (fl) expect_values(name, desc, r, dt, &g, ref, tol);
    else expect_ints(name, desc, r, dt, &g, iref);
  }

  /* any, all */
  for (int s = 0; s < 2; s++) {
    for (int64_t o = 0; o < no; o++) {
      const double *v = g.v + o * nr;
      bool r = s;
      for (int64_t i = 0; i < nr; i++) {
        if (s) r = r && v[i] != 0;
        else r = r || v[i] != 0;
      }
      iref[o] = r;
    }
    expect_ints(s ? "all" : "any", desc, (s ? lt_all : lt_any)(x, ndims, dims, keepdim), LT_BOOL, &g, iref);
  }

  free(ref);
  free(tol);
  free(iref);
  gfree(&g);
}

/* max / min along one dim (values and indices), argmax / argmin along it */
static void check_dim_extremes(const char *xdesc, lt_tensor_t *x, int64_t dim, bool keepdim) {
  char desc[256];
  snprintf(desc, sizeof desc, "[%s %s, dim %lld, keepdim %d]", lt_dtype_name(x->dtype), xdesc, (long long)dim, keepdim);
  bool mask[LT_MAX_DIM];
  mask_of(x, 1, &dim, mask);
  gathered_t g;
  gather(x, mask, keepdim, &g);
  bool fl = isf(x->dtype);
  int64_t no = g.nout, nr = g.nred;
  int64_t *iref = calloc((size_t)no + 1, sizeof(int64_t)), *vref = calloc((size_t)no + 1, sizeof(int64_t));
  double *ref = calloc((size_t)no + 1, sizeof(double)), *tol = calloc((size_t)no + 1, sizeof(double));
  for (int s = 0; s < 2; s++) {
    const char *name = s ? "min" : "max";
    lt_tensor_t *values = NULL, *indices = NULL;
    int rc = (s ? lt_min_dim : lt_max_dim)(x, dim, keepdim, &values, &indices);
    if (nr == 0 && no > 0) {
      check(rc == LT_ERR && error_names(s ? "min()" : "max()"), "%s %s: an error for an empty dim (%s)", name, desc, lt_last_error());
      expect_error(s ? "argmin" : "argmax", desc, (s ? lt_argmin : lt_argmax)(x, true, dim, keepdim), s ? "argmin()" : "argmax()");
      continue;
    }
    lt_tensor_t *a = (s ? lt_argmin : lt_argmax)(x, true, dim, keepdim);
    for (int64_t o = 0; o < no; o++) {
      int64_t i = fl ? ref_arg(g.v + o * nr, nr, !s) : ref_iarg(g.iv + o * nr, nr, !s);
      iref[o] = i;
      ref[o] = g.v[o * nr + i];
      vref[o] = g.iv[o * nr + i];
      tol[o] = 0;
    }
    if (!check(rc == LT_OK, "%s %s: succeeded (%s)", name, desc, lt_last_error())) { lt_release(a); continue; }
    if (fl) expect_values(name, desc, values, x->dtype, &g, ref, tol);
    else expect_ints(name, desc, values, x->dtype, &g, vref);
    expect_ints(s ? "min indices" : "max indices", desc, indices, LT_INT64, &g, iref);
    expect_ints(s ? "argmin" : "argmax", desc, a, LT_INT64, &g, iref);
  }
  free(iref);
  free(vref);
  free(ref);
  free(tol);
  gfree(&g);
}

/* argmax / argmin over the flattened tensor, max / min of everything */
static void check_flat_extremes(const char *xdesc, lt_tensor_t *x) {
  char desc[256];
  snprintf(desc, sizeof desc, "[%s %s, all]", lt_dtype_name(x->dtype), xdesc);
  bool mask[LT_MAX_DIM];
  mask_of(x, 0, NULL, mask);
  gathered_t g;
  gather(x, mask, false, &g);
  bool fl = isf(x->dtype);
  for (int s = 0; s < 2; s++) {
    for (int kd = 0; kd < 2; kd++) {
      lt_tensor_t *a = (s ? lt_argmin : lt_argmax)(x, false, 0, kd);
      if (x->numel == 0) {
        expect_error(s ? "argmin" : "argmax", desc, a, s ? "argmin()" : "argmax()");
        if (!kd) expect_error(s ? "min_all" : "max_all", desc, (s ? lt_min_all : lt_max_all)(x), s ? "min()" : "max()");
        continue;
      }
      lt_tensor_t *m = kd ? NULL : (s ? lt_min_all : lt_max_all)(x);
      int64_t i = fl ? ref_arg(g.v, g.nred, !s) : ref_iarg(g.iv, g.nred, !s);
      int64_t ones[LT_MAX_DIM];
      for (int d = 0; d < LT_MAX_DIM; d++) ones[d] = 1;
      check(a && shape_is(a, kd ? x->ndim : 0, ones) && a->dtype == LT_INT64 && lt_get_int(a, 0) == i,
            "%s %s keepdim %d: index %lld (got %lld)", s ? "argmin" : "argmax", desc, kd, (long long)i,
            a ? (long long)lt_get_int(a, 0) : -1LL);
      lt_release(a);
      if (!kd) {
        bool ok = m && m->ndim == 0 && m->dtype == x->dtype;
        if (ok && fl) ok = close_to(lt_get_double(m, 0), g.v[i], 0);
        else if (ok) ok = lt_get_int(m, 0) == g.iv[i];
        check(ok, "%s %s: the value", s ? "min_all" : "max_all", desc);
        lt_release(m);
      }
    }
  }
  gfree(&g);
}

/* cumsum / cumprod along dim */
static void check_scan(const char *xdesc, lt_tensor_t *x, int64_t dim, bool do_prod) {
  char desc[256];
  snprintf(desc, sizeof desc, "[%s %s, dim %lld]", lt_dtype_name(x->dtype), xdesc, (long long)dim);
  int nd = x->ndim, d = nd ? (int)(dim < 0 ? dim + nd : dim) : 0;
  bool fl = isf(x->dtype);
  for (int s = 0; s < 2; s++) {
    if (s && !do_prod) continue;
    const char *name = s ? "cumprod" : "cumsum";
    lt_tensor_t *r = (s ? lt_cumprod : lt_cumsum)(x, dim, LT_DTYPE_INVALID);
    if (!check(r && shape_is(r, nd, x->sizes) && r->dtype == (fl ? x->dtype : LT_INT64), "%s %s: shape and dtype (%s)",
               name, desc, r ? "" : lt_last_error())) {
      lt_release(r);
      continue;
    }
    /* in row-major order the previous element along dim comes first: running values */
    int64_t stride = 1, len = nd ? x->sizes[d] : 1;
    for (int k = nd - 1; k > d; k--) stride *= x->sizes[k];
    size_t cnt = (size_t)x->numel + 1;
    ld *acc = calloc(cnt, sizeof(ld)), *aabs = calloc(cnt, sizeof(ld));
    uint64_t *iacc = calloc(cnt, sizeof(uint64_t));
    int bad = 0;
    for (int64_t i = 0; i < x->numel; i++) {
      bool first = (i / stride) % len == 0;
      if (fl) {
        double v = lt_get_double(x, i);
        acc[i] = first ? (s ? 1 : 0) : acc[i - stride];
        acc[i] = s ? acc[i] * v : acc[i] + v;
        aabs[i] = (first ? 0 : aabs[i - stride]) + fabsl(v);
        double rr = round_to(x->dtype, (double)acc[i]), tol = REL * fabsl(acc[i]) + 1e-13 * aabs[i] + ulp_of(x->dtype, rr);
        if (!close_to(lt_get_double(r, i), rr, tol)) bad++;
      } else {
        uint64_t v = (uint64_t)lt_get_int(x, i);
        iacc[i] = first ? (s ? 1 : 0) : iacc[i - stride];
        iacc[i] = s ? iacc[i] * v : iacc[i] + v;
        if (lt_get_int(r, i) != (int64_t)iacc[i]) bad++;
      }
    }
    free(acc);
    free(aabs);
    free(iacc);
    check(bad == 0, "%s %s: values (%d wrong)", name, desc, bad);
    lt_release(r);
  }
}

/* ---- suites ---- */
static void suite_dtypes_layouts(void) {
  const int64_t shape[3] = {4, 5, 6};
  const int64_t dimsets[][3] = {{0}, {1}, {2}, {-1}, {0, 2}, {1, 2}, {2, 0}, {0, 1}, {0, 1, 2}};
  const int dimn[] = {1, 1, 1, 1, 2, 2, 2, 2, 3};
  for (int t = 0; t < NDT; t++) {
    lt_dtype dt = all_dtypes[t];
    for (int layout = 0; layout < NLAYOUT; layout++) {
      double lo = isf(dt) ? 0.5 : dt == LT_UINT8 ? 0 : -5, hi = isf(dt) ? 1.5 : 5;
      if (isf(dt) && layout == TRANSPOSED) { lo = -2; hi = 2; }
      lt_tensor_t *x = make(dt, 3, shape, layout, lo, hi);
      const char *ld_ = layout_names[layout];
      for (int kd = 0; kd < 2; kd++) {
        check_reductions(ld_, x, 0, NULL, kd, true, false);
        for (size_t s = 0; s < sizeof dimn / sizeof dimn[0]; s++) check_reductions(ld_, x, dimn[s], dimsets[s], kd, true, false);
        for (int64_t d = -1; d < 3; d++) check_dim_extremes(ld_, x, d, kd);
      }
      check_flat_extremes(ld_, x);
      for (int64_t d = -3; d < 3; d++) check_scan(ld_, x, d, true);
      lt_release(x);
    }
  }
}

/* large enough for the threaded paths, in both loop orders and with few and many outputs */
static void suite_large(void) {
  const int64_t shapes[][3] = {{64, 300, 7}, {3, 12000, 2}, {2, 3, 12000}, {6000, 3, 4}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    for (int t = 0; t < NDT; t++) {
      lt_dtype dt = all_dtypes[t];
      if (si > 0 && dt != LT_FLOAT32 && dt != LT_INT32) continue;
      for (int layout = 0; layout < NLAYOUT; layout += 2 - (t & 1)) {
        double lo = isf(dt) ? -2 : dt == LT_UINT8 ? 0 : -100, hi = isf(dt) ? 2 : 100;
        lt_tensor_t *x = make(dt, 3, shapes[si], layout, lo, hi);
        char xd[64];
        snprintf(xd, sizeof xd, "%s [%lld,%lld,%lld]", layout_names[layout], (long long)shapes[si][0],
                 (long long)shapes[si][1], (long long)shapes[si][2]);
        const int64_t d0 = 0, d1 = 1, d2 = 2, d02[2] = {0, 2}, d12[2] = {1, 2};
        check_reductions(xd, x, 0, NULL, false, false, true);
        check_reductions(xd, x, 1, &d0, false, false, true);
        check_reductions(xd, x, 1, &d1, true, false, true);
        check_reductions(xd, x, 1, &d2, false, false, true);
        check_reductions(xd, x, 2, d02, false, false, true);
        check_reductions(xd, x, 2, d12, true, false, true);
        for (int64_t d = 0; d < 3; d++) check_dim_extremes(xd, x, d, false);
        check_flat_extremes(xd, x);
        if (si == 0) for (int64_t d = 0; d < 3; d++) check_scan(xd, x, d, false);
        lt_release(x);
      }
    }
  }
}

static void suite_nan(void) {
  const lt_dtype fdt[] = {LT_FLOAT32, LT_FLOAT64, LT_FLOAT16, LT_BFLOAT16};
  for (int t = 0; t < 4; t++) {
    lt_dtype dt = fdt[t];
    const char *n = lt_dtype_name(dt);
    /* rows: [1, NaN, 3, NaN], [5, 5, 2, 5], [-inf, -inf, -inf, -inf], [inf, 1, inf, NaN] */
    double v[16] = {1, NAN, 3, NAN, 5, 5, 2, 5, -INFINITY, -INFINITY, -INFINITY, -INFINITY, INFINITY, 1, INFINITY, NAN};
    int64_t sh[2] = {4, 4};
    lt_tensor_t *x = from_doubles(dt, 2, sh, v);
    int64_t one = 1;
    lt_tensor_t *vals = NULL, *idx = NULL;
    check(lt_max_dim(x, 1, false, &vals, &idx) == LT_OK, "max nan %s", n);
    check(vals && isnan(lt_get_double(vals, 0)) && lt_get_int(idx, 0) == 1, "max %s: the first NaN wins (index %lld)", n, idx ? (long long)lt_get_int(idx, 0) : -1LL);
    check(vals && lt_get_double(vals, 1) == 5 && lt_get_int(idx, 1) == 0, "max %s: the first of equal maxima", n);
    check(vals && lt_get_double(vals, 2) == -INFINITY && lt_get_int(idx, 2) == 0, "max %s: all -inf gives index 0", n);
    check(vals && isnan(lt_get_double(vals, 3)) && lt_get_int(idx, 3) == 3, "max %s: NaN after inf", n);
    lt_release(vals);
    lt_release(idx);
    check(lt_min_dim(x, 1, false, &vals, &idx) == LT_OK, "min nan %s", n);
    check(vals && isnan(lt_get_double(vals, 0)) && lt_get_int(idx, 0) == 1, "min %s: the first NaN wins", n);
    check(vals && lt_get_double(vals, 1) == 2 && lt_get_int(idx, 1) == 2, "min %s: the minimum", n);
    check(vals && lt_get_double(vals, 2) == -INFINITY && lt_get_int(idx, 2) == 0, "min %s: all -inf", n);
    lt_release(vals);
    lt_release(idx);
    lt_tensor_t *a = lt_amax(x, 1, &one, false);
    check(a && isnan(lt_get_double(a, 0)) && lt_get_double(a, 1) == 5 && isnan(lt_get_double(a, 3)), "amax %s: NaN propagates", n);
    lt_release(a);
    a = lt_amin(x, 1, &one, false);
    check(a && isnan(lt_get_double(a, 0)) && lt_get_double(a, 1) == 2 && lt_get_double(a, 2) == -INFINITY, "amin %s: NaN propagates", n);
    lt_release(a);
    a = lt_max_all(x);
    check(a && isnan(lt_get_double(a, 0)), "max_all %s: NaN", n);
    lt_release(a);
    a = lt_argmax(x, false, 0, false);
    check(a && lt_get_int(a, 0) == 1, "argmax %s flat: the first NaN", n);
    lt_release(a);
    a = lt_argmin(x, true, 0, false);
    check(a && lt_get_int(a, 0) == 2 && lt_get_int(a, 1) == 0 && lt_get_int(a, 2) == 2 && lt_get_int(a, 3) == 0,
          "argmin %s dim 0: NaN and -inf", n);
    lt_release(a);
    a = lt_sum(x, 1, &one, false, LT_DTYPE_INVALID);
    check(a && isnan(lt_get_double(a, 0)) && lt_get_double(a, 1) == 17 && lt_get_double(a, 2) == -INFINITY &&
              isnan(lt_get_double(a, 3)), "sum %s: NaN and inf", n);
    lt_release(a);
    a = lt_logsumexp(x, 1, &one, false);
    check(a && isnan(lt_get_double(a, 0)) && lt_get_double(a, 2) == -INFINITY && isnan(lt_get_double(a, 3)),
          "logsumexp %s: NaN, all -inf", n);
    lt_release(a);
    double w[4] = {INFINITY, 1, 2, -INFINITY};
    int64_t s4 = 4;
    lt_tensor_t *y = from_doubles(dt, 1, &s4, w);
    a = lt_logsumexp(y, 0, NULL, false);
    check(a && lt_get_double(a, 0) == INFINITY, "logsumexp %s: +inf", n);
    lt_release(a);
    a = lt_norm(x, INFINITY, 1, &one, false);
    check(a && isnan(lt_get_double(a, 0)) && lt_get_double(a, 1) == 5 && lt_get_double(a, 2) == INFINITY, "norm inf %s", n);
    lt_release(a);
    a = lt_norm(y, -INFINITY, 0, NULL, false);
    check(a && lt_get_double(a, 0) == 1, "norm -inf %s", n);
    lt_release(a);
    a = lt_any(x, 1, &one, false);
    check(a && lt_get_int(a, 0) && lt_get_int(a, 2), "any %s: NaN and -inf are true", n);
    lt_release(a);
    a = lt_var(y, 0, NULL, 1, false);
    check(a && isnan(lt_get_double(a, 0)), "var %s with inf: NaN", n);
    lt_release(a);
    lt_release(y);
    lt_release(x);
  }
  /* logsumexp near 0: log(2 * exp(-log 2)) */
  double l2[2] = {-0.69314718055994530942, -0.69314718055994530942};
  int64_t s2 = 2;
  lt_tensor_t *h = from_doubles(LT_FLOAT32, 1, &s2, l2);
  lt_tensor_t *hr = lt_logsumexp(h, 0, NULL, false);
  double want = log(2 * exp((double)(float)l2[0]));
  check(hr && fabs(lt_get_double(hr, 0) - want) < 2e-7, "logsumexp near 0: %.9g vs %.9g", hr ? lt_get_double(hr, 0) : 0, want);
  lt_release(hr);
  lt_release(h);
  /* logsumexp of large values keeps precision (max subtraction) */
  double big[3] = {1000, 1000, 1000};
  int64_t s3 = 3;
  lt_tensor_t *b = from_doubles(LT_FLOAT32, 1, &s3, big);
  lt_tensor_t *r = lt_logsumexp(b, 0, NULL, false);
  check(r && fabs(lt_get_double(r, 0) - (1000 + log(3.0))) < 1e-3, "logsumexp of 1000s: %g", r ? lt_get_double(r, 0) : 0);
  lt_release(r);
  lt_release(b);
  /* var of large offset values (catastrophic cancellation in naive sums) */
  int64_t n = 100000;
  lt_tensor_t *c = lt_empty(1, &n, LT_FLOAT64, CPU);
  double *p = lt_data(c);
  for (int64_t i = 0; i < n; i++) p[i] = 1e9 + (double)(i % 7) * 0.1;
  r = lt_var(c, 0, NULL, 1, false);
  double exact = ref_var(p, n, 1);
  check(r && fabs(lt_get_double(r, 0) - exact) < 1e-6 * exact, "var of 1e9 + small: %.12g vs %.12g", r ? lt_get_double(r, 0) : 0, exact);
  lt_release(r);
  /* the same spread over outputs (OUTER loop order: Welford updates and combines) */
  int64_t sh2[2] = {n / 4, 4};
  lt_tensor_t *c2 = lt_view_geometry(c, 2, sh2, (int64_t[]){4, 1}, 0);
  int64_t z = 0;
  r = lt_var(c2, 1, &z, 0, false);
  bool ok = r != NULL;
  for (int j = 0; ok && j < 4; j++) {
    double col[25000];
    for (int64_t i = 0; i < n / 4; i++) col[i] = p[i * 4 + j];
    double e = ref_var(col, n / 4, 0);
    ok = fabs(lt_get_double(r, j) - e) < 1e-6 * e;
  }
  check(ok, "var over dim 1 of 1e9 + small, per column");
  lt_release(r);
  lt_release(c2);
  lt_release(c);
  /* argmax ties across threads' parts: the first occurrence wins */
  int64_t m = 1000000;
  lt_tensor_t *t = lt_empty(1, &m, LT_FLOAT32, CPU);
  float *f = lt_data(t);
  for (int64_t i = 0; i < m; i++) f[i] = (float)(i % 1000) * 0.001f;
  f[700000] = 5;
  f[300001] = 5;
  f[999999] = 5;
  r = lt_argmax(t, false, 0, false);
  check(r && lt_get_int(r, 0) == 300001, "argmax of 1e6 with ties: %lld", r ? (long long)lt_get_int(r, 0) : -1LL);
  lt_release(r);
  f[900000] = NAN;
  f[800000] = NAN;
  r = lt_argmax(t, false, 0, false);
  check(r && lt_get_int(r, 0) == 800000, "argmax of 1e6 with NaNs: %lld", r ? (long long)lt_get_int(r, 0) : -1LL);
  lt_release(r);
  r = lt_max_all(t);
  check(r && isnan(lt_get_double(r, 0)), "max_all of 1e6 with NaNs");
  lt_release(r);
  lt_release(t);
}

static void suite_empty(void) {
  int64_t sh[3] = {3, 0, 4};
  for (int t = 0; t < NDT; t++) {
    lt_tensor_t *x = lt_empty(3, sh, all_dtypes[t], CPU);
    const char *n = lt_dtype_name(all_dtypes[t]);
    bool fl = isf(all_dtypes[t]);
    int64_t d1 = 1, d0 = 0;
    for (int kd = 0; kd < 2; kd++) {
      check_reductions("empty", x, 1, &d1, kd, true, false);
      check_reductions("empty", x, 1, &d0, kd, true, false);
      check_reductions("empty", x, 0, NULL, kd, true, false);
      for (int64_t d = 0; d < 3; d++) check_dim_extremes("empty", x, d, kd);
    }
    check_flat_extremes("empty", x);
    for (int64_t d = 0; d < 3; d++) check_scan("empty", x, d, true);
    lt_tensor_t *r = lt_sum(x, 1, &d1, false, LT_DTYPE_INVALID);
    check(r && r->numel == 12 && lt_get_double(r, 5) == 0, "sum %s over the empty dim: zeros", n);
    lt_release(r);
    r = lt_prod(x, 1, &d1, false, LT_DTYPE_INVALID);
    check(r && r->numel == 12 && lt_get_double(r, 5) == 1, "prod %s over the empty dim: ones", n);
    lt_release(r);
    if (fl) {
      r = lt_mean(x, 0, NULL, false, LT_DTYPE_INVALID);
      check(r && isnan(lt_get_double(r, 0)), "mean %s of nothing: NaN", n);
      lt_release(r);
    }
    r = lt_amax(x, 1, &d1, false);
    check(!r && strcmp(lt_last_error(), "amax(): Expected reduction dim 2 to have non-zero size.") == 0,
          "amax %s over the empty dim: %s", n, lt_last_error());
    lt_release(r);
    lt_tensor_t *v = NULL, *i = NULL;
    check(lt_max_dim(x, 1, false, &v, &i) == LT_ERR && !v && !i &&
              strcmp(lt_last_error(), "max(): Expected reduction dim 2 to have non-zero size.") == 0,
          "max %s over the empty dim: %s", n, lt_last_error());
    r = lt_max_all(x);
    check(!r && strncmp(lt_last_error(), "max(): Expected reduction dim to be specified for input.numel() == 0.", 60) == 0,
          "max_all %s: %s", n, lt_last_error());
    lt_release(x);
  }
}

static void suite_dtypes_and_shapes(void) {
  int64_t sh[2] = {2, 3};
  lt_tensor_t *b = make(LT_BOOL, 2, sh, CONTIG, 0, 1);
  lt_tensor_t *r = lt_sum(b, 0, NULL, false, LT_DTYPE_INVALID);
  check(r && r->dtype == LT_INT64 && r->ndim == 0, "sum of bool: 0-dim int64");
  lt_release(r);
  r = lt_sum(b, 0, NULL, false, LT_BOOL);
  check(r && r->dtype == LT_BOOL, "sum(dtype=bool)");
  lt_release(r);
  r = lt_cumsum(b, 1, LT_DTYPE_INVALID);
  check(r && r->dtype == LT_INT64, "cumsum of bool: int64");
  lt_release(r);
  r = lt_any(b, 0, NULL, true);
  check(r && r->dtype == LT_BOOL && r->ndim == 2 && r->sizes[0] == 1 && r->sizes[1] == 1, "any keepdim: [1, 1] bool");
  lt_release(r);
  lt_release(b);
  double v[6] = {0.5, 0.5, 1.5, 2.25, -1.75, 3};
  lt_tensor_t *x = from_doubles(LT_FLOAT32, 2, sh, v);
  r = lt_sum(x, 0, NULL, false, LT_INT64);
  check(r && r->dtype == LT_INT64 && lt_get_int(r, 0) == 0 + 0 + 1 + 2 - 1 + 3, "sum(dtype=int64) of floats truncates first: %lld",
        r ? (long long)lt_get_int(r, 0) : -1LL);
  lt_release(r);
  r = lt_sum(x, 0, NULL, false, LT_FLOAT16);
  check(r && r->dtype == LT_FLOAT16 && lt_get_double(r, 0) == 6, "sum(dtype=float16)");
  lt_release(r);
  r = lt_cumsum(x, -1, LT_FLOAT64);
  check(r && r->dtype == LT_FLOAT64 && lt_get_double(r, 2) == 2.5 && lt_get_double(r, 5) == 3.5, "cumsum(dtype=float64)");
  lt_release(r);
  r = lt_cumprod(x, 0, LT_DTYPE_INVALID);
  check(r && r->dtype == LT_FLOAT32 && lt_get_double(r, 3) == 0.5 * 2.25, "cumprod over dim 0");
  lt_release(r);
  int64_t dd[2] = {1, 0};
  r = lt_sum(x, 2, dd, true, LT_DTYPE_INVALID);
  check(r && r->ndim == 2 && r->sizes[0] == 1 && r->sizes[1] == 1 && lt_get_double(r, 0) == 6, "sum dims {1, 0} keepdim");
  lt_release(r);
  lt_release(x);
  /* int8 sums wrap in int64, not in int8 */
  int64_t n = 300;
  lt_tensor_t *i8 = lt_empty(1, &n, LT_INT8, CPU);
  memset(lt_data(i8), 100, 300);
  r = lt_sum(i8, 0, NULL, false, LT_DTYPE_INVALID);
  check(r && r->dtype == LT_INT64 && lt_get_int(r, 0) == 30000, "sum of int8 in int64");
  lt_release(r);
  r = lt_sum(i8, 0, NULL, false, LT_INT8);
  check(r && r->dtype == LT_INT8 && lt_get_int(r, 0) == (int8_t)(30000 & 0xff), "sum(dtype=int8) wraps");
  lt_release(r);
  lt_release(i8);
  /* a 0-dim tensor */
  lt_tensor_t *s = lt_empty(0, NULL, LT_FLOAT64, CPU);
  *(double *)lt_data(s) = 2.5;
  int64_t z = 0, m1 = -1;
  r = lt_sum(s, 1, &z, false, LT_DTYPE_INVALID);
  check(r && r->ndim == 0 && lt_get_double(r, 0) == 2.5, "sum of a 0-dim tensor over dim 0");
  lt_release(r);
  r = lt_mean(s, 1, &m1, true, LT_DTYPE_INVALID);
  check(r && r->ndim == 0 && lt_get_double(r, 0) == 2.5, "mean of a 0-dim tensor over dim -1");
  lt_release(r);
  lt_tensor_t *vv = NULL, *ii = NULL;
  check(lt_max_dim(s, 0, false, &vv, &ii) == LT_OK && vv->ndim == 0 && lt_get_double(vv, 0) == 2.5 && lt_get_int(ii, 0) == 0,
        "max of a 0-dim tensor over dim 0");
  lt_release(vv);
  lt_release(ii);
  r = lt_cumsum(s, 0, LT_DTYPE_INVALID);
  check(r && r->ndim == 0 && lt_get_double(r, 0) == 2.5, "cumsum of a 0-dim tensor");
  lt_release(r);
  r = lt_var(s, 0, NULL, 1, false);
  check(r && isnan(lt_get_double(r, 0)), "var of one element, unbiased: NaN");
  lt_release(r);
  r = lt_var(s, 0, NULL, 0, false);
  check(r && lt_get_double(r, 0) == 0, "var of one element, biased: 0");
  lt_release(r);
  r = lt_argmax(s, false, 0, true);
  check(r && r->ndim == 0 && lt_get_int(r, 0) == 0, "argmax of a 0-dim tensor");
  lt_release(r);
  lt_release(s);
  /* var with a correction larger than the count: inf (or NaN when all equal) */
  double w[3] = {1, 2, 4};
  int64_t s3 = 3;
  lt_tensor_t *y = from_doubles(LT_FLOAT64, 1, &s3, w);
  r = lt_var(y, 0, NULL, 5, false);
  check(r && lt_get_double(r, 0) == INFINITY, "var with correction 5 of 3 elements: inf");
  lt_release(r);
  r = lt_std(y, 0, NULL, 3, false);
  check(r && lt_get_double(r, 0) == INFINITY, "std with correction 3 of 3 elements: inf");
  lt_release(r);
  lt_release(y);
}

static void suite_errors(void) {
  int64_t sh[2] = {2, 3};
  lt_tensor_t *x = make(LT_FLOAT32, 2, sh, CONTIG, -1, 1);
  lt_tensor_t *xi = make(LT_INT64, 2, sh, CONTIG, -3, 3);
  int64_t bad = 2, dup[2] = {1, -1}, neg = -3;
  const lt_dtype DEF = LT_DTYPE_INVALID;
  expect_error("sum", "dim out of range", lt_sum(x, 1, &bad, false, DEF), "sum()");
  expect_error("sum", "repeated dim", lt_sum(x, 2, dup, false, DEF), "sum()");
  check(strstr(lt_last_error(), "dim 2 appears multiple times") != NULL, "repeated dim message 1-based: %s", lt_last_error());
  expect_error("prod", "dim out of range", lt_prod(x, 1, &neg, false, DEF), "prod()");
  expect_error("mean", "integer input", lt_mean(xi, 0, NULL, false, DEF), "mean()");
  check(strcmp(lt_last_error(), "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                                "complex dtype. Got: int64") == 0, "mean message: %s", lt_last_error());
  expect_error("mean", "integer dtype", lt_mean(x, 0, NULL, false, LT_INT32), "mean()");
  expect_error("mean", "repeated dim", lt_mean(x, 2, dup, false, DEF), "mean()");
  expect_error("logsumexp", "dim out of range", lt_logsumexp(x, 1, &bad, false), "logsumexp()");
  expect_error("var", "integer input", lt_var(xi, 0, NULL, 1, false), "var()");
  expect_error("std", "repeated dim", lt_std(x, 2, dup, 1, false), "std()");
  expect_error("norm", "integer input", lt_norm(xi, 2, 0, NULL, false), "norm()");
  expect_error("norm", "dim out of range", lt_norm(x, 2, 1, &bad, false), "norm()");
  expect_error("amax", "dim out of range", lt_amax(x, 1, &bad, false), "amax()");
  expect_error("amin", "repeated dim", lt_amin(x, 2, dup, false), "amin()");
  lt_tensor_t *v = (lt_tensor_t *)1, *i = (lt_tensor_t *)1;
  check(lt_max_dim(x, 2, false, &v, &i) == LT_ERR && error_names("max()") && !v && !i, "max_dim out of range: %s", lt_last_error());
  check(strstr(lt_last_error(), "got 3)") != NULL, "dims are shown 1-based: %s", lt_last_error());
  check(lt_min_dim(x, -3, false, &v, &i) == LT_ERR && error_names("min()"), "min_dim out of range: %s", lt_last_error());
  expect_error("argmax", "dim out of range", lt_argmax(x, true, 5, false), "argmax()");
  expect_error("argmin", "dim out of range", lt_argmin(x, true, -4, false), "argmin()");
  expect_error("cumsum", "dim out of range", lt_cumsum(x, 2, DEF), "cumsum()");
  expect_error("cumprod", "dim out of range", lt_cumprod(x, -3, DEF), "cumprod()");
  expect_error("any", "dim out of range", lt_any(x, 1, &bad, false), "any()");
  expect_error("all", "repeated dim", lt_all(x, 2, dup, false), "all()");
  expect_error("sum", "bad dtype", lt_sum(x, 0, NULL, false, (lt_dtype)42), "sum()");
  int64_t e = 0;
  lt_tensor_t *empty = lt_empty(1, &e, LT_FLOAT32, CPU);
  expect_error("max_all", "empty", lt_max_all(empty), "max()");
  expect_error("min_all", "empty", lt_min_all(empty), "min()");
  expect_error("argmax", "empty", lt_argmax(empty, false, 0, false), "argmax()");
  expect_error("argmin", "empty dim", lt_argmin(empty, true, 0, false), "argmin()");
  expect_error("norm", "inf of empty", lt_norm(empty, INFINITY, 0, NULL, false), "norm()");
  lt_tensor_t *r = lt_norm(empty, 2, 0, NULL, false);
  check(r && lt_get_double(r, 0) == 0, "norm 2 of empty: 0");
  lt_release(r);
  r = lt_logsumexp(empty, 0, NULL, false);
  check(r && lt_get_double(r, 0) == -INFINITY, "logsumexp of empty: -inf");
  lt_release(r);
  r = lt_all(empty, 0, NULL, false);
  check(r && lt_get_int(r, 0) == 1, "all of empty: true");
  lt_release(r);
  lt_release(empty);
  lt_release(x);
  lt_release(xi);
}

/* the paths taken with threads, now with one thread */
static void suite_large_one_thread(void) {
  int nt = lt_num_threads();
  lt_set_num_threads(1);
  suite_large();
  lt_set_num_threads(nt);
}

/* lt_threads_for: each thread gets at least per_thread of the work, at most the limit, one inside a
   parallel region; and a large sum split by its count over 16 requested threads (more than this
   machine has) equals the one-thread sum exactly for integers */
static void suite_threads(void) {
  check(lt_threads_for(1e6, 1 << 20, 16) == 1, "threads_for: less than one thread's work runs on one");
  check(lt_threads_for(4.5 * (1 << 20), 1 << 20, 16) == 4, "threads_for: 4.5 threads' work runs on 4");
  check(lt_threads_for(1e12, 1 << 20, 16) == 16, "threads_for: capped by the limit");
  check(lt_threads_for(0, 1 << 20, 16) == 1, "threads_for: no work, one thread");
  check(lt_threads_for(1e12, 0, 3) == 3, "threads_for: no minimum, the limit");
  int nt = lt_num_threads();
  lt_set_num_threads(16);
  check(lt_threads_for(1e12, 1, 0) == 16, "threads_for: limit 0 reads lt_num_threads");
  check(lt_threads_for(5 * 32768.0, 32768, 0) == 5, "threads_for: 5 grains on 5 threads of 16");
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    inside = lt_threads_for(1e12, 1, 0);
  }
  check(inside == 1, "threads_for: one thread inside a parallel region (got %d)", inside);
  int64_t n = 3 * 32768 + 17;
  lt_tensor_t *x = lt_empty(1, &n, LT_INT64, CPU);
  int64_t *d = lt_data(x);
  for (int64_t i = 0; i < n; i++) d[i] = i % 1000 - 400;
  int64_t want = 0;
  for (int64_t i = 0; i < n; i++) want += d[i];
  lt_tensor_t *r = lt_sum(x, 0, NULL, false, LT_INT64);
  check(r && lt_get_int(r, 0) == want, "sum of %lld over up to 16 threads: %lld", (long long)n, (long long)want);
  lt_release(r);
  lt_release(x);
  lt_set_num_threads(nt);
}

int main(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) verbose = 1;
    else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) only = argv[++i];
  }
  static const struct { const char *name; void (*fn)(void); } suites[] = {
      {"layouts", suite_dtypes_layouts}, {"large", suite_large}, {"nan", suite_nan},
      {"empty", suite_empty}, {"dtypes", suite_dtypes_and_shapes}, {"errors", suite_errors},
      {"large1", suite_large_one_thread}, {"threads", suite_threads}};
  for (size_t k = 0; k < sizeof suites / sizeof suites[0]; k++) {
    if (only && strcmp(only, suites[k].name) != 0) continue;
    double t = omp_get_wtime();
    suites[k].fn();
    if (verbose) printf("suite %s: %.2f s\n", suites[k].name, omp_get_wtime() - t);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
