/* torch._cuda: the C side of torch.cuda (lua/torch/cuda.lua), over the core's CUDA API
   (core/cuda.h), and the tensor methods pin_memory and is_pinned. Nothing here knows whether CUDA is
   compiled in: a build without it reports no devices. Device indices are CUDA ordinals (0-based,
   as in PyTorch); -1 or nil is the current device. */
#include "bindings/binding.h"
#include "core/cuda.h"

static int optindex(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return -1;
  lt_device_t d;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    int64_t i = lt_lua_checkint(L, idx, "cuda", "the device index");
    if (i < -1 || i >= LT_DEVICE_MAX) luaL_error(L, "cuda: device index %d is out of range", (int)i);
    return (int)i;
  }
  d = lt_lua_checkdevice(L, idx);
  if (d.type != LT_CUDA) {
    char buf[32];
    luaL_error(L, "cuda: expected a cuda device, got '%s'", lt_device_format(d, buf, sizeof buf));
  }
  return d.index;
}

static int c_compiled(lua_State *L) { lua_pushboolean(L, lt_cuda_compiled()); return 1; }
static int c_device_count(lua_State *L) { lua_pushinteger(L, lt_cuda_device_count()); return 1; }
static int c_unavailable_reason(lua_State *L) {
  const char *r = lt_cuda_unavailable_reason();
  if (r) lua_pushstring(L, r);
  else lua_pushnil(L);
  return 1;
}

static int c_current_device(lua_State *L) {
  if (lt_cuda_device_count() == 0)
    return luaL_error(L, "cuda.current_device: CUDA is not available: %s", lt_cuda_unavailable_reason());
  lua_pushinteger(L, lt_current_device(LT_CUDA));
  return 1;
}

static int c_set_device(lua_State *L) {
  int i = optindex(L, 1);
  if (i < 0) return 0; /* PyTorch: a negative index is a no-op */
  if (lt_set_current_device(lt_device(LT_CUDA, i)) != LT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    return luaL_error(L, "cuda.set_device: %s", msg);
  }
  return 0;
}

static int c_get_device_properties(lua_State *L) {
  lt_cuda_props_t p;
  lt_lua_check(L, lt_cuda_get_properties(optindex(L, 1), &p));
  lua_createtable(L, 0, 5);
  lua_pushstring(L, p.name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, p.total_memory);
  lua_setfield(L, -2, "total_memory");
  lua_pushinteger(L, p.major);
  lua_setfield(L, -2, "major");
  lua_pushinteger(L, p.minor);
  lua_setfield(L, -2, "minor");
  lua_pushinteger(L, p.multi_processor_count);
  lua_setfield(L, -2, "multi_processor_count");
  return 1;
}

static int c_mem_get_info(lua_State *L) {
  int64_t f, t;
  lt_lua_check(L, lt_cuda_mem_get_info(optindex(L, 1), &f, &t));
  lua_pushinteger(L, f);
  lua_pushinteger(L, t);
  return 2;
}

static int c_synchronize(lua_State *L) {
  lt_lua_check(L, lt_cuda_synchronize(optindex(L, 1)));
  return 0;
}

static int c_manual_seed(lua_State *L) {
  lua_Integer s = luaL_checkinteger(L, 1);
  lt_lua_check(L, lt_cuda_manual_seed(optindex(L, 2), (uint64_t)s, lua_toboolean(L, 3)));
  return 0;
}

static int c_initial_seed(lua_State *L) {
  uint64_t s;
  lt_lua_check(L, lt_cuda_initial_seed(optindex(L, 1), &s));
  lua_pushinteger(L, (lua_Integer)s);
  return 1;
}

static int t_pin_memory(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "pin_memory");
  if (lt_is_pinned(t)) { lua_pushvalue(L, 1); return 1; }
  lt_lua_pushtensor(L, lt_pin_memory(t));
  return 1;
}

static int t_is_pinned(lua_State *L) {
  lua_pushboolean(L, lt_is_pinned(lt_lua_checktensor(L, 1)));
  return 1;
}

/* torch._cuda.bench_gemm(n, dtype, iters [, a, b]) -> ms per product, with cuBLAS called directly
   on a and b (contiguous n x n CUDA tensors of dtype) or on zeros of its own */
static int c_bench_gemm(lua_State *L) {
  double ms = 0;
  lua_Integer n = luaL_checkinteger(L, 1);
  lt_dtype dt = lt_lua_checkdtype(L, 2);
  int iters = (int)luaL_checkinteger(L, 3);
  if (n <= 0 || n > 65536) return luaL_error(L, "cuda.bench_gemm: n must be in 1..65536, got %lld", (long long)n);
  const void *ab[2] = {NULL, NULL};
  if (!lua_isnoneornil(L, 4)) {
    for (int k = 0; k < 2; k++) {
      lt_tensor_t *t = lt_lua_checktensor(L, 4 + k);
      if (t->device.type != LT_CUDA || !lt_is_contiguous(t) || t->dtype != dt || t->ndim != 2 || t->sizes[0] != n ||
          t->sizes[1] != n)
        return luaL_error(L, "cuda.bench_gemm: operand %d must be a contiguous %lldx%lld CUDA tensor of %s", k + 1,
                          (long long)n, (long long)n, lt_dtype_name(dt));
      ab[k] = lt_data(t);
    }
  }
  lt_lua_check(L, lt_cuda_bench_gemm(-1, (int)n, dt, ab[0], ab[1], iters, &ms));
  lua_pushnumber(L, ms);
  return 1;
}

/* torch._cuda.bench_memcpy(bytes, from_pinned_host, iters) -> ms per cudaMemcpyAsync */
static int c_bench_memcpy(lua_State *L) {
  double ms = 0;
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n <= 0) return luaL_error(L, "cuda.bench_memcpy: bytes must be positive");
  lt_lua_check(L, lt_cuda_bench_memcpy(-1, (size_t)n, lua_toboolean(L, 2), (int)luaL_checkinteger(L, 3), &ms));
  lua_pushnumber(L, ms);
  return 1;
}

void lt_open_cuda(lua_State *L, int torch, int methods) {
  static const luaL_Reg fns[] = {
      {"compiled", c_compiled}, {"device_count", c_device_count},
      {"unavailable_reason", c_unavailable_reason}, {"current_device", c_current_device},
      {"set_device", c_set_device}, {"get_device_properties", c_get_device_properties},
      {"mem_get_info", c_mem_get_info}, {"synchronize", c_synchronize},
      {"manual_seed", c_manual_seed}, {"initial_seed", c_initial_seed}, {"bench_gemm", c_bench_gemm},
      {"bench_memcpy", c_bench_memcpy}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, torch, "_cuda");
  static const luaL_Reg tm[] = {{"pin_memory", t_pin_memory}, {"is_pinned", t_is_pinned}, {NULL, NULL}};
  lt_lua_register(L, torch, methods, tm, false, true);
}
