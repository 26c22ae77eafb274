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

/* ---- point to point (ncclSend / ncclRecv, enqueued on the current stream; NCCL has no tags and no
   receive from any rank) and the rooted collectives: ncclReduce, and grouped sends and receives for
   gather, scatter and all_to_all ---- */
struct lt_comm_work {
  nccl_comm_t *c;
  cudaStream_t st;
  lt_tensor_t *t, *buf;
  bool recv, done;
  int peer, rc;
  char err[512];
};

static int n_p2p(nccl_comm_t *c, lt_tensor_t *t, int peer, bool recv, lt_comm_work_t **out) {
  const char *op = recv ? "recv" : "send";
  cudaStream_t st = NULL;
  *out = NULL;
  if (peer < 0) return lt_error("recv: a receive from any source is not supported by the nccl backend");
  LT_TRY(check(c, op, t, false));
  LT_TRY(current_stream(c, op, &st));
  lt_comm_work_t *w = calloc(1, sizeof *w);
  if (!w) return lt_error("%s: out of memory", op);
  w->c = c, w->st = st, w->t = t, w->recv = recv, w->peer = peer;
  w->buf = recv ? lt_empty(t->ndim, t->sizes, t->dtype, t->device) : lt_contiguous(t);
  int rc = w->buf ? LT_OK : LT_ERR;
  if (rc == LT_OK) {
    size_t n = (size_t)t->numel * lt_elsize(t);
    ncclResult_t r = recv ? ncclRecv(lt_data(w->buf), n, ncclUint8, peer, c->comm, st)
                          : ncclSend(lt_data(w->buf), n, ncclUint8, peer, c->comm, st);
    if (r != ncclSuccess) rc = nccl_fail(c, op, r);
  }
  if (rc != LT_OK) {
    lt_release(w->buf);
    free(w);
    return LT_ERR;
  }
  *out = w;
  return LT_OK;
}

static int n_isend(lt_comm_t *cc, lt_tensor_t *t, int dst, int tag, lt_comm_work_t **out) {
  (void)tag;
  return n_p2p((nccl_comm_t *)cc, t, dst, false, out);
}

static int n_irecv(lt_comm_t *cc, lt_tensor_t *t, int src, int tag, lt_comm_work_t **out) {
  (void)tag;
  return n_p2p((nccl_comm_t *)cc, t, src, true, out);
}

static int n_work_done(lt_comm_work_t *w, int rc) {
  w->done = true;
  if (rc == LT_OK && w->recv) rc = lt_copy_(w->t, w->buf);
  w->rc = rc;
  if (rc != LT_OK) snprintf(w->err, sizeof w->err, "%s", lt_last_error());
  return rc;
}

static int n_work_test(lt_comm_work_t *w, bool *done) {
  *done = true;
  if (w->done) return w->rc == LT_OK ? LT_OK : lt_error("%s", w->err);
  cudaError_t q = cudaStreamQuery(w->st);
  if (q == cudaErrorNotReady) {
    *done = false;
    return LT_OK;
  }
  if (q != cudaSuccess)
    return n_work_done(w, lt_error("%s: CUDA failed on rank %d: %s", w->recv ? "recv" : "send", w->c->rank,
                                   cudaGetErrorString(q)));
  return n_work_done(w, LT_OK);
}

static int n_work_wait(lt_comm_work_t *w, int *from) {
  *from = w->peer;
  if (w->done) return w->rc == LT_OK ? LT_OK : lt_error("%s", w->err);
  return n_work_done(w, wait_stream(w->c, w->st, w->recv ? "recv" : "send"));
}

static void n_work_free(lt_comm_work_t *w) {
  if (!w) return;
  int from;
  if (!w->done) n_work_wait(w, &from);
  lt_release(w->buf);
  free(w);
}

static int n_reduce(lt_comm_t *cc, lt_tensor_t *t, int dst, lt_reduce_op op) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  ncclDataType_t ty;
  cudaStream_t st = NULL;
  LT_TRY(check(c, "reduce", t, false));
  LT_TRY(nccl_type("reduce", t->dtype, &ty));
  LT_TRY(current_stream(c, "reduce", &st));
  lt_tensor_t *work = work_of(c, t);
  if (!work) return LT_ERR;
  ncclResult_t r = ncclReduce(lt_data(work), lt_data(work), (size_t)work->numel, ty, nccl_op(op, t->dtype), dst,
                              c->comm, st);
  int rc = r != ncclSuccess ? nccl_fail(c, "reduce", r) : wait_stream(c, st, "reduce");
  if (c->rank != dst) {
    lt_release(work);
    return rc;
  }
  return finish(t, work, rc);
}

/* sends[r] to rank r and recvs[r] from rank r (either NULL: none), as one NCCL group */
static int grouped(nccl_comm_t *c, const char *op, lt_tensor_t *const *sends, lt_tensor_t *const *recvs) {
  cudaStream_t st = NULL;
  LT_TRY(current_stream(c, op, &st));
  ncclResult_t r = ncclGroupStart();
  for (int k = 0; k < c->size && r == ncclSuccess; k++) {
    if (sends && sends[k])
      r = ncclSend(lt_data(sends[k]), (size_t)sends[k]->numel * lt_elsize(sends[k]), ncclUint8, k, c->comm, st);
    if (r == ncclSuccess && recvs && recvs[k])
      r = ncclRecv(lt_data(recvs[k]), (size_t)recvs[k]->numel * lt_elsize(recvs[k]), ncclUint8, k, c->comm, st);
  }
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  return r != ncclSuccess ? nccl_fail(c, op, r) : wait_stream(c, st, op);
}

/* contiguous copies of ts[0..n) on the device (NULL entries stay NULL), into out */
static int contiguous_all(lt_tensor_t *const *ts, int n, lt_tensor_t **out, bool fresh) {
  for (int k = 0; k < n; k++) {
    out[k] = NULL;
    if (!ts || !ts[k]) continue;
    out[k] = fresh ? lt_empty(ts[k]->ndim, ts[k]->sizes, ts[k]->dtype, ts[k]->device) : lt_contiguous(ts[k]);
    if (!out[k]) return LT_ERR;
  }
  return LT_OK;
}

static void release_all(lt_tensor_t **ts, int n) {
  for (int k = 0; k < n; k++) lt_release(ts[k]);
  free(ts);
}

/* the common part of gather, scatter and all_to_all: sends ins (when given), receives into outs */
static int n_exchange(nccl_comm_t *c, const char *op, lt_tensor_t *const *outs, lt_tensor_t *const *ins) {
  lt_tensor_t **s = calloc((size_t)c->size, sizeof *s), **r = calloc((size_t)c->size, sizeof *r);
  int rc = s && r ? LT_OK : lt_error("%s: out of memory", op);
  if (rc == LT_OK) rc = contiguous_all(ins, c->size, s, false);
  if (rc == LT_OK) rc = contiguous_all(outs, c->size, r, true);
  if (rc == LT_OK) rc = grouped(c, op, ins ? s : NULL, outs ? r : NULL);
  for (int k = 0; k < c->size && rc == LT_OK && outs; k++) rc = lt_copy_(outs[k], r[k]);
  if (s) release_all(s, c->size);
  if (r) release_all(r, c->size);
  return rc;
}

static int n_gather(lt_comm_t *cc, lt_tensor_t *const *outs, lt_tensor_t *in, int dst) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  LT_TRY(check(c, "gather", in, false));
  lt_tensor_t **ins = calloc((size_t)c->size, sizeof *ins);
  if (!ins) return lt_error("gather: out of memory");
  ins[dst] = in;
  int rc = n_exchange(c, "gather", c->rank == dst ? outs : NULL, ins);
  free(ins);
  return rc;
}

static int n_scatter(lt_comm_t *cc, lt_tensor_t *out, lt_tensor_t *const *ins, int src) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  LT_TRY(check(c, "scatter", out, false));
  lt_tensor_t **outs = calloc((size_t)c->size, sizeof *outs);
  if (!outs) return lt_error("scatter: out of memory");
  outs[src] = out;
  int rc = n_exchange(c, "scatter", outs, c->rank == src ? ins : NULL);
  free(outs);
  return rc;
}

static int n_all_to_all(lt_comm_t *cc, lt_tensor_t *const *outs, lt_tensor_t *const *ins) {
  nccl_comm_t *c = (nccl_comm_t *)cc;
  LT_TRY(check(c, "all_to_all", ins[0], false));
  return n_exchange(c, "all_to_all", outs, ins);
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

/* new_group: NULL (the caller says the nccl backend does not support it) */
static const lt_comm_i nccl_ops = {"nccl", n_all_reduce, n_broadcast, n_all_gather, n_reduce_scatter,
                                   n_barrier, n_rank, n_size, n_destroy, NULL,
                                   n_isend, n_irecv, n_work_test, n_work_wait, n_work_free,
                                   n_reduce, n_gather, n_scatter, n_all_to_all, NULL};

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
