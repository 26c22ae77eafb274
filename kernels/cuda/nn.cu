/* CUDA softmax / log-softmax (forward and backward along a dimension), the negative
   log-likelihood loss, and layer and batch normalisation. The arithmetic is the CPU loops'
   (kernels/cpu/softmax.c, loss.c, normalization.c): the maximum in the compute type (float for
   float32 / float16 / bfloat16, double for float64), the sum of exponentials, the loss sums and
   layer norm's statistics in double. Rows along the last dimension take a block each (coalesced
   loads, block reductions in shared memory); a dimension with inner elements after it takes a
   thread per (outer, inner) column, whose loads are coalesced across the inner index. */
#include "kernels/cuda/nn.h"
#include "kernels/cuda/cast.h"

#include <cuda_runtime.h>
#include <math.h>

enum { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I64 = 4, DT_I32 = 5 };

template <typename ST> struct ctype { typedef float T; };
template <> struct ctype<double> { typedef double T; };

template <typename ST> __device__ __forceinline__ typename ctype<ST>::T ldc(ST v) {
  return (typename ctype<ST>::T)lt_cu_ld(v);
}

#define THREADS 256

static unsigned blocks_for(int64_t n, int64_t per) {
  int64_t b = (n + per - 1) / per;
  return (unsigned)(b < 1 ? 1 : b < 65535 ? b : 65535);
}

/* block-wide max and sum (every thread gets the result) */
template <typename T> __device__ T block_max(T v, T *sm) {
  sm[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      T o = sm[threadIdx.x + s];
      if (o > sm[threadIdx.x] || o != o) sm[threadIdx.x] = o; /* NaN propagates */
    }
    __syncthreads();
  }
  T r = sm[0];
  __syncthreads();
  return r;
}
__device__ double block_sum(double v, double *sm) {
  sm[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sm[threadIdx.x] += sm[threadIdx.x + s];
    __syncthreads();
  }
  double r = sm[0];
  __syncthreads();
  return r;
}

/* ---- softmax forward ---- */
template <typename ST> __global__ void softmax_rows_k(const ST *x, ST *y, int64_t rows, int64_t n, bool log) {
  typedef typename ctype<ST>::T T;
  __shared__ T smax[THREADS];
  __shared__ double ssum[THREADS];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const ST *xr = x + r * n;
    ST *yr = y + r * n;
    T m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      T v = ldc(xr[j]);
      if (v > m || v != v) m = v;
    }
    m = block_max<T>(m, smax);
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += (double)exp(ldc(xr[j]) - m);
    s = block_sum(s, ssum);
    if (log) {
      T ls = (T)::log(s);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = lt_cu_st<ST>::f(ldc(xr[j]) - m - ls);
    } else {
      T inv = (T)(1.0 / s);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = lt_cu_st<ST>::f(exp(ldc(xr[j]) - m) * inv);
    }
  }
}

template <typename ST>
__global__ void softmax_cols_k(const ST *x, ST *y, int64_t outer, int64_t n, int64_t inner, bool log) {
  typedef typename ctype<ST>::T T;
  int64_t total = outer * inner;
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < total; c += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = c / inner, i = c % inner;
    const ST *xc = x + o * n * inner + i;
    ST *yc = y + o * n * inner + i;
    T m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
      T v = ldc(xc[j * inner]);
      if (v > m || v != v) m = v;
    }
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += (double)exp(ldc(xc[j * inner]) - m);
    if (log) {
      T ls = (T)::log(s);
      for (int64_t j = 0; j < n; j++) yc[j * inner] = lt_cu_st<ST>::f(ldc(xc[j * inner]) - m - ls);
    } else {
      T inv = (T)(1.0 / s);
      for (int64_t j = 0; j < n; j++) yc[j * inner] = lt_cu_st<ST>::f(exp(ldc(xc[j * inner]) - m) * inv);
    }
  }
}

/* ---- softmax backward: softmax gx = y * (g - sum(g * y)); log_softmax gx = g - exp(y) * sum(g) ---- */
template <typename ST>
__global__ void softmax_bw_rows_k(const ST *g, const ST *y, ST *gx, int64_t rows, int64_t n, bool log) {
  typedef typename ctype<ST>::T T;
  __shared__ double ssum[THREADS];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const ST *gr = g + r * n, *yr = y + r * n;
    ST *outr = gx + r * n;
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s += log ? (double)ldc(gr[j]) : (double)ldc(gr[j]) * (double)ldc(yr[j]);
    T st = (T)block_sum(s, ssum);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      T gv = ldc(gr[j]), yv = ldc(yr[j]);
      outr[j] = lt_cu_st<ST>::f(log ? gv - exp(yv) * st : yv * (gv - st));
    }
  }
}

template <typename ST>
__global__ void softmax_bw_cols_k(const ST *g, const ST *y, ST *gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  typedef typename ctype<ST>::T T;
  int64_t total = outer * inner;
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < total; c += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = (c / inner) * n * inner + c % inner;
    double s = 0;
    for (int64_t j = 0; j < n; j++) {
      int64_t k = base + j * inner;
      s += log ? (double)ldc(g[k]) : (double)ldc(g[k]) * (double)ldc(y[k]);
    }
    T st = (T)s;
    for (int64_t j = 0; j < n; j++) {
      int64_t k = base + j * inner;
      T gv = ldc(g[k]), yv = ldc(y[k]);
      gx[k] = lt_cu_st<ST>::f(log ? gv - exp(yv) * st : yv * (gv - st));
    }
  }
}

template <typename ST>
static int softmax_t(const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t s) {
  if (outer * n * inner == 0) return 0;
  if (inner == 1) softmax_rows_k<ST><<<blocks_for(outer, 1), THREADS, 0, s>>>((const ST *)x, (ST *)y, outer, n, log);
  else softmax_cols_k<ST><<<blocks_for(outer * inner, THREADS), THREADS, 0, s>>>((const ST *)x, (ST *)y, outer, n, inner, log);
  return (int)cudaGetLastError();
}

template <typename ST>
static int softmax_bw_t(const void *g, const void *y, void *gx, int64_t outer, int64_t n, int64_t inner, bool log,
                        cudaStream_t s) {
  if (outer * n * inner == 0) return 0;
  if (inner == 1)
    softmax_bw_rows_k<ST><<<blocks_for(outer, 1), THREADS, 0, s>>>((const ST *)g, (const ST *)y, (ST *)gx, outer, n, log);
  else
    softmax_bw_cols_k<ST><<<blocks_for(outer * inner, THREADS), THREADS, 0, s>>>((const ST *)g, (const ST *)y, (ST *)gx,
                                                                                  outer, n, inner, log);
  return (int)cudaGetLastError();
}

#define BY_FLOAT(dtype, ...)                          \
  switch (dtype) {                                    \
    case DT_F32: { typedef float ST; __VA_ARGS__; }        \
    case DT_F64: { typedef double ST; __VA_ARGS__; }        \
    case DT_F16: { typedef lt_half ST; __VA_ARGS__; }        \
    case DT_BF16: { typedef lt_bfloat16 ST; __VA_ARGS__; }   \
    default: return -1;                               \
  }
#define BY_TARGET(tdtype, ...)                        \
  switch (tdtype) {                                   \
    case DT_I64: { typedef int64_t TT; __VA_ARGS__; }        \
    case DT_I32: { typedef int32_t TT; __VA_ARGS__; }        \
    default: return -1;                               \
  }

/* ---- nll ---- */
template <typename TT>
__global__ void nll_check_k(const TT *t, int64_t count, int64_t C, bool has_ignore, int64_t ignore, int64_t *bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t v = (int64_t)t[i];
    if (has_ignore && v == ignore) continue;
    if (v < 1 || v > C) atomicMin((unsigned long long *)bad, (unsigned long long)i);
  }
}

__global__ void set_i64_k(int64_t *p, int64_t v) { *p = v; }

template <typename ST, typename TT>
__global__ void nll_none_k(const ST *logp, const TT *t, const double *w, int64_t N, int64_t C, int64_t S,
                           bool has_ignore, int64_t ignore, ST *out) {
  int64_t total = N * S;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t v = (int64_t)t[i];
    double l = 0;
    if (!(has_ignore && v == ignore)) {
      int64_t n = i / S, s = i % S, k = v - 1;
      l = -(w ? w[k] : 1.0) * (double)lt_cu_ld(logp[(n * C + k) * S + s]);
    }
    out[i] = lt_cu_st<ST>::f(l);
  }
}

/* one block: the sums over every element, then the scalar */
template <typename ST, typename TT>
__global__ void nll_reduce_k(const ST *logp, const TT *t, const double *w, int64_t N, int64_t C, int64_t S,
                             bool has_ignore, int64_t ignore, bool mean, ST *out, double *acc) {
  __shared__ double s1[THREADS], s2[THREADS];
  double sum = 0, wsum = 0;
  int64_t total = N * S;
  for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
    int64_t v = (int64_t)t[i];
    if (has_ignore && v == ignore) continue;
    int64_t n = i / S, s = i % S, k = v - 1;
    double wk = w ? w[k] : 1.0;
    sum += -wk * (double)lt_cu_ld(logp[(n * C + k) * S + s]);
    wsum += wk;
  }
  sum = block_sum(sum, s1);
  wsum = block_sum(wsum, s2);
  if (threadIdx.x == 0) {
    acc[0] = sum;
    acc[1] = wsum;
    *out = lt_cu_st<ST>::f(mean ? sum / wsum : sum); /* 0 / 0: NaN when all are ignored */
  }
}

template <typename ST, typename TT>
__global__ void nll_bw_k(ST *gl, const ST *g, bool per_elem, double scale, const TT *t, const double *w, int64_t N,
                         int64_t C, int64_t S, bool has_ignore, int64_t ignore) {
  int64_t total = N * S;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t v = (int64_t)t[i];
    if (has_ignore && v == ignore) continue;
    int64_t n = i / S, s = i % S, k = v - 1;
    double gv = per_elem ? (double)lt_cu_ld(g[i]) : (double)lt_cu_ld(g[0]) * scale;
    gl[(n * C + k) * S + s] = lt_cu_st<ST>::f(-(w ? w[k] : 1.0) * gv);
  }
}

/* ---- layer norm over rows of N (kernels/cpu/normalization.c's ln_* loops): two passes in
   double for the statistics, the rest in the compute type ---- */
template <typename ST>
__global__ void ln_fw_k(const ST *x, ST *y, int64_t M, int64_t N, const typename ctype<ST>::T *w,
                        const typename ctype<ST>::T *b, double eps, typename ctype<ST>::T *mean_out,
                        typename ctype<ST>::T *rstd_out) {
  typedef typename ctype<ST>::T T;
  __shared__ double ssum[THREADS];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const ST *xr = x + r * N;
    ST *yr = y + r * N;
    double s = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += (double)lt_cu_ld(xr[i]);
    double mu = block_sum(s, ssum) / (double)N;
    double q = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
      double d = (double)lt_cu_ld(xr[i]) - mu;
      q += d * d;
    }
    double rs = 1.0 / sqrt(block_sum(q, ssum) / (double)N + eps);
    T m = (T)mu, k = (T)rs;
    if (threadIdx.x == 0) {
      mean_out[r] = m;
      rstd_out[r] = k;
    }
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
      T v = (ldc(xr[i]) - m) * k;
      if (w) v = v * w[i];
      if (b) v = v + b[i];
      yr[i] = lt_cu_st<ST>::f(v);
    }
  }
}

/* gx = rstd (g w - mean(g w) - xhat mean(g w xhat)), a block per row */
template <typename ST>
__global__ void ln_bw_rows_k(const ST *x, const ST *g, const typename ctype<ST>::T *mean,
                             const typename ctype<ST>::T *rstd, const typename ctype<ST>::T *w, int64_t M, int64_t N,
                             ST *gx) {
  typedef typename ctype<ST>::T T;
  __shared__ double ssum[THREADS];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const ST *xr = x + r * N, *gr = g + r * N;
    ST *out = gx + r * N;
    T m = mean[r], k = rstd[r];
    double s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
      T gw = w ? ldc(gr[i]) * w[i] : ldc(gr[i]);
      s1 += (double)gw;
      s2 += (double)(gw * ((ldc(xr[i]) - m) * k));
    }
    T c1 = (T)(block_sum(s1, ssum) / (double)N), c2 = (T)(block_sum(s2, ssum) / (double)N);
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
      T xh = (ldc(xr[i]) - m) * k;
      T gw = w ? ldc(gr[i]) * w[i] : ldc(gr[i]);
      out[i] = lt_cu_st<ST>::f(k * (gw - c1 - xh * c2));
    }
  }
}

/* gw, gb (double) = sums over the rows of g xhat and g, a thread per column (coalesced) */
template <typename ST>
__global__ void ln_bw_cols_k(const ST *x, const ST *g, const typename ctype<ST>::T *mean,
                             const typename ctype<ST>::T *rstd, int64_t M, int64_t N, double *gw, double *gb) {
  typedef typename ctype<ST>::T T;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < N; j += (int64_t)gridDim.x * blockDim.x) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < M; r++) {
      T gv = ldc(g[r * N + j]);
      if (gw) sw += (double)(gv * ((ldc(x[r * N + j]) - mean[r]) * rstd[r]));
      sb += (double)gv;
    }
    if (gw) gw[j] = sw;
    if (gb) gb[j] = sb;
  }
}

/* ---- batch norm over x [N, C, S] (kernels/cpu/normalization.c's bn_* loops), statistics and
   per-channel factors in double; st holds 5 C doubles: mean, var, invstd, scale, shift ---- */
template <typename ST> __global__ void bn_stats_k(const ST *x, int64_t N, int64_t C, int64_t S, double *st) {
  __shared__ double ssum[THREADS];
  int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) s += (double)lt_cu_ld(x[((i / S) * C + c) * S + i % S]);
    double mu = block_sum(s, ssum) / (double)M;
    double q = 0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      double d = (double)lt_cu_ld(x[((i / S) * C + c) * S + i % S]) - mu;
      q += d * d;
    }
    double var = block_sum(q, ssum) / (double)M;
    if (threadIdx.x == 0) {
      st[c] = mu;
      st[C + c] = var;
    }
  }
}

/* a thread per channel: the running statistics' update (rm, rv not NULL), invstd, scale, shift;
   mean / var read from mv (training: st itself; evaluation: the running statistics) */
__global__ void bn_prep_k(int64_t C, const double *mean, const double *var, double *st, double *rm, double *rv,
                          double momentum, double unbias, const double *w, const double *b, double eps) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double mu = mean[c], v = var[c];
    if (rm) rm[c] = (1 - momentum) * rm[c] + momentum * mu;
    if (rv) rv[c] = (1 - momentum) * rv[c] + momentum * v * unbias;
    double is = 1.0 / sqrt(v + eps);
    double sc = (w ? w[c] : 1.0) * is;
    st[c] = mu;
    st[C + c] = v;
    st[2 * C + c] = is;
    st[3 * C + c] = sc;
    st[4 * C + c] = (b ? b[c] : 0.0) - mu * sc;
  }
}

template <typename ST> __global__ void bn_apply_k(const ST *x, ST *y, int64_t total, int64_t C, int64_t S, const double *st) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    y[i] = lt_cu_st<ST>::f((double)lt_cu_ld(x[i]) * st[3 * C + c] + st[4 * C + c]);
  }
}

/* backward: red (2 C doubles) = per channel {sum g, sum g (x - mean)} */
template <typename ST>
__global__ void bn_bw_red_k(const ST *x, const ST *g, int64_t N, int64_t C, int64_t S, const double *mean, double *red) {
  __shared__ double ssum[THREADS];
  int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double sg = 0, dot = 0, mu = mean[c];
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t k = ((i / S) * C + c) * S + i % S;
      double gv = (double)lt_cu_ld(g[k]);
      sg += gv;
      dot += gv * ((double)lt_cu_ld(x[k]) - mu);
    }
    sg = block_sum(sg, ssum);
    dot = block_sum(dot, ssum);
    if (threadIdx.x == 0) {
      red[c] = sg;
      red[C + c] = dot;
    }
  }
}

/* gx = g k1 + (x - mean) k2 + k0 (training) or g k1 (evaluation), k1 = w invstd */
template <typename ST>
__global__ void bn_bw_gx_k(const ST *x, const ST *g, ST *gx, int64_t total, int64_t C, int64_t S, double M,
                           const double *mean, const double *invstd, const double *w, const double *red, bool training) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    double is = invstd[c], k1 = is * (w ? w[c] : 1.0), v = (double)lt_cu_ld(g[i]) * k1;
    if (training) v += ((double)lt_cu_ld(x[i]) - mean[c]) * (-red[C + c] * is * is / M * k1) - red[c] / M * k1;
    gx[i] = lt_cu_st<ST>::f(v);
  }
}

/* gw[c] = dot * invstd, gb[c] = sum g (doubles) */
__global__ void bn_bw_wb_k(int64_t C, const double *red, const double *invstd, double *gw, double *gb) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    if (gw) gw[c] = red[C + c] * invstd[c];
    if (gb) gb[c] = red[c];
  }
}

extern "C" {

int lt_cuda_k_batch_norm(int dtype, const void *x, void *y, int64_t N, int64_t C, int64_t S, bool training,
                         const double *running_mean, const double *running_var, double *rm, double *rv,
                         double momentum, const double *w, const double *b, double eps, double *st, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (C == 0) return 0;
  BY_FLOAT(dtype, {
    if (training) bn_stats_k<ST><<<blocks_for(C, 1), THREADS, 0, s>>>((const ST *)x, N, C, S, st);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    int64_t M = N * S;
    double unbias = M > 1 ? (double)M / (double)(M - 1) : 1.0;
    const double *mean = training ? st : running_mean, *var = training ? st + C : running_var;
    bn_prep_k<<<blocks_for(C, THREADS), THREADS, 0, s>>>(C, mean, var, st, rm, rv, momentum, unbias, w, b, eps);
    e = cudaGetLastError();
    if (e != cudaSuccess || N * C * S == 0) return (int)e;
    bn_apply_k<ST><<<blocks_for(N * C * S, THREADS), THREADS, 0, s>>>((const ST *)x, (ST *)y, N * C * S, C, S, st);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_batch_norm_backward(int dtype, const void *x, const void *g, void *gx, int64_t N, int64_t C, int64_t S,
                                  const double *mean, const double *invstd, const double *w, bool training,
                                  double *red, double *gw, double *gb, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (C == 0) return 0;
  BY_FLOAT(dtype, {
    bn_bw_red_k<ST><<<blocks_for(C, 1), THREADS, 0, s>>>((const ST *)x, (const ST *)g, N, C, S, mean, red);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    bn_bw_wb_k<<<blocks_for(C, THREADS), THREADS, 0, s>>>(C, red, invstd, gw, gb);
    e = cudaGetLastError();
    if (e != cudaSuccess || !gx || N * C * S == 0) return (int)e;
    bn_bw_gx_k<ST><<<blocks_for(N * C * S, THREADS), THREADS, 0, s>>>((const ST *)x, (const ST *)g, (ST *)gx, N * C * S,
                                                                      C, S, (double)(N * S), mean, invstd, w, red,
                                                                      training);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_layer_norm(int dtype, const void *x, void *y, int64_t M, int64_t N, const void *w, const void *b,
                         double eps, void *mean, void *rstd, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  BY_FLOAT(dtype, {
    typedef typename ctype<ST>::T T;
    if (M == 0) return 0;
    ln_fw_k<ST><<<blocks_for(M, 1), THREADS, 0, s>>>((const ST *)x, (ST *)y, M, N, (const T *)w, (const T *)b, eps,
                                                     (T *)mean, (T *)rstd);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_layer_norm_backward(int dtype, const void *x, const void *g, const void *mean, const void *rstd,
                                  const void *w, int64_t M, int64_t N, void *gx, double *gw, double *gb,
                                  void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  BY_FLOAT(dtype, {
    typedef typename ctype<ST>::T T;
    if (gx && M > 0 && N > 0) {
      ln_bw_rows_k<ST><<<blocks_for(M, 1), THREADS, 0, s>>>((const ST *)x, (const ST *)g, (const T *)mean,
                                                            (const T *)rstd, (const T *)w, M, N, (ST *)gx);
      cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return (int)e;
    }
    if ((gw || gb) && N > 0)
      ln_bw_cols_k<ST><<<blocks_for(N, THREADS), THREADS, 0, s>>>((const ST *)x, (const ST *)g, (const T *)mean,
                                                                  (const T *)rstd, M, N, gw, gb);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_softmax(int dtype, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool log,
                      void *stream) {
  BY_FLOAT(dtype, return softmax_t<ST>(x, y, outer, n, inner, log, (cudaStream_t)stream))
}

int lt_cuda_k_softmax_backward(int dtype, const void *g, const void *y, void *gx, int64_t outer, int64_t n,
                               int64_t inner, bool log, void *stream) {
  BY_FLOAT(dtype, return softmax_bw_t<ST>(g, y, gx, outer, n, inner, log, (cudaStream_t)stream))
}

int lt_cuda_k_nll_check(int tdtype, const void *target, int64_t count, int64_t C, bool has_ignore,
                        int64_t ignore_index, int64_t *bad, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  set_i64_k<<<1, 1, 0, s>>>(bad, INT64_MAX);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || count == 0) return (int)e;
  BY_TARGET(tdtype, {
    nll_check_k<TT><<<blocks_for(count, THREADS), THREADS, 0, s>>>((const TT *)target, count, C, has_ignore,
                                                                   ignore_index, bad);
    return (int)cudaGetLastError();
  })
}

int lt_cuda_k_nll_forward(int dtype, const void *logp, int tdtype, const void *target, const double *w, int64_t N,
                          int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, void *none_out, bool mean,
                          void *out_scalar, double *acc, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  BY_FLOAT(dtype, BY_TARGET(tdtype, {
    if (none_out) {
      if (N * S > 0)
        nll_none_k<ST, TT><<<blocks_for(N * S, THREADS), THREADS, 0, s>>>(
            (const ST *)logp, (const TT *)target, w, N, C, S, has_ignore, ignore_index, (ST *)none_out);
    } else {
      nll_reduce_k<ST, TT><<<1, THREADS, 0, s>>>((const ST *)logp, (const TT *)target, w, N, C, S, has_ignore,
                                                 ignore_index, mean, (ST *)out_scalar, acc);
    }
    return (int)cudaGetLastError();
  }))
}

int lt_cuda_k_nll_backward(int dtype, void *glogp, const void *g, bool per_elem, double scale, int tdtype,
                           const void *target, const double *w, int64_t N, int64_t C, int64_t S, bool has_ignore,
                           int64_t ignore_index, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  BY_FLOAT(dtype, BY_TARGET(tdtype, {
    int64_t bytes = N * C * S * (int64_t)sizeof(ST);
    if (bytes == 0) return 0;
    cudaError_t e = cudaMemsetAsync(glogp, 0, (size_t)bytes, s);
    if (e != cudaSuccess) return (int)e;
    if (N * S > 0)
      nll_bw_k<ST, TT><<<blocks_for(N * S, THREADS), THREADS, 0, s>>>((ST *)glogp, (const ST *)g, per_elem, scale,
                                                                      (const TT *)target, w, N, C, S, has_ignore,
                                                                      ignore_index);
    return (int)cudaGetLastError();
  }))
}

} /* extern "C" */
