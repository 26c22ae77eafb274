/* The C side of torch.save / torch.load (lua/torch/serialization.lua): a safetensors file to and
   from a flat set of named tensors and a string->string metadata map. */
#include "bindings/binding.h"
#include "core/safetensors.h"

#include <stdlib.h>
#include <string.h>

/* torch._safetensors_write(path, names, tensors, metadata)
   names and tensors are arrays of the same length; metadata is a table of strings or nil. */
static int l_write(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  lt_lua_checknargs(L, 4, "torch._safetensors_write");
  lua_Integer n = luaL_len(L, 2);
  if (luaL_len(L, 3) != n)
    return luaL_error(L, "torch.save: %s: %d names for %d tensors", path, (int)n, (int)luaL_len(L, 3));
  if (n > (1 << 28)) return luaL_error(L, "torch.save: %s: too many tensors (%d)", path, (int)n);
  lua_Integer nmeta = 0;
  if (lua_istable(L, 4)) {
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "torch.save: %s: metadata keys and values must be strings, got %s = %s", path,
                          luaL_typename(L, -2), luaL_typename(L, -1));
      nmeta++;
      lua_pop(L, 1);
    }
  }
  /* the arrays live in userdata, so a Lua error on the way frees them; the strings and tensors they
     point into stay on the stack until the write is done */
  lt_st_entry_t *entries = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *entries, 0);
  lt_st_meta_t *meta = lua_newuserdatauv(L, (size_t)(nmeta + 1) * sizeof *meta, 0);
  luaL_checkstack(L, (int)(n * 2 + nmeta * 2 + 8), "torch.save: too many tensors");
  for (lua_Integer i = 0; i < n; i++) {
    if (lua_rawgeti(L, 2, i + 1) != LUA_TSTRING)
      return luaL_error(L, "torch.save: %s: name %d is a %s, expected a string", path, (int)i + 1, luaL_typename(L, -1));
    entries[i].name = lua_tolstring(L, -1, &entries[i].name_len);
    lua_rawgeti(L, 3, i + 1);
    entries[i].tensor = lt_lua_totensor(L, -1);
    if (!entries[i].tensor)
      return luaL_error(L, "torch.save: %s: value %d (%s) is a %s, expected a tensor", path, (int)i + 1,
                        entries[i].name, luaL_typename(L, -1));
  }
  if (lua_istable(L, 4)) {
    lua_Integer k = 0;
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      if (k == nmeta) return luaL_error(L, "torch.save: %s: the metadata table changed while being read", path);
      meta[k].key = lua_tolstring(L, -2, &meta[k].key_len);
      meta[k].value = lua_tolstring(L, -1, &meta[k].value_len);
      k++;
      lua_pushvalue(L, -2); /* key and value stay on the stack; a copy of the key drives lua_next */
    }
    nmeta = k;
  }
  lt_lua_check(L, lt_safetensors_write("torch.save", path, (int)n, entries, (int)nmeta, meta));
  return 0;
}

/* What a read owns until it is handed to Lua: freed by __gc even when a push raises. */
typedef struct {
  lt_st_header_t h;
  lt_tensor_t **ts;
} readbox_t;

static int readbox_gc(lua_State *L) {
  readbox_t *b = lua_touserdata(L, 1);
  if (b->ts) {
    for (int i = 0; i < b->h.n; i++) lt_release(b->ts[i]);
    free(b->ts);
    b->ts = NULL;
  }
  lt_safetensors_header_free(&b->h);
  return 0;
}

/* torch._safetensors_read(path) -> {name = tensor}, {key = value}, {names in data order} */
static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lt_lua_checknargs(L, 1, "torch._safetensors_read");
  readbox_t *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  if (luaL_newmetatable(L, "lutorch.safetensors_read")) {
    lua_pushcfunction(L, readbox_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  int box = lua_gettop(L);
  lt_lua_check(L, lt_safetensors_read("torch.load", path, &b->h, &b->ts));
  lua_createtable(L, 0, b->h.n);
  int tensors = lua_gettop(L);
  lua_createtable(L, 0, b->h.nmeta);
  int meta = lua_gettop(L);
  lua_createtable(L, b->h.n, 0);
  int names = lua_gettop(L);
  for (int i = 0; i < b->h.n; i++) {
    lua_pushlstring(L, b->h.tensors[i].name, b->h.tensors[i].name_len);
    lua_pushvalue(L, -1);
    lua_rawseti(L, names, i + 1);
    lt_tensor_t *t = b->ts[i];
    b->ts[i] = NULL; /* the Lua tensor owns it from here */
    lt_lua_pushtensor(L, t);
    lua_rawset(L, tensors);
  }
  for (int i = 0; i < b->h.nmeta; i++) {
    lua_pushlstring(L, b->h.meta[i].key, b->h.meta[i].key_len);
    lua_pushlstring(L, b->h.meta[i].value, b->h.meta[i].value_len);
    lua_rawset(L, meta);
  }
  lua_pushcfunction(L, readbox_gc);
  lua_pushvalue(L, box);
  lua_call(L, 1, 0);
  return 3;
}

/* torch._safetensors_set_write_limit(bytes): tests simulate a full disk mid-save; -1 turns it off */
static int l_set_write_limit(lua_State *L) {
  lt_safetensors_set_write_limit((int64_t)luaL_checkinteger(L, 1));
  return 0;
}

void lt_open_serialize(lua_State *L, int torch) {
  static const luaL_Reg fns[] = {{"_safetensors_write", l_write},
                                 {"_safetensors_read", l_read},
                                 {"_safetensors_set_write_limit", l_set_write_limit},
                                 {NULL, NULL}};
  lt_lua_register(L, torch, 0, fns, true, false);
}
