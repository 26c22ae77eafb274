/* im2col and col2im for 2-D convolution on one sample: pointers and sizes, no tensor bookkeeping.

   The image is C planes of H x W, contiguous. The column matrix has C*kh*kw rows (channel-major,
   then kernel row, then kernel column: the layout of a contiguous (C_out, C, kh, kw) weight's row)
   and OH*OW columns (the output positions, row-major). Positions that fall in the padding read 0
   (im2col) and are dropped (col2im). col2im adds into the image, which the caller zeroes first. */
#ifndef LT_CPU_IM2COL_H
#define LT_CPU_IM2COL_H

#include <stdbool.h>
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

/* Direct convolution of one input plane with one kh x kw filter (a group with one input channel:
   depthwise convolution, or a one-channel input), where im2col + GEMM would multiply by K = kh*kw
   only. Row by row, so that an output row stays in L1 across the taps. g->C is ignored.
   plane: y = bias + x correlated with wk;  gx: gx += gy spread back through wk (the caller zeroes
   gx);  gw: gwk[tap] += sum of gy * the inputs the tap saw. */
void lt_dwconv_plane_f32(const lt_conv_geom_t *g, const float *x, const float *wk, float bias, float *y);
void lt_dwconv_plane_f64(const lt_conv_geom_t *g, const double *x, const double *wk, double bias, double *y);
void lt_dwconv_plane_gx_f32(const lt_conv_geom_t *g, const float *gy, const float *wk, float *gx);
void lt_dwconv_plane_gx_f64(const lt_conv_geom_t *g, const double *gy, const double *wk, double *gx);
void lt_dwconv_plane_gw_f32(const lt_conv_geom_t *g, const float *gy, const float *x, float *gwk);
void lt_dwconv_plane_gw_f64(const lt_conv_geom_t *g, const double *gy, const double *x, double *gwk);

/* The same for stride 1 (any padding and dilation), faster: one input plane x against nf filters
   wk (nf x kh*kw), on a zero-padded copy of the plane where each tap is one long loop (see
   im2col.c). work: lt_dwconv_s1_work(g) elements, the caller's.
   fwd: y (nf planes) = bias[f] (bias may be NULL) + x correlated with filter f;
   gw:  gw[f*kh*kw + tap] += sum of gy (nf planes) * the inputs the tap saw;
   gx:  gx (one plane) = the sum over the nf filters of gy plane f spread back (overwrites gx). */
int64_t lt_dwconv_s1_work(const lt_conv_geom_t *g);
void lt_dwconv_s1_fwd_f32(const lt_conv_geom_t *g, const float *x, const float *wk, int64_t nf, const float *bias,
                          float *y, float *work);
void lt_dwconv_s1_fwd_f64(const lt_conv_geom_t *g, const double *x, const double *wk, int64_t nf,
                          const double *bias, double *y, double *work);
void lt_dwconv_s1_gw_f32(const lt_conv_geom_t *g, const float *gy, const float *x, int64_t nf, float *gw,
                         float *work);
void lt_dwconv_s1_gw_f64(const lt_conv_geom_t *g, const double *gy, const double *x, int64_t nf, double *gw,
                         double *work);
void lt_dwconv_s1_gx_f32(const lt_conv_geom_t *g, const float *gy, const float *wk, int64_t nf, float *gx,
                         float *work);
void lt_dwconv_s1_gx_f64(const lt_conv_geom_t *g, const double *gy, const double *wk, int64_t nf, double *gx,
                         double *work);

/* Winograd F(2x2, 3x3) for a 3x3, stride 1, dilation 1 convolution (any padding) of the batch x
   (N, C, H, W) by O filters, in float32: 16 products U[xi] (O x C) @ V[xi] (C x tiles) replace the
   9 C multiply-adds per output of the direct method by 4 C per output. The output is cut into 2x2
   tiles, TH = ceil(OH/2) tile rows per sample; tile row r of the batch is (n, th) = (r / TH,
   r % TH). A block of tile rows [r0, r1) has lt_wino23_block_cols(g, r1 - r0) columns (nb).
   weights: U[xi][o][i] (16 x nout x nin) from the filter (o, i) at w + o*so + i*si (3x3 contiguous),
            rotated by 180 degrees when flip (the gradient of the input is such a convolution);
   input:   V[xi][c][col] (16 x C x nb) of the block's input patches;
   output:  y's block of tiles (+ bias[o] unless bias is NULL) from M[xi][o][col] (16 x O x nb).
   gradout: D[xi][o][col] (16 x O x nb) of the gradient gy (N, O, OH, OW) of the block's output
            tiles (A dY A^T; zero in the junk columns): the gradient of the weights is then
            G^T (sum over blocks of D[xi] @ V[xi]^T) G, which wgrad computes from the sums dU
            (16 x nout x nin) into gw (nout, nin, 3, 3) (overwritten).
   work: lt_wino23_work(g, r1 - r0) elements. */
int64_t lt_wino23_tile_rows(const lt_conv_geom_t *g, int64_t N);
int64_t lt_wino23_block_cols(const lt_conv_geom_t *g, int64_t rows);
int64_t lt_wino23_work(const lt_conv_geom_t *g, int64_t rows);
void lt_wino23_weights_f32(const float *w, int64_t nout, int64_t nin, int64_t so, int64_t si, bool flip, float *U);
void lt_wino23_input_f32(const lt_conv_geom_t *g, const float *x, int64_t r0, int64_t r1, float *V, float *work);
void lt_wino23_output_f32(const lt_conv_geom_t *g, int64_t O, const float *M, const float *bias, int64_t r0,
                          int64_t r1, float *y, float *work);
void lt_wino23_gradout_f32(const lt_conv_geom_t *g, int64_t O, const float *gy, int64_t r0, int64_t r1, float *D,
                           float *work);
void lt_wino23_wgrad_f32(const float *dU, int64_t nout, int64_t nin, float *gw);

#endif
