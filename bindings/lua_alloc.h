/* The Lua states lutorch makes: luaL_newstate's, with an allocator of lutorch's own for Lua's small
   blocks (bindings/lua_alloc.c). */
#ifndef LT_LUA_ALLOC_H
#define LT_LUA_ALLOC_H

#include <lua.h>

/* A new state, as luaL_newstate makes one (its panic function and warnings, off until "@on"), whose
   blocks of up to 128 bytes come from free lists of the state's own; NULL when out of memory. */
lua_State *lt_lua_newstate(void);

/* Tensor boxes without a finalizer (bindings/tensor.c, lt_lua_pushtensor): in a state made by
   lt_lua_newstate (and not in sanitizer builds), a box is made between lt_lua_box_next() and
   lt_lua_box_made(L, box), and when Lua frees it the allocator calls lt_lua_box_release(box),
   defined by the bindings, which releases its tensor. */
int lt_lua_boxes_managed(lua_State *L);
void lt_lua_box_next(void);
void lt_lua_box_made(lua_State *L, void *box);
void lt_lua_box_release(void *box);

#endif
