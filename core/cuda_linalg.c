/* Matrix products of CUDA tensors through cuBLAS: core/linalg.c has checked the shapes and dtypes
   and describes one batched product out[b] = beta*out[b] + alpha * A[b] @ B[b] by element strides
   (its gemm funnel serves mm, addmm, bmm, mv, dot, matmul and linear). cuBLAS is column-major: the
   row-major product C = A @ B is the column-major C^T = B^T @ A^T, so the operands swap, and a
   row-major operand with unit column stride is its own transpose in column-major (op N), one with
   unit row stride is passed as op T; any other operand is first made contiguous. float32 uses
   cublasSgemm's pedantic-free default math (no TF32: torch's default for matmul), float64
   cublasDgemm, float16 / bfloat16 cublasGemmEx with CUBLAS_COMPUTE_32F (float accumulation).
   One cuBLAS handle per device and thread, created lazily and set to the thread's current stream
   before each call. Without CUDA=1 it is a stub that refuses. */
#include "core/cuda.h"
#include "core/elementwise.h" /* lt_contiguous */

#include <limits.h>
#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"

#define MAX_DEVICES 64

/* handles live as long as their thread (cuBLAS handles are not thread-safe to share) */
static _Thread_local cublasHandle_t handles[MAX_DEVICES];

static int handle_for(int dev, cublasHandle_t *out) {
  if (dev < 0 || dev >= MAX_DEVICES) return lt_error("cuBLAS: device index %d out of range", dev);
  LT_TRY(lt_cuda_use(dev));
  if (!handles[dev]) {
    cublasHandle_t h;
    LT_CUDA_CHECK(dev, cublasCreate(&h));
    /* no TF32 tensor-op math for float32 (torch.backends.cuda.matmul.allow_tf32 is false) */
    cublasStatus_t st = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(h);
      return lt_cublas_report(st, "cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)", __FILE__, __LINE__, dev);
    }
    handles[dev] = h;
  }
  LT_CUDA_CHECK(dev, cublasSetStream(handles[dev], lt_cuda_current_stream(dev)));
  *out = handles[dev];
  return LT_OK;
}

/* The row-major rows x cols matrix X (strides sr, sc) as the column-major cols x rows matrix X^T
   for cuBLAS: op N with ld = sr when its columns are adjacent, op T with ld = sc when its rows
   are; false when neither (or a leading dimension cuBLAS would refuse). */
static bool as_transposed(int64_t rows, int64_t cols, int64_t sr, int64_t sc, cublasOperation_t *op, int64_t *ld) {
  int64_t need_n = cols > 1 ? cols : 1, need_t = rows > 1 ? rows : 1;
  if (sc == 1 || cols <= 1) {
    int64_t l = rows <= 1 ? need_n : sr;
    if (l >= need_n && l <= INT_MAX) { *op = CUBLAS_OP_N; *ld = l; return true; }
  }
  if (sr == 1 || rows <= 1) {
    int64_t l = cols <= 1 ? need_t : sc;
    if (l >= need_t && l <= INT_MAX) { *op = CUBLAS_OP_T; *ld = l; return true; }
  }
  return false;
}

/* t viewed as [batch, rows, cols] with the given strides, copied to a contiguous tensor */
static lt_tensor_t *packed(const lt_tensor_t *t, int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr,
                           int64_t sc) {
  int64_t sz[3] = {batch, rows, cols}, st[3] = {sb, sr, sc};
  lt_tensor_t *v = lt_view_geometry(t, 3, sz, st, t->offset);
  if (!v) return NULL;
  lt_tensor_t *c = lt_contiguous(v);
  lt_release(v);
  return c;
}

static int run(const char *op, int dev, lt_dtype dt, cublasHandle_t h, int64_t batch, int64_t m, int64_t n,
               int64_t k, double alpha, const void *A, cublasOperation_t opa, int64_t lda, int64_t sAb,
               const void *B, cublasOperation_t opb, int64_t ldb, int64_t sBb, double beta, void *out) {
  /* column-major: C^T (n x m, ld n) = B^T (n x k) @ A^T (k x m) */
  int cm = (int)n, cn = (int)m, ck = (int)k, nb = (int)batch;
  long long sa = sBb, sb = sAb, sc = (long long)m * n;
  switch (dt) {
    case LT_FLOAT32: {
      float al = (float)alpha, be = (float)beta;
      LT_CUDA_CHECK(dev, cublasSgemmStridedBatched(h, opb, opa, cm, cn, ck, &al, (const float *)B, (int)ldb, sa,
                                                   (const float *)A, (int)lda, sb, &be, (float *)out, cm, sc, nb));
      return LT_OK;
    }
    case LT_FLOAT64: {
      double al = alpha, be = beta;
      LT_CUDA_CHECK(dev, cublasDgemmStridedBatched(h, opb, opa, cm, cn, ck, &al, (const double *)B, (int)ldb, sa,
                                                   (const double *)A, (int)lda, sb, &be, (double *)out, cm, sc, nb));
      return LT_OK;
    }
    case LT_FLOAT16:
    case LT_BFLOAT16: {
      float al = (float)alpha, be = (float)beta;
      cudaDataType_t t = dt == LT_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
      LT_CUDA_CHECK(dev, cublasGemmStridedBatchedEx(h, opb, opa, cm, cn, ck, &al, B, t, (int)ldb, sa, A, t, (int)lda,
                                                    sb, &be, out, t, cm, sc, nb, CUBLAS_COMPUTE_32F,
                                                    CUBLAS_GEMM_DEFAULT));
      return LT_OK;
    }
    default:
      return lt_error("%s: not implemented for CUDA tensors of dtype %s", op, lt_dtype_name(dt));
  }
}

int lt_cuda_gemm(const char *op, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const lt_tensor_t *a,
                 int64_t sAb, int64_t sAr, int64_t sAc, const lt_tensor_t *b, int64_t sBb, int64_t sBr, int64_t sBc,
                 double beta, lt_tensor_t *out) {
  lt_dtype dt = a->dtype;
  if (dt != LT_FLOAT32 && dt != LT_FLOAT64 && dt != LT_FLOAT16 && dt != LT_BFLOAT16)
    return lt_error("%s: not implemented for CUDA tensors of dtype %s", op, lt_dtype_name(dt));
  const lt_tensor_t *ts[3] = {a, b, out};
  LT_TRY(lt_check_same_device(op, 3, ts));
  if (out->device.type != LT_CUDA) return lt_error("%s: expected CUDA tensors", op);
  if (!lt_is_contiguous(out) || out->dtype != dt || out->numel != batch * m * n)
    return lt_error("%s: internal error: the output must be a contiguous [batch, m, n] of the operands' dtype", op);
  if (batch == 0 || m == 0 || n == 0) return LT_OK;
  if (batch > INT_MAX || m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return lt_error("%s: sizes beyond 2^31 - 1 are not supported by cuBLAS (batch %lld, %lldx%lld @ %lldx%lld)", op,
                    (long long)batch, (long long)m, (long long)k, (long long)k, (long long)n);
  int dev = out->device.index;
  cublasHandle_t h = NULL;
  LT_TRY(handle_for(dev, &h));
  if (k == 0) { /* an empty sum: out = beta * out, without handing cuBLAS operands of no elements */
    if (beta == 0) {
      LT_CUDA_CHECK(dev, cudaMemsetAsync(lt_data(out), 0, (size_t)out->numel * lt_elsize(out),
                                         lt_cuda_current_stream(dev)));
    } else if (beta != 1) {
      if (out->numel > INT_MAX) return lt_error("%s: more than 2^31 - 1 elements to scale", op);
      bool d = dt == LT_FLOAT64;
      float bf = (float)beta;
      cudaDataType_t xt = d ? CUDA_R_64F : dt == LT_FLOAT32 ? CUDA_R_32F : dt == LT_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
      cudaDataType_t et = d ? CUDA_R_64F : CUDA_R_32F;
      LT_CUDA_CHECK(dev, cublasScalEx(h, (int)out->numel, d ? (const void *)&beta : (const void *)&bf, et,
                                      lt_data(out), xt, 1, et));
    }
    LT_TRY(lt_cuda_after_launch(dev, 0, op, (int)dt));
    lt_bump_version(out);
    return LT_OK;
  }
  lt_tensor_t *ca = NULL, *cb = NULL;
  cublasOperation_t opa, opb;
  int64_t lda, ldb;
  const void *pa = lt_data(a), *pb = lt_data(b);
  int rc = LT_OK;
  if (!as_transposed(m, k, sAr, sAc, &opa, &lda)) {
    if (!(ca = packed(a, batch, m, k, sAb, sAr, sAc))) return LT_ERR;
    pa = lt_data(ca);
    sAb = m * k;
    as_transposed(m, k, k, 1, &opa, &lda);
  }
  if (!as_transposed(k, n, sBr, sBc, &opb, &ldb)) {
    if (!(cb = packed(b, batch, k, n, sBb, sBr, sBc))) { lt_release(ca); return LT_ERR; }
    pb = lt_data(cb);
    sBb = k * n;
    as_transposed(k, n, n, 1, &opb, &ldb);
  }
  rc = run(op, dev, dt, h, batch, m, n, k, alpha, pa, opa, lda, sAb, pb, opb, ldb, sBb, beta, lt_data(out));
  /* the packed copies return to the allocator's cache; later work on this stream is ordered
     after the product that reads them */
  lt_release(ca);
  lt_release(cb);
  if (rc == LT_OK) rc = lt_cuda_after_launch(dev, 0, op, (int)dt);
  if (rc == LT_OK) lt_bump_version(out);
  return rc;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_gemm(const char *op, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const lt_tensor_t *a,
                 int64_t sAb, int64_t sAr, int64_t sAc, const lt_tensor_t *b, int64_t sBb, int64_t sBr, int64_t sBc,
                 double beta, lt_tensor_t *out) {
  (void)batch; (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)sAb; (void)sAr; (void)sAc; (void)b;
  (void)sBb; (void)sBr; (void)sBc; (void)beta; (void)out;
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}

#endif
