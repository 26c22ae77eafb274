/* Autograd of the elementwise ops: unary (fused derivative kernels from kernels/elementwise.h),
   binary, where, conversions, copies and fills. */
#include "core/grad.h"
#include "core/factory.h"
#include "core/shape.h"

#include <math.h>

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- node names ---- */
#define NAME_SLOTS 256
static struct { const char *op; char *name; } names[NAME_SLOTS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

const char *lt_ag_node_name(const char *op) {
  pthread_mutex_lock(&names_lock);
  const char *r = "Backward0";
  for (int i = 0; i < NAME_SLOTS; i++) {
    if (names[i].op == op || (names[i].op && strcmp(names[i].op, op) == 0)) { r = names[i].name; break; }
    if (names[i].op) continue;
    size_t n = strlen(op);
    char *s = malloc(n + 10);
    if (!s) break;
    size_t k = 0;
    bool up = true;
    for (size_t j = 0; j < n; j++) {
      if (op[j] == '_') { up = true; continue; }
      s[k++] = up ? (char)toupper((unsigned char)op[j]) : op[j];
      up = false;
    }
    strcpy(s + k, "Backward0");
    names[i].op = op;
    names[i].name = s;
    r = s;
    break;
  }
  pthread_mutex_unlock(&names_lock);
  return r;
}

/* ---- in-place and out= forms ---- */
static int refuse_out(const char *op) {
  return lt_error("%s: functions with out=... arguments don't support automatic differentiation, "
                  "but one of the arguments requires grad.", op);
}

/* ---- unary ---- */
typedef struct { lt_unary_op op; } unary_ctx_t;

static int unary_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const unary_ctx_t *c = n->ctx;
  bool ux, uy;
  lt_unary_grad_uses(c->op, &ux, &uy);
  lt_tensor_t *x = ux ? lt_node_saved(n, 0) : NULL, *y = uy ? lt_node_saved(n, 1) : NULL;
  if ((ux && !x) || (uy && !y)) return LT_ERR;
  gi[0] = lt_unary_backward(c->op, go[0], x, y);
  return gi[0] ? LT_OK : LT_ERR;
}

/* ---- unary under create_graph: the derivatives as recorded ops ---- */
/* op(t) (t consumed) */
static lt_tensor_t *un(lt_unary_op op, lt_tensor_t *t) {
  lt_tensor_t *r = t ? lt_unary(op, t, NULL) : NULL;
  lt_release(t);
  return r;
}
/* 1 + s * t * t (t borrowed) */
static lt_tensor_t *one_plus_sq(double s, lt_tensor_t *t) {
  return lt_opc(LT_BINARY_add, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(t), lt_T(t)), lt_F(s)), lt_F(1));
}

/* the mask m (consumed) as numbers of like's dtype */
static lt_tensor_t *fmask(lt_tensor_t *m, const lt_tensor_t *like) {
  lt_tensor_t *r = m ? lt_convert(m, like->dtype, like->device) : NULL;
  lt_release(m);
  return r;
}

/* a^2 + b^2 of two operands, at least one a tensor (a number one squared as a number) */
static lt_tensor_t *sum_of_squares(lt_operand_t a, lt_operand_t b) {
  if (a.kind != LT_OPERAND_TENSOR) {
    lt_operand_t t = a;
    a = b, b = t;
  }
  lt_tensor_t *aa = lt_op(LT_BINARY_mul, a, a);
  if (b.kind == LT_OPERAND_TENSOR) return lt_opcc(LT_BINARY_add, aa, lt_op(LT_BINARY_mul, b, b));
  double v = b.kind == LT_OPERAND_FLOAT ? b.f : (double)b.i;
  return lt_opc(LT_BINARY_add, aa, lt_F(v * v));
}

/* x with its zeros replaced by ones (x borrowed), a divisor whose gradient stays finite */
static lt_tensor_t *nonzero(lt_tensor_t *x) {
  lt_tensor_t *z = lt_compare(LT_COMPARE_eq, lt_T(x), lt_F(0), NULL);
  lt_tensor_t *r = z ? lt_where(z, lt_F(1), lt_T(x)) : NULL;
  lt_release(z);
  return r;
}
/* r (consumed) with 1/2 where x (borrowed) is 0 */
static lt_tensor_t *at_zero_half(lt_tensor_t *x, lt_tensor_t *r) {
  lt_tensor_t *z = r ? lt_compare(LT_COMPARE_eq, lt_T(x), lt_F(0), NULL) : NULL;
  lt_tensor_t *w = z ? lt_where(z, lt_F(0.5), lt_T(r)) : NULL;
  lt_release(z);
  lt_release(r);
  return w;
}

/* the derivative of op at x (y = op(x)), or NULL + error; ops without a formula here have no
   backward_graph (unary_graph_ok) */
static lt_tensor_t *unary_deriv(lt_unary_op op, lt_tensor_t *x, lt_tensor_t *y) {
  switch (op) {
    case LT_UNARY_abs: return lt_unary(LT_UNARY_sign, x, NULL);
    case LT_UNARY_neg: return lt_full(0, NULL, lt_F(-1), LT_FLOAT64, lt_device(LT_CPU, 0));
    case LT_UNARY_exp: return lt_retained(y);
    case LT_UNARY_expm1: return lt_op(LT_BINARY_add, lt_T(y), lt_F(1));
    case LT_UNARY_log: return un(LT_UNARY_reciprocal, lt_retained(x));
    case LT_UNARY_log1p: return un(LT_UNARY_reciprocal, lt_op(LT_BINARY_add, lt_T(x), lt_F(1)));
    case LT_UNARY_log2: return un(LT_UNARY_reciprocal, lt_op(LT_BINARY_mul, lt_T(x), lt_F(0.69314718055994530942)));
    case LT_UNARY_log10: return un(LT_UNARY_reciprocal, lt_op(LT_BINARY_mul, lt_T(x), lt_F(2.30258509299404568402)));
    case LT_UNARY_sqrt: return un(LT_UNARY_reciprocal, lt_op(LT_BINARY_mul, lt_T(y), lt_F(2)));
    case LT_UNARY_rsqrt: return lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_pow, lt_T(y), lt_F(3)), lt_F(-0.5));
    case LT_UNARY_sin: return lt_unary(LT_UNARY_cos, x, NULL);
    case LT_UNARY_cos: return lt_opc(LT_BINARY_mul, lt_unary(LT_UNARY_sin, x, NULL), lt_F(-1));
    case LT_UNARY_tan: return one_plus_sq(1, y);
    case LT_UNARY_asin: return un(LT_UNARY_rsqrt, one_plus_sq(-1, x));
    case LT_UNARY_acos: return lt_opc(LT_BINARY_mul, un(LT_UNARY_rsqrt, one_plus_sq(-1, x)), lt_F(-1));
    case LT_UNARY_atan: return un(LT_UNARY_reciprocal, one_plus_sq(1, x));
    case LT_UNARY_sinh: return lt_unary(LT_UNARY_cosh, x, NULL);
    case LT_UNARY_cosh: return lt_unary(LT_UNARY_sinh, x, NULL);
    case LT_UNARY_tanh: return one_plus_sq(-1, y);
    case LT_UNARY_erf:
    case LT_UNARY_erfc: /* +-2/sqrt(pi) exp(-x^2) */
      return lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(x), lt_T(x)), lt_F(-1))),
                    lt_F(op == LT_UNARY_erf ? 1.12837916709551257390 : -1.12837916709551257390));
    case LT_UNARY_asinh: return un(LT_UNARY_rsqrt, one_plus_sq(1, x));
    case LT_UNARY_acosh: return un(LT_UNARY_rsqrt, lt_opc(LT_BINARY_sub, lt_op(LT_BINARY_mul, lt_T(x), lt_T(x)), lt_F(1)));
    case LT_UNARY_atanh: return un(LT_UNARY_reciprocal, one_plus_sq(-1, x));
    case LT_UNARY_sigmoid: /* y (1 - y) */
      return lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_add, lt_op(LT_BINARY_mul, lt_T(y), lt_F(-1)), lt_F(1)), lt_T(y));
    case LT_UNARY_relu: return lt_compare(LT_COMPARE_gt, lt_T(y), lt_F(0), NULL);
    case LT_UNARY_relu6: {
      lt_tensor_t *a = lt_compare(LT_COMPARE_gt, lt_T(x), lt_F(0), NULL), *b = lt_compare(LT_COMPARE_lt, lt_T(x), lt_F(6), NULL);
      lt_tensor_t *r = a && b ? lt_compare(LT_COMPARE_logical_and, lt_T(a), lt_T(b), NULL) : NULL;
      lt_release(a);
      lt_release(b);
      return r;
    }
    case LT_UNARY_floor: case LT_UNARY_ceil: case LT_UNARY_round: case LT_UNARY_trunc: case LT_UNARY_sign:
      return lt_full(0, NULL, lt_F(0), LT_FLOAT64, lt_device(LT_CPU, 0));
    case LT_UNARY_frac: return lt_full(0, NULL, lt_F(1), LT_FLOAT64, lt_device(LT_CPU, 0));
    case LT_UNARY_reciprocal: return lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(y), lt_T(y)), lt_F(-1));
    case LT_UNARY_square: return lt_op(LT_BINARY_mul, lt_T(x), lt_F(2));
    case LT_UNARY_exp2: return lt_op(LT_BINARY_mul, lt_T(y), lt_F(0.69314718055994530942));
    case LT_UNARY_softplus: return lt_unary(LT_UNARY_sigmoid, x, NULL);
    case LT_UNARY_logsigmoid: return un(LT_UNARY_sigmoid, lt_op(LT_BINARY_mul, lt_T(x), lt_F(-1)));
    case LT_UNARY_tanhshrink: return un(LT_UNARY_square, lt_unary(LT_UNARY_tanh, x, NULL));
    case LT_UNARY_softsign: return un(LT_UNARY_reciprocal, un(LT_UNARY_square, lt_opc(LT_BINARY_add, lt_unary(LT_UNARY_abs, x, NULL), lt_F(1))));
    case LT_UNARY_silu: { /* s (1 + x (1 - s)), s = sigmoid(x) */
      lt_tensor_t *sg = lt_unary(LT_UNARY_sigmoid, x, NULL);
      lt_tensor_t *t = sg ? lt_opc(LT_BINARY_add, lt_op(LT_BINARY_mul, lt_T(sg), lt_F(-1)), lt_F(1)) : NULL;
      return lt_opcc(LT_BINARY_mul, sg, lt_opc(LT_BINARY_add, lt_opc(LT_BINARY_mul, t, lt_T(x)), lt_F(1)));
    }
    case LT_UNARY_gelu: { /* Phi(x) + x phi(x) */
      lt_tensor_t *cdf = lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_add, un(LT_UNARY_erf, lt_op(LT_BINARY_mul, lt_T(x), lt_F(0.70710678118654752440))), lt_F(1)), lt_F(0.5));
      lt_tensor_t *pdf = lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(x), lt_T(x)), lt_F(-0.5))), lt_F(0.39894228040143267794));
      return lt_opcc(LT_BINARY_add, cdf, lt_opc(LT_BINARY_mul, pdf, lt_T(x)));
    }
    case LT_UNARY_gelu_tanh: { /* 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3c x^2), t = tanh(k (x + c x^3)) */
      const double k = 0.79788456080286535588, cc = 0.044715;
      lt_tensor_t *x2 = lt_op(LT_BINARY_mul, lt_T(x), lt_T(x));
      lt_tensor_t *u = x2 ? lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_add, lt_opc(LT_BINARY_mul,
                                   lt_retained(x2), lt_F(cc)), lt_F(1)), lt_T(x)), lt_F(k)) : NULL;
      lt_tensor_t *t = un(LT_UNARY_tanh, u);
      if (!t) { lt_release(x2); return NULL; }
      lt_tensor_t *du = x2 ? lt_opc(LT_BINARY_add, lt_opc(LT_BINARY_mul, x2, lt_F(3 * cc * k)), lt_F(k)) : NULL;
      lt_tensor_t *a = t ? lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_add, lt_retained(t), lt_F(1)), lt_F(0.5)) : NULL;
      lt_tensor_t *b = lt_opcc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, one_plus_sq(-1, t), lt_T(x)), du);
      lt_release(t);
      return lt_opcc(LT_BINARY_add, a, lt_opc(LT_BINARY_mul, b, lt_F(0.5)));
    }
    case LT_UNARY_mish: { /* t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)) */
      lt_tensor_t *t = un(LT_UNARY_tanh, lt_unary(LT_UNARY_softplus, x, NULL));
      if (!t) return NULL;
      lt_tensor_t *b = lt_opc(LT_BINARY_mul, lt_opcc(LT_BINARY_mul, one_plus_sq(-1, t), lt_unary(LT_UNARY_sigmoid, x, NULL)), lt_T(x));
      return lt_opcc(LT_BINARY_add, t, b);
    }
    case LT_UNARY_hardswish: { /* x / 3 + 1/2 on [-3, 3], 1 above */
      lt_tensor_t *mid = lt_opcc(LT_BINARY_mul, lt_compare(LT_COMPARE_ge, lt_T(x), lt_F(-3), NULL),
                                 lt_compare(LT_COMPARE_le, lt_T(x), lt_F(3), NULL));
      lt_tensor_t *lin = lt_opc(LT_BINARY_add, lt_op(LT_BINARY_div, lt_T(x), lt_F(3)), lt_F(0.5));
      return lt_opcc(LT_BINARY_add, lt_opcc(LT_BINARY_mul, mid, lin), lt_compare(LT_COMPARE_gt, lt_T(x), lt_F(3), NULL));
    }
    case LT_UNARY_hardsigmoid: /* 1/6 inside (-3, 3) */
      return lt_opc(LT_BINARY_div, fmask(lt_opcc(LT_BINARY_mul, lt_compare(LT_COMPARE_gt, lt_T(x), lt_F(-3), NULL),
                                                 lt_compare(LT_COMPARE_lt, lt_T(x), lt_F(3), NULL)), x), lt_F(6));
    case LT_UNARY_selu: { /* scale above 0, scale alpha exp(x) at or below (exp of min(x, 0): no overflow) */
      lt_operand_t zero = lt_F(0);
      lt_tensor_t *e = un(LT_UNARY_exp, lt_clamp(x, NULL, &zero, NULL));
      lt_tensor_t *le = lt_compare(LT_COMPARE_le, lt_T(x), lt_F(0), NULL);
      lt_tensor_t *neg = le && e ? lt_where(le, lt_T(e), lt_F(0)) : NULL;
      lt_release(le);
      lt_release(e);
      lt_tensor_t *pos = lt_opc(LT_BINARY_mul, fmask(lt_compare(LT_COMPARE_gt, lt_T(x), lt_F(0), NULL), x), lt_F(LT_SELU_SCALE));
      return lt_opcc(LT_BINARY_add, lt_opc(LT_BINARY_mul, neg, lt_F(LT_SELU_SCALE * LT_SELU_ALPHA)), pos);
    }
    case LT_UNARY_erfinv: /* sqrt(pi) / 2 exp(y^2) */
      return lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_op(LT_BINARY_mul, lt_T(y), lt_T(y))), lt_F(0.88622692545275801365));
    case LT_UNARY_lgamma: return lt_unary(LT_UNARY_digamma, x, NULL);
    case LT_UNARY_digamma: /* trigamma(x) = zeta(2, x), differentiable again in x */
      return lt_op(LT_BINARY_special_zeta, lt_F(2), lt_T(x));
    case LT_UNARY_special_ndtr: /* exp(-x^2 / 2) / sqrt(2 pi) */
      return lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(x), lt_T(x)), lt_F(-0.5))),
                    lt_F(0.39894228040143267794));
    case LT_UNARY_special_ndtri: /* sqrt(2 pi) exp(y^2 / 2) */
      return lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(y), lt_T(y)), lt_F(0.5))),
                    lt_F(2.50662827463100050242));
    case LT_UNARY_special_log_ndtr: /* exp(-y - x^2 / 2) / sqrt(2 pi) */
      return lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, lt_opcc(LT_BINARY_sub, lt_opc(LT_BINARY_mul,
                    lt_op(LT_BINARY_mul, lt_T(x), lt_T(x)), lt_F(-0.5)), lt_retained(y))), lt_F(0.39894228040143267794));
    case LT_UNARY_special_erfcx: /* 2 x y - 2 / sqrt(pi) */
      return lt_opc(LT_BINARY_sub, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(x), lt_T(y)), lt_F(2)),
                    lt_F(1.12837916709551257390));
    case LT_UNARY_special_entr: /* -(1 + log x) */
      return lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_add, lt_unary(LT_UNARY_log, x, NULL), lt_F(1)), lt_F(-1));
    case LT_UNARY_special_i0e: /* i1e(x) - sgn(x) y */
      return lt_opcc(LT_BINARY_sub, lt_unary(LT_UNARY_special_i1e, x, NULL),
                     lt_opc(LT_BINARY_mul, lt_unary(LT_UNARY_sign, x, NULL), lt_T(y)));
    case LT_UNARY_special_i1: /* i0(x) - y / x = i0e(x) exp(|x|) - y / x; 1/2 at 0 */
      return at_zero_half(x, lt_opcc(LT_BINARY_sub, lt_opcc(LT_BINARY_mul, lt_unary(LT_UNARY_special_i0e, x, NULL),
                                                            un(LT_UNARY_exp, lt_unary(LT_UNARY_abs, x, NULL))),
                                     lt_opcc(LT_BINARY_div, lt_retained(y), nonzero(x))));
    case LT_UNARY_special_i1e: /* i0e(x) - y (sgn(x) + 1 / x); 1/2 at 0 */
      return at_zero_half(x, lt_opcc(LT_BINARY_sub, lt_unary(LT_UNARY_special_i0e, x, NULL),
                                     lt_opcc(LT_BINARY_mul, lt_retained(y), lt_opcc(LT_BINARY_add,
                                             lt_unary(LT_UNARY_sign, x, NULL), un(LT_UNARY_reciprocal, nonzero(x))))));
    default: lt_error("%s: no double backward", lt_unary_name(op)); return NULL;
  }
}

static bool unary_graph_ok(lt_unary_op op) {
  switch (op) {
    case LT_UNARY_bitwise_not: return false;
    default: return true;
  }
}

/* the unary backward_graph: g * op'(x), x and y with their history */
static int unary_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const unary_ctx_t *c = n->ctx;
  bool ux, uy;
  lt_unary_grad_uses(c->op, &ux, &uy);
  lt_tensor_t *x = ux ? lt_node_saved(n, 0) : NULL, *y = uy ? lt_node_saved(n, 1) : NULL;
  if ((ux && !x) || (uy && !y)) return LT_ERR;
  gi[0] = lt_opc(LT_BINARY_mul, unary_deriv(c->op, x, y), lt_T(go[0]));
  return gi[0] ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_unary(lt_unary_op op, lt_tensor_t *x, lt_tensor_t *out) {
  const char *name = lt_unary_name(op);
  if (out) {
    if (out != x) { refuse_out(name); return NULL; }
    lt_tensor_t *copy;
    if (lt_ag_inplace_begin(name, x, &copy) != LT_OK) return NULL;
    return lt_ag_inplace_end(x, copy, lt_unary(op, copy, NULL));
  }
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *o = lt_unary(op, x, NULL);
  lt_set_grad_enabled(prev);
  if (!o || !lt_dtype_is_floating(o->dtype)) return o;
  lt_node_t *n = lt_record(lt_ag_node_name(name), unary_bw, 1, &x, o, sizeof(unary_ctx_t));
  if (!n) { lt_release(o); return NULL; }
  ((unary_ctx_t *)n->ctx)->op = op;
  if (unary_graph_ok(op)) n->backward_graph = unary_graph_bw;
  bool ux = false, uy = false;
  lt_unary_grad_uses(op, &ux, &uy);
  if ((ux && lt_node_save(n, 0, x) != LT_OK) || (uy && lt_node_save(n, 1, o) != LT_OK)) {
    lt_release(o);
    return NULL;
  }
  return o;
}

/* ---- binary ---- */
typedef struct {
  lt_binary_op op;
  double alpha;
  lt_operand_t s[2]; /* the number operands (tensors are saved) */
} binary_ctx_t;

/* operand k: the saved tensor or the number */
static int operand(lt_node_t *n, int k, lt_operand_t *o) {
  const binary_ctx_t *c = n->ctx;
  if (c->s[k].kind != LT_OPERAND_TENSOR) { *o = c->s[k]; return LT_OK; }
  lt_tensor_t *t = lt_node_saved(n, k);
  if (!t) return LT_ERR;
  *o = lt_tensor_operand(t);
  return LT_OK;
}

/* weight of a in max(a, b): 1 where a wins, 0.5 at ties, 0 where b wins (PyTorch's split) */
static lt_tensor_t *tie_weight(lt_compare_op win, lt_operand_t a, lt_operand_t b) {
  lt_tensor_t *w = lt_compare(win, a, b, NULL), *eq = lt_compare(LT_COMPARE_eq, a, b, NULL);
  lt_tensor_t *r = w && eq ? lt_where(eq, lt_F(0.5), lt_T(w)) : NULL;
  lt_release(w);
  lt_release(eq);
  return r;
}

static lt_tensor_t *binary_grad(lt_node_t *n, int k, lt_tensor_t *g) {
  const binary_ctx_t *c = n->ctx;
  lt_operand_t a, b;
  switch (c->op) {
    case LT_BINARY_add:
    case LT_BINARY_sub: {
      double s = k == 0 ? 1 : c->op == LT_BINARY_sub ? -c->alpha : c->alpha;
      return s == 1 ? lt_retained(g) : lt_op(LT_BINARY_mul, lt_T(g), lt_F(s));
    }
    case LT_BINARY_mul:
      if (operand(n, 1 - k, &b) != LT_OK) return NULL;
      return lt_op(LT_BINARY_mul, lt_T(g), b);
    case LT_BINARY_div:
      if (operand(n, 1, &b) != LT_OK) return NULL;
      if (k == 0) return lt_op(LT_BINARY_div, lt_T(g), b);
      if (operand(n, 0, &a) != LT_OK) return NULL;
      /* -g * a / (b * b) */
      return lt_opcc(LT_BINARY_div, lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(g), lt_F(-1)), a),
                     lt_op(LT_BINARY_mul, b, b));
    case LT_BINARY_pow:
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      if (k == 0) { /* g * b * a^(b-1), 0 where b == 0 */
        if (b.kind != LT_OPERAND_TENSOR) {
          double e = b.kind == LT_OPERAND_FLOAT ? b.f : (double)b.i;
          if (e == 0) return lt_op(LT_BINARY_mul, lt_T(g), lt_F(0));
          return lt_opcc(LT_BINARY_mul, lt_retained(g),
                         lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_pow, a, lt_F(e - 1)), lt_F(e)));
        }
        lt_tensor_t *d = lt_opc(LT_BINARY_mul, lt_opcc(LT_BINARY_pow, lt_retained(a.t),
                                                       lt_op(LT_BINARY_sub, b, lt_F(1))), b);
        lt_tensor_t *z = lt_compare(LT_COMPARE_eq, b, lt_F(0), NULL);
        lt_tensor_t *m = d && z ? lt_where(z, lt_F(0), lt_T(d)) : NULL;
        lt_release(d);
        lt_release(z);
        return lt_opc(LT_BINARY_mul, m, lt_T(g));
      } else { /* g * a^b * log(a), 0 where a == 0 and b >= 0 */
        lt_tensor_t *y = lt_node_saved(n, 2);
        if (!y) return NULL;
        lt_tensor_t *la = a.kind == LT_OPERAND_TENSOR ? lt_unary(LT_UNARY_log, a.t, NULL)
                                                      : lt_full(0, NULL, lt_F(log(a.kind == LT_OPERAND_FLOAT ? a.f : (double)a.i)), LT_FLOAT64, y->device);
        lt_tensor_t *d = lt_opc(LT_BINARY_mul, la, lt_T(y));
        if (a.kind != LT_OPERAND_TENSOR && a.f != 0) return lt_opc(LT_BINARY_mul, d, lt_T(g));
        /* a number base is 0 here: b is the tensor */
        lt_tensor_t *az = a.kind == LT_OPERAND_TENSOR ? lt_compare(LT_COMPARE_eq, a, lt_F(0), NULL)
                                                      : lt_compare(LT_COMPARE_eq, b, b, NULL);
        lt_tensor_t *bp = b.kind == LT_OPERAND_TENSOR ? lt_compare(LT_COMPARE_ge, b, lt_F(0), NULL)
                                                      : lt_compare(LT_COMPARE_eq, a, a, NULL);
        if (bp && b.kind != LT_OPERAND_TENSOR && !((b.kind == LT_OPERAND_FLOAT ? b.f : (double)b.i) >= 0)) {
          lt_tensor_t *f = lt_compare(LT_COMPARE_ne, lt_T(bp), lt_T(bp), NULL); /* all false */
          lt_release(bp);
          bp = f;
        }
        lt_tensor_t *mask = az && bp ? lt_compare(LT_COMPARE_logical_and, lt_T(az), lt_T(bp), NULL) : NULL;
        lt_tensor_t *m = d && mask ? lt_where(mask, lt_F(0), lt_T(d)) : NULL;
        lt_release(az);
        lt_release(bp);
        lt_release(mask);
        lt_release(d);
        return lt_opc(LT_BINARY_mul, m, lt_T(g));
      }
    case LT_BINARY_maximum:
    case LT_BINARY_minimum: {
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      lt_compare_op win = c->op == LT_BINARY_maximum ? LT_COMPARE_gt : LT_COMPARE_lt;
      lt_tensor_t *w = k == 0 ? tie_weight(win, a, b) : tie_weight(win, b, a);
      return lt_opc(LT_BINARY_mul, w, lt_T(g));
    }
    case LT_BINARY_atan2: { /* a: g * b / (a^2 + b^2), b: g * -a / (a^2 + b^2) */
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      lt_tensor_t *r = sum_of_squares(a, b);
      lt_tensor_t *num = k == 0 ? lt_op(LT_BINARY_mul, lt_T(g), b)
                                : lt_opc(LT_BINARY_mul, lt_op(LT_BINARY_mul, lt_T(g), a), lt_F(-1));
      return lt_opcc(LT_BINARY_div, num, r);
    }
    case LT_BINARY_hypot: { /* a: g * a / y, b: g * b / y (PyTorch's formula: NaN at a = b = 0) */
      lt_tensor_t *y = lt_node_saved(n, 2);
      if (!y || operand(n, k, &a) != LT_OK) return NULL;
      return lt_opc(LT_BINARY_div, lt_op(LT_BINARY_mul, lt_T(g), a), lt_T(y));
    }
    case LT_BINARY_fmod:
    case LT_BINARY_remainder: { /* a: g; b: -g * trunc(a / b) (fmod) or floor(a / b) (remainder) */
      if (k == 0) return lt_retained(g);
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      lt_tensor_t *q = lt_op(LT_BINARY_div, a, b);
      lt_tensor_t *r = q ? lt_unary(c->op == LT_BINARY_fmod ? LT_UNARY_trunc : LT_UNARY_floor, q, NULL) : NULL;
      lt_release(q);
      return lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, r, lt_T(g)), lt_F(-1));
    }
    case LT_BINARY_floor_divide:
    case LT_BINARY_div_trunc: /* piecewise constant: zero, as PyTorch's div with a rounding mode */
      return lt_opc(LT_BINARY_mul, lt_retained(g), lt_F(0));
    case LT_BINARY_special_zeta: { /* q: -g * x * zeta(x + 1, q); x: not implemented (PyTorch) */
      if (k == 0) {
        lt_error("the derivative for 'zeta' is not implemented.");
        return NULL;
      }
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      lt_tensor_t *z;
      if (a.kind == LT_OPERAND_TENSOR) z = lt_opc(LT_BINARY_special_zeta, lt_op(LT_BINARY_add, a, lt_F(1)), b);
      else z = lt_op(LT_BINARY_special_zeta, lt_F((a.kind == LT_OPERAND_FLOAT ? a.f : (double)a.i) + 1), b);
      return lt_opcc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, z, a), lt_op(LT_BINARY_mul, lt_T(g), lt_F(-1)));
    }
    case LT_BINARY_igamma:
    case LT_BINARY_igammac: { /* x: +-g * exp((a - 1) log x - x - lgamma(a)); a: not implemented (PyTorch) */
      if (k == 0) {
        lt_error("the derivative for '%s: input' is not implemented", lt_binary_name(c->op));
        return NULL;
      }
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      /* b is the tensor x here (it needs the gradient) */
      lt_tensor_t *lx = un(LT_UNARY_log, lt_retained(b.t)), *e;
      if (a.kind == LT_OPERAND_TENSOR) {
        e = lt_opcc(LT_BINARY_mul, lx, lt_op(LT_BINARY_sub, a, lt_F(1)));
        e = lt_opcc(LT_BINARY_sub, lt_opc(LT_BINARY_sub, e, b), lt_unary(LT_UNARY_lgamma, a.t, NULL));
      } else {
        double an = a.kind == LT_OPERAND_FLOAT ? a.f : (double)a.i;
        int sg;
        e = lt_opc(LT_BINARY_sub, lt_opc(LT_BINARY_sub, lt_opc(LT_BINARY_mul, lx, lt_F(an - 1)), b), lt_F(lgamma_r(an, &sg)));
      }
      lt_tensor_t *d = lt_opc(LT_BINARY_mul, un(LT_UNARY_exp, e), lt_T(g));
      return c->op == LT_BINARY_igamma ? d : lt_opc(LT_BINARY_mul, d, lt_F(-1));
    }
    case LT_BINARY_leaky_relu:
    case LT_BINARY_elu:
    case LT_BINARY_celu: { /* x: the op's backward at x, its slope or alpha the number b */
      if (k == 1) {
        lt_error("%s: the derivative for its %s is not implemented", lt_binary_name(c->op),
                 c->op == LT_BINARY_leaky_relu ? "negative_slope" : "alpha");
        return NULL;
      }
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      lt_binary_op bw = c->op == LT_BINARY_leaky_relu ? LT_BINARY_leaky_relu_backward
                        : c->op == LT_BINARY_elu      ? LT_BINARY_elu_backward
                                                      : LT_BINARY_celu_backward;
      return lt_binary(bw, lt_T(g), a, b.kind == LT_OPERAND_FLOAT ? b.f : (double)b.i, NULL);
    }
    case LT_BINARY_leaky_relu_backward:
    case LT_BINARY_elu_backward:
    case LT_BINARY_celu_backward: { /* of (g, x): g's is the same op on the incoming gradient */
      if (operand(n, 0, &a) != LT_OK || operand(n, 1, &b) != LT_OK) return NULL;
      if (k == 0) return lt_binary(c->op, lt_T(g), b, c->alpha, NULL);
      if (c->op == LT_BINARY_leaky_relu_backward) return lt_op(LT_BINARY_mul, lt_T(g), lt_F(0));
      /* x's: 0 above 0, else g a alpha exp(x) (elu) or g a exp(x / alpha) / alpha (celu), the
         exponential of min(x, 0) so that the branch not taken stays finite */
      lt_tensor_t *e = lt_op(LT_BINARY_minimum, b, lt_F(0));
      if (c->op == LT_BINARY_celu_backward) e = lt_opc(LT_BINARY_div, e, lt_F(c->alpha));
      e = un(LT_UNARY_exp, e);
      e = lt_opc(LT_BINARY_mul, lt_opc(LT_BINARY_mul, e, a), lt_T(g));
      e = lt_opc(LT_BINARY_mul, e, lt_F(c->op == LT_BINARY_elu_backward ? c->alpha : 1 / c->alpha));
      lt_tensor_t *pos = lt_compare(LT_COMPARE_gt, b, lt_F(0), NULL);
      lt_tensor_t *r = e && pos ? lt_where(pos, lt_F(0), lt_T(e)) : NULL;
      lt_release(e);
      lt_release(pos);
      return r;
    }
    default:
      lt_error("%s: not differentiable", lt_binary_name(c->op));
      return NULL;
  }
}

static int binary_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  for (int k = 0; k < 2; k++) {
    if (!lt_node_needs(n, k)) continue;
    gi[k] = binary_grad(n, k, go[0]);
    if (!gi[k]) return LT_ERR;
  }
  return LT_OK;
}

/* which operands a binary op's backward reads, for the gradient of operand k */
static void binary_saves(lt_binary_op op, bool need[2], bool save[3]) {
  save[0] = save[1] = save[2] = false;
  switch (op) {
    case LT_BINARY_add: case LT_BINARY_sub: case LT_BINARY_floor_divide: case LT_BINARY_div_trunc: break;
    case LT_BINARY_mul: save[1] = need[0]; save[0] = need[1]; break;
    case LT_BINARY_div: save[1] = true; save[0] = need[1]; break;
    case LT_BINARY_pow: save[0] = save[1] = true; save[2] = need[1]; break;
    case LT_BINARY_fmod: case LT_BINARY_remainder: save[0] = save[1] = need[1]; break;
    case LT_BINARY_hypot: save[0] = need[0]; save[1] = need[1]; save[2] = true; break;
    case LT_BINARY_nextafter: break; /* not differentiable: backward raises */
    case LT_BINARY_special_zeta: case LT_BINARY_igamma: case LT_BINARY_igammac: save[0] = save[1] = need[1]; break;
    default: save[0] = save[1] = true; break;
  }
}

lt_tensor_t *lt_ag_binary(lt_binary_op op, lt_operand_t a, lt_operand_t b, double alpha, lt_tensor_t *out) {
  const char *name = lt_binary_name(op);
  if (out) {
    if (a.kind != LT_OPERAND_TENSOR || out != a.t) { refuse_out(name); return NULL; }
    lt_tensor_t *copy;
    if (lt_ag_inplace_begin(name, out, &copy) != LT_OK) return NULL;
    return lt_ag_inplace_end(out, copy, lt_binary(op, lt_T(copy), b, alpha, NULL));
  }
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *o = lt_binary(op, a, b, alpha, NULL);
  lt_set_grad_enabled(prev);
  if (!o || !lt_dtype_is_floating(o->dtype)) return o;
  lt_tensor_t *in[2] = {a.kind == LT_OPERAND_TENSOR ? a.t : NULL, b.kind == LT_OPERAND_TENSOR ? b.t : NULL};
  lt_node_t *n = lt_record(lt_ag_node_name(name), binary_bw, 2, in, o, sizeof(binary_ctx_t));
  if (!n) { lt_release(o); return NULL; }
  binary_ctx_t *c = n->ctx;
  c->op = op;
  if (op != LT_BINARY_nextafter) n->backward_graph = binary_bw; /* made of recorded ops */
  c->alpha = alpha;
  c->s[0] = a;
  c->s[1] = b;
  c->s[0].t = c->s[1].t = NULL;
  bool need[2] = {lt_node_needs(n, 0), lt_node_needs(n, 1)}, save[3];
  binary_saves(op, need, save);
  int rc = LT_OK;
  for (int k = 0; k < 2 && rc == LT_OK; k++)
    if (save[k] && in[k]) rc = lt_node_save(n, k, in[k]);
  if (rc == LT_OK && save[2]) rc = lt_node_save(n, 2, o);
  if (rc != LT_OK) { lt_release(o); return NULL; }
  return o;
}

/* ---- where ---- */
static int where_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *cond = lt_node_saved(n, 0);
  if (!cond) return LT_ERR;
  for (int k = 1; k < 3; k++) {
    if (!lt_node_needs(n, k)) continue;
    gi[k] = k == 1 ? lt_where(cond, lt_T(go[0]), lt_F(0)) : lt_where(cond, lt_F(0), lt_T(go[0]));
    if (!gi[k]) return LT_ERR;
  }
  return LT_OK;
}

lt_tensor_t *lt_ag_where(lt_tensor_t *cond, lt_operand_t a, lt_operand_t b) {
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *o = lt_where(cond, a, b);
  lt_set_grad_enabled(prev);
  if (!o || !lt_dtype_is_floating(o->dtype)) return o;
  lt_tensor_t *in[3] = {NULL, a.kind == LT_OPERAND_TENSOR ? a.t : NULL, b.kind == LT_OPERAND_TENSOR ? b.t : NULL};
  lt_node_t *n = lt_record("WhereBackward0", where_bw, 3, in, o, 0);
  if (!n || lt_node_save(n, 0, cond) != LT_OK) { lt_release(o); return NULL; }
  n->backward_graph = where_bw;
  return o;
}

/* ---- conversions, copies, fills ---- */
/* the engine converts the gradient back to the input's dtype and device */
static int identity_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  (void)n;
  gi[0] = lt_retained(go[0]);
  return LT_OK;
}

lt_tensor_t *lt_ag_convert(lt_tensor_t *x, lt_dtype dt, lt_device_t dev) {
  bool prev = lt_set_grad_enabled(false);
  lt_tensor_t *o = lt_convert(x, dt, dev);
  lt_set_grad_enabled(prev);
  if (!o || !lt_dtype_is_floating(o->dtype)) return o;
  const char *name = dt == x->dtype && lt_device_eq(dev, x->device) ? "CloneBackward0" : "ToCopyBackward0";
  lt_node_t *n = lt_record(name, identity_bw, 1, &x, o, 0);
  if (!n) { lt_release(o); return NULL; }
  n->backward_graph = identity_bw;
  return o;
}

/* x on another CPU device without copying: CPU devices share host memory, so moving a tensor
   between them is a change of tag. DataParallel's replicas read their parameters this way (as
   PyTorch's first replica shares the original's storage); the gradient goes back the same way. */
lt_tensor_t *lt_device_alias(lt_tensor_t *x, lt_device_t dev) {
  lt_device_t d;
  if (lt_device_resolve(dev, &d) != LT_OK) return NULL;
  if (x->device.type != LT_CPU || d.type != LT_CPU) {
    char a[32], b[32];
    lt_error("device_alias: only between CPU devices (from %s to %s)", lt_device_format(x->device, a, sizeof a),
             lt_device_format(d, b, sizeof b));
    return NULL;
  }
  bool prev = lt_set_grad_enabled(false);
  bool neg = false;
  for (int i = 0; i < x->ndim; i++) neg |= x->strides[i] < 0;
  lt_tensor_t *o = neg ? lt_convert(x, x->dtype, d) : lt_retag_device(x, d);
  lt_set_grad_enabled(prev);
  if (!o) return NULL;
  if (lt_ag_needed(x, NULL) && lt_dtype_is_floating(x->dtype)) {
    lt_node_t *n = lt_record("ToCopyBackward0", identity_bw, 1, &x, o, 0);
    if (!n) { lt_release(o); return NULL; }
    n->backward_graph = identity_bw;
  }
  return o;
}

/* a node with no inputs: the values no longer depend on the old history */
static int none_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  (void)n; (void)go; (void)gi;
  return LT_OK;
}

int lt_ag_copy_(lt_tensor_t *dst, lt_tensor_t *src) {
  LT_TRY(lt_ag_check_inplace("copy_", dst));
  lt_tensor_t *e = lt_expand(src, dst->ndim, dst->sizes); /* recorded when src has history */
  if (!e) return LT_ERR;
  lt_tensor_t *r = lt_convert(e, dst->dtype, dst->device);
  lt_release(e);
  if (!r) return LT_ERR;
  if (!r->requires_grad) {
    lt_node_t *n = lt_node_new("CopyBackwards", none_bw, 0, NULL, 1, 0);
    if (!n) { lt_release(r); return LT_ERR; }
    n->backward_graph = none_bw;
    lt_node_set_output(n, 0, r);
    lt_node_release(n);
  }
  lt_tensor_t *d = lt_ag_inplace_end(dst, NULL, r);
  if (!d) return LT_ERR;
  lt_release(d);
  return LT_OK;
}

int lt_ag_fill_(lt_tensor_t *dst, lt_operand_t v) {
  if (v.kind == LT_OPERAND_TENSOR && v.t->requires_grad)
    return lt_error("fill_: filling with a tensor that requires grad is not supported; use copy_");
  LT_TRY(lt_ag_check_inplace("fill_", dst));
  bool prev = lt_set_grad_enabled(false);
  int rc = lt_fill_(dst, v);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK || !dst->requires_grad) return rc;
  lt_node_t *n = lt_node_new("FillBackward0", none_bw, 0, NULL, 1, 0);
  if (!n) return LT_ERR;
  n->backward_graph = none_bw;
  lt_node_set_output(n, 0, dst);
  lt_node_release(n);
  return LT_OK;
}
