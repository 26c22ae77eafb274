/* The bfloat16 matrix product on AVX512_BF16: see bgemm.h.

   vdpbf16ps adds the products of 16 pairs of bf16 values into 16 float32 sums: twice the
   multiply-adds of a float32 FMA, on operands half the size. The loops are sgemm.c's, with K taken
   two at a time: A is packed into MR x K/2 micro-panels of pairs (row i's elements 2p and 2p + 1 in
   one 32-bit word), B into K/2 x NR panels of pairs (column j's rows 2p and 2p + 1), an odd K
   zero-padded. The micro-kernel keeps an 8 x 48 tile in 24 float32 registers over the whole of K,
   so each result is rounded to bfloat16 once; for each pair it loads three vectors of B and
   broadcasts 8 pairs of A into 24 dot products. Packing interleaves two rows with unpacks where
   pairs are apart in memory, and transposes 8 x 8 blocks of 32-bit pairs where they are adjacent.
   C is split over the threads in column (or row) blocks of whole tiles, as sgemm.c does. */
#include "bgemm.h"

#include "sgemm.h"
#include "core/iter.h"

#include <stdlib.h>
#include <string.h>

bool lt_bgemm_supported(void) {
#if defined(__x86_64__)
  static int ok = -1;
  int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bf16");
    __atomic_store_n(&ok, v, __ATOMIC_RELAXED);
  }
  return v;
#else
  return false;
#endif
}

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,fma")
#include "gemm_simd.h"

#include <immintrin.h>
#include <omp.h>

#define MR 8
#define NR 48
#define MC 144
#define NC 480 /* a K/2 x NC panel of B: 750 KiB for K = 784, in L2 */


/* ---- the micro-kernel ------------------------------------------------------------------------ */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define DOT(i)                                                                                     \
  {                                                                                                \
    __m512bh a_ = (__m512bh)_mm512_set1_epi32((int)a[i]);                                          \
    c##i##0 = _mm512_dpbf16_ps(c##i##0, a_, b0);                                                   \
    c##i##1 = _mm512_dpbf16_ps(c##i##1, a_, b1);                                                   \
    c##i##2 = _mm512_dpbf16_ps(c##i##2, a_, b2);                                                   \
  }
/* bf16 -> float32 of up to 16 values (masked) */
static inline __m512 load_bf16(__mmask16 m, const uint16_t *p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
#define STORE_V(i, v, off, mask)                                                                   \
  {                                                                                                \
    __m512 x = _mm512_mul_ps(va, c##i##v);                                                         \
    if (beta != 0) x = _mm512_fmadd_ps(vb, load_bf16(mask, ci + off), x);                          \
    _mm256_mask_storeu_epi16(ci + off, mask, (__m256i)_mm512_cvtneps_pbh(x));                      \
  }
#define STORE(i)                                                                                   \
  if (i < mr) {                                                                                    \
    uint16_t *ci = c + i * ldc;                                                                    \
    STORE_V(i, 0, 0, m0) STORE_V(i, 1, 16, m1) STORE_V(i, 2, 32, m2)                               \
  }

static void micro_kernel(int64_t kp, const uint32_t *restrict a, const uint32_t *restrict b,
                         uint16_t *c, int64_t ldc, int mr, int nr, float alpha, float beta) {
  ROWS(DECL)
#pragma GCC unroll 2
  for (int64_t p = 0; p < kp; p++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16),
             b2 = (__m512bh)_mm512_load_si512(b + 32);
    ROWS(DOT)
    a += MR;
    b += NR;
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 m0 = lt_lanes16(nr), m1 = lt_lanes16(nr - 16), m2 = lt_lanes16(nr - 32);
  ROWS(STORE)
}

/* ---- packing --------------------------------------------------------------------------------- */

/* the pair (x(2p), x(2p + 1)) of a sequence of bf16 values at stride s, zero past k */
static inline uint32_t pair(const uint16_t *x, int64_t s, int64_t p, int64_t k) {
  uint32_t lo = x[2 * p * s], hi = 2 * p + 1 < k ? x[(2 * p + 1) * s] : 0;
  return lo | hi << 16;
}

/* Rows [0, mc) of op(A) into MR x kp micro-panels of pairs, zero-padded to whole tiles. op(A)(i, k)
   is A[k * lda + i] when ta, else A[i * lda + k]. */
static void pack_a(bool ta, const uint16_t *A, int64_t lda, int64_t mc, int64_t k, uint32_t *dst) {
  const int64_t kp = (k + 1) / 2;
  for (int64_t ir = 0; ir < mc; ir += MR, dst += MR * kp) {
    const int mr = mc - ir < MR ? (int)(mc - ir) : MR;
    int64_t p = 0;
    if (mr == MR && !ta && lda % 2 == 0) { /* a row's pairs are adjacent words: transpose them */
      const uint32_t *s = (const uint32_t *)(A + ir * lda);
      for (; p + 8 <= k / 2; p += 8) lt_transpose8x8(s + p, lda / 2, dst + p * MR, MR);
    } else if (mr == MR && ta) { /* rows 2p and 2p + 1 of A, interleaved */
      for (; p < k / 2; p++) {
        __m128i r0 = _mm_loadu_si128((const __m128i *)(A + 2 * p * lda + ir));
        __m128i r1 = _mm_loadu_si128((const __m128i *)(A + (2 * p + 1) * lda + ir));
        _mm_storeu_si128((__m128i *)(dst + p * MR), _mm_unpacklo_epi16(r0, r1));
        _mm_storeu_si128((__m128i *)(dst + p * MR + 4), _mm_unpackhi_epi16(r0, r1));
      }
    }
    for (; p < kp; p++)
      for (int i = 0; i < MR; i++)
        dst[p * MR + i] = i < mr ? (ta ? pair(A + ir + i, lda, p, k) : pair(A + (ir + i) * lda, 1, p, k)) : 0;
  }
}

/* Columns [0, nc) of op(B) into kp x NR panels of pairs, zero-padded to whole tiles. op(B)(k, j) is
   B[j * ldb + k] when tb, else B[k * ldb + j]. */
static void pack_b(bool tb, const uint16_t *B, int64_t ldb, int64_t k, int64_t nc, uint32_t *dst) {
  const int64_t kp = (k + 1) / 2;
  for (int64_t jr = 0; jr < nc; jr += NR, dst += NR * kp) {
    const int nr = nc - jr < NR ? (int)(nc - jr) : NR;
    if (!tb) { /* rows 2p and 2p + 1, interleaved eight columns at a time */
      int64_t p = 0;
      if (nr == NR)
        for (; p < k / 2; p++) {
          const uint16_t *r0 = B + 2 * p * ldb + jr, *r1 = r0 + ldb;
          for (int j = 0; j < NR; j += 8) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(r0 + j)), x1 = _mm_loadu_si128((const __m128i *)(r1 + j));
            _mm_store_si128((__m128i *)(dst + p * NR + j), _mm_unpacklo_epi16(x0, x1));
            _mm_store_si128((__m128i *)(dst + p * NR + j + 4), _mm_unpackhi_epi16(x0, x1));
          }
        }
      for (; p < kp; p++)
        for (int j = 0; j < NR; j++) dst[p * NR + j] = j < nr ? pair(B + jr + j, ldb, p, k) : 0;
      continue;
    }
    /* column j's pairs are adjacent words of row j of B: transpose 8 x 8 blocks of them */
    int j0 = 0;
    if (ldb % 2 == 0)
      for (; j0 + 8 <= nr; j0 += 8) {
        const uint32_t *s = (const uint32_t *)(B + (jr + j0) * ldb);
        int64_t p = 0;
        for (; p + 8 <= k / 2; p += 8) lt_transpose8x8(s + p, ldb / 2, dst + p * NR + j0, NR);
        for (; p < kp; p++)
          for (int j = j0; j < j0 + 8; j++) dst[p * NR + j] = pair(B + (jr + j) * ldb, 1, p, k);
      }
    for (int64_t p = 0; p < kp; p++)
      for (int j = j0; j < NR; j++) dst[p * NR + j] = j < nr ? pair(B + (jr + j) * ldb, 1, p, k) : 0;
  }
}

/* ---- the loops ------------------------------------------------------------------------------- */

static void gemm_part(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const uint16_t *A, int64_t lda, const uint16_t *B, int64_t ldb, float beta,
                      uint16_t *C, int64_t ldc, const lt_gemm_buffers_t *bf) {
  const int64_t kp = (K + 1) / 2;
  uint32_t *ap = (uint32_t *)bf->a, *bp = (uint32_t *)bf->b;
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = N - jc < NC ? N - jc : NC;
    pack_b(tb, tb ? B + jc * ldb : B + jc, ldb, K, nc, bp);
    for (int64_t ic = 0; ic < M; ic += MC) {
      const int64_t mc = M - ic < MC ? M - ic : MC;
      pack_a(ta, ta ? A + ic : A + ic * lda, lda, mc, K, ap);
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int nr = nc - jr < NR ? (int)(nc - jr) : NR;
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int mr = mc - ir < MR ? (int)(mc - ir) : MR;
          micro_kernel(kp, ap + ir * kp, bp + jr * kp, C + (ic + ir) * ldc + jc + jr, ldc, mr, nr,
                       alpha, beta);
        }
      }
    }
  }
}

static size_t size_a(int64_t M, int64_t K) {
  const int64_t mc = M < MC ? M : MC;
  return (size_t)((mc + MR - 1) / MR * MR * ((K + 1) / 2));
}
static size_t size_b(int64_t N, int64_t K) {
  const int64_t nc = N < NC ? N : NC;
  return (size_t)((nc + NR - 1) / NR * NR * ((K + 1) / 2));
}

int lt_bgemm_avx512bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t *A,
                        int64_t lda, const uint16_t *B, int64_t ldb, float beta, uint16_t *C, int64_t ldc,
                        int nt) {
  if (M <= 0 || N <= 0) return 0;
  const bool rows = M > N; /* the longer side of C, in whole tiles */
  const int64_t unit = rows ? MR : NR, len = rows ? M : N, units = (len + unit - 1) / unit;
  if (nt > units) nt = (int)units;
  if (K <= 0 || alpha == 0 || nt <= 1) {
    lt_gemm_buffers_t *bf = lt_gemm_take_buffers(size_a(M, K > 0 ? K : 1), size_b(N, K > 0 ? K : 1));
    if (!bf) return -1;
    if (K <= 0 || alpha == 0) alpha = 0, K = 0; /* C = beta C through the kernel's store */
    gemm_part(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bf);
    lt_gemm_give_buffers(bf);
    return 0;
  }
  int failed = 0;
  /* the constant team (core/iter.h, lt_team_size), of which the first nt threads work */
#pragma omp parallel num_threads(lt_team_size())
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads() < nt ? omp_get_num_threads() : nt;
    int64_t s = t < n ? units * t / n * unit : 0, e = t < n ? units * (t + 1) / n * unit : 0;
    if (e > len) e = len;
    const int64_t pm = rows ? e - s : M, pn = rows ? N : e - s;
    lt_gemm_buffers_t *bf = e > s ? lt_gemm_take_buffers(size_a(pm, K), size_b(pn, K)) : NULL;
    if (e > s && !bf) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
#pragma omp barrier
    if (__atomic_load_n(&failed, __ATOMIC_RELAXED)) e = s;
    if (e > s && rows)
      gemm_part(ta, tb, pm, pn, K, alpha, ta ? A + s : A + s * lda, lda, B, ldb, beta, C + s * ldc, ldc, bf);
    else if (e > s)
      gemm_part(ta, tb, pm, pn, K, alpha, A, lda, tb ? B + s * ldb : B + s, ldb, beta, C + s, ldc, bf);
    lt_gemm_give_buffers(bf);
  }
  return failed ? -1 : 0;
}

#pragma GCC pop_options
#else
int lt_bgemm_avx512bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t *A,
                        int64_t lda, const uint16_t *B, int64_t ldb, float beta, uint16_t *C, int64_t ldc,
                        int nt) {
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb;
  (void)beta, (void)C, (void)ldc, (void)nt;
  return -1;
}
#endif
