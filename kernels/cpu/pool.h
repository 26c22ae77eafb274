/* 2-D pooling loops on planes (N*C contiguous H x W planes in, OH x OW planes out): max, average
   and adaptive average, forward and backward, float and double. Pointers and sizes only; the
   geometry was checked by the caller (core/pool.c). OpenMP over the planes above a work threshold.

   Max pooling's indices are the 1-based flat positions (ih*W + iw + 1) of each window's maximum in
   its input plane; a NaN counts as the maximum (the last NaN of the window), ties go to the first.
   The backward functions write every element of their output (gx is not read). */
#ifndef LT_CPU_POOL_H
#define LT_CPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int64_t H, W;     /* input plane */
  int64_t OH, OW;   /* output plane */
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
} lt_pool_geom_t;

void lt_max_pool2d_f32(const lt_pool_geom_t *g, int64_t planes, const float *x, float *y, int64_t *idx);
void lt_max_pool2d_f64(const lt_pool_geom_t *g, int64_t planes, const double *x, double *y, int64_t *idx);
/* gx[idx - 1] += gy within each plane; indices outside the plane are ignored */
void lt_max_pool2d_backward_f32(const lt_pool_geom_t *g, int64_t planes, const float *gy, const int64_t *idx,
                                float *gx);
void lt_max_pool2d_backward_f64(const lt_pool_geom_t *g, int64_t planes, const double *gy, const int64_t *idx,
                                double *gx);

/* divisor 0: none (the window's size, with or without the padding it covers) */
void lt_avg_pool2d_f32(const lt_pool_geom_t *g, int64_t planes, bool count_include_pad, int64_t divisor,
                       const float *x, float *y);
void lt_avg_pool2d_f64(const lt_pool_geom_t *g, int64_t planes, bool count_include_pad, int64_t divisor,
                       const double *x, double *y);
void lt_avg_pool2d_backward_f32(const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                                int64_t divisor, const float *gy, float *gx);
void lt_avg_pool2d_backward_f64(const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                                int64_t divisor, const double *gy, double *gx);

/* windows [floor(i*H/OH), ceil((i+1)*H/OH)) (only H, W, OH, OW of g are used) */
void lt_adaptive_avg_pool2d_f32(const lt_pool_geom_t *g, int64_t planes, const float *x, float *y);
void lt_adaptive_avg_pool2d_f64(const lt_pool_geom_t *g, int64_t planes, const double *x, double *y);
void lt_adaptive_avg_pool2d_backward_f32(const lt_pool_geom_t *g, int64_t planes, const float *gy, float *gx);
void lt_adaptive_avg_pool2d_backward_f64(const lt_pool_geom_t *g, int64_t planes, const double *gy, double *gx);

#endif
