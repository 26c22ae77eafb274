/* Mixed precision's C side: the per-thread autocast state (torch._autocast_*), and GradScaler's
   fused passes (torch._amp_unscale_, torch._amp_update_scale_). lua/torch/amp.lua builds the user
   API over them. */
#include "bindings/binding.h"
#include "core/amp.h"
#include "core/autocast.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* 'cpu' or 'cuda' to the state's index */
static int check_device_type(lua_State *L, int idx) {
  const char *s = luaL_checkstring(L, idx);
  if (strcmp(s, "cpu") == 0) return LT_AC_CPU;
  if (strcmp(s, "cuda") == 0) return LT_AC_CUDA;
  return luaL_error(L, "User specified autocast device_type must be 'cuda' or 'cpu', got '%s'", s);
}

/* The state travels as a string (an opaque value for DataParallel's replica threads). */
static void push_state(lua_State *L, const lt_autocast_state_t *s) {
  lua_pushlstring(L, (const char *)s, sizeof *s);
}

/* torch._autocast_state() -> opaque state of the calling thread */
static int l_state(lua_State *L) {
  lt_lua_checknargs(L, 0, "_autocast_state");
  lt_autocast_state_t s;
  memset(&s, 0, sizeof s);
  lt_autocast_get_state(&s);
  push_state(L, &s);
  return 1;
}

/* torch._set_autocast_state(state) */
static int l_set_state(lua_State *L) {
  size_t n;
  const char *p = luaL_checklstring(L, 1, &n);
  lt_lua_checknargs(L, 1, "_set_autocast_state");
  lt_autocast_state_t s;
  if (n != sizeof s) return luaL_error(L, "_set_autocast_state: not an autocast state (from torch._autocast_state())");
  /* the flags are checked as bytes before they are read as bools (another value would be UB) */
  const unsigned char *flags[] = {(const unsigned char *)p + offsetof(lt_autocast_state_t, enabled),
                                  (const unsigned char *)p + offsetof(lt_autocast_state_t, enabled) + sizeof(bool),
                                  (const unsigned char *)p + offsetof(lt_autocast_state_t, cache_enabled)};
  for (int i = 0; i < 3; i++)
    if (*flags[i] > 1) return luaL_error(L, "_set_autocast_state: not an autocast state (from torch._autocast_state())");
  memcpy(&s, p, sizeof s);
  lt_lua_check(L, lt_autocast_set_state(&s));
  return 0;
}

/* torch._autocast_enter(device_type, dtype, enabled, cache_enabled) -> the state before */
static int l_enter(lua_State *L) {
  int d = check_device_type(L, 1);
  lt_dtype dt = lt_lua_checkdtype(L, 2);
  bool enabled = lua_toboolean(L, 3), cache = lua_toboolean(L, 4);
  lt_lua_checknargs(L, 4, "autocast");
  if (dt != LT_FLOAT16 && dt != LT_BFLOAT16 && dt != LT_FLOAT32)
    return luaL_error(L, "autocast: dtype must be float16 or bfloat16, got %s", lt_dtype_name(dt));
  lt_autocast_state_t prev, s;
  memset(&prev, 0, sizeof prev);
  lt_autocast_get_state(&prev);
  s = prev;
  s.enabled[d] = enabled;
  s.dtype[d] = dt;
  s.cache_enabled = cache;
  s.depth = prev.depth + 1;
  lt_lua_check(L, lt_autocast_set_state(&s));
  push_state(L, &prev);
  return 1;
}

/* torch._autocast_query(device_type) -> enabled, dtype */
static int l_query(lua_State *L) {
  int d = check_device_type(L, 1);
  lt_autocast_state_t s;
  lt_autocast_get_state(&s);
  lua_pushboolean(L, s.enabled[d]);
  lt_lua_pushdtype(L, s.dtype[d]);
  return 2;
}

/* torch._autocast_set(device_type, enabled, dtype): the calling thread's setting for one device
   type, outside any region's bookkeeping (torch.set_autocast_enabled, set_autocast_*_dtype); nil
   leaves that field as it is. Leaving a region restores what it found, setters' changes included. */
static int l_set(lua_State *L) {
  int d = check_device_type(L, 1);
  lt_lua_checknargs(L, 3, "_autocast_set");
  lt_autocast_state_t s;
  memset(&s, 0, sizeof s);
  lt_autocast_get_state(&s);
  if (!lua_isnil(L, 2)) s.enabled[d] = lua_toboolean(L, 2);
  if (!lua_isnil(L, 3)) {
    lt_dtype dt = lt_lua_checkdtype(L, 3);
    if (dt != LT_FLOAT16 && dt != LT_BFLOAT16 && dt != LT_FLOAT32)
      return luaL_error(L, "autocast: dtype must be float16, bfloat16 or float32, got %s", lt_dtype_name(dt));
    s.dtype[d] = dt;
  }
  lt_lua_check(L, lt_autocast_set_state(&s));
  return 0;
}

/* torch._autocast_cache([enabled]) -> cache_enabled before (nil: only reads it) */
static int l_cache(lua_State *L) {
  lt_lua_checknargs(L, 1, "_autocast_cache");
  lt_autocast_state_t s;
  memset(&s, 0, sizeof s);
  lt_autocast_get_state(&s);
  lua_pushboolean(L, s.cache_enabled);
  if (!lua_isnoneornil(L, 1)) {
    s.cache_enabled = lua_toboolean(L, 1);
    lt_lua_check(L, lt_autocast_set_state(&s));
  }
  return 1;
}

/* torch._autocast_clear_cache() */
static int l_clear_cache(lua_State *L) {
  (void)L;
  lt_autocast_clear_cache();
  return 0;
}

/* torch._autocast_fp32(a, b, ...) -> the tensors as a float32-list op sees them (losses written in
   Lua call it first); non-tensors pass through */
static int l_fp32(lua_State *L) {
  int n = lua_gettop(L);
  if (!lt_autocast_on) return n;
  for (int i = 1; i <= n; i++) {
    lt_tensor_t *t = lt_lua_totensor(L, i);
    if (!t) continue;
    lt_tensor_t *c = lt_autocast_arg(t, LT_AC_FP32, t->device);
    if (c == t) {
      lt_release(c);
      continue;
    }
    lt_lua_pushtensor(L, c);
    lua_replace(L, i);
  }
  return n;
}

/* torch._amp_unscale_(grads (array of tensors), inv_scale, found_inf) */
static int l_unscale(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lt_tensor_t *inv = lt_lua_checktensor(L, 2), *found = lt_lua_checktensor(L, 3);
  lt_lua_checknargs(L, 3, "unscale_");
  lua_Integer n = luaL_len(L, 1);
  if (n < 0 || n > 1 << 24) return luaL_error(L, "unscale_: too many gradients (%I)", n);
  lt_tensor_t **gs = malloc(sizeof *gs * (size_t)(n ? n : 1));
  if (!gs) return luaL_error(L, "unscale_: out of memory");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    gs[i - 1] = lt_lua_totensor(L, -1);
    lua_pop(L, 1); /* the table keeps it alive */
    if (!gs[i - 1]) {
      free(gs);
      return luaL_error(L, "unscale_: gradient %I is not a tensor", i);
    }
  }
  int rc = lt_amp_unscale_((int)n, gs, inv, found);
  free(gs);
  lt_lua_check(L, rc);
  return 0;
}

/* torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval) */
static int l_update(lua_State *L) {
  lt_tensor_t *scale = lt_lua_checktensor(L, 1), *tracker = lt_lua_checktensor(L, 2);
  lt_tensor_t *found = lt_lua_checktensor(L, 3);
  double growth = luaL_checknumber(L, 4), backoff = luaL_checknumber(L, 5);
  lua_Integer interval = luaL_checkinteger(L, 6);
  lt_lua_checknargs(L, 6, "update");
  lt_lua_check(L, lt_amp_update_scale_(scale, tracker, found, growth, backoff, interval));
  return 0;
}

void lt_open_amp(lua_State *L, int torch) {
  static const luaL_Reg fns[] = {{"_autocast_state", l_state},   {"_set_autocast_state", l_set_state},
                                 {"_autocast_enter", l_enter},   {"_autocast_query", l_query},
                                 {"_autocast_clear_cache", l_clear_cache}, {"_autocast_fp32", l_fp32},
                                 {"_autocast_set", l_set},       {"_autocast_cache", l_cache},
                                 {"_amp_unscale_", l_unscale},   {"_amp_update_scale_", l_update},
                                 {NULL, NULL}};
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, torch, f->name);
  }
}
