/* LU factorisation with partial pivoting and its solves (core/lu.h). Row-major, a matrix at a time:
   at step i the row with the largest |value| in column i (the first of equals) comes up, the
   multipliers go below the diagonal and the trailing block is updated row by row. From order
   LU_BLOCKED_MIN up the same steps run blocked (LU_NB columns or rows at a time), most of the work
   in matrix products (core/blas.h). */
#include "core/lu.h"

#include "core/autograd.h"
#include "core/blas.h"
#include "core/device.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/iter.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* From this order up the factorisation and the solves run blocked. They went to OpenBLAS's getrf and
   trsm before: at n = 256 an inverse took 0.90-0.93 ms that way and takes 0.50-0.55 now (with
   lt_lu_inverse), a triangular solve with 256 columns 0.27 -> 0.14 ms; at 1024 (float32) the
   factorisation 24 -> 11 ms, an inverse 69 -> 31 (bench/RESULTS.md, 2026-11-28). */
#define LU_BLOCKED_MIN 32

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
  /* the pivot among x[0], x[s], ... x[(len - 1) s]: the first largest |value| (a number over a NaN) */ \
  static inline int64_t pivot_##sfx(const T *x, int64_t len, int64_t s) {                       \
    int64_t p = 0;                                                                               \
    T best = fabs(x[0]);                                                                         \
    for (int64_t r = 1; r < len; r++) {                                                          \
      T v = fabs(x[r * s]);                                                                      \
      if (v > best || (best != best && v == v)) best = v, p = r;                                 \
    }                                                                                            \
    return p;                                                                                    \
  }                                                                                              \
  /* x[k s] and y[k s] swapped for k < len */                                                    \
  static inline void swap_##sfx(T *x, T *y, int64_t len, int64_t s) {                         \
    for (int64_t k = 0; k < len; k++) {                                                          \
      T t = x[k * s];                                                                            \
      x[k * s] = y[k * s];                                                                       \
      y[k * s] = t;                                                                              \
    }                                                                                            \
  }                                                                                              \
  /* the m x n a in place: min(m, n) steps (pivot and swap written out: with the helpers above   \
     1000 determinants of 8 x 8 took 8-10% longer) */                                            \
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

/* Blocked triangular solves: op(A) X = B a block of LU_NB rows at a time, each block's rows solved by
   substitution, then its product with the block's column of op(A) taken from the rows not yet solved
   by a matrix product (core/blas.h: most of the work, at the product's speed). The columns of B are
   shared out between the threads, each thread solving its own columns start to end with products
   on one thread: no thread waits for another. Same arguments as trisolve. */
#define LU_NB 32
#define LU_CW 32 /* columns a substitution step keeps in registers */
/* The build targets any x86-64 (SSE2): the loops of the substitutions and of the panels are also
   compiled for AVX2 and AVX-512, the machine's best picked at load (ifunc; not under the sanitizers,
   whose start-up runs after the pick) */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LU_VECTOR __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LU_VECTOR
#endif
#define BLOCKED(T, sfx, GEMM)                                                                      \
  /* the rows i0 .. i0 + ib - 1 of the w columns of b (row stride ldb), by substitution */          \
  LU_VECTOR static void diag_##sfx(const T *a, int64_t n, T *b, int64_t ldb, int64_t w, int64_t i0, \
                                   int64_t ib, bool up, bool trans, bool unit) {                   \
    for (int64_t s = 0; s < ib; s++) {                                                             \
      int64_t i = up ? i0 + ib - 1 - s : i0 + s;                                                   \
      int64_t j0 = up ? i + 1 : i0, j1 = up ? i0 + ib : i;                                         \
      T *restrict bi = b + i * ldb;                                                                \
      const T d = unit ? 1 : a[i * n + i];                                                         \
      int64_t c0 = 0;                                                                              \
      /* LU_CW columns at a time in registers across the row's terms */                            \
      for (; c0 + LU_CW <= w; c0 += LU_CW) {                                                       \
        T acc[LU_CW];                                                                              \
        for (int c = 0; c < LU_CW; c++) acc[c] = bi[c0 + c];                                       \
        for (int64_t j = j0; j < j1; j++) {                                                        \
          const T m = trans ? a[j * n + i] : a[i * n + j];                                         \
          const T *restrict bj = b + j * ldb + c0;                                                 \
          if (m != 0)                                                                              \
            for (int c = 0; c < LU_CW; c++) acc[c] -= m * bj[c];                                   \
        }                                                                                          \
        if (!unit)                                                                                 \
          for (int c = 0; c < LU_CW; c++) acc[c] /= d;                                             \
        for (int c = 0; c < LU_CW; c++) bi[c0 + c] = acc[c];                                       \
      }                                                                                            \
      for (int64_t j = j0; j < j1 && c0 < w; j++) {                                                \
        const T m = trans ? a[j * n + i] : a[i * n + j];                                           \
        const T *restrict bj = b + j * ldb;                                                        \
        if (m != 0)                                                                                \
          for (int64_t c = c0; c < w; c++) bi[c] -= m * bj[c];                                     \
      }                                                                                            \
      if (!unit)                                                                                   \
        for (int64_t c = c0; c < w; c++) bi[c] /= d;                                               \
    }                                                                                              \
  }                                                                                                \
  /* the w columns of b (row stride ldb), block by block, on this thread. lim >= 0: b is the identity \
     and these are its columns lim .. lim + w - 1, the solve a forward one: a block's rows are zero  \
     right of the block's end column and stay so, and only the columns left of it are computed */   \
  static int cols_##sfx(const T *a, int64_t n, T *b, int64_t ldb, int64_t w, bool up, bool trans,  \
                        bool unit, int64_t lim) {                                                  \
    const int64_t nblk = (n + LU_NB - 1) / LU_NB;                                                  \
    for (int64_t s = 0; s < nblk; s++) {                                                           \
      const int64_t i0 = (up ? nblk - 1 - s : s) * LU_NB, ib = n - i0 < LU_NB ? n - i0 : LU_NB;    \
      const int64_t we = lim < 0 ? w : i0 + ib - lim < 0 ? 0 : i0 + ib - lim < w ? i0 + ib - lim : w; \
      if (we == 0) continue;                                                                       \
      diag_##sfx(a, n, b, ldb, we, i0, ib, up, trans, unit);                                       \
      /* the rows after the block (forward) or before it (backward) less op(A)[rows, block] x */    \
      const int64_t r0 = up ? 0 : i0 + ib, rn = up ? i0 : n - i0 - ib;                             \
      if (rn == 0) continue;                                                                       \
      const T *ap = trans ? a + i0 * n + r0 : a + r0 * n + i0;                                     \
      if (GEMM(trans, false, rn, we, ib, -1, ap, n, b + i0 * ldb, ldb, 1, b + r0 * ldb, ldb) != LT_OK) \
        return LT_ERR;                                                                             \
    }                                                                                              \
    return LT_OK;                                                                                  \
  }                                                                                                \
  /* eye: b is the identity (k = n) and the solve a forward one (see cols). Its columns' work is     \
     far from even (column c's ~ (n - c)^2) and narrow at the start: it runs here, its products on    \
     every thread (at n = 256 split by columns it took 0.24-0.34 ms, whole 0.21-0.22) */              \
  static int blocked_##sfx(const T *a, int64_t n, T *b, int64_t k, bool up, bool trans, bool unit, \
                           bool eye) {                                                             \
    int nt = eye ? 1 : lt_threads_for((double)n * n * k / 2, (double)LT_BLAS_THREAD_WORK, 0);     \
    int64_t per = (k + nt - 1) / nt;                                                               \
    per = (per + 15) / 16 * 16; /* whole vectors a thread */                                       \
    nt = (int)((k + per - 1) / per);                                                               \
    int failed = 0;                                                                                \
    LT_WORKERS(nt, {                                                                               \
      int64_t c0 = lt_w * per, w = k - c0 < per ? k - c0 : per;                                   \
      if (w > 0 && cols_##sfx(a, n, b + c0, k, w, up, trans, unit, eye ? c0 : -1) != LT_OK) {      \
        _Pragma("omp atomic write") failed = 1;                                                    \
      }                                                                                            \
    });                                                                                            \
    return failed ? lt_error("linalg: out of memory for a triangular solve's products") : LT_OK;   \
  }
BLOCKED(float, f32, lt_blas_sgemm)
BLOCKED(double, f64, lt_blas_dgemm)

/* Blocked LU (right-looking, as LAPACK's getrf): a panel of LU_NB columns is factored by the loops of
   factor in a column-major copy (its columns contiguous, so the pivot search and the updates run
   along them), its row swaps applied to the rest of the rows, the block of U right of it solved
   with the panel's L (diag), and the trailing matrix updated by one matrix product. Same arguments
   and result as factor; LT_ERR (with *info untouched) when a buffer cannot be had. */
#define BLOCKED_LU(T, sfx, GEMM)                                                                   \
  /* the r x w column-major panel p in place: the pivots (0-based, in the panel) in lp, the first   \
     zero pivot (1-based, in the panel) returned, 0 for none */                                    \
  LU_VECTOR static int64_t panel_##sfx(T *p, int64_t r, int64_t w, int64_t *lp) {                  \
    int64_t info = 0;                                                                              \
    for (int64_t c = 0; c < w; c++) {                                                              \
      T *col = p + c * r;                                                                          \
      const int64_t q = c + pivot_##sfx(col + c, r - c, 1);                                        \
      lp[c] = q;                                                                                   \
      if (q != c) swap_##sfx(p + c, p + q, w, r);                                                  \
      const T d = col[c];                                                                          \
      if (d == 0) {                                                                                \
        if (!info) info = c + 1;                                                                   \
        continue;                                                                                  \
      }                                                                                            \
      for (int64_t i = c + 1; i < r; i++) col[i] /= d;                                             \
      for (int64_t k = c + 1; k < w; k++) {                                                        \
        T *restrict dst = p + k * r;                                                               \
        const T *restrict src = col;                                                               \
        const T u = dst[c];                                                                        \
        if (u != 0)                                                                                \
          for (int64_t i = c + 1; i < r; i++) dst[i] -= src[i] * u;                                \
      }                                                                                            \
    }                                                                                              \
    return info;                                                                                   \
  }                                                                                                \
  static int factor_blocked_##sfx(T *a, int64_t m, int64_t n, int64_t *piv, int64_t *info_out) {   \
    const int64_t kmin = m < n ? m : n;                                                            \
    T *p = malloc(sizeof(T) * (size_t)(m * LU_NB));                                                \
    int64_t lp[LU_NB], info = 0;                                                                   \
    if (!p) return lt_error("lu_factor: out of memory for a %lld x %d panel", (long long)m, LU_NB); \
    for (int64_t j0 = 0; j0 < kmin; j0 += LU_NB) {                                                 \
      const int64_t jb = kmin - j0 < LU_NB ? kmin - j0 : LU_NB, r = m - j0, right = j0 + jb;       \
      for (int64_t i = 0; i < r; i++)                                                              \
        for (int64_t c = 0; c < jb; c++) p[c * r + i] = a[(j0 + i) * n + j0 + c];                  \
      int64_t z = panel_##sfx(p, r, jb, lp);                                                       \
      if (z && !info) info = j0 + z;                                                               \
      for (int64_t i = 0; i < r; i++)                                                              \
        for (int64_t c = 0; c < jb; c++) a[(j0 + i) * n + j0 + c] = p[c * r + i];                  \
      for (int64_t c = 0; c < jb; c++) { /* the panel's swaps on the columns left and right of it */ \
        const int64_t i = j0 + c, q = j0 + lp[c];                                                  \
        piv[i] = q + 1;                                                                            \
        if (q == i) continue;                                                                      \
        swap_##sfx(a + i * n, a + q * n, j0, 1);                                                   \
        swap_##sfx(a + i * n + right, a + q * n + right, n - right, 1);                            \
      }                                                                                            \
      if (right == n) continue;                                                                    \
      /* U's block right of the panel: L11^-1 A12, then A22 -= L21 U12 */                          \
      diag_##sfx(a + j0 * n + j0, n, a + j0 * n + right, n, n - right, 0, jb, false, false, true); \
      if (m > right && GEMM(false, false, m - right, n - right, jb, -1, a + right * n + j0, n,     \
                            a + j0 * n + right, n, 1, a + right * n + right, n) != LT_OK) {        \
        free(p);                                                                                   \
        return LT_ERR;                                                                             \
      }                                                                                            \
    }                                                                                              \
    free(p);                                                                                       \
    *info_out = info;                                                                              \
    return LT_OK;                                                                                  \
  }
BLOCKED_LU(float, f32, lt_blas_sgemm)
BLOCKED_LU(double, f64, lt_blas_dgemm)

/* the row swaps of the pivots on b (n x k, elements of es bytes): in order, or in reverse order */
static void swap_rows(char *b, const int64_t *piv, int64_t n, int64_t k, size_t es, bool reverse) {
  const size_t row = (size_t)k * es;
  for (int64_t s = 0; s < n; s++) {
    int64_t i = reverse ? n - 1 - s : s, p = piv[i] - 1;
    if (p == i) continue;
    char *ri = b + (size_t)i * row, *rp = b + (size_t)p * row, tmp[256];
    for (size_t o = 0; o < row; o += sizeof tmp) {
      size_t len = row - o < sizeof tmp ? row - o : sizeof tmp;
      memcpy(tmp, ri + o, len);
      memcpy(ri + o, rp + o, len);
      memcpy(rp + o, tmp, len);
    }
  }
}

/* op(A)^-1 b in place for a triangular A, blocked (see blocked) */
static int tri(lt_dtype dt, const void *a, int64_t n, void *b, int64_t k, bool up, bool trans, bool unit,
               bool eye) {
  return dt == LT_FLOAT32 ? blocked_f32(a, n, b, k, up, trans, unit, eye)
                          : blocked_f64(a, n, b, k, up, trans, unit, eye);
}

/* b (n x k) = A^-1 b (trans: A^-T b) in place for the factorisation lu (PA = LU), blocked */
static int lu_solve_blocked(lt_dtype dt, const void *lu, const int64_t *piv, int64_t n, void *b, int64_t k,
                            bool trans) {
  int rc;
  if (!trans) { /* x = U^-1 L^-1 P b */
    swap_rows(b, piv, n, k, lt_dtype_size(dt), false);
    rc = tri(dt, lu, n, b, k, false, false, true, false);
    if (rc == LT_OK) rc = tri(dt, lu, n, b, k, true, false, false, false);
  } else { /* A^T = U^T L^T P: x = P^T L^-T U^-T b */
    rc = tri(dt, lu, n, b, k, false, true, false, false);
    if (rc == LT_OK) rc = tri(dt, lu, n, b, k, true, true, true, false);
    if (rc == LT_OK) swap_rows(b, piv, n, k, lt_dtype_size(dt), true);
  }
  return rc;
}

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
    memcpy(mb, sb, bytes); /* factored in place */
    if (k >= LU_BLOCKED_MIN) {
      if ((a->dtype == LT_FLOAT32 ? factor_blocked_f32((float *)mb, m, n, pv + b * k, iv + b)
                                  : factor_blocked_f64((double *)mb, m, n, pv + b * k, iv + b)) == LT_OK)
        continue;
      lt_release(src);
      lt_release(c);
      lt_release(p);
      lt_release(in);
      return LT_ERR;
    }
    if (a->dtype == LT_FLOAT32) iv[b] = factor_f32((float *)mb, m, n, pv + b * k);
    else iv[b] = factor_f64((double *)mb, m, n, pv + b * k);
  }
  lt_release(src);
  lt_bump_version(c);
  *lu = c, *piv = p, *info = in;
  return LT_OK;
}

/* the factorisation contiguous, its pivots lu_factor's (contiguous int64, batch x n, in 1..n) */
static int check_pivots(const char *op, const lt_tensor_t *lu, const lt_tensor_t *piv, int64_t batch, int64_t n) {
  if (!lt_is_contiguous(lu) || !lt_is_contiguous(piv) || piv->dtype != LT_INT64 || piv->numel != batch * n)
    return lt_error("%s: expected the contiguous factorisation and int64 pivots of lu_factor", op);
  const int64_t *pv = lt_data(piv);
  for (int64_t i = 0; i < batch * n; i++)
    if (pv[i] < 1 || pv[i] > n)
      return lt_error("%s: pivot %lld is out of range 1..%lld", op, (long long)pv[i], (long long)n);
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
  if (check_pivots("lu_solve", lu, piv, batch, n) != LT_OK) return NULL;
  const int64_t *pv = lt_data(piv);
  bool grad = lt_set_grad_enabled(false);
  lt_tensor_t *x = lt_clone(b);
  lt_set_grad_enabled(grad);
  if (!x) return NULL;
  for (int64_t q = 0; q < batch; q++) {
    const void *lq = (const char *)lt_data(lu) + (size_t)(q * n * n) * lt_dtype_size(lu->dtype);
    void *xq = (char *)lt_data(x) + (size_t)(q * n * k) * lt_dtype_size(lu->dtype);
    if (n >= LU_BLOCKED_MIN) {
      if (lu_solve_blocked(lu->dtype, lq, pv + q * n, n, xq, k, trans) == LT_OK) continue;
      lt_release(x);
      return NULL;
    }
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

/* out (n x n, row-major, elements of es bytes) = y with its columns permuted: column j of out is column
   f[j] of y; y and out apart */
static void gather_columns(const char *y, char *out, const int64_t *f, int64_t n, size_t es) {
  int nt = lt_threads_for((double)(n * n), (double)LT_GRAIN, 0);
  LT_WORKERS(nt, {
    int64_t r0 = n * lt_w / lt_nw, r1 = n * (lt_w + 1) / lt_nw;
    for (int64_t r = r0; r < r1; r++) {
      const char *yr = y + (size_t)(r * n) * es;
      char *o = out + (size_t)(r * n) * es;
      if (es == sizeof(float))
        for (int64_t j = 0; j < n; j++) ((float *)o)[j] = ((const float *)yr)[f[j]];
      else
        for (int64_t j = 0; j < n; j++) ((double *)o)[j] = ((const double *)yr)[f[j]];
    }
  });
}

lt_tensor_t *lt_lu_inverse(const lt_tensor_t *lu, const lt_tensor_t *piv) {
  if (check_batch("lu_inverse", "the factorisation", lu, true) != LT_OK) return NULL;
  const int64_t n = lu->sizes[lu->ndim - 1], batch = batch_of(lu);
  if (check_pivots("lu_inverse", lu, piv, batch, n) != LT_OK) return NULL;
  const int64_t *pv = lt_data(piv);
  const size_t es = lt_dtype_size(lu->dtype), mat = (size_t)(n * n) * es;
  const bool f32 = lu->dtype == LT_FLOAT32, blocked = n >= LU_BLOCKED_MIN;
  lt_tensor_t *x = lt_empty(lu->ndim, lu->sizes, lu->dtype, lu->device);
  /* the work matrix from the allocator's cache (a fresh one is page faults at every call) */
  lt_tensor_t *yt = x && blocked ? lt_empty(2, lu->sizes + lu->ndim - 2, lu->dtype, lu->device) : NULL;
  int64_t *f = yt ? malloc(sizeof(int64_t) * (size_t)n) : NULL;
  if (!x || (blocked && !f)) {
    if (yt) lt_error("lu_inverse: out of memory for %lld pivots", (long long)n);
    lt_release(x);
    lt_release(yt);
    return NULL;
  }
  char *y = yt ? lt_data(yt) : NULL;
  for (int64_t q = 0; q < batch; q++) {
    const void *lq = (const char *)lt_data(lu) + (size_t)q * mat;
    char *xq = (char *)lt_data(x) + (size_t)q * mat;
    const int64_t *pq = pv + q * n;
    if (!blocked) { /* the identity solved by substitution (solve swaps its rows first) */
      memset(xq, 0, mat);
      for (int64_t i = 0; i < n; i++) {
        if (f32) ((float *)xq)[i * n + i] = 1;
        else ((double *)xq)[i * n + i] = 1;
      }
      if (f32) solve_f32(lq, pq, n, (float *)xq, n);
      else solve_f64(lq, pq, n, (double *)xq, n);
      continue;
    }
    /* A^-1 = U^-1 L^-1 P: L^-1 as the identity solved forward (lower triangular: the zeros right
       of each block are skipped), U^-1 applied to it, then P's column swaps (in reverse order) */
    memset(y, 0, mat);
    for (int64_t i = 0; i < n; i++) {
      if (f32) ((float *)y)[i * n + i] = 1;
      else ((double *)y)[i * n + i] = 1;
    }
    int rc = tri(lu->dtype, lq, n, y, n, false, false, true, true);
    if (rc == LT_OK) rc = tri(lu->dtype, lq, n, y, n, true, false, false, false);
    if (rc != LT_OK) {
      free(f);
      lt_release(yt);
      lt_release(x);
      return NULL;
    }
    /* P = S_{n-1} ... S_0 (S_i swaps rows i and pq[i] - 1): column j of Y P is column f[j] of Y,
       f = s_{n-1} o ... o s_0, built as f o s_i from the last swap (swapping two of f's entries) */
    for (int64_t j = 0; j < n; j++) f[j] = j;
    for (int64_t i = n - 1; i >= 0; i--) {
      int64_t p = pq[i] - 1, t = f[i];
      f[i] = f[p];
      f[p] = t;
    }
    gather_columns(y, xq, f, n, es);
  }
  free(f);
  lt_release(yt);
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
    if (n >= LU_BLOCKED_MIN) {
      const void *aq = (const char *)lt_data(ac) + (size_t)(q * n * n) * es;
      void *xq = (char *)lt_data(x) + (size_t)(q * n * k) * es;
      if (tri(a->dtype, aq, n, xq, k, up, trans, unit, false) == LT_OK) continue;
      lt_release(ac);
      lt_release(x);
      return NULL;
    }
    if (a->dtype == LT_FLOAT32)
      trisolve_f32((const float *)lt_data(ac) + q * n * n, n, (float *)lt_data(x) + q * n * k, k, up, trans, unit);
    else
      trisolve_f64((const double *)lt_data(ac) + q * n * n, n, (double *)lt_data(x) + q * n * k, k, up, trans, unit);
  }
  lt_release(ac);
  lt_bump_version(x);
  return x;
}
