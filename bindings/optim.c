/* placeholder: replaced by the fused optimizer steps (torch._optim) */
#include "bindings/binding.h"

void lt_open_optim(lua_State *L, int torch) {
  lua_newtable(L);
  lua_setfield(L, torch, "_optim");
}
