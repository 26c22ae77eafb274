/* BLAS loaded at run time: choose OpenBLAS's kernels from the CPU's features, dlopen the library,
   check it on a few awkward products, and fall back to portable loops when it is missing or wrong.
   See blas.h. */
#include "blas.h"

#include "cpu/sgemm.h"
#include "error.h"
#include "iter.h"

#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CBLAS enum values (cblas.h), so that no OpenBLAS header is needed at build time. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                         const double *, int, double, double *, int);
typedef void (*sgemv_fn)(int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*dgemv_fn)(int, int, int, int, double, const double *, int, const double *, int,
                         double, double *, int);
typedef char *(*str_fn)(void);
typedef void (*set_threads_fn)(int);
typedef int (*get_threads_fn)(void);

static struct {
  void *lib; /* NULL: the portable loops are used */
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  sgemv_fn sgemv;
  dgemv_fn dgemv;
  str_fn get_corename;
  set_threads_fn set_threads;
  get_threads_fn get_threads;
  char corename[64];
  char info[1024];
  int threads;          /* most threads a product is split over (lt_blas_num_threads) */
  bool native_sgemm;    /* float32 products by kernels/cpu/sgemm.c */
  volatile int ready;   /* set once lt_blas_init has finished */
} B;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static int available_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* The best OpenBLAS core this CPU (and its OS, which must save the vector state) supports, or NULL.
   Cooperlake is SkylakeX's kernels plus bf16 ones: as fast or faster here (measured), and as
   correct. */
static bool cpu_has_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

static const char *choose_core(void) {
#if defined(__x86_64__) || defined(__i386__)
  bool avx512 = cpu_has_avx512();
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

/* ---- the check of the loaded kernels --------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}
static double rng_uniform(uint64_t *s) { return (double)rng_next(s) / 9007199254740992.0 * 2 - 1; }

/* One product through the loaded library, float and double, against a double loop. Error bound:
   |c - ref| <= eps * (K + 4) * (|alpha| sum_k |a b| + |beta c|): the textbook bound with room. A
   wrong kernel is off by O(1). */
static bool check_one(bool ta, bool tb, int M, int N, int K, int pad, double alpha, double beta,
                      bool nan_c) {
  int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  int arows = ta ? K : M, brows = tb ? N : K;
  size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb, nc = (size_t)M * ldc;
  double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
  double *ref = malloc(nc * sizeof *ref), *bound = malloc(nc * sizeof *bound);
  float *af = malloc(na * sizeof *af), *bf = malloc(nb * sizeof *bf), *cf = malloc(nc * sizeof *cf);
  double *cd = malloc(nc * sizeof *cd);
  bool ok = a && b && c && ref && bound && af && bf && cf && cd;
  if (ok) {
    uint64_t s = 12345u + (uint64_t)M * 7 + (uint64_t)N * 13 + (uint64_t)K * 17 + ta * 2 + tb;
    for (size_t i = 0; i < na; i++) af[i] = (float)(a[i] = rng_uniform(&s));
    for (size_t i = 0; i < nb; i++) bf[i] = (float)(b[i] = rng_uniform(&s));
    for (size_t i = 0; i < nc; i++) c[i] = nan_c ? NAN : rng_uniform(&s);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double acc = 0, abs_acc = 0;
        for (int p = 0; p < K; p++) {
          double x = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
          double y = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
          acc += x * y;
          abs_acc += fabs(x * y);
        }
        double c0 = c[(size_t)i * ldc + j];
        ref[(size_t)i * ldc + j] = alpha * acc + (beta == 0 ? 0 : beta * c0);
        bound[(size_t)i * ldc + j] = fabs(alpha) * abs_acc + (beta == 0 ? 0 : fabs(beta * c0));
      }
    int opa = ta ? CBLAS_TRANS : CBLAS_NO_TRANS, opb = tb ? CBLAS_TRANS : CBLAS_NO_TRANS;
    for (int pass = 0; pass < 2 && ok; pass++) {
      bool dbl = pass == 1;
      for (size_t i = 0; i < nc; i++) cf[i] = (float)(cd[i] = c[i]);
      if (dbl)
        B.dgemm(CBLAS_ROW_MAJOR, opa, opb, M, N, K, alpha, a, lda, b, ldb, beta, cd, ldc);
      else
        B.sgemm(CBLAS_ROW_MAJOR, opa, opb, M, N, K, (float)alpha, af, lda, bf, ldb, (float)beta, cf,
                ldc);
      double eps = dbl ? 2.3e-16 : 1.2e-7;
      for (int i = 0; i < M && ok; i++)
        for (int j = 0; j < N; j++) {
          size_t x = (size_t)i * ldc + j;
          double got = dbl ? cd[x] : (double)cf[x];
          if (!(fabs(got - ref[x]) <= eps * (K + 4) * bound[x] + 1e-30)) { ok = false; break; }
        }
      /* the padding of C must be untouched */
      for (int i = 0; i < M && ok; i++)
        for (int j = N; j < ldc; j++) {
          size_t x = (size_t)i * ldc + j;
          double got = dbl ? cd[x] : (double)cf[x];
          double want = dbl ? c[x] : (double)(float)c[x];
          if (!(got == want || (isnan(got) && isnan(want)))) { ok = false; break; }
        }
    }
  }
  free(a), free(b), free(c), free(ref), free(bound), free(af), free(bf), free(cf), free(cd);
  return ok;
}

/* y = alpha op(A) x + beta y through the library, both precisions, against a double loop. */
static bool check_gemv(bool trans, int M, int N, int pad, int incx, int incy, double alpha,
                       double beta) {
  int lda = N + pad, nx = trans ? M : N, ny = trans ? N : M;
  size_t na = (size_t)M * lda, nxs = (size_t)nx * incx, nys = (size_t)ny * incy;
  double *a = malloc(na * sizeof *a), *x = malloc(nxs * sizeof *x), *y = malloc(nys * sizeof *y);
  float *af = malloc(na * sizeof *af), *xf = malloc(nxs * sizeof *xf);
  float *yf = malloc(nys * sizeof *yf);
  double *yd = malloc(nys * sizeof *yd);
  bool ok = a && x && y && af && xf && yf && yd;
  if (ok) {
    uint64_t s = 777u + (uint64_t)M * 5 + (uint64_t)N * 11 + trans;
    for (size_t i = 0; i < na; i++) af[i] = (float)(a[i] = rng_uniform(&s));
    for (size_t i = 0; i < nxs; i++) xf[i] = (float)(x[i] = rng_uniform(&s));
    for (size_t i = 0; i < nys; i++) yf[i] = (float)(y[i] = rng_uniform(&s));
    for (size_t i = 0; i < nys; i++) yd[i] = y[i];
    B.sgemv(CBLAS_ROW_MAJOR, trans ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, (float)alpha, af, lda, xf,
            incx, (float)beta, yf, incy);
    B.dgemv(CBLAS_ROW_MAJOR, trans ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, alpha, a, lda, x, incx,
            beta, yd, incy);
    for (int i = 0; i < ny && ok; i++) {
      double acc = 0, abs_acc = 0;
      for (int p = 0; p < nx; p++) {
        double v = (trans ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) * x[(size_t)p * incx];
        acc += v, abs_acc += fabs(v);
      }
      double y0 = y[(size_t)i * incy];
      double ref = alpha * acc + beta * y0, bound = fabs(alpha) * abs_acc + fabs(beta * y0);
      ok = fabs(yd[(size_t)i * incy] - ref) <= 2.3e-16 * (nx + 4) * bound + 1e-300 &&
           fabs((double)yf[(size_t)i * incy] - ref) <= 1.2e-7 * (nx + 4) * bound + 1e-30;
    }
  }
  free(a), free(x), free(y), free(af), free(xf), free(yf), free(yd);
  return ok;
}

static bool check_kernels(int attempt) {
  const char *bad = getenv("LUTORCH_BLAS_TEST_BAD_KERNELS");
  if (bad && (strcmp(bad, "all") == 0 || (strcmp(bad, "1") == 0 && attempt == 0))) return false;
  /* small and odd (edge handling of every kernel), transposed with padded leading dimensions, NaN
     in C with beta == 0, one past the small-matrix path, and gemv both ways */
  return check_one(false, false, 67, 45, 53, 0, 1.0, 0.0, false) &&
         check_one(true, true, 67, 45, 53, 3, 0.75, 0.5, false) &&
         check_one(true, false, 33, 71, 19, 1, -1.25, 0.0, true) &&
         check_one(false, true, 17, 9, 130, 2, 1.0, 1.0, false) &&
         check_one(false, false, 131, 97, 77, 0, 1.0, 0.0, false) &&
         check_gemv(false, 67, 53, 3, 1, 2, 0.5, 0.25) &&
         check_gemv(true, 67, 53, 0, 3, 1, 1.5, 1.0);
}

/* ---- loading --------------------------------------------------------------------------------- */

static void unload(void) {
  if (B.lib) dlclose(B.lib);
  B.lib = NULL;
  B.sgemm = NULL, B.dgemm = NULL, B.sgemv = NULL, B.dgemv = NULL;
  B.get_corename = NULL, B.set_threads = NULL, B.get_threads = NULL;
}

/* 0: loaded and checked; 1: not found; 2: found but unusable (why in `why`). */
static int try_load(const char *name, int attempt, char *why, size_t whylen) {
  dlerror();
  B.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!B.lib) {
    const char *e = dlerror();
    snprintf(why, whylen, "%s", e ? e : name);
    return 1;
  }
  struct { const char *sym; void **slot; } syms[] = {
      {"cblas_sgemm", (void **)&B.sgemm},
      {"cblas_dgemm", (void **)&B.dgemm},
      {"cblas_sgemv", (void **)&B.sgemv},
      {"cblas_dgemv", (void **)&B.dgemv},
      {"openblas_get_corename", (void **)&B.get_corename},
      {"openblas_set_num_threads", (void **)&B.set_threads},
      {"openblas_get_num_threads", (void **)&B.get_threads},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    dlerror();
    *syms[i].slot = dlsym(B.lib, syms[i].sym);
    if (!*syms[i].slot) {
      snprintf(why, whylen, "%s has no %s", name, syms[i].sym);
      unload();
      return 2;
    }
  }
  B.set_threads(1); /* we split products over OpenMP threads ourselves */
  if (!check_kernels(attempt)) {
    const char *core = B.get_corename();
    snprintf(why, whylen, "%s with core %s gave wrong results", name, core ? core : "?");
    unload();
    return 2;
  }
  return 0;
}

/* A positive count from the variable (OMP_NUM_THREADS may be a list: its first entry), or 0. */
static int env_threads(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  long n = strtol(v, &end, 10);
  return n > 0 && n < 4096 ? (int)n : 0;
}

static void restore_env(const char *name, const char *saved) {
  if (saved) setenv(name, saved, 1);
  else unsetenv(name);
}

static void init_once(void) {
  /* the user's thread count, in OpenBLAS's order of precedence, else the cores we may run on */
  int nt = env_threads("OPENBLAS_NUM_THREADS");
  if (!nt) nt = env_threads("GOTO_NUM_THREADS");
  if (!nt) nt = env_threads("OMP_NUM_THREADS");
  B.threads = nt ? nt : available_cores();
  char why[256] = "", why2[256] = "";
  const char *names[2] = {"libopenblas.so.0", "libopenblas.so"};
  int nnames = 2;
  const char *lib_env = getenv("LUTORCH_BLAS_LIB");
  if (lib_env && *lib_env) names[0] = lib_env, nnames = 1;
  bool none = lib_env && strcmp(lib_env, "none") == 0;

  /* choose the core unless the user did; remember the variable as found to restore it */
  const char *user_core = getenv("OPENBLAS_CORETYPE");
  char *saved = user_core ? strdup(user_core) : NULL;
  const char *chosen = (user_core && *user_core) || none ? NULL : choose_core();
  if (chosen) setenv("OPENBLAS_CORETYPE", chosen, 1);
  /* OpenBLAS starts its thread pool when loaded: with no count given, ask for none (it would
     start one thread per core, then idle) */
  const char *user_nt = getenv("OPENBLAS_NUM_THREADS");
  char *saved_nt = user_nt ? strdup(user_nt) : NULL;
  if (!saved_nt) setenv("OPENBLAS_NUM_THREADS", "1", 1);

  int r = 1;
  const char *loaded = NULL;
  for (int i = 0; i < nnames && !none; i++) {
    r = try_load(names[i], 0, why, sizeof why);
    if (r == 1) continue; /* not there: try the next name */
    if (r == 2 && chosen) {
      /* our choice of kernels was wrong: let the library choose */
      restore_env("OPENBLAS_CORETYPE", saved);
      chosen = NULL;
      r = try_load(names[i], 1, why2, sizeof why2);
    }
    if (r == 0) loaded = names[i];
    break;
  }
  /* leave the environment as we found it */
  if (chosen) restore_env("OPENBLAS_CORETYPE", saved);
  if (!saved_nt) unsetenv("OPENBLAS_NUM_THREADS");
  free(saved), free(saved_nt);

  if (loaded) {
    const char *core = B.get_corename();
    snprintf(B.corename, sizeof B.corename, "%s", core ? core : "unknown");
    str_fn config = (str_fn)dlsym(B.lib, "openblas_get_config");
    const char *cfg = config ? config() : NULL;
    snprintf(B.info, sizeof B.info, "%s from %s, core %s %s, %d threads%s%s",
             cfg ? cfg : "OpenBLAS", loaded, B.corename,
             chosen ? "chosen from CPU features"
                    : user_core && *user_core ? "set by OPENBLAS_CORETYPE" : "chosen by OpenBLAS",
             B.threads, why[0] ? "; first try: " : "", why);
  } else {
    snprintf(B.corename, sizeof B.corename, "fallback");
    snprintf(B.info, sizeof B.info, "fallback: portable loops, %d threads (%s%s%s)",
             B.threads,
             none ? "LUTORCH_BLAS_LIB=none" : why[0] ? why : "no OpenBLAS",
             why2[0] ? "; " : "", why2);
  }
  /* float32 products: our AVX-512 kernels where the CPU has them, unless LUTORCH_GEMM=blas */
  const char *gemm_env = getenv("LUTORCH_GEMM");
  bool want_blas = gemm_env && strcmp(gemm_env, "blas") == 0;
  B.native_sgemm = !want_blas && cpu_has_avx512();
  size_t len = strlen(B.info);
  snprintf(B.info + len, sizeof B.info - len, "; float32 products: %s",
           B.native_sgemm ? "lutorch's AVX-512 kernels"
           : want_blas    ? "BLAS (LUTORCH_GEMM=blas)"
                          : "BLAS (no AVX-512)");
  __atomic_store_n(&B.ready, 1, __ATOMIC_RELEASE);
}

int lt_blas_init(void) {
  if (__atomic_load_n(&B.ready, __ATOMIC_ACQUIRE)) return LT_OK;
  int e = pthread_once(&blas_once, init_once);
  if (e != 0) return lt_error("blas: pthread_once failed (%s)", strerror(e));
  return LT_OK;
}

const char *lt_blas_corename(void) {
  return __atomic_load_n(&B.ready, __ATOMIC_ACQUIRE) ? B.corename : "none";
}

bool lt_blas_sgemm_native(void) {
  lt_blas_init();
  return B.native_sgemm;
}

bool lt_blas_sgemm_adds_once(int64_t K) { return lt_blas_sgemm_native() && K <= LT_SGEMM_KC; }

void *lt_blas_symbol(const char *name) {
  lt_blas_init();
  if (!__atomic_load_n(&B.ready, __ATOMIC_ACQUIRE) || !B.lib) return NULL;
  return dlsym(B.lib, name);
}

const char *lt_blas_info(void) { return __atomic_load_n(&B.ready, __ATOMIC_ACQUIRE) ? B.info : ""; }

int lt_blas_num_threads(void) {
  lt_blas_init();
  return __atomic_load_n(&B.threads, __ATOMIC_RELAXED);
}

void lt_blas_set_num_threads(int n) {
  lt_blas_init();
  __atomic_store_n(&B.threads, n < 1 ? available_cores() : n, __ATOMIC_RELAXED);
}

/* How many threads to split a product of `work` multiply-adds over: one inside a parallel region
   or below OpenBLAS's own threshold for threading (65536 * 4), else lt_blas_num_threads() capped
   by the calling thread's OpenMP setting and by LT_BLAS_THREAD_WORK a thread. */
static int split_threads(double work) {
  if (work <= (double)LT_BLAS_SPLIT_MIN || omp_in_parallel()) return 1;
  int nt = __atomic_load_n(&B.threads, __ATOMIC_RELAXED), omp = omp_get_max_threads();
  if (omp < nt) nt = omp;
  return lt_threads_for(work, (double)LT_BLAS_THREAD_WORK, nt);
}

/* The start of part t of n of [0, len), on multiples of 16 (the kernels' unrolling). */
static int64_t part_start(int64_t len, int t, int n) {
  if (t >= n) return len;
  int64_t s = len * t / n;
  s -= s % 16;
  return s;
}

/* ---- the portable loops -------------------------------------------------------------------------
   C = beta C, then for blocks of K (KC) and N (NC): pack op(B)'s block contiguous, and each thread
   updates its rows with an axpy per k that the compiler vectorises. */

enum { FB_KC = 256, FB_NC = 2048 };

#define DEFINE_FALLBACK_GEMM(NAME, T)                                                              \
  static int NAME(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,          \
                  int64_t lda, const T *Bm, int64_t ldb, T beta, T *C, int64_t ldc) {              \
    int nt = split_threads((double)M * N * (K + 1));                                               \
    bool par = nt > 1;                                                                             \
    _Pragma("omp parallel for num_threads(lt_team_size()) if (par) schedule(static)")              \
    for (int64_t i = 0; i < M; i++) {                                                              \
      T *c = C + i * ldc;                                                                          \
      if (beta == 0) for (int64_t j = 0; j < N; j++) c[j] = 0;                                     \
      else if (beta != 1) for (int64_t j = 0; j < N; j++) c[j] *= beta;                            \
    }                                                                                              \
    if (K == 0 || alpha == 0) return LT_OK;                                                        \
    int64_t nc_max = N < FB_NC ? N : FB_NC, kc_max = K < FB_KC ? K : FB_KC;                        \
    T *bp = malloc((size_t)(nc_max * kc_max) * sizeof(T));                                         \
    if (!bp) return lt_error("out of memory (%zu bytes)", (size_t)(nc_max * kc_max) * sizeof(T));  \
    for (int64_t jc = 0; jc < N; jc += FB_NC) {                                                    \
      int64_t nc = N - jc < FB_NC ? N - jc : FB_NC;                                                \
      for (int64_t pc = 0; pc < K; pc += FB_KC) {                                                  \
        int64_t kc = K - pc < FB_KC ? K - pc : FB_KC;                                              \
        for (int64_t p = 0; p < kc; p++)                                                           \
          for (int64_t j = 0; j < nc; j++)                                                         \
            bp[p * nc + j] = tb ? Bm[(jc + j) * ldb + pc + p] : Bm[(pc + p) * ldb + jc + j];       \
        bool par2 = par && (double)M * nc * kc > 65536.0;                                          \
        _Pragma("omp parallel for num_threads(lt_team_size()) if (par2) schedule(static)")         \
        for (int64_t i = 0; i < M; i++) {                                                          \
          T *c = C + i * ldc + jc;                                                                 \
          for (int64_t p = 0; p < kc; p++) {                                                       \
            T a = alpha * (ta ? A[(pc + p) * lda + i] : A[i * lda + pc + p]);                      \
            const T *b = bp + p * nc;                                                              \
            _Pragma("omp simd")                                                                    \
            for (int64_t j = 0; j < nc; j++) c[j] += a * b[j];                                     \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    free(bp);                                                                                      \
    return LT_OK;                                                                                  \
  }

DEFINE_FALLBACK_GEMM(fallback_sgemm, float)
DEFINE_FALLBACK_GEMM(fallback_dgemm, double)

#define DEFINE_FALLBACK_GEMV(NAME, T)                                                              \
  static void NAME(bool trans, int64_t M, int64_t N, T alpha, const T *A, int64_t lda, const T *x, \
                   int64_t incx, T beta, T *y, int64_t incy) {                                     \
    int nt = split_threads((double)M * N);                                                         \
    int64_t ny = trans ? N : M, nx = trans ? M : N;                                                \
    bool par = nt > 1;                                                                             \
    _Pragma("omp parallel for num_threads(lt_team_size()) if (par) schedule(static)")              \
    for (int64_t i = 0; i < ny; i++) {                                                             \
      T acc = 0;                                                                                   \
      for (int64_t p = 0; p < nx; p++)                                                             \
        acc += (trans ? A[p * lda + i] : A[i * lda + p]) * x[p * incx];                            \
      y[i * incy] = alpha * acc + (beta == 0 ? (T)0 : beta * y[i * incy]);                         \
    }                                                                                              \
  }

DEFINE_FALLBACK_GEMV(fallback_sgemv, float)
DEFINE_FALLBACK_GEMV(fallback_dgemv, double)

/* ---- the entry points ------------------------------------------------------------------------ */

static int check_gemm_args(const char *what, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           int64_t lda, int64_t ldb, int64_t ldc) {
  int64_t max = LT_BLAS_MAX_DIM;
  if (M < 0 || N < 0 || K < 0)
    return lt_error("%s: negative size (M=%lld, N=%lld, K=%lld)", what, (long long)M, (long long)N,
                    (long long)K);
  if (M > max || N > max || K > max || lda > max || ldb > max || ldc > max)
    return lt_error("%s: sizes and leading dimensions must be at most %lld (M=%lld, N=%lld, "
                    "K=%lld, lda=%lld, ldb=%lld, ldc=%lld)",
                    what, (long long)max, (long long)M, (long long)N, (long long)K, (long long)lda,
                    (long long)ldb, (long long)ldc);
  int64_t a_cols = ta ? M : K, b_cols = tb ? K : N;
  if (lda < (a_cols > 1 ? a_cols : 1) || ldb < (b_cols > 1 ? b_cols : 1) || ldc < (N > 1 ? N : 1))
    return lt_error("%s: leading dimension too small (lda=%lld, ldb=%lld, ldc=%lld for M=%lld, "
                    "N=%lld, K=%lld)",
                    what, (long long)lda, (long long)ldb, (long long)ldc, (long long)M,
                    (long long)N, (long long)K);
  return lt_blas_init();
}

/* The OpenBLAS call on one part: rows [i0, i1) or columns [j0, j1) of C. */
#define DEFINE_BLAS_GEMM(NAME, T, FN)                                                              \
  static void NAME(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A,         \
                   int64_t lda, const T *Bm, int64_t ldb, T beta, T *C, int64_t ldc) {             \
    int nt = split_threads((double)M * N * K);                                                     \
    if (nt == 1) {                                                                                 \
      B.FN(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS,  \
           (int)M, (int)N, (int)K, alpha, A, (int)lda, Bm, (int)ldb, beta, C, (int)ldc);           \
      return;                                                                                      \
    }                                                                                              \
    bool rows = M >= N; /* split the longer side of C */                                           \
    LT_WORKERS(nt, {                                                                               \
      int64_t len = rows ? M : N, s = part_start(len, lt_w, lt_nw), e = part_start(len, lt_w + 1, lt_nw); \
      if (e > s) {                                                                                 \
        const T *a = rows ? (ta ? A + s : A + s * lda) : A;                                        \
        const T *b = rows ? Bm : (tb ? Bm + s * ldb : Bm + s);                                     \
        T *c = rows ? C + s * ldc : C + s;                                                         \
        B.FN(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS,                                   \
             tb ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)(rows ? e - s : M), (int)(rows ? N : e - s),  \
             (int)K, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);                          \
      }                                                                                            \
    });                                                                                            \
  }

DEFINE_BLAS_GEMM(blas_sgemm, float, sgemm)
DEFINE_BLAS_GEMM(blas_dgemm, double, dgemm)

int lt_blas_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *Bm, int64_t ldb, float beta, float *C,
                  int64_t ldc) {
  LT_TRY(check_gemm_args("sgemm", transA, transB, M, N, K, lda, ldb, ldc));
  if (M == 0 || N == 0) return LT_OK;
  if (K == 0) { /* C = beta C, by us: not every BLAS scales C when K is 0 */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0.0f : beta * C[i * ldc + j];
    return LT_OK;
  }
  if (B.native_sgemm) {
    if (lt_sgemm_avx512(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc,
                        split_threads((double)M * N * K)) != 0)
      return lt_error("sgemm: out of memory for the packing buffers");
    return LT_OK;
  }
  if (!B.lib) return fallback_sgemm(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc);
  blas_sgemm(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc);
  return LT_OK;
}

int lt_blas_sgemm_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *Bm, int64_t ldb, const float *bias,
                       float *C, int64_t ldc) {
  LT_TRY(check_gemm_args("sgemm", transA, transB, M, N, K, lda, ldb, ldc));
  if (M == 0 || N == 0) return LT_OK;
  if (B.native_sgemm) {
    if (lt_sgemm_avx512_bias(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, bias, C, ldc,
                             split_threads((double)M * N * K)) != 0)
      return lt_error("sgemm: out of memory for the packing buffers");
    return LT_OK;
  }
  for (int64_t i = 0; i < M; i++) memcpy(C + i * ldc, bias, (size_t)N * sizeof(float));
  return lt_blas_sgemm(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, 1.0f, C, ldc);
}

int lt_blas_dgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
                  const double *A, int64_t lda, const double *Bm, int64_t ldb, double beta,
                  double *C, int64_t ldc) {
  LT_TRY(check_gemm_args("dgemm", transA, transB, M, N, K, lda, ldb, ldc));
  if (M == 0 || N == 0) return LT_OK;
  if (K == 0) { /* C = beta C, by us: not every BLAS scales C when K is 0 */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0.0 : beta * C[i * ldc + j];
    return LT_OK;
  }
  if (!B.lib) return fallback_dgemm(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc);
  blas_dgemm(transA, transB, M, N, K, alpha, A, lda, Bm, ldb, beta, C, ldc);
  return LT_OK;
}

/* gemv split over the entries of y: rows of A, or columns when transposed. */
#define DEFINE_BLAS_GEMV(NAME, T, FN)                                                              \
  static void NAME(bool trans, int64_t M, int64_t N, T alpha, const T *A, int64_t lda, const T *x, \
                   int64_t incx, T beta, T *y, int64_t incy) {                                     \
    int nt = split_threads((double)M * N);                                                         \
    int op = trans ? CBLAS_TRANS : CBLAS_NO_TRANS;                                                 \
    if (nt == 1) {                                                                                 \
      B.FN(CBLAS_ROW_MAJOR, op, (int)M, (int)N, alpha, A, (int)lda, x, (int)incx, beta, y,         \
           (int)incy);                                                                             \
      return;                                                                                      \
    }                                                                                              \
    LT_WORKERS(nt, {                                                                               \
      int64_t len = trans ? N : M, s = part_start(len, lt_w, lt_nw), e = part_start(len, lt_w + 1, lt_nw); \
      if (e > s)                                                                                   \
        B.FN(CBLAS_ROW_MAJOR, op, (int)(trans ? M : e - s), (int)(trans ? e - s : N), alpha,       \
             trans ? A + s : A + s * lda, (int)lda, x, (int)incx, beta, y + s * incy, (int)incy);  \
    });                                                                                            \
  }

DEFINE_BLAS_GEMV(blas_sgemv, float, sgemv)
DEFINE_BLAS_GEMV(blas_dgemv, double, dgemv)

static int check_gemv_args(const char *what, int64_t M, int64_t N, int64_t lda, int64_t incx,
                           int64_t incy) {
  int64_t max = LT_BLAS_MAX_DIM;
  if (M < 0 || N < 0 || incx < 1 || incy < 1)
    return lt_error("%s: negative size or non-positive increment (M=%lld, N=%lld, incx=%lld, "
                    "incy=%lld)",
                    what, (long long)M, (long long)N, (long long)incx, (long long)incy);
  if (M > max || N > max || lda > max || incx > max || incy > max)
    return lt_error("%s: sizes, leading dimension and increments must be at most %lld (M=%lld, "
                    "N=%lld, lda=%lld, incx=%lld, incy=%lld)",
                    what, (long long)max, (long long)M, (long long)N, (long long)lda,
                    (long long)incx, (long long)incy);
  if (lda < (N > 1 ? N : 1))
    return lt_error("%s: leading dimension too small (lda=%lld, N=%lld)", what, (long long)lda,
                    (long long)N);
  return lt_blas_init();
}

int lt_blas_sgemv(bool trans, int64_t M, int64_t N, float alpha, const float *A, int64_t lda,
                  const float *x, int64_t incx, float beta, float *y, int64_t incy) {
  LT_TRY(check_gemv_args("sgemv", M, N, lda, incx, incy));
  int64_t ny = trans ? N : M, nx = trans ? M : N;
  if (ny == 0) return LT_OK;
  if (nx == 0) { /* OpenBLAS returns early here without scaling y */
    for (int64_t i = 0; i < ny; i++) y[i * incy] = beta == 0 ? 0.0f : beta * y[i * incy];
    return LT_OK;
  }
  if (beta == 0) /* y may hold NaN: OpenBLAS would scale it by 0 */
    for (int64_t i = 0; i < ny; i++) y[i * incy] = 0.0f;
  if (!B.lib) fallback_sgemv(trans, M, N, alpha, A, lda, x, incx, beta, y, incy);
  else blas_sgemv(trans, M, N, alpha, A, lda, x, incx, beta, y, incy);
  return LT_OK;
}

int lt_blas_dgemv(bool trans, int64_t M, int64_t N, double alpha, const double *A, int64_t lda,
                  const double *x, int64_t incx, double beta, double *y, int64_t incy) {
  LT_TRY(check_gemv_args("dgemv", M, N, lda, incx, incy));
  int64_t ny = trans ? N : M, nx = trans ? M : N;
  if (ny == 0) return LT_OK;
  if (nx == 0) {
    for (int64_t i = 0; i < ny; i++) y[i * incy] = beta == 0 ? 0.0 : beta * y[i * incy];
    return LT_OK;
  }
  if (beta == 0) /* y may hold NaN: OpenBLAS would scale it by 0 */
    for (int64_t i = 0; i < ny; i++) y[i * incy] = 0.0;
  if (!B.lib) fallback_dgemv(trans, M, N, alpha, A, lda, x, incx, beta, y, incy);
  else blas_dgemv(trans, M, N, alpha, A, lda, x, incx, beta, y, incy);
  return LT_OK;
}
