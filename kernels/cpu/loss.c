/* The CPU loops of the negative log-likelihood loss, one set per floating dtype of the
   log-probabilities. Targets are read as stored (int64 or int32, 1-based); sums go in double.
   Threads only for large inputs (segmentation-sized); the usual [batch, classes] loss is one
   short loop. */
#include "kernels/cpu/loss.h"

#include "core/iter.h" /* lt_num_threads, LT_GRAIN */
#include "kernels/cpu/normalization.h" /* lt_cpu_parallel_range */
#include "kernels/half.h"

#include <string.h>

static inline int64_t target_at(lt_dtype tdt, const void *t, int64_t i) {
  return tdt == LT_INT64 ? ((const int64_t *)t)[i] : (int64_t)((const int32_t *)t)[i];
}

int64_t lt_cpu_nll_check_targets(lt_dtype tdt, const void *target, int64_t count, int64_t C, bool has_ignore,
                                 int64_t ignore_index) {
  for (int64_t i = 0; i < count; i++) {
    int64_t t = target_at(tdt, target, i);
    if ((t < 1 || t > C) && !(has_ignore && t == ignore_index)) return i;
  }
  return -1;
}

#define LD_f32(v) ((double)(v))
#define LD_f64(v) (v)
#define LD_f16(v) ((double)lt_half_to_float(v))
#define LD_bf16(v) ((double)lt_bf16_to_float(v))
#define STO_f32(v) ((float)(v))
#define STO_f64(v) ((double)(v))
#define STO_f16(v) lt_float_to_half((float)(v))
#define STO_bf16(v) lt_float_to_bf16((float)(v))

typedef struct {
  const void *logp, *target, *g;
  void *out;
  const double *w;
  lt_dtype tdt;
  int64_t C, S;
  bool has_ignore;
  int64_t ignore;
  double scale;
} nll_args_t;

#define GEN(sfx, ST)                                                                                   \
  /* the loss of elements [b, e): stored (none) or summed into *s and *ws */                           \
  static void fw_##sfx(const nll_args_t *a, int64_t b, int64_t e, double *s, double *ws) {              \
    const ST *lp = a->logp;                                                                            \
    ST *out = a->out;                                                                                  \
    int64_t C = a->C, S = a->S;                                                                        \
    double sum = 0, wsum = 0;                                                                          \
    for (int64_t i = b; i < e; i++) {                                                                  \
      int64_t t = target_at(a->tdt, a->target, i);                                                     \
      if (a->has_ignore && t == a->ignore) {                                                           \
        if (out) out[i] = STO_##sfx(0.0);                                                              \
        continue;                                                                                      \
      }                                                                                                \
      int64_t n = i / S, sp = i - n * S;                                                               \
      double wt = a->w ? a->w[t - 1] : 1.0;                                                            \
      double l = -wt * LD_##sfx(lp[(n * C + t - 1) * S + sp]);                                         \
      if (out) out[i] = STO_##sfx(l);                                                                  \
      sum += l;                                                                                        \
      wsum += wt;                                                                                      \
    }                                                                                                  \
    *s += sum;                                                                                         \
    *ws += wsum;                                                                                       \
  }                                                                                                    \
  static void bw_##sfx(void *vp, int64_t b, int64_t e) {                                               \
    const nll_args_t *a = vp;                                                                          \
    ST *gl = a->out;                                                                                   \
    const ST *g = a->g;                                                                                \
    int64_t C = a->C, S = a->S;                                                                        \
    for (int64_t i = b; i < e; i++) {                                                                  \
      int64_t t = target_at(a->tdt, a->target, i);                                                     \
      if (a->has_ignore && t == a->ignore) continue;                                                   \
      int64_t n = i / S, sp = i - n * S;                                                               \
      double wt = a->w ? a->w[t - 1] : 1.0;                                                            \
      double gv = g ? LD_##sfx(g[i]) : 1.0;                                                            \
      gl[(n * C + t - 1) * S + sp] = STO_##sfx(-wt * a->scale * gv);                                   \
    }                                                                                                  \
  }

GEN(f32, float)
GEN(f64, double)
GEN(f16, lt_half)
GEN(bf16, lt_bfloat16)

typedef void (*fw_fn)(const nll_args_t *, int64_t, int64_t, double *, double *);
/* indexed by dtype: the core passes floating dtypes only (LT_FLOAT32 .. LT_BFLOAT16 are 0 .. 3) */
static const fw_fn fws[4] = {fw_f32, fw_f64, fw_f16, fw_bf16};
static void (*const bws[4])(void *, int64_t, int64_t) = {bw_f32, bw_f64, bw_f16, bw_bf16};

void lt_cpu_nll_loss(lt_dtype dt, const void *logp, lt_dtype tdt, const void *target, const double *w, int64_t N,
                     int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, void *none_out, double *sum,
                     double *wsum) {
  nll_args_t a = {.logp = logp, .target = target, .out = none_out, .w = w, .tdt = tdt, .C = C, .S = S,
                  .has_ignore = has_ignore, .ignore = ignore_index};
  fw_fn f = fws[(unsigned)dt < 4 ? (unsigned)dt : 0];
  int64_t count = N * S;
  double s = 0, ws = 0;
  int nt = lt_threads_for((double)count, LT_GRAIN, 0);
  if (nt > 1) {
    /* partial sums in a fixed order of parts: the same result whatever the scheduling */
    double ps[64] = {0}, pw[64] = {0};
    if (nt > 64) nt = 64;
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
    for (int p = 0; p < nt; p++) f(&a, count * p / nt, count * (p + 1) / nt, &ps[p], &pw[p]);
    for (int p = 0; p < nt; p++) { s += ps[p]; ws += pw[p]; }
  } else {
    f(&a, 0, count, &s, &ws);
  }
  if (sum) *sum = s;
  if (wsum) *wsum = ws;
}

void lt_cpu_nll_loss_backward(lt_dtype dt, void *glogp, const void *g, double scale, lt_dtype tdt,
                              const void *target, const double *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index) {
  memset(glogp, 0, (size_t)(N * C * S) * lt_dtype_size(dt));
  nll_args_t a = {.g = g, .target = target, .out = glogp, .w = w, .tdt = tdt, .C = C, .S = S,
                  .has_ignore = has_ignore, .ignore = ignore_index, .scale = scale};
  lt_cpu_parallel_range(N * S, N * S, bws[(unsigned)dt < 4 ? (unsigned)dt : 0], &a);
}
