/* Float math written so that compilers vectorise it (glibc's expf does not vectorise without
   -ffast-math). Accurate to about 1 ulp over the whole range, with IEEE handling of NaN, infinities,
   overflow and subnormal results. Shared by the kernels of every backend. */
#ifndef LT_FASTMATH_H
#define LT_FASTMATH_H

#include "lt_kernel.h"

#ifndef __CUDACC__
#include <math.h>
#endif

typedef union { uint32_t u; float f; } lt_f32u;

/* c ? a : b through bit masks: compilers if-convert (and vectorise) this where a chain of float
   selects stays a branch */
LT_HD float lt_self(int c, float a, float b) {
  lt_f32u x, y;
  x.f = a;
  y.f = b;
  uint32_t m = (uint32_t)0 - (uint32_t)c;
  x.u = (x.u & m) | (y.u & ~m);
  return x.f;
}

/* exp(x) = 2^n * exp(r) with n = x / ln2 rounded to the nearest integer, |r| <= ln2/2, exp(r) by
   Cephes' degree-6 polynomial. Adding 1.5 * 2^23 rounds x / ln2 to an integer held in the low bits
   of the sum, which gives n as a float and as an integer without conversions. With fused
   multiply-adds (where the target has them) Horner's rule runs to the end: at most 0.89 ulp over
   every float; without, Cephes' order of the last steps: at most 0.98 ulp (spec/c/test_core.c). */
/* x = n ln2 + r for exp and expm1: x clamped to [-104, 89] (NaN becomes -104 here, and the callers
   restore it), n into *n, r returned */
LT_HD float lt_exp_reduce_(float x, int32_t *n) {
#ifdef __FMA__
#define LT_FMA_(a, b, c) fmaf(a, b, c)
#else
#define LT_FMA_(a, b, c) ((a) * (b) + (c))
#endif
  float xc = lt_self(x > -104.0f, x, -104.0f);
  xc = lt_self(xc < 89.0f, xc, 89.0f);
  lt_f32u t;
  t.f = LT_FMA_(xc, 1.44269504088896341f, 12582912.0f);
  const float fn = t.f - 12582912.0f;
  *n = (int32_t)(t.u - 0x4B400000u);
  const float r = LT_FMA_(fn, -0.693359375f, xc); /* ln2 in two parts: fn * 0.693359375 is exact */
  return LT_FMA_(fn, 2.12194440e-4f, r);
#undef LT_FMA_
}

LT_HD float lt_expf(float x) {
#ifdef __FMA__
#define LT_FMA_(a, b, c) fmaf(a, b, c)
#else
#define LT_FMA_(a, b, c) ((a) * (b) + (c))
#endif
  lt_f32u a, b;
  int32_t n;
  const float r = lt_exp_reduce_(x, &n);
  float p = 1.9875691500e-4f;
  p = LT_FMA_(p, r, 1.3981999507e-3f);
  p = LT_FMA_(p, r, 8.3334519073e-3f);
  p = LT_FMA_(p, r, 4.1665795894e-2f);
  p = LT_FMA_(p, r, 1.6666665459e-1f);
  p = LT_FMA_(p, r, 5.0000001201e-1f);
#ifdef __FMA__
  p = LT_FMA_(p, r, 1.0f);
  p = LT_FMA_(p, r, 1.0f);
#else
  p = p * (r * r) + r + 1.0f;
#endif
#undef LT_FMA_
  /* 2^n in two halves so that subnormal results and n = 128 (overflow to infinity) are exact */
  int32_t n1 = n >> 1;
  a.u = (uint32_t)(n1 + 127) << 23;
  b.u = (uint32_t)(n - n1 + 127) << 23;
  float y = p * a.f * b.f;
  y = lt_self(x < -103.972084045410f, 0.0f, y); /* the true result rounds to 0 below this */
  return lt_self(x != x, x, y);
}

/* tanh(x) = 1 - 2 / (exp(2|x|) + 1) above |x| = 0.625, |x| + |x|^3 P(x^2) (Cephes' polynomial)
   below, with the sign of x put back, so -0 stays -0: at most 1.37 ulp over every float (glibc's
   tanhf, which does not vectorise: 2.19 here), checked by spec/c/test_core.c. Large |x| give
   exp's infinity and so exactly +-1; NaN is passed through. */
LT_HD float lt_tanhf(float x) {
  lt_f32u ax, y;
  ax.f = x;
  const uint32_t sign = ax.u & 0x80000000u;
  ax.u &= 0x7fffffffu;
  const float z = ax.f;
  const float big = 1.0f - 2.0f / (lt_expf(2.0f * z) + 1.0f);
  const float q = z * z;
  float p = -5.70498872745e-3f;
  p = p * q + 2.06390887954e-2f;
  p = p * q - 5.37397155531e-2f;
  p = p * q + 1.33314422036e-1f;
  p = p * q - 3.33332819422e-1f;
  y.f = lt_self(z > 0.625f, big, z + z * (q * p));
  y.u |= sign;
  return lt_self(x != x, x, y.f);
}

/* erf(x): x + x P(x^2) up to |x| = 0.927734375, 1 - exp(|x| Q(|x|)) above, with the sign of x put
   back (Norbert Juffa's faithfully rounded erff, whose minimax coefficients these are). Both
   halves are computed and one selected, so that the loop vectorises (glibc's erff does not; PyTorch
   vectorises Abramowitz and Stegun's form, whose error is absolute, large relative to erf near 0):
   at most 1.0 ulp over every float with fused multiply-adds, 1.19 without, checked by
   spec/c/test_core.c. +-inf give +-1; NaN is passed through. */
LT_HD float lt_erff(float x) {
#ifdef __FMA__
#define LT_FMA_(a, b, c) fmaf(a, b, c)
#else
#define LT_FMA_(a, b, c) ((a) * (b) + (c))
#endif
  lt_f32u ax, y;
  ax.f = x;
  const uint32_t sign = ax.u & 0x80000000u;
  ax.u &= 0x7fffffffu;
  const float t = ax.f, s = x * x;
  float r = LT_FMA_(-1.72853470e-5f, t, 3.83197126e-4f);
  const float u = LT_FMA_(-3.88396438e-3f, t, 2.42546219e-2f);
  r = LT_FMA_(r, s, u);
  r = LT_FMA_(r, t, -1.06777877e-1f);
  r = LT_FMA_(r, t, -6.34846687e-1f);
  r = LT_FMA_(r, t, -1.28717512e-1f);
  r = LT_FMA_(r, t, -t);
  y.f = 1.0f - lt_expf(r);
  y.u |= sign;
  float p = -5.96761703e-4f;
  p = LT_FMA_(p, s, 4.99119423e-3f);
  p = LT_FMA_(p, s, -2.67681349e-2f);
  p = LT_FMA_(p, s, 1.12819925e-1f);
  p = LT_FMA_(p, s, -3.76125336e-1f);
  p = LT_FMA_(p, s, 1.28379166e-1f);
  p = LT_FMA_(p, x, x);
#undef LT_FMA_
  return lt_self(t > 0.927734375f, y.f, p);
}


/* expm1(x) = exp(x) - 1 without cancellation: x = n ln2 + r as in lt_expf, expm1(r) by its Taylor
   series to r^8 (the next term is under 2^-30 relative at |r| = ln2/2), then 2^n (expm1(r) + 1) - 1
   arranged so that the 1 cancels exactly: (expm1(r) + (1 - 2^-n)) 2^n for n from 0 to 24 (1 - 2^-n
   exact), ((expm1(r) - 2^-n) + 1) 2^n above, expm1(r) 2^n + (2^n - 1) for n < 0 (2^n - 1 exact down
   to n = -24, rounding to -1 beyond, where it no longer matters). Both are computed and one selected,
   so that the loop vectorises (glibc's expm1f does not: expm1 of 64 x 512 floats 358 us, PyTorch
   60). At most 1.32 ulp with fused multiply-adds, 1.45 without (over every float; the worst where
   n = 1 adds 1/2), checked by spec/c/test_core.c; +-0 and NaN are passed through, -inf gives
   -1, overflow inf. */
LT_HD float lt_expm1f(float x) {
#ifdef __FMA__
#define LT_FMA_(a, b, c) fmaf(a, b, c)
#else
#define LT_FMA_(a, b, c) ((a) * (b) + (c))
#endif
  lt_f32u a, b, m;
  int32_t n;
  const float r = lt_exp_reduce_(x, &n);
  float q = 2.48015873e-5f; /* 1 / 8! */
  q = LT_FMA_(q, r, 1.98412698e-4f);
  q = LT_FMA_(q, r, 1.38888889e-3f);
  q = LT_FMA_(q, r, 8.33333333e-3f);
  q = LT_FMA_(q, r, 4.16666667e-2f);
  q = LT_FMA_(q, r, 1.66666667e-1f);
  q = LT_FMA_(q, r, 0.5f);
  const float p = LT_FMA_(r * r, q, r); /* expm1(r) */
  /* 2^n in two halves (n from -150 to 128) */
  const int32_t n1 = n >> 1;
  a.u = (uint32_t)(n1 + 127) << 23;
  b.u = (uint32_t)(n - n1 + 127) << 23;
  /* 2^-n for n >= 0 (2^-126 for larger n, where it no longer matters) */
  const int32_t nc = n < 126 ? n : 126;
  m.u = (uint32_t)(127 - (nc > 0 ? nc : 0)) << 23;
  const float up = lt_self(n > 24, (p - m.f) + 1.0f, p + (1.0f - m.f)) * a.f * b.f;
  const float s = a.f * b.f;
  const float down = LT_FMA_(p, s, s - 1.0f);
#undef LT_FMA_
  float y = lt_self(n >= 0, up, down);
  y = lt_self(x == 0.0f, x, y); /* -0 stays -0 */
  return lt_self(x != x, x, y);
}

/* log(x) for x > 0: x = 2^k m with m in [sqrt(2)/2, sqrt(2)), f = m - 1, s = f / (2 + f), and
   log(1 + f) = f - s (f - R(s^2)) in one of two arrangements (as fdlibm's logf, e_logf.c, whose
   reduction, arrangements and minimax coefficients these are), both computed and one selected so
   that the loop vectorises (glibc's logf does not: 64 x 512 floats 129 us, PyTorch 39).
   Subnormals are scaled by 2^25 first; log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN is
   passed through. At most 1 ulp, checked by spec/c/test_core.c. */
LT_HD float lt_logf(float x) {
  lt_f32u v;
  v.f = x;
  const int sub = v.u < 0x00800000u; /* +0 and the positive subnormals */
  v.f = lt_self(sub, x * 33554432.0f, x);
  int32_t k = (int32_t)(v.u >> 23) - 127 - (sub ? 25 : 0);
  const uint32_t hx = v.u & 0x007fffffu;
  const uint32_t i = (hx + 0x4afb0du) & 0x800000u; /* m >= sqrt(2): halve it */
  v.u = hx | (i ^ 0x3f800000u);
  k += (int32_t)(i >> 23);
  const float f = v.f - 1.0f, s = f / (2.0f + f), dk = (float)k;
  const float z = s * s, w = z * z;
  const float t1 = w * (0.40000972152f + w * 0.24279078841f);
  const float t2 = z * (0.66666662693f + w * 0.28498786688f);
  const float R = t2 + t1, hfsq = 0.5f * f * f;
  const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f;
  const float a = dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
  const float b = dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
  const int32_t sel = ((int32_t)hx - (0x6147a << 3)) | ((0x6b851 << 3) - (int32_t)hx);
  float y = lt_self(sel > 0, a, b);
  y = lt_self(x == 0.0f, -INFINITY, y);
  y = lt_self(x < 0.0f, NAN, y);
  return lt_self((x != x) | (x == INFINITY), x + x, y);
}

/* log(1 + x): with u = 1 + x rounded, 1 + x = u + d exactly for d = x - (u - 1), so log(1 + x) =
   log(u) + d / u to the first order (d is tiny against u); x itself where u rounds to 1. At most 2
   ulp, checked by spec/c/test_core.c; -1 gives -inf, below it NaN, inf itself. */
LT_HD float lt_log1pf(float x) {
  const float u = 1.0f + x, d = x - (u - 1.0f);
  const float y = lt_logf(u) + lt_self((u > 0.0f) & (u < INFINITY), d / u, 0.0f); /* (& and |, not && and ||: no branch) */
  return lt_self(u == 1.0f, x, y);
}

#endif
