/* luaopen_torch: builds the torch table from the binding parts and runs the Lua side, whose
   sources are compiled into the library (build/lua_modules.c), so that one file is the module. */
#include "bindings/binding.h"
#include "bindings/lua_modules.h"
#include "bindings/lutorch.h"
#include "core/blas.h"
#include "core/iter.h"
#include "core/settings.h"
#include "core/steal.h"

#include <lualib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int lt_lua_load_module(lua_State *L, const lt_lua_module_t *m) {
  if (m->bclen && luaL_loadbufferx(L, m->bytecode, m->bclen, m->path, "b") == LUA_OK) return LUA_OK;
  if (m->bclen) lua_pop(L, 1); /* the bytecode's error message */
  char chunkname[256];
  snprintf(chunkname, sizeof chunkname, "@%s", m->path);
  /* compiled as the bytecode was: with the chunk prefix on the first line */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, lt_lua_chunk_prefix);
  luaL_addlstring(&b, m->source, m->len);
  luaL_pushresult(&b);
  size_t n;
  const char *src = lua_tolstring(L, -1, &n);
  int rc = luaL_loadbufferx(L, src, n, chunkname, "t");
  lua_remove(L, -2);
  return rc;
}

static int load_module(lua_State *L) {
  const lt_lua_module_t *m = lua_touserdata(L, lua_upvalueindex(1));
  if (lt_lua_load_module(L, m) != LUA_OK) return lua_error(L);
  lua_pushstring(L, m->name);
  lua_call(L, 1, 1);
  return 1;
}

static void register_dtypes(lua_State *L, int torch) {
  static const struct { const char *name; lt_dtype t; } aliases[] = {
      {"float", LT_FLOAT32}, {"double", LT_FLOAT64}, {"half", LT_FLOAT16},
      {"long", LT_INT64},    {"int", LT_INT32},      {"short", LT_INT16}};
  luaL_newmetatable(L, LT_DTYPE_MT);
  lua_pushliteral(L, "torch.dtype");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  lua_createtable(L, LT_NDTYPES, 0); /* registry array: id + 1 -> dtype object */
  for (int i = 0; i < LT_NDTYPES; i++) {
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, i);
    lua_setfield(L, -2, "id");
    lua_pushstring(L, lt_dtype_name((lt_dtype)i));
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)lt_dtype_size((lt_dtype)i));
    lua_setfield(L, -2, "itemsize");
    lua_pushboolean(L, lt_dtype_is_floating((lt_dtype)i));
    lua_setfield(L, -2, "is_floating_point");
    luaL_setmetatable(L, LT_DTYPE_MT);
    lua_pushvalue(L, -1);
    lua_setfield(L, torch, lt_dtype_name((lt_dtype)i));
    lua_rawseti(L, -2, i + 1);
  }
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    lua_rawgeti(L, -1, (lua_Integer)aliases[i].t + 1);
    lua_setfield(L, torch, aliases[i].name);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "lutorch.dtypes");
}

static int f_is_tensor(lua_State *L) { lua_pushboolean(L, lt_lua_totensor(L, 1) != NULL); return 1; }
static int f_set_num_threads(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 1) return luaL_error(L, "set_num_threads: expected a positive number of threads, got %d", (int)n);
  lt_set_num_threads((int)n);
  return 0;
}
static int f_get_num_threads(lua_State *L) { lua_pushinteger(L, lt_num_threads()); return 1; }

/* torch._set_steal_delay(us) -> the previous setting: for the specs, worker 0 of the loops that
   hand out work by stealing (core/steal.h) waits us microseconds before each of its own units */
static int f_set_steal_delay(lua_State *L) {
  lua_Integer us = luaL_checkinteger(L, 1);
  if (us < 0 || us > 1000000) return luaL_error(L, "_set_steal_delay: expected 0 to 1000000 microseconds, got %d", (int)us);
  lua_pushinteger(L, lt_steal_set_delay((int)us));
  return 1;
}

/* torch._set_thread_num_threads(n) -> the previous limit: a kernel-thread limit for the calling
   thread only (0: none), used by DataParallel for the replica it runs on the caller's thread */
static int f_set_thread_num_threads(lua_State *L) {
  int n = (int)luaL_checkinteger(L, 1);
  lua_pushinteger(L, lt_thread_num_threads());
  lt_set_thread_num_threads(n < 0 ? 0 : n);
  return 1;
}
/* the process-wide settings behind lua/torch/settings.lua, which checks the arguments */
static int f_set_deterministic(lua_State *L) {
  lt_set_deterministic(lua_toboolean(L, 1), lua_toboolean(L, 2));
  return 0;
}
static int f_deterministic(lua_State *L) {
  lua_pushboolean(L, lt_deterministic());
  lua_pushboolean(L, lt_deterministic_warn_only());
  return 2;
}
static int f_set_warn_always(lua_State *L) {
  lt_set_warn_always(lua_toboolean(L, 1));
  return 0;
}
static int f_warn_always(lua_State *L) { lua_pushboolean(L, lt_warn_always()); return 1; }
static int f_set_flush_denormal(lua_State *L) {
  lua_pushboolean(L, lt_set_flush_denormal(lua_toboolean(L, 1)));
  return 1;
}
static int f_promote_types(lua_State *L) {
  lt_lua_pushdtype(L, lt_promote_types(lt_lua_checkdtype(L, 1), lt_lua_checkdtype(L, 2)));
  return 1;
}
/* torch.set_default_dtype(dtype) / torch.get_default_dtype(): the process-wide default float */
static int f_set_default_dtype(lua_State *L) {
  if (lt_set_default_float(lt_lua_checkdtype(L, 1)) != LT_OK) return lt_lua_error(L);
  return 0;
}
static int f_get_default_dtype(lua_State *L) {
  lt_lua_pushdtype(L, lt_default_float());
  return 1;
}
static int f_can_cast(lua_State *L) {
  lua_pushboolean(L, lt_can_cast(lt_lua_checkdtype(L, 1), lt_lua_checkdtype(L, 2)));
  return 1;
}
static int f_result_type(lua_State *L) {
  lt_result_type_t r;
  lt_result_type_init(&r);
  for (int i = 1; i <= 2; i++) {
    lt_operand_t o = lt_lua_checkoperand(L, i);
    if (o.kind == LT_OPERAND_TENSOR) lt_result_type_add_tensor(&r, o.t->dtype, o.t->ndim);
    else lt_result_type_add_scalar(&r, o.kind == LT_OPERAND_FLOAT, o.kind == LT_OPERAND_BOOL);
  }
  lt_lua_pushdtype(L, lt_result_type_get(&r));
  return 1;
}
/* torch.utils.clock(): monotonic wall-clock seconds, for timing (os.clock is CPU time) */
static int f_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* torch.utils.isatty(stream): whether 'stdout', 'stderr' (or 'stdin') is a terminal */
static int f_isatty(lua_State *L) {
  static const char *const names[] = {"stdin", "stdout", "stderr", NULL};
  int fd = luaL_checkoption(L, 1, "stdout", names);
  lua_pushboolean(L, isatty(fd));
  return 1;
}

static int f_blas_info(lua_State *L) {
  if (lt_blas_init() != LT_OK) return lt_lua_error(L);
  lua_pushstring(L, lt_blas_corename());
  lua_pushstring(L, lt_blas_info());
  return 2;
}

int luaopen_torch(lua_State *L) {
  luaL_checkversion(L);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "torch") == LUA_TTABLE) return 1; /* already open in this state */
  lua_pop(L, 2);
  lua_newtable(L);
  int torch = lua_gettop(L);
  lua_newtable(L); /* torch.Tensor: the methods of tensors */
  int methods = lua_gettop(L);
  lua_pushvalue(L, methods);
  lua_setfield(L, torch, "Tensor");
  register_dtypes(L, torch);
  lt_open_tensor(L, torch, methods);
  lt_open_device(L, torch, methods);
  lt_open_math(L, torch, methods);
  lt_open_shape(L, torch, methods);
  lt_open_factory(L, torch, methods);
  lt_open_linalg(L, torch, methods);
  lt_open_autograd(L, torch, methods);
  lt_open_nn(L, torch);
  lt_open_optim(L, torch);
  lt_open_data(L, torch);
  lt_open_generator(L, torch);
  lt_open_data_worker(L, torch);
  lt_open_serialize(L, torch);
  lt_open_cuda(L, torch, methods);
  lt_open_stream(L, torch, methods);
  lt_open_lua_thread(L, torch);
  lt_open_distributed(L, torch);
  lt_open_amp(L, torch);
  static const luaL_Reg fns[] = {
      {"is_tensor", f_is_tensor}, {"set_num_threads", f_set_num_threads},
      {"get_num_threads", f_get_num_threads}, {"_set_thread_num_threads", f_set_thread_num_threads},
      {"_set_steal_delay", f_set_steal_delay}, {"promote_types", f_promote_types},
      {"can_cast", f_can_cast}, {"result_type", f_result_type}, {"_blas_info", f_blas_info},
      {"set_default_dtype", f_set_default_dtype}, {"get_default_dtype", f_get_default_dtype},
      {"_set_deterministic", f_set_deterministic}, {"_deterministic", f_deterministic},
      {"_set_warn_always", f_set_warn_always}, {"_warn_always", f_warn_always},
      {"_set_flush_denormal", f_set_flush_denormal}, {NULL, NULL}};
  lt_lua_register(L, torch, methods, fns, true, false);
  lua_newtable(L);
  lua_pushcfunction(L, f_clock);
  lua_setfield(L, -2, "clock");
  lua_pushcfunction(L, f_isatty);
  lua_setfield(L, -2, "isatty");
  lua_setfield(L, torch, "utils");

  /* the Lua modules: preloaded, then torch's own init chunk runs with (torch table); each module's
     chunk takes its `error` from package.loaded["torch._error"] (bindings/error_position.c) */
  lt_open_error_position(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  const lt_lua_module_t *init = NULL;
  for (int i = 0; i < lt_lua_nmodules; i++) {
    if (strcmp(lt_lua_modules[i].name, "torch") == 0) { init = &lt_lua_modules[i]; continue; }
    lua_pushlightuserdata(L, (void *)&lt_lua_modules[i]);
    lua_pushcclosure(L, load_module, 1);
    lua_setfield(L, -2, lt_lua_modules[i].name);
  }
  lua_pop(L, 1);
  /* package.loaded.torch is set before init runs, so that modules can require 'torch' */
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, torch);
  lua_setfield(L, -2, "torch");
  lua_pop(L, 1);
  if (init) {
    if (lt_lua_load_module(L, init) != LUA_OK) return lua_error(L);
    lua_pushvalue(L, torch);
    lua_call(L, 1, 0);
  }
  lua_settop(L, torch);
  return 1;
}

int lutorch_openlibs(lua_State *L) {
  luaL_openlibs(L);
  luaL_requiref(L, "torch", luaopen_torch, 1);
  lua_pop(L, 1);
  return 0;
}
