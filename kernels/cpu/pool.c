/* 2-D pooling loops (see pool.h). Each window's valid kernel rows and columns are computed as
   ranges, so the inner loops run without bounds checks; planes are independent, so OpenMP splits
   them when the work is large enough to pay for waking the threads. */
#include "kernels/cpu/pool.h"

#include "core/iter.h"

#include <math.h>
#include <stdbool.h>
#include <omp.h>
#include <string.h>

/* below this many window reads, one thread is faster than waking the others */
#define POOL_PAR_WORK ((int64_t)1 << 15)

/* for (p = 0; p < planes; p++) call, over OpenMP threads when the work is large enough; small work
   stays out of libgomp altogether (even a one-thread parallel region costs a futex wake-up) */
#define FOR_PLANES(work, planes, p, call)                                                               \
  do {                                                                                                  \
    int nt_ = (work) > POOL_PAR_WORK ? lt_threads_for((double)(work), POOL_PAR_WORK / 2, 0) : 1;           \
    if (nt_ > 1) {                                                                                      \
      _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)") for (int64_t p = 0; p < (planes); p++) call; \
    } else {                                                                                            \
      for (int64_t p = 0; p < (planes); p++) call;                                                      \
    }                                                                                                   \
  } while (0)

/* Kernel taps [lo, hi) whose input position start + k*d lies in [0, n). */
static inline void taps(int64_t start, int64_t d, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  if (start >= 0 && start + (k - 1) * d < n) { /* inside: the usual case, without divisions */
    *lo = 0;
    *hi = k;
    return;
  }
  int64_t l = start < 0 ? (-start + d - 1) / d : 0;
  int64_t h = start >= n ? 0 : (n - start + d - 1) / d;
  if (h > k) h = k;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* avg_pool2d's window: the bounds clipped to the input, and the divisor */
static inline void avg_window(const lt_pool_geom_t *g, int64_t oh, int64_t ow, bool cip, int64_t divisor,
                              int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1, double *div) {
  int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
  int64_t he = hs + g->kh, we = ws + g->kw;
  /* ceil_mode windows may reach past the padding: PyTorch counts padding only up to it */
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

/* adaptive windows: [floor(i*n/out), ceil((i+1)*n/out)) */
static inline int64_t ada_start(int64_t i, int64_t n, int64_t out) { return i * n / out; }
static inline int64_t ada_end(int64_t i, int64_t n, int64_t out) { return ((i + 1) * n + out - 1) / out; }

/* 2x2 max pooling, stride 2, of one float32 plane with AVX-512: an output row at a time, sixteen
   windows a vector (the last vector of a row masked, so that rows of 14 or 7 outputs, a CNN's,
   take one): even and odd columns of the two input rows are separated by permutes, and the window
   order, NaN rule and indices are the scalar loop's. False when the plane's indices do not fit
   32-bit offsets (the scalar loop runs then). */
#if defined(__AVX512F__)
#include <immintrin.h>
static bool max_2x2_fast_f32(const lt_pool_geom_t *g, const float *xp, float *yp, int64_t *ip) {
  const int64_t W = g->W, OW = g->OW;
  if (g->H * W >= ((int64_t)1 << 30)) return false;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i one = _mm512_set1_epi32(1), w0 = _mm512_set1_epi32((int)W), w1 = _mm512_set1_epi32((int)W + 1);
  const __m512i lane2 = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), lane2hi = _mm512_setr_epi64(16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t oh = 0; oh < g->OH; oh++) {
    const float *r0 = xp + 2 * oh * W, *r1 = r0 + W;
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t k = OW - ow < 16 ? OW - ow : 16; /* windows in this vector */
      const __mmask16 lo = (__mmask16)(k >= 8 ? 0xFFFF : (1u << (2 * k)) - 1);
      const __mmask16 hi = (__mmask16)(k <= 8 ? 0 : k == 16 ? 0xFFFF : (1u << (2 * k - 16)) - 1);
      const __mmask16 out = (__mmask16)(k == 16 ? 0xFFFF : (1u << k) - 1);
      const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
      const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
      __m512 best = _mm512_permutex2var_ps(a0, even, a1);
      __m512i off = _mm512_setzero_si512();
      __m512 v = _mm512_permutex2var_ps(a0, odd, a1);
      __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, v);
      off = _mm512_mask_mov_epi32(off, take, one);
      v = _mm512_permutex2var_ps(b0, even, b1);
      take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, v);
      off = _mm512_mask_mov_epi32(off, take, w0);
      v = _mm512_permutex2var_ps(b0, odd, b1);
      take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, v);
      off = _mm512_mask_mov_epi32(off, take, w1);
      _mm512_mask_storeu_ps(yp + oh * OW + ow, out, best);
      /* 1-based indices: 2 oh W + 2 (ow + lane) + offset + 1 */
      const __m512i base = _mm512_set1_epi64(2 * oh * W + 2 * ow + 1);
      const __m512i i0 = _mm512_add_epi64(_mm512_add_epi64(base, lane2), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(off)));
      const __m512i i1 = _mm512_add_epi64(_mm512_add_epi64(base, lane2hi),
                                          _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(off, 1)));
      _mm512_mask_storeu_epi64(ip + oh * OW + ow, (__mmask8)(out & 0xFF), i0);
      _mm512_mask_storeu_epi64(ip + oh * OW + ow + 8, (__mmask8)(out >> 8), i1);
    }
  }
  return true;
}
#else
static bool max_2x2_fast_f32(const lt_pool_geom_t *g, const float *xp, float *yp, int64_t *ip) {
  (void)g, (void)xp, (void)yp, (void)ip;
  return false;
}
#endif
static bool max_2x2_fast_f64(const lt_pool_geom_t *g, const double *xp, double *yp, int64_t *ip) {
  (void)g, (void)xp, (void)yp, (void)ip;
  return false;
}

#define POOL(sfx, T)                                                                                    \
  /* 2x2 windows, stride 2, no padding or dilation, every window inside the plane: the usual     \
     pooling of CNNs, branch-free so that the compiler can vectorise it; the same choices as the     \
     general loop (the first maximum in row-major order; a NaN wins, the last one) */                 \
  static void max_plane_2x2_##sfx(const lt_pool_geom_t *g, const T *xp, T *yp, int64_t *ip) {           \
    const int64_t W = g->W, OW = g->OW;                                                                 \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                            \
      const T *r0 = xp + 2 * oh * W, *r1 = r0 + W;                                                      \
      T *yo = yp + oh * OW;                                                                             \
      int64_t *io = ip + oh * OW;                                                                       \
      const int64_t base = 2 * oh * W + 1;                                                              \
      for (int64_t ow = 0; ow < OW; ow++) {                                                             \
        T best = r0[2 * ow];                                                                            \
        int64_t at = base + 2 * ow;                                                                     \
        T v = r0[2 * ow + 1];                                                                           \
        bool take = v > best || v != v;                                                                 \
        best = take ? v : best;                                                                         \
        at = take ? base + 2 * ow + 1 : at;                                                             \
        v = r1[2 * ow];                                                                                 \
        take = v > best || v != v;                                                                      \
        best = take ? v : best;                                                                         \
        at = take ? base + W + 2 * ow : at;                                                             \
        v = r1[2 * ow + 1];                                                                             \
        take = v > best || v != v;                                                                      \
        best = take ? v : best;                                                                         \
        at = take ? base + W + 2 * ow + 1 : at;                                                         \
        yo[ow] = best;                                                                                  \
        io[ow] = at;                                                                                    \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
                                                                                                        \
  static void max_plane_##sfx(const lt_pool_geom_t *g, const T *xp, T *yp, int64_t *ip) {               \
    const int64_t W = g->W;                                                                             \
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 && g->dh == 1 && \
        g->dw == 1 && 2 * g->OH <= g->H && 2 * g->OW <= W) {                                            \
      if (!max_2x2_fast_##sfx(g, xp, yp, ip)) max_plane_2x2_##sfx(g, xp, yp, ip);                       \
      return;                                                                                           \
    }                                                                                                   \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                            \
      int64_t hs = oh * g->sh - g->ph, klo, khi;                                                        \
      taps(hs, g->dh, g->kh, g->H, &klo, &khi);                                                         \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                          \
        int64_t ws = ow * g->sw - g->pw, llo, lhi;                                                      \
        taps(ws, g->dw, g->kw, W, &llo, &lhi);                                                          \
        T best = -INFINITY;                                                                             \
        int64_t at = (hs + klo * g->dh) * W + ws + llo * g->dw;                                         \
        for (int64_t ki = klo; ki < khi; ki++) {                                                        \
          const int64_t row = (hs + ki * g->dh) * W + ws;                                               \
          for (int64_t kj = llo; kj < lhi; kj++) {                                                      \
            const int64_t i = row + kj * g->dw;                                                         \
            const T v = xp[i];                                                                          \
            if (v > best || isnan(v)) { best = v; at = i; }                                             \
          }                                                                                             \
        }                                                                                               \
        yp[oh * g->OW + ow] = best;                                                                     \
        ip[oh * g->OW + ow] = at + 1;                                                                   \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
                                                                                                        \
  void lt_max_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *x, T *y, int64_t *idx) {   \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * OHW * g->kh * g->kw, planes, p,                                                 \
               max_plane_##sfx(g, x + p * HW, y + p * OHW, idx + p * OHW));                             \
  }                                                                                                     \
                                                                                                        \
  static void max_back_plane_##sfx(int64_t HW, int64_t OHW, const T *gyp, const int64_t *ip, T *gxp) {  \
    memset(gxp, 0, sizeof(T) * (size_t)HW);                                                             \
    for (int64_t o = 0; o < OHW; o++) {                                                                 \
      const uint64_t i = (uint64_t)(ip[o] - 1);                                                         \
      if (i < (uint64_t)HW) gxp[i] += gyp[o];                                                           \
    }                                                                                                   \
  }                                                                                                     \
                                                                                                        \
  void lt_max_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *gy,               \
                                    const int64_t *idx, T *gx) {                                        \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * (OHW + HW), planes, p,                                                          \
               max_back_plane_##sfx(HW, OHW, gy + p * OHW, idx + p * OHW, gx + p * HW));                \
  }                                                                                                     \
                                                                                                        \
  static void avg_plane_##sfx(const lt_pool_geom_t *g, bool cip, int64_t divisor, const T *xp, T *yp) { \
    for (int64_t oh = 0; oh < g->OH; oh++)                                                              \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                          \
        int64_t h0, h1, w0, w1;                                                                         \
        double div;                                                                                     \
        avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);                                  \
        T s = 0;                                                                                        \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
          for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * g->W + iw];                                 \
        /* a window of padding only gives 0, as in PyTorch */                                           \
        yp[oh * g->OW + ow] = (h0 < h1 && w0 < w1) ? (T)(s / (T)div) : (T)0;                            \
      }                                                                                                 \
  }                                                                                                     \
                                                                                                        \
  void lt_avg_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, bool cip, int64_t divisor,          \
                           const T *x, T *y) {                                                          \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * OHW * g->kh * g->kw, planes, p,                                                 \
               avg_plane_##sfx(g, cip, divisor, x + p * HW, y + p * OHW));                              \
  }                                                                                                     \
                                                                                                        \
  static void avg_back_plane_##sfx(const lt_pool_geom_t *g, bool cip, int64_t divisor, const T *gyp,    \
                                   T *gxp) {                                                            \
    memset(gxp, 0, sizeof(T) * (size_t)(g->H * g->W));                                                  \
    for (int64_t oh = 0; oh < g->OH; oh++)                                                              \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                          \
        int64_t h0, h1, w0, w1;                                                                         \
        double div;                                                                                     \
        avg_window(g, oh, ow, cip, divisor, &h0, &h1, &w0, &w1, &div);                                  \
        const T v = gyp[oh * g->OW + ow] / (T)div;                                                      \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
          for (int64_t iw = w0; iw < w1; iw++) gxp[ih * g->W + iw] += v;                                \
      }                                                                                                 \
  }                                                                                                     \
                                                                                                        \
  void lt_avg_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, bool cip, int64_t divisor, \
                                    const T *gy, T *gx) {                                               \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * OHW * g->kh * g->kw, planes, p,                                                 \
               avg_back_plane_##sfx(g, cip, divisor, gy + p * OHW, gx + p * HW));                       \
  }                                                                                                     \
                                                                                                        \
  static void ada_plane_##sfx(const lt_pool_geom_t *g, const T *xp, T *yp) {                            \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                            \
      const int64_t h0 = ada_start(oh, g->H, g->OH), h1 = ada_end(oh, g->H, g->OH);                     \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                          \
        const int64_t w0 = ada_start(ow, g->W, g->OW), w1 = ada_end(ow, g->W, g->OW);                   \
        T s = 0;                                                                                        \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
          for (int64_t iw = w0; iw < w1; iw++) s += xp[ih * g->W + iw];                                 \
        yp[oh * g->OW + ow] = s / (T)((h1 - h0) * (w1 - w0));                                           \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
                                                                                                        \
  void lt_adaptive_avg_pool2d_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *x, T *y) {        \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * (HW + OHW), planes, p, ada_plane_##sfx(g, x + p * HW, y + p * OHW));            \
  }                                                                                                     \
                                                                                                        \
  static void ada_back_plane_##sfx(const lt_pool_geom_t *g, const T *gyp, T *gxp) {                     \
    memset(gxp, 0, sizeof(T) * (size_t)(g->H * g->W));                                                  \
    for (int64_t oh = 0; oh < g->OH; oh++) {                                                            \
      const int64_t h0 = ada_start(oh, g->H, g->OH), h1 = ada_end(oh, g->H, g->OH);                     \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                          \
        const int64_t w0 = ada_start(ow, g->W, g->OW), w1 = ada_end(ow, g->W, g->OW);                   \
        const T v = gyp[oh * g->OW + ow] / (T)((h1 - h0) * (w1 - w0));                                  \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
          for (int64_t iw = w0; iw < w1; iw++) gxp[ih * g->W + iw] += v;                                \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
                                                                                                        \
  void lt_adaptive_avg_pool2d_backward_##sfx(const lt_pool_geom_t *g, int64_t planes, const T *gy, T *gx) { \
    const int64_t HW = g->H * g->W, OHW = g->OH * g->OW;                                                \
    FOR_PLANES(planes * (HW + OHW), planes, p, ada_back_plane_##sfx(g, gy + p * OHW, gx + p * HW));     \
  }

POOL(f32, float)
POOL(f64, double)
