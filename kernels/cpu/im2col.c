/* im2col and col2im (see im2col.h). Padding is handled by ranges computed once per kernel offset:
   the inner loops copy or add runs of valid positions without per-element bounds checks. */
#include "kernels/cpu/im2col.h"

#include <string.h>

/* The output columns [lo, hi) whose input column ow*s - p + off lies in [0, W). */
static inline void valid_range(int64_t off, int64_t s, int64_t p, int64_t W, int64_t OW, int64_t *lo,
                               int64_t *hi) {
  int64_t a = p - off;                 /* need ow*s >= a */
  int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t b = W + p - off;             /* need ow*s < b */
  int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
  if (h > OW) h = OW;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

#define IM2COL(sfx, T)                                                                          \
  void lt_im2col_##sfx(const lt_conv_geom_t *g, const T *im, T *col) {                          \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;                       \
    for (int64_t c = 0; c < g->C; c++) {                                                        \
      const T *plane = im + c * H * W;                                                          \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                  \
        int64_t oh_lo, oh_hi;                                                                   \
        valid_range(ki * g->dh, g->sh, g->ph, H, OH, &oh_lo, &oh_hi);                           \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                \
          T *row = col + ((c * g->kh + ki) * g->kw + kj) * OH * OW;                             \
          int64_t ow_lo, ow_hi;                                                                 \
          valid_range(kj * g->dw, sw, g->pw, W, OW, &ow_lo, &ow_hi);                            \
          const int64_t iw0 = kj * g->dw - g->pw;                                               \
          if (oh_lo > 0) memset(row, 0, sizeof(T) * (size_t)(oh_lo * OW));                      \
          for (int64_t oh = oh_lo; oh < oh_hi; oh++) {                                          \
            const T *src = plane + (oh * g->sh - g->ph + ki * g->dh) * W + iw0;                 \
            T *dst = row + oh * OW;                                                             \
            for (int64_t ow = 0; ow < ow_lo; ow++) dst[ow] = 0;                                 \
            if (sw == 1) {                                                                      \
              memcpy(dst + ow_lo, src + ow_lo, sizeof(T) * (size_t)(ow_hi - ow_lo));            \
            } else {                                                                            \
              for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow] = src[ow * sw];                \
            }                                                                                   \
            for (int64_t ow = ow_hi; ow < OW; ow++) dst[ow] = 0;                                \
          }                                                                                     \
          if (oh_hi < OH) memset(row + oh_hi * OW, 0, sizeof(T) * (size_t)((OH - oh_hi) * OW)); \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
                                                                                                \
  void lt_col2im_##sfx(const lt_conv_geom_t *g, const T *col, T *im) {                          \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;                       \
    for (int64_t c = 0; c < g->C; c++) {                                                        \
      T *plane = im + c * H * W;                                                                \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                  \
        int64_t oh_lo, oh_hi;                                                                   \
        valid_range(ki * g->dh, g->sh, g->ph, H, OH, &oh_lo, &oh_hi);                           \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                \
          const T *row = col + ((c * g->kh + ki) * g->kw + kj) * OH * OW;                       \
          int64_t ow_lo, ow_hi;                                                                 \
          valid_range(kj * g->dw, sw, g->pw, W, OW, &ow_lo, &ow_hi);                            \
          const int64_t iw0 = kj * g->dw - g->pw;                                               \
          for (int64_t oh = oh_lo; oh < oh_hi; oh++) {                                          \
            T *dst = plane + (oh * g->sh - g->ph + ki * g->dh) * W + iw0;                       \
            const T *src = row + oh * OW;                                                       \
            if (sw == 1) {                                                                      \
              for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow] += src[ow];                    \
            } else {                                                                            \
              for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow * sw] += src[ow];               \
            }                                                                                   \
          }                                                                                     \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }

IM2COL(f32, float)
IM2COL(f64, double)
