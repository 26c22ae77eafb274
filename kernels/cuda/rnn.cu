/* The fused LSTM cell on the GPU: a grid-stride thread per unit of a row (N * H), the math of
   kernels/rnn.h, as the CPU loop (kernels/cpu/rnn.c). */
#include "kernels/cuda/rnn.h"
#include "kernels/rnn.h"

#include <cuda_runtime.h>

enum { DT_F32 = 0, DT_F64 = 1 }; /* lt_dtype numbering */

#define CELL_KERNELS(T, SUF)                                                                         \
  __global__ void lstm_fwd_##SUF(const T *g, const T *c, T *h, T *c2, int64_t N, int64_t H) {        \
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < N * H;                       \
         u += (int64_t)gridDim.x * blockDim.x) {                                                     \
      int64_t n = u / H, j = u % H;                                                                  \
      const T *r = g + n * 4 * H;                                                                    \
      lt_lstm_cell_fwd_##SUF(r[j], r[H + j], r[2 * H + j], r[3 * H + j], c[u], &h[u], &c2[u]);       \
    }                                                                                                \
  }                                                                                                  \
  __global__ void lstm_bwd_##SUF(const T *g, const T *c, const T *dh, const T *dc2, T *dg, T *dc,    \
                                 int64_t N, int64_t H) {                                             \
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < N * H;                       \
         u += (int64_t)gridDim.x * blockDim.x) {                                                     \
      int64_t n = u / H, j = u % H;                                                                  \
      const T *r = g + n * 4 * H;                                                                    \
      T *q = dg + n * 4 * H;                                                                         \
      lt_lstm_cell_bwd_##SUF(r[j], r[H + j], r[2 * H + j], r[3 * H + j], c[u], dh ? dh[u] : (T)0,    \
                             dc2 ? dc2[u] : (T)0, &q[j], &q[H + j], &q[2 * H + j], &q[3 * H + j], &dc[u]); \
    }                                                                                                \
  }
CELL_KERNELS(float, f)
CELL_KERNELS(double, d)

static unsigned blocks_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

extern "C" int lt_cuda_k_lstm_cell(int dtype, const void *g, const void *c, void *h, void *c2, int64_t N, int64_t H,
                                   void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (N * H == 0) return 0;
  if (dtype == DT_F32)
    lstm_fwd_f<<<blocks_for(N * H), 256, 0, s>>>((const float *)g, (const float *)c, (float *)h, (float *)c2, N, H);
  else if (dtype == DT_F64)
    lstm_fwd_d<<<blocks_for(N * H), 256, 0, s>>>((const double *)g, (const double *)c, (double *)h, (double *)c2, N, H);
  else
    return -1;
  return (int)cudaGetLastError();
}

extern "C" int lt_cuda_k_lstm_cell_backward(int dtype, const void *g, const void *c, const void *dh, const void *dc2,
                                            void *dg, void *dc, int64_t N, int64_t H, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (N * H == 0) return 0;
  if (dtype == DT_F32)
    lstm_bwd_f<<<blocks_for(N * H), 256, 0, s>>>((const float *)g, (const float *)c, (const float *)dh,
                                                 (const float *)dc2, (float *)dg, (float *)dc, N, H);
  else if (dtype == DT_F64)
    lstm_bwd_d<<<blocks_for(N * H), 256, 0, s>>>((const double *)g, (const double *)c, (const double *)dh,
                                                 (const double *)dc2, (double *)dg, (double *)dc, N, H);
  else
    return -1;
  return (int)cudaGetLastError();
}
