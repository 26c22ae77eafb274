/* CUDA 2-D pooling: a thread per output element for the forwards (the window loops of
   kernels/cpu/pool.c, whose window helpers are repeated here: they are static there); the
   backwards zero gx and add each output's gradient into its window (or its max's position) with
   atomicAdd, since windows may overlap. */
#include "kernels/cuda/pool.h"

#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256
#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

static unsigned blocks_for(int64_t n) {
  int64_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 1 ? 1 : b < 65535 ? b : 65535);
}

/* kernel taps [lo, hi) whose input position start + k*d lies in [0, n) */
__device__ inline void taps(int64_t start, int64_t d, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t l = start < 0 ? (-start + d - 1) / d : 0;
  int64_t h = start >= n ? 0 : (n - start + d - 1) / d;
  if (h > k) h = k;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* avg_pool2d's window clipped to the input, and its divisor (PyTorch's, as the CPU loops) */
__device__ inline void avg_window(const lt_pool_geom_t &g, int64_t oh, int64_t ow, bool cip, int64_t divisor,
                                  int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1, double *div) {
  int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
  int64_t he = hs + g.kh, we = ws + g.kw;
  if (he > g.H + g.ph) he = g.H + g.ph;
  if (we > g.W + g.pw) we = g.W + g.pw;
  int64_t pool = (he - hs) * (we - ws);
  if (hs < 0) hs = 0;
  if (ws < 0) ws = 0;
  if (he > g.H) he = g.H;
  if (we > g.W) we = g.W;
  *h0 = hs, *h1 = he, *w0 = ws, *w1 = we;
  *div = divisor ? (double)divisor : (double)(cip ? pool : (he - hs) * (we - ws));
}

__device__ inline int64_t ada_start(int64_t i, int64_t n, int64_t out) { return i * n / out; }
__device__ inline int64_t ada_end(int64_t i, int64_t n, int64_t out) { return ((i + 1) * n + out - 1) / out; }

template <typename T>
__global__ void max_k(const lt_pool_geom_t g, int64_t planes, const T *x, T *y, int64_t *idx) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW;
    const T *xp = x + p * HW;
    int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw, klo, khi, llo, lhi;
    taps(hs, g.dh, g.kh, g.H, &klo, &khi);
    taps(ws, g.dw, g.kw, g.W, &llo, &lhi);
    T best = -INFINITY;
    int64_t at = (hs + klo * g.dh) * g.W + ws + llo * g.dw;
    for (int64_t ki = klo; ki < khi; ki++)
      for (int64_t kj = llo; kj < lhi; kj++) {
        int64_t i = (hs + ki * g.dh) * g.W + ws + kj * g.dw;
        T v = xp[i];
        if (v > best || isnan(v)) { best = v; at = i; }
      }
    y[o] = best;
    idx[o] = at + 1;
  }
}

template <typename T>
__global__ void max_back_k(const lt_pool_geom_t g, int64_t planes, const T *gy, const int64_t *idx, T *gx) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    uint64_t i = (uint64_t)(idx[o] - 1);
    if (i < (uint64_t)HW) atomicAdd(gx + (o / OHW) * HW + (int64_t)i, gy[o]);
  }
}

template <typename T>
__global__ void avg_k(const lt_pool_geom_t g, int64_t planes, bool cip, int64_t divisor, const T *x, T *y) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW, h0, h1, w0, w1;
    double div;
    avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);
    const T *xp = x + p * HW;
    T s = 0;
    for (int64_t ih = h0; ih < h1; ih++)
      for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * g.W + iw];
    y[o] = (h0 < h1 && w0 < w1) ? (T)(s / (T)div) : (T)0; /* a window of padding only gives 0 */
  }
}

template <typename T>
__global__ void avg_back_k(const lt_pool_geom_t g, int64_t planes, bool cip, int64_t divisor, const T *gy, T *gx) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW, h0, h1, w0, w1;
    double div;
    avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);
    T v = gy[o] / (T)div;
    for (int64_t ih = h0; ih < h1; ih++)
      for (int64_t iw = w0; iw < w1; iw++) atomicAdd(gx + p * HW + ih * g.W + iw, v);
  }
}

template <typename T> __global__ void ada_k(const lt_pool_geom_t g, int64_t planes, const T *x, T *y) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW;
    int64_t h0 = ada_start(oh, g.H, g.OH), h1 = ada_end(oh, g.H, g.OH);
    int64_t w0 = ada_start(ow, g.W, g.OW), w1 = ada_end(ow, g.W, g.OW);
    const T *xp = x + p * HW;
    T s = 0;
    for (int64_t ih = h0; ih < h1; ih++)
      for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * g.W + iw];
    y[o] = s / (T)((h1 - h0) * (w1 - w0));
  }
}

template <typename T> __global__ void ada_back_k(const lt_pool_geom_t g, int64_t planes, const T *gy, T *gx) {
  int64_t OHW = g.OH * g.OW, HW = g.H * g.W;
  GRID_STRIDE(o, planes * OHW) {
    int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW;
    int64_t h0 = ada_start(oh, g.H, g.OH), h1 = ada_end(oh, g.H, g.OH);
    int64_t w0 = ada_start(ow, g.W, g.OW), w1 = ada_end(ow, g.W, g.OW);
    T v = gy[o] / (T)((h1 - h0) * (w1 - w0));
    for (int64_t ih = h0; ih < h1; ih++)
      for (int64_t iw = w0; iw < w1; iw++) atomicAdd(gx + p * HW + ih * g.W + iw, v);
  }
}

template <typename T>
static int pool_t(int kind, const lt_pool_geom_t *g, int64_t planes, bool cip, int64_t divisor, const void *in, void *out,
                  int64_t *idx, cudaStream_t s) {
  int64_t nout = planes * g->OH * g->OW;
  bool backward = kind == LT_CUDA_POOL_MAX_BACKWARD || kind == LT_CUDA_POOL_AVG_BACKWARD ||
                  kind == LT_CUDA_POOL_ADAPTIVE_BACKWARD;
  if (backward) { /* every element of gx is written: zeros, then the windows' shares */
    size_t bytes = (size_t)(planes * g->H * g->W) * sizeof(T);
    if (bytes > 0) {
      cudaError_t e = cudaMemsetAsync(out, 0, bytes, s);
      if (e != cudaSuccess) return (int)e;
    }
  }
  if (nout == 0) return 0;
  unsigned b = blocks_for(nout);
  switch (kind) {
    case LT_CUDA_POOL_MAX: max_k<T><<<b, THREADS, 0, s>>>(*g, planes, (const T *)in, (T *)out, idx); break;
    case LT_CUDA_POOL_MAX_BACKWARD: max_back_k<T><<<b, THREADS, 0, s>>>(*g, planes, (const T *)in, idx, (T *)out); break;
    case LT_CUDA_POOL_AVG: avg_k<T><<<b, THREADS, 0, s>>>(*g, planes, cip, divisor, (const T *)in, (T *)out); break;
    case LT_CUDA_POOL_AVG_BACKWARD:
      avg_back_k<T><<<b, THREADS, 0, s>>>(*g, planes, cip, divisor, (const T *)in, (T *)out);
      break;
    case LT_CUDA_POOL_ADAPTIVE: ada_k<T><<<b, THREADS, 0, s>>>(*g, planes, (const T *)in, (T *)out); break;
    case LT_CUDA_POOL_ADAPTIVE_BACKWARD: ada_back_k<T><<<b, THREADS, 0, s>>>(*g, planes, (const T *)in, (T *)out); break;
    default: return -1;
  }
  return (int)cudaGetLastError();
}

extern "C" int lt_cuda_k_pool2d(int kind, int dtype, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                                int64_t divisor, const void *in, void *out, int64_t *idx, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (dtype) {
    case 0: return pool_t<float>(kind, g, planes, count_include_pad, divisor, in, out, idx, s);
    case 1: return pool_t<double>(kind, g, planes, count_include_pad, divisor, in, out, idx, s);
    default: return -1;
  }
}
