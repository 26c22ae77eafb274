/* The CPU reduction and scan loops. Every (reduction, input dtype) gets a set of small loops
   expanded from the math in kernels/reduce.h:
     row      fold a row of elements into one accumulator (contiguous rows: an OpenMP simd
              reduction for sums and counts, LANES independent accumulators updated side by side
              and then combined for the others, two passes for var, std and logsumexp);
     cols     fold one element into each of n accumulators (a row of the input across n outputs,
              contiguous: vectorised); cols4 four rows at once;
     combine  combine n pairs of accumulators;
     fin      the results (and indices) of n accumulators, as double or int64;
     scan     running results (and indices) along a row (cumsum, cumprod, logcumsumexp, cummax,
              cummin).
   Two drivers use them. When a reduced dimension is the input's innermost one, each output folds
   its rows (INNER); when a kept dimension is innermost, blocks of outputs accumulate whole input rows
   (OUTER: out[j] += x[i][j], contiguous in j). Both thread with OpenMP over outputs, or, when there
   are few outputs, over parts of the reduced range whose partial accumulators are then combined. */
#include "kernels/cpu/reduce.h"

#include "core/iter.h"
#include "kernels/fastmath.h"
#include "kernels/half.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define LANES 8     /* independent accumulators of a contiguous row */
#define BLOCK 256   /* outputs accumulated together by the OUTER driver */
#define SBLOCK 2048 /* lines scanned together */
#define ACC_MAX 32  /* bytes: the largest accumulator */

typedef struct {
  size_t acc_size;
  int idomain; /* results are int64 (else double) */
  void (*init)(void *acc, int64_t n);
  void (*row)(void *acc, const char *x, int64_t s, int64_t n, int64_t i0, const lt_reduce_params_t *p);
  void (*cols)(void *acc, const char *x, int64_t s, int64_t n, int64_t i, const lt_reduce_params_t *p);
  /* cols over four rows (positions i..i+3): a quarter of the accumulator traffic */
  void (*cols4)(void *acc, const char *const *x, int64_t s, int64_t n, int64_t i, const lt_reduce_params_t *p);
  void (*combine)(void *a, const void *b, int64_t n);
  void (*fin)(const void *acc, int64_t n, void *vals, int64_t *idx, const lt_reduce_params_t *p);
} fns_t;
/* scan n elements at positions k0.. along the line: their running results (and indices) */
typedef void (*scan_fn)(void *acc, const char *x, int64_t s, int64_t n, int64_t k0, void *vals, int64_t *idx,
                        const lt_reduce_params_t *p);

/* ---- loading an element into its domain ---- */
#define LD_f32(v) ((double)(v))
#define LD_f64(v) (v)
#define LD_f16(v) ((double)lt_half_to_float(v))
#define LD_bf16(v) ((double)lt_bf16_to_float(v))
#define LD_i64(v) ((int64_t)(v))
#define LD_i32(v) ((int64_t)(v))
#define LD_i16(v) ((int64_t)(v))
#define LD_i8(v) ((int64_t)(v))
#define LD_u8(v) ((int64_t)(v))
#define LD_b8(v) ((int64_t)((v) != 0)) /* bools as bytes: GCC vectorises no _Bool load */
#define VT_f double
#define VT_i int64_t
#define IS_I_f 0
#define IS_I_i 1

/* ---- the loops of one (op, dtype): ST the storage type, D the domain (f or i), K the kind ---- */
#define ACC(op, D) lt_red_##op##_##D##_t
#define FN(op, D, what) lt_red_##op##_##D##_##what

/* row: LANES accumulators side by side over contiguous data, one in order otherwise */
#define ROW_LANES(op, sfx, ST, D)                                                                   \
  static void row_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i0,          \
                               const lt_reduce_params_t *pp) {                                       \
    ACC(op, D) *acc = accp;                                                                          \
    lt_reduce_params_t p = *pp;                                                                      \
    if (s == (int64_t)sizeof(ST) && n >= 2 * LANES) {                                                \
      const ST *px = (const ST *)x;                                                                  \
      ACC(op, D) a[LANES];                                                                           \
      for (int k = 0; k < LANES; k++) a[k] = FN(op, D, init)();                                     \
      int64_t i = 0;                                                                                 \
      for (; i + LANES <= n; i += LANES)                                                             \
        _Pragma("GCC unroll 8") /* unrolled: the lanes stay in registers */                          \
        for (int k = 0; k < LANES; k++)                                                              \
          a[k] = FN(op, D, update)(a[k], LD_##sfx(px[i + k]), i0 + i + k, p);                        \
      for (; i < n; i++) a[0] = FN(op, D, update)(a[0], LD_##sfx(px[i]), i0 + i, p);               \
      for (int k = 1; k < LANES; k++) a[0] = FN(op, D, combine)(a[0], a[k]);                        \
      *acc = FN(op, D, combine)(*acc, a[0]);                                                         \
    } else {                                                                                         \
      ACC(op, D) a = *acc;                                                                           \
      for (int64_t i = 0; i < n; i++)                                                                \
        a = FN(op, D, update)(a, LD_##sfx(*(const ST *)(x + i * s)), i0 + i, p);                     \
      *acc = a;                                                                                      \
    }                                                                                                \
  }

#define LT_STR(x) #x
#define LT_PRAGMA(x) _Pragma(LT_STR(x))

/* row for amax and amin: four accumulators over four quarters of a contiguous row, one OpenMP
   simd reduction, so that four vectors are independent chains (one vector, as a simd reduction of
   one accumulator keeps, waits on its compare and blend every step) */
#define ROW_QUARTERS(op, sfx, ST, D)                                                                \
  static void row_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i0,          \
                               const lt_reduce_params_t *pp) {                                       \
    ACC(op, D) *acc = accp;                                                                          \
    lt_reduce_params_t p = *pp;                                                                      \
    ACC(op, D) a = *acc;                                                                             \
    int64_t i = 0;                                                                                   \
    if (s == (int64_t)sizeof(ST) && n >= 64) {                                                       \
      const ST *px = (const ST *)x;                                                                  \
      int64_t q = n / 4;                                                                             \
      ACC(op, D) a1 = FN(op, D, init)(), a2 = a1, a3 = a1;                                          \
      LT_PRAGMA(omp declare reduction(rq : ACC(op, D) : omp_out = FN(op, D, combine)(omp_out, omp_in)) \
                initializer(omp_priv = FN(op, D, init)()))                                           \
      LT_PRAGMA(omp simd reduction(rq : a, a1, a2, a3))                                              \
      for (int64_t j = 0; j < q; j++) {                                                              \
        a = FN(op, D, update)(a, LD_##sfx(px[j]), i0 + j, p);                                        \
        a1 = FN(op, D, update)(a1, LD_##sfx(px[q + j]), i0 + q + j, p);                              \
        a2 = FN(op, D, update)(a2, LD_##sfx(px[2 * q + j]), i0 + 2 * q + j, p);                      \
        a3 = FN(op, D, update)(a3, LD_##sfx(px[3 * q + j]), i0 + 3 * q + j, p);                      \
      }                                                                                              \
      a = FN(op, D, combine)(FN(op, D, combine)(a, a1), FN(op, D, combine)(a2, a3));                 \
      i = 4 * q;                                                                                     \
    }                                                                                                \
    for (; i < n; i++) a = FN(op, D, update)(a, LD_##sfx(*(const ST *)(x + i * s)), i0 + i, p);     \
    *acc = a;                                                                                        \
  }

/* row for reductions whose update vectorises (sums, counts): an OpenMP simd reduction with the
   op's own combine and init, in vector registers */
#define ROW_SIMD(op, sfx, ST, D)                                                                    \
  static void row_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i0,          \
                               const lt_reduce_params_t *pp) {                                       \
    ACC(op, D) *acc = accp;                                                                          \
    ACC(op, D) a = *acc;                                                                             \
    lt_reduce_params_t p = *pp;                                                                      \
    if (s == (int64_t)sizeof(ST)) {                                                                  \
      const ST *px = (const ST *)x;                                                                  \
      LT_PRAGMA(omp declare reduction(rd : ACC(op, D) : omp_out = FN(op, D, combine)(omp_out, omp_in)) \
                initializer(omp_priv = FN(op, D, init)()))                                           \
      LT_PRAGMA(omp simd reduction(rd : a))                                                          \
      for (int64_t i = 0; i < n; i++) a = FN(op, D, update)(a, LD_##sfx(px[i]), i0 + i, p);         \
    } else {                                                                                         \
      for (int64_t i = 0; i < n; i++)                                                                \
        a = FN(op, D, update)(a, LD_##sfx(*(const ST *)(x + i * s)), i0 + i, p);                     \
    }                                                                                                \
    *acc = a;                                                                                        \
  }

/* row for var and std: two passes in double over the row (mean, then the compensated sum of
   squared deviations), merged into the running (count, mean, M2) by the shared combine */
#define ROW_MOMENTS(op, sfx, ST, D)                                                                 \
  static void row_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i0,          \
                               const lt_reduce_params_t *pp) {                                       \
    (void)i0; (void)pp;                                                                              \
    if (n <= 0) return;                                                                              \
    ACC(op, D) *acc = accp;                                                                          \
    double sum = 0, dev = 0, m2 = 0;                                                                 \
    if (s == (int64_t)sizeof(ST)) {                                                                  \
      const ST *px = (const ST *)x;                                                                  \
      _Pragma("omp simd reduction(+:sum)") for (int64_t i = 0; i < n; i++) sum += LD_##sfx(px[i]);  \
      double mean = sum / (double)n;                                                                 \
      _Pragma("omp simd reduction(+:dev, m2)") for (int64_t i = 0; i < n; i++) {                     \
        double d = LD_##sfx(px[i]) - mean;                                                           \
        dev += d;                                                                                    \
        m2 += d * d;                                                                                 \
      }                                                                                              \
    } else {                                                                                         \
      for (int64_t i = 0; i < n; i++) sum += LD_##sfx(*(const ST *)(x + i * s));                   \
      double mean = sum / (double)n;                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                              \
        double d = LD_##sfx(*(const ST *)(x + i * s)) - mean;                                        \
        dev += d;                                                                                    \
        m2 += d * d;                                                                                 \
      }                                                                                              \
    }                                                                                                \
    ACC(op, D) b;                                                                                    \
    b.n = (double)n;                                                                                 \
    b.mean = sum / (double)n + dev / (double)n;                                                      \
    b.m2 = m2 - dev * dev / (double)n;                                                               \
    *acc = FN(op, D, combine)(*acc, b);                                                              \
  }

/* row for logsumexp: two passes, the NaN-propagating maximum m (vectorised), then the sum of
   exp(x - shift(m)) in double (vectorised: float inputs use the vectorisable lt_expf, as PyTorch
   computes float exponentials in float; float64 uses libm's exp); merged by the shared combine */
/* exp(x - c) for an element x loaded as double; c is an element's value or 0, exact in float for
   the float types, so their exponent is computed all in float */
#define EXPD_f32(x, c) ((double)lt_expf((float)(x) - (float)(c)))
#define EXPD_f16(x, c) ((double)lt_expf((float)(x) - (float)(c)))
#define EXPD_bf16(x, c) ((double)lt_expf((float)(x) - (float)(c)))
#define EXPD_f64(x, c) exp((x) - (c))
#define ROW_LSE(op, sfx, ST, D)                                                                     \
  static void row_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i0,          \
                               const lt_reduce_params_t *pp) {                                       \
    (void)i0; (void)pp;                                                                              \
    if (n <= 0) return;                                                                              \
    ACC(op, D) *acc = accp;                                                                          \
    double m = -INFINITY, sum = 0;                                                                   \
    if (s == (int64_t)sizeof(ST)) {                                                                  \
      const ST *px = (const ST *)x;                                                                  \
      LT_PRAGMA(omp declare reduction(rmax : double : omp_out = lt_red_fmax(omp_out, omp_in))        \
                initializer(omp_priv = -INFINITY))                                                   \
      LT_PRAGMA(omp simd reduction(rmax : m))                                                        \
      for (int64_t i = 0; i < n; i++) m = lt_red_fmax(m, LD_##sfx(px[i]));                          \
      double c = lt_red_lse_shift(m);                                                                \
      if (m == m) {                                                                                  \
        _Pragma("omp simd reduction(+:sum)") for (int64_t i = 0; i < n; i++)                         \
          sum += EXPD_##sfx(LD_##sfx(px[i]), c);                                                     \
      }                                                                                              \
    } else {                                                                                         \
      for (int64_t i = 0; i < n; i++) m = lt_red_fmax(m, LD_##sfx(*(const ST *)(x + i * s)));       \
      double c = lt_red_lse_shift(m);                                                                \
      if (m == m)                                                                                    \
        for (int64_t i = 0; i < n; i++) sum += EXPD_##sfx(LD_##sfx(*(const ST *)(x + i * s)), c);    \
    }                                                                                                \
    ACC(op, D) b;                                                                                    \
    b.m = m;                                                                                         \
    b.s = m == m ? sum : m;                                                                          \
    *acc = FN(op, D, combine)(*acc, b);                                                              \
  }

/* which row loop each reduction uses */
#define ROWGEN_sum ROW_SIMD
#define ROWGEN_prod ROW_SIMD
#define ROWGEN_mean ROW_SIMD
#define ROWGEN_var ROW_MOMENTS
#define ROWGEN_std ROW_MOMENTS
#define ROWGEN_norm0 ROW_SIMD
#define ROWGEN_norm1 ROW_SIMD
#define ROWGEN_norm2 ROW_SIMD
#define ROWGEN_normp ROW_LANES
#define ROWGEN_norminf ROW_LANES
#define ROWGEN_normninf ROW_LANES
#define ROWGEN_logsumexp ROW_LSE
#define ROWGEN_amax ROW_QUARTERS
#define ROWGEN_amin ROW_QUARTERS
#define ROWGEN_argmax ROW_LANES
#define ROWGEN_argmin ROW_LANES
#define ROWGEN_cummax ROW_LANES
#define ROWGEN_cummin ROW_LANES
#define ROWGEN_any ROW_SIMD
#define ROWGEN_all ROW_SIMD

/* fin writes indices for arg reductions (kind 1) */
#define FIN_IDX_0(op, D) (void)idx;
#define FIN_IDX_1(op, D) \
  if (idx)               \
    for (int64_t k = 0; k < n; k++) idx[k] = FN(op, D, index)(a[k]);

#define GEN(op, sfx, ST, D, K)                                                                      \
  _Static_assert(sizeof(ACC(op, D)) <= ACC_MAX, "accumulator size");                                \
  static void init_##op##_##sfx(void *accp, int64_t n) {                                             \
    ACC(op, D) *a = accp;                                                                            \
    for (int64_t k = 0; k < n; k++) a[k] = FN(op, D, init)();                                        \
  }                                                                                                  \
  ROWGEN_##op(op, sfx, ST, D)                                                                        \
  static void cols_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t i,          \
                                const lt_reduce_params_t *pp) {                                      \
    ACC(op, D) *a = accp;                                                                            \
    lt_reduce_params_t p = *pp;                                                                      \
    if (s == (int64_t)sizeof(ST)) {                                                                  \
      const ST *px = (const ST *)x;                                                                  \
      _Pragma("omp simd") for (int64_t k = 0; k < n; k++)                                            \
        a[k] = FN(op, D, update)(a[k], LD_##sfx(px[k]), i, p);                                       \
    } else {                                                                                         \
      for (int64_t k = 0; k < n; k++)                                                                \
        a[k] = FN(op, D, update)(a[k], LD_##sfx(*(const ST *)(x + k * s)), i, p);                    \
    }                                                                                                \
  }                                                                                                  \
  static void cols4_##op##_##sfx(void *accp, const char *const *x, int64_t s, int64_t n, int64_t i,  \
                                 const lt_reduce_params_t *pp) {                                     \
    ACC(op, D) *a = accp;                                                                            \
    lt_reduce_params_t p = *pp;                                                                      \
    const char *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];                                       \
    if (s == (int64_t)sizeof(ST)) {                                                                  \
      const ST *p0 = (const ST *)x0, *p1 = (const ST *)x1, *p2 = (const ST *)x2, *p3 = (const ST *)x3; \
      _Pragma("omp simd") for (int64_t k = 0; k < n; k++) {                                          \
        ACC(op, D) b = FN(op, D, update)(a[k], LD_##sfx(p0[k]), i, p);                               \
        b = FN(op, D, update)(b, LD_##sfx(p1[k]), i + 1, p);                                         \
        b = FN(op, D, update)(b, LD_##sfx(p2[k]), i + 2, p);                                         \
        a[k] = FN(op, D, update)(b, LD_##sfx(p3[k]), i + 3, p);                                      \
      }                                                                                              \
    } else {                                                                                         \
      for (int64_t k = 0; k < n; k++) {                                                              \
        ACC(op, D) b = FN(op, D, update)(a[k], LD_##sfx(*(const ST *)(x0 + k * s)), i, p);           \
        b = FN(op, D, update)(b, LD_##sfx(*(const ST *)(x1 + k * s)), i + 1, p);                     \
        b = FN(op, D, update)(b, LD_##sfx(*(const ST *)(x2 + k * s)), i + 2, p);                     \
        a[k] = FN(op, D, update)(b, LD_##sfx(*(const ST *)(x3 + k * s)), i + 3, p);                  \
      }                                                                                              \
    }                                                                                                \
  }                                                                                                  \
  static void comb_##op##_##sfx(void *ap, const void *bp, int64_t n) {                               \
    ACC(op, D) *a = ap;                                                                              \
    const ACC(op, D) *b = bp;                                                                        \
    for (int64_t k = 0; k < n; k++) a[k] = FN(op, D, combine)(a[k], b[k]);                           \
  }                                                                                                  \
  static void fin_##op##_##sfx(const void *accp, int64_t n, void *valsp, int64_t *idx,               \
                               const lt_reduce_params_t *pp) {                                       \
    const ACC(op, D) *a = accp;                                                                      \
    VT_##D *vals = valsp;                                                                            \
    lt_reduce_params_t p = *pp;                                                                      \
    for (int64_t k = 0; k < n; k++) vals[k] = FN(op, D, result)(a[k], p);                            \
    FIN_IDX_##K(op, D)                                                                               \
  }                                                                                                  \

/* scans: sum (cumsum), prod (cumprod), logsumexp (logcumsumexp), and cummax and cummin, which
   also write the index of each running extreme */
#define SCAN_IDX_0(op, D) (void)idx;
#define SCAN_IDX_1(op, D) idx[k] = FN(op, D, index)(a);
#define SCAN_LOOP(op, sfx, ST, D, K)                                                                \
  static void scan_##op##_##sfx(void *accp, const char *x, int64_t s, int64_t n, int64_t k0,         \
                                void *valsp, int64_t *idx, const lt_reduce_params_t *pp) {           \
    ACC(op, D) a = *(ACC(op, D) *)accp;                                                              \
    VT_##D *vals = valsp;                                                                            \
    lt_reduce_params_t p = *pp;                                                                      \
    for (int64_t k = 0; k < n; k++) {                                                                \
      a = FN(op, D, update)(a, LD_##sfx(*(const ST *)(x + k * s)), k0 + k, p);                       \
      vals[k] = FN(op, D, result)(a, p);                                                             \
      SCAN_IDX_##K(op, D)                                                                            \
    }                                                                                                \
    *(ACC(op, D) *)accp = a;                                                                         \
  }

#define ENTRY(op, sfx, ST, D, K)                                                                    \
  {sizeof(ACC(op, D)), IS_I_##D, init_##op##_##sfx, row_##op##_##sfx, cols_##op##_##sfx,           \
   cols4_##op##_##sfx, comb_##op##_##sfx, fin_##op##_##sfx},

/* the dtypes in lt_dtype order: G(op, suffix, storage type, domain, kind) */
#define FOR_F_TYPES(G, op, K) \
  G(op, f32, float, f, K) G(op, f64, double, f, K) G(op, f16, lt_half, f, K) G(op, bf16, lt_bfloat16, f, K)
#define FOR_I_TYPES(G, op, K)                                                                  \
  G(op, i64, int64_t, i, K) G(op, i32, int32_t, i, K) G(op, i16, int16_t, i, K)               \
  G(op, i8, int8_t, i, K) G(op, u8, uint8_t, i, K) G(op, b8, uint8_t, i, K)

#define GEN_I_LT_RED_INTS(op, K) FOR_I_TYPES(GEN, op, K)
#define GEN_I_LT_RED_FLOATS(op, K)
#define LT_X(name, domains, kind) FOR_F_TYPES(GEN, name, kind) GEN_I_##domains(name, kind)
LT_REDUCE_OPS(LT_X)
#undef LT_X

#define ENTRY_I_LT_RED_INTS(op, K) FOR_I_TYPES(ENTRY, op, K)
#define ENTRY_I_LT_RED_FLOATS(op, K)
static const fns_t table[LT_NREDUCE][LT_NDTYPES] = {
#define LT_X(name, domains, kind) {FOR_F_TYPES(ENTRY, name, kind) ENTRY_I_##domains(name, kind)},
    LT_REDUCE_OPS(LT_X)
#undef LT_X
};
_Static_assert(sizeof table / sizeof table[0] == LT_NREDUCE, "reduction table");

FOR_F_TYPES(SCAN_LOOP, sum, 0) FOR_I_TYPES(SCAN_LOOP, sum, 0)
FOR_F_TYPES(SCAN_LOOP, prod, 0) FOR_I_TYPES(SCAN_LOOP, prod, 0)
FOR_F_TYPES(SCAN_LOOP, logsumexp, 0)
FOR_F_TYPES(SCAN_LOOP, cummax, 1) FOR_I_TYPES(SCAN_LOOP, cummax, 1)
FOR_F_TYPES(SCAN_LOOP, cummin, 1) FOR_I_TYPES(SCAN_LOOP, cummin, 1)
#define SCAN_ENTRY(op, sfx, ST, D, K) scan_##op##_##sfx,
/* NULL: not a scan */
static const scan_fn scan_table[LT_NREDUCE][LT_NDTYPES] = {
    [LT_REDUCE_sum] = {FOR_F_TYPES(SCAN_ENTRY, sum, 0) FOR_I_TYPES(SCAN_ENTRY, sum, 0)},
    [LT_REDUCE_prod] = {FOR_F_TYPES(SCAN_ENTRY, prod, 0) FOR_I_TYPES(SCAN_ENTRY, prod, 0)},
    [LT_REDUCE_logsumexp] = {FOR_F_TYPES(SCAN_ENTRY, logsumexp, 0)},
    [LT_REDUCE_cummax] = {FOR_F_TYPES(SCAN_ENTRY, cummax, 1) FOR_I_TYPES(SCAN_ENTRY, cummax, 1)},
    [LT_REDUCE_cummin] = {FOR_F_TYPES(SCAN_ENTRY, cummin, 1) FOR_I_TYPES(SCAN_ENTRY, cummin, 1)}};
_Static_assert(LT_NDTYPES == 10, "dtype columns of the reduction table");

bool lt_cpu_reduce_supported(lt_reduce_op op, lt_dtype dt) {
  return (unsigned)op < LT_NREDUCE && (unsigned)dt < LT_NDTYPES && table[op][dt].init != NULL;
}

/* ---- storing results (double or int64) as the output dtype ---- */
typedef union {
  double d[BLOCK];
  int64_t i[BLOCK];
} vals_t;

#define STORE_LOOP(V)                                                                              \
  switch (odt) {                                                                                  \
  case LT_FLOAT32: for (int64_t k = 0; k < n; k++) *(float *)(out + k * os) = (float)V[k]; break;  \
  case LT_FLOAT64: for (int64_t k = 0; k < n; k++) *(double *)(out + k * os) = (double)V[k]; break; \
  case LT_FLOAT16:                                                                                 \
    for (int64_t k = 0; k < n; k++) *(lt_half *)(out + k * os) = lt_float_to_half((float)V[k]);   \
    break;                                                                                         \
  case LT_BFLOAT16:                                                                                \
    for (int64_t k = 0; k < n; k++) *(lt_bfloat16 *)(out + k * os) = lt_float_to_bf16((float)V[k]); \
    break;                                                                                         \
  case LT_INT64: for (int64_t k = 0; k < n; k++) *(int64_t *)(out + k * os) = (int64_t)V[k]; break; \
  case LT_INT32:                                                                                   \
    for (int64_t k = 0; k < n; k++) *(int32_t *)(out + k * os) = (int32_t)(int64_t)V[k];          \
    break;                                                                                         \
  case LT_INT16:                                                                                   \
    for (int64_t k = 0; k < n; k++) *(int16_t *)(out + k * os) = (int16_t)(int64_t)V[k];          \
    break;                                                                                         \
  case LT_INT8: for (int64_t k = 0; k < n; k++) *(int8_t *)(out + k * os) = (int8_t)(int64_t)V[k]; break; \
  case LT_UINT8:                                                                                   \
    for (int64_t k = 0; k < n; k++) *(uint8_t *)(out + k * os) = (uint8_t)(int64_t)V[k];          \
    break;                                                                                         \
  case LT_BOOL: for (int64_t k = 0; k < n; k++) *(bool *)(out + k * os) = V[k] != 0; break;        \
  default: break;                                                                                  \
  }

/* n results to out (byte stride os) */
static void store_vals(int idomain, const vals_t *v, int64_t n, char *out, int64_t os, lt_dtype odt) {
  if (idomain) {
    const int64_t *vi = v->i;
    STORE_LOOP(vi)
  } else {
    const double *vd = v->d;
    STORE_LOOP(vd)
  }
}

/* ---- geometry: dimensions sorted innermost first (by absolute input stride) and merged ---- */
typedef struct {
  int nout, nred;
  int64_t osize[LT_MAX_DIM], oin[LT_MAX_DIM], oout[LT_MAX_DIM];
  int64_t rsize[LT_MAX_DIM], rstride[LT_MAX_DIM];
  int64_t nout_total, nred_total;
} geo_t;

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* sort (stable, by |a|) and merge dims whose strides chain; b may be NULL. Size-1 dims dropped. */
static int normalise(int n, int64_t *size, int64_t *a, int64_t *b) {
  int m = 0;
  for (int d = 0; d < n; d++) {
    if (size[d] == 1) continue;
    size[m] = size[d];
    a[m] = a[d];
    if (b) b[m] = b[d];
    m++;
  }
  for (int i = 1; i < m; i++) { /* insertion sort: stable */
    int64_t s = size[i], x = a[i], y = b ? b[i] : 0;
    int j = i - 1;
    while (j >= 0 && iabs64(a[j]) > iabs64(x)) {
      size[j + 1] = size[j];
      a[j + 1] = a[j];
      if (b) b[j + 1] = b[j];
      j--;
    }
    size[j + 1] = s;
    a[j + 1] = x;
    if (b) b[j + 1] = y;
  }
  if (m > 1) {
    int w = 0;
    for (int d = 1; d < m; d++) {
      if (size[w] != 0 && size[d] != 0 && a[d] == a[w] * size[w] && (!b || b[d] == b[w] * size[w])) {
        size[w] *= size[d];
      } else {
        w++;
        size[w] = size[d];
        a[w] = a[d];
        if (b) b[w] = b[d];
      }
    }
    m = w + 1;
  }
  return m;
}

static void geo_init(geo_t *g, const lt_reduce_plan_t *pl) {
  g->nout = pl->nout;
  g->nred = pl->nred;
  for (int d = 0; d < pl->nout; d++) {
    g->osize[d] = pl->out_size[d];
    g->oin[d] = pl->out_in_stride[d];
    g->oout[d] = pl->out_stride[d];
  }
  for (int d = 0; d < pl->nred; d++) {
    g->rsize[d] = pl->red_size[d];
    g->rstride[d] = pl->red_stride[d];
  }
  g->nout = normalise(g->nout, g->osize, g->oin, g->oout);
  if (pl->op == LT_REDUCE_argmax || pl->op == LT_REDUCE_argmin || pl->op == LT_REDUCE_cummax ||
      pl->op == LT_REDUCE_cummin) { /* one dim: no merging */
    int m = 0;
    for (int d = 0; d < g->nred; d++)
      if (g->rsize[d] != 1) { g->rsize[m] = g->rsize[d]; g->rstride[m] = g->rstride[d]; m++; }
    g->nred = m;
  } else {
    g->nred = normalise(g->nred, g->rsize, g->rstride, NULL);
  }
  if (g->nout == 0) { g->nout = 1; g->osize[0] = 1; g->oin[0] = 0; g->oout[0] = 0; }
  if (g->nred == 0) { g->nred = 1; g->rsize[0] = 1; g->rstride[0] = 0; }
  g->nout_total = 1;
  for (int d = 0; d < g->nout; d++) g->nout_total *= g->osize[d];
  g->nred_total = 1;
  for (int d = 0; d < g->nred; d++) g->nred_total *= g->rsize[d];
}

/* offsets of the element at linear position lin over dims [d0, nd) (innermost first) */
static void unravel(int d0, int nd, const int64_t *size, const int64_t *sa, const int64_t *sb,
                    int64_t lin, int64_t *idx, int64_t *oa, int64_t *ob) {
  int64_t a = 0, b = 0;
  for (int d = d0; d < nd; d++) {
    idx[d] = lin % size[d];
    lin /= size[d];
    a += idx[d] * sa[d];
    if (sb) b += idx[d] * sb[d];
  }
  *oa = a;
  if (ob) *ob = b;
}

/* step an odometer over dims [d0, nd) */
static inline void advance(int d0, int nd, const int64_t *size, const int64_t *sa, const int64_t *sb,
                           int64_t *idx, int64_t *oa, int64_t *ob) {
  for (int d = d0; d < nd; d++) {
    idx[d]++;
    *oa += sa[d];
    if (sb) *ob += sb[d];
    if (idx[d] < size[d]) return;
    *oa -= sa[d] * size[d];
    if (sb) *ob -= sb[d] * size[d];
    idx[d] = 0;
  }
}

/* results of n accumulators to the outputs at element offset off, element stride os */
static void emit(const fns_t *f, const lt_reduce_plan_t *pl, const void *acc, int64_t n, int64_t off,
                 int64_t os) {
  vals_t v;
  int64_t ix[BLOCK];
  f->fin(acc, n, &v, pl->idx ? ix : NULL, &pl->params);
  if (pl->out) {
    int64_t es = (int64_t)lt_dtype_size(pl->out_dtype);
    store_vals(f->idomain, &v, n, pl->out + off * es, os * es, pl->out_dtype);
  }
  if (pl->idx)
    for (int64_t k = 0; k < n; k++) pl->idx[off + k * os] = ix[k];
}

/* ---- INNER: fold positions [begin, end) of the reduced dims, row by row, into acc ---- */
static void fold_span(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, void *acc,
                      int64_t in_off, int64_t begin, int64_t end) {
  int64_t L = g->rsize[0], s0 = g->rstride[0];
  int64_t idx[LT_MAX_DIM], off;
  int64_t col = begin % L;
  unravel(1, g->nred, g->rsize, g->rstride, NULL, begin / L, idx, &off, NULL);
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = L - col;
    if (n > end - pos) n = end - pos;
    f->row(acc, pl->in + in_off + off + col * s0, s0, n, pos, &pl->params);
    pos += n;
    col = 0;
    if (pos < end) advance(1, g->nred, g->rsize, g->rstride, NULL, idx, &off, NULL);
  }
}

/* outputs [ob, oe) each folded whole */
static void inner_outputs(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, int64_t ob,
                          int64_t oe) {
  _Alignas(16) unsigned char acc[ACC_MAX];
  int64_t idx[LT_MAX_DIM], in_off, out_off;
  if (ob >= oe) return;
  unravel(0, g->nout, g->osize, g->oin, g->oout, ob, idx, &in_off, &out_off);
  for (int64_t o = ob; o < oe; o++) {
    f->init(acc, 1);
    fold_span(f, g, pl, acc, in_off, 0, g->nred_total);
    emit(f, pl, acc, 1, out_off, 1);
    advance(0, g->nout, g->osize, g->oin, g->oout, idx, &in_off, &out_off);
  }
}

static void run_inner(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, int nt, int64_t work) {
  int64_t nout = g->nout_total, nred = g->nred_total;
  if (nt <= 1 || work < 2 * (int64_t)LT_GRAIN) {
    inner_outputs(f, g, pl, 0, nout);
    return;
  }
  if (nout >= 4 * (int64_t)nt) {
    LT_WORKERS(nt, inner_outputs(f, g, pl, nout * lt_w / lt_nw, nout * (lt_w + 1) / lt_nw););
    return;
  }
  /* few outputs: split each one's reduced range, then combine the parts in order */
  int64_t parts = nt;
  if (parts > nred) parts = nred;
  int64_t units = nout * parts;
  unsigned char *buf = malloc((size_t)units * f->acc_size);
  if (!buf) {
    inner_outputs(f, g, pl, 0, nout);
    return;
  }
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
  for (int64_t u = 0; u < units; u++) {
    int64_t o = u / parts, q = u % parts;
    int64_t idx[LT_MAX_DIM], in_off;
    unravel(0, g->nout, g->osize, g->oin, NULL, o, idx, &in_off, NULL);
    void *acc = buf + (size_t)u * f->acc_size;
    f->init(acc, 1);
    fold_span(f, g, pl, acc, in_off, nred * q / parts, nred * (q + 1) / parts);
  }
  for (int64_t o = 0; o < nout; o++) {
    unsigned char *a = buf + (size_t)(o * parts) * f->acc_size;
    for (int64_t q = 1; q < parts; q++) f->combine(a, a + (size_t)q * f->acc_size, 1);
    int64_t idx[LT_MAX_DIM], in_off, out_off;
    unravel(0, g->nout, g->osize, g->oin, g->oout, o, idx, &in_off, &out_off);
    emit(f, pl, a, 1, out_off, 1);
  }
  free(buf);
}

/* ---- OUTER: a block of nb outputs along the innermost kept dim accumulates input rows ---- */
static void outer_unit(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, int64_t task,
                       int64_t rb, int64_t re, void *acc, bool finish) {
  int64_t J = g->osize[0], nblk = (J + BLOCK - 1) / BLOCK;
  int64_t o2 = task / nblk, j0 = (task % nblk) * BLOCK;
  int64_t nb = J - j0 < BLOCK ? J - j0 : BLOCK;
  int64_t idx[LT_MAX_DIM], in_off, out_off;
  unravel(1, g->nout, g->osize, g->oin, g->oout, o2, idx, &in_off, &out_off);
  in_off += j0 * g->oin[0];
  out_off += j0 * g->oout[0];
  f->init(acc, nb);
  if (rb < re) {
    int64_t ridx[LT_MAX_DIM], roff;
    unravel(0, g->nred, g->rsize, g->rstride, NULL, rb, ridx, &roff, NULL);
    int64_t r = rb;
    for (; r + 4 <= re; r += 4) {
      const char *x[4];
      for (int k = 0; k < 4; k++) {
        x[k] = pl->in + in_off + roff;
        advance(0, g->nred, g->rsize, g->rstride, NULL, ridx, &roff, NULL);
      }
      f->cols4(acc, x, g->oin[0], nb, r, &pl->params);
    }
    for (; r < re; r++) {
      f->cols(acc, pl->in + in_off + roff, g->oin[0], nb, r, &pl->params);
      advance(0, g->nred, g->rsize, g->rstride, NULL, ridx, &roff, NULL);
    }
  }
  if (finish) emit(f, pl, acc, nb, out_off, g->oout[0]);
}

/* tasks [tb, te), each over the whole reduced range */
static void outer_tasks(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, int64_t tb, int64_t te) {
  _Alignas(16) unsigned char acc[BLOCK * ACC_MAX];
  for (int64_t u = tb; u < te; u++) outer_unit(f, g, pl, u, 0, g->nred_total, acc, true);
}

static void run_outer(const fns_t *f, const geo_t *g, const lt_reduce_plan_t *pl, int nt, int64_t work) {
  int64_t J = g->osize[0], nblk = (J + BLOCK - 1) / BLOCK;
  int64_t tasks = g->nout_total / J * nblk, nred = g->nred_total;
  bool par = nt > 1 && work >= 2 * (int64_t)LT_GRAIN;
  if (!par) {
    outer_tasks(f, g, pl, 0, tasks);
    return;
  }
  if (tasks >= nt || nred < 2) {
    int nth = tasks < nt ? (int)tasks : nt;
    LT_WORKERS(nth, outer_tasks(f, g, pl, tasks * lt_w / lt_nw, tasks * (lt_w + 1) / lt_nw););
    return;
  }
  /* few blocks: split the reduced range too, then combine the parts in order */
  int64_t parts = nt < nred ? nt : nred;
  int64_t units = tasks * parts;
  size_t ublock = (size_t)BLOCK * f->acc_size;
  unsigned char *buf = malloc((size_t)units * ublock);
  if (!buf) {
    outer_tasks(f, g, pl, 0, tasks);
    return;
  }
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
  for (int64_t u = 0; u < units; u++) {
    int64_t t = u / parts, q = u % parts;
    outer_unit(f, g, pl, t, nred * q / parts, nred * (q + 1) / parts, buf + (size_t)u * ublock, false);
  }
  for (int64_t t = 0; t < tasks; t++) {
    int64_t o2 = t / nblk, j0 = (t % nblk) * BLOCK;
    int64_t nb = J - j0 < BLOCK ? J - j0 : BLOCK;
    unsigned char *a = buf + (size_t)(t * parts) * ublock;
    for (int64_t q = 1; q < parts; q++) f->combine(a, a + (size_t)q * ublock, nb);
    int64_t idx[LT_MAX_DIM], in_off, out_off;
    unravel(1, g->nout, g->osize, g->oin, g->oout, o2, idx, &in_off, &out_off);
    emit(f, pl, a, nb, out_off + j0 * g->oout[0], g->oout[0]);
  }
  free(buf);
}

/* ---- logsumexp of short contiguous rows ---- */
/* GRP rows at a time, one row a lane: the row loops above run scalar on a row of 10 (its setup
   and combine cost more than its elements), and the OUTER driver's running form takes libm's exp
   in double for each element. The arithmetic is ROW_LSE's: c the row's maximum (0 when it is not
   finite), the float exponentials of x - c summed in double, log(s) + c. 256 rows of 10 on one
   core: 23 -> 6 us. */
#define LSE_GRP 16
#define LSE_SHORT(sfx, ST)                                                                         \
  static void lse_short_##sfx(const ST *x, ST *out, int64_t g0, int64_t g1, int64_t rows, int64_t n) { \
    float t[LT_CPU_LSE_SHORT_N][LSE_GRP], c[LSE_GRP];                                              \
    double s[LSE_GRP];                                                                             \
    for (int64_t g = g0; g < g1; g++) {                                                            \
      int64_t r0 = g * LSE_GRP, rn = rows - r0 < LSE_GRP ? rows - r0 : LSE_GRP;                    \
      const ST *xb = x + r0 * n;                                                                   \
      for (int64_t k = 0; k < LSE_GRP; k++)                                                        \
        for (int64_t i = 0; i < n; i++) t[i][k] = k < rn ? (float)LD_##sfx(xb[k * n + i]) : 0.0f;  \
      _Pragma("omp simd") for (int64_t k = 0; k < LSE_GRP; k++) { c[k] = t[0][k]; s[k] = 0; }       \
      for (int64_t i = 1; i < n; i++)                                                              \
        _Pragma("omp simd") for (int64_t k = 0; k < LSE_GRP; k++) c[k] = t[i][k] > c[k] ? t[i][k] : c[k]; \
      /* a NaN maximum or an infinite one shifts by 0 (a NaN anywhere reaches the sum) */           \
      _Pragma("omp simd") for (int64_t k = 0; k < LSE_GRP; k++) c[k] = c[k] - c[k] == 0 ? c[k] : 0.0f; \
      for (int64_t i = 0; i < n; i++)                                                              \
        _Pragma("omp simd") for (int64_t k = 0; k < LSE_GRP; k++) s[k] += (double)lt_expf(t[i][k] - c[k]); \
      for (int64_t k = 0; k < rn; k++) out[r0 + k] = STO_##sfx(log(s[k]) + (double)c[k]);          \
    }                                                                                              \
  }
#define STO_f32(v) ((float)(v))
#define STO_f16(v) lt_float_to_half((float)(v))
#define STO_bf16(v) lt_float_to_bf16((float)(v))
LSE_SHORT(f32, float)
LSE_SHORT(f16, lt_half)
LSE_SHORT(bf16, lt_bfloat16)

bool lt_cpu_logsumexp_short(lt_dtype dt, const void *x, void *out, int64_t rows, int64_t n) {
  if (n < 1 || n > LT_CPU_LSE_SHORT_N || (dt != LT_FLOAT32 && dt != LT_FLOAT16 && dt != LT_BFLOAT16)) return false;
  int64_t groups = (rows + LSE_GRP - 1) / LSE_GRP;
  int nt = lt_threads_for((double)(rows * n), LT_GRAIN, 0);
  if (nt > groups) nt = (int)groups;
  LT_WORKERS(nt, {
    int64_t g0 = groups * lt_w / lt_nw, g1 = groups * (lt_w + 1) / lt_nw;
    if (dt == LT_FLOAT32) lse_short_f32(x, out, g0, g1, rows, n);
    else if (dt == LT_FLOAT16) lse_short_f16(x, out, g0, g1, rows, n);
    else lse_short_bf16(x, out, g0, g1, rows, n);
  });
  return true;
}

void lt_cpu_reduce(const lt_reduce_plan_t *pl) {
  if (!lt_cpu_reduce_supported(pl->op, pl->in_dtype)) return; /* the core checks first */
  const fns_t *f = &table[pl->op][pl->in_dtype];
  geo_t g;
  geo_init(&g, pl);
  if (g.nout_total == 0) return;
  int64_t work = g.nout_total * (g.nred_total > 0 ? g.nred_total : 1);
  int nt = lt_threads_for((double)work, LT_GRAIN, 0);
  bool full = g.nout == 1 && g.osize[0] == 1;
  bool outer;
  if (g.nred_total == 0) outer = true;
  else if (full) outer = false;
  else if (iabs64(g.oin[0]) < iabs64(g.rstride[0])) outer = true;
  else outer = g.nred_total < 16 && g.osize[0] >= 16; /* short reductions: vectorise across outputs */
  if (outer) run_outer(f, &g, pl, nt, work);
  else run_inner(f, &g, pl, nt, work);
}

/* ---- scans ---- */
/* n indices to idx (element stride os) */
static void store_idx(const int64_t *v, int64_t n, int64_t *idx, int64_t os) {
  for (int64_t k = 0; k < n; k++) idx[k * os] = v[k];
}

static void scan_lines(const fns_t *f, scan_fn scan, const lt_scan_plan_t *sp, const geo_t *g, int64_t lb,
                       int64_t le) {
  _Alignas(16) unsigned char acc[ACC_MAX];
  vals_t v;
  int64_t iv[BLOCK];
  lt_reduce_params_t prm = {0, 0, 0, 0};
  int64_t es = (int64_t)lt_dtype_size(sp->out_dtype);
  int64_t idx[LT_MAX_DIM], in_off, out_off;
  if (lb >= le) return;
  unravel(0, g->nout, g->osize, g->oin, g->oout, lb, idx, &in_off, &out_off);
  for (int64_t l = lb; l < le; l++) {
    f->init(acc, 1);
    for (int64_t k0 = 0; k0 < sp->len; k0 += BLOCK) {
      int64_t n = sp->len - k0 < BLOCK ? sp->len - k0 : BLOCK;
      scan(acc, sp->in + in_off + k0 * sp->in_dstride, sp->in_dstride, n, k0, &v, iv, &prm);
      store_vals(f->idomain, &v, n, sp->out + (out_off + k0 * sp->out_dstride) * es,
                 sp->out_dstride * es, sp->out_dtype);
      if (sp->idx) store_idx(iv, n, sp->idx + out_off + k0 * sp->out_dstride, sp->out_dstride);
    }
    advance(0, g->nout, g->osize, g->oin, g->oout, idx, &in_off, &out_off);
  }
}

/* a block of up to SBLOCK lines along the innermost other dim, scanned together row by row (wider
   than BLOCK: each input row is read in long contiguous runs) */
static void scan_block(const fns_t *f, const lt_scan_plan_t *sp, const geo_t *g, int64_t task, char *acc) {
  vals_t v;
  int64_t iv[BLOCK];
  lt_reduce_params_t prm = {0, 0, 0, 0};
  int64_t es = (int64_t)lt_dtype_size(sp->out_dtype);
  int64_t J = g->osize[0], nblk = (J + SBLOCK - 1) / SBLOCK;
  int64_t o2 = task / nblk, j0 = (task % nblk) * SBLOCK;
  int64_t nb = J - j0 < SBLOCK ? J - j0 : SBLOCK;
  int64_t idx[LT_MAX_DIM], in_off, out_off;
  unravel(1, g->nout, g->osize, g->oin, g->oout, o2, idx, &in_off, &out_off);
  in_off += j0 * g->oin[0];
  out_off += j0 * g->oout[0];
  f->init(acc, nb);
  for (int64_t k = 0; k < sp->len; k++) {
    f->cols(acc, sp->in + in_off + k * sp->in_dstride, g->oin[0], nb, k, &prm);
    for (int64_t c = 0; c < nb; c += BLOCK) {
      int64_t m = nb - c < BLOCK ? nb - c : BLOCK;
      f->fin(acc + (size_t)c * f->acc_size, m, &v, sp->idx ? iv : NULL, &prm);
      store_vals(f->idomain, &v, m, sp->out + (out_off + k * sp->out_dstride + c * g->oout[0]) * es,
                 g->oout[0] * es, sp->out_dtype);
      if (sp->idx) store_idx(iv, m, sp->idx + out_off + k * sp->out_dstride + c * g->oout[0], g->oout[0]);
    }
  }
}

static void scan_blocks(const fns_t *f, const lt_scan_plan_t *sp, const geo_t *g, int64_t tb, int64_t te,
                        char *acc) {
  for (int64_t u = tb; u < te; u++) scan_block(f, sp, g, u, acc);
}

int lt_cpu_scan(const lt_scan_plan_t *sp) {
  if ((unsigned)sp->op >= LT_NREDUCE || (unsigned)sp->in_dtype >= LT_NDTYPES) return LT_ERR;
  const fns_t *f = &table[sp->op][sp->in_dtype];
  scan_fn scan = scan_table[sp->op][sp->in_dtype];
  if (!scan || !f->init) return LT_ERR;
  geo_t g;
  g.nout = sp->nother;
  for (int d = 0; d < sp->nother; d++) {
    g.osize[d] = sp->size[d];
    g.oin[d] = sp->in_stride[d];
    g.oout[d] = sp->out_stride[d];
  }
  g.nout = normalise(g.nout, g.osize, g.oin, g.oout);
  if (g.nout == 0) { g.nout = 1; g.osize[0] = 1; g.oin[0] = 0; g.oout[0] = 0; }
  g.nout_total = 1;
  for (int d = 0; d < g.nout; d++) g.nout_total *= g.osize[d];
  if (g.nout_total == 0 || sp->len == 0) return LT_OK;
  int nt = lt_threads_for((double)g.nout_total * (double)sp->len, LT_GRAIN, 0);
  bool par = nt > 1 && g.nout_total * sp->len >= 2 * (int64_t)LT_GRAIN;
  bool lines = (g.nout == 1 && g.osize[0] == 1) || iabs64(sp->in_dstride) <= iabs64(g.oin[0]) ||
               g.osize[0] < 8;
  if (lines) {
    int64_t nl = g.nout_total;
    int nth = par ? (nl < nt ? (int)nl : nt) : 1;
    if (nth <= 1) {
      scan_lines(f, scan, sp, &g, 0, nl);
      return LT_OK;
    }
    LT_WORKERS(nth, scan_lines(f, scan, sp, &g, nl * lt_w / lt_nw, nl * (lt_w + 1) / lt_nw););
    return LT_OK;
  }
  int64_t J = g.osize[0], nblk = (J + SBLOCK - 1) / SBLOCK;
  int64_t tasks = g.nout_total / J * nblk;
  int nth = par ? (tasks < nt ? (int)tasks : nt) : 1;
  size_t per = (size_t)SBLOCK * ACC_MAX;
  char *buf = malloc(per * (size_t)nth);
  if (!buf) return LT_ERR;
  if (nth <= 1) {
    scan_blocks(f, sp, &g, 0, tasks, buf);
  } else {
    LT_WORKERS(nth, scan_blocks(f, sp, &g, tasks * lt_w / lt_nw, tasks * (lt_w + 1) / lt_nw, buf + per * (size_t)lt_w););
  }
  free(buf);
  return LT_OK;
}
