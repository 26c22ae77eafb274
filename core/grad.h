/* Autograd recording of the tensor ops (core/grad_*.c), called by each op when lt_ag_needed says
   an input needs gradients: the op runs with grad mode off, then one node is recorded. Also small
   helpers for writing backward formulas with the ops. Internal to the core. */
#ifndef LT_GRAD_H
#define LT_GRAD_H

#include "core/autograd.h"
#include "core/elementwise.h"

/* ---- elementwise (core/grad_elementwise.c) ---- */
lt_tensor_t *lt_ag_unary(lt_unary_op op, lt_tensor_t *x, lt_tensor_t *out);
lt_tensor_t *lt_ag_binary(lt_binary_op op, lt_operand_t a, lt_operand_t b, double alpha, lt_tensor_t *out);
lt_tensor_t *lt_ag_where(lt_tensor_t *cond, lt_operand_t a, lt_operand_t b);
lt_tensor_t *lt_ag_convert(lt_tensor_t *x, lt_dtype dt, lt_device_t dev);
/* x tagged as on another CPU device, sharing its memory (recorded as a copy for autograd) */
lt_tensor_t *lt_device_alias(lt_tensor_t *x, lt_device_t dev);
int lt_ag_copy_(lt_tensor_t *dst, lt_tensor_t *src);
int lt_ag_fill_(lt_tensor_t *dst, lt_operand_t v);
/* ---- reductions (core/grad_reduce.c) ----
   ndims -1 with AMAX/AMIN: the overall max/min; MAX/MIN and the scans take dims[0]; p is the
   norm's p or the var/std correction; indices receives max/min's and cummax/cummin's indices. */
typedef enum {
  LT_AG_SUM, LT_AG_MEAN, LT_AG_PROD, LT_AG_LOGSUMEXP, LT_AG_VAR, LT_AG_STD, LT_AG_NORM,
  LT_AG_AMAX, LT_AG_AMIN, LT_AG_MAX, LT_AG_MIN, LT_AG_CUMSUM, LT_AG_CUMPROD, LT_AG_LOGCUMSUMEXP,
  LT_AG_CUMMAX, LT_AG_CUMMIN
} lt_ag_reduce_kind;
lt_tensor_t *lt_ag_reduce(lt_ag_reduce_kind kind, lt_tensor_t *x, int ndims, const int64_t *dims,
                          bool keepdim, lt_dtype dtype, double p, lt_tensor_t **indices);

/* ---- shape ops (core/grad_shape.c) ---- */
/* o (consumed) is x reshaped, squeezed, unsqueezed or flattened: the gradient is reshaped back */
lt_tensor_t *lt_ag_view_result(const char *name, lt_tensor_t *x, lt_tensor_t *o);
lt_tensor_t *lt_ag_permute(lt_tensor_t *x, int ndim, const int64_t *dims);
lt_tensor_t *lt_ag_transpose(lt_tensor_t *x, int64_t d0, int64_t d1);
lt_tensor_t *lt_ag_expand(lt_tensor_t *x, int ndim, const int64_t *sizes);
lt_tensor_t *lt_ag_narrow(lt_tensor_t *x, int64_t dim, int64_t start, int64_t length);
lt_tensor_t *lt_ag_select(lt_tensor_t *x, int64_t dim, int64_t index);
lt_tensor_t *lt_ag_slice(lt_tensor_t *x, int64_t dim, int64_t start, int64_t stop, int64_t step);
lt_tensor_t *lt_ag_cat(int n, lt_tensor_t *const *xs, int64_t dim);
lt_tensor_t *lt_ag_stack(int n, lt_tensor_t *const *xs, int64_t dim);
/* run `call` with grad mode off and record it as a reshape of x */
#define LT_AG_RESHAPE_LIKE(name, x, call)                  \
  if (lt_ag_needed(x, NULL)) {                             \
    bool prev_ = lt_set_grad_enabled(false);               \
    lt_tensor_t *o_ = (call);                              \
    lt_set_grad_enabled(prev_);                            \
    return lt_ag_view_result(name, x, o_);                 \
  }

/* ---- matrix products (core/grad_linalg.c): o (consumed) = beta * c + alpha * a @ b, c NULL
   for the plain products ---- */
lt_tensor_t *lt_ag_linalg(const char *name, lt_tensor_t *c, lt_tensor_t *a, lt_tensor_t *b, double beta,
                          double alpha, lt_tensor_t *o);
#define LT_AG_LINALG(name, c, a, b, beta, alpha, call)          \
  if (lt_ag_needed(a, b) || lt_ag_needed(c, NULL)) {            \
    bool prev_ = lt_set_grad_enabled(false);                    \
    lt_tensor_t *o_ = (call);                                   \
    lt_set_grad_enabled(prev_);                                 \
    return lt_ag_linalg(name, c, a, b, beta, alpha, o_);        \
  }

/* ---- indexing (core/grad_index.c) ---- */
lt_tensor_t *lt_ag_index_select(lt_tensor_t *x, int64_t dim, lt_tensor_t *index);
lt_tensor_t *lt_ag_gather(lt_tensor_t *x, int64_t dim, lt_tensor_t *index);
lt_tensor_t *lt_ag_masked_select(lt_tensor_t *x, lt_tensor_t *mask);
lt_tensor_t *lt_ag_masked_fill(lt_tensor_t *x, lt_tensor_t *mask, lt_operand_t value, lt_tensor_t *out);
lt_tensor_t *lt_ag_scatter(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t src, lt_tensor_t *out,
                           bool add);
int lt_ag_index_add_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, double alpha, bool fill,
                     lt_operand_t value);

/* The node name PyTorch users know: "exp" -> "ExpBackward0", "log_softmax" -> "LogSoftmaxBackward0".
   Returns a string that lives as long as the program (interned). */
const char *lt_ag_node_name(const char *op);

/* ---- formula helpers: each consumes its tensor arguments (NULL propagates as failure) ---- */
static inline lt_operand_t lt_T(lt_tensor_t *t) { return lt_tensor_operand(t); }
static inline lt_operand_t lt_F(double v) { return lt_float_operand(v); }
/* a (consumed) op b */
static inline lt_tensor_t *lt_opc(lt_binary_op op, lt_tensor_t *a, lt_operand_t b) {
  if (!a) return NULL;
  lt_tensor_t *r = lt_binary(op, lt_tensor_operand(a), b, 1, NULL);
  lt_release(a);
  return r;
}
/* a op b, both consumed */
static inline lt_tensor_t *lt_opcc(lt_binary_op op, lt_tensor_t *a, lt_tensor_t *b) {
  lt_tensor_t *r = a && b ? lt_binary(op, lt_tensor_operand(a), lt_tensor_operand(b), 1, NULL) : NULL;
  lt_release(a);
  lt_release(b);
  return r;
}
/* a op b, neither consumed */
static inline lt_tensor_t *lt_op(lt_binary_op op, lt_operand_t a, lt_operand_t b) {
  return lt_binary(op, a, b, 1, NULL);
}
static inline lt_tensor_t *lt_retained(lt_tensor_t *t) { lt_retain(t); return t; }

#endif
