/* torch.device objects, x:to(), torch.cpu and torch.memory. */
#include "bindings/binding.h"
#include "core/grad.h"
#include "core/stream.h"

#include <string.h>

void lt_lua_pushdevice(lua_State *L, lt_device_t d) {
  lt_device_t *u = lua_newuserdatauv(L, sizeof *u, 0);
  *u = d;
  luaL_setmetatable(L, LT_DEVICE_MT);
}

bool lt_lua_todevice(lua_State *L, int idx, lt_device_t *d) {
  lt_device_t *u = luaL_testudata(L, idx, LT_DEVICE_MT);
  if (u) { *d = *u; return true; }
  if (lua_type(L, idx) == LUA_TSTRING) {
    if (lt_device_parse(lua_tostring(L, idx), d) != LT_OK) lt_lua_error(L);
    return true;
  }
  return false;
}

lt_device_t lt_lua_checkdevice(lua_State *L, int idx) {
  lt_device_t d;
  if (lua_type(L, idx) == LUA_TNUMBER) { /* a bare number is a CUDA ordinal, as in PyTorch */
    int64_t i = lt_lua_checkint(L, idx, "torch.device", "the device index");
    if (i < 0) luaL_error(L, "torch.device: device index must not be negative");
    d = lt_device(LT_CUDA, (int)i);
    if (!lt_backend(LT_CUDA))
      luaL_error(L, "torch.device: device type 'cuda' is not available in this build; available types: %s",
                 lt_devtypes_available());
    return d;
  }
  if (!lt_lua_todevice(L, idx, &d)) luaL_typeerror(L, idx, "device or device string");
  return d;
}

static int d_new(lua_State *L) {
  lt_device_t d;
  if (lua_gettop(L) >= 2 && !lua_isnil(L, 2)) {
    const char *type = luaL_checkstring(L, 1);
    if (strchr(type, ':'))
      return luaL_error(L, "torch.device: type (string) must not include an index because index was passed explicitly: %s", type);
    lua_Integer i = luaL_checkinteger(L, 2);
    if (i < 0) return luaL_error(L, "torch.device: device index must not be negative");
    if (i >= LT_DEVICE_MAX) return luaL_error(L, "torch.device: device index %d is out of range", (int)i);
    if (lt_device_parse(type, &d) != LT_OK) return lt_lua_error(L);
    d.index = (int16_t)i;
  } else {
    d = lt_lua_checkdevice(L, 1);
  }
  lt_lua_pushdevice(L, d);
  return 1;
}

static int d_index(lua_State *L) {
  lt_device_t *d = luaL_checkudata(L, 1, LT_DEVICE_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "type") == 0) lua_pushstring(L, lt_devtype_name((lt_devtype)d->type));
  else if (strcmp(k, "index") == 0) {
    if (d->index < 0) lua_pushnil(L);
    else lua_pushinteger(L, d->index);
  } else lua_pushnil(L);
  return 1;
}

static int d_tostring(lua_State *L) {
  lt_device_t *d = luaL_checkudata(L, 1, LT_DEVICE_MT);
  char buf[32];
  lua_pushstring(L, lt_device_format(*d, buf, sizeof buf));
  return 1;
}

static int d_eq(lua_State *L) {
  lt_device_t *a = luaL_testudata(L, 1, LT_DEVICE_MT), *b = luaL_testudata(L, 2, LT_DEVICE_MT);
  lua_pushboolean(L, a && b && lt_device_eq(*a, *b));
  return 1;
}

/* x:to(target, opts) / x:to(device, dtype, opts) */
static int t_to(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_device_t dev = t->device;
  lt_dtype dt = t->dtype;
  int idx = 2;
  bool copy = false, non_blocking = false;
  lt_tensor_t *other = lt_lua_totensor(L, idx);
  if (other) {
    dev = other->device;
    dt = other->dtype;
    idx++;
  } else {
    if (lt_lua_todtype(L, idx) != LT_DTYPE_INVALID) {
      dt = lt_lua_todtype(L, idx++);
    } else if (lua_type(L, idx) == LUA_TSTRING || luaL_testudata(L, idx, LT_DEVICE_MT) || lua_type(L, idx) == LUA_TNUMBER) {
      lt_device_t d = lt_lua_checkdevice(L, idx++);
      if (lt_device_resolve(d, &dev) != LT_OK) return lt_lua_error(L);
      if (lt_lua_todtype(L, idx) != LT_DTYPE_INVALID) dt = lt_lua_todtype(L, idx++);
    } else if (!lua_istable(L, idx)) {
      return luaL_error(L, "to: expected a device, a device string, a dtype or a tensor, got %s", luaL_typename(L, idx));
    }
  }
  if (lua_istable(L, idx) && lt_lua_todtype(L, idx) == LT_DTYPE_INVALID) {
    lua_getfield(L, idx, "copy");
    copy = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, idx, "non_blocking");
    non_blocking = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "dtype") != LUA_TNIL) dt = lt_lua_checkdtype(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "device") != LUA_TNIL) {
      lt_device_t d = lt_lua_checkdevice(L, lua_gettop(L));
      if (lt_device_resolve(d, &dev) != LT_OK) return lt_lua_error(L);
    }
    lua_pop(L, 1);
    idx++;
  }
  lt_lua_checknargs(L, idx - 1, "to");
  if (!copy && dt == t->dtype && lt_device_eq(dev, t->device)) {
    lua_pushvalue(L, 1);
    return 1;
  }
  bool prev = lt_copy_set_non_blocking(non_blocking); /* seen by the CUDA copy (core/cuda_copy.c) */
  lt_tensor_t *r = lt_convert(t, dt, dev);
  lt_copy_set_non_blocking(prev);
  lt_lua_pushtensor(L, r);
  return 1;
}

static int t_cpu(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (t->device.type == LT_CPU) { lua_pushvalue(L, 1); return 1; }
  lt_lua_pushtensor(L, lt_convert(t, t->dtype, lt_device(LT_CPU, 0)));
  return 1;
}

static int t_cuda(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_device_t d = lt_device(LT_CUDA, lua_isnoneornil(L, 2) ? -1 : (int)luaL_checkinteger(L, 2)), r;
  if (!lt_backend(LT_CUDA))
    return luaL_error(L, "cuda: CUDA is not available: this build has no CUDA support (build with make CUDA=1)");
  if (lt_device_resolve(d, &r) != LT_OK) return lt_lua_error(L);
  if (lt_device_eq(r, t->device)) { lua_pushvalue(L, 1); return 1; }
  lt_lua_pushtensor(L, lt_convert(t, t->dtype, r));
  return 1;
}

/* x:float(), x:double(), ... */
static int convert_to(lua_State *L, lt_dtype dt) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (t->dtype == dt) { lua_pushvalue(L, 1); return 1; }
  lt_lua_pushtensor(L, lt_convert(t, dt, t->device));
  return 1;
}
static int t_float(lua_State *L) { return convert_to(L, LT_FLOAT32); }
static int t_double(lua_State *L) { return convert_to(L, LT_FLOAT64); }
static int t_half(lua_State *L) { return convert_to(L, LT_FLOAT16); }
static int t_bfloat16(lua_State *L) { return convert_to(L, LT_BFLOAT16); }
static int t_long(lua_State *L) { return convert_to(L, LT_INT64); }
static int t_int(lua_State *L) { return convert_to(L, LT_INT32); }
static int t_short(lua_State *L) { return convert_to(L, LT_INT16); }
static int t_char(lua_State *L) { return convert_to(L, LT_INT8); }
static int t_byte(lua_State *L) { return convert_to(L, LT_UINT8); }
static int t_bool(lua_State *L) { return convert_to(L, LT_BOOL); }
static int t_type(lua_State *L) {
  if (lua_isnoneornil(L, 2)) {
    lt_tensor_t *t = lt_lua_checktensor(L, 1);
    lua_pushfstring(L, "torch.%s", lt_dtype_name(t->dtype));
    return 1;
  }
  return convert_to(L, lt_lua_checkdtype(L, 2));
}

/* ---- torch.cpu ---- */
static int cpu_device_count(lua_State *L) { lua_pushinteger(L, lt_cpu_device_count()); return 1; }
static int cpu_set_device_count(lua_State *L) {
  lt_lua_check(L, lt_cpu_set_device_count((int)luaL_checkinteger(L, 1)));
  return 0;
}
static int cpu_current_device(lua_State *L) { lua_pushinteger(L, lt_current_device(LT_CPU)); return 1; }
static int cpu_set_device(lua_State *L) {
  lt_device_t d = lua_type(L, 1) == LUA_TNUMBER ? lt_device(LT_CPU, (int)lt_lua_checkint(L, 1, "cpu.set_device", "the device index"))
                                                : lt_lua_checkdevice(L, 1);
  if (d.type != LT_CPU) return luaL_error(L, "cpu.set_device: expected a cpu device");
  lt_lua_check(L, lt_set_current_device(d));
  return 0;
}
static int cpu_synchronize(lua_State *L) { (void)L; return 0; }

/* ---- torch.memory ---- */
static lt_device_t memory_device(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return lt_device(LT_CPU, -1);
  return lt_lua_checkdevice(L, idx);
}

static int mem_stats(lua_State *L) {
  lt_memory_stats_t s;
  lt_lua_check(L, lt_memory_stats(memory_device(L, 1), &s));
  /* PyTorch's keys: <family>.{all,large_pool,small_pool}.{current,peak,allocated,freed} */
  static const char *const pools[LT_NSTATPOOLS] = {"all", "small_pool", "large_pool"};
  lua_createtable(L, 0, LT_NSTATS * LT_NSTATPOOLS * 4 + 4);
  char key[64];
  for (int k = 0; k < LT_NSTATS; k++)
    for (int j = 0; j < LT_NSTATPOOLS; j++) {
      const lt_stat_t *st = &s.stat[k][j];
      const int64_t v[4] = {st->current, st->peak, st->allocated, st->freed};
      static const char *const what[4] = {"current", "peak", "allocated", "freed"};
      for (int w = 0; w < 4; w++) {
        snprintf(key, sizeof key, "%s.%s.%s", lt_stat_names[k], pools[j], what[w]);
        lua_pushinteger(L, v[w]);
        lua_setfield(L, -2, key);
      }
    }
#define F(name, field) lua_pushinteger(L, s.field); lua_setfield(L, -2, name);
  F("num_alloc_retries", num_alloc_retries)
  F("num_ooms", num_ooms)
  F("num_device_alloc", num_device_allocs)
  F("num_device_free", num_device_frees)
#undef F
  return 1;
}

static int mem_field(lua_State *L, int which) {
  lt_memory_stats_t s;
  lt_lua_check(L, lt_memory_stats(memory_device(L, 1), &s));
  int64_t v = which == 0 ? s.allocated : which == 1 ? s.max_allocated : which == 2 ? s.reserved : s.max_reserved;
  lua_pushinteger(L, v);
  return 1;
}
static int mem_allocated(lua_State *L) { return mem_field(L, 0); }
static int mem_max_allocated(lua_State *L) { return mem_field(L, 1); }
static int mem_reserved(lua_State *L) { return mem_field(L, 2); }
static int mem_max_reserved(lua_State *L) { return mem_field(L, 3); }
static int mem_reset_peak(lua_State *L) { lt_lua_check(L, lt_memory_reset_peak(memory_device(L, 1))); return 0; }
static int mem_empty_cache(lua_State *L) {
  lua_gc(L, LUA_GCCOLLECT); /* unreachable tensors first, so their blocks can be returned */
  lt_lua_check(L, lt_memory_empty_cache(memory_device(L, 1)));
  return 0;
}

/* torch._available_memory([device]) -> the bytes a new allocation on the device (the current one
   of its type when it has no index) can still have, by the backend's estimate (the host's available
   memory for a CPU device), or nil when unknown. Private: checks of sizes before long builds
   (nn.RNN's layers). */
static int f_available_memory(lua_State *L) {
  lt_device_t d;
  lt_lua_check(L, lt_device_resolve(memory_device(L, 1), &d));
  const lt_backend_i *be = lt_backend(d.type);
  int64_t a = be->available_memory_i ? be->available_memory_i(d.index) : -1;
  if (a < 0) lua_pushnil(L);
  else lua_pushinteger(L, a);
  return 1;
}

/* torch._memory_set_policy(device, policy) -> the previous policy: 'split' carves device
   allocations into blocks as PyTorch's CUDA allocator (CUDA's default), 'class' reuses whole
   blocks of one size class (the CPU's default). Private: the specs run the splitting code on a
   CPU device. */
static int f_memory_set_policy(lua_State *L) {
  lt_lua_checknargs(L, 2, "_memory_set_policy");
  lt_device_t d = lt_lua_checkdevice(L, 1);
  const char *pol = luaL_checkstring(L, 2);
  bool split = strcmp(pol, "split") == 0, was = false;
  if (!split && strcmp(pol, "class") != 0)
    return luaL_error(L, "_memory_set_policy: expected 'split' or 'class', got '%s'", pol);
  lt_lua_check(L, lt_memory_set_split(d, split, &was));
  lua_pushstring(L, was ? "split" : "class");
  return 1;
}

/* torch._device_alias(t, device) -> t on another CPU device, sharing its memory (DataParallel's
   replicas of parameters and inputs; recorded as a copy for autograd) */
static int f_device_alias(lua_State *L) {
  lt_lua_checknargs(L, 2, "_device_alias");
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_lua_pushtensor(L, lt_device_alias(t, lt_lua_checkdevice(L, 2)));
  return 1;
}

void lt_open_device(lua_State *L, int torch, int mtab) {
  luaL_newmetatable(L, LT_DEVICE_MT);
  lua_pushcfunction(L, d_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, d_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, d_eq);
  lua_setfield(L, -2, "__eq");
  lua_pushliteral(L, "torch.device");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  lua_pushcfunction(L, d_new);
  lua_setfield(L, torch, "device");

  static const luaL_Reg methods[] = {
      {"to", t_to}, {"cpu", t_cpu}, {"cuda", t_cuda}, {"float", t_float}, {"double", t_double},
      {"half", t_half}, {"bfloat16", t_bfloat16}, {"long", t_long}, {"int", t_int},
      {"short", t_short}, {"char", t_char}, {"byte", t_byte}, {"bool", t_bool}, {"type", t_type},
      {NULL, NULL}};
  lt_lua_register(L, torch, mtab, methods, false, true);

  lua_pushcfunction(L, f_device_alias);
  lua_setfield(L, torch, "_device_alias");
  lua_pushcfunction(L, f_memory_set_policy);
  lua_setfield(L, torch, "_memory_set_policy");
  lua_pushcfunction(L, f_available_memory);
  lua_setfield(L, torch, "_available_memory");

  static const luaL_Reg cpu[] = {
      {"device_count", cpu_device_count}, {"set_device_count", cpu_set_device_count},
      {"current_device", cpu_current_device}, {"set_device", cpu_set_device},
      {"synchronize", cpu_synchronize}, {NULL, NULL}};
  luaL_newlib(L, cpu);
  lua_setfield(L, torch, "cpu");

  static const luaL_Reg memory[] = {
      {"stats", mem_stats}, {"allocated", mem_allocated}, {"max_allocated", mem_max_allocated},
      {"reserved", mem_reserved}, {"max_reserved", mem_max_reserved}, {"reset_peak", mem_reset_peak},
      {"empty_cache", mem_empty_cache}, {NULL, NULL}};
  luaL_newlib(L, memory);
  lua_setfield(L, torch, "memory");
}
