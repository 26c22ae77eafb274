/* LU factorisation with partial pivoting and its solves (core/lu.h). Row-major, a matrix at a time:
   at step i the row with the largest |value| in column i (the first of equals) comes up, the
   multipliers go below the diagonal and the trailing block is updated row by row. */
#include "core/lu.h"

#include "core/autograd.h"
#include "core/device.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/lapack.h"

#include <math.h>
#include <string.h>

/* From this order up the factorisation and its solves go to LAPACK's blocked getrf and BLAS's trsm
   (core/lapack.h) when the loaded BLAS has them: at n = 256, 35 ms -> a few ms for an inverse. */
#define LU_LAPACK_MIN 32

static int check_batch(const char *op, const char *what, const lt_tensor_t *t, bool square) {
  if (t->device.type != LT_CPU) return lt_error("%s: %s must be on the CPU", op, what);
  if (t->dtype != LT_FLOAT32 && t->dtype != LT_FLOAT64)
    return lt_error("%s: %s must be float32 or float64, got %s", op, what, lt_dtype_name(t->dtype));
  if (t->ndim < 2) return lt_error("%s: %s must have at least 2 dimensions, got %d", op, what, t->ndim);
  if (square && t->sizes[t->ndim - 1] != t->sizes[t->ndim - 2])
    return lt_error("%s: %s must be a batch of square matrices, got %lld x %lld", op, what,
                    (long long)t->sizes[t->ndim - 2], (long long)t->sizes[t->ndim - 1]);
  return LT_OK;
}

#define FACTOR(T, sfx)                                                                           \
  /* the m x n a in place: min(m, n) steps */                                                    \
  static int64_t factor_##sfx(T *a, int64_t m, int64_t n, int64_t *piv) {                        \
    int64_t info = 0, k = m < n ? m : n;                                                         \
    for (int64_t i = 0; i < k; i++) {                                                            \
      int64_t p = i;                                                                             \
      T best = fabs(a[i * n + i]);                                                               \
      for (int64_t r = i + 1; r < m; r++) {                                                      \
        T v = fabs(a[r * n + i]);                                                                \
        if (v > best || (best != best && v == v)) best = v, p = r;                               \
      }                                                                                          \
      piv[i] = p + 1;                                                                            \
      if (p != i)                                                                                \
        for (int64_t c = 0; c < n; c++) {                                                        \
          T t = a[i * n + c];                                                                    \
          a[i * n + c] = a[p * n + c];                                                           \
          a[p * n + c] = t;                                                                      \
        }                                                                                        \
      T d = a[i * n + i];                                                                        \
      if (d == 0) {                                                                              \
        if (!info) info = i + 1;                                                                 \
        continue; /* the column is zero below the diagonal: nothing to eliminate */             \
      }                                                                                          \
      for (int64_t r = i + 1; r < m; r++) {                                                      \
        T f = a[r * n + i] / d;                                                                  \
        a[r * n + i] = f;                                                                        \
        T *row = a + r * n, *top = a + i * n;                                                    \
        for (int64_t c = i + 1; c < n; c++) row[c] -= f * top[c];                                \
      }                                                                                          \
    }                                                                                            \
    return info;                                                                                 \
  }                                                                                              \
  /* b (n x k) = U^-1 L^-1 P b, in place */                                                      \
  static void solve_##sfx(const T *lu, const int64_t *piv, int64_t n, T *b, int64_t k) {         \
    for (int64_t i = 0; i < n; i++) {                                                            \
      int64_t p = piv[i] - 1;                                                                    \
      if (p != i)                                                                                \
        for (int64_t c = 0; c < k; c++) {                                                        \
          T t = b[i * k + c];                                                                    \
          b[i * k + c] = b[p * k + c];                                                           \
          b[p * k + c] = t;                                                                      \
        }                                                                                        \
    }                                                                                            \
    for (int64_t i = 1; i < n; i++)                                                              \
      for (int64_t j = 0; j < i; j++) {                                                          \
        T m = lu[i * n + j];                                                                     \
        if (m != 0)                                                                              \
          for (int64_t c = 0; c < k; c++) b[i * k + c] -= m * b[j * k + c];                      \
      }                                                                                          \
    for (int64_t i = n - 1; i >= 0; i--) {                                                       \
      for (int64_t j = i + 1; j < n; j++) {                                                      \
        T m = lu[i * n + j];                                                                     \
        if (m != 0)                                                                              \
          for (int64_t c = 0; c < k; c++) b[i * k + c] -= m * b[j * k + c];                      \
      }                                                                                          \
      T d = lu[i * n + i];                                                                       \
      for (int64_t c = 0; c < k; c++) b[i * k + c] /= d;                                         \
    }                                                                                            \
  }                                                                                              \
  /* b (n x k) = P^T L^-T U^-T b, in place: the solve with A^T = U^T L^T P */                    \
  static void solve_t_##sfx(const T *lu, const int64_t *piv, int64_t n, T *b, int64_t k) {       \
    for (int64_t i = 0; i < n; i++) {                                                            \
      for (int64_t j = 0; j < i; j++) {                                                          \
        T m = lu[j * n + i];                                                                     \
        if (m != 0)                                                                              \
          for (int64_t c = 0; c < k; c++) b[i * k + c] -= m * b[j * k + c];                      \
      }                                                                                          \
      T d = lu[i * n + i];                                                                       \
      for (int64_t c = 0; c < k; c++) b[i * k + c] /= d;                                         \
    }                                                                                            \
    for (int64_t i = n - 1; i >= 0; i--)                                                         \
      for (int64_t j = i + 1; j < n; j++) {                                                      \
        T m = lu[j * n + i];                                                                     \
        if (m != 0)                                                                              \
          for (int64_t c = 0; c < k; c++) b[i * k + c] -= m * b[j * k + c];                      \
      }                                                                                          \
    for (int64_t i = n - 1; i >= 0; i--) {                                                       \
      int64_t p = piv[i] - 1;                                                                    \
      if (p != i)                                                                                \
        for (int64_t c = 0; c < k; c++) {                                                        \
          T t = b[i * k + c];                                                                    \
          b[i * k + c] = b[p * k + c];                                                           \
          b[p * k + c] = t;                                                                      \
        }                                                                                        \
    }                                                                                            \
  }
FACTOR(float, f32)
FACTOR(double, f64)

/* b (n x k) = op(A)^-1 b in place for a triangular A: e(i, j) is op(A)'s element, from its upper
   triangle when up (forward substitution otherwise) */
#define TRISOLVE(T, sfx)                                                                         \
  static void trisolve_##sfx(const T *a, int64_t n, T *b, int64_t k, bool up, bool trans, bool unit) { \
    for (int64_t s = 0; s < n; s++) {                                                            \
      int64_t i = up ? n - 1 - s : s;                                                            \
      int64_t j0 = up ? i + 1 : 0, j1 = up ? n : i;                                              \
      for (int64_t j = j0; j < j1; j++) {                                                        \
        T m = trans ? a[j * n + i] : a[i * n + j];                                               \
        if (m != 0)                                                                              \
          for (int64_t c = 0; c < k; c++) b[i * k + c] -= m * b[j * k + c];                      \
      }                                                                                          \
      if (!unit) {                                                                               \
        T d = a[i * n + i];                                                                      \
        for (int64_t c = 0; c < k; c++) b[i * k + c] /= d;                                       \
      }                                                                                          \
    }                                                                                            \
  }
TRISOLVE(float, f32)
TRISOLVE(double, f64)

static int64_t batch_of(const lt_tensor_t *t) {
  int64_t b = 1;
  for (int d = 0; d < t->ndim - 2; d++) b *= t->sizes[d];
  return b;
}

int lt_lu_factor(const lt_tensor_t *a, lt_tensor_t **lu, lt_tensor_t **piv, lt_tensor_t **info) {
  *lu = *piv = *info = NULL;
  LT_TRY(check_batch("lu_factor", "the input", a, false));
  const int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1], k = m < n ? m : n, batch = batch_of(a);
  bool grad = lt_set_grad_enabled(false); /* a's values only (no history) */
  lt_tensor_t *src = lt_contiguous((lt_tensor_t *)a);
  lt_set_grad_enabled(grad);
  int64_t psizes[LT_MAX_DIM];
  memcpy(psizes, a->sizes, sizeof(int64_t) * (size_t)(a->ndim - 2));
  psizes[a->ndim - 2] = k;
  lt_tensor_t *c = src ? lt_empty(a->ndim, a->sizes, a->dtype, a->device) : NULL;
  lt_tensor_t *p = c ? lt_empty(a->ndim - 1, psizes, LT_INT64, a->device) : NULL;
  lt_tensor_t *in = p ? lt_empty(a->ndim - 2, a->sizes, LT_INT64, a->device) : NULL;
  if (!in) {
    lt_release(src);
    lt_release(c);
    lt_release(p);
    return LT_ERR;
  }
  int64_t *pv = lt_data(p), *iv = lt_data(in);
  const size_t bytes = (size_t)(m * n) * lt_dtype_size(a->dtype);
  for (int64_t b = 0; b < batch; b++) {
    const void *sb = (const char *)lt_data(src) + (size_t)b * bytes;
    void *mb = (char *)lt_data(c) + (size_t)b * bytes;
    if (k >= LU_LAPACK_MIN && lt_lapack_getrf(a->dtype, sb, mb, m, n, pv + b * k, iv + b)) continue;
    memcpy(mb, sb, bytes); /* factored in place by the loops */
    if (a->dtype == LT_FLOAT32) iv[b] = factor_f32((float *)mb, m, n, pv + b * k);
    else iv[b] = factor_f64((double *)mb, m, n, pv + b * k);
  }
  lt_release(src);
  lt_bump_version(c);
  *lu = c, *piv = p, *info = in;
  return LT_OK;
}

lt_tensor_t *lt_lu_solve(const lt_tensor_t *lu, const lt_tensor_t *piv, const lt_tensor_t *b, bool trans) {
  if (check_batch("lu_solve", "the factorisation", lu, true) != LT_OK ||
      check_batch("lu_solve", "the right-hand side", b, false) != LT_OK)
    return NULL;
  const int64_t n = lu->sizes[lu->ndim - 1], k = b->sizes[b->ndim - 1], batch = batch_of(lu);
  if (b->dtype != lu->dtype) {
    lt_error("lu_solve: the right-hand side is %s, the factorisation %s", lt_dtype_name(b->dtype),
             lt_dtype_name(lu->dtype));
    return NULL;
  }
  bool same = b->ndim == lu->ndim && b->sizes[b->ndim - 2] == n;
  for (int d = 0; same && d < lu->ndim - 2; d++) same = b->sizes[d] == lu->sizes[d];
  if (!same) {
    lt_error("lu_solve: the right-hand side must be (..., %lld, k) with the factorisation's batch shape",
             (long long)n);
    return NULL;
  }
  if (!lt_is_contiguous(lu) || !lt_is_contiguous(piv) || piv->dtype != LT_INT64 || piv->numel != batch * n) {
    lt_error("lu_solve: expected the contiguous factorisation and int64 pivots of lu_factor");
    return NULL;
  }
  const int64_t *pv = lt_data(piv);
  for (int64_t i = 0; i < batch * n; i++)
    if (pv[i] < 1 || pv[i] > n) {
      lt_error("lu_solve: pivot %lld is out of range 1..%lld", (long long)pv[i], (long long)n);
      return NULL;
    }
  bool grad = lt_set_grad_enabled(false);
  lt_tensor_t *x = lt_clone(b);
  lt_set_grad_enabled(grad);
  if (!x) return NULL;
  for (int64_t q = 0; q < batch; q++) {
    const void *lq = (const char *)lt_data(lu) + (size_t)(q * n * n) * lt_dtype_size(lu->dtype);
    void *xq = (char *)lt_data(x) + (size_t)(q * n * k) * lt_dtype_size(lu->dtype);
    if (n >= LU_LAPACK_MIN && lt_lapack_getrs(lu->dtype, lq, pv + q * n, n, xq, k, trans)) continue;
    if (lu->dtype == LT_FLOAT32)
      (trans ? solve_t_f32 : solve_f32)((const float *)lt_data(lu) + q * n * n, pv + q * n, n,
                                        (float *)lt_data(x) + q * n * k, k);
    else
      (trans ? solve_t_f64 : solve_f64)((const double *)lt_data(lu) + q * n * n, pv + q * n, n,
                                        (double *)lt_data(x) + q * n * k, k);
  }
  lt_bump_version(x);
  return x;
}

lt_tensor_t *lt_triangular_solve(const lt_tensor_t *a, const lt_tensor_t *b, bool upper, bool trans, bool unit) {
  if (check_batch("solve_triangular", "A", a, true) != LT_OK ||
      check_batch("solve_triangular", "B", b, false) != LT_OK)
    return NULL;
  const int64_t n = a->sizes[a->ndim - 1], k = b->sizes[b->ndim - 1], batch = batch_of(a);
  if (b->dtype != a->dtype) {
    lt_error("solve_triangular: B is %s, A %s", lt_dtype_name(b->dtype), lt_dtype_name(a->dtype));
    return NULL;
  }
  bool same = b->ndim == a->ndim && b->sizes[b->ndim - 2] == n;
  for (int d = 0; same && d < a->ndim - 2; d++) same = b->sizes[d] == a->sizes[d];
  if (!same) {
    lt_error("solve_triangular: B must be (..., %lld, k) with A's batch shape", (long long)n);
    return NULL;
  }
  bool grad = lt_set_grad_enabled(false);
  lt_tensor_t *ac = lt_contiguous((lt_tensor_t *)a);
  lt_tensor_t *x = ac ? lt_clone(b) : NULL;
  lt_set_grad_enabled(grad);
  if (!x) {
    lt_release(ac);
    return NULL;
  }
  bool up = upper != trans; /* op(A)'s triangle */
  size_t es = lt_dtype_size(a->dtype);
  for (int64_t q = 0; q < batch; q++) {
    if (n >= LU_LAPACK_MIN && lt_lapack_trsm(a->dtype, (const char *)lt_data(ac) + (size_t)(q * n * n) * es, n,
                                             (char *)lt_data(x) + (size_t)(q * n * k) * es, k, upper, trans, unit))
      continue;
    if (a->dtype == LT_FLOAT32)
      trisolve_f32((const float *)lt_data(ac) + q * n * n, n, (float *)lt_data(x) + q * n * k, k, up, trans, unit);
    else
      trisolve_f64((const double *)lt_data(ac) + q * n * n, n, (double *)lt_data(x) + q * n * k, k, up, trans, unit);
  }
  lt_release(ac);
  lt_bump_version(x);
  return x;
}
