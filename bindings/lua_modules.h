/* The Lua modules built into the library: tools/embed.lua writes them (build/lua_modules.c) from
   lua/torch, each as its source (for the REPL's help) and as Lua bytecode with its debug
   information (what runs: loading it allocates a fraction of what compiling the source does,
   which is most of the interpreter's start-up on machines where page faults are dear). */
#ifndef LT_LUA_MODULES_H
#define LT_LUA_MODULES_H

#include <lua.h>
#include <stddef.h>

typedef struct {
  const char *name;     /* module name: "torch.format" */
  const char *path;     /* source path, for tracebacks: "lua/torch/format.lua" */
  const char *source;
  size_t len;
  const char *bytecode; /* string.dump of the chunk by the build's lua5.4 */
  size_t bclen;
} lt_lua_module_t;

extern const lt_lua_module_t lt_lua_modules[];
extern const int lt_lua_nmodules;
/* what each module's chunk was compiled with before its first line, on that line (so that line
   numbers are the source's): its chunk-local `error` (bindings/error_position.c) */
extern const char lt_lua_chunk_prefix[];

/* Loads module m's chunk: its bytecode, or its source where this Lua cannot read that bytecode
   (a Lua built with other number sizes than the build's lua5.4). */
int lt_lua_load_module(lua_State *L, const lt_lua_module_t *m);

#endif
