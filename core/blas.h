/* BLAS, loaded at run time.

   The core does not link OpenBLAS: OpenBLAS picks its kernels once, when the library is loaded,
   from OPENBLAS_CORETYPE or the CPU model, and Debian's 0.3.21 misdetects recent CPUs and falls
   back to its SSE3 ("Prescott") kernels. So lt_blas_init() chooses a core from the CPU's features
   (unless the user set OPENBLAS_CORETYPE: a user's setting is never overridden), dlopen()s
   libopenblas.so.0, takes the few functions it needs with dlsym(), and checks a few awkward
   products against a plain loop before trusting them. When the library is missing or gives wrong
   results, portable C loops (blocked, OpenMP-parallel) are used instead: slower, never an error.

   Environment:
     OPENBLAS_CORETYPE    the user's choice of OpenBLAS kernels; honoured as is.
     OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS, OMP_NUM_THREADS
                          the default thread count (see lt_blas_num_threads).
     LUTORCH_BLAS_LIB     a path or soname to load instead of libopenblas.so.0 / libopenblas.so;
                          "none" uses the portable loops.
     LUTORCH_GEMM         "blas" runs float32 products through the library (or the portable
                          loops) even where the CPU has AVX-512; by default such CPUs run them on
                          lutorch's own kernels (kernels/cpu/sgemm.h), whatever OPENBLAS_CORETYPE
                          says, since that variable is OpenBLAS's alone.
     LUTORCH_BLAS_TEST_BAD_KERNELS
                          (for tests only) "1" makes the check of the kernels fail once, "all"
                          always, to exercise the retry and the fallback.

   The GEMM wrappers are row-major, cblas-style, and return LT_OK or LT_ERR. Sizes, leading
   dimensions and increments must lie in [0, LT_BLAS_MAX_DIM] (OpenBLAS's interface takes 32-bit
   ints): callers with larger operands split them (kernels/cpu/matmul.c does). Every entry point
   initialises the library on first use; calling lt_blas_init() first is optional. All are
   thread-safe. */
#ifndef LT_BLAS_H
#define LT_BLAS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define LT_BLAS_MAX_DIM ((int64_t)INT_MAX)
/* Products of at most this many multiply-adds run on one thread (OpenBLAS's own threshold). */
#define LT_BLAS_SPLIT_MIN ((int64_t)65536 * 4)
/* A split gives each thread at least this many multiply-adds (core/iter.h, lt_threads_for): with
   fewer, waking the threads costs more than they save. On 16 cores an LSTM step (products of 2M)
   went from 171 ms to 36 ms, on 4 threads 38 ms. */
#define LT_BLAS_THREAD_WORK ((int64_t)1 << 20)

/* Load and check the library (once, thread-safe). Returns LT_OK; falling back to the portable loops
   is not an error. */
int lt_blas_init(void);

/* openblas_get_corename() ("SkylakeX", "Haswell", ...), "fallback" when the portable loops are
   used, "none" before lt_blas_init(). */
const char *lt_blas_corename(void);

/* One line on what was loaded and why ("OpenBLAS 0.3.21 ... from libopenblas.so.0, core Cooperlake
   chosen from CPU features" or "fallback: ..."); "" before lt_blas_init(). */
const char *lt_blas_info(void);

/* The address of `name` in the loaded library (LAPACK's routines, which OpenBLAS carries: core/
   lapack.c), or NULL when there is no library (the portable loops) or no such symbol. */
void *lt_blas_symbol(const char *name);

/* True when float32 products run on lutorch's AVX-512 kernels (see LUTORCH_GEMM). */
bool lt_blas_sgemm_native(void);
/* True when lt_blas_sgemm with alpha 1 and beta 1 at depth K makes each element of C
   C + (the product's sum) rounded once, the same bits as the product computed with beta 0 and
   added after (our kernels, K within one slice); false where that is not known (a BLAS library). */
bool lt_blas_sgemm_adds_once(int64_t K);

/* Threads: OpenBLAS itself runs single-threaded, and these wrappers split a product of more
   than LT_BLAS_SPLIT_MIN multiply-adds into row or column blocks over OpenMP threads, so that the
   process has one thread pool. (OpenBLAS's own pool spins for ~0.1 s after each call, measured:
   it takes a core from the OpenMP loops that follow a matrix product, and on 2 cores that costs
   more than the product.) A split uses at most lt_blas_num_threads() threads and at most the
   calling thread's omp_get_max_threads(), and none inside a parallel region. The default is
   OPENBLAS_NUM_THREADS, else GOTO_NUM_THREADS, else OMP_NUM_THREADS, else the cores this process
   may run on. Setting it changes it process-wide; n < 1 means the number of available cores. */
int lt_blas_num_threads(void);
void lt_blas_set_num_threads(int n);

/* C = alpha * op(A) @ op(B) + beta * C, row-major; op(A) is M x K, op(B) is K x N, C is M x N.
   beta == 0 means C is not read (it may hold NaN). */
int lt_blas_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc);
int lt_blas_dgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
                  const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                  double *C, int64_t ldc);
/* C = alpha * op(A) @ op(B) + bias, the N floats of bias added to every row of C (C is not read):
   the same bits as C filled with the bias rows, then lt_blas_sgemm with beta 1, without the pass
   over C (on the AVX-512 kernels each thread starts its own part of C as the bias). */
int lt_blas_sgemm_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, const float *bias,
                       float *C, int64_t ldc);

/* y = alpha * op(A) @ x + beta * y, row-major A (M x N, op(A) = A^T when trans); incx, incy > 0.
   beta == 0 means y is not read. */
int lt_blas_sgemv(bool trans, int64_t M, int64_t N, float alpha, const float *A, int64_t lda,
                  const float *x, int64_t incx, float beta, float *y, int64_t incy);
int lt_blas_dgemv(bool trans, int64_t M, int64_t N, double alpha, const double *A, int64_t lda,
                  const double *x, int64_t incx, double beta, double *y, int64_t incy);

#endif
