/* The float32 matrix product on AVX-512: see sgemm.h.

   GotoBLAS's loops: for each NC-column block of C, for each KC-deep slice, B's slice is packed into
   KC x NR micro-panels (row p of a micro-panel holds NR consecutive columns); for each MC-row block,
   A's slice is packed into MR x KC micro-panels (column p holds MR consecutive rows); then each
   MR x NR tile of C gets a micro-kernel call that keeps the tile in 24 zmm registers and, for each
   p, loads three vectors of B and broadcasts MR values of A into 24 fused multiply-adds. Where
   48-column tiles would waste columns (N = 32, 64, 128, ...), 32-column tiles (16 registers) run
   instead. The first
   slice scales C by beta, the later ones add to it. Panels are zero-padded to whole tiles, so the
   kernel always runs full tiles and only its stores are clipped (masked columns, skipped rows).

   A row-major is not packed at all: the kernels broadcast its values from its rows in place. With
   few rows of C (DIRECT_M) and B row-major, B is not packed either. B transposed is packed through
   8 x 8 transpositions in registers; A @ B^T with few rows of A (a Linear layer's forward) runs
   as (B @ A^T)^T, so that the small A is the transposed side (SWAP_M), and with at most DOT_M rows
   (or at most DOT_N rows of B: a layer with few outputs) as dot products of rows (sgemm_dot).
   A @ B with few rows of A and a deep B (a Linear layer's input gradient) splits the depth between
   the threads (sgemm_ksplit). Threads, otherwise: C is split into column blocks (or row blocks,
   when it is taller than wide, or when that costs less with A packed: split_rows) of whole tiles,
   each thread packing its own panels; products this small are cheaper to pack twice than to
   synchronise.

   Measured on 2 cores of an AMD EPYC with AVX-512 (FMA ceiling ~210 GFLOP/s a core): n = 1024
   runs at ~150-175 GFLOP/s on one core, OpenBLAS 0.3.21's SkylakeX kernels at ~170 and its Haswell
   kernels at ~95. */
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")
#include "sgemm.h"

#include "gemm_simd.h"
#include "core/iter.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MR 8     /* rows of a tile */
#define NR 48    /* columns of a tile: three zmm (NR2, two, where that wastes fewer columns) */
#define NR2 32
#define KC LT_SGEMM_KC /* depth of a slice (256): a KC x NR panel of B is 48 KiB, the L1 cache */
#define MC 144   /* rows of A packed at a time: 144 KiB, in L2 */
#define NC 1920  /* columns of B packed at a time: 1.9 MiB */

_Static_assert(MC % MR == 0 && NC % NR == 0 && NC % NR2 == 0, "blocks are whole tiles");

/* ---- the micro-kernel ------------------------------------------------------------------------ */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define FMA(i)                                                                                     \
  {                                                                                                \
    __m512 a_ = _mm512_set1_ps(a[i]);                                                              \
    c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);                                                    \
    c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);                                                    \
    c##i##2 = _mm512_fmadd_ps(a_, b2, c##i##2);                                                    \
  }
#define STORE(i)                                                                                   \
  if (i < mr) {                                                                                    \
    float *ci = c + i * ldc;                                                                       \
    __m512 v0 = _mm512_mul_ps(va, c##i##0), v1 = _mm512_mul_ps(va, c##i##1),                       \
           v2 = _mm512_mul_ps(va, c##i##2);                                                        \
    if (beta != 0) {                                                                               \
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), v0);                                 \
      v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), v1);                            \
      v2 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m2, ci + 32), v2);                            \
    }                                                                                              \
    _mm512_mask_storeu_ps(ci, m0, v0);                                                             \
    _mm512_mask_storeu_ps(ci + 16, m1, v1);                                                        \
    _mm512_mask_storeu_ps(ci + 32, m2, v2);                                                        \
  }


/* c[0:mr, 0:nr] = alpha * (a panel @ b panel) + beta * c (c not read when beta == 0) */
static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b, float *c,
                         int64_t ldc, int mr, int nr, float alpha, float beta) {
  ROWS(DECL)
  for (int i = 0; i < mr; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), b2 = _mm512_load_ps(b + 32);
    ROWS(FMA)
    a += MR;
    b += NR;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16), m2 = lt_lanes16(nr - 32);
  ROWS(STORE)
}

/* the same with 32 columns: 16 accumulators, still enough to hide the FMA latency */
#define DECL2(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0;
#define FMA2(i)                                                                                    \
  {                                                                                                \
    __m512 a_ = _mm512_set1_ps(a[i]);                                                              \
    c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);                                                    \
    c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);                                                    \
  }
#define STORE2(i)                                                                                  \
  if (i < mr) {                                                                                    \
    float *ci = c + i * ldc;                                                                       \
    __m512 v0 = _mm512_mul_ps(va, c##i##0), v1 = _mm512_mul_ps(va, c##i##1);                       \
    if (beta != 0) {                                                                               \
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), v0);                                 \
      v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), v1);                            \
    }                                                                                              \
    _mm512_mask_storeu_ps(ci, m0, v0);                                                             \
    _mm512_mask_storeu_ps(ci + 16, m1, v1);                                                        \
  }

static void micro_kernel_32(int64_t kc, const float *restrict a, const float *restrict b, float *c,
                            int64_t ldc, int mr, int nr, float alpha, float beta) {
  ROWS(DECL2)
  for (int i = 0; i < mr; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
    ROWS(FMA2)
    a += MR;
    b += NR2;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16);
  ROWS(STORE2)
}

/* Row i of A at a + i * lda, its element p a_ps floats further (A read where it lies: lda apart,
   a_ps 1; or a packed panel: 1 and MR), rows past mr repeating the last (computed, not stored); B a
   packed panel or B itself (b_ps floats from one row of the panel to the next), loaded under the
   masks of its nr columns */
#define FMAD(i)                                                                                    \
  {                                                                                                \
    __m512 a_ = _mm512_set1_ps(a##i[p * a_ps]);                                                    \
    c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);                                                    \
    c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);                                                    \
    c##i##2 = _mm512_fmadd_ps(a_, b2, c##i##2);                                                    \
  }
#define FMAD2(i)                                                                                   \
  {                                                                                                \
    __m512 a_ = _mm512_set1_ps(a##i[p * a_ps]);                                                    \
    c##i##0 = _mm512_fmadd_ps(a_, b0, c##i##0);                                                    \
    c##i##1 = _mm512_fmadd_ps(a_, b1, c##i##1);                                                    \
  }
#define AROWS                                                                                      \
  const float *a0 = a, *a1 = a + (mr > 1 ? 1 : 0) * lda, *a2 = a + (mr > 2 ? 2 : mr - 1) * lda,    \
              *a3 = a + (mr > 3 ? 3 : mr - 1) * lda, *a4 = a + (mr > 4 ? 4 : mr - 1) * lda,        \
              *a5 = a + (mr > 5 ? 5 : mr - 1) * lda, *a6 = a + (mr > 6 ? 6 : mr - 1) * lda,        \
              *a7 = a + (mr > 7 ? 7 : mr - 1) * lda;

static void micro_kernel_da(int64_t kc, const float *restrict a, int64_t lda, int64_t a_ps, const float *restrict b,
                            int64_t b_ps, float *c, int64_t ldc, int mr, int nr, float alpha, float beta) {
  ROWS(DECL)
  AROWS
  __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16), m2 = lt_lanes16(nr - 32);
  for (int i = 0; i < mr; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16),
           b2 = _mm512_maskz_loadu_ps(m2, b + 32);
    ROWS(FMAD)
    b += b_ps;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  ROWS(STORE)
}

static void micro_kernel_da32(int64_t kc, const float *restrict a, int64_t lda, int64_t a_ps,
                              const float *restrict b, int64_t b_ps, float *c, int64_t ldc, int mr, int nr,
                              float alpha, float beta) {
  ROWS(DECL2)
  AROWS
  __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16);
  for (int i = 0; i < mr; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    ROWS(FMAD2)
    b += b_ps;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  ROWS(STORE2)
}

/* ---- packing --------------------------------------------------------------------------------- */


/* Rows [0, mc) and columns [0, kc) of op(A) = A^T into MR x kc micro-panels, zero-padded to whole
   tiles: op(A)(i, p) is A[p * lda + i]. (A row-major is never packed: the kernels read it in place.) */
static void pack_a(const float *A, int64_t lda, int64_t mc, int64_t kc, float *dst) {
  for (int64_t ir = 0; ir < mc; ir += MR, dst += MR * kc) {
    int mr = mc - ir < MR ? (int)(mc - ir) : MR;
    float *d = dst;
    const float *s = A + ir;
    if (mr == MR) {
      for (int64_t p = 0; p < kc; p++) _mm256_store_ps(d + p * MR, _mm256_loadu_ps(s + p * lda));
    } else {
      __mmask8 m = (__mmask8)((1u << mr) - 1);
      for (int64_t p = 0; p < kc; p++) _mm256_store_ps(d + p * MR, _mm256_maskz_loadu_ps(m, s + p * lda));
    }
  }
}

/* Rows [0, kc) and columns [0, nc) of op(B) into kc x w micro-panels (w = NR or NR2),
   zero-padded to whole tiles. op(B)(p, j) is B[j * ldb + p] when tb, else B[p * ldb + j]. */
static void pack_b(bool tb, const float *B, int64_t ldb, int64_t kc, int64_t nc, int w, float *dst) {
  for (int64_t jr = 0; jr < nc; jr += w, dst += w * kc) {
    int nr = nc - jr < w ? (int)(nc - jr) : w;
    float *d = dst;
    if (!tb) {
      const float *s = B + jr;
      __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16), m2 = lt_lanes16(nr - 32);
      if (w == NR)
        for (int64_t p = 0; p < kc; p++, s += ldb, d += NR) {
          _mm512_store_ps(d, _mm512_maskz_loadu_ps(m0, s));
          _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(m1, s + 16));
          _mm512_store_ps(d + 32, _mm512_maskz_loadu_ps(m2, s + 32));
        }
      else
        for (int64_t p = 0; p < kc; p++, s += ldb, d += NR2) {
          _mm512_store_ps(d, _mm512_maskz_loadu_ps(m0, s));
          _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(m1, s + 16));
        }
      continue;
    }
    const float *s = B + jr * ldb;
    int j0 = 0;
    for (; j0 + 8 <= nr; j0 += 8) { /* eight columns of op(B) (rows of B) at a time */
      int64_t p = 0;
      for (; p + 8 <= kc; p += 8) lt_transpose8x8(s + j0 * ldb + p, ldb, d + p * w + j0, w);
      for (; p < kc; p++)
        for (int j = j0; j < j0 + 8; j++) d[p * w + j] = s[j * ldb + p];
    }
    for (int64_t p = 0; p < kc; p++) {
      for (int j = j0; j < nr; j++) d[p * w + j] = s[j * ldb + p];
      for (int j = nr; j < w; j++) d[p * w + j] = 0;
    }
  }
}

/* ---- packing buffers ------------------------------------------------------------------------- */

/* A set of packing buffers, taken from a process-wide stack for one product by each thread that
   runs a part of it, and given back after: as many sets exist as products have run at once, and
   they are kept, so that no product pays for fresh memory (threads come and go: OpenMP's workers
   are released while DataParallel runs, and a new page costs microseconds on some machines). */
typedef lt_gemm_buffers_t buffers_t;

static buffers_t *spare;
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;

/* a buffer of at least n floats, 64-byte aligned (its old contents are not kept) */
static bool grow(float **p, size_t *have, size_t n) {
  if (*have >= n) return true;
  free(*p);
  *p = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
  *have = *p ? n : 0;
  return *p != NULL;
}

void lt_gemm_give_buffers(buffers_t *bf) {
  if (!bf) return;
  pthread_mutex_lock(&spare_mu);
  bf->next = spare;
  spare = bf;
  pthread_mutex_unlock(&spare_mu);
}

lt_gemm_buffers_t *lt_gemm_take_buffers(size_t na, size_t nb) {
  pthread_mutex_lock(&spare_mu);
  buffers_t *bf = spare;
  if (bf) spare = bf->next;
  pthread_mutex_unlock(&spare_mu);
  if (!bf && !(bf = calloc(1, sizeof *bf))) return NULL;
  if (grow(&bf->a, &bf->na, na) && grow(&bf->b, &bf->nb, nb)) return bf;
  lt_gemm_give_buffers(bf);
  return NULL;
}
#define take_buffers lt_gemm_take_buffers
#define give_buffers lt_gemm_give_buffers

/* ---- the loops ------------------------------------------------------------------------------- */

/* A row-major: the kernels read it where it lies (its rows are contiguous along k, and a broadcast
   loads from any address), so it is never packed; measured here 1.05-1.5x over packing it.
   B row-major, 48-column tiles, at most DIRECT_M rows of C and rows of at most 1024 floats: the
   kernel reads B where it lies too. Its panel then serves few tiles, and copying it cost more than
   reading it strided (64 x 512 x 256 1.3x faster on two threads, 1.1x on one); with many rows
   packing wins, and with long rows the panel's rows fall on too many pages. */
#define DIRECT_M 128
/* A @ B^T with at most SWAP_M rows of A (a Linear layer's forward on a batch): computed as
   (B @ A^T)^T, so that the small A is the packed (transposed) side and B's rows are read in place,
   instead of transposing all of B into panels: 1.3-1.5x here at 64 x 512 x 784 */
#define SWAP_M 128

/* whether gemm_part reads B in place (no packing) for a part of M rows of C */
static inline bool direct_b(bool tb, int w, int64_t M, int64_t ldb) {
  return !tb && w == NR && M <= DIRECT_M && ldb <= 1024;
}

static void gemm_part(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc, int w, const buffers_t *bf) {
  const bool direct = direct_b(tb, w, M, ldb), direct_a = !ta;
  for (int64_t jc = 0; jc < N; jc += NC) {
    int64_t nc = N - jc < NC ? N - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = K - pc < KC ? K - pc : KC;
      if (!direct) pack_b(tb, tb ? B + jc * ldb + pc : B + pc * ldb + jc, ldb, kc, nc, w, bf->b);
      float be = pc == 0 ? beta : 1.0f;
      for (int64_t ic = 0; ic < M; ic += MC) {
        int64_t mc = M - ic < MC ? M - ic : MC;
        if (!direct_a) pack_a(A + pc * lda + ic, lda, mc, kc, bf->a);
        for (int64_t jr = 0; jr < nc; jr += w) {
          int nr = nc - jr < w ? (int)(nc - jr) : w;
          const float *bp = direct ? B + pc * ldb + jc + jr : bf->b + jr * kc;
          int64_t bps = direct ? ldb : w;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int mr = mc - ir < MR ? (int)(mc - ir) : MR;
            float *c = C + (ic + ir) * ldc + jc + jr;
            if (direct_a) {
              const float *ap = A + (ic + ir) * lda + pc;
              if (w == NR) micro_kernel_da(kc, ap, lda, 1, bp, bps, c, ldc, mr, nr, alpha, be);
              else micro_kernel_da32(kc, ap, lda, 1, bp, bps, c, ldc, mr, nr, alpha, be);
            } else if (direct) /* a packed panel of A: row i at i, step MR */
              micro_kernel_da(kc, bf->a + ir * kc, 1, MR, bp, bps, c, ldc, mr, nr, alpha, be);
            else if (w == NR)
              micro_kernel(kc, bf->a + ir * kc, bf->b + jr * kc, c, ldc, mr, nr, alpha, be);
            else
              micro_kernel_32(kc, bf->a + ir * kc, bf->b + jr * kc, c, ldc, mr, nr, alpha, be);
          }
        }
      }
    }
  }
}

/* C[i, j] = alpha * T[j, i] + beta * C[i, j] for i < m, j < n (C not read when beta == 0) */
static void transpose_into(const float *T, int64_t ldt, int64_t n, int64_t m, float alpha, float beta,
                           float *C, int64_t ldc) {
  float blk[64];
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      lt_transpose8x8(T + j * ldt + i, ldt, blk, 8);
      for (int r = 0; r < 8; r++) {
        float *c = C + (i + r) * ldc + j;
        __m256 v = _mm256_mul_ps(va, _mm256_loadu_ps(blk + 8 * r));
        if (beta != 0) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), v);
        _mm256_storeu_ps(c, v);
      }
    }
    for (; j < n; j++)
      for (int r = 0; r < 8; r++) {
        float *c = C + (i + r) * ldc + j;
        *c = beta == 0 ? alpha * T[j * ldt + i + r] : alpha * T[j * ldt + i + r] + beta * *c;
      }
  }
  for (; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float *c = C + i * ldc + j;
      *c = beta == 0 ? alpha * T[j * ldt + i] : alpha * T[j * ldt + i] + beta * *c;
    }
}

/* C = beta * C, not reading C when beta is 0 */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0.0f : beta * C[i * ldc + j];
}

/* The packed panels' sizes, in floats, for an M x N x K product: at most MC x KC of A and KC x NC
   of B, in whole tiles. */
/* (A is packed only when transposed: a row-major A is read in place and needs no buffer) */
static size_t size_a(int64_t M, int64_t K) {
  int64_t mc = M < MC ? M : MC, kc = K < KC ? K : KC;
  return (size_t)((mc + MR - 1) / MR * MR * kc);
}
static size_t size_b(int64_t N, int64_t K, int w) {
  int64_t nc = N < NC ? N : NC, kc = K < KC ? K : KC;
  return (size_t)((nc + w - 1) / w * w * kc);
}

/* The tile width for N columns: 32 where 48-wide tiles would compute more columns (counting the
   32-wide kernel ~5% slower a column: two vectors of B a step instead of three). */
static int tile_width(int64_t N) {
  return (double)((N + NR2 - 1) / NR2 * NR2) * 1.05 < (double)((N + NR - 1) / NR * NR) ? NR2 : NR;
}

/* Whether nt threads split C into row blocks (else column blocks), in whole tiles. With A read in
   place, the longer side. With A packed (transposed: a weight gradient g^T @ x), the split whose
   largest part costs least, counting its multiply-adds and the floats it packs (each thread packs
   its own rows of A, or all of A, and B's columns it uses, or all of B): the column blocks are
   NR = 48 wide, so an odd number of them leaves one thread up to a block more (512 x 784 x 64 on
   two threads: 9 blocks against 8, 170 against 150 us; rows 155 each), while row blocks are MR = 8
   high. Measured here, a packed float costs about as much as PACK_COST multiply-adds. */
#define PACK_COST 16.0
static bool split_rows(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t ldb, int w, int nt) {
  if (!ta || nt < 2) return M > N;
  int64_t ur = (M + MR - 1) / MR, uc = (N + w - 1) / w;
  int64_t tr = nt < ur ? nt : ur, tc = nt < uc ? nt : uc;
  int64_t mr = (ur + tr - 1) / tr * MR, nc = (uc + tc - 1) / tc * w; /* the largest parts */
  int64_t mr_in = mr < M ? mr : M, nc_in = nc < N ? nc : N;
  double rows = (double)mr * N * K + PACK_COST * ((double)mr_in * K + (direct_b(tb, w, mr_in, ldb) ? 0.0 : (double)K * N));
  double cols = (double)M * nc * K + PACK_COST * ((double)M * K + (direct_b(tb, w, M, ldb) ? 0.0 : (double)K * nc_in));
  return rows < cols;
}

/* Split along the depth: A @ B with B row-major and few rows of A (the input gradient of a Linear
   layer, g @ W, W out x in) on nt threads, thread t taking rows [s_t, e_t) of B (columns of A) and
   every column of C: its part of the sum goes into C (thread 0) or a buffer of its own, and after
   a barrier each thread adds the parts in thread order into its share of C's rows. Splitting C by
   columns would have each thread read its columns of every row of W, while the layer's forward (the
   swapped product, split by rows of W, the same MR-row units as here) and the optimizer's step
   (each parameter split flat, so by rows) give each thread its own rows: then every line of W is
   read by both cores between two steps, and the step's writes must take the other core's copies
   back (measured here: the SGD step of a 256 x 512 weight 60 us after a column-split input gradient,
   ~25 after a depth split; `bench/shared_write.c` shows the cost). The parts also balance exactly,
   where 48-column tiles split 512 columns 240/272. The sums are grouped by part, so the bits
   depend on the thread count (as PyTorch's do), not on which thread runs what. Used where the parts
   cost less to add than B to share: A has at most DIRECT_M rows and B at least KSPLIT_RATIO times
   as many, beta 0 (C is only written), and at most KSPLIT_MAXT threads. */
#define KSPLIT_RATIO 2
#define KSPLIT_MAXT 16
static bool ksplit(bool ta, bool tb, int64_t M, int64_t K, float beta, const float *bias, int nt) {
  return !ta && !tb && !bias && beta == 0 && nt >= 2 && nt <= KSPLIT_MAXT && M <= DIRECT_M &&
         K >= KSPLIT_RATIO * M && K >= (int64_t)nt * MR;
}

static int sgemm_ksplit(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float *C, int64_t ldc, int w, int nt) {
  int64_t units = (K + MR - 1) / MR;
  if (nt > units) nt = (int)units;
  int failed = 0, used = nt;
  float *part[KSPLIT_MAXT] = {0};
#pragma omp parallel num_threads(lt_team_size())
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
    if (t == 0) used = n; /* read after the barrier */
    int64_t s = t < n ? units * t / n * MR : 0, e = t < n ? units * (t + 1) / n * MR : 0;
    if (e > K) e = K;
    /* thread 0's part is C itself; the others' go into their A buffer (A is read in place) */
    buffers_t *bf = e > s ? take_buffers(t > 0 ? (size_t)(M * N) : 0, size_b(N, e - s, w)) : NULL;
    if (e > s && !bf) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
    if (t < n && bf) part[t] = t == 0 ? C : bf->a;
#pragma omp barrier
    bool ok = !__atomic_load_n(&failed, __ATOMIC_RELAXED);
    if (ok && e > s)
      gemm_part(false, false, M, N, e - s, alpha, A + s, lda, B + s * ldb, ldb, 0.0f, part[t],
                t == 0 ? ldc : N, w, bf);
#pragma omp barrier
    if (ok && t < used) {
      int64_t r0 = M * t / used, r1 = M * (t + 1) / used;
      for (int64_t i = r0; i < r1; i++) {
        float *c = C + i * ldc;
        for (int j = 1; j < used; j++) {
          const float *p = part[j] + i * N;
#pragma omp simd
          for (int64_t x = 0; x < N; x++) c[x] += p[x];
        }
      }
    }
#pragma omp barrier
    give_buffers(bf);
  }
  return failed ? -1 : 0;
}

/* A @ B^T with at most DOT_M rows of A (a Linear layer's forward on a small batch): each element of
   C is the dot product of a row of A with a row of B, both read where they lie, 16 floats a step, in
   blocks of 4 x 4 (16 accumulators, 8 loads for 16 multiply-adds), then summed across the lanes.
   The tiles of the swapped product are 8 rows by 32 or 48 columns, of which only M would be used:
   at M = 8 three quarters of their work was wasted. The rows of B (C's columns) are split between
   the threads in blocks of 4 (or the rows of A, when they are more). Bits: each element's sum runs
   by lanes then across them, whichever thread runs it. */
#define DOT_M 16
/* ... or at most DOT_N rows of B (a Linear layer with few outputs), whose 32-column tiles would
   waste half their work or more: 64 x 512 @ (16 x 512)^T 23 -> 15 us here on one core */
#define DOT_N 16
static inline float dot_out(float sum, float alpha, float beta, const float *bias, int64_t j, const float *c) {
  float v = alpha * sum;
  if (bias) return fmaf(1.0f, bias[j], v);
  return beta != 0 ? fmaf(beta, *c, v) : v;
}

#define DOT_ACC(r, q) __m512 c##r##q = _mm512_setzero_ps();
#define DOT_FMA(r, q) c##r##q = _mm512_fmadd_ps(a##r, b##q, c##r##q);
#define DOT_ROW(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define DOT_ALL(X) DOT_ROW(X, 0) DOT_ROW(X, 1) DOT_ROW(X, 2) DOT_ROW(X, 3)
#define DOT_STORE(r, q)                                                                            \
  if (i0 + r < M && j0 + q < N) {                                                                   \
    float *c = C + (i0 + r) * ldc + j0 + q;                                                         \
    *c = dot_out(_mm512_reduce_add_ps(c##r##q), alpha, beta, bias, j0 + q, c);                      \
  }

/* row i of P (ld floats apart), or its last row n - 1 past the end (computed, not stored) */
static inline const float *row_or_last(const float *P, int64_t ld, int64_t i, int64_t n) {
  return P + (i < n ? i : n - 1) * ld;
}

static void dot_block(int64_t i0, int64_t j0, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                      int64_t lda, const float *B, int64_t ldb, float beta, const float *bias, float *C, int64_t ldc) {
  const float *pa0 = row_or_last(A, lda, i0, M), *pa1 = row_or_last(A, lda, i0 + 1, M),
              *pa2 = row_or_last(A, lda, i0 + 2, M), *pa3 = row_or_last(A, lda, i0 + 3, M);
  const float *pb0 = row_or_last(B, ldb, j0, N), *pb1 = row_or_last(B, ldb, j0 + 1, N),
              *pb2 = row_or_last(B, ldb, j0 + 2, N), *pb3 = row_or_last(B, ldb, j0 + 3, N);
  DOT_ALL(DOT_ACC)
  int64_t p = 0;
  for (; p + 16 <= K; p += 16) {
    __m512 a0 = _mm512_loadu_ps(pa0 + p), a1 = _mm512_loadu_ps(pa1 + p), a2 = _mm512_loadu_ps(pa2 + p),
           a3 = _mm512_loadu_ps(pa3 + p);
    __m512 b0 = _mm512_loadu_ps(pb0 + p), b1 = _mm512_loadu_ps(pb1 + p), b2 = _mm512_loadu_ps(pb2 + p),
           b3 = _mm512_loadu_ps(pb3 + p);
    DOT_ALL(DOT_FMA)
  }
  if (p < K) {
    __mmask16 m = lt_lanes16((int)(K - p));
    __m512 a0 = _mm512_maskz_loadu_ps(m, pa0 + p), a1 = _mm512_maskz_loadu_ps(m, pa1 + p),
           a2 = _mm512_maskz_loadu_ps(m, pa2 + p), a3 = _mm512_maskz_loadu_ps(m, pa3 + p);
    __m512 b0 = _mm512_maskz_loadu_ps(m, pb0 + p), b1 = _mm512_maskz_loadu_ps(m, pb1 + p),
           b2 = _mm512_maskz_loadu_ps(m, pb2 + p), b3 = _mm512_maskz_loadu_ps(m, pb3 + p);
    DOT_ALL(DOT_FMA)
  }
  DOT_ALL(DOT_STORE)
}

static void sgemm_dot(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, float beta, const float *bias, float *C, int64_t ldc, int nt) {
  /* the threads split the longer side in blocks of 4 */
  const bool by_rows = M > N;
  int64_t units = ((by_rows ? M : N) + 3) / 4;
  if (nt > units) nt = (int)units;
#pragma omp parallel num_threads(lt_team_size()) if (nt > 1)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
    int64_t s = t < n ? units * t / n : 0, e = t < n ? units * (t + 1) / n : 0;
    if (by_rows)
      for (int64_t u = s; u < e; u++)
        for (int64_t j0 = 0; j0 < N; j0 += 4) dot_block(4 * u, j0, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
    else
      for (int64_t u = s; u < e; u++)
        for (int64_t i0 = 0; i0 < M; i0 += 4) dot_block(i0, 4 * u, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
  }
}

/* C's rows [r0, r1), columns [c0, c1), each set to bias[c0, c1) */
static void fill_bias(float *C, int64_t ldc, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                      const float *bias) {
  for (int64_t i = r0; i < r1; i++) memcpy(C + i * ldc + c0, bias + c0, (size_t)(c1 - c0) * sizeof(float));
}

/* The product, with bias (a row added to every row of C, beta then unused) or without (NULL) */
static int sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, const float *bias, float *C,
                 int64_t ldc, int nt) {
  if (M <= 0 || N <= 0) return 0;
  if (K <= 0 || alpha == 0) {
    if (bias) fill_bias(C, ldc, 0, M, 0, N, bias);
    else scale_c(M, N, beta, C, ldc);
    return 0;
  }
  /* with a bias, C starts as the bias and the slices add to it as they would to beta C with
     beta 1: the same bits as copying the bias into C first */
  const float be = bias ? 1.0f : beta;
  if (!ta && tb && (M <= DOT_M || (N <= DOT_N && K >= 64))) {
    sgemm_dot(M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc, nt);
    return 0;
  }
  if (!ta && tb && M <= SWAP_M && N >= M && N >= 4 * MR) {
    /* T = B @ A^T (N x M) with B's rows read in place and A's packed, then C = alpha T^T + beta C:
       packing A (M x K) is cheaper than transposing B (N x K) into panels */
    const int w2 = tile_width(M);
    int64_t units = (N + MR - 1) / MR;
    if (nt > units) nt = (int)units;
    int failed = 0;
    /* the constant team (core/iter.h, lt_team_size), of which the first nt threads work */
#pragma omp parallel num_threads(lt_team_size()) if (nt > 1)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
      int64_t s = t < n ? units * t / n * MR : 0, e = t < n ? units * (t + 1) / n * MR : 0;
      if (e > N) e = N;
      buffers_t *bf = e > s ? take_buffers((size_t)((e - s) * M), size_b(M, K, w2)) : NULL;
      if (e > s && !bf) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
#pragma omp barrier
      if (!__atomic_load_n(&failed, __ATOMIC_RELAXED) && e > s) {
        /* T starts as beta C^T and takes the slices as C would: the same roundings in the same
           order, so that for beta 0 or 1 (a bias) C gets the bits the direct product gives */
        float *T = bf->a;
        if (bias) /* row j of T is column s + j of C */
          for (int64_t j = 0; j < e - s; j++)
            for (int64_t i = 0; i < M; i++) T[j * M + i] = bias[s + j];
        else if (beta != 0) transpose_into(C + s, ldc, M, e - s, beta, 0.0f, T, M);
        gemm_part(false, true, e - s, M, K, alpha, B + s * ldb, ldb, A, lda, be != 0 ? 1.0f : 0.0f, T, M, w2, bf);
        transpose_into(T, M, e - s, M, 1.0f, 0.0f, C + s, ldc);
      }
      give_buffers(bf);
    }
    return failed ? -1 : 0;
  }
  const int w = tile_width(N);
  if (ksplit(ta, tb, M, K, beta, bias, nt)) return sgemm_ksplit(M, N, K, alpha, A, lda, B, ldb, C, ldc, w, nt);
  bool rows = split_rows(ta, tb, M, N, K, ldb, w, nt);
  int64_t unit = rows ? MR : w, len = rows ? M : N, units = (len + unit - 1) / unit;
  if (nt > units) nt = (int)units;
  if (nt <= 1) {
    buffers_t *bf = take_buffers(ta ? size_a(M, K) : 0, size_b(N, K, w));
    if (!bf) return -1;
    if (bias) fill_bias(C, ldc, 0, M, 0, N, bias);
    gemm_part(ta, tb, M, N, K, alpha, A, lda, B, ldb, be, C, ldc, w, bf);
    give_buffers(bf);
    return 0;
  }
  /* every thread gets its buffers before any writes C, so that a failure leaves C untouched */
  int failed = 0;
#pragma omp parallel num_threads(lt_team_size())
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
    int64_t s = t < n ? units * t / n * unit : 0, e = t < n ? units * (t + 1) / n * unit : 0;
    if (e > len) e = len;
    int64_t pm = rows ? e - s : M, pn = rows ? N : e - s;
    buffers_t *bf = e > s ? take_buffers(ta ? size_a(pm, K) : 0, size_b(pn, K, w)) : NULL;
    if (e > s && !bf) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
#pragma omp barrier
    if (__atomic_load_n(&failed, __ATOMIC_RELAXED)) e = s;
    if (e > s && bias) fill_bias(C, ldc, rows ? s : 0, rows ? e : M, rows ? 0 : s, rows ? N : e, bias);
    if (e > s && rows)
      gemm_part(ta, tb, pm, pn, K, alpha, ta ? A + s : A + s * lda, lda, B, ldb, be,
                C + s * ldc, ldc, w, bf);
    else if (e > s)
      gemm_part(ta, tb, pm, pn, K, alpha, A, lda, tb ? B + s * ldb : B + s, ldb, be, C + s,
                ldc, w, bf);
    give_buffers(bf);
  }
  return failed ? -1 : 0;
}

int lt_sgemm_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                    int nt) {
  return sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, NULL, C, ldc, nt);
}

int lt_sgemm_avx512_bias(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb,
                         const float *bias, float *C, int64_t ldc, int nt) {
  return sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, bias, C, ldc, nt);
}
