/* The CPU loops of the fused LSTM cell (kernels/cpu/rnn.h), threaded over rows with
   lt_cpu_parallel_range above a thread's share of elements. */
#include "kernels/cpu/rnn.h"
#include "kernels/cpu/normalization.h"
#include "kernels/rnn.h"

typedef struct {
  const void *g, *c, *dh, *dc2;
  void *h, *c2, *dg, *dc;
  int64_t H;
} cell_t;

#define FWD_ROWS(T, SUF)                                                                             \
  static void fwd_##SUF(void *ctx, int64_t b, int64_t e) {                                            \
    const cell_t *a = ctx;                                                                           \
    int64_t H = a->H;                                                                                \
    for (int64_t n = b; n < e; n++) {                                                                \
      const T *restrict g = (const T *)a->g + n * 4 * H, *restrict c = (const T *)a->c + n * H;      \
      T *restrict h = (T *)a->h + n * H, *restrict c2 = (T *)a->c2 + n * H;                          \
      _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                            \
        lt_lstm_cell_fwd_##SUF(g[j], g[H + j], g[2 * H + j], g[3 * H + j], c[j], &h[j], &c2[j]);     \
    }                                                                                                \
  }                                                                                                  \
  static void bwd_##SUF(void *ctx, int64_t b, int64_t e) {                                            \
    const cell_t *a = ctx;                                                                           \
    int64_t H = a->H;                                                                                \
    for (int64_t n = b; n < e; n++) {                                                                \
      const T *restrict g = (const T *)a->g + n * 4 * H, *restrict c = (const T *)a->c + n * H;      \
      const T *restrict dh = a->dh ? (const T *)a->dh + n * H : NULL;                                \
      const T *restrict dc2 = a->dc2 ? (const T *)a->dc2 + n * H : NULL;                             \
      T *restrict dg = (T *)a->dg + n * 4 * H, *restrict dc = (T *)a->dc + n * H;                    \
      _Pragma("omp simd") for (int64_t j = 0; j < H; j++) {                                          \
        T d[4];                                                                                      \
        lt_lstm_cell_bwd_##SUF(g[j], g[H + j], g[2 * H + j], g[3 * H + j], c[j], dh ? dh[j] : (T)0, \
                               dc2 ? dc2[j] : (T)0, d, &dc[j]);                                      \
        dg[j] = d[0], dg[H + j] = d[1], dg[2 * H + j] = d[2], dg[3 * H + j] = d[3];                  \
      }                                                                                              \
    }                                                                                                \
  }
FWD_ROWS(float, f)
FWD_ROWS(double, d)

void lt_cpu_lstm_cell(lt_dtype dt, const void *g, const void *c, void *h, void *c2, int64_t N, int64_t H) {
  cell_t a = {.g = g, .c = c, .h = h, .c2 = c2, .H = H};
  lt_cpu_parallel_range(N, N * H * 8, dt == LT_FLOAT64 ? fwd_d : fwd_f, &a);
}

void lt_cpu_lstm_cell_backward(lt_dtype dt, const void *g, const void *c, const void *dh, const void *dc2, void *dg,
                               void *dc, int64_t N, int64_t H) {
  cell_t a = {.g = g, .c = c, .dh = dh, .dc2 = dc2, .dg = dg, .dc = dc, .H = H};
  lt_cpu_parallel_range(N, N * H * 10, dt == LT_FLOAT64 ? bwd_d : bwd_f, &a);
}
