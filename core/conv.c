/* 2-D convolution as im2col + GEMM (see conv.h). Per sample and per group, the output block
   (C_out/groups x OH*OW) is the weight block (C_out/groups x C_in/groups*kH*kW) times that
   group's rows of the sample's column matrix. A 1x1, stride 1, unpadded convolution needs no
   im2col: the input planes already are the column matrix. A batch of small products is split over
   OpenMP threads, one sample per thread at a time with its own column buffer; a few large products
   are left to the BLAS wrapper, which splits each product over the threads itself. */
#include "core/autocast.h"
#include "core/conv.h"
#include "core/blas.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "core/grad.h"
#include "core/iter.h"
#include "core/shape.h"
#include "core/steal.h"
#include "kernels/cpu/im2col.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Below this many multiply-adds in all, one thread is faster than waking the others. */
#define CONV_PAR_MIN ((double)(1 << 16))

typedef struct {
  lt_conv_geom_t g;  /* per sample, all C_in channels */
  int64_t N, Cout, groups;
  int64_t Cig, Cog;  /* channels per group */
  int64_t Kg;        /* columns of a group's weight block: Cig*kh*kw */
  int64_t OHW;
  bool direct;       /* the input planes are the column matrix */
  bool dw;           /* one input channel per group: direct loops, no GEMM (K would be kh*kw) */
  bool dw_s1;        /* dw with stride 1: the padded-plane loops (kernels/cpu/im2col.h) */
  bool batched;
} plan_t;

/* Larger parameters could overflow the size arithmetic; no real convolution comes near. */
#define LT_CONV_ARG_MAX ((int64_t)1 << 31)

static inline int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static int check_conv(const char *op, const lt_tensor_t *x, const lt_tensor_t *w, const lt_tensor_t *b,
                      const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                      int64_t groups, plan_t *p) {
  const lt_tensor_t *ts[3] = {x, w, b};
  if (x->device.type != LT_CUDA) LT_TRY(lt_check_host(op, x)); /* CUDA: core/cuda_linalg.c */
  LT_TRY(lt_check_same_device(op, 3, ts));
  if (!lt_dtype_is_floating(x->dtype))
    return lt_error("%s: expected a floating point input, got %s", op, lt_dtype_name(x->dtype));
  if (w->dtype != x->dtype)
    return lt_error("%s: input type (%s) and weight type (%s) should be the same", op, lt_dtype_name(x->dtype),
                    lt_dtype_name(w->dtype));
  if (b && b->dtype != x->dtype)
    return lt_error("%s: input type (%s) and bias type (%s) should be the same", op, lt_dtype_name(x->dtype),
                    lt_dtype_name(b->dtype));
  char s1[256], s2[256];
  if (x->ndim != 3 && x->ndim != 4)
    return lt_error("%s: expected 3-D (unbatched) or 4-D (batched) input, but got input of size %s", op,
                    lt_shape_str(x->ndim, x->sizes, s1, sizeof s1));
  if (w->ndim != 4)
    return lt_error("%s: expected a 4-D weight (out_channels, in_channels/groups, kH, kW), but got weight of "
                    "size %s", op, lt_shape_str(w->ndim, w->sizes, s1, sizeof s1));
  if (groups <= 0) return lt_error("%s: non-positive groups is not supported (got %lld)", op, (long long)groups);
  for (int i = 0; i < 2; i++) {
    if (stride[i] <= 0)
      return lt_error("%s: non-positive stride is not supported (got %lld)", op, (long long)stride[i]);
    if (padding[i] < 0)
      return lt_error("%s: negative padding is not supported (got %lld)", op, (long long)padding[i]);
    if (dilation[i] <= 0)
      return lt_error("%s: dilation should be greater than zero (got %lld)", op, (long long)dilation[i]);
  }
  for (int i = 0; i < 2; i++)
    if (stride[i] > LT_CONV_ARG_MAX || padding[i] > LT_CONV_ARG_MAX || dilation[i] > LT_CONV_ARG_MAX)
      return lt_error("%s: stride, padding and dilation must be at most %lld", op, (long long)LT_CONV_ARG_MAX);
  p->batched = x->ndim == 4;
  int o = p->batched ? 1 : 0;
  int64_t N = p->batched ? x->sizes[0] : 1, C = x->sizes[o], H = x->sizes[o + 1], W = x->sizes[o + 2];
  int64_t Cout = w->sizes[0], kh = w->sizes[2], kw = w->sizes[3];
  if (C == 0 || H == 0 || W == 0)
    return lt_error("%s: expected input with non-zero channels, height and width, but got input of size %s", op,
                    lt_shape_str(x->ndim, x->sizes, s1, sizeof s1));
  if (Cout == 0 || w->sizes[1] == 0 || kh == 0 || kw == 0)
    return lt_error("%s: expected a weight with non-zero sizes, but got weight of size %s", op,
                    lt_shape_str(4, w->sizes, s1, sizeof s1));
  if (Cout % groups != 0)
    return lt_error("%s: given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                    "weight of size %s instead", op, (long long)groups, (long long)groups,
                    lt_shape_str(4, w->sizes, s1, sizeof s1));
  if (w->sizes[1] * groups != C)
    return lt_error("%s: given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got "
                    "%lld channels instead", op, (long long)groups, lt_shape_str(4, w->sizes, s1, sizeof s1),
                    lt_shape_str(x->ndim, x->sizes, s2, sizeof s2), (long long)(w->sizes[1] * groups),
                    (long long)C);
  if (b && (b->ndim != 1 || b->sizes[0] != Cout))
    return lt_error("%s: given weight of size %s, expected bias to be 1-D with %lld elements, but got bias of "
                    "size %s instead", op, lt_shape_str(4, w->sizes, s1, sizeof s1), (long long)Cout,
                    lt_shape_str(b->ndim, b->sizes, s2, sizeof s2));
  int64_t ekh = dilation[0] * (kh - 1) + 1, ekw = dilation[1] * (kw - 1) + 1;
  int64_t ph = padding[0], pw = padding[1];
  int64_t OH = floordiv(H + 2 * ph - ekh, stride[0]) + 1, OW = floordiv(W + 2 * pw - ekw, stride[1]) + 1;
  if (H + 2 * ph < ekh || W + 2 * pw < ekw)
    return lt_error("%s: calculated output size (%lld x %lld) is too small: the padded input size per channel "
                    "(%lld x %lld) is smaller than the effective kernel size (%lld x %lld)", op, (long long)OH,
                    (long long)OW, (long long)(H + 2 * ph), (long long)(W + 2 * pw), (long long)ekh,
                    (long long)ekw);
  p->g = (lt_conv_geom_t){C, H, W, kh, kw, stride[0], stride[1], ph, pw, dilation[0], dilation[1], OH, OW};
  p->N = N;
  p->Cout = Cout;
  p->groups = groups;
  p->Cig = C / groups;
  p->Cog = Cout / groups;
  p->Kg = p->Cig * kh * kw;
  p->OHW = OH * OW;
  p->direct = kh == 1 && kw == 1 && stride[0] == 1 && stride[1] == 1 && ph == 0 && pw == 0;
  p->dw = p->Cig == 1;
  p->dw_s1 = p->dw && stride[0] == 1 && stride[1] == 1;
  if (p->Kg > LT_BLAS_MAX_DIM || p->OHW > LT_BLAS_MAX_DIM || p->Cog > LT_BLAS_MAX_DIM ||
      p->Kg * groups > LT_BLAS_MAX_DIM)
    return lt_error("%s: the matrix product of this convolution has a dimension over %lld", op,
                    (long long)LT_BLAS_MAX_DIM);
  return LT_OK;
}

/* Threads for our own loops: as for the BLAS (core/blas.h), and none inside a parallel region. */
static int loop_threads(void) {
  if (omp_in_parallel()) return 1;
  int nt = lt_blas_num_threads(), omp = omp_get_max_threads();
  if (omp < nt) nt = omp;
  return nt > 1 ? nt : 1;
}

/* Threads for `work` multiply-adds of a convolution's loops: LT_BLAS_THREAD_WORK a thread at least,
   as for a matrix product (each thread's work worth its wake-up, core/iter.h) */
static int work_threads(double work) { return lt_threads_for(work, (double)LT_BLAS_THREAD_WORK, loop_threads()); }

/* Threads that take whole samples: 1 leaves the parallelism to the BLAS wrapper. */
static int batch_threads(int64_t N, double per_sample) {
  int nt = work_threads((double)N * per_sample);
  if (nt <= 1 || N < 2 || (double)N * per_sample < CONV_PAR_MIN) return 1;
  if (nt > N) nt = (int)N;
  /* large products over a batch that splits unevenly: the BLAS wrapper's split balances better */
  if (per_sample > (double)LT_BLAS_SPLIT_MIN && N % nt != 0 && N < 4 * (int64_t)nt) return 1;
  return nt;
}

/* Threads for the direct (one channel per group) loops over `units` planes of `work` in all. */
static int plane_threads(int64_t units, double work) {
  if (units < 2 || work < CONV_PAR_MIN) return 1;
  return work_threads(work);
}

/* for (i = 0; i < n; i++) call, over `nt` (a variable in scope) threads; one thread stays out of
   libgomp (even a one-thread parallel region costs a futex wake-up) */
#define PAR_FOR(i, n, call)                                                                                   \
  do {                                                                                                        \
    if (nt > 1) {                                                                                             \
      _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)") for (int64_t i = 0; i < (n); i++) call; \
    } else {                                                                                                  \
      for (int64_t i = 0; i < (n); i++) call;                                                                 \
    }                                                                                                         \
  } while (0)

/* ---- the loops, for float and double ---- */

#define CONV_LOOPS(sfx, T, GEMM)                                                                              \
  static void fwd_sample_##sfx(const plan_t *p, int64_t n, const T *x, const T *w, const T *b, T *y,          \
                               T *col, int *failed) {                                                         \
    const int64_t OHW = p->OHW;                                                                               \
    const T *xn = x + n * p->g.C * p->g.H * p->g.W;                                                           \
    T *yn = y + n * p->Cout * OHW;                                                                            \
    if (!p->direct) lt_im2col_##sfx(&p->g, xn, col);                                                          \
    const T *cm = p->direct ? xn : col;                                                                       \
    for (int64_t gr = 0; gr < p->groups; gr++)                                                                \
      if (GEMM(false, false, p->Cog, OHW, p->Kg, 1, w + gr * p->Cog * p->Kg, p->Kg, cm + gr * p->Kg * OHW,    \
               OHW, 0, yn + gr * p->Cog * OHW, OHW) != LT_OK)                                                 \
        __atomic_store_n(failed, 1, __ATOMIC_RELAXED);                                                        \
    if (b)                                                                                                    \
      for (int64_t co = 0; co < p->Cout; co++) {                                                              \
        T *row = yn + co * OHW;                                                                               \
        const T v = b[co];                                                                                    \
        for (int64_t i = 0; i < OHW; i++) row[i] += v;                                                        \
      }                                                                                                       \
  }                                                                                                           \
                                                                                                              \
  static void conv_fwd_##sfx(const plan_t *p, const T *x, const T *w, const T *b, T *y, T *scratch,           \
                             int nt, int *failed) {                                                           \
    const int64_t colsz = p->Kg * p->groups * p->OHW;                                                         \
    if (nt <= 1) {                                                                                            \
      for (int64_t n = 0; n < p->N; n++) fwd_sample_##sfx(p, n, x, w, b, y, scratch, failed);                 \
      return;                                                                                                 \
    }                                                                                                         \
    LT_WORKERS(nt, {                                                                                          \
      T *col = scratch ? scratch + (int64_t)lt_w * colsz : NULL;                                              \
      for (int64_t n = p->N * lt_w / lt_nw; n < p->N * (lt_w + 1) / lt_nw; n++)                               \
        fwd_sample_##sfx(p, n, x, w, b, y, col, failed);                                                      \
    });                                                                                                       \
  }                                                                                                           \
                                                                                                              \
  /* one sample's share of the gradients: acc += g_n @ col_n^T, gx_n = col2im(W^T @ g_n) */                   \
  static void bwd_sample_##sfx(const plan_t *p, int64_t n, const T *x, const T *w, const T *g, T *gx,         \
                               T *acc, T *col, T *gcol, int *failed) {                                        \
    const int64_t CHW = p->g.C * p->g.H * p->g.W, OHW = p->OHW;                                               \
    const T *gn = g + n * p->Cout * OHW;                                                                      \
    if (acc) {                                                                                                \
      const T *xn = x + n * CHW;                                                                              \
      if (!p->direct) lt_im2col_##sfx(&p->g, xn, col);                                                        \
      const T *cm = p->direct ? xn : col;                                                                     \
      for (int64_t gr = 0; gr < p->groups; gr++)                                                              \
        if (GEMM(false, true, p->Cog, p->Kg, OHW, 1, gn + gr * p->Cog * OHW, OHW, cm + gr * p->Kg * OHW,      \
                 OHW, 1, acc + gr * p->Cog * p->Kg, p->Kg) != LT_OK)                                          \
          __atomic_store_n(failed, 1, __ATOMIC_RELAXED);                                                      \
    }                                                                                                         \
    if (gx) {                                                                                                 \
      T *gxn = gx + n * CHW;                                                                                  \
      T *dst = p->direct ? gxn : gcol;                                                                        \
      for (int64_t gr = 0; gr < p->groups; gr++)                                                              \
        if (GEMM(true, false, p->Kg, OHW, p->Cog, 1, w + gr * p->Cog * p->Kg, p->Kg,                          \
                 gn + gr * p->Cog * OHW, OHW, 0, dst + gr * p->Kg * OHW, OHW) != LT_OK)                       \
          __atomic_store_n(failed, 1, __ATOMIC_RELAXED);                                                      \
      if (!p->direct) {                                                                                       \
        memset(gxn, 0, sizeof(T) * (size_t)CHW);                                                              \
        lt_col2im_##sfx(&p->g, gcol, gxn);                                                                    \
      }                                                                                                       \
    }                                                                                                         \
  }                                                                                                           \
                                                                                                              \
  /* scratch per thread (per_thread elements): col and gcol (colsz each, unless direct), then the             \
     thread's gw accumulator (thread 0 accumulates into gw itself) */                                         \
  static void conv_bwd_##sfx(const plan_t *p, const T *x, const T *w, const T *g, T *gx, T *gw,               \
                             T *scratch, int64_t per_thread, int nt, int *failed) {                           \
    const int64_t colsz = p->direct ? 0 : p->Kg * p->groups * p->OHW, wsz = p->Cout * p->Kg;                  \
    if (gw) memset(gw, 0, sizeof(T) * (size_t)wsz);                                                           \
    if (nt <= 1) {                                                                                            \
      for (int64_t n = 0; n < p->N; n++)                                                                      \
        bwd_sample_##sfx(p, n, x, w, g, gx, gw, scratch, scratch + colsz, failed);                            \
      return;                                                                                                 \
    }                                                                                                         \
    int used = 1; /* the workers the team had: the accumulators to add */                                     \
    LT_WORKERS(nt, {                                                                                          \
      const int t = lt_w;                                                                                     \
      if (t == 0) used = lt_nw;                                                                               \
      T *base = scratch + (int64_t)t * per_thread;                                                            \
      T *acc = NULL;                                                                                          \
      if (gw) {                                                                                               \
        acc = t == 0 ? gw : base + 2 * colsz;                                                                 \
        if (t) memset(acc, 0, sizeof(T) * (size_t)wsz);                                                       \
      }                                                                                                       \
      for (int64_t n = p->N * t / lt_nw; n < p->N * (t + 1) / lt_nw; n++)                                     \
        bwd_sample_##sfx(p, n, x, w, g, gx, acc, base, base + colsz, failed);                                 \
    });                                                                                                       \
    if (gw)                                                                                                   \
      for (int t = 1; t < used; t++) {                                                                        \
        const T *a = scratch + (int64_t)t * per_thread + 2 * colsz;                                           \
        for (int64_t i = 0; i < wsz; i++) gw[i] += a[i];                                                      \
      }                                                                                                       \
  }                                                                                                           \
                                                                                                              \
  /* the bias gradient: each (sample, channel) plane summed in T into part[n * Cout + co], the threads \
     taking whole samples (the halves of g the backward's other loops wrote and read on them, where    \
     the memory is this core's), then each channel's parts added in double in sample order: the same    \
     bits whatever the split. g is read once, by as many threads as its size is worth. */               \
  static void bias_grad_##sfx(const plan_t *p, int64_t n0, int64_t n1, const T *g, T *part) {              \
    for (int64_t n = n0; n < n1; n++)                                                                         \
      for (int64_t co = 0; co < p->Cout; co++) {                                                              \
        const T *row = g + (n * p->Cout + co) * p->OHW;                                                       \
        T s = 0;                                                                                              \
        _Pragma("omp simd reduction(+:s)")                                                                    \
        for (int64_t i = 0; i < p->OHW; i++) s += row[i];                                                     \
        part[n * p->Cout + co] = s;                                                                           \
      }                                                                                                       \
  }                                                                                                           \
  static void conv_bias_grad_##sfx(const plan_t *p, const T *g, T *gb, T *part) {                             \
    const int nt = lt_threads_for((double)p->N * p->Cout * p->OHW, (double)LT_GRAIN, loop_threads());       \
    if (nt > 1 && p->N > 1)                                                                                   \
      LT_WORKERS(nt, { bias_grad_##sfx(p, p->N * lt_w / lt_nw, p->N * (lt_w + 1) / lt_nw, g, part); });      \
    else                                                                                                      \
      bias_grad_##sfx(p, 0, p->N, g, part);                                                                   \
    for (int64_t co = 0; co < p->Cout; co++) {                                                                \
      double s = 0;                                                                                           \
      for (int64_t n = 0; n < p->N; n++) s += (double)part[n * p->Cout + co];                                 \
      gb[co] = (T)s;                                                                                          \
    }                                                                                                         \
  }

CONV_LOOPS(f32, float, lt_blas_sgemm)
CONV_LOOPS(f64, double, lt_blas_dgemm)

/* One input channel per group (depthwise convolution, or a one-channel input): direct loops per
   plane (kernels/cpu/im2col.c), parallel over planes. */
#define DW_LOOPS(sfx, T)                                                                                      \
  /* output plane q = (n, co) reads input plane (n, co / Cog) */                                              \
  static void dw_fwd_plane_##sfx(const plan_t *p, int64_t q, const T *x, const T *w, const T *b, T *y) {      \
    const int64_t n = q / p->Cout, co = q % p->Cout, kk = p->g.kh * p->g.kw;                                  \
    lt_dwconv_plane_##sfx(&p->g, x + (n * p->g.C + co / p->Cog) * p->g.H * p->g.W, w + co * kk,               \
                          b ? b[co] : (T)0, y + q * p->OHW);                                                  \
  }                                                                                                           \
  /* stride 1: unit q = (n, ci), one padded input plane against the group's Cog filters */            \
  static void dw_s1_fwd_unit_##sfx(const plan_t *p, int64_t q, const T *x, const T *w, const T *b, T *y,     \
                                   T *work) {                                                                 \
    const int64_t n = q / p->g.C, ci = q % p->g.C, kk = p->g.kh * p->g.kw, co = ci * p->Cog;                  \
    lt_dwconv_s1_fwd_##sfx(&p->g, x + q * p->g.H * p->g.W, w + co * kk, p->Cog, b ? b + co : NULL,            \
                           y + (n * p->Cout + co) * p->OHW, work);                                            \
  }                                                                                                           \
  static void dw_fwd_##sfx(const plan_t *p, const T *x, const T *w, const T *b, T *y, T *scratch) {           \
    const double work = (double)p->N * p->Cout * p->OHW * p->g.kh * p->g.kw;                                  \
    if (scratch) {                                                                                            \
      const int64_t units = p->N * p->g.C, per = lt_dwconv_s1_work(&p->g);                                    \
      const int nt = plane_threads(units, work);                                                              \
      if (nt <= 1) {                                                                                          \
        for (int64_t q = 0; q < units; q++) dw_s1_fwd_unit_##sfx(p, q, x, w, b, y, scratch);                  \
        return;                                                                                               \
      }                                                                                                       \
      LT_WORKERS(nt, {                                                                                        \
        T *wk = scratch + (int64_t)lt_w * per;                                                                \
        for (int64_t q = units * lt_w / lt_nw; q < units * (lt_w + 1) / lt_nw; q++)                           \
          dw_s1_fwd_unit_##sfx(p, q, x, w, b, y, wk);                                                         \
      });                                                                                                     \
      return;                                                                                                 \
    }                                                                                                         \
    const int64_t planes = p->N * p->Cout;                                                                    \
    const int nt = plane_threads(planes, work);                                                               \
    PAR_FOR(q, planes, dw_fwd_plane_##sfx(p, q, x, w, b, y));                                                 \
  }                                                                                                           \
  /* input plane q = (n, ci) gathers from output planes (n, ci*Cog .. ci*Cog + Cog - 1) */                    \
  static void dw_gx_plane_##sfx(const plan_t *p, int64_t q, const T *w, const T *g, T *gx) {                  \
    const int64_t n = q / p->g.C, ci = q % p->g.C, kk = p->g.kh * p->g.kw, HW = p->g.H * p->g.W;              \
    T *gxp = gx + q * HW;                                                                                     \
    memset(gxp, 0, sizeof(T) * (size_t)HW);                                                                   \
    for (int64_t co = ci * p->Cog; co < (ci + 1) * p->Cog; co++)                                              \
      lt_dwconv_plane_gx_##sfx(&p->g, g + (n * p->Cout + co) * p->OHW, w + co * kk, gxp);                     \
  }                                                                                                           \
  /* filter co: a sum over the batch */                                                                       \
  static void dw_gw_filter_##sfx(const plan_t *p, int64_t co, const T *x, const T *g, T *gw) {                \
    const int64_t kk = p->g.kh * p->g.kw, HW = p->g.H * p->g.W, ci = co / p->Cog;                             \
    T *gwk = gw + co * kk;                                                                                    \
    memset(gwk, 0, sizeof(T) * (size_t)kk);                                                                   \
    for (int64_t n = 0; n < p->N; n++)                                                                        \
      lt_dwconv_plane_gw_##sfx(&p->g, g + (n * p->Cout + co) * p->OHW, x + (n * p->g.C + ci) * HW, gwk);      \
  }                                                                                                           \
  /* stride 1, unit q = (n, ci): gx's plane q, and this unit's share of the group's filters' gw */           \
  static void dw_s1_bwd_unit_##sfx(const plan_t *p, int64_t q, const T *x, const T *w, const T *g, T *gx,    \
                                   T *gw, T *work) {                                                          \
    const int64_t n = q / p->g.C, ci = q % p->g.C, kk = p->g.kh * p->g.kw, co = ci * p->Cog;                  \
    const int64_t HW = p->g.H * p->g.W;                                                                       \
    const T *gq = g + (n * p->Cout + co) * p->OHW;                                                            \
    if (gx) lt_dwconv_s1_gx_##sfx(&p->g, gq, w + co * kk, p->Cog, gx + q * HW, work);                         \
    if (gw) lt_dwconv_s1_gw_##sfx(&p->g, gq, x + q * HW, p->Cog, gw + co * kk, work);                         \
  }                                                                                                           \
  /* stride 1: parallel over units; each thread sums gw into its own accumulator (thread 0 into gw),          \
     after `per` elements of work space in its share of scratch */                                            \
  static void dw_s1_bwd_##sfx(const plan_t *p, const T *x, const T *w, const T *g, T *gx, T *gw, T *scratch,  \
                              int nt) {                                                                       \
    const int64_t units = p->N * p->g.C, per = lt_dwconv_s1_work(&p->g), wsz = p->Cout * p->g.kh * p->g.kw;   \
    if (gw) memset(gw, 0, sizeof(T) * (size_t)wsz);                                                           \
    if (nt <= 1) {                                                                                            \
      for (int64_t q = 0; q < units; q++) dw_s1_bwd_unit_##sfx(p, q, x, w, g, gx, gw, scratch);               \
      return;                                                                                                 \
    }                                                                                                         \
    int used = 1; /* the workers the team had: the accumulators to add */                                     \
    LT_WORKERS(nt, {                                                                                          \
      const int t = lt_w;                                                                                     \
      if (t == 0) used = lt_nw;                                                                               \
      T *base = scratch + (int64_t)t * (per + wsz), *acc = NULL;                                              \
      if (gw) {                                                                                               \
        acc = t == 0 ? gw : base + per;                                                                       \
        if (t) memset(acc, 0, sizeof(T) * (size_t)wsz);                                                       \
      }                                                                                                       \
      for (int64_t q = units * t / lt_nw; q < units * (t + 1) / lt_nw; q++)                                   \
        dw_s1_bwd_unit_##sfx(p, q, x, w, g, gx, acc, base);                                                   \
    });                                                                                                       \
    if (gw)                                                                                                   \
      for (int t = 1; t < used; t++) {                                                                        \
        const T *a = scratch + (int64_t)t * (per + wsz) + per;                                                \
        for (int64_t i = 0; i < wsz; i++) gw[i] += a[i];                                                      \
      }                                                                                                       \
  }                                                                                                           \
  static void dw_bwd_##sfx(const plan_t *p, const T *x, const T *w, const T *g, T *gx, T *gw, T *scratch,     \
                           int nt) {                                                                          \
    if (scratch) {                                                                                            \
      dw_s1_bwd_##sfx(p, x, w, g, gx, gw, scratch, nt);                                                       \
      return;                                                                                                 \
    }                                                                                                         \
    const double work = (double)p->N * p->Cout * p->OHW * p->g.kh * p->g.kw;                                  \
    if (gx) {                                                                                                 \
      const int64_t planes = p->N * p->g.C;                                                                   \
      const int nt = plane_threads(planes, work);                                                             \
      PAR_FOR(q, planes, dw_gx_plane_##sfx(p, q, w, g, gx));                                                  \
    }                                                                                                         \
    if (gw) {                                                                                                 \
      const int nt = plane_threads(p->Cout, work);                                                            \
      PAR_FOR(co, p->Cout, dw_gw_filter_##sfx(p, co, x, g, gw));                                              \
    }                                                                                                         \
  }

DW_LOOPS(f32, float)
DW_LOOPS(f64, double)

/* ---- tensors ---- */

/* t's values, contiguous, in the compute dtype (a new reference) */
static lt_tensor_t *operand(lt_tensor_t *t, lt_dtype ct) {
  if (!t) return NULL;
  return t->dtype == ct ? lt_contiguous(t) : lt_convert(t, ct, t->device);
}

/* the compute dtype: float16 and bfloat16 run in float32 */
static lt_dtype compute_dtype(lt_dtype dt) { return lt_dtype_is_low_precision(dt) ? LT_FLOAT32 : dt; }

/* r (consumed; contiguous, compute dtype) as a tensor of dtype dt */
static lt_tensor_t *finish(lt_tensor_t *r, lt_dtype dt) {
  if (!r || r->dtype == dt) return r;
  lt_tensor_t *o = lt_convert(r, dt, r->device);
  lt_release(r);
  return o;
}

/* an uninitialised work buffer of n elements from the device's caching allocator */
static lt_tensor_t *scratch_of(int64_t n, lt_dtype dt, lt_device_t dev) {
  int64_t sz[1] = {n > 0 ? n : 1};
  return lt_empty(1, sz, dt, dev);
}

/* Winograd F(2x2, 3x3) (kernels/cpu/im2col.h) for float32 3x3 convolutions with stride 1 and
   dilation 1 in one group, with enough channels on both sides that the 16 products (K = C_in)
   run well; LUTORCH_CONV_WINOGRAD=0 turns it off (to compare with im2col). Its float32 error is
   that of the direct method's order of magnitude: the transforms only add and halve. */
static bool wino_enabled(void) {
  const char *e = getenv("LUTORCH_CONV_WINOGRAD");
  return !(e && e[0] == '0');
}
static bool wino_fits(const plan_t *p, lt_dtype ct) {
  return ct == LT_FLOAT32 && p->g.kh == 3 && p->g.kw == 3 && p->g.sh == 1 && p->g.sw == 1 && p->g.dh == 1 &&
         p->g.dw == 1 && p->groups == 1 && p->g.C >= 8 && p->Cout >= 8 && wino_enabled();
}

/* R tile rows a block, sized so that a block's V and M (16 (C + O) nb floats) stay in L2 */
static void wino_blocks(const lt_conv_geom_t *g, int64_t O, int64_t rows, int64_t S, int64_t *R, int64_t *blocks,
                        int64_t *nbmax) {
  int64_t target = 12288 / (g->C + O);
  target = target < 64 ? 64 : target > 512 ? 512 : target;
  int64_t r = target / S;
  if (r < 1) r = 1;
  /* nb = r S a multiple of 48 where one is near: the products' 48-column tiles are then whole
     (kernels/cpu/sgemm.c) */
  for (int64_t q = r; q <= r + r / 2 && q <= rows; q++)
    if (q * S % 48 == 0) { r = q; break; }
  if (r > rows) r = rows;
  *R = r;
  *blocks = (rows + r - 1) / r;
  *nbmax = lt_wino23_block_cols(g, r);
}
static int wino_threads(int64_t C, int64_t O, int64_t rows, int64_t S, int64_t blocks) {
  int nt = work_threads(16.0 * (double)C * (double)O * (double)rows * (double)S);
  if (blocks < 2 || 16.0 * (double)C * (double)O * (double)rows * (double)S < CONV_PAR_MIN) nt = 1;
  return nt > blocks ? (int)blocks : nt;
}

/* y (N, O, g->OH, g->OW) = the convolution of x (N, g->C, g->H, g->W) by the O filters at
   w + o*so + i*si (rotated when flip), + bias, in blocks of R tile rows. Each thread starts on an
   equal run of blocks (so of samples: the part of x and y the batch-split loops before and after
   it touch on that core); a thread done with its run takes blocks from the back of the other's
   (core/steal.h: each block writes its own part of y, so the bits do not depend on who runs it). */
static int wino_f32(const char *op, const lt_conv_geom_t *g, int64_t N, int64_t O, const float *w, int64_t so,
                    int64_t si, bool flip, const float *x, const float *bias, float *y, lt_device_t dev) {
  const int64_t C = g->C, rows = lt_wino23_tile_rows(g, N), S = lt_wino23_block_cols(g, 1);
  int64_t R, blocks, nbmax;
  wino_blocks(g, O, rows, S, &R, &blocks, &nbmax);
  const int64_t per = 16 * (C + O) * nbmax + lt_wino23_work(g, R);
  int nt = wino_threads(C, O, rows, S, blocks);
  lt_tensor_t *sc = scratch_of(16 * O * C + nt * per, LT_FLOAT32, dev);
  if (!sc) return LT_ERR;
  float *U = lt_data(sc);
  lt_wino23_weights_f32(w, O, C, so, si, flip, U);
  int failed = 0;
  lt_steal_t st;
  lt_steal_init(&st, blocks, nt);
  LT_WORKERS(nt, {
    float *V = U + 16 * O * C + (int64_t)lt_w * per, *M = V + 16 * C * nbmax, *wk = M + 16 * O * nbmax;
    for (int64_t b; (b = lt_steal_next(&st, lt_w)) >= 0;) {
      const int64_t r0 = b * R, r1 = r0 + R < rows ? r0 + R : rows, nb = lt_wino23_block_cols(g, r1 - r0);
      lt_wino23_input_f32(g, x, r0, r1, V, wk);
      for (int xi = 0; xi < 16; xi++)
        if (lt_blas_sgemm(false, false, O, nb, C, 1, U + xi * O * C, C, V + xi * C * nb, nb, 0, M + xi * O * nb,
                          nb) != LT_OK)
          __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
      lt_wino23_output_f32(g, O, M, bias, r0, r1, y, wk);
    }
  });
  lt_release(sc);
  if (failed) return lt_error("%s: the matrix product failed", op);
  return LT_OK;
}

/* Blocks of the weight gradient a thread may take from another's run, at most (each needs a 16 x
   O x C sum of its own), within WINO_SLOT_FLOATS floats for all threads */
#define WINO_SLOTS 2
#define WINO_SLOT_FLOATS ((int64_t)1 << 21)

/* the weight gradient's block bl: its products D[xi] @ V[xi]^T into to (+ beta to) */
static bool gw_block(const lt_conv_geom_t *g, int64_t O, const float *x, const float *gy, int64_t R, int64_t rows,
                     int64_t bl, float *V, float *D, float *wk, float *to, float beta) {
  const int64_t C = g->C, r0 = bl * R, r1 = r0 + R < rows ? r0 + R : rows, nb = lt_wino23_block_cols(g, r1 - r0);
  lt_wino23_input_f32(g, x, r0, r1, V, wk);
  lt_wino23_gradout_f32(g, O, gy, r0, r1, D, wk);
  bool ok = true;
  for (int xi = 0; xi < 16; xi++)
    ok = lt_blas_sgemm(false, true, O, C, nb, 1, D + xi * O * nb, nb, V + xi * C * nb, nb, beta, to + xi * O * C,
                       C) == LT_OK && ok;
  return ok;
}

/* gw (O, g->C, 3, 3) = the weight gradient of that convolution for the output gradient gy, by the
   adjoint of Winograd's forward: the blocks of tile rows fall into one run a thread (core/steal.h),
   and run v's products D[xi] @ V[xi]^T are summed in block order into its 16 x O x C accumulator;
   the accumulators are added in run order and the sum transformed back once. A thread done with
   its run takes blocks from the back of another's, each into a slot of its own (the product
   alone), and those are added to that run's accumulator after, in block order: where the product
   adds to C in one rounding (lt_blas_sgemm_adds_once), the same bits as the run's owner summing
   them itself, so the result does not depend on which thread ran what. (Sums per chunk of blocks,
   tried first, keep the bits too, but were slower: every chunk's accumulator starts cold.) */
static int wino_gw_f32(const lt_conv_geom_t *g, int64_t N, int64_t O, const float *x, const float *gy, float *gw,
                       lt_device_t dev) {
  const int64_t C = g->C, rows = lt_wino23_tile_rows(g, N), S = lt_wino23_block_cols(g, 1), usz = 16 * O * C;
  int64_t R, blocks, nbmax;
  wino_blocks(g, O, rows, S, &R, &blocks, &nbmax);
  const int64_t per = 16 * (C + O) * nbmax + lt_wino23_work(g, R) + usz;
  int nt = wino_threads(C, O, rows, S, blocks);
  if (nt > LT_STEAL_MAX) nt = LT_STEAL_MAX;
  int64_t slots = nt > 1 && lt_blas_sgemm_adds_once(nbmax) ? WINO_SLOTS : 0;
  while (slots > 0 && nt * slots * usz > WINO_SLOT_FLOATS) slots--;
  lt_tensor_t *sc = scratch_of(nt * per + nt * slots * usz, LT_FLOAT32, dev);
  int32_t *slot_of = malloc(sizeof(int32_t) * (size_t)blocks); /* a stolen block's slot, or -1 */
  if (!sc || !slot_of) {
    lt_release(sc), free(slot_of);
    return sc ? lt_error("conv2d_backward: out of memory") : LT_ERR;
  }
  for (int64_t bl = 0; bl < blocks; bl++) slot_of[bl] = -1;
  float *base = lt_data(sc), *slot_base = base + nt * per;
  int failed = 0;
  bool started[LT_STEAL_MAX] = {false}; /* whether run v's owner ran (else its accumulator is unset) */
  lt_steal_t st;
  lt_steal_init(&st, blocks, nt);
  LT_WORKERS(nt, {
    float *dU = base + (int64_t)lt_w * per, *V = dU + usz, *D = V + 16 * C * nbmax, *wk = D + 16 * O * nbmax;
    memset(dU, 0, sizeof(float) * (size_t)usz);
    started[lt_w] = true;
    int64_t taken = 0; /* slots used */
    for (;;) {
      int64_t bl = lt_steal_own(&st, lt_w);
      float *to = dU, beta = 1;
      if (bl < 0) {
        if (taken == slots || (bl = lt_steal_other(&st)) < 0) break;
        slot_of[bl] = (int32_t)(lt_w * slots + taken);
        to = slot_base + (lt_w * slots + taken++) * usz, beta = 0;
      }
      if (!gw_block(g, O, x, gy, R, rows, bl, V, D, wk, to, beta)) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
    }
  });
  /* run v's sum: what its owner added in place (a first part of the run), then what no one took
     (the run of a worker the team lacked, or left when the slots ran out), then the blocks taken
     from its back, in block order */
  float *V = base + usz, *D = V + 16 * C * nbmax, *wk = D + 16 * O * nbmax; /* worker 0's, free now */
  for (int v = 0; v < nt && !failed; v++) {
    float *acc = base + (int64_t)v * per;
    if (!started[v]) memset(acc, 0, sizeof(float) * (size_t)usz);
    int64_t b0, b1;
    lt_steal_left(&st, v, &b0, &b1);
    for (int64_t bl = b0; bl < b1; bl++)
      if (!gw_block(g, O, x, gy, R, rows, bl, V, D, wk, acc, 1)) failed = 1;
    lt_steal_run(blocks, nt, v, &b0, &b1);
    for (int64_t bl = b0; bl < b1; bl++)
      if (slot_of[bl] >= 0) {
        const float *p = slot_base + (int64_t)slot_of[bl] * usz;
        for (int64_t i = 0; i < usz; i++) acc[i] += p[i];
      }
    if (v > 0)
      for (int64_t i = 0; i < usz; i++) base[i] += acc[i];
  }
  if (!failed) lt_wino23_wgrad_f32(base, O, C, gw);
  lt_release(sc), free(slot_of);
  if (failed) return lt_error("conv2d_backward: the matrix product failed");
  return LT_OK;
}

lt_tensor_t *lt_conv2d(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, const int64_t stride[2],
                       const int64_t padding[2], const int64_t dilation[2], int64_t groups) {
  lt_tensor_t *ins[3] = {x, w, b};
  LT_AUTOCAST3(LT_AC_LOWER, x, w, b, lt_conv2d(x, w, b, stride, padding, dilation, groups))
  if (lt_ag_needed_n(3, ins)) {
    bool prev = lt_set_grad_enabled(false);
    lt_tensor_t *o = lt_conv2d(x, w, b, stride, padding, dilation, groups);
    lt_set_grad_enabled(prev);
    return lt_ag_conv2d(x, w, b, stride, padding, dilation, groups, o);
  }
  plan_t p;
  if (check_conv("conv2d", x, w, b, stride, padding, dilation, groups, &p) != LT_OK) return NULL;
  lt_dtype ct = compute_dtype(x->dtype);
  int64_t ysz[4] = {p.N, p.Cout, p.g.OH, p.g.OW};
  if (x->device.type == LT_CUDA) { /* im2col + cuBLAS (core/cuda_linalg.c) */
    lt_tensor_t *xg = operand(x, ct), *wg = operand(w, ct), *bg = operand(b, ct);
    lt_tensor_t *yg = p.batched ? lt_empty(4, ysz, ct, x->device) : lt_empty(3, ysz + 1, ct, x->device);
    bool good = xg && wg && (bg || !b) && yg && lt_cuda_conv2d(&p.g, p.N, p.Cout, p.groups, xg, wg, bg, yg) == LT_OK;
    lt_release(xg), lt_release(wg), lt_release(bg);
    if (!good) { lt_release(yg); return NULL; }
    return finish(yg, x->dtype);
  }
  lt_tensor_t *xc = operand(x, ct), *wc = operand(w, ct), *bc = operand(b, ct);
  lt_tensor_t *y = p.batched ? lt_empty(4, ysz, ct, x->device) : lt_empty(3, ysz + 1, ct, x->device);
  double per_sample = (double)p.Cout * (double)p.Kg * (double)p.OHW;
  int nt = batch_threads(p.N, per_sample);
  const bool wino = wino_fits(&p, ct);
  bool cols = !p.direct && !p.dw && !wino;
  if (p.dw_s1) nt = plane_threads(p.N * p.g.C, (double)p.N * per_sample);
  lt_tensor_t *sc = cols ? scratch_of(nt * p.Kg * p.groups * p.OHW, ct, x->device)
                  : p.dw_s1 ? scratch_of(nt * lt_dwconv_s1_work(&p.g), ct, x->device) : NULL;
  int failed = 0;
  bool ok = xc && wc && (bc || !b) && y && (sc || !(cols || p.dw_s1));
  if (ok && p.N > 0) {
    const void *bd = bc ? lt_data(bc) : NULL;
    void *sd = sc ? lt_data(sc) : NULL;
    if (wino) {
      if (wino_f32("conv2d", &p.g, p.N, p.Cout, lt_data(wc), p.Kg, p.g.kh * p.g.kw, false, lt_data(xc), bd,
                   lt_data(y), x->device) != LT_OK)
        ok = false;
    } else if (p.dw && ct == LT_FLOAT64) dw_fwd_f64(&p, lt_data(xc), lt_data(wc), bd, lt_data(y), sd);
    else if (p.dw) dw_fwd_f32(&p, lt_data(xc), lt_data(wc), bd, lt_data(y), sd);
    else if (ct == LT_FLOAT64) conv_fwd_f64(&p, lt_data(xc), lt_data(wc), bd, lt_data(y), sd, nt, &failed);
    else conv_fwd_f32(&p, lt_data(xc), lt_data(wc), bd, lt_data(y), sd, nt, &failed);
  }
  ok = ok && !failed;
  if (failed) lt_error("conv2d: the matrix product failed");
  lt_release(xc), lt_release(wc), lt_release(bc), lt_release(sc);
  if (!ok) { lt_release(y); return NULL; }
  return finish(y, x->dtype);
}

int lt_conv2d_backward(lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, const int64_t stride[2],
                       const int64_t padding[2], const int64_t dilation[2], int64_t groups,
                       const bool need[3], lt_tensor_t **gx, lt_tensor_t **gw, lt_tensor_t **gb) {
  *gx = *gw = *gb = NULL;
  plan_t p;
  LT_TRY(check_conv("conv2d_backward", x, w, NULL, stride, padding, dilation, groups, &p));
  int64_t ysz[4] = {p.N, p.Cout, p.g.OH, p.g.OW};
  int yo = p.batched ? 0 : 1;
  if (g->ndim != x->ndim || memcmp(g->sizes, ysz + yo, sizeof(int64_t) * (size_t)g->ndim) != 0) {
    char s1[256], s2[256];
    return lt_error("conv2d_backward: expected a gradient of size %s, got %s",
                    lt_shape_str(x->ndim, ysz + yo, s1, sizeof s1), lt_shape_str(g->ndim, g->sizes, s2, sizeof s2));
  }
  const lt_tensor_t *ts[2] = {g, x};
  if (g->device.type != LT_CUDA) LT_TRY(lt_check_host("conv2d_backward", g));
  LT_TRY(lt_check_same_device("conv2d_backward", 2, ts));
  if (!lt_dtype_is_floating(g->dtype))
    return lt_error("conv2d_backward: expected a floating point gradient, got %s", lt_dtype_name(g->dtype));
  if (!need[0] && !need[1] && !need[2]) return LT_OK;
  lt_dtype ct = compute_dtype(x->dtype);
  lt_tensor_t *gc = operand(g, ct);
  if (!gc) return LT_ERR;
  if (g->device.type == LT_CUDA) { /* im2col + cuBLAS (core/cuda_linalg.c) */
    int64_t bsz[1] = {p.Cout};
    lt_tensor_t *xg = need[1] ? operand(x, ct) : NULL, *wg = need[0] ? operand(w, ct) : NULL;
    lt_tensor_t *cgx = need[0] ? lt_empty(x->ndim, x->sizes, ct, x->device) : NULL;
    lt_tensor_t *cgw = need[1] ? lt_empty(4, w->sizes, ct, w->device) : NULL;
    lt_tensor_t *cgb = need[2] ? lt_empty(1, bsz, ct, w->device) : NULL;
    bool good = (xg || !need[1]) && (wg || !need[0]) && (cgx || !need[0]) && (cgw || !need[1]) && (cgb || !need[2]) &&
                lt_cuda_conv2d_backward(&p.g, p.N, p.Cout, p.groups, gc, xg, wg, cgx, cgw, cgb) == LT_OK;
    lt_release(gc), lt_release(xg), lt_release(wg);
    if (good) {
      cgx = finish(cgx, x->dtype);
      cgw = finish(cgw, w->dtype);
      cgb = finish(cgb, w->dtype);
      good = (cgx || !need[0]) && (cgw || !need[1]) && (cgb || !need[2]);
    }
    if (!good) {
      lt_release(cgx), lt_release(cgw), lt_release(cgb);
      return LT_ERR;
    }
    *gx = cgx, *gw = cgw, *gb = cgb;
    return LT_OK;
  }
  int rc = LT_OK;
  lt_tensor_t *rgx = NULL, *rgw = NULL, *rgb = NULL;
  if (need[0] || need[1]) {
    lt_tensor_t *xc = need[1] ? operand(x, ct) : NULL, *wc = need[0] ? operand(w, ct) : NULL;
    rgx = need[0] ? lt_empty(x->ndim, x->sizes, ct, x->device) : NULL;
    rgw = need[1] ? lt_empty(4, w->sizes, ct, w->device) : NULL;
    /* the gradient of the input is the convolution of g by the rotated filters, with padding
       k - 1 - p: Winograd's when the forward would be, and the padding is at most 2 */
    const bool wino_gx = need[0] && wino_fits(&p, ct) && p.g.ph <= 2 && p.g.pw <= 2;
    const bool wino_gw = need[1] && wino_fits(&p, ct);
    double per_sample =
        (double)p.Cout * (double)p.Kg * (double)p.OHW * ((need[0] && !wino_gx) + (need[1] && !wino_gw));
    int nt = batch_threads(p.N, per_sample);
    int64_t colsz = p.direct ? 0 : p.Kg * p.groups * p.OHW;
    int64_t per_thread = 2 * colsz + (need[1] ? p.Cout * p.Kg : 0);
    if (p.dw_s1) {
      nt = plane_threads(p.N * p.g.C, (double)p.N * per_sample);
      per_thread = lt_dwconv_s1_work(&p.g) + p.Cout * p.g.kh * p.g.kw;
    }
    const bool no_scratch = (p.dw && !p.dw_s1) || ((!need[0] || wino_gx) && (!need[1] || wino_gw));
    lt_tensor_t *sc = no_scratch ? NULL : scratch_of(nt * per_thread, ct, x->device);
    int failed = 0;
    bool ok = (xc || !need[1]) && (wc || !need[0]) && (rgx || !need[0]) && (rgw || !need[1]) && (sc || no_scratch);
    if (ok && p.N == 0 && rgw) memset(lt_data(rgw), 0, (size_t)rgw->numel * lt_elsize(rgw));
    if (ok && p.N > 0) {
      const void *xd = xc ? lt_data(xc) : NULL, *wd = wc ? lt_data(wc) : NULL;
      void *gxd = rgx ? lt_data(rgx) : NULL, *gwd = rgw ? lt_data(rgw) : NULL, *sd = sc ? lt_data(sc) : NULL;
      if (wino_gx) {
        lt_conv_geom_t gg = {p.Cout, p.g.OH, p.g.OW, 3, 3, 1, 1, 2 - p.g.ph, 2 - p.g.pw, 1, 1, p.g.H, p.g.W};
        if (wino_f32("conv2d_backward", &gg, p.N, p.g.C, wd, p.g.kh * p.g.kw, p.Kg, true, lt_data(gc), NULL, gxd,
                     x->device) != LT_OK)
          ok = false;
        gxd = NULL;
      }
      if (ok && wino_gw) {
        if (wino_gw_f32(&p.g, p.N, p.Cout, xd, lt_data(gc), gwd, x->device) != LT_OK) ok = false;
        gwd = NULL;
      }
      if (!ok || (!gxd && !gwd)) {
      } else if (p.dw && ct == LT_FLOAT64) dw_bwd_f64(&p, xd, wd, lt_data(gc), gxd, gwd, sd, nt);
      else if (p.dw) dw_bwd_f32(&p, xd, wd, lt_data(gc), gxd, gwd, sd, nt);
      else if (ct == LT_FLOAT64) conv_bwd_f64(&p, xd, wd, lt_data(gc), gxd, gwd, sd, per_thread, nt, &failed);
      else conv_bwd_f32(&p, xd, wd, lt_data(gc), gxd, gwd, sd, per_thread, nt, &failed);
    }
    if (failed) lt_error("conv2d_backward: the matrix product failed");
    if (!ok || failed) rc = LT_ERR;
    lt_release(xc), lt_release(wc), lt_release(sc);
  }
  if (rc == LT_OK && need[2]) {
    int64_t bsz[1] = {p.Cout};
    rgb = lt_empty(1, bsz, ct, w->device);
    lt_tensor_t *part = rgb ? scratch_of(p.N * p.Cout, ct, x->device) : NULL;
    if (!part) rc = LT_ERR;
    else if (ct == LT_FLOAT64) conv_bias_grad_f64(&p, lt_data(gc), lt_data(rgb), lt_data(part));
    else conv_bias_grad_f32(&p, lt_data(gc), lt_data(rgb), lt_data(part));
    lt_release(part);
  }
  lt_release(gc);
  if (rc == LT_OK) {
    rgx = finish(rgx, x->dtype);
    rgw = finish(rgw, w->dtype);
    rgb = finish(rgb, w->dtype);
    if ((need[0] && !rgx) || (need[1] && !rgw) || (need[2] && !rgb)) rc = LT_ERR;
  }
  if (rc != LT_OK) {
    lt_release(rgx), lt_release(rgw), lt_release(rgb);
    return LT_ERR;
  }
  *gx = rgx, *gw = rgw, *gb = rgb;
  return LT_OK;
}
