/* The CPU softmax loops, one set per floating dtype expanded from the macro below. Along the last
   dimension each row is done in three vectorised passes while it sits in cache (maximum, sum of
   exponentials in double, output); float32 and float64 keep the exponentials in the output between
   the last two passes, float16 and bfloat16 compute them again rather than round them twice. Short
   rows (SHORT_N) run the same passes across 16 rows at a time instead (fw_short, bw_short). Along
   another dimension the same passes run on blocks of BLK neighbouring rows side by side (the
   elements of one row are `inner` apart; those of neighbouring rows are adjacent), with the
   per-row maxima and sums in small stack buffers. Float exponentials use the vectorisable lt_expf. */
#include "kernels/cpu/softmax.h"

#include "kernels/cpu/normalization.h" /* lt_cpu_parallel_range */
#include "kernels/fastmath.h"
#include "kernels/half.h"

#include <math.h>

#define BLK 64 /* rows processed side by side when the dimension is not the last */

#define LD_f32(v) (v)
#define LD_f64(v) (v)
#define LD_f16(v) lt_half_to_float(v)
#define LD_bf16(v) lt_bf16_to_float(v)
#define STO_f32(v) ((float)(v))
#define STO_f64(v) ((double)(v))
#define STO_f16(v) lt_float_to_half((float)(v))
#define STO_bf16(v) lt_float_to_bf16((float)(v))
#define EXP_float(v) lt_expf(v)
#define EXP_double(v) exp(v)

/* Rows of at most SHORT_N elements along the last dimension (a classifier's 10 classes) run GRP
   rows at a time, each row a lane: a row-wise loop that short runs scalar, about 100 ns a row of
   10 here. The rows' block is transposed into a buffer, the same passes run across the lanes, and
   the results are transposed back. F.cross_entropy of 256 x 10, forward and backward: 41 -> 17 us
   (bench/overhead.lua). From 32 elements the row-wise loops are faster again. */
#define SHORT_N 31
#define GRP 16

typedef struct {
  const void *x, *g, *y;
  void *out;
  int64_t n, inner, rows;
  bool log;
} sm_args_t;

/* sfx: dtype suffix; ST storage type; CT compute type; EXACT: ST is CT (exponentials may be kept in
   the output) */
#define GEN(sfx, ST, CT, EXACT)                                                                        \
  static void fw_last_##sfx(void *vp, int64_t rb, int64_t re) {                                        \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n;                                                                                  \
    for (int64_t r = rb; r < re; r++) {                                                                \
      const ST *xr = (const ST *)a->x + r * n;                                                         \
      ST *yr = (ST *)a->out + r * n;                                                                   \
      CT m = -INFINITY;                                                                                \
      _Pragma("omp simd reduction(max:m)") for (int64_t i = 0; i < n; i++) {                          \
        CT v = LD_##sfx(xr[i]);                                                                        \
        m = v > m ? v : m;                                                                             \
      }                                                                                                \
      double s = 0;                                                                                    \
      if (a->log) {                                                                                    \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < n; i++)                             \
          s += (double)EXP_##CT(LD_##sfx(xr[i]) - m);                                                  \
        CT ls = (CT)log(s);                                                                            \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) yr[i] = STO_##sfx((LD_##sfx(xr[i]) - m) - ls); \
      } else if (EXACT) {                                                                              \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < n; i++) {                           \
          CT e = EXP_##CT(LD_##sfx(xr[i]) - m);                                                        \
          yr[i] = STO_##sfx(e);                                                                        \
          s += (double)e;                                                                              \
        }                                                                                              \
        CT inv = (CT)(1.0 / s);                                                                        \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) yr[i] = STO_##sfx(LD_##sfx(yr[i]) * inv);   \
      } else {                                                                                         \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < n; i++)                             \
          s += (double)EXP_##CT(LD_##sfx(xr[i]) - m);                                                  \
        CT inv = (CT)(1.0 / s);                                                                        \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
          yr[i] = STO_##sfx(EXP_##CT(LD_##sfx(xr[i]) - m) * inv);                                      \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  /* units: groups of GRP rows of n <= SHORT_N elements, one row a lane */                            \
  static void fw_short_##sfx(void *vp, int64_t ub, int64_t ue) {                                       \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n;                                                                                  \
    CT t[SHORT_N][GRP], mx[GRP], cf[GRP];                                                              \
    double sm[GRP];                                                                                    \
    for (int64_t u = ub; u < ue; u++) {                                                                \
      int64_t r0 = u * GRP, rn = a->rows - r0 < GRP ? a->rows - r0 : GRP;                              \
      const ST *xb = (const ST *)a->x + r0 * n;                                                        \
      ST *yb = (ST *)a->out + r0 * n;                                                                  \
      for (int64_t k = 0; k < GRP; k++)                                                                \
        for (int64_t i = 0; i < n; i++) t[i][k] = k < rn ? LD_##sfx(xb[k * n + i]) : (CT)0;            \
      _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) { mx[k] = t[0][k]; sm[k] = 0; }            \
      for (int64_t i = 1; i < n; i++)                                                                  \
        _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) mx[k] = t[i][k] > mx[k] ? t[i][k] : mx[k]; \
      if (a->log) { /* (the loops kept apart per case: a store under a condition stays scalar) */    \
        for (int64_t i = 0; i < n; i++)                                                                \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) sm[k] += (double)EXP_##CT(t[i][k] - mx[k]); \
        for (int64_t k = 0; k < GRP; k++) cf[k] = (CT)log(sm[k]);                                      \
        for (int64_t i = 0; i < n; i++)                                                                \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) t[i][k] = (t[i][k] - mx[k]) - cf[k];   \
      } else {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                                \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) {                                      \
            CT e = EXP_##CT(t[i][k] - mx[k]);                                                          \
            t[i][k] = e;                                                                               \
            sm[k] += (double)e;                                                                        \
          }                                                                                            \
        _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) cf[k] = (CT)(1.0 / sm[k]);               \
        for (int64_t i = 0; i < n; i++)                                                                \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) t[i][k] = t[i][k] * cf[k];             \
      }                                                                                                \
      for (int64_t k = 0; k < rn; k++)                                                                 \
        for (int64_t i = 0; i < n; i++) yb[k * n + i] = STO_##sfx(t[i][k]);                            \
    }                                                                                                  \
  }                                                                                                    \
  /* units: (outer row, block of BLK inner positions) */                                              \
  static void fw_inner_##sfx(void *vp, int64_t ub, int64_t ue) {                                       \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n, inner = a->inner, nblk = (inner + BLK - 1) / BLK;                               \
    CT mx[BLK], cf[BLK];                                                                               \
    double sm[BLK];                                                                                    \
    for (int64_t u = ub; u < ue; u++) {                                                                \
      int64_t o = u / nblk, k0 = (u % nblk) * BLK, kn = inner - k0 < BLK ? inner - k0 : BLK;           \
      const ST *xb = (const ST *)a->x + o * n * inner + k0;                                            \
      ST *yb = (ST *)a->out + o * n * inner + k0;                                                      \
      for (int64_t k = 0; k < kn; k++) { mx[k] = -INFINITY; sm[k] = 0; }                               \
      for (int64_t i = 0; i < n; i++) {                                                                \
        const ST *xr = xb + i * inner;                                                                 \
        _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) {                                         \
          CT v = LD_##sfx(xr[k]);                                                                      \
          mx[k] = v > mx[k] ? v : mx[k];                                                               \
        }                                                                                              \
      }                                                                                                \
      bool keep = !a->log && EXACT;                                                                    \
      for (int64_t i = 0; i < n; i++) {                                                                \
        const ST *xr = xb + i * inner;                                                                 \
        ST *yr = yb + i * inner;                                                                       \
        if (keep) {                                                                                    \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) {                                       \
            CT e = EXP_##CT(LD_##sfx(xr[k]) - mx[k]);                                                  \
            yr[k] = STO_##sfx(e);                                                                      \
            sm[k] += (double)e;                                                                        \
          }                                                                                            \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) sm[k] += (double)EXP_##CT(LD_##sfx(xr[k]) - mx[k]); \
        }                                                                                              \
      }                                                                                                \
      if (a->log) {                                                                                    \
        for (int64_t k = 0; k < kn; k++) cf[k] = (CT)log(sm[k]);                                       \
        for (int64_t i = 0; i < n; i++) {                                                              \
          const ST *xr = xb + i * inner;                                                               \
          ST *yr = yb + i * inner;                                                                     \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) yr[k] = STO_##sfx((LD_##sfx(xr[k]) - mx[k]) - cf[k]); \
        }                                                                                              \
      } else {                                                                                         \
        for (int64_t k = 0; k < kn; k++) cf[k] = (CT)(1.0 / sm[k]);                                    \
        for (int64_t i = 0; i < n; i++) {                                                              \
          const ST *xr = xb + i * inner;                                                               \
          ST *yr = yb + i * inner;                                                                     \
          if (keep) {                                                                                  \
            _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) yr[k] = STO_##sfx(LD_##sfx(yr[k]) * cf[k]); \
          } else {                                                                                     \
            _Pragma("omp simd") for (int64_t k = 0; k < kn; k++)                                       \
              yr[k] = STO_##sfx(EXP_##CT(LD_##sfx(xr[k]) - mx[k]) * cf[k]);                            \
          }                                                                                            \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  static void bw_last_##sfx(void *vp, int64_t rb, int64_t re) {                                        \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n;                                                                                  \
    for (int64_t r = rb; r < re; r++) {                                                                \
      const ST *gr = (const ST *)a->g + r * n, *yr = (const ST *)a->y + r * n;                         \
      ST *or_ = (ST *)a->out + r * n;                                                                  \
      double s = 0;                                                                                    \
      if (a->log) {                                                                                    \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < n; i++) s += (double)LD_##sfx(gr[i]); \
        CT c = (CT)s;                                                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
          or_[i] = STO_##sfx(LD_##sfx(gr[i]) - EXP_##CT(LD_##sfx(yr[i])) * c);                         \
      } else {                                                                                         \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < n; i++)                             \
          s += (double)(LD_##sfx(gr[i]) * LD_##sfx(yr[i]));                                            \
        CT c = (CT)s;                                                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
          or_[i] = STO_##sfx(LD_##sfx(yr[i]) * (LD_##sfx(gr[i]) - c));                                 \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  static void bw_short_##sfx(void *vp, int64_t ub, int64_t ue) {                                       \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n;                                                                                  \
    CT tg[SHORT_N][GRP], ty[SHORT_N][GRP], cf[GRP];                                                    \
    double sm[GRP];                                                                                    \
    for (int64_t u = ub; u < ue; u++) {                                                                \
      int64_t r0 = u * GRP, rn = a->rows - r0 < GRP ? a->rows - r0 : GRP;                              \
      const ST *gb = (const ST *)a->g + r0 * n, *yb = (const ST *)a->y + r0 * n;                       \
      ST *ob = (ST *)a->out + r0 * n;                                                                  \
      for (int64_t k = 0; k < GRP; k++)                                                                \
        for (int64_t i = 0; i < n; i++) {                                                              \
          tg[i][k] = k < rn ? LD_##sfx(gb[k * n + i]) : (CT)0;                                         \
          ty[i][k] = k < rn ? LD_##sfx(yb[k * n + i]) : (CT)0;                                         \
        }                                                                                              \
      _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) sm[k] = 0;                                 \
      for (int64_t i = 0; i < n; i++) {                                                                \
        if (a->log) {                                                                                  \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) sm[k] += (double)tg[i][k];             \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) sm[k] += (double)(tg[i][k] * ty[i][k]); \
        }                                                                                              \
      }                                                                                                \
      _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) cf[k] = (CT)sm[k];                         \
      for (int64_t i = 0; i < n; i++) {                                                                \
        if (a->log) {                                                                                  \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++)                                        \
            tg[i][k] = tg[i][k] - EXP_##CT(ty[i][k]) * cf[k];                                          \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t k = 0; k < GRP; k++) tg[i][k] = ty[i][k] * (tg[i][k] - cf[k]); \
        }                                                                                              \
      }                                                                                                \
      for (int64_t k = 0; k < rn; k++)                                                                 \
        for (int64_t i = 0; i < n; i++) ob[k * n + i] = STO_##sfx(tg[i][k]);                           \
    }                                                                                                  \
  }                                                                                                    \
  static void bw_inner_##sfx(void *vp, int64_t ub, int64_t ue) {                                       \
    const sm_args_t *a = vp;                                                                           \
    int64_t n = a->n, inner = a->inner, nblk = (inner + BLK - 1) / BLK;                               \
    double sm[BLK];                                                                                    \
    CT cf[BLK];                                                                                        \
    for (int64_t u = ub; u < ue; u++) {                                                                \
      int64_t o = u / nblk, k0 = (u % nblk) * BLK, kn = inner - k0 < BLK ? inner - k0 : BLK;           \
      int64_t base = o * n * inner + k0;                                                               \
      const ST *gb = (const ST *)a->g + base, *yb = (const ST *)a->y + base;                           \
      ST *ob = (ST *)a->out + base;                                                                    \
      for (int64_t k = 0; k < kn; k++) sm[k] = 0;                                                      \
      for (int64_t i = 0; i < n; i++) {                                                                \
        const ST *gr = gb + i * inner, *yr = yb + i * inner;                                           \
        if (a->log) {                                                                                  \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++) sm[k] += (double)LD_##sfx(gr[k]);       \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++)                                         \
            sm[k] += (double)(LD_##sfx(gr[k]) * LD_##sfx(yr[k]));                                      \
        }                                                                                              \
      }                                                                                                \
      for (int64_t k = 0; k < kn; k++) cf[k] = (CT)sm[k];                                              \
      for (int64_t i = 0; i < n; i++) {                                                                \
        const ST *gr = gb + i * inner, *yr = yb + i * inner;                                           \
        ST *or_ = ob + i * inner;                                                                      \
        if (a->log) {                                                                                  \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++)                                         \
            or_[k] = STO_##sfx(LD_##sfx(gr[k]) - EXP_##CT(LD_##sfx(yr[k])) * cf[k]);                   \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t k = 0; k < kn; k++)                                         \
            or_[k] = STO_##sfx(LD_##sfx(yr[k]) * (LD_##sfx(gr[k]) - cf[k]));                           \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
  }

GEN(f32, float, float, 1)
GEN(f64, double, double, 1)
GEN(f16, lt_half, float, 0)
GEN(bf16, lt_bfloat16, float, 0)

typedef void (*range_fn)(void *, int64_t, int64_t);
/* indexed by dtype: the core passes floating dtypes only (LT_FLOAT32 .. LT_BFLOAT16 are 0 .. 3) */
static const range_fn fw_last[4] = {fw_last_f32, fw_last_f64, fw_last_f16, fw_last_bf16};
static const range_fn fw_inner[4] = {fw_inner_f32, fw_inner_f64, fw_inner_f16, fw_inner_bf16};
static const range_fn bw_last[4] = {bw_last_f32, bw_last_f64, bw_last_f16, bw_last_bf16};
static const range_fn bw_inner[4] = {bw_inner_f32, bw_inner_f64, bw_inner_f16, bw_inner_bf16};
static const range_fn fw_short[4] = {fw_short_f32, fw_short_f64, fw_short_f16, fw_short_bf16};
static const range_fn bw_short[4] = {bw_short_f32, bw_short_f64, bw_short_f16, bw_short_bf16};

static void run(const range_fn *last, const range_fn *short_fns, const range_fn *inner_fns, lt_dtype dt,
                sm_args_t *a, int64_t outer) {
  unsigned k = (unsigned)dt < 4 ? (unsigned)dt : 0;
  int64_t work = outer * a->n * a->inner;
  if (work == 0) return;
  if (a->inner == 1 && a->n <= SHORT_N) {
    a->rows = outer;
    lt_cpu_parallel_range((outer + GRP - 1) / GRP, work, short_fns[k], a);
  } else if (a->inner == 1) {
    lt_cpu_parallel_range(outer, work, last[k], a);
  } else {
    int64_t nblk = (a->inner + BLK - 1) / BLK;
    lt_cpu_parallel_range(outer * nblk, work, inner_fns[k], a);
  }
}

void lt_cpu_softmax(lt_dtype dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool log) {
  sm_args_t a = {.x = x, .out = y, .n = n, .inner = inner, .log = log};
  run(fw_last, fw_short, fw_inner, dt, &a, outer);
}

void lt_cpu_softmax_backward(lt_dtype dt, const void *g, const void *y, void *gx, int64_t outer, int64_t n,
                             int64_t inner, bool log) {
  sm_args_t a = {.g = g, .y = y, .out = gx, .n = n, .inner = inner, .log = log};
  run(bw_last, bw_short, bw_inner, dt, &a, outer);
}
