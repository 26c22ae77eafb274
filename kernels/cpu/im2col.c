/* im2col and col2im (see im2col.h). Padding is handled by ranges computed once per kernel offset:
   the inner loops copy or add runs of valid positions without per-element bounds checks. */
#include "kernels/cpu/im2col.h"

#include <stdbool.h>
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

#define IM2COL(sfx, T)                                                                              \
  void lt_im2col_##sfx(const lt_conv_geom_t *g, const T *im, T *col) {                              \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;                           \
    for (int64_t c = 0; c < g->C; c++) {                                                            \
      const T *plane = im + c * H * W;                                                              \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                      \
        int64_t oh_lo, oh_hi;                                                                       \
        valid_range(ki * g->dh, g->sh, g->ph, H, OH, &oh_lo, &oh_hi);                               \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                    \
          T *row = col + ((c * g->kh + ki) * g->kw + kj) * OH * OW;                                 \
          int64_t ow_lo, ow_hi;                                                                     \
          valid_range(kj * g->dw, sw, g->pw, W, OW, &ow_lo, &ow_hi);                                \
          const int64_t iw0 = kj * g->dw - g->pw;                                                   \
          if (oh_lo > 0) memset(row, 0, sizeof(T) * (size_t)(oh_lo * OW));                          \
          if (sw == 1 && g->sh == 1 && iw0 == 0 && OW == W) {                                       \
            /* whole input rows, one after another: one block */                                    \
            if (oh_hi > oh_lo)                                                                      \
              memcpy(row + oh_lo * OW, plane + (oh_lo - g->ph + ki * g->dh) * W,                    \
                     sizeof(T) * (size_t)((oh_hi - oh_lo) * OW));                                   \
          } else {                                                                                  \
            for (int64_t oh = oh_lo; oh < oh_hi; oh++) {                                            \
              const T *src = plane + (oh * g->sh - g->ph + ki * g->dh) * W;                         \
              T *dst = row + oh * OW;                                                               \
              for (int64_t ow = 0; ow < ow_lo; ow++) dst[ow] = 0;                                   \
              if (sw == 1) {                                                                        \
                if (ow_hi > ow_lo)                                                                  \
                  memcpy(dst + ow_lo, src + ow_lo + iw0, sizeof(T) * (size_t)(ow_hi - ow_lo));      \
              } else {                                                                              \
                for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow] = src[ow * sw + iw0];            \
              }                                                                                     \
              for (int64_t ow = ow_hi; ow < OW; ow++) dst[ow] = 0;                                  \
            }                                                                                       \
          }                                                                                         \
          if (oh_hi < OH) memset(row + oh_hi * OW, 0, sizeof(T) * (size_t)((OH - oh_hi) * OW));     \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_col2im_##sfx(const lt_conv_geom_t *g, const T *col, T *im) {                              \
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;                           \
    for (int64_t c = 0; c < g->C; c++) {                                                            \
      T *plane = im + c * H * W;                                                                    \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                      \
        int64_t oh_lo, oh_hi;                                                                       \
        valid_range(ki * g->dh, g->sh, g->ph, H, OH, &oh_lo, &oh_hi);                               \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                    \
          const T *row = col + ((c * g->kh + ki) * g->kw + kj) * OH * OW;                           \
          int64_t ow_lo, ow_hi;                                                                     \
          valid_range(kj * g->dw, sw, g->pw, W, OW, &ow_lo, &ow_hi);                                \
          const int64_t iw0 = kj * g->dw - g->pw;                                                   \
          for (int64_t oh = oh_lo; oh < oh_hi; oh++) {                                              \
            T *dst = plane + (oh * g->sh - g->ph + ki * g->dh) * W;                                 \
            const T *src = row + oh * OW;                                                           \
            if (sw == 1) {                                                                          \
              for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow + iw0] += src[ow];                  \
            } else {                                                                                \
              for (int64_t ow = ow_lo; ow < ow_hi; ow++) dst[ow * sw + iw0] += src[ow];             \
            }                                                                                       \
          }                                                                                         \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }

IM2COL(f32, float)
IM2COL(f64, double)

/* The valid output columns of each kernel column, computed once per plane (on the stack for the
   usual kernel widths; on the fly for very wide ones). */
#define DW_KW_MAX 32
typedef struct {
  int64_t lo[DW_KW_MAX], hi[DW_KW_MAX];
  bool cached;
} dw_cols_t;

static inline void dw_cols_init(const lt_conv_geom_t *g, dw_cols_t *c) {
  c->cached = g->kw <= DW_KW_MAX;
  if (c->cached)
    for (int64_t kj = 0; kj < g->kw; kj++) valid_range(kj * g->dw, g->sw, g->pw, g->W, g->OW, &c->lo[kj], &c->hi[kj]);
}
static inline void dw_cols(const lt_conv_geom_t *g, const dw_cols_t *c, int64_t kj, int64_t *lo, int64_t *hi) {
  if (c->cached) *lo = c->lo[kj], *hi = c->hi[kj];
  else valid_range(kj * g->dw, g->sw, g->pw, g->W, g->OW, lo, hi);
}

/* Row by row: for each output row, the kernel rows whose input row is inside, then each kernel
   column over its valid output columns. Row pointers stay inside the planes: the column offset
   (kj*dw - pw, maybe negative) is added to indices, not to pointers. */
#define DWCONV(sfx, T)                                                                              \
  void lt_dwconv_plane_##sfx(const lt_conv_geom_t *g, const T *x, const T *wk, T bias, T *y) {      \
    const int64_t W = g->W, OW = g->OW, sw = g->sw;                                                 \
    dw_cols_t cols;                                                                                 \
    dw_cols_init(g, &cols);                                                                         \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                        \
      T *yr = y + oh * OW;                                                                          \
      for (int64_t ow = 0; ow < OW; ow++) yr[ow] = bias;                                            \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                      \
        const int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                         \
        if (ih < 0 || ih >= g->H) continue;                                                         \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                    \
          int64_t lo, hi;                                                                           \
          dw_cols(g, &cols, kj, &lo, &hi);                                                          \
          const T wv = wk[ki * g->kw + kj];                                                         \
          const T *xr = x + ih * W;                                                                 \
          const int64_t off = kj * g->dw - g->pw;                                                   \
          if (sw == 1) {                                                                            \
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + off];                       \
          } else {                                                                                  \
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw + off];                  \
          }                                                                                         \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_dwconv_plane_gx_##sfx(const lt_conv_geom_t *g, const T *gy, const T *wk, T *gx) {         \
    const int64_t W = g->W, OW = g->OW, sw = g->sw;                                                 \
    dw_cols_t cols;                                                                                 \
    dw_cols_init(g, &cols);                                                                         \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                        \
      const T *gr = gy + oh * OW;                                                                   \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                      \
        const int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                         \
        if (ih < 0 || ih >= g->H) continue;                                                         \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                    \
          int64_t lo, hi;                                                                           \
          dw_cols(g, &cols, kj, &lo, &hi);                                                          \
          const T wv = wk[ki * g->kw + kj];                                                         \
          T *xr = gx + ih * W;                                                                      \
          const int64_t off = kj * g->dw - g->pw;                                                   \
          if (sw == 1) {                                                                            \
            for (int64_t ow = lo; ow < hi; ow++) xr[ow + off] += wv * gr[ow];                       \
          } else {                                                                                  \
            for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw + off] += wv * gr[ow];                  \
          }                                                                                         \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_dwconv_plane_gw_##sfx(const lt_conv_geom_t *g, const T *gy, const T *x, T *gwk) {         \
    const int64_t W = g->W, OW = g->OW, sw = g->sw;                                                 \
    dw_cols_t cols;                                                                                 \
    dw_cols_init(g, &cols);                                                                         \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                        \
      const T *gr = gy + oh * OW;                                                                   \
      for (int64_t ki = 0; ki < g->kh; ki++) {                                                      \
        const int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                         \
        if (ih < 0 || ih >= g->H) continue;                                                         \
        for (int64_t kj = 0; kj < g->kw; kj++) {                                                    \
          int64_t lo, hi;                                                                           \
          dw_cols(g, &cols, kj, &lo, &hi);                                                          \
          const T *xr = x + ih * W;                                                                 \
          const int64_t off = kj * g->dw - g->pw;                                                   \
          T s = 0;                                                                                  \
          if (sw == 1) {                                                                            \
            _Pragma("omp simd reduction(+:s)")                                                      \
            for (int64_t ow = lo; ow < hi; ow++) s += gr[ow] * xr[ow + off];                        \
          } else {                                                                                  \
            _Pragma("omp simd reduction(+:s)")                                                      \
            for (int64_t ow = lo; ow < hi; ow++) s += gr[ow] * xr[ow * sw + off];                   \
          }                                                                                         \
          gwk[ki * g->kw + kj] += s;                                                                \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
  }

DWCONV(f32, float)
DWCONV(f64, double)

/* Stride 1: the plane is copied once into a zero-padded buffer of Hp x Wp (Hp = H + 2ph,
   Wp = W + 2pw), and the output is computed Wp wide (the last Wp - OW columns of each row are
   junk, never read back): every tap is then a constant offset off = ki*dh*Wp + kj*dw into the
   buffer, and each tap is one long vectorised loop over the plane instead of a short one per row.
   The flat range is [0, ni) with ni = (OH-1)*Wp + OW, so that i + off stays inside Hp*Wp. */
static inline int64_t s1_wp(const lt_conv_geom_t *g) { return g->W + 2 * g->pw; }
static inline int64_t s1_ni(const lt_conv_geom_t *g) { return (g->OH - 1) * s1_wp(g) + g->OW; }

int64_t lt_dwconv_s1_work(const lt_conv_geom_t *g) {
  return (g->H + 2 * g->ph) * s1_wp(g) + g->OH * s1_wp(g);
}

#define DWCONV_S1(sfx, T)                                                                           \
  static void s1_pad_##sfx(const lt_conv_geom_t *g, const T *x, T *xp) {                            \
    const int64_t W = g->W, Wp = s1_wp(g), pw = g->pw;                                              \
    memset(xp, 0, sizeof(T) * (size_t)(g->ph * Wp));                                                \
    T *r = xp + g->ph * Wp;                                                                         \
    for (int64_t h = 0; h < g->H; h++, r += Wp) {                                                   \
      for (int64_t j = 0; j < pw; j++) r[j] = 0, r[pw + W + j] = 0;                                 \
      memcpy(r + pw, x + h * W, sizeof(T) * (size_t)W);                                             \
    }                                                                                               \
    memset(r, 0, sizeof(T) * (size_t)(g->ph * Wp));                                                 \
  }                                                                                                 \
  /* gy (OH x OW) laid out Wp wide with zeros in the junk columns */                                \
  static void s1_widen_##sfx(const lt_conv_geom_t *g, const T *gy, T *gp) {                         \
    const int64_t OW = g->OW, Wp = s1_wp(g);                                                        \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                        \
      memcpy(gp + oh * Wp, gy + oh * OW, sizeof(T) * (size_t)OW);                                   \
      if (oh + 1 < g->OH)                                                                           \
        for (int64_t j = OW; j < Wp; j++) gp[oh * Wp + j] = 0;                                      \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_dwconv_s1_fwd_##sfx(const lt_conv_geom_t *g, const T *x, const T *wk, int64_t nf,         \
                              const T *bias, T *y, T *work) {                                       \
    const int64_t Wp = s1_wp(g), ni = s1_ni(g), kk = g->kh * g->kw, OW = g->OW, OHW = g->OH * OW;   \
    T *xp = work, *yp = work + (g->H + 2 * g->ph) * Wp;                                             \
    s1_pad_##sfx(g, x, xp);                                                                         \
    for (int64_t f = 0; f < nf; f++) {                                                              \
      const T *w = wk + f * kk;                                                                     \
      const T b = bias ? bias[f] : (T)0;                                                            \
      for (int64_t i = 0; i < ni; i++) yp[i] = b;                                                   \
      int64_t t = 0;                                                                                \
      /* three taps a pass: a third of the loads and stores of yp */                                \
      for (; t + 3 <= kk; t += 3) {                                                                 \
        const T *s0 = xp + (t / g->kw) * g->dh * Wp + (t % g->kw) * g->dw;                          \
        const T *s1 = xp + ((t + 1) / g->kw) * g->dh * Wp + ((t + 1) % g->kw) * g->dw;              \
        const T *s2 = xp + ((t + 2) / g->kw) * g->dh * Wp + ((t + 2) % g->kw) * g->dw;              \
        const T w0 = w[t], w1 = w[t + 1], w2 = w[t + 2];                                            \
        _Pragma("omp simd")                                                                         \
        for (int64_t i = 0; i < ni; i++) yp[i] += w0 * s0[i] + w1 * s1[i] + w2 * s2[i];             \
      }                                                                                             \
      for (; t < kk; t++) {                                                                         \
        const T *s0 = xp + (t / g->kw) * g->dh * Wp + (t % g->kw) * g->dw;                          \
        const T w0 = w[t];                                                                          \
        _Pragma("omp simd")                                                                         \
        for (int64_t i = 0; i < ni; i++) yp[i] += w0 * s0[i];                                       \
      }                                                                                             \
      T *yf = y + f * OHW;                                                                          \
      for (int64_t oh = 0; oh < g->OH; oh++) memcpy(yf + oh * OW, yp + oh * Wp, sizeof(T) * (size_t)OW); \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_dwconv_s1_gw_##sfx(const lt_conv_geom_t *g, const T *gy, const T *x, int64_t nf, T *gw,   \
                             T *work) {                                                             \
    const int64_t Wp = s1_wp(g), ni = s1_ni(g), kk = g->kh * g->kw, OHW = g->OH * g->OW;            \
    T *xp = work, *gp = work + (g->H + 2 * g->ph) * Wp;                                             \
    s1_pad_##sfx(g, x, xp);                                                                         \
    for (int64_t f = 0; f < nf; f++) {                                                              \
      s1_widen_##sfx(g, gy + f * OHW, gp);                                                          \
      T *gwf = gw + f * kk;                                                                         \
      int64_t t = 0;                                                                                \
      for (; t + 3 <= kk; t += 3) {                                                                 \
        const T *s0 = xp + (t / g->kw) * g->dh * Wp + (t % g->kw) * g->dw;                          \
        const T *s1 = xp + ((t + 1) / g->kw) * g->dh * Wp + ((t + 1) % g->kw) * g->dw;              \
        const T *s2 = xp + ((t + 2) / g->kw) * g->dh * Wp + ((t + 2) % g->kw) * g->dw;              \
        T a0 = 0, a1 = 0, a2 = 0;                                                                   \
        _Pragma("omp simd reduction(+:a0,a1,a2)")                                                   \
        for (int64_t i = 0; i < ni; i++) {                                                          \
          const T v = gp[i];                                                                        \
          a0 += v * s0[i], a1 += v * s1[i], a2 += v * s2[i];                                        \
        }                                                                                           \
        gwf[t] += a0, gwf[t + 1] += a1, gwf[t + 2] += a2;                                           \
      }                                                                                             \
      for (; t < kk; t++) {                                                                         \
        const T *s0 = xp + (t / g->kw) * g->dh * Wp + (t % g->kw) * g->dw;                          \
        T a0 = 0;                                                                                   \
        _Pragma("omp simd reduction(+:a0)")                                                         \
        for (int64_t i = 0; i < ni; i++) a0 += gp[i] * s0[i];                                       \
        gwf[t] += a0;                                                                               \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
                                                                                                    \
  void lt_dwconv_s1_gx_##sfx(const lt_conv_geom_t *g, const T *gy, const T *wk, int64_t nf, T *gx,  \
                             T *work) {                                                             \
    const int64_t Wp = s1_wp(g), Hp = g->H + 2 * g->ph, ni = s1_ni(g), kk = g->kh * g->kw;          \
    const int64_t OHW = g->OH * g->OW;                                                              \
    T *gxp = work, *gp = work + Hp * Wp;                                                            \
    memset(gxp, 0, sizeof(T) * (size_t)(Hp * Wp));                                                  \
    for (int64_t f = 0; f < nf; f++) {                                                              \
      s1_widen_##sfx(g, gy + f * OHW, gp);                                                          \
      for (int64_t t = 0; t < kk; t++) {                                                            \
        T *d = gxp + (t / g->kw) * g->dh * Wp + (t % g->kw) * g->dw;                                \
        const T w0 = wk[f * kk + t];                                                                \
        _Pragma("omp simd")                                                                         \
        for (int64_t i = 0; i < ni; i++) d[i] += w0 * gp[i];                                        \
      }                                                                                             \
    }                                                                                               \
    for (int64_t h = 0; h < g->H; h++)                                                              \
      memcpy(gx + h * g->W, gxp + (h + g->ph) * Wp + g->pw, sizeof(T) * (size_t)g->W);              \
  }

DWCONV_S1(f32, float)
DWCONV_S1(f64, double)
