/* Matrix products of CUDA tensors through cuBLAS, and 2-D convolution as im2col + cuBLAS.
   core/linalg.c has checked the shapes and dtypes and describes one batched product
   out[b] = beta*out[b] + alpha * A[b] @ B[b] by element strides (its gemm funnel serves mm, addmm,
   bmm, mv, dot, matmul and linear). cuBLAS is column-major: the row-major product C = A @ B is the
   column-major C^T = B^T @ A^T, so the operands swap, and a row-major operand with unit column
   stride is its own transpose in column-major (op N), one with unit row stride is passed as op T;
   any other operand is first made contiguous. float32 uses cublasSgemm with the default math (no
   TF32: torch's default for matmul), float64 cublasDgemm, float16 / bfloat16 cublasGemmEx with
   CUBLAS_COMPUTE_32F (float accumulation). One cuBLAS handle per device and thread, created
   lazily and set to the thread's current stream before each call. Convolutions (core/conv.c's
   plan: per sample and group, Y = W @ cols) take chunks of samples through kernels/cuda/conv.cu's
   im2col and one strided-batched product per group. Without CUDA=1 it is a stub that refuses. */
#include "core/cuda.h"
#include "core/elementwise.h" /* lt_contiguous */
#include "core/settings.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/conv.h"

#define MAX_DEVICES 64

/* handles live as long as their thread (cuBLAS handles are not thread-safe to share) */
static _Thread_local cublasHandle_t handles[MAX_DEVICES];

/* cuBLAS gives the same bits every run only with a fixed workspace (its docs, "Results
   reproducibility"): with deterministic algorithms on, PyTorch's check of CUBLAS_WORKSPACE_CONFIG */
static int check_cublas_deterministic(void) {
  if (!lt_deterministic()) return LT_OK;
  const char *c = getenv("CUBLAS_WORKSPACE_CONFIG");
  if (c && (strcmp(c, ":4096:8") == 0 || strcmp(c, ":16:8") == 0)) return LT_OK;
  return lt_alert_deterministic(
      "cuBLAS", "Deterministic behavior was enabled with torch.use_deterministic_algorithms(true), but this operation "
                "is not deterministic because it uses cuBLAS. To enable deterministic behavior in this case, you must "
                "set an environment variable before running your lutorch application: "
                "CUBLAS_WORKSPACE_CONFIG=:4096:8 or CUBLAS_WORKSPACE_CONFIG=:16:8. For more information, go to "
                "https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility");
}

static int handle_for(int dev, cublasHandle_t *out) {
  if (dev < 0 || dev >= MAX_DEVICES) return lt_error("cuBLAS: device index %d out of range", dev);
  LT_TRY(check_cublas_deterministic());
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

/* ---- 2-D convolution as im2col + cuBLAS (kernels/cuda/conv.cu for the column matrices) ---- */

/* one column-major strided-batched product C = op(A) op(B) (m x n, k inner) in float32 / float64 */
static int cm_gemm(int dev, lt_dtype dt, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                   int64_t n, int64_t k, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb,
                   double beta, void *C, int64_t ldc, int64_t sc, int64_t batch) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX || batch > INT_MAX)
    return lt_error("conv2d: a matrix product dimension is beyond 2^31 - 1");
  if (dt == LT_FLOAT64) {
    double al = 1, be = beta;
    LT_CUDA_CHECK(dev, cublasDgemmStridedBatched(h, ta, tb, (int)m, (int)n, (int)k, &al, (const double *)A, (int)lda, sa,
                                                 (const double *)B, (int)ldb, sb, &be, (double *)C, (int)ldc, sc,
                                                 (int)batch));
  } else {
    float al = 1, be = (float)beta;
    LT_CUDA_CHECK(dev, cublasSgemmStridedBatched(h, ta, tb, (int)m, (int)n, (int)k, &al, (const float *)A, (int)lda, sa,
                                                 (const float *)B, (int)ldb, sb, &be, (float *)C, (int)ldc, sc,
                                                 (int)batch));
  }
  return LT_OK;
}

/* samples per im2col chunk: the column matrices of a chunk hold at most about 2^26 elements */
static int64_t conv_chunk(int64_t N, int64_t colsz) {
  int64_t c = colsz > 0 ? ((int64_t)1 << 26) / colsz : N;
  return c < 1 ? 1 : c > N ? N : c;
}

static int conv_check(const char *op, lt_dtype dt, const lt_tensor_t *const *ts, int n) {
  if (dt != LT_FLOAT32 && dt != LT_FLOAT64)
    return lt_error("%s: internal error: CUDA convolutions compute in float32 or float64, got %s", op, lt_dtype_name(dt));
  for (int i = 0; i < n; i++)
    if (ts[i] && (!lt_is_contiguous(ts[i]) || ts[i]->dtype != dt || ts[i]->device.type != LT_CUDA))
      return lt_error("%s: internal error: expected contiguous CUDA operands of dtype %s", op, lt_dtype_name(dt));
  return lt_check_same_device(op, n, ts);
}

int lt_cuda_conv2d(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *x,
                   const lt_tensor_t *w, const lt_tensor_t *b, lt_tensor_t *y) {
  const char *op = "conv2d";
  const lt_tensor_t *ts[4] = {x, w, y, b};
  lt_dtype dt = x->dtype;
  LT_TRY(conv_check(op, dt, ts, b ? 4 : 3));
  int dev = y->device.index;
  if (N == 0) return LT_OK;
  cublasHandle_t h = NULL;
  LT_TRY(handle_for(dev, &h));
  void *st = (void *)lt_cuda_current_stream(dev);
  int64_t OHW = g->OH * g->OW, Kg = (g->C / groups) * g->kh * g->kw, Cog = Cout / groups;
  int64_t colsz = g->C * g->kh * g->kw * OHW, chunk = conv_chunk(N, colsz), csz = chunk * colsz;
  size_t es = lt_elsize(y);
  lt_tensor_t *cols = lt_empty(1, &csz, dt, y->device);
  if (!cols) return LT_ERR;
  int rc = LT_OK;
  for (int64_t n0 = 0; n0 < N && rc == LT_OK; n0 += chunk) {
    int64_t nb = N - n0 < chunk ? N - n0 : chunk;
    const char *xn = (const char *)lt_data(x) + (size_t)(n0 * g->C * g->H * g->W) * es;
    rc = lt_cuda_after_launch(dev, lt_cuda_k_im2col((int)(dt == LT_FLOAT64), g, nb, xn, lt_data(cols), st), op, (int)dt);
    /* per group, over the chunk's samples: Y[n, group] (Cog x OHW) = W[group] (Cog x Kg) @ cols[n, group]
       (Kg x OHW), i.e. column-major Y^T = cols^T W^T */
    for (int64_t gi = 0; gi < groups && rc == LT_OK; gi++)
      rc = cm_gemm(dev, dt, h, CUBLAS_OP_N, CUBLAS_OP_N, OHW, Cog, Kg,
                   (const char *)lt_data(cols) + (size_t)(gi * Kg * OHW) * es, OHW, colsz, (const char *)lt_data(w) + (size_t)(gi * Cog * Kg) * es, Kg, 0, 0,
                   (char *)lt_data(y) + (size_t)((n0 * Cout + gi * Cog) * OHW) * es, OHW, Cout * OHW, nb);
  }
  if (rc == LT_OK && b)
    rc = lt_cuda_after_launch(dev, lt_cuda_k_bias_add((int)(dt == LT_FLOAT64), lt_data(y), lt_data(b), N, Cout, OHW, st),
                              op, (int)dt);
  lt_release(cols);
  if (rc == LT_OK) lt_bump_version(y);
  return rc;
}

int lt_cuda_conv2d_backward(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *gy,
                            const lt_tensor_t *x, const lt_tensor_t *w, lt_tensor_t *gx, lt_tensor_t *gw,
                            lt_tensor_t *gb) {
  const char *op = "conv2d_backward";
  const lt_tensor_t *ts[6] = {gy, x, w, gx, gw, gb};
  lt_dtype dt = gy->dtype;
  const lt_tensor_t *given[6]; /* the operands given (x without gw, w without gx may be NULL) */
  int ng = 0;
  for (int i = 0; i < 6; i++)
    if (ts[i]) given[ng++] = ts[i];
  LT_TRY(conv_check(op, dt, given, ng));
  int dev = gy->device.index;
  int kind = dt == LT_FLOAT64;
  cublasHandle_t h = NULL;
  LT_TRY(handle_for(dev, &h));
  void *st = (void *)lt_cuda_current_stream(dev);
  int64_t OHW = g->OH * g->OW, Kg = (g->C / groups) * g->kh * g->kw, Cog = Cout / groups;
  size_t es = lt_elsize(gy);
  int rc = LT_OK;
  if (gb) {
    int64_t S = lt_cuda_k_bias_grad_splits(N, Cout), nparts = Cout * S;
    lt_tensor_t *part = lt_empty(1, &nparts, LT_FLOAT64, gy->device);
    if (!part) return LT_ERR;
    rc = lt_cuda_after_launch(dev, lt_cuda_k_bias_grad(kind, lt_data(gb), lt_data(gy), N, Cout, OHW, lt_data(part), S, st),
                              op, (int)dt);
    lt_release(part); /* back to the stream's cache: later work on this stream is ordered after */
  }
  if (gw && N == 0 && rc == LT_OK)
    LT_CUDA_CHECK(dev, cudaMemsetAsync(lt_data(gw), 0, (size_t)gw->numel * es, lt_cuda_current_stream(dev)));
  if (rc != LT_OK || (!gx && !gw) || N == 0) {
    if (rc == LT_OK && gb) lt_bump_version(gb);
    return rc;
  }
  /* the weight gradient goes through per-sample products (ws: a chunk's samples' gW, Cout x Kg each)
     summed by one more product with a vector of ones: two cuBLAS calls a chunk and group, where a
     call per sample made hundreds of tiny launches */
  int64_t colsz = g->C * g->kh * g->kw * OHW, wsz = Cout * Kg, chunk = conv_chunk(N, colsz);
  if (gw && conv_chunk(N, wsz) < chunk) chunk = conv_chunk(N, wsz);
  int64_t csz = chunk * colsz, wssz = chunk * wsz;
  lt_tensor_t *cols = lt_empty(1, &csz, dt, gy->device);
  lt_tensor_t *ws = gw ? lt_empty(1, &wssz, dt, gy->device) : NULL;
  lt_tensor_t *ones = gw ? lt_empty(1, &chunk, dt, gy->device) : NULL;
  if (!cols || (gw && (!ws || !ones || lt_fill_(ones, lt_int_operand(1)) != LT_OK))) {
    lt_release(cols);
    lt_release(ws);
    lt_release(ones);
    return LT_ERR;
  }
  char *cd = lt_data(cols);
  for (int64_t n0 = 0; n0 < N && rc == LT_OK; n0 += chunk) {
    int64_t nb = N - n0 < chunk ? N - n0 : chunk;
    if (gw) {
      /* ws[n, group] (Cog x Kg) = gY[n, group] (Cog x OHW) @ cols[n, group]^T for every sample of
         the chunk at once: column-major ws^T (Kg x Cog) = cols (op T of the OHW x Kg view) @ gY^T */
      const char *xn = (const char *)lt_data(x) + (size_t)(n0 * g->C * g->H * g->W) * es;
      rc = lt_cuda_after_launch(dev, lt_cuda_k_im2col(kind, g, nb, xn, cd, st), op, (int)dt);
      for (int64_t gi = 0; gi < groups && rc == LT_OK; gi++)
        rc = cm_gemm(dev, dt, h, CUBLAS_OP_T, CUBLAS_OP_N, Kg, Cog, OHW, cd + (size_t)(gi * Kg * OHW) * es, OHW, colsz,
                     (const char *)lt_data(gy) + (size_t)((n0 * Cout + gi * Cog) * OHW) * es, OHW, Cout * OHW, 0.0,
                     (char *)lt_data(ws) + (size_t)(gi * Cog * Kg) * es, Kg, wsz, nb);
      /* gW (+)= the sum over the chunk's samples: column-major gW (wsz x 1) = ws (wsz x nb) @ ones */
      if (rc == LT_OK)
        rc = cm_gemm(dev, dt, h, CUBLAS_OP_N, CUBLAS_OP_N, wsz, 1, nb, lt_data(ws), wsz, 0, lt_data(ones), nb, 0,
                     n0 == 0 ? 0.0 : 1.0, lt_data(gw), wsz, 0, 1);
    }
    if (gx && rc == LT_OK) {
      /* cols[n, group] (Kg x OHW) = W[group]^T @ gY[n, group]: column-major cols^T = gY^T @ W, then col2im */
      for (int64_t gi = 0; gi < groups && rc == LT_OK; gi++)
        rc = cm_gemm(dev, dt, h, CUBLAS_OP_N, CUBLAS_OP_T, OHW, Kg, Cog,
                     (const char *)lt_data(gy) + (size_t)((n0 * Cout + gi * Cog) * OHW) * es, OHW, Cout * OHW,
                     (const char *)lt_data(w) + (size_t)(gi * Cog * Kg) * es, Kg, 0, 0.0,
                     cd + (size_t)(gi * Kg * OHW) * es, OHW, colsz, nb);
      if (rc == LT_OK) {
        char *gxn = (char *)lt_data(gx) + (size_t)(n0 * g->C * g->H * g->W) * es;
        rc = lt_cuda_after_launch(dev, lt_cuda_k_col2im(kind, g, nb, cd, gxn, st), op, (int)dt);
      }
    }
  }
  lt_release(cols);
  lt_release(ws);
  lt_release(ones);
  if (rc == LT_OK) {
    if (gx) lt_bump_version(gx);
    if (gw) lt_bump_version(gw);
    if (gb) lt_bump_version(gb);
  }
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

int lt_cuda_conv2d(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *x,
                   const lt_tensor_t *w, const lt_tensor_t *b, lt_tensor_t *y) {
  (void)g; (void)N; (void)Cout; (void)groups; (void)x; (void)w; (void)b; (void)y;
  return lt_error("conv2d: CUDA is not available: %s", lt_cuda_unavailable_reason());
}

int lt_cuda_conv2d_backward(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *gy,
                            const lt_tensor_t *x, const lt_tensor_t *w, lt_tensor_t *gx, lt_tensor_t *gw,
                            lt_tensor_t *gb) {
  (void)g; (void)N; (void)Cout; (void)groups; (void)gy; (void)x; (void)w; (void)gx; (void)gw; (void)gb;
  return lt_error("conv2d_backward: CUDA is not available: %s", lt_cuda_unavailable_reason());
}

#endif
