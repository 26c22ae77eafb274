/* lutorch's C API for programs that embed the interpreter. */
#ifndef LUTORCH_H
#define LUTORCH_H

#include <lua.h>

/* The `torch` module: luaL_requiref(L, "torch", luaopen_torch, 1) makes it a global. */
int luaopen_torch(lua_State *L);

/* Open the standard libraries and torch (as the lutorch interpreter does). A lua_CFunction: call
   it in protected mode (lua_pcall) on a fresh state. */
int lutorch_openlibs(lua_State *L);

#endif
