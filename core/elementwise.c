/* Elementwise ops: checks (devices, dtypes, shapes), type promotion, output allocation, then the
   device's loop over a broadcast iteration. */
#include "core/iter.h"
#include "core/grad.h"
#include "core/elementwise.h"
#include "core/cuda.h"
#include "kernels/cpu/elementwise.h"

#include <stdio.h>
#include <string.h>

static const char *const unary_names[] = {
#define LT_X(name, kind, fbody, ibody) #name,
    LT_UNARY_OPS(LT_X)
#undef LT_X
};
static const char *const binary_names[] = {
#define LT_X(name, kind, fbody, ibody) #name,
    LT_BINARY_OPS(LT_X)
#undef LT_X
};
static const char *const compare_names[] = {
#define LT_X(name, body) #name,
    LT_COMPARE_OPS(LT_X)
#undef LT_X
};

const char *lt_unary_name(lt_unary_op op) { return unary_names[op]; }
const char *lt_binary_name(lt_binary_op op) { return binary_names[op]; }
const char *lt_compare_name(lt_compare_op op) { return compare_names[op]; }

bool lt_can_cast(lt_dtype from, lt_dtype to) {
  if (lt_dtype_is_floating(from) && !lt_dtype_is_floating(to)) return false;
  if (from != LT_BOOL && to == LT_BOOL) return false;
  return true;
}

/* ---- helpers ---- */

static const lt_tensor_t *operand_tensor(const lt_operand_t *o) {
  return o->kind == LT_OPERAND_TENSOR ? o->t : NULL;
}

static void add_operand_type(lt_result_type_t *r, const lt_operand_t *o) {
  if (o->kind == LT_OPERAND_TENSOR) lt_result_type_add_tensor(r, o->t->dtype, o->t->ndim);
  else lt_result_type_add_scalar(r, o->kind == LT_OPERAND_FLOAT, o->kind == LT_OPERAND_BOOL);
}

/* Write a number as one element of dtype dt into buf (>= 8 bytes). */
static void scalar_to_bytes(const lt_operand_t *o, lt_dtype dt, void *buf) {
  char *d[2];
  int64_t s[2] = {0, 0};
  d[0] = buf;
  if (o->kind == LT_OPERAND_FLOAT) {
    d[1] = (char *)&o->f;
    lt_cpu_cast_loop(dt, LT_FLOAT64)(d, s, 1, NULL);
  } else {
    d[1] = (char *)&o->i;
    lt_cpu_cast_loop(dt, LT_INT64)(d, s, 1, NULL);
  }
}

/* The output: a new tensor of the shape and dtype, or `out` checked against them. */
static lt_tensor_t *prepare_out(const char *op, lt_tensor_t *out, int nd, const int64_t *shape,
                                lt_dtype dt, lt_device_t dev) {
  if (!out) return lt_empty(nd, shape, dt, dev);
  if (out->ndim != nd || memcmp(out->sizes, shape, sizeof(int64_t) * (size_t)nd) != 0) {
    char a[256], b[256];
    lt_error("%s: output with shape %s doesn't match the broadcast shape %s", op,
             lt_shape_str(out->ndim, out->sizes, a, sizeof a), lt_shape_str(nd, shape, b, sizeof b));
    return NULL;
  }
  if (!lt_can_cast(dt, out->dtype)) {
    lt_error("%s: result type %s can't be cast to the desired output type %s", op,
             lt_dtype_name(dt), lt_dtype_name(out->dtype));
    return NULL;
  }
  lt_retain(out);
  return out;
}

/* Make `*t` have dtype dt, replacing it by a converted copy held in *tmp. */
static int ensure_dtype(const lt_tensor_t **t, lt_dtype dt, lt_tensor_t **tmp) {
  if ((*t)->dtype == dt) return LT_OK;
  *tmp = lt_convert(*t, dt, (*t)->device);
  if (!*tmp) return LT_ERR;
  *t = *tmp;
  return LT_OK;
}

/* Run loop over the outputs and inputs; inputs NULL are scalars given by scalar_ptr[k], split
   between threads in parts of at least `grain` elements. When the
   real output's dtype differs from the compute dtype, compute into a temporary and cast. Outputs
   on a device whose memory the CPU cannot read go to that device's kernel for the op (dk). */
static int run_elementwise(lt_tensor_t *out, lt_dtype compute_out, int nin, const lt_tensor_t **ins,
                           void *const *scalar_ptr, lt_loop_fn loop, const void *ctx, const char *name,
                           const lt_ew_desc_t *dk, int64_t grain) {
  lt_tensor_t *target = out;
  lt_tensor_t *tmp = NULL;
  if (out->dtype != compute_out) {
    tmp = lt_empty(out->ndim, out->sizes, compute_out, out->device);
    if (!tmp) return LT_ERR;
    target = tmp;
  }
  int rc = LT_OK;
  if (target->device.type != LT_CPU) {
    rc = lt_cuda_elementwise(name, dk, target, nin, ins, scalar_ptr);
  } else {
    lt_tensor_t *ops[LT_ITER_MAX_OPS];
    ops[0] = target;
    for (int k = 0; k < nin; k++) ops[k + 1] = (lt_tensor_t *)ins[k];
    lt_iter_t it;
    lt_iter_init(&it, nin + 1, ops);
    for (int k = 0; k < nin; k++) /* numbers: one value, converted to the compute dtype */
      if (!ins[k]) it.data[k + 1] = scalar_ptr[k];
    lt_iter_run(&it, loop, ctx, grain);
  }
  if (rc == LT_OK && tmp) {
    rc = lt_copy_(out, tmp);
  }
  lt_release(tmp);
  return rc;
}

/* The bitwise ops take integer and bool tensors (the shifts integer ones only), as PyTorch. */
static int check_bitwise(const char *name, lt_dtype dt, bool shift) {
  if (lt_dtype_is_floating(dt) || (shift && dt == LT_BOOL))
    return lt_error("%s: not implemented for dtype %s (it takes integer%s operands)", name, lt_dtype_name(dt),
                    shift ? "" : " and bool");
  return LT_OK;
}

/* ---- unary ---- */
/* elements a thread takes at least, for a unary op and its gradient: the arithmetic ones as every
   loop, the floating ones that evaluate a function (exp, tanh, erf, libm's) an eighth of that,
   whose work is worth a thread's wake-up sooner (F.gelu of 64 x 512 on two threads: 26 -> 14 us) */
static int64_t unary_grain(lt_unary_op op, lt_dtype dt) {
  if (!lt_dtype_is_floating(dt)) return LT_GRAIN;
  switch (op) {
  case LT_UNARY_abs: case LT_UNARY_neg: case LT_UNARY_relu: case LT_UNARY_relu6: case LT_UNARY_floor:
  case LT_UNARY_ceil: case LT_UNARY_round: case LT_UNARY_trunc: case LT_UNARY_sign: case LT_UNARY_square:
  case LT_UNARY_reciprocal: case LT_UNARY_frac: case LT_UNARY_softsign: case LT_UNARY_hardswish:
  case LT_UNARY_hardsigmoid: case LT_UNARY_bitwise_not:
    return LT_GRAIN;
  default:
    return LT_GRAIN / 8;
  }
}

lt_tensor_t *lt_unary(lt_unary_op op, lt_tensor_t *x, lt_tensor_t *out) {
  const char *name = unary_names[op];
  if (lt_unary_int_only(op) && check_bitwise(name, x->dtype, false) != LT_OK) return NULL;
  if (out && lt_check_write(name, out) != LT_OK) return NULL;
  if (op == LT_UNARY_bitwise_not && x->dtype == LT_BOOL) return lt_logical_not(x, out); /* ~ of bool: not */
  if (lt_ag_needed(x, out)) return lt_ag_unary(op, x, out);
  if (out && out != x) {
    const lt_tensor_t *pair[2] = {x, out};
    if (lt_check_same_device(name, 2, pair) != LT_OK) return NULL;
  }
  lt_dtype dt = x->dtype;
  if (dt == LT_BOOL && (op == LT_UNARY_abs || op == LT_UNARY_floor || op == LT_UNARY_ceil || op == LT_UNARY_round ||
                        op == LT_UNARY_trunc || op == LT_UNARY_relu)) {
    lt_error("%s: not implemented for bool tensors", name);
    return NULL;
  }
  if (op == LT_UNARY_frac && !lt_dtype_is_floating(dt)) {
    lt_error("frac: not implemented for %s tensors (it takes floating ones)", lt_dtype_name(dt));
    return NULL;
  }
  if (dt == LT_BOOL && op == LT_UNARY_square) dt = LT_INT64; /* as bool ** 2 */
  if (x->dtype == LT_BOOL && op == LT_UNARY_neg) {
    lt_error("neg: negation, the `-` operator, on a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    return NULL;
  }
  if (!lt_dtype_is_floating(dt) && !lt_unary_has_int(op)) dt = lt_default_float();
  lt_tensor_t *o = prepare_out(name, out, x->ndim, x->sizes, dt, x->device);
  if (!o) return NULL;
  const lt_tensor_t *in = x;
  lt_tensor_t *tmp = NULL;
  if (ensure_dtype(&in, dt, &tmp) != LT_OK) { lt_release(o); return NULL; }
  lt_ew_desc_t dk = {LT_EW_UNARY, (int)op, dt, 0, 0};
  int rc = run_elementwise(o, dt, 1, &in, NULL, lt_cpu_unary_loop(op, dt), NULL, name, &dk, unary_grain(op, dt));
  lt_release(tmp);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  if (out) lt_bump_version(out);
  return o;
}

lt_tensor_t *lt_unary_backward(lt_unary_op op, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *y) {
  bool ux = false, uy = false;
  lt_loop_fn loop = lt_cpu_unary_grad_loop(op, g->dtype, &ux, &uy);
  if (!loop) { lt_error("%s: backward needs a floating gradient", unary_names[op]); return NULL; }
  lt_tensor_t *o = lt_empty(g->ndim, g->sizes, g->dtype, g->device);
  if (!o) return NULL;
  const lt_tensor_t *ins[3] = {g, ux ? x : g, uy ? y : g};
  lt_tensor_t *tmp[2] = {NULL, NULL};
  int rc = ensure_dtype(&ins[1], g->dtype, &tmp[0]);
  if (rc == LT_OK) rc = ensure_dtype(&ins[2], g->dtype, &tmp[1]);
  lt_ew_desc_t dk = {LT_EW_UNARY_GRAD, (int)op, g->dtype, 0, 0};
  if (rc == LT_OK) rc = run_elementwise(o, g->dtype, 3, ins, NULL, loop, NULL, unary_names[op], &dk,
                                          unary_grain(op, g->dtype));
  lt_release(tmp[0]);
  lt_release(tmp[1]);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  return o;
}

lt_tensor_t *lt_logical_not(lt_tensor_t *x, lt_tensor_t *out) {
  /* x == 0; for a bool x, x == false (an int 0 would promote x to int64 first: a copy) */
  lt_operand_t a = lt_tensor_operand(x), zero = lt_int_operand(0);
  if (x->dtype == LT_BOOL) zero.kind = LT_OPERAND_BOOL;
  return lt_compare(LT_COMPARE_eq, a, zero, out);
}

/* ---- binary and comparisons share their set-up ---- */
typedef struct {
  const lt_tensor_t *in[2];
  lt_tensor_t *tmp[2];
  unsigned char sbuf[2][8];
  void *sptr[2];
  int nd;
  int64_t shape[LT_MAX_DIM];
  lt_device_t dev;
} binary_setup_t;

static void setup_free(binary_setup_t *s) {
  lt_release(s->tmp[0]);
  lt_release(s->tmp[1]);
}

/* Devices, broadcast shape, inputs converted to dtype dt (scalars into bytes). */
static int setup_binary(const char *name, const lt_operand_t *a, const lt_operand_t *b, lt_dtype dt,
                        const lt_tensor_t *out, binary_setup_t *s) {
  const lt_tensor_t *ts[3] = {operand_tensor(a), operand_tensor(b), out};
  memset(s, 0, sizeof *s);
  LT_TRY(lt_check_same_device(name, 3, ts));
  const lt_operand_t *o[2] = {a, b};
  s->nd = 0;
  s->dev = lt_device(LT_CPU, 0);
  int have_dev = 0;
  for (int k = 0; k < 2; k++) {
    if (o[k]->kind != LT_OPERAND_TENSOR) continue;
    const lt_tensor_t *t = o[k]->t;
    /* the result lives where the dimensioned operands are (a 0-dim CPU tensor joins them) */
    if (!have_dev || (t->ndim > 0 && have_dev == 1)) { s->dev = t->device; have_dev = t->ndim > 0 ? 2 : 1; }
    int nd;
    int64_t sh[LT_MAX_DIM];
    LT_TRY(lt_broadcast_shapes(name, s->nd, s->shape, t->ndim, t->sizes, &nd, sh));
    s->nd = nd;
    memcpy(s->shape, sh, sizeof(int64_t) * (size_t)nd);
  }
  if (!have_dev && out) s->dev = out->device;
  for (int k = 0; k < 2; k++) {
    if (o[k]->kind == LT_OPERAND_TENSOR) {
      s->in[k] = o[k]->t;
      if (ensure_dtype(&s->in[k], dt, &s->tmp[k]) != LT_OK) { setup_free(s); return LT_ERR; }
    } else {
      s->in[k] = NULL;
      scalar_to_bytes(o[k], dt, s->sbuf[k]);
      s->sptr[k] = s->sbuf[k];
    }
  }
  return LT_OK;
}

static int check_int_divisor(const char *name, const lt_operand_t *b) {
  if (b->kind != LT_OPERAND_TENSOR) {
    if (b->i == 0) return lt_error("%s: ZeroDivisionError (integer division by zero)", name);
    return LT_OK;
  }
  lt_tensor_t *z = lt_compare(LT_COMPARE_eq, *b, lt_int_operand(0), NULL);
  if (!z) return LT_ERR;
  if (!lt_backend((lt_devtype)z->device.type)->host_accessible) { /* read a device's mask on the host */
    lt_tensor_t *h = lt_convert(z, LT_BOOL, lt_device(LT_CPU, 0));
    lt_release(z);
    if (!h) return LT_ERR;
    z = h;
  }
  int found = 0;
  const bool *p = lt_data(z);
  for (int64_t i = 0; i < z->numel && !found; i++) found = p[i];
  lt_release(z);
  return found ? lt_error("%s: ZeroDivisionError (integer division by zero)", name) : LT_OK;
}

/* the integer ops that divide: an integer divisor 0 is an error (PyTorch's ZeroDivisionError) */
static bool int_divides(lt_binary_op op) {
  return op == LT_BINARY_fmod || op == LT_BINARY_remainder || op == LT_BINARY_floor_divide ||
         op == LT_BINARY_div_trunc;
}

/* The common case of small ops in a loop: two contiguous tensors of one shape, dtype and device. */
static bool binary_fast_path(lt_binary_op op, const lt_tensor_t *x, const lt_tensor_t *y, double alpha,
                             const lt_tensor_t *out) {
  lt_dtype dt = x->dtype;
  if (y->dtype != dt || x->ndim != y->ndim || !lt_device_eq(x->device, y->device) || (out && out != x) ||
      x->device.type != LT_CPU)
    return false;
  if (!lt_dtype_is_floating(dt) &&
      (dt == LT_BOOL || !lt_binary_has_int(op) || int_divides(op) ||
       alpha != (double)(int64_t)alpha))
    return false;
  if (x->numel >= LT_GRAIN || memcmp(x->sizes, y->sizes, sizeof(int64_t) * (size_t)x->ndim) != 0)
    return false;
  return lt_is_contiguous(x) && lt_is_contiguous(y);
}

static bool is_bool_operand(const lt_operand_t *o) {
  return o->kind == LT_OPERAND_BOOL || (o->kind == LT_OPERAND_TENSOR && o->t->dtype == LT_BOOL);
}

/* the dtype a binary op computes in: PyTorch's promotion of the operands */
static lt_dtype promoted(const lt_operand_t *a, const lt_operand_t *b) {
  lt_result_type_t r;
  lt_result_type_init(&r);
  add_operand_type(&r, a);
  add_operand_type(&r, b);
  return lt_result_type_get(&r);
}

lt_tensor_t *lt_binary(lt_binary_op op, lt_operand_t a, lt_operand_t b, double alpha, lt_tensor_t *out) {
  if (lt_binary_int_only(op) && (a.kind == LT_OPERAND_TENSOR || b.kind == LT_OPERAND_TENSOR) &&
      check_bitwise(binary_names[op], promoted(&a, &b),
                    op == LT_BINARY_bitwise_left_shift || op == LT_BINARY_bitwise_right_shift) != LT_OK)
    return NULL;
  if (out && lt_check_write(binary_names[op], out) != LT_OK) return NULL;
  if (lt_ag_needed(a.kind == LT_OPERAND_TENSOR ? a.t : NULL, b.kind == LT_OPERAND_TENSOR ? b.t : NULL) ||
      (out && lt_ag_needed(out, NULL)))
    return lt_ag_binary(op, a, b, alpha, out);
  const char *name = binary_names[op];
  /* A floating x to the powers PyTorch computes without pow (its pow_tensor_scalar_optimized_kernel),
     by the same forms: 2 x * x (the value pow gives: a square is rounded once), 3 x * x * x, 0.5
     sqrt, -0.5 rsqrt, -1 reciprocal, -2 1 / (x * x) (so sqrt(-0) = -0 and sqrt(-inf) = NaN, as
     PyTorch's), instead of libm's pow an element (64 x 512 floats: 172 -> 4 us for 2, 142 -> 7 for 3).
     3 and -2 round twice: float32 and float64 only, as PyTorch's (float16 and bfloat16 take pow);
     float16 takes pow for 0.5 and -0.5 too, as PyTorch 1.13's (pow(-inf, 0.5) = inf there). */
  if (op == LT_BINARY_pow && a.kind == LT_OPERAND_TENSOR && lt_dtype_is_floating(a.t->dtype) &&
      (b.kind == LT_OPERAND_INT || b.kind == LT_OPERAND_FLOAT)) {
    const double e = b.kind == LT_OPERAND_INT ? (double)b.i : b.f;
    const bool full = a.t->dtype == LT_FLOAT32 || a.t->dtype == LT_FLOAT64;
    if (e == 2.0) return lt_binary(LT_BINARY_mul, a, a, 1, out);
    if (e == 0.5 && a.t->dtype != LT_FLOAT16) return lt_unary(LT_UNARY_sqrt, a.t, out);
    if (e == -0.5 && a.t->dtype != LT_FLOAT16) return lt_unary(LT_UNARY_rsqrt, a.t, out);
    if (e == -1.0) return lt_unary(LT_UNARY_reciprocal, a.t, out);
    if (full && (e == 3.0 || e == -2.0)) {
      lt_tensor_t *sq = lt_binary(LT_BINARY_mul, a, a, 1, NULL);
      if (!sq) return NULL;
      lt_tensor_t *r = e == 3.0 ? lt_binary(LT_BINARY_mul, lt_tensor_operand(sq), a, 1, out)
                                : lt_unary(LT_UNARY_reciprocal, sq, out);
      lt_release(sq);
      return r;
    }
  }
  if (a.kind == LT_OPERAND_TENSOR && b.kind == LT_OPERAND_TENSOR && binary_fast_path(op, a.t, b.t, alpha, out)) {
    lt_tensor_t *o = out;
    if (o) lt_retain(o);
    else if (!(o = lt_empty_as_contiguous(a.t))) return NULL;
    int64_t es = (int64_t)lt_elsize(o);
    char *d[3] = {lt_data(o), lt_data(a.t), lt_data(b.t)};
    int64_t st[3] = {es, es, es};
    lt_binary_ctx_t ctx = {alpha, (int64_t)alpha};
    lt_cpu_binary_loop(op, o->dtype)(d, st, o->numel, &ctx);
    if (out) lt_bump_version(out);
    return o;
  }
  if (a.kind != LT_OPERAND_TENSOR && b.kind != LT_OPERAND_TENSOR) {
    lt_error("%s: expected at least one tensor operand", name);
    return NULL;
  }
  lt_dtype dt = promoted(&a, &b);
  if (op == LT_BINARY_sub && dt == LT_BOOL) {
    lt_error("sub: subtraction, the `-` operator, with two bool tensors is not supported. Use the "
             "`^` or `logical_xor()` operator instead.");
    return NULL;
  }
  if (op == LT_BINARY_sub && (is_bool_operand(&a) || is_bool_operand(&b))) {
    lt_error("sub: subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
             "to invert a mask, use the `~` or `logical_not()` operator instead.");
    return NULL;
  }
  if (dt == LT_BOOL && (op == LT_BINARY_pow || int_divides(op))) {
    lt_error("%s: not implemented for bool tensors", name);
    return NULL;
  }
  if (op == LT_BINARY_pow && !lt_dtype_is_floating(dt) && b.kind == LT_OPERAND_INT && b.i < 0) {
    lt_error("pow: Integers to negative integer powers are not allowed.");
    return NULL;
  }
  if (!lt_dtype_is_floating(dt) && lt_binary_floats_only(op)) {
    lt_error("%s%s: not implemented for %s tensors (it takes floating ones)", name,
             out && a.kind == LT_OPERAND_TENSOR && out == a.t ? "_" : "", lt_dtype_name(dt));
    return NULL;
  }
  if (!lt_dtype_is_floating(dt) && !lt_binary_has_int(op)) dt = lt_default_float();
  if (!lt_dtype_is_floating(dt) && alpha != (double)(int64_t)alpha) {
    lt_error("%s: for integral input tensors, argument alpha must not be a floating point number", name);
    return NULL;
  }
  if (!lt_dtype_is_floating(dt) && int_divides(op) && check_int_divisor(name, &b) != LT_OK) return NULL;
  binary_setup_t s;
  if (setup_binary(name, &a, &b, dt, out, &s) != LT_OK) return NULL;
  lt_tensor_t *o = prepare_out(name, out, s.nd, s.shape, dt, s.dev);
  if (!o) { setup_free(&s); return NULL; }
  lt_binary_ctx_t ctx = {alpha, (int64_t)alpha};
  lt_ew_desc_t dk = {LT_EW_BINARY, (int)op, dt, alpha, (int64_t)alpha};
  int rc = run_elementwise(o, dt, 2, s.in, s.sptr, lt_cpu_binary_loop(op, dt), &ctx, name, &dk, LT_GRAIN);
  setup_free(&s);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  if (out) lt_bump_version(out);
  return o;
}

lt_tensor_t *lt_compare(lt_compare_op op, lt_operand_t a, lt_operand_t b, lt_tensor_t *out) {
  const char *name = compare_names[op];
  if (out && lt_check_write(name, out) != LT_OK) return NULL;
  if (a.kind != LT_OPERAND_TENSOR && b.kind != LT_OPERAND_TENSOR) {
    lt_error("%s: expected at least one tensor operand", name);
    return NULL;
  }
  lt_result_type_t r;
  lt_result_type_init(&r);
  add_operand_type(&r, &a);
  add_operand_type(&r, &b);
  lt_dtype dt = lt_result_type_get(&r);
  binary_setup_t s;
  if (setup_binary(name, &a, &b, dt, out, &s) != LT_OK) return NULL;
  lt_tensor_t *o = prepare_out(name, out, s.nd, s.shape, LT_BOOL, s.dev);
  if (!o) { setup_free(&s); return NULL; }
  lt_ew_desc_t dk = {LT_EW_COMPARE, (int)op, dt, 0, 0};
  int rc = run_elementwise(o, LT_BOOL, 2, s.in, s.sptr, lt_cpu_compare_loop(op, dt), NULL, name, &dk, LT_GRAIN);
  setup_free(&s);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  if (out) lt_bump_version(out);
  return o;
}

lt_tensor_t *lt_where(lt_tensor_t *cond, lt_operand_t a, lt_operand_t b) {
  if (lt_ag_needed(a.kind == LT_OPERAND_TENSOR ? a.t : NULL, b.kind == LT_OPERAND_TENSOR ? b.t : NULL))
    return lt_ag_where(cond, a, b);
  if (cond->dtype != LT_BOOL) {
    lt_error("where: expected condition to be a bool tensor, but got a tensor of dtype %s",
             lt_dtype_name(cond->dtype));
    return NULL;
  }
  lt_result_type_t r;
  lt_result_type_init(&r);
  add_operand_type(&r, &a);
  add_operand_type(&r, &b);
  lt_dtype dt = lt_result_type_get(&r);
  binary_setup_t s;
  if (setup_binary("where", &a, &b, dt, NULL, &s) != LT_OK) return NULL;
  const lt_tensor_t *ts[2] = {cond, s.in[0] ? s.in[0] : s.in[1]};
  int nd;
  int64_t shape[LT_MAX_DIM];
  if (lt_check_same_device("where", 2, ts) != LT_OK ||
      lt_broadcast_shapes("where", cond->ndim, cond->sizes, s.nd, s.shape, &nd, shape) != LT_OK) {
    setup_free(&s);
    return NULL;
  }
  /* the result lives with the dimensioned operands (numbers and 0-dim CPU tensors join them) */
  bool from_cond = (a.kind != LT_OPERAND_TENSOR || a.t->ndim == 0) && (b.kind != LT_OPERAND_TENSOR || b.t->ndim == 0);
  lt_tensor_t *o = lt_empty(nd, shape, dt, from_cond ? cond->device : s.dev);
  if (!o) { setup_free(&s); return NULL; }
  const lt_tensor_t *ins[3] = {cond, s.in[0], s.in[1]};
  void *sp[3] = {NULL, s.sptr[0], s.sptr[1]};
  lt_ew_desc_t dk = {LT_EW_WHERE, 0, dt, 0, 0};
  int rc = run_elementwise(o, dt, 3, ins, sp, lt_cpu_where_loop(lt_dtype_size(dt)), NULL, "where", &dk, LT_GRAIN);
  setup_free(&s);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  return o;
}

/* NULL, the error of clamp's maximum or minimum step renamed clamp's */
static lt_tensor_t *clamp_failed(void) {
  const char *e = lt_last_error();
  if (strncmp(e, "maximum: ", 9) == 0 || strncmp(e, "minimum: ", 9) == 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", e + 9);
    lt_error("clamp: %s", msg);
  }
  return NULL;
}

lt_tensor_t *lt_clamp(lt_tensor_t *x, const lt_operand_t *min, const lt_operand_t *max, lt_tensor_t *out) {
  if (out && lt_check_write("clamp", out) != LT_OK) return NULL;
  if (!min && !max) {
    lt_error("clamp: at least one of 'min' or 'max' must not be nil");
    return NULL;
  }
  if (x->dtype == LT_BOOL && min && max && is_bool_operand(min) && is_bool_operand(max)) {
    lt_error("clamp: not implemented for bool tensors with bool bounds on both sides");
    return NULL;
  }
  /* a float32 or float64 tensor on the CPU between two numbers, no autograd: one pass */
  if (min && max && min->kind != LT_OPERAND_TENSOR && min->kind != LT_OPERAND_BOOL &&
      max->kind != LT_OPERAND_TENSOR && max->kind != LT_OPERAND_BOOL && x->device.type == LT_CPU &&
      lt_cpu_clamp_loop(x->dtype) && (!out || out == x) && !lt_ag_needed(x, NULL)) {
    double b[2] = {min->kind == LT_OPERAND_FLOAT ? min->f : (double)min->i,
                   max->kind == LT_OPERAND_FLOAT ? max->f : (double)max->i};
    lt_tensor_t *o = out ? out : lt_empty(x->ndim, x->sizes, x->dtype, x->device);
    if (!o) return NULL;
    const lt_tensor_t *ins[1] = {x};
    void *sp[1] = {NULL};
    lt_ew_desc_t dk = {LT_EW_BINARY, (int)LT_BINARY_maximum, x->dtype, 0, 0}; /* (CPU only: not read) */
    if (run_elementwise(o, x->dtype, 1, ins, sp, lt_cpu_clamp_loop(x->dtype), b, "clamp", &dk, LT_GRAIN) != LT_OK) {
      if (!out) lt_release(o);
      return NULL;
    }
    if (out) {
      lt_retain(out);
      lt_bump_version(out);
    }
    return o;
  }
  lt_tensor_t *cur = x;
  lt_retain(cur);
  if (min) {
    lt_tensor_t *r = lt_binary(LT_BINARY_maximum, lt_tensor_operand(cur), *min, 1, out);
    lt_release(cur);
    if (!r) return clamp_failed();
    cur = r;
  }
  if (max) {
    lt_tensor_t *r = lt_binary(LT_BINARY_minimum, lt_tensor_operand(cur), *max, 1, min ? cur : out);
    lt_release(cur);
    if (!r) return clamp_failed();
    cur = r;
  }
  return cur;
}

/* ---- copies, fills, conversions ---- */
/* A copy of the same dtype into a contiguous dst from a src whose last two dims are transposed
   (stride 1 along the next-to-last, not along the last: x:t():contiguous(), a transpose of the
   last two dims) with a row stride that makes the iterator's copy miss the cache, of different
   storages: by tiles (kernels/cpu/elementwise.c); false (nothing done) otherwise. Each leading
   index (a batch) is one matrix. */
static bool transpose_copy(lt_tensor_t *dst, const lt_tensor_t *src) {
  int nd = dst->ndim;
  if (nd < 2 || src->ndim != nd || src->dtype != dst->dtype || src->storage == dst->storage ||
      !lt_is_contiguous(dst) || dst->numel < 1024 ||
      memcmp(src->sizes, dst->sizes, sizeof(int64_t) * (size_t)nd) != 0) /* (not broadcast) */
    return false;
  int64_t R = dst->sizes[nd - 2], C = dst->sizes[nd - 1], sc = src->strides[nd - 1];
  if (src->strides[nd - 2] != 1 || sc == 1 || sc < R || R < 8 || C < 8) return false;
  size_t es = lt_elsize(dst);
  if ((es != 1 && es != 2 && es != 4 && es != 8) || !lt_cpu_transpose_conflicts(es, sc)) return false;
  int64_t batch = dst->numel / (R * C), idx[LT_MAX_DIM] = {0};
  int nt = lt_threads_for((double)dst->numel, LT_GRAIN, 0);
  char *d = lt_data(dst);
  const char *sbase = lt_data(src);
  for (int64_t b = 0; b < batch; b++) {
    int64_t off = 0;
    for (int k = 0; k < nd - 2; k++) off += idx[k] * src->strides[k];
    lt_cpu_transpose_copy(es, d + b * R * C * (int64_t)es, sbase + off * (int64_t)es, R, C, sc, nt);
    for (int k = nd - 3; k >= 0; k--) { /* the next batch index, row-major */
      if (++idx[k] < dst->sizes[k]) break;
      idx[k] = 0;
    }
  }
  return true;
}

/* A copy without conversion between CPU tensors of one dtype whose innermost (merged) rows are
   short (under 256 elements): the rows two dimensions at a time in plain loops (lt_cpu_copy_rows),
   threads splitting the rows. The iterator calls its loop once a row, which costs about what a row
   of 32 floats takes to copy (a copy into the interior of a padded tensor ran at a third of a
   contiguous copy's speed). A first dimension shorter than the second (an expanded source of a
   few elements, as x:expand's repeats) is made the second, so that the inner loop runs long. copy:
   the copy's iteration (reordered in a copy of it here). */
static bool rows_copy(const lt_iter_t *copy, const lt_tensor_t *dst, const lt_tensor_t *src) {
  if (src->dtype != dst->dtype || dst->device.type != LT_CPU || src->device.type != LT_CPU) return false;
  size_t es = lt_elsize(dst);
  if (es != 1 && es != 2 && es != 4 && es != 8) return false;
  if (copy->ndim < 2 || copy->shape[0] >= 256) return false;
  lt_iter_t it = *copy;
  if (it.shape[0] < 16 && it.shape[1] > it.shape[0]) { /* the longer of the two inside */
    int64_t n = it.shape[0], st[LT_ITER_MAX_OPS];
    memcpy(st, it.strides[0], sizeof st);
    it.shape[0] = it.shape[1];
    memcpy(it.strides[0], it.strides[1], sizeof st);
    it.shape[1] = n;
    memcpy(it.strides[1], st, sizeof st);
  }
  const int64_t n0 = it.shape[0], n1 = it.shape[1], rows = it.numel / n0;
  const int nt = lt_threads_for((double)it.numel, LT_GRAIN, 0);
  LT_WORKERS(nt, {
    const int64_t r0 = rows * lt_w / lt_nw, r1 = rows * (lt_w + 1) / lt_nw;
    int64_t r = r0;
    while (r < r1) {
      /* block b = r / n1 (the dims above the first two), row j within it */
      int64_t b = r / n1, j = r % n1, cnt = n1 - j < r1 - r ? n1 - j : r1 - r;
      char *d = it.data[0] + j * it.strides[1][0];
      const char *sp = it.data[1] + j * it.strides[1][1];
      for (int k = 2; k < it.ndim; k++) {
        int64_t i = b % it.shape[k];
        b /= it.shape[k];
        d += i * it.strides[k][0];
        sp += i * it.strides[k][1];
      }
      lt_cpu_copy_rows(es, d, sp, n0, it.strides[0][0], it.strides[0][1], cnt, it.strides[1][0], it.strides[1][1]);
      r += cnt;
    }
  });
  return true;
}

int lt_copy_(lt_tensor_t *dst, const lt_tensor_t *src) {
  LT_TRY(lt_check_write("copy_", dst));
  if (lt_ag_needed(dst, src)) return lt_ag_copy_(dst, (lt_tensor_t *)src);
  int nd;
  int64_t shape[LT_MAX_DIM];
  LT_TRY(lt_broadcast_shapes("copy_", dst->ndim, dst->sizes, src->ndim, src->sizes, &nd, shape));
  if (nd != dst->ndim || memcmp(shape, dst->sizes, sizeof(int64_t) * (size_t)nd) != 0) {
    char a[256], b[256];
    return lt_error("copy_: the source of shape %s cannot be broadcast to the destination's shape %s",
                    lt_shape_str(src->ndim, src->sizes, a, sizeof a),
                    lt_shape_str(dst->ndim, dst->sizes, b, sizeof b));
  }
  /* host-accessible memory on both sides: one loop does the conversion */
  const lt_backend_i *bd = lt_backend((lt_devtype)dst->device.type);
  const lt_backend_i *bs = lt_backend((lt_devtype)src->device.type);
  if (!bd->host_accessible || !bs->host_accessible) return lt_cuda_copy_(dst, src);
  if (dst->numel == 0) return LT_OK;
  if (transpose_copy(dst, src)) {
    lt_bump_version(dst);
    return LT_OK;
  }
  lt_tensor_t *ops[2] = {dst, (lt_tensor_t *)src};
  lt_iter_t it;
  lt_iter_init(&it, 2, ops);
  if (!rows_copy(&it, dst, src)) lt_iter_run(&it, lt_cpu_cast_loop(dst->dtype, src->dtype), NULL, LT_GRAIN);
  lt_bump_version(dst);
  return LT_OK;
}

int lt_fill_(lt_tensor_t *dst, lt_operand_t v) {
  LT_TRY(lt_check_write("fill_", dst));
  if (lt_ag_needed(dst, v.kind == LT_OPERAND_TENSOR ? v.t : NULL)) return lt_ag_fill_(dst, v);
  if (v.kind == LT_OPERAND_TENSOR) {
    if (v.t->ndim != 0)
      return lt_error("fill_: only supports 0-dimension value tensor but got tensor with %d dimensions", v.t->ndim);
    return lt_copy_(dst, v.t);
  }
  unsigned char buf[8] = {0};
  scalar_to_bytes(&v, dst->dtype, buf);
  if (dst->numel == 0) return LT_OK;
  if (dst->device.type != LT_CPU) {
    lt_ew_desc_t dk = {LT_EW_FILL, 0, dst->dtype, 0, 0};
    void *sp[1] = {buf};
    const lt_tensor_t *none[1] = {NULL};
    LT_TRY(lt_cuda_elementwise("fill_", &dk, dst, 1, none, sp));
    lt_bump_version(dst);
    return LT_OK;
  }
  lt_tensor_t *ops[1] = {dst};
  lt_iter_t it;
  lt_iter_init(&it, 1, ops);
  lt_iter_run(&it, lt_cpu_fill_loop(lt_dtype_size(dst->dtype)), buf, LT_GRAIN);
  lt_bump_version(dst);
  return LT_OK;
}

lt_tensor_t *lt_convert(const lt_tensor_t *x, lt_dtype dt, lt_device_t dev) {
  if (lt_ag_needed(x, NULL)) return lt_ag_convert((lt_tensor_t *)x, dt, dev);
  lt_tensor_t *o = lt_empty(x->ndim, x->sizes, dt, dev);
  if (!o) return NULL;
  if (lt_copy_(o, x) != LT_OK) { lt_release(o); return NULL; }
  return o;
}

lt_tensor_t *lt_contiguous(lt_tensor_t *x) {
  if (lt_is_contiguous(x)) { lt_retain(x); return x; }
  return lt_convert(x, x->dtype, x->device);
}

lt_tensor_t *lt_clone(const lt_tensor_t *x) { return lt_convert(x, x->dtype, x->device); }

/* element i of the row-major order: its address */
static const char *element_ptr(const lt_tensor_t *x, int64_t i) {
  int64_t off = 0;
  for (int d = x->ndim - 1; d >= 0; d--) {
    int64_t sz = x->sizes[d];
    off += (i % sz) * x->strides[d];
    i /= sz;
  }
  return (const char *)lt_data(x) + off * (int64_t)lt_elsize(x);
}

double lt_get_double(const lt_tensor_t *x, int64_t i) {
  double v;
  char *d[2] = {(char *)&v, (char *)element_ptr(x, i)};
  int64_t s[2] = {0, 0};
  lt_cpu_cast_loop(LT_FLOAT64, x->dtype)(d, s, 1, NULL);
  return v;
}

int64_t lt_get_int(const lt_tensor_t *x, int64_t i) {
  int64_t v;
  char *d[2] = {(char *)&v, (char *)element_ptr(x, i)};
  int64_t s[2] = {0, 0};
  lt_cpu_cast_loop(LT_INT64, x->dtype)(d, s, 1, NULL);
  return v;
}

int lt_item(const lt_tensor_t *x, lt_operand_t *out) {
  if (x->numel != 1)
    return lt_error("item: a tensor with %lld elements cannot be converted to a number",
                    (long long)x->numel);
  if (x->device.type != LT_CPU) { /* the value comes to the host first (waits for the device) */
    lt_tensor_t *h = lt_convert(x, x->dtype, lt_device(LT_CPU, 0));
    if (!h) return LT_ERR;
    int rc = lt_item(h, out);
    lt_release(h);
    return rc;
  }
  if (lt_dtype_is_floating(x->dtype)) *out = lt_float_operand(lt_get_double(x, 0));
  else if (x->dtype == LT_BOOL) {
    *out = lt_int_operand(lt_get_int(x, 0));
    out->kind = LT_OPERAND_BOOL;
  } else *out = lt_int_operand(lt_get_int(x, 0));
  return LT_OK;
}

int lt_equal(const lt_tensor_t *a, const lt_tensor_t *b, bool *out) {
  const lt_tensor_t *ts[2] = {a, b};
  LT_TRY(lt_check_same_device("equal", 2, ts));
  if (a->ndim != b->ndim || memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) != 0) {
    *out = false;
    return LT_OK;
  }
  lt_tensor_t *e = lt_compare(LT_COMPARE_eq, lt_tensor_operand((lt_tensor_t *)a),
                              lt_tensor_operand((lt_tensor_t *)b), NULL);
  if (!e) return LT_ERR;
  if (e->device.type != LT_CPU) {
    lt_tensor_t *h = lt_convert(e, LT_BOOL, lt_device(LT_CPU, 0));
    lt_release(e);
    if (!(e = h)) return LT_ERR;
  }
  bool all = true;
  const bool *p = lt_data(e);
  for (int64_t i = 0; i < e->numel && all; i++) all = p[i];
  lt_release(e);
  *out = all;
  return LT_OK;
}
