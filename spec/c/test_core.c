/* C unit tests of the core's foundations: float16/bfloat16 conversions (exhaustive), type
   promotion, device strings, the caching allocator's statistics, views and elementwise ops
   through the C API. Prints one line per failed check and ends with `N passed, N failed`. */
#include "core/device.h"
#include "core/dtype.h"
#include "core/elementwise.h"
#include "core/tensor.h"
#include "kernels/fastmath.h"
#include "kernels/half.h"
#include "kernels/cpu/elementwise.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                         \
  do {                                           \
    if (cond) passed++;                          \
    else {                                       \
      failed++;                                  \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                       \
      printf("\n");                              \
    }                                            \
  } while (0)

/* reference: round a double to the nearest value of a binary format with `mant` fraction bits,
   exponent range [emin, emax], ties to even, overflow to infinity (computed in double, exactly) */
static double round_format(double x, int mant, int emin, int emax) {
  if (x != x || isinf(x) || x == 0) return x;
  double ax = fabs(x);
  int e;
  frexp(ax, &e); /* ax = f * 2^e, f in [0.5, 1): exponent of the leading bit is e - 1 */
  int exp = e - 1;
  if (exp < emin) exp = emin; /* subnormal: fixed quantum */
  double q = ldexp(1.0, exp - mant); /* spacing of representable values near ax */
  double r = nearbyint(ax / q) * q;   /* ties to even in the default rounding mode */
  double maxv = ldexp(2.0 - ldexp(1.0, -mant), emax);
  if (r > maxv) r = INFINITY;
  return x < 0 ? -r : r;
}

static void test_half(void) {
  /* every half value converts to float and back to itself (NaNs stay NaN) */
  int bad = 0;
  for (uint32_t u = 0; u < 65536; u++) {
    lt_half h = {(uint16_t)u};
    float f = lt_half_to_float(h);
    lt_half back = lt_float_to_half(f);
    bool nan = (u & 0x7c00) == 0x7c00 && (u & 0x3ff);
    if (nan ? !(f != f) || (back.bits & 0x7fff) <= 0x7c00 : back.bits != u) bad++;
  }
  CHECK(bad == 0, "float16 round trip: %d values differ", bad);
  bad = 0;
  for (uint32_t u = 0; u < 65536; u++) {
    lt_bfloat16 b = {(uint16_t)u};
    float f = lt_bf16_to_float(b);
    lt_bfloat16 back = lt_float_to_bf16(f);
    bool nan = (u & 0x7f80) == 0x7f80 && (u & 0x7f);
    if (nan ? !(f != f) : back.bits != u) bad++;
  }
  CHECK(bad == 0, "bfloat16 round trip: %d values differ", bad);
  /* float -> half/bf16 against the reference rounding, over a sweep of float bit patterns that
     covers every exponent (and the halfway points between neighbours) */
  int bad_h = 0, bad_b = 0;
  for (uint64_t u = 0; u < 0x100000000ull; u += 4099) {
    uint32_t bits = (uint32_t)u;
    float f;
    memcpy(&f, &bits, 4);
    if (f != f) continue;
    double want_h = round_format(f, 10, -14, 15);
    double got_h = lt_half_to_float(lt_float_to_half(f));
    if (!(got_h == want_h) && !(got_h == 0 && want_h == 0)) bad_h++;
    double want_b = round_format(f, 7, -126, 127);
    double got_b = lt_bf16_to_float(lt_float_to_bf16(f));
    if (!(got_b == want_b) && !(got_b == 0 && want_b == 0)) bad_b++;
  }
  CHECK(bad_h == 0, "float -> float16 rounding: %d values differ from the reference", bad_h);
  CHECK(bad_b == 0, "float -> bfloat16 rounding: %d values differ from the reference", bad_b);
  /* the halfway cases exactly */
  CHECK(lt_float_to_half(2049.0f).bits == lt_float_to_half(2048.0f).bits, "2049 -> 2048 (tie to even)");
  CHECK(lt_half_to_float(lt_float_to_half(2051.0f)) == 2052.0f, "2051 -> 2052 (tie to even)");
  CHECK(lt_half_to_float(lt_float_to_half(65520.0f)) == INFINITY, "65520 overflows to inf");
  CHECK(lt_half_to_float(lt_float_to_half(65519.99f)) == 65504.0f, "65519.99 -> 65504");
  CHECK(lt_bf16_to_float(lt_float_to_bf16(257.0f)) == 256.0f, "bf16 257 -> 256");
}

static void test_promotion(void) {
  struct { lt_dtype a, b, want; } cases[] = {
      {LT_UINT8, LT_INT8, LT_INT16}, {LT_FLOAT16, LT_BFLOAT16, LT_FLOAT32}, {LT_BOOL, LT_UINT8, LT_UINT8},
      {LT_INT64, LT_FLOAT16, LT_FLOAT16}, {LT_INT32, LT_INT64, LT_INT64}, {LT_FLOAT64, LT_FLOAT32, LT_FLOAT64},
      {LT_BOOL, LT_BOOL, LT_BOOL}, {LT_INT8, LT_BFLOAT16, LT_BFLOAT16},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK(lt_promote_types(cases[i].a, cases[i].b) == cases[i].want, "promote %s %s", lt_dtype_name(cases[i].a),
          lt_dtype_name(cases[i].b));
    CHECK(lt_promote_types(cases[i].b, cases[i].a) == cases[i].want, "promote is symmetric");
  }
  lt_result_type_t r;
  lt_result_type_init(&r);
  lt_result_type_add_tensor(&r, LT_INT32, 1);
  lt_result_type_add_scalar(&r, true, false);
  CHECK(lt_result_type_get(&r) == LT_FLOAT32, "int32 tensor + float number is float32");
  lt_result_type_init(&r);
  lt_result_type_add_tensor(&r, LT_FLOAT16, 2);
  lt_result_type_add_tensor(&r, LT_FLOAT64, 0);
  CHECK(lt_result_type_get(&r) == LT_FLOAT16, "a 0-dim float64 does not widen float16");
  lt_result_type_init(&r);
  lt_result_type_add_tensor(&r, LT_BOOL, 1);
  lt_result_type_add_scalar(&r, false, false);
  CHECK(lt_result_type_get(&r) == LT_INT64, "bool tensor + integer number is int64");
}

static void test_devices(void) {
  lt_device_t d;
  CHECK(lt_device_parse("cpu:1", &d) == LT_OK && d.type == LT_CPU && d.index == 1, "cpu:1");
  CHECK(lt_device_parse("cpu", &d) == LT_OK && d.index == -1, "cpu has no index");
  const char *bad[] = {"", "cpu:", "cpu:-1", "cpu:01", "cpu:x", "cpu:1:2", " cpu", "gpu", "CPU", "cpu:99999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(lt_device_parse(bad[i], &d) == LT_ERR && strstr(lt_last_error(), "torch.device"), "'%s' rejected", bad[i]);
  char buf[32];
  CHECK(strcmp(lt_device_format(lt_device(LT_CPU, 3), buf, sizeof buf), "cpu:3") == 0, "format cpu:3");
  CHECK(lt_device_resolve(lt_device(LT_CPU, 5), &d) == LT_ERR && strstr(lt_last_error(), "does not exist"),
        "cpu:5 does not exist with one device");
}

static void test_allocator(void) {
  lt_device_t d = lt_device(LT_CPU, 0);
  lt_memory_empty_cache(d);
  lt_memory_stats_t s0, s1, s2;
  lt_memory_stats(d, &s0);
  lt_block_t *b = lt_alloc(d, 4000);
  CHECK(b && lt_block_size(b) == 4096, "4000 bytes round to a 4096-byte block");
  lt_memory_stats(d, &s1);
  CHECK(s1.allocated == s0.allocated + 4096, "allocated grows by the block");
  CHECK(s1.reserved >= s1.allocated, "reserved >= allocated");
  void *p = lt_block_ptr(b);
  lt_free(b);
  lt_block_t *c = lt_alloc(d, 4096);
  CHECK(c && lt_block_ptr(c) == p, "a freed block is reused from the cache");
  lt_memory_stats(d, &s2);
  CHECK(s2.num_device_allocs == s1.num_device_allocs, "the reuse asked the device for nothing");
  lt_free(c);
  lt_memory_empty_cache(d);
  lt_memory_stats(d, &s2);
  CHECK(s2.allocated == s0.allocated && s2.reserved == s2.allocated, "empty_cache returns cached blocks");
  CHECK(lt_alloc(d, (size_t)1 << 62) == NULL && strstr(lt_last_error(), "out of memory"), "huge request fails cleanly");
  lt_memory_stats(d, &s2);
  CHECK(s2.num_ooms >= 1, "the failure is counted");
}

static void test_views_and_ops(void) {
  int64_t sz[2] = {2, 3};
  lt_tensor_t *a = lt_empty(2, sz, LT_FLOAT32, lt_device(LT_CPU, 0));
  float *pa = lt_data(a);
  for (int i = 0; i < 6; i++) pa[i] = (float)(i + 1);
  /* a transposed view: sizes [3, 2], strides [1, 3] */
  int64_t tsz[2] = {3, 2}, tst[2] = {1, 3};
  lt_tensor_t *t = lt_view_geometry(a, 2, tsz, tst, 0);
  CHECK(t && !lt_is_contiguous(t), "transposed view");
  lt_tensor_t *c = lt_binary(LT_BINARY_mul, lt_tensor_operand(t), lt_float_operand(2.0), 1, NULL);
  CHECK(c && lt_is_contiguous(c) && c->sizes[0] == 3, "mul by a number");
  const float want[6] = {2, 8, 4, 10, 6, 12};
  bool ok = true;
  for (int i = 0; i < 6; i++) ok = ok && ((float *)lt_data(c))[i] == want[i];
  CHECK(ok, "transposed values doubled in row-major order");
  int64_t bad_sz[2] = {3, 3};
  CHECK(lt_view_geometry(a, 2, bad_sz, tst, 0) == NULL && strstr(lt_last_error(), "outside its storage"),
        "a view beyond the storage is refused");
  lt_tensor_t *e = lt_binary(LT_BINARY_add, lt_tensor_operand(a), lt_tensor_operand(t), 1, NULL);
  CHECK(e == NULL && strstr(lt_last_error(), "add") && strstr(lt_last_error(), "[2, 3]"), "broadcast error names op and shapes");
  lt_release(c);
  lt_release(t);
  lt_release(a);
}

/* the error of got against the exact want, in units of the last place of float at want (the
   spacing of floats around want's exponent; subnormals share one spacing) */
static double ulp_error(float got, double want) {
  if (want != want) return got != got ? 0 : INFINITY;
  if (isinf(want) || isinf(got)) return (double)got == (double)(float)want ? 0 : INFINITY;
  int e;
  frexp(want == 0 ? ldexp(1.0, -149) : fabs(want), &e);
  int ex = e - 1 < -126 ? -126 : e - 1;
  return fabs((double)got - want) / ldexp(1.0, ex - 23);
}

/* the worst ulp error of f against ref over every float of [lo, hi), into *worst (at *at); the
   count of errors of 1 ulp or more */
static long worst_over(float lo, float hi, float (*f)(float), double (*ref)(double), double *worst, float *at) {
  long over = 0;
  for (float x = lo; x < hi; x = nextafterf(x, INFINITY)) {
    double err = ulp_error(f(x), ref((double)x));
    if (err >= 1) over++;
    if (err > *worst) *worst = err, *at = x;
  }
  return over;
}

static float expf_of(float x) { return lt_expf(x); }
static float tanhf_of(float x) { return lt_tanhf(x); }

/* the worst ulp error of f against ref on every 61st float, into *worst (at *at) */
static void sweep_61st(float (*f)(float), double (*ref)(double), double *worst, float *at) {
  for (uint64_t u = 0; u < (1ull << 32); u += 61) {
    lt_f32u v;
    v.u = (uint32_t)u;
    double err = ulp_error(f(v.f), ref((double)v.f));
    if (err > *worst) *worst = err, *at = v.f;
  }
}

/* the vectorisable float exp of the kernels (kernels/fastmath.h) against double exp: under one
   ulp on every 61st float and on every float where results overflow, are subnormal or underflow */
static void test_expf(void) {
  double worst = 0;
  float worst_x = 0;
  sweep_61st(expf_of, exp, &worst, &worst_x);
  long over = worst_over(-105.0f, -87.0f, expf_of, exp, &worst, &worst_x) +
              worst_over(88.0f, 90.0f, expf_of, exp, &worst, &worst_x);
  CHECK(worst < 1.0 && over == 0, "lt_expf: %.3f ulp at %a (%ld values near the range's ends >= 1 ulp)", worst,
        worst_x, over);
  CHECK(lt_expf(0.0f) == 1.0f && lt_expf(-0.0f) == 1.0f, "exp(0) = 1 exactly");
  CHECK(lt_expf(INFINITY) == INFINITY && lt_expf(-INFINITY) == 0.0f, "exp(inf) = inf, exp(-inf) = 0");
  CHECK(lt_expf(NAN) != lt_expf(NAN), "exp(nan) is nan");
  CHECK(lt_expf(88.72283172607422f) < INFINITY && lt_expf(88.72283935546875f) == INFINITY,
        "exp overflows from 88.72283935546875, the first float whose exp rounds to infinity");
  CHECK(lt_expf(-103.27892f) == 0x1p-149f && lt_expf(-104.0f) == 0.0f, "the smallest subnormal and underflow to 0");
}

/* the worst ulp error of an odd float function f against ref on every 61st float and on every
   float of the ranges (where it changes method, where it reaches its limit), into *worst (at *at);
   how many floats break f(-x) = -f(x) */
static long sweep_odd(float (*f)(float), double (*ref)(double), const float (*ranges)[2], int nranges,
                      double *worst, float *at) {
  long odd = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 61) {
    lt_f32u v;
    v.u = (uint32_t)u;
    float y = f(v.f);
    double err = ulp_error(y, ref((double)v.f));
    if (err > *worst) *worst = err, *at = v.f;
    if (v.f == v.f && f(-v.f) != -y) odd++;
  }
  for (int r = 0; r < nranges; r++) worst_over(ranges[r][0], ranges[r][1], f, ref, worst, at);
  return odd;
}

/* the vectorisable float tanh (kernels/fastmath.h) against double tanh: under 1.5 ulp on every 61st
   float and on every float of [0.5, 0.75] (where it changes method) and of [8.9, 9.1] (where it
   reaches 1); odd (the sign put back, -0 kept), +-1 at the infinities, NaN passed through */
static void test_tanhf(void) {
  double worst = 0;
  float worst_x = 0;
  static const float ranges[][2] = {{0.5f, 0.75f}, {8.9f, 9.1f}};
  long odd = sweep_odd(tanhf_of, tanh, ranges, 2, &worst, &worst_x);
  CHECK(worst < 1.5, "lt_tanhf: %.3f ulp at %a", worst, worst_x);
  CHECK(odd == 0, "lt_tanhf(-x) = -lt_tanhf(x) (%ld floats differ)", odd);
  CHECK(signbit(lt_tanhf(-0.0f)) && lt_tanhf(-0.0f) == 0.0f && !signbit(lt_tanhf(0.0f)), "tanh(-0) = -0, tanh(0) = 0");
  CHECK(lt_tanhf(INFINITY) == 1.0f && lt_tanhf(-INFINITY) == -1.0f && lt_tanhf(9.1f) == 1.0f,
        "tanh(+-inf) = +-1, and 1 from where it rounds to 1");
  CHECK(lt_tanhf(NAN) != lt_tanhf(NAN), "tanh(nan) is nan");
  CHECK(lt_tanhf(0x1p-140f) == 0x1p-140f, "tanh of a subnormal is itself");
}

static float erff_of(float x) { return lt_erff(x); }

/* the vectorisable float erf (kernels/fastmath.h) against double erf: under 1.5 ulp on every 61st
   float, on every float of [0.9, 0.96] (where it changes method), of [3.8, 4] (where it reaches 1)
   and on the subnormals; odd, +-1 at the infinities, NaN passed through */
static void test_erff(void) {
  double worst = 0;
  float worst_x = 0;
  static const float ranges[][2] = {{0.9f, 0.96f}, {3.8f, 4.0f}, {0x1p-149f, 0x1p-126f}};
  long odd = sweep_odd(erff_of, erf, ranges, 3, &worst, &worst_x);
  CHECK(worst < 1.5, "lt_erff: %.3f ulp at %a", worst, worst_x);
  CHECK(odd == 0, "lt_erff(-x) = -lt_erff(x) (%ld floats differ)", odd);
  CHECK(signbit(lt_erff(-0.0f)) && lt_erff(-0.0f) == 0.0f && !signbit(lt_erff(0.0f)), "erf(-0) = -0, erf(0) = 0");
  CHECK(lt_erff(INFINITY) == 1.0f && lt_erff(-INFINITY) == -1.0f && lt_erff(4.0f) == 1.0f,
        "erf(+-inf) = +-1, and 1 from where it rounds to 1");
  CHECK(lt_erff(NAN) != lt_erff(NAN), "erf(nan) is nan");
}

static float logf_of(float x) { return lt_logf(x); }
static float log1pf_of(float x) { return lt_log1pf(x); }

/* the vectorisable float log and log1p (kernels/fastmath.h) against double log and log1p: every
   61st float (negative ones NaN), every float of [0.7, 1.5] (around 1, where log switches its
   arrangement) and the subnormals for log; for log1p the floats near 0 where 1 + x rounds to 1 or
   nearly, and those near -1 */
static void test_logf(void) {
  double worst = 0, worst1 = 0;
  float at = 0, at1 = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 61) {
    lt_f32u v;
    v.u = (uint32_t)u;
    double e = ulp_error(lt_logf(v.f), log((double)v.f));
    if (e > worst) worst = e, at = v.f;
    e = ulp_error(lt_log1pf(v.f), log1p((double)v.f));
    if (e > worst1) worst1 = e, at1 = v.f;
  }
  worst_over(0.7f, 1.5f, logf_of, log, &worst, &at);
  worst_over(0x1p-149f, 0x1p-126f, logf_of, log, &worst, &at);
  worst_over(0x1p-26f, 0x1p-21f, log1pf_of, log1p, &worst1, &at1);
  worst_over(-0x1p-21f, -0x1p-26f, log1pf_of, log1p, &worst1, &at1);
  worst_over(-1.0f, -0.99f, log1pf_of, log1p, &worst1, &at1);
  CHECK(worst < 1.0, "lt_logf: %.3f ulp at %a", worst, at);
  CHECK(worst1 < 2.0, "lt_log1pf: %.3f ulp at %a", worst1, at1);
  CHECK(lt_logf(1.0f) == 0.0f && lt_logf(0.0f) == -INFINITY && lt_logf(-0.0f) == -INFINITY,
        "log(1) = 0, log(+-0) = -inf");
  CHECK(lt_logf(-1.0f) != lt_logf(-1.0f) && lt_logf(-INFINITY) != lt_logf(-INFINITY) && lt_logf(NAN) != lt_logf(NAN),
        "log of a negative number, of -inf and of NaN is NaN");
  CHECK(lt_logf(INFINITY) == INFINITY && lt_logf(0x1p-149f) == (float)log(0x1p-149), "log(inf) = inf, the smallest subnormal");
  CHECK(lt_log1pf(-1.0f) == -INFINITY && lt_log1pf(-2.0f) != lt_log1pf(-2.0f) && lt_log1pf(INFINITY) == INFINITY &&
            lt_log1pf(NAN) != lt_log1pf(NAN),
        "log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(inf) = inf, NaN");
  CHECK(lt_log1pf(0x1p-30f) == 0x1p-30f && signbit(lt_log1pf(-0.0f)), "log1p(x) = x where 1 + x rounds to 1, -0 kept");
}

static float expm1f_of(float x) { return lt_expm1f(x); }

/* the vectorisable float expm1 (kernels/fastmath.h) against double expm1: under 1.35 ulp (1.5
   without fused multiply-adds) on every 61st float, on every float of [-0.4, 0.4] (where the
   reduction changes n between -1, 0 and 1 and the series alone serves), of [16, 18] (where 1 - 2^-n
   stops being exact) and near the ends of the range (-1 and overflow); -0 kept, -inf gives -1, inf
   inf, NaN passed through */
static void test_expm1f(void) {
  double worst = 0;
  float at = 0;
  sweep_61st(expm1f_of, expm1, &worst, &at);
  worst_over(-0.4f, 0.4f, expm1f_of, expm1, &worst, &at);
  worst_over(16.0f, 18.0f, expm1f_of, expm1, &worst, &at);
  worst_over(-20.0f, -16.0f, expm1f_of, expm1, &worst, &at);
  worst_over(88.0f, 89.5f, expm1f_of, expm1, &worst, &at);
#ifdef __FMA__
  const double bound = 1.35; /* every float: 1.318 at 0x1.6c0cbap-2 */
#else
  const double bound = 1.5; /* every float: 1.450 at 0x1.643c6ap-2 */
#endif
  CHECK(worst < bound, "lt_expm1f: %.3f ulp at %a (bound %.2f)", worst, at, bound);
  CHECK(signbit(lt_expm1f(-0.0f)) && lt_expm1f(-0.0f) == 0.0f && !signbit(lt_expm1f(0.0f)), "expm1(-0) = -0, expm1(0) = 0");
  CHECK(lt_expm1f(-INFINITY) == -1.0f && lt_expm1f(-200.0f) == -1.0f && lt_expm1f(INFINITY) == INFINITY &&
            lt_expm1f(NAN) != lt_expm1f(NAN),
        "expm1(-inf) = -1, expm1(inf) = inf, NaN");
  CHECK(lt_expm1f(88.72283172607422f) < INFINITY && lt_expm1f(88.72283935546875f) == INFINITY,
        "expm1 overflows where exp does");
  CHECK(lt_expm1f(0x1p-140f) == 0x1p-140f && lt_expm1f(0x1p-30f) == 0x1p-30f, "expm1(x) = x for tiny x");
}

/* Large contiguous outputs of the cheap binary ops are written with streamed (non-temporal)
   stores a cache line at a time (kernels/cpu/elementwise.c). Every dtype, outputs at 0, 1 and 3
   elements past a line boundary (plain stores up to the first boundary), odd lengths (a tail),
   tensor and scalar second operands: the result must equal, bit for bit, the same loop run over
   pieces small enough for plain stores; and float32 add against x + alpha * y computed here. */
/* 64-byte aligned memory: C11's aligned_alloc wants a size that is a multiple of the alignment
   (AddressSanitizer refuses others) */
static void *alloc64(size_t n) { return aligned_alloc(64, (n + 63) & ~(size_t)63); }

static void test_streamed_stores(void) {
  const lt_binary_op ops[] = {LT_BINARY_add, LT_BINARY_sub, LT_BINARY_mul, LT_BINARY_div, LT_BINARY_maximum};
  const int64_t piece = 4096;
  for (int dt = 0; dt < LT_NDTYPES; dt++) {
    size_t size = lt_dtype_size((lt_dtype)dt);
    int64_t n = (int64_t)((16u << 20) / size) + 37; /* past LT_STREAM_BYTES on any thread count */
    char *x = alloc64((size_t)n * size + 64), *y = alloc64((size_t)n * size + 64);
    char *got = alloc64((size_t)n * size + 256), *want = alloc64((size_t)n * size + 256);
    float *fx = malloc((size_t)n * sizeof(float)), *fy = malloc((size_t)n * sizeof(float));
    if (!x || !y || !got || !want || !fx || !fy) {
      CHECK(0, "streamed stores: out of memory");
      free(x), free(y), free(got), free(want), free(fx), free(fy);
      return;
    }
    for (int64_t i = 0; i < n; i++) fx[i] = (float)(i * 7919 % 101), fy[i] = (float)(i % 97 + 1);
    lt_loop_fn cast = lt_cpu_cast_loop((lt_dtype)dt, LT_FLOAT32);
    int64_t cs[2] = {(int64_t)size, sizeof(float)};
    char *cd[2] = {x, (char *)fx};
    cast(cd, cs, n, NULL);
    cd[0] = y, cd[1] = (char *)fy;
    cast(cd, cs, n, NULL);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      lt_loop_fn loop = lt_cpu_binary_loop(ops[k], (lt_dtype)dt);
      if (!loop) continue; /* div has no integer loop */
      lt_binary_ctx_t ctx = {2.0, 2};
      for (int scalar = 0; scalar < 2; scalar++) {
        for (int off = 0; off < 4; off += off == 0 ? 1 : 2) {
          int64_t m = n - off;
          char *g = got + off * size, *w = want + off * size;
          int64_t st[3] = {(int64_t)size, (int64_t)size, scalar ? 0 : (int64_t)size};
          memset(got, 0x5a, (size_t)n * size + 256);
          memset(want, 0x5a, (size_t)n * size + 256);
          char *d[3] = {g, x, y};
          loop(d, st, m, &ctx);
          for (int64_t b = 0; b < m; b += piece) {
            char *dp[3] = {w + b * size, x + b * size, scalar ? y : y + b * size};
            loop(dp, st, m - b < piece ? m - b : piece, &ctx);
          }
          CHECK(memcmp(got, want, (size_t)n * size + 256) == 0, "streamed %s (op %d, %s operand, offset %d) equals plain stores",
                lt_dtype_name((lt_dtype)dt), (int)ops[k], scalar ? "scalar" : "tensor", off);
          if (dt == LT_FLOAT32 && ops[k] == LT_BINARY_add) {
            long bad = 0;
            for (int64_t i = 0; i < m; i++)
              if (((float *)g)[i] != fx[i] + 2.0f * (scalar ? fy[0] : fy[i])) bad++;
            CHECK(bad == 0, "streamed float32 add: %ld of %ld wrong (offset %d)", bad, (long)m, off);
          }
        }
      }
    }
    free(x), free(y), free(got), free(want), free(fx), free(fy);
  }
}

int main(void) {
  test_half();
  test_expf();
  test_expm1f();
  test_tanhf();
  test_erff();
  test_logf();
  test_streamed_stores();
  test_promotion();
  test_devices();
  test_allocator();
  test_views_and_ops();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
