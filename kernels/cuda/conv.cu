/* CUDA helpers of the im2col + cuBLAS convolution: grid-stride kernels over the column matrix
   (im2col), the image (col2im as a gather: each image element sums the column entries it fed, so
   no atomics and a deterministic order), and the bias. The index math is kernels/cuda/conv.h's. */
#include "kernels/cuda/conv.h"

#include <cuda_runtime.h>

#define THREADS 256
#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

static unsigned blocks_for(int64_t n) {
  int64_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 1 ? 1 : b < 65535 ? b : 65535);
}

template <typename T> struct cv;
template <> struct cv<float> {
  __device__ static float im(const lt_conv_geom_t *g, const float *x, int64_t r, int64_t p) {
    return lt_im2col_at_float(g, x, r, p);
  }
  __device__ static float col(const lt_conv_geom_t *g, const float *c, int64_t ch, int64_t h, int64_t w) {
    return lt_col2im_at_float(g, c, ch, h, w);
  }
};
template <> struct cv<double> {
  __device__ static double im(const lt_conv_geom_t *g, const double *x, int64_t r, int64_t p) {
    return lt_im2col_at_double(g, x, r, p);
  }
  __device__ static double col(const lt_conv_geom_t *g, const double *c, int64_t ch, int64_t h, int64_t w) {
    return lt_col2im_at_double(g, c, ch, h, w);
  }
};

template <typename T> __global__ void im2col_k(const lt_conv_geom_t g, int64_t nb, const T *x, T *col) {
  int64_t OHW = g.OH * g.OW, rows = g.C * g.kh * g.kw, per = rows * OHW, total = nb * per;
  GRID_STRIDE(i, total) {
    int64_t n = i / per, r = (i % per) / OHW, p = i % OHW;
    col[i] = cv<T>::im(&g, x + n * g.C * g.H * g.W, r, p);
  }
}

template <typename T> __global__ void col2im_k(const lt_conv_geom_t g, int64_t nb, const T *col, T *x) {
  int64_t HW = g.H * g.W, per = g.C * HW, total = nb * per, cper = g.C * g.kh * g.kw * g.OH * g.OW;
  GRID_STRIDE(i, total) {
    int64_t n = i / per, c = (i % per) / HW, h = (i % HW) / g.W, w = i % g.W;
    x[i] = cv<T>::col(&g, col + n * cper, c, h, w);
  }
}

template <typename T> __global__ void bias_add_k(T *y, const T *b, int64_t N, int64_t Cout, int64_t OHW) {
  int64_t total = N * Cout * OHW;
  GRID_STRIDE(i, total) y[i] += b[(i / OHW) % Cout];
}

/* a block per output channel */
template <typename T> __global__ void bias_grad_k(T *gb, const T *gy, int64_t N, int64_t Cout, int64_t OHW) {
  __shared__ double sm[THREADS];
  for (int64_t co = blockIdx.x; co < Cout; co += gridDim.x) {
    double s = 0;
    for (int64_t i = threadIdx.x; i < N * OHW; i += blockDim.x) s += (double)gy[((i / OHW) * Cout + co) * OHW + i % OHW];
    sm[threadIdx.x] = s;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
      if (threadIdx.x < k) sm[threadIdx.x] += sm[threadIdx.x + k];
      __syncthreads();
    }
    if (threadIdx.x == 0) gb[co] = (T)sm[0];
    __syncthreads();
  }
}

#define BY_T(dtype, ...)                          \
  switch (dtype) {                                \
    case 0: { typedef float T; __VA_ARGS__; }     \
    case 1: { typedef double T; __VA_ARGS__; }    \
    default: return -1;                           \
  }

extern "C" {

int lt_cuda_k_im2col(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *x, void *col, void *stream) {
  int64_t total = nb * g->C * g->kh * g->kw * g->OH * g->OW;
  BY_T(dtype, {
    if (total > 0) im2col_k<T><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, nb, (const T *)x, (T *)col);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_col2im(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *col, void *x, void *stream) {
  int64_t total = nb * g->C * g->H * g->W;
  BY_T(dtype, {
    if (total > 0) col2im_k<T><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, nb, (const T *)col, (T *)x);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_bias_add(int dtype, void *y, const void *b, int64_t N, int64_t Cout, int64_t OHW, void *stream) {
  int64_t total = N * Cout * OHW;
  BY_T(dtype, {
    if (total > 0) bias_add_k<T><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>((T *)y, (const T *)b, N, Cout, OHW);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_bias_grad(int dtype, void *gb, const void *gy, int64_t N, int64_t Cout, int64_t OHW, void *stream) {
  BY_T(dtype, {
    if (Cout > 0) {
      unsigned blocks = (unsigned)(Cout < 65535 ? Cout : 65535);
      bias_grad_k<T><<<blocks, THREADS, 0, (cudaStream_t)stream>>>((T *)gb, (const T *)gy, N, Cout, OHW);
    }
    return (int)cudaGetLastError();
  })
}

} /* extern "C" */
