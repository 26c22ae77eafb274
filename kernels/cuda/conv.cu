/* CUDA helpers of the im2col + cuBLAS convolution: grid-stride kernels over the column matrix
   (im2col, a thread per output position), the image (col2im as a gather: each image element sums
   the column entries it fed, so no atomics and a deterministic order), and the bias. The index
   math is kernels/cuda/conv.h's (checked against the CPU's im2col by spec/c/test_conv_index.c). */
#include "kernels/cuda/conv.h"

#include <cuda_runtime.h>

#define THREADS 256
#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

static unsigned blocks_for(int64_t n) {
  int64_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 1 ? 1 : b < 65535 ? b : 65535);
}

/* the per-thread forms of kernels/cuda/conv.h by type */
template <typename T, typename IT> struct px;
#define PX(T, IT)                                                                                  \
  template <> struct px<T, IT> {                                                                   \
    __device__ static void im(const lt_conv_geom_t *g, const T *x, IT p, T *out) {                \
      lt_im2col_pixel_##T##_##IT(g, x, p, out);                                                    \
    }                                                                                              \
    __device__ static T col(const lt_conv_geom_t *g, const T *c, IT h, IT w) {                    \
      return lt_col2im_pixel_##T##_##IT(g, c, h, w);                                               \
    }                                                                                              \
  };
PX(float, int32_t)
PX(float, int64_t)
PX(double, int32_t)
PX(double, int64_t)
#undef PX

/* Index math in IT: 32-bit where every index of the launch fits (divisions by a 32-bit divisor
   cost a fraction of 64-bit ones), else 64-bit. */

/* a thread per (sample, channel, output position) writes that position's kh*kw column entries
   (lt_im2col_pixel: one set of divisions for kh*kw elements, stores coalesced across positions) */
template <typename T, typename IT> __global__ void im2col_k(const lt_conv_geom_t g, IT nb, const T *x, T *col) {
  IT OHW = (IT)(g.OH * g.OW), total = nb * (IT)g.C * OHW;
  for (IT i = (IT)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (IT)gridDim.x * blockDim.x) {
    IT p = i % OHW, t = i / OHW; /* t = n * C + c */
    px<T, IT>::im(&g, x + t * (IT)(g.H * g.W), p, col + t * (IT)(g.kh * g.kw) * OHW + p);
  }
}

/* a thread per image element gathers the column entries it fed (lt_col2im_pixel) */
template <typename T, typename IT> __global__ void col2im_k(const lt_conv_geom_t g, IT nb, const T *col, T *x) {
  IT W = (IT)g.W, H = (IT)g.H, total = nb * (IT)g.C * H * W, cper = (IT)(g.kh * g.kw * g.OH * g.OW);
  for (IT i = (IT)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (IT)gridDim.x * blockDim.x) {
    IT w = i % W, t = i / W, h = t % H, nc = t / H; /* nc = n * C + c */
    x[i] = px<T, IT>::col(&g, col + nc * cper, h, w);
  }
}

template <typename T, typename IT> __global__ void bias_add_k(T *y, const T *b, IT N, IT Cout, IT OHW) {
  IT total = N * Cout * OHW;
  for (IT i = (IT)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (IT)gridDim.x * blockDim.x)
    y[i] += b[(i / OHW) % Cout];
}

/* The bias gradient in two deterministic passes: block (co, s) sums channel co over samples
   [s * N / S, (s + 1) * N / S) into part[co * S + s] (double); then a thread per channel adds its S
   parts in order. Many blocks keep enough loads in flight (a block per channel left most of the
   GPU idle, waiting on memory). */
template <typename T, typename IT>
__global__ void bias_grad_part_k(double *part, const T *gy, IT N, IT Cout, IT OHW, IT S) {
  __shared__ double sm[THREADS];
  IT co = blockIdx.x, s = blockIdx.y;
  IT n0 = s * N / S, n1 = (s + 1) * N / S, count = (n1 - n0) * OHW;
  double acc = 0;
  for (IT i = threadIdx.x; i < count; i += blockDim.x) {
    IT n = n0 + i / OHW, hw = i % OHW;
    acc += (double)gy[(n * Cout + co) * OHW + hw];
  }
  sm[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) sm[threadIdx.x] += sm[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[co * S + s] = sm[0];
}

template <typename T> __global__ void bias_grad_sum_k(T *gb, const double *part, int64_t Cout, int64_t S) {
  for (int64_t co = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; co < Cout; co += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0;
    for (int64_t s = 0; s < S; s++) acc += part[co * S + s];
    gb[co] = (T)acc;
  }
}

#define BY_T(dtype, ...)                          \
  switch (dtype) {                                \
    case 0: { typedef float T; __VA_ARGS__; }     \
    case 1: { typedef double T; __VA_ARGS__; }    \
    default: return -1;                           \
  }

extern "C" {

/* whether every index of a launch over `total` elements fits in 32 bits */
static bool fits32(int64_t total) { return total < ((int64_t)1 << 31); }

int lt_cuda_k_im2col(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *x, void *col, void *stream) {
  int64_t total = nb * g->C * g->OH * g->OW, span = nb * g->C * g->kh * g->kw * g->OH * g->OW;
  bool small = fits32(span) && fits32(nb * g->C * g->H * g->W);
  BY_T(dtype, {
    if (total > 0) {
      if (small)
        im2col_k<T, int32_t><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, (int32_t)nb, (const T *)x, (T *)col);
      else
        im2col_k<T, int64_t><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, nb, (const T *)x, (T *)col);
    }
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_col2im(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *col, void *x, void *stream) {
  int64_t total = nb * g->C * g->H * g->W, span = nb * g->C * g->kh * g->kw * g->OH * g->OW;
  bool small = fits32(span) && fits32(total);
  BY_T(dtype, {
    if (total > 0) {
      if (small)
        col2im_k<T, int32_t><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, (int32_t)nb, (const T *)col, (T *)x);
      else
        col2im_k<T, int64_t><<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(*g, nb, (const T *)col, (T *)x);
    }
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_bias_add(int dtype, void *y, const void *b, int64_t N, int64_t Cout, int64_t OHW, void *stream) {
  int64_t total = N * Cout * OHW;
  BY_T(dtype, {
    if (total > 0) {
      cudaStream_t s = (cudaStream_t)stream;
      if (fits32(total))
        bias_add_k<T, int32_t><<<blocks_for(total), THREADS, 0, s>>>((T *)y, (const T *)b, (int32_t)N, (int32_t)Cout, (int32_t)OHW);
      else
        bias_add_k<T, int64_t><<<blocks_for(total), THREADS, 0, s>>>((T *)y, (const T *)b, N, Cout, OHW);
    }
    return (int)cudaGetLastError();
  })
}

int64_t lt_cuda_k_bias_grad_splits(int64_t N, int64_t Cout) {
  if (N <= 0 || Cout <= 0) return 1;
  int64_t s = (1024 + Cout - 1) / Cout; /* about 1024 blocks in all */
  if (s > 64) s = 64;
  if (s > N) s = N;
  return s < 1 ? 1 : s;
}

int lt_cuda_k_bias_grad(int dtype, void *gb, const void *gy, int64_t N, int64_t Cout, int64_t OHW, double *part,
                        int64_t S, void *stream) {
  BY_T(dtype, {
    if (Cout > 0) {
      cudaStream_t s = (cudaStream_t)stream;
      if (Cout > INT32_MAX || S < 1 || S > 65535) return (int)cudaErrorInvalidValue;
      dim3 grid((unsigned)Cout, (unsigned)S);
      if (fits32(N * Cout * OHW) && fits32(N * S))
        bias_grad_part_k<T, int32_t><<<grid, THREADS, 0, s>>>(part, (const T *)gy, (int32_t)N, (int32_t)Cout,
                                                              (int32_t)OHW, (int32_t)S);
      else
        bias_grad_part_k<T, int64_t><<<grid, THREADS, 0, s>>>(part, (const T *)gy, N, Cout, OHW, S);
      cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return (int)e;
      bias_grad_sum_k<T><<<blocks_for(Cout), THREADS, 0, s>>>((T *)gb, part, Cout, S);
    }
    return (int)cudaGetLastError();
  })
}

} /* extern "C" */
