/* Autograd from Lua: backward, torch.autograd.grad, detach, requires_grad_, retain_grad, set_,
   grad mode, and the C node behind torch.autograd.Function (its backward calls back into Lua). */
#include "bindings/binding.h"

#include <pthread.h>
#include "core/autograd.h"

#include <stdlib.h>
#include <string.h>

/* the Lua thread that called backward or grad: custom backward functions run on it */
static _Thread_local lua_State *engine_L;

/* tensors of a Lua array (or a single tensor) at idx into a malloc'd array; *n set */
static lt_tensor_t **tensor_list(lua_State *L, int idx, int *n, const char *op, bool allow_nil) {
  if (lt_lua_totensor(L, idx)) {
    lt_tensor_t **v = malloc(sizeof *v);
    if (!v) luaL_error(L, "%s: out of memory", op);
    v[0] = lt_lua_totensor(L, idx);
    *n = 1;
    return v;
  }
  if (!lua_istable(L, idx)) luaL_error(L, "%s: expected a tensor or an array of tensors, got %s", op, luaL_typename(L, idx));
  int len = (int)luaL_len(L, idx);
  lt_tensor_t **v = calloc((size_t)(len ? len : 1), sizeof *v);
  if (!v) luaL_error(L, "%s: out of memory", op);
  for (int i = 0; i < len; i++) {
    lua_geti(L, idx, i + 1);
    v[i] = lt_lua_totensor(L, -1);
    bool bad = !v[i] && !(allow_nil && lua_isnil(L, -1));
    lua_pop(L, 1);
    if (bad) { free(v); luaL_error(L, "%s: element %d is not a tensor", op, i + 1); }
  }
  *n = len;
  return v;
}

static bool opt_bool(lua_State *L, int idx, const char *key, bool dflt) {
  if (!lua_istable(L, idx)) return dflt;
  lua_getfield(L, idx, key);
  bool r = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return r;
}

/* the options of backward and grad: PyTorch's keywords, checked; create_graph makes retain_graph
   default to true */
typedef struct {
  bool retain, create, allow_unused;
} bw_opts_t;

static bw_opts_t bw_opts(lua_State *L, int idx, const char *op, const char *const *keys) {
  if (!lua_isnoneornil(L, idx) && !lua_istable(L, idx))
    luaL_error(L, "%s: options should be a table, got %s", op, luaL_typename(L, idx));
  lt_lua_checkoptkeys(L, idx, op, keys);
  bw_opts_t o;
  o.create = opt_bool(L, idx, "create_graph", false);
  o.retain = opt_bool(L, idx, "retain_graph", o.create);
  o.allow_unused = opt_bool(L, idx, "allow_unused", false);
  return o;
}

/* the options of backward (raising on a bad one, before the caller allocates anything), and the
   tensors of the option inputs (NULL when absent; *n_in set) */
static bw_opts_t backward_opts(lua_State *L, int idx, const char *op, lt_tensor_t ***inputs, int *n_in) {
  static const char *const keys[] = {"retain_graph", "create_graph", "inputs", NULL};
  bw_opts_t o = bw_opts(L, idx, op, keys);
  *n_in = 0;
  if (inputs) *inputs = NULL;
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "inputs");
    if (!lua_isnil(L, -1)) {
      lt_tensor_t **v = tensor_list(L, lua_gettop(L), n_in, op, false);
      if (*n_in == 0) { free(v); luaL_error(L, "%s: inputs argument to backward() cannot be empty.", op); }
      if (inputs) *inputs = v;
      else free(v);
    }
    lua_pop(L, 1);
  }
  return o;
}

/* backward from roots into .grad: of every leaf, or of the tensors of the option inputs only */
static int run_backward(lua_State *L, const char *op, int n, lt_tensor_t **roots, lt_tensor_t **grads, int opts) {
  int n_in;
  lt_tensor_t **inputs;
  bw_opts_t o = backward_opts(L, opts, op, &inputs, &n_in); /* checked already: does not raise */
  engine_L = L;
  lt_lua_unrefs_drain(L);
  if (!inputs)
    return o.create ? lt_backward_create_graph(op, n, roots, grads, o.retain) : lt_backward(n, roots, grads, o.retain);
  lt_tensor_t **res = calloc((size_t)n_in, sizeof *res);
  int rc = res ? LT_OK : lt_error("%s: out of memory", op);
  if (rc == LT_OK)
    rc = (o.create ? lt_autograd_grad_create_graph : lt_autograd_grad)(n, roots, grads, n_in, inputs, o.retain,
                                                                       true, res);
  for (int j = 0; j < n_in && res; j++)
    if (res[j] && rc == LT_OK) rc = lt_accumulate_grad(inputs[j], res[j]);
    else lt_release(res[j]);
  free(res);
  free(inputs);
  return rc;
}

/* y:backward(grad, {retain_graph, create_graph, inputs}) */
static int t_backward(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_tensor_t *g = lua_isnoneornil(L, 2) ? NULL : lt_lua_checktensor(L, 2);
  lt_lua_check(L, run_backward(L, "backward", 1, &t, &g, 3));
  return 0;
}

/* torch.autograd.backward(tensors, grads, {retain_graph, create_graph, inputs}) */
static int f_backward(lua_State *L) {
  int n, ng = 0;
  backward_opts(L, 3, "autograd.backward", NULL, &n); /* its errors before the lists are allocated */
  lt_tensor_t **roots = tensor_list(L, 1, &n, "autograd.backward", false);
  lt_tensor_t **grads = NULL;
  if (!lua_isnoneornil(L, 2)) {
    grads = tensor_list(L, 2, &ng, "autograd.backward", true);
    if (ng != n) { free(roots); free(grads); return luaL_error(L, "autograd.backward: got %d tensors and %d gradients", n, ng); }
  }
  int rc = run_backward(L, "autograd.backward", n, roots, grads, 3);
  free(roots);
  free(grads);
  lt_lua_check(L, rc);
  return 0;
}

/* torch.autograd.grad(outputs, inputs, {grad_outputs, retain_graph, create_graph, allow_unused})
   -> array */
static int f_grad(lua_State *L) {
  static const char *const keys[] = {"grad_outputs", "retain_graph", "create_graph", "allow_unused", NULL};
  bw_opts_t o = bw_opts(L, 3, "autograd.grad", keys);
  int n, n_in, ng = 0;
  lt_tensor_t **roots = tensor_list(L, 1, &n, "autograd.grad", false);
  lt_tensor_t **inputs = tensor_list(L, 2, &n_in, "autograd.grad", false);
  lt_tensor_t **grads = NULL;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "grad_outputs");
    if (!lua_isnil(L, -1)) grads = tensor_list(L, lua_gettop(L), &ng, "autograd.grad", true);
    lua_pop(L, 1);
  }
  lt_tensor_t **res = calloc((size_t)(n_in ? n_in : 1), sizeof *res);
  int rc = res ? LT_OK : lt_error("autograd.grad: out of memory");
  if (rc == LT_OK && grads && ng != n) rc = lt_error("autograd.grad: got %d outputs and %d grad_outputs", n, ng);
  engine_L = L;
  if (rc == LT_OK)
    rc = (o.create ? lt_autograd_grad_create_graph : lt_autograd_grad)(n, roots, grads, n_in, inputs, o.retain,
                                                                       o.allow_unused, res);
  free(roots);
  free(inputs);
  free(grads);
  if (rc != LT_OK) { free(res); return lt_lua_error(L); }
  lua_createtable(L, n_in, 0);
  for (int j = 0; j < n_in; j++) {
    if (res[j]) lt_lua_pushtensor(L, res[j]);
    else lua_pushboolean(L, false); /* an unused input: false keeps the array's length */
    lua_seti(L, -2, j + 1);
  }
  free(res);
  return 1;
}

static int t_detach(lua_State *L) {
  lt_lua_pushtensor(L, lt_detach(lt_lua_checktensor(L, 1)));
  return 1;
}

static int t_detach_(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (t->autograd && t->autograd->is_view)
    return luaL_error(L, "detach_: can't detach views in-place. Use detach() instead.");
  if (t->autograd) {
    lt_node_release(t->autograd->grad_fn);
    t->autograd->grad_fn = NULL;
  }
  t->requires_grad = false;
  lua_settop(L, 1);
  return 1;
}

/* x:_inplace_error(op): nil when autograd allows an in-place write to x now, else the message
   (the leaf and view rules of the C in-place ops), for the in-place ops composed in Lua to raise
   at the user's call */
static int t_inplace_error(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  const char *op = luaL_checkstring(L, 2);
  if (lt_ag_check_inplace(op, t) == LT_OK) return 0;
  lua_pushstring(L, lt_last_error());
  lt_clear_error();
  return 1;
}

static int t_requires_grad_(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_lua_check(L, lt_set_requires_grad(t, lua_isnoneornil(L, 2) ? true : lua_toboolean(L, 2)));
  lua_settop(L, 1);
  return 1;
}

static int t_retain_grad(lua_State *L) {
  lt_lua_check(L, lt_retain_grad(lt_lua_checktensor(L, 1)));
  return 0;
}

static int t_set_(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1), *src = lt_lua_checktensor(L, 2);
  lt_lua_check(L, lt_set_(t, src));
  lua_settop(L, 1);
  return 1;
}

/* torch._set_grad_enabled(on) -> previous */
static int f_set_grad_enabled(lua_State *L) {
  lua_pushboolean(L, lt_set_grad_enabled(lua_toboolean(L, 1)));
  return 1;
}

static int f_is_grad_enabled(lua_State *L) {
  lua_pushboolean(L, lt_grad_enabled());
  return 1;
}

/* torch.autograd._set_inference_mode(on) -> previous (grad mode is the caller's to set) */
static int f_set_inference_mode(lua_State *L) {
  lua_pushboolean(L, lt_inference_mode);
  lt_inference_mode = lua_toboolean(L, 1);
  return 1;
}

static int f_is_inference_mode_enabled(lua_State *L) {
  lua_pushboolean(L, lt_inference_mode);
  return 1;
}

static int t_is_inference(lua_State *L) {
  lua_pushboolean(L, lt_is_inference(lt_lua_checktensor(L, 1)));
  return 1;
}

/* torch.autograd._set_detect_anomaly(on) -> previous */
static int f_set_detect_anomaly(lua_State *L) {
  lua_pushboolean(L, atomic_exchange(&lt_anomaly_on, lua_toboolean(L, 1)));
  return 1;
}

/* torch.autograd._set_anomaly_check_nan(on) -> previous */
static int f_set_anomaly_check_nan(lua_State *L) {
  lua_pushboolean(L, atomic_exchange(&lt_anomaly_check_nan, lua_toboolean(L, 1)));
  return 1;
}

static int f_is_anomaly_check_nan_enabled(lua_State *L) {
  lua_pushboolean(L, atomic_load(&lt_anomaly_check_nan));
  return 1;
}

static int f_is_anomaly_enabled(lua_State *L) {
  lua_pushboolean(L, atomic_load(&lt_anomaly_on));
  return 1;
}

void lt_lua_anomaly_trace(lua_State *L, lt_tensor_t *t) {
  lt_node_t *n = lt_grad_fn(t);
  if (!n || !n->want_trace || n->trace) return;
  luaL_traceback(L, L, NULL, 1);
  n->trace = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
}

/* ---- torch.autograd.Function: a node whose backward is a Lua function ---- */
typedef struct {
  lua_State *L; /* the main thread of the state */
  int fn;       /* registry reference: backward(grad_1, ..., grad_n_out) -> grads per input */
} lua_fn_ctx_t;

static int lua_fn_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lua_fn_ctx_t *c = n->ctx;
  lua_State *L = engine_L;
  if (!L) return lt_error("%s: a Lua function's backward can only run from Lua", n->name);
  /* a node recorded in another Lua state (a DataParallel replica's thread, idle during backward):
     its function lives in that state's registry */
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  bool same = lua_tothread(L, -1) == c->L;
  lua_pop(L, 1);
  if (!same) L = c->L;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, n->n_out + 4)) return lt_error("%s: Lua stack overflow", n->name);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->fn);
  for (int k = 0; k < n->n_out; k++) {
    lt_retain(go[k]);
    lt_lua_pushtensor(L, go[k]);
  }
  /* the backward runs with grad mode off, as the engine does (on under create_graph) */
  if (lua_pcall(L, n->n_out, LUA_MULTRET, 0) != LUA_OK) {
    int rc = lt_error("%s.backward: %s", n->name, lua_tostring(L, -1));
    lua_settop(L, top);
    return rc;
  }
  /* one value an input (values past the inputs are ignored); a missing one is an error where the
     input has an edge (it requires grad), whether or not this backward asks for it */
  int nret = lua_gettop(L) - top, rc = LT_OK;
  for (int i = 0; i < n->n_in && rc == LT_OK; i++) {
    int idx = top + 1 + i;
    lt_tensor_t *g = i < nret ? lt_lua_totensor(L, idx) : NULL;
    if (g) { lt_retain(g); gi[i] = g; }
    else if (i < nret && !lua_isnil(L, idx) && lua_toboolean(L, idx))
      rc = lt_error("%s.backward: result %d should be a tensor or nil, got %s", n->name, i + 1, luaL_typename(L, idx));
    else if (i >= nret && (n->in[i].node || n->in[i].leaf))
      rc = lt_error("%s.backward: returned too few gradients (%d for %d inputs; input %d requires grad)", n->name,
                    nret, n->n_in, i + 1);
  }
  lua_settop(L, top);
  return rc;
}

/* A Lua function's node is freed wherever its last tensor is released: in a tensor box's __gc
   (lt_lua_finalizing is then that box's state), but also inside the allocator of lutorch's states
   (a box freed by the collector, bindings/lua_alloc.c), on an engine thread, or while its state
   closes, where no Lua may run. Outside a finalizer of its own state, its registry reference is
   dropped later by its state at a safe point (lt_lua_unrefs_drain: the next Function call or
   backward there), or forgotten when the state closes (lt_lua_unrefs_forget). */
_Thread_local lua_State *lt_lua_finalizing;

typedef struct unref {
  lua_State *L; /* the main thread of the state */
  int ref;
  struct unref *next;
} unref_t;
static pthread_mutex_t unref_mu = PTHREAD_MUTEX_INITIALIZER;
static unref_t *unrefs;

/* drops registry reference ref of the state whose main thread is L, now or at its next safe point */
static void unref_later(lua_State *L, int ref) {
  if (ref == LUA_NOREF) return;
  if (lt_lua_finalizing == L) {
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return;
  }
  unref_t *u = malloc(sizeof *u);
  if (!u) return; /* the registry slot stays taken until the state closes: no harm */
  u->L = L;
  u->ref = ref;
  pthread_mutex_lock(&unref_mu);
  u->next = unrefs;
  unrefs = u;
  pthread_mutex_unlock(&unref_mu);
}

static void lua_fn_free(lt_node_t *n) {
  lua_fn_ctx_t *c = n->ctx;
  int ref = c->fn;
  c->fn = LUA_NOREF;
  unref_later(c->L, ref);
}

/* the entries of the state whose main thread is main, unlinked */
static unref_t *unrefs_take(lua_State *main) {
  unref_t *mine = NULL;
  pthread_mutex_lock(&unref_mu);
  for (unref_t **link = &unrefs; *link;) {
    unref_t *u = *link;
    if (u->L == main) {
      *link = u->next;
      u->next = mine;
      mine = u;
    } else {
      link = &u->next;
    }
  }
  pthread_mutex_unlock(&unref_mu);
  return mine;
}

static lua_State *main_thread(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State *m = lua_tothread(L, -1);
  lua_pop(L, 1);
  return m;
}

void lt_lua_unrefs_drain(lua_State *L) {
  if (!__atomic_load_n(&unrefs, __ATOMIC_RELAXED)) return;
  for (unref_t *u = unrefs_take(main_thread(L)), *next; u; u = next) {
    next = u->next;
    luaL_unref(L, LUA_REGISTRYINDEX, u->ref);
    free(u);
  }
}

void lt_lua_unrefs_forget(lua_State *main) {
  for (unref_t *u = unrefs_take(main), *next; u; u = next) {
    next = u->next;
    free(u);
  }
}

/* a state's sentinel: when it closes (its finalizers run before any object is freed) */
static int unrefs_on_close(lua_State *L) {
  lt_lua_unrefs_forget(main_thread(L));
  return 0;
}

/* ---- tensor hooks (x:register_hook) ----
   A tensor's hooks are Lua tables: the node's (or leaf's) lua_hooks_t holds a registry reference to
   {[k] = the hooks of output k}, each an array of {id =, fn =} in registration order, with
   {retain = true} where retain_grad was called among them; lua/torch/autograd.lua adds and removes
   entries and runs them (the function at registry["lutorch.run_hooks"]). */
typedef struct {
  lt_grad_hooks_t base;
  lua_State *L; /* the main thread of the state that registered them */
  int ref;
} lua_hooks_t;

static lua_State *main_thread(lua_State *L);

/* run_hooks(list, grad) -> new grad or nil, grad at retain_grad's place or nil; in a protected call */
static int hooks_call(lua_State *L) {
  lt_tensor_t *g = lua_touserdata(L, 2);
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "lutorch.run_hooks");
  lua_insert(L, 1);
  lt_retain(g);
  lt_lua_pushtensor(L, g);
  lua_call(L, 2, 2);
  return 2;
}

static int lua_hooks_run(lt_grad_hooks_t *hb, int k, lt_tensor_t **g, lt_tensor_t **at_retain) {
  lua_hooks_t *h = (lua_hooks_t *)hb;
  lua_State *L = engine_L;
  if (!L || main_thread(L) != h->L)
    return lt_error("register_hook: a tensor's hooks run only in the Lua state that registered them, and "
                    "this backward runs in another (or outside Lua)");
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 6)) return lt_error("register_hook: Lua stack overflow");
  lua_pushcfunction(L, hooks_call);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  if (lua_geti(L, -1, k + 1) != LUA_TTABLE) {
    lua_settop(L, top);
    return LT_OK;
  }
  lua_remove(L, -2);
  lua_pushlightuserdata(L, *g);
  bool prev = lt_set_grad_enabled(false);
  int st = lua_pcall(L, 2, 2, 0);
  lt_set_grad_enabled(prev);
  if (st != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    int rc = lt_error("%s", msg ? msg : "(error object is not a string)");
    lua_settop(L, top);
    return rc;
  }
  lt_tensor_t *r = lt_lua_totensor(L, top + 1), *at = lt_lua_totensor(L, top + 2);
  if (r) {
    lt_retain(r);
    lt_release(*g);
    *g = r;
  }
  if (at && at_retain) {
    lt_retain(at);
    *at_retain = at;
  }
  lua_settop(L, top);
  return LT_OK;
}

static void lua_hooks_free(lt_grad_hooks_t *hb) {
  lua_hooks_t *h = (lua_hooks_t *)hb;
  unref_later(h->L, h->ref);
  free(h);
}

/* torch.autograd._hook_list(t, create) -> the array of t's hooks, and whether it is new; nil when
   t has none and create is false */
static int f_hook_list(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  bool create = lua_toboolean(L, 2);
  lt_grad_hooks_t **slot = NULL;
  int k = 0;
  if (create) {
    if (!t->requires_grad)
      return luaL_error(L, "register_hook: cannot register a hook on a tensor that doesn't require gradient");
    lt_lua_unrefs_drain(L);
    slot = lt_grad_hooks_slot(t, &k);
    if (!slot) return lt_lua_error(L);
  } else if (t->requires_grad && t->autograd) {
    lt_node_t *n = lt_grad_fn(t);
    slot = n ? &n->hooks : &t->autograd->hooks;
    k = n ? t->autograd->output_nr : 0;
  }
  if (!slot || (!*slot && !create)) return 0;
  lua_State *main = main_thread(L);
  if (!*slot) {
    lua_hooks_t *h = calloc(1, sizeof *h);
    if (!h) return luaL_error(L, "register_hook: out of memory");
    h->base.run = lua_hooks_run;
    h->base.free = lua_hooks_free;
    h->L = main;
    lua_newtable(L);
    h->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    *slot = &h->base;
  }
  lua_hooks_t *h = (lua_hooks_t *)*slot;
  if (h->base.run != lua_hooks_run || h->L != main)
    return luaL_error(L, "register_hook: the tensor's hooks belong to another Lua state");
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  bool fresh = false;
  if (lua_geti(L, -1, k + 1) != LUA_TTABLE) {
    if (!create) return 0;
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_seti(L, -3, k + 1);
    fresh = true;
  }
  lua_pushboolean(L, fresh);
  return 2;
}

/* torch.autograd._set_hook_runner(fn): the function that runs a hook list */
static int f_set_hook_runner(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, "lutorch.run_hooks");
  return 0;
}

/* torch.autograd._record(name, inputs (array, nil holes allowed, length n), n, outputs, backward)
   -> outputs with history (an output that is also an input is replaced by an alias) */
static int f_record_function(lua_State *L) {
  lt_lua_unrefs_drain(L);
  const char *name = luaL_checkstring(L, 1);
  int n_in = (int)luaL_checkinteger(L, 3);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  luaL_checktype(L, 5, LUA_TFUNCTION);
  int n_out = (int)luaL_len(L, 4);
  lt_tensor_t **in = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *in);
  if (!in) return luaL_error(L, "%s: out of memory", name);
  for (int i = 0; i < n_in; i++) {
    lua_geti(L, 2, i + 1);
    in[i] = lt_lua_totensor(L, -1);
    lua_pop(L, 1);
  }
  bool needed = lt_ag_needed_n(n_in, in);
  lua_createtable(L, n_out, 0);
  int res = lua_gettop(L);
  lt_node_t *node = NULL;
  if (needed) {
    /* the name lives as long as the state: a key of a registry table */
    if (lua_getfield(L, LUA_REGISTRYINDEX, "lutorch.fn_names") != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, LUA_REGISTRYINDEX, "lutorch.fn_names");
    }
    lua_pushfstring(L, "%sBackward", name);
    lua_pushvalue(L, -1);
    lua_pushboolean(L, 1);
    lua_rawset(L, -4);
    const char *nm = lua_tostring(L, -1);
    lua_pop(L, 2);
    node = lt_node_new(nm, lua_fn_bw, n_in, in, n_out, sizeof(lua_fn_ctx_t));
    if (!node) { free(in); return lt_lua_error(L); }
    node->backward_graph = lua_fn_bw; /* under create_graph its Lua ops record (grad mode is on) */
    lua_fn_ctx_t *c = node->ctx;
    node->serial = true;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    c->L = lua_tothread(L, -1); /* for unref only; backward runs on the caller's thread */
    lua_pop(L, 1);
    lua_pushvalue(L, 5);
    c->fn = luaL_ref(L, LUA_REGISTRYINDEX);
    node->free_ctx = lua_fn_free;
    node->needs_saved = true;
  }
  for (int k = 0; k < n_out; k++) {
    lua_geti(L, 4, k + 1);
    lt_tensor_t *o = lt_lua_totensor(L, -1);
    if (o && node && lt_dtype_is_floating(o->dtype)) {
      bool is_input = false;
      for (int i = 0; i < n_in; i++) is_input |= in[i] == o;
      if (is_input || o->autograd) { /* a fresh object for the history */
        lua_pop(L, 1);
        lt_tensor_t *a = lt_alias(o);
        if (!a) { lt_node_release(node); free(in); return lt_lua_error(L); }
        lt_lua_pushtensor(L, a);
        o = a;
      }
      lt_node_set_output(node, k, o);
      if (node->want_trace) lt_lua_anomaly_trace(L, o);
    }
    lua_seti(L, res, k + 1);
  }
  free(in);
  lt_node_release(node);
  return 1;
}

void lt_open_autograd(lua_State *L, int torch, int methods) {
  static const luaL_Reg meths[] = {
      {"backward", t_backward}, {"detach", t_detach}, {"detach_", t_detach_},
      {"requires_grad_", t_requires_grad_}, {"retain_grad", t_retain_grad}, {"set_", t_set_},
      {"is_inference", t_is_inference}, {"_inplace_error", t_inplace_error}, {NULL, NULL}};
  lt_lua_register(L, torch, methods, meths, false, true);
  static const luaL_Reg fns[] = {
      {"_set_grad_enabled", f_set_grad_enabled}, {"is_grad_enabled", f_is_grad_enabled},
      {"is_anomaly_enabled", f_is_anomaly_enabled}, {"is_inference_mode_enabled", f_is_inference_mode_enabled},
      {"is_anomaly_check_nan_enabled", f_is_anomaly_check_nan_enabled}, {NULL, NULL}};
  lt_lua_register(L, torch, methods, fns, true, false);
  lua_newtable(L);
  static const luaL_Reg ag[] = {
      {"backward", f_backward}, {"grad", f_grad}, {"_record", f_record_function},
      {"_hook_list", f_hook_list}, {"_set_hook_runner", f_set_hook_runner},
      {"_set_detect_anomaly", f_set_detect_anomaly},
      {"_set_anomaly_check_nan", f_set_anomaly_check_nan}, {"_set_inference_mode", f_set_inference_mode},
      {NULL, NULL}};
  luaL_setfuncs(L, ag, 0);
  lua_setfield(L, torch, "autograd");
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, unrefs_on_close);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "lutorch.unrefs_sentinel");
}
