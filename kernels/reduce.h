/* Reduction math, written once for the CPU loops (kernels/cpu/reduce.c) and the CUDA tree
   reductions. Each reduction is one line of the X-macro table below and a set of LT_HD functions
   named after it, in two domains:
     _f  floating inputs, loaded as double: float32, float16 and bfloat16 accumulate in double;
     _i  integer and bool inputs, loaded as int64 (wrapping arithmetic).
   For a reduction NAME and a domain D (f or i) there are:
     lt_red_NAME_D_t                the accumulator type
     lt_red_NAME_D_init()           the accumulator of no elements
     lt_red_NAME_D_update(a, x, i, p)   a with one more element x (i: its 0-based position along the
                                    reduced dimension; only arg reductions use it; within one
                                    accumulator positions must come in increasing order)
     lt_red_NAME_D_combine(a, b)    two partial accumulators (of disjoint parts, in any order)
     lt_red_NAME_D_result(a, p)     the value (double for _f, int64 for _i)
     lt_red_NAME_D_index(a)         arg reductions only: the 0-based index of the chosen element
   The CPU loops fold rows with several independent accumulators and combine them; a CUDA kernel
   folds a grid-stride slice per thread and combines across the block. Scans (cumsum, cumprod,
   logcumsumexp, cummax, cummin) use the sum, prod, logsumexp, cummax and cummin entries: update
   element after element and take result() (and index()) after each. cummax and cummin are argmax
   and argmin with PyTorch's running rule (a later element equal to the extreme, or a later NaN,
   takes its place); the core uses them only for the scans. */
#ifndef LT_REDUCE_KERNEL_H
#define LT_REDUCE_KERNEL_H

#include "lt_kernel.h"

#include <math.h>
#include <stdint.h>

/* the scalar arguments of a reduction */
typedef struct {
  int64_t n;          /* elements reduced into each output (mean) */
  int64_t correction; /* var, std: the divisor is max(0, count - correction) */
  double p, inv_p;    /* normp: the order and its reciprocal */
} lt_reduce_params_t;

/* domains an op has: LT_RED_INTS ops have an _i domain; LT_RED_FLOATS ops only _f (the core
   converts integer inputs or refuses them) */
#define LT_RED_INTS 1
#define LT_RED_FLOATS 0
/* kinds: LT_RED_VALUE gives a value; LT_RED_ARG gives a value and an index */
#define LT_RED_VALUE 0
#define LT_RED_ARG 1

/* X(name, domains, kind) */
#define LT_REDUCE_OPS(X)                       \
  X(sum, LT_RED_INTS, LT_RED_VALUE)            \
  X(prod, LT_RED_INTS, LT_RED_VALUE)           \
  X(mean, LT_RED_FLOATS, LT_RED_VALUE)         \
  X(var, LT_RED_FLOATS, LT_RED_VALUE)          \
  X(std, LT_RED_FLOATS, LT_RED_VALUE)          \
  X(norm0, LT_RED_FLOATS, LT_RED_VALUE)        \
  X(norm1, LT_RED_FLOATS, LT_RED_VALUE)        \
  X(norm2, LT_RED_FLOATS, LT_RED_VALUE)        \
  X(normp, LT_RED_FLOATS, LT_RED_VALUE)        \
  X(norminf, LT_RED_FLOATS, LT_RED_VALUE)      \
  X(normninf, LT_RED_FLOATS, LT_RED_VALUE)     \
  X(logsumexp, LT_RED_FLOATS, LT_RED_VALUE)    \
  X(amax, LT_RED_INTS, LT_RED_VALUE)           \
  X(amin, LT_RED_INTS, LT_RED_VALUE)           \
  X(argmax, LT_RED_INTS, LT_RED_ARG)           \
  X(argmin, LT_RED_INTS, LT_RED_ARG)           \
  X(cummax, LT_RED_INTS, LT_RED_ARG)           \
  X(cummin, LT_RED_INTS, LT_RED_ARG)           \
  X(any, LT_RED_INTS, LT_RED_VALUE)            \
  X(all, LT_RED_INTS, LT_RED_VALUE)

typedef enum {
#define LT_X(name, domains, kind) LT_REDUCE_##name,
  LT_REDUCE_OPS(LT_X)
#undef LT_X
  LT_NREDUCE
} lt_reduce_op;

#ifdef __cplusplus
static_assert(LT_NREDUCE == 20, "the reduction table and its functions below");
#else
_Static_assert(LT_NREDUCE == 20, "the reduction table and its functions below");
#endif

/* wrapping integer arithmetic without undefined behaviour */
#define LT_RED_IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define LT_RED_IMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

/* NaN-propagating max / min (the first NaN wins) */
LT_HD double lt_red_fmax(double a, double x) { return ((a != a) | (x <= a)) ? a : x; }
LT_HD double lt_red_fmin(double a, double x) { return ((a != a) | (x >= a)) ? a : x; }

/* ---- sum ---- */
typedef double lt_red_sum_f_t;
typedef int64_t lt_red_sum_i_t;
LT_HD double lt_red_sum_f_init(void) { return 0.0; }
LT_HD double lt_red_sum_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a + x; }
LT_HD double lt_red_sum_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_sum_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }
LT_HD int64_t lt_red_sum_i_init(void) { return 0; }
LT_HD int64_t lt_red_sum_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return LT_RED_IADD(a, x); }
LT_HD int64_t lt_red_sum_i_combine(int64_t a, int64_t b) { return LT_RED_IADD(a, b); }
LT_HD int64_t lt_red_sum_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

/* ---- prod ---- */
typedef double lt_red_prod_f_t;
typedef int64_t lt_red_prod_i_t;
LT_HD double lt_red_prod_f_init(void) { return 1.0; }
LT_HD double lt_red_prod_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a * x; }
LT_HD double lt_red_prod_f_combine(double a, double b) { return a * b; }
LT_HD double lt_red_prod_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }
LT_HD int64_t lt_red_prod_i_init(void) { return 1; }
LT_HD int64_t lt_red_prod_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return LT_RED_IMUL(a, x); }
LT_HD int64_t lt_red_prod_i_combine(int64_t a, int64_t b) { return LT_RED_IMUL(a, b); }
LT_HD int64_t lt_red_prod_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

/* ---- mean: a sum divided by the count (0 / 0 = NaN for an empty reduction) ---- */
typedef double lt_red_mean_f_t;
LT_HD double lt_red_mean_f_init(void) { return 0.0; }
LT_HD double lt_red_mean_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a + x; }
LT_HD double lt_red_mean_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_mean_f_result(double a, lt_reduce_params_t p) { return a / (double)p.n; }

/* ---- var, std: Welford's update and Chan's combination of (count, mean, M2) ---- */
typedef struct { double n, mean, m2; } lt_red_var_f_t;
typedef lt_red_var_f_t lt_red_std_f_t;
LT_HD lt_red_var_f_t lt_red_var_f_init(void) { lt_red_var_f_t a = {0.0, 0.0, 0.0}; return a; }
LT_HD lt_red_var_f_t lt_red_var_f_update(lt_red_var_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)i; (void)p;
  a.n += 1.0;
  double d = x - a.mean;
  a.mean += d / a.n;
  a.m2 += d * (x - a.mean);
  return a;
}
LT_HD lt_red_var_f_t lt_red_var_f_combine(lt_red_var_f_t a, lt_red_var_f_t b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  lt_red_var_f_t r;
  r.n = a.n + b.n;
  double d = b.mean - a.mean, fb = b.n / r.n;
  r.mean = a.mean + d * fb;
  r.m2 = a.m2 + b.m2 + d * d * a.n * fb;
  return r;
}
/* as PyTorch: M2 / max(0, n - correction), so inf or NaN when the correction leaves nothing */
LT_HD double lt_red_var_f_result(lt_red_var_f_t a, lt_reduce_params_t p) {
  double div = a.n - (double)p.correction;
  return a.m2 / (div > 0 ? div : 0.0);
}
LT_HD lt_red_std_f_t lt_red_std_f_init(void) { return lt_red_var_f_init(); }
LT_HD lt_red_std_f_t lt_red_std_f_update(lt_red_std_f_t a, double x, int64_t i, lt_reduce_params_t p) { return lt_red_var_f_update(a, x, i, p); }
LT_HD lt_red_std_f_t lt_red_std_f_combine(lt_red_std_f_t a, lt_red_std_f_t b) { return lt_red_var_f_combine(a, b); }
LT_HD double lt_red_std_f_result(lt_red_std_f_t a, lt_reduce_params_t p) { return sqrt(lt_red_var_f_result(a, p)); }

/* ---- vector norms: p = 0 (count of non-zeros), 1, 2, any other p, +inf (max |x|), -inf (min |x|) ---- */
typedef double lt_red_norm0_f_t;
LT_HD double lt_red_norm0_f_init(void) { return 0.0; }
LT_HD double lt_red_norm0_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a + (x != 0 ? 1.0 : 0.0); }
LT_HD double lt_red_norm0_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_norm0_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }

typedef double lt_red_norm1_f_t;
LT_HD double lt_red_norm1_f_init(void) { return 0.0; }
LT_HD double lt_red_norm1_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a + fabs(x); }
LT_HD double lt_red_norm1_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_norm1_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }

typedef double lt_red_norm2_f_t;
LT_HD double lt_red_norm2_f_init(void) { return 0.0; }
LT_HD double lt_red_norm2_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a + x * x; }
LT_HD double lt_red_norm2_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_norm2_f_result(double a, lt_reduce_params_t p) { (void)p; return sqrt(a); }

typedef double lt_red_normp_f_t;
LT_HD double lt_red_normp_f_init(void) { return 0.0; }
LT_HD double lt_red_normp_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; return a + pow(fabs(x), p.p); }
LT_HD double lt_red_normp_f_combine(double a, double b) { return a + b; }
LT_HD double lt_red_normp_f_result(double a, lt_reduce_params_t p) { return pow(a, p.inv_p); }

typedef double lt_red_norminf_f_t;
LT_HD double lt_red_norminf_f_init(void) { return 0.0; }
LT_HD double lt_red_norminf_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return lt_red_fmax(a, fabs(x)); }
LT_HD double lt_red_norminf_f_combine(double a, double b) { return lt_red_fmax(a, b); }
LT_HD double lt_red_norminf_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }

typedef double lt_red_normninf_f_t;
LT_HD double lt_red_normninf_f_init(void) { return INFINITY; }
LT_HD double lt_red_normninf_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return lt_red_fmin(a, fabs(x)); }
LT_HD double lt_red_normninf_f_combine(double a, double b) { return lt_red_fmin(a, b); }
LT_HD double lt_red_normninf_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }

/* ---- logsumexp: a running maximum m (NaN-propagating) and s = sum exp(x - c), where the shift c
   is m when m is finite and 0 otherwise (as PyTorch masks infinite maxima); result log(s) + c ---- */
typedef struct { double m, s; } lt_red_logsumexp_f_t;
LT_HD double lt_red_lse_shift(double m) { return (m - m == 0) ? m : 0.0; } /* finite ? m : 0 */
LT_HD lt_red_logsumexp_f_t lt_red_logsumexp_f_init(void) { lt_red_logsumexp_f_t a = {-INFINITY, 0.0}; return a; }
LT_HD lt_red_logsumexp_f_t lt_red_logsumexp_f_combine(lt_red_logsumexp_f_t a, lt_red_logsumexp_f_t b) {
  lt_red_logsumexp_f_t r;
  r.m = lt_red_fmax(a.m, b.m);
  double c = lt_red_lse_shift(r.m);
  double sa = a.s == 0 ? 0.0 : a.s * exp(lt_red_lse_shift(a.m) - c);
  double sb = b.s == 0 ? 0.0 : b.s * exp(lt_red_lse_shift(b.m) - c);
  r.s = sa + sb;
  return r;
}
LT_HD lt_red_logsumexp_f_t lt_red_logsumexp_f_update(lt_red_logsumexp_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)i; (void)p;
  if (x <= a.m) { /* the usual case: the shift stays */
    a.s += exp(x - lt_red_lse_shift(a.m));
    return a;
  }
  lt_red_logsumexp_f_t b = {x, 1.0};
  b.s = exp(x - lt_red_lse_shift(x)); /* 1, or exp(+-inf) for an infinite x; NaN for NaN */
  return lt_red_logsumexp_f_combine(a, b);
}
LT_HD double lt_red_logsumexp_f_result(lt_red_logsumexp_f_t a, lt_reduce_params_t p) {
  (void)p;
  if (a.m != a.m) return a.m;
  return log(a.s) + lt_red_lse_shift(a.m);
}

/* ---- amax, amin: NaN propagates ---- */
typedef double lt_red_amax_f_t;
typedef int64_t lt_red_amax_i_t;
LT_HD double lt_red_amax_f_init(void) { return -INFINITY; }
LT_HD double lt_red_amax_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return lt_red_fmax(a, x); }
LT_HD double lt_red_amax_f_combine(double a, double b) { return lt_red_fmax(a, b); }
LT_HD double lt_red_amax_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }
LT_HD int64_t lt_red_amax_i_init(void) { return INT64_MIN; }
LT_HD int64_t lt_red_amax_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return x > a ? x : a; }
LT_HD int64_t lt_red_amax_i_combine(int64_t a, int64_t b) { return b > a ? b : a; }
LT_HD int64_t lt_red_amax_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

typedef double lt_red_amin_f_t;
typedef int64_t lt_red_amin_i_t;
LT_HD double lt_red_amin_f_init(void) { return INFINITY; }
LT_HD double lt_red_amin_f_update(double a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return lt_red_fmin(a, x); }
LT_HD double lt_red_amin_f_combine(double a, double b) { return lt_red_fmin(a, b); }
LT_HD double lt_red_amin_f_result(double a, lt_reduce_params_t p) { (void)p; return a; }
LT_HD int64_t lt_red_amin_i_init(void) { return INT64_MAX; }
LT_HD int64_t lt_red_amin_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return x < a ? x : a; }
LT_HD int64_t lt_red_amin_i_combine(int64_t a, int64_t b) { return b < a ? b : a; }
LT_HD int64_t lt_red_amin_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

/* ---- argmax, argmin: the value and index of the first extreme element (the first NaN, if any).
   i < 0 marks an accumulator of no elements. ---- */
typedef struct { double v; int64_t i; } lt_red_argmax_f_t;
typedef struct { int64_t v; int64_t i; } lt_red_argmax_i_t;
typedef lt_red_argmax_f_t lt_red_argmin_f_t;
typedef lt_red_argmax_i_t lt_red_argmin_i_t;

/* does candidate b (value, index) beat the current a? greater: argmax, else argmin */
LT_HD int lt_red_arg_f_better(double av, int64_t ai, double bv, int64_t bi, int greater) {
  if (bi < 0) return 0;
  if (ai < 0) return 1;
  int an = av != av, bn = bv != bv;
  if (an || bn) return bn && (!an || bi < ai);
  if (bv == av) return bi < ai;
  return greater ? bv > av : bv < av;
}
LT_HD int lt_red_arg_i_better(int64_t av, int64_t ai, int64_t bv, int64_t bi, int greater) {
  if (bi < 0) return 0;
  if (ai < 0) return 1;
  if (bv == av) return bi < ai;
  return greater ? bv > av : bv < av;
}

LT_HD lt_red_argmax_f_t lt_red_argmax_f_init(void) { lt_red_argmax_f_t a = {-INFINITY, -1}; return a; }
LT_HD lt_red_argmax_f_t lt_red_argmax_f_update(lt_red_argmax_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)p; /* positions increase: strictly greater (or a first NaN) replaces */
  if (a.i < 0 || (a.v == a.v && (x > a.v || x != x))) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_argmax_f_t lt_red_argmax_f_combine(lt_red_argmax_f_t a, lt_red_argmax_f_t b) {
  return lt_red_arg_f_better(a.v, a.i, b.v, b.i, 1) ? b : a;
}
LT_HD double lt_red_argmax_f_result(lt_red_argmax_f_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_argmax_f_index(lt_red_argmax_f_t a) { return a.i; }
LT_HD lt_red_argmax_i_t lt_red_argmax_i_init(void) { lt_red_argmax_i_t a = {INT64_MIN, -1}; return a; }
LT_HD lt_red_argmax_i_t lt_red_argmax_i_update(lt_red_argmax_i_t a, int64_t x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || x > a.v) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_argmax_i_t lt_red_argmax_i_combine(lt_red_argmax_i_t a, lt_red_argmax_i_t b) {
  return lt_red_arg_i_better(a.v, a.i, b.v, b.i, 1) ? b : a;
}
LT_HD int64_t lt_red_argmax_i_result(lt_red_argmax_i_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_argmax_i_index(lt_red_argmax_i_t a) { return a.i; }

LT_HD lt_red_argmin_f_t lt_red_argmin_f_init(void) { lt_red_argmin_f_t a = {INFINITY, -1}; return a; }
LT_HD lt_red_argmin_f_t lt_red_argmin_f_update(lt_red_argmin_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || (a.v == a.v && (x < a.v || x != x))) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_argmin_f_t lt_red_argmin_f_combine(lt_red_argmin_f_t a, lt_red_argmin_f_t b) {
  return lt_red_arg_f_better(a.v, a.i, b.v, b.i, 0) ? b : a;
}
LT_HD double lt_red_argmin_f_result(lt_red_argmin_f_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_argmin_f_index(lt_red_argmin_f_t a) { return a.i; }
LT_HD lt_red_argmin_i_t lt_red_argmin_i_init(void) { lt_red_argmin_i_t a = {INT64_MAX, -1}; return a; }
LT_HD lt_red_argmin_i_t lt_red_argmin_i_update(lt_red_argmin_i_t a, int64_t x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || x < a.v) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_argmin_i_t lt_red_argmin_i_combine(lt_red_argmin_i_t a, lt_red_argmin_i_t b) {
  return lt_red_arg_i_better(a.v, a.i, b.v, b.i, 0) ? b : a;
}
LT_HD int64_t lt_red_argmin_i_result(lt_red_argmin_i_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_argmin_i_index(lt_red_argmin_i_t a) { return a.i; }

/* ---- cummax, cummin: the value and index of the last extreme element (of the last NaN, if any),
   as PyTorch's cummax and cummin keep them: an element replaces the running extreme when it is
   NaN, or when the extreme is not NaN and the element is >= it (<= for cummin). i < 0 marks an
   accumulator of no elements; of two parts the later wins ties. ---- */
typedef lt_red_argmax_f_t lt_red_cummax_f_t;
typedef lt_red_argmax_i_t lt_red_cummax_i_t;
typedef lt_red_argmax_f_t lt_red_cummin_f_t;
typedef lt_red_argmax_i_t lt_red_cummin_i_t;

/* does candidate b (value, index) beat the current a? greater: cummax, else cummin */
LT_HD int lt_red_cum_f_better(double av, int64_t ai, double bv, int64_t bi, int greater) {
  if (bi < 0) return 0;
  if (ai < 0) return 1;
  int an = av != av, bn = bv != bv;
  if (an || bn) return bn && (!an || bi > ai);
  if (bv == av) return bi > ai;
  return greater ? bv > av : bv < av;
}
LT_HD int lt_red_cum_i_better(int64_t av, int64_t ai, int64_t bv, int64_t bi, int greater) {
  if (bi < 0) return 0;
  if (ai < 0) return 1;
  if (bv == av) return bi > ai;
  return greater ? bv > av : bv < av;
}

LT_HD lt_red_cummax_f_t lt_red_cummax_f_init(void) { lt_red_cummax_f_t a = {-INFINITY, -1}; return a; }
LT_HD lt_red_cummax_f_t lt_red_cummax_f_update(lt_red_cummax_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)p; /* positions increase */
  if (a.i < 0 || x != x || (a.v == a.v && x >= a.v)) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_cummax_f_t lt_red_cummax_f_combine(lt_red_cummax_f_t a, lt_red_cummax_f_t b) {
  return lt_red_cum_f_better(a.v, a.i, b.v, b.i, 1) ? b : a;
}
LT_HD double lt_red_cummax_f_result(lt_red_cummax_f_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_cummax_f_index(lt_red_cummax_f_t a) { return a.i; }
LT_HD lt_red_cummax_i_t lt_red_cummax_i_init(void) { lt_red_cummax_i_t a = {INT64_MIN, -1}; return a; }
LT_HD lt_red_cummax_i_t lt_red_cummax_i_update(lt_red_cummax_i_t a, int64_t x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || x >= a.v) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_cummax_i_t lt_red_cummax_i_combine(lt_red_cummax_i_t a, lt_red_cummax_i_t b) {
  return lt_red_cum_i_better(a.v, a.i, b.v, b.i, 1) ? b : a;
}
LT_HD int64_t lt_red_cummax_i_result(lt_red_cummax_i_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_cummax_i_index(lt_red_cummax_i_t a) { return a.i; }

LT_HD lt_red_cummin_f_t lt_red_cummin_f_init(void) { lt_red_cummin_f_t a = {INFINITY, -1}; return a; }
LT_HD lt_red_cummin_f_t lt_red_cummin_f_update(lt_red_cummin_f_t a, double x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || x != x || (a.v == a.v && x <= a.v)) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_cummin_f_t lt_red_cummin_f_combine(lt_red_cummin_f_t a, lt_red_cummin_f_t b) {
  return lt_red_cum_f_better(a.v, a.i, b.v, b.i, 0) ? b : a;
}
LT_HD double lt_red_cummin_f_result(lt_red_cummin_f_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_cummin_f_index(lt_red_cummin_f_t a) { return a.i; }
LT_HD lt_red_cummin_i_t lt_red_cummin_i_init(void) { lt_red_cummin_i_t a = {INT64_MAX, -1}; return a; }
LT_HD lt_red_cummin_i_t lt_red_cummin_i_update(lt_red_cummin_i_t a, int64_t x, int64_t i, lt_reduce_params_t p) {
  (void)p;
  if (a.i < 0 || x <= a.v) { a.v = x; a.i = i; }
  return a;
}
LT_HD lt_red_cummin_i_t lt_red_cummin_i_combine(lt_red_cummin_i_t a, lt_red_cummin_i_t b) {
  return lt_red_cum_i_better(a.v, a.i, b.v, b.i, 0) ? b : a;
}
LT_HD int64_t lt_red_cummin_i_result(lt_red_cummin_i_t a, lt_reduce_params_t p) { (void)p; return a.v; }
LT_HD int64_t lt_red_cummin_i_index(lt_red_cummin_i_t a) { return a.i; }

/* ---- any, all: results 0 or 1 (NaN counts as non-zero) ---- */
typedef int64_t lt_red_any_f_t;
typedef int64_t lt_red_any_i_t;
LT_HD int64_t lt_red_any_f_init(void) { return 0; }
LT_HD int64_t lt_red_any_f_update(int64_t a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a | (x != 0); }
LT_HD int64_t lt_red_any_f_combine(int64_t a, int64_t b) { return a | b; }
LT_HD double lt_red_any_f_result(int64_t a, lt_reduce_params_t p) { (void)p; return (double)a; }
LT_HD int64_t lt_red_any_i_init(void) { return 0; }
LT_HD int64_t lt_red_any_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a | (x != 0); }
LT_HD int64_t lt_red_any_i_combine(int64_t a, int64_t b) { return a | b; }
LT_HD int64_t lt_red_any_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

typedef int64_t lt_red_all_f_t;
typedef int64_t lt_red_all_i_t;
LT_HD int64_t lt_red_all_f_init(void) { return 1; }
LT_HD int64_t lt_red_all_f_update(int64_t a, double x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a & (x != 0); }
LT_HD int64_t lt_red_all_f_combine(int64_t a, int64_t b) { return a & b; }
LT_HD double lt_red_all_f_result(int64_t a, lt_reduce_params_t p) { (void)p; return (double)a; }
LT_HD int64_t lt_red_all_i_init(void) { return 1; }
LT_HD int64_t lt_red_all_i_update(int64_t a, int64_t x, int64_t i, lt_reduce_params_t p) { (void)i; (void)p; return a & (x != 0); }
LT_HD int64_t lt_red_all_i_combine(int64_t a, int64_t b) { return a & b; }
LT_HD int64_t lt_red_all_i_result(int64_t a, lt_reduce_params_t p) { (void)p; return a; }

#endif
