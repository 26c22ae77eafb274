/* The Lua states lutorch makes: luaL_newstate's, with an allocator of lutorch's own for Lua's small
   blocks (bindings/lua_alloc.c). */
#ifndef LT_LUA_ALLOC_H
#define LT_LUA_ALLOC_H

#include <lua.h>

/* A new state, as luaL_newstate makes one (its panic function and warnings, off until "@on"), whose
   blocks of up to 128 bytes come from free lists of the state's own; NULL when out of memory. */
lua_State *lt_lua_newstate(void);

/* Tensor boxes without a finalizer (bindings/tensor.c, lt_lua_pushtensor): in a state made by
   lt_lua_newstate (and not in sanitizer builds) lt_lua_boxes_managed is true, lt_lua_newbox makes
   a box (a userdata of size bytes, no user values; elsewhere a plain one), and when Lua frees it
   the allocator calls lt_lua_box_release(box), defined by the bindings, which releases its tensor. */
int lt_lua_boxes_managed(lua_State *L);
void *lt_lua_newbox(lua_State *L, size_t size);
void lt_lua_box_release(void *box);

#endif
