/* The Lua states lutorch makes: luaL_newstate's, with an allocator of lutorch's own for Lua's small
   blocks (bindings/lua_alloc.c). */
#ifndef LT_LUA_ALLOC_H
#define LT_LUA_ALLOC_H

#include <lua.h>

/* A new state, as luaL_newstate makes one (its panic function and warnings, off until "@on"), whose
   blocks of up to 128 bytes come from free lists of the state's own; NULL when out of memory. */
lua_State *lt_lua_newstate(void);

#endif
