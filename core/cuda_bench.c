/* Reference rates for bench/cuda_bench.lua, measured with the CUDA libraries called directly (no
   tensors, no dispatch): a cuBLAS product of n x n matrices of float32, float16 or bfloat16 with
   float32 accumulation, and cudaMemcpyAsync device-to-device or from pinned host memory. The
   benchmark sets lutorch's own ops beside them. Without CUDA=1 these refuse, as every CUDA call. */
#include "core/cuda.h"
#include "core/error.h"

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"

#include <cublas_v2.h>
#include <library_types.h>

static int timed(int dev, cudaStream_t st, cudaEvent_t a, cudaEvent_t b, double *ms, int iters) {
  float f = 0;
  LT_CUDA_CHECK(dev, cudaEventRecord(b, st));
  LT_CUDA_CHECK(dev, cudaEventSynchronize(b));
  LT_CUDA_CHECK(dev, cudaEventElapsedTime(&f, a, b));
  *ms = (double)f / iters;
  return LT_OK;
}

int lt_cuda_bench_gemm(int index, int n, lt_dtype dt, const void *a, const void *b, int iters, double *ms) {
  if (n <= 0 || iters <= 0) return lt_error("cuda.bench_gemm: n and iters must be positive");
  cudaDataType_t ty = dt == LT_FLOAT16 ? CUDA_R_16F : dt == LT_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
  if (dt != LT_FLOAT16 && dt != LT_BFLOAT16 && dt != LT_FLOAT32)
    return lt_error("cuda.bench_gemm: float32, float16 or bfloat16, got %s", lt_dtype_name(dt));
  LT_TRY(lt_cuda_use(index));
  int dev = index < 0 ? lt_current_device(LT_CUDA) : index;
  size_t es = dt == LT_FLOAT32 ? 4 : 2, bytes = (size_t)n * (size_t)n * es;
  void *A = NULL, *B = NULL, *C = NULL; /* its own operands (zeros), when a and b are not given */
  cublasHandle_t h = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaStream_t st = lt_cuda_current_stream(dev);
  int rc = LT_ERR;
  float alpha = 1, beta = 0;
  if (!a || !b) {
    if (lt_cuda_report(cudaMalloc(&A, bytes), "cudaMalloc(&A, bytes)", __FILE__, __LINE__, dev) != LT_OK) goto done;
    if (lt_cuda_report(cudaMalloc(&B, bytes), "cudaMalloc(&B, bytes)", __FILE__, __LINE__, dev) != LT_OK) goto done;
    if (lt_cuda_report(cudaMemsetAsync(A, 0, bytes, st), "cudaMemsetAsync(A)", __FILE__, __LINE__, dev) != LT_OK) goto done;
    if (lt_cuda_report(cudaMemsetAsync(B, 0, bytes, st), "cudaMemsetAsync(B)", __FILE__, __LINE__, dev) != LT_OK) goto done;
    a = A, b = B;
  }
  if (lt_cuda_report(cudaMalloc(&C, bytes), "cudaMalloc(&C, bytes)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cublas_report(cublasCreate(&h), "cublasCreate(&h)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cublas_report(cublasSetStream(h, st), "cublasSetStream(h, st)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cuda_report(cudaEventCreate(&e0), "cudaEventCreate(&e0)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cuda_report(cudaEventCreate(&e1), "cudaEventCreate(&e1)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  for (int i = 0; i <= iters; i++) {
    if (i == 1 && lt_cuda_report(cudaEventRecord(e0, st), "cudaEventRecord(e0, st)", __FILE__, __LINE__, dev) != LT_OK)
      goto done;
    /* C^T = b^T a^T in cuBLAS's column-major terms: C = a @ b, as lutorch's matmul computes it */
    cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b, ty, n, a, ty, n, &beta, C, ty, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (lt_cublas_report(s, "cublasGemmEx(...)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  }
  rc = timed(dev, st, e0, e1, ms, iters);
done:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (h) cublasDestroy(h);
  if (A) cudaFree(A);
  if (B) cudaFree(B);
  if (C) cudaFree(C);
  return rc;
}

int lt_cuda_bench_memcpy(int index, size_t bytes, bool from_pinned_host, int iters, double *ms) {
  if (bytes == 0 || iters <= 0) return lt_error("cuda.bench_memcpy: bytes and iters must be positive");
  LT_TRY(lt_cuda_use(index));
  int dev = index < 0 ? lt_current_device(LT_CUDA) : index;
  void *src = NULL, *dst = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaStream_t st = lt_cuda_current_stream(dev);
  int rc = LT_ERR;
  cudaError_t a = from_pinned_host ? cudaMallocHost(&src, bytes) : cudaMalloc(&src, bytes);
  if (lt_cuda_report(a, "cudaMalloc(&src, bytes)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cuda_report(cudaMalloc(&dst, bytes), "cudaMalloc(&dst, bytes)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cuda_report(cudaEventCreate(&e0), "cudaEventCreate(&e0)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  if (lt_cuda_report(cudaEventCreate(&e1), "cudaEventCreate(&e1)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  for (int i = 0; i <= iters; i++) {
    if (i == 1 && lt_cuda_report(cudaEventRecord(e0, st), "cudaEventRecord(e0, st)", __FILE__, __LINE__, dev) != LT_OK)
      goto done;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, from_pinned_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, st);
    if (lt_cuda_report(e, "cudaMemcpyAsync(dst, src, bytes, kind, st)", __FILE__, __LINE__, dev) != LT_OK) goto done;
  }
  rc = timed(dev, st, e0, e1, ms, iters);
done:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (src) (void)(from_pinned_host ? cudaFreeHost(src) : cudaFree(src));
  if (dst) cudaFree(dst);
  return rc;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_bench_gemm(int index, int n, lt_dtype dt, const void *a, const void *b, int iters, double *ms) {
  (void)index; (void)n; (void)dt; (void)a; (void)b; (void)iters; (void)ms;
  return lt_error("cuda.bench_gemm: CUDA is not available: %s", lt_cuda_unavailable_reason());
}
int lt_cuda_bench_memcpy(int index, size_t bytes, bool from_pinned_host, int iters, double *ms) {
  (void)index; (void)bytes; (void)from_pinned_host; (void)iters; (void)ms;
  return lt_error("cuda.bench_memcpy: CUDA is not available: %s", lt_cuda_unavailable_reason());
}

#endif
