/* The NCCL implementation of the comm interface (core/comm.h), for CUDA tensors: compiled into the
   distributed plugin (core/comm_plugin.h) of the CUDA build when the toolkit ships nccl.h (LT_WITH_NCCL) and Open MPI is present (LT_WITH_MPI: the
   ranks, and rank 0's unique id broadcast to the others, come from the MPI job); a stub otherwise.

   Each collective makes the group's device current for the calling thread (DDP's reducer calls from
   its own thread), is enqueued on the device's current stream and then polled (stream done, or
   ncclCommGetAsyncError) against the group's deadline; on a timeout or an asynchronous error the
   communicator is aborted (ncclCommAbort) and the error names the collective. all_reduce and
   broadcast also take CPU tensors, staged through the device: the reducer's own bookkeeping (used
   flags, bucket order) is on the CPU; users' CPU tensors are refused by the bindings, as PyTorch's
   NCCL backend refuses them. */
#include "core/comm.h"

#if !defined(LT_WITH_NCCL) || !defined(LT_WITH_MPI)

bool lt_comm_nccl_available(void) { return false; }

lt_comm_t *lt_comm_nccl_new(double timeout_s, int device) {
  (void)timeout_s;
  (void)device;
  lt_error("Distributed package doesn't have NCCL built in");
  return NULL;
}

#else

#include "core/cuda_check.h"
#include "core/elementwise.h"
#include "core/stream.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  lt_comm_t base;
  ncclComm_t comm;
  int rank, size, device;
  bool broken;
  lt_tensor_t *one; /* the barrier's element */
} nccl_comm_t;

bool lt_comm_nccl_available(void) { return true; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int nccl_fail(nccl_comm_t *c, const char *op, ncclResult_t r) {
  return lt_error("%s: NCCL failed on rank %d: %s", op, c->rank, ncclGetErrorString(r));
}

static int current_stream(nccl_comm_t *c, const char *op, cudaStream_t *out) {
  lt_stream_t s;
  if (lt_stream_current(lt_device(LT_CUDA, c->device), &s) != LT_OK) return lt_error("%s: %s", op, lt_last_error());
  *out = (cudaStream_t)lt_stream_handle(s);
  return LT_OK;
}

/* waits for the stream's work against the deadline, watching NCCL's asynchronous errors */
static int wait_stream(nccl_comm_t *c, cudaStream_t st, const char *op) {
  double deadline = now_s() + c->base.timeout;
  for (;;) {
    cudaError_t q = cudaStreamQuery(st);
    if (q == cudaSuccess) return LT_OK;
    if (q != cudaErrorNotReady) return lt_error("%s: CUDA failed on rank %d: %s", op, c->rank, cudaGetErrorString(q));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(c->comm, &async);
    if (async != ncclSuccess || now_s() > deadline) {
      ncclCommAbort(c->comm);
      c->broken = true;
      if (async != ncclSuccess) return nccl_fail(c, op, async);
      return lt_error("%s: timed out after %g s on rank %d waiting for the other ranks (a rank died, hangs, or "
                      "did not call %s); the process group is unusable now", op, c->base.timeout, c->rank, op);
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

static int nccl_type(const char *op, lt_dtype dt, ncclDataType_t *out) {
  switch (dt) {
  case LT_FLOAT32: *out = ncclFloat32; return LT_OK;
  case LT_FLOAT64: *out = ncclFloat64; return LT_OK;
  case LT_FLOAT16: *out = ncclFloat16; return LT_OK;
  case LT_BFLOAT16: *out = ncclBfloat16; return LT_OK;
  case LT_INT64: *out = ncclInt64; return LT_OK;
  case LT_INT32: *out = ncclInt32; return LT_OK;
  case LT_INT8: *out = ncclInt8; return LT_OK;
  case LT_UINT8: case LT_BOOL: *out = ncclUint8; return LT_OK;
  default: return lt_error("%s: NCCL does not support tensors of dtype %s", op, lt_dtype_name(dt));
  }
}

static ncclRedOp_t nccl_op(lt_reduce_op op, lt_dtype dt) {
  if (dt == LT_BOOL) return op == LT_REDUCE_PRODUCT || op == LT_REDUCE_MIN ? ncclMin : ncclMax;
  switch (op) {
  case LT_REDUCE_AVG: return ncclAvg;
  case LT_REDUCE_PRODUCT: return ncclProd;
  case LT_REDUCE_MIN: return ncclMin;
  case LT_REDUCE_MAX: return ncclMax;
  default: return ncclSum;
  }
}

/* the group usable, t on its device (or on the CPU where cpu_ok), the device current */
static int check(nccl_comm_t *c, const char *op, const lt_tensor_t *t, bool cpu_ok) {
  if (c->broken) return lt_error("%s: the process group is broken by an earlier error", op);
  bool here = t->device.type == LT_CUDA && t->device.index == c->device;
  if (!here && !(cpu_ok && t->device.type == LT_CPU))
    return lt_error("%s: the NCCL backend needs tensors on cuda:%d, got one on %s", op, c->device,
                    t->device.type == LT_CUDA ? "another CUDA device" : "the CPU");
  if (lt_cuda_use(c->device) != LT_OK) return lt_error("%s: %s", op, lt_last_error());
  return LT_OK;
}

/* a contiguous tensor on the group's device holding t's values: t itself when it is one */
static lt_tensor_t *work_of(nccl_comm_t *c, lt_tensor_t *t) {
  if (t->device.type == LT_CUDA) return lt_contiguous(t);
  lt_tensor_t *w = lt_empty(t->ndim, t->sizes, t->dtype, lt_device(LT_CUDA, c->device));
  if (w && lt_copy_(w, t) != LT_OK) {
    lt_release(w);
    return NULL;
  }
  return w;
}

static int finish(lt_tensor_t *t, lt_tensor_t *work, int rc) {
  if (work != t && rc == LT_OK) rc = lt_copy_(t, work);
  lt_release(work);
  return rc;
}

static int n_all_reduce(lt_comm_t *cc, lt_tensor_t *t, lt_reduce_op op) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  ncclDataType_t ty;
  cudaStream_t st = NULL;
  LT_TRY(check(c, "all_reduce", t, true));
  LT_TRY(nccl_type("all_reduce", t->dtype, &ty));
  LT_TRY(current_stream(c, "all_reduce", &st));
  lt_tensor_t *work = work_of(c, t);
  if (!work) return LT_ERR;
  ncclResult_t r = ncclAllReduce(lt_data(work), lt_data(work), (size_t)work->numel, ty, nccl_op(op, t->dtype), c->comm, st);
  int rc = r != ncclSuccess ? nccl_fail(c, "all_reduce", r) : wait_stream(c, st, "all_reduce");
  return finish(t, work, rc);
}

static int n_broadcast(lt_comm_t *cc, lt_tensor_t *t, int src) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  cudaStream_t st = NULL;
  LT_TRY(check(c, "broadcast", t, true));
  LT_TRY(current_stream(c, "broadcast", &st));
  lt_tensor_t *work = work_of(c, t);
  if (!work) return LT_ERR;
  ncclResult_t r = ncclBroadcast(lt_data(work), lt_data(work), (size_t)work->numel * lt_elsize(work), ncclUint8, src,
                                 c->comm, st);
  int rc = r != ncclSuccess ? nccl_fail(c, "broadcast", r) : wait_stream(c, st, "broadcast");
  return finish(t, work, rc);
}

static int n_all_gather(lt_comm_t *cc, lt_tensor_t *const *outs, lt_tensor_t *in) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  cudaStream_t st = NULL;
  LT_TRY(check(c, "all_gather", in, false));
  LT_TRY(current_stream(c, "all_gather", &st));
  lt_tensor_t *src = lt_contiguous(in);
  int64_t sizes[1] = {in->numel * (int64_t)c->size};
  lt_tensor_t *all = src ? lt_empty(1, sizes, in->dtype, in->device) : NULL;
  int rc = all ? LT_OK : LT_ERR;
  if (rc == LT_OK) {
    ncclResult_t r = ncclAllGather(lt_data(src), lt_data(all), (size_t)in->numel * lt_elsize(in), ncclUint8, c->comm, st);
    rc = r != ncclSuccess ? nccl_fail(c, "all_gather", r) : wait_stream(c, st, "all_gather");
  }
  for (int k = 0; k < c->size && rc == LT_OK; k++) {
    int64_t strides[LT_MAX_DIM];
    lt_contiguous_strides(in->ndim, in->sizes, strides);
    lt_tensor_t *part = lt_view_geometry(all, in->ndim, in->sizes, strides, in->numel * k);
    rc = part ? lt_copy_(outs[k], part) : LT_ERR;
    lt_release(part);
  }
  lt_release(all);
  lt_release(src);
  return rc;
}

static int n_reduce_scatter(lt_comm_t *cc, lt_tensor_t *out, lt_tensor_t *const *ins, lt_reduce_op op) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  ncclDataType_t ty;
  cudaStream_t st = NULL;
  LT_TRY(check(c, "reduce_scatter", out, false));
  LT_TRY(nccl_type("reduce_scatter", out->dtype, &ty));
  LT_TRY(current_stream(c, "reduce_scatter", &st));
  int64_t sizes[1] = {out->numel * (int64_t)c->size};
  lt_tensor_t *send = lt_empty(1, sizes, out->dtype, out->device);
  lt_tensor_t *recv = lt_empty(out->ndim, out->sizes, out->dtype, out->device);
  int rc = send && recv ? LT_OK : LT_ERR;
  for (int k = 0; k < c->size && rc == LT_OK; k++) {
    int64_t strides[LT_MAX_DIM];
    lt_contiguous_strides(out->ndim, out->sizes, strides);
    lt_tensor_t *part = lt_view_geometry(send, out->ndim, out->sizes, strides, out->numel * k);
    rc = part ? lt_copy_(part, ins[k]) : LT_ERR;
    lt_release(part);
  }
  if (rc == LT_OK) {
    ncclResult_t r = ncclReduceScatter(lt_data(send), lt_data(recv), (size_t)out->numel, ty, nccl_op(op, out->dtype),
                                       c->comm, st);
    rc = r != ncclSuccess ? nccl_fail(c, "reduce_scatter", r) : wait_stream(c, st, "reduce_scatter");
  }
  if (rc == LT_OK) rc = lt_copy_(out, recv);
  lt_release(send);
  lt_release(recv);
  return rc;
}

static int n_barrier(lt_comm_t *cc) { return n_all_reduce(cc, ((nccl_comm_t *)cc)->one, LT_REDUCE_SUM); }
static int n_rank(const lt_comm_t *cc) { return ((const nccl_comm_t *)cc)->rank; }
static int n_size(const lt_comm_t *cc) { return ((const nccl_comm_t *)cc)->size; }

static void n_destroy(lt_comm_t *cc) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  if (c->comm) {
    if (c->broken) ncclCommAbort(c->comm);
    else ncclCommDestroy(c->comm);
  }
  lt_release(c->one);
  free(c);
}

static const lt_comm_i nccl_ops = {"nccl", n_all_reduce, n_broadcast, n_all_gather, n_reduce_scatter,
                                   n_barrier, n_rank, n_size, n_destroy, NULL};

lt_comm_t *lt_comm_nccl_new(double timeout_s, int device) {
  /* MPI gives the ranks and carries the id */
  lt_comm_t *mpi = lt_comm_mpi_new(timeout_s);
  if (!mpi) return NULL;
  nccl_comm_t *c = calloc(1, sizeof *c);
  if (!c) {
    mpi->ops->destroy(mpi);
    lt_error("init_process_group: out of memory");
    return NULL;
  }
  c->base.ops = &nccl_ops;
  c->base.timeout = timeout_s;
  c->rank = mpi->ops->rank(mpi);
  c->size = mpi->ops->size(mpi);
  c->device = device;
  ncclUniqueId id;
  int rc = LT_OK;
  int64_t one = 1, idbytes = (int64_t)sizeof id;
  lt_tensor_t *idt = lt_empty(1, &idbytes, LT_UINT8, lt_device(LT_CPU, 0));
  if (!idt) rc = LT_ERR;
  if (rc == LT_OK && c->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) rc = nccl_fail(c, "init_process_group", r);
    else memcpy(lt_data(idt), &id, sizeof id);
  }
  /* every rank joins the broadcast, also after a failure on rank 0, which then sends garbage and
     reports its error; the others fail in ncclCommInitRank or time out */
  if (idt && mpi->ops->broadcast(mpi, idt, 0) != LT_OK) rc = LT_ERR;
  if (rc == LT_OK) {
    memcpy(&id, lt_data(idt), sizeof id);
    if (lt_cuda_use(device) != LT_OK) rc = lt_error("init_process_group: %s", lt_last_error());
  }
  if (rc == LT_OK) {
    ncclResult_t r = ncclCommInitRank(&c->comm, c->size, id, c->rank);
    if (r != ncclSuccess) rc = nccl_fail(c, "init_process_group", r);
  }
  if (rc == LT_OK && !(c->one = lt_empty(1, &one, LT_FLOAT32, lt_device(LT_CUDA, device)))) rc = LT_ERR;
  lt_release(idt);
  mpi->ops->destroy(mpi);
  if (rc != LT_OK) {
    n_destroy(&c->base);
    return NULL;
  }
  return &c->base;
}

#endif
