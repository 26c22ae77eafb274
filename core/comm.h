/* The comm interface: collectives over the processes of a distributed job (one process per rank),
   with an MPI implementation (core/comm_mpi.c: CPUs and clusters, started by mpirun) and an NCCL
   one (core/comm_nccl.c: CUDA tensors; its unique id travels over MPI). torch.distributed and DDP
   call them through the function pointers of lt_comm_i. Both implementations live in a plugin
   loaded on first use (core/comm_plugin.h).

   Every collective is blocking for its caller but never waits forever: past the group's timeout (a
   rank died or hangs) MPI's implementation prints an error naming the collective and aborts the
   job (MPI has no way back from a collective left unmatched); NCCL's aborts the communicator and
   returns the error. Tensors may be of any dtype of core/dtype.h and of any layout (non-contiguous
   ones go through a contiguous copy). The callers check shapes and dtypes (bindings/distributed.c);
   the implementations assume them valid. */
#ifndef LT_COMM_H
#define LT_COMM_H

#include "core/tensor.h"

#include <stdbool.h>

typedef enum {
  LT_REDUCE_SUM = 0,
  LT_REDUCE_AVG,
  LT_REDUCE_PRODUCT,
  LT_REDUCE_MIN,
  LT_REDUCE_MAX,
  LT_NREDUCE
} lt_reduce_op;

typedef struct lt_comm lt_comm_t;
/* a point-to-point transfer in flight (isend / irecv), owned by its caller until work_free */
typedef struct lt_comm_work lt_comm_work_t;

typedef struct {
  const char *name; /* "mpi", "nccl" */
  /* t = op over the ranks of t, in place */
  int (*all_reduce)(lt_comm_t *c, lt_tensor_t *t, lt_reduce_op op);
  /* t = rank src's t */
  int (*broadcast)(lt_comm_t *c, lt_tensor_t *t, int src);
  /* outs[r] = rank r's in, for r in [0, size); every outs[r] has in's shape and dtype */
  int (*all_gather)(lt_comm_t *c, lt_tensor_t *const *outs, lt_tensor_t *in);
  /* out = op over the ranks of their ins[rank]; every ins[r] has out's shape and dtype */
  int (*reduce_scatter)(lt_comm_t *c, lt_tensor_t *out, lt_tensor_t *const *ins, lt_reduce_op op);
  int (*barrier)(lt_comm_t *c);
  int (*rank)(const lt_comm_t *c);
  int (*size)(const lt_comm_t *c);
  /* frees the group (MPI itself is finished at exit) */
  void (*destroy)(lt_comm_t *c);
  /* ts[0..n) = op over the ranks of each, in place, as one collective (every rank passes tensors
     of the same sizes in the same order, all of one dtype and device); NULL where the backend has
     no way faster than the caller's own flat buffer (NCCL) */
  int (*all_reduce_coalesced)(lt_comm_t *c, lt_tensor_t *const *ts, int n, lt_reduce_op op);
  /* ---- point to point: ranks are c's; t's values travel to rank dst / arrive from rank src (-1:
     any rank) with tag. The work holds its own reference to its buffer (t, or a copy the receive
     writes back into t, which the caller keeps alive until work_wait). A receive whose message is
     not exactly t's size fails, naming both. */
  int (*isend)(lt_comm_t *c, lt_tensor_t *t, int dst, int tag, lt_comm_work_t **out);
  int (*irecv)(lt_comm_t *c, lt_tensor_t *t, int src, int tag, lt_comm_work_t **out);
  /* *done = whether the transfer finished (an error where it failed) */
  int (*work_test)(lt_comm_work_t *w, bool *done);
  /* waits for it, up to the group's timeout (then cancels it and fails); *from = the sender's rank
     of a receive, the peer of a send. Once it returned, only work_free may follow. */
  int (*work_wait)(lt_comm_work_t *w, int *from);
  void (*work_free)(lt_comm_work_t *w);
  /* ---- rooted collectives (NULL where the backend has none: the caller says so) ---- */
  /* rank dst's t = op over the ranks' t; the others' t unchanged */
  int (*reduce)(lt_comm_t *c, lt_tensor_t *t, int dst, lt_reduce_op op);
  /* on rank dst outs[r] = rank r's in (outs NULL on the other ranks; every in of one shape and dtype) */
  int (*gather)(lt_comm_t *c, lt_tensor_t *const *outs, lt_tensor_t *in, int dst);
  /* out = rank src's ins[rank] (ins NULL on the other ranks) */
  int (*scatter)(lt_comm_t *c, lt_tensor_t *out, lt_tensor_t *const *ins, int src);
  /* outs[r] = rank r's ins[rank], for r in [0, size): tensors of one dtype, each of any size; a
     rank expecting another number of elements than its peer sends fails on every rank, naming it */
  int (*all_to_all)(lt_comm_t *c, lt_tensor_t *const *outs, lt_tensor_t *const *ins);
  /* the group of c's ranks[0..n) (ascending), as a new comm in which they keep their order:
     collective over every rank of c; *out = NULL on a rank not in it */
  int (*new_group)(lt_comm_t *c, const int *ranks, int n, double timeout_s, lt_comm_t **out);
} lt_comm_i;

struct lt_comm {
  const lt_comm_i *ops;
  double timeout;  /* seconds */
};

/* PyTorch's name of a reduce op: "SUM", "AVG", ... */
const char *lt_reduce_op_name(lt_reduce_op op);

/* The MPI group of the job this process was started in (MPI_Init_thread on the first call; one
   group per process). NULL + "backend 'mpi' is not available in this build" without Open MPI. */
lt_comm_t *lt_comm_mpi_new(double timeout_s);
bool lt_comm_mpi_available(void);

/* An NCCL communicator over the MPI job's ranks, on CUDA device `device`; NULL + error where NCCL
   is not built in ("Distributed package doesn't have NCCL built in"). */
lt_comm_t *lt_comm_nccl_new(double timeout_s, int device);
bool lt_comm_nccl_available(void);

/* ---- autograd hooks (defined in core/autograd.c) ----
   A process-wide observer of backward, for DDP: leaf_grad after a leaf's .grad took a gradient in
   a backward that accumulates into .grad (from whichever engine thread delivered it, one call at a
   time), backward_end when such a backward ends, with its status; it returns the final status (an
   error of its own fails the backward). NULL removes the hooks. */
typedef struct {
  void (*leaf_grad)(void *ud, lt_tensor_t *leaf);
  int (*backward_end)(void *ud, int rc);
  void *ud;
} lt_ag_hooks_t;
void lt_ag_set_hooks(const lt_ag_hooks_t *h);

#endif
