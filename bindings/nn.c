/* torch._nn: the C functions behind torch.nn.functional (lua/torch/nn/functional.lua gives them
   PyTorch's arguments). One table, filled by one binding file per family of ops; linear is here:
   it runs every training step of every model, so its checks and its product are one C call. */
#include "bindings/binding.h"
#include "core/autocast.h"
#include "core/linalg.h"
#include "core/rnn.h"
#include "core/shape.h"

#include <stdio.h>

/* linear(x, w, b_or_nil): x @ w^T + b, as an addmm for a 2-D x with a bias */
static int l_linear(lua_State *L) {
  lt_tensor_t *x = lt_lua_totensor(L, 1), *w = lt_lua_totensor(L, 2);
  lt_tensor_t *b = lua_isnoneornil(L, 3) ? NULL : lt_lua_totensor(L, 3);
  if (!x) return luaL_error(L, "linear: expected input to be a tensor, got %s", luaL_typename(L, 1));
  if (!w) return luaL_error(L, "linear: expected weight to be a tensor, got %s", luaL_typename(L, 2));
  if (!b && !lua_isnoneornil(L, 3)) return luaL_error(L, "linear: expected bias to be a tensor or nil, got %s", luaL_typename(L, 3));
  lt_lua_checknargs(L, 3, "linear");
  lt_tensor_t *ac[3] = {NULL, NULL, NULL};
  if (__builtin_expect(lt_autocast_on, 0)) { /* the casts are kept on the stack (released with it) */
    lt_tensor_t *in[3] = {x, w, b};
    int r = lt_autocast_args(LT_AC_LOWER, 3, in, ac);
    if (r < 0) return lt_lua_error(L);
    if (r > 0) {
      for (int i = 0; i < 3; i++)
        if (ac[i]) lt_lua_pushtensor(L, ac[i]);
      x = ac[0], w = ac[1], b = ac[2];
    }
  }
  if (w->ndim != 2) return luaL_error(L, "linear: weight must be 2-D, got %d-D", w->ndim);
  if (x->ndim < 1 || x->sizes[x->ndim - 1] != w->sizes[1]) {
    char a[128], c[128];
    return luaL_error(L, "linear: input of shape torch.Size(%s) cannot be multiplied by a weight of shape "
                      "torch.Size(%s) (expected the last dimension to be %I)", lt_shape_str(x->ndim, x->sizes, a, sizeof a),
                      lt_shape_str(w->ndim, w->sizes, c, sizeof c), (lua_Integer)w->sizes[1]);
  }
  if (x->dtype != w->dtype || (b && b->dtype != w->dtype))
    return luaL_error(L, "linear: input (torch.%s), weight (torch.%s) and bias (%s%s) must have the same dtype",
                      lt_dtype_name(x->dtype), lt_dtype_name(w->dtype), b ? "torch." : "",
                      b ? lt_dtype_name(b->dtype) : "none");
  lt_tensor_t *wt = lt_transpose(w, 0, 1);
  if (!wt) return lt_lua_error(L);
  lt_tensor_t *y;
  if (x->ndim == 2 && b) {
    y = lt_addmm(b, x, wt, 1, 1);
  } else {
    y = lt_matmul(x, wt);
    if (y && b) {
      lt_tensor_t *s = lt_binary(LT_BINARY_add, lt_tensor_operand(y), lt_tensor_operand(b), 1, NULL);
      lt_release(y);
      y = s;
    }
  }
  lt_release(wt);
  lt_lua_pushtensor(L, y);
  return 1;
}

/* lstm_cell(g, c) -> h, c2: the fused LSTM cell (core/rnn.h) */
static int l_lstm_cell(lua_State *L) {
  lt_lua_checknargs(L, 2, "lstm_cell");
  lt_tensor_t *g = lt_lua_checktensor(L, 1), *c = lt_lua_checktensor(L, 2), *h, *c2;
  lt_lua_check(L, lt_lstm_cell(g, c, &h, &c2));
  lt_lua_pushtensor(L, h);
  lt_lua_pushtensor(L, c2);
  return 2;
}

void lt_open_nn(lua_State *L, int torch) {
  lua_newtable(L);
  int nn = lua_gettop(L);
  lua_pushcfunction(L, l_linear);
  lua_setfield(L, nn, "linear");
  lua_pushcfunction(L, l_lstm_cell);
  lua_setfield(L, nn, "lstm_cell");
  lt_open_nn_conv(L, nn);
  lt_open_nn_norm(L, nn);
  lua_setfield(L, torch, "_nn");
}
