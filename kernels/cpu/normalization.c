/* The CPU loops of batch and layer normalisation, one set per floating dtype expanded from the
   macros below. Statistics take two passes in double over each group (mean, then the squared
   deviations: no cancellation for inputs far from 0). Batch norm over [N, C, S] works per channel
   when S > 1 (each channel's rows are contiguous runs of S) and across rows when S == 1 (a 2-D
   input, where one channel's values are C apart: each row adds to all channels' accumulators at
   once, contiguously). Layer norm works per row; its weight gradients add rows column-wise, split
   across threads by columns so that no thread needs a private copy. */
#include "kernels/cpu/normalization.h"

#include "core/iter.h" /* lt_num_threads, LT_GRAIN */
#include "kernels/half.h"

#include <math.h>
#include <omp.h>

void lt_cpu_parallel_range(int64_t units, int64_t work, void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx) {
  if (units <= 0) return;
  int nt = lt_threads_for((double)work, LT_GRAIN, 0);
  /* no parallel region at all for small work: even a one-thread region costs a wake-up */
  if (nt <= 1 || units < 2 || work < 2 * (int64_t)LT_GRAIN) {
    fn(ctx, 0, units);
    return;
  }
  if ((int64_t)nt > units) nt = (int)units;
  LT_WORKERS(nt, fn(ctx, units * lt_w / lt_nw, units * (lt_w + 1) / lt_nw););
}

/* ---- storage types: load into the compute type, store from it ---- */
#define LD_f32(v) (v)
#define LD_f64(v) (v)
#define LD_f16(v) lt_half_to_float(v)
#define LD_bf16(v) lt_bf16_to_float(v)
#define STO_f32(v) ((float)(v))
#define STO_f64(v) ((double)(v))
#define STO_f16(v) lt_float_to_half((float)(v))
#define STO_bf16(v) lt_float_to_bf16((float)(v))

/* all the arguments of one call, for the range workers */
typedef struct {
  const void *x, *g, *w, *b, *mean_ct, *rstd_ct;
  void *y, *gx, *mean_out, *rstd_out;
  int64_t N, C, S, M;
  const double *scale, *shift, *mean, *invstd, *wd;
  double *dmean, *dvar, *gw, *gb;
  double eps;
  bool training;
} args_t;

#define GEN(sfx, ST, CT)                                                                              \
  /* batch norm statistics, channels [cb, ce), S > 1 */                                               \
  static void bn_stats_ch_##sfx(void *vp, int64_t cb, int64_t ce) {                                    \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x;                                                                                \
    int64_t N = a->N, C = a->C, S = a->S;                                                              \
    double M = (double)(N * S);                                                                        \
    for (int64_t c = cb; c < ce; c++) {                                                                \
      double s = 0, q = 0;                                                                             \
      for (int64_t n = 0; n < N; n++) {                                                                \
        const ST *r = X + (n * C + c) * S;                                                             \
        _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < S; i++) s += (double)LD_##sfx(r[i]); \
      }                                                                                                \
      double mu = s / M;                                                                               \
      for (int64_t n = 0; n < N; n++) {                                                                \
        const ST *r = X + (n * C + c) * S;                                                             \
        _Pragma("omp simd reduction(+:q)") for (int64_t i = 0; i < S; i++) {                           \
          double d = (double)LD_##sfx(r[i]) - mu;                                                      \
          q += d * d;                                                                                  \
        }                                                                                              \
      }                                                                                                \
      a->dmean[c] = mu;                                                                                \
      a->dvar[c] = q / M;                                                                              \
    }                                                                                                  \
  }                                                                                                    \
  /* batch norm statistics, columns [cb, ce) of an [N, C] input */                                    \
  static void bn_stats_col_##sfx(void *vp, int64_t cb, int64_t ce) {                                   \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x;                                                                                \
    int64_t N = a->N, C = a->C;                                                                        \
    double *mu = a->dmean, *var = a->dvar;                                                             \
    for (int64_t c = cb; c < ce; c++) mu[c] = var[c] = 0;                                              \
    for (int64_t n = 0; n < N; n++) {                                                                  \
      const ST *r = X + n * C;                                                                         \
      _Pragma("omp simd") for (int64_t c = cb; c < ce; c++) mu[c] += (double)LD_##sfx(r[c]);           \
    }                                                                                                  \
    for (int64_t c = cb; c < ce; c++) mu[c] /= (double)N;                                              \
    for (int64_t n = 0; n < N; n++) {                                                                  \
      const ST *r = X + n * C;                                                                         \
      _Pragma("omp simd") for (int64_t c = cb; c < ce; c++) {                                          \
        double d = (double)LD_##sfx(r[c]) - mu[c];                                                     \
        var[c] += d * d;                                                                               \
      }                                                                                                \
    }                                                                                                  \
    for (int64_t c = cb; c < ce; c++) var[c] /= (double)N;                                             \
  }                                                                                                    \
  /* y = x scale + shift over rows [rb, re) of [N * C, S] */                                           \
  static void bn_apply_ch_##sfx(void *vp, int64_t rb, int64_t re) {                                    \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x;                                                                                \
    ST *Y = a->y;                                                                                      \
    int64_t C = a->C, S = a->S;                                                                        \
    for (int64_t r = rb; r < re; r++) {                                                                \
      int64_t c = r % C;                                                                               \
      CT sc = (CT)a->scale[c], sh = (CT)a->shift[c];                                                   \
      const ST *xr = X + r * S;                                                                        \
      ST *yr = Y + r * S;                                                                              \
      _Pragma("omp simd") for (int64_t i = 0; i < S; i++) yr[i] = STO_##sfx(LD_##sfx(xr[i]) * sc + sh); \
    }                                                                                                  \
  }                                                                                                    \
  /* the same over rows [rb, re) of an [N, C] input */                                                \
  static void bn_apply_col_##sfx(void *vp, int64_t rb, int64_t re) {                                   \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x;                                                                                \
    ST *Y = a->y;                                                                                      \
    int64_t C = a->C;                                                                                  \
    const double *sc = a->scale, *sh = a->shift;                                                       \
    for (int64_t n = rb; n < re; n++) {                                                                \
      const ST *xr = X + n * C;                                                                        \
      ST *yr = Y + n * C;                                                                              \
      _Pragma("omp simd") for (int64_t c = 0; c < C; c++)                                              \
        yr[c] = STO_##sfx((double)LD_##sfx(xr[c]) * sc[c] + sh[c]);                                    \
    }                                                                                                  \
  }                                                                                                    \
  /* batch norm backward, channels [cb, ce), S > 1 */                                                 \
  static void bn_bw_ch_##sfx(void *vp, int64_t cb, int64_t ce) {                                       \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x, *G = a->g;                                                                     \
    ST *GX = a->gx;                                                                                    \
    int64_t N = a->N, C = a->C, S = a->S;                                                              \
    double M = (double)(N * S);                                                                        \
    for (int64_t c = cb; c < ce; c++) {                                                                \
      double mu = a->mean[c], is = a->invstd[c], sg = 0, dot = 0;                                      \
      for (int64_t n = 0; n < N; n++) {                                                                \
        const ST *xr = X + (n * C + c) * S, *gr = G + (n * C + c) * S;                                 \
        _Pragma("omp simd reduction(+:sg, dot)") for (int64_t i = 0; i < S; i++) {                     \
          double gv = (double)LD_##sfx(gr[i]);                                                         \
          sg += gv;                                                                                    \
          dot += gv * ((double)LD_##sfx(xr[i]) - mu);                                                  \
        }                                                                                              \
      }                                                                                                \
      a->gb[c] = sg;                                                                                   \
      a->gw[c] = dot * is;                                                                             \
      if (!GX) continue;                                                                               \
      double wc = a->wd ? a->wd[c] : 1.0;                                                              \
      /* gx = g k1 + (x - mean) k2 + k0 */                                                             \
      double k1 = is * wc, k2 = 0, k0 = 0;                                                             \
      if (a->training) {                                                                               \
        k2 = -dot * is * is / M * k1;                                                                  \
        k0 = -sg / M * k1;                                                                             \
      }                                                                                                \
      CT f1 = (CT)k1, f2 = (CT)k2, f0 = (CT)k0, fm = (CT)mu;                                           \
      for (int64_t n = 0; n < N; n++) {                                                                \
        const ST *xr = X + (n * C + c) * S, *gr = G + (n * C + c) * S;                                 \
        ST *or_ = GX + (n * C + c) * S;                                                                \
        _Pragma("omp simd") for (int64_t i = 0; i < S; i++)                                            \
          or_[i] = STO_##sfx(LD_##sfx(gr[i]) * f1 + (LD_##sfx(xr[i]) - fm) * f2 + f0);                 \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  /* batch norm backward, columns [cb, ce) of an [N, C] input */                                      \
  static void bn_bw_col_##sfx(void *vp, int64_t cb, int64_t ce) {                                      \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x, *G = a->g;                                                                     \
    ST *GX = a->gx;                                                                                    \
    int64_t N = a->N, C = a->C;                                                                        \
    double M = (double)N, *sg = a->gb, *dot = a->gw;                                                   \
    const double *mu = a->mean, *is = a->invstd;                                                       \
    for (int64_t c = cb; c < ce; c++) sg[c] = dot[c] = 0;                                              \
    for (int64_t n = 0; n < N; n++) {                                                                  \
      const ST *xr = X + n * C, *gr = G + n * C;                                                       \
      _Pragma("omp simd") for (int64_t c = cb; c < ce; c++) {                                          \
        double gv = (double)LD_##sfx(gr[c]);                                                           \
        sg[c] += gv;                                                                                   \
        dot[c] += gv * ((double)LD_##sfx(xr[c]) - mu[c]);                                              \
      }                                                                                                \
    }                                                                                                  \
    if (GX) {                                                                                          \
      for (int64_t n = 0; n < N; n++) {                                                                \
        const ST *xr = X + n * C, *gr = G + n * C;                                                     \
        ST *or_ = GX + n * C;                                                                          \
        if (a->training) {                                                                             \
          _Pragma("omp simd") for (int64_t c = cb; c < ce; c++) {                                      \
            double k1 = is[c] * (a->wd ? a->wd[c] : 1.0);                                              \
            double xh = ((double)LD_##sfx(xr[c]) - mu[c]) * is[c];                                     \
            or_[c] = STO_##sfx(k1 * ((double)LD_##sfx(gr[c]) - sg[c] / M - xh * dot[c] * is[c] / M));   \
          }                                                                                            \
        } else {                                                                                       \
          _Pragma("omp simd") for (int64_t c = cb; c < ce; c++)                                        \
            or_[c] = STO_##sfx((double)LD_##sfx(gr[c]) * is[c] * (a->wd ? a->wd[c] : 1.0));            \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
    for (int64_t c = cb; c < ce; c++) dot[c] *= is[c];                                                 \
  }                                                                                                    \
  /* layer norm, rows [rb, re) */                                                                     \
  static void ln_fw_##sfx(void *vp, int64_t rb, int64_t re) {                                          \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x;                                                                                \
    ST *Y = a->y;                                                                                      \
    const CT *W = a->w, *B = a->b;                                                                     \
    CT *MO = a->mean_out, *RO = a->rstd_out;                                                           \
    int64_t N = a->N;                                                                                  \
    for (int64_t r = rb; r < re; r++) {                                                                \
      const ST *xr = X + r * N;                                                                        \
      ST *yr = Y + r * N;                                                                              \
      double s = 0, q = 0;                                                                             \
      _Pragma("omp simd reduction(+:s)") for (int64_t i = 0; i < N; i++) s += (double)LD_##sfx(xr[i]);  \
      double mu = s / (double)N;                                                                       \
      _Pragma("omp simd reduction(+:q)") for (int64_t i = 0; i < N; i++) {                             \
        double d = (double)LD_##sfx(xr[i]) - mu;                                                       \
        q += d * d;                                                                                    \
      }                                                                                                \
      double rs = 1.0 / sqrt(q / (double)N + a->eps);                                                  \
      CT m = (CT)mu, k = (CT)rs;                                                                       \
      MO[r] = m;                                                                                       \
      RO[r] = k;                                                                                       \
      if (W && B) {                                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) yr[i] = STO_##sfx((LD_##sfx(xr[i]) - m) * k * W[i] + B[i]); \
      } else if (W) {                                                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) yr[i] = STO_##sfx((LD_##sfx(xr[i]) - m) * k * W[i]); \
      } else if (B) {                                                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) yr[i] = STO_##sfx((LD_##sfx(xr[i]) - m) * k + B[i]); \
      } else {                                                                                         \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) yr[i] = STO_##sfx((LD_##sfx(xr[i]) - m) * k); \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  /* layer norm backward for the input, rows [rb, re) */                                              \
  static void ln_bw_rows_##sfx(void *vp, int64_t rb, int64_t re) {                                     \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x, *G = a->g;                                                                     \
    ST *GX = a->gx;                                                                                    \
    const CT *W = a->w, *MU = a->mean_ct, *RS = a->rstd_ct;                                            \
    int64_t N = a->N;                                                                                  \
    for (int64_t r = rb; r < re; r++) {                                                                \
      const ST *xr = X + r * N, *gr = G + r * N;                                                       \
      ST *or_ = GX + r * N;                                                                            \
      CT m = MU[r], k = RS[r];                                                                         \
      double s1 = 0, s2 = 0;                                                                           \
      if (W) {                                                                                         \
        _Pragma("omp simd reduction(+:s1, s2)") for (int64_t i = 0; i < N; i++) {                      \
          CT gw = LD_##sfx(gr[i]) * W[i];                                                              \
          s1 += (double)gw;                                                                            \
          s2 += (double)(gw * ((LD_##sfx(xr[i]) - m) * k));                                            \
        }                                                                                              \
      } else {                                                                                         \
        _Pragma("omp simd reduction(+:s1, s2)") for (int64_t i = 0; i < N; i++) {                      \
          CT gw = LD_##sfx(gr[i]);                                                                     \
          s1 += (double)gw;                                                                            \
          s2 += (double)(gw * ((LD_##sfx(xr[i]) - m) * k));                                            \
        }                                                                                              \
      }                                                                                                \
      CT c1 = (CT)(s1 / (double)N), c2 = (CT)(s2 / (double)N);                                         \
      if (W) {                                                                                         \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) {                                          \
          CT xh = (LD_##sfx(xr[i]) - m) * k;                                                           \
          or_[i] = STO_##sfx(k * (LD_##sfx(gr[i]) * W[i] - c1 - xh * c2));                             \
        }                                                                                              \
      } else {                                                                                         \
        _Pragma("omp simd") for (int64_t i = 0; i < N; i++) {                                          \
          CT xh = (LD_##sfx(xr[i]) - m) * k;                                                           \
          or_[i] = STO_##sfx(k * (LD_##sfx(gr[i]) - c1 - xh * c2));                                    \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
  }                                                                                                    \
  /* layer norm weight and bias gradients, columns [jb, je) summed over all rows */                   \
  static void ln_bw_cols_##sfx(void *vp, int64_t jb, int64_t je) {                                     \
    const args_t *a = vp;                                                                              \
    const ST *X = a->x, *G = a->g;                                                                     \
    const CT *MU = a->mean_ct, *RS = a->rstd_ct;                                                       \
    double *gw = a->gw, *gb = a->gb;                                                                   \
    int64_t N = a->N, M = a->M;                                                                        \
    if (gw) for (int64_t j = jb; j < je; j++) gw[j] = 0;                                               \
    if (gb) for (int64_t j = jb; j < je; j++) gb[j] = 0;                                               \
    for (int64_t r = 0; r < M; r++) {                                                                  \
      const ST *xr = X + r * N, *gr = G + r * N;                                                       \
      CT m = MU[r], k = RS[r];                                                                         \
      if (gw) {                                                                                        \
        _Pragma("omp simd") for (int64_t j = jb; j < je; j++)                                          \
          gw[j] += (double)(LD_##sfx(gr[j]) * ((LD_##sfx(xr[j]) - m) * k));                            \
      }                                                                                                \
      if (gb) {                                                                                        \
        _Pragma("omp simd") for (int64_t j = jb; j < je; j++) gb[j] += (double)LD_##sfx(gr[j]);        \
      }                                                                                                \
    }                                                                                                  \
  }

GEN(f32, float, float)
GEN(f64, double, double)
GEN(f16, lt_half, float)
GEN(bf16, lt_bfloat16, float)

typedef void (*range_fn)(void *, int64_t, int64_t);
typedef struct {
  range_fn bn_stats_ch, bn_stats_col, bn_apply_ch, bn_apply_col, bn_bw_ch, bn_bw_col, ln_fw, ln_bw_rows, ln_bw_cols;
} table_t;

#define TABLE(sfx) \
  {bn_stats_ch_##sfx, bn_stats_col_##sfx, bn_apply_ch_##sfx, bn_apply_col_##sfx, bn_bw_ch_##sfx, \
   bn_bw_col_##sfx, ln_fw_##sfx, ln_bw_rows_##sfx, ln_bw_cols_##sfx}
static const table_t tables[4] = {TABLE(f32), TABLE(f64), TABLE(f16), TABLE(bf16)};

/* the core passes floating dtypes only (LT_FLOAT32 .. LT_BFLOAT16 are 0 .. 3) */
static const table_t *table_of(lt_dtype dt) { return &tables[(unsigned)dt < 4 ? (unsigned)dt : 0]; }

void lt_cpu_batch_norm_stats(lt_dtype dt, const void *x, int64_t N, int64_t C, int64_t S, double *mean, double *var) {
  args_t a = {.x = x, .N = N, .C = C, .S = S, .dmean = mean, .dvar = var};
  if (S == 1) lt_cpu_parallel_range(C, N * C, table_of(dt)->bn_stats_col, &a);
  else lt_cpu_parallel_range(C, N * C * S, table_of(dt)->bn_stats_ch, &a);
}

void lt_cpu_batch_norm_apply(lt_dtype dt, const void *x, void *y, int64_t N, int64_t C, int64_t S,
                             const double *scale, const double *shift) {
  args_t a = {.x = x, .y = y, .N = N, .C = C, .S = S, .scale = scale, .shift = shift};
  if (S == 1) lt_cpu_parallel_range(N, N * C, table_of(dt)->bn_apply_col, &a);
  else lt_cpu_parallel_range(N * C, N * C * S, table_of(dt)->bn_apply_ch, &a);
}

void lt_cpu_batch_norm_backward(lt_dtype dt, const void *x, const void *g, void *gx, int64_t N, int64_t C,
                                int64_t S, const double *mean, const double *invstd, const double *w,
                                bool training, double *gw, double *gb) {
  args_t a = {.x = x, .g = g, .gx = gx, .N = N, .C = C, .S = S, .mean = mean, .invstd = invstd, .wd = w,
              .training = training, .gw = gw, .gb = gb};
  if (S == 1) lt_cpu_parallel_range(C, 2 * N * C, table_of(dt)->bn_bw_col, &a);
  else lt_cpu_parallel_range(C, 2 * N * C * S, table_of(dt)->bn_bw_ch, &a);
}

void lt_cpu_layer_norm(lt_dtype dt, const void *x, void *y, int64_t M, int64_t N, const void *w, const void *b,
                       double eps, void *mean, void *rstd) {
  args_t a = {.x = x, .y = y, .M = M, .N = N, .w = w, .b = b, .eps = eps, .mean_out = mean, .rstd_out = rstd};
  lt_cpu_parallel_range(M, M * N, table_of(dt)->ln_fw, &a);
}

void lt_cpu_layer_norm_backward(lt_dtype dt, const void *x, const void *g, const void *mean, const void *rstd,
                                const void *w, int64_t M, int64_t N, void *gx, double *gw, double *gb) {
  args_t a = {.x = x, .g = g, .mean_ct = mean, .rstd_ct = rstd, .w = w, .M = M, .N = N, .gx = gx, .gw = gw,
              .gb = gb};
  if (gx) lt_cpu_parallel_range(M, M * N, table_of(dt)->ln_bw_rows, &a);
  if (gw || gb) lt_cpu_parallel_range(N, M * N, table_of(dt)->ln_bw_cols, &a);
}
