/* The CUDA convolution helpers (kernels/cuda/conv.cu) for im2col + cuBLAS 2-D convolution
   (core/cuda_linalg.c): im2col / col2im over a chunk of samples, bias add and bias gradient. The
   per-thread index math is here, as LT_HD functions, so that a host build checks it against the
   CPU's im2col and col2im (spec/c/test_conv_index.c). Layouts: x (nb, C, H, W); col (nb, C*kh*kw,
   OH*OW), rows channel-major then kernel row then kernel column (the rows of a contiguous (Cout, C/groups, kh, kw) weight, group
   after group); y (N, Cout, OH*OW). Launchers take T = float32 (dtype 0) or float64 (dtype 1)
   device pointers and a cudaStream_t as `stream`, and return the launch's cudaError_t as an int,
   or -1 for another dtype. */
#ifndef LT_CUDA_CONV_H
#define LT_CUDA_CONV_H

#include "kernels/cpu/im2col.h" /* lt_conv_geom_t */
#include "kernels/lt_kernel.h"

#include <stdint.h>

/* The kernels' per-thread forms, in index type IT (int32_t where a launch's indices fit):
   lt_im2col_pixel writes output position p's kh*kw column entries of one (sample, channel) plane
   x, at out, out + OHW, ... (the rows of that channel, kernel row then column); lt_col2im_pixel
   gathers image element (h, w) of one plane from that plane's kh*kw column rows (kernel row, then
   column: no atomics, one order every run). */
#define LT_CONV_PIXEL(T, IT)                                                                          \
  LT_HD void lt_im2col_pixel_##T##_##IT(const lt_conv_geom_t *g, const T *x, IT p, T *out) {          \
    IT OW = (IT)g->OW, OHW = (IT)(g->OH * g->OW), H = (IT)g->H, W = (IT)g->W;                       \
    IT oh = p / OW, ow = p - oh * OW;                                                               \
    IT h0 = oh * (IT)g->sh - (IT)g->ph, w0 = ow * (IT)g->sw - (IT)g->pw;                            \
    for (IT ki = 0; ki < (IT)g->kh; ki++) {                                                         \
      IT h = h0 + ki * (IT)g->dh;                                                                   \
      for (IT kj = 0; kj < (IT)g->kw; kj++) {                                                       \
        IT w = w0 + kj * (IT)g->dw;                                                                 \
        *out = (h >= 0 && h < H && w >= 0 && w < W) ? x[h * W + w] : (T)0;                         \
        out += OHW;                                                                                 \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
  LT_HD T lt_col2im_pixel_##T##_##IT(const lt_conv_geom_t *g, const T *col, IT h, IT w) {           \
    IT OH = (IT)g->OH, OW = (IT)g->OW, OHW = OH * OW, sh = (IT)g->sh, sw = (IT)g->sw;               \
    T s = 0;                                                                                        \
    for (IT ki = 0; ki < (IT)g->kh; ki++) {                                                         \
      IT hh = h + (IT)g->ph - ki * (IT)g->dh;                                                       \
      if (hh < 0) continue;                                                                         \
      IT oh = hh / sh;                                                                              \
      if (oh * sh != hh || oh >= OH) continue;                                                      \
      for (IT kj = 0; kj < (IT)g->kw; kj++) {                                                       \
        IT ww = w + (IT)g->pw - kj * (IT)g->dw;                                                     \
        if (ww < 0) continue;                                                                       \
        IT ow = ww / sw;                                                                            \
        if (ow * sw != ww || ow >= OW) continue;                                                    \
        s += col[(ki * (IT)g->kw + kj) * OHW + oh * OW + ow];                                       \
      }                                                                                             \
    }                                                                                               \
    return s;                                                                                       \
  }
LT_CONV_PIXEL(float, int32_t)
LT_CONV_PIXEL(float, int64_t)
LT_CONV_PIXEL(double, int32_t)
LT_CONV_PIXEL(double, int64_t)

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_im2col(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *x, void *col, void *stream);
/* x (nb, C, H, W) = col2im(col): overwritten, no zeroing needed */
int lt_cuda_k_col2im(int dtype, const lt_conv_geom_t *g, int64_t nb, const void *col, void *x, void *stream);
/* y (N, Cout, OHW) += b[co] */
int lt_cuda_k_bias_add(int dtype, void *y, const void *b, int64_t N, int64_t Cout, int64_t OHW, void *stream);
/* gb[co] = the sum of gy (N, Cout, OHW) over n and positions (accumulated in double), through
   part: Cout * S doubles of device scratch, S from lt_cuda_k_bias_grad_splits(N, Cout) */
int64_t lt_cuda_k_bias_grad_splits(int64_t N, int64_t Cout);
int lt_cuda_k_bias_grad(int dtype, void *gb, const void *gy, int64_t N, int64_t Cout, int64_t OHW, double *part,
                        int64_t S, void *stream);

#ifdef __cplusplus
}
#endif

#endif
