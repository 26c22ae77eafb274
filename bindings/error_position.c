/* Errors raised inside the library name the user's line: "train.lua:12: linear: ...", not the
   line of lua/torch/nn/linear.lua that passed the user's tensor on.

   Lua's error(msg, level) and luaL_error prefix the message with the place of the frame at level
   (the caller of the function that raised, for luaL_error). Here, when that frame is the library's
   own Lua code, the place is that of the first frame outward that is not: the user's call into the
   library. The library's frames are its embedded modules (chunk "@lua/torch/...") and the chunks it
   compiles at run time ("=torch...."); C functions between them are looked past (a binding calling
   back into Lua, a metamethod, table.sort), except pcall and xpcall called by the user
   (pcall(F.conv2d, ...)): there the message has no place, as Lua's error at level 2 gives there;
   none either when the stack ends first (a C program calling in).

   Two doors, one rule (where_level):
   - every module of lua/torch runs with a chunk-local `error`, this file's error function (the
     embedding puts `local error = require 'torch._error';` before the module's first line, on that
     line: tools/embed.lua), so that the thousands of error(...) calls need no change, and helpers
     that compute a level (error(msg, 3)) go through it too;
   - the bindings' luaL_error, luaL_argerror and luaL_typeerror are this file's (bindings/binding.h),
     so that a binding that the library called (F.linear is the C function) blames the user's line
     as well; and so are lauxlib's argument checks (luaL_checkinteger, luaL_checknumber,
     luaL_checkstring, luaL_checktype, luaL_checkudata, the luaL_opt ones, luaL_checkoption), whose
     lauxlib versions raise through lauxlib's own luaL_argerror: binding.h has them inline with
     lauxlib's conversions, and their raise is here (nn.init.uniform_(w, 'a') passes 'a' on to
     w:uniform_: "train.lua:3: bad argument #1 to 'uniform_' (number expected, got string)").
   A message that already starts with the place it would get (an error caught by the library with
   pcall and raised again) is raised as it is, not with the place twice. Only the raise costs: the
   success path of every op is what it was. */
#include "bindings/binding.h"

#include <stdarg.h>
#include <string.h>

/* whether the frame ar (filled with "S") runs one of the library's modules; runs the library's own
   Lua code (a module, or a chunk it compiled: the profiler's trampolines) */
static bool module_lua(const lua_Debug *ar) { return strncmp(ar->source, "@lua/torch/", 11) == 0; }
static bool library_lua(const lua_Debug *ar) {
  return ar->what[0] != 'C' && (module_lua(ar) || strncmp(ar->source, "=torch.", 7) == 0);
}

#define PCALLS_KEY "lutorch.pcalls" /* registry: the set {pcall, xpcall} of this state */

/* whether the function on top of the stack is pcall or xpcall (popped) */
static bool is_pcall(lua_State *L) {
  bool yes = false;
  if (lua_getfield(L, LUA_REGISTRYINDEX, PCALLS_KEY) == LUA_TTABLE) {
    lua_pushvalue(L, -2);
    yes = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return yes;
}

/* the level of the frame whose place an error raised at `level` names (see the top of the file);
   0 when it has none */
static int where_level(lua_State *L, int level) {
  lua_Debug ar;
  if (!lua_getstack(L, level, &ar)) return 0;
  lua_getinfo(L, "S", &ar);
  if (!library_lua(&ar)) return level; /* the user's frame or a C function: as Lua has it */
  for (;;) {
    if (!lua_getstack(L, ++level, &ar)) return 0;
    lua_getinfo(L, "Sf", &ar);
    if (!is_pcall(L)) {
      if (library_lua(&ar) || ar.what[0] == 'C') continue; /* or a binding, table.sort: looked past */
      return level;                                        /* the user's */
    }
    /* pcall: the library's when the library called it, else the end (no place, as Lua's) */
    if (!lua_getstack(L, ++level, &ar)) return 0;
    lua_getinfo(L, "S", &ar);
    if (!library_lua(&ar)) return 0;
  }
}

/* raises the value on top of the stack; a string message takes the place of where_level(level),
   unless it starts with it already */
static int raise_at(lua_State *L, int level) {
  if (lua_type(L, -1) == LUA_TSTRING && level > 0) {
    int at = where_level(L, level);
    if (at > 0) {
      luaL_where(L, at);
      size_t wn, mn;
      const char *w = lua_tolstring(L, -1, &wn);
      const char *m = lua_tolstring(L, -2, &mn);
      if (wn > 0 && !(mn >= wn && memcmp(m, w, wn) == 0)) {
        lua_insert(L, -2);
        lua_concat(L, 2);
      } else {
        lua_pop(L, 1);
      }
    }
  }
  return lua_error(L);
}

int lt_lua_errorf(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return raise_at(L, 1);
}

/* lauxlib's luaL_argerror and luaL_typeerror, whose luaL_error is lauxlib's own: the same
   messages, raised through lt_lua_errorf when a module of the library called the binding (when a
   trampoline of the profiler did, lauxlib's: the profiler mends its place and argument number) */
int lt_lua_argerror(lua_State *L, int arg, const char *extramsg) {
  lua_Debug ar;
  if (!lua_getstack(L, 1, &ar) || (lua_getinfo(L, "S", &ar), !module_lua(&ar)) || !lua_getstack(L, 0, &ar))
    return (luaL_argerror)(L, arg, extramsg);
  lua_getinfo(L, "n", &ar);
  if (ar.name == NULL) return (luaL_argerror)(L, arg, extramsg); /* lauxlib looks it up in package.loaded */
  if (strcmp(ar.namewhat, "method") == 0 && --arg == 0)
    return lt_lua_errorf(L, "calling '%s' on bad self (%s)", ar.name, extramsg);
  return lt_lua_errorf(L, "bad argument #%d to '%s' (%s)", arg, ar.name, extramsg);
}

int lt_lua_typeerror(lua_State *L, int arg, const char *tname) {
  const char *typearg;
  if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING) typearg = lua_tostring(L, -1);
  else if (lua_type(L, arg) == LUA_TLIGHTUSERDATA) typearg = "light userdata";
  else typearg = luaL_typename(L, arg);
  return lt_lua_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", tname, typearg));
}

/* lauxlib's interror and tag_error (its checks' raise), raising through the functions above */
int lt_lua_tagerror(lua_State *L, int arg, int tag) { return lt_lua_typeerror(L, arg, lua_typename(L, tag)); }
int lt_lua_interror(lua_State *L, int arg) {
  if (lua_isnumber(L, arg)) return lt_lua_argerror(L, arg, "number has no integer representation");
  return lt_lua_tagerror(L, arg, LUA_TNUMBER);
}

/* lauxlib's luaL_checkoption */
int lt_lua_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]) {
  const char *name = def ? luaL_optstring(L, arg, def) : luaL_checkstring(L, arg);
  for (int i = 0; lst[i]; i++)
    if (strcmp(lst[i], name) == 0) return i;
  return lt_lua_argerror(L, arg, lua_pushfstring(L, "invalid option '%s'", name));
}

/* error(message [, level]) for the library's modules: Lua's error with the place above */
static int library_error(lua_State *L) {
  int level = (int)luaL_optinteger(L, 2, 1);
  lua_settop(L, 1);
  return raise_at(L, level);
}

void lt_open_error_position(lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_getglobal(L, "pcall");
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_getglobal(L, "xpcall");
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_setfield(L, LUA_REGISTRYINDEX, PCALLS_KEY);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushcfunction(L, library_error);
  lua_setfield(L, -2, "torch._error");
  lua_pop(L, 1);
}
