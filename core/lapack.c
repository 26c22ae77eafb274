/* Cholesky, QR, symmetric eigendecomposition and SVD through LAPACK (core/lapack.h).

   LAPACK is column-major: each matrix of the batch is copied transposed into a column-major work
   array, factored there, and its factors copied back row-major (O(m n) copies beside O(m n k)
   work). The routines are taken from the loaded OpenBLAS by name (Fortran's calling convention:
   every argument by address, a hidden length after the arguments for each character argument) and
   run single-threaded (core/blas.c sets OpenBLAS to one thread), a matrix at a time. */
#include "core/lapack.h"

#include "core/autograd.h"
#include "core/blas.h"
#include "core/elementwise.h"
#include "core/error.h"
#include "core/iter.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the routines ---------------------------------------------------------------------------- */

typedef void (*potrf_fn)(const char *, const int *, void *, const int *, int *, size_t);
typedef void (*geqrf_fn)(const int *, const int *, void *, const int *, void *, void *, const int *, int *);
typedef void (*orgqr_fn)(const int *, const int *, const int *, void *, const int *, const void *, void *,
                         const int *, int *);
typedef void (*syevd_fn)(const char *, const char *, const int *, void *, const int *, void *, void *,
                         const int *, int *, const int *, int *, size_t, size_t);
typedef void (*sytrf_fn)(const char *, const int *, void *, const int *, int *, void *, const int *, int *, size_t);
typedef void (*sytrs_fn)(const char *, const int *, const int *, const void *, const int *, const int *, void *,
                         const int *, int *, size_t);
typedef void (*gesdd_fn)(const char *, const int *, const int *, void *, const int *, void *, void *,
                         const int *, void *, const int *, void *, const int *, int *, int *, size_t);

/* [0]: float32 (s...), [1]: float64 (d...) */
static struct {
  potrf_fn potrf[2];
  geqrf_fn geqrf[2];
  orgqr_fn orgqr[2];
  syevd_fn syevd[2];
  gesdd_fn gesdd[2];
  sytrf_fn sytrf[2];
  sytrs_fn sytrs[2];
  bool ok;
} LP;
static pthread_once_t lapack_once = PTHREAD_ONCE_INIT;

static void load_once(void) {
  static const char *names[7][2] = {{"spotrf_", "dpotrf_"}, {"sgeqrf_", "dgeqrf_"}, {"sorgqr_", "dorgqr_"},
                                    {"ssyevd_", "dsyevd_"}, {"sgesdd_", "dgesdd_"}, {"ssytrf_", "dsytrf_"},
                                    {"ssytrs_", "dsytrs_"}};
  void **slots[7] = {(void **)LP.potrf, (void **)LP.geqrf, (void **)LP.orgqr, (void **)LP.syevd, (void **)LP.gesdd,
                     (void **)LP.sytrf, (void **)LP.sytrs};
  bool ok = true;
  for (int r = 0; r < 7; r++)
    for (int t = 0; t < 2; t++) {
      slots[r][t] = lt_blas_symbol(names[r][t]);
      ok = ok && slots[r][t];
    }
  LP.ok = ok;
}

bool lt_lapack_available(void) {
  return pthread_once(&lapack_once, load_once) == 0 && LP.ok;
}

/* ---- shared steps ---------------------------------------------------------------------------- */

static int check_input(const char *op, const lt_tensor_t *a, bool square) {
  if (a->device.type != LT_CPU)
    return lt_error("%s: only CPU tensors for now (got a tensor on %s): move it with :cpu()", op,
                    a->device.type == LT_CUDA ? "a CUDA device" : "another device");
  if (a->dtype != LT_FLOAT32 && a->dtype != LT_FLOAT64)
    return lt_error("%s: expected a float32 or float64 tensor, got %s", op, lt_dtype_name(a->dtype));
  if (a->ndim < 2) return lt_error("%s: the input must have at least 2 dimensions, got %d", op, a->ndim);
  int64_t m = a->sizes[a->ndim - 2], n = a->sizes[a->ndim - 1];
  if (square && m != n)
    return lt_error("%s: the input must be a batch of square matrices, got %lld by %lld matrices", op,
                    (long long)m, (long long)n);
  if (m > INT_MAX / 4 || n > INT_MAX / 4 || m * n > INT_MAX / 4)
    return lt_error("%s: %lld by %lld matrices are too large for LAPACK's 32-bit sizes", op, (long long)m,
                    (long long)n);
  if (!lt_lapack_available())
    return lt_error("%s: needs LAPACK, which the loaded BLAS does not have (%s); install OpenBLAS "
                    "(Debian's libopenblas0, which `make deps` installs)", op, lt_blas_info());
  return LT_OK;
}

static int64_t batch_of(const lt_tensor_t *t) {
  int64_t b = 1;
  for (int d = 0; d < t->ndim - 2; d++) b *= t->sizes[d];
  return b;
}

/* a new tensor of a's batch shape followed by the given trailing sizes (0, 1 or 2 of them) */
static lt_tensor_t *batch_tensor(const lt_tensor_t *a, int ntrail, int64_t d0, int64_t d1, lt_dtype dt) {
  int64_t sizes[LT_MAX_DIM];
  int nb = a->ndim - 2;
  for (int d = 0; d < nb; d++) sizes[d] = a->sizes[d];
  if (ntrail > 0) sizes[nb] = d0;
  if (ntrail > 1) sizes[nb + 1] = d1;
  return lt_empty(nb + ntrail, sizes, dt, a->device);
}

/* a contiguous copy of a without autograd history (its data is only read) */
static lt_tensor_t *contiguous_input(const lt_tensor_t *a) {
  bool grad = lt_set_grad_enabled(false);
  lt_tensor_t *c = lt_contiguous((lt_tensor_t *)a);
  lt_set_grad_enabled(grad);
  return c;
}

static int out_of_memory(const char *op) { return lt_error("%s: out of memory for LAPACK's work arrays", op); }

static void release_all(lt_tensor_t **ts, int n) {
  for (int i = 0; i < n; i++) {
    lt_release(ts[i]);
    ts[i] = NULL;
  }
}

#define TILE 16
/* matrices up to this order are factored by Cholesky's loops here, not by potrf: a LAPACK call
   and the copies around it cost ~0.5 us, several times an 8 x 8 factorisation */
#define SMALL_CHOL 16

/* the work array size a workspace query returned, which single precision routines return as a
   float: above 2^24 it may be rounded down, so a little more is asked for */
static int work_size(double query) {
  double n = query * 1.0001 + 64;
  return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

/* Per dtype: the copies in and out of column-major order, the finiteness check and the four
   decompositions of one batch. `L` indexes LP's routines. */
#define LAPACK_OPS(T, sfx, L)                                                                    \
  /* dst (column-major, leading dimension ld) = the m x n row-major src, in tiles that stay in   \
     the cache */                                                                                 \
  static void to_cm_##sfx(const T *src, int64_t m, int64_t n, T *dst, int64_t ld) {              \
    for (int64_t i0 = 0; i0 < m; i0 += TILE)                                                     \
      for (int64_t j0 = 0; j0 < n; j0 += TILE)                                                   \
        for (int64_t i = i0; i < m && i < i0 + TILE; i++)                                        \
          for (int64_t j = j0; j < n && j < j0 + TILE; j++) dst[j * ld + i] = src[i * n + j];    \
  }                                                                                              \
  /* the m x n row-major dst = the column-major src (leading dimension ld) */                    \
  static void from_cm_##sfx(const T *src, int64_t ld, int64_t m, int64_t n, T *dst) {            \
    for (int64_t j0 = 0; j0 < n; j0 += TILE)                                                     \
      for (int64_t i0 = 0; i0 < m; i0 += TILE)                                                   \
        for (int64_t j = j0; j < n && j < j0 + TILE; j++)                                        \
          for (int64_t i = i0; i < m && i < i0 + TILE; i++) dst[i * n + j] = src[j * ld + i];    \
  }                                                                                              \
  static bool finite_##sfx(const T *x, int64_t n) {                                              \
    for (int64_t i = 0; i < n; i++)                                                              \
      if (!isfinite(x[i])) return false;                                                         \
    return true;                                                                                 \
  }                                                                                              \
  /* the factor of a matrix of order n <= SMALL_CHOL (the triangle potrf would read: lower, or upper \
     as the transpose's lower) by Cholesky-Banachiewicz in T, as potf2 computes it: false (nothing  \
     written) when a pivot is not positive, where LAPACK then gives the partial factor and info */ \
  static bool small_cholesky_##sfx(const T *a, int n, bool upper, T *l) {                        \
    T t[SMALL_CHOL * SMALL_CHOL];                                                                \
    for (int j = 0; j < n; j++) {                                                                \
      T s = a[j * n + j];                                                                        \
      for (int k = 0; k < j; k++) s -= t[j * SMALL_CHOL + k] * t[j * SMALL_CHOL + k];           \
      if (!(s > 0)) return false;                                                                \
      const T d = (T)sqrt((double)s);                                                            \
      t[j * SMALL_CHOL + j] = d;                                                                 \
      for (int i = j + 1; i < n; i++) {                                                          \
        T v = upper ? a[j * n + i] : a[i * n + j];                                               \
        for (int k = 0; k < j; k++) v -= t[i * SMALL_CHOL + k] * t[j * SMALL_CHOL + k];         \
        t[i * SMALL_CHOL + j] = v / d;                                                           \
      }                                                                                          \
    }                                                                                            \
    for (int i = 0; i < n; i++)                                                                  \
      for (int j = 0; j < n; j++)                                                                \
        l[i * n + j] = upper ? (j >= i ? t[j * SMALL_CHOL + i] : 0) : (j <= i ? t[i * SMALL_CHOL + j] : 0); \
    return true;                                                                                 \
  }                                                                                              \
  static int cholesky_##sfx(const T *a, int64_t b0, int64_t b1, int n, bool upper, T *l, int64_t *info) {  \
    const char uplo = upper ? 'U' : 'L';                                                         \
    const int ld = n > 0 ? n : 1;                                                                \
    T *w = malloc(sizeof(T) * (size_t)n * n + 1);                                                \
    if (!w) return out_of_memory("linalg.cholesky");                                             \
    for (int64_t b = b0; b < b1; b++) {                                                        \
      const T *ab = a + b * n * n;                                                               \
      T *lb = l + b * n * n;                                                                     \
      int rc = 0;                                                                                \
      if (n <= SMALL_CHOL && small_cholesky_##sfx(ab, n, upper, lb)) {                           \
        info[b] = 0;                                                                             \
        continue;                                                                                \
      }                                                                                          \
      to_cm_##sfx(ab, n, n, w, n);                                                               \
      if (n > 0) LP.potrf[L](&uplo, &n, w, &ld, &rc, 1);                                         \
      if (rc < 0) {                                                                              \
        free(w);                                                                                 \
        return lt_error("linalg.cholesky: LAPACK's potrf rejected argument %d", -rc);            \
      }                                                                                          \
      info[b] = rc;                                                                              \
      from_cm_##sfx(w, n, n, n, lb);                                                             \
      for (int i = 0; i < n; i++) /* the other triangle, which potrf leaves as it was */        \
        for (int j = 0; j < n; j++)                                                              \
          if (upper ? j < i : j > i) lb[i * n + j] = 0;                                          \
    }                                                                                            \
    free(w);                                                                                     \
    return LT_OK;                                                                                \
  }                                                                                              \
  /* qcols: Q's columns (0: no Q); rrows: R's rows; raw (geqrf's own output): r (m x n) as geqrf  \
     leaves it, R and the reflectors, and the k scalars of the reflectors in raw */             \
  static int qr_##sfx(const T *a, int64_t b0, int64_t b1, int m, int n, int qcols, int rrows, T *q, T *r, \
                      T *raw) {                                                                  \
    const int k = m < n ? m : n, ld = m > 0 ? m : 1;                                             \
    int lwork = -1, rc = 0;                                                                      \
    T query = 0, query2 = 0;                                                                     \
    T *w = malloc(sizeof(T) * ((size_t)m * n + (size_t)m * qcols + (size_t)k) + 1);              \
    if (!w) return out_of_memory("linalg.qr");                                                   \
    T *qw = w + (size_t)m * n, *tau = qw + (size_t)m * qcols;                                    \
    if (k > 0) {                                                                                 \
      LP.geqrf[L](&m, &n, w, &ld, tau, &query, &lwork, &rc);                                     \
      if (qcols > 0) LP.orgqr[L](&m, &qcols, &k, qw, &ld, tau, &query2, &lwork, &rc);            \
    }                                                                                            \
    double want = (double)query > (double)query2 ? (double)query : (double)query2;               \
    lwork = work_size(want);                                                                     \
    T *work = malloc(sizeof(T) * (size_t)lwork);                                                 \
    if (!work) {                                                                                 \
      free(w);                                                                                   \
      return out_of_memory("linalg.qr");                                                         \
    }                                                                                            \
    for (int64_t b = b0; b < b1; b++) {                                                        \
      const T *ab = a + b * m * n;                                                               \
      T *rb = r + b * rrows * n;                                                                 \
      to_cm_##sfx(ab, m, n, w, m);                                                               \
      rc = 0;                                                                                    \
      if (k > 0) LP.geqrf[L](&m, &n, w, &ld, tau, work, &lwork, &rc);                            \
      if (rc < 0) break;                                                                         \
      if (raw) {                                                                                 \
        from_cm_##sfx(w, m, m, n, rb);                                                           \
        if (k > 0) memcpy(raw + b * k, tau, sizeof(T) * (size_t)k);                              \
        continue;                                                                                \
      }                                                                                          \
      for (int i = 0; i < rrows; i++)                                                            \
        for (int j = 0; j < n; j++) rb[i * n + j] = j >= i && i < k ? w[(int64_t)j * m + i] : 0; \
      if (qcols == 0) continue;                                                                  \
      T *qb = q + b * m * qcols;                                                                 \
      if (k == 0) { /* no reflectors: Q is the identity */                                       \
        for (int i = 0; i < m; i++)                                                              \
          for (int j = 0; j < qcols; j++) qb[i * qcols + j] = i == j;                            \
        continue;                                                                                \
      }                                                                                          \
      memcpy(qw, w, sizeof(T) * (size_t)m * k);                                                  \
      LP.orgqr[L](&m, &qcols, &k, qw, &ld, tau, work, &lwork, &rc);                              \
      if (rc < 0) break;                                                                         \
      from_cm_##sfx(qw, m, m, qcols, qb);                                                        \
    }                                                                                            \
    free(work);                                                                                  \
    free(w);                                                                                     \
    if (rc < 0) return lt_error("linalg.qr: LAPACK rejected argument %d", -rc);                  \
    return LT_OK;                                                                                \
  }                                                                                              \
  static int eigh_##sfx(const T *a, int64_t b0, int64_t b1, int n, bool upper, bool vectors, T *wv, T *v) { \
    const char jobz = vectors ? 'V' : 'N', uplo = upper ? 'U' : 'L';                             \
    const int ld = n > 0 ? n : 1;                                                                \
    int lwork = -1, liwork = -1, iquery = 0, rc = 0;                                             \
    T query = 0;                                                                                 \
    T *w = malloc(sizeof(T) * (size_t)n * n + 1);                                                \
    if (!w) return out_of_memory("linalg.eigh");                                                 \
    if (n > 0) LP.syevd[L](&jobz, &uplo, &n, w, &ld, wv, &query, &lwork, &iquery, &liwork, &rc, 1, 1); \
    lwork = work_size((double)query);                                                            \
    liwork = iquery > 1 ? iquery : 1;                                                            \
    T *work = malloc(sizeof(T) * (size_t)lwork);                                                 \
    int *iwork = malloc(sizeof(int) * (size_t)liwork);                                           \
    if (!work || !iwork) {                                                                       \
      free(w), free(work), free(iwork);                                                          \
      return out_of_memory("linalg.eigh");                                                       \
    }                                                                                            \
    for (int64_t b = b0; b < b1 && rc == 0; b++) {                                             \
      const T *ab = a + b * n * n;                                                               \
      to_cm_##sfx(ab, n, n, w, n);                                                               \
      if (n > 0)                                                                                 \
        LP.syevd[L](&jobz, &uplo, &n, w, &ld, wv + b * n, work, &lwork, iwork, &liwork, &rc, 1, 1); \
      if (rc == 0 && vectors) from_cm_##sfx(w, n, n, n, v + b * n * n);                          \
    }                                                                                            \
    free(w), free(work), free(iwork);                                                            \
    if (rc < 0) return lt_error("linalg.eigh: LAPACK's syevd rejected argument %d", -rc);        \
    if (rc > 0)                                                                                  \
      return lt_error("linalg.eigh: the algorithm failed to converge because the input matrix is " \
                      "ill-conditioned or has too many repeated eigenvalues (error code: %d)", rc); \
    return LT_OK;                                                                                \
  }                                                                                              \
  static int svd_##sfx(const T *a, int64_t b0, int64_t b1, int m, int n, bool full, bool vectors, T *u, T *s, \
                       T *vh) {                                                                  \
    const int k = m < n ? m : n;                                                                 \
    const char jobz = !vectors ? 'N' : full ? 'A' : 'S';                                         \
    const int ucols = vectors ? (full ? m : k) : 0, vrows = vectors ? (full ? n : k) : 0;        \
    const int lda = m > 0 ? m : 1, ldu = vectors && m > 0 ? m : 1, ldvt = vrows > 0 ? vrows : 1; \
    int lwork = -1, rc = 0;                                                                      \
    T query = 0;                                                                                 \
    size_t nw = (size_t)m * n + (size_t)m * ucols + (size_t)vrows * n;                           \
    T *w = malloc(sizeof(T) * nw + 1);                                                           \
    int *iwork = malloc(sizeof(int) * (8 * (size_t)k + 1));                                      \
    if (!w || !iwork) {                                                                          \
      free(w), free(iwork);                                                                      \
      return out_of_memory("linalg.svd");                                                        \
    }                                                                                            \
    T *uw = w + (size_t)m * n, *vw = uw + (size_t)m * ucols;                                     \
    if (k > 0)                                                                                   \
      LP.gesdd[L](&jobz, &m, &n, w, &lda, s, uw, &ldu, vw, &ldvt, &query, &lwork, iwork, &rc, 1); \
    lwork = work_size((double)query);                                                            \
    T *work = malloc(sizeof(T) * (size_t)lwork);                                                 \
    if (!work) {                                                                                 \
      free(w), free(iwork);                                                                      \
      return out_of_memory("linalg.svd");                                                        \
    }                                                                                            \
    for (int64_t b = b0; b < b1 && rc == 0; b++) {                                             \
      const T *ab = a + b * m * n;                                                               \
      to_cm_##sfx(ab, m, n, w, m);                                                               \
      if (k > 0)                                                                                 \
        LP.gesdd[L](&jobz, &m, &n, w, &lda, s + b * k, uw, &ldu, vw, &ldvt, work, &lwork, iwork, &rc, 1); \
      if (rc != 0 || !vectors) continue;                                                         \
      T *ub = u + b * m * ucols, *vb = vh + b * vrows * n;                                       \
      if (k == 0) { /* an empty matrix: any orthonormal bases, the identities */                 \
        for (int i = 0; i < m; i++)                                                              \
          for (int j = 0; j < ucols; j++) ub[i * ucols + j] = i == j;                            \
        for (int i = 0; i < vrows; i++)                                                          \
          for (int j = 0; j < n; j++) vb[i * n + j] = i == j;                                    \
        continue;                                                                                \
      }                                                                                          \
      from_cm_##sfx(uw, ldu, m, ucols, ub);                                                      \
      from_cm_##sfx(vw, ldvt, vrows, n, vb);                                                     \
    }                                                                                            \
    free(w), free(work), free(iwork);                                                            \
    if (rc < 0) return lt_error("linalg.svd: LAPACK's gesdd rejected argument %d", -rc);         \
    if (rc > 0)                                                                                  \
      return lt_error("linalg.svd: the algorithm failed to converge because the input matrix is " \
                      "ill-conditioned or has too many repeated singular values (error code: %d)", rc); \
    return LT_OK;                                                                                \
  }                                                                                              \
  /* Bunch-Kaufman (sytrf, lower): ld (n x n row-major) the compact factors of a's lower        \
     triangle, its strict upper triangle zero; piv sytrf's ipiv (1-based; a 2 x 2 block's two   \
     entries negative); info sytrf's */                                                          \
  static int ldl_factor_##sfx(const T *a, int64_t b0, int64_t b1, int n, T *ld, int32_t *piv, int32_t *info) { \
    const char uplo = 'L';                                                                       \
    const int lda = n > 0 ? n : 1;                                                               \
    int lwork = -1, rc = 0;                                                                      \
    T query = 0;                                                                                 \
    T *w = malloc(sizeof(T) * (size_t)n * n + 1);                                                \
    int *ip = malloc(sizeof(int) * (size_t)n + 1);                                               \
    if (w && ip && n > 0) LP.sytrf[L](&uplo, &n, w, &lda, ip, &query, &lwork, &rc, 1);          \
    lwork = work_size((double)query);                                                            \
    T *work = malloc(sizeof(T) * (size_t)lwork);                                                 \
    if (!w || !ip || !work) {                                                                    \
      free(w), free(ip), free(work);                                                             \
      return out_of_memory("linalg.ldl_factor");                                                 \
    }                                                                                            \
    for (int64_t b = b0; b < b1 && rc >= 0; b++) {                                             \
      T *lb = ld + b * n * n;                                                                    \
      to_cm_##sfx(a + b * n * n, n, n, w, n);                                                    \
      rc = 0;                                                                                    \
      if (n > 0) LP.sytrf[L](&uplo, &n, w, &lda, ip, work, &lwork, &rc, 1);                      \
      if (rc < 0) break;                                                                         \
      info[b] = rc;                                                                              \
      from_cm_##sfx(w, n, n, n, lb);                                                             \
      for (int i = 0; i < n; i++) {                                                              \
        piv[b * n + i] = ip[i];                                                                  \
        for (int j = i + 1; j < n; j++) lb[i * n + j] = 0;                                       \
      }                                                                                          \
    }                                                                                            \
    free(w), free(ip), free(work);                                                               \
    if (rc < 0) return lt_error("linalg.ldl_factor: LAPACK's sytrf rejected argument %d", -rc);  \
    return LT_OK;                                                                                \
  }                                                                                              \
  /* x (n x k row-major) = A^-1 x in place for ldl_factor's factors of A (sytrs) */            \
  static int ldl_solve_##sfx(const T *ld, const int32_t *piv, int64_t b0, int64_t b1, int n, int k, T *x) { \
    const char uplo = 'L';                                                                       \
    const int lda = n > 0 ? n : 1;                                                               \
    int rc = 0;                                                                                  \
    T *w = malloc(sizeof(T) * ((size_t)n * n + (size_t)n * k) + 1);                              \
    int *ip = malloc(sizeof(int) * (size_t)n + 1);                                               \
    if (!w || !ip) {                                                                             \
      free(w), free(ip);                                                                         \
      return out_of_memory("linalg.ldl_solve");                                                  \
    }                                                                                            \
    T *wb = w + (size_t)n * n;                                                                   \
    for (int64_t b = b0; b < b1 && rc == 0 && n > 0 && k > 0; b++) {                           \
      to_cm_##sfx(ld + b * n * n, n, n, w, n);                                                   \
      to_cm_##sfx(x + b * n * k, n, k, wb, n);                                                   \
      for (int i = 0; i < n; i++) ip[i] = piv[b * n + i];                                        \
      LP.sytrs[L](&uplo, &n, &k, w, &lda, ip, wb, &lda, &rc, 1);                                 \
      from_cm_##sfx(wb, n, n, k, x + b * n * k);                                                 \
    }                                                                                            \
    free(w), free(ip);                                                                           \
    if (rc < 0) return lt_error("linalg.ldl_solve: LAPACK's sytrs rejected argument %d", -rc);   \
    return LT_OK;                                                                                \
  }
LAPACK_OPS(float, f32, 0)
LAPACK_OPS(double, f64, 1)

/* ---- a batch over the threads ------------------------------------------------------------------ */

enum { JOB_CHOLESKY, JOB_QR, JOB_EIGH, JOB_SVD, JOB_LDL_FACTOR, JOB_LDL_SOLVE };

/* one decomposition of a batch: the input, the outputs and the sizes and flags of the op */
typedef struct {
  int op;
  lt_dtype dt;
  const void *a;
  void *o1, *o2, *o3;
  int m, n, i1, i2; /* QR: Q's columns, R's rows; the LDL solve: i1 B's columns */
  bool f1, f2;      /* Cholesky and eigh: upper; SVD: full; eigh and SVD: vectors */
} job_t;

static int job_range(const job_t *j, int64_t b0, int64_t b1) {
  bool s = j->dt == LT_FLOAT32;
  switch (j->op) {
  case JOB_CHOLESKY:
    return s ? cholesky_f32(j->a, b0, b1, j->n, j->f1, j->o1, j->o2) : cholesky_f64(j->a, b0, b1, j->n, j->f1, j->o1, j->o2);
  case JOB_QR:
    return s ? qr_f32(j->a, b0, b1, j->m, j->n, j->i1, j->i2, j->o1, j->o2, j->o3)
             : qr_f64(j->a, b0, b1, j->m, j->n, j->i1, j->i2, j->o1, j->o2, j->o3);
  case JOB_EIGH:
    return s ? eigh_f32(j->a, b0, b1, j->n, j->f1, j->f2, j->o1, j->o2)
             : eigh_f64(j->a, b0, b1, j->n, j->f1, j->f2, j->o1, j->o2);
  case JOB_LDL_FACTOR:
    return s ? ldl_factor_f32(j->a, b0, b1, j->n, j->o1, j->o2, j->o3) : ldl_factor_f64(j->a, b0, b1, j->n, j->o1, j->o2, j->o3);
  case JOB_LDL_SOLVE:
    return s ? ldl_solve_f32(j->a, j->o2, b0, b1, j->n, j->i1, j->o1) : ldl_solve_f64(j->a, j->o2, b0, b1, j->n, j->i1, j->o1);
  default:
    return s ? svd_f32(j->a, b0, b1, j->m, j->n, j->f1, j->f2, j->o1, j->o2, j->o3)
             : svd_f64(j->a, b0, b1, j->m, j->n, j->f1, j->f2, j->o1, j->o2, j->o3);
  }
}

/* The batch cut into one range of matrices per thread when its work (work_each multiply-adds, about,
   a matrix) is worth waking threads for; each range has its own work arrays, and LAPACK runs
   single-threaded in each. The first failure's error becomes the caller's. */
/* what a LAPACK call costs beyond its arithmetic (copies, work arrays, LAPACK's own set-up): an
   SVD of an 8 x 8 matrix took 12 us, about 20000 multiply-adds' time */
#define LAPACK_CALL_WORK 20000.0

static int run_job(const job_t *j, int64_t batch, double work_each) {
  int nt = batch > 1 ? lt_threads_for(work_each * (double)batch, (double)LT_BLAS_THREAD_WORK, 0) : 1;
  if (nt > batch) nt = (int)batch;
  if (nt <= 1) return job_range(j, 0, batch);
  int failed = 0;
  char msg[512] = "";
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
  for (int c = 0; c < nt; c++) {
    if (job_range(j, batch * c / nt, batch * (c + 1) / nt) != LT_OK) {
#pragma omp critical(lt_lapack_error)
      if (!failed) {
        failed = 1;
        snprintf(msg, sizeof msg, "%s", lt_last_error());
      }
    }
  }
  return failed ? lt_error("%s", msg) : LT_OK;
}

/* ---- the entry points -------------------------------------------------------------------------- */

int lt_cholesky(const lt_tensor_t *a, bool upper, lt_tensor_t **l, lt_tensor_t **info) {
  *l = *info = NULL;
  LT_TRY(check_input("linalg.cholesky", a, true));
  const int n = (int)a->sizes[a->ndim - 1];
  lt_tensor_t *ts[3] = {contiguous_input(a), NULL, NULL};
  if (ts[0]) ts[1] = batch_tensor(a, 2, n, n, a->dtype);
  if (ts[1]) ts[2] = batch_tensor(a, 0, 0, 0, LT_INT64);
  if (!ts[2]) {
    release_all(ts, 3);
    return LT_ERR;
  }
  job_t j = {.op = JOB_CHOLESKY, .dt = a->dtype, .a = lt_data(ts[0]), .o1 = lt_data(ts[1]), .o2 = lt_data(ts[2]),
             .n = n, .f1 = upper};
  int rc = run_job(&j, batch_of(a), (double)n * n * n / 3 + (n <= SMALL_CHOL ? 2.0 * n * n : LAPACK_CALL_WORK));
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 2);
    return LT_ERR;
  }
  *l = ts[1], *info = ts[2];
  return LT_OK;
}

int lt_qr(const lt_tensor_t *a, const char *mode, lt_tensor_t **q, lt_tensor_t **r) {
  *q = *r = NULL;
  LT_TRY(check_input("linalg.qr", a, false));
  bool complete = strcmp(mode, "complete") == 0, only_r = strcmp(mode, "r") == 0;
  if (!complete && !only_r && strcmp(mode, "reduced") != 0)
    return lt_error("linalg.qr: mode must be 'reduced', 'complete' or 'r', got '%s'", mode);
  const int m = (int)a->sizes[a->ndim - 2], n = (int)a->sizes[a->ndim - 1], k = m < n ? m : n;
  const int qcols = only_r ? 0 : complete ? m : k, rrows = complete ? m : k;
  lt_tensor_t *ts[3] = {contiguous_input(a), NULL, NULL};
  if (ts[0]) {
    if (only_r) {
      int64_t zero = 0;
      ts[1] = lt_empty(1, &zero, a->dtype, a->device);
    } else {
      ts[1] = batch_tensor(a, 2, m, qcols, a->dtype);
    }
  }
  if (ts[1]) ts[2] = batch_tensor(a, 2, rrows, n, a->dtype);
  if (!ts[2]) {
    release_all(ts, 3);
    return LT_ERR;
  }
  job_t j = {.op = JOB_QR, .dt = a->dtype, .a = lt_data(ts[0]), .o1 = lt_data(ts[1]), .o2 = lt_data(ts[2]),
             .m = m, .n = n, .i1 = qcols, .i2 = rrows};
  int rc = run_job(&j, batch_of(a), 2.0 * m * n * k + (double)m * qcols * k + LAPACK_CALL_WORK);
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 2);
    return LT_ERR;
  }
  *q = ts[1], *r = ts[2];
  return LT_OK;
}

int lt_geqrf(const lt_tensor_t *a, lt_tensor_t **qr, lt_tensor_t **tau) {
  *qr = *tau = NULL;
  LT_TRY(check_input("geqrf", a, false));
  const int m = (int)a->sizes[a->ndim - 2], n = (int)a->sizes[a->ndim - 1], k = m < n ? m : n;
  lt_tensor_t *ts[3] = {contiguous_input(a), NULL, NULL};
  if (ts[0]) ts[1] = batch_tensor(a, 2, m, n, a->dtype);
  if (ts[1]) ts[2] = batch_tensor(a, 1, k, 0, a->dtype);
  if (!ts[2]) {
    release_all(ts, 3);
    return LT_ERR;
  }
  job_t j = {.op = JOB_QR, .dt = a->dtype, .a = lt_data(ts[0]), .o2 = lt_data(ts[1]), .o3 = lt_data(ts[2]),
             .m = m, .n = n, .i1 = 0, .i2 = m};
  int rc = run_job(&j, batch_of(a), 2.0 * m * n * k + LAPACK_CALL_WORK);
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 2);
    return LT_ERR;
  }
  *qr = ts[1], *tau = ts[2];
  return LT_OK;
}

static bool all_finite(const lt_tensor_t *c) {
  return c->dtype == LT_FLOAT32 ? finite_f32(lt_data((lt_tensor_t *)c), c->numel)
                                : finite_f64(lt_data((lt_tensor_t *)c), c->numel);
}

int lt_eigh(const lt_tensor_t *a, bool upper, bool vectors, lt_tensor_t **w, lt_tensor_t **v) {
  *w = *v = NULL;
  LT_TRY(check_input("linalg.eigh", a, true));
  const int n = (int)a->sizes[a->ndim - 1];
  lt_tensor_t *ts[3] = {contiguous_input(a), NULL, NULL};
  if (ts[0] && !all_finite(ts[0])) {
    lt_release(ts[0]);
    return lt_error("linalg.eigh: the input contains non-finite values (NaN or inf)");
  }
  if (ts[0]) ts[1] = batch_tensor(a, 1, n, 0, a->dtype);
  if (ts[1] && vectors) ts[2] = batch_tensor(a, 2, n, n, a->dtype);
  if (!ts[1] || (vectors && !ts[2])) {
    release_all(ts, 3);
    return LT_ERR;
  }
  job_t j = {.op = JOB_EIGH, .dt = a->dtype, .a = lt_data(ts[0]), .o1 = lt_data(ts[1]),
             .o2 = vectors ? lt_data(ts[2]) : NULL, .n = n, .f1 = upper, .f2 = vectors};
  int rc = run_job(&j, batch_of(a), 9.0 * n * n * n + LAPACK_CALL_WORK);
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 2);
    return LT_ERR;
  }
  *w = ts[1], *v = ts[2];
  return LT_OK;
}

int lt_svd(const lt_tensor_t *a, bool full, bool vectors, lt_tensor_t **u, lt_tensor_t **s, lt_tensor_t **vh) {
  *u = *s = *vh = NULL;
  LT_TRY(check_input("linalg.svd", a, false));
  const int m = (int)a->sizes[a->ndim - 2], n = (int)a->sizes[a->ndim - 1], k = m < n ? m : n;
  lt_tensor_t *ts[4] = {contiguous_input(a), NULL, NULL, NULL};
  if (ts[0] && !all_finite(ts[0])) {
    lt_release(ts[0]);
    return lt_error("linalg.svd: the input contains non-finite values (NaN or inf)");
  }
  if (ts[0]) ts[2] = batch_tensor(a, 1, k, 0, a->dtype);
  if (ts[2] && vectors) {
    ts[1] = batch_tensor(a, 2, m, full ? m : k, a->dtype);
    if (ts[1]) ts[3] = batch_tensor(a, 2, full ? n : k, n, a->dtype);
  }
  if (!ts[2] || (vectors && !ts[3])) {
    release_all(ts, 4);
    return LT_ERR;
  }
  job_t j = {.op = JOB_SVD, .dt = a->dtype, .a = lt_data(ts[0]), .o1 = vectors ? lt_data(ts[1]) : NULL,
             .o2 = lt_data(ts[2]), .o3 = vectors ? lt_data(ts[3]) : NULL, .m = m, .n = n, .f1 = full, .f2 = vectors};
  int rc = run_job(&j, batch_of(a), 10.0 * m * n * k + LAPACK_CALL_WORK);
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 3);
    return LT_ERR;
  }
  *u = ts[1], *s = ts[2], *vh = ts[3];
  return LT_OK;
}

int lt_ldl_factor(const lt_tensor_t *a, lt_tensor_t **ld, lt_tensor_t **piv, lt_tensor_t **info) {
  *ld = *piv = *info = NULL;
  LT_TRY(check_input("linalg.ldl_factor", a, true));
  const int n = (int)a->sizes[a->ndim - 1];
  lt_tensor_t *ts[4] = {contiguous_input(a), NULL, NULL, NULL};
  if (ts[0]) ts[1] = batch_tensor(a, 2, n, n, a->dtype);
  if (ts[1]) ts[2] = batch_tensor(a, 1, n, 0, LT_INT32);
  if (ts[2]) ts[3] = batch_tensor(a, 0, 0, 0, LT_INT32);
  if (!ts[3]) {
    release_all(ts, 4);
    return LT_ERR;
  }
  job_t j = {.op = JOB_LDL_FACTOR, .dt = a->dtype, .a = lt_data(ts[0]), .o1 = lt_data(ts[1]), .o2 = lt_data(ts[2]),
             .o3 = lt_data(ts[3]), .n = n};
  int rc = run_job(&j, batch_of(a), (double)n * n * n / 3 + LAPACK_CALL_WORK);
  lt_release(ts[0]);
  if (rc != LT_OK) {
    release_all(ts + 1, 3);
    return LT_ERR;
  }
  *ld = ts[1], *piv = ts[2], *info = ts[3];
  return LT_OK;
}

/* sytrf's pivots as sytrs reads them: each in 1..n, a negative one (a 2 x 2 block) followed by
   its equal; anything else would make sytrs index outside the matrix */
static bool ldl_pivots_valid(const int32_t *p, int64_t count, int n) {
  for (int64_t b = 0; b < count; b++, p += n)
    for (int i = 0; i < n; i++) {
      if (p[i] == 0 || p[i] > n || p[i] < -n) return false;
      if (p[i] < 0) {
        if (i + 1 >= n || p[i + 1] != p[i]) return false;
        i++;
      }
    }
  return true;
}

lt_tensor_t *lt_ldl_solve(const lt_tensor_t *ld, const lt_tensor_t *piv, const lt_tensor_t *b) {
  if (check_input("linalg.ldl_solve", ld, true) != LT_OK || check_input("linalg.ldl_solve", b, false) != LT_OK)
    return NULL;
  const int n = (int)ld->sizes[ld->ndim - 1];
  const int64_t k = b->sizes[b->ndim - 1], batch = batch_of(ld);
  if (b->dtype != ld->dtype) {
    lt_error("linalg.ldl_solve: B is %s, LD %s", lt_dtype_name(b->dtype), lt_dtype_name(ld->dtype));
    return NULL;
  }
  bool same = b->ndim == ld->ndim && b->sizes[b->ndim - 2] == n && piv->ndim == ld->ndim - 1;
  for (int d = 0; same && d < ld->ndim - 2; d++) same = b->sizes[d] == ld->sizes[d] && piv->sizes[d] == ld->sizes[d];
  if (!same || piv->sizes[piv->ndim - 1] != n) {
    lt_error("linalg.ldl_solve: expected LD (..., %d, %d), pivots (..., %d) and B (..., %d, k) of one batch shape", n,
             n, n, n);
    return NULL;
  }
  if (piv->device.type != LT_CPU || piv->dtype != LT_INT32) {
    lt_error("linalg.ldl_solve: expected the int32 CPU pivots of ldl_factor, got %s", lt_dtype_name(piv->dtype));
    return NULL;
  }
  lt_tensor_t *ts[3] = {contiguous_input(ld), contiguous_input(piv), NULL};
  if (ts[1] && !ldl_pivots_valid(lt_data(ts[1]), batch, n)) {
    release_all(ts, 3);
    lt_error("linalg.ldl_solve: the pivots are not those of ldl_factor (each in 1..%d or -%d..-1, a negative one "
             "repeated in the next entry)", n, n);
    return NULL;
  }
  if (ts[1]) {
    bool grad = lt_set_grad_enabled(false);
    ts[2] = lt_clone((lt_tensor_t *)b); /* contiguous, solved in place */
    lt_set_grad_enabled(grad);
  }
  if (!ts[2]) {
    release_all(ts, 3);
    return NULL;
  }
  job_t j = {.op = JOB_LDL_SOLVE, .dt = ld->dtype, .a = lt_data(ts[0]), .o1 = lt_data(ts[2]), .o2 = lt_data(ts[1]),
             .n = n, .i1 = (int)k};
  int rc = run_job(&j, batch, 2.0 * n * n * (double)k + LAPACK_CALL_WORK);
  lt_tensor_t *x = ts[2];
  release_all(ts, 2);
  if (rc != LT_OK) {
    lt_release(x);
    return NULL;
  }
  lt_bump_version(x);
  return x;
}
