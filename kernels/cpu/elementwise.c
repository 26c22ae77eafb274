/* The CPU elementwise loops. Every (op, dtype) gets a loop with a fast path for contiguous
   operands (vectorisable) and one for a broadcast second operand, then a strided fallback. The
   per-element math comes from kernels/elementwise.h, shared with the CUDA kernels. */
#include "kernels/cpu/elementwise.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

/* ---- storage types: suffix, storage type, compute type, load, store ---- */
#define ID(x) (x)
/* Bool tensors are read and written as bytes (uint8_t), a byte's truth being whether it is nonzero:
   GCC vectorises no loop that loads a _Bool (see where_ below) */
#define TO_BOOL(x) ((x) != 0)
#define LD_F16(x) lt_half_to_float(x)
#define ST_F16(x) lt_float_to_half((float)(x))
#define LD_BF16(x) lt_bf16_to_float(x)
#define ST_BF16(x) lt_float_to_bf16((float)(x))
#define ST_I64(x) ((int64_t)(x))
#define ST_I32(x) ((int32_t)(x))
#define ST_I16(x) ((int16_t)(x))
#define ST_I8(x) ((int8_t)(x))
#define ST_U8(x) ((uint8_t)(x))

/* ---- per-element functions from the op tables ---- */
#define LT_X(name, kind, fbody, ibody)                                            \
  static inline __attribute__((always_inline)) float un_##name##_f(float v) { typedef float T; return (T)(fbody); } \
  static inline __attribute__((always_inline)) double un_##name##_d(double v) { typedef double T; return (T)(fbody); } \
  static inline int64_t un_##name##_i(int64_t v) { (void)v; return (int64_t)(ibody); }
LT_UNARY_OPS(LT_X)
#undef LT_X

#define LT_X(name, kind, fbody, ibody)                                                         \
  static inline __attribute__((always_inline)) float bin_##name##_f(float a, float b, float alpha, int64_t ialpha) { \
    typedef float T; (void)alpha; (void)ialpha; (void)(T)0; return (T)(fbody); }                  \
  static inline __attribute__((always_inline)) double bin_##name##_d(double a, double b, double alpha, int64_t ialpha) { \
    typedef double T; (void)alpha; (void)ialpha; (void)(T)0; return (T)(fbody); }                 \
  static inline int64_t bin_##name##_i(int64_t a, int64_t b, double alpha, int64_t ialpha) {     \
    (void)alpha; (void)ialpha; (void)a; (void)b; return (int64_t)(ibody); }
LT_BINARY_OPS(LT_X)
#undef LT_X

#define LT_X(name, body)                                                                 \
  static inline bool cmp_##name##_f(float a, float b) { return body; }                    \
  static inline bool cmp_##name##_d(double a, double b) { return body; }                  \
  static inline bool cmp_##name##_i(int64_t a, int64_t b) { return body; }
LT_COMPARE_OPS(LT_X)
#undef LT_X

/* ---- streamed stores ----
   A contiguous output of LT_STREAM_BYTES or more (one thread's share) is written a cache line at
   a time with non-temporal stores: it cannot stay in the caches anyway, and a plain store first
   reads the line it overwrites (a third more memory traffic for c = a + b; on 1e7 floats 2.5 ->
   2.0 ms here). Smaller outputs keep plain stores, so that the next op finds them in cache. The
   line is computed into an aligned 64-byte buffer (kept in a register) and streamed; the head up
   to the first line boundary and the tail use plain stores. */
#define LT_STREAM_BYTES ((int64_t)8 << 20)
#define LT_LINE 64

static inline void stream_line(void *dst, const void *src) {
#if defined(__AVX512F__)
  _mm512_stream_si512((__m512i *)dst, _mm512_load_si512(src));
#elif defined(__AVX__)
  _mm256_stream_si256((__m256i *)dst, _mm256_load_si256((const __m256i *)src));
  _mm256_stream_si256((__m256i *)dst + 1, _mm256_load_si256((const __m256i *)src + 1));
#elif defined(__SSE2__)
  for (int k = 0; k < 4; k++)
    _mm_stream_si128((__m128i *)dst + k, _mm_load_si128((const __m128i *)src + k));
#else
  memcpy(dst, src, LT_LINE);
#endif
}

static inline void stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence(); /* streamed lines are visible before the team's barrier says the op is done */
#endif
}

/* Ops cheap enough to be bound by memory traffic. Streaming slowed the others down here (on 1e7
   floats: pow by 8%, atan2 by 4%, and exp, a unary op, by 45%: measured, not understood), so only
   these stream; the unary loops never do. Constant-folded in each loop. */
static inline bool binary_streams(lt_binary_op op) {
  return op == LT_BINARY_add || op == LT_BINARY_sub || op == LT_BINARY_mul || op == LT_BINARY_div ||
         op == LT_BINARY_maximum || op == LT_BINARY_minimum;
}

/* Elements before the first line boundary of o, or -1 when o's output should not be streamed. */
static inline int64_t stream_head(bool ok, const void *o, int64_t n, size_t size) {
  uintptr_t a = (uintptr_t)o;
  if (!ok || (int64_t)size * n < LT_STREAM_BYTES || a % size) return -1;
  return (int64_t)(((LT_LINE - a % LT_LINE) % LT_LINE) / size);
}

/* The contiguous loop `o[i] = EXPR` (EXPR reading index i), streamed when stream_head allows. */
#define CONTIGUOUS_STORE(OK, ST, o, n, i, EXPR)                                                 \
  do {                                                                                          \
    int64_t i = 0;                                                                              \
    int64_t head_ = stream_head(OK, o, n, sizeof(ST));                                          \
    if (head_ >= 0) {                                                                           \
      enum { L_ = LT_LINE / sizeof(ST) };                                                       \
      for (; i < head_; i++) o[i] = EXPR;                                                       \
      for (; i + L_ <= n; i += L_) {                                                            \
        ST line_[L_] __attribute__((aligned(LT_LINE)));                                         \
        int64_t base_ = i;                                                                      \
        _Pragma("omp simd") for (int64_t j_ = 0; j_ < L_; j_++) {                               \
          int64_t i = base_ + j_;                                                               \
          line_[j_] = EXPR;                                                                     \
        }                                                                                       \
        stream_line(o + base_, line_);                                                          \
      }                                                                                         \
      for (; i < n; i++) o[i] = EXPR;                                                           \
      stream_fence();                                                                           \
    } else {                                                                                    \
      _Pragma("omp simd") for (i = 0; i < n; i++) o[i] = EXPR;                                  \
    }                                                                                           \
  } while (0)

/* ---- loops ---- */
#define UNARY_LOOP(name, sfx, ST, CT, LD, STO, FN)                                           \
  static void unary_##name##_##sfx(char **d, const int64_t *s, int64_t n, const void *ctx) {  \
    (void)ctx;                                                                                \
    if (s[0] == sizeof(ST) && s[1] == sizeof(ST)) {                                           \
      ST *o = (ST *)d[0];                                                                     \
      const ST *x = (const ST *)d[1];                                                         \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = STO(FN((CT)LD(x[i])));       \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; i++)                                                         \
        *(ST *)(d[0] + i * s[0]) = STO(FN((CT)LD(*(const ST *)(d[1] + i * s[1]))));           \
    }                                                                                         \
  }

#define BINARY_LOOP(name, sfx, ST, CT, LD, STO, FN, ALPHA)                                     \
  static void binary_##name##_##sfx(char **d, const int64_t *s, int64_t n, const void *ctx) {   \
    const lt_binary_ctx_t *c = ctx;                                                             \
    CT alpha = (CT)c->ALPHA;                                                                    \
    int64_t ialpha = c->ialpha;                                                                 \
    if (s[0] == sizeof(ST) && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                       \
      ST *o = (ST *)d[0];                                                                       \
      const ST *x = (const ST *)d[1], *y = (const ST *)d[2];                                    \
      CONTIGUOUS_STORE(binary_streams(LT_BINARY_##name), ST, o, n, i,                         \
                       STO(FN((CT)LD(x[i]), (CT)LD(y[i]), alpha, ialpha)));                   \
    } else if (s[0] == sizeof(ST) && s[1] == sizeof(ST) && s[2] == 0) {                         \
      ST *o = (ST *)d[0];                                                                       \
      const ST *x = (const ST *)d[1];                                                           \
      CT y = (CT)LD(*(const ST *)d[2]);                                                         \
      CONTIGUOUS_STORE(binary_streams(LT_BINARY_##name), ST, o, n, i,                         \
                       STO(FN((CT)LD(x[i]), y, alpha, ialpha)));                              \
    } else if (s[0] == sizeof(ST) && s[1] == 0 && s[2] == sizeof(ST)) { /* 1 - x, a broadcast g */ \
      ST *o = (ST *)d[0];                                                                       \
      const ST *y = (const ST *)d[2];                                                           \
      CT x = (CT)LD(*(const ST *)d[1]);                                                         \
      CONTIGUOUS_STORE(binary_streams(LT_BINARY_##name), ST, o, n, i,                         \
                       STO(FN(x, (CT)LD(y[i]), alpha, ialpha)));                              \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; i++)                                                           \
        *(ST *)(d[0] + i * s[0]) = STO(FN((CT)LD(*(const ST *)(d[1] + i * s[1])),               \
                                          (CT)LD(*(const ST *)(d[2] + i * s[2])), alpha, ialpha)); \
    }                                                                                           \
  }

#define COMPARE_LOOP(name, sfx, ST, CT, LD, FN)                                                 \
  static void compare_##name##_##sfx(char **d, const int64_t *s, int64_t n, const void *ctx) {  \
    (void)ctx;                                                                                   \
    if (s[0] == 1 && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                                 \
      bool *o = (bool *)d[0];                                                                    \
      const ST *x = (const ST *)d[1], *y = (const ST *)d[2];                                     \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = FN((CT)LD(x[i]), (CT)LD(y[i])); \
    } else if (s[0] == 1 && s[1] == sizeof(ST) && s[2] == 0) { /* against a number: x > 0.5 */  \
      bool *o = (bool *)d[0];                                                                    \
      const ST *x = (const ST *)d[1];                                                            \
      const CT yv = (CT)LD(*(const ST *)d[2]);                                                   \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = FN((CT)LD(x[i]), yv);           \
    } else if (s[0] == 1 && s[1] == 0 && s[2] == sizeof(ST)) {                                   \
      bool *o = (bool *)d[0];                                                                    \
      const ST *y = (const ST *)d[2];                                                            \
      const CT xv = (CT)LD(*(const ST *)d[1]);                                                   \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = FN(xv, (CT)LD(y[i]));           \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++)                                                            \
        *(bool *)(d[0] + i * s[0]) = FN((CT)LD(*(const ST *)(d[1] + i * s[1])),                  \
                                        (CT)LD(*(const ST *)(d[2] + i * s[2])));                 \
    }                                                                                            \
  }

/* every dtype, for one op: G(sfx, storage type, compute type, load, store, function suffix) */
#define FOR_FLOAT_TYPES(G, name)                      \
  G(name, f32, float, float, ID, ID, f)                \
  G(name, f64, double, double, ID, ID, d)              \
  G(name, f16, lt_half, float, LD_F16, ST_F16, f)      \
  G(name, bf16, lt_bfloat16, float, LD_BF16, ST_BF16, f)
#define FOR_INT_TYPES(G, name)                        \
  G(name, i64, int64_t, int64_t, ID, ST_I64, i)        \
  G(name, i32, int32_t, int64_t, ID, ST_I32, i)        \
  G(name, i16, int16_t, int64_t, ID, ST_I16, i)        \
  G(name, i8, int8_t, int64_t, ID, ST_I8, i)           \
  G(name, u8, uint8_t, int64_t, ID, ST_U8, i)          \
  G(name, b8, uint8_t, int64_t, TO_BOOL, TO_BOOL, i) /* bools as bytes (see TO_BOOL) */

#define GEN_UNARY(name, sfx, ST, CT, LD, STO, fs) UNARY_LOOP(name, sfx, ST, CT, LD, STO, un_##name##_##fs)
#define GEN_BINARY_F(name, sfx, ST, CT, LD, STO, fs) BINARY_LOOP(name, sfx, ST, CT, LD, STO, bin_##name##_##fs, alpha)
#define GEN_BINARY_I(name, sfx, ST, CT, LD, STO, fs) BINARY_LOOP(name, sfx, ST, CT, LD, STO, bin_##name##_##fs, ialpha)
#define GEN_COMPARE(name, sfx, ST, CT, LD, STO, fs) COMPARE_LOOP(name, sfx, ST, CT, LD, cmp_##name##_##fs)

#define LT_X(name, kind, fbody, ibody) FOR_FLOAT_TYPES(GEN_UNARY, name) FOR_INT_TYPES(GEN_UNARY, name)
LT_UNARY_OPS(LT_X)
#undef LT_X
#define LT_X(name, kind, fbody, ibody) FOR_FLOAT_TYPES(GEN_BINARY_F, name) FOR_INT_TYPES(GEN_BINARY_I, name)
LT_BINARY_OPS(LT_X)
#undef LT_X
#define LT_X(name, body) FOR_FLOAT_TYPES(GEN_COMPARE, name) FOR_INT_TYPES(GEN_COMPARE, name)
LT_COMPARE_OPS(LT_X)
#undef LT_X

/* ---- tables, in lt_dtype order: f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool ---- */
#define ROW(prefix, name) \
  {prefix##name##_f32, prefix##name##_f64, prefix##name##_f16, prefix##name##_bf16, prefix##name##_i64, \
   prefix##name##_i32, prefix##name##_i16, prefix##name##_i8, prefix##name##_u8, prefix##name##_b8},

static const lt_loop_fn unary_table[LT_NUNARY][LT_NDTYPES] = {
#define LT_X(name, kind, fbody, ibody) ROW(unary_, name)
    LT_UNARY_OPS(LT_X)
#undef LT_X
};
static const lt_loop_fn binary_table[LT_NBINARY][LT_NDTYPES] = {
#define LT_X(name, kind, fbody, ibody) ROW(binary_, name)
    LT_BINARY_OPS(LT_X)
#undef LT_X
};
static const lt_loop_fn compare_table[LT_NCOMPARE][LT_NDTYPES] = {
#define LT_X(name, body) ROW(compare_, name)
    LT_COMPARE_OPS(LT_X)
#undef LT_X
};

_Static_assert(sizeof unary_table / sizeof unary_table[0] == LT_NUNARY, "unary table");
_Static_assert(sizeof binary_table / sizeof binary_table[0] == LT_NBINARY, "binary table");
_Static_assert(sizeof compare_table / sizeof compare_table[0] == LT_NCOMPARE, "compare table");
_Static_assert(LT_NDTYPES == 10, "dtype columns of the kernel tables");

lt_loop_fn lt_cpu_unary_loop(lt_unary_op op, lt_dtype dt) {
  if ((unsigned)op >= LT_NUNARY || (unsigned)dt >= LT_NDTYPES) return NULL;
  if (lt_dtype_is_floating(dt) ? lt_unary_int_only(op) : !lt_unary_has_int(op)) return NULL;
  return unary_table[op][dt];
}

lt_loop_fn lt_cpu_binary_loop(lt_binary_op op, lt_dtype dt) {
  if ((unsigned)op >= LT_NBINARY || (unsigned)dt >= LT_NDTYPES) return NULL;
  if (lt_dtype_is_floating(dt) ? lt_binary_int_only(op) : !lt_binary_has_int(op)) return NULL;
  return binary_table[op][dt];
}

lt_loop_fn lt_cpu_compare_loop(lt_compare_op op, lt_dtype dt) {
  if ((unsigned)op >= LT_NCOMPARE || (unsigned)dt >= LT_NDTYPES) return NULL;
  return compare_table[op][dt];
}

/* ---- derivatives of the unary ops: operands out, g, x, y (x or y may be absent: then g) ---- */
#define LT_X(name, ux, uy, body)                                                               \
  static inline __attribute__((always_inline)) float ungrad_##name##_f(float g, float x, float y) { \
    typedef float T; (void)g; (void)x; (void)y; return (T)(body); }                                     \
  static inline __attribute__((always_inline)) double ungrad_##name##_d(double g, double x, double y) { \
    typedef double T; (void)g; (void)x; (void)y; return (T)(body); }
LT_UNARY_GRADS(LT_X)
#undef LT_X

#define UNARY_GRAD_LOOP(name, sfx, ST, CT, LD, STO, FN)                                        \
  static void ungrad_##name##_##sfx(char **d, const int64_t *s, int64_t n, const void *ctx) {   \
    (void)ctx;                                                                                  \
    if (s[0] == sizeof(ST) && s[1] == sizeof(ST) && s[2] == sizeof(ST) && s[3] == sizeof(ST)) { \
      ST *o = (ST *)d[0];                                                                       \
      const ST *g = (const ST *)d[1], *x = (const ST *)d[2], *y = (const ST *)d[3];             \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                       \
        o[i] = STO(FN((CT)LD(g[i]), (CT)LD(x[i]), (CT)LD(y[i])));                               \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; i++)                                                           \
        *(ST *)(d[0] + i * s[0]) = STO(FN((CT)LD(*(const ST *)(d[1] + i * s[1])),               \
                                          (CT)LD(*(const ST *)(d[2] + i * s[2])),               \
                                          (CT)LD(*(const ST *)(d[3] + i * s[3]))));             \
    }                                                                                           \
  }
#define GEN_UNARY_GRAD(name, sfx, ST, CT, LD, STO, fs) UNARY_GRAD_LOOP(name, sfx, ST, CT, LD, STO, ungrad_##name##_##fs)
#define LT_X(name, ux, uy, body) FOR_FLOAT_TYPES(GEN_UNARY_GRAD, name)
LT_UNARY_GRADS(LT_X)
#undef LT_X

static const lt_loop_fn unary_grad_table[][4] = {
#define LT_X(name, ux, uy, body) {ungrad_##name##_f32, ungrad_##name##_f64, ungrad_##name##_f16, ungrad_##name##_bf16},
    LT_UNARY_GRADS(LT_X)
#undef LT_X
};
_Static_assert(sizeof unary_grad_table / sizeof unary_grad_table[0] == LT_NUNARY, "unary grad table");

lt_loop_fn lt_cpu_unary_grad_loop(lt_unary_op op, lt_dtype dt, bool *uses_x, bool *uses_y) {
  if ((unsigned)op >= LT_NUNARY || !lt_dtype_is_floating(dt)) return NULL;
  lt_unary_grad_uses(op, uses_x, uses_y);
  /* float32, float64, float16, bfloat16 are the first four dtypes */
  return unary_grad_table[op][dt];
}

/* ---- where, fill: by element size ---- */
#define WHERE_LOOP(bits)                                                                        \
  static void where_##bits(char **d, const int64_t *s, int64_t n, const void *ctx) {            \
    (void)ctx;                                                                                   \
    typedef uint##bits##_t T;                                                                    \
    const int64_t es = sizeof(T);                                                                \
    /* contiguous output and condition, each value contiguous or one broadcast value: both       \
       values loaded, then selected by the condition read as bytes (GCC does not vectorise a     \
       select on a _Bool, which stayed a scalar branch or cmov: 64 x 512 floats 37 -> 4 us) */  \
    if (s[0] == es && s[1] == 1 && (s[2] == es || s[2] == 0) && (s[3] == es || s[3] == 0)) {    \
      T *o = (T *)(void *)d[0];                                                                  \
      const uint8_t *c = (const uint8_t *)d[1];                                                  \
      const T *a = (const T *)(const void *)d[2], *b = (const T *)(const void *)d[3];            \
      if (s[2] && s[3]) {                                                                        \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                    \
          T va = a[i], vb = b[i];                                                                \
          o[i] = c[i] ? va : vb;                                                                 \
        }                                                                                        \
      } else if (s[2]) {                                                                         \
        const T vb = *b;                                                                         \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                    \
          T va = a[i];                                                                           \
          o[i] = c[i] ? va : vb;                                                                 \
        }                                                                                        \
      } else if (s[3]) {                                                                         \
        const T va = *a;                                                                         \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                    \
          T vb = b[i];                                                                           \
          o[i] = c[i] ? va : vb;                                                                 \
        }                                                                                        \
      } else {                                                                                   \
        const T va = *a, vb = *b;                                                                \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = c[i] ? va : vb;               \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                            \
      T va = *(const T *)(const void *)(d[2] + i * s[2]), vb = *(const T *)(const void *)(d[3] + i * s[3]); \
      *(T *)(void *)(d[0] + i * s[0]) = *(const bool *)(d[1] + i * s[1]) ? va : vb;             \
    }                                                                                            \
  }                                                                                              \
  static void fill_##bits(char **d, const int64_t *s, int64_t n, const void *ctx) {             \
    uint##bits##_t v;                                                                            \
    memcpy(&v, ctx, sizeof v);                                                                   \
    if (s[0] == sizeof v) {                                                                      \
      uint##bits##_t *o = (uint##bits##_t *)d[0];                                                \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = v;                              \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++) *(uint##bits##_t *)(d[0] + i * s[0]) = v;                  \
    }                                                                                            \
  }
WHERE_LOOP(8)
WHERE_LOOP(16)
WHERE_LOOP(32)
WHERE_LOOP(64)

lt_loop_fn lt_cpu_where_loop(size_t size) {
  switch (size) {
    case 1: return where_8;
    case 2: return where_16;
    case 4: return where_32;
    case 8: return where_64;
    default: return NULL;
  }
}

lt_loop_fn lt_cpu_fill_loop(size_t size) {
  switch (size) {
    case 1: return fill_8;
    case 2: return fill_16;
    case 4: return fill_32;
    case 8: return fill_64;
    default: return NULL;
  }
}

/* ---- clamp between two numbers: one pass where maximum then minimum take two ---- */
#define CLAMP_LOOP(T)                                                                            \
  static void clamp_##T(char **d, const int64_t *s, int64_t n, const void *ctx) {               \
    const double *b = ctx;                                                                       \
    const T lo = (T)b[0], hi = (T)b[1];                                                          \
    if (s[0] == sizeof(T) && s[1] == sizeof(T) && lo == lo && hi == hi) {                       \
      /* the same values: the hardware's max and min ((a > b) ? a : b, and <) and x where x is    \
         NaN, 4 instructions a vector instead of 8 */                                            \
      T *o = (T *)(void *)d[0];                                                                  \
      const T *x = (const T *)(const void *)d[1];                                                \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                      \
        T v = x[i], m = v > lo ? v : lo;                                                         \
        m = m < hi ? m : hi;                                                                     \
        o[i] = v != v ? v : m;                                                                   \
      }                                                                                          \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++) {                                                          \
        T v = *(const T *)(const void *)(d[1] + i * s[1]);                                       \
        v = v != v || v > lo ? v : lo;                                                           \
        *(T *)(void *)(d[0] + i * s[0]) = v != v || v < hi ? v : hi;                             \
      }                                                                                          \
    }                                                                                            \
  }
CLAMP_LOOP(float)
CLAMP_LOOP(double)

lt_loop_fn lt_cpu_clamp_loop(lt_dtype dt) {
  return dt == LT_FLOAT32 ? clamp_float : dt == LT_FLOAT64 ? clamp_double : NULL;
}

/* ---- a transposing copy: dst[r * C + c] = src[r + c * sc] ---- */
/* A copy that walks dst contiguously reads src a row's stride apart (sc elements), and where that
   stride is a multiple of CONFLICT bytes those reads fall in one or two sets of the L1 cache,
   which holds 8-16 of their lines (x:t():contiguous() of 64 x 512 floats: 2.2 ns an element;
   512 x 64, 0.6). The caller uses the iterator's copy otherwise (lt_cpu_transpose_conflicts).
   Here, tiles of TB x TB: when dst's rows do not conflict too, each tile reads TB runs along r
   (one 64-byte line of floats each) and writes dst TB apart (64 x 512: 0.35 ns an element);
   when they do (512 x 512), through a buffer: each of src's runs read into a row of it, then
   each of dst's runs written from a column, every line touched once a tile (0.66 ns). */
#define CONFLICT 1024
#define TB 16
#define TCOPY(T)                                                                                 \
  static void tcopy_##T(void *dst_, const void *src_, int64_t R, int64_t C, int64_t sc, int64_t c0, \
                        int64_t c1, bool buffered) {                                             \
    T *dst = dst_, buf[TB][TB];                                                                  \
    const T *src = src_;                                                                         \
    for (int64_t rb = 0; rb < R; rb += TB) {                                                     \
      int64_t rn = R - rb < TB ? R - rb : TB;                                                    \
      for (int64_t cb = c0; cb < c1; cb += TB) {                                                 \
        int64_t cn = c1 - cb < TB ? c1 - cb : TB;                                                \
        if (!buffered) {                                                                         \
          for (int64_t c = 0; c < cn; c++) {                                                     \
            const T *s = src + rb + (cb + c) * sc;                                               \
            T *d = dst + rb * C + cb + c;                                                        \
            for (int64_t r = 0; r < rn; r++) d[r * C] = s[r];                                    \
          }                                                                                      \
          continue;                                                                              \
        }                                                                                        \
        for (int64_t c = 0; c < cn; c++) {                                                       \
          const T *s = src + rb + (cb + c) * sc;                                                 \
          for (int64_t r = 0; r < rn; r++) buf[c][r] = s[r];                                     \
        }                                                                                        \
        for (int64_t r = 0; r < rn; r++) {                                                       \
          T *d = dst + (rb + r) * C + cb;                                                        \
          for (int64_t c = 0; c < cn; c++) d[c] = buf[c][r];                                     \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }
TCOPY(uint8_t)
TCOPY(uint16_t)
TCOPY(uint32_t)
TCOPY(uint64_t)
#undef TB

/* ---- strided copies of one element size, rows in plain loops ---- */
#define COPY_ROWS(T)                                                                             \
  static void copy_rows_##T(char *dst, const char *src, int64_t n0, int64_t d0, int64_t s0,      \
                            int64_t n1, int64_t d1, int64_t s1) {                                \
    const int64_t es = (int64_t)sizeof(T);                                                       \
    if (d0 == es && s0 == es) {                                                                  \
      for (int64_t j = 0; j < n1; j++) memcpy(dst + j * d1, src + j * s1, (size_t)(n0 * es));    \
    } else if (d0 == es && s0 == 0) { /* an expanded source: fills */                            \
      for (int64_t j = 0; j < n1; j++) {                                                         \
        T *o = (T *)(dst + j * d1);                                                              \
        const T v = *(const T *)(src + j * s1);                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < n0; i++) o[i] = v;                           \
      }                                                                                          \
    } else if (d0 == es && s0 % es == 0) { /* gathers */                                         \
      const int64_t st = s0 / es;                                                                \
      for (int64_t j = 0; j < n1; j++) {                                                         \
        T *o = (T *)(dst + j * d1);                                                              \
        const T *x = (const T *)(src + j * s1);                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < n0; i++) o[i] = x[i * st];                   \
      }                                                                                          \
    } else {                                                                                     \
      for (int64_t j = 0; j < n1; j++)                                                           \
        for (int64_t i = 0; i < n0; i++)                                                         \
          *(T *)(dst + j * d1 + i * d0) = *(const T *)(src + j * s1 + i * s0);                   \
    }                                                                                            \
  }
COPY_ROWS(uint8_t)
COPY_ROWS(uint16_t)
COPY_ROWS(uint32_t)
COPY_ROWS(uint64_t)
#undef COPY_ROWS

void lt_cpu_copy_rows(size_t es, char *dst, const char *src, int64_t n0, int64_t d0, int64_t s0, int64_t n1,
                      int64_t d1, int64_t s1) {
  switch (es) {
    case 1: copy_rows_uint8_t(dst, src, n0, d0, s0, n1, d1, s1); break;
    case 2: copy_rows_uint16_t(dst, src, n0, d0, s0, n1, d1, s1); break;
    case 4: copy_rows_uint32_t(dst, src, n0, d0, s0, n1, d1, s1); break;
    default: copy_rows_uint64_t(dst, src, n0, d0, s0, n1, d1, s1); break;
  }
}

bool lt_cpu_transpose_conflicts(size_t es, int64_t sc) { return ((int64_t)es * sc) % CONFLICT == 0; }

void lt_cpu_transpose_copy(size_t es, void *dst, const void *src, int64_t R, int64_t C, int64_t sc, int nt) {
  void (*f)(void *, const void *, int64_t, int64_t, int64_t, int64_t, int64_t, bool) =
      es == 1 ? tcopy_uint8_t : es == 2 ? tcopy_uint16_t : es == 4 ? tcopy_uint32_t : tcopy_uint64_t;
  bool buffered = ((int64_t)es * C) % CONFLICT == 0;
  LT_WORKERS(nt, { f(dst, src, R, C, sc, C * lt_w / lt_nw, C * (lt_w + 1) / lt_nw, buffered); });
}
#undef CONFLICT

/* ---- casts: every (dst, src) pair. A source loads as double (floating) or int64 (integral);
   a destination stores from either. ---- */
#define f32_FROM_F(x) ((float)(x))
#define f32_FROM_I(x) ((float)(x))
#define f64_FROM_F(x) ((double)(x))
#define f64_FROM_I(x) ((double)(x))
#define f16_FROM_F(x) lt_float_to_half((float)(x))
#define f16_FROM_I(x) lt_float_to_half((float)(x))
#define bf16_FROM_F(x) lt_float_to_bf16((float)(x))
#define bf16_FROM_I(x) lt_float_to_bf16((float)(x))
#define i64_FROM_F(x) ((int64_t)(x))
#define i64_FROM_I(x) ((int64_t)(x))
#define i32_FROM_F(x) ((int32_t)(int64_t)(x))
#define i32_FROM_I(x) ((int32_t)(x))
#define i16_FROM_F(x) ((int16_t)(int64_t)(x))
#define i16_FROM_I(x) ((int16_t)(x))
#define i8_FROM_F(x) ((int8_t)(int64_t)(x))
#define i8_FROM_I(x) ((int8_t)(x))
#define u8_FROM_F(x) ((uint8_t)(int64_t)(x))
#define u8_FROM_I(x) ((uint8_t)(x))
#define b8_FROM_F(x) ((x) != 0)
#define b8_FROM_I(x) ((x) != 0)

#define CAST_LOOP(dsfx, DT, ssfx, SRCT, LD, K)                                                   \
  static void cast_##dsfx##_##ssfx(char **d, const int64_t *s, int64_t n, const void *ctx) {     \
    (void)ctx;                                                                                    \
    if (s[0] == sizeof(DT) && s[1] == sizeof(SRCT)) {                                             \
      DT *o = (DT *)d[0];                                                                         \
      const SRCT *x = (const SRCT *)d[1];                                                         \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = dsfx##_FROM_##K(LD(x[i]));       \
    } else if (s[0] == sizeof(DT) && s[1] == 0) { /* an expanded value: a fill */                 \
      DT *o = (DT *)d[0];                                                                         \
      const DT v = dsfx##_FROM_##K(LD(*(const SRCT *)d[1]));                                      \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = v;                               \
    } else if (s[0] == sizeof(DT) && s[1] % (int64_t)sizeof(SRCT) == 0) { /* a gather */           \
      DT *o = (DT *)d[0];                                                                         \
      const SRCT *x = (const SRCT *)d[1];                                                         \
      const int64_t st = s[1] / (int64_t)sizeof(SRCT);                                            \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = dsfx##_FROM_##K(LD(x[i * st]));  \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++)                                                             \
        *(DT *)(d[0] + i * s[0]) = dsfx##_FROM_##K(LD(*(const SRCT *)(d[1] + i * s[1])));         \
    }                                                                                             \
  }

#define CAST_FROM_ALL(dsfx, DT)                         \
  CAST_LOOP(dsfx, DT, f32, float, ID, F)                \
  CAST_LOOP(dsfx, DT, f64, double, ID, F)               \
  CAST_LOOP(dsfx, DT, f16, lt_half, LD_F16, F)          \
  CAST_LOOP(dsfx, DT, bf16, lt_bfloat16, LD_BF16, F)    \
  CAST_LOOP(dsfx, DT, i64, int64_t, ID, I)              \
  CAST_LOOP(dsfx, DT, i32, int32_t, ID, I)              \
  CAST_LOOP(dsfx, DT, i16, int16_t, ID, I)              \
  CAST_LOOP(dsfx, DT, i8, int8_t, ID, I)                \
  CAST_LOOP(dsfx, DT, u8, uint8_t, ID, I)               \
  CAST_LOOP(dsfx, DT, b8, uint8_t, TO_BOOL, I)

CAST_FROM_ALL(f32, float)
CAST_FROM_ALL(f64, double)
CAST_FROM_ALL(f16, lt_half)
CAST_FROM_ALL(bf16, lt_bfloat16)
CAST_FROM_ALL(i64, int64_t)
CAST_FROM_ALL(i32, int32_t)
CAST_FROM_ALL(i16, int16_t)
CAST_FROM_ALL(i8, int8_t)
CAST_FROM_ALL(u8, uint8_t)
CAST_FROM_ALL(b8, bool)

#define CAST_ROW2(dsfx) \
  {cast_##dsfx##_f32, cast_##dsfx##_f64, cast_##dsfx##_f16, cast_##dsfx##_bf16, cast_##dsfx##_i64, \
   cast_##dsfx##_i32, cast_##dsfx##_i16, cast_##dsfx##_i8, cast_##dsfx##_u8, cast_##dsfx##_b8},
static const lt_loop_fn cast_table[LT_NDTYPES][LT_NDTYPES] = {
    CAST_ROW2(f32) CAST_ROW2(f64) CAST_ROW2(f16) CAST_ROW2(bf16) CAST_ROW2(i64)
    CAST_ROW2(i32) CAST_ROW2(i16) CAST_ROW2(i8) CAST_ROW2(u8) CAST_ROW2(b8)};

lt_loop_fn lt_cpu_cast_loop(lt_dtype dst, lt_dtype src) {
  if ((unsigned)dst >= LT_NDTYPES || (unsigned)src >= LT_NDTYPES) return NULL;
  return cast_table[dst][src];
}
