/* DataLoader workers (num_workers > 0): pthreads that each own a Lua state running
   lua/torch/data/worker.lua. The main state sends each worker the index lists of its batches and
   receives the collated batches through bounded per-worker queues, in sampler order.

   Values cross between Lua states as a tree of C values (wval_t): nil, booleans, numbers, strings,
   dtypes, devices, tables of them, tensors, and objects (a table whose class a module returns,
   named by module and key, rebuilt by requiring that module). Tensors cross by reference: the tree
   holds a reference to the refcounted lt_tensor_t and the receiving state wraps it in a userdata of
   its own; no data is copied. Functions, coroutines and other userdata cannot cross (no bytecode,
   no closures): encoding them fails with the path of the value.

   Lua side (private, used by lua/torch/data/dataloader.lua):
     torch._worker_pool_new(init, opts) -> pool     opts: num_workers, prefetch_factor, timeout,
                                                    base_seed, path, cpath, class_path, rebuild
     pool:send(k, seq, value)    queue a task for worker k (1-based)
     pool:recv(k) -> seq, value  the next result of worker k; raises the worker's error
     pool:shutdown()             stop and join every worker (also __close, __gc, and at exit)
     torch._worker_pool_thread_rng() -> whether each worker has a generator of its own
     torch._worker_data_ptr(t) -> the address of t's element 0 (to check that data is shared) */
#include "bindings/binding.h"
#include "bindings/lua_alloc.h"
#include "bindings/lutorch.h"
#include "core/autograd.h"
#include "core/random.h"

#include <errno.h>
#include <lualib.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define POOL_MT "torch.data.WorkerPool"
#define MAX_DEPTH 64
#define HOOK_COUNT 10000 /* instructions between checks of the stop flag in a worker */

/* ---- the value tree ---- */
enum { V_NIL, V_FALSE, V_TRUE, V_INT, V_NUM, V_STR, V_TENSOR, V_TABLE, V_DTYPE, V_DEVICE, V_OBJECT };

typedef struct wval {
  int kind;
  union {
    lua_Integer i;
    lua_Number n;
    struct { char *p; size_t len; } s;
    lt_tensor_t *t;
    struct { struct wval *kv; size_t n; size_t narr; } tab; /* kv[2k] key, kv[2k+1] value */
    int dtype;
    lt_device_t dev;
    struct { char *mod, *key; struct wval *fields; } obj; /* key NULL: the module is the class */
  } u;
} wval_t;

static void wval_free(wval_t *v) {
  switch (v->kind) {
    case V_STR: free(v->u.s.p); break;
    case V_TENSOR: lt_release(v->u.t); break;
    case V_TABLE:
      for (size_t k = 0; k < 2 * v->u.tab.n; k++) wval_free(&v->u.tab.kv[k]);
      free(v->u.tab.kv);
      break;
    case V_OBJECT:
      free(v->u.obj.mod);
      free(v->u.obj.key);
      if (v->u.obj.fields) {
        wval_free(v->u.obj.fields);
        free(v->u.obj.fields);
      }
      break;
    default: break;
  }
  v->kind = V_NIL;
}

static char *dupstr(const char *s, size_t len) {
  char *p = malloc(len + 1);
  if (p) {
    memcpy(p, s, len);
    p[len] = '\0';
  }
  return p;
}

/* ---- encoding a Lua value (never raises, except when Lua itself runs out of memory) ---- */
typedef struct {
  lua_State *L;
  int class_path; /* stack index of class_path(mt) -> module, key | nil, why; 0: no objects */
  char path[256];
  size_t plen;
  char err[1024];
} enc_t;

static int enc_fail(enc_t *e, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(e->err, sizeof e->err, "%s ", e->plen ? e->path : "the value");
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof e->err) vsnprintf(e->err + n, sizeof e->err - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* appends the key at idx to the path; returns the old length to restore */
static size_t path_push(enc_t *e, int idx) {
  size_t old = e->plen;
  char seg[96];
  lua_State *L = e->L;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (lua_isinteger(L, idx)) snprintf(seg, sizeof seg, "[%lld]", (long long)lua_tointeger(L, idx));
    else snprintf(seg, sizeof seg, "[%g]", (double)lua_tonumber(L, idx));
  } else if (lua_type(L, idx) == LUA_TSTRING) {
    snprintf(seg, sizeof seg, "%s%.80s", old ? "." : "", lua_tostring(L, idx));
  } else {
    snprintf(seg, sizeof seg, "[%s]", luaL_typename(L, idx));
  }
  size_t sl = strlen(seg);
  if (old + sl < sizeof e->path) {
    memcpy(e->path + old, seg, sl + 1);
    e->plen = old + sl;
  }
  return old;
}
static void path_pop(enc_t *e, size_t old) {
  e->plen = old;
  e->path[old] = '\0';
}

static int encode(enc_t *e, int idx, wval_t *out, int depth);

static int encode_fields(enc_t *e, int idx, wval_t *out, int depth) {
  lua_State *L = e->L;
  size_t n = 0, narr = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    n++;
    lua_pop(L, 1);
  }
  out->kind = V_TABLE;
  out->u.tab.n = 0;
  out->u.tab.narr = 0;
  out->u.tab.kv = n ? calloc(2 * n, sizeof(wval_t)) : NULL;
  if (n && !out->u.tab.kv) return enc_fail(e, "cannot be copied: out of memory");
  size_t k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int kt = lua_type(L, -2);
    size_t old = path_push(e, -2);
    if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
      lua_pop(L, 2);
      path_pop(e, old);
      return enc_fail(e, "has a key that is a %s (keys must be strings, numbers or booleans)", lua_typename(L, kt));
    }
    if (k >= n) { /* the table changed under us (a __gc?): stop at what was counted */
      lua_pop(L, 2);
      path_pop(e, old);
      break;
    }
    wval_t *kv = &out->u.tab.kv[2 * k];
    out->u.tab.n = ++k; /* counted before encoding, so a failure frees what was built */
    if (encode(e, -2, &kv[0], depth + 1) != 0 || encode(e, -1, &kv[1], depth + 1) != 0) {
      lua_pop(L, 2);
      return -1;
    }
    if (kv[0].kind == V_INT) narr++;
    path_pop(e, old);
    lua_pop(L, 1);
  }
  out->u.tab.narr = narr;
  return 0;
}

static int encode_table(enc_t *e, int idx, wval_t *out, int depth) {
  lua_State *L = e->L;
  if (depth > MAX_DEPTH)
    return enc_fail(e, "is nested deeper than %d levels (a table that contains itself?)", MAX_DEPTH);
  if (!lua_checkstack(L, 8)) return enc_fail(e, "is nested too deeply (Lua stack overflow)");
  if (!lua_getmetatable(L, idx)) return encode_fields(e, idx, out, depth);
  luaL_getmetatable(L, LT_DTYPE_MT);
  bool is_dtype = lua_rawequal(L, -1, -2);
  lua_pop(L, 1);
  if (is_dtype) {
    lua_pop(L, 1);
    out->kind = V_DTYPE;
    out->u.dtype = (int)lt_lua_todtype(L, idx);
    return 0;
  }
  if (!e->class_path) {
    lua_pop(L, 1);
    return enc_fail(e, "is a table with a metatable, which cannot move between Lua states");
  }
  lua_pushvalue(L, e->class_path);
  lua_insert(L, -2);
  lua_pushvalue(L, idx);
  if (lua_pcall(L, 2, 3, 0) != LUA_OK) {
    int r = enc_fail(e, "is an object whose class could not be looked up: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return r;
  }
  if (lua_type(L, -3) != LUA_TSTRING) { /* nil, why */
    int r = enc_fail(e, "%s", lua_isstring(L, -2) ? lua_tostring(L, -2) : "is an object of an unknown class");
    lua_pop(L, 3);
    return r;
  }
  size_t ml;
  const char *mod = lua_tolstring(L, -3, &ml);
  out->kind = V_OBJECT;
  out->u.obj.mod = dupstr(mod, ml);
  out->u.obj.key = NULL;
  out->u.obj.fields = NULL;
  if (lua_type(L, -2) == LUA_TSTRING) {
    size_t kl;
    const char *key = lua_tolstring(L, -2, &kl);
    out->u.obj.key = dupstr(key, kl);
    if (!out->u.obj.key) {
      lua_pop(L, 3);
      return enc_fail(e, "cannot be copied: out of memory");
    }
  }
  lua_pop(L, 3);
  out->u.obj.fields = calloc(1, sizeof(wval_t));
  if (!out->u.obj.mod || !out->u.obj.fields) return enc_fail(e, "cannot be copied: out of memory");
  return encode_fields(e, idx, out->u.obj.fields, depth);
}

static int encode(enc_t *e, int idx, wval_t *out, int depth) {
  lua_State *L = e->L;
  idx = lua_absindex(L, idx);
  out->kind = V_NIL;
  switch (lua_type(L, idx)) {
    case LUA_TNIL: return 0;
    case LUA_TBOOLEAN: out->kind = lua_toboolean(L, idx) ? V_TRUE : V_FALSE; return 0;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        out->kind = V_INT;
        out->u.i = lua_tointeger(L, idx);
      } else {
        out->kind = V_NUM;
        out->u.n = lua_tonumber(L, idx);
      }
      return 0;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      char *p = dupstr(s, len);
      if (!p) return enc_fail(e, "cannot be copied: out of memory (a string of %zu bytes)", len);
      out->kind = V_STR;
      out->u.s.p = p;
      out->u.s.len = len;
      return 0;
    }
    case LUA_TUSERDATA: {
      lt_tensor_t *t = lt_lua_totensor(L, idx);
      if (t) {
        /* a tensor with autograd state crosses as a detached alias: graphs belong to one thread */
        if (t->requires_grad || t->autograd) {
          t = lt_detach(t);
          if (!t) return enc_fail(e, "cannot be shared: %s", lt_last_error());
        } else {
          lt_retain(t);
        }
        out->kind = V_TENSOR;
        out->u.t = t;
        return 0;
      }
      lt_device_t *d = luaL_testudata(L, idx, LT_DEVICE_MT);
      if (d) {
        out->kind = V_DEVICE;
        out->u.dev = *d;
        return 0;
      }
      int mt = luaL_getmetafield(L, idx, "__name");
      const char *name = mt == LUA_TSTRING ? lua_tostring(L, -1) : "userdata";
      int r = enc_fail(e, "is a %s (userdata other than tensors and devices cannot move between Lua states)", name);
      if (mt != LUA_TNIL) lua_pop(L, 1);
      return r;
    }
    case LUA_TTABLE: return encode_table(e, idx, out, depth);
    case LUA_TFUNCTION:
      return enc_fail(e, "is a function (Lua functions and their upvalues cannot move between Lua states)");
    default:
      return enc_fail(e, "is a %s, which cannot move between Lua states", luaL_typename(L, idx));
  }
}

/* ---- pushing a tree into a state (may raise: call it protected) ---- */
static void push_wval(lua_State *L, const wval_t *v, int rebuild) {
  luaL_checkstack(L, 6, "DataLoader: a value nested too deeply");
  switch (v->kind) {
    case V_NIL: lua_pushnil(L); break;
    case V_FALSE: lua_pushboolean(L, 0); break;
    case V_TRUE: lua_pushboolean(L, 1); break;
    case V_INT: lua_pushinteger(L, v->u.i); break;
    case V_NUM: lua_pushnumber(L, v->u.n); break;
    case V_STR: lua_pushlstring(L, v->u.s.p, v->u.s.len); break;
    case V_TENSOR:
      lt_retain(v->u.t);
      lt_lua_pushtensor(L, v->u.t);
      break;
    case V_DTYPE: lt_lua_pushdtype(L, (lt_dtype)v->u.dtype); break;
    case V_DEVICE: lt_lua_pushdevice(L, v->u.dev); break;
    case V_TABLE:
      lua_createtable(L, (int)v->u.tab.narr, (int)(v->u.tab.n - v->u.tab.narr));
      for (size_t k = 0; k < v->u.tab.n; k++) {
        push_wval(L, &v->u.tab.kv[2 * k], rebuild);
        push_wval(L, &v->u.tab.kv[2 * k + 1], rebuild);
        lua_rawset(L, -3);
      }
      break;
    case V_OBJECT:
      if (!rebuild) luaL_error(L, "DataLoader: cannot rebuild an object of %s here", v->u.obj.mod);
      lua_pushvalue(L, rebuild);
      lua_pushstring(L, v->u.obj.mod);
      if (v->u.obj.key) lua_pushstring(L, v->u.obj.key);
      else lua_pushnil(L);
      push_wval(L, v->u.obj.fields, rebuild);
      lua_call(L, 3, 1);
      break;
    default: lua_pushnil(L); break;
  }
}

/* ---- queues, workers, pools ---- */
typedef struct msg {
  struct msg *next;
  int64_t seq;
  bool failed; /* val is the error text (V_STR) */
  wval_t val;
} msg_t;

static void msg_free(msg_t *m) {
  if (!m) return;
  wval_free(&m->val);
  free(m);
}

typedef struct pool pool_t;

typedef struct {
  pool_t *pool;
  int id; /* 1-based */
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv_work; /* the worker waits: a task arrived, room in its output, or stop */
  pthread_cond_t cv_main; /* the main thread waits: a result arrived or the worker ended */
  msg_t *in_head, *in_tail;
  msg_t *out_head, *out_tail;
  int n_out;
  bool dead;
  char *fatal; /* why the worker ended before being stopped */
} worker_t;

struct pool {
  int n, prefetch;
  double timeout;
  int64_t base_seed;
  atomic_bool stop;
  bool joined;
  wval_t init; /* read by every worker (tensor references are taken atomically) */
  char *path, *cpath;
  worker_t *w;
  pool_t *next_live;
};

/* the live pools, which the process joins at exit (os.exit skips lua_close) */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_t *live_head;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static void queue_push(msg_t **head, msg_t **tail, msg_t *m) {
  m->next = NULL;
  if (*tail) (*tail)->next = m;
  else *head = m;
  *tail = m;
}
static msg_t *queue_pop(msg_t **head, msg_t **tail) {
  msg_t *m = *head;
  if (m) {
    *head = m->next;
    if (!*head) *tail = NULL;
  }
  return m;
}

static msg_t *error_msg(int64_t seq, const char *fmt, ...) {
  msg_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  char buf[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  m->seq = seq;
  m->failed = true;
  m->val.kind = V_STR;
  m->val.u.s.len = strlen(buf);
  m->val.u.s.p = dupstr(buf, m->val.u.s.len);
  if (!m->val.u.s.p) {
    free(m);
    return NULL;
  }
  return m;
}


/* a worker stops running Lua code soon after its pool is stopped, even inside a long loop */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  worker_t *w = *(worker_t **)lua_getextraspace(L);
  if (atomic_load_explicit(&w->pool->stop, memory_order_relaxed))
    luaL_error(L, "DataLoader worker %d: stopped (the loader was shut down)", w->id);
}

/* in the worker's state, protected: open torch, require torch.data.worker, build the dataset;
   leaves the task runner (a function) on the stack */
static int worker_boot(lua_State *L) {
  worker_t *w = lua_touserdata(L, 1);
  pool_t *p = w->pool;
  lua_settop(L, 0);
  lutorch_openlibs(L);
  lua_settop(L, 0);
  lua_getglobal(L, "package");
  if (p->path) {
    lua_pushstring(L, p->path);
    lua_setfield(L, -2, "path");
  }
  if (p->cpath) {
    lua_pushstring(L, p->cpath);
    lua_setfield(L, -2, "cpath");
  }
  lua_pop(L, 1);
  lua_sethook(L, stop_hook, LUA_MASKCOUNT, HOOK_COUNT);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "torch.data.worker");
  lua_call(L, 1, 1); /* 1: W */
  lua_getfield(L, 1, "rebuild"); /* 2 */
  lua_getfield(L, 1, "start");   /* 3 */
  push_wval(L, &p->init, 2);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, w->id);
  lua_setfield(L, -2, "id");
  lua_pushinteger(L, p->n);
  lua_setfield(L, -2, "num_workers");
  lua_pushinteger(L, (lua_Integer)((uint64_t)p->base_seed + (uint64_t)(w->id - 1)));
  lua_setfield(L, -2, "seed");
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "own_generator");
  lua_call(L, 2, 1); /* 3: W.start(init, info) -> run(indices) */
  lua_pushvalue(L, 2);
  lua_getfield(L, 1, "class_path");
  return 3; /* run, rebuild, class_path */
}

/* protected: run(indices) with the task's value; returns the packed results */
static int worker_task(lua_State *L) {
  const msg_t *task = lua_touserdata(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  push_wval(L, &task->val, lua_upvalueindex(2));
  lua_call(L, 1, 1);
  return 1;
}

static msg_t *wait_task(worker_t *w) {
  pool_t *p = w->pool;
  pthread_mutex_lock(&w->mu);
  while (!w->in_head && !atomic_load(&p->stop)) pthread_cond_wait(&w->cv_work, &w->mu);
  msg_t *m = atomic_load(&p->stop) ? NULL : queue_pop(&w->in_head, &w->in_tail);
  pthread_mutex_unlock(&w->mu);
  return m;
}

/* false when the pool stopped while waiting for room (the result is freed) */
static bool post_result(worker_t *w, msg_t *r) {
  pool_t *p = w->pool;
  pthread_mutex_lock(&w->mu);
  while (w->n_out >= p->prefetch && !atomic_load(&p->stop)) pthread_cond_wait(&w->cv_work, &w->mu);
  bool ok = !atomic_load(&p->stop);
  if (ok) {
    queue_push(&w->out_head, &w->out_tail, r);
    w->n_out++;
    pthread_cond_signal(&w->cv_main);
  }
  pthread_mutex_unlock(&w->mu);
  if (!ok) msg_free(r);
  return ok;
}

static msg_t *run_task(lua_State *L, worker_t *w, msg_t *task) {
  int64_t seq = task->seq;
  lua_settop(L, 4); /* 1 msgh, 2 run, 3 rebuild, 4 class_path */
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_pushcclosure(L, worker_task, 2);
  lua_pushlightuserdata(L, task);
  int st = lua_pcall(L, 1, 1, 1);
  msg_free(task);
  if (st != LUA_OK) {
    const char *err = lua_tostring(L, -1);
    return error_msg(seq, "DataLoader worker %d: %s\n(in worker %d, loading batch %lld)", w->id,
                     err ? err : "(no message)", w->id, (long long)seq);
  }
  msg_t *r = calloc(1, sizeof *r);
  if (!r) return error_msg(seq, "DataLoader worker %d: out of memory", w->id);
  r->seq = seq;
  enc_t e = {.L = L, .class_path = 4};
  snprintf(e.path, sizeof e.path, "batch");
  e.plen = strlen(e.path);
  if (encode(&e, -1, &r->val, 0) != 0) {
    msg_free(r);
    return error_msg(seq, "DataLoader worker %d: cannot send batch %lld to the main thread: %s", w->id,
                     (long long)seq, e.err);
  }
  lua_settop(L, 4);
  return r;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pool_t *p = w->pool;
  char *fatal = NULL;
  uint64_t seed = (uint64_t)p->base_seed + (uint64_t)(w->id - 1);
  lt_generator_t *gen = NULL, *prev_gen = NULL;
  {
    gen = lt_generator_new(seed);
    if (gen) prev_gen = lt_set_thread_generator(gen);
  }
  lua_State *L = lt_lua_newstate();
  if (!L) {
    fatal = malloc(128);
    if (fatal) snprintf(fatal, 128, "DataLoader worker %d: cannot create a Lua state (out of memory)", w->id);
  } else {
    *(worker_t **)lua_getextraspace(L) = w;
    lua_pushcfunction(L, lt_lua_msgh);
    lua_pushcfunction(L, worker_boot);
    lua_pushlightuserdata(L, w);
    if (lua_pcall(L, 1, 3, 1) != LUA_OK) {
      const char *err = lua_tostring(L, -1);
      size_t cap = strlen(err ? err : "") + 128;
      fatal = malloc(cap);
      if (fatal)
        snprintf(fatal, cap, "DataLoader worker %d: %s\n(while starting the worker)", w->id,
                 err ? err : "(no message)");
    }
  }
  if (L && !fatal && !atomic_load(&p->stop)) {
    for (;;) {
      msg_t *task = wait_task(w);
      if (!task) break;
      msg_t *r = run_task(L, w, task);
      if (!r) break; /* out of memory for even the error: the main thread sees the worker end */
      if (!post_result(w, r)) break;
    }
  }
  pthread_mutex_lock(&w->mu);
  w->dead = true;
  w->fatal = fatal;
  pthread_cond_broadcast(&w->cv_main);
  pthread_mutex_unlock(&w->mu);
  if (L) lua_close(L);
  if (gen) {
    lt_set_thread_generator(prev_gen);
    lt_generator_free(gen);
  }
  lt_thread_exit();
  return NULL;
}

/* stop and join every worker; idempotent */
static void pool_stop(pool_t *p) {
  if (p->joined) return;
  atomic_store(&p->stop, true);
  for (int k = 0; k < p->n; k++) {
    worker_t *w = &p->w[k];
    if (!w->started) continue;
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv_work);
    pthread_mutex_unlock(&w->mu);
  }
  pthread_t self = pthread_self();
  for (int k = 0; k < p->n; k++) {
    worker_t *w = &p->w[k];
    if (w->started && !pthread_equal(w->thread, self)) pthread_join(w->thread, NULL);
    w->started = false;
  }
  p->joined = true;
}

static void pool_unlink(pool_t *p) {
  pthread_mutex_lock(&live_mu);
  for (pool_t **q = &live_head; *q; q = &(*q)->next_live) {
    if (*q == p) {
      *q = p->next_live;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
}

static void pool_free(pool_t *p) {
  if (!p) return;
  pool_stop(p);
  pool_unlink(p);
  for (int k = 0; k < p->n; k++) {
    worker_t *w = &p->w[k];
    msg_t *m;
    while ((m = queue_pop(&w->in_head, &w->in_tail))) msg_free(m);
    while ((m = queue_pop(&w->out_head, &w->out_tail))) msg_free(m);
    free(w->fatal);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_work);
    pthread_cond_destroy(&w->cv_main);
  }
  free(p->w);
  wval_free(&p->init);
  free(p->path);
  free(p->cpath);
  free(p);
}

static void stop_all_at_exit(void) {
  pthread_mutex_lock(&live_mu);
  for (pool_t *p = live_head; p; p = p->next_live) pool_stop(p);
  pthread_mutex_unlock(&live_mu);
}
static void register_atexit(void) { atexit(stop_all_at_exit); }

/* ---- the Lua API ---- */
typedef struct {
  pool_t *p;
} pool_box_t;

static pool_t *check_pool(lua_State *L) {
  pool_box_t *b = luaL_checkudata(L, 1, POOL_MT);
  if (!b->p) luaL_error(L, "DataLoader: the worker pool was already shut down");
  return b->p;
}

static worker_t *check_worker(lua_State *L, pool_t *p, int idx) {
  lua_Integer k = luaL_checkinteger(L, idx);
  if (k < 1 || k > p->n) luaL_error(L, "DataLoader: no worker %d (the pool has %d)", (int)k, p->n);
  return &p->w[k - 1];
}

static char *opt_string(lua_State *L, int opts, const char *name) {
  char *s = NULL;
  if (lua_getfield(L, opts, name) == LUA_TSTRING) {
    size_t len;
    const char *v = lua_tolstring(L, -1, &len);
    s = dupstr(v, len);
    if (!s) luaL_error(L, "DataLoader: out of memory");
  }
  lua_pop(L, 1);
  return s;
}

static lua_Number opt_number(lua_State *L, int opts, const char *name, lua_Number dflt) {
  lua_Number v = dflt;
  if (lua_getfield(L, opts, name) == LUA_TNUMBER) v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* torch._worker_pool_new(init, opts) */
static int l_pool_new(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  lt_lua_checknargs(L, 2, "_worker_pool_new");
  lua_Number nw = opt_number(L, 2, "num_workers", 0), pf = opt_number(L, 2, "prefetch_factor", 2);
  if (nw < 1 || nw > 1024) return luaL_error(L, "DataLoader: num_workers must be in 1..1024, got %g", (double)nw);
  if (pf < 1 || pf > 1 << 20) return luaL_error(L, "DataLoader: prefetch_factor must be a positive integer, got %g", (double)pf);
  lua_getfield(L, 2, "class_path"); /* 3 */
  lua_getfield(L, 2, "rebuild");    /* 4 */
  if (!lua_isfunction(L, 3) || !lua_isfunction(L, 4))
    return luaL_error(L, "_worker_pool_new: opts.class_path and opts.rebuild must be functions");

  /* the box first, so that a Lua error below frees the pool through __gc */
  pool_box_t *b = lua_newuserdatauv(L, sizeof *b, 2); /* 5 */
  b->p = NULL;
  luaL_setmetatable(L, POOL_MT);
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 5, 1); /* rebuild, for objects in results */
  pool_t *p = calloc(1, sizeof *p);
  if (!p) return luaL_error(L, "DataLoader: out of memory");
  b->p = p;
  p->n = (int)nw;
  p->prefetch = (int)pf;
  p->timeout = opt_number(L, 2, "timeout", 0);
  lua_getfield(L, 2, "base_seed");
  p->base_seed = (int64_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
  atomic_init(&p->stop, false);
  p->joined = true; /* nothing to join until a thread starts */
  p->path = opt_string(L, 2, "path");
  p->cpath = opt_string(L, 2, "cpath");
  p->w = calloc((size_t)p->n, sizeof(worker_t));
  if (!p->w) return luaL_error(L, "DataLoader: out of memory");
  /* w->mu etc. are initialized below; pool_free destroys them only for p->n workers, so count */
  int ready = 0;
  for (; ready < p->n; ready++) {
    worker_t *w = &p->w[ready];
    w->pool = p;
    w->id = ready + 1;
    if (pthread_mutex_init(&w->mu, NULL) != 0) break;
    if (pthread_cond_init(&w->cv_work, NULL) != 0) {
      pthread_mutex_destroy(&w->mu);
      break;
    }
    if (pthread_cond_init(&w->cv_main, NULL) != 0) {
      pthread_cond_destroy(&w->cv_work);
      pthread_mutex_destroy(&w->mu);
      break;
    }
  }
  if (ready < p->n) {
    p->n = ready;
    return luaL_error(L, "DataLoader: cannot create the workers' locks");
  }

  enc_t e = {.L = L, .class_path = 3};
  if (encode(&e, 1, &p->init, 0) != 0) {
    lua_pushstring(L, e.err);
    return lua_error(L);
  }

  pthread_once(&atexit_once, register_atexit);
  pthread_mutex_lock(&live_mu);
  p->next_live = live_head;
  live_head = p;
  pthread_mutex_unlock(&live_mu);

  /* workers block every signal: handlers (SIGINT's) belong to the main thread and its state */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0, k = 0;
  p->joined = false;
  for (; k < p->n; k++) {
    rc = pthread_create(&p->w[k].thread, NULL, worker_main, &p->w[k]);
    if (rc != 0) break;
    p->w[k].started = true;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pool_stop(p);
    return luaL_error(L, "DataLoader: cannot start worker thread %d of %d: %s", k + 1, p->n, strerror(rc));
  }
  lua_settop(L, 5);
  return 1;
}

/* pool:send(k, seq, value) */
static int l_pool_send(lua_State *L) {
  pool_t *p = check_pool(L);
  worker_t *w = check_worker(L, p, 2);
  lua_Integer seq = luaL_checkinteger(L, 3);
  luaL_checkany(L, 4);
  msg_t *m = calloc(1, sizeof *m);
  if (!m) return luaL_error(L, "DataLoader: out of memory");
  m->seq = seq;
  enc_t e = {.L = L};
  snprintf(e.path, sizeof e.path, "the task");
  e.plen = strlen(e.path);
  if (encode(&e, 4, &m->val, 0) != 0) {
    msg_free(m);
    return luaL_error(L, "DataLoader: %s", e.err);
  }
  pthread_mutex_lock(&w->mu);
  queue_push(&w->in_head, &w->in_tail, m);
  pthread_cond_signal(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

static int push_msg(lua_State *L) {
  const msg_t *m = lua_touserdata(L, 1);
  lua_pushinteger(L, m->seq);
  push_wval(L, &m->val, 2);
  return 2;
}

/* pool:recv(k) -> seq, value */
static int l_pool_recv(lua_State *L) {
  pool_t *p = check_pool(L);
  worker_t *w = check_worker(L, p, 2);
  lt_lua_checknargs(L, 2, "recv");
  struct timespec until;
  if (p->timeout > 0) {
    clock_gettime(CLOCK_REALTIME, &until);
    double s = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 + p->timeout;
    until.tv_sec = (time_t)s;
    until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
  }
  bool timed_out = false;
  pthread_mutex_lock(&w->mu);
  while (!w->out_head && !w->dead) {
    if (p->timeout > 0) {
      if (pthread_cond_timedwait(&w->cv_main, &w->mu, &until) == ETIMEDOUT && !w->out_head && !w->dead) {
        timed_out = true;
        break;
      }
    } else {
      pthread_cond_wait(&w->cv_main, &w->mu);
    }
  }
  msg_t *m = timed_out ? NULL : queue_pop(&w->out_head, &w->out_tail);
  if (m) {
    w->n_out--;
    pthread_cond_signal(&w->cv_work); /* room in the output queue */
  }
  pthread_mutex_unlock(&w->mu);
  if (timed_out) {
    char buf[128];
    snprintf(buf, sizeof buf, "DataLoader timed out after %g seconds (worker %d)", p->timeout, w->id);
    lua_pushstring(L, buf);
    return lua_error(L);
  }
  if (!m) {
    return luaL_error(L, "%s", w->fatal ? w->fatal : "DataLoader worker ended unexpectedly");
  }
  if (m->failed) {
    lua_pushlstring(L, m->val.u.s.p, m->val.u.s.len);
    msg_free(m);
    return lua_error(L);
  }
  /* pushing may raise (a class whose module fails to load): free the message either way */
  int top = lua_gettop(L);
  lua_pushcfunction(L, push_msg);
  lua_pushlightuserdata(L, m);
  lua_getiuservalue(L, 1, 1);
  int st = lua_pcall(L, 2, 2, 0);
  msg_free(m);
  if (st != LUA_OK) return lua_error(L);
  return lua_gettop(L) - top;
}

static int l_pool_shutdown(lua_State *L) {
  pool_box_t *b = luaL_checkudata(L, 1, POOL_MT);
  pool_t *p = b->p;
  b->p = NULL;
  pool_free(p);
  return 0;
}

static int l_pool_alive(lua_State *L) {
  pool_box_t *b = luaL_checkudata(L, 1, POOL_MT);
  lua_pushboolean(L, b->p != NULL);
  return 1;
}

static int l_thread_rng(lua_State *L) {
  lua_pushboolean(L, 1);
  return 1;
}

static int l_data_ptr(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "_worker_data_ptr");
  lua_pushinteger(L, (lua_Integer)(intptr_t)lt_data(t));
  return 1;
}

void lt_open_data_worker(lua_State *L, int torch) {
  static const luaL_Reg methods[] = {{"send", l_pool_send},         {"recv", l_pool_recv},
                                     {"shutdown", l_pool_shutdown}, {"alive", l_pool_alive},
                                     {NULL, NULL}};
  luaL_newmetatable(L, POOL_MT);
  lua_pushcfunction(L, l_pool_shutdown);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_pool_shutdown);
  lua_setfield(L, -2, "__close");
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"_worker_pool_new", l_pool_new},
                                 {"_worker_pool_thread_rng", l_thread_rng},
                                 {"_worker_data_ptr", l_data_ptr},
                                 {NULL, NULL}};
  lua_pushvalue(L, torch);
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
