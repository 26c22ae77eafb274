/* im2col and col2im (see im2col.h). Padding is handled by ranges computed once per kernel offset:
   the inner loops copy or add runs of valid positions without per-element bounds checks. */
#include "kernels/cpu/im2col.h"

#include <stdbool.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

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
    if (kk == 9 && g->kw == 3 && g->dh == 1 && g->dw == 1) {                                        \
      /* 3x3: the nine taps in one pass, straight into y (the same sums as the passes below) */     \
      for (int64_t f = 0; f < nf; f++) {                                                            \
        const T *w = wk + f * kk;                                                                   \
        const T b = bias ? bias[f] : (T)0;                                                          \
        const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],        \
                w7 = w[7], w8 = w[8];                                                               \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                                    \
          const T *r0 = xp + oh * Wp, *r1 = r0 + Wp, *r2 = r1 + Wp;                                 \
          T *yo = y + f * OHW + oh * OW;                                                            \
          _Pragma("omp simd")                                                                       \
          for (int64_t j = 0; j < OW; j++) {                                                        \
            T a = b + (w0 * r0[j] + w1 * r0[j + 1] + w2 * r0[j + 2]);                               \
            a += w3 * r1[j] + w4 * r1[j + 1] + w5 * r1[j + 2];                                      \
            yo[j] = a + (w6 * r2[j] + w7 * r2[j + 1] + w8 * r2[j + 2]);                             \
          }                                                                                         \
        }                                                                                           \
      }                                                                                             \
      return;                                                                                       \
    }                                                                                               \
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
      if (kk == 9 && g->kw == 3 && g->dh == 1 && g->dw == 1) { /* 3x3: one pass over gp */          \
        const T *s0 = xp, *s3 = xp + Wp, *s6 = xp + 2 * Wp;                                         \
        T a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0, a8 = 0;                   \
        _Pragma("omp simd reduction(+:a0,a1,a2,a3,a4,a5,a6,a7,a8)")                                 \
        for (int64_t i = 0; i < ni; i++) {                                                          \
          const T v = gp[i];                                                                        \
          a0 += v * s0[i], a1 += v * s0[i + 1], a2 += v * s0[i + 2];                                \
          a3 += v * s3[i], a4 += v * s3[i + 1], a5 += v * s3[i + 2];                                \
          a6 += v * s6[i], a7 += v * s6[i + 1], a8 += v * s6[i + 2];                                \
        }                                                                                           \
        gwf[0] += a0, gwf[1] += a1, gwf[2] += a2, gwf[3] += a3, gwf[4] += a4;                       \
        gwf[5] += a5, gwf[6] += a6, gwf[7] += a7, gwf[8] += a8;                                     \
        continue;                                                                                   \
      }                                                                                             \
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

/* ---- Winograd F(2x2, 3x3) transforms (Lavin & Gray 2016) ----
   A block of tile rows is laid out S = TW + 1 tiles a row, the last tile of each row junk: every
   transform is then one long loop over the block instead of a short one per tile row (TW is 7
   for a 14x14 output), at the price of 1/S more GEMM columns. */
static inline int64_t wino_th(const lt_conv_geom_t *g) { return (g->OH + 1) / 2; }
static inline int64_t wino_s(const lt_conv_geom_t *g) { return (g->OW + 1) / 2 + 1; }

int64_t lt_wino23_block_cols(const lt_conv_geom_t *g, int64_t rows) { return rows * wino_s(g); }
int64_t lt_wino23_tile_rows(const lt_conv_geom_t *g, int64_t N) { return N * wino_th(g); }
int64_t lt_wino23_work(const lt_conv_geom_t *g, int64_t rows) {
  const int64_t nb = rows * wino_s(g);
  const int64_t in = 8 * (nb + 1), out = 4 * nb;
  return in > out ? in : out;
}

void lt_wino23_weights_f32(const float *w, int64_t nout, int64_t nin, int64_t so, int64_t si, bool flip, float *U) {
  const int64_t OI = nout * nin;
  for (int64_t o = 0; o < nout; o++)
    for (int64_t i = 0; i < nin; i++) {
      const float *k = w + o * so + i * si;
      float gk[3][3], h[4][3];
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) gk[a][b] = flip ? k[(2 - a) * 3 + (2 - b)] : k[a * 3 + b];
      for (int b = 0; b < 3; b++) {
        h[0][b] = gk[0][b];
        h[1][b] = 0.5f * (gk[0][b] + gk[1][b] + gk[2][b]);
        h[2][b] = 0.5f * (gk[0][b] - gk[1][b] + gk[2][b]);
        h[3][b] = gk[2][b];
      }
      float *u = U + o * nin + i;
      for (int a = 0; a < 4; a++) {
        u[(a * 4 + 0) * OI] = h[a][0];
        u[(a * 4 + 1) * OI] = 0.5f * (h[a][0] + h[a][1] + h[a][2]);
        u[(a * 4 + 2) * OI] = 0.5f * (h[a][0] - h[a][1] + h[a][2]);
        u[(a * 4 + 3) * OI] = h[a][2];
      }
    }
}

/* n floats from s to d (not overlapping), for rows: up to 16 by moves of constant size, which the
   compiler inlines (the second overlapping the first); a library call per short row costs more */
static inline void short_copy(float *restrict d, const float *restrict s, int64_t n) {
  if (n > 16) {
    memcpy(d, s, sizeof(float) * (size_t)n);
  } else if (n >= 8) {
    memcpy(d, s, 8 * sizeof(float));
    memcpy(d + n - 8, s + n - 8, 8 * sizeof(float));
  } else if (n >= 4) {
    memcpy(d, s, 4 * sizeof(float));
    memcpy(d + n - 4, s + n - 4, 4 * sizeof(float));
  } else if (n >= 2) {
    memcpy(d, s, 2 * sizeof(float));
    memcpy(d + n - 2, s + n - 2, 2 * sizeof(float));
  } else if (n == 1) {
    d[0] = s[0];
  }
}
static inline void short_zero(float *d, int64_t n) {
  static const float zeros[16];
  if (n > 16) memset(d, 0, sizeof(float) * (size_t)n);
  else short_copy(d, zeros, n);
}

/* The padded rows a run of tile rows [tha, thb) of one plane needs (padded rows 2 tha .. 2 thb + 1),
   even rows to pe and odd rows to po, each row 2S wide (zero-padded); tile (th, tw)'s patch row i
   column j is then (i even ? pe : po)[2q + (i / 2) 2S + j], q = (th - tha) S + tw: linear in q,
   so the transforms are one loop over the run. Two extra zeros feed the last junk tile. */
static void wino_rows(const float *plane, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t S, int64_t tha,
                      int64_t thb, float *pe, float *po) {
  const int64_t rows = thb - tha + 1, w2 = 2 * S;
  int64_t n = W;
  if (pw + n > w2) n = w2 - pw;
#if defined(__AVX512F__)
  /* a row in one vector (outputs up to 14 wide): its n floats loaded under a mask and moved pw
     lanes up, the other lanes zero; 2-3x faster than zeroing and copying each short row */
  const bool vec = w2 <= 16 && n > 0;
  const __mmask16 keep = vec ? (__mmask16)((1u << w2) - 1) : 0, in = vec ? (__mmask16)((1u << n) - 1) : 0;
  const __mmask16 put = vec ? (__mmask16)(in << pw) : 0;
  const __m512i idx = _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                       _mm512_set1_epi32((int)(vec ? pw : 0)));
#endif
  for (int64_t k = 0; k < 2 * rows; k++) {
    const int64_t ih = 2 * tha + k - ph;
    float *dst = (k & 1 ? po : pe) + (k >> 1) * w2;
#if defined(__AVX512F__)
    if (vec) {
      __m512 v = _mm512_setzero_ps();
      if (ih >= 0 && ih < H) v = _mm512_maskz_permutexvar_ps(put, idx, _mm512_maskz_loadu_ps(in, plane + ih * W));
      _mm512_mask_storeu_ps(dst, keep, v);
      continue;
    }
#endif
    short_zero(dst, w2);
    if (ih >= 0 && ih < H) short_copy(dst + pw, plane + ih * W, n);
  }
  pe[rows * w2] = pe[rows * w2 + 1] = po[rows * w2] = po[rows * w2 + 1] = 0;
}

void lt_wino23_input_f32(const lt_conv_geom_t *g, const float *x, int64_t r0, int64_t r1, float *V, float *work) {
  const int64_t C = g->C, H = g->H, W = g->W, TH = wino_th(g), S = wino_s(g), nb = (r1 - r0) * S;
  float *pe = work, *po = work + (r1 - r0 + 1) * 2 * S + 2;
  const int64_t vs = C * nb;
  for (int64_t c = 0; c < C; c++)
    /* runs of tile rows within one sample */
    for (int64_t ra = r0; ra < r1;) {
      const int64_t n = ra / TH, tha = ra % TH, thb = (r1 - n * TH < TH ? r1 - n * TH : TH), qa = (ra - r0) * S;
      wino_rows(x + (n * C + c) * H * W, H, W, g->ph, g->pw, S, tha, thb, pe, po);
      const float *restrict d0 = pe, *restrict d1 = po, *restrict d2 = pe + 2 * S, *restrict d3 = po + 2 * S;
      /* V = B^T d B: rows (k) first, then columns (l); sixteen named pointers, not an array of
         them, so that the compiler sees they do not alias and vectorises over q */
      float *restrict v00 = V + c * nb + qa, *restrict v01 = v00 + vs, *restrict v02 = v00 + 2 * vs,
            *restrict v03 = v00 + 3 * vs;
      float *restrict v10 = v00 + 4 * vs, *restrict v11 = v00 + 5 * vs, *restrict v12 = v00 + 6 * vs,
            *restrict v13 = v00 + 7 * vs;
      float *restrict v20 = v00 + 8 * vs, *restrict v21 = v00 + 9 * vs, *restrict v22 = v00 + 10 * vs,
            *restrict v23 = v00 + 11 * vs;
      float *restrict v30 = v00 + 12 * vs, *restrict v31 = v00 + 13 * vs, *restrict v32 = v00 + 14 * vs,
            *restrict v33 = v00 + 15 * vs;
      const int64_t nq = (thb - tha) * S;
#pragma omp simd
      for (int64_t q = 0; q < nq; q++) {
        const int64_t j = 2 * q;
        /* R<k><j>: row combination k at patch column j */
        const float R00 = d0[j] - d2[j], R01 = d0[j + 1] - d2[j + 1], R02 = d0[j + 2] - d2[j + 2],
                    R03 = d0[j + 3] - d2[j + 3];
        const float R10 = d1[j] + d2[j], R11 = d1[j + 1] + d2[j + 1], R12 = d1[j + 2] + d2[j + 2],
                    R13 = d1[j + 3] + d2[j + 3];
        const float R20 = d2[j] - d1[j], R21 = d2[j + 1] - d1[j + 1], R22 = d2[j + 2] - d1[j + 2],
                    R23 = d2[j + 3] - d1[j + 3];
        const float R30 = d1[j] - d3[j], R31 = d1[j + 1] - d3[j + 1], R32 = d1[j + 2] - d3[j + 2],
                    R33 = d1[j + 3] - d3[j + 3];
        v00[q] = R00 - R02, v01[q] = R01 + R02, v02[q] = R02 - R01, v03[q] = R01 - R03;
        v10[q] = R10 - R12, v11[q] = R11 + R12, v12[q] = R12 - R11, v13[q] = R11 - R13;
        v20[q] = R20 - R22, v21[q] = R21 + R22, v22[q] = R22 - R21, v23[q] = R21 - R23;
        v30[q] = R30 - R32, v31[q] = R31 + R32, v32[q] = R32 - R31, v33[q] = R31 - R33;
      }
      ra = n * TH + thb;
    }
}

void lt_wino23_output_f32(const lt_conv_geom_t *g, int64_t O, const float *M, const float *bias, int64_t r0,
                          int64_t r1, float *y, float *work) {
  const int64_t OH = g->OH, OW = g->OW, TH = wino_th(g), S = wino_s(g), nb = (r1 - r0) * S;
  float *restrict t0 = work, *restrict t1 = work + 2 * nb;
  for (int64_t o = 0; o < O; o++) {
    const float b = bias ? bias[o] : 0.0f;
    const int64_t ms = O * nb;
    const float *restrict m00 = M + o * nb, *restrict m01 = m00 + ms, *restrict m02 = m00 + 2 * ms,
                *restrict m03 = m00 + 3 * ms;
    const float *restrict m10 = m00 + 4 * ms, *restrict m11 = m00 + 5 * ms, *restrict m12 = m00 + 6 * ms,
                *restrict m13 = m00 + 7 * ms;
    const float *restrict m20 = m00 + 8 * ms, *restrict m21 = m00 + 9 * ms, *restrict m22 = m00 + 10 * ms,
                *restrict m23 = m00 + 11 * ms;
    const float *restrict m30 = m00 + 12 * ms, *restrict m31 = m00 + 13 * ms, *restrict m32 = m00 + 14 * ms,
                *restrict m33 = m00 + 15 * ms;
    /* Y = A^T M A */
#pragma omp simd
    for (int64_t q = 0; q < nb; q++) {
      const float s00 = m00[q] + m10[q] + m20[q], s01 = m01[q] + m11[q] + m21[q];
      const float s02 = m02[q] + m12[q] + m22[q], s03 = m03[q] + m13[q] + m23[q];
      const float s10 = m10[q] - m20[q] - m30[q], s11 = m11[q] - m21[q] - m31[q];
      const float s12 = m12[q] - m22[q] - m32[q], s13 = m13[q] - m23[q] - m33[q];
      t0[2 * q] = b + s00 + s01 + s02;
      t0[2 * q + 1] = b + s01 - s02 - s03;
      t1[2 * q] = b + s10 + s11 + s12;
      t1[2 * q + 1] = b + s11 - s12 - s13;
    }
    for (int64_t rr = 0; rr < r1 - r0; rr++) {
      const int64_t r = r0 + rr, n = r / TH, oh = 2 * (r % TH);
      float *yo = y + (n * O + o) * OH * OW + oh * OW;
      const float *a = t0 + 2 * rr * S, *c = t1 + 2 * rr * S;
      for (int64_t j = 0; j < OW; j++) yo[j] = a[j];
      if (oh + 1 < OH)
        for (int64_t j = 0; j < OW; j++) yo[OW + j] = c[j];
    }
  }
}

void lt_wino23_gradout_f32(const lt_conv_geom_t *g, int64_t O, const float *gy, int64_t r0, int64_t r1, float *D,
                           float *work) {
  const int64_t OH = g->OH, OW = g->OW, TH = wino_th(g), S = wino_s(g), nb = (r1 - r0) * S;
  float *pe = work, *po = work + (r1 - r0 + 1) * 2 * S + 2;
  const int64_t ds = O * nb;
  for (int64_t o = 0; o < O; o++)
    for (int64_t ra = r0; ra < r1;) {
      const int64_t n = ra / TH, tha = ra % TH, thb = (r1 - n * TH < TH ? r1 - n * TH : TH), qa = (ra - r0) * S;
      /* the tiles' rows, zero past the output (the junk tile of each row included), so that those
         columns add nothing to the products */
      wino_rows(gy + (n * O + o) * OH * OW, OH, OW, 0, 0, S, tha, thb, pe, po);
      const float *restrict e = pe, *restrict f = po;
      float *restrict d00 = D + o * nb + qa, *restrict d01 = d00 + ds, *restrict d02 = d00 + 2 * ds,
            *restrict d03 = d00 + 3 * ds;
      float *restrict d10 = d00 + 4 * ds, *restrict d11 = d00 + 5 * ds, *restrict d12 = d00 + 6 * ds,
            *restrict d13 = d00 + 7 * ds;
      float *restrict d20 = d00 + 8 * ds, *restrict d21 = d00 + 9 * ds, *restrict d22 = d00 + 10 * ds,
            *restrict d23 = d00 + 11 * ds;
      float *restrict d30 = d00 + 12 * ds, *restrict d31 = d00 + 13 * ds, *restrict d32 = d00 + 14 * ds,
            *restrict d33 = d00 + 15 * ds;
      const int64_t nq = (thb - tha) * S;
      /* D = A dY A^T, the adjoint of the output transform; dY = [[a0, b0], [a1, b1]] */
#pragma omp simd
      for (int64_t q = 0; q < nq; q++) {
        const float a0 = e[2 * q], b0 = e[2 * q + 1], a1 = f[2 * q], b1 = f[2 * q + 1];
        const float p0 = a0, q0 = b0, p1 = a0 + a1, q1 = b0 + b1, p2 = a0 - a1, q2 = b0 - b1, p3 = -a1, q3 = -b1;
        d00[q] = p0, d01[q] = p0 + q0, d02[q] = p0 - q0, d03[q] = -q0;
        d10[q] = p1, d11[q] = p1 + q1, d12[q] = p1 - q1, d13[q] = -q1;
        d20[q] = p2, d21[q] = p2 + q2, d22[q] = p2 - q2, d23[q] = -q2;
        d30[q] = p3, d31[q] = p3 + q3, d32[q] = p3 - q3, d33[q] = -q3;
      }
      ra = n * TH + thb;
    }
}

void lt_wino23_wgrad_f32(const float *dU, int64_t nout, int64_t nin, float *gw) {
  const int64_t OI = nout * nin;
  for (int64_t o = 0; o < nout; o++)
    for (int64_t i = 0; i < nin; i++) {
      const float *u = dU + o * nin + i;
      float h[4][3];
      /* gw = G^T dU G: each row of dU times G, then G^T times the columns */
      for (int a = 0; a < 4; a++) {
        const float u0 = u[(a * 4 + 0) * OI], u1 = u[(a * 4 + 1) * OI], u2 = u[(a * 4 + 2) * OI],
                    u3 = u[(a * 4 + 3) * OI];
        h[a][0] = u0 + 0.5f * (u1 + u2);
        h[a][1] = 0.5f * (u1 - u2);
        h[a][2] = 0.5f * (u1 + u2) + u3;
      }
      float *k = gw + (o * nin + i) * 9;
      for (int b = 0; b < 3; b++) {
        k[0 * 3 + b] = h[0][b] + 0.5f * (h[1][b] + h[2][b]);
        k[1 * 3 + b] = 0.5f * (h[1][b] - h[2][b]);
        k[2 * 3 + b] = 0.5f * (h[1][b] + h[2][b]) + h[3][b];
      }
    }
}
