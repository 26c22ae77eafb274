/* PyTorch 1.13's CPU generator and CPU distribution kernels, reproduced value for value.

   Engine: at::mt19937 (ATen/core/MT19937RNGEngine.h): the reference MT19937 seeded through the
   standard 32-bit init with the seed's low 32 bits; random() is one draw, random64() is
   (first draw << 32) | second draw.

   Kernels (ATen/native/cpu/DistributionTemplates.h, ATen/core/DistributionsHelper.h,
   ATen/core/TransformationHelper.h), as GCC 12 compiled them into Debian's libtorch 1.13.1 for the
   AVX2 CPU capability: the one PyTorch picks on any x86-64 CPU with AVX2, AVX-512 ones included
   (ATEN_CPU_CAPABILITY=avx512 gives the same values). That build contracts a * b + c into fused
   multiply-adds, so the same happens here, written out with fma/fmaf:
   - uniform: x = (random() & (2^d - 1)) * 2^-d with d = 24 (float32), 11 (float16), 8 (bfloat16),
     or (random64() & (2^53 - 1)) * 2^-53 for float64; then fma(x, to - from, from), with from and
     to first converted to the dtype (through float for float16/bfloat16) and to - from rounded to it.
   - normal, n >= 16: normal_fill: n uniforms in [0, 1), then Box-Muller on blocks of 16 (u1 =
     1 - data[j], u2 = data[j + 8]); when n % 16 != 0 the last 16 are drawn again and transformed.
     float32 goes through normal_fill_16_AVX2, whose log and sincos are the Cephes polynomials of
     avx_mathfun.h: normal16_f32 repeats its arithmetic lane by lane, with the fused multiply-adds
     GCC formed there, and normal16_f32_avx2 is the same instruction sequence for CPUs with AVX2 and
     FMA (both checked equal to the compiled PyTorch code on all 2^24 inputs of each of u1 and u2).
     float64 / float16 / bfloat16 use libm's log, sqrt, cos, sin in double / float / float with
     every step rounded to bfloat16 (c10/util/BFloat16-math.h), see normal16_*.
   - normal, n < 16: at::normal_distribution<double> per element, which draws two uniform doubles and
     caches the second Box-Muller value (r * sin theta) in the generator for the next small call;
     the normal_fill path neither uses nor clears that cache.
   - randint: (random() % range) + low, or random64() when range >= 2^32 and the dtype is int64,
     float64, float32 or bfloat16.
   - randperm: i = 0 .. n-2: z = random() % (n - i), swap(r[i], r[i + z]), for every n.
   - bernoulli_(p): uniform double (random64) < p. This is the kernel of PyTorch builds without MKL
     (Debian's). Builds with MKL (the official wheels) draw one random() as the seed of an MKL
     VSL_BRNG_MCG31 stream and use viRngBernoulli, which is not reproduced here. PyTorch refuses
     float16 here; lutorch accepts it (same algorithm).

   Limits of "the same numbers": PyTorch on a CPU without AVX2 (capability "default") computes
   float32 randn for n >= 16 with libm instead of the polynomials and does not fuse, so randn
   (float32, n >= 16), uniform_(from, to) and normal_(mean, std) with general bounds differ there in
   the last bits. float64 / float16 / bfloat16 normal values go through libm's log/sin/cos, equal to
   PyTorch's when both use the same libm (glibc here).

   Every operation not written as fma must stay unfused: GCC's default in ISO C mode (-std=c11),
   forced below for other modes and compilers. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/random.h"

#include "core/error.h"
#include "kernels/half.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MT_N 624
#define MT_M 397

struct lt_generator {
  pthread_mutex_t mu;
  uint64_t seed;
  int32_t left;
  uint32_t next;
  uint32_t state[MT_N];
  bool has_next_double; /* the cached Box-Muller value of normal_distribution<double> */
  double next_double;
  bool has_next_float; /* normal_distribution<float>'s: unused by the CPU kernels, kept for state */
  float next_float;
};

/* ------------------------------------------------------------------------------------------ */
/* Engine                                                                                      */

static void mt_seed(lt_generator_t *g, uint64_t seed) {
  g->seed = seed;
  g->state[0] = (uint32_t)(seed & 0xffffffffu);
  for (uint32_t j = 1; j < MT_N; j++)
    g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + j;
  g->left = 1;
  g->next = 0;
  g->has_next_double = false;
  g->next_double = 0.0;
  g->has_next_float = false;
  g->next_float = 0.0f;
}

static inline uint32_t mt_twist(uint32_t u, uint32_t v) {
  return (((u & 0x80000000u) | (v & 0x7fffffffu)) >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
}

static void mt_next_state(lt_generator_t *g) {
  uint32_t *p = g->state;
  g->left = MT_N;
  g->next = 0;
  for (int j = MT_N - MT_M + 1; --j; p++) *p = p[MT_M] ^ mt_twist(p[0], p[1]);
  for (int j = MT_M; --j; p++) *p = p[MT_M - MT_N] ^ mt_twist(p[0], p[1]);
  *p = p[MT_M - MT_N] ^ mt_twist(p[0], g->state[0]);
}

/* Mersenne Twister's tempering of a state word */
static inline uint32_t mt_temper(uint32_t y) {
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

/* CPUGeneratorImpl::random() */
static inline uint32_t rnd32(lt_generator_t *g) {
  if (--g->left == 0) mt_next_state(g);
  return mt_temper(g->state[g->next++]);
}

/* out[0..n) = what n calls of rnd32 return, in order, the state twisted where they would twist it:
   the words up to the next twist tempered in one vectorised pass */
static void rnd32_bulk(lt_generator_t *g, uint32_t *out, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    if (g->left <= 1) { /* this call twists */
      out[i++] = rnd32(g);
      continue;
    }
    int64_t k = (int64_t)g->left - 1;
    if (k > n - i) k = n - i;
    const uint32_t *st = g->state + g->next;
    for (int64_t j = 0; j < k; j++) out[i + j] = mt_temper(st[j]);
    g->next += (int32_t)k;
    g->left -= (int32_t)k;
    i += k;
  }
}

/* CPUGeneratorImpl::random64() */
static inline uint64_t rnd64(lt_generator_t *g) {
  uint32_t hi = rnd32(g);
  uint32_t lo = rnd32(g);
  return ((uint64_t)hi << 32) | lo;
}

/* The x of transformation::uniform_real, in [0, 1), per dtype */
static inline float word_u01_f32(uint32_t w) { return (float)(w & 0xffffffu) * 0x1p-24f; }
static inline double words_u01_f64(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}
static inline float u01_f32(lt_generator_t *g) { return word_u01_f32(rnd32(g)); }
static inline double u01_f64(lt_generator_t *g) {
  uint32_t hi = rnd32(g);
  return words_u01_f64(hi, rnd32(g));
}
static inline float u01_f16(lt_generator_t *g) { return (float)(rnd32(g) & 0x7ffu) * 0x1p-11f; }
static inline float u01_bf16(lt_generator_t *g) { return (float)(rnd32(g) & 0xffu) * 0x1p-8f; }

/* o[0..n) = n draws of u01_f32 / u01_f64, the words drawn in blocks (rnd32_bulk) */
static void u01_fill_f32(lt_generator_t *g, float *o, int64_t n) {
  uint32_t w[512];
  for (int64_t i0 = 0; i0 < n; i0 += 512) {
    const int m = n - i0 < 512 ? (int)(n - i0) : 512;
    rnd32_bulk(g, w, m);
    for (int j = 0; j < m; j++) o[i0 + j] = word_u01_f32(w[j]);
  }
}
static void u01_fill_f64(lt_generator_t *g, double *o, int64_t n) {
  uint32_t w[1024]; /* two words an element, the high one first */
  for (int64_t i0 = 0; i0 < n; i0 += 512) {
    const int m = n - i0 < 512 ? (int)(n - i0) : 512;
    rnd32_bulk(g, w, 2 * (int64_t)m);
    for (int j = 0; j < m; j++) o[i0 + j] = words_u01_f64(w[2 * j], w[2 * j + 1]);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Generators                                                                                  */

static lt_generator_t default_gen = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_init(void) { mt_seed(&default_gen, LT_DEFAULT_SEED); }

static _Thread_local lt_generator_t *thread_gen;

lt_generator_t *lt_default_generator(void) {
  if (thread_gen) return thread_gen;
  pthread_once(&default_once, default_init);
  return &default_gen;
}

lt_generator_t *lt_set_thread_generator(lt_generator_t *g) {
  lt_generator_t *prev = thread_gen;
  thread_gen = g;
  return prev;
}

lt_generator_t *lt_generator_new(uint64_t seed) {
  lt_generator_t *g = malloc(sizeof *g);
  if (!g) {
    lt_error("generator: out of memory");
    return NULL;
  }
  if (pthread_mutex_init(&g->mu, NULL) != 0) {
    free(g);
    lt_error("generator: cannot create its mutex");
    return NULL;
  }
  mt_seed(g, seed);
  return g;
}

void lt_generator_free(lt_generator_t *g) {
  if (!g || g == &default_gen) return;
  pthread_mutex_destroy(&g->mu);
  free(g);
}

static inline void gen_lock(const lt_generator_t *g) { pthread_mutex_lock((pthread_mutex_t *)&g->mu); }
static inline void gen_unlock(const lt_generator_t *g) { pthread_mutex_unlock((pthread_mutex_t *)&g->mu); }

void lt_generator_seed(lt_generator_t *g, uint64_t seed) {
  gen_lock(g);
  mt_seed(g, seed);
  gen_unlock(g);
}

uint64_t lt_generator_initial_seed(const lt_generator_t *g) {
  gen_lock(g);
  uint64_t s = g->seed;
  gen_unlock(g);
  return s;
}

/* ------------------------------------------------------------------------------------------ */
/* State bytes: PyTorch's CPUGeneratorImplState (x86-64 layout, little-endian)
     0  uint64 the_initial_seed      5016 double normal_x (0)
     8  int32  left                  5024 double normal_y (the cached normal value)
    12  int32  seeded                5032 double normal_rho (0)
    16  uint64 next                  5040 int32  normal_is_valid
    24  uint64 state[624]            5048 float  next_float_normal_sample
                                     5052 bool   is_next_float_normal_sample_valid
   The legacy layout (5048 bytes) stops before next_float_normal_sample and caches its normal value
   as normal_rho * sin(2 pi normal_x). */

#define ST_SIZE 5056
#define ST_SIZE_LEGACY 5048

size_t lt_generator_state_size(void) { return ST_SIZE; }

static void put_u64(unsigned char *b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; i++) b[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}
static void put_u32(unsigned char *b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; i++) b[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *b, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | b[off + (size_t)i];
  return v;
}
static uint32_t get_u32(const unsigned char *b, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | b[off + (size_t)i];
  return v;
}
static void put_f64(unsigned char *b, size_t off, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  put_u64(b, off, v);
}
static double get_f64(const unsigned char *b, size_t off) {
  uint64_t v = get_u64(b, off);
  double d;
  memcpy(&d, &v, 8);
  return d;
}

void lt_generator_get_state(const lt_generator_t *g, void *buf) {
  unsigned char *b = buf;
  memset(b, 0, ST_SIZE);
  gen_lock(g);
  put_u64(b, 0, g->seed);
  put_u32(b, 8, (uint32_t)g->left);
  put_u32(b, 12, 1);
  put_u64(b, 16, g->next);
  for (int i = 0; i < MT_N; i++) put_u64(b, 24 + 8 * (size_t)i, g->state[i]);
  if (g->has_next_double) {
    put_f64(b, 5024, g->next_double);
    put_u32(b, 5040, 1);
  }
  if (g->has_next_float) {
    put_u32(b, 5048, lt_f32_bits(g->next_float));
    b[5052] = 1;
  }
  gen_unlock(g);
}

int lt_generator_set_state(lt_generator_t *g, const void *buf, size_t n) {
  const unsigned char *b = buf;
  if (n != ST_SIZE && n != ST_SIZE_LEGACY)
    return lt_error("set_rng_state: expected either a CPUGeneratorImplStateLegacy of size %d or a "
                    "CPUGeneratorImplState of size %d but found the input RNG state size to be %zu",
                    ST_SIZE_LEGACY, ST_SIZE, n);
  if (!b) return lt_error("set_rng_state: NULL state");
  int32_t left = (int32_t)get_u32(b, 8);
  uint32_t seeded = get_u32(b, 12);
  uint32_t next = (uint32_t)get_u64(b, 16);
  /* PyTorch's check (seeded, 0 < left <= 624, next <= 624), plus next + left <= 625, without which
     the engine would read past its state before regenerating it (every state PyTorch produces
     has next + left == 625, or 1 right after seeding). */
  if (!seeded || left <= 0 || left > MT_N || next > MT_N || next + (uint32_t)left > MT_N + 1)
    return lt_error("set_rng_state: Invalid mt19937 state");
  bool has_d = false, has_f = false;
  double d = 0.0;
  float f = 0.0f;
  if (get_u32(b, 5040) != 0) {
    has_d = true;
    if (n == ST_SIZE)
      d = get_f64(b, 5024);
    else
      d = get_f64(b, 5032) * sin(2.0 * 3.14159265358979323846 * get_f64(b, 5016));
  }
  if (n == ST_SIZE && b[5052] != 0) {
    has_f = true;
    f = lt_bits_f32(get_u32(b, 5048));
  }
  gen_lock(g);
  g->seed = get_u64(b, 0);
  g->left = left;
  g->next = next;
  for (int i = 0; i < MT_N; i++) g->state[i] = (uint32_t)get_u64(b, 24 + 8 * (size_t)i);
  g->has_next_double = has_d;
  g->next_double = d;
  g->has_next_float = has_f;
  g->next_float = f;
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */


static bool valid_dtype(lt_dtype dt) { return (unsigned)dt < (unsigned)LT_NDTYPES; }

static int check_common(const char *op, const lt_generator_t *g, lt_dtype dt, const void *data, int64_t n) {
  if (!g) return lt_error("%s: NULL generator", op);
  if (!valid_dtype(dt)) return lt_error("%s: invalid dtype", op);
  if (n < 0) return lt_error("%s: negative number of elements (%" PRId64 ")", op, n);
  if (n > 0 && !data) return lt_error("%s: NULL data", op);
  return LT_OK;
}

static inline uint16_t f32_to_f16(float f) { return lt_float_to_half(f).bits; }
static inline uint16_t f32_to_bf16(float f) { return lt_float_to_bf16(f).bits; }
static inline float f16_to_f32(uint16_t b) { lt_half h = {b}; return lt_half_to_float(h); }
static inline float bf16_to_f32(uint16_t b) { lt_bfloat16 h = {b}; return lt_bf16_to_float(h); }

/* static_cast<scalar_t>(double), c10::Half and c10::BFloat16 converting through float */
static inline void store_double(lt_dtype dt, void *data, int64_t i, double v) {
  switch (dt) {
  case LT_FLOAT32: ((float *)data)[i] = (float)v; break;
  case LT_FLOAT64: ((double *)data)[i] = v; break;
  case LT_FLOAT16: ((uint16_t *)data)[i] = f32_to_f16((float)v); break;
  case LT_BFLOAT16: ((uint16_t *)data)[i] = f32_to_bf16((float)v); break;
  default: break;
  }
}

/* static_cast<scalar_t>(int64_t) */
static inline void store_int(lt_dtype dt, void *data, int64_t i, int64_t v) {
  switch (dt) {
  case LT_FLOAT32: ((float *)data)[i] = (float)v; break;
  case LT_FLOAT64: ((double *)data)[i] = (double)v; break;
  case LT_FLOAT16: ((uint16_t *)data)[i] = f32_to_f16((float)v); break;
  case LT_BFLOAT16: ((uint16_t *)data)[i] = f32_to_bf16((float)v); break;
  case LT_INT64: ((int64_t *)data)[i] = v; break;
  case LT_INT32: ((int32_t *)data)[i] = (int32_t)v; break;
  case LT_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
  case LT_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
  case LT_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case LT_BOOL: ((uint8_t *)data)[i] = v != 0; break;
  default: break;
  }
}

/* The finite range of a floating dtype (numeric_limits lowest/max). */
static double float_max(lt_dtype dt) {
  switch (dt) {
  case LT_FLOAT32: return FLT_MAX;
  case LT_FLOAT64: return DBL_MAX;
  case LT_FLOAT16: return 65504.0;
  default: return 3.38953138925153547590470800371487866880e+38; /* bfloat16 0x7f7f */
  }
}

/* ------------------------------------------------------------------------------------------ */
/* uniform                                                                                     */

int lt_random_uniform(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double from, double to) {
  LT_TRY(check_common("uniform_", g, dt, data, n));
  if (!lt_dtype_is_floating(dt))
    return lt_error("uniform_: expected a floating point dtype, got %s", lt_dtype_name(dt));
  double mx = float_max(dt);
  if (!(from >= -mx && from <= mx)) return lt_error("uniform_: from is out of bounds for %s", lt_dtype_name(dt));
  if (!(to >= -mx && to <= mx)) return lt_error("uniform_: to is out of bounds for %s", lt_dtype_name(dt));
  if (!(from <= to))
    return lt_error("uniform_ expects to return a [from, to) range, but found from=%g > to=%g", from, to);
  if (!(to - from <= mx))
    return lt_error("uniform_: to - from must not exceed the largest %s, but found to=%g and from=%g",
                    lt_dtype_name(dt), to, from);
  gen_lock(g);
  switch (dt) {
  case LT_FLOAT32: {
    float *o = data;
    const float f = (float)from, t = (float)to, d = t - f;
    u01_fill_f32(g, o, n);
    for (int64_t i = 0; i < n; i++) o[i] = fmaf(o[i], d, f);
    break;
  }
  case LT_FLOAT64: {
    double *o = data;
    const double d = to - from;
    u01_fill_f64(g, o, n);
    for (int64_t i = 0; i < n; i++) o[i] = fma(o[i], d, from);
    break;
  }
  case LT_FLOAT16: {
    uint16_t *o = data;
    const float f = f16_to_f32(f32_to_f16((float)from)), t = f16_to_f32(f32_to_f16((float)to));
    const float d = f16_to_f32(f32_to_f16(t - f));
    for (int64_t i = 0; i < n; i++) o[i] = f32_to_f16(fmaf(u01_f16(g), d, f));
    break;
  }
  default: { /* LT_BFLOAT16 */
    uint16_t *o = data;
    const float f = bf16_to_f32(f32_to_bf16((float)from)), t = bf16_to_f32(f32_to_bf16((float)to));
    const float d = bf16_to_f32(f32_to_bf16(t - f));
    for (int64_t i = 0; i < n; i++) o[i] = f32_to_bf16(fmaf(u01_bf16(g), d, f));
    break;
  }
  }
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* normal                                                                                      */

/* avx_mathfun.h's log256_ps, one lane, as GCC 12 compiled it with -mavx2 -mfma. */
static float avx_logf(float xin) {
  const float min_norm_pos = 0x1p-126f;
  const float sqrthf = (float)0.707106781186547524;
  const float p0 = (float)7.0376836292E-2, p1 = (float)-1.1514610310E-1, p2 = (float)1.1676998740E-1,
              p3 = (float)-1.2420140846E-1, p4 = (float)1.4249322787E-1, p5 = (float)-1.6668057665E-1,
              p6 = (float)2.0000714765E-1, p7 = (float)-2.4999993993E-1, p8 = (float)3.3333331174E-1;
  const float q1 = (float)-2.12194440e-4, q2 = (float)0.693359375;
  const bool invalid = xin <= 0.0f;
  float x = xin > min_norm_pos ? xin : min_norm_pos;
  uint32_t ix = lt_f32_bits(x);
  int32_t imm0 = (int32_t)(ix >> 23) - 0x7f;
  x = lt_bits_f32((ix & ~0x7f800000u) | 0x3f000000u);
  float e = (float)imm0 + 1.0f;
  const bool mask = x < sqrthf;
  const float tmp = mask ? x : 0.0f;
  x = x - 1.0f;
  e = e - (mask ? 1.0f : 0.0f);
  x = x + tmp;
  const float z = x * x;
  float y = fmaf(p0, x, p1);
  y = fmaf(y, x, p2);
  y = fmaf(y, x, p3);
  y = fmaf(y, x, p4);
  y = fmaf(y, x, p5);
  y = fmaf(y, x, p6);
  y = fmaf(y, x, p7);
  y = fmaf(y, x, p8);
  y = y * x;
  y = fmaf(y, z, e * q1);
  y = fmaf(-z, 0.5f, y);
  x = x + y;
  x = fmaf(e, q2, x);
  return invalid ? lt_bits_f32(0xffffffffu) : x;
}

/* avx_mathfun.h's sincos256_ps, one lane, as GCC 12 compiled it with -mavx2 -mfma. */
static void avx_sincosf(float xin, float *s, float *c) {
  const float fopi = (float)1.27323954473516;
  const float mdp1 = (float)-0.78515625, mdp2 = (float)-2.4187564849853515625e-4,
              mdp3 = (float)-3.77489497744594108e-8;
  const float sp0 = (float)-1.9515295891E-4, sp1 = (float)8.3321608736E-3, sp2 = (float)-1.6666654611E-1;
  const float cp0 = (float)2.443315711809948E-005, cp1 = (float)-1.388731625493765E-003,
              cp2 = (float)4.166664568298827E-002;
  uint32_t xb = lt_f32_bits(xin);
  uint32_t sign_sin = xb & 0x80000000u;
  float x = lt_bits_f32(xb & 0x7fffffffu);
  float y = x * fopi;
  /* cvttps2dq: out of range or NaN gives INT32_MIN */
  int32_t j = (y < 2147483648.0f) ? (int32_t)y : INT32_MIN;
  j = (int32_t)(((uint32_t)j + 1u) & ~1u);
  y = (float)j;
  uint32_t swap_sin = ((uint32_t)j & 4u) << 29;
  bool poly = ((uint32_t)j & 2u) == 0;
  x = fmaf(y, mdp1, x);
  x = fmaf(y, mdp2, x);
  x = fmaf(y, mdp3, x);
  uint32_t sign_cos = (~((uint32_t)j - 2u) & 4u) << 29;
  sign_sin ^= swap_sin;
  const float z = x * x;
  const float tmp = z * 0.5f;
  float yc = fmaf(cp0, z, cp1);
  yc = fmaf(yc, z, cp2);
  yc = yc * z;
  yc = fmaf(z, yc, -tmp);
  yc = yc + 1.0f;
  float ys = fmaf(sp0, z, sp1);
  ys = fmaf(ys, z, sp2);
  ys = ys * z;
  ys = fmaf(x, ys, x);
  const uint32_t pm = poly ? 0xffffffffu : 0u;
  const float ysin2 = lt_bits_f32(pm & lt_f32_bits(ys));
  const float ysin1 = lt_bits_f32(~pm & lt_f32_bits(yc));
  ys = ys - ysin2;
  yc = yc - ysin1;
  const float sv = ysin2 + ysin1;
  const float cv = ys + yc;
  *s = lt_bits_f32(lt_f32_bits(sv) ^ sign_sin);
  *c = lt_bits_f32(lt_f32_bits(cv) ^ sign_cos);
}

/* normal_fill_16_AVX2 */
static void normal16_f32(float *d, float mean, float std) {
  const float two_pi = (float)(2.0 * 3.14159265358979323846);
  for (int j = 0; j < 8; j++) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = sqrtf(-2.0f * avx_logf(u1));
    float s, c;
    avx_sincosf(two_pi * u2, &s, &c);
    d[j] = fmaf(radius * c, std, mean);
    d[j + 8] = fmaf(radius * s, std, mean);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LT_RANDOM_AVX2 1
/* The same, 8 lanes at a time with AVX2 + FMA when the CPU has them (5x faster than the scalar
   lanes, which call fmaf): the very instruction sequence of normal16_f32 / PyTorch's binary. */
__attribute__((target("avx2,fma"))) static void normal16_f32_avx2(float *d, float mean, float std) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 u1 = _mm256_sub_ps(one, _mm256_loadu_ps(d));
  const __m256 u2 = _mm256_loadu_ps(d + 8);

  /* log(u1) */
  __m256 x = u1;
  const __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
  x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));
  __m256i imm0 = _mm256_srli_epi32(_mm256_castps_si256(x), 23);
  x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~0x7f800000)));
  x = _mm256_or_ps(x, _mm256_set1_ps(0.5f));
  imm0 = _mm256_sub_epi32(imm0, _mm256_set1_epi32(0x7f));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(imm0), one);
  const __m256 mask = _mm256_cmp_ps(x, _mm256_set1_ps((float)0.707106781186547524), _CMP_LT_OS);
  const __m256 tmp = _mm256_and_ps(x, mask);
  x = _mm256_sub_ps(x, one);
  e = _mm256_sub_ps(e, _mm256_and_ps(one, mask));
  x = _mm256_add_ps(x, tmp);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_fmadd_ps(_mm256_set1_ps((float)7.0376836292E-2), x, _mm256_set1_ps((float)-1.1514610310E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)1.1676998740E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)-1.2420140846E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)1.4249322787E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)-1.6668057665E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)2.0000714765E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)-2.4999993993E-1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps((float)3.3333331174E-1));
  y = _mm256_mul_ps(y, x);
  y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps((float)-2.12194440e-4)));
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  x = _mm256_add_ps(x, y);
  x = _mm256_fmadd_ps(e, _mm256_set1_ps((float)0.693359375), x);
  x = _mm256_or_ps(x, invalid);
  const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), x));

  /* sincos(2 pi u2) */
  const __m256 theta = _mm256_mul_ps(_mm256_set1_ps((float)(2.0 * 3.14159265358979323846)), u2);
  __m256 sign_sin = _mm256_and_ps(theta, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
  x = _mm256_and_ps(theta, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  __m256 yy = _mm256_mul_ps(x, _mm256_set1_ps((float)1.27323954473516));
  __m256i j = _mm256_cvttps_epi32(yy);
  j = _mm256_add_epi32(j, _mm256_set1_epi32(1));
  j = _mm256_and_si256(j, _mm256_set1_epi32(~1));
  yy = _mm256_cvtepi32_ps(j);
  const __m256i swap_sin = _mm256_slli_epi32(_mm256_and_si256(j, _mm256_set1_epi32(4)), 29);
  const __m256 poly = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
  x = _mm256_fmadd_ps(yy, _mm256_set1_ps((float)-0.78515625), x);
  x = _mm256_fmadd_ps(yy, _mm256_set1_ps((float)-2.4187564849853515625e-4), x);
  x = _mm256_fmadd_ps(yy, _mm256_set1_ps((float)-3.77489497744594108e-8), x);
  const __m256i jc = _mm256_sub_epi32(j, _mm256_set1_epi32(2));
  const __m256 sign_cos = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_andnot_si256(jc, _mm256_set1_epi32(4)), 29));
  sign_sin = _mm256_xor_ps(sign_sin, _mm256_castsi256_ps(swap_sin));
  const __m256 zz = _mm256_mul_ps(x, x);
  const __m256 t5 = _mm256_mul_ps(zz, _mm256_set1_ps(0.5f));
  __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps((float)2.443315711809948E-005), zz,
                              _mm256_set1_ps((float)-1.388731625493765E-003));
  yc = _mm256_fmadd_ps(yc, zz, _mm256_set1_ps((float)4.166664568298827E-002));
  yc = _mm256_mul_ps(yc, zz);
  yc = _mm256_fmsub_ps(zz, yc, t5);
  yc = _mm256_add_ps(yc, one);
  __m256 ys = _mm256_fmadd_ps(_mm256_set1_ps((float)-1.9515295891E-4), zz, _mm256_set1_ps((float)8.3321608736E-3));
  ys = _mm256_fmadd_ps(ys, zz, _mm256_set1_ps((float)-1.6666654611E-1));
  ys = _mm256_mul_ps(ys, zz);
  ys = _mm256_fmadd_ps(x, ys, x);
  const __m256 ysin2 = _mm256_and_ps(poly, ys);
  const __m256 ysin1 = _mm256_andnot_ps(poly, yc);
  ys = _mm256_sub_ps(ys, ysin2);
  yc = _mm256_sub_ps(yc, ysin1);
  const __m256 s = _mm256_xor_ps(_mm256_add_ps(ysin2, ysin1), sign_sin);
  const __m256 c = _mm256_xor_ps(_mm256_add_ps(ys, yc), sign_cos);

  const __m256 mean_v = _mm256_set1_ps(mean), std_v = _mm256_set1_ps(std);
  _mm256_storeu_ps(d, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), std_v, mean_v));
  _mm256_storeu_ps(d + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, s), std_v, mean_v));
}

static bool has_avx2_fma;
static pthread_once_t avx2_once = PTHREAD_ONCE_INIT;
static void detect_avx2_fma(void) {
  __builtin_cpu_init();
  has_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
static bool cpu_has_avx2_fma(void) {
  pthread_once(&avx2_once, detect_avx2_fma);
  return has_avx2_fma;
}
#endif

/* normal_fill_16<double> */
static void normal16_f64(double *d, double mean, double std) {
  for (int j = 0; j < 8; j++) {
    const double u1 = 1.0 - d[j];
    const double u2 = d[j + 8];
    const double radius = sqrt(-2.0 * log(u1));
    const double theta = 2.0 * 3.14159265358979323846 * u2;
    d[j] = fma(radius * cos(theta), std, mean);
    d[j + 8] = fma(radius * sin(theta), std, mean);
  }
}

/* normal_fill_16<c10::Half>: Half arithmetic rounds each Half op; std::log/sqrt/cos/sin of a Half
   go through float; Half * float is float. */
static void normal16_f16(uint16_t *d, uint16_t mean_h, uint16_t std_h) {
  const float mean = f16_to_f32(mean_h), std = f16_to_f32(std_h);
  for (int j = 0; j < 8; j++) {
    const float u1 = f16_to_f32(f32_to_f16(1.0f - f16_to_f32(d[j])));
    const float u2 = f16_to_f32(d[j + 8]);
    const float radius = f16_to_f32(f32_to_f16(sqrtf(-2.0f * logf(u1))));
    const float theta = f16_to_f32(f32_to_f16((float)(2.0 * 3.14159265358979323846 * (double)u2)));
    d[j] = f32_to_f16(fmaf(radius * cosf(theta), std, mean));
    d[j + 8] = f32_to_f16(fmaf(radius * sinf(theta), std, mean));
  }
}

/* normal_fill_16<c10::BFloat16>: with c10/util/BFloat16-math.h, std::log/sqrt/cos/sin of a
   BFloat16 return BFloat16, so every step rounds to bfloat16. */
static inline float bfr(float x) { return bf16_to_f32(f32_to_bf16(x)); }
static void normal16_bf16(uint16_t *d, uint16_t mean_h, uint16_t std_h) {
  const float mean = bf16_to_f32(mean_h), std = bf16_to_f32(std_h);
  for (int j = 0; j < 8; j++) {
    const float u1 = bfr(1.0f - bf16_to_f32(d[j]));
    const float u2 = bf16_to_f32(d[j + 8]);
    const float radius = bfr(sqrtf(bfr(-2.0f * bfr(logf(u1)))));
    const float theta = bfr((float)(2.0 * 3.14159265358979323846 * (double)u2));
    d[j] = f32_to_bf16(bfr(bfr(radius * bfr(cosf(theta))) * std) + mean);
    d[j + 8] = f32_to_bf16(bfr(bfr(radius * bfr(sinf(theta))) * std) + mean);
  }
}

static void fill_uniform01(lt_generator_t *g, lt_dtype dt, void *data, int64_t begin, int64_t end) {
  switch (dt) {
  case LT_FLOAT32: u01_fill_f32(g, (float *)data + begin, end - begin); break;
  case LT_FLOAT64: u01_fill_f64(g, (double *)data + begin, end - begin); break;
  case LT_FLOAT16:
    for (int64_t i = begin; i < end; i++) ((uint16_t *)data)[i] = f32_to_f16(u01_f16(g));
    break;
  default:
    for (int64_t i = begin; i < end; i++) ((uint16_t *)data)[i] = f32_to_bf16(u01_bf16(g));
    break;
  }
}

static void normal16(lt_dtype dt, void *data, int64_t at, double mean, double std) {
  switch (dt) {
  case LT_FLOAT32:
#ifdef LT_RANDOM_AVX2
    if (cpu_has_avx2_fma()) {
      normal16_f32_avx2((float *)data + at, (float)mean, (float)std);
      break;
    }
#endif
    normal16_f32((float *)data + at, (float)mean, (float)std);
    break;
  case LT_FLOAT64: normal16_f64((double *)data + at, mean, std); break;
  case LT_FLOAT16:
    normal16_f16((uint16_t *)data + at, f32_to_f16((float)mean), f32_to_f16((float)std));
    break;
  default: normal16_bf16((uint16_t *)data + at, f32_to_bf16((float)mean), f32_to_bf16((float)std)); break;
  }
}

/* at::normal_distribution<double>, with the generator's cached second value */
static double normal_double(lt_generator_t *g, double mean, double std) {
  double ret;
  if (g->has_next_double) {
    g->has_next_double = false;
    ret = g->next_double;
  } else {
    const double u1 = u01_f64(g);
    const double u2 = u01_f64(g);
    const double r = sqrt(-2.0 * log(1.0 - u2));
    const double theta = 2.0 * 3.14159265358979323846 * u1;
    g->next_double = r * sin(theta);
    g->has_next_double = true;
    ret = r * cos(theta);
  }
  return fma(ret, std, mean);
}

int lt_random_normal(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double mean, double std) {
  LT_TRY(check_common("normal_", g, dt, data, n));
  if (!(std >= 0.0)) return lt_error("normal expects std >= 0.0, but found std %g", std);
  if (!lt_dtype_is_floating(dt))
    return lt_error("normal_: expected a floating point dtype, got %s", lt_dtype_name(dt));
  gen_lock(g);
  if (n >= 16) {
    fill_uniform01(g, dt, data, 0, n);
    for (int64_t i = 0; i < n - 15; i += 16) normal16(dt, data, i, mean, std);
    if (n % 16 != 0) {
      fill_uniform01(g, dt, data, n - 16, n);
      normal16(dt, data, n - 16, mean, std);
    }
  } else {
    for (int64_t i = 0; i < n; i++) store_double(dt, data, i, normal_double(g, mean, std));
  }
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* randint                                                                                     */

/* static_cast<int64_t>(floating value) as x86-64 does it: NaN and out of range give INT64_MIN. */
static int64_t to_i64_x86(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)v;
}

/* static_cast<int64_t>(static_cast<scalar_t>(v)) for a floating dtype */
static int64_t round_trip(lt_dtype dt, int64_t v) {
  switch (dt) {
  case LT_FLOAT32: return to_i64_x86((double)(float)v);
  case LT_FLOAT64: return to_i64_x86((double)v);
  case LT_FLOAT16: return to_i64_x86((double)f16_to_f32(f32_to_f16((float)v)));
  default: return to_i64_x86((double)bf16_to_f32(f32_to_bf16((float)v)));
  }
}

static int float_digits(lt_dtype dt) {
  switch (dt) {
  case LT_FLOAT32: return 24;
  case LT_FLOAT64: return 53;
  case LT_FLOAT16: return 11;
  default: return 8;
  }
}

static int ilog2_u64(uint64_t v) {
  int n = 0;
  while (v >>= 1) ++n;
  return n;
}

/* ATen's update_from / update_to: move the bounds inside what the dtype represents. */
static int64_t update_from(lt_dtype dt, int64_t from) {
  const int64_t from_plus_1 = round_trip(dt, from + 1);
  if (from_plus_1 < from) {
    int64_t a = from + 1;
    uint64_t abs_ = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
    int n = ilog2_u64(abs_);
    from = (int64_t)((uint64_t)from_plus_1 + (UINT64_C(1) << (n - float_digits(dt) + 1)));
  }
  return from;
}

static int64_t update_to(lt_dtype dt, int64_t to) {
  const int64_t to_minus_1 = round_trip(dt, to - 1);
  if (to_minus_1 >= to) {
    int64_t a = to - 1;
    uint64_t abs_ = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
    int n = ilog2_u64(abs_);
    to = (int64_t)((uint64_t)to_minus_1 - (UINT64_C(1) << (n - float_digits(dt) + 1)));
  }
  return to;
}

static void int_limits(lt_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case LT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
  case LT_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
  case LT_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
  case LT_UINT8: *lo = 0; *hi = UINT8_MAX; break;
  case LT_BOOL: *lo = 0; *hi = 1; break;
  default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

int lt_random_int(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, int64_t low, int64_t high) {
  LT_TRY(check_common("random_", g, dt, data, n));
  int64_t from = low, to = high;
  if (!(from < to))
    return lt_error("random_ expects 'from' to be less than 'to', but got from=%" PRId64 " >= to=%" PRId64,
                    from, to);
  if (lt_dtype_is_floating(dt)) {
    from = update_from(dt, from);
    to = update_to(dt, to);
    if (!(from < to))
      return lt_error("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but "
                      "got from=%" PRId64 " >= to=%" PRId64, from, to);
    const double mx = float_max(dt);
    if (!((double)from >= -mx && (double)from <= mx))
      return lt_error("random_: from is out of bounds for %s", lt_dtype_name(dt));
    if (!((double)(to - 1) >= -mx && (double)(to - 1) <= mx))
      return lt_error("random_: to - 1 is out of bounds for %s", lt_dtype_name(dt));
  } else {
    int64_t lo, hi;
    int_limits(dt, &lo, &hi);
    if (from < lo || from > hi) return lt_error("random_: from is out of bounds for %s", lt_dtype_name(dt));
    if (to - 1 < lo || to - 1 > hi) return lt_error("random_: to - 1 is out of bounds for %s", lt_dtype_name(dt));
  }
  const uint64_t range = (uint64_t)to - (uint64_t)from;
  const bool wide = range >= (UINT64_C(1) << 32) &&
                    (dt == LT_INT64 || dt == LT_FLOAT64 || dt == LT_FLOAT32 || dt == LT_BFLOAT16);
  gen_lock(g);
  for (int64_t i = 0; i < n; i++) {
    const uint64_t v = wide ? rnd64(g) : (uint64_t)rnd32(g);
    store_int(dt, data, i, (int64_t)(v % range + (uint64_t)from));
  }
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* randperm                                                                                    */

/* PyTorch 1.13's randperm_cpu, for every n (checked up to n = 3e8): Fisher-Yates from the front
   with z = random() % (n - i). (Later versions switch to an inside-out shuffle with random64() for
   n >= UINT32_MAX / 20.) */
#define PERM_SHUFFLE(T)                                                                            \
  do {                                                                                             \
    T *r = data;                                                                                   \
    for (int64_t i = 0; i < n - 1; i++) {                                                          \
      const int64_t z = (int64_t)(rnd32(g) % (uint64_t)(n - i));                                   \
      const T sav = r[i];                                                                          \
      r[i] = r[z + i];                                                                             \
      r[z + i] = sav;                                                                              \
    }                                                                                              \
  } while (0)

int lt_random_perm(lt_generator_t *g, lt_dtype dt, void *data, int64_t n) {
  LT_TRY(check_common("randperm", g, dt, data, n));
  if (dt == LT_BOOL) return lt_error("randperm: a permutation cannot be stored in bool");
  if (!lt_dtype_is_floating(dt) && n > 0) {
    int64_t lo, hi;
    int_limits(dt, &lo, &hi);
    if (n - 1 > hi)
      return lt_error("randperm: n=%" PRId64 " is too large for %s (n - 1 cannot be converted to it "
                      "without overflow)", n, lt_dtype_name(dt));
  }
  if (dt == LT_FLOAT16 && n > 2049) return lt_error("randperm: n cannot be greater than 2049 for Half type.");
  if (dt == LT_FLOAT32 && n > (INT64_C(1) << 24) + 1)
    return lt_error("randperm: n cannot be greater than 2^24+1 for Float type.");
  if (dt == LT_FLOAT64 && n > (INT64_C(1) << 53) + 1)
    return lt_error("randperm: n cannot be greater than 2^53+1 for Double type.");
  /* The values are converted first, as in PyTorch; moving them around is then the same as moving
     the indices and converting afterwards. */
  for (int64_t i = 0; i < n; i++) store_int(dt, data, i, i);
  gen_lock(g);
  switch (lt_dtype_size(dt)) {
  case 8: PERM_SHUFFLE(uint64_t); break;
  case 4: PERM_SHUFFLE(uint32_t); break;
  case 2: PERM_SHUFFLE(uint16_t); break;
  default: PERM_SHUFFLE(uint8_t); break;
  }
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* bernoulli                                                                                   */

int lt_random_bernoulli(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double p) {
  LT_TRY(check_common("bernoulli_", g, dt, data, n));
  if (!(p >= 0.0 && p <= 1.0)) return lt_error("bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  /* u01_f64(g) < p for each element, in blocks: the draws made in bulk, compared in one pass,
     stored in one pass per dtype */
  enum { BLOCK = 512 };
  double u[BLOCK];
  uint8_t hit[BLOCK];
  gen_lock(g);
  for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
    const int m = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
    u01_fill_f64(g, u, m);
    for (int j = 0; j < m; j++) hit[j] = u[j] < p;
    if (dt == LT_FLOAT32) {
      float *o = (float *)data + i0;
      for (int j = 0; j < m; j++) o[j] = (float)hit[j];
    } else if (dt == LT_BOOL || dt == LT_UINT8) {
      memcpy((uint8_t *)data + i0, hit, (size_t)m);
    } else {
      for (int j = 0; j < m; j++) store_int(dt, data, i0 + j, hit[j]);
    }
  }
  gen_unlock(g);
  return LT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* exponential, geometric, cauchy, log_normal                                                  */

/* PyTorch 1.13's CPU kernels for these (cpu_serial_kernel over at::*_distribution<double>): one
   u01_f64 (or one at::normal_distribution<double> value) per element, the formula in double with
   libm, then static_cast<scalar_t>. */
typedef enum { SCALAR_EXPONENTIAL, SCALAR_GEOMETRIC, SCALAR_CAUCHY, SCALAR_LOG_NORMAL } scalar_kind;

static int fill_scalar(const char *op, lt_generator_t *g, lt_dtype dt, void *data, int64_t n,
                       scalar_kind kind, double a, double b) {
  LT_TRY(check_common(op, g, dt, data, n));
  const bool floating = lt_dtype_is_floating(dt);
  if (kind == SCALAR_GEOMETRIC ? dt == LT_BOOL : !floating)
    return lt_error("%s: expected a floating point%s dtype, got %s", op,
                    kind == SCALAR_GEOMETRIC ? " or integer" : "", lt_dtype_name(dt));
  const double log_q = kind == SCALAR_GEOMETRIC ? log(1.0 - a) : 0.0;
  gen_lock(g);
  for (int64_t i = 0; i < n; i++) {
    double v;
    switch (kind) {
    case SCALAR_EXPONENTIAL: v = -1.0 / a * log(1.0 - u01_f64(g)); break;
    case SCALAR_GEOMETRIC: v = ceil(log(u01_f64(g)) / log_q); break;
    case SCALAR_CAUCHY: v = a + b * tan(3.14159265358979323846 * (u01_f64(g) - 0.5)); break;
    default: v = exp(normal_double(g, a, b)); break;
    }
    if (floating) store_double(dt, data, i, v);
    else store_int(dt, data, i, to_i64_x86(v));
  }
  gen_unlock(g);
  return LT_OK;
}

int lt_random_exponential(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double lambd) {
  if (!(lambd > 0.0)) return lt_error("exponential_ expects lambd > 0.0, but found lambd=%g", lambd);
  return fill_scalar("exponential_", g, dt, data, n, SCALAR_EXPONENTIAL, lambd, 0.0);
}
int lt_random_geometric(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double p) {
  if (!(p > 0.0 && p < 1.0)) return lt_error("geometric_ expects p to be in (0, 1), but got p=%g", p);
  return fill_scalar("geometric_", g, dt, data, n, SCALAR_GEOMETRIC, p, 0.0);
}
int lt_random_cauchy(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double median, double sigma) {
  if (!(sigma > 0.0)) return lt_error("cauchy_ expects sigma > 0.0, but found sigma=%g", sigma);
  return fill_scalar("cauchy_", g, dt, data, n, SCALAR_CAUCHY, median, sigma);
}
int lt_random_log_normal(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double mean, double std) {
  if (!(std > 0.0)) return lt_error("log_normal_ expects std > 0.0, but found std=%g", std);
  return fill_scalar("log_normal_", g, dt, data, n, SCALAR_LOG_NORMAL, mean, std);
}
