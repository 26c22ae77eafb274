/* CPU loops of batch normalisation and layer normalisation (forward and backward) over contiguous
   memory, and the range splitter that the softmax, normalisation and loss loops thread with.
   Floating dtypes only: float32 and float64 natively, float16 and bfloat16 loaded into float32.
   "CT" below is the compute type of a dtype: double for float64, float for the others. Sums over
   many elements (statistics, gradient sums) accumulate in double. */
#ifndef LT_CPU_NORMALIZATION_H
#define LT_CPU_NORMALIZATION_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* fn(ctx, b, e) over [0, units), split into contiguous parts across OpenMP threads when work (an
   element count) is large enough to pay for a parallel region, else called once on this thread. */
void lt_cpu_parallel_range(int64_t units, int64_t work, void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx);

/* ---- batch norm: x is [N, C, S] (S: the product of the sizes after C, 1 for 2-D inputs) ---- */
/* Per-channel mean and biased variance over N * S elements (N * S >= 1). */
void lt_cpu_batch_norm_stats(lt_dtype dt, const void *x, int64_t N, int64_t C, int64_t S, double *mean, double *var);
/* y = x * scale[c] + shift[c] */
void lt_cpu_batch_norm_apply(lt_dtype dt, const void *x, void *y, int64_t N, int64_t C, int64_t S,
                             const double *scale, const double *shift);
/* Per channel: gb[c] = sum g, gw[c] = sum g * (x - mean) * invstd (both always computed); then, when
   gx is not NULL, the input's gradient: in training mode (the statistics came from this batch)
   gx = w invstd (g - gb / M - xhat gw / M) with M = N * S, else gx = g w invstd. w NULL means 1. */
void lt_cpu_batch_norm_backward(lt_dtype dt, const void *x, const void *g, void *gx, int64_t N, int64_t C,
                                int64_t S, const double *mean, const double *invstd, const double *w,
                                bool training, double *gw, double *gb);

/* ---- layer norm: x is [M, N], each row of N elements normalised ---- */
/* w, b: N values of CT or NULL; mean, rstd: M values of CT, written. */
void lt_cpu_layer_norm(lt_dtype dt, const void *x, void *y, int64_t M, int64_t N, const void *w, const void *b,
                       double eps, void *mean, void *rstd);
/* gx (may be NULL) = rstd (g w - mean_row(g w) - xhat mean_row(g w xhat)); gw, gb (N doubles each,
   may be NULL) = sums over rows of g xhat and g. w, mean, rstd as in the forward. */
void lt_cpu_layer_norm_backward(lt_dtype dt, const void *x, const void *g, const void *mean, const void *rstd,
                                const void *w, int64_t M, int64_t N, void *gx, double *gw, double *gb);

#endif
