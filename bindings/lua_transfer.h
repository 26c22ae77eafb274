/* Copying Lua values from one lutorch Lua state to another, directly (both states idle, the copy runs
   on the calling thread): the Lua half of running a module in a Lua state of its own
   (bindings/lua_thread.c, nn.DataParallel).

   Rules, in order, for each value:
   - nil, booleans, integers, floats (kept distinct), strings, light userdata: by value;
   - a table or userdata that is a key of the substitution table (in the source): its value instead;
   - tensors: by reference (the same lt_tensor_t, retained, autograd state kept) in a userdata of
     the destination's; devices rebuilt;
   - the source's global table: the destination's;
   - an object reachable from the source's package.loaded (tables, functions, userdata, walked
     through fields, metatables and upvalues to a bounded depth): the object at the same path in the
     destination, requiring the module there when it is not loaded yet;
   - other tables: copied, keys, values and metatable by these rules, sharing and cycles preserved;
   - other Lua functions: string.dump (not stripped) loaded in the destination, upvalues copied by
     these rules (shared upvalues stay shared), except an _ENV table: the destination's globals
     (a function runs in the destination's environment, even one the source gave its own);
   - anything else (C functions and userdata outside package.loaded, coroutines): an error naming
     the path of the value ("cannot copy argument 1.layers[2].handle: a coroutine cannot move
     between Lua states").
   Functions and tables used as metatables (or holding an __index: classes) are copied once per
   direction and reused by later copies while the source object lives (the caches know objects by
   identity, through weak-keyed tables, so nothing is kept alive for them); a copy maps back to its
   original in the reverse direction. Everything else is copied anew each call. Upvalues shared
   between closures are joined when the closures are copied in the same call. */
#ifndef LT_LUA_TRANSFER_H
#define LT_LUA_TRANSFER_H

#include <lua.h>
#include <stdbool.h>

/* One direction between two Lua states (the caches of its copies). It holds references in both
   states' registries, and no lua_State pointer: pass the states to each call (a coroutine of a
   state shares its registry). */
typedef struct lt_transfer lt_transfer_t;

/* A new transfer (NULL + lt_error when out of memory). */
lt_transfer_t *lt_transfer_new(void);
/* Declare back to be the reverse direction of fwd: an object that one caches as a copy of another
   maps back to that other in the reverse direction (a class copied to a thread returns as itself). */
void lt_transfer_link(lt_transfer_t *fwd, lt_transfer_t *back);
/* Free it; src and dst are the states it copied between, NULL for one already closed. */
void lt_transfer_free(lt_transfer_t *x, lua_State *src, lua_State *dst);

/* Copy the n values at src's stack indices idx..idx+n-1 onto dst's stack (in order). subst: the
   stack index in src of the substitution table, or 0. The values are named in errors
   "<what> <first + k>" (or "<what>" when first < 0). flags: LT_TRANSFER_FRESH_UPVALUES copies
   again the upvalues of a Lua function given (at the top level) whose copy is cached, so that it
   sees their current values (the function that a thread runs). Returns LT_OK, or LT_ERR with the
   message in lt_last_error(), leaving both stacks as they were. Raises nothing, except when the
   source state runs out of memory. */
#define LT_TRANSFER_FRESH_UPVALUES 1u
int lt_transfer_copy(lt_transfer_t *x, lua_State *src, int idx, int n, int subst, lua_State *dst,
                     const char *what, int first, unsigned flags);

#endif
