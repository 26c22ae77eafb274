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

/* the backward loop over a row's units, with DH and DC2 the expressions of the gradients' loads */
#define BWD_LOOP(SUF, DH, DC2)                                                                       \
  _Pragma("omp simd") for (int64_t j = 0; j < H; j++) {                                              \
    lt_lstm_cell_bwd_##SUF(g[j], g[H + j], g[2 * H + j], g[3 * H + j], c[j], DH, DC2, &dg[j], &dg[H + j], \
                           &dg[2 * H + j], &dg[3 * H + j], &dc[j]);                                  \
  }

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
  /* one row's backward, with the loads of dh and dc2 given (a NULL gradient is a zero, chosen   \
     outside the loop so that the loop has no branch and vectorises) */                              \
  static inline void bwd_row_##SUF(const T *restrict g, const T *restrict c, const T *restrict dh,   \
                                   const T *restrict dc2, T *restrict dg, T *restrict dc, int64_t H) { \
    if (dh && dc2) {                                                                                 \
      BWD_LOOP(SUF, dh[j], dc2[j])                                                                   \
    } else if (dh) {                                                                                 \
      BWD_LOOP(SUF, dh[j], (T)0)                                                                     \
    } else if (dc2) {                                                                                \
      BWD_LOOP(SUF, (T)0, dc2[j])                                                                    \
    } else {                                                                                         \
      BWD_LOOP(SUF, (T)0, (T)0)                                                                      \
    }                                                                                                \
  }                                                                                                  \
  static void bwd_##SUF(void *ctx, int64_t b, int64_t e) {                                            \
    const cell_t *a = ctx;                                                                           \
    int64_t H = a->H;                                                                                \
    for (int64_t n = b; n < e; n++)                                                                  \
      bwd_row_##SUF((const T *)a->g + n * 4 * H, (const T *)a->c + n * H,                            \
                    a->dh ? (const T *)a->dh + n * H : NULL, a->dc2 ? (const T *)a->dc2 + n * H : NULL, \
                    (T *)a->dg + n * 4 * H, (T *)a->dc + n * H, H);                                  \
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
