/* Elementwise operations, copies and conversions. Dimensions are 0-based in the core (the Lua
   binding converts);
   functions returning a tensor return a new reference (NULL with an error set on failure). */
#ifndef LT_ELEMENTWISE_API_H
#define LT_ELEMENTWISE_API_H

#include "core/tensor.h"
#include "kernels/elementwise.h"

/* An operand that is a tensor or a Lua number/boolean. */
typedef enum { LT_OPERAND_TENSOR, LT_OPERAND_FLOAT, LT_OPERAND_INT, LT_OPERAND_BOOL } lt_operand_kind;
typedef struct {
  lt_operand_kind kind;
  lt_tensor_t *t;
  double f;
  int64_t i;
} lt_operand_t;

static inline lt_operand_t lt_tensor_operand(lt_tensor_t *t) {
  lt_operand_t o = {LT_OPERAND_TENSOR, t, 0, 0};
  return o;
}
static inline lt_operand_t lt_float_operand(double f) {
  lt_operand_t o = {LT_OPERAND_FLOAT, NULL, f, 0};
  return o;
}
static inline lt_operand_t lt_int_operand(int64_t i) {
  lt_operand_t o = {LT_OPERAND_INT, NULL, (double)i, i};
  return o;
}

const char *lt_unary_name(lt_unary_op op);
const char *lt_binary_name(lt_binary_op op);
const char *lt_compare_name(lt_compare_op op);

/* ---- elementwise (core/elementwise.c) ---- */
/* out may be NULL (a new tensor) or the tensor to write into (in-place: x itself). */
lt_tensor_t *lt_unary(lt_unary_op op, lt_tensor_t *x, lt_tensor_t *out);
lt_tensor_t *lt_binary(lt_binary_op op, lt_operand_t a, lt_operand_t b, double alpha, lt_tensor_t *out);
lt_tensor_t *lt_compare(lt_compare_op op, lt_operand_t a, lt_operand_t b, lt_tensor_t *out);
/* The input's gradient of a unary op from the output's gradient g, the input x and output y. */
lt_tensor_t *lt_unary_backward(lt_unary_op op, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *y);
lt_tensor_t *lt_logical_not(lt_tensor_t *x, lt_tensor_t *out);
lt_tensor_t *lt_where(lt_tensor_t *cond, lt_operand_t a, lt_operand_t b);
/* min or max may be NULL (not given). */
lt_tensor_t *lt_clamp(lt_tensor_t *x, const lt_operand_t *min, const lt_operand_t *max, lt_tensor_t *out);
/* dst = src, broadcasting src to dst's shape, converting dtype, across devices. */
int lt_copy_(lt_tensor_t *dst, const lt_tensor_t *src);
int lt_fill_(lt_tensor_t *dst, lt_operand_t v);
/* A contiguous tensor of dtype dt on device dev with x's values (always a new tensor). */
lt_tensor_t *lt_convert(const lt_tensor_t *x, lt_dtype dt, lt_device_t dev);
/* x itself (retained) when contiguous, else a contiguous copy. */
lt_tensor_t *lt_contiguous(lt_tensor_t *x);
lt_tensor_t *lt_clone(const lt_tensor_t *x);
/* Read element i (0-based, of the row-major order) as double / int64 (CPU memory). */
double lt_get_double(const lt_tensor_t *x, int64_t i);
int64_t lt_get_int(const lt_tensor_t *x, int64_t i);
/* The value of a one-element tensor. */
int lt_item(const lt_tensor_t *x, lt_operand_t *out);
/* a == b in shape and values */
int lt_equal(const lt_tensor_t *a, const lt_tensor_t *b, bool *out);
/* torch.can_cast */
bool lt_can_cast(lt_dtype from, lt_dtype to);

#endif
