/* The CPU batched matrix product: float32/float64 through core/blas.h (lutorch's AVX-512 kernels
   or BLAS), float16 through float32 on converted copies, bfloat16 on the CPU's bf16 dot products
   where it has them (kernels/cpu/bgemm.c, chosen at run time, for operands with a unit stride;
   else float32 on converted copies), integers with 64-bit loops. See matmul.h.

   Measured on 2 AVX-512 cores with OpenBLAS 0.3.21 (SkylakeX/Cooperlake kernels): its small-matrix
   path costs ~60 ns a call, less than a plain loop down to 4x4x4, so there is no direct loop for
   contiguous operands except the tiniest; a direct loop does beat packing strided or half-precision
   operands into temporaries below ~4x4x4. gemv beats gemm for matrix-vector products from about
   512x512 (3-5x at 1024x1024); below that gemm's small path wins.

   Threads: a large product is split over OpenMP threads by lt_blas_* (core/blas.h); a batch of
   products small enough to run on one thread each is spread over the threads instead (dynamic
   schedule, so that a descheduled thread does not hold the others up). */
#include "matmul.h"

#include "blas.h"
#include "core/iter.h"
#include "bgemm.h"
#include "error.h"
#include "half.h"

#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  TINY_MNK = 8,          /* direct loop below this for operands BLAS can read as they are */
  TINY_PACKED_MNK = 64,  /* direct loop below this when temporaries would be needed */
  GEMV_MNK = 1 << 6,    /* gemv instead of gemm for m == 1 or n == 1 from this size */
  GRAB_MNK = 1 << 15     /* multiply-adds a thread takes at a time from a batch */
};
/* Up to this, lt_blas_* runs a product on one thread: we parallelise over the batch instead. */
#define BATCH_PAR_MNK LT_BLAS_SPLIT_MIN

/* Threads for our own loops: as for the BLAS (core/blas.h), and none inside a parallel region. */
static int loop_threads(void) {
  if (omp_in_parallel()) return 1;
  int nt = lt_blas_num_threads(), omp = omp_get_max_threads();
  if (omp < nt) nt = omp;
  return nt > 1 ? nt : 1;
}
#define CHUNK ((int64_t)1 << 30) /* split sizes beyond LT_BLAS_MAX_DIM into chunks of this */

/* An operand as BLAS sees it: row-major (trans false) or column-major (trans true) with a leading
   dimension, or not readable by BLAS (ok false). */
typedef struct {
  bool ok, trans;
  int64_t ld;
} view_t;

static view_t blas_view(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  view_t v = {false, false, 0};
  int64_t cmin = cols > 1 ? cols : 1, rmin = rows > 1 ? rows : 1;
  if ((sc == 1 || cols <= 1) && (rows <= 1 || sr >= cmin)) {
    int64_t ld = rows <= 1 ? cmin : sr;
    if (ld <= LT_BLAS_MAX_DIM) return (view_t){true, false, ld};
  }
  if ((sr == 1 || rows <= 1) && (cols <= 1 || sc >= rmin)) {
    int64_t ld = cols <= 1 ? rmin : sc;
    if (ld <= LT_BLAS_MAX_DIM) return (view_t){true, true, ld};
  }
  return v;
}

/* The contiguous layout of a temporary: row-major unless its rows are too long for BLAS. */
static view_t temp_view(int64_t rows, int64_t cols, int64_t *sr, int64_t *sc) {
  if (cols <= LT_BLAS_MAX_DIM) {
    *sr = cols > 1 ? cols : 1, *sc = 1;
    return (view_t){true, false, *sr};
  }
  *sr = 1, *sc = rows > 1 ? rows : 1;
  return (view_t){true, true, *sc};
}

/* ---- conversions into and out of temporaries ------------------------------------------------- */

static inline float f16_in(lt_half h) { return lt_half_to_float(h); }
static inline float bf16_in(lt_bfloat16 b) { return lt_bf16_to_float(b); }
static inline float f32_id(float x) { return x; }
static inline double f64_id(double x) { return x; }

/* dst[i*dr + j*dc] = CONV(src[i*sr + j*sc]), walking dst's contiguous dimension innermost; small
   copies never enter libgomp (a parallel region with one thread still costs a futex wake-up) */
#define COPY_LOOP(ST, DT, CONV)                                                                    \
  do {                                                                                             \
    const ST *s_ = (const ST *)src;                                                                \
    DT *d_ = (DT *)dst;                                                                            \
    if (sc == 1 && dc == 1 && par) { /* both rows contiguous: a loop the compiler vectorises */   \
      _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)")                     \
      for (int64_t i = 0; i < rows; i++) {                                                         \
        const ST *si_ = s_ + i * sr;                                                               \
        DT *di_ = d_ + i * dr;                                                                     \
        for (int64_t j = 0; j < cols; j++) di_[j] = CONV(si_[j]);                                  \
      }                                                                                            \
    } else if (sc == 1 && dc == 1) {                                                               \
      for (int64_t i = 0; i < rows; i++) {                                                         \
        const ST *si_ = s_ + i * sr;                                                               \
        DT *di_ = d_ + i * dr;                                                                     \
        for (int64_t j = 0; j < cols; j++) di_[j] = CONV(si_[j]);                                  \
      }                                                                                            \
    } else if (par) {                                                                              \
      _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)")                     \
      for (int64_t i = 0; i < rows; i++)                                                           \
        for (int64_t j = 0; j < cols; j++) d_[i * dr + j * dc] = CONV(s_[i * sr + j * sc]);        \
    } else {                                                                                       \
      for (int64_t i = 0; i < rows; i++)                                                           \
        for (int64_t j = 0; j < cols; j++) d_[i * dr + j * dc] = CONV(s_[i * sr + j * sc]);        \
    }                                                                                              \
  } while (0)

/* Convert a rows x cols matrix of dtype dt into the compute type (float, or double for float64). */
static void pack_in(lt_dtype dt, int64_t rows, int64_t cols, const void *src, int64_t sr,
                    int64_t sc, void *dst, int64_t dr, int64_t dc, bool par) {
  if (dr < dc) { /* walk the transpose so that dst's contiguous dimension is innermost */
    int64_t t = rows; rows = cols, cols = t;
    t = sr, sr = sc, sc = t;
    t = dr, dr = dc, dc = t;
  }
  int nt = par ? lt_threads_for((double)rows * (double)cols, LT_GRAIN, loop_threads()) : 1;
  par = nt > 1 && rows > 1;
  switch (dt) {
  case LT_FLOAT32: COPY_LOOP(float, float, f32_id); break;
  case LT_FLOAT64: COPY_LOOP(double, double, f64_id); break;
  case LT_FLOAT16: COPY_LOOP(lt_half, float, f16_in); break;
  case LT_BFLOAT16: COPY_LOOP(lt_bfloat16, float, bf16_in); break;
  default: break;
  }
}

/* Convert back from the compute type, rounding to nearest even for float16/bfloat16. */
static void pack_out(lt_dtype dt, int64_t rows, int64_t cols, const void *src, int64_t sr,
                     int64_t sc, void *dst, int64_t dr, int64_t dc, bool par) {
  if (dr < dc) {
    int64_t t = rows; rows = cols, cols = t;
    t = sr, sr = sc, sc = t;
    t = dr, dr = dc, dc = t;
  }
  int nt = par ? lt_threads_for((double)rows * (double)cols, LT_GRAIN, loop_threads()) : 1;
  par = nt > 1 && rows > 1;
  switch (dt) {
  case LT_FLOAT32: COPY_LOOP(float, float, f32_id); break;
  case LT_FLOAT64: COPY_LOOP(double, double, f64_id); break;
  case LT_FLOAT16: COPY_LOOP(float, lt_half, lt_float_to_half); break;
  case LT_BFLOAT16: COPY_LOOP(float, lt_bfloat16, lt_float_to_bf16); break;
  default: break;
  }
}

/* ---- direct loops for tiny products (any strides) -------------------------------------------- */

#define DEFINE_DIRECT(NAME, T, ACC, IN, OUT)                                                       \
  static void NAME(int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const T *A,       \
                   int64_t sAb, int64_t sAr, int64_t sAc, const T *Bm, int64_t sBb, int64_t sBr,   \
                   int64_t sBc, double beta, T *O, int64_t sOb, int64_t sOr, int64_t sOc) {        \
    double mnk = (double)m * n * (k + 1);                                                          \
    /* scalar loops: ~32768 multiply-adds a thread are worth its wake-up */                       \
    int nt = batch > 1 ? lt_threads_for(batch * mnk, 32768, loop_threads()) : 1;                    \
    int64_t grab = mnk >= GRAB_MNK ? 1 : (int64_t)(GRAB_MNK / mnk);                                \
    _Pragma("omp parallel for num_threads(lt_team_size()) if (nt > 1) schedule(dynamic, grab)")    \
    for (int64_t b = 0; b < batch; b++)                                                            \
      for (int64_t i = 0; i < m; i++)                                                              \
        for (int64_t j = 0; j < n; j++) {                                                          \
          ACC acc = 0;                                                                             \
          for (int64_t p = 0; p < k; p++)                                                          \
            acc += IN(A[b * sAb + i * sAr + p * sAc]) * IN(Bm[b * sBb + p * sBr + j * sBc]);       \
          T *o = O + b * sOb + i * sOr + j * sOc;                                                  \
          ACC r = k > 0 ? (ACC)alpha * acc : (ACC)0;                                               \
          if (beta != 0) r += (ACC)beta * IN(*o);                                                  \
          *o = OUT(r);                                                                             \
        }                                                                                          \
  }

DEFINE_DIRECT(direct_f32, float, float, f32_id, f32_id)
DEFINE_DIRECT(direct_f64, double, double, f64_id, f64_id)
DEFINE_DIRECT(direct_f16, lt_half, float, f16_in, lt_float_to_half)
DEFINE_DIRECT(direct_bf16, lt_bfloat16, float, bf16_in, lt_float_to_bf16)

static void direct(lt_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                   const void *A, int64_t sAb, int64_t sAr, int64_t sAc, const void *Bm,
                   int64_t sBb, int64_t sBr, int64_t sBc, double beta, void *O, int64_t sOb,
                   int64_t sOr, int64_t sOc) {
#define DIRECT_CALL(F, T)                                                                          \
  F(batch, m, n, k, alpha, (const T *)A, sAb, sAr, sAc, (const T *)Bm, sBb, sBr, sBc, beta,        \
    (T *)O, sOb, sOr, sOc)
  switch (dt) {
  case LT_FLOAT32: DIRECT_CALL(direct_f32, float); break;
  case LT_FLOAT64: DIRECT_CALL(direct_f64, double); break;
  case LT_FLOAT16: DIRECT_CALL(direct_f16, lt_half); break;
  case LT_BFLOAT16: DIRECT_CALL(direct_bf16, lt_bfloat16); break;
  default: break;
  }
#undef DIRECT_CALL
}

/* ---- BLAS on views --------------------------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C with sizes that may exceed LT_BLAS_MAX_DIM (split into chunks; the
   leading dimensions are within it). */
static int gemm_chunked(bool dbl, bool tA, bool tB, int64_t M, int64_t N, int64_t K, double alpha,
                        const char *A, int64_t lda, const char *Bm, int64_t ldb, double beta,
                        char *C, int64_t ldc) {
  size_t es = dbl ? sizeof(double) : sizeof(float);
  for (int64_t i0 = 0; i0 < M; i0 += CHUNK)
    for (int64_t j0 = 0; j0 < N; j0 += CHUNK)
      for (int64_t p0 = 0; p0 == 0 || p0 < K; p0 += CHUNK) {
        int64_t mi = M - i0 < CHUNK ? M - i0 : CHUNK, nj = N - j0 < CHUNK ? N - j0 : CHUNK;
        int64_t kp = K - p0 < CHUNK ? K - p0 : CHUNK;
        const char *a = A + (size_t)(tA ? p0 * lda + i0 : i0 * lda + p0) * es;
        const char *b = Bm + (size_t)(tB ? j0 * ldb + p0 : p0 * ldb + j0) * es;
        char *c = C + (size_t)(i0 * ldc + j0) * es;
        double be = p0 == 0 ? beta : 1.0;
        if (dbl)
          LT_TRY(lt_blas_dgemm(tA, tB, mi, nj, kp, alpha, (const double *)a, lda, (const double *)b,
                               ldb, be, (double *)c, ldc));
        else
          LT_TRY(lt_blas_sgemm(tA, tB, mi, nj, kp, (float)alpha, (const float *)a, lda,
                               (const float *)b, ldb, (float)be, (float *)c, ldc));
      }
  return LT_OK;
}

static int gemv(bool dbl, bool trans, int64_t M, int64_t N, double alpha, const char *A,
                int64_t lda, const char *x, int64_t incx, double beta, char *y, int64_t incy) {
  if (dbl)
    return lt_blas_dgemv(trans, M, N, alpha, (const double *)A, lda, (const double *)x, incx, beta,
                         (double *)y, incy);
  return lt_blas_sgemv(trans, M, N, (float)alpha, (const float *)A, lda, (const float *)x, incx,
                       (float)beta, (float *)y, incy);
}

/* out = alpha a @ b + beta out for one m x k by k x n product whose operands BLAS can read. */
static int gemm_views(bool dbl, int64_t m, int64_t n, int64_t k, double alpha, const char *a,
                      view_t va, const char *b, view_t vb, double beta, char *c, view_t vc) {
  bool small_dims = m <= LT_BLAS_MAX_DIM && n <= LT_BLAS_MAX_DIM && k <= LT_BLAS_MAX_DIM;
  if ((m == 1 || n == 1) && k > 0 && small_dims && (double)m * n * k >= GEMV_MNK) {
    if (n == 1) { /* out column = A @ b column */
      int64_t incx = vb.trans ? 1 : vb.ld, incy = vc.trans ? 1 : vc.ld;
      return va.trans ? gemv(dbl, true, k, m, alpha, a, va.ld, b, incx, beta, c, incy)
                      : gemv(dbl, false, m, k, alpha, a, va.ld, b, incx, beta, c, incy);
    }
    /* out row = a row @ B, i.e. B^T @ a row */
    int64_t incx = va.trans ? va.ld : 1, incy = vc.trans ? vc.ld : 1;
    return vb.trans ? gemv(dbl, false, n, k, alpha, b, vb.ld, a, incx, beta, c, incy)
                    : gemv(dbl, true, k, n, alpha, b, vb.ld, a, incx, beta, c, incy);
  }
  if (!vc.trans)
    return gemm_chunked(dbl, va.trans, vb.trans, m, n, k, alpha, a, va.ld, b, vb.ld, beta, c,
                        vc.ld);
  /* column-major out: out^T = b^T a^T, row-major */
  return gemm_chunked(dbl, !vb.trans, !va.trans, n, m, k, alpha, b, vb.ld, a, va.ld, beta, c,
                      vc.ld);
}

/* ---- the floating-point plan ----------------------------------------------------------------- */

typedef struct {
  const char *p;
  int64_t sb, sr, sc, rows, cols;
  bool temp;      /* converted or packed into a temporary */
  bool shared;    /* ... once for the whole batch (batch stride 0) */
  int64_t tr, tc; /* the temporary's strides */
  view_t v;       /* as BLAS sees it (the temporary's view when temp) */
  size_t off;     /* offset of its temporary in a thread's scratch (not shared) */
} operand_t;

typedef struct {
  lt_dtype dt;
  bool dbl;
  size_t es, cs; /* element sizes: of dt, of the compute type */
  int64_t m, n, k;
  double alpha, beta;
  operand_t a, b, o;
} plan_t;

static void operand_init(operand_t *x, const void *p, int64_t sb, int64_t sr, int64_t sc,
                         int64_t rows, int64_t cols, bool convert) {
  x->p = p, x->sb = sb, x->sr = sr, x->sc = sc, x->rows = rows, x->cols = cols;
  x->v = blas_view(rows, cols, sr, sc);
  x->temp = convert || !x->v.ok;
  x->shared = false;
  x->off = 0;
  if (!x->temp) return;
  /* a converted column-major operand (a transposed weight) keeps its layout in the temporary, so
     that the conversion reads and writes memory in order instead of transposing */
  int64_t ld = rows > 1 ? rows : 1;
  if (convert && x->v.ok && x->v.trans && ld <= LT_BLAS_MAX_DIM) {
    x->tr = 1, x->tc = ld;
    x->v = (view_t){true, true, ld};
    return;
  }
  x->v = temp_view(rows, cols, &x->tr, &x->tc);
}

/* The operand of batch item bi as BLAS reads it: its temporary (filled here) or itself. */
static const char *operand_in(const plan_t *P, const operand_t *x, int64_t bi, char *scratch,
                              char *shared, bool par) {
  const char *src = x->p + (size_t)(bi * x->sb) * P->es;
  if (!x->temp) return src;
  if (x->shared) return shared;
  pack_in(P->dt, x->rows, x->cols, src, x->sr, x->sc, scratch + x->off, x->tr, x->tc, par);
  return scratch + x->off;
}

static int run_item(const plan_t *P, int64_t bi, char *scratch, char *shared_a, char *shared_b,
                    bool par) {
  const char *a = operand_in(P, &P->a, bi, scratch, shared_a, par);
  const char *b = operand_in(P, &P->b, bi, scratch, shared_b, par);
  const operand_t *o = &P->o;
  char *dst = (char *)o->p + (size_t)(bi * o->sb) * P->es;
  char *c = dst;
  if (o->temp) {
    c = scratch + o->off;
    if (P->beta != 0) pack_in(P->dt, o->rows, o->cols, dst, o->sr, o->sc, c, o->tr, o->tc, par);
  }
  LT_TRY(gemm_views(P->dbl, P->m, P->n, P->k, P->alpha, a, P->a.v, b, P->b.v, P->beta, c, o->v));
  if (o->temp) pack_out(P->dt, o->rows, o->cols, c, o->tr, o->tc, dst, o->sr, o->sc, par);
  return LT_OK;
}

static bool add_size(size_t *total, int64_t rows, int64_t cols, size_t cs) {
  size_t bytes;
  if (__builtin_mul_overflow((size_t)rows, (size_t)cols, &bytes) ||
      __builtin_mul_overflow(bytes, cs, &bytes) ||
      __builtin_add_overflow(bytes, (size_t)63, &bytes))
    return false;
  bytes &= ~(size_t)63;
  return !__builtin_add_overflow(*total, bytes, total);
}

static void *alloc_or_error(size_t bytes, bool *failed) {
  if (bytes == 0) return NULL;
  void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!p) {
    lt_error("matmul: out of memory (%zu bytes for temporaries)", bytes);
    *failed = true;
  }
  return p;
}

static int float_gemm(lt_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                      const void *A, int64_t sAb, int64_t sAr, int64_t sAc, const void *Bm,
                      int64_t sBb, int64_t sBr, int64_t sBc, double beta, void *out, int64_t sOb,
                      int64_t sOr, int64_t sOc) {
  /* one product instead of a batch when the batch stacks up along out's rows (A's batches are
     evenly spaced rows and B is shared: a linear layer on 3-d input) or along out's columns */
  if (batch > 1 && sBb == 0 && sAb > 0 && sOb > 0 &&
      (m == 1 ? (sAr = sAb, sOr = sOb, true) : sAb == m * sAr && sOb == m * sOr))
    m *= batch, batch = 1;
  else if (batch > 1 && sAb == 0 && sBb > 0 && sOb > 0 &&
           (n == 1 ? (sBc = sBb, sOc = sOb, true) : sBb == n * sBc && sOb == n * sOc))
    n *= batch, batch = 1;

  bool convert = dt == LT_FLOAT16 || dt == LT_BFLOAT16;
  plan_t P = {.dt = dt, .dbl = dt == LT_FLOAT64, .es = lt_dtype_size(dt),
              .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta};
  P.cs = P.dbl ? sizeof(double) : sizeof(float);
  operand_init(&P.a, A, sAb, sAr, sAc, m, k, convert);
  operand_init(&P.b, Bm, sBb, sBr, sBc, k, n, convert);
  operand_init(&P.o, out, sOb, sOr, sOc, m, n, convert);

  double mnk = (double)m * n * k;
  bool any_temp = P.a.temp || P.b.temp || P.o.temp;
  if (mnk < (any_temp ? TINY_PACKED_MNK : TINY_MNK)) {
    direct(dt, batch, m, n, k, alpha, A, sAb, sAr, sAc, Bm, sBb, sBr, sBc, beta, out, sOb, sOr,
           sOc);
    return LT_OK;
  }

  /* temporaries: shared ones (batch stride 0) filled once; the rest per thread */
  P.a.shared = P.a.temp && (batch == 1 || sAb == 0);
  P.b.shared = P.b.temp && (batch == 1 || sBb == 0);
  size_t shared_a_bytes = 0, shared_b_bytes = 0, scratch_bytes = 0;
  bool ok = true;
  if (P.a.shared) ok = ok && add_size(&shared_a_bytes, m, k, P.cs);
  if (P.b.shared) ok = ok && add_size(&shared_b_bytes, k, n, P.cs);
  if (P.a.temp && !P.a.shared)
    P.a.off = scratch_bytes, ok = ok && add_size(&scratch_bytes, m, k, P.cs);
  if (P.b.temp && !P.b.shared)
    P.b.off = scratch_bytes, ok = ok && add_size(&scratch_bytes, k, n, P.cs);
  if (P.o.temp) P.o.off = scratch_bytes, ok = ok && add_size(&scratch_bytes, m, n, P.cs);
  if (!ok) return lt_error("matmul: out of memory (temporaries for %lldx%lldx%lld overflow size_t)",
                           (long long)m, (long long)n, (long long)k);

  int nthreads =
      batch > 1 && mnk <= BATCH_PAR_MNK ? lt_threads_for((double)batch * mnk, LT_BLAS_THREAD_WORK, loop_threads()) : 1;
  if (nthreads > batch) nthreads = (int)batch;
  /* in parallel, the whole constant team takes items (core/iter.h, lt_team_size): scratch for each */
  if (nthreads > 1) nthreads = lt_team_size();
  int64_t grab = mnk >= GRAB_MNK ? 1 : (int64_t)(GRAB_MNK / (mnk + 1));
  size_t scratch_total;
  if (__builtin_mul_overflow(scratch_bytes, (size_t)nthreads, &scratch_total))
    return lt_error("matmul: out of memory (temporaries overflow size_t)");

  bool failed = false;
  char *shared_a = alloc_or_error(shared_a_bytes, &failed);
  char *shared_b = failed ? NULL : alloc_or_error(shared_b_bytes, &failed);
  char *scratch = failed ? NULL : alloc_or_error(scratch_total, &failed);
  if (failed) {
    free(shared_a), free(shared_b), free(scratch);
    return LT_ERR;
  }
  bool par = nthreads == 1; /* parallel conversions inside one product */
  if (P.a.shared) pack_in(dt, m, k, A, sAr, sAc, shared_a, P.a.tr, P.a.tc, par);
  if (P.b.shared) pack_in(dt, k, n, Bm, sBr, sBc, shared_b, P.b.tr, P.b.tc, par);

  int status = LT_OK;
  if (nthreads == 1) {
    for (int64_t bi = 0; bi < batch && status == LT_OK; bi++)
      status = run_item(&P, bi, scratch, shared_a, shared_b, par);
  } else {
    /* a failure on a worker thread leaves its message there: carry it back */
    char msg[256] = "";
    _Pragma("omp parallel for num_threads(nthreads) schedule(dynamic, grab)")
    for (int64_t bi = 0; bi < batch; bi++) {
      bool stop;
      _Pragma("omp atomic read") stop = failed;
      if (stop) continue;
      char *mine = scratch ? scratch + (size_t)omp_get_thread_num() * scratch_bytes : NULL;
      if (run_item(&P, bi, mine, shared_a, shared_b, false) != LT_OK) {
        _Pragma("omp critical(lt_matmul_error)")
        {
          if (!failed) snprintf(msg, sizeof msg, "%s", lt_last_error());
          _Pragma("omp atomic write") failed = true;
        }
      }
    }
    if (failed) status = lt_error("%s", msg);
  }
  free(shared_a), free(shared_b), free(scratch);
  return status;
}

/* ---- integers -----------------------------------------------------------------------------------
   Accumulate in 64 bits with wrapping (unsigned) arithmetic; the store wraps as a C cast does. */

#define DEFINE_INT_GEMM(NAME, T)                                                                   \
  static void NAME(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t alpha, const T *A,      \
                   int64_t sAb, int64_t sAr, int64_t sAc, const T *Bm, int64_t sBb, int64_t sBr,   \
                   int64_t sBc, int64_t beta, T *O, int64_t sOb, int64_t sOr, int64_t sOc,         \
                   uint64_t *acc_all, int nthreads) {                                              \
    bool par = nthreads > 1;                                                                       \
    int64_t grab = (double)n * k >= GRAB_MNK ? 1 : (int64_t)(GRAB_MNK / ((double)n * k + 1));      \
    _Pragma("omp parallel for num_threads(nthreads) if (par) schedule(dynamic, grab)")             \
    for (int64_t r = 0; r < batch * m; r++) {                                                      \
      int64_t b = r / m, i = r % m;                                                                \
      uint64_t *acc = acc_all + (size_t)omp_get_thread_num() * (size_t)n;                          \
      for (int64_t j = 0; j < n; j++) acc[j] = 0;                                                  \
      for (int64_t p = 0; p < k; p++) {                                                            \
        uint64_t a = (uint64_t)(int64_t)A[b * sAb + i * sAr + p * sAc];                            \
        const T *brow = Bm + b * sBb + p * sBr;                                                    \
        for (int64_t j = 0; j < n; j++) acc[j] += a * (uint64_t)(int64_t)brow[j * sBc];            \
      }                                                                                            \
      T *orow = O + b * sOb + i * sOr;                                                             \
      for (int64_t j = 0; j < n; j++) {                                                            \
        uint64_t v = (uint64_t)alpha * acc[j];                                                     \
        if (beta != 0) v += (uint64_t)beta * (uint64_t)(int64_t)orow[j * sOc];                     \
        orow[j * sOc] = (T)(int64_t)v;                                                             \
      }                                                                                            \
    }                                                                                              \
  }

DEFINE_INT_GEMM(int_gemm_i64, int64_t)
DEFINE_INT_GEMM(int_gemm_i32, int32_t)
DEFINE_INT_GEMM(int_gemm_i16, int16_t)
DEFINE_INT_GEMM(int_gemm_i8, int8_t)
DEFINE_INT_GEMM(int_gemm_u8, uint8_t)

static int int_gemm(lt_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                    const void *A, int64_t sAb, int64_t sAr, int64_t sAc, const void *Bm,
                    int64_t sBb, int64_t sBr, int64_t sBc, double beta, void *out, int64_t sOb,
                    int64_t sOr, int64_t sOc) {
  /* integral and within int64 (2^63 itself is not) */
  if (!(alpha >= -9223372036854775808.0 && alpha < 9223372036854775808.0 &&
        alpha == (double)(int64_t)alpha && beta >= -9223372036854775808.0 &&
        beta < 9223372036854775808.0 && beta == (double)(int64_t)beta))
    return lt_error("matmul: alpha and beta must be integers for %s (got alpha=%g, beta=%g)",
                    lt_dtype_name(dt), alpha, beta);
  int64_t ia = (int64_t)alpha, ib = (int64_t)beta;
  /* scalar loops: ~32768 multiply-adds a thread are worth its wake-up */
  int nthreads = batch * m > 1 ? lt_threads_for((double)batch * m * n * (k + 1), 32768, loop_threads()) : 1;
  if (nthreads > batch * m) nthreads = (int)(batch * m);
  /* in parallel, the whole constant team takes rows (core/iter.h, lt_team_size): an accumulator each */
  if (nthreads > 1) nthreads = lt_team_size();
  size_t bytes;
  if (__builtin_mul_overflow((size_t)n, (size_t)nthreads * sizeof(uint64_t), &bytes))
    return lt_error("matmul: out of memory (accumulators for n=%lld overflow size_t)",
                    (long long)n);
  uint64_t *acc = malloc(bytes);
  if (!acc) return lt_error("matmul: out of memory (%zu bytes for accumulators)", bytes);
#define INT_CALL(F, T)                                                                             \
  F(batch, m, n, k, ia, (const T *)A, sAb, sAr, sAc, (const T *)Bm, sBb, sBr, sBc, ib, (T *)out,   \
    sOb, sOr, sOc, acc, nthreads)
  switch (dt) {
  case LT_INT64: INT_CALL(int_gemm_i64, int64_t); break;
  case LT_INT32: INT_CALL(int_gemm_i32, int32_t); break;
  case LT_INT16: INT_CALL(int_gemm_i16, int16_t); break;
  case LT_INT8: INT_CALL(int_gemm_i8, int8_t); break;
  case LT_UINT8: INT_CALL(int_gemm_u8, uint8_t); break;
  default: break;
  }
#undef INT_CALL
  free(acc);
  return LT_OK;
}

/* ---- entry point ----------------------------------------------------------------------------- */

/* ---- bfloat16 on kernels/cpu/bgemm.c where the CPU has AVX512_BF16 (checked at run time) ------
   Operands BLAS could read as they are (a unit stride each, output rows contiguous) go there; 1
   means "not taken": the float32 path runs (on converted copies), as it does for smaller products
   (below BF16_KERNEL_MNK multiply-adds packing costs more than it saves) and other layouts.
   LT_NO_NATIVE_BF16=1 in the environment turns the kernel off (to compare with the float32 path). */
enum { BF16_KERNEL_MNK = 1 << 15 };
static bool bf16_kernel_on(void) {
  static _Atomic int on = -1;
  int v = on;
  if (v < 0) on = v = lt_bgemm_supported() && getenv("LT_NO_NATIVE_BF16") == NULL;
  return v;
}
static int bf16_kernels(int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const void *A,
                        int64_t sAb, int64_t sAr, int64_t sAc, const void *B, int64_t sBb, int64_t sBr,
                        int64_t sBc, double beta, void *out, int64_t sOb, int64_t sOr, int64_t sOc) {
  if (!bf16_kernel_on()) return 1;
  view_t va = blas_view(m, k, sAr, sAc), vb = blas_view(k, n, sBr, sBc);
  if (!va.ok || !vb.ok || !(sOc == 1 || n == 1) || (n > 1 && sOr < n) || m > LT_BLAS_MAX_DIM ||
      n > LT_BLAS_MAX_DIM || k > LT_BLAS_MAX_DIM)
    return 1;
  int64_t ldc = sOr > 0 ? sOr : 1; /* n == 1: rows of one element, sOr apart */
  if (m > 1 && ldc < (n > 1 ? n : 1)) return 1;
  int nt = (double)m * n * k >= (double)LT_BLAS_SPLIT_MIN
               ? lt_threads_for((double)m * n * k, LT_BLAS_THREAD_WORK, loop_threads())
               : 1;
  for (int64_t bi = 0; bi < batch; bi++) {
    const uint16_t *a = (const uint16_t *)A + bi * sAb, *b = (const uint16_t *)B + bi * sBb;
    uint16_t *o = (uint16_t *)out + bi * sOb;
    if (lt_bgemm_avx512bf16(va.trans, vb.trans, m, n, k, (float)alpha, a, va.ld, b, vb.ld, (float)beta, o,
                            ldc, nt) != 0)
      return lt_error("matmul: out of memory (bfloat16 packing buffers)");
  }
  return LT_OK;
}


int lt_cpu_gemm(lt_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                const void *A, int64_t sAb, int64_t sAr, int64_t sAc,
                const void *B, int64_t sBb, int64_t sBr, int64_t sBc,
                double beta, void *out, int64_t sOb, int64_t sOr, int64_t sOc) {
  if (batch < 0 || m < 0 || n < 0 || k < 0)
    return lt_error("matmul: negative size (batch=%lld, m=%lld, n=%lld, k=%lld)", (long long)batch,
                    (long long)m, (long long)n, (long long)k);
  if (sAb < 0 || sAr < 0 || sAc < 0 || sBb < 0 || sBr < 0 || sBc < 0 || sOb < 0 || sOr < 0 ||
      sOc < 0)
    return lt_error("matmul: negative strides are not supported");
  switch (dt) {
  case LT_FLOAT32: case LT_FLOAT64: case LT_FLOAT16: case LT_BFLOAT16:
    if (batch == 0 || m == 0 || n == 0) return LT_OK;
    if (dt == LT_BFLOAT16 && k > 0 && (double)m * n * k >= BF16_KERNEL_MNK) {
      int rc = bf16_kernels(batch, m, n, k, alpha, A, sAb, sAr, sAc, B, sBb, sBr, sBc, beta, out, sOb, sOr, sOc);
      if (rc != 1) return rc;
    }
    return float_gemm(dt, batch, m, n, k, alpha, A, sAb, sAr, sAc, B, sBb, sBr, sBc, beta, out, sOb,
                      sOr, sOc);
  case LT_INT64: case LT_INT32: case LT_INT16: case LT_INT8: case LT_UINT8:
    if (batch == 0 || m == 0 || n == 0) return LT_OK;
    return int_gemm(dt, batch, m, n, k, alpha, A, sAb, sAr, sAc, B, sBb, sBr, sBc, beta, out, sOb,
                    sOr, sOc);
  case LT_BOOL:
    return lt_error("matmul: bool is not supported");
  default:
    return lt_error("matmul: invalid dtype %d", (int)dt);
  }
}

int lt_cpu_gemm_bias(lt_dtype dt, int64_t m, int64_t n, int64_t k, double alpha, const void *A,
                     int64_t sAr, int64_t sAc, const void *B, int64_t sBr, int64_t sBc,
                     const void *bias, void *out) {
  if (dt != LT_FLOAT32 || m <= 0 || n <= 0 || k <= 0 || sAr < 0 || sAc < 0 || sBr < 0 || sBc < 0)
    return 1;
  double mnk = (double)m * n * k;
  if (m > LT_BLAS_MAX_DIM || n > LT_BLAS_MAX_DIM || k > LT_BLAS_MAX_DIM || mnk < TINY_MNK ||
      ((m == 1 || n == 1) && mnk >= GEMV_MNK))
    return 1; /* direct loops, gemv or chunks: the general path */
  view_t va = blas_view(m, k, sAr, sAc), vb = blas_view(k, n, sBr, sBc);
  if (!va.ok || !vb.ok) return 1;
  return lt_blas_sgemm_bias(va.trans, vb.trans, m, n, k, (float)alpha, A, va.ld, B, vb.ld, bias,
                            out, n);
}
