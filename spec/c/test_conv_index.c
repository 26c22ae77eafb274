/* The CUDA convolution's index math (kernels/cuda/conv.h), run on the host: the per-thread forms
   the kernels use (lt_im2col_pixel_*, lt_col2im_pixel_*, in 32- and 64-bit indices) against the
   CPU's im2col and col2im (kernels/cpu/im2col.h) over geometries with stride, padding, dilation
   and rectangular kernels, float32 and float64, bit for bit (the column values are chosen so that
   every col2im sum is exact whatever the order of its terms).
   Output: a line per failed check, then "N passed, N failed"; exit status 1 on any failure. */
#include "kernels/cpu/im2col.h"
#include "kernels/cuda/conv.h"
#include "spec/c/tensor_check.h"


static lt_conv_geom_t geom(int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t s, int64_t p,
                           int64_t d) {
  lt_conv_geom_t g = {C, H, W, kh, kw, s, s, p, p, d, d, 0, 0};
  g.OH = (H + 2 * p - d * (kh - 1) - 1) / s + 1;
  g.OW = (W + 2 * p - d * (kw - 1) - 1) / s + 1;
  return g;
}

/* im2col of one sample by the pixel form, the way the kernel walks it: a (channel, position) at a
   time */
#define IM2COL_BY_PIXEL(T, IT)                                                                  \
  static void im2col_px_##T##_##IT(const lt_conv_geom_t *g, const T *x, T *col) {              \
    IT OHW = (IT)(g->OH * g->OW);                                                              \
    for (IT c = 0; c < (IT)g->C; c++)                                                          \
      for (IT p = 0; p < OHW; p++)                                                             \
        lt_im2col_pixel_##T##_##IT(g, x + c * (IT)(g->H * g->W), p, col + c * (IT)(g->kh * g->kw) * OHW + p); \
  }                                                                                            \
  static void col2im_px_##T##_##IT(const lt_conv_geom_t *g, const T *col, T *x) {              \
    IT cper = (IT)(g->kh * g->kw * g->OH * g->OW);                                             \
    for (IT c = 0; c < (IT)g->C; c++)                                                          \
      for (IT h = 0; h < (IT)g->H; h++)                                                        \
        for (IT w = 0; w < (IT)g->W; w++)                                                      \
          x[(c * (IT)g->H + h) * (IT)g->W + w] = lt_col2im_pixel_##T##_##IT(g, col + c * cper, h, w); \
  }
IM2COL_BY_PIXEL(float, int32_t)
IM2COL_BY_PIXEL(float, int64_t)
IM2COL_BY_PIXEL(double, int32_t)
IM2COL_BY_PIXEL(double, int64_t)

#define RUN(T, IT, sfx)                                                                                    \
  do {                                                                                                    \
    T *x = malloc(sizeof(T) * (size_t)nx), *c1 = malloc(sizeof(T) * (size_t)nc), *c2 = malloc(sizeof(T) * (size_t)nc); \
    T *i1 = calloc((size_t)nx, sizeof(T)), *i2 = malloc(sizeof(T) * (size_t)nx);                         \
    for (int64_t i = 0; i < nx; i++) x[i] = (T)((i * 37 % 101) - 50) / 8;                                \
    lt_im2col_##sfx(&g, x, c1);                                                                           \
    im2col_px_##T##_##IT(&g, x, c2);                                                                      \
    check(memcmp(c1, c2, sizeof(T) * (size_t)nc) == 0, "im2col %s/%s, geometry %d", #T, #IT, k);         \
    for (int64_t i = 0; i < nc; i++) c1[i] = (T)((i * 53 % 97) - 48) / 16;                               \
    lt_col2im_##sfx(&g, c1, i1);                                                                          \
    col2im_px_##T##_##IT(&g, c1, i2);                                                                     \
    /* sixteenths of at most 3 in magnitude, at most kh*kw of them: every sum is exact in any order */ \
    check(memcmp(i1, i2, sizeof(T) * (size_t)nx) == 0, "col2im %s/%s against the CPU's, geometry %d", #T, #IT, k); \
    free(x); free(c1); free(c2); free(i1); free(i2);                                                      \
  } while (0)

int main(void) {
  lt_conv_geom_t gs[] = {
      geom(1, 28, 28, 3, 3, 1, 1, 1), /* the Fashion-MNIST CNN's first layer */
      geom(3, 14, 14, 3, 3, 1, 1, 1), geom(2, 9, 11, 3, 5, 2, 1, 1), geom(2, 10, 7, 3, 3, 1, 2, 2),
      geom(4, 13, 13, 5, 5, 3, 2, 1), geom(1, 6, 6, 1, 1, 1, 0, 1), geom(2, 8, 8, 2, 2, 2, 0, 1),
      geom(3, 7, 9, 3, 2, 2, 3, 2),
  };
  for (int k = 0; k < (int)(sizeof gs / sizeof gs[0]); k++) {
    lt_conv_geom_t g = gs[k];
    /* geometries with other strides per axis */
    if (k == 7) g.sw = 1, g.OW = (g.W + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
    int64_t nx = g.C * g.H * g.W, nc = g.C * g.kh * g.kw * g.OH * g.OW;
    RUN(float, int32_t, f32);
    RUN(float, int64_t, f32);
    RUN(double, int32_t, f64);
    RUN(double, int64_t, f64);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
