/* The CUDA softmax, negative log-likelihood, layer and batch norm kernels' launchers
   (kernels/cuda/nn.cu), callable from C: device pointers, sizes, lt_dtype numbers and a
   cudaStream_t as `stream`. Tensors are contiguous: softmax's input is [outer, n, inner] around
   the dimension, nll's log-probabilities [N, C, S] with N * S targets (int64 or int32, 1-based as
   written), layer norm's input M rows of N. Each returns the launches' cudaError_t as an int (0 on
   success), or -1 for a dtype without a kernel. */
#ifndef LT_CUDA_NN_H
#define LT_CUDA_NN_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_softmax(int dtype, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool log,
                      void *stream);
/* gx from the output y and its gradient g (both of y's dtype) */
int lt_cuda_k_softmax_backward(int dtype, const void *g, const void *y, void *gx, int64_t outer, int64_t n,
                               int64_t inner, bool log, void *stream);
/* *bad (device int64) = the position of the first target outside 1..C that is not ignored, or
   INT64_MAX when all are valid */
int lt_cuda_k_nll_check(int tdtype, const void *target, int64_t count, int64_t C, bool has_ignore,
                        int64_t ignore_index, int64_t *bad, void *stream);
/* none_out not NULL: the N * S losses -w[t] * logp[n, t, s] (0 where ignored); else acc (device,
   2 doubles) = {sum of losses, sum of weights} and out_scalar (dtype) = sum / wsum when mean, else
   sum. w: C doubles on the device, or NULL for 1. */
int lt_cuda_k_nll_forward(int dtype, const void *logp, int tdtype, const void *target, const double *w, int64_t N,
                          int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, void *none_out, bool mean,
                          void *out_scalar, double *acc, void *stream);
/* glogp (N * C * S, zeroed here) at each kept element: -w[t] * (per_elem ? g[n * S + s] : g[0] * scale) */
int lt_cuda_k_nll_backward(int dtype, void *glogp, const void *g, bool per_elem, double scale, int tdtype,
                           const void *target, const double *w, int64_t N, int64_t C, int64_t S, bool has_ignore,
                           int64_t ignore_index, void *stream);

/* layer norm of M rows of N (kernels/cpu/normalization.h's lt_cpu_layer_norm): w, b (N values,
   or NULL), mean and rstd (M values, written) in the compute type (float64 for float64, else
   float32) */
int lt_cuda_k_layer_norm(int dtype, const void *x, void *y, int64_t M, int64_t N, const void *w, const void *b,
                         double eps, void *mean, void *rstd, void *stream);
/* gx (or NULL) and gw, gb (N doubles each, or NULL: overwritten), as lt_cpu_layer_norm_backward */
int lt_cuda_k_layer_norm_backward(int dtype, const void *x, const void *g, const void *mean, const void *rstd,
                                  const void *w, int64_t M, int64_t N, void *gx, double *gw, double *gb,
                                  void *stream);

/* batch norm of x [N, C, S] (kernels/cpu/normalization.h's semantics), everything per channel in
   float64 device buffers: st (5 C, written) = mean, biased var, invstd, scale, shift; training:
   the statistics of x, and rm / rv (or NULL) updated with momentum (the variance unbiased);
   evaluation: running_mean / running_var read. w, b: C doubles or NULL. y = x scale + shift. */
int lt_cuda_k_batch_norm(int dtype, const void *x, void *y, int64_t N, int64_t C, int64_t S, bool training,
                         const double *running_mean, const double *running_var, double *rm, double *rv,
                         double momentum, const double *w, const double *b, double eps, double *st, void *stream);
/* red: 2 C doubles of scratch; gw, gb (C doubles, or NULL) = sum g (x - mean) invstd, sum g; gx (or
   NULL) as lt_cpu_batch_norm_backward */
int lt_cuda_k_batch_norm_backward(int dtype, const void *x, const void *g, void *gx, int64_t N, int64_t C, int64_t S,
                                  const double *mean, const double *invstd, const double *w, bool training,
                                  double *red, double *gw, double *gb, void *stream);

#ifdef __cplusplus
}
#endif

#endif
