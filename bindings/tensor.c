/* The tensor userdata: a box holding one reference to a C tensor, released when Lua frees the box
   (by the allocator of lutorch's states, bindings/lua_alloc.c; by __gc elsewhere). Its __index
   serves methods, properties (shape, dtype, device, ...) and Torch7-style indexing. */
#include "bindings/binding.h"
#include "bindings/lua_alloc.h"
#include "core/autograd.h"
#include "core/shape.h"
#include "core/index.h"
#include "core/reduce.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- boxes ----
   A tensor userdata is a box: a magic number and one reference to a C tensor. Recognising a box
   by its size and magic costs two API calls; comparing metatables through the registry cost a
   fifth of a small op. The metatable is still set (and checked by __gc) for methods. */
#define BOX_MAGIC UINT64_C(0x6c75746f72636821) /* "lutorch!" */
typedef struct {
  uint64_t magic;
  lt_tensor_t *t;
} tensor_box_t;

/* The metatable also sits in the registry under a fixed integer key (in its hash part, away from
   luaL_ref's slots): fetching it by integer is the cheapest lookup the C API offers. */
#define TENSOR_MT_REGKEY 0x4c7554 /* "LuT" */

static tensor_box_t *tobox(lua_State *L, int idx) {
  tensor_box_t *box = lua_touserdata(L, idx);
  if (!box || lua_rawlen(L, idx) != sizeof *box || box->magic != BOX_MAGIC) return NULL;
  return box;
}

lt_tensor_t *lt_lua_totensor(lua_State *L, int idx) {
  tensor_box_t *box = tobox(L, idx);
  return box ? box->t : NULL;
}

lt_tensor_t *lt_lua_checktensor(lua_State *L, int idx) {
  tensor_box_t *box = tobox(L, idx);
  if (!box) luaL_typeerror(L, idx, "tensor");
  if (!box->t) luaL_error(L, "bad argument #%d: the tensor was already freed", idx);
  return box->t;
}

#define GC_FULL_MIN ((size_t)32 << 20)
/* tensor memory between two steps (minor collections) of the collector: with 1 MiB the
   Fashion-MNIST CNN's activations (1.6-6.4 MB each, every push a minor collection) lived through
   two minor collections, turned old and waited for a full collection, one every step (~1.2 ms of
   9); with 4 MiB they die young */
#define GC_STEP ((size_t)4 << 20)
/* or every 2048 tensors pushed: small tensors' garbage then cycles through ~1 MB of blocks that stay
   in cache (with 4 MiB of 512-byte blocks `c = a + b` on 16 floats took 190 ns instead of 150) */
#define GC_STEP_PUSHES 2048
#define GC_FULL_MIN_DEVICE ((size_t)256 << 20)
static _Thread_local size_t gc_debt, gc_since_full, gc_full_threshold = GC_FULL_MIN;
static _Thread_local size_t gc_dev_since_full, gc_dev_full_threshold = GC_FULL_MIN_DEVICE;
static _Thread_local lua_Integer gc_fulls, gc_steps; /* collections started here (torch._gc_counts) */
static _Thread_local int gc_pushes; /* tensors pushed since the last step */

/* c + d, not below 0 */
static size_t gc_add(size_t c, int64_t d) {
  if (d >= 0) return c + (size_t)d;
  return (size_t)-d >= c ? 0 : c - (size_t)-d;
}

/* The host memory to allocate (net of what was given back) before the next full collection, after
   one that found `freed` bytes of tensors dead among the `since` allocated before it, with `live`
   left: the base, max(live, GC_FULL_MIN), when most of what is allocated dies old (the garbage then
   stays below the live size); else as much more as keeps the garbage expected at that rate under
   half the base, by at most 3 GC_FULL_MIN (96 MiB: what a program whose temporaries start dying old
   can hold before the next full collection sets the base again). A training step's temporaries
   mostly die young (minor collections free them, and their memory is then no longer counted), and a
   full collection costs 0.5-1.3 ms (the library's Lua heap is marked): the MLP step at batch 64
   runs none in 1000 steps, the Fashion-MNIST CNN ~11 an epoch (one a step when every byte allocated
   counted). */
static double full_base(size_t live) { return (double)(live > GC_FULL_MIN ? live : GC_FULL_MIN); }
static size_t full_most(size_t live) { return (size_t)(full_base(live) + 3.0 * GC_FULL_MIN); }
static size_t full_threshold(size_t live, size_t freed, size_t since) {
  const double base = full_base(live), most = (double)full_most(live);
  double t = freed > 0 ? 0.5 * base * (double)since / (double)freed : most;
  if (t < base) t = base;
  if (t > most) t = most;
  return (size_t)t;
}

/* torch._gc_full_threshold(live, freed, since) -> bytes (for the specs) */
static int f_gc_full_threshold(lua_State *L) {
  lua_Integer a[3];
  for (int i = 0; i < 3; i++) {
    a[i] = luaL_checkinteger(L, i + 1);
    if (a[i] < 0) return luaL_error(L, "_gc_full_threshold: argument %d is negative", i + 1);
  }
  lua_pushinteger(L, (lua_Integer)full_threshold((size_t)a[0], (size_t)a[1], (size_t)a[2]));
  return 1;
}

/* torch._gc_counts() -> the full collections and the steps the tensor memory started on this
   thread (for the specs) */
static int f_gc_counts(lua_State *L) {
  lua_pushinteger(L, gc_fulls);
  lua_pushinteger(L, gc_steps);
  return 2;
}

lt_tensor_t *lt_lua_one_based(lt_tensor_t *idx) {
  if (!idx) return NULL;
  lt_tensor_t *r = lt_binary(LT_BINARY_add, lt_tensor_operand(idx), lt_int_operand(1), 1, idx);
  if (!r) { lt_release(idx); return NULL; }
  lt_release(r);
  return idx;
}

void lt_lua_pushtensor(lua_State *L, lt_tensor_t *t) {
  if (!t) { lt_lua_error(L); return; }
  /* in lutorch's own states the allocator releases the tensor when Lua frees the box (no __gc) */
  tensor_box_t *box = lt_lua_newbox(L, sizeof *box);
  box->magic = BOX_MAGIC;
  box->t = t;
  lua_rawgeti(L, LUA_REGISTRYINDEX, TENSOR_MT_REGKEY);
  lua_setmetatable(L, -2);
  if (atomic_load_explicit(&lt_anomaly_on, memory_order_relaxed)) lt_lua_anomaly_trace(L, t);
  /* Tell the collector about tensor memory, so that loops of temporaries stay flat. The collector
     sees a tensor as a few bytes; steps (minor collections in generational mode) free the young
     ones, but a tensor that lived through one (an activation held by the graph during a step)
     turns old and waits for a major collection, which Lua schedules by its own, small, heap. So a
     full collection also runs whenever the tensor memory allocated since the last one exceeds
     what was live after it (and at least GC_FULL_MIN): garbage stays below the live size. A full
     collection costs in proportion to the Lua heap (the library's ~2 MB), so device memory (CUDA:
     large, and batches of hundreds of MB a step) is counted apart with a floor of its own,
     GC_FULL_MIN_DEVICE: with the host's floor a CNN step on a GPU ran ~7 full collections and took
     twice as long. When full collections find little dead (most temporaries die young), the host's
     threshold grows, by up to 96 MiB (full_threshold). Memory is counted net of what this thread
     gave back (lt_alloc_take_pressure): a kernel's work buffer or a gradient the engine freed
     within the op is no garbage of Lua's, and counting it ran a full collection every CNN step. */
  int64_t p = lt_alloc_take_pressure(false), pd = lt_alloc_take_pressure(true);
  gc_debt = gc_add(gc_debt, p + pd);
  gc_since_full = gc_add(gc_since_full, p);
  gc_dev_since_full = gc_add(gc_dev_since_full, pd);
  if (gc_since_full > gc_full_threshold || gc_dev_since_full > gc_dev_full_threshold) {
    size_t before = lt_alloc_live_bytes(false), since = gc_since_full;
    lua_gc(L, LUA_GCCOLLECT);
    gc_fulls++;
    gc_debt = gc_since_full = gc_dev_since_full = 0;
    gc_pushes = 0;
    size_t live = lt_alloc_live_bytes(false), dev_live = lt_alloc_live_bytes(true);
    gc_full_threshold = full_threshold(live, before > live ? before - live : 0, since);
    gc_dev_full_threshold = dev_live > GC_FULL_MIN_DEVICE ? dev_live : GC_FULL_MIN_DEVICE;
  } else if (gc_debt > GC_STEP || ++gc_pushes > GC_STEP_PUSHES) {
    gc_pushes = 0;
    size_t kb = gc_debt >> 10;
    gc_debt = 0;
    gc_steps++;
    lua_gc(L, LUA_GCSTEP, kb > 1000000 ? 1000000 : (int)kb);
    /* the threshold was set for what was live at the last full collection: at most what is live
       now allows (a program that held much then and little now would else wait for that much
       garbage) */
    size_t cap = full_most(lt_alloc_live_bytes(false));
    if (gc_full_threshold > cap) gc_full_threshold = cap;
  }
}

void lt_lua_pushresult(lua_State *L, lt_tensor_t *r, bool inplace) {
  if (!inplace) { lt_lua_pushtensor(L, r); return; }
  if (!r) lt_lua_error(L);
  lt_release(r);
  lua_pushvalue(L, 1);
}

int lt_lua_error(lua_State *L) {
  const char *msg = lt_last_error();
  return luaL_error(L, "%s", *msg ? msg : "unknown error");
}

void lt_lua_box_release(void *p) {
  tensor_box_t *box = p;
  if (box->magic != BOX_MAGIC) return;
  lt_release(box->t);
  box->t = NULL;
  box->magic = 0;
}

static int t_gc(lua_State *L) {
  tensor_box_t *box = tobox(L, 1);
  if (!box) return 0;
  lua_State *prev = lt_lua_finalizing;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lt_lua_finalizing = lua_tothread(L, -1); /* a Lua function's node freed now may unref at once */
  lua_pop(L, 1);
  lt_release(box->t);
  lt_lua_finalizing = prev;
  box->t = NULL;
  box->magic = 0;
  return 0;
}

/* ---- reading values ---- */
/* The values in host memory, contiguous: a device's tensor is copied to the host first (which
   waits for the work queued on it), since the CPU cannot read device memory. */
static lt_tensor_t *host_contiguous(lt_tensor_t *t) {
  if (t->device.type == LT_CPU) return lt_contiguous(t);
  return lt_convert(t, t->dtype, lt_device(LT_CPU, 0));
}

/* t in host memory (see host_contiguous) */
static void push_element(lua_State *L, const lt_tensor_t *t, int64_t i) {
  if (lt_dtype_is_floating(t->dtype)) lua_pushnumber(L, lt_get_double(t, i));
  else if (t->dtype == LT_BOOL) lua_pushboolean(L, (int)lt_get_int(t, i));
  else lua_pushinteger(L, lt_get_int(t, i));
}

static int t_item(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (t->numel != 1)
    return luaL_error(L, "item: a tensor with %d elements cannot be converted to a number", (int)t->numel);
  if (t->device.type != LT_CPU) {
    lt_tensor_t *h = host_contiguous(t);
    if (!h) return lt_lua_error(L);
    push_element(L, h, 0);
    lt_release(h);
    return 1;
  }
  push_element(L, t, 0);
  return 1;
}

/* all values, row-major, as one flat array (used by printing) */
static int t_flat(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_tensor_t *c = host_contiguous(t);
  if (!c) return lt_lua_error(L);
  lua_createtable(L, (int)(c->numel < 1 << 30 ? c->numel : 0), 0);
  for (int64_t i = 0; i < c->numel; i++) {
    push_element(L, c, i);
    lua_rawseti(L, -2, i + 1);
  }
  lt_release(c);
  return 1;
}

static void push_nested(lua_State *L, const lt_tensor_t *c, int dim, int64_t *pos) {
  if (dim == c->ndim) { push_element(L, c, (*pos)++); return; }
  lua_createtable(L, (int)c->sizes[dim], 0);
  for (int64_t i = 0; i < c->sizes[dim]; i++) {
    push_nested(L, c, dim + 1, pos);
    lua_rawseti(L, -2, i + 1);
  }
}

static int t_totable(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_tensor_t *c = host_contiguous(t);
  if (!c) return lt_lua_error(L);
  int64_t pos = 0;
  luaL_checkstack(L, c->ndim + 4, "totable: too many dimensions");
  push_nested(L, c, 0, &pos);
  lt_release(c);
  return 1;
}

/* A shape: an array of sizes with the torch.Size metatable (printing, ==). */
static void push_sizes(lua_State *L, int n, const int64_t *v) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  luaL_setmetatable(L, "torch.Size");
}

static int t_size(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (lua_isnoneornil(L, 2)) { push_sizes(L, t->ndim, t->sizes); return 1; }
  int d;
  if (t->ndim == 0) return luaL_error(L, "size: a 0-dim tensor has no dimensions");
  if (lt_wrap_dim("size", lt_lua_checkdim(L, 2, "size"), t->ndim, &d) != LT_OK) return lt_lua_error(L);
  lua_pushinteger(L, t->sizes[d]);
  return 1;
}

static int t_stride(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (lua_isnoneornil(L, 2)) {
    push_sizes(L, t->ndim, t->strides);
    lua_pushnil(L);
    lua_setmetatable(L, -2); /* strides are a plain table */
    return 1;
  }
  int d;
  if (t->ndim == 0) return luaL_error(L, "stride: a 0-dim tensor has no dimensions");
  if (lt_wrap_dim("stride", lt_lua_checkdim(L, 2, "stride"), t->ndim, &d) != LT_OK) return lt_lua_error(L);
  lua_pushinteger(L, t->strides[d]);
  return 1;
}

static int t_dim(lua_State *L) { lua_pushinteger(L, lt_lua_checktensor(L, 1)->ndim); return 1; }
static int t_numel(lua_State *L) { lua_pushinteger(L, lt_lua_checktensor(L, 1)->numel); return 1; }
static int t_is_contiguous(lua_State *L) { lua_pushboolean(L, lt_is_contiguous(lt_lua_checktensor(L, 1))); return 1; }
static int t_element_size(lua_State *L) { lua_pushinteger(L, (lua_Integer)lt_elsize(lt_lua_checktensor(L, 1))); return 1; }
/* x:data_ptr(): the address of x's first element, as an integer (a device address for CUDA tensors) */
static int t_data_ptr(lua_State *L) { lua_pushinteger(L, (lua_Integer)(intptr_t)lt_data(lt_lua_checktensor(L, 1))); return 1; }
/* x:_storage_numel(): the elements x's storage holds (lua/torch/shapes.lua's as_strided) */
static int t_storage_numel(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lua_pushinteger(L, (lua_Integer)(t->storage->nbytes / lt_elsize(t)));
  return 1;
}
static int t_storage_offset(lua_State *L) { lua_pushinteger(L, lt_lua_checktensor(L, 1)->offset); return 1; }
static int t_is_floating_point(lua_State *L) { lua_pushboolean(L, lt_dtype_is_floating(lt_lua_checktensor(L, 1)->dtype)); return 1; }
static int t_len(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (t->ndim == 0) return luaL_error(L, "len() of a 0-d tensor");
  lua_pushinteger(L, t->sizes[0]);
  return 1;
}

static int t_tostring(lua_State *L) {
  lt_lua_checktensor(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "lutorch.format");
  if (lua_isnil(L, -1)) { lua_pushliteral(L, "tensor(...)"); return 1; }
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}

/* ---- Torch7-style indexing, with PyTorch's forms ----
   A key is a number, a range table {first, last[, step]} ({} a whole dim), or a table of those
   mixed with '...' (as many whole dims as needed), torch.newaxis (a new dim of size 1) and index
   tensors (int64/int32 values, bool masks; a 0-dim integer tensor is a number, as in PyTorch).
   The basic forms give a view here; index tensors are collected, with their dims, for the Lua side
   (lua/torch/advanced_index.lua): Tensor._index_advanced gathers the elements they select, and
   Tensor._index_put writes assignments with index tensors or with autograd to record. */

/* torch.newaxis: a table known by identity, kept in the registry under this key */
#define NEWAXIS_REGKEY 0x4c754e /* "LuN" */

/* whether the empty table at stack index key is torch.newaxis (a plain {} has no metatable) */
static bool is_newaxis(lua_State *L, int key) {
  if (!lua_getmetatable(L, key)) return false;
  lua_pop(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, NEWAXIS_REGKEY);
  bool r = lua_rawequal(L, key, -1);
  lua_pop(L, 1);
  return r;
}

/* raise msg after releasing the view being built */
__attribute__((noreturn)) static void view_error(lua_State *L, lt_tensor_t *v, const char *fmt, ...) {
  lt_release(v);
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_error(L);
  __builtin_unreachable();
}

/* element k of the range table at key, an integer */
static int64_t range_bound(lua_State *L, lt_tensor_t *v, int key, int k) {
  lua_rawgeti(L, key, k);
  int64_t r;
  if (!lt_lua_toint(L, -1, &r))
    view_error(L, v, "index: a range is {first, last[, step]} of integers, got %s at its position %d",
               luaL_typename(L, -1), k);
  lua_pop(L, 1);
  return r;
}

/* The steps of a basic key as index_view takes its view (core/index.h), for an assignment that
   autograd records; n counts past LT_KEY_MAX_STEPS when they do not fit. NULL: not recorded. */
typedef struct {
  int n;
  lt_key_step_t s[LT_KEY_MAX_STEPS];
} key_steps_t;

static void add_step(key_steps_t *k, lt_key_kind kind, int dim, int64_t start, int64_t stop, int64_t step) {
  if (!k) return;
  if (k->n < LT_KEY_MAX_STEPS) k->s[k->n] = (lt_key_step_t){kind, dim, start, stop, step};
  k->n++;
}

/* Apply one index key to a view: number (select), {first, last[, step]} range, {} whole dim.
   Returns the new view (a new reference; v is released) and advances *dim. */
static lt_tensor_t *index_one(lua_State *L, lt_tensor_t *v, int key, int *dim, key_steps_t *steps) {
  if (*dim >= v->ndim) view_error(L, v, "index: too many indices for a tensor of dimension %d", v->ndim);
  lt_tensor_t *r;
  if (lua_type(L, key) == LUA_TNUMBER) {
    int64_t i;
    if (!lt_lua_toint(L, key, &i)) view_error(L, v, "index: indices must be integers, got %s", luaL_tolstring(L, key, NULL));
    if (i == 0) view_error(L, v, "index: index 0 is invalid: indices are 1-based (1 is the first, -1 the last)");
    r = lt_select(v, *dim, i > 0 ? i - 1 : i);
    add_step(steps, LT_KEY_SELECT, *dim, i > 0 ? i - 1 : i, 0, 0);
  } else if (lua_istable(L, key)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, key);
    int64_t size = v->sizes[*dim];
    int64_t a = 1, b = size, step = 1;
    if (n > 3) view_error(L, v, "index: a range is {first, last[, step]}, got a table of %d elements", (int)n);
    if (n >= 1) b = a = range_bound(L, v, key, 1);
    if (n >= 2) b = range_bound(L, v, key, 2);
    if (n >= 3) step = range_bound(L, v, key, 3);
    if (a == 0 || b == 0) view_error(L, v, "index: a range is {first, last[, step]} with 1-based (or negative) bounds");
    if (step < 1)
      view_error(L, v, "index: a range's step must be positive, got %d (negative steps are refused, as in PyTorch: "
                       "use flip)", (int)step);
    if (a < 0) a += size + 1;
    if (b < 0) b += size + 1;
    if (a < 1 || a > size + 1 || b < a - 1 || b > size)
      view_error(L, v, "index: range {%I, %I} out of bounds for dimension %d of size %I", (lua_Integer)a,
                 (lua_Integer)b, *dim + 1, (lua_Integer)size);
    r = step == 1 ? lt_narrow(v, *dim, a - 1, b - a + 1) : lt_slice(v, *dim, a - 1, b, step);
    add_step(steps, LT_KEY_SLICE, *dim, a - 1, b, step);
    (*dim)++;
  } else {
    view_error(L, v, "index: expected a number, a {first, last[, step]} range, '...', torch.newaxis or an index "
                     "tensor, got %s", luaL_typename(L, key));
  }
  lt_release(v);
  if (!r) lt_lua_error(L);
  return r;
}

/* the dims of the tensor that entries from..n of the key table consume (for '...'), or -1 when
   one of them is a second '...' */
static int consumed_after(lua_State *L, int key, lua_Integer from, lua_Integer n) {
  int c = 0;
  for (lua_Integer i = from; i <= n; i++) {
    int ty = lua_rawgeti(L, key, i);
    lt_tensor_t *k;
    if (ty == LUA_TSTRING) {
      if (strcmp(lua_tostring(L, -1), "...") == 0) { lua_pop(L, 1); return -1; }
      c++;
    } else if (ty == LUA_TTABLE) c += !(lua_rawlen(L, -1) == 0 && is_newaxis(L, lua_gettop(L)));
    else if ((k = lt_lua_totensor(L, -1))) c += k->dtype == LT_BOOL ? k->ndim : 1;
    else c++;
    lua_pop(L, 1);
  }
  return c;
}

/* An index tensor entry (at stack index e) of the key: a record {tensor, view dim, tensor dim}
   (1-based) appended to the table at *adv (created at first, just below e, with *adv set; returns
   the entry's new stack index). A 0-dim mask gets a new dim of size 1 to cover. */
static int collect_tensor(lua_State *L, lt_tensor_t **v, int e, lt_tensor_t *k, int *dim, int *xdim, int *adv) {
  if (!*adv) {
    lua_createtable(L, 2, 0);
    lua_insert(L, e);
    *adv = e++;
  }
  bool mask = k->dtype == LT_BOOL;
  int covers = mask ? k->ndim : 1;
  if (mask && covers == 0) {
    lt_tensor_t *u = lt_unsqueeze(*v, *dim);
    lt_release(*v);
    if (!(*v = u)) lt_lua_error(L);
    covers = 1;
    (*xdim)--; /* the new dim is no dim of the tensor */
  }
  if (*dim + covers > (*v)->ndim)
    view_error(L, *v, "index: too many indices for a tensor of dimension %d", (*v)->ndim);
  lua_createtable(L, 3, 0);
  lua_pushvalue(L, e);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, *dim + 1);
  lua_rawseti(L, -2, 2);
  lua_pushinteger(L, *xdim + 1);
  lua_rawseti(L, -2, 3);
  lua_rawseti(L, *adv, (lua_Integer)lua_rawlen(L, *adv) + 1);
  *dim += covers;
  *xdim += covers;
  return e;
}

/* The view that key (at stack index key) selects from t with its basic forms (a new reference).
   When the key holds index tensors, *adv is the stack index of the table of their records
   (pushed on the stack), else 0. steps (or NULL) receives the steps of a basic key. */
static lt_tensor_t *index_view(lua_State *L, lt_tensor_t *t, int key, int *adv, key_steps_t *steps) {
  lt_tensor_t *v = t; /* not an alias: the views keep t's autograd history */
  lt_retain(v);
  int dim = 0, xdim = 0; /* the next dim of the view, and of t */
  *adv = 0;
  if (!lua_istable(L, key)) return index_one(L, v, key, &dim, steps);
  lua_Integer n = (lua_Integer)lua_rawlen(L, key);
  if (n == 0 && is_newaxis(L, key)) { /* x[torch.newaxis] */
    lt_tensor_t *u = lt_unsqueeze(v, 0);
    lt_release(v);
    if (!u) lt_lua_error(L);
    add_step(steps, LT_KEY_NEWAXIS, 0, 0, 0, 0);
    return u;
  }
  bool ellipsis = false;
  for (lua_Integer i = 1; i <= n; i++) {
    int ty = lua_rawgeti(L, key, i);
    int e = lua_gettop(L);
    lt_tensor_t *k;
    if (ty == LUA_TNUMBER || (ty == LUA_TTABLE && !(lua_rawlen(L, e) == 0 && is_newaxis(L, e)))) {
      v = index_one(L, v, e, &dim, steps);
      xdim++;
    } else if (ty == LUA_TTABLE) { /* torch.newaxis */
      lt_tensor_t *u = lt_unsqueeze(v, dim);
      lt_release(v);
      if (!(v = u)) lt_lua_error(L);
      add_step(steps, LT_KEY_NEWAXIS, dim, 0, 0, 0);
      dim++;
    } else if (ty == LUA_TSTRING && strcmp(lua_tostring(L, e), "...") == 0) {
      int rest = ellipsis ? -1 : consumed_after(L, key, i + 1, n);
      if (rest < 0) view_error(L, v, "index: an index can only have a single ellipsis ('...')");
      ellipsis = true;
      int whole = v->ndim - dim - rest;
      if (whole < 0) view_error(L, v, "index: too many indices for a tensor of dimension %d", t->ndim);
      dim += whole;
      xdim += whole;
    } else if (ty == LUA_TUSERDATA && (k = lt_lua_totensor(L, e))) {
      if (k->ndim == 0 && (k->dtype == LT_INT64 || k->dtype == LT_INT32)) { /* a number, as in PyTorch */
        lt_operand_t n = lt_int_operand(0);
        if (lt_item(k, &n) != LT_OK) { lt_release(v); lt_lua_error(L); }
        lua_pushinteger(L, (lua_Integer)n.i);
        v = index_one(L, v, lua_gettop(L), &dim, steps);
        lua_pop(L, 1);
        xdim++;
      } else {
        e = collect_tensor(L, &v, e, k, &dim, &xdim, adv);
      }
    } else if (ty == LUA_TSTRING) {
      view_error(L, v, "index: unknown index string '%s' (the forms are '...' and torch.newaxis)", lua_tostring(L, e));
    } else {
      v = index_one(L, v, e, &dim, NULL); /* raises, naming the type */
    }
    lua_pop(L, 1);
  }
  return v;
}

/* An index tensor of user row numbers (1-based, negative from the end) for a dim of `size`, as
   0-based int64 (a new reference); raises on 0. */
static lt_tensor_t *user_rows(lua_State *L, lt_tensor_t *key, int64_t size) {
  if (lt_dtype_is_floating(key->dtype) || key->dtype == LT_BOOL || key->dtype == LT_UINT8)
    luaL_error(L, "index: index tensors must be int64 or int32 (or a bool mask), got %s", lt_dtype_name(key->dtype));
  lt_tensor_t *k = lt_convert(key, LT_INT64, key->device);
  if (!k) lt_lua_error(L);
  lt_tensor_t *zero = lt_compare(LT_COMPARE_eq, lt_tensor_operand(k), lt_int_operand(0), NULL);
  lt_tensor_t *any = zero ? lt_any(zero, 0, NULL, false) : NULL;
  lt_operand_t z = lt_int_operand(0); /* read through lt_item: `any` may live on a device */
  bool ok = any && lt_item(any, &z) == LT_OK;
  bool has_zero = ok && z.i != 0;
  lt_release(zero);
  lt_release(any);
  lt_tensor_t *pos = !ok || has_zero ? NULL : lt_compare(LT_COMPARE_gt, lt_tensor_operand(k), lt_int_operand(0), NULL);
  lt_tensor_t *r = NULL;
  if (pos) {
    lt_tensor_t *a = lt_binary(LT_BINARY_sub, lt_tensor_operand(k), lt_int_operand(1), 1, NULL);
    lt_tensor_t *b = lt_binary(LT_BINARY_add, lt_tensor_operand(k), lt_int_operand(size), 1, NULL);
    if (a && b) r = lt_where(pos, lt_tensor_operand(a), lt_tensor_operand(b));
    lt_release(a);
    lt_release(b);
  }
  lt_release(pos);
  lt_release(k);
  if (has_zero) luaL_error(L, "index: index 0 is invalid: indices are 1-based (1 is the first, -1 the last)");
  if (!r) lt_lua_error(L);
  return r;
}

/* A key at idx that is a 0-dim int64 or int32 tensor (key) stands for the integer it holds, as in
   PyTorch (x[t] a view, as x[i]): the key is replaced by that integer and true returned; false for
   any other tensor. */
static bool number_key(lua_State *L, int idx, lt_tensor_t *key) {
  if (key->ndim != 0 || (key->dtype != LT_INT64 && key->dtype != LT_INT32)) return false;
  lt_operand_t n = lt_int_operand(0);
  lt_lua_check(L, lt_item(key, &n));
  lua_pushinteger(L, (lua_Integer)n.i);
  lua_replace(L, idx);
  return true;
}

enum { P_NONE, P_SHAPE, P_DTYPE, P_DEVICE, P_NDIM, P_REQUIRES_GRAD, P_IS_LEAF, P_GRAD_FN, P_DATA, P_GRAD,
       P_RETAINS_GRAD, P_OUTPUT_NR };
static const char *const prop_names[] = {"", "shape", "dtype", "device", "ndim", "requires_grad",
                                         "is_leaf", "grad_fn", "data", "grad", "retains_grad",
                                         "output_nr"};

static int t_index(lua_State *L) {
  int kt = lua_type(L, 2);
  if (kt == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    lt_tensor_t *t = lt_lua_checktensor(L, 1);
    const char *k = lua_tostring(L, 2);
    /* the property's number from a table (interned strings: one hash lookup, no strcmp chain) */
    lua_pushvalue(L, 2);
    int prop = lua_rawget(L, lua_upvalueindex(2)) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    switch (prop) {
    case P_SHAPE: push_sizes(L, t->ndim, t->sizes); return 1;
    case P_DTYPE: lt_lua_pushdtype(L, t->dtype); return 1;
    case P_DEVICE: lt_lua_pushdevice(L, t->device); return 1;
    case P_NDIM: lua_pushinteger(L, t->ndim); return 1;
    case P_REQUIRES_GRAD: lua_pushboolean(L, t->requires_grad); return 1;
    case P_IS_LEAF: lua_pushboolean(L, lt_is_leaf(t)); return 1;
    case P_RETAINS_GRAD: lua_pushboolean(L, t->autograd && t->autograd->retains_grad && !lt_is_leaf(t)); return 1;
    /* which output of its grad_fn x is, counted from 0 as PyTorch's (0 for a leaf) */
    case P_OUTPUT_NR: lua_pushinteger(L, t->autograd && t->autograd->grad_fn ? t->autograd->output_nr : 0); return 1;
    case P_GRAD_FN: {
      lt_node_t *n = lt_grad_fn(t);
      if (!n) { lua_pushnil(L); return 1; }
      lua_createtable(L, 0, 1);
      lua_pushstring(L, n->name);
      lua_setfield(L, -2, "name");
      return 1;
    }
    case P_DATA: lt_lua_pushtensor(L, lt_detach(t)); return 1;
    case P_GRAD:
      if (!t->grad) { lua_pushnil(L); return 1; }
      lt_retain(t->grad);
      lt_lua_pushtensor(L, t->grad);
      return 1;
    default: break;
    }
    /* properties provided by the Lua side (torch.Tensor.__properties[k](x)) */
    lua_getfield(L, lua_upvalueindex(1), "__properties");
    if (lua_istable(L, -1) && lua_getfield(L, -1, k) == LUA_TFUNCTION) {
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
      return 1;
    }
    lua_pushnil(L);
    return 1;
  }
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_tensor_t *key = lt_lua_totensor(L, 2);
  if (key && number_key(L, 2, key)) key = NULL, kt = LUA_TNUMBER;
  if (key) { /* x[mask], x[rows] */
    lt_tensor_t *r;
    if (key->dtype == LT_BOOL) r = lt_index_get(t, key);
    else {
      if (t->ndim == 0) return luaL_error(L, "index: a 0-dim tensor cannot be indexed by a tensor of indices");
      lt_tensor_t *rows = user_rows(L, key, t->sizes[0]);
      r = lt_index_get(t, rows);
      lt_release(rows);
    }
    lt_lua_pushtensor(L, r);
    return 1;
  }
  if (kt != LUA_TNUMBER && kt != LUA_TTABLE)
    return luaL_error(L, "index: expected a number, a table or a tensor as index, got %s", luaL_typename(L, 2));
  int adv;
  lt_tensor_t *v = index_view(L, t, 2, &adv, NULL);
  if (adv) { /* index tensors in the key: Tensor._index_advanced(view, records) */
    lua_getfield(L, lua_upvalueindex(1), "_index_advanced");
    lt_lua_pushtensor(L, v);
    lua_pushvalue(L, adv);
    lua_call(L, 2, 1);
    return 1;
  }
  if (v->ndim == 0) { /* a single element: a number */
    lt_tensor_t *h = host_contiguous(v);
    lt_release(v);
    if (!h) return lt_lua_error(L);
    push_element(L, h, 0);
    lt_release(h);
    return 1;
  }
  lt_lua_pushtensor(L, v);
  return 1;
}

static int t_newindex(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "requires_grad") == 0) {
      lt_lua_check(L, lt_set_requires_grad(t, lua_toboolean(L, 3)));
      return 0;
    }
    if (strcmp(k, "data") == 0) {
      lt_tensor_t *v = lt_lua_checktensor(L, 3);
      lt_lua_check(L, lt_set_(t, v));
      return 0;
    }
    if (strcmp(k, "grad") == 0) {
      lt_tensor_t *g = lua_isnil(L, 3) ? NULL : lt_lua_checktensor(L, 3);
      char a[128], b[128];
      if (g && (g->ndim != t->ndim || memcmp(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) != 0))
        return luaL_error(L, "grad: assigned grad has shape %s but the tensor has shape %s",
                          lt_shape_str(g->ndim, g->sizes, a, sizeof a), lt_shape_str(t->ndim, t->sizes, b, sizeof b));
      if (g && (g->dtype != t->dtype || !lt_device_eq(g->device, t->device)))
        return luaL_error(L, "grad: assigned grad (%s on %s) must have the tensor's dtype and device (%s on %s)",
                          lt_dtype_name(g->dtype), lt_device_format(g->device, a, sizeof a),
                          lt_dtype_name(t->dtype), lt_device_format(t->device, b, sizeof b));
      if (g) lt_retain(g);
      lt_release(t->grad);
      t->grad = g;
      return 0;
    }
    return luaL_error(L, "tensor: cannot set field '%s'", k);
  }
  lt_tensor_t *key = lt_lua_totensor(L, 2);
  if (key && number_key(L, 2, key)) key = NULL;
  if (key) { /* x[mask] = v, x[rows] = v */
    lt_operand_t v = lt_lua_checkoperand(L, 3);
    int rc;
    if (key->dtype == LT_BOOL) rc = lt_index_put_(t, key, v);
    else {
      if (t->ndim == 0) return luaL_error(L, "index assignment: a 0-dim tensor cannot be indexed by a tensor of indices");
      lt_tensor_t *rows = user_rows(L, key, t->sizes[0]);
      rc = lt_index_put_(t, rows, v);
      lt_release(rows);
    }
    if (rc != LT_OK) return lt_lua_error(L);
    return 0;
  }
  /* the value is checked before the view is made: a Lua error while it is held would leak it */
  lt_tensor_t *src = lt_lua_totensor(L, 3);
  if (!src && lua_type(L, 3) != LUA_TNUMBER && !lua_isboolean(L, 3))
    return luaL_error(L, "index assignment: the value must be a number, a boolean or a tensor, got %s",
                      luaL_typename(L, 3));
  lt_operand_t val = src ? lt_tensor_operand(src) : lt_lua_checkoperand(L, 3);
  int adv;
  key_steps_t steps = {0};
  lt_tensor_t *v = index_view(L, t, 2, &adv, &steps);
  bool record = lt_ag_needed(t, src);
  if (adv || (record && steps.n > LT_KEY_MAX_STEPS)) {
    /* index tensors in the key: Tensor._index_put(t, key, value) writes t's elements at their
       positions, which the same key selects from a tensor of them */
    lt_release(v);
    lua_getfield(L, lua_upvalueindex(1), "_index_put");
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_call(L, 3, 0);
    return 0;
  }
  lt_tensor_t *s = NULL;
  if (src) {
    /* leading dims of size 1 beyond the view's are dropped, as PyTorch does (x[1] = ones(1, n)) */
    int lead = 0;
    while (lead < src->ndim - v->ndim && src->sizes[lead] == 1) lead++;
    s = lead ? lt_reshape(src, src->ndim - lead, src->sizes + lead) : (lt_retain(src), src);
    if (!s) { lt_release(v); return lt_lua_error(L); }
    val = lt_tensor_operand(s);
  }
  int rc;
  if (record) { /* written through the view, recorded on t as one node (core/index.h) */
    lt_release(v);
    rc = lt_key_assign_(t, steps.n, steps.s, val);
  } else {
    rc = s ? lt_copy_(v, s) : lt_fill_(v, val);
    lt_release(v);
  }
  lt_release(s);
  if (rc != LT_OK) return lt_lua_error(L);
  return 0;
}

static int newaxis_tostring(lua_State *L) {
  lua_pushliteral(L, "torch.newaxis");
  return 1;
}

static int newaxis_newindex(lua_State *L) { return luaL_error(L, "torch.newaxis cannot be changed"); }

static const luaL_Reg methods[] = {
    {"item", t_item},       {"totable", t_totable},   {"tolist", t_totable},
    {"_flat", t_flat},      {"size", t_size},         {"stride", t_stride},
    {"dim", t_dim},         {"ndimension", t_dim},    {"numel", t_numel},
    {"nelement", t_numel},  {"is_contiguous", t_is_contiguous},
    {"element_size", t_element_size}, {"storage_offset", t_storage_offset},
    {"data_ptr", t_data_ptr}, {"_storage_numel", t_storage_numel},
    {"is_floating_point", t_is_floating_point},
    {NULL, NULL}};

void lt_open_tensor(lua_State *L, int torch, int mtab) {
  luaL_newmetatable(L, "torch.Size"); /* its methods come from lua/torch/init.lua */
  lua_setfield(L, torch, "Size");
  luaL_newmetatable(L, LT_TENSOR_MT);
  int mt = lua_gettop(L);
  lua_pushvalue(L, mt);
  lua_rawseti(L, LUA_REGISTRYINDEX, TENSOR_MT_REGKEY);
  lua_pushvalue(L, mtab);
  lua_createtable(L, 0, (int)(sizeof prop_names / sizeof *prop_names));
  for (int i = 1; i < (int)(sizeof prop_names / sizeof *prop_names); i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, prop_names[i]);
  }
  lua_pushcclosure(L, t_index, 2);
  lua_setfield(L, mt, "__index");
  lua_pushvalue(L, mtab);
  lua_pushcclosure(L, t_newindex, 1);
  lua_setfield(L, mt, "__newindex");
  /* torch.newaxis (PyTorch's None in an index): a table known by identity */
  lua_createtable(L, 0, 0);
  luaL_newmetatable(L, "torch.newaxis");
  lua_pushcfunction(L, newaxis_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, newaxis_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawseti(L, LUA_REGISTRYINDEX, NEWAXIS_REGKEY);
  lua_setfield(L, torch, "newaxis");
  lua_pushcfunction(L, f_gc_full_threshold);
  lua_setfield(L, torch, "_gc_full_threshold");
  lua_pushcfunction(L, f_gc_counts);
  lua_setfield(L, torch, "_gc_counts");
  if (!lt_lua_boxes_managed(L)) { /* elsewhere (lua5.4 with torch.so, sanitizer builds) a finalizer */
    lua_pushcfunction(L, t_gc);
    lua_setfield(L, mt, "__gc");
  }
  lua_pushcfunction(L, t_tostring);
  lua_setfield(L, mt, "__tostring");
  lua_pushcfunction(L, t_len);
  lua_setfield(L, mt, "__len");
  lua_pushliteral(L, "torch.Tensor");
  lua_setfield(L, mt, "__name");
  lua_pushvalue(L, mtab);
  lua_setfield(L, mt, "__methods"); /* for the REPL's completion */
  lua_pop(L, 1);
  lt_lua_register(L, torch, mtab, methods, false, true);
}
