/* lutorch.c - the embedding C API of bindings/lutorch.h: states with torch loaded, running code with
   a traceback, and tensors between C buffers and Lua.

   Every entry point runs its Lua work under lua_pcall (a protected C function taking its arguments
   as a light userdata), so that neither a core error nor Lua running out of memory raises into a
   caller that has no protected frame (which would abort the process through Lua's panic handler).

   Each state made here keeps, in its registry, a random generator of its own; the run functions make
   it the calling thread's default generator for the duration of the call (lt_set_thread_generator),
   so that two states on two threads draw the same numbers as each alone would. */
#include "bindings/lutorch.h"
#include "bindings/binding.h"
#include "bindings/lua_alloc.h"
#include "core/autograd.h"
#include "core/blas.h"
#include "core/random.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

_Static_assert(LUTORCH_FLOAT32 == (int)LT_FLOAT32 && LUTORCH_FLOAT64 == (int)LT_FLOAT64 &&
                   LUTORCH_FLOAT16 == (int)LT_FLOAT16 && LUTORCH_BFLOAT16 == (int)LT_BFLOAT16 &&
                   LUTORCH_INT64 == (int)LT_INT64 && LUTORCH_INT32 == (int)LT_INT32 &&
                   LUTORCH_INT16 == (int)LT_INT16 && LUTORCH_INT8 == (int)LT_INT8 &&
                   LUTORCH_UINT8 == (int)LT_UINT8 && LUTORCH_BOOL == (int)LT_BOOL &&
                   LUTORCH_NDTYPES == (int)LT_NDTYPES,
               "lutorch.h's dtypes follow core/dtype.h");
_Static_assert(LUTORCH_CPU == (int)LT_CPU && LUTORCH_CUDA == (int)LT_CUDA, "device types");
_Static_assert(LUTORCH_MAX_DIM == LT_MAX_DIM, "dimensions");

/* registry keys (their addresses) */
static const char STATE_KEY = 's';
static const char ERR_KEY = 'e';
#define STATE_MT "lutorch.state"

typedef struct {
  lt_generator_t *gen;
} state_ext_t;

/* lutorch_newstate's failures, per thread, for lutorch_errmsg(NULL) */
static _Thread_local char newstate_err[512];

size_t lutorch_dtype_size(lutorch_dtype dt) { return lt_dtype_size((lt_dtype)dt); }

const char *lutorch_dtype_name(lutorch_dtype dt) {
  return (unsigned)dt < LUTORCH_NDTYPES ? lt_dtype_name((lt_dtype)dt) : NULL;
}

/* ---- errors ---- */

/* Records the error message on top of the stack (popped) as the state's last error. Setting an
   existing light-userdata key allocates nothing, so this cannot raise once the key exists. */
static int set_error(lua_State *L, int status) {
  if (lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_pushliteral(L, "(error object is not a string)");
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ERR_KEY);
  return status;
}

static void clear_error(lua_State *L) {
  lua_pushliteral(L, "");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ERR_KEY);
}

const char *lutorch_errmsg(lua_State *L) {
  if (!L) return newstate_err;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ERR_KEY);
  const char *s = lua_tostring(L, -1); /* the registry keeps the string alive */
  lua_pop(L, 1);
  return s ? s : "";
}


/* ---- the state's generator ---- */

static int ext_gc(lua_State *L) {
  state_ext_t *e = luaL_checkudata(L, 1, STATE_MT);
  lt_generator_free(e->gen);
  e->gen = NULL;
  return 0;
}

static lt_generator_t *state_gen(lua_State *L) {
  lt_generator_t *g = NULL;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &STATE_KEY) == LUA_TUSERDATA) g = ((state_ext_t *)lua_touserdata(L, -1))->gen;
  lua_pop(L, 1);
  return g;
}

static void mark_thread(void);

/* lua_pcall with msgh and the state's generator; on failure the message is recorded and popped */
static int call(lua_State *L, int narg, int nres) {
  mark_thread();
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, lt_lua_msgh);
  lua_insert(L, base);
  lt_generator_t *g = state_gen(L);
  lt_generator_t *prev = g ? lt_set_thread_generator(g) : NULL;
  int st = lua_pcall(L, narg, nres, base);
  if (g) lt_set_thread_generator(prev);
  lua_remove(L, base);
  if (st != LUA_OK) return set_error(L, st);
  clear_error(L);
  return LUTORCH_OK;
}

/* ---- states ---- */

/* Process-wide lazily set values read by every state: settled once, before two states can race to
   set them (the CPU device count is read from the environment on first use without a lock). */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* set on each thread that uses the API: its destructor frees the thread's cached tensor headers
   when the thread ends (the core keeps them per thread; they would leak otherwise) */
static pthread_key_t exit_key;
static bool exit_key_ok;

static void thread_ended(void *v) {
  (void)v;
  lt_thread_exit();
}

static void init_process(void) {
  (void)lt_device_count(LT_CPU);
  (void)lt_default_generator();
  exit_key_ok = pthread_key_create(&exit_key, thread_ended) == 0;
}

static void mark_thread(void) {
  pthread_once(&init_once, init_process);
  if (exit_key_ok && !pthread_getspecific(exit_key)) pthread_setspecific(exit_key, (void *)1);
}

static int newstate_p(lua_State *L) {
  lua_pushcfunction(L, lutorch_openlibs);
  lua_call(L, 0, 0);
  state_ext_t *e = lua_newuserdatauv(L, sizeof *e, 0);
  e->gen = NULL;
  luaL_newmetatable(L, STATE_MT);
  lua_pushcfunction(L, ext_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  e->gen = lt_generator_new(LT_DEFAULT_SEED);
  if (!e->gen) return lt_lua_error(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &STATE_KEY);
  return 0;
}

lua_State *lutorch_newstate(void) {
  mark_thread();
  newstate_err[0] = '\0';
  lua_State *L = lt_lua_newstate();
  if (!L) {
    snprintf(newstate_err, sizeof newstate_err, "lutorch_newstate: cannot create a Lua state: out of memory");
    return NULL;
  }
  clear_error(L); /* creates the key: later sets of it cannot fail */
  lua_gc(L, LUA_GCGEN, 0, 0); /* as the interpreter: many short-lived tensors */
  lua_pushcfunction(L, newstate_p);
  lua_pushcfunction(L, lt_lua_msgh);
  lua_insert(L, -2);
  if (lua_pcall(L, 0, 0, -2) != LUA_OK) {
    const char *m = lua_tostring(L, -1);
    snprintf(newstate_err, sizeof newstate_err, "lutorch_newstate: %s", m ? m : "(no message)");
    lua_close(L);
    return NULL;
  }
  lua_settop(L, 0);
  return L;
}

void lutorch_close(lua_State *L) {
  mark_thread();
  if (L) lua_close(L);
}

/* ---- running code ---- */

static int finish_chunk(lua_State *L, int top, int st) {
  if (st != LUA_OK) return set_error(L, st);
  st = call(L, 0, 0);
  lua_settop(L, top);
  return st;
}

int lutorch_dofile(lua_State *L, const char *path) {
  int top = lua_gettop(L);
  return finish_chunk(L, top, luaL_loadfile(L, path));
}

int lutorch_dostring(lua_State *L, const char *code, const char *chunkname) {
  int top = lua_gettop(L);
  if (!code) {
    lua_pushliteral(L, "lutorch_dostring: code is NULL");
    return set_error(L, LUA_ERRRUN);
  }
  return finish_chunk(L, top, luaL_loadbuffer(L, code, strlen(code), chunkname ? chunkname : "=(lutorch_dostring)"));
}

int lutorch_pcall(lua_State *L, int narg, int nres) {
  if (narg < 0 || lua_gettop(L) < narg + 1) {
    lua_pushliteral(L, "lutorch_pcall: fewer values on the stack than the function and its arguments");
    return set_error(L, LUA_ERRRUN);
  }
  return call(L, narg, nres);
}

/* ---- tensors from C ---- */

typedef struct {
  const void *cdata;
  void *data;
  int ndim;
  const int64_t *sizes, *strides;
  lutorch_dtype dt;
  lutorch_device dev;
  void (*release)(void *, void *);
  void *ctx;
  bool wrap;
} push_args_t;

static void check_geometry(lua_State *L, const char *op, const push_args_t *a) {
  if ((unsigned)a->dt >= LUTORCH_NDTYPES) luaL_error(L, "%s: invalid dtype %d", op, (int)a->dt);
  if (a->ndim < 0 || a->ndim > LT_MAX_DIM)
    luaL_error(L, "%s: ndim must be 0 to %d, got %d", op, LT_MAX_DIM, a->ndim);
  if (a->ndim > 0 && !a->sizes) luaL_error(L, "%s: sizes is NULL", op);
  for (int i = 0; i < a->ndim; i++) {
    if (a->sizes[i] < 0)
      luaL_error(L, "%s: size of dimension %d is negative (%I)", op, i + 1, (lua_Integer)a->sizes[i]);
    if (a->strides && a->strides[i] < 0)
      luaL_error(L, "%s: stride of dimension %d is negative (%I)", op, i + 1, (lua_Integer)a->strides[i]);
  }
  if (a->dev.type != LUTORCH_CPU && a->dev.type != LUTORCH_CUDA)
    luaL_error(L, "%s: invalid device type %d", op, a->dev.type);
  if (a->dev.index < -1 || a->dev.index >= LT_DEVICE_MAX)
    luaL_error(L, "%s: invalid device index %d", op, a->dev.index);
}

static int push_p(lua_State *L) {
  const push_args_t *a = lua_touserdata(L, 1);
  const char *op = a->wrap ? "lutorch_push_tensor_wrap" : "lutorch_push_tensor";
  check_geometry(L, op, a);
  lt_device_t dev = lt_device((lt_devtype)a->dev.type, a->dev.index);
  if (lt_device_resolve(dev, &dev) != LT_OK) luaL_error(L, "%s: %s", op, lt_last_error());
  int64_t n = lt_numel_of(a->ndim, a->sizes);
  lt_tensor_t *t;
  if (a->wrap) {
    if (!a->data && n > 0) luaL_error(L, "%s: data is NULL", op);
    t = lt_from_blob(a->data, a->ndim, a->sizes, a->strides, (lt_dtype)a->dt, dev, a->release, a->ctx);
  } else {
    if (!a->cdata && n > 0) luaL_error(L, "%s: data is NULL", op);
    t = lt_empty(a->ndim, a->sizes, (lt_dtype)a->dt, dev);
    if (t && n > 0) {
      const lt_backend_i *be = lt_backend(dev.type);
      if (be && be->host_accessible) {
        memcpy(lt_data(t), a->cdata, (size_t)n * lt_dtype_size((lt_dtype)a->dt));
      } else { /* a device's memory: copy from a CPU tensor over the caller's buffer */
        lt_tensor_t *src = lt_from_blob((void *)a->cdata, a->ndim, a->sizes, NULL, (lt_dtype)a->dt,
                                        lt_device(LT_CPU, 0), NULL, NULL);
        if (!src || lt_copy_(t, src) != LT_OK) {
          lt_release(src);
          lt_release(t);
          t = NULL;
        } else {
          lt_release(src);
        }
      }
    }
  }
  if (!t) luaL_error(L, "%s: %s", op, lt_last_error());
  lt_lua_pushtensor(L, t);
  return 1;
}

static int push(lua_State *L, push_args_t *a) {
  mark_thread();
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM; /* no room even for a message */
  lua_pushcfunction(L, push_p);
  lua_pushlightuserdata(L, a);
  int st = lua_pcall(L, 1, 1, 0);
  if (st != LUA_OK) return set_error(L, st);
  clear_error(L);
  return LUTORCH_OK;
}

int lutorch_push_tensor(lua_State *L, const void *data, int ndim, const int64_t *sizes,
                        lutorch_dtype dt, lutorch_device dev) {
  push_args_t a = {.cdata = data, .ndim = ndim, .sizes = sizes, .dt = dt, .dev = dev};
  return push(L, &a);
}

int lutorch_push_tensor_wrap(lua_State *L, void *data, int ndim, const int64_t *sizes,
                             const int64_t *strides, lutorch_dtype dt, lutorch_device dev,
                             void (*release)(void *ctx, void *data), void *ctx) {
  push_args_t a = {.data = data, .ndim = ndim, .sizes = sizes, .strides = strides, .dt = dt,
                   .dev = dev, .release = release, .ctx = ctx, .wrap = true};
  return push(L, &a);
}

/* ---- tensors to C ---- */

typedef struct {
  int idx;               /* the caller's stack index; 0: the global `name` */
  const char *name;
  lutorch_tensor *out;
} get_args_t;

/* protected: (args, value) with value the tensor (or the global's name is looked up) */
static int get_p(lua_State *L) {
  const get_args_t *a = lua_touserdata(L, 1);
  if (a->idx == 0) {
    lua_getglobal(L, a->name);
    lua_replace(L, 2);
  }
  lt_tensor_t *x = lt_lua_totensor(L, 2);
  if (!x) {
    if (a->idx == 0) luaL_error(L, "lutorch_get_global_tensor: global '%s' is not a tensor (a %s)", a->name, luaL_typename(L, 2));
    luaL_error(L, "lutorch_get_tensor: the value at index %d is not a tensor (a %s)", a->idx, luaL_typename(L, 2));
  }
  bool grad = lt_grad_enabled();
  lt_set_grad_enabled(false); /* a copy for C is no part of any graph */
  lt_tensor_t *c = lt_contiguous(x);
  lt_set_grad_enabled(grad);
  if (!c) luaL_error(L, "lutorch_get_tensor: %s", lt_last_error());
  lutorch_tensor *o = a->out;
  o->ndim = c->ndim;
  for (int i = 0; i < c->ndim; i++) o->sizes[i] = c->sizes[i];
  o->numel = c->numel;
  o->nbytes = (size_t)c->numel * lt_elsize(c);
  o->dtype = (lutorch_dtype)c->dtype;
  o->device.type = c->device.type;
  o->device.index = c->device.index;
  o->data = lt_data(c);
  o->handle = c; /* nothing after this can fail */
  return 0;
}

static int get(lua_State *L, get_args_t *a) {
  mark_thread();
  memset(a->out, 0, sizeof *a->out);
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  int top = lua_gettop(L);
  int abs = a->idx < 0 && a->idx > LUA_REGISTRYINDEX ? top + a->idx + 1 : a->idx;
  if (a->idx != 0 && a->idx > LUA_REGISTRYINDEX && (abs < 1 || abs > top)) {
    lua_pushfstring(L, "lutorch_get_tensor: stack index %d is out of range (%d values)", a->idx, top);
    return set_error(L, LUA_ERRRUN);
  }
  lua_pushcfunction(L, get_p);
  lua_pushlightuserdata(L, a);
  if (a->idx != 0) lua_pushvalue(L, abs);
  else lua_pushnil(L);
  int st = lua_pcall(L, 2, 0, 0);
  if (st != LUA_OK) {
    set_error(L, st);
    lua_settop(L, top);
    memset(a->out, 0, sizeof *a->out);
    return st;
  }
  clear_error(L);
  return LUTORCH_OK;
}

int lutorch_get_tensor(lua_State *L, int idx, lutorch_tensor *out) {
  get_args_t a = {.idx = idx, .out = out};
  if (idx == 0) {
    memset(out, 0, sizeof *out);
    lua_pushliteral(L, "lutorch_get_tensor: stack index 0 is not valid");
    return set_error(L, LUA_ERRRUN);
  }
  return get(L, &a);
}

int lutorch_get_global_tensor(lua_State *L, const char *name, lutorch_tensor *out) {
  if (!name) {
    memset(out, 0, sizeof *out);
    lua_pushliteral(L, "lutorch_get_global_tensor: name is NULL");
    return set_error(L, LUA_ERRRUN);
  }
  get_args_t a = {.idx = 0, .name = name, .out = out};
  return get(L, &a);
}

void lutorch_tensor_release(lutorch_tensor *t) {
  if (!t) return;
  mark_thread();
  lt_release((lt_tensor_t *)t->handle);
  memset(t, 0, sizeof *t);
}
