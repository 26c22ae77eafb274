/* CUDA fused optimizer steps: one grid-stride pass over the parameter and its state whose
   per-element bodies are kernels/optim.h's (lt_sgd_elem, lt_adam_moments, lt_adam_apply), the ones
   the CPU loops run. float16 / bfloat16 parameters and gradients load to float and store back with
   kernels/half.h's round-to-nearest-even; their state is float32, as on the CPU. */
#include "kernels/cuda/optim.h"
#include "kernels/cuda/cast.h"
#include "kernels/optim.h"

#include <cuda_runtime.h>

enum { DT_F32, DT_F64, DT_F16, DT_BF16 };

/* the math of one compute type */
template <typename T> struct om;
template <> struct om<float> {
  typedef lt_sgd_args_f sgd_args;
  typedef lt_adam_args_f adam_args;
  __device__ static void sgd(float *p, float g, float *buf, const sgd_args *a, bool wd, bool mom, bool first, bool nest) {
    lt_sgd_elem_f(p, g, buf, a, wd, mom, first, nest);
  }
  __device__ static float moments(float p, float g, float *m, float *v, float *vmax, const adam_args *a, bool wd,
                                  bool ams, bool lo) {
    return lt_adam_moments_f(p, g, m, v, vmax, a, wd, ams, lo);
  }
  __device__ static float apply(float p, float m, float root, const adam_args *a) { return lt_adam_apply_f(p, m, root, a); }
};
template <> struct om<double> {
  typedef lt_sgd_args_d sgd_args;
  typedef lt_adam_args_d adam_args;
  __device__ static void sgd(double *p, double g, double *buf, const sgd_args *a, bool wd, bool mom, bool first,
                             bool nest) {
    lt_sgd_elem_d(p, g, buf, a, wd, mom, first, nest);
  }
  __device__ static double moments(double p, double g, double *m, double *v, double *vmax, const adam_args *a,
                                   bool wd, bool ams, bool lo) {
    return lt_adam_moments_d(p, g, m, v, vmax, a, wd, ams, lo);
  }
  __device__ static double apply(double p, double m, double root, const adam_args *a) {
    return lt_adam_apply_d(p, m, root, a);
  }
};

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename ST, typename T>
__global__ void sgd_k(ST *p, const ST *g, T *buf, int64_t n, const typename om<T>::sgd_args a, bool wd, bool mom,
                      bool first, bool nest) {
  GRID_STRIDE(i, n) {
    T pv = (T)lt_cu_ld(p[i]);
    om<T>::sgd(&pv, (T)lt_cu_ld(g[i]), mom ? buf + i : NULL, &a, wd, mom, first, nest);
    p[i] = lt_cu_st<ST>::f(pv);
  }
}

template <typename ST, typename T>
__global__ void adam_k(ST *p, const ST *g, T *m, T *v, T *vmax, int64_t n, const typename om<T>::adam_args a, bool wd,
                       bool ams, bool lo) {
  GRID_STRIDE(i, n) {
    T pv = (T)lt_cu_ld(p[i]);
    T vv = om<T>::moments(pv, (T)lt_cu_ld(g[i]), m + i, v + i, ams ? vmax + i : NULL, &a, wd, ams, lo);
    p[i] = lt_cu_st<ST>::f(om<T>::apply(pv, m[i], sqrt(vv), &a));
  }
}

static dim3 grid_for(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return dim3((unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535));
}

template <typename ST, typename T>
static int sgd_t(void *p, const void *g, void *buf, int64_t n, const void *args, bool wd, bool mom, bool first,
                 bool nest, cudaStream_t s) {
  if (n > 0)
    sgd_k<ST, T><<<grid_for(n), 256, 0, s>>>((ST *)p, (const ST *)g, (T *)buf, n,
                                             *(const typename om<T>::sgd_args *)args, wd, mom, first, nest);
  return (int)cudaGetLastError();
}

template <typename ST, typename T>
static int adam_t(void *p, const void *g, void *m, void *v, void *vmax, int64_t n, const void *args, bool wd, bool ams,
                  bool lo, cudaStream_t s) {
  if (n > 0)
    adam_k<ST, T><<<grid_for(n), 256, 0, s>>>((ST *)p, (const ST *)g, (T *)m, (T *)v, (T *)vmax, n,
                                              *(const typename om<T>::adam_args *)args, wd, ams, lo);
  return (int)cudaGetLastError();
}

extern "C" int lt_cuda_k_sgd(int dtype, void *p, const void *g, void *buf, int64_t n, const void *args, bool has_wd,
                             bool has_mom, bool first, bool nesterov, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (dtype) {
    case DT_F32: return sgd_t<float, float>(p, g, buf, n, args, has_wd, has_mom, first, nesterov, s);
    case DT_F64: return sgd_t<double, double>(p, g, buf, n, args, has_wd, has_mom, first, nesterov, s);
    case DT_F16: return sgd_t<lt_half, float>(p, g, buf, n, args, has_wd, has_mom, first, nesterov, s);
    case DT_BF16: return sgd_t<lt_bfloat16, float>(p, g, buf, n, args, has_wd, has_mom, first, nesterov, s);
    default: return -1;
  }
}

extern "C" int lt_cuda_k_adam(int dtype, void *p, const void *g, void *exp_avg, void *exp_avg_sq,
                              void *max_exp_avg_sq, int64_t n, const void *args, bool has_wd, bool amsgrad,
                              bool lerp_lo, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (dtype) {
    case DT_F32:
      return adam_t<float, float>(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, n, args, has_wd, amsgrad, lerp_lo, s);
    case DT_F64:
      return adam_t<double, double>(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, n, args, has_wd, amsgrad, lerp_lo, s);
    case DT_F16:
      return adam_t<lt_half, float>(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, n, args, has_wd, amsgrad, lerp_lo, s);
    case DT_BF16:
      return adam_t<lt_bfloat16, float>(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, n, args, has_wd, amsgrad, lerp_lo,
                                        s);
    default: return -1;
  }
}
