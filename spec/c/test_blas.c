/* Tests of core/blas.c (run-time loading of OpenBLAS, choice of its kernels) and of
   kernels/cpu/matmul.c (lt_cpu_gemm) against a float64 / wrapping-int64 reference.

   Build (from the repository root):
     gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fopenmp -I. -Icore -Ikernels \
         spec/c/test_blas.c core/blas.c core/error.c core/dtype.c kernels/cpu/matmul.c \
         -ldl -lm -lpthread -o test_blas
   Run:
     ./test_blas       the whole suite, then the same suite in child processes with
                       OPENBLAS_CORETYPE=Haswell (the user's choice must be honoured), with
                       LUTORCH_BLAS_LIB=none (portable loops), and with the kernel check made to
                       fail once (retry with OpenBLAS's own choice) and always (portable loops)
     OPENBLAS_CORETYPE=Haswell ./test_blas --expect-core Haswell
                       one run that also checks which kernels were loaded
   Options: --expect-core NAME (lt_blas_corename() must be NAME), --expect-retry (the first kernel
   check failed and the library's own choice was kept), --no-children, --quick (fewer large
   products; the children run with it), --tag TEXT (prefix of lines).
   Output: one line per check, then "N passed, N failed"; the exit status is 1 on any failure. */
#include "blas.h"
#include "cpu/bgemm.h"
#include "cpu/matmul.h"
#include "dtype.h"
#include "error.h"
#include "half.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int passed, failed;
static const char *tag = "";
static bool quick; /* --quick: fewer large products */

static void check(bool ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s%s - ", tag, ok ? "ok    " : "FAILED");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (ok) passed++;
  else failed++;
}

/* ---- typed buffers --------------------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0 * 2 - 1; }

static bool is_float(lt_dtype dt) { return lt_dtype_is_floating(dt); }

static double load(lt_dtype dt, const void *buf, int64_t i) {
  switch (dt) {
  case LT_FLOAT32: return ((const float *)buf)[i];
  case LT_FLOAT64: return ((const double *)buf)[i];
  case LT_FLOAT16: return lt_half_to_float(((const lt_half *)buf)[i]);
  case LT_BFLOAT16: return lt_bf16_to_float(((const lt_bfloat16 *)buf)[i]);
  case LT_INT64: return (double)((const int64_t *)buf)[i];
  case LT_INT32: return ((const int32_t *)buf)[i];
  case LT_INT16: return ((const int16_t *)buf)[i];
  case LT_INT8: return ((const int8_t *)buf)[i];
  case LT_UINT8: return ((const uint8_t *)buf)[i];
  default: return 0;
  }
}

static int64_t load_int(lt_dtype dt, const void *buf, int64_t i) {
  switch (dt) {
  case LT_INT64: return ((const int64_t *)buf)[i];
  case LT_INT32: return ((const int32_t *)buf)[i];
  case LT_INT16: return ((const int16_t *)buf)[i];
  case LT_INT8: return ((const int8_t *)buf)[i];
  case LT_UINT8: return ((const uint8_t *)buf)[i];
  default: return 0;
  }
}

/* v wrapped to dt as a C cast does */
static int64_t wrap(lt_dtype dt, int64_t v) {
  switch (dt) {
  case LT_INT32: return (int32_t)v;
  case LT_INT16: return (int16_t)v;
  case LT_INT8: return (int8_t)v;
  case LT_UINT8: return (uint8_t)v;
  default: return v;
  }
}

static void fill_random(lt_dtype dt, void *buf, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case LT_FLOAT32: ((float *)buf)[i] = (float)uniform(); break;
    case LT_FLOAT64: ((double *)buf)[i] = uniform(); break;
    case LT_FLOAT16: ((lt_half *)buf)[i] = lt_float_to_half((float)uniform()); break;
    case LT_BFLOAT16: ((lt_bfloat16 *)buf)[i] = lt_float_to_bf16((float)uniform()); break;
    /* int64 values up to 2^33 so that products and sums wrap */
    case LT_INT64: ((int64_t *)buf)[i] = (int64_t)(next_u64() >> 30) - ((int64_t)1 << 33); break;
    case LT_INT32: ((int32_t *)buf)[i] = (int32_t)(next_u64() >> 32); break;
    case LT_INT16: ((int16_t *)buf)[i] = (int16_t)(next_u64() >> 48); break;
    case LT_INT8: ((int8_t *)buf)[i] = (int8_t)(next_u64() >> 56); break;
    case LT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(next_u64() >> 56); break;
    default: break;
    }
  }
}

static void fill_nan(lt_dtype dt, void *buf, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case LT_FLOAT32: ((float *)buf)[i] = NAN; break;
    case LT_FLOAT64: ((double *)buf)[i] = NAN; break;
    case LT_FLOAT16: ((lt_half *)buf)[i].bits = 0x7e00; break;
    case LT_BFLOAT16: ((lt_bfloat16 *)buf)[i].bits = 0x7fc0; break;
    default: break;
    }
  }
}

/* ---- layouts --------------------------------------------------------------------------------- */

typedef enum { CONTIG, TRANS, STRIDED } layout_kind;
static const char *const kind_names[] = {"contig", "trans", "strided"};

typedef struct {
  int64_t sb, sr, sc, nelem;
} layout_t;

/* strides of a batch x rows x cols operand; broadcast: batch stride 0 */
static layout_t make_layout(layout_kind kind, int64_t batch, int64_t rows, int64_t cols,
                            bool broadcast) {
  layout_t l;
  switch (kind) {
  case CONTIG: l.sr = cols, l.sc = 1, l.sb = rows * cols; break;
  case TRANS: l.sr = 1, l.sc = rows, l.sb = rows * cols; break;
  default: l.sc = 2, l.sr = 2 * cols + 3, l.sb = rows * l.sr + 5; break; /* every other element */
  }
  if (l.sb == 0) l.sb = 1;
  if (broadcast) l.sb = 0;
  int64_t nb = broadcast ? 1 : batch;
  l.nelem = 1 + (nb > 0 ? nb - 1 : 0) * l.sb + (rows > 0 ? rows - 1 : 0) * l.sr +
            (cols > 0 ? cols - 1 : 0) * l.sc;
  return l;
}

/* ---- one product against the reference ------------------------------------------------------- */

typedef struct {
  lt_dtype dt;
  int64_t batch, m, n, k;
  layout_kind la, lb, lo;
  bool bcast_a, bcast_b;
  double alpha, beta;
  bool nan_out; /* fill out with NaN (beta must be 0) */
} case_t;

static void run_case(const case_t *c) {
  lt_dtype dt = c->dt;
  size_t es = lt_dtype_size(dt);
  layout_t la = make_layout(c->la, c->batch, c->m, c->k, c->bcast_a);
  layout_t lb = make_layout(c->lb, c->batch, c->k, c->n, c->bcast_b);
  layout_t lo = make_layout(c->lo, c->batch, c->m, c->n, false);
  void *A = malloc(la.nelem * es), *B = malloc(lb.nelem * es), *O = malloc(lo.nelem * es);
  void *O0 = malloc(lo.nelem * es);
  char *covered = calloc(lo.nelem, 1);
  char desc[256];
  snprintf(desc, sizeof desc,
           "%s %lldx%lldx%lld batch=%lld A=%s%s B=%s%s out=%s alpha=%g beta=%g%s", lt_dtype_name(dt),
           (long long)c->m, (long long)c->n, (long long)c->k,
           (long long)c->batch, kind_names[c->la], c->bcast_a ? "(bcast)" : "", kind_names[c->lb],
           c->bcast_b ? "(bcast)" : "", kind_names[c->lo], c->alpha, c->beta,
           c->nan_out ? " out=NaN" : "");
  if (!A || !B || !O || !O0 || !covered) {
    check(false, "%s: test out of memory", desc);
    goto done;
  }
  fill_random(dt, A, la.nelem);
  fill_random(dt, B, lb.nelem);
  fill_random(dt, O, lo.nelem);
  if (c->nan_out) fill_nan(dt, O, lo.nelem);
  memcpy(O0, O, lo.nelem * es);

  int rc = lt_cpu_gemm(dt, c->batch, c->m, c->n, c->k, c->alpha, A, la.sb, la.sr, la.sc, B, lb.sb,
                       lb.sr, lb.sc, c->beta, O, lo.sb, lo.sr, lo.sc);
  if (rc != LT_OK) {
    check(false, "%s: error: %s", desc, lt_last_error());
    goto done;
  }
  /* float tolerance: the output rounding of the dtype plus the accumulation error bound */
  double round_rel = dt == LT_FLOAT16 ? 1.0 / 2048 : dt == LT_BFLOAT16 ? 1.0 / 256 : 0;
  double acc_eps = dt == LT_FLOAT64 ? 2.3e-16 : 1.2e-7;
  double max_err = 0, max_ratio = 0;
  int64_t bad = 0;
  /* the inputs as doubles / int64 (exact), so that the reference loop is plain */
  double *Ad = malloc(la.nelem * sizeof *Ad), *Bd = malloc(lb.nelem * sizeof *Bd);
  int64_t *Ai = malloc(la.nelem * sizeof *Ai), *Bi = malloc(lb.nelem * sizeof *Bi);
  if (!Ad || !Bd || !Ai || !Bi) {
    free(Ad), free(Bd), free(Ai), free(Bi);
    check(false, "%s: test out of memory", desc);
    goto done;
  }
  for (int64_t x = 0; x < la.nelem; x++) Ad[x] = load(dt, A, x), Ai[x] = load_int(dt, A, x);
  for (int64_t x = 0; x < lb.nelem; x++) Bd[x] = load(dt, B, x), Bi[x] = load_int(dt, B, x);
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t j = 0; j < c->n; j++) {
        int64_t oi = b * lo.sb + i * lo.sr + j * lo.sc;
        covered[oi] = 1;
        if (is_float(dt)) {
          double acc = 0, abs_acc = 0;
          for (int64_t p = 0; p < c->k; p++) {
            double x = Ad[b * la.sb + i * la.sr + p * la.sc];
            double y = Bd[b * lb.sb + p * lb.sr + j * lb.sc];
            acc += x * y, abs_acc += fabs(x * y);
          }
          double c0 = load(dt, O0, oi);
          double ref = c->alpha * acc + (c->beta == 0 ? 0 : c->beta * c0);
          double bound = fabs(c->alpha) * abs_acc + (c->beta == 0 ? 0 : fabs(c->beta * c0));
          double tol = round_rel * fabs(ref) + acc_eps * (c->k + 4) * bound * (1 + round_rel) +
                       (dt == LT_FLOAT16 ? 6e-8 : 1e-300);
          double err = fabs(load(dt, O, oi) - ref);
          if (!(err <= tol)) bad++;
          if (err > max_err || isnan(err)) max_err = err;
          if (tol > 0 && err / tol > max_ratio) max_ratio = err / tol;
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < c->k; p++)
            acc += (uint64_t)Ai[b * la.sb + i * la.sr + p * la.sc] *
                   (uint64_t)Bi[b * lb.sb + p * lb.sr + j * lb.sc];
          uint64_t v = (uint64_t)(int64_t)c->alpha * acc;
          if (c->beta != 0) v += (uint64_t)(int64_t)c->beta * (uint64_t)load_int(dt, O0, oi);
          int64_t want = wrap(dt, (int64_t)v), got = load_int(dt, O, oi);
          if (got != want) bad++;
        }
      }
  free(Ad), free(Bd), free(Ai), free(Bi);
  /* out's elements outside the matrices are untouched */
  int64_t touched = 0;
  for (int64_t x = 0; x < lo.nelem; x++)
    if (!covered[x] && memcmp((char *)O + x * es, (char *)O0 + x * es, es) != 0) touched++;
  if (is_float(dt))
    check(bad == 0 && touched == 0, "%s: max err %.3g (%.2f of tolerance)%s%s", desc, max_err,
          max_ratio, bad ? " WRONG VALUES" : "", touched ? " WROTE OUTSIDE OUT" : "");
  else
    check(bad == 0 && touched == 0, "%s: exact%s%s", desc, bad ? " WRONG VALUES" : "",
          touched ? " WROTE OUTSIDE OUT" : "");
done:
  free(A), free(B), free(O), free(O0), free(covered);
}

static const lt_dtype all_dtypes[] = {LT_FLOAT32, LT_FLOAT64, LT_FLOAT16, LT_BFLOAT16, LT_INT64,
                                      LT_INT32,   LT_INT16,   LT_INT8,    LT_UINT8};

static void matmul_suite(void) {
  static const int64_t sizes[][3] = {{1, 1, 1}, {67, 45, 53}, {256, 256, 256}};
  static const layout_kind combos[][3] = {{CONTIG, CONTIG, CONTIG}, {TRANS, TRANS, CONTIG},
                                          {STRIDED, STRIDED, STRIDED}, {CONTIG, TRANS, TRANS},
                                          {TRANS, CONTIG, STRIDED}};
  /* alpha, beta, NaN in out */
  static const double float_ab[][3] = {
      {1, 0, 1}, {0.5, 0, 1}, {1, 1, 0}, {-1.5, 0.25, 0}, {2, -1, 0}};
  static const double int_ab[][2] = {{1, 0}, {2, -1}, {1, 1}, {-3, 2}, {1, 0}};
  for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
    lt_dtype dt = all_dtypes[d];
    bool fl = is_float(dt);
    int ci = 0;
    for (size_t s = 0; s < 3; s++)
      for (size_t l = 0; l < 5; l++, ci++) {
        /* the large size: every layout for float32/float64, two for the others (the reference
           loop is the test's cost); --quick: the contiguous one for float32/float64 only */
        bool wide = dt == LT_FLOAT32 || dt == LT_FLOAT64;
        if (s == 2 && (quick ? !wide || l != 0 : !wide && l != 0 && l != 2)) continue;
        case_t c = {dt, 1, sizes[s][0], sizes[s][1], sizes[s][2], combos[l][0], combos[l][1],
                    combos[l][2], false, false, 0, 0, false};
        if (fl) {
          c.alpha = float_ab[ci % 5][0], c.beta = float_ab[ci % 5][1];
          c.nan_out = float_ab[ci % 5][2] != 0;
        } else {
          c.alpha = int_ab[ci % 5][0], c.beta = int_ab[ci % 5][1];
        }
        run_case(&c);
      }
    double al = fl ? 0.5 : 2, be = fl ? 0.25 : -1;
    case_t extra[] = {
        /* batches: B shared (merged into one product), A shared, both batched, NaN out */
        {dt, 3, 67, 45, 53, CONTIG, CONTIG, CONTIG, false, true, 1, 0, fl},
        {dt, 3, 67, 45, 53, TRANS, STRIDED, CONTIG, false, true, al, be, false},
        {dt, 3, 67, 45, 53, CONTIG, CONTIG, CONTIG, true, false, al, be, false},
        {dt, 3, 67, 45, 53, CONTIG, TRANS, TRANS, true, false, 1, 0, false},
        {dt, 3, 67, 45, 53, TRANS, STRIDED, STRIDED, false, false, al, be, false},
        {dt, 3, 1, 45, 53, CONTIG, CONTIG, CONTIG, false, true, al, be, false},
        /* many small products: parallel over the batch */
        {dt, 37, 5, 7, 3, CONTIG, CONTIG, STRIDED, false, false, al, be, false},
        {dt, 37, 9, 11, 13, STRIDED, TRANS, CONTIG, false, false, 1, 0, fl},
        {dt, 40, 16, 16, 16, CONTIG, CONTIG, CONTIG, false, true, al, be, false},
        /* k == 0: out = beta out, zeros when beta == 0 */
        {dt, 2, 3, 4, 0, CONTIG, CONTIG, CONTIG, false, false, 1, 0, fl},
        {dt, 2, 3, 4, 0, CONTIG, CONTIG, STRIDED, false, false, al, be, false},
        {dt, 1, 70, 80, 0, CONTIG, CONTIG, TRANS, false, false, 1, 0, fl},
        /* matrix-vector products (gemv path) */
        {dt, 1, 1, 600, 700, CONTIG, CONTIG, STRIDED, false, false, al, be, false},
        {dt, 1, 1, 600, 700, STRIDED, TRANS, CONTIG, false, false, 1, 0, fl},
        {dt, 1, 700, 1, 600, CONTIG, STRIDED, STRIDED, false, false, al, be, false},
        {dt, 1, 700, 1, 600, TRANS, CONTIG, CONTIG, false, false, 1, 0, fl},
        /* wide products: split over threads by columns */
        {dt, 1, 20, 700, 60, CONTIG, TRANS, STRIDED, false, false, al, be, false},
        {dt, 1, 21, 701, 61, TRANS, CONTIG, CONTIG, false, false, 1, 0, fl},
        /* K and N beyond one block of the portable loops */
        {dt, 1, 19, 23, 300, TRANS, CONTIG, CONTIG, false, false, al, be, false},
        {dt, 1, 3, 2100, 5, CONTIG, TRANS, CONTIG, false, false, 1, 0, fl},
        /* tiny products (direct loops) */
        {dt, 1, 2, 2, 1, STRIDED, TRANS, STRIDED, false, false, al, be, false},
        {dt, 5, 1, 3, 2, CONTIG, CONTIG, CONTIG, false, false, 1, 0, fl},
        /* degenerate: nothing to do */
        {dt, 0, 4, 5, 6, CONTIG, CONTIG, CONTIG, false, false, 1, 0, false},
        {dt, 2, 0, 5, 6, CONTIG, CONTIG, CONTIG, false, false, 1, 0, false},
        {dt, 2, 4, 0, 6, CONTIG, CONTIG, CONTIG, false, false, 1, 0, false},
    };
    for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) run_case(&extra[e]);
  }
}

/* lt_blas_sgemm on shapes around the tiles and blocks of kernels/cpu/sgemm.c (8 x 48 tiles, 256-deep
   slices, 144-row and 1920-column blocks), every transpose, padded leading dimensions, alpha and
   beta, NaN in C with beta 0, on one and two threads, against a float64 reference; and the
   padding between C's rows is not written. Whichever kernels run float32 products (lutorch's own
   on AVX-512 CPUs, else BLAS) must pass it. */
static void sgemm_case(int64_t M, int64_t N, int64_t K, bool ta, bool tb, int64_t pad, int64_t ldc_pad,
                       float alpha, float beta, int threads, bool nan_c) {
  int nt0 = lt_blas_num_threads();
  int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + ldc_pad;
  int64_t arows = ta ? K : M, brows = tb ? N : K;
  float *A = malloc(sizeof(float) * arows * lda), *Bm = malloc(sizeof(float) * brows * ldb);
  float *C = malloc(sizeof(float) * M * ldc), *C0 = malloc(sizeof(float) * M * ldc);
  if (!A || !Bm || !C || !C0) {
    check(false, "sgemm %lldx%lldx%lld: test out of memory", (long long)M, (long long)N, (long long)K);
    free(A), free(Bm), free(C), free(C0);
    return;
  }
  fill_random(LT_FLOAT32, A, arows * lda);
  fill_random(LT_FLOAT32, Bm, brows * ldb);
  fill_random(LT_FLOAT32, C, M * ldc);
  if (nan_c) fill_nan(LT_FLOAT32, C, M * ldc);
  memcpy(C0, C, sizeof(float) * M * ldc);
  lt_blas_set_num_threads(threads);
  int rc = lt_blas_sgemm(ta, tb, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc);
  /* the same product again: the same bits (the sums' grouping depends on the thread count only) */
  float *C2 = malloc(sizeof(float) * M * ldc);
  bool same = C2 != NULL;
  if (C2) {
    memcpy(C2, C0, sizeof(float) * M * ldc);
    int rc2 = lt_blas_sgemm(ta, tb, M, N, K, alpha, A, lda, Bm, ldb, beta, C2, ldc);
    same = rc2 == rc && memcmp(C, C2, sizeof(float) * M * ldc) == 0;
    free(C2);
  }
  lt_blas_set_num_threads(nt0);
  double max_ratio = 0;
  int64_t bad = 0, outside = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < ldc; j++) {
      float got = C[i * ldc + j];
      if (j >= N) { /* padding: untouched, NaN included */
        if (memcmp(&got, &C0[i * ldc + j], sizeof got) != 0) outside++;
        continue;
      }
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < K; p++) {
        double x = ta ? A[p * lda + i] : A[i * lda + p], y = tb ? Bm[j * ldb + p] : Bm[p * ldb + j];
        acc += x * y, mag += fabs(x * y);
      }
      double old = beta == 0 ? 0.0 : beta * (double)C0[i * ldc + j]; /* C0 may be NaN */
      double want = alpha * acc + old;
      double tol = 1.2e-7 * (K + 2) * (fabs(alpha) * mag + fabs(old)) + 1e-30;
      double err = fabs(got - want);
      if (!(err <= tol)) bad++;
      else if (err / tol > max_ratio) max_ratio = err / tol;
    }
  check(rc == LT_OK && bad == 0 && outside == 0 && same,
        "sgemm %lldx%lldx%lld ta=%d tb=%d lda/ldb/ldc +%lld/+%lld/+%lld alpha=%g beta=%g "
        "threads=%d: %s (%.2f of tolerance)%s",
        (long long)M, (long long)N, (long long)K, ta, tb, (long long)pad, (long long)pad,
        (long long)(ldc - N), alpha, beta, threads, rc == LT_OK ? "ok" : lt_last_error(), max_ratio,
        bad ? " WRONG VALUES" : outside ? " WROTE OUTSIDE C" : !same ? " NOT THE SAME BITS TWICE" : "");
  free(A), free(Bm), free(C), free(C0);
}

static void sgemm_suite(void) {
  static const int64_t shapes[][3] = {
      {1, 1, 1},     {8, 48, 256},   {7, 47, 255},  {9, 49, 257},  {17, 97, 3},   {64, 512, 300},
      {143, 10, 60}, {145, 95, 513}, {300, 50, 40}, {5, 1925, 20}, {40, 7, 1000}, {2, 3, 2},
      {120, 143, 70}, {128, 1930, 30}, {129, 143, 33},
      /* A @ B^T with at most 16 rows of B and K >= 64: dot products, the threads splitting A's rows */
      {100, 16, 64},  {37, 13, 130},  {18, 3, 700}};
  printf("%s# float32 products: %s\n", tag, lt_blas_sgemm_native() ? "lutorch's AVX-512 kernels" : "BLAS");
  int n = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int v = 0; v < 4; v++, n++) {
      float alpha = n % 3 == 0 ? 1.0f : n % 3 == 1 ? -0.5f : 2.0f;
      float beta = n % 4 == 0 ? 0.0f : n % 4 == 1 ? 1.0f : n % 4 == 2 ? 0.25f : 0.0f;
      sgemm_case(shapes[s][0], shapes[s][1], shapes[s][2], v & 1, (v >> 1) & 1, (int64_t)((s + v) % 3),
                 (n % 2) * 5, alpha, beta, n % 2 ? 1 : 2, beta == 0 && n % 8 == 0);
    }
  /* A @ B with few rows of A and deep B, beta 0, on several threads: split along the depth (each
     thread's part of the sum, added after in thread order), as a Linear layer's input gradient;
     depths not a whole number of 8-row units, B's rows longer than its in-place limit (1024) and
     wider than a column block (1920), three threads, NaN in C; each at least 3 * 2^20 multiply-adds,
     so that three threads are given it (LT_BLAS_THREAD_WORK a thread) */
  static const int64_t deep[][3] = {{64, 512, 256}, {64, 784, 512}, {128, 300, 257}, {33, 1100, 90},
                                     {100, 1930, 203}, {16, 512, 400}, {1, 1000, 3200}};
  for (size_t s = 0; s < sizeof deep / sizeof deep[0]; s++)
    for (int threads = 2; threads <= 3; threads++)
      sgemm_case(deep[s][0], deep[s][1], deep[s][2], false, false, (int64_t)(s % 2), (int64_t)(s % 3),
                 s % 2 ? -0.5f : 1.0f, 0.0f, threads, s % 3 == 0);
}

/* kernels/cpu/bgemm.c directly (where the CPU has AVX512_BF16): shapes around its tiles and
   blocks (8 x 48 tiles, 144-row and 480-column blocks), odd and even K, every transpose, odd and
   even leading dimensions (the packing's fast paths need even ones), alpha and beta, NaN in C with
   beta 0, one and two threads; against float64 sums of the bf16 products, each result rounded to
   bf16 once. The padding between C's rows is not written. */
static void bgemm_suite(void) {
  if (!lt_bgemm_supported()) {
    check(true, "skip: bgemm (the CPU has no AVX512_BF16)");
    return;
  }
  static const int64_t shapes[][3] = {{8, 48, 16},  {7, 47, 15},  {9, 49, 17},    {64, 512, 784},
                                      {145, 10, 33}, {3, 481, 64}, {40, 97, 1001}, {1, 1, 1}};
  int n = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int v = 0; v < 8; v++, n++) {
      int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
      bool ta = v & 1, tb = (v >> 1) & 1;
      int64_t pad = (v >> 2) & 1; /* odd or even leading dimensions */
      int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + (n % 2) * 3;
      int64_t arows = ta ? K : M, brows = tb ? N : K;
      float alpha = n % 3 == 0 ? 1.0f : n % 3 == 1 ? -0.5f : 2.0f;
      float beta = n % 4 == 1 ? 1.0f : n % 4 == 2 ? 0.25f : 0.0f;
      int threads = n % 2 ? 1 : 2;
      lt_bfloat16 *A = malloc(sizeof *A * arows * lda), *Bm = malloc(sizeof *Bm * brows * ldb);
      lt_bfloat16 *C = malloc(sizeof *C * M * ldc), *C0 = malloc(sizeof *C0 * M * ldc);
      if (!A || !Bm || !C || !C0) {
        check(false, "bgemm: test out of memory");
        free(A), free(Bm), free(C), free(C0);
        continue;
      }
      fill_random(LT_BFLOAT16, A, arows * lda);
      fill_random(LT_BFLOAT16, Bm, brows * ldb);
      fill_random(LT_BFLOAT16, C, M * ldc);
      if (beta == 0 && n % 8 == 0) fill_nan(LT_BFLOAT16, C, M * ldc);
      memcpy(C0, C, sizeof *C * M * ldc);
      int rc = lt_bgemm_avx512bf16(ta, tb, M, N, K, alpha, (const uint16_t *)A, lda, (const uint16_t *)Bm, ldb,
                                   beta, (uint16_t *)C, ldc, threads);
      int64_t bad = 0, outside = 0;
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < ldc; j++) {
          if (j >= N) {
            if (C[i * ldc + j].bits != C0[i * ldc + j].bits) outside++;
            continue;
          }
          double acc = 0, mag = 0;
          for (int64_t p = 0; p < K; p++) {
            double x = lt_bf16_to_float(ta ? A[p * lda + i] : A[i * lda + p]);
            double y = lt_bf16_to_float(tb ? Bm[j * ldb + p] : Bm[p * ldb + j]);
            acc += x * y, mag += fabs(x * y);
          }
          double old = beta == 0 ? 0.0 : beta * (double)lt_bf16_to_float(C0[i * ldc + j]);
          double want = alpha * acc + old, got = lt_bf16_to_float(C[i * ldc + j]);
          double tol = fabs(want) / 256 + 1.2e-7 * (K + 2) * (fabs(alpha) * mag + fabs(old)) + 1e-30;
          if (!(fabs(got - want) <= tol)) bad++;
        }
      check(rc == 0 && bad == 0 && outside == 0,
            "bgemm %lldx%lldx%lld ta=%d tb=%d lda/ldb +%lld ldc +%lld alpha=%g beta=%g threads=%d%s%s",
            (long long)M, (long long)N, (long long)K, ta, tb, (long long)pad, (long long)(ldc - N), alpha, beta,
            threads, bad ? " WRONG VALUES" : "", outside ? " WROTE OUTSIDE C" : "");
      free(A), free(Bm), free(C), free(C0);
    }
}

static void error_suite(void) {
  float a[4] = {1, 2, 3, 4}, o[4];
  bool bb[4] = {true, false, true, true}, bo[4];
  int rc = lt_cpu_gemm(LT_BOOL, 1, 2, 2, 2, 1, bb, 4, 2, 1, bb, 4, 2, 1, 0, bo, 4, 2, 1);
  check(rc == LT_ERR && strstr(lt_last_error(), "bool"), "bool is an error: \"%s\"",
        lt_last_error());
  int32_t ia[4] = {1, 2, 3, 4}, io[4];
  rc = lt_cpu_gemm(LT_INT32, 1, 2, 2, 2, 0.5, ia, 4, 2, 1, ia, 4, 2, 1, 0, io, 4, 2, 1);
  check(rc == LT_ERR, "non-integer alpha for int32 is an error: \"%s\"", lt_last_error());
  rc = lt_cpu_gemm(LT_FLOAT32, 1, 2, 2, 2, 1, a, 4, -2, 1, a, 4, 2, 1, 0, o, 4, 2, 1);
  check(rc == LT_ERR, "negative stride is an error: \"%s\"", lt_last_error());
  rc = lt_blas_sgemm(false, false, LT_BLAS_MAX_DIM + 1, 1, 1, 1, a, 1, a, 1, 0, o, 1);
  check(rc == LT_ERR && strstr(lt_last_error(), "at most"),
        "sgemm with M > LT_BLAS_MAX_DIM is an error: \"%s\"", lt_last_error());
  rc = lt_blas_dgemm(false, false, 2, 2, 2, 1, (double *)o, 1, (double *)o, 2, 0, (double *)o, 2);
  check(rc == LT_ERR, "dgemm with lda < K is an error: \"%s\"", lt_last_error());
}

static void blas_suite(void) {
  float A[6] = {1, 2, 3, 4, 5, 6}, Bm[6] = {1, 0, 0, 1, 1, 1}, C[4] = {NAN, NAN, NAN, NAN};
  float y[3] = {NAN, NAN, NAN}, x[2] = {1, -1};
  int rc = lt_blas_sgemm(false, false, 2, 2, 3, 1, A, 3, Bm, 2, 0, C, 2);
  check(rc == LT_OK && C[0] == 4 && C[1] == 5 && C[2] == 10 && C[3] == 11,
        "lt_blas_sgemm 2x3 @ 3x2, beta 0 over NaN: [%g %g; %g %g]", C[0], C[1], C[2], C[3]);
  rc = lt_blas_sgemv(true, 2, 3, 1, A, 3, x, 1, 0, y, 1);
  check(rc == LT_OK && y[0] == -3 && y[1] == -3 && y[2] == -3,
        "lt_blas_sgemv A^T x, beta 0 over NaN: [%g %g %g]", y[0], y[1], y[2]);
  double D[4] = {1, 2, 3, 4}, E[4] = {1, 1, 1, 1};
  check(lt_blas_dgemm(true, false, 2, 2, 0, 1, D, 2, D, 2, 0.5, E, 2) == LT_OK && E[0] == 0.5 &&
            E[3] == 0.5,
        "lt_blas_dgemm with K = 0 scales C by beta");
  int nt = lt_blas_num_threads();
  lt_blas_set_num_threads(1);
  int one = lt_blas_num_threads();
  lt_blas_set_num_threads(nt);
  check(nt >= 1 && one == 1 && lt_blas_num_threads() == nt, "num_threads %d, set to 1 gives %d", nt,
        one);
}

/* ---- which kernels --------------------------------------------------------------------------- */

static bool library_missing(void) {
  return strcmp(lt_blas_corename(), "fallback") == 0 &&
         (strstr(lt_blas_info(), "cannot open") || strstr(lt_blas_info(), "No such file"));
}

static void core_checks(const char *expect_core, bool expect_retry) {
  bool user_nt = getenv("OPENBLAS_NUM_THREADS") != NULL;
  check(strcmp(lt_blas_corename(), "none") == 0, "corename is \"none\" before init");
  check(lt_blas_init() == LT_OK, "lt_blas_init");
  check(lt_blas_init() == LT_OK, "lt_blas_init again (idempotent)");
  const char *core = lt_blas_corename();
  printf("%s# corename: %s\n%s# blas: %s\n", tag, core, tag, lt_blas_info());
  bool missing = library_missing();
  if (expect_core) {
    if (missing && strcmp(expect_core, "fallback") != 0)
      check(true, "skip: expected core %s, but no OpenBLAS is installed", expect_core);
    else
      check(strcmp(core, expect_core) == 0, "corename is %s (expected %s)", core, expect_core);
  }
  if (expect_retry)
    check(strstr(lt_blas_info(), "first try") && strcmp(core, "fallback") != 0 &&
              strstr(lt_blas_info(), "chosen by OpenBLAS"),
          "the kernel check failed once and OpenBLAS's own choice was kept (%s)", core);
  check(strcmp(core, "Prescott") != 0 || getenv("OPENBLAS_CORETYPE"),
        "corename is not Prescott (%s)", core);
  const char *user = getenv("OPENBLAS_CORETYPE");
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  if (!expect_core && !expect_retry && !(user && *user) && !getenv("LUTORCH_BLAS_LIB") && avx512) {
    if (missing) check(true, "skip: AVX-512 kernels expected, but no OpenBLAS is installed");
    else
      check(strcmp(core, "SkylakeX") == 0 || strcmp(core, "Cooperlake") == 0,
            "AVX-512 CPU: corename is SkylakeX or Cooperlake (%s)", core);
  }
  /* the variable we set for loading is not left behind */
  if (!(user && *user))
    check(getenv("OPENBLAS_CORETYPE") == NULL, "OPENBLAS_CORETYPE restored (unset)");
  if (!user_nt)
    check(getenv("OPENBLAS_NUM_THREADS") == NULL, "OPENBLAS_NUM_THREADS restored (unset)");
}

/* Run this program again with one variable set (NULL: none) and arguments; true if it passed. */
static bool child2(const char *var, const char *value, const char *var2, const char *value2,
                   const char *const args[]) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("LUTORCH_BLAS_LIB");
    unsetenv("LUTORCH_BLAS_TEST_BAD_KERNELS");
    unsetenv("LUTORCH_GEMM");
    if (var) setenv(var, value, 1);
    if (var2) setenv(var2, value2, 1);
    char *argv[16];
    int n = 0;
    argv[n++] = "test_blas";
    for (int i = 0; args[i] && n < 15; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The library's (or the portable loops') float32 products are what these children test, so they
   run with LUTORCH_GEMM=blas; the parent tests lutorch's own kernels where the CPU has AVX-512. */
static bool child(const char *var, const char *value, const char *const args[]) {
  return child2(var, value, "LUTORCH_GEMM", "blas", args);
}

int main(int argc, char **argv) {
  const char *expect_core = NULL;
  bool expect_retry = false, children = true;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expect-core") == 0 && i + 1 < argc) expect_core = argv[++i];
    else if (strcmp(argv[i], "--expect-retry") == 0) expect_retry = true;
    else if (strcmp(argv[i], "--no-children") == 0) children = false;
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--tag") == 0 && i + 1 < argc) tag = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--expect-core NAME] [--expect-retry] [--no-children] [--quick] "
              "[--tag TEXT]\n",
              argv[0]);
      return 2;
    }
  }
  core_checks(expect_core, expect_retry);
  blas_suite();
  sgemm_suite();
  bgemm_suite();
  error_suite();
  matmul_suite();

  if (children && !expect_core && !expect_retry) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      const char *a[] = {"--no-children", "--quick", "--tag", "[Haswell] ",
                         "--expect-core", "Haswell", NULL};
      check(child("OPENBLAS_CORETYPE", "Haswell", a),
            "child with OPENBLAS_CORETYPE=Haswell set by the user gets Haswell and passes");
    } else {
      check(true, "skip: no AVX2, no Haswell child");
    }
    const char *b[] = {"--no-children", "--quick", "--tag", "[none] ",
                       "--expect-core", "fallback", NULL};
    check(child("LUTORCH_BLAS_LIB", "none", b),
          "child with LUTORCH_BLAS_LIB=none uses the portable loops and passes");
    if (!library_missing()) {
      const char *c[] = {"--no-children", "--quick", "--tag", "[retry] ", "--expect-retry", NULL};
      check(child("LUTORCH_BLAS_TEST_BAD_KERNELS", "1", c),
            "child whose first kernel check fails retries with OpenBLAS's choice and passes");
    }
    const char *d[] = {"--no-children", "--quick", "--tag", "[bad] ",
                       "--expect-core", "fallback", NULL};
    check(child("LUTORCH_BLAS_TEST_BAD_KERNELS", "all", d),
          "child whose kernel checks always fail uses the portable loops and passes");
  }
  printf("%s%d passed, %d failed\n", tag, passed, failed);
  return failed ? 1 : 0;
}
