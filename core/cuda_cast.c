/* Dtype conversion of CUDA tensors on the device (kernels/cuda/cast.cu): both tensors contiguous,
   of one element count, on one CUDA device. core/cuda_copy.c calls it for a conversion between
   CUDA tensors so that nothing stages through host memory. Without CUDA=1 it is a stub that
   refuses. */
#include "core/cuda.h"

#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/cast.h"

_Static_assert(LT_FLOAT32 == 0 && LT_FLOAT64 == 1 && LT_FLOAT16 == 2 && LT_BFLOAT16 == 3 && LT_INT64 == 4 &&
                   LT_INT32 == 5 && LT_INT16 == 6 && LT_INT8 == 7 && LT_UINT8 == 8 && LT_BOOL == 9,
               "the dtype numbers kernels/cuda/cast.cu uses");

int lt_cuda_cast(lt_tensor_t *dst, const lt_tensor_t *src) {
  if (dst->device.type != LT_CUDA || src->device.type != LT_CUDA || dst->device.index != src->device.index)
    return lt_error("cast: both tensors must be on one CUDA device");
  if (!lt_is_contiguous(dst) || !lt_is_contiguous(src))
    return lt_error("cast: expected contiguous tensors");
  if (dst->numel != src->numel)
    return lt_error("cast: element counts differ (%lld and %lld)", (long long)dst->numel, (long long)src->numel);
  int dev = dst->device.index;
  if (dst->numel == 0) return LT_OK;
  LT_TRY(lt_cuda_use(dev));
  if (dst->dtype == src->dtype) {
    LT_CUDA_CHECK(dev, cudaMemcpyAsync(lt_data(dst), lt_data(src), (size_t)dst->numel * lt_elsize(dst),
                                       cudaMemcpyDeviceToDevice, lt_cuda_current_stream(dev)));
  } else {
    int rc = lt_cuda_k_cast((int)dst->dtype, lt_data(dst), (int)src->dtype, lt_data(src), dst->numel,
                            (void *)lt_cuda_current_stream(dev));
    LT_TRY(lt_cuda_after_launch(dev, rc, "cast", (int)src->dtype));
  }
  lt_bump_version(dst);
  return LT_OK;
}

#else /* ---- a build without CUDA ---- */

int lt_cuda_cast(lt_tensor_t *dst, const lt_tensor_t *src) {
  (void)dst; (void)src;
  return lt_error("cast: CUDA is not available: %s", lt_cuda_unavailable_reason());
}

#endif
