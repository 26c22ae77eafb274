/* im2col and col2im for 2-D convolution on one sample: pointers and sizes, no tensor bookkeeping.

   The image is C planes of H x W, contiguous. The column matrix has C*kh*kw rows (channel-major,
   then kernel row, then kernel column: the layout of a contiguous (C_out, C, kh, kw) weight's row)
   and OH*OW columns (the output positions, row-major). Positions that fall in the padding read 0
   (im2col) and are dropped (col2im). col2im adds into the image, which the caller zeroes first. */
#ifndef LT_CPU_IM2COL_H
#define LT_CPU_IM2COL_H

#include <stdint.h>

typedef struct {
  int64_t C, H, W;     /* input planes */
  int64_t kh, kw;      /* kernel */
  int64_t sh, sw;      /* stride */
  int64_t ph, pw;      /* padding */
  int64_t dh, dw;      /* dilation */
  int64_t OH, OW;      /* output size (consistent with the above) */
} lt_conv_geom_t;

void lt_im2col_f32(const lt_conv_geom_t *g, const float *im, float *col);
void lt_im2col_f64(const lt_conv_geom_t *g, const double *im, double *col);
void lt_col2im_f32(const lt_conv_geom_t *g, const float *col, float *im);
void lt_col2im_f64(const lt_conv_geom_t *g, const double *col, double *im);

#endif
