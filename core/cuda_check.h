/* The one macro through which every CUDA runtime and cuBLAS call of the core is checked:
   LT_CUDA_CHECK(device, statement) makes the caller return LT_ERR with an error naming the
   statement, the file and line, the device, and the CUDA error's text and name. Only for files
   built with CUDA=1 (it includes the CUDA headers). */
#ifndef LT_CUDA_CHECK_H
#define LT_CUDA_CHECK_H

#ifndef LT_WITH_CUDA
#error "core/cuda_check.h is only for the CUDA build (make CUDA=1)"
#endif

#include "core/error.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

/* LT_OK when rc is success, else sets the error and returns LT_ERR. */
int lt_cuda_report(cudaError_t rc, const char *stmt, const char *file, int line, int device);
int lt_cublas_report(cublasStatus_t rc, const char *stmt, const char *file, int line, int device);

#define LT_CUDA_CHECK(device, stmt)                                                                \
  do {                                                                                             \
    __typeof__(stmt) lt_rc_ = (stmt);                                                              \
    if (_Generic(lt_rc_, cublasStatus_t: lt_cublas_report, default: lt_cuda_report)(               \
            lt_rc_, #stmt, __FILE__, __LINE__, (device)) != LT_OK)                                 \
      return LT_ERR;                                                                               \
  } while (0)

/* Make device `index` the CUDA runtime's current device for this thread (cached). */
int lt_cuda_use(int index);

/* The stream this thread queues kernels and copies on for device `index` (its current stream,
   set by torch.cuda.stream(s); NULL is the legacy default stream). Every launch uses it. */
cudaStream_t lt_cuda_current_stream(int index);

/* After a kernel launcher returned rc (a cudaError_t as int, or -1 for "no kernel for this
   dtype"): LT_OK, or LT_ERR with an error naming op and dtype. With LUTORCH_CUDA_SYNC=1 it also
   waits for the stream, so that a fault is reported by the op that caused it. */
int lt_cuda_after_launch(int index, int rc, const char *op, int dtype);

#endif
