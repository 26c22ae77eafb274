/* CPU loops of the fused optimizer steps: one pass over memory (Adam works in cache-sized blocks),
   one loop per combination of flags (the flags are constants inside each, so the loop has no
   branches and vectorises), split over threads only when there is enough work (a parallel region
   costs more than a small update).
   float16/bfloat16 parameters and gradients are loaded as float and the parameter stored back
   rounded once; their state arrays are float32. */
#include "kernels/cpu/optim.h"
#include "kernels/cpu/prefetch.h"
#include "core/iter.h"

#include <math.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#define ID(x) (x)
#define LD_F16(x) lt_half_to_float(x)
#define ST_F16(x) lt_float_to_half(x)
#define LD_BF16(x) lt_bf16_to_float(x)
#define ST_BF16(x) lt_float_to_bf16(x)

#define RESTRICT __restrict__

/* [b, e) of each of `chunks` pieces of n */
#define RANGE(c, chunks, n, b, e)                                                                \
  int64_t b = (n) * (c) / (chunks), e = (n) * ((c) + 1) / (chunks)

static int chunks_for(int64_t n) {
  int nt = lt_num_threads();
  if (nt <= 1 || n < 2 * LT_GRAIN) return 1;
  int64_t c = n / LT_GRAIN;
  return (int)(c < nt ? c : nt);
}

/* SGD: blocks of SGD_BLOCK elements, the next block's parameters asked for to write while one is
   updated (kernels/cpu/prefetch.h) */
#define SGD_BLOCK 128
#define SGD_LOOPS(ST, T, sfx, m, LD, STO)                                                        \
  static inline __attribute__((always_inline)) void sgd_range_##sfx(                             \
      ST *RESTRICT p, const ST *RESTRICT g, T *RESTRICT buf, int64_t b, int64_t e,                \
      const lt_sgd_args_##m *a, bool has_wd, bool has_mom, bool first, bool nesterov) {           \
    lt_sgd_args_##m s = *a;                                                                       \
    lt_prefetch_for_write(p, b, e, SGD_BLOCK, sizeof(ST));                                        \
    for (int64_t i0 = b; i0 < e; i0 += SGD_BLOCK) {                                               \
      int64_t i1 = e - i0 > SGD_BLOCK ? i0 + SGD_BLOCK : e;                                       \
      lt_prefetch_for_write(p, i1, e, SGD_BLOCK, sizeof(ST));                                     \
      if (has_mom) {                                                                              \
        _Pragma("omp simd") for (int64_t i = i0; i < i1; i++) {                                   \
          T pv = LD(p[i]);                                                                        \
          lt_sgd_elem_##m(&pv, LD(g[i]), buf + i, &s, has_wd, true, first, nesterov);             \
          p[i] = STO(pv);                                                                         \
        }                                                                                         \
      } else {                                                                                    \
        _Pragma("omp simd") for (int64_t i = i0; i < i1; i++) {                                   \
          T pv = LD(p[i]);                                                                        \
          lt_sgd_elem_##m(&pv, LD(g[i]), NULL, &s, has_wd, false, false, false);                  \
          p[i] = STO(pv);                                                                         \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  /* one specialised loop per flag combination */                                                 \
  static void sgd_run_##sfx(ST *p, const ST *g, T *buf, int64_t b, int64_t e,                   \
                            const lt_sgd_args_##m *a, bool wd, bool mom, bool first, bool nest) { \
    if (!mom) {                                                                                   \
      if (wd) sgd_range_##sfx(p, g, buf, b, e, a, true, false, false, false);                     \
      else sgd_range_##sfx(p, g, buf, b, e, a, false, false, false, false);                       \
    } else if (first) {                                                                           \
      if (wd) {                                                                                   \
        if (nest) sgd_range_##sfx(p, g, buf, b, e, a, true, true, true, true);                    \
        else sgd_range_##sfx(p, g, buf, b, e, a, true, true, true, false);                        \
      } else {                                                                                    \
        if (nest) sgd_range_##sfx(p, g, buf, b, e, a, false, true, true, true);                   \
        else sgd_range_##sfx(p, g, buf, b, e, a, false, true, true, false);                       \
      }                                                                                           \
    } else {                                                                                      \
      if (wd) {                                                                                   \
        if (nest) sgd_range_##sfx(p, g, buf, b, e, a, true, true, false, true);                   \
        else sgd_range_##sfx(p, g, buf, b, e, a, true, true, false, false);                       \
      } else {                                                                                    \
        if (nest) sgd_range_##sfx(p, g, buf, b, e, a, false, true, false, true);                  \
        else sgd_range_##sfx(p, g, buf, b, e, a, false, true, false, false);                      \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  void lt_cpu_sgd_##sfx(ST *p, const ST *g, T *buf, int64_t n, const lt_sgd_args_##m *a,          \
                        bool has_wd, bool has_mom, bool first, bool nesterov) {                   \
    int chunks = chunks_for(n);                                                                   \
    if (chunks == 1) {                                                                            \
      sgd_run_##sfx(p, g, buf, 0, n, a, has_wd, has_mom, first, nesterov);                        \
      return;                                                                                     \
    }                                                                                             \
    _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)")                        \
    for (int c = 0; c < chunks; c++) {                                                            \
      RANGE(c, chunks, n, b, e);                                                                  \
      sgd_run_##sfx(p, g, buf, b, e, a, has_wd, has_mom, first, nesterov);                        \
    }                                                                                             \
  }

/* x = sqrt(x) over a block, with the vector square root where the target has one (the same
   correctly rounded results as sqrt) */
#define SQRT_BLOCK(T, sfx, VLEN, LOADU, SQRT, STOREU)                                             \
  static inline void sqrt_block_##sfx(T *x, int n) {                                              \
    int i = 0;                                                                                    \
    for (; i + VLEN <= n; i += VLEN) STOREU(x + i, SQRT(LOADU(x + i)));                           \
    for (; i < n; i++) x[i] = sqrt(x[i]);                                                         \
  }
#if defined(__AVX512F__)
SQRT_BLOCK(float, f, 16, _mm512_loadu_ps, _mm512_sqrt_ps, _mm512_storeu_ps)
SQRT_BLOCK(double, d, 8, _mm512_loadu_pd, _mm512_sqrt_pd, _mm512_storeu_pd)
#elif defined(__AVX__)
SQRT_BLOCK(float, f, 8, _mm256_loadu_ps, _mm256_sqrt_ps, _mm256_storeu_ps)
SQRT_BLOCK(double, d, 4, _mm256_loadu_pd, _mm256_sqrt_pd, _mm256_storeu_pd)
#elif defined(__SSE2__)
SQRT_BLOCK(float, f, 4, _mm_loadu_ps, _mm_sqrt_ps, _mm_storeu_ps)
SQRT_BLOCK(double, d, 2, _mm_loadu_pd, _mm_sqrt_pd, _mm_storeu_pd)
#else
static inline void sqrt_block_f(float *x, int n) { for (int i = 0; i < n; i++) x[i] = sqrt(x[i]); }
static inline void sqrt_block_d(double *x, int n) { for (int i = 0; i < n; i++) x[i] = sqrt(x[i]); }
#endif

/* Adam: blocks of ADAM_BLOCK elements in three passes: the moments (vectorised), the roots (vector
   square roots), the parameters (vectorised); the next block's parameters asked for to write first
   (kernels/cpu/prefetch.h) */
#define ADAM_BLOCK 256
#define ADAM_LOOPS(ST, T, sfx, m, LD, STO)                                                       \
  static inline __attribute__((always_inline)) void adam_range_##sfx(                            \
      ST *RESTRICT p, const ST *RESTRICT g, T *RESTRICT ea, T *RESTRICT v, T *RESTRICT vmax,      \
      int64_t b, int64_t e, const lt_adam_args_##m *a, bool has_wd, bool amsgrad, bool lo) {      \
    lt_adam_args_##m s = *a;                                                                      \
    T root[ADAM_BLOCK];                                                                           \
    for (int64_t k = b; k < e; k += ADAM_BLOCK) {                                                 \
      int nb = (int)(e - k < ADAM_BLOCK ? e - k : ADAM_BLOCK);                                    \
      ST *pk = p + k;                                                                             \
      const ST *gk = g + k;                                                                       \
      T *mk = ea + k, *vk = v + k, *xk = amsgrad ? vmax + k : NULL;                               \
      lt_prefetch_for_write(p, k + nb, e, ADAM_BLOCK, sizeof(ST));                                \
      if (amsgrad) {                                                                              \
        _Pragma("omp simd") for (int i = 0; i < nb; i++)                                          \
          root[i] = lt_adam_moments_##m(LD(pk[i]), LD(gk[i]), mk + i, vk + i, xk + i, &s, has_wd,  \
                                        true, lo);                                                \
      } else {                                                                                    \
        _Pragma("omp simd") for (int i = 0; i < nb; i++)                                          \
          root[i] = lt_adam_moments_##m(LD(pk[i]), LD(gk[i]), mk + i, vk + i, NULL, &s, has_wd,    \
                                        false, lo);                                               \
      }                                                                                           \
      sqrt_block_##m(root, nb);                                                                   \
      _Pragma("omp simd") for (int i = 0; i < nb; i++)                                            \
        pk[i] = STO(lt_adam_apply_##m(LD(pk[i]), mk[i], root[i], &s));                            \
    }                                                                                             \
  }                                                                                               \
  static void adam_run_##sfx(ST *p, const ST *g, T *ea, T *v, T *vmax, int64_t b, int64_t e,     \
                             const lt_adam_args_##m *a, bool has_wd, bool amsgrad, bool lo) {     \
    if (lo) {                                                                                     \
      if (has_wd) {                                                                               \
        if (amsgrad) adam_range_##sfx(p, g, ea, v, vmax, b, e, a, true, true, true);              \
        else adam_range_##sfx(p, g, ea, v, vmax, b, e, a, true, false, true);                     \
      } else {                                                                                    \
        if (amsgrad) adam_range_##sfx(p, g, ea, v, vmax, b, e, a, false, true, true);             \
        else adam_range_##sfx(p, g, ea, v, vmax, b, e, a, false, false, true);                    \
      }                                                                                           \
    } else {                                                                                      \
      if (has_wd) {                                                                               \
        if (amsgrad) adam_range_##sfx(p, g, ea, v, vmax, b, e, a, true, true, false);             \
        else adam_range_##sfx(p, g, ea, v, vmax, b, e, a, true, false, false);                    \
      } else {                                                                                    \
        if (amsgrad) adam_range_##sfx(p, g, ea, v, vmax, b, e, a, false, true, false);            \
        else adam_range_##sfx(p, g, ea, v, vmax, b, e, a, false, false, false);                   \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  void lt_cpu_adam_##sfx(ST *p, const ST *g, T *ea, T *v, T *vmax, int64_t n,                     \
                         const lt_adam_args_##m *a, bool has_wd, bool amsgrad, bool lerp_lo) {    \
    int chunks = chunks_for(n);                                                                   \
    if (chunks == 1) {                                                                            \
      adam_run_##sfx(p, g, ea, v, vmax, 0, n, a, has_wd, amsgrad, lerp_lo);                      \
      return;                                                                                     \
    }                                                                                             \
    _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)")                        \
    for (int c = 0; c < chunks; c++) {                                                            \
      RANGE(c, chunks, n, b, e);                                                                  \
      adam_run_##sfx(p, g, ea, v, vmax, b, e, a, has_wd, amsgrad, lerp_lo);                      \
    }                                                                                             \
  }

SGD_LOOPS(float, float, f, f, ID, ID)
SGD_LOOPS(double, double, d, d, ID, ID)
SGD_LOOPS(lt_half, float, h, f, LD_F16, ST_F16)
SGD_LOOPS(lt_bfloat16, float, b, f, LD_BF16, ST_BF16)
ADAM_LOOPS(float, float, f, f, ID, ID)
ADAM_LOOPS(double, double, d, d, ID, ID)
ADAM_LOOPS(lt_half, float, h, f, LD_F16, ST_F16)
ADAM_LOOPS(lt_bfloat16, float, b, f, LD_BF16, ST_BF16)
