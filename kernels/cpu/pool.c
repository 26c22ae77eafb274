/* 2-D pooling loops (see pool.h). Each window's valid kernel rows and columns are computed as
   ranges, so the inner loops run without bounds checks; planes are independent, so OpenMP splits
   them when the work is large enough to pay for waking the threads. */
#include "kernels/cpu/pool.h"

#include <math.h>
#include <string.h>

/* below this many window reads, one thread is faster than waking the others */
#define POOL_PAR_WORK ((int64_t)1 << 15)

/* Kernel taps [lo, hi) whose input position start + k*d lies in [0, n). */
static inline void taps(int64_t start, int64_t d, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t l = start < 0 ? (-start + d - 1) / d : 0;
  int64_t h = start >= n ? 0 : (n - start + d - 1) / d;
  if (h > k) h = k;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* avg_pool2d's window: the clipped bounds and the divisor */
static inline void avg_window(const lt_pool_geom_t *g, int64_t oh, int64_t ow, bool cip, int64_t divisor,
                              int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1, double *div) {
  int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
  int64_t he = hs + g->kh, we = ws + g->kw;
  if (he > g->H + g->ph) he = g->H + g->ph;
  if (we > g->W + g->pw) we = g->W + g->pw;
  int64_t pool = (he - hs) * (we - ws);
  if (hs < 0) hs = 0;
  if (ws < 0) ws = 0;
  if (he > g->H) he = g->H;
  if (we > g->W) we = g->W;
  *h0 = hs, *h1 = he, *w0 = ws, *w1 = we;
  if (divisor) *div = (double)divisor;
  else *div = (double)(cip ? pool : (he - hs) * (we - ws));
}

#define POOL(sfx, T)                                                                                \
  void lt_max_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *x, T *y, int64_t *idx) { \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                       \
    _Pragma("omp parallel for schedule(static) if (planes * OH * OW * g->kh * g->kw > POOL_PAR_WORK)") \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      const T *xp = x + p * H * W;                                                                  \
      T *yp = y + p * OH * OW;                                                                      \
      int64_t *ip = idx + p * OH * OW;                                                              \
      for (int64_t oh = 0; oh < OH; oh++) {                                                         \
        int64_t hs = oh * g->sh - g->ph, klo, khi;                                                  \
        taps(hs, g->dh, g->kh, H, &klo, &khi);                                                      \
        for (int64_t ow = 0; ow < OW; ow++) {                                                       \
          int64_t ws = ow * g->sw - g->pw, llo, lhi;                                                \
          taps(ws, g->dw, g->kw, W, &llo, &lhi);                                                    \
          T best = -INFINITY;                                                                       \
          int64_t at = (hs + klo * g->dh) * W + ws + llo * g->dw;                                   \
          for (int64_t ki = klo; ki < khi; ki++) {                                                  \
            const int64_t rowat = (hs + ki * g->dh) * W + ws;                                       \
            for (int64_t kj = llo; kj < lhi; kj++) {                                                \
              const int64_t i = rowat + kj * g->dw;                                                 \
              const T v = xp[i];                                                                    \
              if (v > best || isnan(v)) { best = v; at = i; }                                       \
            }                                                                                       \
          }                                                                                         \
          yp[oh * OW + ow] = best;                                                                  \
          ip[oh * OW + ow] = at + 1;                                                                \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_max_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *gy,           \
                                    const int64_t *idx, T *gx) {                                    \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                            \
    _Pragma("omp parallel for schedule(static) if (planes * (OHW + HW) > POOL_PAR_WORK)")           \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      T *gxp = gx + p * HW;                                                                         \
      const T *gyp = gy + p * OHW;                                                                  \
      const int64_t *ip = idx + p * OHW;                                                            \
      memset(gxp, 0, sizeof(T) * (size_t)HW);                                                       \
      for (int64_t o = 0; o < OHW; o++) {                                                           \
        const uint64_t i = (uint64_t)(ip[o] - 1);                                                   \
        if (i < (uint64_t)HW) gxp[i] += gyp[o];                                                     \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_avg_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, bool cip, int64_t divisor,      \
                           const T *x, T *y) {                                                      \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                       \
    _Pragma("omp parallel for schedule(static) if (planes * OH * OW * g->kh * g->kw > POOL_PAR_WORK)") \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      const T *xp = x + p * H * W;                                                                  \
      T *yp = y + p * OH * OW;                                                                      \
      for (int64_t oh = 0; oh < OH; oh++)                                                           \
        for (int64_t ow = 0; ow < OW; ow++) {                                                       \
          int64_t h0, h1, w0, w1;                                                                   \
          double div;                                                                               \
          avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);                            \
          T s = 0;                                                                                  \
          for (int64_t ih = h0; ih < h1; ih++)                                                      \
            for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * W + iw];                              \
          /* an empty window (only padding) gives 0, as in PyTorch */                               \
          yp[oh * OW + ow] = (h0 < h1 && w0 < w1) ? (T)(s / (T)div) : (T)0;                          \
        }                                                                                           \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_avg_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, bool cip, int64_t divisor, \
                                    const T *gy, T *gx) {                                           \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                       \
    _Pragma("omp parallel for schedule(static) if (planes * OH * OW * g->kh * g->kw > POOL_PAR_WORK)") \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      T *gxp = gx + p * H * W;                                                                      \
      const T *gyp = gy + p * OH * OW;                                                              \
      memset(gxp, 0, sizeof(T) * (size_t)(H * W));                                                  \
      for (int64_t oh = 0; oh < OH; oh++)                                                           \
        for (int64_t ow = 0; ow < OW; ow++) {                                                       \
          int64_t h0, h1, w0, w1;                                                                   \
          double div;                                                                               \
          avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);                            \
          const T v = gyp[oh * OW + ow] / (T)div;                                                   \
          for (int64_t ih = h0; ih < h1; ih++)                                                      \
            for (int64_t iw = w0; iw < w1; iw++) gxp[ih * W + iw] += v;                             \
        }                                                                                           \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_adaptive_avg_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *x, T *y) {    \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                       \
    _Pragma("omp parallel for schedule(static) if (planes * H * W > POOL_PAR_WORK)")                \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      const T *xp = x + p * H * W;                                                                  \
      T *yp = y + p * OH * OW;                                                                      \
      for (int64_t oh = 0; oh < OH; oh++) {                                                         \
        const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;                          \
        for (int64_t ow = 0; ow < OW; ow++) {                                                       \
          const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;                        \
          T s = 0;                                                                                  \
          for (int64_t ih = h0; ih < h1; ih++)                                                      \
            for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * W + iw];                              \
          yp[oh * OW + ow] = s / (T)((h1 - h0) * (w1 - w0));                                        \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_adaptive_avg_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *gy, T *gx) { \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                       \
    _Pragma("omp parallel for schedule(static) if (planes * H * W > POOL_PAR_WORK)")                \
    for (int64_t p = 0; p < planes; p++) {                                                          \
      T *gxp = gx + p * H * W;                                                                      \
      const T *gyp = gy + p * OH * OW;                                                              \
      memset(gxp, 0, sizeof(T) * (size_t)(H * W));                                                  \
      for (int64_t oh = 0; oh < OH; oh++) {                                                         \
        const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;                          \
        for (int64_t ow = 0; ow < OW; ow++) {                                                       \
          const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;                        \
          const T v = gyp[oh * OW + ow] / (T)((h1 - h0) * (w1 - w0));                               \
          for (int64_t ih = h0; ih < h1; ih++)                                                      \
            for (int64_t iw = w0; iw < w1; iw++) gxp[ih * W + iw] += v;                             \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }

POOL(f32, float)
POOL(f64, double)
