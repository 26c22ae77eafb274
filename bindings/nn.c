/* torch._nn: the C functions behind torch.nn.functional (lua/torch/nn/functional.lua gives them
   PyTorch's arguments). One table, filled by one binding file per family of ops. */
#include "bindings/binding.h"

void lt_open_nn(lua_State *L, int torch) {
  lua_newtable(L);
  int nn = lua_gettop(L);
  lt_open_nn_conv(L, nn);
  lt_open_nn_norm(L, nn);
  lua_setfield(L, torch, "_nn");
}
