/* CPU elementwise loops, one per (op, dtype), expanded from kernels/elementwise.h. */
#ifndef LT_CPU_ELEMENTWISE_H
#define LT_CPU_ELEMENTWISE_H

#include "core/dtype.h"
#include "core/iter.h"
#include "kernels/elementwise.h"

/* The binary loops read alpha from ctx (add, sub). */
typedef struct {
  double alpha;
  int64_t ialpha;
} lt_binary_ctx_t;

/* NULL where the op does not support the dtype (then the caller converts first). Operands of a
   unary or binary loop all have the dtype; comparison outputs are bool. */
lt_loop_fn lt_cpu_unary_loop(lt_unary_op op, lt_dtype dt);
lt_loop_fn lt_cpu_binary_loop(lt_binary_op op, lt_dtype dt);
lt_loop_fn lt_cpu_compare_loop(lt_compare_op op, lt_dtype dt);
/* The derivative of a unary op (floating dtypes): operands out, g, x, y; which of x and y the
   formula reads is returned (an unused one may be any operand, e.g. g). */
lt_loop_fn lt_cpu_unary_grad_loop(lt_unary_op op, lt_dtype dt, bool *uses_x, bool *uses_y);
/* out = cond ? a : b, elements of `size` bytes; operands out, cond (bool), a, b. */
lt_loop_fn lt_cpu_where_loop(size_t size);
/* out (dtype dst) = src (dtype src), converting. */
lt_loop_fn lt_cpu_cast_loop(lt_dtype dst, lt_dtype src);
/* out = value (the element given in ctx, `size` bytes). */
lt_loop_fn lt_cpu_fill_loop(size_t size);
/* dst[r * C + c] = src[r + c * sc] for r < R, c < C, elements of es bytes (1, 2, 4 or 8), on nt
   threads (each a block of columns); dst and src do not overlap. Faster than the iterator's copy
   only where lt_cpu_transpose_conflicts(es, sc): src's row stride is a multiple of a large power of
   two (the cache's sets) */
void lt_cpu_transpose_copy(size_t es, void *dst, const void *src, int64_t R, int64_t C, int64_t sc, int nt);
bool lt_cpu_transpose_conflicts(size_t es, int64_t sc);
/* dst = src for elements of es bytes (1, 2, 4 or 8): n1 rows of n0 elements, the element byte
   strides d0 (dst) and s0 (src) along a row, d1 and s1 from row to row; plain loops, no call per
   row (the iterator's loop call and carry cost more than a short row's copy) */
void lt_cpu_copy_rows(size_t es, char *dst, const char *src, int64_t n0, int64_t d0, int64_t s0, int64_t n1,
                      int64_t d1, int64_t s1);
/* out = min(max(x, lo), hi) for float32 or float64 x (NULL for other dtypes), by the formulas of the
   binary ops maximum and minimum (NaN in x or a bound propagates); ctx: double[2] {lo, hi},
   converted to the dtype */
lt_loop_fn lt_cpu_clamp_loop(lt_dtype dt);

#endif
