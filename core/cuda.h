/* The CUDA backend's core API, with no CUDA types: the same declarations in every build. A build
   without CUDA=1 compiles core/cuda_*.c to stubs that report zero devices and refuse every request,
   so the bindings and the rest of the core call these without knowing whether CUDA is compiled in. */
#ifndef LT_CUDA_H
#define LT_CUDA_H

#include "core/tensor.h"
#include "kernels/cpu/im2col.h" /* lt_conv_geom_t */
#include "kernels/cpu/pool.h"   /* lt_pool_geom_t */
#include "kernels/cuda/pool.h"  /* LT_CUDA_POOL_* */
#include "kernels/reduce.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this build has the CUDA backend (make CUDA=1). */
bool lt_cuda_compiled(void);
/* Devices visible to this process (CUDA_VISIBLE_DEVICES applied by the runtime); 0 without a
   driver or GPU. */
int lt_cuda_device_count(void);
/* Why no device is usable, e.g. "no CUDA driver (cudaErrorInsufficientDriver)"; NULL when there are
   devices. */
const char *lt_cuda_unavailable_reason(void);

typedef struct {
  char name[256];
  int64_t total_memory;
  int major, minor;
  int multi_processor_count;
} lt_cuda_props_t;

/* index -1 is the current CUDA device; errors name the op. */
int lt_cuda_get_properties(int index, lt_cuda_props_t *out);
int lt_cuda_mem_get_info(int index, int64_t *free_bytes, int64_t *total_bytes);
int lt_cuda_synchronize(int index);
/* The seed of the CUDA generator of a device (-1: the current one; all: every device). */
int lt_cuda_manual_seed(int index, uint64_t seed, bool all);
int lt_cuda_initial_seed(int index, uint64_t *out);
/* The generator of a CUDA device (-1: the current one), made from its seed on first use: draws for
   CUDA tensors are made on the host with it and copied. NULL with an error when out of memory. */
struct lt_generator;
struct lt_generator *lt_cuda_generator(int index);

/* dst = src where either lives on a CUDA device: dtype conversion, broadcasting and strides
   included (called by lt_copy_). Waits for the copy when the destination is host memory. */
int lt_cuda_copy_(lt_tensor_t *dst, const lt_tensor_t *src);

/* The elementwise ops on CUDA tensors (core/cuda_elementwise.c): out and the inputs are on one
   CUDA device; an input NULL is the scalar of `size` bytes at scalar[k]. kind and op name the op
   of kernels/elementwise.h, for every dtype; errors name the op. */
typedef enum { LT_EW_UNARY, LT_EW_BINARY, LT_EW_COMPARE, LT_EW_UNARY_GRAD, LT_EW_WHERE, LT_EW_FILL } lt_ew_kind;
typedef struct {
  lt_ew_kind kind;
  int op;
  lt_dtype dtype;     /* the inputs' (compute) dtype */
  double alpha;       /* binary ops */
  int64_t ialpha;
} lt_ew_desc_t;
int lt_cuda_elementwise(const char *name, const lt_ew_desc_t *d, lt_tensor_t *out, int nin,
                        const lt_tensor_t *const *ins, void *const *scalar);

/* dst = src converted to dst's dtype on the device (core/cuda_cast.c): both contiguous, of one
   element count, on one CUDA device. */
int lt_cuda_cast(lt_tensor_t *dst, const lt_tensor_t *src);

/* A reduction of a CUDA tensor (core/cuda_reduce.c), called by core/reduce.c once it has checked
   the arguments: x reduced over the dims where mask[d] (kernels/reduce.h's op and parameters;
   prm.n is set here) into values (x's reduced shape, keepdim saying whether reduced dims are kept
   as size 1; NULL for argmax/argmin) and indices (arg reductions; int64, 0-based; else NULL), both
   on x's device, of one layout. */
int lt_cuda_reduce(const char *name, lt_reduce_op op, const lt_tensor_t *x, const bool *mask, bool keepdim,
                   lt_tensor_t *values, lt_tensor_t *indices, lt_reduce_params_t prm);
/* A scan of x (on a CUDA device, the output's dtype) along dim d into out (x's shape, contiguous)
   and, for cummax / cummin, the 0-based positions into idx (out's layout; else NULL). */
int lt_cuda_scan(const char *name, lt_reduce_op op, const lt_tensor_t *x, int d, lt_tensor_t *out, lt_tensor_t *idx);

/* out[b] = beta*out[b] + alpha * A[b] @ B[b] for b < batch on CUDA tensors through cuBLAS
   (core/cuda_linalg.c), called by core/linalg.c's gemm: A[b] is m x k at a's data with element
   strides (sAb, sAr, sAc), B[b] k x n at b's with (sBb, sBr, sBc) (0 broadcasts), out a contiguous
   [batch, m, n] holding the beta term's input when beta != 0. float32, float64, float16 and
   bfloat16 (float accumulation); other dtypes are refused naming op. */
int lt_cuda_gemm(const char *op, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const lt_tensor_t *a,
                 int64_t sAb, int64_t sAr, int64_t sAc, const lt_tensor_t *b, int64_t sBb, int64_t sBr, int64_t sBc,
                 double beta, lt_tensor_t *out);

/* 2-D convolution of CUDA tensors as im2col + cuBLAS (core/cuda_linalg.c), called by core/conv.c
   once it has checked the arguments: contiguous operands of the compute dtype (float32 or
   float64), x (N, C, H, W), w (Cout, C/groups, kh, kw), b (Cout) or NULL, y (N, Cout, OH, OW)
   written; the backward writes gx (x's shape), gw (w's) and gb (Cout) where not NULL (x is
   needed for gw, w for gx). */
int lt_cuda_conv2d(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *x,
                   const lt_tensor_t *w, const lt_tensor_t *b, lt_tensor_t *y);
int lt_cuda_conv2d_backward(const lt_conv_geom_t *g, int64_t N, int64_t Cout, int64_t groups, const lt_tensor_t *gy,
                            const lt_tensor_t *x, const lt_tensor_t *w, lt_tensor_t *gx, lt_tensor_t *gw,
                            lt_tensor_t *gb);

/* Softmax / log-softmax of contiguous CUDA tensors seen as [outer, n, inner] around the dimension
   (core/cuda_nn.c, called by core/softmax.c): y = softmax(x); gx from g and y (one dtype). */
int lt_cuda_softmax(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t outer, int64_t n, int64_t inner,
                    bool log);
int lt_cuda_softmax_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *y, lt_tensor_t *gx,
                             int64_t outer, int64_t n, int64_t inner, bool log);
/* nll_loss on CUDA (core/cuda_nn.c, called by core/loss.c), contiguous operands, logp [N, C, S],
   1-based targets (int64 / int32), w float64 of C or NULL. The check: LT_OK, or an error naming op
   and the first bad target (waits for the device). The loss: out holds the N * S losses (none) or
   the 0-dim sum / weighted mean; total_weight, when not NULL, gets the sum of the weights (one
   wait). The backward: glogp = 0 but -w[t] * (per_elem ? g[n, s] : g[0] * scale) at targets. */
int lt_cuda_nll_check_targets(const char *op, const lt_tensor_t *target, int64_t C, bool has_ignore,
                              int64_t ignore_index);
int lt_cuda_nll_loss(const char *op, const lt_tensor_t *logp, const lt_tensor_t *target, const lt_tensor_t *w,
                     int64_t N, int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, lt_tensor_t *out,
                     bool none, bool mean, double *total_weight);
int lt_cuda_nll_loss_backward(const char *op, lt_tensor_t *glogp, const lt_tensor_t *g, bool per_elem, double scale,
                              const lt_tensor_t *target, const lt_tensor_t *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index);

/* Layer norm of contiguous CUDA tensors as M rows of N (core/cuda_nn.c, called by
   core/normalization.c): w, b (or NULL), mean, rstd in the compute dtype (float64 for float64,
   else float32), as kernels/cpu/normalization.h's lt_cpu_layer_norm and its backward (gx or NULL;
   gw, gb float64 tensors of N elements or NULL). */
int lt_cuda_layer_norm(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t M, int64_t N, const lt_tensor_t *w,
                       const lt_tensor_t *b, double eps, lt_tensor_t *mean, lt_tensor_t *rstd);
int lt_cuda_layer_norm_backward(const char *op, const lt_tensor_t *x, const lt_tensor_t *g, const lt_tensor_t *mean,
                                const lt_tensor_t *rstd, const lt_tensor_t *w, int64_t M, int64_t N, lt_tensor_t *gx,
                                lt_tensor_t *gw, lt_tensor_t *gb);
/* The fused LSTM cell (core/rnn.c; kernels/cuda/rnn.cu): contiguous g [N, 4H] and c [N, H] of
   float32 or float64 into h and c2; backward into dg and dc from dh and dc2 (either NULL). */
int lt_cuda_lstm_cell(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, lt_tensor_t *h, lt_tensor_t *c2,
                      int64_t N, int64_t H);
int lt_cuda_lstm_cell_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *c, const lt_tensor_t *dh,
                               const lt_tensor_t *dc2, lt_tensor_t *dg, lt_tensor_t *dc, int64_t N, int64_t H);

/* Batch norm of CUDA tensors (core/cuda_nn.c), called by core/normalization.c once it has
   checked the arguments: lt_batch_norm_stats's and lt_batch_norm_backward's contracts (any
   layouts and floating dtypes; statistics kept in stats_dtype; gw, gb of gw_dt, gb_dt). */
lt_tensor_t *lt_cuda_batch_norm(const char *op, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, lt_tensor_t *running_mean,
                                lt_tensor_t *running_var, bool training, double momentum, double eps,
                                lt_dtype stats_dtype, lt_tensor_t **save_mean, lt_tensor_t **save_invstd);
int lt_cuda_batch_norm_backward(const char *op, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *mean,
                                lt_tensor_t *invstd, bool training, lt_dtype gw_dt, lt_dtype gb_dt, lt_tensor_t **gx,
                                lt_tensor_t **gw, lt_tensor_t **gb);

/* 2-D pooling of contiguous CUDA tensors of `planes` planes (core/cuda_nn.c, called by
   core/pool.c): kind LT_CUDA_POOL_* of kernels/cuda/pool.h; in / out are x / y (forward) or gy / gx
   (backward), float32 or float64; idx the max pooling's int64 indices (1-based in each plane). */
int lt_cuda_pool2d(const char *op, int kind, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                   int64_t divisor, const lt_tensor_t *in, lt_tensor_t *out, lt_tensor_t *idx);

/* Fused optimizer steps on contiguous CUDA tensors (core/cuda_optim.c, called by core/optim.c once
   it has checked them): args points to the step's scalars as kernels/optim.h's structs
   (lt_sgd_args_d / lt_adam_args_d for float64 parameters, the _f ones otherwise); the flags are
   those of its per-element bodies. */
int lt_cuda_sgd(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *buf, const void *args, bool has_wd,
                bool has_mom, bool first, bool nesterov);
int lt_cuda_adam(const char *op, lt_tensor_t *p, const lt_tensor_t *g, lt_tensor_t *exp_avg, lt_tensor_t *exp_avg_sq,
                 lt_tensor_t *max_exp_avg_sq, const void *args, bool has_wd, bool amsgrad, bool lerp_lo);

/* Reference rates for bench/cuda_bench.lua (core/cuda_bench.c): milliseconds per call of cuBLAS's
   n x n product (float32, or float16/bfloat16 with float32 accumulation) and of cudaMemcpyAsync
   device-to-device or from pinned host memory, on the current stream, timed with events. The
   product reads a and b (n x n of dtype dt in device memory) when given, else zeros of its own:
   the GPU runs faster on zeros, so a fair comparison hands it the operands lutorch multiplied. */
int lt_cuda_bench_gemm(int index, int n, lt_dtype dt, const void *a, const void *b, int iters, double *ms);
int lt_cuda_bench_memcpy(int index, size_t bytes, bool from_pinned_host, int iters, double *ms);

/* Pinned host memory, from a small cache; NULL with an error when CUDA is unavailable. */
void *lt_cuda_host_alloc(size_t n);
void lt_cuda_host_free(void *p);
bool lt_cuda_is_pinned(const void *p);
/* x:pin_memory(): a copy of a CPU tensor in pinned memory; x:is_pinned(). */
lt_tensor_t *lt_pin_memory(const lt_tensor_t *t);
bool lt_is_pinned(const lt_tensor_t *t);

#endif
