/* Float math written so that compilers vectorise it (glibc's expf does not vectorise without
   -ffast-math). Accurate to about 1 ulp over the whole range, with IEEE handling of NaN, infinities,
   overflow and subnormal results. Shared by the kernels of every backend. */
#ifndef LT_FASTMATH_H
#define LT_FASTMATH_H

#include "lt_kernel.h"

typedef union { uint32_t u; float f; } lt_f32u;

LT_HD float lt_pow2i(int n) { /* 2^n for n in [-126, 127] */
  lt_f32u c;
  c.u = (uint32_t)(n + 127) << 23;
  return c.f;
}

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

/* Cephes' expf: exp(x) = 2^n * exp(r), |r| <= ln2/2, exp(r) by a degree-6 polynomial. */
LT_HD float lt_expf(float x) {
  float xc = lt_self(x > 89.0f, 89.0f, x);
  xc = lt_self(xc < -104.0f, -104.0f, xc);
  xc = lt_self(xc != xc, 0.0f, xc); /* NaN: computed on 0, replaced below */
  float fx = xc * 1.44269504088896341f + 0.5f;
  int n = (int)fx;
  n -= (float)n > fx; /* floor */
  float fn = (float)n;
  float r = xc - fn * 0.693359375f - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  /* 2^n in two halves so that subnormal results and n = 128 are exact */
  int n1 = n >> 1;
  float y = p * lt_pow2i(n1) * lt_pow2i(n - n1);
  y = lt_self(x > 88.72283935546875f, __builtin_inff(), y);
  y = lt_self(x < -103.972084045410f, 0.0f, y);
  return lt_self(x != x, x, y);
}

#endif
