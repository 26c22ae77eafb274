#include "core/iter.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

int lt_broadcast_shapes(const char *op, int na, const int64_t *a, int nb, const int64_t *b,
                        int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa == sb || sb == 1) out[i] = sa;
    else if (sa == 1) out[i] = sb;
    else {
      char x[256], y[256];
      return lt_error("%s: the shapes %s and %s cannot be broadcast together (size %lld and size "
                      "%lld at dimension %d)", op, lt_shape_str(na, a, x, sizeof x),
                      lt_shape_str(nb, b, y, sizeof y), (long long)sa, (long long)sb, i + 1);
    }
  }
  *nout = n;
  return LT_OK;
}

int lt_iter_init(lt_iter_t *it, int nops, lt_tensor_t *const *ops) {
  const lt_tensor_t *out = ops[0];
  int nd = out->ndim;
  it->nops = nops;
  it->numel = out->numel;
  for (int k = 0; k < nops; k++) it->data[k] = ops[k] ? lt_data(ops[k]) : NULL;
  /* reverse the dimension order (innermost first), broadcasting inputs with stride 0 */
  for (int d = 0; d < nd; d++) {
    int src = nd - 1 - d;
    it->shape[d] = out->sizes[src];
    for (int k = 0; k < nops; k++) {
      const lt_tensor_t *t = ops[k];
      int td = t ? t->ndim - 1 - d : -1;
      int64_t st = 0;
      if (td >= 0 && t->sizes[td] != 1) st = t->strides[td] * (int64_t)lt_elsize(t);
      it->strides[d][k] = st;
    }
  }
  /* drop size-1 dimensions, then merge d+1 into d when every operand allows it */
  int m = 0;
  for (int d = 0; d < nd; d++) {
    if (it->shape[d] == 1) continue;
    if (m != d) {
      it->shape[m] = it->shape[d];
      memcpy(it->strides[m], it->strides[d], sizeof it->strides[d]);
    }
    m++;
  }
  nd = m;
  if (nd > 1) {
    int w = 0;
    for (int d = 1; d < nd; d++) {
      int ok = 1;
      for (int k = 0; k < nops && ok; k++)
        ok = it->strides[d][k] == it->strides[w][k] * it->shape[w];
      if (ok) it->shape[w] *= it->shape[d];
      else {
        w++;
        if (w != d) {
          it->shape[w] = it->shape[d];
          memcpy(it->strides[w], it->strides[d], sizeof it->strides[d]);
        }
      }
    }
    nd = w + 1;
  }
  if (nd == 0) { /* a single element */
    it->shape[0] = it->numel ? 1 : 0;
    for (int k = 0; k < nops; k++) it->strides[0][k] = 0;
    nd = 1;
  }
  it->ndim = nd;
  return LT_OK;
}

/* Run rows [row0, row1) of the iteration (rows = the product of the outer dimensions), with a
   part of the inner dimension when there is a single row (begin..end elements). */
static void run_range(const lt_iter_t *it, lt_loop_fn loop, const void *ctx, int64_t begin,
                      int64_t end) {
  int nops = it->nops, nd = it->ndim;
  int64_t inner = it->shape[0];
  int64_t idx[LT_MAX_DIM];
  char *ptr[LT_ITER_MAX_OPS];
  int64_t s0[LT_ITER_MAX_OPS];
  for (int k = 0; k < nops; k++) s0[k] = it->strides[0][k];
  /* position of element `begin` */
  int64_t rem = begin / inner;
  int64_t col = begin % inner;
  for (int d = 1; d < nd; d++) { idx[d] = rem % it->shape[d]; rem /= it->shape[d]; }
  for (int k = 0; k < nops; k++) {
    char *p = it->data[k] + col * s0[k];
    for (int d = 1; d < nd; d++) p += idx[d] * it->strides[d][k];
    ptr[k] = p;
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = inner - col;
    if (n > end - pos) n = end - pos;
    loop(ptr, s0, n, ctx);
    pos += n;
    if (pos >= end) break;
    /* next row: back to column 0, carry through the outer dimensions */
    for (int k = 0; k < nops; k++) ptr[k] -= col * s0[k];
    col = 0;
    for (int d = 1; d < nd; d++) {
      idx[d]++;
      for (int k = 0; k < nops; k++) ptr[k] += it->strides[d][k];
      if (idx[d] < it->shape[d]) break;
      for (int k = 0; k < nops; k++) ptr[k] -= it->strides[d][k] * it->shape[d];
      idx[d] = 0;
    }
  }
}

static int num_threads = 0;
/* a limit of the calling thread's own (0: none): a Lua thread running one replica of a module */
static _Thread_local int thread_num_threads = 0;

/* the global setting, first read from OpenMP's default; read by every thread, hence atomic */
static int global_num_threads(void) {
  int n = __atomic_load_n(&num_threads, __ATOMIC_RELAXED);
  if (n <= 0) {
    int zero = 0;
    n = omp_get_max_threads();
    if (!__atomic_compare_exchange_n(&num_threads, &zero, n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) n = zero;
  }
  return n;
}

int lt_num_threads(void) {
  int n = global_num_threads();
  return thread_num_threads > 0 && thread_num_threads < n ? thread_num_threads : n;
}

void lt_set_thread_num_threads(int n) {
  global_num_threads(); /* before this thread's OpenMP setting changes what the default reads */
  int prev = thread_num_threads;
  thread_num_threads = n > 0 ? n : 0;
  /* OpenMP's thread count is per thread too: parallel regions and the BLAS split follow it */
  omp_set_num_threads(n > 0 ? n : global_num_threads());
  /* This thread's idle OpenMP workers spin for milliseconds after each parallel region, on cores
     that other devices' threads are about to use: release them (a new region makes them again,
     for 40 us to a millisecond) when the limit drops to one thread, unless this thread is itself
     one of a team (a replica or a device's part of a backward run on the OpenMP workers). */
  if (n == 1 && prev != 1 && !omp_in_parallel()) (void)omp_pause_resource_all(omp_pause_soft);
}

int lt_thread_num_threads(void) { return thread_num_threads; }

int lt_threads_for(double work, double per_thread, int limit) {
  if (omp_in_parallel()) return 1;
  int nt = limit > 0 ? limit : lt_num_threads();
  double cap = per_thread > 0 ? work / per_thread : (double)nt;
  if (cap < (double)nt) nt = cap < 1 ? 1 : (int)cap;
  return nt > 1 ? nt : 1;
}

int lt_team_size(void) {
  if (omp_in_parallel()) return 1;
  int n = lt_num_threads(), omp = omp_get_max_threads();
  return n < omp ? n : omp;
}

void lt_set_num_threads(int n) {
  n = n > 0 ? n : 1;
  __atomic_store_n(&num_threads, n, __ATOMIC_RELAXED);
  omp_set_num_threads(n);
}

void lt_iter_run(const lt_iter_t *it, lt_loop_fn loop, const void *ctx, int64_t grain) {
  int64_t n = it->numel;
  if (n == 0) return;
  int nt = lt_num_threads();
  if (grain <= 0) grain = LT_GRAIN;
  if (nt <= 1 || n < 2 * grain) {
    if (it->ndim == 1) {
      char *ptr[LT_ITER_MAX_OPS];
      for (int k = 0; k < it->nops; k++) ptr[k] = it->data[k];
      loop(ptr, it->strides[0], n, ctx);
    } else {
      run_range(it, loop, ctx, 0, n);
    }
    return;
  }
  int64_t chunks = n / grain;
  if (chunks > nt) chunks = nt;
#pragma omp parallel for num_threads(lt_team_size()) schedule(static)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
    run_range(it, loop, ctx, b, e);
  }
}
