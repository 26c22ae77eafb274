/* The CPU loops of the indexing ops (see kernels/cpu/index.h). Copies go by element size (the
   dtype does not matter for them); accumulations are typed, with float16/bfloat16 computed in
   float32. Index values arrive checked. */
#include "kernels/cpu/index.h"

#include "kernels/half.h"

#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* ---- copies by element size ---- */
#define COPY_LOOPS(bits)                                                                          \
  typedef uint##bits##_t E##bits;                                                                 \
                                                                                                  \
  static void gather_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {           \
    const lt_index_ctx_t *c = vctx;                                                               \
    const int64_t ds = c->dstride[0];                                                             \
    if (s[0] == sizeof(E##bits) && s[1] == sizeof(int64_t)) {                                     \
      E##bits *o = (E##bits *)d[0];                                                               \
      const int64_t *ix = (const int64_t *)d[1];                                                  \
      const char *x = d[2];                                                                       \
      if (s[2] == 0) { /* gather along the innermost dimension: one source row */                 \
        for (int64_t i = 0; i < n; i++) o[i] = *(const E##bits *)(x + ix[i] * ds);                \
      } else {                                                                                    \
        for (int64_t i = 0; i < n; i++) o[i] = *(const E##bits *)(x + i * s[2] + ix[i] * ds);     \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                           \
        int64_t k = *(const int64_t *)(d[1] + i * s[1]);                                          \
        *(E##bits *)(d[0] + i * s[0]) = *(const E##bits *)(d[2] + i * s[2] + k * ds);             \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void isel_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {             \
    const lt_index_ctx_t *c = vctx;                                                               \
    const int64_t *ix = c->index;                                                                 \
    const int64_t m = c->n, dso = c->dstride[0], dsx = c->dstride[1];                             \
    if (iabs64(s[0]) <= iabs64(dso)) {                                                            \
      for (int64_t j = 0; j < m; j++) {                                                           \
        char *o = d[0] + j * dso;                                                                 \
        const char *x = d[1] + ix[j] * dsx;                                                       \
        if (s[0] == sizeof(E##bits) && s[1] == sizeof(E##bits)) {                                 \
          E##bits *op = (E##bits *)o;                                                             \
          const E##bits *xp = (const E##bits *)x;                                                 \
          for (int64_t i = 0; i < n; i++) op[i] = xp[i];                                          \
        } else {                                                                                  \
          for (int64_t i = 0; i < n; i++)                                                         \
            *(E##bits *)(o + i * s[0]) = *(const E##bits *)(x + i * s[1]);                        \
        }                                                                                         \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                           \
        char *o = d[0] + i * s[0];                                                                \
        const char *x = d[1] + i * s[1];                                                          \
        for (int64_t j = 0; j < m; j++)                                                           \
          *(E##bits *)(o + j * dso) = *(const E##bits *)(x + ix[j] * dsx);                        \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void ifill_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {            \
    const lt_index_ctx_t *c = vctx;                                                               \
    const int64_t *ix = c->index;                                                                 \
    const int64_t m = c->n, dsx = c->dstride[0];                                                  \
    E##bits v;                                                                                    \
    memcpy(&v, c->value, sizeof v);                                                               \
    if (iabs64(s[0]) <= iabs64(dsx)) {                                                            \
      for (int64_t j = 0; j < m; j++) {                                                           \
        char *x = d[0] + ix[j] * dsx;                                                             \
        for (int64_t i = 0; i < n; i++) *(E##bits *)(x + i * s[0]) = v;                           \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                           \
        char *x = d[0] + i * s[0];                                                                \
        for (int64_t j = 0; j < m; j++) *(E##bits *)(x + ix[j] * dsx) = v;                        \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void scatter_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {          \
    const lt_index_ctx_t *c = vctx;                                                               \
    const int64_t m = c->n, dso = c->dstride[0], dsi = c->dstride[1], dss = c->dstride[2];        \
    if (iabs64(s[1]) <= iabs64(dsi)) {                                                            \
      for (int64_t j = 0; j < m; j++)                                                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          *(E##bits *)(d[0] + i * s[0] + k * dso) = *(const E##bits *)(d[2] + i * s[2] + j * dss); \
        }                                                                                         \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++)                                                             \
        for (int64_t j = 0; j < m; j++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          *(E##bits *)(d[0] + i * s[0] + k * dso) = *(const E##bits *)(d[2] + i * s[2] + j * dss); \
        }                                                                                         \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void scatterv_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {         \
    const lt_index_ctx_t *c = vctx;                                                               \
    const int64_t m = c->n, dso = c->dstride[0], dsi = c->dstride[1];                             \
    E##bits v;                                                                                    \
    memcpy(&v, c->value, sizeof v);                                                               \
    if (iabs64(s[1]) <= iabs64(dsi)) {                                                            \
      for (int64_t j = 0; j < m; j++)                                                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          *(E##bits *)(d[0] + i * s[0] + k * dso) = v;                                            \
        }                                                                                         \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++)                                                             \
        for (int64_t j = 0; j < m; j++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          *(E##bits *)(d[0] + i * s[0] + k * dso) = v;                                            \
        }                                                                                         \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void mfill_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {            \
    E##bits v;                                                                                    \
    memcpy(&v, vctx, sizeof v);                                                                   \
    if (s[0] == sizeof(E##bits) && s[1] == 1) {                                                   \
      E##bits *o = (E##bits *)d[0];                                                               \
      const uint8_t *mk = (const uint8_t *)d[1];                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = mk[i] ? v : o[i];                                    \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++)                                                             \
        if (*(const uint8_t *)(d[1] + i * s[1])) *(E##bits *)(d[0] + i * s[0]) = v;               \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void msel_##bits(char **d, const int64_t *s, int64_t n, const void *vctx) {             \
    lt_masked_select_ctx_t *c = (lt_masked_select_ctx_t *)(uintptr_t)vctx;                        \
    E##bits *cur = (E##bits *)c->cursor, *end = (E##bits *)c->end;                                \
    /* branch-free: every element is written at the cursor, which advances only past selected     \
       ones; the cursor never passes the end (the count of selected elements is exact) */         \
    for (int64_t i = 0; i < n && cur < end; i++) {                                                \
      *cur = *(const E##bits *)(d[1] + i * s[1]);                                                 \
      cur += *(const uint8_t *)(d[0] + i * s[0]) != 0;                                            \
    }                                                                                             \
    c->cursor = (char *)cur;                                                                      \
  }

COPY_LOOPS(8)
COPY_LOOPS(16)
COPY_LOOPS(32)
COPY_LOOPS(64)

#define BY_SIZE(prefix, size)          \
  switch (size) {                      \
    case 1: return prefix##8;          \
    case 2: return prefix##16;         \
    case 4: return prefix##32;         \
    case 8: return prefix##64;         \
    default: return NULL;              \
  }

lt_loop_fn lt_cpu_gather_loop(size_t elsize) { BY_SIZE(gather_, elsize) }
lt_loop_fn lt_cpu_index_select_loop(size_t elsize) { BY_SIZE(isel_, elsize) }
lt_loop_fn lt_cpu_index_fill_loop(size_t elsize) { BY_SIZE(ifill_, elsize) }
lt_loop_fn lt_cpu_scatter_loop(size_t elsize) { BY_SIZE(scatter_, elsize) }
lt_loop_fn lt_cpu_scatter_value_loop(size_t elsize) { BY_SIZE(scatterv_, elsize) }
lt_loop_fn lt_cpu_masked_fill_loop(size_t elsize) { BY_SIZE(mfill_, elsize) }
lt_loop_fn lt_cpu_masked_select_loop(size_t elsize) { BY_SIZE(msel_, elsize) }

/* ---- accumulations, per dtype: ACC(dst pointer, src pointer) ---- */
#define ACC_F32(o, x) (*(float *)(o) += alpha_f * *(const float *)(x))
#define ACC_F64(o, x) (*(double *)(o) += c->alpha * *(const double *)(x))
#define ACC_F16(o, x)                                                                             \
  (*(lt_half *)(o) = lt_float_to_half(lt_half_to_float(*(const lt_half *)(o)) +                  \
                                      alpha_f * lt_half_to_float(*(const lt_half *)(x))))
#define ACC_BF16(o, x)                                                                            \
  (*(lt_bfloat16 *)(o) = lt_float_to_bf16(lt_bf16_to_float(*(const lt_bfloat16 *)(o)) +           \
                                          alpha_f * lt_bf16_to_float(*(const lt_bfloat16 *)(x))))
/* integers wrap around as PyTorch's do (computed unsigned to stay defined) */
#define ACC_INT(T, o, x)                                                                          \
  do {                                                                                            \
    uint64_t a_ = (uint64_t)(int64_t)(*(const T *)(o)), b_ = (uint64_t)(int64_t)(*(const T *)(x)); \
    *(T *)(o) = (T)(a_ + (uint64_t)c->ialpha * b_);                                               \
  } while (0)
#define ACC_I64(o, x) ACC_INT(int64_t, o, x)
#define ACC_I32(o, x) ACC_INT(int32_t, o, x)
#define ACC_I16(o, x) ACC_INT(int16_t, o, x)
#define ACC_I8(o, x) ACC_INT(int8_t, o, x)
#define ACC_U8(o, x) ACC_INT(uint8_t, o, x)
#define ACC_B8(o, x) (*(uint8_t *)(o) = (uint8_t)(*(const uint8_t *)(o) || (c->ialpha && *(const uint8_t *)(x))))

#define ACC_LOOPS(sfx, ACC)                                                                       \
  static void iadd_##sfx(char **d, const int64_t *s, int64_t n, const void *vctx) {              \
    const lt_index_ctx_t *c = vctx;                                                               \
    const float alpha_f = (float)c->alpha;                                                        \
    (void)alpha_f;                                                                                \
    const int64_t *ix = c->index;                                                                 \
    const int64_t m = c->n, dsx = c->dstride[0], dss = c->dstride[1];                             \
    if (iabs64(s[0]) <= iabs64(dsx)) {                                                            \
      for (int64_t j = 0; j < m; j++) {                                                           \
        char *x = d[0] + ix[j] * dsx;                                                             \
        const char *y = d[1] + j * dss;                                                           \
        for (int64_t i = 0; i < n; i++) ACC(x + i * s[0], y + i * s[1]);                          \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                           \
        char *x = d[0] + i * s[0];                                                                \
        const char *y = d[1] + i * s[1];                                                          \
        for (int64_t j = 0; j < m; j++) ACC(x + ix[j] * dsx, y + j * dss);                        \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void sadd_##sfx(char **d, const int64_t *s, int64_t n, const void *vctx) {              \
    const lt_index_ctx_t *c = vctx;                                                               \
    const float alpha_f = (float)c->alpha;                                                        \
    (void)alpha_f;                                                                                \
    const int64_t m = c->n, dso = c->dstride[0], dsi = c->dstride[1], dss = c->dstride[2];        \
    if (iabs64(s[1]) <= iabs64(dsi)) {                                                            \
      for (int64_t j = 0; j < m; j++)                                                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          ACC(d[0] + i * s[0] + k * dso, d[2] + i * s[2] + j * dss);                              \
        }                                                                                         \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++)                                                             \
        for (int64_t j = 0; j < m; j++) {                                                         \
          int64_t k = *(const int64_t *)(d[1] + i * s[1] + j * dsi);                              \
          ACC(d[0] + i * s[0] + k * dso, d[2] + i * s[2] + j * dss);                              \
        }                                                                                         \
    }                                                                                             \
  }

ACC_LOOPS(f32, ACC_F32)
ACC_LOOPS(f64, ACC_F64)
ACC_LOOPS(f16, ACC_F16)
ACC_LOOPS(bf16, ACC_BF16)
ACC_LOOPS(i64, ACC_I64)
ACC_LOOPS(i32, ACC_I32)
ACC_LOOPS(i16, ACC_I16)
ACC_LOOPS(i8, ACC_I8)
ACC_LOOPS(u8, ACC_U8)
ACC_LOOPS(b8, ACC_B8)

/* in lt_dtype order */
static const lt_loop_fn iadd_table[LT_NDTYPES] = {iadd_f32, iadd_f64, iadd_f16, iadd_bf16, iadd_i64,
                                                  iadd_i32, iadd_i16, iadd_i8,  iadd_u8,   iadd_b8};
static const lt_loop_fn sadd_table[LT_NDTYPES] = {sadd_f32, sadd_f64, sadd_f16, sadd_bf16, sadd_i64,
                                                  sadd_i32, sadd_i16, sadd_i8,  sadd_u8,   sadd_b8};
_Static_assert(LT_NDTYPES == 10, "dtype columns of the index tables");

lt_loop_fn lt_cpu_index_add_loop(lt_dtype dt) {
  return (unsigned)dt < LT_NDTYPES ? iadd_table[dt] : NULL;
}
lt_loop_fn lt_cpu_scatter_add_loop(lt_dtype dt) {
  return (unsigned)dt < LT_NDTYPES ? sadd_table[dt] : NULL;
}

/* ---- index range checks ---- */
#define RANGE_LOOP(sfx, T)                                                                        \
  static void range_##sfx(char **d, const int64_t *s, int64_t n, const void *vctx) {             \
    const lt_index_range_ctx_t *c = vctx;                                                         \
    const int64_t bound = c->bound;                                                               \
    int bad = 0;                                                                                  \
    if (s[0] == sizeof(T)) {                                                                      \
      const T *p = (const T *)d[0];                                                               \
      for (int64_t i = 0; i < n; i++) bad |= (p[i] < 0) | ((int64_t)p[i] >= bound);               \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                           \
        T v = *(const T *)(d[0] + i * s[0]);                                                      \
        bad |= (v < 0) | ((int64_t)v >= bound);                                                   \
      }                                                                                           \
    }                                                                                             \
    if (bad) atomic_store_explicit(c->bad, 1, memory_order_relaxed);                              \
  }
RANGE_LOOP(i64, int64_t)
RANGE_LOOP(i32, int32_t)

lt_loop_fn lt_cpu_index_range_loop(lt_dtype index_dt) {
  if (index_dt == LT_INT64) return range_i64;
  if (index_dt == LT_INT32) return range_i32;
  return NULL;
}

/* ---- rows of contiguous tensors ---- */
/* out row (o, j) = x row (o, index[j]): nested loops (a flat loop over o * m + j paid a division
   and a remainder an element: flip of 64 x 512 floats along its rows 64 us) */
#define ROWS_TYPED(T)                                                                             \
  do {                                                                                            \
    T *o_ = (T *)out;                                                                             \
    const T *x_ = (const T *)x;                                                                   \
    if (par && outer >= 64) { /* by outer rows (collapse(2) divides at every element) */       \
      _Pragma("omp parallel for num_threads(lt_team_size()) schedule(static)")                    \
      for (int64_t o = 0; o < outer; o++)                                                         \
        for (int64_t j = 0; j < m; j++) o_[o * m + j] = x_[o * n + index[j]];                     \
    } else if (par) {                                                                             \
      _Pragma("omp parallel for collapse(2) num_threads(lt_team_size()) schedule(static)")        \
      for (int64_t o = 0; o < outer; o++)                                                         \
        for (int64_t j = 0; j < m; j++) o_[o * m + j] = x_[o * n + index[j]];                     \
    } else {                                                                                      \
      for (int64_t o = 0; o < outer; o++)                                                         \
        for (int64_t j = 0; j < m; j++) o_[o * m + j] = x_[o * n + index[j]];                     \
    }                                                                                             \
  } while (0)

void lt_cpu_index_select_rows(char *out, const char *x, const int64_t *index, int64_t outer,
                              int64_t n, int64_t m, int64_t row_bytes) {
  int64_t total = outer * m;
  if (total == 0) return;
  int nt = lt_threads_for((double)total * (double)(row_bytes + 8), (double)LT_GRAIN * 4, 0);
  int par = nt > 1 && total > 1;
  bool aligned = row_bytes <= 8 && (((uintptr_t)out | (uintptr_t)x) & (uintptr_t)(row_bytes - 1)) == 0;
  switch (aligned ? row_bytes : 0) { /* short rows (one element): typed copies */
    case 1: ROWS_TYPED(uint8_t); return;
    case 2: ROWS_TYPED(uint16_t); return;
    case 4: ROWS_TYPED(uint32_t); return;
    case 8: ROWS_TYPED(uint64_t); return;
    default: break;
  }
  /* small copies never enter libgomp: even a one-thread region costs a futex wake-up */
  if (par && outer >= 64) {
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < m; j++)
        memcpy(out + (o * m + j) * row_bytes, x + (o * n + index[j]) * row_bytes, (size_t)row_bytes);
  } else if (par) {
#pragma omp parallel for collapse(2) num_threads(lt_team_size()) schedule(static)
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < m; j++)
        memcpy(out + (o * m + j) * row_bytes, x + (o * n + index[j]) * row_bytes, (size_t)row_bytes);
  } else {
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < m; j++)
        memcpy(out + (o * m + j) * row_bytes, x + (o * n + index[j]) * row_bytes, (size_t)row_bytes);
  }
}

/* ---- nonzero ---- */
#define NZ_FLOAT(T, p) (*(const T *)(p) != 0)
#define NZ_16(p) ((*(const uint16_t *)(p) & 0x7fffu) != 0)
#define NZ_INT(T, p) (*(const T *)(p) != 0)

/* Walk a strided tensor in row-major order; count (and record when out) its non-zero elements. */
#define NONZERO_WALK(sfx, ESIZE, TEST)                                                            \
  static int64_t nonzero_##sfx(const char *data, int ndim, const int64_t *sizes,                  \
                               const int64_t *strides, int64_t *out, const int64_t *end) {        \
    if (ndim == 0) return TEST(data) ? 1 : 0;                                                     \
    for (int d = 0; d < ndim; d++)                                                                \
      if (sizes[d] == 0) return 0;                                                                \
    int64_t idx[LT_MAX_DIM] = {0};                                                                \
    const int last = ndim - 1;                                                                    \
    const int64_t n = sizes[last], s = strides[last] * (ESIZE);                                   \
    const char *base = data;                                                                      \
    int64_t count = 0;                                                                            \
    for (;;) {                                                                                    \
      if (out) { /* branch-free: write at out, advance past non-zero elements only */           \
        for (int64_t i = 0; i < n && out < end; i++) {                                            \
          for (int d = 0; d < last; d++) out[d] = idx[d];                                         \
          out[last] = i;                                                                          \
          int nz = TEST(base + i * s) ? 1 : 0;                                                    \
          out += nz * ndim;                                                                       \
          count += nz;                                                                            \
        }                                                                                         \
        if (out >= end) return count;                                                             \
      } else {                                                                                    \
        for (int64_t i = 0; i < n; i++) count += TEST(base + i * s) ? 1 : 0;                      \
      }                                                                                           \
      int d = last - 1;                                                                           \
      for (; d >= 0; d--) {                                                                       \
        idx[d]++;                                                                                 \
        base += strides[d] * (ESIZE);                                                             \
        if (idx[d] < sizes[d]) break;                                                             \
        base -= strides[d] * sizes[d] * (ESIZE);                                                  \
        idx[d] = 0;                                                                               \
      }                                                                                           \
      if (d < 0) break;                                                                           \
    }                                                                                             \
    return count;                                                                                 \
  }

#define NZ_F32(p) NZ_FLOAT(float, p)
#define NZ_F64(p) NZ_FLOAT(double, p)
#define NZ_I64(p) NZ_INT(int64_t, p)
#define NZ_I32(p) NZ_INT(int32_t, p)
#define NZ_I16(p) NZ_INT(int16_t, p)
#define NZ_I8(p) NZ_INT(uint8_t, p)
NONZERO_WALK(f32, 4, NZ_F32)
NONZERO_WALK(f64, 8, NZ_F64)
NONZERO_WALK(h16, 2, NZ_16)
NONZERO_WALK(i64, 8, NZ_I64)
NONZERO_WALK(i32, 4, NZ_I32)
NONZERO_WALK(i16, 2, NZ_I16)
NONZERO_WALK(i8, 1, NZ_I8)

static int64_t nonzero_any(const char *data, lt_dtype dt, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t *out, const int64_t *end) {
  switch (dt) {
    case LT_FLOAT32: return nonzero_f32(data, ndim, sizes, strides, out, end);
    case LT_FLOAT64: return nonzero_f64(data, ndim, sizes, strides, out, end);
    case LT_FLOAT16:
    case LT_BFLOAT16: return nonzero_h16(data, ndim, sizes, strides, out, end);
    case LT_INT64: return nonzero_i64(data, ndim, sizes, strides, out, end);
    case LT_INT32: return nonzero_i32(data, ndim, sizes, strides, out, end);
    case LT_INT16: return nonzero_i16(data, ndim, sizes, strides, out, end);
    case LT_INT8:
    case LT_UINT8:
    case LT_BOOL: return nonzero_i8(data, ndim, sizes, strides, out, end);
    default: return 0;
  }
}

int64_t lt_cpu_count_nonzero(const char *data, lt_dtype dt, int ndim, const int64_t *sizes,
                             const int64_t *strides) {
  return nonzero_any(data, dt, ndim, sizes, strides, NULL, NULL);
}

void lt_cpu_nonzero(const char *data, lt_dtype dt, int ndim, const int64_t *sizes,
                    const int64_t *strides, int64_t count, int64_t *out) {
  if (count > 0 && ndim > 0) nonzero_any(data, dt, ndim, sizes, strides, out, out + count * ndim);
}
