/* The CUDA backend: device discovery (the runtime applies CUDA_VISIBLE_DEVICES), its registration
   in the device registry, raw device memory for the caching allocator, device queries, seeds, and
   the one checking function behind LT_CUDA_CHECK. Without CUDA=1 this file is the stubs of
   core/cuda.h: no devices, and every request refused. */
#include "core/cuda.h"
#include "core/error.h"
#include "core/random.h"
#include "core/stream.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"

#include <pthread.h>
#include <stdatomic.h>

static int ndevices;
static char unavailable_reason[256];
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Asked once: a process without a driver keeps getting the same answer, and the runtime is not
   initialised again on every query. */
static void probe(void) {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    const char *what = rc == cudaErrorInsufficientDriver ? "no CUDA driver, or one older than the runtime"
                       : rc == cudaErrorNoDevice         ? "no CUDA GPU"
                                                         : "the CUDA runtime failed to start";
    snprintf(unavailable_reason, sizeof unavailable_reason, "%s: %s (%s)", what, cudaGetErrorString(rc),
             cudaGetErrorName(rc));
    (void)cudaGetLastError(); /* not sticky: later calls must not see it */
    n = 0;
  } else if (n == 0) {
    snprintf(unavailable_reason, sizeof unavailable_reason, "no CUDA GPU is visible (CUDA_VISIBLE_DEVICES=%s)",
             getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
  }
  if (n > LT_DEVICE_MAX) n = LT_DEVICE_MAX;
  ndevices = n;
}

int lt_cuda_device_count(void) {
  pthread_once(&probe_once, probe);
  return ndevices;
}

const char *lt_cuda_unavailable_reason(void) {
  return lt_cuda_device_count() == 0 ? unavailable_reason : NULL;
}

bool lt_cuda_compiled(void) { return true; }

int lt_cuda_report(cudaError_t rc, const char *stmt, const char *file, int line, int device) {
  if (rc == cudaSuccess) return LT_OK;
  (void)cudaGetLastError(); /* clear a non-sticky error so that the next call starts clean */
  return lt_error("CUDA error on cuda:%d: %s (%s) in `%s` at %s:%d", device, cudaGetErrorString(rc),
                  cudaGetErrorName(rc), stmt, file, line);
}

int lt_cublas_report(cublasStatus_t rc, const char *stmt, const char *file, int line, int device) {
  if (rc == CUBLAS_STATUS_SUCCESS) return LT_OK;
  return lt_error("cuBLAS error on cuda:%d: %s (%s) in `%s` at %s:%d", device, cublasGetStatusString(rc),
                  cublasGetStatusName(rc), stmt, file, line);
}

/* The runtime's current device is per thread, as ours is; the last one set is cached because
   cudaSetDevice is a call into the driver. */
static _Thread_local int runtime_device = -1;

int lt_cuda_use(int index) {
  if (index < 0) index = lt_current_device(LT_CUDA);
  int n = lt_cuda_device_count();
  if (n == 0) return lt_error("cuda:%d: CUDA is not available: %s", index, unavailable_reason);
  if (index >= n)
    return lt_error("device cuda:%d does not exist: %d cuda device%s available", index, n, n == 1 ? " is" : "s are");
  if (runtime_device == index) return LT_OK;
  LT_CUDA_CHECK(index, cudaSetDevice(index));
  runtime_device = index;
  return LT_OK;
}

/* The thread's current stream of the device (torch.cuda.stream(s)); until one is made current,
   work goes on the legacy default stream (NULL), which orders everything on the device. */
cudaStream_t lt_cuda_current_stream(int index) {
  if (index < 0) index = lt_current_device(LT_CUDA);
  lt_stream_t s = {lt_device(LT_CUDA, index), lt_stream_current_id(lt_device(LT_CUDA, index))};
  return (cudaStream_t)lt_stream_handle(s);
}

/* LUTORCH_CUDA_SYNC=1: wait for each kernel, so that a fault is reported by the op that made it */
static int sync_after_launch(void) {
  static atomic_int v = -1;
  int r = atomic_load(&v);
  if (r < 0) {
    const char *s = getenv("LUTORCH_CUDA_SYNC");
    r = s && *s && strcmp(s, "0") != 0;
    atomic_store(&v, r);
  }
  return r;
}

int lt_cuda_after_launch(int index, int rc, const char *op, int dtype) {
  if (rc == -1) return lt_error("%s: no CUDA kernel for dtype %s", op, lt_dtype_name((lt_dtype)dtype));
  if (rc != 0) {
    (void)cudaGetLastError();
    return lt_error("%s: CUDA error on cuda:%d: %s (%s) in the kernel launch", op, index,
                    cudaGetErrorString((cudaError_t)rc), cudaGetErrorName((cudaError_t)rc));
  }
  if (sync_after_launch()) {
    cudaError_t s = cudaStreamSynchronize(lt_cuda_current_stream(index));
    if (s != cudaSuccess) {
      (void)cudaGetLastError();
      return lt_error("%s: CUDA error on cuda:%d after the kernel (LUTORCH_CUDA_SYNC=1): %s (%s)", op, index,
                      cudaGetErrorString(s), cudaGetErrorName(s));
    }
  }
  return LT_OK;
}

static int be_device_count(void) { return lt_cuda_device_count(); }
static const char *be_unavailable(void) { return lt_cuda_unavailable_reason(); }

static int be_raw_alloc(int index, size_t n, void **out) {
  LT_TRY(lt_cuda_use(index));
  cudaError_t rc = cudaMalloc(out, n ? n : 1);
  if (rc == cudaErrorMemoryAllocation) { /* the allocator frees its cache and retries */
    (void)cudaGetLastError();
    return LT_ERR;
  }
  LT_CUDA_CHECK(index, rc);
  return LT_OK;
}

static void be_raw_free(int index, void *p) {
  if (lt_cuda_use(index) != LT_OK) return;
  cudaError_t rc = cudaFree(p);
  if (rc != cudaSuccess) { /* nothing to return to: say so rather than lose it */
    fprintf(stderr, "lutorch: cudaFree on cuda:%d failed: %s (%s)\n", index, cudaGetErrorString(rc),
            cudaGetErrorName(rc));
    (void)cudaGetLastError();
  }
}

static int64_t be_total_memory(int index) {
  if (lt_cuda_use(index) != LT_OK) return -1;
  size_t f = 0, t = 0;
  if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return (int64_t)t;
}

static int be_synchronize(int index) {
  LT_TRY(lt_cuda_use(index));
  LT_CUDA_CHECK(index, cudaDeviceSynchronize());
  return LT_OK;
}

static const lt_backend_i cuda_backend = {
    .name = "cuda",
    .device_count = be_device_count,
    .raw_alloc = be_raw_alloc,
    .raw_free = be_raw_free,
    .alignment = 256,
    .cache_limit = 0, /* as PyTorch: keep everything until empty_cache or an out-of-memory */
    .split_segments = true, /* as PyTorch's CUDACachingAllocator */
    .synchronize = be_synchronize,
    .host_accessible = false,
    .unavailable = be_unavailable,
    .total_memory = be_total_memory,
    .stream_create = lt_cuda_stream_create,
    .stream_synchronize = lt_cuda_stream_synchronize,
    .stream_query = lt_cuda_stream_query,
    .stream_wait_event = lt_cuda_stream_wait_event,
    .event_create = lt_cuda_event_create,
    .event_destroy = lt_cuda_event_destroy,
    .event_record = lt_cuda_event_record,
    .event_synchronize = lt_cuda_event_synchronize,
    .event_query = lt_cuda_event_query,
    .event_elapsed_ms = lt_cuda_event_elapsed_ms,
};

/* Registered before main (and when torch.so is loaded); no CUDA call happens until a device is
   asked for. */
__attribute__((constructor)) static void register_cuda(void) { lt_register_backend(LT_CUDA, &cuda_backend); }

static int resolve(const char *op, int index, int *out) {
  if (index < 0) index = lt_current_device(LT_CUDA);
  if (lt_cuda_use(index) != LT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    return lt_error("%s: %s", op, msg);
  }
  *out = index;
  return LT_OK;
}

int lt_cuda_get_properties(int index, lt_cuda_props_t *out) {
  LT_TRY(resolve("cuda.get_device_properties", index, &index));
  struct cudaDeviceProp p;
  LT_CUDA_CHECK(index, cudaGetDeviceProperties(&p, index));
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->total_memory = (int64_t)p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multiProcessorCount;
  return LT_OK;
}

int lt_cuda_mem_get_info(int index, int64_t *free_bytes, int64_t *total_bytes) {
  LT_TRY(resolve("cuda.mem_get_info", index, &index));
  size_t f = 0, t = 0;
  LT_CUDA_CHECK(index, cudaMemGetInfo(&f, &t));
  *free_bytes = (int64_t)f;
  *total_bytes = (int64_t)t;
  return LT_OK;
}

int lt_cuda_synchronize(int index) {
  LT_TRY(resolve("cuda.synchronize", index, &index));
  return be_synchronize(index);
}

#else /* ---- a build without CUDA ---- */

bool lt_cuda_compiled(void) { return false; }
int lt_cuda_device_count(void) { return 0; }
const char *lt_cuda_unavailable_reason(void) {
  return "this build has no CUDA support (build with make CUDA=1)";
}
static int no_cuda(const char *op) {
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}
int lt_cuda_get_properties(int index, lt_cuda_props_t *out) {
  (void)index; (void)out;
  return no_cuda("cuda.get_device_properties");
}
int lt_cuda_mem_get_info(int index, int64_t *f, int64_t *t) {
  (void)index; (void)f; (void)t;
  return no_cuda("cuda.mem_get_info");
}
int lt_cuda_synchronize(int index) { (void)index; return no_cuda("cuda.synchronize"); }

#endif

/* ---- seeds and generators: kept per device even before a device is used, as PyTorch queues them.
   Random draws for CUDA tensors are made on the host by the device's generator (the CPU's code,
   tested in CI) and copied to the device. ---- */
static uint64_t seeds[LT_DEVICE_MAX];
static lt_generator_t *gens[LT_DEVICE_MAX];
static pthread_mutex_t gens_mu = PTHREAD_MUTEX_INITIALIZER;

int lt_cuda_manual_seed(int index, uint64_t seed, bool all) {
  if (!all) {
    if (index < 0) index = lt_current_device(LT_CUDA);
    if (index >= LT_DEVICE_MAX) return lt_error("cuda.manual_seed: device index %d is out of range", index);
  }
  pthread_mutex_lock(&gens_mu);
  for (int i = all ? 0 : index; i < (all ? LT_DEVICE_MAX : index + 1); i++) {
    seeds[i] = seed;
    if (gens[i]) lt_generator_seed(gens[i], seed);
  }
  pthread_mutex_unlock(&gens_mu);
  return LT_OK;
}

lt_generator_t *lt_cuda_generator(int index) {
  if (index < 0) index = lt_current_device(LT_CUDA);
  if (index >= LT_DEVICE_MAX) {
    lt_error("random: CUDA device index %d is out of range", index);
    return NULL;
  }
  pthread_mutex_lock(&gens_mu);
  if (!gens[index]) gens[index] = lt_generator_new(seeds[index]);
  lt_generator_t *g = gens[index];
  pthread_mutex_unlock(&gens_mu);
  return g;
}

int lt_cuda_initial_seed(int index, uint64_t *out) {
  if (index < 0) index = lt_current_device(LT_CUDA);
  if (index >= LT_DEVICE_MAX) return lt_error("cuda.initial_seed: device index %d is out of range", index);
  *out = seeds[index];
  return LT_OK;
}
