/* The CUDA dtype-conversion kernel's launcher (kernels/cuda/cast.cu), callable from C: device
   pointers to n contiguous elements of dtype src (lt_dtype numbering) and dst. Returns the
   launch's cudaError_t as an int (0 on success), or -1 for a dtype outside lt_dtype. Work is
   queued on `stream` (a cudaStream_t; NULL: the legacy default stream). */
#ifndef LT_CUDA_CAST_H
#define LT_CUDA_CAST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_cast(int dst_dtype, void *dst, int src_dtype, const void *src, int64_t n, void *stream);

/* A strided copy of one dtype on one device: element k of the row-major order over sizes goes from
   src + sum(k_d * src_stride[d]) to dst + sum(k_d * dst_stride[d]) (strides in elements, 0 for a
   broadcast source dim), for elements of `elsize` bytes (1, 2, 4 or 8). */
#define LT_CUDA_COPY_MAXDIM 16
typedef struct {
  int nd;
  int64_t n;
  int64_t sizes[LT_CUDA_COPY_MAXDIM];
  int64_t dst_stride[LT_CUDA_COPY_MAXDIM];
  int64_t src_stride[LT_CUDA_COPY_MAXDIM];
} lt_cuda_strided_t;
int lt_cuda_k_strided_copy(int elsize, void *dst, const void *src, const lt_cuda_strided_t *g, void *stream);

#ifdef __cplusplus
}
#endif

#endif

#ifdef __CUDACC__
/* Loads and stores of every lt_dtype for CUDA kernels, the conversions of the CPU's cast loops: a
   source loads into its domain, double (floating) or int64 (integers, bool); a destination stores
   from either (float16 / bfloat16 through float, integers through int64, bool as x != 0). */
#include "kernels/half.h"

__device__ __forceinline__ double lt_cu_ld(float v) { return v; }
__device__ __forceinline__ double lt_cu_ld(double v) { return v; }
__device__ __forceinline__ double lt_cu_ld(lt_half v) { return lt_half_to_float(v); }
__device__ __forceinline__ double lt_cu_ld(lt_bfloat16 v) { return lt_bf16_to_float(v); }
__device__ __forceinline__ int64_t lt_cu_ld(int64_t v) { return v; }
__device__ __forceinline__ int64_t lt_cu_ld(int32_t v) { return v; }
__device__ __forceinline__ int64_t lt_cu_ld(int16_t v) { return v; }
__device__ __forceinline__ int64_t lt_cu_ld(int8_t v) { return v; }
__device__ __forceinline__ int64_t lt_cu_ld(uint8_t v) { return v; }
__device__ __forceinline__ int64_t lt_cu_ld(bool v) { return v; }

template <typename DT> struct lt_cu_st;
template <> struct lt_cu_st<float> { template <typename X> __device__ static float f(X x) { return (float)x; } };
template <> struct lt_cu_st<double> { template <typename X> __device__ static double f(X x) { return (double)x; } };
template <> struct lt_cu_st<lt_half> {
  template <typename X> __device__ static lt_half f(X x) { return lt_float_to_half((float)x); }
};
template <> struct lt_cu_st<lt_bfloat16> {
  template <typename X> __device__ static lt_bfloat16 f(X x) { return lt_float_to_bf16((float)x); }
};
#define LT_CU_INT_STORE(T) \
  template <> struct lt_cu_st<T> { template <typename X> __device__ static T f(X x) { return (T)(int64_t)x; } };
LT_CU_INT_STORE(int64_t)
LT_CU_INT_STORE(int32_t)
LT_CU_INT_STORE(int16_t)
LT_CU_INT_STORE(int8_t)
LT_CU_INT_STORE(uint8_t)
#undef LT_CU_INT_STORE
template <> struct lt_cu_st<bool> { template <typename X> __device__ static bool f(X x) { return x != 0; } };

/* store x (double or int64) as element i of p, of dtype dt (lt_dtype numbering), converting */
template <typename X> __device__ inline void lt_cu_store(void *p, int64_t i, int dt, X x) {
  switch (dt) {
    case 0: ((float *)p)[i] = lt_cu_st<float>::f(x); break;
    case 1: ((double *)p)[i] = lt_cu_st<double>::f(x); break;
    case 2: ((lt_half *)p)[i] = lt_cu_st<lt_half>::f(x); break;
    case 3: ((lt_bfloat16 *)p)[i] = lt_cu_st<lt_bfloat16>::f(x); break;
    case 4: ((int64_t *)p)[i] = lt_cu_st<int64_t>::f(x); break;
    case 5: ((int32_t *)p)[i] = lt_cu_st<int32_t>::f(x); break;
    case 6: ((int16_t *)p)[i] = lt_cu_st<int16_t>::f(x); break;
    case 7: ((int8_t *)p)[i] = lt_cu_st<int8_t>::f(x); break;
    case 8: ((uint8_t *)p)[i] = lt_cu_st<uint8_t>::f(x); break;
    case 9: ((bool *)p)[i] = lt_cu_st<bool>::f(x); break;
    default: break;
  }
}
#endif
