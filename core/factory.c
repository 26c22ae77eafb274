#include "core/factory.h"
#include "core/cuda.h"
#include "core/shape.h"

#include <math.h>

lt_tensor_t *lt_full(int ndim, const int64_t *sizes, lt_operand_t value, lt_dtype dt, lt_device_t dev) {
  lt_tensor_t *t = lt_empty(ndim, sizes, dt, dev);
  if (!t) return NULL;
  if (lt_fill_(t, value) != LT_OK) { lt_release(t); return NULL; }
  return t;
}

/* fill a contiguous float64/int64 host tensor by f(i), then convert to dt */
static lt_tensor_t *from_index_fn(int64_t n, lt_dtype dt, lt_device_t dev, double a, double b,
                                  double c, int kind) {
  bool as_int = !lt_dtype_is_floating(dt);
  /* int64, float64 and float32 on a CPU device are written in place; the others converted after */
  lt_dtype wdt = as_int ? LT_INT64 : dt == LT_FLOAT32 ? LT_FLOAT32 : LT_FLOAT64;
  bool direct = dev.type == LT_CPU && wdt == dt;
  lt_tensor_t *tmp = lt_empty(1, &n, wdt, direct ? dev : lt_device(LT_CPU, 0));
  if (!tmp) return NULL;
  /* arange: start a, step b; linspace: from a and back from b, by c */
#define INDEX_VALUE(i) (kind == 0 ? a + (double)(i) * b : (i) < n / 2 ? a + (double)(i) * c : b - (double)(n - 1 - (i)) * c)
  if (as_int && kind == 0 && a == floor(a) && b == floor(b)) {
    int64_t *pi = lt_data(tmp), a0 = (int64_t)a, st = (int64_t)b;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) pi[i] = a0 + i * st;
  } else if (as_int) {
    int64_t *pi = lt_data(tmp);
    for (int64_t i = 0; i < n; i++) pi[i] = (int64_t)INDEX_VALUE(i);
  } else if (wdt == LT_FLOAT32) {
    float *pf = lt_data(tmp);
    if (kind == 0) /* (a loop of its own: it vectorises) */
#pragma omp simd
      for (int64_t i = 0; i < n; i++) pf[i] = (float)(a + (double)i * b);
    else
      for (int64_t i = 0; i < n; i++) pf[i] = (float)INDEX_VALUE(i);
  } else {
    double *pd = lt_data(tmp);
    if (kind == 0)
#pragma omp simd
      for (int64_t i = 0; i < n; i++) pd[i] = a + (double)i * b;
    else
      for (int64_t i = 0; i < n; i++) pd[i] = INDEX_VALUE(i);
  }
#undef INDEX_VALUE
  if (direct) return tmp;
  lt_tensor_t *r = lt_convert(tmp, dt, dev);
  lt_release(tmp);
  return r;
}

lt_tensor_t *lt_arange(double start, double end, double step, lt_dtype dt, lt_device_t dev) {
  if (step == 0) { lt_error("arange: step must be nonzero"); return NULL; }
  if (!isfinite(start) || !isfinite(end) || !isfinite(step)) {
    lt_error("arange: unsupported range: %g -> %g", start, end);
    return NULL;
  }
  if ((step > 0 && end < start) || (step < 0 && end > start)) {
    lt_error("arange: upper bound and larger bound inconsistent with step sign");
    return NULL;
  }
  double n = ceil((end - start) / step);
  if (n > 1e15) { lt_error("arange: the range has too many elements (%g)", n); return NULL; }
  return from_index_fn((int64_t)n, dt, dev, start, step, 0, 0);
}

lt_tensor_t *lt_linspace(double start, double end, int64_t steps, lt_dtype dt, lt_device_t dev) {
  if (steps < 0) { lt_error("linspace: number of steps must be non-negative"); return NULL; }
  double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
  if (steps == 1) return from_index_fn(1, dt, dev, start, start, 0, 0);
  return from_index_fn(steps, dt, dev, start, end, step, 1);
}

lt_tensor_t *lt_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, lt_dtype dt, lt_device_t dev) {
  int64_t extent = lt_strided_extent("empty_strided", ndim, sizes, strides);
  if (extent < 0) return NULL;
  lt_tensor_t *base = lt_empty(1, &extent, dt, dev);
  if (!base) return NULL;
  lt_tensor_t *t = lt_view_geometry(base, ndim, sizes, strides, 0);
  lt_release(base);
  return t;
}

lt_tensor_t *lt_eye(int64_t n, int64_t m, lt_dtype dt, lt_device_t dev) {
  if (n < 0 || m < 0) { lt_error("eye: n and m must be non-negative, got %lld and %lld", (long long)n, (long long)m); return NULL; }
  int64_t sizes[2] = {n, m};
  lt_tensor_t *t = lt_full(2, sizes, lt_int_operand(0), dt, dev);
  if (!t) return NULL;
  int64_t k = n < m ? n : m;
  lt_tensor_t *diag = lt_view_geometry(t, 1, &k, (int64_t[]){m + 1}, 0);
  if (!diag || lt_fill_(diag, lt_int_operand(1)) != LT_OK) { lt_release(diag); lt_release(t); return NULL; }
  lt_release(diag);
  return t;
}

/* One draw of a distribution over n contiguous elements of dtype dt. */
typedef enum {
  DRAW_UNIFORM, DRAW_NORMAL, DRAW_INT, DRAW_BERNOULLI, DRAW_EXPONENTIAL, DRAW_GEOMETRIC, DRAW_CAUCHY,
  DRAW_LOG_NORMAL
} draw_kind;
typedef struct {
  draw_kind kind;
  double a, b;      /* uniform from/to, normal and log_normal mean/std, bernoulli and geometric p,
                       exponential lambd, cauchy median/sigma */
  int64_t lo, hi;   /* integers in [lo, hi) */
} draw_t;

/* Fill x with a draw, through a contiguous temporary when x is not contiguous. */
static int fill_random(lt_tensor_t *x, lt_generator_t *g, draw_t d) {
  LT_TRY(lt_check_write("random fill", x));
  if (x->device.type == LT_CUDA) {
    /* drawn on the host by the device's generator (the code below), then copied */
    if (!g && !(g = lt_cuda_generator(x->device.index))) return LT_ERR;
    lt_tensor_t *h = lt_empty(x->ndim, x->sizes, x->dtype, lt_device(LT_CPU, 0));
    int rc = h ? fill_random(h, g, d) : LT_ERR;
    if (rc == LT_OK) rc = lt_copy_(x, h);
    lt_release(h);
    return rc;
  }
  LT_TRY(lt_check_host("random", x));
  if (!g) g = lt_default_generator();
  lt_tensor_t *target = x;
  if (!lt_is_contiguous(x)) {
    target = lt_empty(x->ndim, x->sizes, x->dtype, x->device);
    if (!target) return LT_ERR;
  }
  int rc;
  void *p = lt_data(target);
  switch (d.kind) {
    case DRAW_UNIFORM: rc = lt_random_uniform(g, x->dtype, p, x->numel, d.a, d.b); break;
    case DRAW_NORMAL: rc = lt_random_normal(g, x->dtype, p, x->numel, d.a, d.b); break;
    case DRAW_INT: rc = lt_random_int(g, x->dtype, p, x->numel, d.lo, d.hi); break;
    case DRAW_BERNOULLI: rc = lt_random_bernoulli(g, x->dtype, p, x->numel, d.a); break;
    case DRAW_EXPONENTIAL: rc = lt_random_exponential(g, x->dtype, p, x->numel, d.a); break;
    case DRAW_GEOMETRIC: rc = lt_random_geometric(g, x->dtype, p, x->numel, d.a); break;
    case DRAW_CAUCHY: rc = lt_random_cauchy(g, x->dtype, p, x->numel, d.a, d.b); break;
    default: rc = lt_random_log_normal(g, x->dtype, p, x->numel, d.a, d.b); break;
  }
  if (rc == LT_OK && target != x) rc = lt_copy_(x, target);
  if (target != x) lt_release(target);
  if (rc == LT_OK) lt_bump_version(x);
  return rc;
}

int lt_uniform_(lt_tensor_t *x, double from, double to, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_UNIFORM, from, to, 0, 0});
}
int lt_normal_(lt_tensor_t *x, double mean, double std, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_NORMAL, mean, std, 0, 0});
}
int lt_random_int_(lt_tensor_t *x, int64_t low, int64_t high, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_INT, 0, 0, low, high});
}
int lt_bernoulli_(lt_tensor_t *x, double p, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_BERNOULLI, p, 0, 0, 0});
}

int lt_exponential_(lt_tensor_t *x, double lambd, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_EXPONENTIAL, lambd, 0, 0, 0});
}
int lt_geometric_(lt_tensor_t *x, double p, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_GEOMETRIC, p, 0, 0, 0});
}
int lt_cauchy_(lt_tensor_t *x, double median, double sigma, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_CAUCHY, median, sigma, 0, 0});
}
int lt_log_normal_(lt_tensor_t *x, double mean, double std, lt_generator_t *g) {
  return fill_random(x, g, (draw_t){DRAW_LOG_NORMAL, mean, std, 0, 0});
}

lt_tensor_t *lt_randperm(int64_t n, lt_dtype dt, lt_device_t dev, lt_generator_t *g) {
  if (n < 0) { lt_error("randperm: n must be non-negative, got %lld", (long long)n); return NULL; }
  if (dev.type == LT_CUDA) { /* drawn on the host by the device's generator, then copied */
    lt_device_t r;
    if (lt_device_resolve(dev, &r) != LT_OK) return NULL;
    if (!g && !(g = lt_cuda_generator(r.index))) return NULL;
    lt_tensor_t *h = lt_randperm(n, dt, lt_device(LT_CPU, 0), g);
    lt_tensor_t *t = h ? lt_convert(h, dt, r) : NULL;
    lt_release(h);
    return t;
  }
  if (!g) g = lt_default_generator();
  lt_tensor_t *t = lt_empty(1, &n, dt, dev);
  if (!t) return NULL;
  if (lt_check_host("randperm", t) != LT_OK) { lt_release(t); return NULL; }
  if (lt_random_perm(g, dt, lt_data(t), n) != LT_OK) { lt_release(t); return NULL; }
  return t;
}
