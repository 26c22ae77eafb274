/* Elementwise math, written once for the CPU and CUDA kernels. Each op is one line of an X-macro
   table: its name, its kind, its body for floating types (T is float or double; v, a, b the
   operands) and its body for integer types (int64_t; used only by LT_INTS and LT_BITS ops, while
   LT_FLOATS ops see integer inputs converted to the default floating type first; LT_BITS ops, the
   bitwise ones, take integer and bool tensors only, so their floating body never runs). The CPU loops (kernels/cpu/elementwise.c) and the CUDA grid-stride
   kernels (kernels/cuda/elementwise.cu) both expand these bodies. */
#ifndef LT_ELEMENTWISE_H
#define LT_ELEMENTWISE_H

#include "lt_kernel.h"
#include "half.h"

#include <stdbool.h>

#include "fastmath.h"
#include "special.h"

#ifdef __CUDACC__
#include <math.h>
#define LT_EXP(v) exp(v)
#define LT_TANH(v) tanh(v)
#define LT_ERF(v) erf(v)
#define LT_LOG(v) log(v)
#define LT_LOG1P(v) log1p(v)
#define LT_EXPM1(v) expm1(v)
#define LT_SELECT(c, a, b) ((c) ? (a) : (b))
#else
#include <tgmath.h>
/* float exp, tanh, erf, log, log1p and expm1 through the vectorisable lt_expf, lt_tanhf, lt_erff,
   lt_logf, lt_log1pf and lt_expm1f, double through libm */
#define LT_EXP(v) _Generic((v), float: lt_expf, default: exp)(v)
#define LT_TANH(v) _Generic((v), float: lt_tanhf, default: tanh)(v)
#define LT_ERF(v) _Generic((v), float: lt_erff, default: erf)(v)
#define LT_LOG(v) _Generic((v), float: lt_logf, default: log)(v)
#define LT_LOG1P(v) _Generic((v), float: lt_log1pf, default: log1p)(v)
#define LT_EXPM1(v) _Generic((v), float: lt_expm1f, default: expm1)(v)
/* c ? a : b, for floats through masks (a plain select lets the compiler compute a side only where
   it is taken, a branch that keeps the loop scalar) */
#define LT_SELECT(c, a, b) _Generic((a), float: lt_self((c), (a), (b)), default: ((c) ? (a) : (b)))
#endif

/* kinds: LT_INTS ops have an integer body; LT_FLOATS ops convert integer inputs to float32;
   LT_BITS ops have only an integer body (the core refuses floating dtypes for them);
   LT_FLOATS_ONLY ops have only a floating body and the core refuses integer and bool operands (no
   integer kernel in PyTorch either). LT_INTERNAL, or'd into a kind, marks an op that the core uses
   but the bindings do not export by name (it is no name of PyTorch's). */
#define LT_INTS 1
#define LT_FLOATS 0
#define LT_BITS 2
#define LT_FLOATS_ONLY 3
#define LT_INTERNAL 4
#define LT_KIND(kind) ((kind) % LT_INTERNAL) /* not & 3: nvcc's host compiler warns of a constant mask */
/* whether a kind has an integer body, and a floating one that runs */
#define LT_KIND_HAS_INT(kind) (LT_KIND(kind) == LT_INTS || LT_KIND(kind) == LT_BITS)
#define LT_KIND_HAS_FLOAT(kind) (LT_KIND(kind) != LT_BITS)
/* the floating body of an LT_BITS op: never run, it only names its operands */
#define LT_NO_FLOAT1(v) (v)
#define LT_NO_FLOAT2(a, b) ((void)(b), (a))

/* wrapping integer arithmetic without undefined behaviour */
#define LT_IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define LT_ISUB(a, b) ((int64_t)((uint64_t)(a) - (uint64_t)(b)))
#define LT_IMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

/* ---- unary: X(name, kind, float body of v, integer body of v) ---- */
#define LT_UNARY_OPS(X)                                                        \
  X(abs, LT_INTS, fabs(v), ((v) < 0 ? LT_ISUB(0, v) : (v)))                              \
  X(neg, LT_INTS, -(v), LT_ISUB(0, v))                                                   \
  X(exp, LT_FLOATS, LT_EXP(v), 0)                                                           \
  X(expm1, LT_FLOATS, LT_EXPM1(v), 0)                                                    \
  X(log, LT_FLOATS, LT_LOG(v), 0)                                                        \
  X(log1p, LT_FLOATS, LT_LOG1P(v), 0)                                                    \
  X(log2, LT_FLOATS, log2(v), 0)                                                         \
  X(log10, LT_FLOATS, log10(v), 0)                                                       \
  X(sqrt, LT_FLOATS, sqrt(v), 0)                                                         \
  X(rsqrt, LT_FLOATS, (T)1 / sqrt(v), 0)                                                 \
  X(sin, LT_FLOATS, sin(v), 0)                                                           \
  X(cos, LT_FLOATS, cos(v), 0)                                                           \
  X(tan, LT_FLOATS, tan(v), 0)                                                           \
  X(asin, LT_FLOATS, asin(v), 0)                                                         \
  X(acos, LT_FLOATS, acos(v), 0)                                                         \
  X(atan, LT_FLOATS, atan(v), 0)                                                         \
  X(sinh, LT_FLOATS, sinh(v), 0)                                                         \
  X(cosh, LT_FLOATS, cosh(v), 0)                                                         \
  X(tanh, LT_FLOATS, LT_TANH(v), 0)                                                      \
  X(erf, LT_FLOATS, LT_ERF(v), 0)                                                         \
  X(erfc, LT_FLOATS, erfc(v), 0)                                                         \
  X(erfinv, LT_FLOATS, lt_erfinv(v), 0)                                                  \
  X(lgamma, LT_FLOATS, lt_lgamma(v), 0)                                                  \
  X(digamma, LT_FLOATS, lt_digamma(v), 0)                                                \
  X(asinh, LT_FLOATS, asinh(v), 0)                                                       \
  X(acosh, LT_FLOATS, acosh(v), 0)                                                       \
  X(atanh, LT_FLOATS, atanh(v), 0)                                                       \
  X(sigmoid, LT_FLOATS, (T)1 / ((T)1 + LT_EXP(-(v))), 0)                                    \
  X(relu, LT_INTS, ((v) > 0 || (v) != (v) ? (v) : (T)0), ((v) > 0 ? (v) : 0))            \
  X(floor, LT_INTS, floor(v), (v))                                                       \
  X(ceil, LT_INTS, ceil(v), (v))                                                         \
  X(round, LT_INTS, rint(v), (v))                                                        \
  X(trunc, LT_INTS, trunc(v), (v))                                                       \
  X(sign, LT_INTS, (T)(((v) > 0) - ((v) < 0)), (int64_t)(((v) > 0) - ((v) < 0))) \
  X(reciprocal, LT_FLOATS, (T)1 / (v), 0)                                                \
  X(square, LT_INTS, (v) * (v), LT_IMUL(v, v))                                          \
  X(gelu, LT_FLOATS, (T)0.5 * (v) * ((T)1 + LT_ERF((v) * (T)0.70710678118654752440)), 0)    \
  X(gelu_tanh, LT_FLOATS, (T)0.5 * (v) * ((T)1 + LT_TANH((T)0.79788456080286535588 * ((v) + (T)0.044715 * (v) * (v) * (v)))), 0) \
  X(silu, LT_FLOATS, (v) / ((T)1 + LT_EXP(-(v))), 0)                                        \
  X(mish, LT_FLOATS, (v) * LT_TANH(lt_softplus1(v)), 0)                                     \
  X(softplus, LT_FLOATS, lt_softplus1(v), 0)                                                \
  X(hardswish, LT_FLOATS, ((v) <= (T)-3 ? (T)0 : (v) >= (T)3 ? (v) : (v) * ((v) + (T)3) / (T)6), 0) \
  X(hardsigmoid, LT_FLOATS, ((v) <= (T)-3 ? (T)0 : (v) >= (T)3 ? (T)1 : (v) / (T)6 + (T)0.5), 0) \
  X(logsigmoid, LT_FLOATS, (((v) < 0 ? (v) : (T)0) - LT_LOG1P(LT_EXP(-fabs(v)))), 0)          \
  X(selu, LT_FLOATS, LT_SELECT((v) > 0, (T)LT_SELU_SCALE * (v), (T)(LT_SELU_SCALE * LT_SELU_ALPHA) * LT_EXPM1(v)), 0) \
  X(softsign, LT_FLOATS, (v) / ((T)1 + fabs(v)), 0)                                         \
  X(tanhshrink, LT_FLOATS, (v) - LT_TANH(v), 0)                                             \
  X(relu6, LT_INTS, ((v) != (v) ? (v) : (v) < 0 ? (T)0 : (v) > 6 ? (T)6 : (v)), ((v) < 0 ? 0 : (v) > 6 ? 6 : (v))) \
  X(exp2, LT_FLOATS, exp2(v), 0)                                                            \
  X(frac, LT_FLOATS, (v) - trunc(v), 0)                                                     \
  X(bitwise_not, LT_BITS, LT_NO_FLOAT1(v), ~(v))                                        \
  X(special_erfcx, LT_FLOATS, (T)lt_sp_erfcx((double)(v)), 0) \
  X(special_ndtr, LT_FLOATS, (T)lt_sp_ndtr((double)(v)), 0) \
  X(special_ndtri, LT_FLOATS, (T)lt_sp_ndtri((double)(v)), 0) \
  X(special_log_ndtr, LT_FLOATS, (T)lt_sp_log_ndtr((double)(v)), 0) \
  X(special_i0e, LT_FLOATS, (T)lt_sp_i0e((double)(v)), 0) \
  X(special_i1, LT_FLOATS, (T)lt_sp_i1((double)(v)), 0) \
  X(special_i1e, LT_FLOATS, (T)lt_sp_i1e((double)(v)), 0) \
  X(special_entr, LT_FLOATS, (T)lt_sp_entr((double)(v)), 0) \
  X(special_bessel_j0, LT_FLOATS, (T)lt_sp_bessel_j0((double)(v)), 0) \
  X(special_bessel_j1, LT_FLOATS, (T)lt_sp_bessel_j1((double)(v)), 0) \
  X(special_bessel_y0, LT_FLOATS, (T)lt_sp_bessel_y0((double)(v)), 0) \
  X(special_bessel_y1, LT_FLOATS, (T)lt_sp_bessel_y1((double)(v)), 0) \
  X(special_modified_bessel_i0, LT_FLOATS, (T)lt_sp_i0((double)(v)), 0) \
  X(special_modified_bessel_i1, LT_FLOATS, (T)lt_sp_i1((double)(v)), 0) \
  X(special_modified_bessel_k0, LT_FLOATS, (T)lt_sp_k((double)(v), 0, 0), 0) \
  X(special_modified_bessel_k1, LT_FLOATS, (T)lt_sp_k((double)(v), 1, 0), 0) \
  X(special_scaled_modified_bessel_k0, LT_FLOATS, (T)lt_sp_k((double)(v), 0, 1), 0) \
  X(special_scaled_modified_bessel_k1, LT_FLOATS, (T)lt_sp_k((double)(v), 1, 1), 0) \
  X(special_spherical_bessel_j0, LT_FLOATS, (T)lt_sp_spherical_j0((double)(v)), 0) \
  X(special_airy_ai, LT_FLOATS, (T)lt_sp_airy_ai((double)(v)), 0)

typedef enum {
#define LT_X(name, kind, fbody, ibody) LT_UNARY_##name,
  LT_UNARY_OPS(LT_X)
#undef LT_X
  LT_NUNARY
} lt_unary_op;

/* ---- derivatives of the unary ops, in the same order: X(name, uses x, uses y, body of g, x, y)
   giving the input's gradient from the output's gradient g, the input x and the output y
   (PyTorch's formulas; T is float or double). The special_ ops with a zero body are not
   differentiable in PyTorch: torch.special runs them without recording a graph. ---- */
#define LT_SQRT_2_PI_INV ((T)0.39894228040143267794) /* 1 / sqrt(2 pi) */
#define LT_UNARY_GRADS(X)                                                                          \
  X(abs, 1, 0, (x) > 0 ? (g) : (x) < 0 ? -(g) : (T)0)                                              \
  X(neg, 0, 0, -(g))                                                                               \
  X(exp, 0, 1, (g) * (y))                                                                          \
  X(expm1, 0, 1, (g) * ((y) + (T)1))                                                               \
  X(log, 1, 0, (g) / (x))                                                                          \
  X(log1p, 1, 0, (g) / ((x) + (T)1))                                                               \
  X(log2, 1, 0, (g) / ((x) * (T)0.69314718055994530942))                                           \
  X(log10, 1, 0, (g) / ((x) * (T)2.30258509299404568402))                                          \
  X(sqrt, 0, 1, (g) / ((T)2 * (y)))                                                                \
  X(rsqrt, 0, 1, (T)-0.5 * (g) * (y) * (y) * (y))                                                  \
  X(sin, 1, 0, (g) * cos(x))                                                                       \
  X(cos, 1, 0, (g) * -sin(x))                                                                      \
  X(tan, 0, 1, (g) * ((T)1 + (y) * (y)))                                                           \
  X(asin, 1, 0, (g) / sqrt((T)1 - (x) * (x)))                                                      \
  X(acos, 1, 0, -(g) / sqrt((T)1 - (x) * (x)))                                                     \
  X(atan, 1, 0, (g) / ((x) * (x) + (T)1))                                                          \
  X(sinh, 1, 0, (g) * cosh(x))                                                                     \
  X(cosh, 1, 0, (g) * sinh(x))                                                                     \
  X(tanh, 0, 1, (g) * ((T)1 - (y) * (y)))                                                          \
  X(erf, 1, 0, (g) * (T)1.12837916709551257390 * LT_EXP(-(x) * (x)))                               \
  X(erfc, 1, 0, (g) * (T)-1.12837916709551257390 * LT_EXP(-(x) * (x)))                             \
  X(erfinv, 0, 1, (g) * (T)0.88622692545275801365 * LT_EXP((y) * (y)))                               \
  X(lgamma, 1, 0, (g) * lt_digamma(x))                                                             \
  X(digamma, 1, 0, (g) * lt_trigamma(x))                                                           \
  X(asinh, 1, 0, (g) / sqrt((x) * (x) + (T)1))                                                     \
  X(acosh, 1, 0, (g) / sqrt((x) * (x) - (T)1))                                                     \
  X(atanh, 1, 0, (g) / ((T)1 - (x) * (x)))                                                         \
  X(sigmoid, 0, 1, (g) * ((T)1 - (y)) * (y))                                                       \
  X(relu, 0, 1, (y) > 0 ? (g) : (T)0)                                                              \
  X(floor, 0, 0, (T)0)                                                                             \
  X(ceil, 0, 0, (T)0)                                                                              \
  X(round, 0, 0, (T)0)                                                                             \
  X(trunc, 0, 0, (T)0)                                                                             \
  X(sign, 0, 0, (T)0)                                                                              \
  X(reciprocal, 0, 1, -(g) * (y) * (y))                                                            \
  X(square, 1, 0, (g) * ((T)2 * (x)))                                                              \
  X(gelu, 1, 0, (g) * ((T)0.5 * ((T)1 + LT_ERF((x) * (T)0.70710678118654752440)) +                    \
                       (x) * LT_SQRT_2_PI_INV * LT_EXP((T)-0.5 * (x) * (x))))                      \
  X(gelu_tanh, 1, 0, (g) * lt_gelu_tanh_grad(x))                                                   \
  X(silu, 1, 0, (g) * lt_silu_grad(x))                                                             \
  X(mish, 1, 0, (g) * lt_mish_grad(x))                                                             \
  X(softplus, 1, 0, (x) > (T)20 ? (g) : (g) * lt_softplus1_grad(x))                                \
  X(hardswish, 1, 0, (x) < (T)-3 ? (T)0 : (x) <= (T)3 ? (g) * ((x) / (T)3 + (T)0.5) : (g))          \
  X(hardsigmoid, 1, 0, ((x) > (T)-3 && (x) < (T)3) ? (g) / (T)6 : (T)0)                             \
  X(logsigmoid, 1, 0, (g) * lt_logsigmoid_grad(x))                                                 \
  X(selu, 1, 0, (x) <= 0 ? (g) * (T)(LT_SELU_SCALE * LT_SELU_ALPHA) * LT_EXP(x) : (g) * (T)LT_SELU_SCALE) \
  X(softsign, 1, 0, (g) / (((T)1 + fabs(x)) * ((T)1 + fabs(x))))                                    \
  X(tanhshrink, 1, 0, (g) * LT_TANH(x) * LT_TANH(x))                                                  \
  X(relu6, 1, 0, ((x) > 0 && (x) < (T)6) ? (g) : (T)0)                                             \
  X(exp2, 0, 1, (g) * (y) * (T)0.69314718055994530942)                                             \
  X(frac, 0, 0, (g))                                                                               \
  X(bitwise_not, 0, 0, (T)0)                                                            \
  X(special_erfcx, 1, 1, (g) * ((T)2 * (x) * (y) - (T)1.12837916709551257390)) \
  X(special_ndtr, 1, 0, (g) * LT_SQRT_2_PI_INV * LT_EXP((T)-0.5 * (x) * (x))) \
  X(special_ndtri, 0, 1, (g) * (T)2.50662827463100050242 * LT_EXP((T)0.5 * (y) * (y))) \
  X(special_log_ndtr, 1, 1, (g) * LT_SQRT_2_PI_INV * LT_EXP(-(y) - (T)0.5 * (x) * (x))) \
  X(special_i0e, 1, 1, (g) * ((T)lt_sp_i1e((double)(x)) - LT_SGN(x) * (y))) \
  X(special_i1, 1, 1, (x) == 0 ? (g) * (T)0.5 : (g) * ((T)lt_sp_i0((double)(x)) - (y) / (x))) \
  X(special_i1e, 1, 1, (x) == 0 ? (g) * (T)0.5 : (g) * ((T)lt_sp_i0e((double)(x)) - (y) * (LT_SGN(x) + (T)1 / (x)))) \
  X(special_entr, 1, 0, (g) * -((T)1 + log(x))) \
  X(special_bessel_j0, 0, 0,(T)0) \
  X(special_bessel_j1, 0, 0,(T)0) \
  X(special_bessel_y0, 0, 0,(T)0) \
  X(special_bessel_y1, 0, 0,(T)0) \
  X(special_modified_bessel_i0, 0, 0,(T)0) \
  X(special_modified_bessel_i1, 0, 0,(T)0) \
  X(special_modified_bessel_k0, 0, 0,(T)0) \
  X(special_modified_bessel_k1, 0, 0,(T)0) \
  X(special_scaled_modified_bessel_k0, 0, 0,(T)0) \
  X(special_scaled_modified_bessel_k1, 0, 0,(T)0) \
  X(special_spherical_bessel_j0, 0, 0,(T)0) \
  X(special_airy_ai, 0, 0,(T)0)

/* the sign of x: 1, -1 or 0 */
#define LT_SGN(x) ((T)(((x) > 0) - ((x) < 0)))

/* SELU's constants (PyTorch's) */
#define LT_SELU_ALPHA 1.6732632423543772848170429916717
#define LT_SELU_SCALE 1.0507009873554804934193349852946

/* Helpers of the activations above, for T = float and double: CUDA overloads them, C picks one
   with _Generic. softplus with PyTorch's defaults (beta 1, threshold 20); the derivatives of silu,
   mish, softplus and logsigmoid in PyTorch's forms. */
/* (both sides computed, then one selected: a side evaluated under a condition keeps the loop
   scalar) */
#define LT_SOFTPLUS1(T) T sp_ = LT_LOG1P(LT_EXP(x)); return LT_SELECT(x > (T)20, x, sp_);
#define LT_SOFTPLUS1_GRAD(T) T z = LT_EXP(x); return z / (z + (T)1);
#define LT_SILU_GRAD(T) T s = (T)1 / ((T)1 + LT_EXP(-x)); return s * ((T)1 + x * ((T)1 - s));
#define LT_MISH_GRAD(T)                                                                            \
  T s = (T)1 / ((T)1 + LT_EXP(-x)), sp_ = LT_LOG1P(LT_EXP(x)), t = LT_TANH(LT_SELECT(x > (T)20, x, sp_));     \
  return t + x * s * ((T)1 - t * t);
#define LT_LOGSIGMOID_GRAD(T)                                                                      \
  T z = LT_EXP(-fabs(x));                                                                          \
  return x < 0 ? (T)1 - z / ((T)1 + z) : z / ((T)1 + z);
#ifdef __CUDACC__
#define LT_FP_HELPER(name, BODY) \
  LT_HD float name(float x) { BODY(float) } \
  LT_HD double name(double x) { BODY(double) }
#else
#define LT_FP_HELPER(name, BODY) \
  LT_HD float name##_f(float x) { BODY(float) } \
  LT_HD double name##_d(double x) { BODY(double) }
#define lt_softplus1(x) _Generic((x), float: lt_softplus1_f, default: lt_softplus1_d)(x)
#define lt_softplus1_grad(x) _Generic((x), float: lt_softplus1_grad_f, default: lt_softplus1_grad_d)(x)
#define lt_silu_grad(x) _Generic((x), float: lt_silu_grad_f, default: lt_silu_grad_d)(x)
#define lt_mish_grad(x) _Generic((x), float: lt_mish_grad_f, default: lt_mish_grad_d)(x)
#define lt_logsigmoid_grad(x) _Generic((x), float: lt_logsigmoid_grad_f, default: lt_logsigmoid_grad_d)(x)
#endif
LT_FP_HELPER(lt_softplus1, LT_SOFTPLUS1)
LT_FP_HELPER(lt_softplus1_grad, LT_SOFTPLUS1_GRAD)
LT_FP_HELPER(lt_silu_grad, LT_SILU_GRAD)
LT_FP_HELPER(lt_mish_grad, LT_MISH_GRAD)
LT_FP_HELPER(lt_logsigmoid_grad, LT_LOGSIGMOID_GRAD)

/* d/dx of the tanh approximation of gelu, in PyTorch's order of operations */
#define LT_GELU_TANH_GRAD(T)                                                                     \
  T kb = (T)0.79788456080286535588, kk = (T)0.044715;                                              \
  T xsq = x * x, inner = kb * (x + kk * xsq * x), th = LT_TANH(inner);                             \
  T right = (T)1 + th;                                                                             \
  return (T)0.5 * right + (T)0.5 * x * (((T)1 - th * th) * kb * ((T)1 + (T)3 * kk * xsq));
#ifdef __CUDACC__
LT_HD float lt_gelu_tanh_grad(float x) { LT_GELU_TANH_GRAD(float) }
LT_HD double lt_gelu_tanh_grad(double x) { LT_GELU_TANH_GRAD(double) }
#else
LT_HD float lt_gelu_tanh_gradf(float x) { LT_GELU_TANH_GRAD(float) }
LT_HD double lt_gelu_tanh_gradd(double x) { LT_GELU_TANH_GRAD(double) }
#define lt_gelu_tanh_grad(x) _Generic((x), float: lt_gelu_tanh_gradf, default: lt_gelu_tanh_gradd)(x)
#endif

/* Special functions of the unary table, in PyTorch's methods, for T = float and double.
   erfinv: Giles' single-precision approximation, then Newton steps (one for float, four for
   double): on erf(r) = x for |x| <= 1/2, on log erfc(|r|) = log(1 - |x|) beyond, which is nearly
   quadratic in r (the approximation is 7% off at 1 - 2^-53) and does not cancel near +-1 as
   PyTorch's erf(r) - x does (PyTorch is 1e-10 off at 1 - 2e-9, 1e-6 at 1 - 2^-40); +-1 give
   +-inf and |x| > 1 NaN.
   digamma: reflection below 0 (NaN at the negative integers, -inf at 0 as PyTorch), the
   recurrence up to 10, then the asymptotic series (Cephes').
   trigamma (digamma's derivative): reflection below 1/2, six steps of the recurrence, the series.
   lgamma: the reentrant libm function on the CPU (lgamma writes the global signgam). */
#define LT_PI_D 3.14159265358979323846
#define LT_ERFINV(T)                                                                               \
  if (x != x || x < (T)-1 || x > (T)1) return (T)NAN;                                              \
  if (x == (T)1 || x == (T)-1) return x * (T)INFINITY;                                             \
  T w = -log(((T)1 - x) * ((T)1 + x)), p;                                                          \
  if (w < (T)5) {                                                                                  \
    w = w - (T)2.5;                                                                                \
    p = (T)2.81022636e-08;                                                                         \
    p = (T)3.43273939e-07 + p * w; p = (T)-3.5233877e-06 + p * w; p = (T)-4.39150654e-06 + p * w;  \
    p = (T)0.00021858087 + p * w; p = (T)-0.00125372503 + p * w; p = (T)-0.00417768164 + p * w;    \
    p = (T)0.246640727 + p * w; p = (T)1.50140941 + p * w;                                         \
  } else {                                                                                         \
    w = sqrt(w) - (T)3;                                                                            \
    p = (T)-0.000200214257;                                                                        \
    p = (T)0.000100950558 + p * w; p = (T)0.00134934322 + p * w; p = (T)-0.00367342844 + p * w;    \
    p = (T)0.00573950773 + p * w; p = (T)-0.0076224613 + p * w; p = (T)0.00943887047 + p * w;      \
    p = (T)1.00167406 + p * w; p = (T)2.83297682 + p * w;                                          \
  }                                                                                                \
  T r = p * x;                                                                                     \
  for (int k = 0; k < (sizeof(T) == 4 ? 1 : 4); k++) {                                             \
    T d = (T)1.12837916709551257390 * LT_EXP(-r * r);                                              \
    if (d == (T)0) break;                                                                          \
    if (x > (T)0.5 || x < (T)-0.5) {                                                               \
      /* Newton on log erfc(|r|) = log(1 - |x|): nearly quadratic in r, and exact near +-1 */      \
      double s = x > (T)0 ? 1.0 : -1.0, c = erfc(s * r);                                           \
      r = (T)(r + s * (log(c) - log(1.0 - s * x)) * c / d);                                        \
    } else {                                                                                       \
      r = r - (erf(r) - x) / d;                                                                    \
    }                                                                                              \
  }                                                                                                \
  return r;
#define LT_DIGAMMA(T)                                                                              \
  if (x == (T)0) return x != x ? x : (signbit(x) ? (T)INFINITY : (T)-INFINITY);                    \
  T shift = (T)0;                                                                                  \
  if (x < (T)0) {                                                                                  \
    if (x == trunc(x)) return (T)NAN;                                                              \
    /* digamma(x) = digamma(1 - x) - pi / tan(pi x) */                                             \
    shift = -(T)LT_PI_D / tan((T)LT_PI_D * x);                                                     \
    x = (T)1 - x;                                                                                  \
  }                                                                                                \
  T result = shift;                                                                                \
  while (x < (T)10) {                                                                              \
    result -= (T)1 / x;                                                                            \
    x += (T)1;                                                                                     \
  }                                                                                                \
  if (x == (T)10) return result + (T)2.25175258906672110764;                                       \
  T y = (T)0;                                                                                      \
  if (x < (T)1.0e17) {                                                                             \
    T z = (T)1 / (x * x);                                                                          \
    T poly = (T)8.33333333333333333333E-2;                                                         \
    poly = poly * z + (T)-2.10927960927960927961E-2;                                               \
    poly = poly * z + (T)7.57575757575757575758E-3;                                                \
    poly = poly * z + (T)-4.16666666666666666667E-3;                                               \
    poly = poly * z + (T)3.96825396825396825397E-3;                                                \
    poly = poly * z + (T)-8.33333333333333333333E-3;                                               \
    poly = poly * z + (T)8.33333333333333333333E-2;                                                \
    y = z * poly;                                                                                  \
  }                                                                                                \
  return result + log(x) - (T)0.5 / x - y;
#define LT_TRIGAMMA(T)                                                                             \
  T sign = (T)1, result = (T)0;                                                                    \
  if (x < (T)0.5) {                                                                                \
    sign = (T)-1;                                                                                  \
    T s = sin((T)LT_PI_D * x);                                                                     \
    result -= (T)(LT_PI_D * LT_PI_D) / (s * s);                                                    \
    x = (T)1 - x;                                                                                  \
  }                                                                                                \
  for (int k = 0; k < 6; k++) {                                                                    \
    result += (T)1 / (x * x);                                                                      \
    x += (T)1;                                                                                     \
  }                                                                                                \
  T ixx = (T)1 / (x * x);                                                                          \
  result += ((T)1 + (T)1 / ((T)2 * x) +                                                            \
             ixx * ((T)1 / (T)6 - ixx * ((T)1 / (T)30 - ixx * ((T)1 / (T)42))))                    \
            / x;                                                                                   \
  return sign * result;
#ifdef __CUDACC__
#define LT_LGAMMA(T) return lgamma(x);
#else
#define LT_LGAMMA(T) int sg; return sizeof(T) == 4 ? (T)lgammaf_r((float)x, &sg) : (T)lgamma_r((double)x, &sg);
#define lt_erfinv(x) _Generic((x), float: lt_erfinv_f, default: lt_erfinv_d)(x)
#define lt_digamma(x) _Generic((x), float: lt_digamma_f, default: lt_digamma_d)(x)
#define lt_trigamma(x) _Generic((x), float: lt_trigamma_f, default: lt_trigamma_d)(x)
#define lt_lgamma(x) _Generic((x), float: lt_lgamma_f, default: lt_lgamma_d)(x)
#endif
LT_FP_HELPER(lt_erfinv, LT_ERFINV)
LT_FP_HELPER(lt_digamma, LT_DIGAMMA)
LT_FP_HELPER(lt_trigamma, LT_TRIGAMMA)
LT_FP_HELPER(lt_lgamma, LT_LGAMMA)

/* nextafter in the operands' own precision: tgmath's nextafter picks nextafterf for floats in C;
   CUDA is given its float and double functions by name */
#ifdef __CUDACC__
LT_HD float lt_nextafter(float a, float b) { return nextafterf(a, b); }
LT_HD double lt_nextafter(double a, double b) { return nextafter(a, b); }
#else
#define lt_nextafter(a, b) nextafter(a, b)
#endif

/* ---- binary: X(name, kind, float body of a b, integer body of a b) ----
   add and sub take alpha (b scaled first), as torch.add(a, b, alpha=). nextafter is exact for
   float32 and float64 only (float16 and bfloat16 are computed in float32; torch.nextafter refuses
   them) and has no derivative, as in PyTorch. floor_divide and div_trunc are torch.div's rounding
   modes 'floor' and 'trunc' (PyTorch's formulas; the integer ones wrap the lowest value divided by
   -1, where PyTorch 1.13 dies of SIGFPE, and the core refuses an integer divisor 0 before);
   div_trunc is reached only so. hypot is C's (no overflow of a^2 + b^2; inf beside a NaN).
   leaky_relu, elu and celu are F.leaky_relu's, F.elu's and F.celu's on floating tensors, b their
   negative slope or alpha (a number); their *_backward ops give the input's gradient from the
   output's gradient a and the input b, alpha their slope or alpha (PyTorch's formulas). */
#define LT_BINARY_OPS(X)                                                        \
  X(add, LT_INTS, (a) + alpha * (b), LT_IADD(a, LT_IMUL(ialpha, b)))                  \
  X(sub, LT_INTS, (a) - alpha * (b), LT_ISUB(a, LT_IMUL(ialpha, b)))                  \
  X(mul, LT_INTS, (a) * (b), LT_IMUL(a, b))                                           \
  X(div, LT_FLOATS, (a) / (b), 0)                                                     \
  X(pow, LT_INTS, pow(a, b), lt_ipow(a, b))                                           \
  X(maximum, LT_INTS, ((a) != (a) || (a) > (b) ? (a) : (b)), ((a) > (b) ? (a) : (b))) \
  X(minimum, LT_INTS, ((a) != (a) || (a) < (b) ? (a) : (b)), ((a) < (b) ? (a) : (b))) \
  X(atan2, LT_FLOATS, atan2(a, b), 0)                                                 \
  X(hypot, LT_FLOATS_ONLY, hypot(a, b), 0)                                            \
  X(fmod, LT_INTS, fmod(a, b), lt_ifmod(a, b))                                        \
  X(remainder, LT_INTS, lt_fremainder(a, b), lt_iremainder(a, b))                    \
  X(bitwise_and, LT_BITS, LT_NO_FLOAT2(a, b), (a) & (b))                             \
  X(bitwise_or, LT_BITS, LT_NO_FLOAT2(a, b), (a) | (b))                              \
  X(bitwise_xor, LT_BITS, LT_NO_FLOAT2(a, b), (a) ^ (b))                             \
  X(bitwise_left_shift, LT_BITS, LT_NO_FLOAT2(a, b), lt_ishl(a, b))                  \
  X(bitwise_right_shift, LT_BITS, LT_NO_FLOAT2(a, b), lt_ishr(a, b))                 \
  X(nextafter, LT_FLOATS, lt_nextafter(a, b), 0)                    \
  X(special_zeta, LT_FLOATS, (T)lt_sp_zeta((double)(a), (double)(b)), 0) \
  X(igamma, LT_FLOATS, (T)lt_sp_igamma((double)(a), (double)(b)), 0) \
  X(igammac, LT_FLOATS, (T)lt_sp_igammac((double)(a), (double)(b)), 0) \
  X(special_chebyshev_polynomial_t, LT_FLOATS, (T)lt_sp_chebyshev_poly((double)(a), (double)(b), 0), 0) \
  X(special_chebyshev_polynomial_u, LT_FLOATS, (T)lt_sp_chebyshev_poly((double)(a), (double)(b), 1), 0) \
  X(special_chebyshev_polynomial_v, LT_FLOATS, (T)lt_sp_chebyshev_poly((double)(a), (double)(b), 2), 0) \
  X(special_chebyshev_polynomial_w, LT_FLOATS, (T)lt_sp_chebyshev_poly((double)(a), (double)(b), 3), 0) \
  X(special_shifted_chebyshev_polynomial_t, LT_FLOATS, (T)lt_sp_chebyshev_poly(((double)(a)) + ((double)(a)) - 1, (double)(b), 0), 0) \
  X(special_shifted_chebyshev_polynomial_u, LT_FLOATS, (T)lt_sp_chebyshev_poly(((double)(a)) + ((double)(a)) - 1, (double)(b), 1), 0) \
  X(special_shifted_chebyshev_polynomial_v, LT_FLOATS, (T)lt_sp_chebyshev_poly(((double)(a)) + ((double)(a)) - 1, (double)(b), 2), 0) \
  X(special_shifted_chebyshev_polynomial_w, LT_FLOATS, (T)lt_sp_chebyshev_poly(((double)(a)) + ((double)(a)) - 1, (double)(b), 3), 0) \
  X(special_hermite_polynomial_h, LT_FLOATS, (T)lt_sp_classical_poly((double)(a), (double)(b), 0), 0) \
  X(special_hermite_polynomial_he, LT_FLOATS, (T)lt_sp_classical_poly((double)(a), (double)(b), 1), 0) \
  X(special_laguerre_polynomial_l, LT_FLOATS, (T)lt_sp_classical_poly((double)(a), (double)(b), 2), 0) \
  X(special_legendre_polynomial_p, LT_FLOATS, (T)lt_sp_classical_poly((double)(a), (double)(b), 3), 0) \
  X(floor_divide, LT_INTS, (T)lt_fdiv_floor(a, b), lt_idiv_floor(a, b)) \
  X(div_trunc, LT_INTS | LT_INTERNAL, trunc((a) / (b)), lt_idiv_trunc(a, b)) \
  X(leaky_relu, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((a) > 0, (a), (a) * (b)), 0) \
  X(elu, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((a) > 0, (a), (b) * LT_EXPM1(a)), 0) \
  X(celu, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((a) > 0, (a), (b) * LT_EXPM1((a) / (b))), 0) \
  X(leaky_relu_backward, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((b) > 0, (a), (a) * alpha), 0) \
  X(elu_backward, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((b) > 0, (a), (a) * alpha * LT_EXP(b)), 0) \
  X(celu_backward, LT_FLOATS_ONLY | LT_INTERNAL, LT_SELECT((b) > 0, (a), (a) * LT_EXP((b) / alpha)), 0)

typedef enum {
#define LT_X(name, kind, fbody, ibody) LT_BINARY_##name,
  LT_BINARY_OPS(LT_X)
#undef LT_X
  LT_NBINARY
} lt_binary_op;

/* ---- comparisons and logical ops: bool results ---- */
#define LT_COMPARE_OPS(X)                \
  X(eq, (a) == (b))                      \
  X(ne, (a) != (b))                      \
  X(lt, (a) < (b))                       \
  X(le, (a) <= (b))                      \
  X(gt, (a) > (b))                       \
  X(ge, (a) >= (b))                      \
  X(logical_and, ((a) != 0) && ((b) != 0)) \
  X(logical_or, ((a) != 0) || ((b) != 0))  \
  X(logical_xor, ((a) != 0) != ((b) != 0))

typedef enum {
#define LT_X(name, body) LT_COMPARE_##name,
  LT_COMPARE_OPS(LT_X)
#undef LT_X
  LT_NCOMPARE
} lt_compare_op;

/* Whether an op has an integer body (else integer inputs are converted to float32 first), and
   whether it has only that (bitwise ops: floating dtypes are refused). */
LT_HD bool lt_unary_has_int(lt_unary_op op) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) case LT_UNARY_##name: return kind;
    LT_UNARY_OPS(LT_X)
#undef LT_X
    default: return false;
  }
}
LT_HD bool lt_binary_has_int(lt_binary_op op) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) case LT_BINARY_##name: return LT_KIND_HAS_INT(kind);
    LT_BINARY_OPS(LT_X)
#undef LT_X
    default: return false;
  }
}

LT_HD bool lt_unary_int_only(lt_unary_op op) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) case LT_UNARY_##name: return kind == LT_BITS;
    LT_UNARY_OPS(LT_X)
#undef LT_X
    default: return false;
  }
}
LT_HD bool lt_binary_int_only(lt_binary_op op) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) case LT_BINARY_##name: return LT_KIND(kind) == LT_BITS;
    LT_BINARY_OPS(LT_X)
#undef LT_X
    default: return false;
  }
}
/* whether a binary op refuses integer and bool operands (LT_FLOATS_ONLY) */
LT_HD bool lt_binary_floats_only(lt_binary_op op) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) case LT_BINARY_##name: return LT_KIND(kind) == LT_FLOATS_ONLY;
    LT_BINARY_OPS(LT_X)
#undef LT_X
    default: return false;
  }
}

/* Which of x and y the derivative of a unary op reads. */
LT_HD void lt_unary_grad_uses(lt_unary_op op, bool *uses_x, bool *uses_y) {
  switch (op) {
#define LT_X(name, ux, uy, body) case LT_UNARY_##name: *uses_x = ux; *uses_y = uy; return;
    LT_UNARY_GRADS(LT_X)
#undef LT_X
    default: *uses_x = *uses_y = false;
  }
}

/* integer power by squaring; negative exponents follow integer division (0 except for |a| == 1) */
LT_HD int64_t lt_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  while (b) {
    if (b & 1) r *= x;
    x *= x;
    b >>= 1;
  }
  return (int64_t)r;
}

LT_HD int64_t lt_ifmod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }

/* Shifts of values loaded as int64 (narrower types are stored back truncated, which wraps them as
   a shift in their own width would), as PyTorch defines them and without C's undefined behaviour:
   a shift by a negative amount or by the width or more gives 0 to the left, and to the right the
   sign (0, or -1 for a negative signed value: right shifts are arithmetic). A shift by 8..63 of an
   8-bit value, say, already gives those through the truncation; only 64 and more need the test. */
LT_HD int64_t lt_ishl(int64_t a, int64_t b) { return (b < 0 || b > 63) ? 0 : (int64_t)((uint64_t)a << b); }
LT_HD int64_t lt_ishr(int64_t a, int64_t b) {
  if (b < 0 || b > 63) b = 63;
  return a < 0 ? ~(~a >> b) : a >> b; /* ~a >= 0: no implementation-defined shift of a negative */
}

/* Division rounded toward minus infinity, as PyTorch's div_floor: through fmod, so that a finite
   a over an infinity of the other sign gives -1 (Python's 1 // -inf), and a zero quotient keeps
   the sign of a / b */
LT_HD double lt_fdiv_floor(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1 : fl;
}
LT_HD int64_t lt_idiv_trunc(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? LT_ISUB(0, a) : a / b; }
LT_HD int64_t lt_idiv_floor(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return LT_ISUB(0, a); /* INT64_MIN / -1 wraps */
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

/* Python-style remainder: the sign of the divisor */
LT_HD double lt_fremainder(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}
LT_HD int64_t lt_iremainder(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return 0; /* avoids INT64_MIN % -1 */
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

#endif
