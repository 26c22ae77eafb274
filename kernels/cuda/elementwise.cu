/* The CUDA elementwise kernels: grid-stride loops over a contiguous output, reading inputs that are
   contiguous, or strided or broadcast through a geometry (one pass, no copy first), whose per-element math
   is the X-macro op table of kernels/elementwise.h, the same bodies the CPU loops expand, so what
   CI tests on the CPU is what runs here. Every dtype of the CPU loops, computing as they do:
   float16/bfloat16 load to float32 and store back with the shared round-to-nearest-even
   conversions of kernels/half.h, float64 computes in double, the integer types and bool in int64
   with the tables' integer bodies (ops without one never see an integer dtype: the core converts
   their inputs to float32 first, as on the CPU; the bitwise ops, integer-only, have no floating
   kernels). */
#include "kernels/cuda/elementwise.h"
#include "kernels/elementwise.h"

#include <cuda_runtime.h>
#include <string.h>

/* lt_dtype numbering (core/dtype.h; checked by core/cuda_elementwise.c) */
enum { DT_F32 = 0, DT_F64, DT_F16, DT_BF16, DT_I64, DT_I32, DT_I16, DT_I8, DT_U8, DT_BOOL };

/* ---- loads and stores of the storage types ----
   Each storage type computes in the CPU loops' compute type (kernels/cpu/elementwise.c): float for
   float32, float16 and bfloat16; double for float64; int64 for the integer types and bool. */
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ double ld(double v) { return v; }
__device__ __forceinline__ float ld(lt_half v) { return lt_half_to_float(v); }
__device__ __forceinline__ float ld(lt_bfloat16 v) { return lt_bf16_to_float(v); }
__device__ __forceinline__ int64_t ld(int64_t v) { return v; }
__device__ __forceinline__ int64_t ld(int32_t v) { return v; }
__device__ __forceinline__ int64_t ld(int16_t v) { return v; }
__device__ __forceinline__ int64_t ld(int8_t v) { return v; }
__device__ __forceinline__ int64_t ld(uint8_t v) { return v; }
__device__ __forceinline__ int64_t ld(bool v) { return v; }
template <typename ST> struct store {
  template <typename CT> __device__ __forceinline__ static ST f(CT v) { return (ST)v; }
};
template <> struct store<lt_half> {
  __device__ __forceinline__ static lt_half f(float v) { return lt_float_to_half(v); }
};
template <> struct store<lt_bfloat16> {
  __device__ __forceinline__ static lt_bfloat16 f(float v) { return lt_float_to_bf16(v); }
};
template <> struct store<bool> {
  template <typename CT> __device__ __forceinline__ static bool f(CT v) { return v != 0; }
};
template <typename ST> struct is_floating { static const bool value = false; };
template <> struct is_floating<float> { static const bool value = true; };
template <> struct is_floating<double> { static const bool value = true; };
template <> struct is_floating<lt_half> { static const bool value = true; };
template <> struct is_floating<lt_bfloat16> { static const bool value = true; };

/* a scalar operand's storage bytes as its storage type */
template <typename ST> __host__ __device__ ST from_bits(uint64_t bits) {
  ST v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* ---- per-element functors from the op tables: one overload per compute type ---- */
#define LT_X(name, kind, fbody, ibody)                                                       \
  struct un_##name {                                                                         \
    __device__ static float f(float v) { typedef float T; return (T)(fbody); }               \
    __device__ static double f(double v) { typedef double T; return (T)(fbody); }            \
    __device__ static int64_t f(int64_t v) { (void)v; return (int64_t)(ibody); }             \
  };
LT_UNARY_OPS(LT_X)
#undef LT_X

#define LT_X(name, kind, fbody, ibody)                                                       \
  struct bin_##name {                                                                        \
    __device__ static float f(float a, float b, float alpha, int64_t ialpha) {               \
      typedef float T; (void)alpha; (void)ialpha; return (T)(fbody);                         \
    }                                                                                        \
    __device__ static double f(double a, double b, double alpha, int64_t ialpha) {           \
      typedef double T; (void)alpha; (void)ialpha; return (T)(fbody);                        \
    }                                                                                        \
    __device__ static int64_t f(int64_t a, int64_t b, double alpha, int64_t ialpha) {        \
      (void)a; (void)b; (void)alpha; (void)ialpha; return (int64_t)(ibody);                  \
    }                                                                                        \
  };
LT_BINARY_OPS(LT_X)
#undef LT_X

#define LT_X(name, body)                                                   \
  struct cmp_##name {                                                      \
    __device__ static bool f(float a, float b) { return body; }            \
    __device__ static bool f(double a, double b) { return body; }          \
    __device__ static bool f(int64_t a, int64_t b) { return body; }        \
  };
LT_COMPARE_OPS(LT_X)
#undef LT_X

#define LT_X(name, ux, uy, body)                                                     \
  struct ungrad_##name {                                                             \
    __device__ static float f(float g, float x, float y) {                           \
      typedef float T; (void)g; (void)x; (void)y; return (T)(body);                  \
    }                                                                                \
    __device__ static double f(double g, double x, double y) {                       \
      typedef double T; (void)g; (void)x; (void)y; return (T)(body);                 \
    }                                                                                \
  };
LT_UNARY_GRADS(LT_X)
#undef LT_X

/* every op of each table has a functor: the tables' counts against the enums */
#define LT_X(...) +1
static_assert(0 LT_UNARY_OPS(LT_X) == LT_NUNARY, "unary op table");
static_assert(0 LT_UNARY_GRADS(LT_X) == LT_NUNARY, "unary grad table");
static_assert(0 LT_BINARY_OPS(LT_X) == LT_NBINARY, "binary op table");
static_assert(0 LT_COMPARE_OPS(LT_X) == LT_NCOMPARE, "compare op table");
#undef LT_X

/* ---- where the inputs' elements are ----
   Flat: every input contiguous over the output, element i at i (the kernels as they were).
   Strided: per input, a geometry of kernels/cuda/ew_geo.h (n < 2^31, so 32-bit coordinates). */
struct Flat {
  __device__ __forceinline__ int64_t at(int, int64_t i) const { return i; }
};
/* the geometries of up to three inputs, by value in the kernel's parameters */
struct Strided {
  struct {
    int nd;
    lt_ew_dim_t d[LT_CUDA_EW_MAXDIM];
  } g[3];
  __device__ __forceinline__ int64_t at(int k, int64_t i) const {
    return g[k].nd == 0 ? i : lt_ew_offset(g[k].d, g[k].nd, (uint32_t)i);
  }
};
static Strided strided_of(const lt_cuda_ew_geo_t *geo, int nin) {
  Strided s;
  memset(&s, 0, sizeof s);
  for (int k = 0; k < nin; k++) {
    s.g[k].nd = geo[k].nd;
    for (int d = 0; d < geo[k].nd; d++) s.g[k].d[d] = lt_ew_dim_make(geo[k].sizes[d], geo[k].strides[d]);
  }
  return s;
}

/* ---- grid-stride kernels ---- */
#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename ST, typename F, typename G> __global__ void unary_k(ST *o, const ST *x, G g, int64_t n) {
  GRID_STRIDE(i, n) o[i] = store<ST>::f(F::f(ld(x[g.at(0, i)])));
}

/* alpha in the compute type for floating types (as the CPU loops), ialpha for the integer ones */
template <typename ST, typename F, typename G>
__global__ void binary_k(ST *o, const ST *a, const ST *b, ST sa, ST sb, double alpha, int64_t ialpha, G g, int64_t n) {
  typedef decltype(ld(sa)) CT;
  CT al = (CT)alpha;
  GRID_STRIDE(i, n) o[i] = store<ST>::f(F::f(ld(a ? a[g.at(0, i)] : sa), ld(b ? b[g.at(1, i)] : sb), al, ialpha));
}

template <typename ST, typename F, typename G>
__global__ void compare_k(bool *o, const ST *a, const ST *b, ST sa, ST sb, G g, int64_t n) {
  GRID_STRIDE(i, n) o[i] = F::f(ld(a ? a[g.at(0, i)] : sa), ld(b ? b[g.at(1, i)] : sb));
}

template <typename ST, typename F, typename G>
__global__ void unary_grad_k(ST *o, const ST *gr, const ST *x, const ST *y, G g, int64_t n) {
  GRID_STRIDE(i, n) o[i] = store<ST>::f(F::f(ld(gr[g.at(0, i)]), ld(x[g.at(1, i)]), ld(y[g.at(2, i)])));
}

template <typename U, typename G>
__global__ void where_k(U *o, const bool *c, const U *a, const U *b, U sa, U sb, G g, int64_t n) {
  GRID_STRIDE(i, n) o[i] = c[g.at(0, i)] ? (a ? a[g.at(1, i)] : sa) : (b ? b[g.at(2, i)] : sb);
}

template <typename U> __global__ void fill_k(U *o, U v, int64_t n) { GRID_STRIDE(i, n) o[i] = v; }

/* enough blocks to fill the GPU several times over; the grid-stride loop covers the rest */
static dim3 grid_for(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return dim3((unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535));
}
#define LAUNCH(kernel, n, ...)                                                                  \
  do {                                                                                          \
    if ((n) > 0) kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(__VA_ARGS__, (n));      \
    return (int)cudaGetLastError();                                                             \
  } while (0)

/* ---- dispatch on dtype, then op (G: Flat or Strided) ---- */
template <typename ST, typename G> static int unary_t(void *stream, int op, void *out, const void *x, G g, int64_t n) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody) \
  case LT_UNARY_##name:                                                                     \
    if constexpr (is_floating<ST>::value ? kind != LT_BITS : kind != LT_FLOATS)                \
      LAUNCH((unary_k<ST, un_##name, G>), n, (ST *)out, (const ST *)x, g);                     \
    else return -1;
    LT_UNARY_OPS(LT_X)
#undef LT_X
    default: return -1;
  }
}

template <typename ST, typename G>
static int binary_t(void *stream, int op, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb, double alpha,
                    int64_t ialpha, G g, int64_t n) {
  switch (op) {
#define LT_X(name, kind, fbody, ibody)                                                                    \
  case LT_BINARY_##name:                                                                                  \
    if constexpr (is_floating<ST>::value ? LT_KIND_HAS_FLOAT(kind) : LT_KIND_HAS_INT(kind))               \
      LAUNCH((binary_k<ST, bin_##name, G>), n, (ST *)out, (const ST *)a, (const ST *)b, from_bits<ST>(sa), \
             from_bits<ST>(sb), alpha, ialpha, g);                                                        \
    else return -1;
    LT_BINARY_OPS(LT_X)
#undef LT_X
    default: return -1;
  }
}

template <typename ST, typename G>
static int compare_t(void *stream, int op, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb, G g,
                     int64_t n) {
  switch (op) {
#define LT_X(name, body)                                                                                    \
  case LT_COMPARE_##name:                                                                                   \
    LAUNCH((compare_k<ST, cmp_##name, G>), n, (bool *)out, (const ST *)a, (const ST *)b, from_bits<ST>(sa), \
           from_bits<ST>(sb), g);
    LT_COMPARE_OPS(LT_X)
#undef LT_X
    default: return -1;
  }
}

template <typename ST, typename G>
static int unary_grad_t(void *stream, int op, void *out, const void *gr, const void *x, const void *y, G g, int64_t n) {
  if constexpr (!is_floating<ST>::value) return -1; /* gradients are floating */
  else switch (op) {
#define LT_X(name, ux, uy, body)                                                                              \
  case LT_UNARY_##name:                                                                                       \
    LAUNCH((unary_grad_k<ST, ungrad_##name, G>), n, (ST *)out, (const ST *)gr, (const ST *)x, (const ST *)y, g);
    LT_UNARY_GRADS(LT_X)
#undef LT_X
    default: return -1;
  }
}

template <typename U, typename G>
static int where_t(void *stream, void *out, const void *cond, const void *a, const void *b, uint64_t sa, uint64_t sb, G g,
                   int64_t n) {
  LAUNCH((where_k<U, G>), n, (U *)out, (const bool *)cond, (const U *)a, (const U *)b, from_bits<U>(sa), from_bits<U>(sb), g);
}

/* the launch with geometry G: Flat when geo is NULL, else Strided from geo's nin entries */
#define WITH_GEO(geo, nin, fn, ...) \
  ((geo) ? fn(__VA_ARGS__, strided_of((geo), (nin)), n) : fn(__VA_ARGS__, Flat(), n))

#define BY_DTYPE(dtype, call)                       \
  switch (dtype) {                                  \
    case DT_F32: { typedef float ST; call; }        \
    case DT_F64: { typedef double ST; call; }       \
    case DT_F16: { typedef lt_half ST; call; }      \
    case DT_BF16: { typedef lt_bfloat16 ST; call; } \
    case DT_I64: { typedef int64_t ST; call; }      \
    case DT_I32: { typedef int32_t ST; call; }      \
    case DT_I16: { typedef int16_t ST; call; }      \
    case DT_I8: { typedef int8_t ST; call; }        \
    case DT_U8: { typedef uint8_t ST; call; }       \
    case DT_BOOL: { typedef bool ST; call; }        \
    default: return -1;                             \
  }

extern "C" {

int lt_cuda_k_unary(void *stream, int op, int dtype, void *out, const void *x, const lt_cuda_ew_geo_t *geo, int64_t n) {
  BY_DTYPE(dtype, return WITH_GEO(geo, 1, unary_t<ST>, stream, op, out, x))
}

int lt_cuda_k_binary(void *stream, int op, int dtype, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb,
                     double alpha, int64_t ialpha, const lt_cuda_ew_geo_t *geo, int64_t n) {
  BY_DTYPE(dtype, return WITH_GEO(geo, 2, binary_t<ST>, stream, op, out, a, b, sa, sb, alpha, ialpha))
}

int lt_cuda_k_compare(void *stream, int op, int dtype, void *out, const void *a, const void *b, uint64_t sa, uint64_t sb,
                      const lt_cuda_ew_geo_t *geo, int64_t n) {
  BY_DTYPE(dtype, return WITH_GEO(geo, 2, compare_t<ST>, stream, op, out, a, b, sa, sb))
}

int lt_cuda_k_unary_grad(void *stream, int op, int dtype, void *out, const void *g, const void *x, const void *y,
                         const lt_cuda_ew_geo_t *geo, int64_t n) {
  BY_DTYPE(dtype, return WITH_GEO(geo, 3, unary_grad_t<ST>, stream, op, out, g, x, y))
}

int lt_cuda_k_where(void *stream, int size, void *out, const void *cond, const void *a, const void *b, uint64_t sa,
                    uint64_t sb, const lt_cuda_ew_geo_t *geo, int64_t n) {
  switch (size) {
    case 1: return WITH_GEO(geo, 3, where_t<uint8_t>, stream, out, cond, a, b, sa, sb);
    case 2: return WITH_GEO(geo, 3, where_t<uint16_t>, stream, out, cond, a, b, sa, sb);
    case 4: return WITH_GEO(geo, 3, where_t<uint32_t>, stream, out, cond, a, b, sa, sb);
    case 8: return WITH_GEO(geo, 3, where_t<uint64_t>, stream, out, cond, a, b, sa, sb);
    default: return -1;
  }
}

int lt_cuda_k_fill(void *stream, int size, void *out, uint64_t value, int64_t n) {
  switch (size) {
    case 1: LAUNCH(fill_k<uint8_t>, n, (uint8_t *)out, from_bits<uint8_t>(value));
    case 2: LAUNCH(fill_k<uint16_t>, n, (uint16_t *)out, from_bits<uint16_t>(value));
    case 4: LAUNCH(fill_k<uint32_t>, n, (uint32_t *)out, from_bits<uint32_t>(value));
    case 8: LAUNCH(fill_k<uint64_t>, n, (uint64_t *)out, value);
    default: return -1;
  }
}

} /* extern "C" */
