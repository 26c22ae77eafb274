/* CPU reductions and scans over strided memory, expanded from the math in kernels/reduce.h.
   The caller (core/reduce.c) describes the geometry: the kept (output) dimensions and the reduced
   dimensions, with byte strides for the input and element strides for the outputs. */
#ifndef LT_CPU_REDUCE_H
#define LT_CPU_REDUCE_H

#include "core/dtype.h"
#include "core/tensor.h" /* LT_MAX_DIM */
#include "kernels/reduce.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  lt_reduce_op op;
  lt_dtype in_dtype;
  const char *in;                      /* the input's first element */
  /* kept dimensions (any order; the loops pick the innermost by stride) */
  int nout;
  int64_t out_size[LT_MAX_DIM];
  int64_t out_in_stride[LT_MAX_DIM];   /* input bytes */
  int64_t out_stride[LT_MAX_DIM];      /* output elements (values and indices alike) */
  /* reduced dimensions; arg reductions (argmax, argmin) take at most one, and the index of an
     element is its position along it */
  int nred;
  int64_t red_size[LT_MAX_DIM];
  int64_t red_stride[LT_MAX_DIM];      /* input bytes */
  char *out;                           /* values of dtype out_dtype; NULL: not wanted (argmax) */
  lt_dtype out_dtype;
  int64_t *idx;                        /* arg reductions: the indices; else NULL */
  lt_reduce_params_t params;
} lt_reduce_plan_t;

/* Does the CPU have (op, dtype)? Integer and bool inputs only for LT_RED_INTS ops. */
bool lt_cpu_reduce_supported(lt_reduce_op op, lt_dtype dt);
/* Run a reduction (outputs of no elements: nothing to do; an empty reduction writes the value of
   no elements). Threads with OpenMP above LT_GRAIN elements of work. */
void lt_cpu_reduce(const lt_reduce_plan_t *plan);

/* logsumexp of `rows` contiguous rows of n elements (1..LT_CPU_LSE_SHORT_N) of float32, float16 or
   bfloat16 into out (contiguous, the same dtype), as lt_cpu_reduce computes it, 16 rows at a time;
   false (nothing done) for other sizes and dtypes */
#define LT_CPU_LSE_SHORT_N 31
bool lt_cpu_logsumexp_short(lt_dtype dt, const void *x, void *out, int64_t rows, int64_t n);

/* A scan along one dimension: out[.., k, ..] = result(update(... update(init, x[0]) ..., x[k])),
   for op LT_REDUCE_sum (cumsum), LT_REDUCE_prod (cumprod), LT_REDUCE_logsumexp (logcumsumexp,
   floating inputs) or LT_REDUCE_cummax / LT_REDUCE_cummin, which also write idx[.., k, ..], the
   0-based position of each running extreme. */
typedef struct {
  lt_reduce_op op;
  lt_dtype in_dtype, out_dtype;
  const char *in;
  char *out;
  int64_t len;                         /* the scanned dimension */
  int64_t in_dstride;                  /* its input stride, bytes */
  int64_t out_dstride;                 /* its output stride, elements */
  int nother;                          /* the other dimensions */
  int64_t size[LT_MAX_DIM];
  int64_t in_stride[LT_MAX_DIM];       /* bytes */
  int64_t out_stride[LT_MAX_DIM];      /* elements */
  int64_t *idx;                        /* cummax, cummin: the indices, at out's element offsets */
} lt_scan_plan_t;

/* LT_OK, or LT_ERR when a buffer (64 KiB a thread) cannot be allocated or (op, dtype) is not a scan
   (the core checks first) */
int lt_cpu_scan(const lt_scan_plan_t *plan);

#endif
