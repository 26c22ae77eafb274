/* The CUDA dtype conversion: one grid-stride kernel per (dst, src) pair of core/dtype.h's types.
   A source loads as double (floating types) or int64 (integer types and bool) and the destination
   stores from it exactly as the CPU's cast loops do (kernels/cpu/elementwise.c, the *_FROM_F /
   *_FROM_I macros): float16 and bfloat16 go through float with kernels/half.h's round-to-nearest-
   even conversions, integers narrow by C's modular conversion from int64, bool is x != 0. */
#include "kernels/cuda/cast.h"

#include <cuda_runtime.h>

/* lt_dtype numbering (core/dtype.h; checked by core/cuda_cast.c) */
enum { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I64, DT_I32, DT_I16, DT_I8, DT_U8, DT_BOOL, DT_N };

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename DT, typename SRCT> __global__ void cast_k(DT *o, const SRCT *x, int64_t n) {
  GRID_STRIDE(i, n) o[i] = lt_cu_st<DT>::f(lt_cu_ld(x[i]));
}

static dim3 grid_for(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return dim3((unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535));
}

template <typename DT, typename SRCT> static int launch(void *dst, const void *src, int64_t n, cudaStream_t s) {
  if (n > 0) cast_k<DT, SRCT><<<grid_for(n), 256, 0, s>>>((DT *)dst, (const SRCT *)src, n);
  return (int)cudaGetLastError();
}

template <typename DT> static int from_src(int sdt, void *dst, const void *src, int64_t n, cudaStream_t s) {
  switch (sdt) {
    case DT_F32: return launch<DT, float>(dst, src, n, s);
    case DT_F64: return launch<DT, double>(dst, src, n, s);
    case DT_F16: return launch<DT, lt_half>(dst, src, n, s);
    case DT_BF16: return launch<DT, lt_bfloat16>(dst, src, n, s);
    case DT_I64: return launch<DT, int64_t>(dst, src, n, s);
    case DT_I32: return launch<DT, int32_t>(dst, src, n, s);
    case DT_I16: return launch<DT, int16_t>(dst, src, n, s);
    case DT_I8: return launch<DT, int8_t>(dst, src, n, s);
    case DT_U8: return launch<DT, uint8_t>(dst, src, n, s);
    case DT_BOOL: return launch<DT, bool>(dst, src, n, s);
    default: return -1;
  }
}

/* ---- strided copies of one dtype: moved as words of the element's size ---- */
template <typename U> __global__ void strided_k(U *dst, const U *src, const lt_cuda_strided_t g) {
  GRID_STRIDE(i, g.n) {
    int64_t r = i, so = 0, dof = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
      int64_t s = g.sizes[d], k = r % s;
      r /= s;
      so += k * g.src_stride[d];
      dof += k * g.dst_stride[d];
    }
    dst[dof] = src[so];
  }
}

template <typename U> static int strided(void *dst, const void *src, const lt_cuda_strided_t *g, cudaStream_t s) {
  if (g->n > 0) strided_k<U><<<grid_for(g->n), 256, 0, s>>>((U *)dst, (const U *)src, *g);
  return (int)cudaGetLastError();
}

extern "C" int lt_cuda_k_strided_copy(int elsize, void *dst, const void *src, const lt_cuda_strided_t *g, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (g->nd < 0 || g->nd > LT_CUDA_COPY_MAXDIM) return -1;
  switch (elsize) {
    case 1: return strided<uint8_t>(dst, src, g, s);
    case 2: return strided<uint16_t>(dst, src, g, s);
    case 4: return strided<uint32_t>(dst, src, g, s);
    case 8: return strided<uint64_t>(dst, src, g, s);
    default: return -1;
  }
}

extern "C" int lt_cuda_k_cast(int ddt, void *dst, int sdt, const void *src, int64_t n, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (ddt) {
    case DT_F32: return from_src<float>(sdt, dst, src, n, s);
    case DT_F64: return from_src<double>(sdt, dst, src, n, s);
    case DT_F16: return from_src<lt_half>(sdt, dst, src, n, s);
    case DT_BF16: return from_src<lt_bfloat16>(sdt, dst, src, n, s);
    case DT_I64: return from_src<int64_t>(sdt, dst, src, n, s);
    case DT_I32: return from_src<int32_t>(sdt, dst, src, n, s);
    case DT_I16: return from_src<int16_t>(sdt, dst, src, n, s);
    case DT_I8: return from_src<int8_t>(sdt, dst, src, n, s);
    case DT_U8: return from_src<uint8_t>(sdt, dst, src, n, s);
    case DT_BOOL: return from_src<bool>(sdt, dst, src, n, s);
    default: return -1;
  }
}
