/* Optimizer update math, written once for the CPU and CUDA kernels: the per-element steps of SGD and
   Adam/AdamW with PyTorch's operation order (so float64 results match PyTorch's to the last bit and
   float32 ones round as PyTorch's float kernels do: every scalar is cast to the element type first).
   T is float or double; LT_OPTIM_MATH(T, sfx) defines the functions for one type. */
#ifndef LT_KERNELS_OPTIM_H
#define LT_KERNELS_OPTIM_H

#include "lt_kernel.h"

#include <stdbool.h>

#ifdef __CUDACC__
#include <math.h>
#else
#include <tgmath.h>
#endif

/* The scalars of one SGD step, already in the element type. */
#define LT_SGD_ARGS(T)                                                                            \
  struct {                                                                                        \
    T sign;           /* -1 with maximize (an exact negation), else 1 */                          \
    T weight_decay;   /* added as wd * p when has_wd */                                           \
    T momentum;                                                                                   \
    T one_minus_damp; /* 1 - dampening */                                                         \
    T neg_lr;         /* -lr */                                                                   \
  }

/* The scalars of one Adam/AdamW step (step already counted), in the element type. */
#define LT_ADAM_ARGS(T)                                                                           \
  struct {                                                                                        \
    T sign;           /* -1 with maximize */                                                      \
    T weight_decay;   /* Adam: added to the gradient as wd * p when has_wd */                     \
    T decay;          /* AdamW: p *= 1 - lr * wd first (1 for Adam: exact) */                     \
    T lerp_w;         /* 1 - beta1, the weight of exp_avg.lerp_(grad, 1 - beta1) */               \
    T lerp_w1;        /* lerp_w - 1 (PyTorch's lerp uses it when the weight is >= 0.5) */         \
    T beta2;                                                                                      \
    T one_minus_beta2;                                                                            \
    T bc2_sqrt;       /* sqrt(1 - beta2^step) */                                                  \
    T eps;                                                                                        \
    T neg_step_size;  /* -lr / (1 - beta1^step) */                                                \
  }

typedef LT_SGD_ARGS(float) lt_sgd_args_f;
typedef LT_SGD_ARGS(double) lt_sgd_args_d;
typedef LT_ADAM_ARGS(float) lt_adam_args_f;
typedef LT_ADAM_ARGS(double) lt_adam_args_d;

/* PyTorch's torch.maximum: NaN when either operand is NaN */
#define LT_NAN_MAX(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))

/* The flags (has_wd, momentum, first, nesterov, amsgrad, lerp_lo = |1 - beta1| < 0.5) are constants
   at every call site of the CPU loops, so each combination compiles to its own branch-free loop. */
#define LT_OPTIM_MATH(T, sfx)                                                                     \
  /* SGD: d = sign*g (+ wd*p); buf = d at the first step, else buf*momentum + (1-dampening)*d;  \
     d = d + momentum*buf (nesterov) or buf; p = p + (-lr)*d */                                   \
  LT_HD void lt_sgd_elem_##sfx(T *p, T g, T *buf, const lt_sgd_args_##sfx *a, bool has_wd,        \
                               bool has_mom, bool first, bool nesterov) {                         \
    T pv = *p;                                                                                    \
    T d = a->sign * g;                                                                            \
    if (has_wd) d = d + a->weight_decay * pv;                                                     \
    if (has_mom) {                                                                                \
      T b = first ? d : *buf * a->momentum + a->one_minus_damp * d;                               \
      *buf = b;                                                                                   \
      d = nesterov ? d + a->momentum * b : b;                                                     \
    }                                                                                             \
    *p = pv + a->neg_lr * d;                                                                      \
  }                                                                                               \
  /* Adam/AdamW in two halves around the square root (so that CPU loops can take the roots of a   \
     block at once: a libm sqrt call keeps a loop from vectorising).                               \
     First: grad = sign*g (+ wd*p); m = lerp(m, grad, 1-beta1); v = v*beta2 + (1-beta2)*grad*grad; \
     vmax = max(vmax, v) (amsgrad); returns v (or vmax), whose root the second half takes. */     \
  LT_HD T lt_adam_moments_##sfx(T pv, T g, T *m, T *v, T *vmax, const lt_adam_args_##sfx *a,      \
                                bool has_wd, bool amsgrad, bool lerp_lo) {                        \
    T grad = a->sign * g;                                                                         \
    if (has_wd) grad = grad + a->weight_decay * pv;                                               \
    T mv = *m, diff = grad - mv;                                                                  \
    mv = lerp_lo ? mv + a->lerp_w * diff : grad + a->lerp_w1 * diff;                              \
    *m = mv;                                                                                      \
    T vv = *v * a->beta2;                                                                         \
    vv = vv + a->one_minus_beta2 * grad * grad;                                                   \
    *v = vv;                                                                                      \
    if (amsgrad) {                                                                                \
      T mx = *vmax;                                                                               \
      vv = LT_NAN_MAX(mx, vv);                                                                    \
      *vmax = vv;                                                                                 \
    }                                                                                             \
    return vv;                                                                                    \
  }                                                                                               \
  /* Second: the new parameter from the old one, the new m and root = sqrt(v or vmax):            \
     p = p*decay + (-step_size)*m / (root/bc2_sqrt + eps) (decay: AdamW's 1 - lr*wd, Adam's 1) */  \
  LT_HD T lt_adam_apply_##sfx(T pv, T mv, T root, const lt_adam_args_##sfx *a) {                  \
    pv = pv * a->decay;                                                                           \
    T denom = root / a->bc2_sqrt + a->eps;                                                        \
    return pv + a->neg_step_size * mv / denom;                                                    \
  }                                                                                               \
  /* the whole step of one element */                                                            \
  LT_HD void lt_adam_elem_##sfx(T *p, T g, T *m, T *v, T *vmax, const lt_adam_args_##sfx *a,      \
                                bool has_wd, bool amsgrad, bool lerp_lo) {                        \
    T vv = lt_adam_moments_##sfx(*p, g, m, v, vmax, a, has_wd, amsgrad, lerp_lo);                 \
    *p = lt_adam_apply_##sfx(*p, *m, sqrt(vv), a);                                                \
  }

LT_OPTIM_MATH(float, f)
LT_OPTIM_MATH(double, d)

#endif
