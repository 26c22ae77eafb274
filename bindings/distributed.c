/* torch._dist: the C side of torch.distributed (lua/torch/distributed.lua) and of
   nn.DistributedDataParallel (lua/torch/nn/distributed.lua).

   The process group is one lt_comm_t (core/comm.h) per process. Its collectives check their
   arguments here and run in the core; the Lua side gives PyTorch's errors for use before init.

   The reducer does DDP's gradient averaging. Its parameters are grouped into buckets (reverse
   parameter order, by dtype, up to a byte cap; the first bucket 1 MiB as PyTorch's), each a flat
   buffer; after the first backward they are rebuilt in the order the gradients arrived in (rank
   0's), as PyTorch does, so that each bucket fills as early as it can. The autograd engine calls leaf_grad after each leaf's .grad took a gradient: when every
   parameter of a bucket got as many gradients as it got in the last iteration (once, the first
   time), the bucket's gradients are copied into its buffer and handed to the reducer's thread,
   which averages the buffer across ranks while backward goes on. Buckets start in bucket order, so
   every rank issues the collectives in one order. When backward ends (backward_end) the thread is
   waited for; one small all_reduce of per-parameter flags (used, got a gradient after its bucket
   started) makes the ranks agree on what is left: buckets with an unused parameter are reduced then
   (find_unused_parameters; an unused parameter's .grad stays nil when no rank used it) or leave an
   error for the next forward (PyTorch's), buckets with late gradients are reduced again. Then the
   averages are copied back into .grad. Buckets left to that point (all of them when not
   overlapping) are reduced in place in .grad instead, a run of them as one collective, where the
   backend has a coalesced all-reduce (MPI's: through shared memory without a copy on one node).

   With find_unused_parameters every bucket is reduced at the end of backward: the ranks may have
   used different parameters, so a bucket may be complete on one rank and not on another.

   Overlap needs a core to run on: an MPI rank with one core (mpirun --bind-to core, or as many
   ranks on the node as cores) reduces its buckets at the end of backward on its own thread
   instead, as the thread would only share the core with backward while MPI polls (here: DDP's
   MLP step 3.6-3.9 ms overlapped, 2.6-3.6 at the end). LUTORCH_DDP_OVERLAP=1 or 0 forces either
   way (the specs run both). */
#include "bindings/binding.h"
#include "core/autograd.h"
#include "core/comm.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REDUCER_MT "torch.dist.Reducer"
#define GROUP_MT "torch.dist.Group"
#define WORK_MT "torch.dist.Work"

/* ---- the process group ---- */
typedef struct {
  lt_comm_t *comm;
  int refs;           /* the Lua group and each reducer */
} group_t;

static group_t *g_group;          /* the current default group, or NULL */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void group_unref(group_t *g) {
  pthread_mutex_lock(&g_mu);
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g_mu);
  if (last) {
    g->comm->ops->destroy(g->comm);
    free(g);
  }
}

static group_t *default_group(lua_State *L, const char *op) {
  if (!g_group)
    luaL_error(L, "%s: Default process group has not been initialized, please make sure to call "
                  "init_process_group.", op);
  return g_group;
}

static lt_comm_t *check_comm(lua_State *L, const char *op) { return default_group(L, op)->comm; }

/* The group at idx: a group of new_group (a GROUP_MT userdata holding a group_t *, NULL once
   destroyed), or the default one when nil. lua/torch/distributed.lua calls with the groups this rank
   is a member of only. */
static group_t *check_group(lua_State *L, int idx, const char *op) {
  if (lua_isnoneornil(L, idx)) return default_group(L, op);
  group_t **pg = luaL_checkudata(L, idx, GROUP_MT);
  if (!*pg) luaL_error(L, "%s: the process group was destroyed", op);
  return *pg;
}

static lt_comm_t *comm_at(lua_State *L, int idx, const char *op) { return check_group(L, idx, op)->comm; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* _dist.init(backend, timeout_seconds, cuda_device) -> rank, size */
static int l_init(lua_State *L) {
  const char *backend = luaL_checkstring(L, 1);
  double timeout = luaL_checknumber(L, 2);
  int device = (int)luaL_optinteger(L, 3, 0);
  if (g_group) return luaL_error(L, "trying to initialize the default process group twice!");
  if (!(timeout > 0)) return luaL_error(L, "init_process_group: timeout must be positive, got %f", timeout);
  lt_comm_t *c = NULL;
  if (strcmp(backend, "mpi") == 0) c = lt_comm_mpi_new(timeout);
  else if (strcmp(backend, "nccl") == 0) c = lt_comm_nccl_new(timeout, device);
  else return luaL_error(L, "Invalid backend: '%s'", backend);
  if (!c) return lt_lua_error(L);
  group_t *g = calloc(1, sizeof *g);
  if (!g) {
    c->ops->destroy(c);
    return luaL_error(L, "init_process_group: out of memory");
  }
  g->comm = c;
  g->refs = 1;
  g_group = g;
  lua_pushinteger(L, c->ops->rank(c));
  lua_pushinteger(L, c->ops->size(c));
  return 2;
}

static int l_available(lua_State *L) {
  const char *b = luaL_checkstring(L, 1);
  lua_pushboolean(L, strcmp(b, "mpi") == 0 ? lt_comm_mpi_available() : strcmp(b, "nccl") == 0 && lt_comm_nccl_available());
  return 1;
}

static int l_is_initialized(lua_State *L) {
  lua_pushboolean(L, g_group != NULL);
  return 1;
}

static int l_rank(lua_State *L) {
  lt_comm_t *c = comm_at(L, 1, "get_rank");
  lua_pushinteger(L, c->ops->rank(c));
  return 1;
}

static int l_size(lua_State *L) {
  lt_comm_t *c = comm_at(L, 1, "get_world_size");
  lua_pushinteger(L, c->ops->size(c));
  return 1;
}

static int l_backend(lua_State *L) {
  lt_comm_t *c = check_comm(L, "get_backend");
  lua_pushstring(L, c->ops->name);
  return 1;
}

static int l_destroy(lua_State *L) {
  check_comm(L, "destroy_process_group");
  group_t *g = g_group;
  g_group = NULL;
  group_unref(g);
  return 0;
}

static lt_reduce_op check_op(lua_State *L, int idx, const char *op) {
  lua_Integer o = luaL_optinteger(L, idx, LT_REDUCE_SUM);
  if (o < 0 || o >= LT_NREDUCE) luaL_error(L, "%s: unknown reduce op %d (use torch.distributed.ReduceOp)", op, (int)o);
  return (lt_reduce_op)o;
}

/* The NCCL backend takes CUDA tensors only, as PyTorch's (the comm itself also stages CPU tensors,
   for the reducer's bookkeeping); the MPI backend takes tensors of any device. */
static void check_device(lua_State *L, const lt_comm_t *c, const char *op, const char *what, const lt_tensor_t *t) {
  if (strcmp(c->ops->name, "nccl") == 0 && t->device.type != LT_CUDA)
    luaL_error(L, "%s: the NCCL backend needs CUDA tensors, but %s is on the CPU (move it with :cuda(), or use "
                  "the 'mpi' backend for CPU tensors)", op, what);
}

/* an average of booleans has no bool result: refused for every backend */
static void check_bool_avg(lua_State *L, const char *op, const lt_tensor_t *t, lt_reduce_op rop) {
  if (t->dtype == LT_BOOL && rop == LT_REDUCE_AVG) luaL_error(L, "%s: ReduceOp.AVG is not supported for bool tensors", op);
}

/* waits for the buckets DDP's reducers handed to their threads (see wait_reducers below) */
static void wait_reducers(void);

static int l_all_reduce(lua_State *L) {
  lt_comm_t *c = comm_at(L, 3, "all_reduce");
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  check_device(L, c, "all_reduce", "tensor", t);
  lt_reduce_op op = check_op(L, 2, "all_reduce");
  check_bool_avg(L, "all_reduce", t, op);
  wait_reducers();
  lt_lua_check(L, c->ops->all_reduce(c, t, op));
  lua_settop(L, 1);
  return 1;
}

/* the rank at idx, in [0, size of c) */
static int check_rank(lua_State *L, const lt_comm_t *c, int idx, const char *op) {
  lua_Integer r = luaL_checkinteger(L, idx);
  int size = c->ops->size(c);
  if (r < 0 || r >= size)
    luaL_error(L, "%s: Invalid rank %d, rank should be in the interval [0, %d]", op, (int)r, size - 1);
  return (int)r;
}

static int l_broadcast(lua_State *L) {
  lt_comm_t *c = comm_at(L, 3, "broadcast");
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  check_device(L, c, "broadcast", "tensor", t);
  int src = check_rank(L, c, 2, "broadcast");
  wait_reducers();
  lt_lua_check(L, c->ops->broadcast(c, t, src));
  lua_settop(L, 1);
  return 1;
}

static bool same_geometry(const lt_tensor_t *a, const lt_tensor_t *b) {
  return a->ndim == b->ndim && memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* the list at idx: `size` tensors of ref's dtype and (where shaped) shape, into ts */
static void check_list_of(lua_State *L, const lt_comm_t *c, int idx, const char *op, const char *what, int size,
                          const lt_tensor_t *ref, bool shaped, lt_tensor_t **ts) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = (int)luaL_len(L, idx);
  if (n != size)
    luaL_error(L, "%s: %s must hold world_size (%d) tensors, got %d", op, what, size, n);
  for (int r = 0; r < size; r++) {
    lua_geti(L, idx, r + 1);
    lt_tensor_t *t = lt_lua_totensor(L, -1);
    lua_pop(L, 1); /* the list keeps it alive */
    if (!t) luaL_error(L, "%s: %s[%d] is not a tensor", op, what, r + 1);
    char name[64];
    snprintf(name, sizeof name, "%s[%d]", what, r + 1);
    check_device(L, c, op, name, t);
    char a[128], b[128];
    if (!shaped && t->dtype != ref->dtype)
      luaL_error(L, "%s: %s[%d] is a %s tensor, expected %s as the others", op, what, r + 1, lt_dtype_name(t->dtype),
                 lt_dtype_name(ref->dtype));
    if (shaped && (!same_geometry(t, ref) || t->dtype != ref->dtype))
      luaL_error(L, "%s: %s[%d] is a %s tensor of shape %s, expected %s of shape %s", op, what, r + 1,
                 lt_dtype_name(t->dtype), lt_shape_str(t->ndim, t->sizes, a, sizeof a), lt_dtype_name(ref->dtype),
                 lt_shape_str(ref->ndim, ref->sizes, b, sizeof b));
    ts[r] = t;
  }
}

static void check_list(lua_State *L, const lt_comm_t *c, int idx, const char *op, const char *what, int size,
                       const lt_tensor_t *ref, lt_tensor_t **ts) {
  check_list_of(L, c, idx, op, what, size, ref, true, ts);
}

/* all_gather(list, t) */
static int l_all_gather(lua_State *L) {
  lt_comm_t *c = comm_at(L, 3, "all_gather");
  lt_tensor_t *in = lt_lua_checktensor(L, 2);
  check_device(L, c, "all_gather", "tensor", in);
  int size = c->ops->size(c);
  lt_tensor_t **outs = lua_newuserdatauv(L, sizeof *outs * (size_t)size, 0);
  check_list(L, c, 1, "all_gather", "tensor_list", size, in, outs);
  wait_reducers();
  lt_lua_check(L, c->ops->all_gather(c, outs, in));
  lua_settop(L, 1);
  return 1;
}

/* reduce_scatter(out, list, op) */
static int l_reduce_scatter(lua_State *L) {
  lt_comm_t *c = comm_at(L, 4, "reduce_scatter");
  lt_tensor_t *out = lt_lua_checktensor(L, 1);
  lt_reduce_op op = check_op(L, 3, "reduce_scatter");
  int size = c->ops->size(c);
  lt_tensor_t **ins = lua_newuserdatauv(L, sizeof *ins * (size_t)size, 0);
  check_device(L, c, "reduce_scatter", "output", out);
  check_bool_avg(L, "reduce_scatter", out, op);
  check_list(L, c, 2, "reduce_scatter", "input_list", size, out, ins);
  wait_reducers();
  lt_lua_check(L, c->ops->reduce_scatter(c, out, ins, op));
  lua_settop(L, 1);
  return 1;
}

static int l_barrier(lua_State *L) {
  lt_comm_t *c = comm_at(L, 1, "barrier");
  wait_reducers();
  lt_lua_check(L, c->ops->barrier(c));
  return 0;
}

/* the backend's op, or an error naming it where the backend has none */
#define NEED_OP(L, c, fn, opname)                                                                          \
  do {                                                                                                     \
    if (!(c)->ops->fn) luaL_error(L, "%s: not supported by the %s backend", opname, (c)->ops->name);       \
  } while (0)

/* reduce(t, dst, op, group) */
static int l_reduce(lua_State *L) {
  lt_comm_t *c = comm_at(L, 4, "reduce");
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  check_device(L, c, "reduce", "tensor", t);
  int dst = check_rank(L, c, 2, "reduce");
  lt_reduce_op op = check_op(L, 3, "reduce");
  check_bool_avg(L, "reduce", t, op);
  NEED_OP(L, c, reduce, "reduce");
  wait_reducers();
  lt_lua_check(L, c->ops->reduce(c, t, dst, op));
  lua_settop(L, 1);
  return 1;
}

/* the rooted list at idx: given (a non-empty table) on the root only, as PyTorch's
   _validate_output_list_for_rank; the tensors into ts, or NULL off the root */
static lt_tensor_t **rooted_list(lua_State *L, lt_comm_t *c, int idx, const char *op, const char *what, int root,
                                 const lt_tensor_t *ref) {
  bool given = lua_istable(L, idx) && luaL_len(L, idx) > 0;
  if (!lua_isnoneornil(L, idx) && !lua_istable(L, idx))
    luaL_error(L, "%s: %s must be a table of tensors, got %s", op, what, luaL_typename(L, idx));
  bool is_root = c->ops->rank(c) == root;
  const char *role = strcmp(op, "gather") == 0 ? "destination" : "source";
  if (is_root && !given) luaL_error(L, "%s: Argument ``%s`` must be specified on %s rank.", op, what, role);
  if (!is_root && given) luaL_error(L, "%s: Argument ``%s`` must NOT be specified on non-%s ranks.", op, what, role);
  if (!is_root) return NULL;
  int size = c->ops->size(c);
  lt_tensor_t **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)size, 0);
  check_list(L, c, idx, op, what, size, ref, ts);
  return ts;
}

/* gather(t, list, dst, group) */
static int l_gather(lua_State *L) {
  lt_comm_t *c = comm_at(L, 4, "gather");
  lt_tensor_t *in = lt_lua_checktensor(L, 1);
  check_device(L, c, "gather", "tensor", in);
  int dst = check_rank(L, c, 3, "gather");
  lt_tensor_t **outs = rooted_list(L, c, 2, "gather", "gather_list", dst, in);
  NEED_OP(L, c, gather, "gather");
  wait_reducers();
  lt_lua_check(L, c->ops->gather(c, outs, in, dst));
  return 0;
}

/* scatter(t, list, src, group) */
static int l_scatter(lua_State *L) {
  lt_comm_t *c = comm_at(L, 4, "scatter");
  lt_tensor_t *out = lt_lua_checktensor(L, 1);
  check_device(L, c, "scatter", "tensor", out);
  int src = check_rank(L, c, 3, "scatter");
  lt_tensor_t **ins = rooted_list(L, c, 2, "scatter", "scatter_list", src, out);
  NEED_OP(L, c, scatter, "scatter");
  wait_reducers();
  lt_lua_check(L, c->ops->scatter(c, out, ins, src));
  lua_settop(L, 1);
  return 1;
}

/* all_to_all(outs, ins, group): tensors of one dtype, of any shapes */
static int l_all_to_all(lua_State *L) {
  lt_comm_t *c = comm_at(L, 3, "all_to_all");
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  int size = c->ops->size(c);
  lua_geti(L, 2, 1);
  lt_tensor_t *ref = lt_lua_totensor(L, -1);
  lua_pop(L, 1);
  if (!ref) return luaL_error(L, "all_to_all: input_tensor_list[1] is not a tensor");
  lt_tensor_t **ins = lua_newuserdatauv(L, sizeof *ins * (size_t)size, 0);
  lt_tensor_t **outs = lua_newuserdatauv(L, sizeof *outs * (size_t)size, 0);
  check_list_of(L, c, 2, "all_to_all", "input_tensor_list", size, ref, false, ins);
  check_list_of(L, c, 1, "all_to_all", "output_tensor_list", size, ref, false, outs);
  NEED_OP(L, c, all_to_all, "all_to_all");
  wait_reducers();
  lt_lua_check(L, c->ops->all_to_all(c, outs, ins));
  lua_settop(L, 1);
  return 1;
}

/* ---- point to point ---- */
typedef struct {
  lt_comm_work_t *w;   /* NULL once freed */
  const lt_comm_i *ops;
  group_t *group;      /* referenced while w lives */
  bool waited;
} work_t;

static void work_close(work_t *k) {
  if (k->w) k->ops->work_free(k->w);
  k->w = NULL;
  if (k->group) group_unref(k->group);
  k->group = NULL;
}

/* starts a transfer of the tensor at 1 with the peer at 2 (nil: any, for a receive), tag at 3, group at
   4; pushes a work userdata that keeps the tensor and the group */
static work_t *p2p_start(lua_State *L, bool recv) {
  const char *op = recv ? "recv" : "send";
  group_t *g = check_group(L, 4, op);
  lt_comm_t *c = g->comm;
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  check_device(L, c, op, "tensor", t);
  int peer = recv && lua_isnoneornil(L, 2) ? -1 : check_rank(L, c, 2, op);
  lua_Integer tag = luaL_optinteger(L, 3, 0);
  if (tag < 0 || tag > 32767) luaL_error(L, "%s: tag must be in [0, 32767], got %d", op, (int)tag);
  if (!recv && peer == c->ops->rank(c))
    luaL_error(L, "send: Invalid destination rank: destination rank should not be the same as the rank of the "
                  "current process.");
  if (recv && peer == c->ops->rank(c))
    luaL_error(L, "recv: Invalid source rank: source rank should not be the same as the rank of the current "
                  "process.");
  NEED_OP(L, c, isend, op);
  work_t *k = lua_newuserdatauv(L, sizeof *k, 1);
  memset(k, 0, sizeof *k);
  luaL_setmetatable(L, WORK_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the tensor lives as long as the work */
  k->ops = c->ops;
  lt_lua_check(L, recv ? c->ops->irecv(c, t, peer, (int)tag, &k->w) : c->ops->isend(c, t, peer, (int)tag, &k->w));
  pthread_mutex_lock(&g_mu);
  k->group = g;
  g->refs++;
  pthread_mutex_unlock(&g_mu);
  return k;
}

static work_t *check_work(lua_State *L) {
  work_t *k = luaL_checkudata(L, 1, WORK_MT);
  if (!k->w) luaL_error(L, "Work: it was waited for already");
  return k;
}

/* waits for the work at 1; the sender's rank of a receive */
static int work_finish(lua_State *L, work_t *k) {
  int from = -1;
  int rc = k->ops->work_wait(k->w, &from);
  work_close(k);
  lt_lua_check(L, rc);
  return from;
}

static int l_isend(lua_State *L) { p2p_start(L, false); return 1; }
static int l_irecv(lua_State *L) { p2p_start(L, true); return 1; }

/* send(t, dst, tag, group) */
static int l_send(lua_State *L) {
  work_finish(L, p2p_start(L, false));
  return 0;
}

/* recv(t, src or nil, tag, group) -> the sender's rank in the group */
static int l_recv(lua_State *L) {
  lua_pushinteger(L, work_finish(L, p2p_start(L, true)));
  return 1;
}

/* work:wait() -> true, as PyTorch's */
static int w_wait(lua_State *L) {
  work_finish(L, check_work(L));
  lua_pushboolean(L, 1);
  return 1;
}

/* work:is_completed() */
static int w_is_completed(lua_State *L) {
  work_t *k = luaL_checkudata(L, 1, WORK_MT);
  bool done = true;
  if (k->w) lt_lua_check(L, k->ops->work_test(k->w, &done));
  lua_pushboolean(L, done);
  return 1;
}

static int w_gc(lua_State *L) {
  work_close(luaL_checkudata(L, 1, WORK_MT));
  return 0;
}

/* ---- bytes, for the object collectives (lua/torch/distributed_objects.lua) ---- */

/* to_bytes(t) -> the bytes of t's values (row-major, native byte order) */
static int l_to_bytes(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_tensor_t *h = lt_convert(t, t->dtype, lt_device(LT_CPU, 0));
  if (!h) return lt_lua_error(L);
  lua_pushlstring(L, lt_data(h), (size_t)h->numel * lt_elsize(h));
  lt_release(h);
  return 1;
}

/* from_bytes(s, dtype = uint8, sizes = {#s / elsize}, offset = 0) -> a CPU tensor of those bytes at
   s's (0-based) offset */
static int l_from_bytes(lua_State *L) {
  size_t len;
  const char *p = luaL_checklstring(L, 1, &len);
  lt_dtype dt = lua_isnoneornil(L, 2) ? LT_UINT8 : lt_lua_checkdtype(L, 2);
  lua_Integer off = luaL_optinteger(L, 4, 0);
  int64_t sizes[LT_MAX_DIM], numel = 1;
  int ndim = 1;
  const size_t es = lt_dtype_size(dt);
  if (off < 0 || (size_t)off > len) return luaL_error(L, "from_bytes: offset %d is outside the %d bytes", (int)off, (int)len);
  if (lua_isnoneornil(L, 3)) {
    sizes[0] = numel = (int64_t)((len - (size_t)off) / es);
  } else {
    luaL_checktype(L, 3, LUA_TTABLE);
    ndim = (int)luaL_len(L, 3);
    if (ndim > LT_MAX_DIM) return luaL_error(L, "from_bytes: %d dimensions", ndim);
    for (int d = 0; d < ndim; d++) {
      lua_geti(L, 3, d + 1);
      lua_Integer n = luaL_checkinteger(L, -1);
      lua_pop(L, 1);
      if (n < 0 || (numel > 0 && n > INT64_MAX / 4 / (numel * (int64_t)es)))
        return luaL_error(L, "from_bytes: bad size %I", n);
      sizes[d] = n;
      numel *= n;
    }
  }
  if ((size_t)numel * es > len - (size_t)off)
    return luaL_error(L, "from_bytes: %I %s elements need %I bytes, %I are left", (lua_Integer)numel,
                      lt_dtype_name(dt), (lua_Integer)(numel * (int64_t)es), (lua_Integer)(len - (size_t)off));
  lt_tensor_t *t = lt_empty(ndim, sizes, dt, lt_device(LT_CPU, 0));
  if (!t) return lt_lua_error(L);
  if (numel > 0) memcpy(lt_data(t), p + off, (size_t)numel * es);
  lt_lua_pushtensor(L, t);
  return 1;
}

/* ---- groups ---- */

/* new_group(ranks, timeout) -> the group, or nil on a rank not in it; ranks: ascending, valid ranks
   of the default group (checked by the caller) */
static int l_new_group(lua_State *L) {
  group_t *parent = default_group(L, "new_group");
  lt_comm_t *c = parent->comm;
  luaL_checktype(L, 1, LUA_TTABLE);
  double timeout = luaL_checknumber(L, 2);
  int n = (int)luaL_len(L, 1);
  NEED_OP(L, c, new_group, "new_group");
  int *ranks = lua_newuserdatauv(L, sizeof *ranks * (size_t)(n > 0 ? n : 1), 0);
  for (int i = 0; i < n; i++) {
    lua_geti(L, 1, i + 1);
    ranks[i] = (int)luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  group_t **pg = lua_newuserdatauv(L, sizeof *pg, 0);
  *pg = NULL;
  luaL_setmetatable(L, GROUP_MT);
  group_t *g = calloc(1, sizeof *g);
  if (!g) return luaL_error(L, "new_group: out of memory");
  lt_comm_t *sub = NULL;
  wait_reducers();
  if (c->ops->new_group(c, ranks, n, timeout, &sub) != LT_OK) {
    free(g);
    return lt_lua_error(L);
  }
  if (!sub) {
    free(g);
    lua_pushnil(L);
    return 1;
  }
  g->comm = sub;
  g->refs = 1;
  *pg = g;
  return 1;
}

/* group:destroy() (destroy_process_group(group)): the group is unusable after; its communicator
   goes with the last transfer or reducer using it */
static int g_destroy(lua_State *L) {
  group_t **pg = luaL_checkudata(L, 1, GROUP_MT);
  if (*pg) group_unref(*pg);
  *pg = NULL;
  return 0;
}

/* ---- the reducer ---- */
typedef struct {
  int first, last;        /* its parameters: order[first .. last) */
  int pending;            /* parameters not ready yet in this backward */
  lt_tensor_t *flat;
  bool late;              /* a gradient came after it started */
} bucket_t;

typedef struct reducer {
  group_t *group;
  int n;                  /* parameters */
  lt_tensor_t **params;   /* retained */
  lt_tensor_t **views;    /* parameter i's place in its bucket's buffer */
  int *bucket_of, *count, *expect, *order;
  int nb;
  bucket_t *b;
  lt_tensor_t **hkeys;    /* open addressing: parameter pointer -> index */
  int *hvals, hcap;
  bool find_unused;
  bool overlap;           /* buckets reduced on the thread during backward, else at its end */
  int64_t cap;            /* bucket bytes */
  int *ready, n_ready;    /* the order parameters got their first gradient in the first backward */
  bool rebuilt;           /* buckets rebuilt from that order (once, as PyTorch) */
  /* per backward */
  bool armed, touched;
  int next_launch;        /* buckets handed to the thread */
  int done;               /* buckets the thread finished */
  /* the thread */
  pthread_t th;
  bool th_started, locks_made, stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int comm_rc;
  char comm_err[1024];
  double comm_seconds, wait_seconds;
  /* PyTorch's error for the next forward, or "" */
  char unused_err[2048];
  struct reducer *next;
} reducer_t;

static reducer_t *reducers;       /* registered ones, under g_mu */

/* A collective called from Lua during a backward that DDP reduces (SyncBatchNorm's all-reduce of
   its gradients' sums) must not race the buckets on the reducers' threads: each rank would start
   the two in its own order. The buckets handed to the threads so far are the same on every rank
   (they are handed over in the backward's order), so the collective waits for them to finish. */
static void wait_reducers(void) {
  pthread_mutex_lock(&g_mu);
  for (reducer_t *r = reducers; r; r = r->next) {
    if (!r->armed) continue;
    pthread_mutex_lock(&r->mu);
    while (r->done < r->next_launch) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
  }
  pthread_mutex_unlock(&g_mu);
}

static int hfind(const reducer_t *r, const lt_tensor_t *t) {
  unsigned h = (unsigned)(((uintptr_t)t >> 4) * 2654435761u) & (unsigned)(r->hcap - 1);
  while (r->hkeys[h]) {
    if (r->hkeys[h] == t) return r->hvals[h];
    h = (h + 1) & (unsigned)(r->hcap - 1);
  }
  return -1;
}

static void hput(reducer_t *r, lt_tensor_t *t, int v) {
  unsigned h = (unsigned)(((uintptr_t)t >> 4) * 2654435761u) & (unsigned)(r->hcap - 1);
  while (r->hkeys[h] && r->hkeys[h] != t) h = (h + 1) & (unsigned)(r->hcap - 1);
  r->hkeys[h] = t;
  r->hvals[h] = v;
}

static void *reducer_thread(void *arg) {
  reducer_t *r = arg;
  lt_comm_t *c = r->group->comm;
  lt_set_grad_enabled(false);
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->stop && r->done >= r->next_launch) pthread_cond_wait(&r->cv, &r->mu);
    if (r->stop) break;
    bucket_t *bk = &r->b[r->done];
    bool skip = r->comm_rc != LT_OK;
    pthread_mutex_unlock(&r->mu);
    double t0 = now_s();
    int rc = skip ? LT_OK : c->ops->all_reduce(c, bk->flat, LT_REDUCE_AVG);
    double dt = now_s() - t0;
    pthread_mutex_lock(&r->mu);
    r->comm_seconds += dt;
    if (rc != LT_OK && r->comm_rc == LT_OK) {
      r->comm_rc = rc;
      snprintf(r->comm_err, sizeof r->comm_err, "%s", lt_last_error());
    }
    r->done++;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  lt_thread_exit();
  return NULL;
}

/* copies bucket k's gradients into its buffer (zeros for parameters without one) */
static int fill_bucket(reducer_t *r, int k) {
  bucket_t *bk = &r->b[k];
  for (int j = bk->first; j < bk->last; j++) {
    int i = r->order[j];
    lt_tensor_t *g = r->params[i]->grad;
    int rc = g ? lt_copy_(r->views[i], g) : lt_fill_(r->views[i], lt_int_operand(0));
    if (rc != LT_OK) return LT_ERR;
  }
  return LT_OK;
}

/* hands ready buckets to the thread, in bucket order (under r->mu) */
static void launch_ready(reducer_t *r) {
  bool any = false;
  if (!r->overlap) return; /* finalize reduces every bucket on the backward's thread */
  while (r->next_launch < r->nb && r->b[r->next_launch].pending == 0) {
    if (fill_bucket(r, r->next_launch) != LT_OK && r->comm_rc == LT_OK) {
      r->comm_rc = LT_ERR;
      snprintf(r->comm_err, sizeof r->comm_err, "DistributedDataParallel: %s", lt_last_error());
    }
    r->next_launch++;
    any = true;
  }
  if (any) pthread_cond_broadcast(&r->cv);
}

static void hook_leaf_grad(void *ud, lt_tensor_t *leaf) {
  (void)ud;
  pthread_mutex_lock(&g_mu);
  for (reducer_t *r = reducers; r; r = r->next) {
    if (!r->armed) continue;
    int i = hfind(r, leaf);
    if (i < 0) continue;
    pthread_mutex_lock(&r->mu);
    r->touched = true;
    int k = r->bucket_of[i];
    int c = ++r->count[i];
    if (c == 1 && !r->rebuilt && r->n_ready < r->n) r->ready[r->n_ready++] = i;
    if (c == r->expect[i]) {
      if (--r->b[k].pending == 0) launch_ready(r);
    } else if (c > r->expect[i] && k < r->next_launch) {
      r->b[k].late = true;
    }
    pthread_mutex_unlock(&r->mu);
  }
  pthread_mutex_unlock(&g_mu);
}

/* reduces bucket k now, on this thread (after the reducer's thread went idle) */
static int reduce_now(reducer_t *r, int k) {
  LT_TRY(fill_bucket(r, k));
  double t0 = now_s();
  int rc = r->group->comm->ops->all_reduce(r->group->comm, r->b[k].flat, LT_REDUCE_AVG);
  r->comm_seconds += now_s() - t0;
  return rc;
}

/* Buckets [k0, k1), none handed to the thread, reduced in place in .grad by the backend's coalesced
   all-reduce (no copy into the buckets and back): their parameters that some rank used (used[i]),
   a zero gradient made for those without one here. Returns 1 when done, 0 when the buckets must
   go through their buffers (no such collective, or a gradient of another dtype or device than its
   parameter), or LT_ERR. */
static int reduce_in_place(reducer_t *r, int k0, int k1, const int32_t *used) {
  lt_comm_t *c = r->group->comm;
  if (!c->ops->all_reduce_coalesced || k0 >= k1) return 0;
  int n = 0;
  for (int j = r->b[k0].first; j < r->b[k1 - 1].last; j++) {
    lt_tensor_t *p = r->params[r->order[j]], *g = p->grad;
    if (!used[r->order[j]]) continue;
    if (g && (g->dtype != p->dtype || !lt_device_eq(g->device, p->device))) return 0;
    n++;
  }
  lt_tensor_t **ts = malloc(sizeof *ts * (size_t)(n ? n : 1));
  if (!ts) return lt_error("DistributedDataParallel: out of memory");
  int m = 0, rc = LT_OK;
  for (int j = r->b[k0].first; j < r->b[k1 - 1].last && rc == LT_OK; j++) {
    int i = r->order[j];
    lt_tensor_t *p = r->params[i];
    if (!used[i]) continue;
    if (!p->grad) {
      p->grad = lt_empty(p->ndim, p->sizes, p->dtype, p->device);
      rc = p->grad ? lt_fill_(p->grad, lt_int_operand(0)) : LT_ERR;
    }
    ts[m++] = p->grad;
  }
  if (rc == LT_OK) {
    double t0 = now_s();
    rc = c->ops->all_reduce_coalesced(c, ts, m, LT_REDUCE_AVG);
    r->comm_seconds += now_s() - t0;
  }
  free(ts);
  return rc == LT_OK ? 1 : LT_ERR;
}

static int build_buckets(reducer_t *r);

/* After the first backward, the buckets follow the order gradients arrived in (rank 0's, so that
   every rank has the same buckets), parameters that got none last: a bucket then fills as early as
   it can. The gradients were copied back into .grad already, so the buffers are free. */
static int rebuild(reducer_t *r) {
  r->rebuilt = true;
  int64_t n = r->n;
  lt_tensor_t *ord = lt_empty(1, &n, LT_INT32, lt_device(LT_CPU, 0));
  if (!ord) return LT_ERR;
  int32_t *o = lt_data(ord);
  bool *seen = calloc((size_t)r->n, sizeof *seen);
  if (!seen) {
    lt_release(ord);
    return lt_error("DistributedDataParallel: out of memory");
  }
  int k = 0;
  for (int j = 0; j < r->n_ready; j++) {
    o[k++] = r->ready[j];
    seen[r->ready[j]] = true;
  }
  for (int i = r->n - 1; i >= 0; i--)
    if (!seen[i]) o[k++] = i;
  free(seen);
  int rc = r->group->comm->ops->broadcast(r->group->comm, ord, 0);
  o = lt_data(ord);
  for (int j = 0; j < r->n && rc == LT_OK; j++) {
    if (o[j] < 0 || o[j] >= r->n) rc = lt_error("DistributedDataParallel: bad bucket order from rank 0");
    else r->order[j] = o[j];
  }
  lt_release(ord);
  return rc == LT_OK ? build_buckets(r) : rc;
}

static int finalize(reducer_t *r) {
  lt_comm_t *c = r->group->comm;
  double t0 = now_s();
  pthread_mutex_lock(&r->mu);
  while (r->done < r->next_launch) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  r->wait_seconds += now_s() - t0;
  if (r->comm_rc != LT_OK) {
    r->comm_rc = LT_OK;
    return lt_error("%s", r->comm_err);
  }
  /* the ranks agree on what is left: flags[i] = used, flags[n + i] = late */
  int64_t nf = 2 * (int64_t)r->n;
  lt_tensor_t *flags = lt_empty(1, &nf, LT_INT32, lt_device(LT_CPU, 0));
  if (!flags) return LT_ERR;
  int32_t *f = lt_data(flags);
  for (int i = 0; i < r->n; i++) {
    f[i] = r->count[i] > 0;
    f[r->n + i] = r->count[i] > r->expect[i] && r->bucket_of[i] < r->next_launch;
  }
  t0 = now_s();
  int rc = c->ops->all_reduce(c, flags, LT_REDUCE_MAX);
  r->comm_seconds += now_s() - t0;
  f = lt_data(flags);
  bool *reduced = calloc((size_t)r->nb, sizeof *reduced);
  if (rc == LT_OK && !reduced) rc = lt_error("DistributedDataParallel: out of memory");
  char *e = r->unused_err;
  size_t room = sizeof r->unused_err;
  /* the buckets still to reduce, each run of one dtype and device reduced in place as one when the
     backend can (in_place[k]: nothing to copy back) */
  bool *in_place = calloc((size_t)r->nb, sizeof *in_place);
  if (rc == LT_OK && !in_place) rc = lt_error("DistributedDataParallel: out of memory");
  for (int k = 0; k < r->nb && rc == LT_OK; k++) {
    bucket_t *bk = &r->b[k];
    bool all_used = true, late = false;
    for (int j = bk->first; j < bk->last; j++) {
      all_used = all_used && f[r->order[j]];
      late = late || f[r->n + r->order[j]];
    }
    if (k < r->next_launch) {
      reduced[k] = true;
      if (late) rc = reduce_now(r, k);
    } else if (all_used || r->find_unused) {
      reduced[k] = true;
      int k1 = k + 1; /* the run of buckets like k, all to reduce */
      while (k1 < r->nb && r->b[k1].flat->dtype == bk->flat->dtype &&
             lt_device_eq(r->b[k1].flat->device, bk->flat->device)) {
        bool all = true;
        for (int j = r->b[k1].first; j < r->b[k1].last; j++) all = all && f[r->order[j]];
        if (!all && !r->find_unused) break;
        k1++;
      }
      int done = reduce_in_place(r, k, k1, f);
      if (done == 1) {
        for (int q = k; q < k1; q++) reduced[q] = in_place[q] = true;
        k = k1 - 1;
      } else if (done == 0) {
        rc = reduce_now(r, k);
      } else {
        rc = LT_ERR;
      }
    } else if (!e[0]) {
      int len = snprintf(e, room,
        "Expected to have finished reduction in the prior iteration before starting a new one. This error "
        "indicates that your module has parameters that were not used in producing loss. You can enable unused "
        "parameter detection by passing the keyword argument `find_unused_parameters = true` to "
        "`nn.DistributedDataParallel`, and by making sure all `forward` function outputs participate in "
        "calculating loss.\nParameter indices which did not receive grad for rank %d:", c->ops->rank(c));
      for (int i = 0; i < r->n && len > 0 && (size_t)len < room - 16; i++)
        if (!f[i]) len += snprintf(e + len, room - (size_t)len, " %d", i + 1);
    }
  }
  /* the averages back into .grad: parameters no rank used keep theirs (nil) */
  for (int k = 0; k < r->nb && rc == LT_OK; k++) {
    if (!reduced[k] || in_place[k]) continue;
    for (int j = r->b[k].first; j < r->b[k].last && rc == LT_OK; j++) {
      int i = r->order[j];
      lt_tensor_t *p = r->params[i];
      if (!f[i]) continue;
      if (p->grad) rc = lt_copy_(p->grad, r->views[i]);
      else rc = (p->grad = lt_clone(r->views[i])) ? LT_OK : LT_ERR;
    }
  }
  for (int i = 0; i < r->n; i++)
    if (r->count[i] > 0) r->expect[i] = r->count[i];
  free(reduced);
  free(in_place);
  lt_release(flags);
  if (rc == LT_OK && !r->rebuilt) rc = rebuild(r);
  return rc;
}

static int hook_backward_end(void *ud, int rc) {
  (void)ud;
  /* reducers to finish, taken off the armed state under the lock; finished without it */
  reducer_t *finishing[16];
  int nt = 0;
  pthread_mutex_lock(&g_mu);
  for (reducer_t *r = reducers; r && nt < 16; r = r->next)
    if (r->armed && r->touched) {
      r->armed = false;
      finishing[nt++] = r;
    }
  pthread_mutex_unlock(&g_mu);
  for (int t = 0; t < nt; t++) {
    reducer_t *r = finishing[t];
    if (rc == LT_OK) rc = finalize(r);
    else {
      pthread_mutex_lock(&r->mu);
      while (r->done < r->next_launch) pthread_cond_wait(&r->cv, &r->mu);
      pthread_mutex_unlock(&r->mu);
    }
  }
  return rc;
}

static const lt_ag_hooks_t ddp_hooks = {hook_leaf_grad, hook_backward_end, NULL};

static reducer_t *check_reducer(lua_State *L) {
  reducer_t **pr = luaL_checkudata(L, 1, REDUCER_MT);
  if (!*pr) luaL_error(L, "DistributedDataParallel: the reducer is closed");
  return *pr;
}

static void reducer_free(reducer_t *r) {
  pthread_mutex_lock(&g_mu);
  for (reducer_t **p = &reducers; *p; p = &(*p)->next)
    if (*p == r) { *p = r->next; break; }
  pthread_mutex_unlock(&g_mu);
  if (r->th_started) {
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
  }
  if (r->locks_made) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
  }
  for (int i = 0; i < r->n; i++) {
    if (r->params) lt_release(r->params[i]);
    if (r->views) lt_release(r->views[i]);
  }
  for (int k = 0; k < r->nb && r->b; k++) lt_release(r->b[k].flat);
  free(r->params); free(r->views); free(r->bucket_of); free(r->count); free(r->expect); free(r->order); free(r->ready);
  free(r->b); free(r->hkeys); free(r->hvals);
  if (r->group) group_unref(r->group);
  free(r);
}

/* groups the parameters into buckets in r->order (reverse parameter order at first), one dtype
   each, up to r->cap bytes (the first one up to 1 MiB); makes their buffers */
static int build_buckets(reducer_t *r) {
  int64_t cap = r->cap, first_cap = cap < (1 << 20) ? cap : (1 << 20);
  for (int k = 0; k < r->nb; k++) {
    lt_release(r->b[k].flat);
    r->b[k].flat = NULL;
  }
  for (int i = 0; i < r->n; i++) {
    lt_release(r->views[i]);
    r->views[i] = NULL;
  }
  r->nb = 0;
  int64_t bytes = 0;
  for (int j = 0; j < r->n; j++) {
    int i = r->order[j];
    lt_tensor_t *p = r->params[i];
    int64_t pb = p->numel * (int64_t)lt_elsize(p);
    int64_t limit = r->nb <= 1 ? first_cap : cap;
    bool open_new = r->nb == 0 || r->params[r->order[r->b[r->nb - 1].first]]->dtype != p->dtype ||
                    (bytes > 0 && bytes + pb > limit);
    if (open_new) {
      r->b[r->nb].first = j;
      r->nb++;
      bytes = 0;
    }
    r->b[r->nb - 1].last = j + 1;
    r->bucket_of[i] = r->nb - 1;
    bytes += pb;
  }
  for (int k = 0; k < r->nb; k++) {
    bucket_t *bk = &r->b[k];
    int64_t total = 0;
    for (int j = bk->first; j < bk->last; j++) total += r->params[r->order[j]]->numel;
    lt_tensor_t *p0 = r->params[r->order[bk->first]];
    if (!(bk->flat = lt_empty(1, &total, p0->dtype, p0->device))) return LT_ERR;
    int64_t off = 0;
    for (int j = bk->first; j < bk->last; j++) {
      int i = r->order[j];
      lt_tensor_t *p = r->params[i];
      int64_t strides[LT_MAX_DIM];
      lt_contiguous_strides(p->ndim, p->sizes, strides);
      if (!(r->views[i] = lt_view_geometry(bk->flat, p->ndim, p->sizes, strides, off))) return LT_ERR;
      off += p->numel;
    }
  }
  return LT_OK;
}

/* Whether a reducer over c overlaps its all-reduces with backward: always for NCCL (the device does
   the work), for MPI when this rank has two cores or more: the CPUs it may run on, shared with the
   other ranks on the node when it is not bound (the whole machine in its mask). */
static bool want_overlap(lt_comm_t *c) {
  const char *force = getenv("LUTORCH_DDP_OVERLAP");
  if (force && (force[0] == '0' || force[0] == '1') && !force[1]) return force[0] == '1';
  if (strcmp(c->ops->name, "mpi") != 0) return true;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return true;
  long cpus = CPU_COUNT(&set), online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0 && cpus >= online) {
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!ls) ls = getenv("LOCAL_WORLD_SIZE");
    long local = ls ? strtol(ls, NULL, 10) : 1;
    if (local > 1) cpus /= local;
  }
  return cpus >= 2;
}

/* _dist.reducer(params, bucket_cap_bytes, find_unused, group = the default one) */
static int l_reducer(lua_State *L) {
  group_t *group = check_group(L, 4, "DistributedDataParallel");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer cap = luaL_checkinteger(L, 2);
  bool find_unused = lua_toboolean(L, 3);
  int n = (int)luaL_len(L, 1);
  if (n <= 0) return luaL_error(L, "DistributedDataParallel: no parameters to reduce");
  if (cap <= 0) return luaL_error(L, "DistributedDataParallel: bucket_cap_mb must be positive");
  reducer_t **pr = lua_newuserdatauv(L, sizeof *pr, 0);
  *pr = NULL;
  luaL_setmetatable(L, REDUCER_MT);
  reducer_t *r = calloc(1, sizeof *r);
  if (!r) return luaL_error(L, "DistributedDataParallel: out of memory");
  *pr = r;
  r->n = n;
  r->find_unused = find_unused;
  r->hcap = 16;
  while (r->hcap < 2 * n) r->hcap *= 2;
  r->params = calloc((size_t)n, sizeof *r->params);
  r->views = calloc((size_t)n, sizeof *r->views);
  r->bucket_of = calloc((size_t)n, sizeof(int));
  r->count = calloc((size_t)n, sizeof(int));
  r->expect = calloc((size_t)n, sizeof(int));
  r->order = calloc((size_t)n, sizeof(int));
  r->ready = calloc((size_t)n, sizeof(int));
  r->b = calloc((size_t)n, sizeof *r->b);
  r->hkeys = calloc((size_t)r->hcap, sizeof *r->hkeys);
  r->hvals = calloc((size_t)r->hcap, sizeof *r->hvals);
  if (!r->params || !r->views || !r->bucket_of || !r->count || !r->expect || !r->order || !r->ready || !r->b || !r->hkeys ||
      !r->hvals)
    return luaL_error(L, "DistributedDataParallel: out of memory");
  for (int i = 0; i < n; i++) {
    lua_geti(L, 1, i + 1);
    lt_tensor_t *p = lt_lua_totensor(L, -1);
    lua_pop(L, 1);
    if (!p) return luaL_error(L, "DistributedDataParallel: parameter %d is not a tensor", i + 1);
    if (hfind(r, p) >= 0) return luaL_error(L, "DistributedDataParallel: parameter %d is listed twice", i + 1);
    lt_retain(p);
    r->params[i] = p;
    r->expect[i] = 1;
    hput(r, p, i);
  }
  r->cap = cap;
  for (int j = 0; j < n; j++) r->order[j] = n - 1 - j;
  if (build_buckets(r) != LT_OK) return lt_lua_error(L);
  pthread_mutex_lock(&g_mu);
  r->group = group;
  group->refs++;
  pthread_mutex_unlock(&g_mu);
  if (pthread_mutex_init(&r->mu, NULL) != 0 || pthread_cond_init(&r->cv, NULL) != 0)
    return luaL_error(L, "DistributedDataParallel: cannot create the reducer's lock");
  r->locks_made = true;
  /* with find_unused_parameters the ranks may use different parameters, so a bucket complete on
     one rank during backward may never be on another: every bucket waits for the end of backward,
     where the ranks agree on what was used (PyTorch marks the unused ones ready after the forward,
     from a walk of the graph) */
  r->overlap = want_overlap(r->group->comm) && !find_unused;
  if (r->overlap) {
    if (pthread_create(&r->th, NULL, reducer_thread, r) != 0)
      return luaL_error(L, "DistributedDataParallel: cannot start the communication thread");
    r->th_started = true;
  }
  pthread_mutex_lock(&g_mu);
  r->next = reducers;
  reducers = r;
  pthread_mutex_unlock(&g_mu);
  lt_ag_set_hooks(&ddp_hooks);
  return 1;
}

/* reducer:prepare(): arms it for the backward of this forward; raises the error left by the last
   one */
static int r_prepare(lua_State *L) {
  reducer_t *r = check_reducer(L);
  if (r->unused_err[0]) {
    lua_pushstring(L, r->unused_err);
    r->unused_err[0] = 0;
    return lua_error(L);
  }
  pthread_mutex_lock(&g_mu);
  pthread_mutex_lock(&r->mu);
  for (int i = 0; i < r->n; i++) r->count[i] = 0;
  for (int k = 0; k < r->nb; k++) {
    r->b[k].pending = 0;
    r->b[k].late = false;
    for (int j = r->b[k].first; j < r->b[k].last; j++) r->b[k].pending += r->expect[r->order[j]] > 0;
  }
  r->next_launch = r->done = 0;
  r->touched = false;
  r->armed = true;
  pthread_mutex_unlock(&r->mu);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* reducer:disarm(): the forward's backward will not be synchronised */
static int r_disarm(lua_State *L) {
  reducer_t *r = check_reducer(L);
  pthread_mutex_lock(&g_mu);
  r->armed = false;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* reducer:stats() -> {comm_seconds, wait_seconds, buckets = {{param indices}, ...}} */
static int r_stats(lua_State *L) {
  reducer_t *r = check_reducer(L);
  lua_createtable(L, 0, 3);
  pthread_mutex_lock(&r->mu);
  lua_pushnumber(L, r->comm_seconds);
  lua_setfield(L, -2, "comm_seconds");
  lua_pushnumber(L, r->wait_seconds);
  lua_setfield(L, -2, "wait_seconds");
  lua_pushboolean(L, r->overlap);
  lua_setfield(L, -2, "overlap");
  pthread_mutex_unlock(&r->mu);
  lua_createtable(L, r->nb, 0);
  for (int k = 0; k < r->nb; k++) {
    lua_createtable(L, r->b[k].last - r->b[k].first, 0);
    for (int j = r->b[k].first; j < r->b[k].last; j++) {
      lua_pushinteger(L, r->order[j] + 1);
      lua_rawseti(L, -2, j - r->b[k].first + 1);
    }
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "buckets");
  return 1;
}

static int r_gc(lua_State *L) {
  reducer_t **pr = luaL_checkudata(L, 1, REDUCER_MT);
  if (*pr) reducer_free(*pr);
  *pr = NULL;
  return 0;
}

void lt_open_distributed(lua_State *L, int torch) {
  static const luaL_Reg rmethods[] = {{"prepare", r_prepare}, {"disarm", r_disarm}, {"stats", r_stats},
                                      {"close", r_gc}, {NULL, NULL}};
  luaL_newmetatable(L, REDUCER_MT);
  lua_pushcfunction(L, r_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, rmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, GROUP_MT);
  lua_pushcfunction(L, g_destroy);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg wmethods[] = {{"wait", w_wait}, {"is_completed", w_is_completed}, {NULL, NULL}};
  luaL_newmetatable(L, WORK_MT);
  lua_pushcfunction(L, w_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, wmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"init", l_init}, {"available", l_available}, {"is_initialized", l_is_initialized}, {"rank", l_rank},
    {"size", l_size}, {"backend", l_backend}, {"destroy", l_destroy}, {"all_reduce", l_all_reduce},
    {"broadcast", l_broadcast}, {"all_gather", l_all_gather}, {"reduce_scatter", l_reduce_scatter},
    {"barrier", l_barrier}, {"reducer", l_reducer}, {"reduce", l_reduce}, {"gather", l_gather},
    {"scatter", l_scatter}, {"all_to_all", l_all_to_all}, {"send", l_send}, {"recv", l_recv}, {"isend", l_isend},
    {"irecv", l_irecv}, {"new_group", l_new_group}, {"destroy_group", g_destroy}, {"to_bytes", l_to_bytes},
    {"from_bytes", l_from_bytes}, {NULL, NULL}};
  luaL_newlib(L, fns);
  static const char *ops[LT_NREDUCE] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
  lua_createtable(L, 0, LT_NREDUCE);
  for (int i = 0; i < LT_NREDUCE; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, ops[i]);
  }
  lua_setfield(L, -2, "ReduceOp");
  lua_setfield(L, torch, "_dist");
}
