/* Argument parsing shared by the bindings: operands, dimensions, sizes, options, dtype objects. */
#include "bindings/binding.h"

#include <string.h>

lt_operand_t lt_lua_checkoperand(lua_State *L, int idx) {
  lt_operand_t o;
  lt_tensor_t *t = lt_lua_totensor(L, idx); /* the common case first: one API call fewer */
  if (t) return lt_tensor_operand(t);
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return lt_int_operand(lua_tointeger(L, idx));
      return lt_float_operand(lua_tonumber(L, idx));
    case LUA_TBOOLEAN:
      o = lt_int_operand(lua_toboolean(L, idx));
      o.kind = LT_OPERAND_BOOL;
      return o;
    default:
      luaL_typeerror(L, idx, "tensor or number");
      return lt_int_operand(0); /* not reached */
  }
}

bool lt_lua_toint(lua_State *L, int idx, int64_t *v) {
  if (lua_type(L, idx) != LUA_TNUMBER) return false;
  int ok = 0;
  lua_Integer i = lua_tointegerx(L, idx, &ok);
  if (ok) *v = (int64_t)i;
  return ok;
}

int64_t lt_lua_checkint(lua_State *L, int idx, const char *op, const char *what) {
  int64_t v;
  if (lt_lua_toint(L, idx, &v)) return v;
  if (lua_type(L, idx) == LUA_TNUMBER)
    luaL_error(L, "%s: %s must be an integer, got %s", op, what, luaL_tolstring(L, idx, NULL));
  luaL_error(L, "%s: %s must be an integer, got %s", op, what, luaL_typename(L, idx));
  return 0;
}

int64_t lt_lua_todim(lua_State *L, int64_t d, const char *op) {
  if (d == 0)
    luaL_error(L, "%s: dimension 0 is invalid: dimensions are 1-based (1 is the first, -1 the last)", op);
  return d > 0 ? d - 1 : d;
}

int64_t lt_lua_checkdim(lua_State *L, int idx, const char *op) {
  int64_t d;
  if (!lt_lua_toint(L, idx, &d)) {
    if (lua_type(L, idx) == LUA_TNUMBER) lt_lua_checkint(L, idx, op, "the dimension");
    luaL_typeerror(L, idx, "integer dimension");
  }
  return lt_lua_todim(L, d, op);
}

int64_t lt_lua_index(lua_State *L, int64_t i, const char *op) {
  if (i == 0) luaL_error(L, "%s: index 0 is invalid: indices are 1-based (1 is the first, -1 the last)", op);
  return i > 0 ? i - 1 : i;
}

static bool is_array_table(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx) || lt_lua_todtype(L, idx) != LT_DTYPE_INVALID) return false;
  if (lua_rawlen(L, idx) > 0) return true;
  /* an empty table counts as an (empty) array when it has no keys at all */
  lua_pushnil(L);
  if (lua_next(L, idx)) { lua_pop(L, 2); return false; }
  return true;
}

static int check_int_list(lua_State *L, int idx, int *n, int64_t *out, const char *op, const char *what) {
  int top = lua_gettop(L);
  *n = 0;
  if (lua_istable(L, idx) && is_array_table(L, idx)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
    if (len > LT_MAX_DIM) luaL_error(L, "%s: at most %d %s, got %d", op, LT_MAX_DIM, what, (int)len);
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, idx, i);
      if (!lt_lua_toint(L, -1, &out[*n]))
        luaL_error(L, "%s: %s must be integers, got %s at position %d", op, what,
                   lua_type(L, -1) == LUA_TNUMBER ? luaL_tolstring(L, -1, NULL) : luaL_typename(L, -1), (int)i);
      (*n)++;
      lua_pop(L, 1);
    }
    return idx + 1;
  }
  int i = idx;
  while (i <= top && lua_type(L, i) == LUA_TNUMBER) {
    if (*n >= LT_MAX_DIM) luaL_error(L, "%s: at most %d %s", op, LT_MAX_DIM, what);
    if (!lt_lua_toint(L, i, &out[*n])) luaL_error(L, "%s: %s must be integers, got %s", op, what, luaL_tolstring(L, i, NULL));
    (*n)++;
    i++;
  }
  return i;
}

int lt_lua_checksizes(lua_State *L, int idx, int *ndim, int64_t *sizes, const char *op) {
  int next = check_int_list(L, idx, ndim, sizes, op, "sizes");
  for (int i = 0; i < *ndim; i++)
    if (sizes[i] < 0) luaL_error(L, "%s: negative dimension %d in the sizes", op, (int)sizes[i]);
  return next;
}

int lt_lua_checkstrided(lua_State *L, int idx, int *ndim, int64_t *sizes, int64_t *strides, const char *op) {
  if (!lua_istable(L, idx) || !lua_istable(L, idx + 1))
    luaL_error(L, "%s: expected the sizes and the strides as two tables of integers", op);
  int ns;
  check_int_list(L, idx, ndim, sizes, op, "sizes");
  check_int_list(L, idx + 1, &ns, strides, op, "strides");
  if (*ndim != ns) luaL_error(L, "%s: expected as many strides as sizes, got %d sizes and %d strides", op, *ndim, ns);
  return idx + 2;
}

int lt_lua_checkdims(lua_State *L, int idx, int *n, int64_t *dims, const char *op) {
  int next = check_int_list(L, idx, n, dims, op, "dimensions");
  for (int i = 0; i < *n; i++) dims[i] = lt_lua_todim(L, dims[i], op);
  return next;
}

void lt_lua_checkoptkeys(lua_State *L, int idx, const char *op, const char *const *keys) {
  if (!lua_istable(L, idx)) return;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (int i = 0; keys[i] && !known; i++) known = strcmp(k, keys[i]) == 0;
    }
    if (!known) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (int i = 0; keys[i]; i++) {
        if (i) luaL_addstring(&b, ", ");
        luaL_addstring(&b, keys[i]);
      }
      luaL_pushresult(&b);
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
      luaL_error(L, "%s: unknown option '%s' (its options are %s)", op, k, lua_tostring(L, -1));
    }
  }
}

static void checkopts(lua_State *L, int idx, lt_lua_opts_t *o, bool random) {
  o->dtype = LT_DTYPE_INVALID;
  o->has_device = false;
  o->device = lt_device(LT_CPU, 0);
  o->requires_grad = false;
  o->generator = NULL;
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) luaL_typeerror(L, idx, "options table");
  static const char *const keys[] = {"dtype", "device", "requires_grad", NULL};
  static const char *const rkeys[] = {"dtype", "device", "requires_grad", "generator", NULL};
  lua_Debug ar;
  const char *op = lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name ? ar.name : "factory";
  lt_lua_checkoptkeys(L, idx, op, random ? rkeys : keys);
  if (random) {
    lua_getfield(L, idx, "generator");
    o->generator = lt_lua_checkgenerator(L, lua_gettop(L), op);
    lua_pop(L, 1);
  }
  if (lua_getfield(L, idx, "dtype") != LUA_TNIL) o->dtype = lt_lua_checkdtype(L, lua_gettop(L));
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "device") != LUA_TNIL) {
    o->device = lt_lua_checkdevice(L, lua_gettop(L));
    o->has_device = true;
  }
  lua_pop(L, 1);
  lua_getfield(L, idx, "requires_grad");
  o->requires_grad = lua_toboolean(L, -1);
  lua_pop(L, 1);
}

void lt_lua_checkopts(lua_State *L, int idx, lt_lua_opts_t *o) { checkopts(L, idx, o, false); }
void lt_lua_checkrandopts(lua_State *L, int idx, lt_lua_opts_t *o) { checkopts(L, idx, o, true); }

/* ---- dtype objects: one table per dtype, kept in the registry ---- */
void lt_lua_pushdtype(lua_State *L, lt_dtype t) {
  lua_getfield(L, LUA_REGISTRYINDEX, "lutorch.dtypes");
  lua_rawgeti(L, -1, (lua_Integer)t + 1);
  lua_remove(L, -2);
}

lt_dtype lt_lua_todtype(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return LT_DTYPE_INVALID;
  if (!lua_getmetatable(L, idx)) return LT_DTYPE_INVALID;
  luaL_getmetatable(L, LT_DTYPE_MT);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!same) return LT_DTYPE_INVALID;
  lua_getfield(L, idx, "id");
  lt_dtype t = (lt_dtype)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return t;
}

lt_dtype lt_lua_checkdtype(lua_State *L, int idx) {
  lt_dtype t = lt_lua_todtype(L, idx);
  if (t != LT_DTYPE_INVALID) return t;
  if (lua_type(L, idx) == LUA_TSTRING) {
    t = lt_dtype_from_name(lua_tostring(L, idx));
    if (t != LT_DTYPE_INVALID) return t;
    luaL_error(L, "unknown dtype '%s' (expected one of float32, float64, float16, bfloat16, int64, "
                  "int32, int16, int8, uint8, bool)", lua_tostring(L, idx));
  }
  luaL_typeerror(L, idx, "dtype (e.g. torch.float32)");
  return LT_DTYPE_INVALID;
}

void lt_lua_checknargs(lua_State *L, int max, const char *op) {
  int n = lua_gettop(L);
  if (n > max) luaL_error(L, "%s: expected at most %d arguments, got %d", op, max, n);
}

void lt_lua_register(lua_State *L, int torch, int methods, const luaL_Reg *fns, bool in_torch, bool as_method) {
  for (; fns->name; fns++) {
    if (!fns->func) continue; /* an op table's entry that is not exported (LT_INTERNAL) */
    if (in_torch) {
      lua_pushcfunction(L, fns->func);
      lua_setfield(L, torch, fns->name);
    }
    if (as_method) {
      lua_pushcfunction(L, fns->func);
      lua_setfield(L, methods, fns->name);
    }
  }
}

/* The message handler of lua_pcall for code run on behalf of C (DataLoader workers, Lua threads,
   embedded states): the message, or the error object's __tostring, with a traceback. */
int lt_lua_msgh(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}
