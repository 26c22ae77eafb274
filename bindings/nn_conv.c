/* placeholder: replaced by the conv family's bindings */
#include "bindings/binding.h"

void lt_open_nn_conv(lua_State *L, int nn) { (void)L; (void)nn; }
