/* The C side of torch.data: torch._read_idx(path) (IDX files, see core/idx.h). Its generators are
   torch.Generator objects (bindings/generator.c). */
#include "bindings/binding.h"
#include "core/idx.h"

static int l_read_idx(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lt_lua_checknargs(L, 1, "_read_idx");
  lt_lua_pushtensor(L, lt_idx_read(path));
  return 1;
}

void lt_open_data(lua_State *L, int torch) {
  static const luaL_Reg fns[] = {{"_read_idx", l_read_idx}, {NULL, NULL}};
  lua_pushvalue(L, torch);
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
