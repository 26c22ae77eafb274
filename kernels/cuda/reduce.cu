/* CUDA reductions over strided memory, expanded from the math of kernels/reduce.h (the same
   init / update / combine / result bodies the CPU loops use): each thread folds a strided slice of
   one output's reduced elements in increasing position order, the block combines its threads'
   accumulators in shared memory, and when one output has many elements several blocks each fold a
   chunk and a second kernel combines their accumulators (from a scratch buffer) in chunk order;
   many outputs whose innermost kept dimension is adjacent in memory take a thread each instead.
   Floating inputs accumulate in double, integer and bool inputs in int64, as on the CPU. */
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/cast.h"

#include <cuda_runtime.h>

enum { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I64, DT_I32, DT_I16, DT_I8, DT_U8, DT_BOOL };

/* ---- one functor per (op, domain) from the table ---- */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b) /* expands a macro argument (LT_RED_INTS...) before pasting */
#define IDX_0(name, D)
#define IDX_1(name, D) \
  __device__ static int64_t index(A a) { return lt_red_##name##_##D##_index(a); }
#define FUNCTOR(name, D, X, kind)                                                                   \
  struct red_##name##_##D {                                                                         \
    typedef lt_red_##name##_##D##_t A;                                                              \
    typedef X In;                                                                                   \
    static const bool arg = kind;                                                                   \
    __device__ static A init() { return lt_red_##name##_##D##_init(); }                             \
    __device__ static A update(A a, X x, int64_t i, lt_reduce_params_t p) {                         \
      return lt_red_##name##_##D##_update(a, x, i, p);                                              \
    }                                                                                               \
    __device__ static A combine(A a, A b) { return lt_red_##name##_##D##_combine(a, b); }          \
    __device__ static auto result(A a, lt_reduce_params_t p) { return lt_red_##name##_##D##_result(a, p); } \
    CAT(IDX_, kind)(name, D)                                                                        \
  };
#define F_FUNCTOR(name, domains, kind) FUNCTOR(name, f, double, kind)
LT_REDUCE_OPS(F_FUNCTOR)
#define I_FUNCTOR_0(name, kind)
#define I_FUNCTOR_1(name, kind) FUNCTOR(name, i, int64_t, kind)
#define I_FUNCTOR(name, domains, kind) CAT(I_FUNCTOR_, domains)(name, kind)
LT_REDUCE_OPS(I_FUNCTOR)

/* byte offset of position r of the reduced dims (row-major over red_size) */
__device__ __forceinline__ int64_t red_offset(const lt_cuda_reduce_plan_t &p, int64_t r) {
  if (p.nred == 1) return r * p.red_stride[0];
  int64_t off = 0;
  for (int d = p.nred - 1; d >= 0; d--) {
    int64_t s = p.red_size[d];
    off += (r % s) * p.red_stride[d];
    r /= s;
  }
  return off;
}

/* output o (row-major over out_size): its input byte offset and its output element offset */
__device__ __forceinline__ void out_offsets(const lt_cuda_reduce_plan_t &p, int64_t o, int64_t *in_off,
                                            int64_t *out_off) {
  int64_t io = 0, oo = 0;
  for (int d = p.nout - 1; d >= 0; d--) {
    int64_t s = p.out_size[d], k = o % s;
    io += k * p.out_in_stride[d];
    oo += k * p.out_stride[d];
    o /= s;
  }
  *in_off = io;
  *out_off = oo;
}

template <typename F> __device__ inline void write_result(const lt_cuda_reduce_plan_t &p, int64_t oo, typename F::A a) {
  if (p.out) lt_cu_store(p.out, oo, p.out_dtype, F::result(a, p.params));
  if constexpr (F::arg) {
    if (p.idx) p.idx[oo] = F::index(a);
  }
}

/* grid (chunks, outputs): block (c, o) folds chunk c of output o; with one chunk it writes the
   result, else its accumulator to scratch[o * chunks + c] */
template <typename ST, typename F>
__global__ void reduce_k(const lt_cuda_reduce_plan_t p, int64_t chunk, typename F::A *scratch) {
  typedef typename F::A A;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  A *sm = reinterpret_cast<A *>(smem_raw);
  int64_t chunks = gridDim.x;
  int64_t r0 = blockIdx.x * chunk;
  int64_t r1 = r0 + chunk < p.count ? r0 + chunk : p.count;
  for (int64_t o = blockIdx.y; o < p.numel_out; o += gridDim.y) {
    int64_t io, oo;
    out_offsets(p, o, &io, &oo);
    const char *base = p.in + io;
    A a = F::init();
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x)
      a = F::update(a, (typename F::In)lt_cu_ld(*(const ST *)(base + red_offset(p, r))), r, p.params);
    sm[threadIdx.x] = a;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) sm[threadIdx.x] = F::combine(sm[threadIdx.x], sm[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (chunks == 1) write_result<F>(p, oo, sm[0]);
      else scratch[o * chunks + blockIdx.x] = sm[0];
    }
    __syncthreads(); /* sm is reused by the next output */
  }
}

/* one thread per output folding all its elements: for reductions over outer dims (a bias
   gradient's sum over the batch), where neighbouring outputs are neighbouring inputs, so that a
   warp's loads of one step are coalesced */
template <typename ST, typename F> __global__ void reduce_thread_k(const lt_cuda_reduce_plan_t p) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < p.numel_out;
       o += (int64_t)gridDim.x * blockDim.x) {
    int64_t io, oo;
    out_offsets(p, o, &io, &oo);
    const char *base = p.in + io;
    typename F::A a = F::init();
    for (int64_t r = 0; r < p.count; r++)
      a = F::update(a, (typename F::In)lt_cu_ld(*(const ST *)(base + red_offset(p, r))), r, p.params);
    write_result<F>(p, oo, a);
  }
}

/* A scan, one thread per chunk of a line (line o, chunk c: thread t = o * chunks + c), as the
   CPU's scans run (update, then result, element after element, along the one reduced dim). Lines
   that fill the GPU are one chunk each (chunks = 1, no scratch): the thread writes every running
   result. Few long lines run in three passes: FOLD folds each chunk into scratch[t], scan_prefix_k
   turns each line's chunk accumulators into those of everything before each chunk (combined in
   order), and the rescan (not FOLD) runs each chunk again from its prefix, writing every result. */
template <typename ST, typename F, bool FOLD>
__global__ void scan_k(const lt_cuda_reduce_plan_t p, int64_t chunks, int64_t chunk, typename F::A *scratch) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < p.numel_out * chunks;
       t += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = t / chunks, c = t % chunks, io, oo;
    out_offsets(p, o, &io, &oo);
    const char *base = p.in + io;
    int64_t r1 = (c + 1) * chunk < p.count ? (c + 1) * chunk : p.count;
    typename F::A a = FOLD || !scratch ? F::init() : scratch[t];
    for (int64_t r = c * chunk; r < r1; r++) {
      a = F::update(a, (typename F::In)lt_cu_ld(*(const ST *)(base + r * p.red_stride[0])), r, p.params);
      if (!FOLD) write_result<F>(p, oo + r * p.scan_out_stride, a);
    }
    if (FOLD) scratch[t] = a;
  }
}

template <typename F> __global__ void scan_prefix_k(const lt_cuda_reduce_plan_t p, int64_t chunks, typename F::A *scratch) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < p.numel_out;
       o += (int64_t)gridDim.x * blockDim.x) {
    typename F::A run = F::init();
    for (int64_t c = 0; c < chunks; c++) {
      typename F::A part = scratch[o * chunks + c];
      scratch[o * chunks + c] = run;
      run = F::combine(run, part);
    }
  }
}

/* one thread per output: the chunks' accumulators in order */
template <typename F>
__global__ void combine_k(const lt_cuda_reduce_plan_t p, int64_t chunks, const typename F::A *scratch) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < p.numel_out;
       o += (int64_t)gridDim.x * blockDim.x) {
    typename F::A a = scratch[o * chunks];
    for (int64_t c = 1; c < chunks; c++) a = F::combine(a, scratch[o * chunks + c]);
    int64_t io, oo;
    out_offsets(p, o, &io, &oo);
    write_result<F>(p, oo, a);
  }
}

/* ---- the launch geometry, shared by the scratch query and the launch ---- */
typedef struct { unsigned threads; int64_t chunks, chunk; unsigned grid_y; bool per_thread; } geom_t;

static geom_t geometry(const lt_cuda_reduce_plan_t *p, int sm_count, int64_t in_elsize) {
  geom_t g;
  /* the innermost kept dim adjacent in memory and enough outputs to fill the GPU: a thread each */
  g.per_thread = p->nout > 0 && p->out_in_stride[p->nout - 1] == in_elsize &&
                 p->numel_out >= (int64_t)(sm_count > 0 ? sm_count : 80) * 128;
  unsigned t = 32;
  while (t < 256 && (int64_t)t < p->count) t *= 2;
  g.threads = t;
  int64_t target = (int64_t)(sm_count > 0 ? sm_count : 80) * 4; /* blocks to keep the GPU busy */
  g.chunks = 1;
  /* few outputs of many elements: split each output's elements over several blocks, at least
     4096 elements a block */
  if (p->numel_out < target && p->count > 8192) {
    int64_t want = (target + p->numel_out - 1) / p->numel_out;
    int64_t most = (p->count + 4095) / 4096;
    g.chunks = want < most ? want : most;
    if (g.chunks > 1024) g.chunks = 1024;
    if (g.chunks < 1) g.chunks = 1;
  }
  g.chunk = (p->count + g.chunks - 1) / g.chunks;
  if (g.chunk < 1) g.chunk = 1;
  g.grid_y = (unsigned)(p->numel_out < 65535 ? p->numel_out : 65535);
  if (p->scan) { /* fewer lines than threads to fill the GPU, and long: each line in chunks of at least 1024 */
    int64_t threads = (int64_t)(sm_count > 0 ? sm_count : 80) * 256;
    g.chunks = 1;
    if (p->numel_out < threads && p->count > 2048) {
      int64_t want = threads / p->numel_out, most = (p->count + 1023) / 1024;
      g.chunks = want < most ? want : most;
      if (g.chunks < 1) g.chunks = 1;
    }
    g.chunk = (p->count + g.chunks - 1) / g.chunks;
    if (g.chunk < 1) g.chunk = 1;
  }
  return g;
}

template <typename ST, typename F> static int launch(const lt_cuda_reduce_plan_t *p, void *scratch, geom_t g,
                                                     cudaStream_t s, int64_t *bytes) {
  typedef typename F::A A;
  if (bytes) { /* the scratch query */
    *bytes = g.chunks > 1 && (p->scan || !g.per_thread) ? (int64_t)sizeof(A) * g.chunks * p->numel_out : 0;
    return 0;
  }
  if (p->numel_out == 0) return 0;
  if (p->scan) {
    if (p->nred != 1) return (int)cudaErrorInvalidValue;
    if (g.chunks == 1) {
      int64_t blocks = (p->numel_out + 127) / 128;
      scan_k<ST, F, false><<<(unsigned)(blocks < 65535 ? blocks : 65535), 128, 0, s>>>(*p, 1, p->count, (A *)NULL);
      return (int)cudaGetLastError();
    }
    if (!scratch) return (int)cudaErrorInvalidValue;
    int64_t parts = p->numel_out * g.chunks, blocks = (parts + 127) / 128, lines = (p->numel_out + 127) / 128;
    unsigned grid = (unsigned)(blocks < 65535 ? blocks : 65535), lgrid = (unsigned)(lines < 65535 ? lines : 65535);
    scan_k<ST, F, true><<<grid, 128, 0, s>>>(*p, g.chunks, g.chunk, (A *)scratch);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    scan_prefix_k<F><<<lgrid, 128, 0, s>>>(*p, g.chunks, (A *)scratch);
    if ((e = cudaGetLastError()) != cudaSuccess) return (int)e;
    scan_k<ST, F, false><<<grid, 128, 0, s>>>(*p, g.chunks, g.chunk, (A *)scratch);
    return (int)cudaGetLastError();
  }
  if (g.per_thread) {
    int64_t blocks = (p->numel_out + 255) / 256;
    reduce_thread_k<ST, F><<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, s>>>(*p);
    return (int)cudaGetLastError();
  }
  if (g.chunks > 1 && !scratch) return (int)cudaErrorInvalidValue;
  reduce_k<ST, F><<<dim3((unsigned)g.chunks, g.grid_y), g.threads, g.threads * sizeof(A), s>>>(*p, g.chunk, (A *)scratch);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || g.chunks == 1) return (int)e;
  int64_t blocks = (p->numel_out + 255) / 256;
  combine_k<F><<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, s>>>(*p, g.chunks, (const A *)scratch);
  return (int)cudaGetLastError();
}

/* dispatch: the op, then the input dtype (floating types to the _f functors, integers and bool
   to the _i ones where the op has them) */
#define F_TYPES(name)                                                                  \
  case DT_F32: return launch<float, red_##name##_f>(p, scratch, g, s, bytes);          \
  case DT_F64: return launch<double, red_##name##_f>(p, scratch, g, s, bytes);         \
  case DT_F16: return launch<lt_half, red_##name##_f>(p, scratch, g, s, bytes);        \
  case DT_BF16: return launch<lt_bfloat16, red_##name##_f>(p, scratch, g, s, bytes);
#define I_TYPES_0(name)
#define I_TYPES_1(name)                                                                \
  case DT_I64: return launch<int64_t, red_##name##_i>(p, scratch, g, s, bytes);        \
  case DT_I32: return launch<int32_t, red_##name##_i>(p, scratch, g, s, bytes);        \
  case DT_I16: return launch<int16_t, red_##name##_i>(p, scratch, g, s, bytes);        \
  case DT_I8: return launch<int8_t, red_##name##_i>(p, scratch, g, s, bytes);          \
  case DT_U8: return launch<uint8_t, red_##name##_i>(p, scratch, g, s, bytes);         \
  case DT_BOOL: return launch<bool, red_##name##_i>(p, scratch, g, s, bytes);

static const int64_t elsize[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};

static int dispatch(const lt_cuda_reduce_plan_t *p, void *scratch, int sm_count, cudaStream_t s, int64_t *bytes) {
  if (p->in_dtype < 0 || p->in_dtype > DT_BOOL) return -1;
  geom_t g = geometry(p, sm_count, elsize[p->in_dtype]);
  switch (p->op) {
#define LT_X(name, domains, kind)      \
  case LT_REDUCE_##name:               \
    switch (p->in_dtype) {             \
      F_TYPES(name)                    \
      CAT(I_TYPES_, domains)(name)     \
      default: return -1;              \
    }
    LT_REDUCE_OPS(LT_X)
#undef LT_X
    default: return -1;
  }
}

extern "C" int64_t lt_cuda_k_reduce_scratch(const lt_cuda_reduce_plan_t *plan, int sm_count) {
  int64_t bytes = 0;
  return dispatch(plan, NULL, sm_count, NULL, &bytes) == 0 ? bytes : 0;
}

extern "C" int lt_cuda_k_reduce(const lt_cuda_reduce_plan_t *plan, void *scratch, int sm_count, void *stream) {
  return dispatch(plan, scratch, sm_count, (cudaStream_t)stream, NULL);
}
